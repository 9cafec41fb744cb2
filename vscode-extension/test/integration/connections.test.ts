// How the extension reaches a server it did not start, against the real server: TCP with the
// secret read where `aspace-dap --port` wrote it (what the configuration provider does before
// VS Code's DebugAdapterServer connects), and the owner-only Unix-domain socket of
// `aspace-dap --socket` (what DebugAdapterNamedPipeServer connects to).
//
//   ASPACE_PYTHON=/abs/.venv/bin/python ASPACE_EXAMPLE_STATE=/abs/dump npm run test:integration

import { DebugClient } from '@vscode/debugadapter-testsupport';
import { spawn, type ChildProcess } from 'node:child_process';
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DapFrameReader, encodeDapMessage } from '../../src/dapFraming';
import { readServerSecret } from '../../src/serverSecret';
import { launchLikeVsCode, VSCODE_CLIENT } from './adapter';

const python = process.env.ASPACE_PYTHON ?? '';
const state = process.env.ASPACE_EXAMPLE_STATE ?? '';

/** Starts `python -m aspace_dap ARGS` with HOME=home; resolves with its first stderr line. */
function startServer(args: string[], home: string): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(python, ['-m', 'aspace_dap', ...args], { env: { ...process.env, HOME: home }, stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolve, reject) => {
    let text = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      if (text.includes('\n')) resolve({ child, line: text.split('\n')[0] });
    });
    child.on('exit', (code) => reject(new Error(`server exited with ${code}: ${text}`)));
  });
}

describe('connecting to a server the extension did not start', { timeout: 120000 }, () => {
  let home: string;
  const children: ChildProcess[] = [];

  before(() => {
    assert.ok(python !== '' && state !== '', 'set ASPACE_PYTHON and ASPACE_EXAMPLE_STATE');
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'aspace-connect-'));
  });

  after(() => {
    for (const child of children) child.kill('SIGTERM');
    fs.rmSync(home, { recursive: true, force: true });
  });

  it('presents the TCP server\'s secret from the file the server wrote, and is refused without it', async () => {
    const { child, line } = await startServer(['--port', '0'], home);
    children.push(child);
    const port = Number(/:(\d+)$/.exec(line.trim())?.[1]);
    assert.ok(port > 0, line);
    let found = readServerSecret(port, undefined, home);
    for (let i = 0; !found.ok && i < 100; i++) {
      await new Promise((r) => setTimeout(r, 50)); // written right after the port is printed
      found = readServerSecret(port, undefined, home);
    }
    assert.ok(found.ok, found.ok ? '' : found.error);

    const dc = new DebugClient(python, '-maspace_dap', 'aspace-gpu', {}, true);
    dc.defaultTimeout = 20000;
    await dc.start(port);
    const { stopped } = await launchLikeVsCode(dc, { state, secret: found.secret });
    assert.equal((stopped.body.threadId ?? 0) > 0, true);
    const threads = await dc.threadsRequest();
    assert.ok(threads.body.threads.length > 0);
    await dc.stop();

    const stranger = new DebugClient(python, '-maspace_dap', 'aspace-gpu', {}, true);
    stranger.defaultTimeout = 20000;
    await stranger.start(port);
    await stranger.initializeRequest(VSCODE_CLIENT);
    await assert.rejects(stranger.launchRequest({ state } as never), /secret/);
    // the server has closed this connection: no disconnect is answered (DebugClient would wait forever)
  });

  it('speaks DAP over the owner-only socket without a secret', async () => {
    const socketPath = path.join(home, 'aspace.sock');
    const { child, line } = await startServer(['--socket', socketPath], home);
    children.push(child);
    assert.match(line, /only you can connect to/);
    assert.equal(fs.statSync(socketPath).mode & 0o777, 0o600);
    const sock = net.connect(socketPath);
    const reader = new DapFrameReader();
    const seen: Array<Record<string, unknown>> = [];
    const waiters: Array<() => void> = [];
    sock.on('data', (chunk: Buffer) => {
      for (const message of reader.push(chunk)) seen.push(message as Record<string, unknown>);
      for (const wake of waiters.splice(0)) wake();
    });
    const until = async (test: (m: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> => {
      for (let i = 0; i < 400; i++) {
        const hit = seen.find(test);
        if (hit !== undefined) return hit;
        await new Promise<void>((r) => { waiters.push(r); setTimeout(r, 50); });
      }
      throw new Error(`no such message; got ${JSON.stringify(seen).slice(0, 500)}`);
    };
    const send = (seq: number, command: string, args: unknown) =>
      sock.write(encodeDapMessage({ seq, type: 'request', command, arguments: args }));
    send(1, 'initialize', VSCODE_CLIENT);
    await until((m) => m.type === 'event' && m.event === 'initialized');
    send(2, 'launch', { state });
    send(3, 'configurationDone', {});
    const launched = await until((m) => m.type === 'response' && m.request_seq === 2);
    assert.equal(launched.success, true, JSON.stringify(launched));
    await until((m) => m.type === 'event' && m.event === 'stopped');
    sock.end();
  });
});

// Drives the real aspace-dap server over stdio with the DAP test client:
// launch, threads, stackTrace and the custom requests the extension relies on.
//
//   ASPACE_PYTHON=/abs/.venv/bin/python ASPACE_EXAMPLE_STATE=/abs/examples/<dump> npm run test:integration

import { DebugClient } from '@vscode/debugadapter-testsupport';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { strict as assert } from 'node:assert';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { parseFocus, parseLaneValues, parseLanes, parseMemorySpaces } from '../../src/protocol';

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') {
    throw new Error(`set ${name} (see the header of test/integration/server.test.ts)`);
  }
  return value;
}

const python = requiredEnv('ASPACE_PYTHON');
const state = requiredEnv('ASPACE_EXAMPLE_STATE');

/**
 * A DebugClient talking to a server process started here, so that a server
 * that dies fails the tests at once with its stderr instead of a timeout.
 */
class ServerClient extends DebugClient {
  private server: ChildProcessWithoutNullStreams | undefined;
  private running = false;
  private stderr = '';
  /** Rejects when the server exits before stop(). */
  exited: Promise<never> = new Promise(() => {});

  constructor() {
    super(python, '', 'aspace-gpu');
  }

  override start(): Promise<void> {
    const server = spawn(python, ['-m', 'aspace_dap'], { stdio: 'pipe' });
    this.server = server;
    this.running = true;
    server.stderr.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-4000);
    });
    this.exited = new Promise<never>((_, reject) => {
      server.on('exit', (code, signal) => {
        this.running = false;
        if (this.server !== undefined) {
          reject(new Error(`aspace-dap exited (code ${code}, signal ${signal}):\n${this.stderr}`));
        }
      });
      server.on('error', reject);
    });
    this.exited.catch(() => {}); // observed through race() below
    this.connect(server.stdout, server.stdin);
    return Promise.resolve();
  }

  override async stop(): Promise<void> {
    if (this.running) {
      try {
        await this.race(this.disconnectRequest());
      } catch {
        // the server may exit before it answers
      }
    }
    const server = this.server;
    this.server = undefined;
    server?.kill();
  }

  race<T>(step: Promise<T>): Promise<T> {
    return Promise.race([step, this.exited]);
  }
}

describe('aspace-dap server', () => {
  const dc = new ServerClient();
  let threadId = 0;

  before(async () => {
    dc.defaultTimeout = 20000;
    await dc.start();
    const initialized = dc.waitForEvent('initialized');
    const stopped = dc.waitForEvent('stopped');
    // If an earlier step fails these are never awaited; keep their timeouts quiet.
    initialized.catch(() => {});
    stopped.catch(() => {});
    const init = await dc.race(dc.initializeRequest({
      adapterID: 'aspace-gpu',
      clientID: 'vscode',
      linesStartAt1: true,
      columnsStartAt1: true,
      pathFormat: 'path',
      supportsInvalidatedEvent: true,
      supportsMemoryReferences: true,
      supportsVariableType: true,
    }));
    assert.ok(init.body?.supportsReadMemoryRequest, 'server must support readMemory');
    // VS Code's order: launch is sent right away, configurationDone after `initialized`.
    const launched = dc.launchRequest({ state } as DebugProtocol.LaunchRequestArguments);
    await dc.race(initialized);
    await dc.race(dc.configurationDoneRequest());
    await dc.race(launched);
    const stop = (await dc.race(stopped)) as DebugProtocol.StoppedEvent;
    const threads = await dc.threadsRequest();
    assert.ok(threads.body.threads.length > 0, 'a dump has at least one wave');
    threadId = stop.body.threadId ?? threads.body.threads[0].id;
  });

  after(() => dc.stop());

  it('names threads after waves', async () => {
    const threads = await dc.threadsRequest();
    for (const t of threads.body.threads) {
      assert.match(t.name, /Wave .*\[\d+\/\d+ active\]/);
    }
  });

  it('has a stack trace for the stopped wave', async () => {
    const st = await dc.stackTraceRequest({ threadId });
    assert.ok(st.body.stackFrames.length > 0);
  });

  it('reports lanes and moves the focus with setFocus', async () => {
    const lanes = parseLanes((await dc.customRequest('lanes', { threadId })).body);
    assert.ok(lanes.lanes.length > 0);
    const target = lanes.lanes.find((l) => l.state === 'active' && l.lane !== lanes.focus) ?? lanes.lanes[0];
    const invalidated = dc.waitForEvent('invalidated');
    const focus = parseFocus((await dc.customRequest('setFocus', { threadId, lane: target.lane })).body);
    assert.deepEqual(
      { threadId: focus.threadId, lane: focus.lane, active: focus.active, lanes: focus.lanes },
      { threadId, lane: target.lane, active: target.state === 'active', lanes: lanes.lanes.length },
    );
    const event = (await invalidated) as DebugProtocol.InvalidatedEvent;
    assert.ok(event.body.areas?.includes('variables'));
    const after = parseLanes((await dc.customRequest('lanes', { threadId })).body);
    assert.equal(after.focus, target.lane);
  });

  it('evaluates a variable in every lane', async () => {
    const st = await dc.stackTraceRequest({ threadId });
    const frameId = st.body.stackFrames[0].id;
    const scopes = await dc.scopesRequest({ frameId });
    let variable: DebugProtocol.Variable | undefined;
    for (const scope of scopes.body.scopes) {
      const vars = await dc.variablesRequest({ variablesReference: scope.variablesReference });
      variable = vars.body.variables.find((v) => v.variablesReference === 0);
      if (variable !== undefined) break;
    }
    assert.ok(variable, 'the example dump has a scalar variable in its top frame');
    const expression = variable.evaluateName ?? variable.name;
    const values = parseLaneValues((await dc.customRequest('laneValues', { threadId, frameId, expression })).body);
    const lanes = parseLanes((await dc.customRequest('lanes', { threadId })).body);
    assert.equal(values.length, lanes.lanes.length);
    for (const v of values) {
      const lane = lanes.lanes.find((l) => l.lane === v.lane);
      assert.ok(lane, `lane ${v.lane} exists`);
      assert.equal(v.active, lane.state === 'active');
    }
  });

  it('reads LDS and lane scratch through their memory references', async () => {
    const lanes = parseLanes((await dc.customRequest('lanes', { threadId })).body);
    const spaces = parseMemorySpaces((await dc.customRequest('memorySpaces', { threadId, lane: lanes.focus })).body);
    assert.ok(spaces.length > 0);
    for (const space of spaces) {
      assert.ok(space.memoryReference.startsWith(space.name), space.memoryReference);
      if (space.size === 0) continue;
      const count = Math.min(space.size, 64);
      const mem = await dc.send('readMemory', { memoryReference: space.memoryReference, offset: 0, count });
      const body = mem.body as DebugProtocol.ReadMemoryResponse['body'];
      assert.ok(body !== undefined);
      const bytes = Buffer.from(body.data ?? '', 'base64').length + (body.unreadableBytes ?? 0);
      assert.equal(bytes, count, `${space.name}: readable plus unreadable bytes cover the request`);
    }
  });

  it('answers an empty read as VS Code probes', async () => {
    const spaces = parseMemorySpaces((await dc.customRequest('memorySpaces', { threadId })).body);
    const mem = await dc.send('readMemory', { memoryReference: spaces[0].memoryReference, offset: 0, count: 0 });
    assert.ok(mem.success);
  });
});

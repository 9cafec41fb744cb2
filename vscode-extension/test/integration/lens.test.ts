// Starts the real address-space language server the way the extension does
// (`PYTHON -m aspace_dap lsp --stdio`, the extension's initializationOptions,
// a client that answers workspace/configuration for the "aspace" section and
// accepts dynamic registrations) and checks what it says about the lds_tiles
// kernel built for gfx90a at -O2.
//
//   ASPACE_PYTHON=/abs/.venv/bin/python npm run test:integration

import { spawn, type ChildProcess } from 'node:child_process';
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import {
  CodeLensRefreshRequest,
  CodeLensRequest,
  ConfigurationRequest,
  DidChangeConfigurationNotification,
  DidOpenTextDocumentNotification,
  ExitNotification,
  HoverRequest,
  InitializeRequest,
  InitializedNotification,
  InlayHintRefreshRequest,
  InlayHintRequest,
  RegistrationRequest,
  ShutdownRequest,
  StreamMessageReader,
  StreamMessageWriter,
  createProtocolConnection,
  type InlayHint,
  type MarkupContent,
  type ProtocolConnection,
  type Registration,
} from 'vscode-languageserver-protocol/node';
import { CODE_OBJECTS_REQUEST, LENS_SERVER_ARGS, initializationOptions, lensStatus, readLensSettings } from '../../src/lensSettings';

const python = process.env.ASPACE_PYTHON;
if (python === undefined || python === '') throw new Error('set ASPACE_PYTHON (see the header of this file)');

const repo = join(__dirname, '..', '..', '..', '..');
const source = join(repo, 'examples', 'lds_tiles', 'lds_tiles.hip');
const sourceUri = pathToFileURL(source).href;
const sourceLines = readFileSync(source, 'utf8').split('\n');
const ARROW = '\u27f6';

/** 1-based source line of the first line containing `text`. */
function lineOf(text: string): number {
  const index = sourceLines.findIndex((line) => line.includes(text));
  assert.ok(index >= 0, `lds_tiles.hip has ${text}`);
  return index + 1;
}

describe('address-space lens on lds_tiles gfx90a -O2', { timeout: 120000 }, () => {
  let server: ChildProcess;
  let connection: ProtocolConnection;
  // What the workspace settings hold, as VS Code would answer for section "aspace".
  let workspaceSettings: Record<string, unknown> = { codeObjects: ['examples/lds_tiles/lds_tiles.gfx90a.O2.co'] };
  const registrations: Registration[] = [];
  let registered: () => void;
  const watcherRegistered = new Promise<void>((resolve) => (registered = resolve));

  async function hintsByLine(): Promise<Map<number, InlayHint[]>> {
    const hints =
      (await connection.sendRequest(InlayHintRequest.type, {
        textDocument: { uri: sourceUri },
        range: { start: { line: 0, character: 0 }, end: { line: sourceLines.length, character: 0 } },
      })) ?? [];
    const byLine = new Map<number, InlayHint[]>();
    for (const hint of hints) {
      const line = hint.position.line + 1;
      byLine.set(line, [...(byLine.get(line) ?? []), hint]);
    }
    return byLine;
  }

  const label = (hint: InlayHint): string =>
    typeof hint.label === 'string' ? hint.label : hint.label.map((part) => part.value).join('');

  before(async () => {
    const { settings } = readLensSettings((key) => workspaceSettings[key]);
    server = spawn(python, [...LENS_SERVER_ARGS], { cwd: repo, stdio: ['pipe', 'pipe', 'inherit'] });
    connection = createProtocolConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
    connection.onRequest(ConfigurationRequest.type, (params) =>
      params.items.map((item) => (item.section === 'aspace' ? workspaceSettings : null)),
    );
    connection.onRequest(RegistrationRequest.type, (params) => {
      registrations.push(...params.registrations);
      if (registrations.some((r) => r.method === 'workspace/didChangeWatchedFiles')) registered();
    });
    connection.onRequest(InlayHintRefreshRequest.type, () => null);
    connection.onRequest(CodeLensRefreshRequest.type, () => null);
    connection.listen();
    await connection.sendRequest(InitializeRequest.type, {
      processId: process.pid,
      rootUri: pathToFileURL(repo).href,
      workspaceFolders: [{ uri: pathToFileURL(repo).href, name: 'aspace-dap' }],
      initializationOptions: initializationOptions(settings),
      // The parts of vscode-languageclient's capabilities the server looks at.
      capabilities: {
        workspace: {
          configuration: true,
          didChangeConfiguration: { dynamicRegistration: true },
          didChangeWatchedFiles: { dynamicRegistration: true, relativePatternSupport: true },
          inlayHint: { refreshSupport: true },
          codeLens: { refreshSupport: true },
          workspaceFolders: true,
        },
        textDocument: {
          inlayHint: { dynamicRegistration: true },
          hover: { dynamicRegistration: true, contentFormat: ['markdown', 'plaintext'] },
          codeLens: { dynamicRegistration: true },
          publishDiagnostics: {},
        },
      },
    });
    await connection.sendNotification(InitializedNotification.type, {});
    await connection.sendNotification(DidOpenTextDocumentNotification.type, {
      textDocument: { uri: sourceUri, languageId: 'hip', version: 1, text: sourceLines.join('\n') },
    });
  });

  after(async () => {
    if (connection !== undefined) {
      try {
        await connection.sendRequest(ShutdownRequest.type);
        await connection.sendNotification(ExitNotification.type);
      } catch {
        // the process may already be gone; it is killed below either way
      }
      connection.dispose();
    }
    if (server !== undefined && server.exitCode === null) server.kill();
  });

  it('registers its own watcher for the code objects', async () => {
    await watcherRegistered;
    const watch = registrations.find((r) => r.method === 'workspace/didChangeWatchedFiles');
    assert.ok(watch !== undefined);
  });

  it('puts each per-lane integer of the kernel in a vector register', async () => {
    const lines = await hintsByLine();
    // threadIdx-derived values differ per lane, so -O2 keeps them in VGPRs.
    for (const decl of ['int tx =', 'int ty =', 'int col =', 'int row =']) {
      const hints = lines.get(lineOf(decl)) ?? [];
      assert.equal(hints.length, 1, decl);
      assert.match(label(hints[0]), new RegExp(`^${ARROW} v\\d+\\[lane\\]$`), decl);
    }
    // every hint sits at the end of its line
    for (const [line, hints] of lines) {
      for (const hint of hints) assert.equal(hint.position.character, sourceLines[line - 1].length, `line ${line}`);
    }
  });

  it('names the parameters -O2 left without a location', async () => {
    const hints = (await hintsByLine()).get(lineOf('__global__ void transpose_tiles')) ?? [];
    const labels = hints.map(label).sort();
    assert.deepEqual(labels, [`${ARROW} in: optimized out`, `${ARROW} out: optimized out`, `${ARROW} tile_sums: optimized out`]);
  });

  it('explains a variable on hover', async () => {
    const line = lineOf('int tx =');
    const hover = await connection.sendRequest(HoverRequest.type, {
      textDocument: { uri: sourceUri },
      position: { line: line - 1, character: sourceLines[line - 1].indexOf('tx') + 1 },
    });
    assert.ok(hover !== null);
    const text = (hover.contents as MarkupContent).value;
    assert.match(text, /\*\*tx\*\*/);
    assert.match(text, /v\d+\[lane\]/);
  });

  it('shows the kernel resources of a wave64 target on the kernel', async () => {
    const lenses = (await connection.sendRequest(CodeLensRequest.type, { textDocument: { uri: sourceUri } })) ?? [];
    assert.equal(lenses.length, 1);
    assert.equal(lenses[0].range.start.line + 1, lineOf('__global__ void transpose_tiles'));
    // gfx90a runs wave64; the two __shared__ arrays need LDS.
    assert.match(lenses[0].command?.title ?? '', /^wave64 · .*LDS [1-9]\d* B/);
  });

  it('says which code object a source\'s hints come from (the status bar\'s request)', async () => {
    const answer = await connection.sendRequest(CODE_OBJECTS_REQUEST, { uri: sourceUri });
    assert.deepEqual(answer, {
      codeObjects: [join(repo, 'examples', 'lds_tiles', 'lds_tiles.gfx90a.O2.co')], from: 'setting', searched: 1, note: null,
    });
    assert.equal(lensStatus(answer, source)?.text, '$(symbol-structure) lds_tiles.gfx90a.O2.co');
  });

  it('finds a code object in the workspace when a settings change names none', async () => {
    workspaceSettings = { codeObjects: [] };
    // The notification vscode-languageclient sends for configurationSection "aspace".
    await connection.sendNotification(DidChangeConfigurationNotification.type, { settings: { aspace: workspaceSettings } });
    const answer = (await connection.sendRequest(CODE_OBJECTS_REQUEST, { uri: sourceUri })) as { codeObjects: string[]; from: string };
    assert.equal(answer.from, 'workspace');
    // one of the example's builds, whose line table names lds_tiles.hip
    assert.equal(answer.codeObjects.length, 1);
    assert.match(answer.codeObjects[0], /[\\/]examples[\\/]lds_tiles[\\/]lds_tiles\.[\w.]+\.(co|o)$/);
    assert.ok((await hintsByLine()).size > 0);
  });
});

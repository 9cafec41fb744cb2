// Drives the real aspace-dap server with @vscode/debugadapter-testsupport's
// DebugClient on an lds_tiles -O0 example dump, checking the replies against
// what the kernel computes: launch, threads, stack, scopes, lane focus through
// the custom setFocus request, laneValues, and readMemory of LDS and scratch.
//
//   ASPACE_PYTHON=/abs/.venv/bin/python \
//   ASPACE_EXAMPLE_STATE=/abs/examples/lds_tiles/dumps/gfx90a.O0 npm run test:integration

import type { DebugClient } from '@vscode/debugadapter-testsupport';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { parseFocus, parseLaneValues, parseLanes, parseMemorySpaces, type LanesReply } from '../../src/protocol';
import { spaceOfKind } from '../../src/memorySpaces';
import { launchLikeVsCode, startAdapter } from './adapter';
import {
  BLOCK, COLS, LDS_SIZE, ROW_SUMS_OFFSET, ROWS, STOP_LINE, TILE_PITCH,
  activeAtStop, rowSum, tileValue, workItemOf,
} from './ldsTiles';

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') {
    throw new Error(`set ${name} (see the header of test/integration/server.test.ts)`);
  }
  return value;
}

const python = requiredEnv('ASPACE_PYTHON');
const state = requiredEnv('ASPACE_EXAMPLE_STATE');

type Variables = Map<string, DebugProtocol.Variable>;

/** readMemory as VS Code sends it; returns the readable bytes and the unreadable count. */
async function readMemory(dc: DebugClient, memoryReference: string, offset: number, count: number) {
  const reply = await dc.customRequest('readMemory', { memoryReference, offset, count });
  const body = reply.body as DebugProtocol.ReadMemoryResponse['body'];
  assert.ok(body !== undefined, 'readMemory answers with a body');
  return { data: Buffer.from(body.data ?? '', 'base64'), unreadable: body.unreadableBytes ?? 0 };
}

// A server that hangs fails the suite instead of stalling `make test`.
describe('aspace-dap on the lds_tiles example', { timeout: 120000 }, () => {
  let dc: DebugClient;
  let stopped: DebugProtocol.StoppedEvent;
  let capabilities: DebugProtocol.Capabilities;
  let threadId = 0;

  async function topFrame(thread = threadId): Promise<DebugProtocol.StackFrame> {
    const st = await dc.stackTraceRequest({ threadId: thread });
    assert.ok(st.body.stackFrames.length > 0, 'a stopped wave has a frame');
    return st.body.stackFrames[0];
  }

  async function scopeVariables(frameId: number): Promise<Map<string, Variables>> {
    const scopes = await dc.scopesRequest({ frameId });
    const result = new Map<string, Variables>();
    for (const scope of scopes.body.scopes) {
      if (scope.expensive) continue;
      const vars = await dc.variablesRequest({ variablesReference: scope.variablesReference });
      result.set(scope.name, new Map(vars.body.variables.map((v) => [v.name, v])));
    }
    return result;
  }

  async function lanes(thread = threadId): Promise<LanesReply> {
    return parseLanes((await dc.customRequest('lanes', { threadId: thread })).body);
  }

  before(async () => {
    dc = await startAdapter(python);
    ({ capabilities, stopped } = await launchLikeVsCode(dc, { state }));
    assert.ok(stopped.body.threadId !== undefined, 'the stop names the focused wave');
    threadId = stopped.body.threadId;
  });

  after(() => dc.stop());

  it('offers what the extension relies on', () => {
    assert.equal(capabilities.supportsConfigurationDoneRequest, true);
    assert.equal(capabilities.supportsReadMemoryRequest, true);
  });

  it('stops every wave of the workgroup at line 38 and names them', async () => {
    assert.equal(stopped.body.reason, 'breakpoint');
    assert.match(stopped.body.text ?? '', new RegExp(`line ${STOP_LINE}:`));
    assert.ok((stopped.body.description ?? '').length <= 16, 'the stop badge stays short beside the wave name');
    const threads = (await dc.threadsRequest()).body.threads;
    let lanesInGroup = 0;
    for (const t of threads) {
      const m = /Wave .*\[(\d+)\/(\d+) active\]/.exec(t.name);
      assert.ok(m, `thread name ${JSON.stringify(t.name)} shows the active lanes`);
      const reply = await lanes(t.id);
      const expectedActive = reply.lanes.filter((l) => activeAtStop(workItemOf(l.workItem))).length;
      assert.deepEqual([Number(m[1]), Number(m[2])], [expectedActive, reply.lanes.length]);
      lanesInGroup += reply.lanes.length;
      const frame = await topFrame(t.id);
      assert.equal(frame.line, STOP_LINE);
    }
    assert.equal(lanesInGroup, BLOCK * BLOCK, 'the dump holds one whole 16 x 16 workgroup');
  });

  it('has the kernel frame with its source, arguments and locals', async () => {
    const frame = await topFrame();
    assert.equal(frame.name, 'transpose_tiles');
    assert.equal(frame.line, STOP_LINE);
    assert.match(frame.source?.path ?? '', /lds_tiles\.hip$/);
    assert.match(frame.instructionPointerReference ?? '', /^0x[0-9a-f]+$/);
    const scopes = await scopeVariables(frame.id);
    const args = scopes.get('Arguments');
    assert.ok(args, 'an Arguments scope');
    assert.equal(args.get('rows')?.value, String(ROWS));
    assert.equal(args.get('cols')?.value, String(COLS));
    const focusLane = (await lanes()).focus;
    const self = (await lanes()).lanes[focusLane];
    const { tx, ty } = workItemOf(self.workItem);
    const locals = scopes.get('Locals');
    assert.ok(locals, 'a Locals scope');
    assert.equal(locals.get('tx')?.value, String(tx));
    assert.equal(locals.get('ty')?.value, String(ty));
    assert.equal(locals.get('out_col')?.value, String(BLOCK + tx));
  });

  it('moves the lane focus with setFocus and stops the focused wave again', async () => {
    const before = await lanes();
    const target = before.lanes.find((l) => l.state !== 'active');
    assert.ok(target, 'the stop leaves inactive lanes');
    // VS Code replays its first held stop on `invalidated`; the stops it holds are withdrawn and
    // the focused wave stopped again instead, so its top frame is selected and Variables refreshed
    const continued = dc.waitForEvent('continued');
    const stopped = dc.waitForEvent('stopped');
    const focus = parseFocus((await dc.customRequest('setFocus', { threadId, lane: target.lane })).body);
    assert.deepEqual(focus, { threadId, lane: target.lane, active: false, lanes: before.lanes.length });
    const withdrawn = (await continued) as DebugProtocol.ContinuedEvent;
    assert.equal(withdrawn.body.allThreadsContinued, false);
    const event = (await stopped) as DebugProtocol.StoppedEvent;
    assert.equal(event.body.threadId, threadId);
    assert.equal(event.body.allThreadsStopped, true);
    assert.equal(event.body.preserveFocusHint, false);
    assert.equal((await lanes()).focus, target.lane);

    // The same frame now shows the focused lane's values (inactive lanes keep theirs).
    const locals = (await scopeVariables((await topFrame()).id)).get('Locals');
    const { tx } = workItemOf(target.workItem);
    assert.equal(locals?.get('tx')?.value, String(tx));
    assert.match(locals?.get('tx')?.memoryReference ?? '', new RegExp(`lane${target.lane}#`));

    // Another wave keeps the lane number.
    const other = (await dc.threadsRequest()).body.threads.find((t) => t.id !== threadId);
    assert.ok(other, 'the workgroup has more than one wave');
    const moved = parseFocus((await dc.customRequest('setFocus', { threadId: other.id })).body);
    assert.deepEqual([moved.threadId, moved.lane], [other.id, target.lane]);
    parseFocus((await dc.customRequest('setFocus', { threadId, lane: before.focus })).body);
  });

  it('evaluates expressions in every lane with laneValues', async () => {
    const frameId = (await topFrame()).id;
    const reply = await lanes();
    for (const expression of ['tx', 'ty', 'out_col']) {
      const values = parseLaneValues((await dc.customRequest('laneValues', { threadId, frameId, expression })).body);
      assert.deepEqual(values.map((v) => v.lane), reply.lanes.map((l) => l.lane), `${expression}: one row per lane`);
      for (const v of values) {
        const w = workItemOf(reply.lanes[v.lane].workItem);
        const expected = { tx: w.tx, ty: w.ty, out_col: BLOCK + w.tx }[expression];
        assert.equal(v.value, String(expected), `${expression} in lane ${v.lane}`);
        assert.equal(v.active, activeAtStop(w), `lane ${v.lane} activity`);
        assert.equal(v.type, 'int');
      }
    }
  });

  it('reads the workgroup LDS: the tile with its padding column and the row sums', async () => {
    const spaces = parseMemorySpaces((await dc.customRequest('memorySpaces', { threadId })).body);
    const local = spaceOfKind(spaces, 'workgroup');
    assert.ok(local, 'an LDS space');
    assert.equal(local.name, 'local');
    assert.equal(local.size, LDS_SIZE);
    const { data, unreadable } = await readMemory(dc, local.memoryReference, 0, local.size);
    assert.equal(unreadable, 0);
    assert.equal(data.length, LDS_SIZE);
    for (let ty = 0; ty < BLOCK; ty++) {
      for (let tx = 0; tx < TILE_PITCH; tx++) {
        assert.equal(data.readFloatLE((ty * TILE_PITCH + tx) * 4), tileValue(tx, ty), `tile[${ty}][${tx}]`);
      }
    }
    // An offset read lands on the same bytes.
    const sums = await readMemory(dc, local.memoryReference, ROW_SUMS_OFFSET, BLOCK * 4);
    for (let ty = 0; ty < BLOCK; ty++) {
      assert.equal(sums.data.readFloatLE(ty * 4), rowSum(ty), `row_sums[${ty}]`);
    }
    // Past the end nothing is made up.
    const tail = await readMemory(dc, local.memoryReference, local.size - 4, 16);
    assert.deepEqual([tail.data.length, tail.unreadable], [4, 12]);
  });

  it('reads scratch variables through their memory references (View Binary Data)', async () => {
    const locals = (await scopeVariables((await topFrame()).id)).get('Locals');
    assert.ok(locals);
    let checked = 0;
    for (const v of locals.values()) {
      if (v.type !== 'int') continue;
      assert.match(v.memoryReference ?? '', /^private_lane@wave\d+\.lane\d+#0x[0-9a-f]+$/, v.name);
      const { data } = await readMemory(dc, v.memoryReference!, 0, 4);
      assert.equal(String(data.readInt32LE(0)), v.value, `${v.name} in scratch`);
      checked++;
    }
    assert.ok(checked >= 4, 'tx, ty, col, row, out_col and out_row are ints');
  });

  it('answers the empty probe read VS Code sends first', async () => {
    const spaces = parseMemorySpaces((await dc.customRequest('memorySpaces', { threadId })).body);
    const { data, unreadable } = await readMemory(dc, spaces[0].memoryReference, 0, 0);
    assert.deepEqual([data.length, unreadable], [0, 0]);
  });
});

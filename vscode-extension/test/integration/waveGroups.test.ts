// The GPU Waves view's data path against the real server on a 4,000-wave dump
// (the lds_tiles gfx90a -O0 workgroup repeated, benchmarks/gen_waves.py) in
// which 3 waves stand at the first instruction llvm-objdump attributes to
// line 30: the rows the view shows come from src/waveGroups.ts, and choosing
// a wave sends setFocus as the view's command does.
//
//   ASPACE_PYTHON=/abs/.venv/bin/python npm run test:integration

import type { DebugClient } from '@vscode/debugadapter-testsupport';
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setFocus } from '../../src/serverRequests';
import { groupRow, requestWaveGroups, waveRows, type WaveRow } from '../../src/waveGroups';
import { launchLikeVsCode, startAdapter } from './adapter';

const python = process.env.ASPACE_PYTHON;
if (python === undefined || python === '') throw new Error('set ASPACE_PYTHON (see the header of this file)');
const repo = join(__dirname, '..', '..', '..', '..');
const WORKGROUPS = 1000;
const ODD = 3;

/** The address of the first instruction llvm-objdump -l lists under lds_tiles.hip:LINE. */
function firstPcOfLine(line: number): number {
  const listing = readFileSync(join(repo, 'examples/lds_tiles/lds_tiles.gfx90a.O0.co.s.txt'), 'utf8').split('\n');
  let current: number | undefined;
  for (const text of listing) {
    const at = /^; .*lds_tiles\.hip:(\d+)$/.exec(text);
    if (at !== null) {
      current = Number(at[1]);
      continue;
    }
    if (text.startsWith('; ')) current = undefined;
    const pc = /\/\/ ([0-9A-F]{12}):/.exec(text);
    if (pc !== null && current === line) return parseInt(pc[1], 16);
  }
  throw new Error(`no instruction for line ${line}`);
}

describe('GPU Waves on a 4,000-wave dump', { timeout: 120000 }, () => {
  let dc: DebugClient;
  let folder: string;
  const session = { customRequest: async (command: string, args?: unknown) => (await dc.customRequest(command, args)).body };

  before(async () => {
    folder = mkdtempSync(join(tmpdir(), 'aspace-waves-'));
    const dump = join(folder, 'dump');
    execFileSync(python, [join(repo, 'benchmarks', 'gen_waves.py'), dump, '--workgroups', String(WORKGROUPS),
      '--odd', String(ODD), '--odd-pc', `0x${firstPcOfLine(30).toString(16)}`], { cwd: repo });
    dc = await startAdapter(python);
    await launchLikeVsCode(dc, { state: dump });
  });

  after(async () => {
    await dc.stop();
    rmSync(folder, { recursive: true, force: true });
  });

  it('shows the 3 odd waves as the first group, at line 30', async () => {
    const reply = await requestWaveGroups(session);
    assert.equal(reply.totalWaves, WORKGROUPS * 4);
    const [odd, rest] = reply.groups;
    assert.equal(groupRow(odd).label, '3 waves · transpose_tiles (lds_tiles.hip:30)');
    assert.deepEqual(odd.waveIds, [3997, 3998, 3999]);
    assert.equal(rest.waveCount, WORKGROUPS * 4 - ODD);
    assert.ok(rest.hasFocus && !odd.hasFocus);
  });

  it('focuses a wave chosen in the group, and the call stack follows', async () => {
    const odd = (await requestWaveGroups(session, 0)).groups[0];
    const rows = waveRows(odd) as WaveRow[];
    assert.deepEqual(rows.map((r) => r.waveId), [3997, 3998, 3999]);
    const chosen = rows[1];
    const focus = await setFocus(session, { threadId: chosen.threadId });
    assert.equal(focus.threadId, chosen.threadId);
    const stack = await dc.stackTraceRequest({ threadId: chosen.threadId });
    assert.equal(stack.body.stackFrames[0].line, 30);
    const again = await requestWaveGroups(session);
    assert.ok(again.groups[0].hasFocus && !again.groups[1].hasFocus, 'the focus mark moves to the odd group');
    const threads = await dc.threadsRequest();
    assert.equal(threads.body.threads.length, WORKGROUPS * 4);
  });
});

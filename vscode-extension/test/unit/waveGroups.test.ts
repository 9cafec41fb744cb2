import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { ProtocolError } from '../../src/protocol';
import { MAX_WAVE_ROWS, groupRow, parseWaveGroups, waveRows } from '../../src/waveGroups';

const ODD = {
  id: 0, dispatch: 0, kernel: '_Z15transpose_tilesPKfPfS1_ii',
  frames: [{ name: 'transpose_tiles', line: 30, column: 17, source: { name: 'lds_tiles.hip', path: '/src/lds_tiles.hip' } }],
  waveCount: 3, activeLanes: 48, lanes: 192, waveIds: [3997, 3998, 3999], threadIds: [3998, 3999, 4000],
  waveRanges: '3997-3999', hasFocus: false,
};

function many(count: number) {
  const waveIds = Array.from({ length: count }, (_, i) => i);
  return { ...ODD, id: 1, waveCount: count, waveIds, threadIds: waveIds.map((w) => w + 1), waveRanges: `0-${count - 1}`, hasFocus: true };
}

describe('waveGroups', () => {
  it('parses a reply and names the group by its innermost frame', () => {
    const reply = parseWaveGroups({ groups: [ODD], totalGroups: 1, totalWaves: 3 });
    const row = groupRow(reply.groups[0]);
    assert.equal(row.label, '3 waves · transpose_tiles (lds_tiles.hip:30)');
    assert.match(row.description, /dispatch 0 · 48\/192 lanes active · waves 3997-3999/);
    assert.match(row.tooltip, /#0 transpose_tiles \(lds_tiles.hip:30\)/);
  });

  it('names a group by the inline chain at its pc, with the pc', () => {
    const frames = [
      { name: 'wait_for', line: 11, inlined: true, instructionPointerReference: '0x1a78', source: { name: 'hang.hip' } },
      { name: 'hang', line: 22, inlined: false, instructionPointerReference: '0x1a78', source: { name: 'hang.hip' } },
      { name: 'main_loop', line: 40, inlined: false, instructionPointerReference: '0x1ab4', source: { name: 'hang.hip' } },
    ];
    const row = groupRow(parseWaveGroups({ groups: [{ ...ODD, frames }], totalGroups: 1, totalWaves: 3 }).groups[0]);
    assert.equal(row.label, '3 waves · wait_for (hang.hip:11) ← hang (hang.hip:22)');
    assert.match(row.description, /^0x1a78 · dispatch 0 · /);
    assert.match(row.tooltip, /#2 0x1ab4 in main_loop \(hang.hip:40\)/);
  });

  it('lists waves with their thread ids, and sums up the rest of a big group', () => {
    assert.deepEqual(waveRows(parseWaveGroups({ groups: [ODD], totalGroups: 1, totalWaves: 3 }).groups[0]), [
      { waveId: 3997, threadId: 3998 }, { waveId: 3998, threadId: 3999 }, { waveId: 3999, threadId: 4000 },
    ]);
    const rows = waveRows(parseWaveGroups({ groups: [many(40000)], totalGroups: 1, totalWaves: 40000 }).groups[0]);
    assert.equal(rows.length, MAX_WAVE_ROWS + 1);
    assert.deepEqual(rows[rows.length - 1], { more: 40000 - MAX_WAVE_ROWS, ranges: '0-39999' });
  });

  it('rejects replies it cannot show', () => {
    assert.throws(() => parseWaveGroups({ groups: [{ ...ODD, threadIds: [1] }], totalGroups: 1, totalWaves: 3 }), ProtocolError);
    assert.throws(() => parseWaveGroups({ groups: [{ ...ODD, waveCount: -1 }], totalGroups: 1, totalWaves: 3 }), ProtocolError);
    assert.throws(() => parseWaveGroups({ groups: 'x', totalGroups: 1, totalWaves: 3 }), ProtocolError);
  });
});

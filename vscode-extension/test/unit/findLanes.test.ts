import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { foundGroupRow, headerRow, laneRow, parseLanesFound, reasonRow } from '../../src/findLanes';
import { ProtocolError } from '../../src/protocol';

const GROUP = {
  id: 0, dispatch: 0, kernel: '_Z4hangPViPiii', where: '0x1a78 wait_for (hang.hip:11) inlined in hang (hang.hip:22)',
  frames: [
    { name: 'wait_for', line: 11, column: 18, inlined: true, instructionPointerReference: '0x1a78', source: { name: 'hang.hip' } },
    { name: 'hang', line: 22, column: 15, inlined: false, instructionPointerReference: '0x1a78', source: { name: 'hang.hip' } },
  ],
  waveCount: 24, activeLanes: 1536, lanes: 1536, waveIds: [0, 3, 6], threadIds: [1, 4, 7], waveRanges: '0, 3, 6', hasFocus: true,
  matchedLanes: 3, matchedWaveCount: 3, matchedWaveIds: [0, 3, 6], matchedThreadIds: [1, 4, 7], matchedWaveRanges: '0, 3, 6',
};
const BODY = {
  expression: '$v0 == 5', matched: 3, unevaluated: 128, searched: 4096, waves: 64, matchedWaves: 3,
  reasons: [{ reason: 'no symbol "flag" in current context', count: 128 }],
  lanes: [{ threadId: 1, waveId: 0, lane: 5, value: '1' }],
  groups: [GROUP],
};

describe('findLanes', () => {
  it('parses a reply and shows its counts, lanes, groups with their inline chain, and reasons', () => {
    const found = parseLanesFound(BODY);
    assert.deepEqual(headerRow(found), {
      label: 'Lanes where $v0 == 5', description: '3 lanes in 3 waves · 128 lanes not evaluated',
      tooltip: '3 lanes of 4,096 active lanes in 64 waves match $v0 == 5; 128 lanes could not be evaluated',
    });
    assert.deepEqual(laneRow(found.lanes[0]), { label: 'Wave 0 · lane 5', description: '= 1' });
    const where = foundGroupRow(found.groups[0]);
    assert.equal(where.label, '3 lanes · wait_for (hang.hip:11) ← hang (hang.hip:22)');
    assert.equal(where.description, '3 waves: 0, 3, 6');
    assert.match(where.tooltip ?? '', /0x1a78 wait_for \(hang.hip:11\) inlined in hang \(hang.hip:22\)/);
    assert.deepEqual(reasonRow(found.reasons[0]), { label: '128 lanes', description: 'no symbol "flag" in current context' });
  });

  it("says the vendor's word for a wave (cuda-gdb's warp)", () => {
    const found = parseLanesFound({ ...BODY, waveWord: 'warp' });
    assert.equal(headerRow(found).description, '3 lanes in 3 warps · 128 lanes not evaluated');
    assert.deepEqual(laneRow(found.lanes[0], found.waveWord), { label: 'Warp 0 · lane 5', description: '= 1' });
    assert.equal(foundGroupRow(found.groups[0], found.waveWord).description, '3 warps: 0, 3, 6');
  });

  it('rejects replies it cannot show', () => {
    assert.throws(() => parseLanesFound({ ...BODY, matched: -1 }), ProtocolError);
    assert.throws(() => parseLanesFound({ ...BODY, lanes: [{ threadId: 1, lane: 5, value: '1' }] }), ProtocolError);
    assert.throws(() => parseLanesFound({ ...BODY, groups: [{ ...GROUP, frames: [{ ...GROUP.frames[0], inlined: 'yes' }] }] }), ProtocolError);
  });
});

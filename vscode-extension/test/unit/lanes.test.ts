import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import {
  adjacentActiveLane,
  focusFromLanes,
  focusStatusText,
  laneDescription,
  lanePickItems,
  sourcePositionText,
} from '../../src/lanes';
import type { LaneInfo, LaneState } from '../../src/protocol';

function lane(n: number, state: LaneState, extra: Partial<LaneInfo> = {}): LaneInfo {
  return { lane: n, state, workItem: [n, 0, 0], pc: '0x1a0', ...extra };
}

const wave = [
  lane(0, 'inactive'),
  lane(1, 'active'),
  lane(2, 'exited'),
  lane(3, 'active'),
  lane(4, 'invalid'),
  lane(5, 'active'),
];

describe('status text', () => {
  it('shows lane, width and activity', () => {
    assert.equal(focusStatusText({ threadId: 1, lane: 5, lanes: 64, active: true }), 'Lane 5/64 · active');
    assert.equal(focusStatusText({ threadId: 1, lane: 0, lanes: 32, active: false }), 'Lane 0/32 · inactive');
  });
});

describe('adjacentActiveLane', () => {
  it('moves forward and wraps', () => {
    assert.equal(adjacentActiveLane(wave, 1, 1), 3);
    assert.equal(adjacentActiveLane(wave, 5, 1), 1);
    assert.equal(adjacentActiveLane(wave, 0, 1), 1);
  });

  it('moves backward and wraps', () => {
    assert.equal(adjacentActiveLane(wave, 3, -1), 1);
    assert.equal(adjacentActiveLane(wave, 1, -1), 5);
    assert.equal(adjacentActiveLane(wave, 4, -1), 3);
  });

  it('is undefined when no other lane is active', () => {
    assert.equal(adjacentActiveLane([lane(0, 'active'), lane(1, 'exited')], 0, 1), undefined);
    assert.equal(adjacentActiveLane([], 0, -1), undefined);
  });
});

describe('lane descriptions', () => {
  it('prefer the source name, fall back to the path base name', () => {
    assert.equal(sourcePositionText(lane(0, 'active', { source: { name: 'k.hip', path: '/a/k.hip' }, line: 7 })), 'k.hip:7');
    assert.equal(sourcePositionText(lane(0, 'active', { source: { path: '/a/b/saxpy.hip' }, line: 9 })), 'saxpy.hip:9');
    assert.equal(sourcePositionText(lane(0, 'active', { line: 9 })), 'line 9');
    assert.equal(sourcePositionText(lane(0, 'active')), undefined);
  });

  it('combine state, work-item and position', () => {
    assert.equal(laneDescription(lane(3, 'active', { workItem: [67, 1, 0], source: { name: 'k.hip' }, line: 4 })), 'active · (67,1,0) · k.hip:4');
    // a dump that does not hold the lane's work-item id (an Intel core without its implicit arguments)
    assert.equal(laneDescription(lane(3, 'active', { workItem: undefined, line: 4 })), 'active · (?) · line 4');
  });

  it('pick items mark the focused lane', () => {
    const items = lanePickItems(wave, 3);
    assert.equal(items.length, wave.length);
    assert.equal(items[3].label, '$(circle-filled) Lane 3 (focus)');
    assert.equal(items[3].picked, true);
    assert.equal(items[2].label, '$(circle-slash) Lane 2');
    assert.match(items[0].detail, /pc 0x1a0/);
  });

  it('focus derived from a lanes reply knows whether the lane is active', () => {
    assert.deepEqual(focusFromLanes(9, wave, 3), { threadId: 9, lane: 3, active: true, lanes: 6 });
    assert.deepEqual(focusFromLanes(9, wave, 0), { threadId: 9, lane: 0, active: false, lanes: 6 });
  });
});

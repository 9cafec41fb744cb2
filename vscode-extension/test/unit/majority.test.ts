import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { summarizeLaneValues } from '../../src/majority';

const v = (lane: number, value: string, active = true) => ({ lane, value, active, type: 'int' });

describe('summarizeLaneValues', () => {
  it('marks active lanes that differ from the majority', () => {
    const s = summarizeLaneValues([v(0, '1'), v(1, '1'), v(2, '9'), v(3, '1')]);
    assert.equal(s.majority, '1');
    assert.equal(s.majorityCount, 3);
    assert.equal(s.distinctActiveValues, 2);
    assert.deepEqual(
      s.rows.map((r) => r.differs),
      [false, false, true, false],
    );
  });

  it('ignores inactive lanes when voting and never marks them as differing', () => {
    const s = summarizeLaneValues([v(0, '5', false), v(1, '5', false), v(2, '5', false), v(3, '2'), v(4, '2')]);
    assert.equal(s.majority, '2');
    assert.equal(s.activeCount, 2);
    assert.deepEqual(
      s.rows.map((r) => r.differs),
      [false, false, false, false, false],
    );
  });

  it('has no majority and marks nothing when the top count is tied', () => {
    const s = summarizeLaneValues([v(3, 'b'), v(2, 'b'), v(1, 'a'), v(0, 'a'), v(4, 'c')]);
    assert.equal(s.majority, undefined);
    assert.equal(s.majorityCount, 2);
    assert.equal(s.distinctActiveValues, 3);
    assert.deepEqual(
      s.rows.map((r) => r.lane),
      [0, 1, 2, 3, 4],
    );
    assert.ok(s.rows.every((r) => !r.differs));
  });

  it('still finds a plurality below half the lanes', () => {
    const s = summarizeLaneValues([v(0, 'a'), v(1, 'a'), v(2, 'b'), v(3, 'c'), v(4, 'd')]);
    assert.equal(s.majority, 'a');
    assert.deepEqual(
      s.rows.filter((r) => r.differs).map((r) => r.lane),
      [2, 3, 4],
    );
  });

  it('has no majority without active lanes', () => {
    const s = summarizeLaneValues([v(0, '1', false)]);
    assert.equal(s.majority, undefined);
    assert.equal(s.activeCount, 0);
    assert.equal(s.rows[0].differs, false);
  });
});

import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { Coalescer } from '../../src/coalesce';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('Coalescer', () => {
  it('runs once more for any number of requests made during a run, never overlapping', async () => {
    let running = 0;
    let runs = 0;
    const gates = [deferred(), deferred(), deferred()];
    const c = new Coalescer(async () => {
      assert.equal(running, 0, 'runs overlap');
      running++;
      await gates[runs].promise;
      runs++;
      running--;
    });
    const first = c.request();
    const during = [c.request(), c.request(), c.request()];
    gates[0].resolve();
    gates[1].resolve();
    await Promise.all([first, ...during]);
    assert.equal(runs, 2);
    gates[2].resolve();
    await c.request();
    assert.equal(runs, 3);
  });

  it('keeps going after a failed run', async () => {
    let calls = 0;
    const c = new Coalescer(async () => {
      calls++;
      if (calls === 1) throw new Error('server gone');
    });
    await c.request();
    await c.request();
    assert.equal(calls, 2);
  });
});

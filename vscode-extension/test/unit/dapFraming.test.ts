import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { DapFrameReader, encodeDapMessage, stderrTail } from '../../src/dapFraming';

describe('DAP framing', () => {
  it('returns messages whole, however the stream is cut', () => {
    const a = encodeDapMessage({ seq: 1, type: 'event', event: 'output', body: { output: 'é\n' } });
    const b = encodeDapMessage({ seq: 2, type: 'response', command: 'threads', success: true });
    const bytes = Buffer.concat([a, b]);
    for (let cut = 1; cut < bytes.length; cut += 7) {
      const reader = new DapFrameReader();
      const got = [...reader.push(bytes.subarray(0, cut)), ...reader.push(bytes.subarray(cut))];
      assert.deepEqual(got.map((m) => (m as { seq: number }).seq), [1, 2]);
    }
  });
  it('keeps the end of a long stderr', () => {
    const text = Array.from({ length: 40 }, (_, i) => `line ${i}`).join('\n') + '\nImportError: no aspace_dap\n';
    const tail = stderrTail(text);
    assert.ok(tail.endsWith('ImportError: no aspace_dap'));
    assert.equal(tail.split('\n').length, 6);
  });
});

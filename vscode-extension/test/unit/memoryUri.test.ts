import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { debugMemoryUriParts, memoryReferenceOfPath, memorySpaceDisplayName } from '../../src/memoryUri';

describe('debug memory URIs', () => {
  it('follow the layout of View Binary Data', () => {
    const parts = debugMemoryUriParts({ sessionId: 'abc-123', memoryReference: 'local@wg(1,0,0)#0x0', displayName: 'lds', size: 65536 });
    assert.deepEqual(parts, {
      scheme: 'vscode-debug-memory',
      authority: 'abc-123',
      path: '/local%40wg(1%2C0%2C0)%230x0/lds.bin',
      query: 'range=0:65536',
    });
  });

  it('leave the range out when the size is unknown', () => {
    const parts = debugMemoryUriParts({ sessionId: 's', memoryReference: 'global#0x7f0000001000' });
    assert.equal(parts.path, '/global%230x7f0000001000/memory.bin');
    assert.equal(parts.query, '');
    assert.equal(debugMemoryUriParts({ sessionId: 's', memoryReference: 'x', size: 0 }).query, '');
  });

  it('round-trip the memoryReference, including slashes', () => {
    for (const ref of ['private_lane@wave3.lane5#0x10', 'odd/ref with space#0x1', 'local@wg(1,0,0)#0x40']) {
      const parts = debugMemoryUriParts({ sessionId: 's', memoryReference: ref });
      assert.equal(memoryReferenceOfPath(parts.path), ref);
    }
  });

  it('name tabs after the space and its owner', () => {
    assert.equal(memorySpaceDisplayName('local', 'local@wg(1,0,0)#0x0'), 'local-wg(1,0,0)');
    assert.equal(memorySpaceDisplayName('private_lane', 'private_lane@wave3.lane5#0x0'), 'private_lane-wave3.lane5');
    assert.equal(memorySpaceDisplayName('global', 'global#0x1000'), 'global');
    assert.equal(memorySpaceDisplayName('x', 'x@a/b#0x0'), 'x-a_b');
  });
});

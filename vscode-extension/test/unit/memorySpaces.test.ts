import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { memorySpacePicks, missingSpaceMessage, spaceOfKind } from '../../src/memorySpaces';
import type { MemorySpace } from '../../src/protocol';

// memorySpaces replies as the server gives them for each vendor's example dumps.
const AMD: MemorySpace[] = [
  { name: 'local', kind: 'workgroup', size: 1152, memoryReference: 'local@wg(1,1,0)#0x0' },
  { name: 'private_lane', kind: 'lane', size: 144, memoryReference: 'private_lane@wave1.lane2#0x0' },
  { name: 'private_wave', kind: 'wave', size: 9216, memoryReference: 'private_wave@wave1#0x0' },
  { name: 'global', kind: 'device', size: 32, memoryReference: 'global#0x7f0000000000' },
];
const NVIDIA: MemorySpace[] = [
  { name: 'shared', kind: 'workgroup', size: 2176, memoryReference: 'shared@wg(1,0,0)#0x0' },
  { name: 'local', kind: 'lane', size: 1024, memoryReference: 'local@wave0.lane0#0xfff800' },
  { name: 'global', kind: 'device', size: 4096, memoryReference: 'global#0x7f1000000000' },
];
const INTEL: MemorySpace[] = [
  { name: 'local', kind: 'workgroup', size: 128, memoryReference: 'local@wg(1,0,0)#0x0' },
  { name: 'global', kind: 'device', size: 56, memoryReference: 'global#0x7f0000100000' },
];

describe('spaceOfKind', () => {
  it('finds shared memory under every vendor name', () => {
    assert.equal(spaceOfKind(AMD, 'workgroup')?.memoryReference, 'local@wg(1,1,0)#0x0');
    assert.equal(spaceOfKind(NVIDIA, 'workgroup')?.name, 'shared');
    assert.equal(spaceOfKind(INTEL, 'workgroup')?.name, 'local');
  });

  it("finds the lane's private memory, not NVIDIA's shared space named like AMD's LDS", () => {
    assert.equal(spaceOfKind(AMD, 'lane')?.name, 'private_lane');
    // NVIDIA calls per-thread memory "local", AMD's word for LDS.
    assert.equal(spaceOfKind(NVIDIA, 'lane')?.memoryReference, 'local@wave0.lane0#0xfff800');
    assert.equal(spaceOfKind(INTEL, 'lane'), undefined);
  });

  it('explains a missing space with what the wave has', () => {
    assert.equal(
      missingSpaceMessage(INTEL, 'lane'),
      'This wave has no private memory of the focused lane (scratch / local / private) (memory spaces: local (workgroup), global (device)).',
    );
    assert.match(missingSpaceMessage([], 'workgroup'), /memory spaces: none/);
  });
});

describe('memorySpacePicks', () => {
  it('shows name, scope and size', () => {
    const picks = memorySpacePicks(NVIDIA);
    assert.deepEqual(
      picks.map((p) => [p.label, p.description, p.detail]),
      [
        ['shared', 'workgroup · 2176 bytes', 'shared@wg(1,0,0)#0x0'],
        ['local', 'lane · 1024 bytes', 'local@wave0.lane0#0xfff800'],
        ['global', 'device · 4096 bytes', 'global#0x7f1000000000'],
      ],
    );
    assert.equal(memorySpacePicks([{ name: 'x', kind: undefined, size: 1, memoryReference: 'x#0x0' }])[0].description, 'other · 1 bytes');
  });
});

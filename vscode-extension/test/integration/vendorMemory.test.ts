// "Open Shared Memory" and "Open Private Memory of This Lane" choose the
// memory space by kind; on the CUDA lds_tiles dump that must find NVIDIA's
// `shared` window holding the tile (not `local`, NVIDIA's per-thread memory).
// Block (1,0,0) over a 32 x 32 input with in[i] = 0.25 i, so
// tile[ty][tx] = 0.25 * (ty * 32 + 16 + tx) (examples/cuda/README.md).

import type { DebugClient } from '@vscode/debugadapter-testsupport';
import { strict as assert } from 'node:assert';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { spaceOfKind } from '../../src/memorySpaces';
import { parseMemorySpaces, type MemorySpace } from '../../src/protocol';
import { launchLikeVsCode, startAdapter } from './adapter';

const python = process.env.ASPACE_PYTHON;
if (python === undefined || python === '') throw new Error('set ASPACE_PYTHON');
const dump = join(__dirname, '..', '..', '..', '..', 'examples', 'cuda', 'dumps', 'lds_tiles.sm_90.G');
const TILE = 16;
const PITCH = TILE + 1;
const tileValue = (tx: number, ty: number): number => 0.25 * (ty * 32 + 16 + tx);

describe('memory spaces by kind on the CUDA lds_tiles dump', { timeout: 120000, skip: !existsSync(dump) }, () => {
  let dc: DebugClient;
  let spaces: MemorySpace[];

  before(async () => {
    dc = await startAdapter(python);
    const { stopped } = await launchLikeVsCode(dc, { state: dump });
    const threadId = stopped.body.threadId ?? (await dc.threadsRequest()).body.threads[0].id;
    spaces = parseMemorySpaces((await dc.customRequest('memorySpaces', { threadId })).body);
  });

  after(async () => {
    if (dc !== undefined) await dc.stop();
  });

  it('finds the block tile in the workgroup space', async () => {
    const shared = spaceOfKind(spaces, 'workgroup');
    assert.ok(shared);
    assert.equal(shared.name, 'shared');
    const reply = await dc.customRequest('readMemory', { memoryReference: shared.memoryReference, offset: 0, count: shared.size });
    const data = Buffer.from(reply.body.data ?? '', 'base64');
    assert.equal(reply.body.unreadableBytes ?? 0, 0);
    const floats = Array.from({ length: Math.floor(data.length / 4) }, (_, i) => data.readFloatLE(i * 4));
    // Where the compiler placed `tile` is its business; it starts where row 0 does.
    const start = floats.findIndex((_, i) => floats.slice(i, i + TILE).every((f, tx) => f === tileValue(tx, 0)));
    assert.ok(start >= 0, 'tile row 0 is in shared memory');
    for (let ty = 0; ty < TILE; ty++) {
      for (let tx = 0; tx < TILE; tx++) assert.equal(floats[start + ty * PITCH + tx], tileValue(tx, ty), `tile[${ty}][${tx}]`);
    }
  });

  it("takes the lane's own private memory, which NVIDIA calls local", () => {
    const lane = spaceOfKind(spaces, 'lane');
    assert.ok(lane);
    assert.equal(lane.name, 'local');
    assert.match(lane.memoryReference, /^local@wave\d+\.lane\d+#0x[0-9a-f]+$/);
    assert.ok(lane.size > 0);
  });
});

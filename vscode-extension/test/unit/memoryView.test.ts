import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { parseMemoryLayout, readPage, type MemoryPage } from '../../src/memoryLayout';
import { byteOwners, elementCells, elementKindFormat, nameLabels, nextRowBytes, renderMemoryView, typedCells } from '../../src/memoryViewHtml';

function page(bytes: number[], address = 0x400n, valid?: boolean[]): MemoryPage {
  return { address, bytes: Uint8Array.from(bytes), valid: valid ?? bytes.map(() => true) };
}

describe('memory view', () => {
  const f32 = (x: number): number[] => [...new Uint8Array(new Float32Array([x]).buffer)];
  const vars = parseMemoryLayout({
    variables: [
      { name: 'row_sums', type: 'float[2]', address: '0x400', size: 8 },
      { name: 'count', type: 'int', address: '0x408', size: 4 },
      { name: 'bad', type: 'int', address: 'nowhere', size: 4 },
    ],
  });

  it('marks each byte with the variable occupying it', () => {
    assert.deepEqual(vars.map((v) => v.name), ['row_sums', 'count']);
    const p = page([...f32(1.5), ...f32(-2), 7, 0, 0, 0, 9, 9, 9, 9]);
    assert.deepEqual(byteOwners(p, vars), [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, -1, -1, -1, -1]);
  });

  it('types each element by the variable holding it, and never reads unknown bytes', () => {
    const p = page([...f32(1.5), ...f32(-2), 7, 0, 0, 0, 9, 9, 9, 9], 0x400n, [
      ...Array(12).fill(true), false, true, true, true,
    ]);
    const cells = typedCells(p, byteOwners(p, vars), vars, 0, 'auto');
    assert.deepEqual(cells.map((c) => c.text), ['1.5', '-2', '7', '??']);
    assert.deepEqual(typedCells(p, byteOwners(p, vars), vars, 0, 'x32').map((c) => c.text)[2], '0x00000007');
  });

  it('shows each element of a struct in the type the server gives it', () => {
    // struct { float mass; int id; char pad[4]; double w; } at 0x400, as memoryLayout lists it
    const placed = parseMemoryLayout({
      variables: [{
        name: 'p', type: 'Particle', address: '0x400', size: 24,
        elements: [
          { address: '0x400', size: 4, kind: 'float' }, { address: '0x404', size: 4, kind: 'signed' },
          { address: '0x40c', size: 8, kind: 'float' }, { address: '0x414', size: 4, kind: 'unsigned' },
        ],
      }],
    });
    const f64 = [...new Uint8Array(new Float64Array([0.25]).buffer)];
    const p = page([...f32(4), 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, ...f64, 7, 0, 0, 0, 0, 0, 0, 0]);
    const owners = byteOwners(p, placed);
    const cells = elementCells(p, owners, placed);
    // 4.0 as a float (not 1082130432), -1 as a signed int, padding, and a double cut by the row end
    assert.deepEqual(typedCells(p, owners, placed, 0, 'auto', cells).map((c) => c.text), ['4', '-1', '··', '??']);
    assert.deepEqual(typedCells(p, owners, placed, 16, 'auto', cells).map((c) => [c.text, c.width]), [['…', 4], ['7', 4], ['0', 4]]);
    // a fixed format still reads every element alike
    assert.deepEqual(typedCells(p, owners, placed, 0, 'i32', cells).map((c) => c.text)[0], '1082130432');
    assert.equal(elementKindFormat('float', 2), undefined);
    assert.equal(elementKindFormat('pointer', 8), 'x64');
  });

  it('renders names, hex, holes and an escaped title', () => {
    const p = page([...f32(1.5), ...f32(-2), 7, 0, 0, 0, 0x41, 0, 0, 0], 0x400n, [...Array(15).fill(true), false]);
    const html = renderMemoryView({
      title: 'LDS <wg>', memoryReference: 'local@wg(1,1,0)#0x0', offset: 0x400, size: 0x800, page: p, variables: vars,
      format: 'auto', hexEditorAvailable: false, cspSource: 'vscode-resource:', nonce: 'n0',
    });
    assert.ok(html.includes('LDS &lt;wg&gt;'));
    assert.ok(html.includes('class="chip v0">row_sums') && html.includes('class="chip v1">count'));
    assert.ok(html.includes('title="row_sums +4"'));
    assert.ok(html.includes('title="not in the dump">??'));
    assert.ok(!html.includes('Open in Hex Editor'));
  });

  it('lays rows out 8 bytes wide, each row\'s typed cells its own, names over first bytes', () => {
    const p = page([...f32(1.5), ...f32(-2), 7, 0, 0, 0, 0x41, 0, 0, 0]);
    const owners = byteOwners(p, vars);
    assert.deepEqual(typedCells(p, owners, vars, 0, 'auto', undefined, 8).map((c) => c.text), ['1.5', '-2']);
    assert.deepEqual(typedCells(p, owners, vars, 8, 'auto', undefined, 8).map((c) => c.text), ['7', '65']);
    const html = renderMemoryView({
      title: 'LDS', memoryReference: 'local#0x0', offset: 0x400, size: 0x800, page: p, variables: vars, rowBytes: 8,
      format: 'auto', hexEditorAvailable: false, cspSource: 'vscode-resource:', nonce: 'n0',
    });
    // two rows of 8 bytes, each under a row naming the variable that starts there
    assert.equal((html.match(/<th>0x0000040[08]<\/th>/g) ?? []).length, 2);
    assert.ok(html.includes('data-row-bytes="8"'));
    assert.match(html, /<tr class="names"><th><\/th><td class="name t0" colspan="8" title="row_sums: float\[2\]">row_sums<\/td>/);
    assert.match(html, /<tr class="names"><th><\/th><td class="name t1" colspan="8" title="count: int">count<\/td>/);
    // a width the view does not know is refused: 16 bytes per row
    assert.ok(renderMemoryView({
      title: 'LDS', memoryReference: 'local#0x0', offset: 0x400, page: p, variables: vars, rowBytes: 5,
      format: 'auto', hexEditorAvailable: false, cspSource: 'vscode-resource:', nonce: 'n0',
    }).includes('data-row-bytes="16"'));
  });

  it('names a variable begun on an earlier page at its first byte here, with the offset into it', () => {
    const p = page([0, 0, 0, 0, 7, 0, 0, 0], 0x404n);
    const labels = nameLabels(p, byteOwners(p, vars), vars);
    assert.deepEqual([...labels.entries()], [[0, { owner: 0, text: 'row_sums +0x4' }], [4, { owner: 1, text: 'count' }]]);
  });

  it('narrows rows that overflow, and does not grow back into a width that overflowed', () => {
    const overflowed = new Map<number, number>();
    assert.equal(nextRowBytes(16, 8, 540, overflowed), 8);
    assert.equal(nextRowBytes(8, 16, 540, overflowed), 8); // 16 did not fit 540 px
    assert.equal(nextRowBytes(8, 16, 1200, overflowed), 16); // the group was widened
    assert.equal(nextRowBytes(16, 3, 540, overflowed), 16);
    assert.equal(nextRowBytes(16, 'x', 540, overflowed), 16);
  });

  it('reads a page across holes without inventing bytes', async () => {
    // bytes 0..3 readable, 4..5 missing, 6..7 readable
    const memory = [1, 2, 3, 4, 0, 0, 7, 8];
    const readable = [true, true, true, true, false, false, true, true];
    const session = {
      customRequest: async (_: string, args: { offset: number; count: number }) => {
        const start = args.offset;
        let n = 0;
        while (start + n < memory.length && n < args.count && readable[start + n]) n++;
        if (n > 0) return { address: `0x${(0x100 + start).toString(16)}`, data: Buffer.from(memory.slice(start, start + n)).toString('base64'), unreadableBytes: args.count - n || undefined };
        let skip = 0;
        while (start + skip < memory.length && !readable[start + skip]) skip++;
        return { address: `0x${(0x100 + start).toString(16)}`, unreadableBytes: skip || args.count };
      },
    };
    const got = await readPage(session, 'x#0x100', 0, 8);
    assert.equal(got.address, 0x100n);
    assert.deepEqual([...got.bytes], [1, 2, 3, 4, 0, 0, 7, 8]);
    assert.deepEqual(got.valid, readable);
  });
});

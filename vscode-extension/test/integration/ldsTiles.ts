// What examples/lds_tiles computes, written down independently of the server
// (see examples/lds_tiles/README.md): the dump holds workgroup (1, 1) of a
// 32 x 32 grid of 16 x 16 blocks over a 20 x 32 input with in[i] = 0.5 * i,
// stopped at line 38.

export const ROWS = 20;
export const COLS = 32;
export const BLOCK = 16;
export const STOP_LINE = 38;
/** Workgroup (1, 1): every coordinate is offset by one block. */
export const BLOCK_ORIGIN = [16, 16] as const;
/** `tile` is float[16][17] (one padding column); `row_sums` sits at LDS 0x440. */
export const TILE_PITCH = BLOCK + 1;
export const ROW_SUMS_OFFSET = 0x440;
export const LDS_SIZE = ROW_SUMS_OFFSET + BLOCK * 4;

export interface WorkItem {
  tx: number;
  ty: number;
}

/** threadIdx of a lane given the global work-item id the server reports (the example dump holds every one). */
export function workItemOf(global: readonly number[] | undefined): WorkItem {
  if (global === undefined) throw new Error('the server reported no work-item for a lane of the example dump');
  return { tx: global[0] - BLOCK_ORIGIN[0], ty: global[1] - BLOCK_ORIGIN[1] };
}

/** Lanes pass `if (out_row < cols && out_col < rows)` only for tx < 4. */
export function activeAtStop(w: WorkItem): boolean {
  return BLOCK_ORIGIN[0] + w.tx < ROWS && BLOCK_ORIGIN[1] + w.ty < COLS;
}

/** tile[ty][tx] = in[row * cols + col], 0 where the row is outside the input. */
export function tileValue(tx: number, ty: number): number {
  if (tx >= BLOCK) return 0; // the padding column is never written
  const row = BLOCK_ORIGIN[1] + ty;
  const col = BLOCK_ORIGIN[0] + tx;
  return row < ROWS ? 0.5 * (row * COLS + col) : 0;
}

export function rowSum(ty: number): number {
  let sum = 0;
  for (let tx = 0; tx < BLOCK; tx++) sum += tileValue(tx, ty);
  return sum;
}

// Tiled matrix transpose through shared local memory (SLM), plus a per-tile
// sum reduced in a second local array. A 16x16 work-group is several SIMD
// threads that meet at the barriers.
#define TILE 16

__kernel void transpose_tiles(__global const float *in, __global float *out,
                              __global float *tile_sums, int rows, int cols)
{
    // One padding column keeps the column-wise reads free of bank conflicts.
    __local float tile[TILE][TILE + 1];
    __local float row_sums[TILE];

    int tx = get_local_id(0);
    int ty = get_local_id(1);
    int col = get_group_id(0) * TILE + tx;
    int row = get_group_id(1) * TILE + ty;

    float value = 0.0f;
    if (row < rows && col < cols)
        value = in[row * cols + col];
    tile[ty][tx] = value;
    barrier(CLK_LOCAL_MEM_FENCE);

    // The first work-item of every tile row sums that row.
    if (tx == 0) {
        float row_sum = 0.0f;
        for (int k = 0; k < TILE; ++k)
            row_sum += tile[ty][k];
        row_sums[ty] = row_sum;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    int out_col = get_group_id(1) * TILE + tx;
    int out_row = get_group_id(0) * TILE + ty;
    if (out_row < cols && out_col < rows)
        out[out_row * rows + out_col] = tile[tx][ty];

    if (tx == 0 && ty == 0) {
        float tile_total = 0.0f;
        for (int k = 0; k < TILE; ++k)
            tile_total += row_sums[k];
        tile_sums[get_group_id(1) * get_num_groups(0) + get_group_id(0)] = tile_total;
    }
}

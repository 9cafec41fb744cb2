// Tiled matrix transpose through shared memory, plus a per-tile sum reduced in
// a second shared array. A 16x16 block is 8 warps that meet at __syncthreads().
#define TILE 16

__global__ void transpose_tiles(const float *in, float *out, float *tile_sums,
                                int rows, int cols)
{
    // One padding column keeps the column-wise reads free of bank conflicts.
    __shared__ float tile[TILE][TILE + 1];
    __shared__ float row_sums[TILE];

    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int col = blockIdx.x * TILE + tx;
    int row = blockIdx.y * TILE + ty;

    float value = 0.0f;
    if (row < rows && col < cols)
        value = in[row * cols + col];
    tile[ty][tx] = value;
    __syncthreads();

    // The first thread of every tile row sums that row.
    if (tx == 0) {
        float row_sum = 0.0f;
        for (int k = 0; k < TILE; ++k)
            row_sum += tile[ty][k];
        row_sums[ty] = row_sum;
    }
    __syncthreads();

    int out_col = blockIdx.y * TILE + tx;
    int out_row = blockIdx.x * TILE + ty;
    if (out_row < cols && out_col < rows)
        out[out_row * rows + out_col] = tile[tx][ty];

    if (tx == 0 && ty == 0) {
        float tile_total = 0.0f;
        for (int k = 0; k < TILE; ++k)
            tile_total += row_sums[k];
        tile_sums[blockIdx.y * gridDim.x + blockIdx.x] = tile_total;
    }
}

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

    STOP_AT(tx == 3); int out_col = blockIdx.y * TILE + tx;
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

// ---- host: the example's launch (a 2x2 grid of 16x16 blocks over a 32x32 input, in[i] = 0.25 i) ----
// Appended after the kernel, so that the kernel keeps the example's line numbers; every warp has
// lanes with tx == 3 (lanes 3 and 19), so every warp stops at line 32.
int main()
{
    const int rows = 32, cols = 32;
    static float in[rows * cols];
    for (int i = 0; i < rows * cols; ++i)
        in[i] = 0.25f * (float)i;
    float *d_in = to_device(in, rows * cols);
    float *d_out = zeroed_device<float>(rows * cols);
    float *d_sums = zeroed_device<float>(4);
    transpose_tiles<<<dim3(2, 2, 1), dim3(TILE, TILE, 1)>>>(d_in, d_out, d_sums, rows, cols);
    return finish("lds_tiles");
}

// ---- host: the example's launch (a 2x2 grid of 16x16 blocks over a 32x32 input, in[i] = 0.25 i) ----
// Included at the end of the kernel's source (plan.py writes it from ../lds_tiles.cu), so that the
// kernel keeps the example's line numbers; every warp has lanes with tx == 3 (lanes 3 and 19), so
// every warp stops at line 32.
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

// A genuine out-of-bounds store, for the exception path: one lane of every warp reads an index
// that points 1 GiB past `out`, and the warp's store at line 12 faults with an illegal address.
// The smoothing loop after it keeps the warps busy while the error reaches the debugger interface
// (a warp that had exited would leave only its SM's error in the core).
__global__ void scatter(const int *index, const float *in, float *out, int n)
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    if (gid >= n)
        return;
    int slot = index[gid];
    float value = in[gid] * 2.0f + 1.0f;
    out[slot] = value;
    float smooth = value;
    for (int k = 0; k < 200000; ++k)
        smooth = smooth * 0.999f + 0.001f * value;
    out[gid] += smooth;
}

// ---- host: 2 blocks of 64 threads, n = 128; index[g] = g except in lane 7 of each warp ----
int main()
{
    const int n = 128;
    static int index[n];
    static float in[n];
    for (int g = 0; g < n; ++g) {
        index[g] = g % 32 == 7 ? g + (1 << 28) : g;
        in[g] = 0.25f * (float)g;
    }
    int *d_index = to_device(index, n);
    float *d_in = to_device(in, n);
    float *d_out = zeroed_device<float>(n);
    scatter<<<2, 64>>>(d_index, d_in, d_out, n);
    return finish("bad_store");
}

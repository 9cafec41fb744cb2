// A production-style crash: an -O3 kernel built with line tables only (-lineinfo), whose faulting
// store sits seven __forceinline__ levels deep over two headers (run_row -> chain::epilogue ->
// chain::apply -> chain::Tile::write -> chain::detail::scatter_one -> chain::detail::store). Lane 7
// of every warp reads an index 1 GiB past `out`; the warp stops with Warp Illegal Address.
#include "inline_chain_ops.cuh"

template <typename T>
__device__ __forceinline__ T run_row(T *out, const int *index, const T *in, int i)
{
    T value = in[i] * (T)0.5;
    chain::epilogue<T, 4>(out, index, i, value);
    T smooth = value;
    for (int k = 0; k < 200000; ++k)  // keeps the other warps busy while the error reaches the debugger
        smooth = smooth * (T)0.999 + (T)0.001 * value;
    return smooth;
}

template <typename T, int N>
__global__ void scatter_kernel(const int *index, const T *in, T *out, T *sums, int n)
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    if (gid >= n)
        return;
    sums[gid] = run_row(out, index, in, gid) * (T)N;
}

template __global__ void scatter_kernel<float, 4>(const int *, const float *, float *, float *, int);

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
    float *d_sums = zeroed_device<float>(n);
    scatter_kernel<float, 4><<<2, 64>>>(d_index, d_in, d_out, d_sums, n);
    return finish("inline_chain");
}

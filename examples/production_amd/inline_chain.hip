// A production-style crash: an -O3 kernel built with line tables only (-gline-tables-only), whose faulting
// store sits seven always_inline levels deep over two headers (run_row -> chain::epilogue ->
// chain::apply -> chain::Tile::write -> chain::detail::scatter_one -> chain::detail::store). Lane 7
// of every wave reads an index 1 GiB past `out` (a memory violation); a negative index stops its wave
// on the assert trap (__builtin_trap()) in scatter_one.
#include <hip/hip_runtime.h>

#include "inline_chain_ops.h"

template <typename T>
__device__ __attribute__((always_inline)) inline T run_row(T *out, const int *index, const T *in, int i)
{
    T value = in[i] * (T)0.5;
    chain::epilogue<T, 4>(out, index, i, value);
    return value;
}

namespace app {

template <typename T, int N>
__global__ void scatter_kernel(const int *index, const T *in, T *out, T *sums, int n)
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    if (gid >= n)
        return;
    sums[gid] = run_row(out, index, in, gid) * (T)N;
}

template __global__ void scatter_kernel<float, 4>(const int *, const float *, float *, float *, int);

}  // namespace app

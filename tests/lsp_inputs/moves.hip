// Variables that move at -O2 (clang-19): the inlined loop counter `k` takes a register on its own
// declaration line (gfx90a, gfx1100) or at code of line 0 (gfx942), and `v`, handed down a chain of
// calls, moves at code of line 0 in `mix` (gfx1100). The language-server tests check that the inlay
// hints show every place the location lists give.
#include <hip/hip_runtime.h>

__device__ inline float blend(const float *row, int n, float w)
{
    float acc = 0.0f;
    for (int k = 0; k < n; k += 1 + (row[k] > w)) acc = acc * w + row[k];
    return acc;
}

__device__ __attribute__((noinline)) int mix(int v, int salt)
{
    v ^= salt;
    v = v * 7 + (v >> 3);
    return v;
}

__device__ __attribute__((noinline)) int fold(int v, int rounds)
{
    for (int r = 0; r < rounds; ++r)
        v = mix(v, r * 0x9e37) + r;
    return v;
}

__global__ void moves(const float *in, float *out, int *codes, int n)
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    float s = blend(in + gid, n, 0.5f);
    int v = gid;
    v = fold(v, n & 7);
    v = mix(v, (int)s);
    out[gid] = s;
    codes[gid] = v;
}

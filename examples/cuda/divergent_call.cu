// Divergent control flow inside a warp: odd and even lanes take different
// branches, loops run a lane-dependent number of times, and the odd lanes call
// a non-inlined device function so a real call frame exists.
__device__ __noinline__ float settle(float x, int lane, int steps)
{
    float acc = x;
    for (int i = 0; i < steps; ++i)
        acc = acc * 0.5f + (float)(lane + i);
    return acc;
}

__global__ void divergent(const float *in, float *out, int n)
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % warpSize;
    float x = gid < n ? in[gid] : 0.0f;

    float result;
    if (lane & 1) {
        int steps = lane % 5 + 1;
        result = settle(x, lane, steps);
    } else {
        result = -x;
        int count = lane % 7;
        for (int i = 0; i < count; ++i)
            result += (float)i * x;
    }

    if (gid < n)
        out[gid] = result;
}

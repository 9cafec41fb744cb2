// Divergent control flow inside a warp: odd and even lanes take different
// branches, loops run a lane-dependent number of times, and the odd lanes call
// a non-inlined device function so a real call frame exists.
__device__ __noinline__ float settle(float x, int lane, int steps)
{
    float acc = x;
    for (int i = 0; i < steps; ++i)
        acc = acc * 0.5f + (float)(lane + i);
    STOP_AT(lane % 4 == 1); return acc;
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

    WAIT_HERE(); if (gid < n)
        out[gid] = result;
}

// ---- host: the example's input (n = 100, in[i] = 0.5 i + 1), launched as 2 blocks of 64 threads ----
// Appended after the kernel, so that the kernel keeps the example's line numbers. Odd lanes call
// settle: lanes 1, 5, ..., 29 of every warp fault inside it at line 9, lanes 3, 7, ..., 31 wait
// beside them; even lanes took the other branch and wait at line 29 (WAIT_HERE), so that they stay
// in the warp. The example dump holds block 0; the second block gives a thread of another block.
int main()
{
    const int n = 100;
    static float in[n];
    for (int i = 0; i < n; ++i)
        in[i] = 0.5f * (float)i + 1.0f;
    float *d_in = to_device(in, n);
    float *d_out = zeroed_device<float>(128);
    divergent<<<2, 64>>>(d_in, d_out, n);
    return finish("divergent_call");
}

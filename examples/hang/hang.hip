// A kernel that hangs at three places at once, as real hangs do: each warp (wave) of a block takes one
// of three paths by its index, and none of them ends. The user-triggered core (CUDA) or the core of the
// stopped process (ROCm) then holds waves at three sites of one kernel:
//   1. a spin-wait on a flag nobody sets, inside an inlined function,
//   2. a barrier the other waves never reach,
//   3. a loop whose exit the data never meets.
#include <hip/hip_runtime.h>

__device__ __attribute__((always_inline)) inline int wait_for(volatile int *flag, int spins)
{
    while (*flag == 0)
        spins++;
    return spins;
}

__global__ void hang(volatile int *flag, int *data, int n, int step)
{
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    int wave = threadIdx.x / warpSize;
    int acc = 0;
    if (wave % 3 == 0) {
        acc = wait_for(flag, tid);
    } else if (wave % 3 == 1) {
        __syncthreads();
    } else {
        for (int i = tid; i != n; i += step)
            acc += data[i % n];
    }
    data[tid] = acc;
}

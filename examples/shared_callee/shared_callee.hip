// A kernel's __shared__ array next to a __shared__ array of the device function
// it calls: the compiler packs both into the kernel's LDS, each at its own offset.
#include <hip/hip_runtime.h>

#define KBUF 32
#define HBUF 64

// Spelled out because HIP 5.2's host_defines.h defines __noinline__ as nothing.
__device__ __attribute__((noinline)) int neighbour_sum(int value, int lane)
{
    __shared__ int hbuf[HBUF];
    hbuf[lane] = value * 3 + 1;
    __syncthreads();
    int total = hbuf[lane] + hbuf[(lane + 1) % HBUF];
    return total;
}

__global__ void stage(const int *in, int *out)
{
    __shared__ int kbuf[KBUF];
    int lane = threadIdx.x;
    if (lane < KBUF)
        kbuf[lane] = in[lane] + 100;
    __syncthreads();
    int sum = neighbour_sum(kbuf[lane % KBUF], lane);
    out[lane] = sum;
}

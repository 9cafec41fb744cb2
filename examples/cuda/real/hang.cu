// A hang, as a user-triggered core catches it: every block's warps wait at three places forever.
// Warps 0-1 spin on a flag nobody sets (inside the inlined sync::wait_for_flag), warps 2-5 wait at a
// __syncthreads() barrier that the others never reach, warps 6-7 run a loop whose exit flag nobody
// sets. Built -lineinfo -O3; capture.sh triggers the core through CUDA_COREDUMP_PIPE, then kills it.
namespace sync {

__device__ __forceinline__ void pause()
{
    asm volatile("nanosleep.u32 500;");
}

__device__ __forceinline__ int wait_for_flag(const volatile int *flag)
{
    int spins = 0;
    while (*flag == 0) {
        pause();
        ++spins;
    }
    return spins;
}

}  // namespace sync

__global__ void stuck(volatile int *flags, float *out, int n)
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    int warp = threadIdx.x / 32;
    float acc = 0.0f;
    if (warp < 2) {
        acc = (float)sync::wait_for_flag(flags);
    } else if (warp < 6) {
        __syncthreads();
        acc = 1.0f;
    } else {
        for (int k = 0; flags[1] == 0; ++k)
            acc = acc * 0.999f + (float)(k & 7);
    }
    if (gid < n)
        out[gid] = acc;
}

// ---- host: 8 blocks of 256 threads (8 warps each); the flags stay 0, so the kernel never ends ----
int main()
{
    const int n = 8 * 256;
    int *d_flags = zeroed_device<int>(2);
    float *d_out = zeroed_device<float>(n);
    stuck<<<8, 256>>>(d_flags, d_out, n);
    std::printf("hang: launched; waiting for a kernel that never ends\n");
    std::fflush(stdout);
    return finish("hang");
}

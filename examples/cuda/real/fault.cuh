// Pre-included into every program of this folder (nvcc -include fault.cuh), so that each kernel keeps
// the line numbers of its example in ../: plan.py writes the kernel as the example with
// STOP_AT(condition) put in front of the stop line's statement, which faults in the lanes where the
// condition holds (the others diverge from them), and the driver, told by
// CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1, writes a GPU core. The host side below serves the host
// programs (<kernel>.host.cuh, included after the kernel, and bad_store.cu's own).
//
// Built with -DSTOP_BY_STORE the fault is a store to an address no allocation covers (an illegal
// address); otherwise it is PTX `trap` written in place (a BPT.TRAP instruction in the kernel: -G
// builds call __trap() as a function of its own, a frame the example does not have). capture.sh uses
// the trap and falls back to the store when a trap leaves no core.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#ifdef STOP_BY_STORE
#define STOP_FAULT() (void)(*(volatile unsigned *)(uintptr_t)0x10 = 0xdeadu)
#else
#define STOP_FAULT() asm volatile("trap;")
#endif

// Spin on this line until the fault stops the GPU: lanes that do not fault stay here, valid and
// diverged, instead of running to the end of the kernel and leaving the warp.
#define WAIT_HERE()                                                 \
    for (;;)                                                        \
        asm volatile("nanosleep.u32 1000;")

#define STOP_AT(condition)                                          \
    do {                                                            \
        if (condition)                                              \
            STOP_FAULT();                                           \
        WAIT_HERE();                                                \
    } while (0)

// ---- host side ------------------------------------------------------------------------------

#define CHECK(call) check_cuda((call), #call, __LINE__)

static inline void check_cuda(cudaError_t err, const char *what, int line)
{
    if (err != cudaSuccess) {
        std::fprintf(stderr, "line %d: %s: %s (%s)\n", line, what, cudaGetErrorName(err),
                     cudaGetErrorString(err));
        std::exit(3);
    }
}

template <typename T>
static T *to_device(const T *host, size_t count)
{
    T *device = nullptr;
    CHECK(cudaMalloc(&device, count * sizeof(T)));
    CHECK(cudaMemcpy(device, host, count * sizeof(T), cudaMemcpyHostToDevice));
    return device;
}

template <typename T>
static T *zeroed_device(size_t count)
{
    T *device = nullptr;
    CHECK(cudaMalloc(&device, count * sizeof(T)));
    CHECK(cudaMemset(device, 0, count * sizeof(T)));
    return device;
}

// After the launch: the kernel is meant to fault. Exit 0 when it did, 1 when it ran to the end.
static int finish(const char *program)
{
    cudaError_t launched = cudaGetLastError();
    cudaError_t finished = cudaDeviceSynchronize();
    std::printf("%s: launch %s, synchronize %s (%s)\n", program, cudaGetErrorName(launched),
                cudaGetErrorName(finished), cudaGetErrorString(finished));
    if (finished == cudaSuccess) {
        std::printf("%s: the kernel did not fault\n", program);
        return 1;
    }
    return 0;
}

// The part of <hip/hip_runtime.h> the example kernels use, written with clang's AMDGPU
// builtins. Debian's ROCm device libraries and HIP headers stop short of gfx942 and gfx1100,
// so those targets are built with -nogpuinc -nogpulib and find this header instead.
#pragma once

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))

struct dim3 {
    unsigned x, y, z;
    __host__ __device__ constexpr dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1) : x(x), y(y), z(z) {}
};

// threadIdx.x and friends read the hardware's work-item and workgroup ids
struct __hip_thread_idx {
    __declspec(property(get = get_x)) unsigned x;
    __declspec(property(get = get_y)) unsigned y;
    __declspec(property(get = get_z)) unsigned z;
    static __device__ unsigned get_x() { return __builtin_amdgcn_workitem_id_x(); }
    static __device__ unsigned get_y() { return __builtin_amdgcn_workitem_id_y(); }
    static __device__ unsigned get_z() { return __builtin_amdgcn_workitem_id_z(); }
};
struct __hip_block_idx {
    __declspec(property(get = get_x)) unsigned x;
    __declspec(property(get = get_y)) unsigned y;
    __declspec(property(get = get_z)) unsigned z;
    static __device__ unsigned get_x() { return __builtin_amdgcn_workgroup_id_x(); }
    static __device__ unsigned get_y() { return __builtin_amdgcn_workgroup_id_y(); }
    static __device__ unsigned get_z() { return __builtin_amdgcn_workgroup_id_z(); }
};
// the dispatch packet (code object V5: implicit kernel arguments) holds the sizes
struct __hip_block_dim {
    __declspec(property(get = get_x)) unsigned x;
    __declspec(property(get = get_y)) unsigned y;
    __declspec(property(get = get_z)) unsigned z;
    static __device__ unsigned get_x() { return __builtin_amdgcn_workgroup_size_x(); }
    static __device__ unsigned get_y() { return __builtin_amdgcn_workgroup_size_y(); }
    static __device__ unsigned get_z() { return __builtin_amdgcn_workgroup_size_z(); }
};
struct __hip_grid_dim {
    __declspec(property(get = get_x)) unsigned x;
    __declspec(property(get = get_y)) unsigned y;
    __declspec(property(get = get_z)) unsigned z;
    static __device__ unsigned get_x() { return __builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x(); }
    static __device__ unsigned get_y() { return __builtin_amdgcn_grid_size_y() / __builtin_amdgcn_workgroup_size_y(); }
    static __device__ unsigned get_z() { return __builtin_amdgcn_grid_size_z() / __builtin_amdgcn_workgroup_size_z(); }
};

extern const __device__ __attribute__((weak)) __hip_thread_idx threadIdx;
extern const __device__ __attribute__((weak)) __hip_block_idx blockIdx;
extern const __device__ __attribute__((weak)) __hip_block_dim blockDim;
extern const __device__ __attribute__((weak)) __hip_grid_dim gridDim;

static constexpr int warpSize = __AMDGCN_WAVEFRONT_SIZE;

__device__ inline void __syncthreads() {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

typedef struct ihipStream_t *hipStream_t;

// A device-only build never emits host code; the host launchers only need to parse.
#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) \
    ((void)(kernel), (void)(grid), (void)(block), (void)(shmem), (void)(stream))

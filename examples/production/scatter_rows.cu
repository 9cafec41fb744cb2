// A production-style kernel: -O3 with line tables only (-lineinfo), templates inlined six deep
// over two headers. Each block copies rows of `in` to the rows `rows[]` names in `out`, scaled.
// The host filled `rows` from a stale index buffer: one entry is far past the output, and the
// store through it faults (an illegal address), in store_value, inlined into the kernel through
// store_scaled, scatter_one, copy_row and copy_tile.
#include "layout.cuh"
#include "store.cuh"

namespace prod {

template <typename T, int Width>
__device__ __forceinline__ void scatter_one(T *out, const T *in, int row, int dest, int col, T scale)
{
    long slot = layout::slot_of<Width>(dest, col);
    epilogue::store_scaled(out, slot, in[row * Width + col], scale);
}

template <typename T, int Width>
__device__ __forceinline__ void copy_row(T *out, const T *in, const int *rows, int row, T scale)
{
    int dest = rows[row];
    for (int col = threadIdx.x; col < Width; col += blockDim.x)
        scatter_one<T, Width>(out, in, row, dest, col, scale);
}

template <typename T, int Width>
__device__ __forceinline__ void copy_tile(T *out, const T *in, const int *rows, int n, T scale)
{
    for (int row = blockIdx.x; row < n; row += gridDim.x)
        copy_row<T, Width>(out, in, rows, row, scale);
}

template <typename T, int Width>
__global__ void scatter_rows(T *out, const T *in, const int *rows, int n, T scale)
{
    copy_tile<T, Width>(out, in, rows, n, scale);
}

template __global__ void scatter_rows<float, 64>(float *, const float *, const int *, int, float);

}  // namespace prod

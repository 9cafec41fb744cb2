// Where a row lands in the output: the index arithmetic of a gather/scatter, as a library header
// would spell it (templated on the row width, forced inline at every use).
#pragma once

namespace prod {
namespace layout {

template <int Width>
__device__ __forceinline__ long slot_of(int row, int col)
{
    return static_cast<long>(row) * Width + col;
}

}  // namespace layout
}  // namespace prod

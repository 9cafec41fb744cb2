// The store path: scale a value and write it, each step a forced-inline template, as a math
// library's epilogue is written.
#pragma once

namespace prod {
namespace epilogue {

template <typename T>
__device__ __forceinline__ void store_value(T *out, long slot, T value)
{
    out[slot] = value;
}

template <typename T>
__device__ __forceinline__ void store_scaled(T *out, long slot, T value, T scale)
{
    store_value(out, slot, value * scale);
}

}  // namespace epilogue
}  // namespace prod

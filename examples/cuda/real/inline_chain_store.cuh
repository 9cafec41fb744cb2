// The innermost two levels of inline_chain.cu's seven: a scatter through an index and the store that
// faults. Every function is __forceinline__, so an -O3 build keeps no call: only the line table's
// inlining records (nvdisasm -gi, `inlined at`) tell the levels apart.
#pragma once

namespace chain {
namespace detail {

template <typename T>
__device__ __forceinline__ void store(T *base, long offset, T value)
{
    base[offset] = value;  // the faulting store: lane 7 of every warp writes 1 GiB past `out`
}

template <typename T>
__device__ __forceinline__ void scatter_one(T *base, const int *index, int i, T value)
{
    long offset = (long)index[i];
    store(base, offset, value);
}

}  // namespace detail
}  // namespace chain

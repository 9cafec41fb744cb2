// The innermost two levels of inline_chain.hip's seven: a scatter through an index, checked, and the
// store that faults. Every function is always_inline, so an -O3 build keeps no call: only the DWARF's
// inlined subroutines (llvm-symbolizer --inlining) tell the levels apart.
#pragma once

namespace chain {
namespace detail {

template <typename T>
__device__ __attribute__((always_inline)) inline void store(T *base, long offset, T value)
{
    base[offset] = value;  // the faulting store: lane 7 of every wave writes 1 GiB past `out`
}

template <typename T>
__device__ __attribute__((always_inline)) inline void scatter_one(T *base, const int *index, int i, T value)
{
    long offset = (long)index[i];
    if (offset < 0)
        __builtin_trap();  // a negative index is a bug in the caller: the assert trap
    store(base, offset, value);
}

}  // namespace detail
}  // namespace chain

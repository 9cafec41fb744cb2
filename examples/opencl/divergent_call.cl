// Divergent control flow inside a SIMD thread: odd and even lanes take
// different branches, loops run a lane-dependent number of times, and the odd
// lanes call a non-inlined function through a __generic pointer that points
// into local memory for some lanes and global memory for others, so a real
// call frame and tagged generic pointers exist.
__attribute__((noinline)) float settle(__generic float *cell, int lane, int steps)
{
    float acc = *cell;
    for (int i = 0; i < steps; ++i)
        acc = acc * 0.5f + (float)(lane + i);
    *cell = acc;
    return acc;
}

__kernel void divergent(__global const float *in, __global float *out, int n)
{
    __local float cells[32];
    int gid = get_global_id(0);
    int lane = get_sub_group_local_id();
    float x = gid < n ? in[gid] : 0.0f;
    cells[get_local_id(0) % 32] = x;

    float result;
    if (lane & 1) {
        int steps = lane % 5 + 1;
        __generic float *cell = (lane & 2) ? (__generic float *)&cells[get_local_id(0) % 32]
                                             : (__generic float *)&out[gid];
        *cell = x;
        result = settle(cell, lane, steps);
    } else {
        result = -x;
        int count = lane % 7;
        for (int i = 0; i < count; ++i)
            result += (float)i * x;
    }

    if (gid < n)
        out[gid] = result;
}

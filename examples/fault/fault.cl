// A store through a bad pointer: every work-item writes its id into `out`, `stride` ints apart.
// The host meant stride 1 but passes 1 << 20, so the stores land 4 MiB apart, past the end of the
// 256-int buffer, in memory nobody mapped: the first hardware thread to store faults.

__kernel void scatter(__global int *out, int stride)
{
    int gid = get_global_id(0);
    __global int *slot = out + gid * stride;
    *slot = gid;
}

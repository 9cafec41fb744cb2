// A store through a bad pointer: every thread writes its id into `out`, `stride` ints apart.
// The host meant stride 1 but passes 1 << 20, so the stores land 4 MiB apart, past the end of the
// 256-int buffer, in memory nobody mapped: the first warp to store faults.

__global__ void scatter(int *out, int stride)
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    int *slot = out + gid * stride;
    *slot = gid;
}

// One name in three scopes, for the language server's hover (tests/test_lsp_protocol.py).
#include <hip/hip_runtime.h>

__global__ void shadow(float *out, int n)
{
    int v = threadIdx.x;
    if (v < n) {
        int v = n - 1;
        out[v] = 1.0f;
    }
    out[v] = 2.0f;
}

__global__ void other(float *out)
{
    int v = blockIdx.x;
    out[v] = 3.0f;
}

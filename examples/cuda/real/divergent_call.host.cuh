// ---- host: the example's input (n = 100, in[i] = 0.5 i + 1), launched as 2 blocks of 64 threads ----
// Included at the end of the kernel's source (plan.py writes it from ../divergent_call.cu), so that
// the kernel keeps the example's line numbers. Odd lanes call settle: lanes 1, 5, ..., 29 of every
// warp fault inside it at line 9, lanes 3, 7, ..., 31 wait beside them; even lanes took the other
// branch and wait at line 29 (WAIT_HERE), so that they stay in the warp. The example dump holds
// block 0; the second block gives a thread of another block.
int main()
{
    const int n = 100;
    static float in[n];
    for (int i = 0; i < n; ++i)
        in[i] = 0.5f * (float)i + 1.0f;
    float *d_in = to_device(in, n);
    float *d_out = zeroed_device<float>(128);
    divergent<<<2, 64>>>(d_in, d_out, n);
    return finish("divergent_call");
}

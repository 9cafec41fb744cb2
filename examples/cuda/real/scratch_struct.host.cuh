// ---- host: the example's launch (4 blocks of 64 threads, n = 200, dt = 0.01) ----
// Included at the end of the kernel's source (plan.py writes it from ../scratch_struct.cu), so that
// the kernel keeps the example's line numbers. Lanes 2, 10, 18 and 26 of every warp fault at line 54;
// threads 200..255 return at line 11 first.
int main()
{
    const int n = 200;
    const float dt = 0.01f;
    static float state[n * 6];
    static int probe[n];
    for (int i = 0; i < n * 6; ++i)
        state[i] = (float)(i % 13) * 0.5f - 2.0f;
    for (int g = 0; g < n; ++g)
        probe[g] = (int)(((unsigned long long)g * 2654435761ull) & 0x7fffffffull);
    float *d_state = to_device(state, n * 6);
    int *d_probe = to_device(probe, n);
    float *d_out = zeroed_device<float>(n);
    integrate<<<4, 64>>>(d_state, d_probe, d_out, n, dt);
    return finish("scratch_struct");
}

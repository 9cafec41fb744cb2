// Integrates particles with a struct local and a step history that is indexed
// by a value read from memory. The dynamic indices keep `p` and `history` in
// local memory (per-thread stack) even when optimised; `cursor` is a generic
// pointer into that local memory.
#define STEPS 24

#define NEIGHBORS 6

struct Particle {
    float pos[3];
    float vel[3];
    float force[3];
    float mass;
    int id;
    unsigned flags;
    int neighbors[NEIGHBORS];
};

__global__ void integrate(const float *state, const int *probe, float *out,
                          int n, float dt)
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    if (gid >= n)
        return;

    Particle p;
    p.id = gid;
    p.flags = threadIdx.x & 3u;
    p.mass = 1.0f + (float)(gid & 7);
    for (int k = 0; k < 3; ++k) {
        p.pos[k] = state[gid * 6 + k];
        p.vel[k] = state[gid * 6 + 3 + k];
        p.force[k] = -0.1f * p.pos[k];
    }
    for (int j = 0; j < NEIGHBORS; ++j)
        p.neighbors[j] = (gid + 7 * (j + 1)) % n;

    float history[STEPS];
    float damping = 1.0f - 0.01f * (float)(threadIdx.x % 8);
    for (int s = 0; s < STEPS; ++s) {
        for (int k = 0; k < 3; ++k) {
            p.vel[k] = p.vel[k] * damping + p.force[k] / p.mass * dt;
            p.pos[k] += p.vel[k] * dt;
        }
        history[s] = p.pos[0] + p.pos[1] + p.pos[2];
    }

    int pick = probe[gid];
    int step = (pick & 0xffff) % STEPS;
    int axis = (pick >> 16) % 3;
    int neighbor = p.neighbors[(pick >> 8) % NEIGHBORS];
    Particle *cursor = &p;
    float sample = history[step] + cursor->pos[axis];
    STOP_AT((threadIdx.x & 7u) == 2u); out[gid] = sample * (p.flags + 1) + (float)(p.id + neighbor);
}

// ---- host: the example's launch (4 blocks of 64 threads, n = 200, dt = 0.01) ----
// Appended after the kernel, so that the kernel keeps the example's line numbers. Lanes 2, 10, 18
// and 26 of every warp fault at line 54; threads 200..255 return at line 11 first.
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

// Integrates particles with a struct local and a step history that is indexed
// by a value read from memory. The dynamic indices keep `p` and `history` in
// private (scratch) memory even when optimised.
#include <hip/hip_runtime.h>

#define STEPS 24

struct Particle {
    float pos[3];
    float vel[3];
    int id;
    unsigned flags;
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
    for (int k = 0; k < 3; ++k) {
        p.pos[k] = state[gid * 6 + k];
        p.vel[k] = state[gid * 6 + 3 + k];
    }

    float history[STEPS];
    float damping = 1.0f - 0.01f * (float)(threadIdx.x % 8);
    for (int s = 0; s < STEPS; ++s) {
        for (int k = 0; k < 3; ++k) {
            p.vel[k] *= damping;
            p.pos[k] += p.vel[k] * dt;
        }
        history[s] = p.pos[0] + p.pos[1] + p.pos[2];
    }

    int pick = probe[gid];
    int step = (pick & 0xffff) % STEPS;
    int axis = (pick >> 16) % 3;
    float sample = history[step] + p.pos[axis];
    out[gid] = sample * (p.flags + 1) + (float)p.id;
}

// Integrates particles with a struct local and a step history that is indexed
// by a value read from memory. The dynamic indices keep `p` and `history` in
// private memory, which IGC lays out per SIMD lane in a global buffer.
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

__kernel void integrate(__global const float *state, __global const int *probe,
                        __global float *out, int n, float dt)
{
    int gid = get_global_id(0);
    if (gid >= n)
        return;

    struct Particle p;
    p.id = gid;
    p.flags = get_local_id(0) & 3u;
    p.mass = 1.0f + (float)(gid & 7);
    for (int k = 0; k < 3; ++k) {
        p.pos[k] = state[gid * 6 + k];
        p.vel[k] = state[gid * 6 + 3 + k];
        p.force[k] = -0.1f * p.pos[k];
    }
    for (int j = 0; j < NEIGHBORS; ++j)
        p.neighbors[j] = (gid + 7 * (j + 1)) % n;

    float history[STEPS];
    float damping = 1.0f - 0.01f * (float)(get_local_id(0) % 8);
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
    float sample = history[step] + p.pos[axis];
    out[gid] = sample * (p.flags + 1) + (float)(p.id + neighbor);
}

// Rotary embedding in place on (rows, n_heads, head_dim); row r at pos[r] (device memory).
// The angle of pair i is pos * theta_scale^i built by repeated f32 multiplication, as the CPU
// reference does. style 0: interleaved pairs (2i, 2i+1); style 1: half-split (i, i + rope_dim/2).
// grid: rows; threads over n_heads * rope_dim / 2 pairs.

// Rotates pair i of one head (in global or shared memory) at position p.
__device__ __forceinline__ void rope_pair(float* head, int i, int half, float p, float theta_scale,
                                          int style) {
    float theta = p;
    for (int k = 0; k < i; ++k) theta = __fmul_rn(theta, theta_scale);
    const float s = sinf(theta), c = cosf(theta);
    const int a = style == 0 ? 2 * i : i;
    const int b = style == 0 ? 2 * i + 1 : i + half;
    const float x0 = head[a], x1 = head[b];
    head[a] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
    head[b] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
}

extern "C" __global__ void rope_f32(float* x, int n_heads, int head_dim, int rope_dim,
                                    const u32* __restrict__ pos, float theta_scale, int style) {
    pdl_begin_small();
    const int half = rope_dim >> 1;
    const int r = blockIdx.x;
    const float p = (float)pos[r];
    for (int t = threadIdx.x; t < n_heads * half; t += blockDim.x) {
        const int h = t / half, i = t % half;
        rope_pair(x + ((size_t)r * n_heads + h) * head_dim, i, half, p, theta_scale, style);
    }
}

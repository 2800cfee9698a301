// One layer's attention inputs in one launch (`Backend::attn_inputs`): the per-head RMSNorm of
// Q and K, RoPE on both, and the store of K and V into the f16 KV cache (layout as in
// attention.cu). Each block takes one head of one row, so the head's norm is a block-local
// reduction and RoPE's pairs are in shared memory.
//
// grid: (n_head + 2 * n_head_kv, rows); blocks [0, n_head) take Q heads, the next n_head_kv
// K heads, the last n_head_kv V heads (stored only). block: a multiple of 32 threads.
// norm: 0 none, 1 per-head RMSNorm with gains qw / kw (null: gain 1) and epsilon eps.
// rope_dim < 2: no RoPE; otherwise as rope_f32 (theta_scale, style; `rope_pair`, rope.cu).

extern "C" __global__ void attn_inputs(float* q, float* k, const float* __restrict__ v,
                                       const float* __restrict__ qw, const float* __restrict__ kw, int norm,
                                       float eps, int n_head, int n_head_kv, int head_dim, int head_dim_v,
                                       int rope_dim, float theta_scale, int style, u16* kv,
                                       const u32* __restrict__ slot, u64 slot_stride, u64 k_off, u64 v_off,
                                       int cap, const u32* __restrict__ pos) {
    // The head's gains are weights (no kernel writes them): loaded before the wait, as the
    // norms do (NORM_PRELOAD, norm.cu), when a thread has at most one of them.
    const float* wg = blockIdx.x < n_head ? qw : kw;
    const bool pre = NORM_PRELOAD && norm && wg && blockDim.x >= head_dim && blockIdx.x < n_head + n_head_kv;
    const float g_pre = pre && threadIdx.x < head_dim ? wg[threadIdx.x] : 1.0f;
    pdl_begin_small();
    __shared__ float hs[MAX_HEAD];
    __shared__ double part[32];
    const int hb = blockIdx.x, r = blockIdx.y;
    const u32 p = pos[r];
    u16* base = kv + (u64)slot[0] * slot_stride;
    const u64 ring = p % (u32)cap;
    if (hb >= n_head + n_head_kv) {
        const int h = hb - n_head - n_head_kv;
        const int v_dim = n_head_kv * head_dim_v;
        const float* src = v + (size_t)r * v_dim + (size_t)h * head_dim_v;
        u16* dst = base + v_off + ring * (u64)v_dim + (u64)h * head_dim_v;
        for (int i = threadIdx.x; i < head_dim_v; i += blockDim.x) dst[i] = f2h(src[i]);
        return;
    }
    const bool is_q = hb < n_head;
    const int h = is_q ? hb : hb - n_head;
    float* x = is_q ? q + ((size_t)r * n_head + h) * head_dim : k + ((size_t)r * n_head_kv + h) * head_dim;
    for (int i = threadIdx.x; i < head_dim; i += blockDim.x) hs[i] = x[i];
    if (norm) {
        const float* w = is_q ? qw : kw;
        __syncthreads();
        // The sum of squares in the order rmsnorm_f32 takes it over a head (one warp: lane l
        // sums elements l, l + 32, ... in f64, then the warp adds its lanes), so the norm is
        // bit-identical to the separate kernel's.
        if (threadIdx.x < 32) {
            double s = 0.0;
            for (int i = threadIdx.x; i < head_dim; i += 32) s += (double)(hs[i] * hs[i]);
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(FULL_MASK, s, o);
            if (threadIdx.x == 0) part[0] = s;
        }
        __syncthreads();
        const float scale = rms_scale(part[0], head_dim, eps);
        for (int i = threadIdx.x; i < head_dim; i += blockDim.x) {
            const float t = __fmul_rn(hs[i], scale);
            hs[i] = w ? __fmul_rn(t, pre ? g_pre : w[i]) : t;
        }
    }
    __syncthreads();
    if (rope_dim >= 2) {
        const int half = rope_dim >> 1;
        for (int i = threadIdx.x; i < half; i += blockDim.x) rope_pair(hs, i, half, (float)p, theta_scale, style);
        __syncthreads();
    }
    const int k_dim = n_head_kv * head_dim;
    u16* kd = base + k_off + ring * (u64)k_dim + (u64)h * head_dim;
    for (int i = threadIdx.x; i < head_dim; i += blockDim.x) {
        x[i] = hs[i];
        if (!is_q) kd[i] = f2h(hs[i]);
    }
}

// One layer's attention inputs in one launch (`Backend::attn_inputs`): the per-head RMSNorm of
// Q and K, RoPE on both, and the store of K and V into the f16 KV cache (layout as in
// attention.cu). Each block takes one head of one row, so the head's norm is a block-local
// reduction and RoPE's pairs are in shared memory.
//
// grid: (n_head + 2 * n_head_kv, rows); blocks [0, n_head) take Q heads, the next n_head_kv
// K heads, the last n_head_kv V heads (stored only). block: a multiple of 32 threads.
// norm: 0 none, 1 per-head RMSNorm with gains qw / kw (null: gain 1) and epsilon eps.
// rope_dim < 2: no RoPE; otherwise as rope_f32 (theta_scale, style; `rope_pair`, rope.cu).

#define ATTN_INPUTS_PARAMS                                                                                  \
    float *q, float *k, const float *__restrict__ v, const float *__restrict__ qw, const float *__restrict__ kw, \
        int norm, float eps, int n_head, int n_head_kv, int head_dim, int head_dim_v, int rope_dim,             \
        float theta_scale, int style, u16 *kv, const u32 *__restrict__ slot, u64 slot_stride, u64 k_off,         \
        u64 v_off, int cap, const u32 *__restrict__ pos

// Head `hb` of row `r` (the block's threads, all of them: it syncs the block). `hs`: MAX_HEAD
// floats and `part` one double of shared memory; `pre`/`g_pre`: this thread's gain, loaded
// already (attn_inputs loads it before its wait), else read here.
__device__ __forceinline__ void attn_inputs_head(ATTN_INPUTS_PARAMS, int hb, int r, float* hs, double* part, bool pre,
                                                 float g_pre) {
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

extern "C" __global__ void attn_inputs(ATTN_INPUTS_PARAMS) {
    // The head's gains are weights (no kernel writes them): loaded before the wait, as the
    // norms do (NORM_PRELOAD, norm.cu), when a thread has at most one of them.
    const float* wg = blockIdx.x < n_head ? qw : kw;
    const bool pre = NORM_PRELOAD && norm && wg && blockDim.x >= head_dim && blockIdx.x < n_head + n_head_kv;
    const float g_pre = pre && threadIdx.x < head_dim ? wg[threadIdx.x] : 1.0f;
    pdl_begin_small();
    __shared__ float hs[MAX_HEAD];
    __shared__ double part[32];
    attn_inputs_head(q, k, v, qw, kw, norm, eps, n_head, n_head_kv, head_dim, head_dim_v, rope_dim, theta_scale, style,
                     kv, slot, slot_stride, k_off, v_off, cap, pos, blockIdx.x, blockIdx.y, hs, part, pre, g_pre);
}

// ---- Q/K/V (and gate) projections and attn_inputs in one launch ----
// gemv_k_multi_tma1_t2 (the default bulk-copy shape) over the Q, K, V (and gate) matrices of
// one row, then a grid-wide barrier (grid_barrier, norm.cu: the grid is one resident wave) and
// attn_inputs' work in the same launch, block b taking heads b, b + gridDim.x, ...: the
// attn_inputs launch and its boundary go. Arguments: the bulk-copy kernel's, attn_inputs', then
// the barrier. Shared memory for the heads: the start of the activation area, free once every
// warp is past the barrier. ($GLIMMER_FUSE_QK=1, off by default.)
// Status: its decode ran in session 19 (H100: `cuda-check e2e` tallies unchanged) and lost
// 0.12 ms a token against the attn_inputs launch it replaces (BENCHMARKS.md); off.
extern "C" __global__ void __launch_bounds__(768, 1)
    gemv_k_multi_tma1_t2_qkprep(K_MULTI_PARAMS, KT_PARAMS, ATTN_INPUTS_PARAMS, u32* bar) {
#if __CUDA_ARCH__ >= 900
    KtNoEp ep;
    gemv_k_multi_tma_body<1, false, 2>(cols, aq, ads, pairs, w0, rb0, n0, t0, o0, e0, w1, rb1, n1, t1, o1, e1, w2,
                                       rb2, n2, t2, o2, e2, w3, rb3, n3, t3, o3, pf, KT_ARGS, ep);
    grid_barrier(bar, gridDim.x);
    u8* kt_smem = kt_smem_base();
    float* hs = (float*)(kt_smem + KT_BAR_BYTES);
    double* part = (double*)(kt_smem + KT_BAR_BYTES + 4 * MAX_HEAD);
    const int heads = n_head + 2 * n_head_kv;
    for (int hb = blockIdx.x; hb < heads; hb += gridDim.x) {
        attn_inputs_head(q, k, v, qw, kw, norm, eps, n_head, n_head_kv, head_dim, head_dim_v, rope_dim, theta_scale,
                         style, kv, slot, slot_stride, k_off, v_off, cap, pos, hb, 0, hs, part, false, 1.0f);
        // The next head reuses hs.
        __syncthreads();
    }
#endif
}

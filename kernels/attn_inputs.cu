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

// The per-head RMSNorm (gains w, null: 1) and RoPE of one head of head_dim floats at src, into
// `hs` (shared memory), by threads t of nt, synced by `sync` (all of them take part; it ends
// synced). `part`: one double of shared memory. `pre`/`g_pre`: this thread's gain, loaded
// already (attn_inputs loads it before its wait), else read here.
template <class Sync>
__device__ __forceinline__ void head_prep(const float* src, float* hs, double* part, const float* w, int norm, float eps,
                                          int head_dim, int rope_dim, float theta_scale, int style, u32 p, bool pre,
                                          float g_pre, int t, int nt, const Sync& sync) {
    for (int i = t; i < head_dim; i += nt) hs[i] = src[i];
    if (norm) {
        sync();
        // The sum of squares in the order rmsnorm_f32 takes it over a head (one warp: lane l
        // sums elements l, l + 32, ... in f64, then the warp adds its lanes), so the norm is
        // bit-identical to the separate kernel's.
        if (t < 32) {
            double s = 0.0;
            for (int i = t; i < head_dim; i += 32) s += (double)(hs[i] * hs[i]);
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(FULL_MASK, s, o);
            if (t == 0) part[0] = s;
        }
        sync();
        const float scale = rms_scale(part[0], head_dim, eps);
        for (int i = t; i < head_dim; i += nt) {
            const float v = __fmul_rn(hs[i], scale);
            hs[i] = w ? __fmul_rn(v, pre ? g_pre : w[i]) : v;
        }
    }
    sync();
    if (rope_dim >= 2) {
        const int half = rope_dim >> 1;
        for (int i = t; i < half; i += nt) rope_pair(hs, i, half, (float)p, theta_scale, style);
        sync();
    }
}

struct BlockSync {
    __device__ __forceinline__ void operator()() const { __syncthreads(); }
};

// Head `hb` of row `r` (the block's threads, all of them: it syncs the block). `hs`: MAX_HEAD
// floats and `part` one double of shared memory; `pre`/`g_pre` as head_prep's.
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
    head_prep(x, hs, part, is_q ? qw : kw, norm, eps, head_dim, rope_dim, theta_scale, style, p, pre, g_pre,
              (int)threadIdx.x, (int)blockDim.x, BlockSync());
    const int k_dim = n_head_kv * head_dim;
    u16* kd = base + k_off + ring * (u64)k_dim + (u64)h * head_dim;
    for (int i = threadIdx.x; i < head_dim; i += blockDim.x) {
        x[i] = hs[i];
        if (!is_q) kd[i] = f2h(hs[i]);
    }
}

// ATTN_KV_PREFETCH (a measuring macro, 0 by default; session 23 on the H100: correct, but the
// 30B decode loses 0.7 %, 138.9 → 138.0 tok/s, attention 0.50 → 0.52 ms: the requests compete
// with the next GEMV's first copies): a one-row
// attn_inputs asks L2 for the layer's cached keys and values before position p once its wait
// is over (the Q/K/V GEMV done, HBM idle until the next GEMV), so that the attention launch
// after it, whose splits each walk their keys in a chain of dependent loads, finds them in L2
// rather than HBM (the 30B shape at 515 keys: 2 MB a layer; attention costs 0.40–0.48 ms a
// step on the H100 in session 22). It takes the min(p, cap) positions before p, which for a
// sliding layer past its window is more than attention reads (up to the ring's 2 x window).
#ifndef ATTN_KV_PREFETCH
#define ATTN_KV_PREFETCH 0
#endif
// The ring slots of positions p - m .. p - 1 (m <= cap), as one or two runs of slots, each run's
// `row` bytes a slot asked of L2 from `base` (shared out over the grid's blocks).
__device__ __forceinline__ void ring_prefetch_l2(const u16* base, u64 row, u32 p, u32 m, u32 cap) {
    if (m == 0 || ((size_t)base & 15) || (row & 15)) return;
    const u32 s0 = (p - m) % cap, s1 = (p - 1) % cap;
    const u8* b = (const u8*)base;
    if (s0 <= s1) {
        l2_prefetch_share(b + (u64)s0 * row, (u64)(s1 - s0 + 1) * row);
    } else {
        l2_prefetch_share(b + (u64)s0 * row, (u64)(cap - s0) * row);
        l2_prefetch_share(b, (u64)(s1 + 1) * row);
    }
}

extern "C" __global__ void attn_inputs(ATTN_INPUTS_PARAMS) {
    // The head's gains are weights (no kernel writes them): loaded before the wait, as the
    // norms do (NORM_PRELOAD, norm.cu), when a thread has at most one of them.
    const float* wg = blockIdx.x < n_head ? qw : kw;
    const bool pre = NORM_PRELOAD && norm && wg && blockDim.x >= head_dim && blockIdx.x < n_head + n_head_kv;
    const float g_pre = pre && threadIdx.x < head_dim ? wg[threadIdx.x] : 1.0f;
    pdl_begin_small();
    if (ATTN_KV_PREFETCH && gridDim.y == 1) {
        const u32 p = pos[0], m = min(p, (u32)cap);
        const u16* base = kv + (u64)slot[0] * slot_stride;
        ring_prefetch_l2(base + k_off, 2ull * n_head_kv * head_dim, p, m, (u32)cap);
        ring_prefetch_l2(base + v_off, 2ull * n_head_kv * head_dim_v, p, m, (u32)cap);
    }
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
#define ATTN_INPUTS_ARGS                                                                                     \
    q, k, v, qw, kw, norm, eps, n_head, n_head_kv, head_dim, head_dim_v, rope_dim, theta_scale, style, kv, slot, \
        slot_stride, k_off, v_off, cap, pos
template <int R>
__device__ __forceinline__ void tma_qkprep_body(K_MULTI_PARAMS, KT_PARAMS, ATTN_INPUTS_PARAMS, u32* bar) {
#if __CUDA_ARCH__ >= 900
    KtNoEp ep;
    gemv_k_multi_tma_body<R, false, 2>(cols, aq, ads, pairs, w0, rb0, n0, t0, o0, e0, w1, rb1, n1, t1, o1, e1, w2,
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

// gemv_k_multi_tma1_t2_qkprep, and gemv_k_multi_tma2_t2_qkprep with two rows an item where
// the setting asks for them and the matrices' two-row slots keep every warp (the H200's
// default, `TmaGemv::TWO_ROWS`; session 27, written without a GPU: not yet run).
#define K_TMA_QKPREP(name, R)                                                                                    \
    extern "C" __global__ void __launch_bounds__(768, 1) name(K_MULTI_PARAMS, KT_PARAMS, ATTN_INPUTS_PARAMS,     \
                                                              u32* bar) {                                        \
        tma_qkprep_body<R>(cols, aq, ads, pairs, w0, rb0, n0, t0, o0, e0, w1, rb1, n1, t1, o1, e1, w2, rb2, n2, t2, \
                           o2, e2, w3, rb3, n3, t3, o3, pf, KT_ARGS, ATTN_INPUTS_ARGS, bar);                     \
    }
K_TMA_QKPREP(gemv_k_multi_tma1_t2_qkprep, 1)
K_TMA_QKPREP(gemv_k_multi_tma2_t2_qkprep, 2)

// ---- attn_inputs deferred into attention ($GLIMMER_FUSE_PREP=1) ----
// Decode's attn_inputs launch (one row) folded into the attention launch after it, with no
// barrier: each attn_split block prepares its own query head from the raw projections (the
// head's norm and RoPE: head_dim values, as attn_inputs does), and the block whose split holds
// the new position prepares that key and takes it, and its value, from shared memory rather
// than from the cache (split_keys_wide's NEW): no block reads the cache rows this launch
// writes, so none waits on another. The first query head of each KV group's block stores the
// key and value into the cache for later steps. Same arithmetic in the same order as the two
// launches: the output and the cache are bit-identical to attn_inputs then attn_split (checked
// in `cuda-check ops`). q, k and v are left unprepared (nothing reads them after attention).
// Status: measured on the H100 in session 20: no gain (7.28 against 7.27 ms a step; every
// block's serial query prep costs what the launch did); off.
// grid, block: attn_split's, one row (gridDim.z == 1). Arguments: attn_split's, then
// attn_inputs' k, v, qw, kw, norm, eps, rope_dim, theta_scale, style, `kvw`: the cache
// again, writable (kv is read-only in attn_split's parameters; the rows written are never
// read through it), then attn_split's nextw / next_bytes.
struct AttnSync {
    int bar;
    __device__ __forceinline__ void operator()() const { att_sync(bar); }
};

struct AttnPrepQ {
    static constexpr bool NEW = true;
    u16* nk;
    u16* nv;
    float* hk;
    double* red;
    const float* k;
    const float* v;
    const float* qw;
    const float* kw;
    int norm;
    float eps;
    int rope_dim;
    float theta_scale;
    int style;
    int n_head, n_head_kv, head_dim_v;
    u16* kvw;
    const u32* slot;
    u64 slot_stride, k_off, v_off;
    int cap;
    __device__ __forceinline__ int stage(const float* qh, float* sq, int head_dim, int h, int kvh, u32 p, int k0,
                                         int k1, int t, int bar) const {
        const AttnSync sync = {bar};
        head_prep(qh, sq, red, qw, norm, eps, head_dim, rope_dim, theta_scale, style, p, false, 1.0f, t, ATT_THREADS,
                  sync);
        for (int d = t; d < head_dim; d += ATT_THREADS) sq[d] = round_f16(sq[d]);
        const bool mine = k0 <= (int)p && (int)p < k1;
        if (mine) {
            head_prep(k + (size_t)kvh * head_dim, hk, red, kw, norm, eps, head_dim, rope_dim, theta_scale, style, p,
                      false, 1.0f, t, ATT_THREADS, sync);
            const float* vs = v + (size_t)kvh * head_dim_v;
            for (int d = t; d < head_dim; d += ATT_THREADS) nk[d] = f2h(hk[d]);
            for (int d = t; d < head_dim_v; d += ATT_THREADS) nv[d] = f2h(vs[d]);
            if (h % (n_head / n_head_kv) == 0) {
                const int k_dim = n_head_kv * head_dim, v_dim = n_head_kv * head_dim_v;
                u16* base = kvw + (u64)slot[0] * slot_stride;
                const u64 ring = p % (u32)cap;
                u16* kd = base + k_off + ring * (u64)k_dim + (u64)kvh * head_dim;
                u16* vd = base + v_off + ring * (u64)v_dim + (u64)kvh * head_dim_v;
                for (int d = t; d < head_dim; d += ATT_THREADS) kd[d] = nk[d];
                for (int d = t; d < head_dim_v; d += ATT_THREADS) vd[d] = nv[d];
            }
        }
        att_sync(bar);
        return mine ? (int)p : -1;
    }
};

extern "C" __global__ void __launch_bounds__(ATT_THREADS)
    attn_split_prep(ATTN_SPLIT_PARAMS, const float* __restrict__ k, const float* __restrict__ v,
                    const float* __restrict__ qw, const float* __restrict__ kw, int norm, float eps, int rope_dim,
                    float theta_scale, int style, u16* kvw, const u8* __restrict__ nextw, u64 next_bytes) {
    l2_prefetch_share(nextw, next_bytes);
    pdl_begin_small();
    __shared__ AttnSmem sm;
    __shared__ __align__(16) u16 nk[MAX_HEAD];
    __shared__ __align__(16) u16 nv[MAX_HEAD];
    __shared__ float hk[MAX_HEAD];
    __shared__ double red[1];
    const AttnPrepQ st = {nk,    nv,       hk,   red,       k,     v,          qw,          kw,
                          norm,  eps,      rope_dim, theta_scale, style, n_head, n_head_kv, head_dim_v,
                          kvw,   slot,     slot_stride, k_off,  v_off, cap};
    attn_item(q, kv, slot, slot_stride, k_off, v_off, cap, pos, n_head, n_head_kv, head_dim, head_dim_v, scale,
              window, max_splits, min_keys, part, ml, done, out, gate, q8, ds8, blockIdx.x, blockIdx.y, 0,
              threadIdx.x, 0, sm, st);
}

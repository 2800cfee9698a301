// The f16 KV cache on device and attention over it.
//
// Layout: slot s of the cache starts at kv + s * slot_stride (u16 units); the active slot is
// read from device memory (*slot), so a captured graph serves any session. Inside a slot, a
// layer has keys (cap, k_dim) at k_off and values (cap, v_dim) at v_off; position p lives in
// ring slot p % cap (cap = ctx for global layers).
//
// Attention is split-K flash decoding: attn_split (grid: n_head, max_splits, rows) gives each
// block a contiguous range of the keys visible to its query and writes an unnormalized partial
// output with its running max and sum; the last split of each query and head to finish merges
// the partials (combine_head), so attention is one launch. At one row on sm_90, attn_split_cl
// (below, the host's `attn_cluster`) puts a short row's splits in one thread-block cluster a
// head, merged in distributed shared memory after a cluster barrier (no ticket, no L2 round
// trips).
// The number of splits actually used depends on the visible length (at least min_keys keys
// per split), computed on the device from the position, so one graph serves every length.
// Heads of 64, 128 or 256 dims take split_keys_wide: several lanes share a key with 16-byte
// loads, and the next keys' loads are in flight while the current ones are summed (on the
// H100 the 30B shape's attention cost fell from 0.79 to 0.55 ms a token; BENCHMARKS.md).

#define ATT_WARPS 4
#define ATT_THREADS (ATT_WARPS * 32)
#define MAX_HEAD 256
// Most splits of one query's keys (the host's decode split count stays below it).
#define MAX_SPLITS 256

// The shared memory of one attention worker: ATT_WARPS warps that take one (head, split)
// item at a time (attn_item). attn_split's block is one worker; the bulk-copy output
// projection with attention in front (gemv_k_multi_tma1_t2_attn*, below) has one a
// ATT_WARPS warps of its block, each with its own of these after the rings.
struct AttnSmem {
    float sq[MAX_HEAD];
    float wacc[ATT_WARPS][MAX_HEAD];
    float wm[ATT_WARPS], wl[ATT_WARPS];
    float wsplit[MAX_SPLITS];
    float wred[2][ATT_WARPS];
    u32 last;
};
// Bytes a worker's AttnSmem takes in dynamic shared memory (the host's ATT_SMEM, fns.rs).
#define ATT_SMEM_BYTES 6272
static_assert(sizeof(AttnSmem) <= ATT_SMEM_BYTES && ATT_SMEM_BYTES % 128 == 0, "a worker's shared memory");

// Synchronizes the ATT_THREADS threads of one worker: named barrier `id` (0 where the worker
// is the whole block).
__device__ __forceinline__ void att_sync(int id) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(ATT_THREADS) : "memory");
}

extern "C" __global__ void kv_store_f16(u16* kv, const u32* __restrict__ slot, u64 slot_stride, u64 k_off,
                                        u64 v_off, int cap, const float* __restrict__ k,
                                        const float* __restrict__ v, int k_dim, int v_dim,
                                        const u32* __restrict__ pos) {
    pdl_begin_small();
    const int r = blockIdx.x;
    const u64 s = pos[r] % (u32)cap;
    u16* base = kv + (u64)slot[0] * slot_stride;
    u16* kd = base + k_off + s * (u64)k_dim;
    u16* vd = base + v_off + s * (u64)v_dim;
    for (int i = threadIdx.x; i < k_dim; i += blockDim.x) kd[i] = f2h(k[(size_t)r * k_dim + i]);
    for (int i = threadIdx.x; i < v_dim; i += blockDim.x) vd[i] = f2h(v[(size_t)r * v_dim + i]);
}

// Splits used for a visible length n.
__device__ __forceinline__ int splits_for(int n, int max_splits, int min_keys) {
    int s = (n + min_keys - 1) / min_keys;
    if (s > max_splits) s = max_splits;
    return s < 1 ? 1 : s;
}

// First visible key and visible length of a query at position p.
__device__ __forceinline__ void visible(u32 p, int window, int* first, int* n) {
    int f = 0;
    if (window > 0 && (long long)p + 1 > window) f = (int)(p + 1 - (u32)window);
    *first = f;
    *n = (int)p + 1 - f;
}

// The eight f16 of `w` times eight f32 of `q`, summed in order.
__device__ __forceinline__ float dot8_f16(uint4 w, const float* q) {
    const u32 h[4] = {w.x, w.y, w.z, w.w};
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        s += h2f((u16)(h[i] & 0xFFFFu)) * q[2 * i];
        s += h2f((u16)(h[i] >> 16)) * q[2 * i + 1];
    }
    return s;
}

// Key iterations a warp of split_keys_wide has in flight in the cluster attention's short rows
// (attn_split_cl; a measuring macro; 1: the next iteration's loads only). Each iteration's key
// and value rows come from HBM (the step's weight streams leave no cache in L2), so with one in
// flight every iteration waits a round trip: at 515 keys a cluster block walks ~33 keys, four or
// five iterations of its warps, ~0.7 µs each. With ATT_KEY_DEPTH in flight the walk would wait
// about once per that many, but on the H100 (session 28, 30B shape at 512 keys) depth 4 took
// attention from 0.357 to 0.541 ms a step (146.1 -> 142.1 tok/s), so 1 is the default. Why is
// not known: ptxas gives depth 4 108 registers and no spills, still four blocks a
// multiprocessor (session 29).
#ifndef ATT_KEY_DEPTH
#define ATT_KEY_DEPTH 1
#endif

// A warp's walk over keys k0 + wid*G .. (step ATT_WARPS*G) of [k0, k1) when head_dim ==
// head_dim_v == 8 * LPK: LPK lanes share a key (one 16-byte load of its key row and one of its
// value row each), so a warp takes G = 32 / LPK keys at a time and has the next ATT_KEY_DEPTH
// iterations' loads in flight while it works on these (a ring of registers, indexed by the
// unrolled position in it). Each group of LPK lanes keeps its own running max, sum and 8
// output dims, taking its keys in order; the groups are merged at the end, so lanes 0..LPK-1
// return the warp's result (m, l, acc for dims 8*lane..).
// NEW: key `pk` (-1: none) is not read from the cache but from `nk` / `nv` (16-byte aligned
// shared memory, head_dim f16 each): the key this launch stores (attn_split_prep,
// attn_inputs.cu), the same bits, in the same order of arithmetic.
template <int LPK, bool NEW = false, int D = 1>
__device__ __forceinline__ void split_keys_wide(const float* sq, const u16* kb, const u16* vb, int k_dim, int v_dim,
                                                int cap, int k0, int k1, float scale, float& m, float& l,
                                                float acc[8], int t, const u16* nk = nullptr,
                                                const u16* nv = nullptr, int pk = -1) {
    constexpr int G = 32 / LPK;
    constexpr int STEP = ATT_WARPS * G;
    const int lane = t & 31, wid = t >> 5;
    const int grp = lane / LPK, sl = lane % LPK;
    float qv[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) qv[j] = sq[8 * sl + j];
    m = NEG_INF;
    l = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[j] = 0.0f;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    auto load = [&](int key, uint4& kk, uint4& vv) {
        if (key < k1) {
            if (NEW && key == pk) {
                kk = *(const uint4*)(nk + 8 * sl);
                vv = *(const uint4*)(nv + 8 * sl);
            } else {
                const u64 s = (u32)key % (u32)cap;
                kk = *(const uint4*)(kb + s * (u64)k_dim + 8 * sl);
                vv = *(const uint4*)(vb + s * (u64)v_dim + 8 * sl);
            }
        } else {
            kk = zero;
            vv = zero;
        }
    };
    // One key (group key `key`, its rows kc, vc) into the group's running max, sum and dims.
    auto take = [&](int key, const uint4& kc, const uint4& vc) {
        float dot = dot8_f16(kc, qv);
#pragma unroll
        for (int o = LPK / 2; o > 0; o >>= 1) dot += __shfl_xor_sync(FULL_MASK, dot, o);
        if (key < k1) {
            const float sc = dot * scale;
            const float mn = fmaxf(m, sc);
            const float c = expf(m - mn);  // 0 on the group's first key (m = -inf)
            const float e = expf(sc - mn);
            l = l * c + e;
            m = mn;
            const u32 h[4] = {vc.x, vc.y, vc.z, vc.w};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                acc[2 * i] = acc[2 * i] * c + e * h2f((u16)(h[i] & 0xFFFFu));
                acc[2 * i + 1] = acc[2 * i + 1] * c + e * h2f((u16)(h[i] >> 16));
            }
        }
    };
    // D == 1 keeps the two-register form: the ring below takes the same keys in the same order
    // at D == 1 too, but ptxas gave attn_split 64 registers and a spill with it (56 and none
    // with this), and attn_split's 1 056 blocks stay one wave only under 64.
    if constexpr (D == 1) {
        int key = k0 + wid * G + grp;
        uint4 kc, vc;
        load(key, kc, vc);
        // Every lane of the warp runs the same number of iterations (the shuffles need all 32).
        for (int base = k0 + wid * G; base < k1; base += STEP, key += STEP) {
            uint4 kn, vn;
            load(key + STEP, kn, vn);
            take(key, kc, vc);
            kc = kn;
            vc = vn;
        }
    } else {
        // The warp's iterations (the same for all its lanes), D in flight in a ring of
        // registers that the unrolled inner loop indexes by constants.
        const int b0 = k0 + wid * G;
        const int iters = b0 < k1 ? (k1 - b0 + STEP - 1) / STEP : 0;
        const int key0 = b0 + grp;
        uint4 kq[D], vq[D];
#pragma unroll
        for (int d = 0; d < D; ++d) load(key0 + d * STEP, kq[d], vq[d]);
        for (int i0 = 0; i0 < iters; i0 += D) {
#pragma unroll
            for (int d = 0; d < D; ++d) {
                if (i0 + d >= iters) break;
                const int key = key0 + (i0 + d) * STEP;
                const uint4 kc = kq[d], vc = vq[d];
                // This slot's next iteration, D on (zeros past the end: no load).
                load(key + D * STEP, kq[d], vq[d]);
                take(key, kc, vc);
            }
        }
    }
    // Merge the groups (lanes sl, sl + LPK, ...).
#pragma unroll
    for (int o = 16; o >= LPK; o >>= 1) {
        const float mo = __shfl_xor_sync(FULL_MASK, m, o);
        const float lo = __shfl_xor_sync(FULL_MASK, l, o);
        const float mn = fmaxf(m, mo);
        const float f = m == NEG_INF ? 0.0f : expf(m - mn);
        const float fo = mo == NEG_INF ? 0.0f : expf(mo - mn);
        l = l * f + lo * fo;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const float ao = __shfl_xor_sync(FULL_MASK, acc[j], o);
            acc[j] = acc[j] * f + ao * fo;
        }
        m = mn;
    }
}

// Merges the ns partial outputs (part, ml at `base`..) of one query row and head into `out` at
// `obase`: each split weighs in by exp(m_s - max) / sum. gate (may be null): out *=
// sigmoid(gate) (`Backend::attention_gated`). q8 / ds8 (may be null): also quantize the head to
// q8_1 for the output projection; then head_dim_v must be a multiple of 32 (the worker is whole
// warps). The partials come from other blocks: read through L2 (__ldcg), not L1. Run by one
// worker: thread t of ATT_THREADS, barrier `bar`, its shared memory `sm`.
__device__ __forceinline__ void combine_head(const float* part, const float2* ml, int ns, size_t base, int head_dim_v,
                                             size_t obase, float* __restrict__ out, const float* __restrict__ gate,
                                             i8* __restrict__ q8, float2* __restrict__ ds8, int t, int bar,
                                             AttnSmem& sm) {
    // Each load below is issued before any of them is used: the merge is a few L2 round trips,
    // not one a split (a loop over the splits that uses each value as it loads it waits for
    // every load in turn; at 33 splits that was ~30 trips).
    constexpr int PER = MAX_SPLITS / ATT_THREADS;  // splits a thread holds
    const int lane = t & 31, wid = t >> 5;
    float2 v[PER];
    float mx = NEG_INF;
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        const int sp = t + k * ATT_THREADS;
        v[k] = sp < ns ? __ldcg(&ml[base + sp]) : make_float2(NEG_INF, 0.0f);
        mx = fmaxf(mx, v[k].x);
    }
    mx = warp_max(mx);
    if (lane == 0) sm.wred[0][wid] = mx;
    att_sync(bar);
#pragma unroll
    for (int w = 0; w < ATT_WARPS; ++w) mx = fmaxf(mx, sm.wred[0][w]);
    float ls = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        const int sp = t + k * ATT_THREADS;
        const float e = v[k].x == NEG_INF ? 0.0f : expf(v[k].x - mx);
        if (sp < ns) sm.wsplit[sp] = e;
        ls += v[k].y * e;
    }
    ls = warp_sum(ls);
    if (lane == 0) sm.wred[1][wid] = ls;
    att_sync(bar);
    float lsum = 0.0f;
#pragma unroll
    for (int w = 0; w < ATT_WARPS; ++w) lsum += sm.wred[1][w];
    const float inv = 1.0f / lsum;
    for (int d = t; d < head_dim_v; d += ATT_THREADS) {
        const size_t e = obase + d;
        const float gv = gate ? gate[e] : 0.0f;
        float o = 0.0f;
#pragma unroll 16
        for (int sp = 0; sp < ns; ++sp) o += __ldcg(&part[(base + sp) * head_dim_v + d]) * sm.wsplit[sp];
        float y = o * inv;
        if (gate) y *= 1.0f / (1.0f + expf(-gv));
        out[e] = y;
        if (q8) quantize_lane_q8(y, e, q8, ds8);
    }
}

// ticket_last (common.cu) for one worker: true in all its threads for the last of `n` to count
// itself in on `ctr`.
__device__ __forceinline__ bool att_ticket_last(u32* ctr, u32 n, int t, int bar, AttnSmem& sm) {
    if (TICKET_FENCE_ALL) __threadfence();
    att_sync(bar);
    if (t == 0) {
        __threadfence();
        const bool last = atomicAdd(ctr, 1u) == n - 1;
        if (last) __threadfence();
        sm.last = last;
    }
    att_sync(bar);
    return sm.last != 0;
}

// How attn_item gets its query head into sm.sq (rounded to f16, as the keys are) and which key,
// if any, it takes from shared memory instead of the cache (split_keys_wide's NEW): AttnQ reads
// the head attn_inputs has prepared in q and takes every key from the cache; attn_split_prep's
// stage (attn_inputs.cu) prepares the head itself. `stage` ends with the worker synced and
// returns that key's position (-1: none).
struct AttnQ {
    static constexpr bool NEW = false;
    const u16* nk = nullptr;
    const u16* nv = nullptr;
    __device__ __forceinline__ int stage(const float* qh, float* sq, int head_dim, int, int, u32, int, int, int t,
                                         int bar) const {
        for (int d = t; d < head_dim; d += ATT_THREADS) sq[d] = round_f16(qh[d]);
        att_sync(bar);
        return -1;
    }
};

#define ATTN_SPLIT_PARAMS                                                                                        \
    const float *__restrict__ q, const u16 *__restrict__ kv, const u32 *__restrict__ slot, u64 slot_stride,       \
        u64 k_off, u64 v_off, int cap, const u32 *__restrict__ pos, int n_head, int n_head_kv, int head_dim,       \
        int head_dim_v, float scale, int window, int max_splits, int min_keys, float *__restrict__ part,           \
        float2 *__restrict__ ml, u32 *__restrict__ done, float *__restrict__ out, const float *__restrict__ gate, \
        i8 *__restrict__ q8, float2 *__restrict__ ds8

// Head h, split sp of row r: the keys of the split, its partial output and (max, sum) into
// part / ml, and, where it is the last split of the head to finish, the merge (combine_head);
// nothing where sp is not below the split count for row r's visible length. One worker
// (thread t of ATT_THREADS, barrier `bar`, shared memory `sm`); it may take another item after
// this returns.
// CL (attn_split_cl, below; `cl` its shared memory): the partial goes into the shared memory of
// the cluster blocks that merge it instead of `part` / `ml`, and nothing is merged here.
struct AttnClSmem;
__device__ __forceinline__ void attn_cl_store(AttnClSmem* cl, int sp, int head_dim_v, int t, int d, float o, float mx,
                                              float lsum);
// D: split_keys_wide's iterations in flight (ATT_KEY_DEPTH for the cluster attention's short
// rows; 1 elsewhere: attn_split's 1 056 blocks stay one wave only under 64 registers a thread,
// and the attention inside a bulk-copy GEMV launch has 80).
template <class Stage = AttnQ, bool CL = false, int D = 1>
__device__ __forceinline__ void attn_item(ATTN_SPLIT_PARAMS, int h, int sp, int r, int t, int bar, AttnSmem& sm,
                                          const Stage& st = Stage(), AttnClSmem* cl = nullptr) {
    const int lane = t & 31, wid = t >> 5;
    const u32 p = pos[r];
    int first, n;
    visible(p, window, &first, &n);
    const int ns = splits_for(n, max_splits, min_keys);
    if (sp >= ns) return;
    const int chunk = (n + ns - 1) / ns;
    const int k0 = first + sp * chunk;
    const int k1 = min(first + n, k0 + chunk);
    const int kvh = h / (n_head / n_head_kv);
    const int k_dim = n_head_kv * head_dim, v_dim = n_head_kv * head_dim_v;
    const u16* base = kv + (u64)slot[0] * slot_stride;
    const u16* kb = base + k_off + (u64)kvh * head_dim;
    const u16* vb = base + v_off + (u64)kvh * head_dim_v;
    const float* qh = q + ((size_t)r * n_head + h) * head_dim;
    const int pk = st.stage(qh, sm.sq, head_dim, h, kvh, p, k0, k1, t, bar);
    constexpr bool NEW = Stage::NEW;

    // Key rows of 64, 128 or 256 f16 at 16-byte aligned addresses: several lanes a key.
    const bool wide = head_dim == head_dim_v && (head_dim == 64 || head_dim == 128 || head_dim == 256) &&
                      ((((size_t)kb | (size_t)vb) & 15) == 0) && (k_dim % 8 == 0) && (v_dim % 8 == 0);
    if (wide) {
        float m, l, a8[8];
        if (head_dim == 64)
            split_keys_wide<8, NEW, D>(sm.sq, kb, vb, k_dim, v_dim, cap, k0, k1, scale, m, l, a8, t, st.nk, st.nv, pk);
        else if (head_dim == 128)
            split_keys_wide<16, NEW, D>(sm.sq, kb, vb, k_dim, v_dim, cap, k0, k1, scale, m, l, a8, t, st.nk, st.nv, pk);
        else
            split_keys_wide<32, NEW, D>(sm.sq, kb, vb, k_dim, v_dim, cap, k0, k1, scale, m, l, a8, t, st.nk, st.nv, pk);
        if (lane == 0) { sm.wm[wid] = m; sm.wl[wid] = l; }
        if (lane < head_dim / 8) {
#pragma unroll
            for (int j = 0; j < 8; ++j) sm.wacc[wid][8 * lane + j] = a8[j];
        }
    }
    float m = NEG_INF, l = 0.0f;
    float acc[MAX_HEAD / 32];
#pragma unroll
    for (int i = 0; i < MAX_HEAD / 32; ++i) acc[i] = 0.0f;
    for (int key = k0 + wid; !wide && key < k1; key += ATT_WARPS) {
        const u64 s = (u32)key % (u32)cap;
        const bool nw = NEW && key == pk;
        const u16* kr = nw ? st.nk : kb + s * (u64)k_dim;
        float dot = 0.0f;
        for (int d = lane; d < head_dim; d += 32) dot += h2f(kr[d]) * sm.sq[d];
        const float sc = warp_sum(dot) * scale;
        const float mn = fmaxf(m, sc);
        const float c = expf(m - mn);  // 0 on the first key (m = -inf)
        const float e = expf(sc - mn);
        l = l * c + e;
        m = mn;
        const u16* vr = nw ? st.nv : vb + s * (u64)v_dim;
#pragma unroll
        for (int i = 0; i < MAX_HEAD / 32; ++i) {
            const int d = lane + 32 * i;
            if (d < head_dim_v) acc[i] = acc[i] * c + e * h2f(vr[d]);
        }
    }
    if (!wide) {
        if (lane == 0) { sm.wm[wid] = m; sm.wl[wid] = l; }
#pragma unroll
        for (int i = 0; i < MAX_HEAD / 32; ++i) {
            const int d = lane + 32 * i;
            if (d < head_dim_v) sm.wacc[wid][d] = acc[i];
        }
    }
    att_sync(bar);
    float mx = NEG_INF;
#pragma unroll
    for (int w = 0; w < ATT_WARPS; ++w) mx = fmaxf(mx, sm.wm[w]);
    float f[ATT_WARPS];
    float lsum = 0.0f;
#pragma unroll
    for (int w = 0; w < ATT_WARPS; ++w) {
        f[w] = sm.wm[w] == NEG_INF ? 0.0f : expf(sm.wm[w] - mx);
        lsum += sm.wl[w] * f[w];
    }
    const size_t idx = ((size_t)r * n_head + h) * max_splits + sp;
    for (int d = t; d < head_dim_v; d += ATT_THREADS) {
        float o = 0.0f;
#pragma unroll
        for (int w = 0; w < ATT_WARPS; ++w) o += sm.wacc[w][d] * f[w];
        if (CL) attn_cl_store(cl, sp, head_dim_v, t, d, o, mx, lsum);
        else part[idx * head_dim_v + d] = o;
    }
    if (CL) return;
    if (t == 0) ml[idx] = make_float2(mx, lsum);

    // The last split of this query and head to finish merges all of them (a ticket: each
    // worker's partial is visible before it counts itself in). The ticket's barriers also
    // keep this worker's next item from overwriting sq / wacc while they are read above.
    const size_t qh_idx = (size_t)r * n_head + h;
    if (!att_ticket_last(done + qh_idx, (u32)ns, t, bar, sm)) return;
    combine_head(part, ml, ns, qh_idx * max_splits, head_dim_v, qh_idx * head_dim_v, out, gate, q8, ds8, t, bar, sm);
    if (t == 0) done[qh_idx] = 0;  // ready for the next call (and graph replay)
    // combine_head's reads of wsplit / wred end before the next item writes them.
    att_sync(bar);
}

// Then `nextw` / `next_bytes`: weights to ask L2 for before the wait (l2_prefetch_share;
// null: none).
extern "C" __global__ void __launch_bounds__(ATT_THREADS)
    attn_split(ATTN_SPLIT_PARAMS, const u8* __restrict__ nextw, u64 next_bytes) {
    l2_prefetch_share(nextw, next_bytes);
    pdl_begin_small();
    __shared__ AttnSmem sm;
    attn_item(q, kv, slot, slot_stride, k_off, v_off, cap, pos, n_head, n_head_kv, head_dim, head_dim_v, scale,
              window, max_splits, min_keys, part, ml, done, out, gate, q8, ds8, blockIdx.x, blockIdx.y, blockIdx.z,
              threadIdx.x, 0, sm);
}

// ---- Decode attention over a thread-block cluster (sm_90) ----
// attn_split_cl (one row; grid (c·k, n_head), clusters of c blocks along x: c = the host's
// `attn_cluster`, 2..=16, with head_dim_v a multiple of 32 and at most 32·c; k = the host's
// decode split count over c, rounded up). Where the row's visible keys are at most `cl_keys`,
// the first cluster of each head takes them in at most c splits, one a block (attn_item with
// max_splits = c), and its partials meet in distributed shared memory instead of global memory
// and a ticket: each block stores its (max, sum) into the shared memory of every block that
// merges, and each 32 dims of its partial output into the block that merges those dims (block
// d / 32 of the cluster); after one cluster barrier, the first warp of each of those
// head_dim_v / 32 blocks merges its 32 dims, gates them and quantizes them (one q8_1 block). No
// fence, no atomic ticket, no L2 round trip for the partials, and the merge is a warp's, not a
// block's; the head's other clusters leave at once. Above `cl_keys` (c splits would each walk
// too many keys) every block of the head is a split of attn_split's kind (at most max_splits,
// the ticket and combine_head), so long rows keep attn_split's parallelism.
// Measured on the H100 (BENCHMARKS.md): at 515 keys +0.9 % (session 22) and +2.0 % (session
// 23) against attn_split; at 3 000 keys −1.7 % before the long-row path existed and −2.1 %
// with it (session 23: whole clusters of co-resident blocks schedule worse than attn_split's
// free blocks). So the host launches attn_split itself for rows that may see more than
// `cl_keys` keys (decode keeps a graph for each side, CudaBackend::graph_class); the long-row
// path stays as the guard for a launch that finds a longer row than it was told.
#define ATT_CL_MAX 16
struct AttnClSmem {
    float part[ATT_CL_MAX][32];
    float2 ml[ATT_CL_MAX];
};
__device__ __forceinline__ void attn_cl_store(AttnClSmem* cl, int sp, int head_dim_v, int t, int d, float o, float mx,
                                              float lsum) {
#if __CUDA_ARCH__ >= 900
    // d == t on the first pass (ATT_THREADS >= 32 · owners is not assumed: every d is stored).
    st_cluster_f32(&cl->part[sp][d & 31], (u32)(d >> 5), o);
    if (d == t && t < (head_dim_v >> 5)) st_cluster_f32x2(&cl->ml[sp], (u32)t, make_float2(mx, lsum));
#endif
}

// At least four blocks a multiprocessor (512 a step's 32 heads × 16: one wave on 132), which
// leaves 128 registers a thread for ATT_KEY_DEPTH's ring.
extern "C" __global__ void __launch_bounds__(ATT_THREADS, 4)
    attn_split_cl(ATTN_SPLIT_PARAMS, const u8* __restrict__ nextw, u64 next_bytes, int cl_keys) {
#if __CUDA_ARCH__ >= 900
    l2_prefetch_share(nextw, next_bytes);
    cluster_arrive_relaxed();
    pdl_begin_small();
    __shared__ AttnSmem sm;
    __shared__ AttnClSmem cl;
    const int c = (int)cluster_blocks(), sp = blockIdx.x, h = blockIdx.y, t = threadIdx.x;
    int first, n;
    visible(pos[0], window, &first, &n);
    // Every block of the cluster has started (remote stores may land), and every block has
    // passed the barrier's first phase whichever way it goes on.
    cluster_wait();
    if (n > cl_keys) {
        // A long row: attn_split's splits over the head's blocks, merged by the last through
        // global memory (attn_item's ticket and combine_head).
        attn_item(q, kv, slot, slot_stride, k_off, v_off, cap, pos, n_head, n_head_kv, head_dim, head_dim_v, scale,
                  window, min(max_splits, (int)gridDim.x), min_keys, part, ml, done, out, gate, q8, ds8, h, sp, 0,
                  t, 0, sm);
        return;
    }
    // A short row: the head's first cluster only.
    if (sp >= c) return;
    attn_item<AttnQ, true, ATT_KEY_DEPTH>(q, kv, slot, slot_stride, k_off, v_off, cap, pos, n_head, n_head_kv,
                                          head_dim, head_dim_v, scale, window, c, min_keys, part, ml, done, out, gate,
                                          q8, ds8, h, sp, 0, t, 0, sm, AttnQ(), &cl);
    cluster_sync_all();
    // The merge: block sp's first warp takes dims 32·sp .. 32·sp + 31 (lane l: one dim).
    if (sp >= (head_dim_v >> 5) || t >= 32) return;
    const int ns = splits_for(n, c, min_keys);
    float mx = NEG_INF;
    for (int s = 0; s < ns; ++s) mx = fmaxf(mx, cl.ml[s].x);
    float lsum = 0.0f, o = 0.0f;
    for (int s = 0; s < ns; ++s) {
        const float2 v = cl.ml[s];
        const float e = v.x == NEG_INF ? 0.0f : expf(v.x - mx);
        lsum += v.y * e;
        o += cl.part[s][t] * e;
    }
    const size_t e = (size_t)h * head_dim_v + 32 * sp + t;
    float y = o * (1.0f / lsum);
    if (gate) y *= 1.0f / (1.0f + expf(-gate[e]));
    out[e] = y;
    if (q8) quantize_lane_q8(y, e, q8, ds8);
#endif
}

// ---- Attention in front of the output projection (one launch) ----
// gemv_k_multi_tma1_t2 (the default bulk-copy shape) over the output projection of one row,
// with the layer's attention in front of it: each block issues its first weight copies (they
// do not depend on attention), waits on the previous kernel, then its workers of ATT_WARPS
// warps take (head, split) items blockIdx.x + worker·gridDim.x, ... exactly as attn_split's
// blocks do (the last split of a head merges it and quantizes it to q8_1 into aq / ads), a
// grid barrier (grid_barrier, norm.cu: the grid is one resident wave), and then the matmul
// reads that row through L2. The attention launch and its boundary go, and the projection's
// first copies are in flight while attention runs. Arguments: the bulk-copy kernel's,
// attn_split's (q8 / ds8 are aq / ads), then the barrier; `_gridnorm` then has
// gemv_k_multi_tma1_t2_gridnorm's tail (the barrier last, used twice). Each worker's AttnSmem
// lies after the rings. ($GLIMMER_FUSE_ATTN=1, off by default.)
// Status: its decode ran in session 19 (H100: `cuda-check e2e` tallies unchanged) and lost
// 0.3-0.35 ms a token against the attention launch it replaces (BENCHMARKS.md); off.
struct KtAttnPro {
    static constexpr bool fresh = true;
    static constexpr bool stages_act = false;
    __device__ __forceinline__ void stage(u8*, float2*, int) const {}
    __device__ __forceinline__ void finish(int) const {}
    const float* q;
    const u16* kv;
    const u32* slot;
    u64 slot_stride, k_off, v_off;
    int cap;
    const u32* pos;
    int n_head, n_head_kv, head_dim, head_dim_v;
    float scale;
    int window, max_splits, min_keys;
    float* part;
    float2* ml;
    u32* done;
    float* out;
    const float* gate;
    i8* q8;
    float2* ds8;
    AttnSmem* sm;
    u32* bar;
    __device__ __forceinline__ void run() const {
        const int workers = (int)blockDim.x / ATT_THREADS, w = (int)threadIdx.x / ATT_THREADS;
        if (w < workers) {
            int first, n;
            visible(pos[0], window, &first, &n);
            const int items = n_head * splits_for(n, max_splits, min_keys);
            for (int i = w * (int)gridDim.x + (int)blockIdx.x; i < items; i += workers * (int)gridDim.x)
                attn_item(q, kv, slot, slot_stride, k_off, v_off, cap, pos, n_head, n_head_kv, head_dim, head_dim_v,
                          scale, window, max_splits, min_keys, part, ml, done, out, gate, q8, ds8, i % n_head,
                          i / n_head, 0, (int)threadIdx.x % ATT_THREADS, 1 + w, sm[w]);
        }
        grid_barrier(bar, gridDim.x);
    }
};

// The KtAttnPro of a launch: its arguments, and the workers' shared memory after the rings of
// (blockDim.x / 32 / 2) teams of `stages` slots of `slot_bytes`.
#define KT_ATTN_PRO(bar_)                                                                                          \
    const KtAttnPro pro = {q,      kv,         slot,  slot_stride, k_off,      v_off,    cap,  pos,  n_head,        \
                           n_head_kv, head_dim, head_dim_v, scale,  window,    max_splits, min_keys, part, ml, done, \
                           out,    gate,       q8,    ds8,                                                         \
                           (AttnSmem*)(kt_smem_base() + kt_ring_off(cols) +                                               \
                                       (u32)(((int)blockDim.x >> 6) * stages) * slot_bytes),                       \
                           bar_}

// gemv_k_multi_tma1_t2_attn and _attn_gridnorm, and their two-rows-an-item forms
// gemv_k_multi_tma2_t2_attn and _attn_gridnorm (where the setting asks for two rows and the
// projection's two-row slots keep every warp: the H200's default, `TmaGemv::TWO_ROWS`; session
// 27, written without a GPU: not yet run). The workers' shared memory does not depend on the
// rows an item: it follows the rings, whatever their slots hold.
#define K_TMA_ATTN(name, R)                                                                                     \
    extern "C" __global__ void __launch_bounds__(768, 1)                                                         \
        name(K_MULTI_PARAMS, KT_PARAMS, ATTN_SPLIT_PARAMS, u32* bar) {                                           \
        K_TMA_ATTN_BODY(R)                                                                                       \
    }
#define K_TMA_ATTN_GRIDNORM(name, R)                                                                            \
    extern "C" __global__ void __launch_bounds__(768, 1)                                                         \
        name(K_MULTI_PARAMS, KT_PARAMS, ATTN_SPLIT_PARAMS, float* __restrict__ x, const float* __restrict__ pw,   \
             float peps, const float* __restrict__ nw, float* __restrict__ nout, float eps, i8* __restrict__ nq, \
             float2* __restrict__ nds, NormSums* __restrict__ npart, u32* bar) {                                 \
        K_TMA_ATTN_GRIDNORM_BODY(R)                                                                              \
    }
#if __CUDA_ARCH__ >= 900
#define K_TMA_ATTN_BODY(R)                                                                                       \
    KT_ATTN_PRO(bar);                                                                                            \
    KtNoEp ep;                                                                                                   \
    gemv_k_multi_tma_body<R, false, 2>(cols, aq, ads, pairs, w0, rb0, n0, t0, o0, e0, w1, rb1, n1, t1, o1, e1, w2, \
                                       rb2, n2, t2, o2, e2, w3, rb3, n3, t3, o3, pf, KT_ARGS, ep, pro);
#define K_TMA_ATTN_GRIDNORM_BODY(R)                                                                              \
    KT_ATTN_PRO(bar);                                                                                            \
    tma_gridnorm_body<R>(cols, aq, ads, pairs, w0, rb0, n0, t0, o0, e0, w1, rb1, n1, t1, o1, e1, w2, rb2, n2, t2, o2, \
                         e2, w3, rb3, n3, t3, o3, pf, KT_ARGS, x, pw, peps, nw, nout, eps, nq, nds, npart, bar, pro);
#else
#define K_TMA_ATTN_BODY(R)
#define K_TMA_ATTN_GRIDNORM_BODY(R)
#endif
K_TMA_ATTN(gemv_k_multi_tma1_t2_attn, 1)
K_TMA_ATTN_GRIDNORM(gemv_k_multi_tma1_t2_attn_gridnorm, 1)
K_TMA_ATTN(gemv_k_multi_tma2_t2_attn, 2)
K_TMA_ATTN_GRIDNORM(gemv_k_multi_tma2_t2_attn_gridnorm, 2)

// The f16 KV cache on device and attention over it.
//
// Layout: slot s of the cache starts at kv + s * slot_stride (u16 units); the active slot is
// read from device memory (*slot), so a captured graph serves any session. Inside a slot, a
// layer has keys (cap, k_dim) at k_off and values (cap, v_dim) at v_off; position p lives in
// ring slot p % cap (cap = ctx for global layers).
//
// Attention is split-K flash decoding: attn_split (grid: n_head, max_splits, rows) gives each
// block a contiguous range of the keys visible to its query and writes an unnormalized partial
// output with its running max and sum; attn_combine (grid: n_head, rows) merges the partials.
// The number of splits actually used depends on the visible length (at least min_keys keys
// per split), computed on the device from the position, so one graph serves every length.

#define ATT_WARPS 4
#define MAX_HEAD 256
// Most splits of one query's keys (the host's decode split count stays below it).
#define MAX_SPLITS 256

extern "C" __global__ void kv_store_f16(u16* kv, const u32* __restrict__ slot, u64 slot_stride, u64 k_off,
                                        u64 v_off, int cap, const float* __restrict__ k,
                                        const float* __restrict__ v, int k_dim, int v_dim,
                                        const u32* __restrict__ pos) {
    pdl_begin();
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

extern "C" __global__ void __launch_bounds__(ATT_WARPS * 32)
attn_split(const float* __restrict__ q, const u16* __restrict__ kv, const u32* __restrict__ slot,
           u64 slot_stride, u64 k_off, u64 v_off, int cap, const u32* __restrict__ pos, int n_head,
           int n_head_kv, int head_dim, int head_dim_v, float scale, int window, int max_splits, int min_keys,
           float* __restrict__ part, float2* __restrict__ ml) {
    pdl_begin();
    __shared__ float sq[MAX_HEAD];
    __shared__ float wacc[ATT_WARPS][MAX_HEAD];
    __shared__ float wm[ATT_WARPS], wl[ATT_WARPS];
    const int h = blockIdx.x, sp = blockIdx.y, r = blockIdx.z;
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
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
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) sq[d] = round_f16(qh[d]);
    __syncthreads();

    float m = NEG_INF, l = 0.0f;
    float acc[MAX_HEAD / 32];
#pragma unroll
    for (int i = 0; i < MAX_HEAD / 32; ++i) acc[i] = 0.0f;
    for (int key = k0 + wid; key < k1; key += ATT_WARPS) {
        const u64 s = (u32)key % (u32)cap;
        const u16* kr = kb + s * (u64)k_dim;
        float dot = 0.0f;
        for (int d = lane; d < head_dim; d += 32) dot += h2f(kr[d]) * sq[d];
        const float sc = warp_sum(dot) * scale;
        const float mn = fmaxf(m, sc);
        const float c = expf(m - mn);  // 0 on the first key (m = -inf)
        const float e = expf(sc - mn);
        l = l * c + e;
        m = mn;
        const u16* vr = vb + s * (u64)v_dim;
#pragma unroll
        for (int i = 0; i < MAX_HEAD / 32; ++i) {
            const int d = lane + 32 * i;
            if (d < head_dim_v) acc[i] = acc[i] * c + e * h2f(vr[d]);
        }
    }
    if (lane == 0) { wm[wid] = m; wl[wid] = l; }
#pragma unroll
    for (int i = 0; i < MAX_HEAD / 32; ++i) {
        const int d = lane + 32 * i;
        if (d < head_dim_v) wacc[wid][d] = acc[i];
    }
    __syncthreads();
    float mx = NEG_INF;
#pragma unroll
    for (int w = 0; w < ATT_WARPS; ++w) mx = fmaxf(mx, wm[w]);
    float f[ATT_WARPS];
    float lsum = 0.0f;
#pragma unroll
    for (int w = 0; w < ATT_WARPS; ++w) {
        f[w] = wm[w] == NEG_INF ? 0.0f : expf(wm[w] - mx);
        lsum += wl[w] * f[w];
    }
    const size_t idx = ((size_t)r * n_head + h) * max_splits + sp;
    for (int d = threadIdx.x; d < head_dim_v; d += blockDim.x) {
        float o = 0.0f;
#pragma unroll
        for (int w = 0; w < ATT_WARPS; ++w) o += wacc[w][d] * f[w];
        part[idx * head_dim_v + d] = o;
    }
    if (threadIdx.x == 0) ml[idx] = make_float2(mx, lsum);
}

// gate (may be null): out *= sigmoid(gate) (`Backend::attention_gated`). q8 / ds8 (may be null):
// also quantize the row to q8_1 for the output projection; then the block must have exactly
// head_dim_v threads, a multiple of 32.
extern "C" __global__ void attn_combine(const float* __restrict__ part, const float2* __restrict__ ml,
                                        const u32* __restrict__ pos, int n_head, int head_dim_v, int window,
                                        int max_splits, int min_keys, float* __restrict__ out,
                                        const float* __restrict__ gate, i8* __restrict__ q8,
                                        float2* __restrict__ ds8) {
    pdl_begin();
    __shared__ float wsplit[MAX_SPLITS];
    const int h = blockIdx.x, r = blockIdx.y;
    int first, n;
    visible(pos[r], window, &first, &n);
    const int ns = splits_for(n, max_splits, min_keys);
    const size_t base = ((size_t)r * n_head + h) * max_splits;
    // Every split's weight exp(m_s - max) / sum, once, in shared memory.
    float mx = NEG_INF;
    for (int s = 0; s < ns; ++s) mx = fmaxf(mx, ml[base + s].x);
    float lsum = 0.0f;
    for (int s = 0; s < ns; ++s) {
        const float2 v = ml[base + s];
        if (v.x != NEG_INF) lsum += v.y * expf(v.x - mx);
    }
    const float inv = 1.0f / lsum;
    for (int s = threadIdx.x; s < ns; s += blockDim.x) {
        const float2 v = ml[base + s];
        wsplit[s] = v.x == NEG_INF ? 0.0f : expf(v.x - mx);
    }
    __syncthreads();
    for (int d = threadIdx.x; d < head_dim_v; d += blockDim.x) {
        float o = 0.0f;
        for (int s = 0; s < ns; ++s) o += part[(base + s) * head_dim_v + d] * wsplit[s];
        const size_t e = ((size_t)r * n_head + h) * head_dim_v + d;
        float y = o * inv;
        if (gate) y *= 1.0f / (1.0f + expf(-gate[e]));
        out[e] = y;
        if (q8) quantize_lane_q8(y, e, q8, ds8);
    }
}

// Picking the next token on the device: argmax_f32 (greedy) and sample_f32 (a draw from
// softmax(x / temperature) by the Gumbel-max trick), one launch over the whole vocabulary.

// Folds the pair (ov, oi) into (v, i): the larger value wins, the lower index on ties; a NaN
// value never wins (every comparison with it is false).
__device__ __forceinline__ void best_pair(float& v, int& i, float ov, int oi) {
    if (ov > v || (ov == v && oi < i)) { v = ov; i = oi; }
}

// The block's best (value, index) pair (best_pair's order) into every thread's v / i. Every
// thread of the block calls it; blockDim.x a multiple of 32, at most 1024.
__device__ __forceinline__ void block_best_pair(float& v, int& i) {
    __shared__ float sv[32];
    __shared__ int si[32];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) best_pair(v, i, __shfl_xor_sync(FULL_MASK, v, o), __shfl_xor_sync(FULL_MASK, i, o));
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (lane == 0) { sv[wid] = v; si[wid] = i; }
    __syncthreads();
    const int nw = (blockDim.x + 31) >> 5;
    v = lane < nw ? sv[lane] : NEG_INF;
    i = lane < nw ? si[lane] : 0x7fffffff;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) best_pair(v, i, __shfl_xor_sync(FULL_MASK, v, o), __shfl_xor_sync(FULL_MASK, i, o));
}

// ---- Sampling: the Gumbel-max trick ----
// The index of the largest x[i] * inv_t + g(i), where g(i) = -ln(-ln u(i)) is standard Gumbel
// noise, is a draw from softmax(x * inv_t) (inv_t = 1 / temperature). u(i) comes from a
// counter-based hash of (seed, counter, i), so a draw needs no state on the device, is the
// same for the same three numbers, and a new `counter` (the host passes the step) gives a new
// draw. The host twin is `glimmer_jetson::sample` (the checks compare against it).

// The 64-bit finalizer of SplitMix64 (Steele, Lea and Flood's constants).
__device__ __forceinline__ u64 mix64(u64 z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// u(i) of the draw keyed `key` (= mix64(seed ^ mix64(counter))): 23 bits of the hash as the
// odd numerator of a fraction of 2^24, so u lies in [2^-24, 1 - 2^-24] and is exact in f32.
__device__ __forceinline__ float sample_u(u64 key, u32 i) {
    const u64 h = mix64(key + (u64)i * 0x9e3779b97f4a7c15ull);
    return (float)((((u32)(h >> 41)) << 1) | 1u) * 0x1p-24f;
}

// Threads a block of argmax_f32 / sample_f32, and the most blocks they take (the host's
// SAMPLE_THREADS and SAMPLE_MAX_BLOCKS, fns.rs).
#define SAMPLE_THREADS 256
#define SAMPLE_MAX_BLOCKS 256

// The index of the largest score over the n floats at x: x[i] itself (NOISE false: argmax_f32),
// or x[i] * inv_t + g(i) (NOISE: sample_f32, one draw), the lowest index on ties; a NaN score
// never wins, and out[0] is 0 if none does. grid: at most SAMPLE_MAX_BLOCKS blocks of
// SAMPLE_THREADS threads. Each block leaves its best (score, index) in part_v / part_i; the
// last block to finish (the ticket, zero between launches: that block resets it) merges them.
// argmax_f32's first form was one block of 1 024 threads: on Gemma 3's 262 144 logits it took
// 0.088 ms a step more than this grid-wide draw (H100, session 29, BENCHMARKS.md).
template <bool NOISE>
__device__ __forceinline__ void best_index(const float* __restrict__ x, int n, float inv_t, u64 seed, u64 counter,
                                           float* part_v, u32* part_i, u32* ticket, u32* out) {
    pdl_begin_small();
    const u64 key = NOISE ? mix64(seed ^ mix64(counter)) : 0;
    float best = NEG_INF;
    int bi = 0x7fffffff;
    // A thread's indices ascend, so `>` keeps the lowest on ties.
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float v = NOISE ? fmaf(x[i], inv_t, -logf(-logf(sample_u(key, (u32)i)))) : x[i];
        if (v > best) { best = v; bi = i; }
    }
    block_best_pair(best, bi);
    if (threadIdx.x == 0) {
        part_v[blockIdx.x] = best;
        part_i[blockIdx.x] = (u32)bi;
    }
    if (!ticket_last(ticket, gridDim.x)) return;
    best = NEG_INF;
    bi = 0x7fffffff;
    for (int b = threadIdx.x; b < (int)gridDim.x; b += blockDim.x)
        best_pair(best, bi, __ldcg(&part_v[b]), (int)__ldcg(&part_i[b]));
    block_best_pair(best, bi);
    if (threadIdx.x == 0) {
        out[0] = bi == 0x7fffffff ? 0u : (u32)bi;
        *ticket = 0;
    }
}

// Index of the largest of n floats (greedy decoding).
extern "C" __global__ void __launch_bounds__(SAMPLE_THREADS)
    argmax_f32(const float* __restrict__ x, int n, float* part_v, u32* part_i, u32* ticket, u32* out) {
    best_index<false>(x, n, 0.0f, 0, 0, part_v, part_i, ticket, out);
}

// One draw from softmax(x * inv_t), keyed by (seed, counter).
extern "C" __global__ void __launch_bounds__(SAMPLE_THREADS)
    sample_f32(const float* __restrict__ x, int n, float inv_t, u64 seed, u64 counter, float* part_v, u32* part_i,
               u32* ticket, u32* out) {
    best_index<true>(x, n, inv_t, seed, counter, part_v, part_i, ticket, out);
}

// One-row (decode) GEMV for Q4_K and Q6_K, shaped for memory bandwidth: eight threads share a
// 256-weight super-block, each taking 16 bytes of its 4-bit quants (one 16-byte load for Q4_K)
// and the matching 16 + 16 int8 activations (two 16-byte loads); the super-block's header and
// scales are read by all eight and served from L1. A team of `wpr` warps owns an output row and
// walks its super-blocks two at a time, so two weight loads are in flight per thread.
//
// Needs: rows at 16-byte aligned addresses (Q4_K: the base 16-aligned, 144-byte blocks keep the
// rest aligned; Q6_K: repacked on upload into aligned planes, jetson/src/weights.rs); aq
// 16-byte aligned.

// The activations one chunk of a super-block multiplies: 16 int8 for each of its two
// sub-block halves, and those sub-blocks' (d, d * sum) pairs. Loaded once per chunk and shared
// by every weight row a thread works on.
struct ActChunk {
    uint4 a0, a1;
    float2 ds0, ds1;
};

// Q4_K chunk c (0..8) of super-block kb: quant bytes 16c..16c+16 hold elements 16(c&1).. of
// sub-block 2(c>>1) (low nibbles) and of sub-block 2(c>>1)+1 (high).
// Activation loads: from global memory through the read-only path, or (SM) from the block's
// shared-memory copy.
template <bool SM, typename V> __device__ __forceinline__ V ld_act(const V* p) { return SM ? *p : __ldg(p); }

template <bool SM = false>
__device__ __forceinline__ ActChunk q4k_act(int c, int kb, const i8* __restrict__ aq,
                                            const float2* __restrict__ ads) {
    const int p = c >> 1, half = c & 1;
    const int j0 = 8 * kb + 2 * p;
    ActChunk a;
    a.a0 = ld_act<SM>((const uint4*)(aq + 32 * j0 + 16 * half));
    a.a1 = ld_act<SM>((const uint4*)(aq + 32 * (j0 + 1) + 16 * half));
    a.ds0 = ld_act<SM>(ads + j0);
    a.ds1 = ld_act<SM>(ads + j0 + 1);
    return a;
}

// A Q4_K chunk's value from its 16 quant bytes q, the super-block's d/dmin word dd and the
// three 16-bit words of its 12 scale bytes that chunk c needs (lo: bytes 2p, 2p+1; hi: bytes
// 2p+4, 2p+5; lw: bytes 2(p & 1), 2(p & 1)+1, with p = c >> 1), against its activations.
__device__ __forceinline__ float q4k_math(const uint4 q, u32 dd, u32 lo, u32 hi, u32 lw, int c, const ActChunk& a) {
    const int p = c >> 1, half = c & 1;
    int sc0, sc1, m0, m1;
    if (p < 2) {
        sc0 = lo & 63;
        sc1 = (lo >> 8) & 63;
        m0 = hi & 63;
        m1 = (hi >> 8) & 63;
    } else {
        sc0 = (hi & 15) | (((lw >> 6) & 3) << 4);
        sc1 = ((hi >> 8) & 15) | (((lw >> 14) & 3) << 4);
        m0 = ((hi >> 4) & 15) | (((lo >> 6) & 3) << 4);
        m1 = ((hi >> 12) & 15) | (((lo >> 14) & 3) << 4);
    }
    int s0 = 0, s1 = 0;
    s0 = __dp4a((int)(q.x & 0x0F0F0F0Fu), (int)a.a0.x, s0);
    s0 = __dp4a((int)(q.y & 0x0F0F0F0Fu), (int)a.a0.y, s0);
    s0 = __dp4a((int)(q.z & 0x0F0F0F0Fu), (int)a.a0.z, s0);
    s0 = __dp4a((int)(q.w & 0x0F0F0F0Fu), (int)a.a0.w, s0);
    s1 = __dp4a((int)((q.x >> 4) & 0x0F0F0F0Fu), (int)a.a1.x, s1);
    s1 = __dp4a((int)((q.y >> 4) & 0x0F0F0F0Fu), (int)a.a1.y, s1);
    s1 = __dp4a((int)((q.z >> 4) & 0x0F0F0F0Fu), (int)a.a1.z, s1);
    s1 = __dp4a((int)((q.w >> 4) & 0x0F0F0F0Fu), (int)a.a1.w, s1);
    const float d = h2f((u16)(dd & 0xFFFFu));
    const float dmin = h2f((u16)(dd >> 16));
    float v = d * ((float)sc0 * a.ds0.x * (float)s0 + (float)sc1 * a.ds1.x * (float)s1);
    // Each sub-block's min term once, from the thread holding its first 16 elements.
    if (half == 0) v -= dmin * ((float)m0 * a.ds0.y + (float)m1 * a.ds1.y);
    return v;
}

// The weight side of a Q4_K chunk (super-block at `b`) against its activations.
__device__ __forceinline__ float q4k_dot(const u8* __restrict__ b, int c, const ActChunk& a) {
    const uint4 q = ld_weights16(b + 16 + 16 * c);
    const int p = c >> 1;
    const u16* s16 = (const u16*)(b + 4);
    return q4k_math(q, __ldg((const u32*)b), __ldg(s16 + p), __ldg(s16 + p + 2), __ldg(s16 + (p & 1)), c, a);
}

// dp4a with unsigned weight bytes and signed activation bytes (dp4a.u32.s32): the high nibbles
// masked in place (q & 0xF0F0F0F0) sum to exactly 16 times their value, so one arithmetic shift
// of the total replaces a shift of every word.
__device__ __forceinline__ int dp4a_us(u32 a, int b, int c) {
    int d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

// A byte 0..255 of `x` (k: 0..3) as a float without the conversion unit: the byte as the low
// mantissa bits of 2^23, less 2^23 (exact).
template <int K> __device__ __forceinline__ float byte_f(u32 x) {
    return __uint_as_float(__byte_perm(x, 0x4B000000u, 0x7440u | (u32)K)) - 8388608.0f;
}

// The scale and min bytes of Q4_K sub-blocks 2p and 2p+1 (get_scale_min_k4 for both), packed
// as (sc0, sc1, m0, m1) from the header's scale words y, z, w (scale bytes 0-3, 4-7, 8-11).
// Sub-blocks 0..3 take the low six bits of bytes 0..3 (mins: 4..7); 4..7 take the low (mins:
// high) nibbles of bytes 8..11 with the top two bits of bytes 0..3 (mins: 4..7). Both halves
// read bytes 2(p & 1) and 2(p & 1) + 1 of each word, so a byte gather serves every lane, and
// the lane's constants (Q4kLane, made once a kernel) keep it free of branches: p differs
// across a warp.
struct Q4kLane {
    u32 sel_b, sel_a, shift, mask;
};
__device__ __forceinline__ Q4kLane q4k_lane(int p) {
    const bool odd = p & 1, top = p >= 2;
    Q4kLane l;
    l.sel_b = odd ? 0x7632u : 0x5410u;                    // y[2q], y[2q+1], z[2q], z[2q+1]
    l.sel_a = top ? (odd ? 0x3232u : 0x1010u) : 0x4444u;  // w[2q], w[2q+1] twice; p < 2: zeros
    l.shift = top ? 2u : 0u;
    l.mask = top ? 0x30303030u : 0x3F3F3F3Fu;
    return l;
}
__device__ __forceinline__ u32 q4k_scales(u32 y, u32 z, u32 w, const Q4kLane& l) {
    const u32 b = __byte_perm(y, z, l.sel_b);
    const u32 a = __byte_perm(w, 0u, l.sel_a);
    return ((b >> l.shift) & l.mask) | (a & 0x00000F0Fu) | ((a >> 4) & 0x0F0F0000u);
}

// One Q4_K super-block pass of a lane: the two sub-blocks 2p, 2p+1 (p = lane & 3) of
// super-block kb, all 64 of their values (32 quant bytes, two 16-byte loads), against
// the activations x0..x3 (their 64 int8 values) and ds (d, d·sum of each): one header load
// and one scale decode for 64 values, where q4k_math does one for 32.
// h: the super-block's first 16 bytes (d, dmin, 12 scale bytes); qa, qb: quant bytes
// 32p..32p+15 and 32p+16..32p+31.
__device__ __forceinline__ float q4k_pair_math(const uint4 h, const uint4 qa, const uint4 qb, const Q4kLane& l,
                                               const uint4& x0, const uint4& x1, const uint4& x2, const uint4& x3,
                                               const float4& ds) {
    const u32 M = 0x0F0F0F0Fu, H = 0xF0F0F0F0u;
    int s0 = 0, s1 = 0;
    s0 = __dp4a((int)(qa.x & M), (int)x0.x, s0);
    s0 = __dp4a((int)(qa.y & M), (int)x0.y, s0);
    s0 = __dp4a((int)(qa.z & M), (int)x0.z, s0);
    s0 = __dp4a((int)(qa.w & M), (int)x0.w, s0);
    s0 = __dp4a((int)(qb.x & M), (int)x1.x, s0);
    s0 = __dp4a((int)(qb.y & M), (int)x1.y, s0);
    s0 = __dp4a((int)(qb.z & M), (int)x1.z, s0);
    s0 = __dp4a((int)(qb.w & M), (int)x1.w, s0);
    s1 = dp4a_us(qa.x & H, (int)x2.x, s1);
    s1 = dp4a_us(qa.y & H, (int)x2.y, s1);
    s1 = dp4a_us(qa.z & H, (int)x2.z, s1);
    s1 = dp4a_us(qa.w & H, (int)x2.w, s1);
    s1 = dp4a_us(qb.x & H, (int)x3.x, s1);
    s1 = dp4a_us(qb.y & H, (int)x3.y, s1);
    s1 = dp4a_us(qb.z & H, (int)x3.z, s1);
    s1 = dp4a_us(qb.w & H, (int)x3.w, s1);
    s1 >>= 4;  // exact: every term was 16 times its nibble's
    const u32 sm = q4k_scales(h.y, h.z, h.w, l);
    const float d = h2f((u16)(h.x & 0xFFFFu));
    const float dmin = h2f((u16)(h.x >> 16));
    const float sc0 = byte_f<0>(sm), sc1 = byte_f<1>(sm), m0 = byte_f<2>(sm), m1 = byte_f<3>(sm);
    return d * (sc0 * ds.x * (float)s0 + sc1 * ds.z * (float)s1) - dmin * (m0 * ds.y + m1 * ds.w);
}

// Q6_K chunk c (0..8) of super-block kb: half h = c>>2, l0 = 16(c&3); ql bytes 64h + l0.. give
// elements 128h + l0.. (low nibbles) and 128h + 64 + l0.. (high), with top bits from qh bytes
// 32h + (l0 & 31).., at shifts 2(c&3>>1) and 4 + 2(c&3>>1).
template <bool SM = false>
__device__ __forceinline__ ActChunk q6k_act(int c, int kb, const i8* __restrict__ aq,
                                            const float2* __restrict__ ads) {
    const int h = c >> 2, cc = c & 3;
    const int e0 = 256 * kb + 128 * h + 16 * cc;
    const int e1 = e0 + 64;
    ActChunk a;
    a.a0 = ld_act<SM>((const uint4*)(aq + e0));
    a.a1 = ld_act<SM>((const uint4*)(aq + e1));
    a.ds0 = ld_act<SM>(ads + (e0 >> 5));
    a.ds1 = ld_act<SM>(ads + (e1 >> 5));
    return a;
}

// A Q6_K chunk's value from its 16 low-quant bytes l4, the 16 high-bit bytes h4 it reads,
// its two sub-block scales and the super-block's d, against its activations.
__device__ __forceinline__ float q6k_math(const uint4 l4, const uint4 h4, float sc0, float sc1, float d, int c,
                                          const ActChunk& a) {
    const int cc = c & 3;
    const u32 ql[4] = {l4.x, l4.y, l4.z, l4.w};
    const u32 qh[4] = {h4.x, h4.y, h4.z, h4.w};
    const u32 sl = 2 * (cc >> 1);
    const int av0[4] = {(int)a.a0.x, (int)a.a0.y, (int)a.a0.z, (int)a.a0.w};
    const int av1[4] = {(int)a.a1.x, (int)a.a1.y, (int)a.a1.z, (int)a.a1.w};
    // The quants are 0..63 (positive as int8): sum(q a) + sum(-32 a) is the same integer as
    // sum((q - 32) a), with one more dp4a a word instead of a per-byte subtraction.
    const int n32 = (int)0xE0E0E0E0u;  // -32 in every byte
    int s0 = 0, s1 = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        // The high-bit pairs of both halves from one shift: bits sl, sl+1 of each qh byte
        // (moved to 4, 5) for the low half, bits sl+4, sl+5 (at 4, 5 already) for the high.
        const u32 t = qh[i] >> sl;
        const int lo = (int)((ql[i] & 0x0F0F0F0Fu) | ((t << 4) & 0x30303030u));
        const int hi = (int)(((ql[i] >> 4) & 0x0F0F0F0Fu) | (t & 0x30303030u));
        s0 = __dp4a(n32, av0[i], __dp4a(lo, av0[i], s0));
        s1 = __dp4a(n32, av1[i], __dp4a(hi, av1[i], s1));
    }
    return d * (sc0 * a.ds0.x * (float)s0 + sc1 * a.ds1.x * (float)s1);
}

// Byte offset in a repacked Q6_K row (nb blocks) of the 16 high-bit bytes chunk c of
// super-block kb reads: the qh plane at 128 nb + 64 kb, half c >> 2, 16-byte half (c & 3) & 1.
// 32-bit (a row is far below 4 GiB): fewer registers than a pointer.
__device__ __forceinline__ u32 q6k_hi_off(int kb, int nb, int c) {
    return 128 * (u32)nb + 64 * (u32)kb + 32 * (u32)(c >> 2) + 16 * (u32)(c & 1);
}

// The weight side of a Q6_K chunk against its activations, from the row's planes (nb blocks):
// ql at 128 kb, qh at 128 nb + 64 kb, scales at 192 nb + 16 kb, d at 208 nb + 2 kb.
__device__ __forceinline__ float q6k_dot(const u8* __restrict__ row, int kb, int nb, int c, const ActChunk& a) {
    const int h = c >> 2, cc = c & 3;
    // 32-bit offsets (a row is far below 4 GiB): fewer registers than four plane pointers.
    const u32 ukb = (u32)kb, unb = (u32)nb;
    const uint4 l4 = ld_weights16(row + (128 * ukb + 16 * c));
    const uint4 h4 = ld_weights16(row + q6k_hi_off(kb, nb, c));
    const u32 so = 192 * unb + 16 * ukb + 8 * h + cc;
    const float sc0 = (float)(i8)__ldg(row + so);
    const float sc1 = (float)(i8)__ldg(row + so + 4);
    const float d = h2f(__ldg((const u16*)(row + (208 * unb + 2 * ukb))));
    return q6k_math(l4, h4, sc0, sc1, d, c, a);
}

// Chunk c of super-block kb of a row of nb super-blocks against its activations.
template <int T>
__device__ __forceinline__ float k_dot(const u8* __restrict__ row, int kb, int nb, int c, const ActChunk& a) {
    if (T == T_Q4_K) return q4k_dot(row + 144 * (size_t)kb, c, a);
    return q6k_dot(row, kb, nb, c, a);
}

// The same, loading the activations first.
template <int T, bool SM>
__device__ __forceinline__ float k_chunk(const u8* __restrict__ row, int kb, int nb, int c,
                                         const i8* __restrict__ aq, const float2* __restrict__ ads) {
    return k_dot<T>(row, kb, nb, c, T == T_Q4_K ? q4k_act<SM>(c, kb, aq, ads) : q6k_act<SM>(c, kb, aq, ads));
}

// Where chunk c of super-block kb keeps its quants (for prefetching).
template <int T> __device__ __forceinline__ const u8* chunk_at(const u8* row, int kb, int c) {
    return T == T_Q4_K ? row + 144 * (size_t)kb + 16 + 16 * c : row + 128 * (size_t)kb + 16 * c;
}

// out[row] = W[row] . x for the row of each team of `wpr` warps (blockIdx.y the activation row).
// SM: the block first copies the activation row (cols int8 and cols / 32 (d, d * sum) pairs)
// into dynamic shared memory, and the chunks read it from there instead of through L1.
template <int T, bool SM = false>
__device__ __forceinline__ void gemv_k1(const u8* __restrict__ w, u64 row_bytes, int n_out, int cols,
                                        const i8* __restrict__ aq, const float2* __restrict__ ads,
                                        float* __restrict__ out, int wpr) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int row = blockIdx.x * ((blockDim.x >> 5) / wpr) + warp / wpr;
    const int nb = cols >> 8;
    const size_t ar = blockIdx.y;
    const i8* a = aq + ar * cols;
    const float2* ad = ads + ar * (cols >> 5);
    float acc[1] = {0.0f};
    const u8* wr = w + (size_t)min(row, n_out - 1) * row_bytes;
    const int t = (warp % wpr) * 32 + lane;
    const int c = t & 7;
    const int step = wpr * 4;  // super-blocks per team pass
    // Each thread's first two weight chunks, into L2 while the previous kernel finishes.
    if (t >> 3 < nb) prefetch_l2(chunk_at<T>(wr, t >> 3, c));
    if ((t >> 3) + step < nb) prefetch_l2(chunk_at<T>(wr, (t >> 3) + step, c));
    pdl_begin();
    if (SM) {
        extern __shared__ uint4 act_smem[];
        uint4* sq = act_smem;
        float2* sd = (float2*)(act_smem + (cols >> 4));
        for (int i = threadIdx.x; i < (cols >> 4); i += blockDim.x) sq[i] = __ldg((const uint4*)a + i);
        for (int i = threadIdx.x; i < (cols >> 5); i += blockDim.x) sd[i] = __ldg(ad + i);
        __syncthreads();
        a = (const i8*)sq;
        ad = sd;
    }
    if (row < n_out) {
        int kb = t >> 3;
        float v0 = 0.0f, v1 = 0.0f;
        for (; kb + step < nb; kb += 2 * step) {
            v0 += k_chunk<T, SM>(wr, kb, nb, c, a, ad);
            v1 += k_chunk<T, SM>(wr, kb + step, nb, c, a, ad);
        }
        if (kb < nb) v0 += k_chunk<T, SM>(wr, kb, nb, c, a, ad);
        acc[0] = v0 + v1;
    }
    team_store<1>(acc, wpr, row, n_out, (int)blockIdx.y, out);
}

extern "C" __global__ void gemv_q4_k_r1(const u8* w, u64 rb, int n_out, int cols, const i8* aq,
                                        const float2* ads, float* out, int wpr) {
    gemv_k1<T_Q4_K>(w, rb, n_out, cols, aq, ads, out, wpr);
}

extern "C" __global__ void gemv_q6_k_r1(const u8* w, u64 rb, int n_out, int cols, const i8* aq,
                                        const float2* ads, float* out, int wpr) {
    gemv_k1<T_Q6_K>(w, rb, n_out, cols, aq, ads, out, wpr);
}

// The same with the activation row staged in shared memory (cols + cols / 4 bytes of dynamic
// shared memory).
extern "C" __global__ void gemv_q4_k_s1(const u8* w, u64 rb, int n_out, int cols, const i8* aq,
                                        const float2* ads, float* out, int wpr) {
    gemv_k1<T_Q4_K, true>(w, rb, n_out, cols, aq, ads, out, wpr);
}

extern "C" __global__ void gemv_q6_k_s1(const u8* w, u64 rb, int n_out, int cols, const i8* aq,
                                        const float2* ads, float* out, int wpr) {
    gemv_k1<T_Q6_K, true>(w, rb, n_out, cols, aq, ads, out, wpr);
}

// Several output rows per warp (wide matrices; instantiated with RW = 2: 4 was slower on the
// H200): lane l takes chunk l & 7 of super-blocks
// l >> 3, l >> 3 + 4, ... of RW consecutive rows, loading each chunk's activations once for
// all RW rows (the activation reads, from L1/L2, otherwise outnumber the weight bytes two to
// one) and keeping RW 16-byte weight loads in flight. `a` and `ad` are the activation row's;
// rows from `row0` (at most RW, clipped to n_out) are this warp's. Leaves each row's dot
// product in v (every lane).
// Super-block passes of k_rows_dot's loop unrolled together (measuring knobs,
// $GLIMMER_CUDA_DEFINES): K_UNROLL for the GEMVs, PROBE_UNROLL for the probe.
#ifndef K_UNROLL
#define K_UNROLL 2
#endif
#ifndef PROBE_UNROLL
#define PROBE_UNROLL 2
#endif
// K_Q4PAIR=1 (a measuring knob): Q4_K rows four lanes a super-block (q4k_pair_math) instead of
// eight.
#ifndef K_Q4PAIR
#define K_Q4PAIR 0
#endif
#define GLIMMER_STR(x) #x
#define GLIMMER_UNROLL(n) _Pragma(GLIMMER_STR(unroll n))
// PROBE (a measuring kernel, gemv_k_multi_probe): the same weight-quant loads in the same
// order (Q4_K: the 16 quant bytes of each chunk; Q6_K: its low and high planes' 16 bytes),
// but no activations, scales or arithmetic beyond folding the words into the result, which
// is then meaningless: its time against gemv_k_multi's says how much of a GEMV is the memory
// access pattern and how much the work on what it loads.
template <int T, int RW, bool PROBE = false>
__device__ __forceinline__ void k_rows_dot(const u8* __restrict__ w, u64 row_bytes, int n_out, int cols, int row0,
                                           const i8* __restrict__ a, const float2* __restrict__ ad, float (&v)[RW]) {
    const int lane = threadIdx.x & 31;
    const int nb = cols >> 8;
    const int c = lane & 7;
    const u8* wr[RW];
#pragma unroll
    for (int r = 0; r < RW; ++r) wr[r] = w + (size_t)min(row0 + r, n_out - 1) * row_bytes;
    float acc[RW];
#pragma unroll
    for (int r = 0; r < RW; ++r) acc[r] = 0.0f;
    if (PROBE) {
        u32 x[RW];
#pragma unroll
        for (int r = 0; r < RW; ++r) x[r] = 0;
        GLIMMER_UNROLL(PROBE_UNROLL)
        for (int kb = lane >> 3; kb < nb; kb += 4) {
#pragma unroll
            for (int r = 0; r < RW; ++r) {
                const uint4 q = ld_weights16(chunk_at<T>(wr[r], kb, c));
                x[r] ^= q.x ^ q.y ^ q.z ^ q.w;
                if (T == T_Q6_K) {
                    const uint4 h4 = ld_weights16(wr[r] + q6k_hi_off(kb, nb, c));
                    x[r] ^= h4.x ^ h4.y ^ h4.z ^ h4.w;
                }
            }
        }
#pragma unroll
        for (int r = 0; r < RW; ++r) acc[r] = (float)(x[r] & 0xFFFFu);
    } else if (T == T_Q4_K && K_Q4PAIR) {
        // Four lanes a super-block (q4k_pair_math), eight super-blocks a pass: each lane
        // loads 48 weight bytes a row a pass (header and 32 quant bytes) and decodes the scales
        // once for 64 values.
        const int p = lane & 3;
        const Q4kLane ql = q4k_lane(p);
        GLIMMER_UNROLL(K_UNROLL)
        for (int kb = lane >> 2; kb < nb; kb += 8) {
            const uint4* ap = (const uint4*)(a + 256 * kb + 64 * p);
            const uint4 x0 = __ldg(ap), x1 = __ldg(ap + 1), x2 = __ldg(ap + 2), x3 = __ldg(ap + 3);
            const float4 ds = __ldg((const float4*)(ad + 8 * kb + 2 * p));
#pragma unroll
            for (int r = 0; r < RW; ++r) {
                const u8* b = wr[r] + 144 * (size_t)kb;
                acc[r] += q4k_pair_math(ld_weights16(b), ld_weights16(b + 16 + 32 * p), ld_weights16(b + 32 + 32 * p), ql,
                                        x0, x1, x2, x3, ds);
            }
        }
    } else {
        GLIMMER_UNROLL(K_UNROLL)
        for (int kb = lane >> 3; kb < nb; kb += 4) {
            const ActChunk ac = T == T_Q4_K ? q4k_act<false>(c, kb, a, ad) : q6k_act<false>(c, kb, a, ad);
#pragma unroll
            for (int r = 0; r < RW; ++r) {
                acc[r] += k_dot<T>(wr[r], kb, nb, c, ac);
            }
        }
    }
#pragma unroll
    for (int r = 0; r < RW; ++r) v[r] = warp_sum(acc[r]);
}

// k_rows_dot, stored to `out` (the activation row's outputs) by lane 0.
template <int T, int RW, bool PROBE = false>
__device__ __forceinline__ void k_rows(const u8* __restrict__ w, u64 row_bytes, int n_out, int cols, int row0,
                                       const i8* __restrict__ a, const float2* __restrict__ ad,
                                       float* __restrict__ out, float (&v)[RW]) {
    k_rows_dot<T, RW, PROBE>(w, row_bytes, n_out, cols, row0, a, ad, v);
#pragma unroll
    for (int r = 0; r < RW; ++r)
        if ((threadIdx.x & 31) == 0 && row0 + r < n_out) out[row0 + r] = v[r];
}

// Prefetches into L2 the first weight line each lane of a k_rows warp will read.
template <int T, int RW>
__device__ __forceinline__ void k_rows_prefetch(const u8* w, u64 row_bytes, int n_out, int cols, int row0) {
    const int lane = threadIdx.x & 31;
    if (lane >> 3 >= (cols >> 8)) return;
#pragma unroll
    for (int r = 0; r < RW; ++r)
        prefetch_l2(chunk_at<T>(w + (size_t)min(row0 + r, n_out - 1) * row_bytes, lane >> 3, lane & 7));
}

// blockIdx.y is the activation row.
template <int T, int RW>
__device__ __forceinline__ void gemv_k_rows(const u8* __restrict__ w, u64 row_bytes, int n_out, int cols,
                                            const i8* __restrict__ aq, const float2* __restrict__ ads,
                                            float* __restrict__ out) {
    const int row0 = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * RW;
    if (row0 >= n_out) return;
    const size_t ar = blockIdx.y;
    k_rows_prefetch<T, RW>(w, row_bytes, n_out, cols, row0);
    pdl_begin();
    float v[RW];
    k_rows<T, RW>(w, row_bytes, n_out, cols, row0, aq + ar * cols, ads + ar * (cols >> 5), out + ar * n_out, v);
}

extern "C" __global__ void gemv_q4_k_rw2(const u8* w, u64 rb, int n_out, int cols, const i8* aq,
                                         const float2* ads, float* out) {
    gemv_k_rows<T_Q4_K, 2>(w, rb, n_out, cols, aq, ads, out);
}

extern "C" __global__ void gemv_q6_k_rw2(const u8* w, u64 rb, int n_out, int cols, const i8* aq,
                                         const float2* ads, float* out) {
    gemv_k_rows<T_Q6_K, 2>(w, rb, n_out, cols, aq, ads, out);
}

// One matrix of a gemv_k_multi launch.
struct KSeg {
    const u8* w;
    u64 rb;
    int n, ty;
    float* out;
};

// The matrix that row pair g belongs to (ends: each segment's end, in row pairs, cumulative),
// and g's pair index inside it.
__device__ __forceinline__ KSeg k_seg(int& g, const KSeg& s0, const KSeg& s1, const KSeg& s2, const KSeg& s3,
                                      int e0, int e1, int e2) {
    if (g < e0) return s0;
    if (g < e1) { g -= e0; return s1; }
    if (g < e2) { g -= e1; return s2; }
    g -= e2;
    return s3;
}

// Up to four Q4_K / Q6_K matrices of the same width over the same activation rows, in one
// launch: Q, K, V and the attention gate, or the FFN gate and up projections. Separate
// launches would each pay their own start and tail (the 256-row K and V reach under 10 % of
// the bandwidth on their own). Two rows a warp as in gemv_k_rows; the warps walk the row
// pairs of all the matrices in a grid-stride loop, so the grid is sized to one resident wave
// and no partial last wave is left. Segment s (w_s, row bytes, rows, GGML type, output) owns
// row pairs [e_{s-1}, e_s) of the `pairs` in all; unused segments have no pairs. pf: bytes of
// its first rows each warp prefetches into L2 before it waits on the previous kernel (0: the
// first line of each lane's first chunk, as the other GEMVs do).
// blockIdx.y is the activation row.
#define K_MULTI_PARAMS                                                                          \
    int cols, const i8 *aq, const float2 *ads, int pairs, const u8 *w0, u64 rb0, int n0, int t0, \
        float *o0, int e0, const u8 *w1, u64 rb1, int n1, int t1, float *o1, int e1,             \
        const u8 *w2, u64 rb2, int n2, int t2, float *o2, int e2, const u8 *w3, u64 rb3, int n3,  \
        int t3, float *o3, int pf
// What a launch does with each row pair besides storing it (lane 0 of the pair's warp):
// `pre(seg, row0)` before the pair's dot products (loads whose latency they hide), then
// `post(seg, row0, v)` with the pair's two values. NoEp: nothing (gemv_k_multi).
struct NoEp {
    __device__ __forceinline__ void pre(const KSeg&, int) {}
    __device__ __forceinline__ void post(const KSeg&, int, const float (&)[2]) {}
};
template <class Ep, bool PROBE = false>
__device__ __forceinline__ void gemv_k_multi_body(K_MULTI_PARAMS, Ep& ep) {
    const KSeg s0 = {w0, rb0, n0, t0, o0}, s1 = {w1, rb1, n1, t1, o1};
    const KSeg s2 = {w2, rb2, n2, t2, o2}, s3 = {w3, rb3, n3, t3, o3};
    const int wpb = blockDim.x >> 5;
    // Warp w of block b starts at pair w·gridDim.x + b, so the pairs left over after the
    // even share land one a multiprocessor instead of all on the first blocks (H200:
    // 142.8 -> 144.9 tok/s on the 30B shape, BENCHMARKS.md session 15; K_INTERLEAVE=0, a
    // measuring knob, keeps the old order: warps of a block on consecutive pairs).
#ifndef K_INTERLEAVE
#define K_INTERLEAVE 1
#endif
    const int first = K_INTERLEAVE ? (threadIdx.x >> 5) * gridDim.x + blockIdx.x : blockIdx.x * wpb + (threadIdx.x >> 5);
    const int stride = gridDim.x * wpb;
    if (pf > 0) {
        // The first `pf` bytes of this warp's rows, in the order it reads them, into L2 before
        // the wait, so that HBM works while the kernel before this GEMV (attention, a norm)
        // runs. The host asks for it only on launches small enough to sit in L2
        // (`CudaBackend::gemv_prefetch`).
        const int lane = threadIdx.x & 31;
        int budget = pf;
        for (int p = first; p < pairs && budget > 0; p += stride) {
            int g = p;
            const KSeg s = k_seg(g, s0, s1, s2, s3, e0, e1, e2);
            for (int r = 0; r < 2 && budget > 0 && 2 * g + r < s.n; ++r) {
                const u8* base = s.w + (size_t)(2 * g + r) * s.rb;
                const int take = (int)min((u64)budget, s.rb);
                const u8* line = (const u8*)((size_t)base & ~(size_t)127);
                for (const u8* a = line + 128 * lane; a < base + take; a += 32 * 128) prefetch_l2(a);
                budget -= take;
            }
        }
    } else if (first < pairs) {
        int g = first;
        const KSeg s = k_seg(g, s0, s1, s2, s3, e0, e1, e2);
        if (s.ty == T_Q4_K) k_rows_prefetch<T_Q4_K, 2>(s.w, s.rb, s.n, cols, 2 * g);
        else k_rows_prefetch<T_Q6_K, 2>(s.w, s.rb, s.n, cols, 2 * g);
    }
    pdl_begin();
    const size_t ar = blockIdx.y;
    const i8* a = aq + ar * cols;
    const float2* ad = ads + ar * (cols >> 5);
    for (int p = first; p < pairs; p += stride) {
        int g = p;
        const KSeg s = k_seg(g, s0, s1, s2, s3, e0, e1, e2);
        float* o = s.out + ar * s.n;
        float v[2];
        ep.pre(s, 2 * g);
        if (s.ty == T_Q4_K) k_rows<T_Q4_K, 2, PROBE>(s.w, s.rb, s.n, cols, 2 * g, a, ad, o, v);
        else k_rows<T_Q6_K, 2, PROBE>(s.w, s.rb, s.n, cols, 2 * g, a, ad, o, v);
        ep.post(s, 2 * g, v);
    }
}

// Register budgets: at most 100 registers (two blocks a multiprocessor), 80 (three) or 64
// (four, no spills); which is fastest is measured (BENCHMARKS.md).
extern "C" __global__ void __launch_bounds__(256, 2) gemv_k_multi(K_MULTI_PARAMS) {
    NoEp ep;
    gemv_k_multi_body(cols, aq, ads, pairs, w0, rb0, n0, t0, o0, e0, w1, rb1, n1, t1, o1, e1, w2, rb2, n2, t2, o2,
                      e2, w3, rb3, n3, t3, o3, pf, ep);
}
// The memory-access probe (PROBE in k_rows_dot; $GLIMMER_GEMV_PROBE=1): gemv_k_multi's
// launches, loads and grid, none of its arithmetic. Its outputs are meaningless.
extern "C" __global__ void __launch_bounds__(256, 2) gemv_k_multi_probe(K_MULTI_PARAMS) {
    NoEp ep;
    gemv_k_multi_body<NoEp, true>(cols, aq, ads, pairs, w0, rb0, n0, t0, o0, e0, w1, rb1, n1, t1, o1, e1, w2, rb2,
                                  n2, t2, o2, e2, w3, rb3, n3, t3, o3, pf, ep);
}
extern "C" __global__ void __launch_bounds__(256, 3) gemv_k_multi_b3(K_MULTI_PARAMS) {
    NoEp ep;
    gemv_k_multi_body(cols, aq, ads, pairs, w0, rb0, n0, t0, o0, e0, w1, rb1, n1, t1, o1, e1, w2, rb2, n2, t2, o2,
                      e2, w3, rb3, n3, t3, o3, pf, ep);
}
extern "C" __global__ void __launch_bounds__(256, 4) gemv_k_multi_b4(K_MULTI_PARAMS) {
    NoEp ep;
    gemv_k_multi_body(cols, aq, ads, pairs, w0, rb0, n0, t0, o0, e0, w1, rb1, n1, t1, o1, e1, w2, rb2, n2, t2, o2,
                      e2, w3, rb3, n3, t3, o3, pf, ep);
}

// ---- The same multi-GEMV with its weights streamed by the copy engine (TMA bulk copies) ----
// On the H200 even gemv_k_multi's loads alone (gemv_k_multi_probe) stop at ~81 % of the copy
// bandwidth, because each thread can keep only a few 16-byte loads in flight in registers,
// and cp.async (one 16-byte copy a thread at a time into a per-warp ring; sessions 13–15,
// removed) was slower still.
// Here lane 0 of each warp asks the multiprocessor's bulk-copy unit for whole items (R
// consecutive weight rows, contiguous in memory: one copy each) into a ring of `stages`
// slots in shared memory, each slot with an mbarrier that completes when the item's bytes
// have landed. Nothing is held in registers while the bytes are in flight, so a warp keeps
// (stages − 1) whole items in flight while it works on one: 8 warps × 7.5 KiB items × 2
// slots keep ~60–120 KiB in flight a multiprocessor, against the ~30 KiB the H200 needs by
// Little's law (4.8 TB/s × ~0.8 µs ÷ 132). The weights are never written by a kernel, so the
// first `pre` items of each ring (`TmaGemv::pre`; all `stages` by default) are asked for before
// the wait on the previous kernel. The activation
// row is staged in shared memory once a block.
//
// Items: segment s owns items [e_{s-1}, e_s) (R rows each; the host passes the ends in
// items). Warp w of block b takes items w·gridDim.x + b, then every gridDim.x·warps-th after
// it, so the items left over after the even share land one a multiprocessor rather than all
// on the first blocks. Dynamic shared memory (host: `tma_layout` in jetson/src/ops.rs):
// 2048 bytes of mbarriers (24 rings × 4 stages at most: 768 bytes) and, from byte 768, the
// teams' partial sums, the activation row (kt_pa's layout:
// 80 bytes for each 64 int8 values, then cols / 32 (d, d·sum) pairs), then warps × stages slots of `slot` bytes (a multiple of 128
// holding R rows). Needs sm_90 (the host launches it only there): on older GPUs the body
// compiles to nothing. The default there since session 16, one row an item with teams of two
// warps a ring (`TmaGemv::DEFAULT`; H200 30B-shape decode 144.9 -> 164.8 tok/s, BENCHMARKS.md).
#define KT_BAR_BYTES 2048

#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ void mbar_init(u64* bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
// Makes the barriers' initialization visible to the bulk-copy unit.
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
// Lane 0: this phase of `bar` completes when `bytes` have arrived (one arrival, the caller's).
__device__ __forceinline__ void mbar_expect(u64* bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
// `bytes` (a multiple of 16; both addresses 16-byte aligned) from global memory to shared
// memory by the bulk-copy unit, counted against `bar`'s expected bytes.
__device__ __forceinline__ void bulk_g2s(void* dst, const void* src, u32 bytes, u64* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     smem_u32(dst)),
                 "l"(src), "r"(bytes), "r"(smem_u32(bar))
                 : "memory");
}
// Waits until the phase of `bar` with this parity has completed.
__device__ __forceinline__ void mbar_wait(u64* bar, u32 parity) {
    u32 done = 0;
    while (!done) {
        asm volatile(
            "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
            : "=r"(done)
            : "r"(smem_u32(bar)), "r"(parity)
            : "memory");
    }
}
#endif

// The activation row in shared memory (gemv_k_multi_tma*): the int8 values in 64-value groups
// (a Q4_K sub-block pair) 80 bytes apart, so that the eight lanes of a quarter-warp reading
// 16 bytes each of eight different groups hit eight different bank quads; then the
// (d, d·sum) pair of each 32 values, contiguous. `kt_act_bytes` is the int8 part's size.
__device__ __forceinline__ u32 kt_pa(u32 e) { return 80u * (e >> 6) + (e & 63u); }
__device__ __forceinline__ u32 kt_act_bytes(int cols) { return 80u * ((u32)cols >> 6); }

// q4k_pair_math on the super-block at `b` in shared memory, the lane's quant bytes at b + qo
// (qo = 16 + 32p, p = lane & 3).
__device__ __forceinline__ float q4k_pair_s(const u8* b, u32 qo, const Q4kLane& ql, const uint4& x0, const uint4& x1,
                                            const uint4& x2, const uint4& x3, const float4& ds) {
    return q4k_pair_math(*(const uint4*)b, *(const uint4*)(b + qo), *(const uint4*)(b + qo + 16), ql, x0, x1, x2, x3,
                         ds);
}

// A Q6_K chunk of a repacked row (shared memory; planes as q6k_dot reads them) against its
// activations.
__device__ __forceinline__ float q6k_dot_s(const u8* row, int kb, int nb, int c, const ActChunk& a) {
    const int h = c >> 2, cc = c & 3;
    const u32 ukb = (u32)kb, unb = (u32)nb;
    const uint4 l4 = *(const uint4*)(row + (128 * ukb + 16 * c));
    const uint4 h4 = *(const uint4*)(row + q6k_hi_off(kb, nb, c));
    const u32 so = 192 * unb + 16 * ukb + 8 * h + cc;
    const float sc0 = (float)(i8)row[so];
    const float sc1 = (float)(i8)row[so + 4];
    const float d = h2f(*(const u16*)(row + (208 * unb + 2 * ukb)));
    return q6k_math(l4, h4, sc0, sc1, d, c, a);
}

// Passes of kt_item's loops unrolled (a measuring macro: 2 lets a warp's next pass load while
// this one computes; slower on the H100 in session 21, 78 registers and a longer chain).
#ifndef KT_ITEM_UNROLL
#define KT_ITEM_UNROLL 1
#endif

// What kt_item does the same way for every item a warp takes, made once a kernel (kt_plan):
// the warp's share of a team's passes (warp tw of tn), and for Q4_K the lane's scale
// constants, its first super-block and where that pass's quant bytes (in a row), activations
// and (d, d·sum) pairs (in the staged row) are.
struct KtPlan {
    int tw, tn;
    Q4kLane ql;
    int kb0;
    u32 wo, qo;
    const u8* ap;
    const float4* dp;
};
// A value the compiler cannot recompute (volatile: it is neither duplicated nor moved), so
// that a loop-invariant stays in a register where the compiler would rebuild it every item.
__device__ __forceinline__ u32 kept(u32 x) {
    u32 y;
    asm volatile("mov.b32 %0, %1;" : "=r"(y) : "r"(x));
    return y;
}
__device__ __forceinline__ KtPlan kt_plan(const u8* sa, const float2* sd, int tw, int tn) {
    const int lane = threadIdx.x & 31, p = lane & 3;
    const Q4kLane q = q4k_lane(p);
    const int kb0 = 8 * tw + (lane >> 2);
    KtPlan k;
    k.tw = tw;
    k.tn = tn;
    k.ql.sel_b = kept(q.sel_b);
    k.ql.sel_a = kept(q.sel_a);
    k.ql.shift = kept(q.shift);
    k.ql.mask = kept(q.mask);
    k.kb0 = (int)kept((u32)kb0);
    k.wo = kept(144u * (u32)kb0);
    k.qo = kept(16u + 32u * (u32)p);
    k.ap = sa + kept(80u * (u32)(4 * kb0 + p));
    k.dp = (const float4*)((const u8*)sd + kept(16u * (u32)(4 * kb0 + p)));
    return k;
}

// The dot products of the `nr` (1..R) rows of one item at `rows` (shared memory, `rb` bytes
// apart) with the staged activations (`sa`: kt_pa layout; `sd`: the (d, d·sum) pairs), each
// left in v (every lane). Q4_K: four lanes a super-block (q4k_pair_s), eight super-blocks a
// pass; Q6_K: eight lanes a super-block (q6k_math's chunks), four a pass. PROBE: the quant
// loads only, folded into a meaningless result (a measuring kernel, as gemv_k_multi_probe).
// A team of `P.tn` warps shares each item: warp `P.tw` of the team takes passes tw, tw + tn, ...
template <int T, int R, bool PROBE>
__device__ __forceinline__ void kt_item(const u8* rows, u32 rb, int nr, int nb, const u8* sa, const float2* sd,
                                        float (&v)[R], const KtPlan& P) {
    const int lane = threadIdx.x & 31;
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = 0.0f;
    if (T == T_Q4_K) {
        // The lane's super-block of row 0, its activations and their pairs, each stepped by a
        // pass (pointers: no multiplies a pass).
        const int step = 8 * P.tn;
        const u8* wb = rows + P.wo;
        const u8* ap = P.ap;
        const float4* dp = P.dp;
#pragma unroll KT_ITEM_UNROLL
        for (int kb = P.kb0; kb < nb; kb += step, wb += 144 * step, ap += 320 * step, dp += 4 * step) {
            if (PROBE) {
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    const uint4 q = *(const uint4*)(wb + r * rb + P.qo);
                    acc[r] += (float)((q.x ^ q.y ^ q.z ^ q.w) & 0xFFu);
                }
                continue;
            }
            const uint4 x0 = *(const uint4*)ap, x1 = *(const uint4*)(ap + 16);
            const uint4 x2 = *(const uint4*)(ap + 32), x3 = *(const uint4*)(ap + 48);
            const float4 ds = *dp;
#pragma unroll
            for (int r = 0; r < R; ++r) {
                if (R > 1 && r >= nr) break;
                acc[r] += q4k_pair_s(wb + r * rb, P.qo, P.ql, x0, x1, x2, x3, ds);
            }
        }
    } else {
        const int c = lane & 7;
#pragma unroll KT_ITEM_UNROLL
        for (int kb = 4 * P.tw + (lane >> 3); kb < nb; kb += 4 * P.tn) {
            if (PROBE) {
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    const uint4 q = *(const uint4*)(rows + r * rb + 128 * kb + 16 * c);
                    acc[r] += (float)((q.x ^ q.y ^ q.z ^ q.w) & 0xFFu);
                }
                continue;
            }
            const u32 e0 = 256u * kb + 128u * (c >> 2) + 16u * (c & 3);
            ActChunk ac;
            ac.a0 = *(const uint4*)(sa + kt_pa(e0));
            ac.a1 = *(const uint4*)(sa + kt_pa(e0 + 64));
            ac.ds0 = sd[e0 >> 5];
            ac.ds1 = sd[(e0 + 64) >> 5];
#pragma unroll
            for (int r = 0; r < R; ++r) {
                if (R > 1 && r >= nr) break;
                acc[r] += q6k_dot_s(rows + r * rb, kb, nb, c, ac);
            }
        }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) v[r] = warp_sum(acc[r]);
}

// TEAM > 1: the warps work in teams of TEAM, each team with one ring: every warp of a team
// waits on the same item and takes a share of its super-block passes; their partial sums meet
// in shared memory at a named barrier of the team (which also tells the team's first warp that
// the slot may be refilled). More warps a ring, for rows too wide for many rings to fit.
// What the bulk-copy body does around each item besides storing its rows (the leader lane
// only): nothing, or the norm sums of gemv_k_multi_tma1_t2_gridnorm (kernels/norm.cu).
struct KtNoEp {
    __device__ __forceinline__ void pre(const KSeg&, int, int) {}
    template <int R> __device__ __forceinline__ void post(const KSeg&, int, int, const float (&)[R]) {}
};

// What the bulk-copy body runs once its first copies are issued and the previous kernel is
// waited on, before it loads its activation row: nothing, or grid-wide work that ends in a grid
// barrier (the attention of gemv_k_multi_tma1_t2_attn*, attention.cu). `fresh`: that work
// wrote the activation row in this launch, so it is read through L2 (__ldcg), not the
// read-only path.
// `stages_act`: `stage` writes the activation row into shared memory itself (sa: kt_pa layout,
// sd: the (d, d·sum) pairs) instead of the body loading it from aq / ads; `finish` runs once the
// block's items are done (the deferred norm of gemv_k_multi_tma1_t2_prenorm, norm.cu).
struct KtNoPro {
    static constexpr bool fresh = false;
    static constexpr bool stages_act = false;
    __device__ __forceinline__ void run() const {}
    __device__ __forceinline__ void stage(u8*, float2*, int) const {}
    __device__ __forceinline__ void finish(int) const {}
};

// The bulk-copy kernels' dynamic shared memory (for code outside the body that lays its own
// data after the body's).
__device__ __forceinline__ u8* kt_smem_base() {
    extern __shared__ __align__(128) u8 kt_smem[];
    return kt_smem;
}

// Where the bulk-copy body's rings start in its dynamic shared memory: after the mbarrier area
// and the activation row (80 bytes for each 64 int8 values, then cols / 32 (d, d·sum) pairs).
__device__ __forceinline__ u32 kt_ring_off(int cols) {
    return KT_BAR_BYTES + ((kt_act_bytes(cols) + ((u32)cols >> 2) + 127u) & ~127u);
}

// The bulk-copy kernels' own arguments after K_MULTI_PARAMS: ring slots a team (`stages`) and
// their bytes, how many of each ring's first items are asked for before the wait on the
// previous kernel (`pre`, bits 0-7; every slot is asked for by the end of the first round) and
// how many are kept in flight after that first fill (bits 8-15, 1..=stages; 0: `stages`: a
// ring deeper than its steady depth is a prefetch of the launch's first items into shared
// memory while the kernels before it finish, TmaGemv::ring), and the start and length of the bytes each launch asks L2 to fetch
// once its items are done (`nxt`, `nxt_bytes`: the next launch's first weights, so that HBM
// keeps streaming through this launch's tail and barriers; 0 bytes: none), split evenly over
// every team of the grid.
// Then the launch timeline's buffer (`trace`), the flag hop's counter (`dep`, `dep_n`), and
// the items handed out at run time (`grab`, `grab_arg`: see KT_ITEM_OFF).
#define KT_PARAMS                                                                                             \
    int stages, u32 slot_bytes, int pre, const u8 *nxt, u32 nxt_bytes, u64 *trace, u32 *dep, u32 dep_n, u32 *grab, \
        int grab_arg
#define KT_ARGS stages, slot_bytes, pre, nxt, nxt_bytes, trace, dep, dep_n, grab, grab_arg

// Items handed out at run time (`CudaBackend::gemv_steal`; plain one-row launches whose rings
// are `stages` deep): `grab` non-null and `grab_arg` >= 0. Each team takes its first
// `grab_arg` items as the static order gives them (items first + j·stride, j < grab_arg: the
// items below grab_arg·stride), and each later one from the launch's counter *grab (item
// grab_arg·stride + the count it got), so that the teams of multiprocessors that stream
// their rows faster take more of the launch's last items and the blocks end together (session
// 22: with static items the FFN gate/up launch's blocks end up to 12 µs apart on the H100).
// The team's leader grabs one item ahead (an L2 atomic's round trip behind the item being
// worked on) and writes each slot's item into shared memory at KT_ITEM_OFF before asking for
// its rows (the mbarrier's arrival releases it to the team's warps); an item past the end,
// -1, ends the team's loop. The counters: `grab` non-null and `grab_arg` < 0 (the first such
// launch of a forward pass) zeroes grab[1 .. -grab_arg) after its wait, and runs its own
// items statically; the later launches of the pass each take a counter of their own there
// (the host's `grab_ordinal`), which nothing else touches until the next pass's first launch.
#define KT_ITEM_OFF 1664

// The launch timeline (`trace` non-null: `cuda-check timeline`, CudaBackend::trace_gemvs):
// thread 0 of each block leaves KT_TRACE_POINTS (global ns timer, SM clock) pairs at
// trace[blockIdx.x * 2 * KT_TRACE_POINTS]: entry, the previous kernel waited on, the
// activation row staged, its team's first item landed, its team's items done, and the
// block's end (after a block barrier, taken only when tracing).
// Compiled in only with KT_TRACE=1 ($GLIMMER_CUDA_DEFINES), so the kernels that decode runs are
// unchanged otherwise.
#ifndef KT_TRACE
#define KT_TRACE 0
#endif
// 1 (a measuring macro with KT_TRACE=1): the bulk-copy kernels copy no weights (see `issue`),
// so `cuda-check timeline` times the items' own chain (BENCHMARKS.md, session 21: ~4.1 TB/s of
// weights for the default on FFN gate/up, below the H200's HBM).
#ifndef KT_NOLOAD
#define KT_NOLOAD 0
#endif
#define KT_TRACE_POINTS 6
__device__ __forceinline__ void kt_stamp(u64* trace, int k) {
    if (KT_TRACE && trace && threadIdx.x == 0) {
        u64 t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        u64* r = trace + (size_t)blockIdx.x * (2 * KT_TRACE_POINTS) + 2 * k;
        r[0] = t;
        r[1] = (u64)clock64();
    }
}

// Team `team` (of `teams` a block)'s share of the `nxt_bytes` at `nxt` into L2 (its leader
// lane; see KT_PARAMS).
__device__ __forceinline__ void kt_prefetch_next(const u8* nxt, u32 nxt_bytes, int team, int teams) {
#if __CUDA_ARCH__ >= 900
    const u32 parts = gridDim.x * (u32)teams;
    const u32 share = ((nxt_bytes + parts - 1) / parts + 15u) & ~15u;
    const u64 off = (u64)(team * gridDim.x + blockIdx.x) * share;
    if (off >= nxt_bytes) return;
    const u32 n = (u32)min((u64)share, (u64)nxt_bytes - off) & ~15u;
    if (n) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(nxt + off), "r"(n) : "memory");
#endif
}

// The activation row into shared memory (kt_pa layout; then the (d, d·sum) pairs) by the
// block's threads: each thread asks for all of its words (up to KT_STAGE_WORDS of each kind)
// before it stores any, so the row costs one round trip to L2 (the activations were just
// written by the kernel before), not one for the values and another for the pairs, nor one a
// loop pass (FFN down's 19 968 values are 1 248 words: two passes of 768 threads). Rows longer
// than KT_STAGE_WORDS words a thread take the rest in a plain loop.
#define KT_STAGE_WORDS 4
__device__ __forceinline__ void kt_stage_act(u8* sa, float2* sd, const uint4* ga, const float2* gd, int cols,
                                             bool fresh) {
    const int n16 = cols >> 4, n32 = cols >> 5, nt = (int)blockDim.x;
    uint4 a[KT_STAGE_WORDS];
    float2 d[KT_STAGE_WORDS];
#pragma unroll
    for (int k = 0; k < KT_STAGE_WORDS; ++k) {
        const int i = (int)threadIdx.x + k * nt;
        if (i < n16) a[k] = fresh ? __ldcg(ga + i) : __ldg(ga + i);
        if (i < n32) d[k] = fresh ? __ldcg(gd + i) : __ldg(gd + i);
    }
#pragma unroll
    for (int k = 0; k < KT_STAGE_WORDS; ++k) {
        const int i = (int)threadIdx.x + k * nt;
        if (i < n16) *(uint4*)(sa + kt_pa(16u * (u32)i)) = a[k];
        if (i < n32) sd[i] = d[k];
    }
    for (int i = (int)threadIdx.x + KT_STAGE_WORDS * nt; i < n16; i += nt)
        *(uint4*)(sa + kt_pa(16u * (u32)i)) = fresh ? __ldcg(ga + i) : __ldg(ga + i);
    for (int i = (int)threadIdx.x + KT_STAGE_WORDS * nt; i < n32; i += nt) sd[i] = fresh ? __ldcg(gd + i) : __ldg(gd + i);
}

// ROWSPLIT (R == TEAM, plain launches): the team's warps share the ring but not the rows'
// super-blocks: warp tw takes row tw of each item whole, as a warp of its own ring would
// (no partial sums to meet), and the team's barrier only frees the slot. Two rows an item
// with teams of two this way run the items' chain of one warp a ring (session 21: ~13 %
// shorter than teams of two splitting each row) in the rings of teams of two.
// DYN: the kernel may hand out items at run time (KT_ITEM_OFF); the others ignore `grab`.
template <int R, bool PROBE, int TEAM = 1, class Ep = KtNoEp, class Pro = KtNoPro, bool ROWSPLIT = false,
          bool DYN = false>
__device__ __forceinline__ void gemv_k_multi_tma_body(K_MULTI_PARAMS, KT_PARAMS, Ep& ep, const Pro& pro = Pro()) {
    static_assert(!ROWSPLIT || R == TEAM, "a row a warp of the team");
#if __CUDA_ARCH__ >= 900
    kt_stamp(trace, 0);
    u8* kt_smem = kt_smem_base();
    const KSeg s0 = {w0, rb0, n0, t0, o0}, s1 = {w1, rb1, n1, t1, o1};
    const KSeg s2 = {w2, rb2, n2, t2, o2}, s3 = {w3, rb3, n3, t3, o3};
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int team = warp / TEAM, tw = warp % TEAM;
    const int teams = (blockDim.x >> 5) / TEAM;
    const int first = team * gridDim.x + blockIdx.x;
    const int stride = gridDim.x * teams;
    const int items = pairs;  // in items of R rows here
    const int nb = cols >> 8;
    u64* bars = (u64*)kt_smem + team * stages;
    // The teams' partial sums (TEAM > 1), double-buffered by item: after the mbarriers.
    float* red = (float*)(kt_smem + 8 * 4 * 24) + team * (2 * TEAM * R);
    u8* sa = kt_smem + KT_BAR_BYTES;
    float2* sd = (float2*)(sa + kt_act_bytes(cols));
    u8* ring = kt_smem + kt_ring_off(cols) + (u32)(team * stages) * slot_bytes;
    const int mine = first < items ? (items - first + stride - 1) / stride : 0;
    const bool leader = tw == 0 && lane == 0;
    // Items handed out at run time (KT_ITEM_OFF): `sr` static items a team first.
    const bool dyn = DYN && grab && grab_arg >= 0;
    const int sr = dyn ? grab_arg : 0;
    int* sitem = (int*)(kt_smem + KT_ITEM_OFF) + team * stages;
    bool have = false, exhausted = false;
    u32 pending = 0;
    // Item g (in items of R rows): its segment, first row and rows.
    auto locate_g = [&](int g, KSeg& s, int& row0, int& nr) {
        s = k_seg(g, s0, s1, s2, s3, e0, e1, e2);
        row0 = R * g;
        nr = min(R, s.n - row0);
    };
    // Item j of this team in the static order.
    auto locate = [&](int j, KSeg& s, int& row0, int& nr) { locate_g(first + j * stride, s, row0, nr); };
    // Slot `sl` asked for item g (DYN: recorded for the team; -1: none, the team's end, the
    // barrier completing at once). Item j of a team takes slot j % stages; the callers carry
    // the slot rather than divide by the run-time `stages` every item.
    auto issue_g = [&](int sl, int g) {
        u64* bar = bars + sl;
        if constexpr (DYN) {
            if (dyn) sitem[sl] = g;
            if (g < 0) {
                mbar_expect(bar, 0u);
                return;
            }
        }
        KSeg s;
        int row0, nr;
        locate_g(g, s, row0, nr);
        const u32 bytes = (u32)nr * (u32)s.rb;
        // KT_NOLOAD: no copy (the slot keeps whatever it held; garbage results), the slot's
        // barrier completing at once: the items' own chain timed alone (`cuda-check timeline`).
        mbar_expect(bar, KT_NOLOAD ? 0u : bytes);
        if (!KT_NOLOAD) bulk_g2s(ring + (u32)sl * slot_bytes, s.w + (size_t)row0 * s.rb, bytes, bar);
    };
    // Item j of the static order into slot sl (= j % stages).
    auto issue = [&](int j, int sl) { issue_g(sl, first + j * stride); };
    // `pre` carries two counts (KT_PARAMS): the items asked for before the wait, and above
    // bit 8 the items kept in flight once the ring's first fill is used up (0: `stages`).
    const int depth = (pre >> 8) ? (pre >> 8) : stages;
    pre &= 255;
    // After item j (in slot sl) is done with its slot: the item `depth` on, unless the first
    // round asked for it already (item j + depth takes slot (j + depth) % stages, last used by
    // item j + depth - stages <= j; depth <= stages, so one subtraction wraps it).
    auto refill = [&](int j, int sl) {
        if (!dyn) {
            if (leader && j + depth >= stages && j + depth < mine) {
                const int sn = sl + depth;
                issue(j + depth, sn >= stages ? sn - stages : sn);
            }
            return;
        }
        if (!leader) return;
        // Run-time items (depth == stages): item j + stages in the static order while below
        // `sr`, then the grabbed one (both in slot sl again).
        const int jn = j + stages;
        if (jn < sr) {
            issue(jn, sl);
            if (jn + 1 == sr) {
                pending = atomicAdd(grab, 1u);
                have = true;
            }
            return;
        }
        int g = -1;
        if (!exhausted) {
            if (!have) pending = atomicAdd(grab, 1u);
            have = false;
            g = sr * stride + (int)pending;
            if (g >= items) {
                g = -1;
                exhausted = true;
            } else {
                pending = atomicAdd(grab, 1u);
                have = true;
            }
        }
        issue_g(sl, g);
    };
    if (leader) {
        for (int k = 0; k < stages; ++k) mbar_init(bars + k, 1);
        mbar_init_fence();
        for (int j = 0; j < pre && j < mine; ++j) issue(j, j);
    }
    __syncwarp();
    // `dep`: the norm before signals its output through a counter (hop_wait, common.cu).
    if (dep) hop_wait(dep, dep_n);
    else pdl_begin();
    kt_stamp(trace, 1);
    // The rest of the first round (`pre` < `stages`: fewer copies compete with the previous
    // kernels' last loads).
    if (leader)
        for (int j = pre; j < stages && j < mine; ++j) issue(j, j);
    // The first launch of a pass zeroes the counters of the launches after it (KT_ITEM_OFF);
    // with run-time items from the first refill on, the leader grabs its first one now.
    if (DYN && grab && grab_arg < 0)
        for (int i = 1 + blockIdx.x * blockDim.x + threadIdx.x; i < -grab_arg; i += gridDim.x * blockDim.x) grab[i] = 0;
    if (dyn && leader && sr <= stages) {
        pending = atomicAdd(grab, 1u);
        have = true;
    }
    pro.run();
    const size_t ar = blockIdx.y;
    if (Pro::stages_act) pro.stage(sa, sd, cols);
    else {
        const uint4* ga = (const uint4*)(aq + ar * cols);
        const float2* gd = ads + ar * (cols >> 5);
        // Written in this launch's lifetime (attention in front, or a flag hop): through L2.
        const bool fresh = Pro::fresh || dep;
        kt_stage_act(sa, sd, ga, gd, cols, fresh);
    }
    // Also orders the barriers' initialization before any other warp of a team waits on them.
    __syncthreads();
    kt_stamp(trace, 2);
    // Row-split teams: each warp takes its row whole, as a team of one.
    const KtPlan plan = kt_plan(sa, sd, ROWSPLIT ? 0 : tw, ROWSPLIT ? 1 : TEAM);
    // Item j's slot (j % stages) and its barrier's phase parity ((j / stages) & 1), carried.
    int sl = 0;
    u32 ph = 0;
    for (int j = 0; dyn || j < mine; ++j, sl = sl + 1 == stages ? 0 : sl + 1, ph ^= sl == 0 ? 1u : 0u) {
        KSeg s;
        int row0, nr;
        if (!dyn) {
            locate(j, s, row0, nr);
            if (leader) ep.pre(s, row0, nr);
        }
        mbar_wait(bars + sl, ph);
        if (dyn) {
            // The slot's item (the leader wrote it before the arrival that completed the
            // barrier): the same for the whole team, so the team leaves together.
            const int g = sitem[sl];
            if (g < 0) break;
            locate_g(g, s, row0, nr);
        }
        if (KT_TRACE && j == 0) kt_stamp(trace, 3);
        const u8* rows = ring + (u32)sl * slot_bytes;
        if (ROWSPLIT) {
            // Row tw of the item (the item's last rows may be missing: warp-uniform).
            if (tw < nr) {
                float v1[1];
                const u8* row = rows + (u32)tw * (u32)s.rb;
                if (s.ty == T_Q4_K) kt_item<T_Q4_K, 1, PROBE>(row, (u32)s.rb, 1, nb, sa, sd, v1, plan);
                else kt_item<T_Q6_K, 1, PROBE>(row, (u32)s.rb, 1, nb, sa, sd, v1, plan);
                if (lane == 0) s.out[ar * s.n + row0 + tw] = v1[0];
            }
            // The whole team is done with the slot (named barrier 1 + team).
            asm volatile("bar.sync %0, %1;" ::"r"(1 + team), "r"(32 * TEAM) : "memory");
            refill(j, sl);
            continue;
        }
        float v[R];
        if (s.ty == T_Q4_K) kt_item<T_Q4_K, R, PROBE>(rows, (u32)s.rb, nr, nb, sa, sd, v, plan);
        else kt_item<T_Q6_K, R, PROBE>(rows, (u32)s.rb, nr, nb, sa, sd, v, plan);
        if (TEAM > 1) {
            float* rj = red + (j & 1) * (TEAM * R);
            if (lane == 0) {
#pragma unroll
                for (int r = 0; r < R; ++r) rj[tw * R + r] = v[r];
            }
            // The whole team is done with the slot and has left its sums (named barrier
            // 1 + team; 0 is __syncthreads').
            asm volatile("bar.sync %0, %1;" ::"r"(1 + team), "r"(32 * TEAM) : "memory");
            if (tw == 0) {
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    float t = 0.0f;
                    for (int k = 0; k < TEAM; ++k) t += rj[k * R + r];
                    v[r] = t;
                }
            }
        }
        float* o = s.out + ar * s.n;
        if (leader) {
#pragma unroll
            for (int r = 0; r < R; ++r)
                if (r < nr) o[row0 + r] = v[r];
            ep.post(s, row0, nr, v);
        }
        // Every lane is done with the slot before it is refilled.
        __syncwarp();
        refill(j, sl);
    }
    // This team's items are done: its share of the next launch's first weights into L2.
    if (leader && nxt_bytes) kt_prefetch_next(nxt, nxt_bytes, team, teams);
    kt_stamp(trace, 4);
    pro.finish(cols);
    if (KT_TRACE && trace) {
        __syncthreads();
        kt_stamp(trace, 5);
    }
#endif
}

// R = 2 rows an item (rows up to ~56 KiB a pair fit two slots a warp) and R = 1 (wider
// rows: the FFN down projection), each with its probe. At most 24 warps a block, one block a
// multiprocessor (the ring takes most of its shared memory).
#define K_TMA_KERNEL(name, R, PROBE, TEAM, ROWSPLIT, DYN)                                                      \
    extern "C" __global__ void __launch_bounds__(768, 1) name(K_MULTI_PARAMS, KT_PARAMS) {                     \
        KtNoEp ep;                                                                                             \
        gemv_k_multi_tma_body<R, PROBE, TEAM, KtNoEp, KtNoPro, ROWSPLIT, DYN>(                                 \
            cols, aq, ads, pairs, w0, rb0, n0, t0, o0, e0, w1, rb1, n1, t1, o1, e1, w2, rb2, n2, t2, o2, e2, w3,   \
            rb3, n3, t3, o3, pf, KT_ARGS, ep);                                                                 \
    }
K_TMA_KERNEL(gemv_k_multi_tma2, 2, false, 1, false, false)
K_TMA_KERNEL(gemv_k_multi_tma1, 1, false, 1, false, false)
K_TMA_KERNEL(gemv_k_multi_tma2_probe, 2, true, 1, false, false)
K_TMA_KERNEL(gemv_k_multi_tma1_probe, 1, true, 1, false, false)
// Teams of two and four warps a ring, one row an item.
K_TMA_KERNEL(gemv_k_multi_tma1_t2, 1, false, 2, false, false)
K_TMA_KERNEL(gemv_k_multi_tma1_t4, 1, false, 4, false, false)
// Teams of two warps a ring, two rows an item: each team's activation reads serve two rows
// (`TmaGemv::item_rows` 2 with teams of two, where the two-row slots still give every warp).
K_TMA_KERNEL(gemv_k_multi_tma2_t2, 2, false, 2, false, false)
// The same rings, a row of each item a warp (ROWSPLIT; `TmaGemv::item_rows` 3).
K_TMA_KERNEL(gemv_k_multi_tma2_rs, 2, false, 2, true, false)
// The default's two shapes with items handed out at run time (KT_ITEM_OFF;
// `CudaBackend::gemv_steal`).
K_TMA_KERNEL(gemv_k_multi_tma1_t2_dyn, 1, false, 2, false, true)
K_TMA_KERNEL(gemv_k_multi_tma1_t4_dyn, 1, false, 4, false, true)
// And the row-split teams' (`TmaGemv::item_rows` 3), whose two-row items leave a coarser tail.
K_TMA_KERNEL(gemv_k_multi_tma2_rs_dyn, 2, false, 2, true, true)

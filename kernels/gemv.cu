// Quantized matrix-vector products over GGUF blocks as they are stored, against activations
// quantized by `quantize_q8_1`: one warp per output row, each lane taking sub-blocks of 32
// weights, integer dot products with dp4a. `NR` activation rows share each decoded weight
// sub-block (the small-batch path used by prefill).
//
// A decoded sub-block of 32 weights is `value[e] = d0|d1 * q[e] - m`, with q as 8 packed ints
// (bytes in element order), d0 for elements 0..16 and d1 for 16..32.

struct WSub {
    int q[8];
    float d0, d1, m;
};

// Sub-block sb (of nsub in the row) into w.
template <int T> __device__ __forceinline__ void decode_sub(const u8* __restrict__ row, int sb, int nsub, WSub& w);

// Q4_0: 18-byte blocks, y = d * (q - 8); byte j holds element j (low) and j + 16 (high).
template <> __device__ __forceinline__ void decode_sub<T_Q4_0>(const u8* __restrict__ row, int sb, int, WSub& w) {
    const u8* b = row + (size_t)sb * 18;
    const float d = h2f(ld_u16(b));
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int v = ld_i32_a2(b + 2 + 4 * i);
        w.q[i] = v & 0x0F0F0F0F;
        w.q[i + 4] = (v >> 4) & 0x0F0F0F0F;
    }
    w.d0 = d; w.d1 = d; w.m = 8.0f * d;
}

// Q4_1: 20-byte blocks, y = d * q + m.
template <> __device__ __forceinline__ void decode_sub<T_Q4_1>(const u8* __restrict__ row, int sb, int, WSub& w) {
    const u8* b = row + (size_t)sb * 20;
    const float d = h2f(ld_u16(b));
    const float mn = h2f(ld_u16(b + 2));
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int v = ld_i32_a4(b + 4 + 4 * i);
        w.q[i] = v & 0x0F0F0F0F;
        w.q[i + 4] = (v >> 4) & 0x0F0F0F0F;
    }
    w.d0 = d; w.d1 = d; w.m = -mn;
}

// Bits 0..3 of `b` to bit 4 of bytes 0..3.
__device__ __forceinline__ int spread4(u32 b) {
    return (int)(((b & 1u) << 4) | ((b & 2u) << 11) | ((b & 4u) << 18) | ((b & 8u) << 25));
}

// Q5_0: 22-byte blocks, y = d * (q - 16); bit e of the u32 qh is bit 4 of element e.
template <> __device__ __forceinline__ void decode_sub<T_Q5_0>(const u8* __restrict__ row, int sb, int, WSub& w) {
    const u8* b = row + (size_t)sb * 22;
    const float d = h2f(ld_u16(b));
    const u32 qh = (u32)ld_i32_a2(b + 2);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int v = ld_i32_a2(b + 6 + 4 * i);
        w.q[i] = (v & 0x0F0F0F0F) | spread4(qh >> (4 * i));
        w.q[i + 4] = ((v >> 4) & 0x0F0F0F0F) | spread4(qh >> (16 + 4 * i));
    }
    w.d0 = d; w.d1 = d; w.m = 16.0f * d;
}

// Q8_0: 34-byte blocks, y = d * q.
template <> __device__ __forceinline__ void decode_sub<T_Q8_0>(const u8* __restrict__ row, int sb, int, WSub& w) {
    const u8* b = row + (size_t)sb * 34;
    const float d = h2f(ld_u16(b));
#pragma unroll
    for (int i = 0; i < 8; ++i) w.q[i] = ld_i32_a2(b + 2 + 4 * i);
    w.d0 = d; w.d1 = d; w.m = 0.0f;
}

// Q4_K: 144-byte blocks of 256; sub-block j: y = d*sc[j] * q - dmin*m[j], its nibbles in
// bytes 32*(j/2).. (low nibbles for even j, high for odd).
template <> __device__ __forceinline__ void decode_sub<T_Q4_K>(const u8* __restrict__ row, int sb, int, WSub& w) {
    const u8* b = row + (size_t)(sb >> 3) * 144;
    const int j = sb & 7;
    const float d = h2f(ld_u16(b));
    const float dmin = h2f(ld_u16(b + 2));
    int sc, mn;
    scale_min_k4(j, b + 4, &sc, &mn);
    const u8* qs = b + 16 + 32 * (j >> 1);
    const int sh = 4 * (j & 1);
#pragma unroll
    for (int i = 0; i < 8; ++i) w.q[i] = (ld_i32_a4(qs + 4 * i) >> sh) & 0x0F0F0F0F;
    w.d0 = d * (float)sc; w.d1 = w.d0; w.m = dmin * (float)mn;
}

// Q5_K: 176-byte blocks; as Q4_K plus bit j of qh[l] as bit 4 of element 32j + l.
template <> __device__ __forceinline__ void decode_sub<T_Q5_K>(const u8* __restrict__ row, int sb, int, WSub& w) {
    const u8* b = row + (size_t)(sb >> 3) * 176;
    const int j = sb & 7;
    const float d = h2f(ld_u16(b));
    const float dmin = h2f(ld_u16(b + 2));
    int sc, mn;
    scale_min_k4(j, b + 4, &sc, &mn);
    const u8* qh = b + 16;
    const u8* qs = b + 48 + 32 * (j >> 1);
    const int sh = 4 * (j & 1);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int lo = (ld_i32_a4(qs + 4 * i) >> sh) & 0x0F0F0F0F;
        const int hi = ((ld_i32_a4(qh + 4 * i) >> j) & 0x01010101) << 4;
        w.q[i] = lo | hi;
    }
    w.d0 = d * (float)sc; w.d1 = w.d0; w.m = dmin * (float)mn;
}

// Q6_K, repacked on upload into planes (jetson/src/weights.rs; nb = nsub / 8 blocks): ql at
// 128 kb, qh at 128 nb + 64 kb, 16 signed scales at 192 nb + 16 kb, d at 208 nb + 2 kb.
// Sub-block t = 4h + g of block kb covers elements 128h + 32g + l: nibble from
// ql[64h + 32(g&1) + l] (high nibble when g >= 2), top bits (qh[32h + l] >> 2g) & 3, minus 32.
template <> __device__ __forceinline__ void decode_sub<T_Q6_K>(const u8* __restrict__ row, int sb, int nsub, WSub& w) {
    const size_t nb = (size_t)(nsub >> 3), kb = (size_t)(sb >> 3);
    const int t = sb & 7;
    const int h = t >> 2, g = t & 3;
    const u8* ql = row + 128 * kb + 64 * h + 32 * (g & 1);
    const u8* qh = row + 128 * nb + 64 * kb + 32 * h;
    const int nsh = 4 * (g >> 1);
    const int hsh = 2 * g;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int lo = (ld_i32_a4(ql + 4 * i) >> nsh) & 0x0F0F0F0F;
        const int hi = ((ld_i32_a4(qh + 4 * i) >> hsh) & 0x03030303) << 4;
        w.q[i] = __vsubss4(lo | hi, 0x20202020);
    }
    const i8* sc = (const i8*)(row + 192 * nb + 16 * kb);
    const float d = h2f(ld_u16(row + 208 * nb + 2 * kb));
    w.d0 = d * (float)sc[2 * t];
    w.d1 = d * (float)sc[2 * t + 1];
    w.m = 0.0f;
}

// Sums `acc[NR]` over the `wpr` warps of each row team and writes row `row` of the NR outputs.
// Every thread of the block must call this (it may hold a barrier).
template <int NR>
__device__ __forceinline__ void team_store(float (&acc)[NR], int wpr, int row, int n_out, int r0,
                                           float* __restrict__ out) {
    __shared__ float red[NR * 8];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
#pragma unroll
    for (int r = 0; r < NR; ++r) acc[r] = warp_sum(acc[r]);
    if (wpr == 1) {
        if (lane == 0 && row < n_out) {
#pragma unroll
            for (int r = 0; r < NR; ++r) out[(size_t)(r0 + r) * n_out + row] = acc[r];
        }
        return;
    }
    if (lane == 0) {
#pragma unroll
        for (int r = 0; r < NR; ++r) red[r * 8 + warp] = acc[r];
    }
    __syncthreads();
    if (lane == 0 && warp % wpr == 0 && row < n_out) {
#pragma unroll
        for (int r = 0; r < NR; ++r) {
            float s = 0.0f;
            for (int i = 0; i < wpr; ++i) s += red[r * 8 + warp + i];
            out[(size_t)(r0 + r) * n_out + row] = s;
        }
    }
}

// out[r * n_out + row] = W[row] . x[r] for NR activation rows starting at blockIdx.y * NR.
// aq: (rows, cols) int8; ads: (rows, cols / 32) (d, d * sum q). A block of up to 8 warps holds
// teams of `wpr` warps (1, 2, 4 or 8), one team per output row, splitting the row's sub-blocks.
template <int T, int NR>
__device__ __forceinline__ void gemv_q(const u8* __restrict__ w, u64 row_bytes, int n_out, int cols,
                                       const i8* __restrict__ aq, const float2* __restrict__ ads,
                                       float* __restrict__ out, int wpr) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int row = blockIdx.x * ((blockDim.x >> 5) / wpr) + warp / wpr;
    const int nsub = cols >> 5;
    const int r0 = blockIdx.y * NR;
    float acc[NR];
#pragma unroll
    for (int r = 0; r < NR; ++r) acc[r] = 0.0f;
    // The lane's first sub-block, into L2 while the previous kernel finishes.
    const int sb0 = (warp % wpr) * 32 + lane;
    if (sb0 < nsub) prefetch_l2(w + (size_t)min(row, n_out - 1) * row_bytes + (size_t)sb0 * row_bytes / nsub);
    pdl_begin();
    if (row < n_out) {
        const u8* wr = w + (size_t)row * row_bytes;
        const int team = wpr * 32;
        for (int sb = (warp % wpr) * 32 + lane; sb < nsub; sb += team) {
            WSub ws;
            decode_sub<T>(wr, sb, nsub, ws);
#pragma unroll
            for (int r = 0; r < NR; ++r) {
                const size_t ar = (size_t)(r0 + r);
                const int* a = (const int*)(aq + ar * cols + (size_t)sb * 32);
                const float2 da = ads[ar * nsub + sb];
                int s0 = 0, s1 = 0;
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    s0 = __dp4a(ws.q[i], a[i], s0);
                    s1 = __dp4a(ws.q[i + 4], a[i + 4], s1);
                }
                acc[r] += da.x * (ws.d0 * (float)s0 + ws.d1 * (float)s1) - ws.m * da.y;
            }
        }
    }
    team_store<NR>(acc, wpr, row, n_out, r0, out);
}

#define GEMV_Q(name, T)                                                                                  \
    extern "C" __global__ void name##_r1(const u8* w, u64 rb, int n_out, int cols, const i8* aq,         \
                                         const float2* ads, float* out, int wpr) {                       \
        gemv_q<T, 1>(w, rb, n_out, cols, aq, ads, out, wpr);                                             \
    }                                                                                                    \
    extern "C" __global__ void name##_r8(const u8* w, u64 rb, int n_out, int cols, const i8* aq,         \
                                         const float2* ads, float* out, int wpr) {                       \
        gemv_q<T, 8>(w, rb, n_out, cols, aq, ads, out, wpr);                                             \
    }

GEMV_Q(gemv_q4_0, T_Q4_0)
GEMV_Q(gemv_q4_1, T_Q4_1)
GEMV_Q(gemv_q5_0, T_Q5_0)
GEMV_Q(gemv_q8_0, T_Q8_0)
GEMV_Q(gemv_q5_k, T_Q5_K)

// The 8-row (prefill) kernels of Q4_K and Q6_K; their one-row kernels are in gemv_k.cu.
extern "C" __global__ void gemv_q4_k_r8(const u8* w, u64 rb, int n_out, int cols, const i8* aq,
                                        const float2* ads, float* out, int wpr) {
    gemv_q<T_Q4_K, 8>(w, rb, n_out, cols, aq, ads, out, wpr);
}
extern "C" __global__ void gemv_q6_k_r8(const u8* w, u64 rb, int n_out, int cols, const i8* aq,
                                        const float2* ads, float* out, int wpr) {
    gemv_q<T_Q6_K, 8>(w, rb, n_out, cols, aq, ads, out, wpr);
}

// Float weights (F32, F16, BF16) against f32 activations: one warp per output row,
// blockIdx.y the activation row.
__device__ __forceinline__ float wf(int ty, const u8* row, int i) {
    if (ty == T_F32) return ((const float*)row)[i];
    const u16 b = ((const u16*)row)[i];
    if (ty == T_F16) return h2f(b);
    return __uint_as_float((u32)b << 16);
}

extern "C" __global__ void gemv_float(const u8* __restrict__ w, int ty, u64 row_bytes, int n_out, int cols,
                                      const float* __restrict__ x, float* __restrict__ out) {
    const int lane = threadIdx.x & 31;
    pdl_begin();
    const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= n_out) return;
    const u8* wr = w + (size_t)row * row_bytes;
    const float* xr = x + (size_t)blockIdx.y * cols;
    float acc = 0.0f;
    for (int i = lane; i < cols; i += 32) acc += wf(ty, wr, i) * xr[i];
    acc = warp_sum(acc);
    if (lane == 0) out[(size_t)blockIdx.y * n_out + row] = acc;
}

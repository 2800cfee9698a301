// Prefill GEMM on the tensor cores: out[r * n_out + o] = W[o] . x[r] for activation rows
// r < rows, over the same operands as gemv.cu's GEMVs (weights as GGUF stores them, activations
// quantized by `quantize_q8_1`: aq (rows, cols) int8, ads (rows, cols / 32) (d, d * sum q)).
//
// Each block computes a tile of GEMM_BM output rows by GEMM_BN activation rows. Per step of
// GEMM_KB sub-blocks of 32 columns it decodes its weight rows with gemv.cu's `decode_sub` into
// int8 in shared memory (with each sub-block's d0, d1 and m), copies the activation tile and
// its scales beside them, and its four warps (2 x 2, 32 x 32 outputs each) multiply them with
// `mma.sync` s8 x s8 -> s32: one m16n8k32 product a sub-block where its 32 values share a
// scale (d0 == d1), and for Q6_K, whose scales are per 16 values, one m16n8k16 product a half.
// Each sub-block's integer sums become floats as the GEMVs make them, `da.x * (d0 * s0 + d1 *
// s1) - m * da.y` (with one scale, `da.x * (d * s) - m * da.y`: s0 + s1 is exact), added up over
// the sub-blocks in column order: the GEMVs' value a sub-block, summed in another order.
//
// The grid is (activation tiles, weight tiles): the blocks that share weight rows are adjacent,
// so the weights come from HBM about once and from L2 for the other activation tiles.
// Compute capability 8.0 and later (the host launches it nowhere else; below 8.0 it is empty).

// GEMM_BM, GEMM_BN and GEMM_THREADS are the host's GEMM_TILE and GEMM_THREADS (jetson/src/fns.rs).
#define GEMM_BM 64
#define GEMM_BN 64
#define GEMM_KB 8
// Bytes a tile row takes in shared memory: GEMM_KB * 32 + 16, so that the eight rows a
// fragment load reads (lanes 4g + t, word t of row g) fall in 32 different banks.
#define GEMM_LD (GEMM_KB * 32 + 16)
#define GEMM_THREADS 128

// Whether a format's sub-blocks of 32 carry two scales (Q6_K: one a 16 values), so that each
// half's integer sum is scaled on its own; the others take one m16n8k32 product a sub-block.
template <int T> constexpr bool GEMM_HALVES = false;
template <> constexpr bool GEMM_HALVES<T_Q6_K> = true;

// d (4 x s32) += a (16 x 16 s8, row-major: two registers) . b (16 x 8 s8, column-major: one).
__device__ __forceinline__ void mma_s8_16816(int (&d)[4], int a0, int a1, int b0) {
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a0), "r"(a1), "r"(b0));
#endif
}

// d (4 x s32) += a (16 x 32 s8, row-major: four registers) . b (32 x 8 s8, column-major: two).
__device__ __forceinline__ void mma_s8_16832(int (&d)[4], int a0, int a1, int a2, int a3, int b0, int b1) {
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

template <int T>
__device__ __forceinline__ void gemm_mma(const u8* __restrict__ w, u64 row_bytes, int n_out, int cols,
                                         const i8* __restrict__ aq, const float2* __restrict__ ads,
                                         float* __restrict__ out, int rows) {
#if __CUDA_ARCH__ >= 800
    __shared__ __align__(16) u8 sw[GEMM_BM * GEMM_LD];
    __shared__ __align__(16) u8 sa[GEMM_BN * GEMM_LD];
    // Per sub-block of the step, per tile row: the weights' d0, d1, m; the activations' scales.
    __shared__ float sd0[GEMM_KB][GEMM_BM], sd1[GEMM_KB][GEMM_BM], smn[GEMM_KB][GEMM_BM];
    __shared__ float2 sda[GEMM_KB][GEMM_BN];
    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    // Fragment coordinates: lane = 4 g + t.
    const int g = lane >> 2, t = lane & 3;
    const int wm = (warp >> 1) * 32, wn = (warp & 1) * 32;
    const int tok0 = blockIdx.x * GEMM_BN;
    const int row0 = blockIdx.y * GEMM_BM;
    const int nsub = cols >> 5;
    float acc[2][4][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
    pdl_begin();
    for (int kb = 0; kb < nsub; kb += GEMM_KB) {
        // The weight tile: GEMM_BM x GEMM_KB sub-blocks, eight threads a row (zeros past the
        // matrix's rows or columns, which then add nothing).
        for (int p = tid; p < GEMM_BM * GEMM_KB; p += GEMM_THREADS) {
            const int r = p / GEMM_KB, s = p % GEMM_KB;
            const int o = row0 + r, sb = kb + s;
            WSub ws;
            if (o < n_out && sb < nsub) {
                decode_sub<T>(w + (size_t)o * row_bytes, sb, nsub, ws);
            } else {
#pragma unroll
                for (int i = 0; i < 8; ++i) ws.q[i] = 0;
                ws.d0 = 0.0f; ws.d1 = 0.0f; ws.m = 0.0f;
            }
            int4* dst = (int4*)(sw + r * GEMM_LD + s * 32);
            dst[0] = make_int4(ws.q[0], ws.q[1], ws.q[2], ws.q[3]);
            dst[1] = make_int4(ws.q[4], ws.q[5], ws.q[6], ws.q[7]);
            sd0[s][r] = ws.d0;
            sd1[s][r] = ws.d1;
            smn[s][r] = ws.m;
        }
        // The activation tile, 16 bytes a thread at a time, and its scales.
        for (int p = tid; p < GEMM_BN * GEMM_KB * 2; p += GEMM_THREADS) {
            const int r = p / (GEMM_KB * 2), c = p % (GEMM_KB * 2);
            const int tok = tok0 + r, col = kb * 32 + c * 16;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (tok < rows && col < cols) v = *(const uint4*)(aq + (size_t)tok * cols + col);
            *(uint4*)(sa + r * GEMM_LD + c * 16) = v;
        }
        for (int p = tid; p < GEMM_BN * GEMM_KB; p += GEMM_THREADS) {
            const int r = p / GEMM_KB, s = p % GEMM_KB;
            const int tok = tok0 + r, sb = kb + s;
            sda[s][r] = tok < rows && sb < nsub ? ads[(size_t)tok * nsub + sb] : make_float2(0.0f, 0.0f);
        }
        __syncthreads();
#pragma unroll 1
        for (int s = 0; s < GEMM_KB; ++s) {
            // Fragments of sub-block s: A rows g and g + 8 of each 16-row tile, B row g of each
            // 8-row tile, word t of each half (16 columns): [tile][half][row g, row g + 8].
            int a[2][2][2], b[4][2];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int k = s * 32 + h * 16 + t * 4;
#pragma unroll
                for (int mt = 0; mt < 2; ++mt) {
                    a[mt][h][0] = *(const int*)(sw + (wm + mt * 16 + g) * GEMM_LD + k);
                    a[mt][h][1] = *(const int*)(sw + (wm + mt * 16 + g + 8) * GEMM_LD + k);
                }
#pragma unroll
                for (int nt = 0; nt < 4; ++nt) b[nt][h] = *(const int*)(sa + (wn + nt * 8 + g) * GEMM_LD + k);
            }
            // The integer sums of this sub-block: with per-16 scales each half's apart
            // (m16n8k16 each, c[h]), else the whole sub-block's in one m16n8k32 product (c[0]).
            constexpr int NC = GEMM_HALVES<T> ? 2 : 1;
            int c[NC][2][4][4];
#pragma unroll
            for (int mt = 0; mt < 2; ++mt)
#pragma unroll
                for (int nt = 0; nt < 4; ++nt) {
#pragma unroll
                    for (int h = 0; h < NC; ++h)
#pragma unroll
                        for (int e = 0; e < 4; ++e) c[h][mt][nt][e] = 0;
                    if constexpr (GEMM_HALVES<T>) {
#pragma unroll
                        for (int h = 0; h < 2; ++h) mma_s8_16816(c[h][mt][nt], a[mt][h][0], a[mt][h][1], b[nt][h]);
                    } else {
                        mma_s8_16832(c[0][mt][nt], a[mt][0][0], a[mt][0][1], a[mt][1][0], a[mt][1][1], b[nt][0],
                                     b[nt][1]);
                    }
                }
            // Accumulator element e of tile (mt, nt): weight row wm + 16 mt + g + 8 (e >> 1),
            // activation row wn + 8 nt + 2 t + (e & 1).
#pragma unroll
            for (int mt = 0; mt < 2; ++mt)
#pragma unroll
                for (int hi = 0; hi < 2; ++hi) {
                    const int r = wm + mt * 16 + g + 8 * hi;
                    const float d0 = sd0[s][r], m = smn[s][r];
                    const float d1 = GEMM_HALVES<T> ? sd1[s][r] : 0.0f;
#pragma unroll
                    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
                        for (int lo = 0; lo < 2; ++lo) {
                            const float2 da = sda[s][wn + nt * 8 + 2 * t + lo];
                            const int e = 2 * hi + lo;
                            float dot;
                            if constexpr (GEMM_HALVES<T>)
                                dot = d0 * (float)c[0][mt][nt][e] + d1 * (float)c[NC - 1][mt][nt][e];
                            else
                                dot = d0 * (float)c[0][mt][nt][e];
                            acc[mt][nt][e] += da.x * dot - m * da.y;
                        }
                }
        }
        __syncthreads();
    }
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int o = row0 + wm + mt * 16 + g + 8 * (e >> 1);
                const int tok = tok0 + wn + nt * 8 + 2 * t + (e & 1);
                if (o < n_out && tok < rows) out[(size_t)tok * n_out + o] = acc[mt][nt][e];
            }
#endif
}

#define GEMM_Q(name, T)                                                                                  \
    extern "C" __global__ void __launch_bounds__(GEMM_THREADS) name##_mma(                               \
        const u8* w, u64 rb, int n_out, int cols, const i8* aq, const float2* ads, float* out, int rows) { \
        gemm_mma<T>(w, rb, n_out, cols, aq, ads, out, rows);                                             \
    }

GEMM_Q(gemm_q4_0, T_Q4_0)
GEMM_Q(gemm_q4_1, T_Q4_1)
GEMM_Q(gemm_q5_0, T_Q5_0)
GEMM_Q(gemm_q8_0, T_Q8_0)
GEMM_Q(gemm_q4_k, T_Q4_K)
GEMM_Q(gemm_q5_k, T_Q5_K)
GEMM_Q(gemm_q6_k, T_Q6_K)

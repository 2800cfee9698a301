// Row-wise RMSNorm: out = x / sqrt(mean(x^2) + eps) * w (w may be null: gain 1). The sum of
// squares is taken in f64 as the CPU reference does. x == out is allowed: each thread writes
// only the elements it read. grid: rows; block: any multiple of 32 up to 1024 (the kernels
// are bounded to 1024 threads, so any block size launches).
// With ADD, x += y first (the residual add, as the CPU's `add` rounds it), written back to x;
// with PRE also, y = rmsnorm(y) * pw before that (written back to y). Every loop gives a thread
// the same elements, so it reads back only what it wrote.

// Values a thread keeps in registers on the fast path: the host sizes the block to about 8
// values a thread, so rows up to 8192 wide take it.
#define NORM_VALUES 8
// 1: the fast path loads its gains before waiting on the previous kernel (0: after the sums).
#ifndef NORM_PRELOAD
#define NORM_PRELOAD 1
#endif

template <bool Q, bool ADD, bool PRE = false>
__device__ __forceinline__ void rmsnorm_row(float* x, float* y, const float* __restrict__ w,
                                            float* out, int dim, float eps, i8* __restrict__ q,
                                            float2* __restrict__ ds, const float* __restrict__ pw = nullptr,
                                            float peps = 0.0f, u32* sig = nullptr) {
    __shared__ double part[32];
    float* xr = x + (size_t)blockIdx.x * dim;
    float* yr = ADD ? y + (size_t)blockIdx.x * dim : nullptr;
    float* orow = out + (size_t)blockIdx.x * dim;
    const int t = threadIdx.x, bd = blockDim.x;
    if (dim <= NORM_VALUES * bd) {
        // Fast path: every load of the row is issued before the first use (a loop would wait
        // for each load in turn), and nothing is read twice. The gains are weights, which no
        // kernel writes: they are loaded before the wait on the previous kernel, so their
        // trip to HBM overlaps its end instead of following the sums.
        float wv[NORM_VALUES], pv[NORM_VALUES];
#pragma unroll
        for (int k = 0; k < NORM_VALUES; ++k) {
            const int i = t + k * bd;
            wv[k] = NORM_PRELOAD && w && i < dim ? w[i] : 1.0f;
            pv[k] = NORM_PRELOAD && PRE && i < dim ? pw[i] : 1.0f;
        }
        pdl_begin_small();
        float xv[NORM_VALUES], yv[NORM_VALUES];
#pragma unroll
        for (int k = 0; k < NORM_VALUES; ++k) {
            const int i = t + k * bd;
            xv[k] = i < dim ? xr[i] : 0.0f;
            yv[k] = ADD && i < dim ? yr[i] : 0.0f;
        }
        if (PRE) {
            double sy = 0.0;
#pragma unroll
            for (int k = 0; k < NORM_VALUES; ++k) sy += (double)(yv[k] * yv[k]);
            const float ys = rms_scale(block_sum_f64(sy, part), dim, peps);
#pragma unroll
            for (int k = 0; k < NORM_VALUES; ++k) {
                const int i = t + k * bd;
                if (i < dim) {
                    yv[k] = __fmul_rn(__fmul_rn(yv[k], ys), NORM_PRELOAD ? pv[k] : pw[i]);
                    yr[i] = yv[k];
                }
            }
        }
        double s = 0.0;
#pragma unroll
        for (int k = 0; k < NORM_VALUES; ++k) {
            const int i = t + k * bd;
            if (ADD) {
                xv[k] = __fadd_rn(xv[k], yv[k]);
                if (i < dim) xr[i] = xv[k];
            }
            s += (double)(xv[k] * xv[k]);
        }
        const float scale = rms_scale(block_sum_f64(s, part), dim, eps);
#pragma unroll
        for (int k = 0; k < NORM_VALUES; ++k) {
            const int i = t + k * bd;
            if (i < dim) {
                float v = __fmul_rn(xv[k], scale);
                v = w ? __fmul_rn(v, NORM_PRELOAD ? wv[k] : w[i]) : v;
                orow[i] = v;
                // The warp holds the 32 values of one q8_1 block: quantize as quantize_q8_1
                // does.
                if (Q) quantize_lane_q8(v, (size_t)blockIdx.x * dim + i, q, ds);
            }
        }
        hop_signal(sig);
        return;
    }
    // Wider rows: loops over the row (each loop gives a thread the same elements, so it reads
    // back only what it wrote).
    pdl_begin_small();
    float yscale = 1.0f;
    if (PRE) {
        double sy = 0.0;
        for (int i = t; i < dim; i += bd) {
            const float v = yr[i];
            sy += (double)(v * v);
        }
        yscale = rms_scale(block_sum_f64(sy, part), dim, peps);
    }
    double s = 0.0;
    for (int i = t; i < dim; i += bd) {
        float v = xr[i];
        if (ADD) {
            float b = yr[i];
            if (PRE) {
                b = __fmul_rn(__fmul_rn(b, yscale), pw[i]);
                yr[i] = b;
            }
            v = __fadd_rn(v, b);
            xr[i] = v;
        }
        s += (double)(v * v);
    }
    const float scale = rms_scale(block_sum_f64(s, part), dim, eps);
    for (int i = t; i < dim; i += bd) {
        float v = __fmul_rn(xr[i], scale);
        v = w ? __fmul_rn(v, w[i]) : v;
        orow[i] = v;
        if (Q) quantize_lane_q8(v, (size_t)blockIdx.x * dim + i, q, ds);
    }
    hop_signal(sig);
}

extern "C" __global__ void __launch_bounds__(1024) rmsnorm_f32(const float* x, const float* __restrict__ w, float* out, int dim,
                                       float eps) {
    rmsnorm_row<false, false>(const_cast<float*>(x), nullptr, w, out, dim, eps, nullptr, nullptr);
}

// RMSNorm that also leaves its output quantized to q8_1 blocks in `q`/`ds`, for the matmul that
// reads it next. Needs dim a multiple of 32 and a block of whole warps.
extern "C" __global__ void __launch_bounds__(1024) rmsnorm_q8_f32(const float* x, const float* __restrict__ w, float* out, int dim,
                                          float eps, i8* __restrict__ q, float2* __restrict__ ds, u32* sig) {
    rmsnorm_row<true, false>(const_cast<float*>(x), nullptr, w, out, dim, eps, q, ds, nullptr, 0.0f, sig);
}

// The residual add and the next norm in one launch: x += y, then out = rmsnorm(x) * w
// (`Backend::add_rmsnorm`); out must not overlap x or y.
extern "C" __global__ void __launch_bounds__(1024) add_rmsnorm_f32(float* x, const float* __restrict__ y, const float* __restrict__ w,
                                           float* out, int dim, float eps) {
    rmsnorm_row<false, true>(x, const_cast<float*>(y), w, out, dim, eps, nullptr, nullptr);
}

// The same, also leaving out quantized to q8_1 for the matmul that reads it next.
extern "C" __global__ void __launch_bounds__(1024) add_rmsnorm_q8_f32(float* x, const float* __restrict__ y, const float* __restrict__ w,
                                              float* out, int dim, float eps, i8* __restrict__ q,
                                              float2* __restrict__ ds, u32* sig) {
    rmsnorm_row<true, true>(x, const_cast<float*>(y), w, out, dim, eps, q, ds, nullptr, 0.0f, sig);
}

// The branch's post-norm, the residual add and the next norm in one launch
// (`Backend::norm_add_rmsnorm`): y = rmsnorm(y) * pw (epsilon peps), x += y, then
// out = rmsnorm(x) * w; out must not overlap x or y.
extern "C" __global__ void __launch_bounds__(1024) norm_add_rmsnorm_f32(float* x, float* y, const float* __restrict__ pw, float peps,
                                                const float* __restrict__ w, float* out, int dim, float eps) {
    rmsnorm_row<false, true, true>(x, y, w, out, dim, eps, nullptr, nullptr, pw, peps);
}

// The same, also leaving out quantized to q8_1 for the matmul that reads it next.
extern "C" __global__ void __launch_bounds__(1024) norm_add_rmsnorm_q8_f32(float* x, float* y, const float* __restrict__ pw, float peps,
                                                   const float* __restrict__ w, float* out, int dim, float eps,
                                                   i8* __restrict__ q, float2* __restrict__ ds, u32* sig) {
    rmsnorm_row<true, true, true>(x, y, w, out, dim, eps, q, ds, pw, peps, sig);
}

// A branch's output projection fused with the norms after it (`Backend::matmul_add_rmsnorm`,
// decode: one activation row). gemv_k_multi computes y = W a (segment 0 only; its n0 rows are
// the model width `dim`), and each block adds up the squares of the rows it wrote. The last
// block to finish (a ticket on `ctr`, as the attention's last split merges) then runs the norm
// over the whole row: y = rmsnorm(y) * pw (pw null: no post-norm; the sum of squares comes
// from the blocks' partials in `part`, summed in block order), x += y, out = rmsnorm(x) * w,
// also quantized to q8_1 into q/ds for the matmul that reads it next. So no norm launch, and
// no wait on one, stands between the two GEMVs. Needs gridDim.y == 1, dim % 32 == 0 and
// dim <= MN_VALUES * blockDim.x; every buffer distinct.
// Status (sessions 13-14, H100): correct (cuda-check ops, e2e bit-identity of graph and
// eager) but slower than the GEMV plus the norm launch it replaces: Nsight Compute on the
// two-layer model times it at 15-17 us against ~3.6 us for plain gemv_k_multi, so the
// single-block tail costs ~12 us. The fences are not the cause (the every-thread fence of
// session 13 and ticket_last's one fence measure the same, TICKET_FENCE_ALL); the serial
// round trips through L2 of one block are the suspect. The backend leaves it off unless
// $GLIMMER_FUSE_NORM=1.
#define MN_VALUES 32

// The sum of the squares of the rows a thread stores (f32 squares summed in f64, as the norms
// sum them).
struct SqEp {
    double ss = 0.0;
    __device__ __forceinline__ void pre(const KSeg&, int) {}
    __device__ __forceinline__ void post(const KSeg& s, int row0, const float (&v)[2]) {
#pragma unroll
        for (int r = 0; r < 2; ++r)
            if ((threadIdx.x & 31) == 0 && row0 + r < s.n) ss += (double)(v[r] * v[r]);
    }
};

extern "C" __global__ void __launch_bounds__(256, 2)
    gemv_k_multi_norm(K_MULTI_PARAMS, float* __restrict__ x, const float* __restrict__ pw, float peps,
                      const float* __restrict__ nw, float* __restrict__ nout, float eps, i8* __restrict__ q,
                      float2* __restrict__ ds, double* part, u32* ctr) {
    __shared__ double red[32];
    const int dim = n0;
    const int t = threadIdx.x, bd = blockDim.x;
    {
        // The gains are weights (no kernel writes them): warm their lines in L2 now for
        // whichever block ends last.
        const int lines = (dim * 4 + 127) / 128;
        for (int l = blockIdx.x * bd + t; l < 2 * lines; l += gridDim.x * bd) {
            const float* g = l < lines ? pw : nw;
            if (g) prefetch_l2((const u8*)g + 128 * (l % lines));
        }
    }
    SqEp ep;
    gemv_k_multi_body(cols, aq, ads, pairs, w0, rb0, n0, t0, o0, e0, w1, rb1, n1, t1, o1, e1, w2, rb2, n2, t2, o2,
                      e2, w3, rb3, n3, t3, o3, pf, ep);
    const double bs = pw ? block_sum_f64(ep.ss, red) : 0.0;
    if (t == 0) part[blockIdx.x] = bs;
    if (!ticket_last(ctr, gridDim.x)) return;
    // The other blocks' outputs and partials: through L2 (__ldcg), not L1.
    float ys = 1.0f;
    if (pw) {
        double s = 0.0;
        for (int i = t; i < (int)gridDim.x; i += bd) s += __ldcg(part + i);
        ys = rms_scale(block_sum_f64(s, red), dim, peps);
    }
    float* y = o0;
    // Each phase either only loads or only stores: a load placed after a store to memory the
    // compiler cannot prove distinct waits for it, and one L2 round trip per value (26 a
    // thread at 6656 wide) would make this tail longer than the launch it replaces.
    float xv[MN_VALUES], bv[MN_VALUES];
#pragma unroll
    for (int k = 0; k < MN_VALUES; ++k) {
        const int i = t + k * bd;
        float b = i < dim ? __ldcg(y + i) : 0.0f;
        const float xo = i < dim ? __ldcg(x + i) : 0.0f;
        if (pw) b = __fmul_rn(__fmul_rn(b, ys), i < dim ? pw[i] : 1.0f);
        bv[k] = b;
        xv[k] = __fadd_rn(xo, b);
    }
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < MN_VALUES; ++k) {
        const int i = t + k * bd;
        if (i < dim) {
            if (pw) y[i] = bv[k];
            x[i] = xv[k];
            s += (double)(xv[k] * xv[k]);
        }
    }
    const float scale = rms_scale(block_sum_f64(s, red), dim, eps);
#pragma unroll
    for (int k = 0; k < MN_VALUES; ++k) {
        const int i = t + k * bd;
        bv[k] = nw && i < dim ? nw[i] : 1.0f;
    }
#pragma unroll
    for (int k = 0; k < MN_VALUES; ++k) {
        const int i = t + k * bd;
        if (i < dim) {
            const float v = __fmul_rn(__fmul_rn(xv[k], scale), bv[k]);
            nout[i] = v;
            // The warp holds the 32 values of one q8_1 block (dim % 32 == 0).
            quantize_lane_q8(v, i, q, ds);
        }
    }
    if (t == 0) *ctr = 0;  // ready for the next launch (and graph replay)
}

// ---- The same fusion split in two: sums in the GEMV, the norm in a wide launch ----
// gemv_k_multi_norm's single-block tail is slow (above). Here the GEMV's blocks only add up,
// over the rows each wrote (y = W a, segment 0, the model width), the four sums that the
// norms after it need, and the norm runs in its own launch of one warp for each 32 values,
// which is short: no block-wide reduction over the row, just every warp adding the blocks'
// partial sums itself. With b = pw * y (pw null: b = y) and ys the post-norm's scale
// (1 / sqrt(sum(y^2) / dim + peps); 1 without pw), the new residual is x' = x + ys * b, and
//   sum(x'^2) = sum(x^2) + 2 ys sum(x b) + ys^2 sum(b^2),
// so sum(y^2), sum(x b), sum(b^2) and sum(x^2), all over the old values, give both scales
// with no pass over x'. (In f64; the CPU sums the rounded x' instead, which differs in the
// last bits of the f32 scale, inside the tolerance of the checks.) The partial sums are
// written per block and added in a fixed order: no atomics, the same bits every run.
// Status (session 14, H100): correct (cuda-check ops, e2e) but 0.19 ms a token slower than the
// default: the 52-block norm launch costs the step what the one-block launch did (~6.7 us; so
// that cost is the launch boundary, not the norm's reductions), and the GEMV that leaves the
// sums is ~1.8 us a launch slower. Off unless $GLIMMER_FUSE_NORM=2.

// Partial sums of one block, in `part` as 4 doubles a block.
struct NormSums {
    double yy, xb, bb, xx;
    __device__ __forceinline__ void add(const NormSums& o) {
        yy += o.yy;
        xb += o.xb;
        bb += o.bb;
        xx += o.xx;
    }
    // One output row: the matmul's value v, the residual's xo and the post-norm gain pv.
    __device__ __forceinline__ void add_row(float v, float xo, float pv) {
        const double b = (double)v * (double)pv;
        yy += (double)(v * v);
        xb += (double)xo * b;
        bb += b * b;
        xx += (double)xo * (double)xo;
    }
};

// The four sums over the rows a thread stores (lane 0 of each warp); x and pw of a pair's rows
// are loaded before its dot products, which hide their latency.
struct SumsEp {
    const float* x;
    const float* pw;
    NormSums s = {0.0, 0.0, 0.0, 0.0};
    float xo[2] = {0.0f, 0.0f}, pv[2] = {1.0f, 1.0f};
    __device__ __forceinline__ void pre(const KSeg& seg, int row0) {
        if ((threadIdx.x & 31) != 0) return;
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int i = row0 + r;
            xo[r] = i < seg.n ? x[i] : 0.0f;
            pv[r] = i < seg.n && pw ? __ldg(pw + i) : 1.0f;
        }
    }
    __device__ __forceinline__ void post(const KSeg& seg, int row0, const float (&v)[2]) {
        if ((threadIdx.x & 31) != 0) return;
#pragma unroll
        for (int r = 0; r < 2; ++r)
            if (row0 + r < seg.n) s.add_row(v[r], xo[r], pv[r]);
    }
};

// gemv_k_multi (one segment: y) that also leaves its block's NormSums in part[blockIdx.x]
// (summed over the block's warps in warp order). x and pw: as norm_sums_q8_f32 takes them.
__device__ __forceinline__ void gemv_k_multi_sums_body(K_MULTI_PARAMS, const float* __restrict__ x,
                                                       const float* __restrict__ pw, NormSums* __restrict__ part) {
    __shared__ NormSums red[32];
    SumsEp ep;
    ep.x = x;
    ep.pw = pw;
    gemv_k_multi_body(cols, aq, ads, pairs, w0, rb0, n0, t0, o0, e0, w1, rb1, n1, t1, o1, e1, w2, rb2, n2, t2, o2,
                      e2, w3, rb3, n3, t3, o3, pf, ep);
    const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    if ((threadIdx.x & 31) == 0) red[warp] = ep.s;
    __syncthreads();
    if (threadIdx.x == 0) {
        NormSums t = red[0];
        for (int k = 1; k < warps; ++k) t.add(red[k]);
        part[blockIdx.x] = t;
    }
}

extern "C" __global__ void __launch_bounds__(256, 2)
    gemv_k_multi_sums(K_MULTI_PARAMS, const float* __restrict__ x, const float* __restrict__ pw,
                      NormSums* __restrict__ part) {
    gemv_k_multi_sums_body(cols, aq, ads, pairs, w0, rb0, n0, t0, o0, e0, w1, rb1, n1, t1, o1, e1, w2, rb2, n2, t2,
                           o2, e2, w3, rb3, n3, t3, o3, pf, x, pw, part);
}

// Value i of the norms after gemv_k_multi_sums (the calling warp holds the 32 values of one
// q8_1 block, lane l value i - lane + l), from the `nparts` blocks' sums (read through L2: they
// may come from other multiprocessors in the same launch), with its gains wv, pv loaded.
__device__ __forceinline__ void norm_sums_value(float* __restrict__ x, float* __restrict__ y,
                                                const float* __restrict__ pw, float peps,
                                                const float* __restrict__ w, float* __restrict__ out, int dim,
                                                float eps, i8* __restrict__ q, float2* __restrict__ ds,
                                                const NormSums* __restrict__ part, int nparts, int i, float wv,
                                                float pv) {
    const int lane = threadIdx.x & 31;
    const float yv = __ldcg(y + i);
    const float xv = x[i];
    NormSums t = {0.0, 0.0, 0.0, 0.0};
#pragma unroll 4
    for (int j = lane; j < nparts; j += 32) {
        const double* pj = (const double*)(part + j);
        t.add({__ldcg(pj), __ldcg(pj + 1), __ldcg(pj + 2), __ldcg(pj + 3)});
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        t.yy += __shfl_xor_sync(FULL_MASK, t.yy, o);
        t.xb += __shfl_xor_sync(FULL_MASK, t.xb, o);
        t.bb += __shfl_xor_sync(FULL_MASK, t.bb, o);
        t.xx += __shfl_xor_sync(FULL_MASK, t.xx, o);
    }
    const float ys = pw ? rms_scale(t.yy, dim, peps) : 1.0f;
    const double yd = (double)ys;
    const float scale = rms_scale(t.xx + 2.0 * yd * t.xb + yd * yd * t.bb, dim, eps);
    float b = yv;
    if (pw) {
        b = __fmul_rn(__fmul_rn(yv, ys), pv);
        y[i] = b;
    }
    const float xn = __fadd_rn(xv, b);
    x[i] = xn;
    float v = __fmul_rn(xn, scale);
    if (w) v = __fmul_rn(v, wv);
    out[i] = v;
    quantize_lane_q8(v, i, q, ds);
}

// The norms after gemv_k_multi_sums, from its `nparts` blocks' sums: y = ys * y * pw (written
// back; pw null: y unchanged and ys = 1), x += y, out = rmsnorm(x) * w (w null: gain 1), also
// quantized to q8_1 into q/ds. One warp for each 32 values (dim % 32 == 0), any block size of
// whole warps; every warp adds the partial sums itself, in the same order.
extern "C" __global__ void __launch_bounds__(256)
    norm_sums_q8_f32(float* __restrict__ x, float* __restrict__ y, const float* __restrict__ pw, float peps,
                     const float* __restrict__ w, float* __restrict__ out, int dim, float eps, i8* __restrict__ q,
                     float2* __restrict__ ds, const NormSums* __restrict__ part, int nparts) {
    const int lane = threadIdx.x & 31;
    const int i = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * 32 + lane;
    if (i - lane >= dim) return;  // whole warps: dim % 32 == 0
    // The gains are weights: loaded before the wait.
    const float wv = w ? __ldg(w + i) : 1.0f;
    const float pv = pw ? __ldg(pw + i) : 1.0f;
    pdl_begin_small();
    norm_sums_value(x, y, pw, peps, w, out, dim, eps, q, ds, part, nparts, i, wv, pv);
}

// ---- The same fusion with a grid barrier instead of the second launch ----
// gemv_k_multi_sums, then, in the same launch: every block waits at a grid-wide barrier until
// all blocks have left their sums and rows (the grid is one resident wave, so all its blocks
// run at once), and then its warps run norm_sums_value over the block's share of the 32-value
// groups. The norm launch and its boundary (~6.7 us of the step, session 14) become one
// barrier (~1-2 us expected) and a slice of ~one group a block. `bar`: two u32 (arrivals,
// generation), zero before the first launch; the barrier leaves the arrivals at zero.
// Status ($GLIMMER_FUSE_NORM=3, off by default): checked on the H200 (cuda-check ops, e2e) and
// measured there in session 16: -0.11 ms a token against the register-kernel step, but its
// GEMV is a register kernel, so with the bulk-copy default it loses (BENCHMARKS.md).

// Thread 0 only: arrives at the barrier `bar` of `n` blocks and returns the generation it
// arrived in (read before arriving); the last to arrive resets the arrivals and moves the
// generation on.
__device__ __forceinline__ u32 grid_arrive(u32* bar, u32 n) {
    volatile u32* gen = bar + 1;
    const u32 g = *gen;
    __threadfence();
    if (atomicAdd(bar, 1u) == n - 1) {
        atomicExch(bar, 0u);
        __threadfence();
        atomicAdd(bar + 1, 1u);
    }
    return g;
}

// Thread 0 only: waits until the generation of `bar` has moved on from `g` (every block has
// arrived), then makes what they wrote before arriving visible. Traps after ~1 s (a launch of
// more blocks than can be resident would otherwise hang).
__device__ __forceinline__ void grid_wait(u32* bar, u32 g) {
    volatile u32* gen = bar + 1;
    u32 spins = 0;
    while (*gen == g) {
        __nanosleep(64);
        if (++spins > (1u << 24)) __trap();
    }
    __threadfence();
}

// Waits until all `n` blocks of the grid have called it with the same `bar`; what any block
// wrote before it is visible to every block after it (through L2). The arrival and the wait
// split apart: gemv_k_multi_tma1_t2_prenorm arrives early and waits late.
__device__ __forceinline__ void grid_barrier(u32* bar, u32 n) {
    __syncthreads();
    if (threadIdx.x == 0) grid_wait(bar, grid_arrive(bar, n));
    __syncthreads();
}

// The grid-barrier norms' second half (gemv_k_multi_gridnorm, gemv_k_multi_tma1_t2_gridnorm):
// once every block has left its sums in `part` and its rows of y, the barrier, then this
// block's warps take the 32-value groups blockIdx.x + warp·gridDim.x, ... of the dim values.
__device__ __forceinline__ void grid_norm_groups(float* __restrict__ x, float* __restrict__ y,
                                                 const float* __restrict__ pw, float peps,
                                                 const float* __restrict__ nw, float* __restrict__ nout, int dim,
                                                 float eps, i8* __restrict__ q, float2* __restrict__ ds,
                                                 const NormSums* __restrict__ part, u32* bar) {
    const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5, lane = threadIdx.x & 31;
    grid_barrier(bar, gridDim.x);
    const int groups = dim >> 5;
    for (int g = blockIdx.x + warp * (int)gridDim.x; g < groups; g += warps * (int)gridDim.x) {
        const int i = 32 * g + lane;
        norm_sums_value(x, y, pw, peps, nw, nout, dim, eps, q, ds, part, (int)gridDim.x, i, nw ? __ldg(nw + i) : 1.0f,
                        pw ? __ldg(pw + i) : 1.0f);
    }
}

extern "C" __global__ void __launch_bounds__(256, 2)
    gemv_k_multi_gridnorm(K_MULTI_PARAMS, float* __restrict__ x, const float* __restrict__ pw, float peps,
                          const float* __restrict__ nw, float* __restrict__ nout, float eps, i8* __restrict__ q,
                          float2* __restrict__ ds, NormSums* __restrict__ part, u32* bar) {
    gemv_k_multi_sums_body(cols, aq, ads, pairs, w0, rb0, n0, t0, o0, e0, w1, rb1, n1, t1, o1, e1, w2, rb2, n2, t2,
                           o2, e2, w3, rb3, n3, t3, o3, pf, x, pw, part);
    grid_norm_groups(x, o0, pw, peps, nw, nout, n0, eps, q, ds, part, bar);
}

// ---- The grid-barrier norm in the bulk-copy kernel ----
// gemv_k_multi_tma1_t2 (one row an item, teams of two warps a ring: the default bulk-copy
// shape, `TmaGemv::DEFAULT`) that also leaves its block's NormSums, then the grid barrier and
// the norms over the block's share of the 32-value groups, as gemv_k_multi_gridnorm does after
// gemv_k_multi. Session 16 measured the register form at -0.11 ms a token but slower than the
// bulk-copy GEMVs it would replace on the output projection and FFN down; this keeps their
// weights on the bulk copies. Arguments: the bulk-copy kernel's, then the tail's (as
// gemv_k_multi_gridnorm). The grid is at most one block a multiprocessor, all resident.
// Status ($GLIMMER_FUSE_NORM=3 where the bulk-copy kernels run): checked on the H100 in session
// 17 (cuda-check ops) and measured there in session 19: the norm launches go (0.65 -> 0.02 ms a
// token) but its GEMVs take what they saved (135.2 against 135.3 tok/s); off.

// The four sums over the rows an item's leader lane stores (x and pw of the item's rows are
// loaded before its bulk copy is waited on).
template <int R> struct KtSumsEp {
    const float* x;
    const float* pw;
    NormSums s = {0.0, 0.0, 0.0, 0.0};
    float xo[R], pv[R];
    __device__ __forceinline__ void pre(const KSeg& seg, int row0, int nr) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
            xo[r] = r < nr ? x[row0 + r] : 0.0f;
            pv[r] = r < nr && pw ? __ldg(pw + row0 + r) : 1.0f;
        }
    }
    __device__ __forceinline__ void post(const KSeg&, int, int nr, const float (&v)[R]) {
#pragma unroll
        for (int r = 0; r < R; ++r)
            if (r < nr) s.add_row(v[r], xo[r], pv[r]);
    }
};

// Where the warps' sums meet in shared memory: after the bulk-copy body's mbarriers (768
// bytes at most) and team sums (at most 24 rings × 2 items × 2 rows floats from byte 768: up to
// byte 1152), inside its KT_BAR_BYTES.
#define KT_NORM_RED 1280
static_assert(KT_NORM_RED + 24 * sizeof(NormSums) <= KT_BAR_BYTES, "the warps' norm sums fit the barrier area");

// gemv_k_multi_tma1_t2_gridnorm's work (R = 1; R = 2: gemv_k_multi_tma2_t2_gridnorm, two rows
// an item), with `pro` in front of the matmuls (KtNoPro, or the attention of
// gemv_k_multi_tma1_t2_attn_gridnorm, attention.cu).
template <int R, class Pro>
__device__ __forceinline__ void tma_gridnorm_body(K_MULTI_PARAMS, KT_PARAMS, float* __restrict__ x,
                                                  const float* __restrict__ pw, float peps,
                                                  const float* __restrict__ nw, float* __restrict__ nout, float eps,
                                                  i8* __restrict__ q, float2* __restrict__ ds,
                                                  NormSums* __restrict__ part, u32* bar, const Pro& pro) {
#if __CUDA_ARCH__ >= 900
    KtSumsEp<R> ep;
    ep.x = x;
    ep.pw = pw;
    gemv_k_multi_tma_body<R, false, 2>(cols, aq, ads, pairs, w0, rb0, n0, t0, o0, e0, w1, rb1, n1, t1, o1, e1, w2,
                                       rb2, n2, t2, o2, e2, w3, rb3, n3, t3, o3, pf, KT_ARGS, ep, pro);
    u8* kt_smem = kt_smem_base();
    NormSums* red = (NormSums*)(kt_smem + KT_NORM_RED);
    const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5, lane = threadIdx.x & 31;
    // Only each team's first warp has stored rows; the others' sums are zero.
    if (lane == 0) red[warp] = ep.s;
    __syncthreads();
    if (threadIdx.x == 0) {
        NormSums t = red[0];
        for (int k = 1; k < warps; ++k) t.add(red[k]);
        part[blockIdx.x] = t;
    }
    grid_norm_groups(x, o0, pw, peps, nw, nout, n0, eps, q, ds, part, bar);
#endif
}

// gemv_k_multi_tma1_t2_gridnorm, and gemv_k_multi_tma2_t2_gridnorm with two rows an item
// (`TmaGemv::item_rows` 2 where the layout keeps every warp with two-row slots, as
// gemv_k_multi_tma2_t2: the H200's default, `TmaGemv::for_card`, so that the grid-barrier norm
// there keeps it; session 27, written without a GPU: not yet run).
#define K_TMA_GRIDNORM(name, R)                                                                                   \
    extern "C" __global__ void __launch_bounds__(768, 1)                                                          \
        name(K_MULTI_PARAMS, KT_PARAMS, float* __restrict__ x, const float* __restrict__ pw, float peps,          \
             const float* __restrict__ nw, float* __restrict__ nout, float eps, i8* __restrict__ q,               \
             float2* __restrict__ ds, NormSums* __restrict__ part, u32* bar) {                                    \
        tma_gridnorm_body<R>(cols, aq, ads, pairs, w0, rb0, n0, t0, o0, e0, w1, rb1, n1, t1, o1, e1, w2, rb2, n2, \
                             t2, o2, e2, w3, rb3, n3, t3, o3, pf, KT_ARGS, x, pw, peps, nw, nout, eps, q, ds,     \
                             part, bar, KtNoPro());                                                               \
    }
K_TMA_GRIDNORM(gemv_k_multi_tma1_t2_gridnorm, 1)
K_TMA_GRIDNORM(gemv_k_multi_tma2_t2_gridnorm, 2)

// ---- The norms deferred into the next bulk-copy GEMV ($GLIMMER_FUSE_NORM=4) ----
// Sessions 14-19 measured what a norm launch between two GEMVs costs (~6 us a norm, 0.6 ms a
// token on the 30B shape) and found it is the launch boundary, not the norm's arithmetic: the
// 52-block split norm cost the same as the one-block one, and folding the norm into the GEMV
// before it behind a grid barrier (FUSE_NORM=3) saved nothing on the H100 (session 19), a grid
// barrier costing about what a boundary does. Here nothing waits: the GEMV that *reads* the
// norm's output computes it itself. Every block loads the branch output y and the residual x
// (one row, dim values, through L2), runs the norms as norm_add_rmsnorm_q8_f32 / add_rmsnorm_q8
// do (same roundings, f64 sums: every block gets the same bits), and quantizes the result
// straight into its shared-memory activation row, in place of loading aq / ads. The block then
// goes on with its items, whose first copies were asked for before the wait on the previous
// kernel, as always. Once its items are done, it loads its share of the 32-value groups, arrives
// at a grid barrier (`bar`: grid_barrier's two counters) and waits for every block to have
// arrived (so every block has read x and y), and writes that share of what the norm launch would
// have written: y (normed, with a post-norm), x, out (f32) and the q8_1 row in aq / ads, so later
// ops read the same memory as after the two launches.
// Arguments: the bulk-copy kernel's, then x, y, pw (null: no post-norm), peps, nw (null: gain
// 1), nout, eps, bar. Needs dim (= cols) % 32 == 0, dim <= PRE_VALUES * blockDim.x, one
// activation row (gridDim.y == 1), and y, x, nout, the outputs and aq / ads distinct.
// Status: written in session 19; first measured in session 20 (H100) with the gains loaded where
// used and the arrival at the end of the staging: staging 13.5 us a launch, 125 against 138
// tok/s. Reworked then (one round trip for every load, the arrival after the items); see
// BENCHMARKS.md.
#define PRE_VALUES 9
#define KT_PRE_RED KT_NORM_RED
static_assert(KT_PRE_RED + 32 * sizeof(double) + 8 <= KT_BAR_BYTES, "the deferred norm's sums fit the barrier area");

struct KtPreNormPro {
    static constexpr bool fresh = false;
    static constexpr bool stages_act = true;
    float* x;
    float* y;
    const float* pw;
    float peps;
    const float* nw;
    float* nout;
    float eps;
    i8* q;
    float2* ds;
    u32* bar;
    __device__ __forceinline__ void run() const {}
    // The block's reduction scratch (32 doubles), then the two scales.
    __device__ __forceinline__ double* part() const { return (double*)(kt_smem_base() + KT_PRE_RED); }
    __device__ __forceinline__ float* scales() const { return (float*)(part() + 32); }
    // Every load of the row (x, y and both gains) is asked for at once: one round trip to L2,
    // not one for each use (session 20's first form loaded the gains where it used them, 2 x 9
    // round trips, and staged for 13.5 us against 0.8 for a plain launch).
    __device__ __forceinline__ void stage(u8* sa, float2* sd, int dim) const {
        const int t = threadIdx.x, bd = blockDim.x;
        float xv[PRE_VALUES], yv[PRE_VALUES], pv[PRE_VALUES], nv[PRE_VALUES];
#pragma unroll
        for (int k = 0; k < PRE_VALUES; ++k) {
            const int i = t + k * bd;
            const bool in = i < dim;
            xv[k] = in ? __ldcg(x + i) : 0.0f;
            yv[k] = in ? __ldcg(y + i) : 0.0f;
            pv[k] = in && pw ? __ldg(pw + i) : 1.0f;
            nv[k] = in && nw ? __ldg(nw + i) : 1.0f;
        }
        float ys = 1.0f;
        if (pw) {
            double sy = 0.0;
#pragma unroll
            for (int k = 0; k < PRE_VALUES; ++k) sy += (double)(yv[k] * yv[k]);
            ys = rms_scale(block_sum_f64(sy, part()), dim, peps);
        }
        double s = 0.0;
#pragma unroll
        for (int k = 0; k < PRE_VALUES; ++k) {
            const float b = pw ? __fmul_rn(__fmul_rn(yv[k], ys), pv[k]) : yv[k];
            xv[k] = __fadd_rn(xv[k], b);
            s += (double)(xv[k] * xv[k]);
        }
        const float scale = rms_scale(block_sum_f64(s, part()), dim, eps);
#pragma unroll
        for (int k = 0; k < PRE_VALUES; ++k) {
            const int i = t + k * bd;
            // dim % 32 == 0 and blockDim.x % 32 == 0: a warp is wholly inside or outside.
            if (i < dim) {
                float v = __fmul_rn(xv[k], scale);
                v = nw ? __fmul_rn(v, nv[k]) : v;
                float d;
                const int qi = q8_lane(v, &d);
                sa[kt_pa((u32)i)] = (u8)(i8)qi;
                const int sq = warp_sum_int(qi);
                if ((t & 31) == 0) sd[i >> 5] = make_float2(d, d * (float)sq);
            }
        }
        if (t == 0) {
            float* sc = scales();
            sc[0] = ys;
            sc[1] = scale;
        }
        // (The body's __syncthreads after this makes the scales visible to the block.)
    }
    // After the block's items: its share of the 32-value groups written out. The share's
    // inputs are loaded first (no other block writes them), then thread 0 arrives at the grid
    // barrier and waits for every block to have arrived (each arrives here, after its
    // staging: every block has read x and y), and only then are x and y overwritten. The
    // arrival sits on no block's staging; the last block to arrive finds the barrier open.
    __device__ __forceinline__ void finish(int dim) const {
        const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5, lane = threadIdx.x & 31;
        const int groups = dim >> 5;
        int g = blockIdx.x + warp * (int)gridDim.x;
        float yo = 0.0f, xo = 0.0f, pg = 1.0f, ng = 1.0f;
        auto load = [&](int gg) {
            const int i = 32 * gg + lane;
            yo = __ldcg(y + i);
            xo = __ldcg(x + i);
            pg = pw ? __ldg(pw + i) : 1.0f;
            ng = nw ? __ldg(nw + i) : 1.0f;
        };
        if (g < groups) load(g);
        if (threadIdx.x == 0) grid_wait(bar, grid_arrive(bar, gridDim.x));
        __syncthreads();
        const float* sc = scales();
        const float ys = sc[0], scale = sc[1];
        for (bool first = true; g < groups; g += warps * (int)gridDim.x, first = false) {
            if (!first) load(g);
            const int i = 32 * g + lane;
            const float b = pw ? __fmul_rn(__fmul_rn(yo, ys), pg) : yo;
            const float r = __fadd_rn(xo, b);
            if (pw) y[i] = b;
            x[i] = r;
            float v = __fmul_rn(r, scale);
            v = nw ? __fmul_rn(v, ng) : v;
            nout[i] = v;
            quantize_lane_q8(v, (size_t)i, q, ds);
        }
    }
};

extern "C" __global__ void __launch_bounds__(768, 1)
    gemv_k_multi_tma1_t2_prenorm(K_MULTI_PARAMS, KT_PARAMS, float* __restrict__ x, float* __restrict__ y,
                                 const float* __restrict__ pw, float peps, const float* __restrict__ nw,
                                 float* __restrict__ nout, float eps, u32* bar) {
#if __CUDA_ARCH__ >= 900
    const KtPreNormPro pro = {x, y, pw, peps, nw, nout, eps, const_cast<i8*>(aq), const_cast<float2*>(ads), bar};
    KtNoEp ep;
    gemv_k_multi_tma_body<1, false, 2>(cols, aq, ads, pairs, w0, rb0, n0, t0, o0, e0, w1, rb1, n1, t1, o1, e1, w2,
                                       rb2, n2, t2, o2, e2, w3, rb3, n3, t3, o3, pf, KT_ARGS, ep, pro);
#endif
}

// ---- The q8 norms over a cluster of blocks (sm_90 thread-block clusters) ----
// The one-block norms above run on one multiprocessor: the row's loads, two f64 block sums and
// the quantization are one serial chain on one SM, and its 832 threads of 64 registers do not
// fit beside a running bulk-copy GEMV block (72 x 768 registers), so the block starts only
// once a GEMV block has left its multiprocessor. Here a cluster of n blocks (the launch's
// cluster size, 2..=16; the host's `norm_cluster`) of NORM_CL_THREADS threads shares the row
// (blockIdx.y): block r of the cluster takes the dim / n consecutive values from r·dim / n
// (dim / n a multiple of 32, at most NORM_CL_THREADS · NORM_CL_VALUES). The sums of squares
// are f64 and meet through distributed shared memory (cluster_sums, below), the same bits in
// every block. The rest is rmsnorm_row's fast path, element for element.
#define NORM_CL_THREADS 128
#define NORM_CL_VALUES 8


// The sums meet in one exchange (session 22; session 21's form took a block sum, then a
// cluster barrier, a block sum of the blocks' partials, and a last cluster barrier before the
// blocks could leave, and the norm in front of the add had an exchange of its own: 138.2–138.6
// against 140.7–141.2 tok/s on the H100's 30B-shape decode, BENCHMARKS.md): each warp's
// partial sums go straight into a slot of every cluster block's shared memory (one remote
// store a lane), so that one cluster barrier, with no block barrier before or after it, meets
// them; every warp then adds all the slots in the same order (lane l: slots l and l + 32, then
// an xor butterfly, whose lanes all end with the same bits), so every block holds the same
// totals. The norm in front of the add (PRE) takes no exchange of its own: its sum of squares
// and the three sums that give the added row's, Σx², Σx·u and Σu² with u = y·pw (since
// x + ys·u is the added row, Σ(x + ys·u)² = Σx² + 2·ys·Σx·u + ys²·Σu²), meet in the same
// exchange. That sum is the row's up to rounding (f64 over f32 products, ~1e-8 relative;
// the CPU rounds each added value to f32 first), far inside the norms' 1e-5 checks. Nothing
// reads another block's shared memory after the barrier, so no barrier waits at the end.
#define NORM_CL_WARPS (NORM_CL_THREADS / 32)
// Seven blocks' worth of registers a multiprocessor (at most 72 a thread): a cluster block
// must fit in what a running bulk-copy GEMV block (72 registers x 768 threads) leaves.
#define NORM_CL_MIN_BLOCKS 7

#if __CUDA_ARCH__ >= 900
// The K sums of every thread's s[k] over the cluster, left in s (every thread of every block
// the same bits), through `slots` (K × 64 doubles of each block's shared memory; at most 16
// blocks of NORM_CL_WARPS warps). The caller arrived at the cluster barrier once at its start
// (cluster_arrive_relaxed), so that no remote store lands before every block has started.
template <int K>
__device__ __forceinline__ void cluster_sums(double (&s)[K], double* slots) {
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
        for (int k = 0; k < K; ++k) s[k] += __shfl_xor_sync(FULL_MASK, s[k], o);
    const u32 n = cluster_blocks();
    const u32 slot = cluster_rank() * NORM_CL_WARPS + warp;
    cluster_wait();
    if (lane < n) {
#pragma unroll
        for (int k = 0; k < K; ++k) st_cluster_f64(slots + 64 * k + slot, lane, s[k]);
    }
    cluster_sync_all();
    const u32 m = n * NORM_CL_WARPS;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const double* sk = slots + 64 * k;
        s[k] = (lane < m ? sk[lane] : 0.0) + (lane + 32 < m ? sk[lane + 32] : 0.0);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
        for (int k = 0; k < K; ++k) s[k] += __shfl_xor_sync(FULL_MASK, s[k], o);
}
#endif

template <bool ADD, bool PRE>
__device__ __forceinline__ void cl_norm_row(float* x, float* y, const float* __restrict__ w, float* out, int dim,
                                            float eps, i8* __restrict__ q, float2* __restrict__ ds,
                                            const float* __restrict__ pw, float peps, u32* sig) {
#if __CUDA_ARCH__ >= 900
    __shared__ double slots[(PRE ? 4 : 1) * 64];
    cluster_arrive_relaxed();
    const int n = (int)cluster_blocks();
    const int per = dim / n;
    const int base = (int)cluster_rank() * per;
    const size_t r0 = (size_t)blockIdx.y * dim;
    const int t = threadIdx.x;
    // The gains (weights, which no kernel writes) before the wait, as rmsnorm_row does.
    float wv[NORM_CL_VALUES], pv[NORM_CL_VALUES];
#pragma unroll
    for (int k = 0; k < NORM_CL_VALUES; ++k) {
        const int j = t + k * NORM_CL_THREADS, i = base + j;
        wv[k] = w && j < per ? w[i] : 1.0f;
        pv[k] = PRE && j < per ? pw[i] : 1.0f;
    }
    pdl_begin_small();
    float xv[NORM_CL_VALUES], yv[NORM_CL_VALUES];
#pragma unroll
    for (int k = 0; k < NORM_CL_VALUES; ++k) {
        const int j = t + k * NORM_CL_THREADS;
        xv[k] = j < per ? x[r0 + base + j] : 0.0f;
        yv[k] = ADD && j < per ? y[r0 + base + j] : 0.0f;
    }
    float scale;
    if (PRE) {
        // One exchange: Σy² (the branch norm's), and Σx², Σx·u, Σu² (u = y·pw) for the added
        // row's (see above). Values past `per` are zeros and add nothing.
        double sv[4] = {0.0, 0.0, 0.0, 0.0};
#pragma unroll
        for (int k = 0; k < NORM_CL_VALUES; ++k) {
            const double u = (double)yv[k] * (double)pv[k], xd = (double)xv[k];
            sv[0] += (double)(yv[k] * yv[k]);
            sv[1] += xd * xd;
            sv[2] += xd * u;
            sv[3] += u * u;
        }
        cluster_sums(sv, slots);
        const float ys = rms_scale(sv[0], dim, peps);
        const double yd = (double)ys;
        scale = rms_scale(fmax(sv[1] + 2.0 * yd * sv[2] + yd * yd * sv[3], 0.0), dim, eps);
#pragma unroll
        for (int k = 0; k < NORM_CL_VALUES; ++k) {
            const int j = t + k * NORM_CL_THREADS;
            yv[k] = __fmul_rn(__fmul_rn(yv[k], ys), pv[k]);
            xv[k] = __fadd_rn(xv[k], yv[k]);
            if (j < per) {
                y[r0 + base + j] = yv[k];
                x[r0 + base + j] = xv[k];
            }
        }
    } else {
        double sv[1] = {0.0};
#pragma unroll
        for (int k = 0; k < NORM_CL_VALUES; ++k) {
            const int j = t + k * NORM_CL_THREADS;
            if (ADD) {
                xv[k] = __fadd_rn(xv[k], yv[k]);
                if (j < per) x[r0 + base + j] = xv[k];
            }
            sv[0] += (double)(xv[k] * xv[k]);
        }
        cluster_sums(sv, slots);
        scale = rms_scale(sv[0], dim, eps);
    }
#pragma unroll
    for (int k = 0; k < NORM_CL_VALUES; ++k) {
        const int j = t + k * NORM_CL_THREADS;
        // Whole warps: per and NORM_CL_THREADS are multiples of 32, so a warp holds the 32
        // values of one q8_1 block.
        if (j < per) {
            float v = __fmul_rn(xv[k], scale);
            v = w ? __fmul_rn(v, wv[k]) : v;
            out[r0 + base + j] = v;
            quantize_lane_q8(v, r0 + base + j, q, ds);
        }
    }
    hop_signal(sig);
#endif
}

extern "C" __global__ void __launch_bounds__(NORM_CL_THREADS, NORM_CL_MIN_BLOCKS)
    rmsnorm_q8_cl(const float* x, const float* __restrict__ w, float* out, int dim, float eps, i8* __restrict__ q,
                  float2* __restrict__ ds, u32* sig) {
    cl_norm_row<false, false>(const_cast<float*>(x), nullptr, w, out, dim, eps, q, ds, nullptr, 0.0f, sig);
}

extern "C" __global__ void __launch_bounds__(NORM_CL_THREADS, NORM_CL_MIN_BLOCKS)
    add_rmsnorm_q8_cl(float* x, const float* __restrict__ y, const float* __restrict__ w, float* out, int dim,
                      float eps, i8* __restrict__ q, float2* __restrict__ ds, u32* sig) {
    cl_norm_row<true, false>(x, const_cast<float*>(y), w, out, dim, eps, q, ds, nullptr, 0.0f, sig);
}

extern "C" __global__ void __launch_bounds__(NORM_CL_THREADS, NORM_CL_MIN_BLOCKS)
    norm_add_rmsnorm_q8_cl(float* x, float* y, const float* __restrict__ pw, float peps, const float* __restrict__ w,
                           float* out, int dim, float eps, i8* __restrict__ q, float2* __restrict__ ds, u32* sig) {
    cl_norm_row<true, true>(x, y, w, out, dim, eps, q, ds, pw, peps, sig);
}

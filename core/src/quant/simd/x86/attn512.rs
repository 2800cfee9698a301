//! AVX-512 attention kernels on 16 lanes: the score and value tiles of `attn` with twice
//! the width (and masked loads for the last chunk of a row instead of a scalar tail), and
//! the element-wise ones.
//!
//! A score is one chain of fused multiply-adds over 16-wide chunks, its two halves added,
//! then the tree of the AVX2 kernels; it does not depend on the tile. `vscalefps` applies
//! `2^n` in `exp` with correct overflow to `+inf` and gradual underflow.

// The register tiles index several const-size arrays in lockstep.
#![allow(clippy::needless_range_loop)]

use core::arch::x86_64::*;

use super::super::attn::{AttnKernels, F16Rows};
use super::super::exp::{C2, C3, C4, C5, C6, LN2_HI, LN2_LO, LOG2E, X_MAX, X_MIN};
use super::super::Isa;
use super::attn::{hsum4, prefetch_row, PF_ROWS};

/// The AVX-512 table.
pub(super) const AVX512: AttnKernels = AttnKernels {
    dot_tile: dot_f16_tile,
    axpy_tile: axpy_f16_tile,
    exp: exp_f32,
    exp_sum: exp_sum_f32,
    scale_round: scale_round_f16,
    isa: Isa::Avx512,
};

/// Sixteen f32s into a vector.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
fn ld16f(x: &[f32; 16]) -> __m512 {
    // SAFETY: reads exactly the 64 bytes of `x`; `loadu` has no alignment requirement.
    unsafe { _mm512_loadu_ps(x.as_ptr()) }
}

/// Sixteen lanes into `x`.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
fn st16f(x: &mut [f32; 16], v: __m512) {
    // SAFETY: writes exactly the 64 bytes of `x`; `storeu` has no alignment requirement.
    unsafe { _mm512_storeu_ps(x.as_mut_ptr(), v) }
}

/// The mask of the first `n` lanes (all for `n ≥ 16`).
#[inline(always)]
fn lanes(n: usize) -> __mmask16 {
    if n >= 16 {
        0xffff
    } else {
        ((1u32 << n) - 1) as __mmask16
    }
}

/// Up to sixteen f16s from the front of `h`, widened (zeros past its end).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
fn ldh(h: &[u16]) -> __m512 {
    let m = lanes(h.len());
    // SAFETY: the mask selects only the first `min(16, h.len())` lanes, which lie inside
    // `h`; masked-off lanes are not read (masked loads suppress their faults).
    _mm512_cvtph_ps(unsafe { _mm256_maskz_loadu_epi16(m, h.as_ptr().cast()) })
}

/// Up to sixteen f32s from the front of `x` (zeros past its end).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
fn ldf(x: &[f32]) -> __m512 {
    // SAFETY: as in `ldh`.
    unsafe { _mm512_maskz_loadu_ps(lanes(x.len()), x.as_ptr()) }
}

/// Stores up to sixteen lanes at the front of `x` (as many as it holds).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
fn stf(x: &mut [f32], v: __m512) {
    // SAFETY: the mask selects only lanes inside `x`; masked-off lanes are not written.
    unsafe { _mm512_mask_storeu_ps(x.as_mut_ptr(), lanes(x.len()), v) }
}

/// The two 256-bit halves of `v` added.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
fn halves(v: __m512) -> __m256 {
    let lo = _mm512_castps512_ps256(v);
    let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v)));
    _mm256_add_ps(lo, hi)
}

/// The scores of `KT` (4 or 1) key rows from `j` against `QT` queries.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
fn tile<const KT: usize, const QT: usize>(
    k: &F16Rows<'_>,
    j: usize,
    q: &[f32],
    out: &mut [f32],
    o_stride: usize,
) {
    let d = k.width;
    let mut kr: [&[u16]; KT] = [&[]; KT];
    for (t, r) in kr.iter_mut().enumerate() {
        *r = &k.data[(j + t) * k.stride..][..d];
    }
    let mut qr: [&[f32]; QT] = [&[]; QT];
    for (u, r) in qr.iter_mut().enumerate() {
        *r = &q[u * d..][..d];
    }
    for t in 0..KT {
        prefetch_row(k.data, j + t + PF_ROWS, k.stride, d);
    }
    let mut acc = [[_mm512_setzero_ps(); QT]; KT];
    for c in (0..d).step_by(16) {
        let mut kv = [_mm512_setzero_ps(); KT];
        for t in 0..KT {
            kv[t] = ldh(&kr[t][c..]);
        }
        for u in 0..QT {
            let qv = ldf(&qr[u][c..]);
            for t in 0..KT {
                acc[t][u] = _mm512_fmadd_ps(kv[t], qv, acc[t][u]);
            }
        }
    }
    let z = _mm256_setzero_ps();
    for u in 0..QT {
        let mut h = [z; 4];
        for t in 0..KT {
            h[t] = halves(acc[t][u]);
        }
        let s = hsum4(h[0], h[1], h[2], h[3]);
        let o = &mut out[u * o_stride + j..][..KT];
        if let Some(o4) = o.first_chunk_mut::<4>() {
            // SAFETY: writes exactly the 16 bytes of `o4`; `storeu` has no alignment
            // requirement.
            unsafe { _mm_storeu_ps(o4.as_mut_ptr(), s) };
        } else {
            o[0] = _mm_cvtss_f32(s);
        }
    }
}

/// Every key row against `QT` queries, four rows at a time.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
fn queries<const QT: usize>(k: &F16Rows<'_>, q: &[f32], out: &mut [f32], o_stride: usize) {
    let mut j = 0;
    while j + 4 <= k.rows {
        tile::<4, QT>(k, j, q, out, o_stride);
        j += 4;
    }
    while j < k.rows {
        tile::<1, QT>(k, j, q, out, o_stride);
        j += 1;
    }
}

/// See `DotTileFn`.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
pub(super) fn dot_f16_tile(k: F16Rows<'_>, q: &[f32], out: &mut [f32], o_stride: usize) {
    let d = k.width;
    if d == 0 {
        return;
    }
    let nq = q.len() / d;
    let mut i = 0;
    while i < nq {
        let (qs, os) = (&q[i * d..], &mut out[i * o_stride..]);
        let step = (nq - i).min(4);
        match step {
            1 => queries::<1>(&k, qs, os, o_stride),
            2 => queries::<2>(&k, qs, os, o_stride),
            3 => queries::<3>(&k, qs, os, o_stride),
            _ => queries::<4>(&k, qs, os, o_stride),
        }
        i += step;
    }
}

/// `OT` outputs over columns `c0..c0 + cw` (`cw ≤ 16·CT`) of every row.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
fn vcols<const OT: usize, const CT: usize>(
    v: &F16Rows<'_>,
    w: [&[f32]; OT],
    (c0, cw): (usize, usize),
    out: &mut [f32],
    o_stride: usize,
) {
    let mut acc = [[_mm512_setzero_ps(); CT]; OT];
    for o in 0..OT {
        let row = &out[o * o_stride + c0..][..cw];
        for c in 0..CT {
            acc[o][c] = ldf(row.get(16 * c..).unwrap_or(&[]));
        }
    }
    for j in 0..v.rows {
        prefetch_row(&v.data[c0..], j + PF_ROWS, v.stride, cw);
        let row = &v.data[j * v.stride + c0..][..cw];
        let mut vv = [_mm512_setzero_ps(); CT];
        for c in 0..CT {
            vv[c] = ldh(row.get(16 * c..).unwrap_or(&[]));
        }
        for o in 0..OT {
            let wb = _mm512_set1_ps(w[o][j]);
            for c in 0..CT {
                acc[o][c] = _mm512_fmadd_ps(wb, vv[c], acc[o][c]);
            }
        }
    }
    for o in 0..OT {
        let row = &mut out[o * o_stride + c0..][..cw];
        for c in 0..CT {
            if let Some(dst) = row.get_mut(16 * c..) {
                stf(dst, acc[o][c]);
            }
        }
    }
}

/// `OT` outputs over every column: 64 at a time, then 32, then 16, then the rest masked.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
fn outputs<const OT: usize>(v: &F16Rows<'_>, w: [&[f32]; OT], out: &mut [f32], o_stride: usize) {
    let width = v.width;
    let mut c0 = 0;
    while c0 + 64 <= width {
        vcols::<OT, 4>(v, w, (c0, 64), out, o_stride);
        c0 += 64;
    }
    if c0 + 32 <= width {
        vcols::<OT, 2>(v, w, (c0, 32), out, o_stride);
        c0 += 32;
    }
    while c0 < width {
        let cw = (width - c0).min(16);
        vcols::<OT, 1>(v, w, (c0, cw), out, o_stride);
        c0 += cw;
    }
}

/// See `AxpyTileFn`.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
pub(super) fn axpy_f16_tile(
    v: F16Rows<'_>,
    w: &[f32],
    w_stride: usize,
    out: &mut [f32],
    o_stride: usize,
    n: usize,
) {
    let wrow = |i: usize| &w[i * w_stride..][..v.rows];
    let mut i = 0;
    while i < n {
        let os = &mut out[i * o_stride..];
        let step = (n - i).min(4);
        match step {
            1 => outputs::<1>(&v, [wrow(i)], os, o_stride),
            2 => outputs::<2>(&v, [wrow(i), wrow(i + 1)], os, o_stride),
            3 => outputs::<3>(&v, [wrow(i), wrow(i + 1), wrow(i + 2)], os, o_stride),
            _ => {
                let ws = [wrow(i), wrow(i + 1), wrow(i + 2), wrow(i + 3)];
                outputs::<4>(&v, ws, os, o_stride);
            }
        }
        i += step;
    }
}

/// `e^x` on sixteen lanes (see `quant::simd::exp`).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
fn exp16(x: __m512) -> __m512 {
    // `max` / `min` return their second operand when either is NaN: NaN goes through.
    let x = _mm512_max_ps(_mm512_set1_ps(X_MIN), x);
    let x = _mm512_min_ps(_mm512_set1_ps(X_MAX), x);
    let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
        _mm512_mul_ps(x, _mm512_set1_ps(LOG2E)),
    );
    let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_HI), x);
    let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_LO), r);
    let q = _mm512_fmadd_ps(_mm512_set1_ps(C6), r, _mm512_set1_ps(C5));
    let q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(C4));
    let q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(C3));
    let q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(C2));
    let t = _mm512_fmadd_ps(_mm512_mul_ps(r, r), q, r);
    let p = _mm512_add_ps(t, _mm512_set1_ps(1.0));
    _mm512_scalef_ps(p, n)
}

/// Applies `f` to `x` sixteen lanes at a time; the tail goes through `f` in a buffer padded
/// with `pad`, so every element is computed the same way.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
fn map16(x: &mut [f32], pad: f32, mut f: impl FnMut(__m512) -> __m512) {
    let (body, tail) = x.as_chunks_mut::<16>();
    for c in body {
        let r = f(ld16f(c));
        st16f(c, r);
    }
    if !tail.is_empty() {
        let mut buf = [pad; 16];
        let n = tail.len();
        buf[..n].copy_from_slice(tail);
        let r = f(ld16f(&buf));
        st16f(&mut buf, r);
        tail.copy_from_slice(&buf[..n]);
    }
}

/// See `ExpFn`.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
pub(super) fn exp_f32(x: &mut [f32]) {
    map16(x, 0.0, |v| exp16(v));
}

/// See `ExpSumFn`: lane sums, the two halves added, then the tree of the AVX2 kernels.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
pub(super) fn exp_sum_f32(x: &mut [f32], m: f32) -> f32 {
    let mv = _mm512_set1_ps(m);
    let mut acc = _mm512_setzero_ps();
    // Padding lanes are -inf: e^-inf = 0 adds nothing.
    map16(x, f32::NEG_INFINITY, |v| {
        let e = exp16(_mm512_sub_ps(v, mv));
        acc = _mm512_add_ps(acc, e);
        e
    });
    super::attn::hsum1(halves(acc))
}

/// See `ScaleRoundFn`.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
pub(super) fn scale_round_f16(x: &mut [f32], s: f32) {
    let sv = _mm512_set1_ps(s);
    map16(x, 0.0, |v| {
        let h = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
            _mm512_mul_ps(v, sv),
        );
        _mm512_cvtph_ps(h)
    });
}

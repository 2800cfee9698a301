//! AVX2 + FMA + F16C attention kernels: score tiles (f16 keys × f32 queries), value tiles
//! (weights × f16 values into f32 outputs), and the softmax's `exp`.
//!
//! Score tiles keep `KT × QT` accumulators in registers (each key chunk is widened once for
//! `QT` queries, each query chunk loaded once for `KT` keys). Every accumulator is one chain
//! of fused multiply-adds over the 8-wide chunks, reduced by the same tree ([`hsum4`]), so a
//! score does not depend on the tile it was computed in. Value tiles keep `OT` outputs × 16
//! columns in registers while the rows stream past.

// The register tiles index several const-size arrays in lockstep.
#![allow(clippy::needless_range_loop)]

use core::arch::x86_64::*;

use half::f16;

use super::super::attn::{AttnKernels, F16Rows};
use super::super::exp::{C2, C3, C4, C5, C6, LN2_HI, LN2_LO, LOG2E, X_MAX, X_MIN};
use super::super::Isa;
use super::avx2::ld8f;

/// The AVX2 table.
pub(super) const AVX2: AttnKernels = AttnKernels {
    dot_tile: dot_f16_tile,
    axpy_tile: axpy_f16_tile,
    exp: exp_f32,
    exp_sum: exp_sum_f32,
    scale_round: scale_round_f16,
    isa: Isa::Avx2,
};

/// Eight f16 bit patterns widened to f32 (exact).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn cvt8(h: &[u16; 8]) -> __m256 {
    // SAFETY: reads exactly the 16 bytes of `h`; `loadu` has no alignment requirement.
    _mm256_cvtph_ps(unsafe { _mm_loadu_si128(h.as_ptr().cast()) })
}

/// Stores eight lanes.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn st8f(x: &mut [f32; 8], v: __m256) {
    // SAFETY: writes exactly the 32 bytes of `x`; `storeu` has no alignment requirement.
    unsafe { _mm256_storeu_ps(x.as_mut_ptr(), v) }
}

/// `[T(a), T(b), T(c), T(d)]` with `T(v) = ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7))`.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn hsum4(a: __m256, b: __m256, c: __m256, d: __m256) -> __m128 {
    let ab = _mm256_hadd_ps(a, b);
    let cd = _mm256_hadd_ps(c, d);
    let abcd = _mm256_hadd_ps(ab, cd);
    _mm_add_ps(
        _mm256_castps256_ps128(abcd),
        _mm256_extractf128_ps::<1>(abcd),
    )
}

/// `T` of [`hsum4`] for one vector.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn hsum1(a: __m256) -> f32 {
    let z = _mm256_setzero_ps();
    _mm_cvtss_f32(hsum4(a, z, z, z))
}

/// Eight f32s from the front of `x` (zeros where it is shorter).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn ld8(x: &[f32]) -> __m256 {
    match x.first_chunk::<8>() {
        Some(c) => ld8f(c),
        None => _mm256_setzero_ps(),
    }
}

/// Eight f16s from the front of `h`, widened (zeros where it is shorter).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn ld8h(h: &[u16]) -> __m256 {
    match h.first_chunk::<8>() {
        Some(c) => cvt8(c),
        None => _mm256_setzero_ps(),
    }
}

/// Stores eight lanes at the front of `x` (nothing where it is shorter).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn st8(x: &mut [f32], v: __m256) {
    if let Some(c) = x.first_chunk_mut::<8>() {
        st8f(c, v);
    }
}

/// Rows ahead of the one being read that the score and value loops prefetch (within the run
/// they were given). A decode row reads a layer's keys and values once, from memory, at a
/// stride of all the KV heads, which the hardware prefetchers alone follow poorly: with 16,
/// SmolLM2's decode attention at 576 positions went from 82 to 53–61 µs a layer
/// (`glimmer bench --profile`, 2 threads); 4, 8 and 32 did no better than 16 in a scratch
/// timing of the kernels alone.
pub(super) const PF_ROWS: usize = 16;

/// Hints the cache to fetch `width` units of row `row` of `data` (`stride` units a row).
#[inline(always)]
pub(super) fn prefetch_row(data: &[u16], row: usize, stride: usize, width: usize) {
    if row * stride >= data.len() {
        return;
    }
    let p = data.as_ptr().wrapping_add(row * stride).cast::<i8>();
    let mut off = 0;
    while off < width * 2 {
        // SAFETY: a prefetch is only a hint: it cannot fault or change memory at any
        // address, and `wrapping_add` makes the address without claiming it is in bounds.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(off)) };
        off += 64;
    }
}

/// The scores of `KT` key rows (from `j`) against `QT` queries.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn tile<const KT: usize, const QT: usize>(
    k: &F16Rows<'_>,
    j: usize,
    q: &[f32],
    out: &mut [f32],
    o_stride: usize,
) {
    let d = k.width;
    let n8 = d / 8;
    let mut kr: [&[[u16; 8]]; KT] = [&[]; KT];
    let mut kt: [&[u16]; KT] = [&[]; KT];
    for t in 0..KT {
        (kr[t], kt[t]) = k.data[(j + t) * k.stride..][..d].as_chunks::<8>();
        prefetch_row(k.data, j + t + PF_ROWS, k.stride, d);
    }
    let mut qr: [&[[f32; 8]]; QT] = [&[]; QT];
    let mut qt: [&[f32]; QT] = [&[]; QT];
    for u in 0..QT {
        (qr[u], qt[u]) = q[u * d..][..d].as_chunks::<8>();
    }
    let mut acc = [[_mm256_setzero_ps(); QT]; KT];
    for c in 0..n8 {
        let mut kv = [_mm256_setzero_ps(); KT];
        for t in 0..KT {
            kv[t] = cvt8(&kr[t][c]);
        }
        for u in 0..QT {
            let qv = ld8f(&qr[u][c]);
            for t in 0..KT {
                acc[t][u] = _mm256_fmadd_ps(kv[t], qv, acc[t][u]);
            }
        }
    }
    // Reduce four accumulators at a time (the last group padded with zeros).
    let mut flat = [_mm256_setzero_ps(); 16];
    for t in 0..KT {
        for u in 0..QT {
            flat[t * QT + u] = acc[t][u];
        }
    }
    let mut red = [0.0f32; 16];
    for g in 0..(KT * QT).div_ceil(4) {
        let s = hsum4(
            flat[4 * g],
            flat[4 * g + 1],
            flat[4 * g + 2],
            flat[4 * g + 3],
        );
        if let Some(dst) = red[4 * g..].first_chunk_mut::<4>() {
            // SAFETY: writes exactly the 16 bytes of `dst`; `storeu` has no alignment
            // requirement.
            unsafe { _mm_storeu_ps(dst.as_mut_ptr(), s) };
        }
    }
    for t in 0..KT {
        for u in 0..QT {
            let mut s = red[t * QT + u];
            for (&kb, &qv) in kt[t].iter().zip(qt[u]) {
                s += f16::from_bits(kb).to_f32() * qv;
            }
            out[u * o_stride + j + t] = s;
        }
    }
}

/// Every key row against `QT` queries, `KT` rows at a time.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn queries<const KT: usize, const QT: usize>(
    k: &F16Rows<'_>,
    q: &[f32],
    out: &mut [f32],
    o_stride: usize,
) {
    let mut j = 0;
    while j + KT <= k.rows {
        tile::<KT, QT>(k, j, q, out, o_stride);
        j += KT;
    }
    while j < k.rows {
        tile::<1, QT>(k, j, q, out, o_stride);
        j += 1;
    }
}

/// See `DotTileFn`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn dot_f16_tile(k: F16Rows<'_>, q: &[f32], out: &mut [f32], o_stride: usize) {
    let d = k.width;
    if d == 0 {
        return;
    }
    let nq = q.len() / d;
    let mut i = 0;
    while i < nq {
        let (qs, os) = (&q[i * d..], &mut out[i * o_stride..]);
        let step = match nq - i {
            1 => {
                queries::<4, 1>(&k, qs, os, o_stride);
                1
            }
            2 => {
                queries::<4, 2>(&k, qs, os, o_stride);
                2
            }
            3 => {
                queries::<4, 3>(&k, qs, os, o_stride);
                3
            }
            _ => {
                queries::<3, 4>(&k, qs, os, o_stride);
                4
            }
        };
        i += step;
    }
}

/// `OT` outputs over columns `c0..c0 + 8·CT` of every row.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn vcols<const OT: usize, const CT: usize>(
    v: &F16Rows<'_>,
    w: [&[f32]; OT],
    c0: usize,
    out: &mut [f32],
    o_stride: usize,
) {
    let mut acc = [[_mm256_setzero_ps(); CT]; OT];
    for o in 0..OT {
        for c in 0..CT {
            acc[o][c] = ld8(&out[o * o_stride + c0 + 8 * c..]);
        }
    }
    for j in 0..v.rows {
        prefetch_row(&v.data[c0..], j + PF_ROWS, v.stride, 8 * CT);
        let row = &v.data[j * v.stride + c0..][..8 * CT];
        let mut vv = [_mm256_setzero_ps(); CT];
        for c in 0..CT {
            vv[c] = ld8h(&row[8 * c..]);
        }
        for o in 0..OT {
            let wb = _mm256_set1_ps(w[o][j]);
            for c in 0..CT {
                acc[o][c] = _mm256_fmadd_ps(wb, vv[c], acc[o][c]);
            }
        }
    }
    for o in 0..OT {
        for c in 0..CT {
            st8(&mut out[o * o_stride + c0 + 8 * c..], acc[o][c]);
        }
    }
}

/// `OT` outputs over every column.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn outputs<const OT: usize>(v: &F16Rows<'_>, w: [&[f32]; OT], out: &mut [f32], o_stride: usize) {
    let width = v.width;
    let mut c0 = 0;
    while c0 + 16 <= width {
        vcols::<OT, 2>(v, w, c0, out, o_stride);
        c0 += 16;
    }
    if c0 + 8 <= width {
        vcols::<OT, 1>(v, w, c0, out, o_stride);
        c0 += 8;
    }
    if c0 < width {
        for (o, wo) in w.iter().enumerate() {
            let dst = &mut out[o * o_stride + c0..o * o_stride + width];
            for (j, &wj) in wo.iter().enumerate().take(v.rows) {
                let src = &v.data[j * v.stride + c0..j * v.stride + width];
                for (d, &s) in dst.iter_mut().zip(src) {
                    *d += wj * f16::from_bits(s).to_f32();
                }
            }
        }
    }
}

/// See `AxpyTileFn`.
#[target_feature(enable = "avx2,fma,f16c")]
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
        let step = match n - i {
            1 => {
                outputs::<1>(&v, [wrow(i)], os, o_stride);
                1
            }
            2 => {
                outputs::<2>(&v, [wrow(i), wrow(i + 1)], os, o_stride);
                2
            }
            3 => {
                outputs::<3>(&v, [wrow(i), wrow(i + 1), wrow(i + 2)], os, o_stride);
                3
            }
            _ => {
                let ws = [wrow(i), wrow(i + 1), wrow(i + 2), wrow(i + 3)];
                outputs::<4>(&v, ws, os, o_stride);
                4
            }
        };
        i += step;
    }
}

/// `e^x` on eight lanes (see `quant::simd::exp`).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn exp8(x: __m256) -> __m256 {
    // `max` / `min` return their second operand when either is NaN: NaN goes through.
    let x = _mm256_max_ps(_mm256_set1_ps(X_MIN), x);
    let x = _mm256_min_ps(_mm256_set1_ps(X_MAX), x);
    let n = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(
        x,
        _mm256_set1_ps(LOG2E),
    ));
    let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_HI), x);
    let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_LO), r);
    let q = _mm256_fmadd_ps(_mm256_set1_ps(C6), r, _mm256_set1_ps(C5));
    let q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(C4));
    let q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(C3));
    let q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(C2));
    let t = _mm256_fmadd_ps(_mm256_mul_ps(r, r), q, r);
    let p = _mm256_add_ps(t, _mm256_set1_ps(1.0));
    let ni = _mm256_cvtps_epi32(n);
    let e1 = _mm256_srai_epi32::<1>(ni);
    let e2 = _mm256_sub_epi32(ni, e1);
    let bias = _mm256_set1_epi32(127);
    let s1 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(e1, bias)));
    let s2 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(e2, bias)));
    _mm256_mul_ps(_mm256_mul_ps(p, s1), s2)
}

/// Applies `f` to `x` eight lanes at a time; the tail goes through `f` in a buffer padded
/// with `pad`, so every element is computed the same way.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn map8(x: &mut [f32], pad: f32, mut f: impl FnMut(__m256) -> __m256) {
    let (body, tail) = x.as_chunks_mut::<8>();
    for c in body {
        let r = f(ld8f(c));
        st8f(c, r);
    }
    if !tail.is_empty() {
        let mut buf = [pad; 8];
        buf[..tail.len()].copy_from_slice(tail);
        let r = f(ld8f(&buf));
        st8f(&mut buf, r);
        let n = tail.len();
        tail.copy_from_slice(&buf[..n]);
    }
}

/// See `ExpFn`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn exp_f32(x: &mut [f32]) {
    map8(x, 0.0, |v| exp8(v));
}

/// See `ExpSumFn`. Lane sums, then the tree of [`hsum4`].
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn exp_sum_f32(x: &mut [f32], m: f32) -> f32 {
    let mv = _mm256_set1_ps(m);
    let mut acc = _mm256_setzero_ps();
    // Padding lanes are -inf: e^-inf = 0 adds nothing.
    map8(x, f32::NEG_INFINITY, |v| {
        let e = exp8(_mm256_sub_ps(v, mv));
        acc = _mm256_add_ps(acc, e);
        e
    });
    hsum1(acc)
}

/// See `ScaleRoundFn`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn scale_round_f16(x: &mut [f32], s: f32) {
    let sv = _mm256_set1_ps(s);
    map8(x, 0.0, |v| {
        let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_mul_ps(v, sv));
        _mm256_cvtph_ps(h)
    });
}

//! AVX-512 versions of the element-wise attention kernels (`exp`, the softmax numerator and
//! the f16 rounding of weights) on 16 lanes; the tiles stay those of `attn` (AVX2).
//!
//! `vscalefps` applies `2^n` with correct overflow to `+inf` and gradual underflow, so the
//! scaling is one instruction here.

use core::arch::x86_64::*;

use super::super::attn::AttnKernels;
use super::super::exp::{C2, C3, C4, C5, C6, LN2_HI, LN2_LO, LOG2E, X_MAX, X_MIN};
use super::super::Isa;

/// The AVX-512 table.
pub(super) const AVX512: AttnKernels = AttnKernels {
    dot_tile: super::attn::dot_f16_tile,
    axpy_tile: super::attn::axpy_f16_tile,
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
    let lo = _mm512_castps512_ps256(acc);
    let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(acc)));
    super::attn::hsum1(_mm256_add_ps(lo, hi))
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

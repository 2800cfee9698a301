//! AVX2 activation quantizers (Q8_0, Q8_1, Q8_K), byte-identical to the scalar ones.
//!
//! The scalar code defines the bytes, so the vector code redoes its exact f32 operations
//! (the same divisions, one multiply per element, round half to even) and its edge cases:
//! NaN inputs are skipped by the max and quantize to 0, and a product that overflows (a
//! block maximum so small that `127 / amax` is infinite) saturates to -128 / 127.

use core::arch::x86_64::*;

use super::super::super::blocks::{BlockQ8K, BlockQ8_0, BlockQ8_1, F16Le, F32Le, I16Le, QK_K};
use super::avx2::{ld8f, st32i};

/// The largest lane.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn hmax(v: __m256) -> f32 {
    let s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_max_ss(s, _mm_movehdup_ps(s));
    _mm_cvtss_f32(s)
}

/// `max(m, |v|)` per lane, keeping `m` where `v` is NaN (`maxps` returns its second operand
/// when either is NaN), as the scalar `if v.abs() > m` does.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn max_abs(m: __m256, v: __m256) -> __m256 {
    _mm256_max_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0), v), m)
}

/// The scalar `round_even(v * scale).clamp(-128, 127)` of 32 values, as 32 bytes in order.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn quant32(x: &[[f32; 8]; 4], scale: f32) -> __m256i {
    let s = _mm256_set1_ps(scale);
    let lo = _mm256_set1_ps(-128.0);
    let hi = _mm256_set1_ps(127.0);
    let i: [__m256i; 4] = core::array::from_fn(|k| {
        let p = _mm256_mul_ps(ld8f(&x[k]), s);
        // Clamp keeping NaN (each op returns its second operand on NaN), then NaN -> 0.
        let p = _mm256_min_ps(hi, _mm256_max_ps(lo, p));
        let p = _mm256_and_ps(p, _mm256_cmp_ps::<_CMP_ORD_Q>(p, p));
        // The default MXCSR rounding is to nearest, ties to even.
        _mm256_cvtps_epi32(p)
    });
    // The packs work per 128-bit half; afterwards 4-byte group g holds elements
    // 8 * (g % 4) + 4 * (g / 4) ..; the permutation puts them back in order.
    let a = _mm256_packs_epi32(i[0], i[1]);
    let b = _mm256_packs_epi32(i[2], i[3]);
    let c = _mm256_packs_epi16(a, b);
    _mm256_permutevar8x32_epi32(c, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
}

/// The sums of the low and high 16 bytes of `q`.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn sums16(q: __m256i) -> (i32, i32) {
    let t = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q);
    let t = _mm256_madd_epi16(t, _mm256_set1_epi16(1));
    let t = _mm256_hadd_epi32(t, t);
    let t = _mm256_hadd_epi32(t, t);
    (_mm256_extract_epi32::<0>(t), _mm256_extract_epi32::<4>(t))
}

/// f32 → f16, ties to even (as `F16Le::from_f32`).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn to_f16(x: f32) -> F16Le {
    let h = _mm_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm_set_ss(x));
    F16Le((_mm_extract_epi16::<0>(h) as u16).to_le_bytes())
}

/// One Q8_0-style activation block: writes the quants, returns `(d, quants)`.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q8_32(x: &[f32; 32], qs: &mut [i8; 32]) -> (f32, __m256i) {
    let xs: &[[f32; 8]; 4] = bytemuck::cast_ref(x);
    let mut m = _mm256_setzero_ps();
    for v in xs {
        m = max_abs(m, ld8f(v));
    }
    let amax = hmax(m);
    let d = amax / 127.0;
    let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
    let q = quant32(xs, id);
    st32i(qs, q);
    (d, q)
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q8_0(x: &[f32; 32], b: &mut BlockQ8_0) {
    let (d, _) = q8_32(x, &mut b.qs);
    b.d = to_f16(d);
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q8_1(x: &[f32; 32], b: &mut BlockQ8_1) {
    let (d, q) = q8_32(x, &mut b.qs);
    let (s0, s1) = sums16(q);
    b.d = to_f16(d);
    b.s = to_f16((s0 + s1) as f32 * d);
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q8_k(x: &[f32; QK_K], b: &mut BlockQ8K) {
    let xs: &[[f32; 8]; 32] = bytemuck::cast_ref(x);
    let mut m = _mm256_setzero_ps();
    for v in xs {
        m = max_abs(m, ld8f(v));
    }
    let amax = hmax(m);
    if amax == 0.0 {
        b.d = F32Le::new(0.0);
        b.qs = [0; QK_K];
        b.bsums = [I16Le::new(0); QK_K / 16];
        return;
    }
    // The scalar quantizer scales by the first value of largest magnitude, sign included.
    let sign = _mm256_set1_ps(-0.0);
    let am = _mm256_set1_ps(amax);
    let mut max = amax;
    for v in xs {
        let hit = _mm256_cmp_ps::<_CMP_EQ_OQ>(_mm256_andnot_ps(sign, ld8f(v)), am);
        let bits = _mm256_movemask_ps(hit);
        if bits != 0 {
            max = v[(bits.trailing_zeros() & 7) as usize];
            break;
        }
    }
    let iscale = -127.0 / max;
    let xq: &[[[f32; 8]; 4]; 8] = bytemuck::cast_ref(x);
    let qs: &mut [[i8; 32]; 8] = bytemuck::cast_mut(&mut b.qs);
    let bsums: &mut [[I16Le; 2]; 8] = bytemuck::cast_mut(&mut b.bsums);
    for ((x, qs), bs) in xq.iter().zip(qs.iter_mut()).zip(bsums.iter_mut()) {
        let q = quant32(x, iscale);
        st32i(qs, q);
        let (s0, s1) = sums16(q);
        // Sixteen quants of at most 128 in magnitude: fits i16.
        *bs = [I16Le::new(s0 as i16), I16Le::new(s1 as i16)];
    }
    b.d = F32Le::new(1.0 / iscale);
}

quant_entry!("avx2,fma,f16c", quant_q8_0, BlockQ8_0, 32, q8_0);
quant_entry!("avx2,fma,f16c", quant_q8_1, BlockQ8_1, 32, q8_1);
quant_entry!("avx2,fma,f16c", quant_q8_k, BlockQ8K, 256, q8_k);

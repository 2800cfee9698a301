//! NEON activation quantizers (Q8_0, Q8_1, Q8_K), byte-identical to the scalar ones.
//!
//! `fcvtns` rounds to nearest with ties to even, gives 0 for NaN and saturates, and the
//! saturating narrows clamp to `i8`: together exactly the scalar `round_even(..).clamp(..)`
//! (they differ from it only above 2^22, where both clamp). NaN inputs are masked out of
//! the maximum, as the scalar `if v.abs() > m` skips them. Scales are converted to f16 by
//! the same code as the scalar quantizers.

use core::arch::aarch64::*;

use super::super::super::blocks::{BlockQ8K, BlockQ8_0, BlockQ8_1, F16Le, F32Le, I16Le, QK_K};
use super::neon::{ld4f, st16i};

/// `|v|` per lane, with NaN lanes made 0.
#[target_feature(enable = "neon")]
#[inline]
fn abs_or_zero(v: float32x4_t) -> float32x4_t {
    let a = vreinterpretq_u32_f32(vabsq_f32(v));
    vreinterpretq_f32_u32(vandq_u32(a, vceqq_f32(v, v)))
}

/// The largest `|x|` of the non-NaN values (0 if none).
#[target_feature(enable = "neon")]
#[inline]
fn amax<const N: usize>(x: &[[f32; 4]; N]) -> f32 {
    let mut m = vdupq_n_f32(0.0);
    for v in x {
        m = vmaxq_f32(m, abs_or_zero(ld4f(v)));
    }
    vmaxvq_f32(m)
}

/// `round_even(v * scale).clamp(-128, 127)` of 16 values.
#[target_feature(enable = "neon")]
#[inline]
fn quant16(x: &[[f32; 4]; 4], scale: f32) -> int8x16_t {
    let i: [int32x4_t; 4] =
        core::array::from_fn(|k| vcvtnq_s32_f32(vmulq_n_f32(ld4f(&x[k]), scale)));
    let lo = vcombine_s16(vqmovn_s32(i[0]), vqmovn_s32(i[1]));
    let hi = vcombine_s16(vqmovn_s32(i[2]), vqmovn_s32(i[3]));
    vcombine_s8(vqmovn_s16(lo), vqmovn_s16(hi))
}

/// One Q8_0-style activation block: writes the quants, returns `d` and the quants' sum.
#[target_feature(enable = "neon")]
#[inline]
fn q8_32(x: &[f32; 32], qs: &mut [i8; 32]) -> (f32, i32) {
    let xs: &[[[f32; 4]; 4]; 2] = bytemuck::cast_ref(x);
    let amax = amax(bytemuck::cast_ref::<_, [[f32; 4]; 8]>(x));
    let d = amax / 127.0;
    let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
    let qs: &mut [[i8; 16]; 2] = bytemuck::cast_mut(qs);
    let mut sum = 0i32;
    for (x, qs) in xs.iter().zip(qs.iter_mut()) {
        let q = quant16(x, id);
        st16i(qs, q);
        sum += i32::from(vaddlvq_s8(q));
    }
    (d, sum)
}

#[target_feature(enable = "neon")]
#[inline]
fn q8_0(x: &[f32; 32], b: &mut BlockQ8_0) {
    let (d, _) = q8_32(x, &mut b.qs);
    b.d = F16Le::from_f32(d);
}

#[target_feature(enable = "neon")]
#[inline]
fn q8_1(x: &[f32; 32], b: &mut BlockQ8_1) {
    let (d, sum) = q8_32(x, &mut b.qs);
    b.d = F16Le::from_f32(d);
    b.s = F16Le::from_f32(sum as f32 * d);
}

#[target_feature(enable = "neon")]
#[inline]
fn q8_k(x: &[f32; QK_K], b: &mut BlockQ8K) {
    let x4: &[[f32; 4]; 64] = bytemuck::cast_ref(x);
    let amax = amax(x4);
    if amax == 0.0 {
        b.d = F32Le::new(0.0);
        b.qs = [0; QK_K];
        b.bsums = [I16Le::new(0); QK_K / 16];
        return;
    }
    // The scalar quantizer scales by the first value of largest magnitude, sign included.
    let am = vdupq_n_f32(amax);
    let mut max = amax;
    for v in x4 {
        if vmaxvq_u32(vceqq_f32(vabsq_f32(ld4f(v)), am)) != 0 {
            if let Some(&m) = v.iter().find(|v| v.abs() == amax) {
                max = m;
            }
            break;
        }
    }
    let iscale = -127.0 / max;
    let xs: &[[[f32; 4]; 4]; 16] = bytemuck::cast_ref(x);
    let qs: &mut [[i8; 16]; 16] = bytemuck::cast_mut(&mut b.qs);
    for ((x, qs), bs) in xs.iter().zip(qs.iter_mut()).zip(b.bsums.iter_mut()) {
        let q = quant16(x, iscale);
        st16i(qs, q);
        *bs = I16Le::new(vaddlvq_s8(q));
    }
    b.d = F32Le::new(1.0 / iscale);
}

quant_entry!("neon", quant_q8_0, BlockQ8_0, 32, q8_0);
quant_entry!("neon", quant_q8_1, BlockQ8_1, 32, q8_1);
quant_entry!("neon", quant_q8_k, BlockQ8K, 256, q8_k);

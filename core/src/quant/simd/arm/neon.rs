//! NEON building blocks, and the 32-element formats (Q4_0, Q4_1, Q5_0, Q8_0) as a macro body.
//!
//! The kernels in [`neon_dot32`] use the tier's `dot16` (an exact `i8 × i8` dot of 16
//! bytes, summed by 4 into `i32` lanes) and `dot16s` (the same when every weight byte is in
//! `-64..=64`, which lets the plain tier skip a widening step).
//!
//! Each block's integer sum is reduced across lanes and scaled exactly as the scalar kernel
//! writes it, so these kernels give the scalar results bit for bit.

use core::arch::aarch64::*;
use core::arch::asm;

use super::super::super::blocks::F16Le;

/// 16 bytes into a vector.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn ld16(b: &[u8; 16]) -> uint8x16_t {
    // SAFETY: reads exactly the 16 bytes of `b`; `vld1q` has no alignment requirement.
    unsafe { vld1q_u8(b.as_ptr()) }
}

/// 16 signed bytes into a vector.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn ld16i(b: &[i8; 16]) -> int8x16_t {
    // SAFETY: reads exactly the 16 bytes of `b`; `vld1q` has no alignment requirement.
    unsafe { vld1q_s8(b.as_ptr()) }
}

/// Four f32s into a vector.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn ld4f(x: &[f32; 4]) -> float32x4_t {
    // SAFETY: reads exactly the 16 bytes of `x`; `vld1q` has no alignment requirement.
    unsafe { vld1q_f32(x.as_ptr()) }
}

/// 16 bytes from a vector.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn st16i(b: &mut [i8; 16], v: int8x16_t) {
    // SAFETY: writes exactly the 16 bytes of `b`; `vst1q` has no alignment requirement.
    unsafe { vst1q_s8(b.as_mut_ptr(), v) }
}

/// The two 16-byte halves of a 32-byte array.
#[inline(always)]
pub(super) fn halves(b: &[i8; 32]) -> &[[i8; 16]; 2] {
    bytemuck::cast_ref(b)
}

/// Widens four f16 values to f32 (exact; `fcvtl` is base AArch64 SIMD).
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn f16x4_to_f32(h: uint16x4_t) -> float32x4_t {
    let out: float32x4_t;
    // SAFETY: `fcvtl` only reads and writes the named vector registers.
    unsafe {
        asm!(
            "fcvtl {o:v}.4s, {i:v}.4h",
            o = lateout(vreg) out,
            i = in(vreg) h,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    out
}

/// An f16 value as f32 (exact, as `F16Le::to_f32`).
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn f16(h: F16Le) -> f32 {
    vgetq_lane_f32::<0>(f16x4_to_f32(vdup_n_u16(u16::from_le_bytes(h.0))))
}

/// The 32 nibbles of a Q4 block in element order (elements 0-15, then 16-31).
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn nib32(qs: &[u8; 16]) -> (int8x16_t, int8x16_t) {
    let x = ld16(qs);
    (
        vreinterpretq_s8_u8(vandq_u8(x, vdupq_n_u8(0x0f))),
        vreinterpretq_s8_u8(vshrq_n_u8::<4>(x)),
    )
}

/// Byte `j` (of 32) is `0x10` where bit `j` of the little-endian `qh` is set, else 0.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn hbits32(qh: [u8; 4]) -> (uint8x16_t, uint8x16_t) {
    let v = vreinterpretq_u8_u32(vdupq_n_u32(u32::from_le_bytes(qh)));
    let idx_lo = vcombine_u8(vdup_n_u8(0), vdup_n_u8(1));
    let idx_hi = vcombine_u8(vdup_n_u8(2), vdup_n_u8(3));
    let bit = vreinterpretq_u8_u64(vdupq_n_u64(0x8040_2010_0804_0201));
    let m = vdupq_n_u8(0x10);
    (
        vandq_u8(vtstq_u8(vqtbl1q_u8(v, idx_lo), bit), m),
        vandq_u8(vtstq_u8(vqtbl1q_u8(v, idx_hi), bit), m),
    )
}

/// The 32-element kernels and their `RowsFn` entries (`q4_0_rows` … `q8_0_rows`), compiled
/// for `$feat` with the calling module's `dot16` / `dot16s`.
macro_rules! neon_dot32 {
    ($feat:literal) => {
        /// Q4_0 · Q8_0: `sum((q - 8) · a) · (d_w · d_a)` per block.
        #[target_feature(enable = $feat)]
        #[inline]
        fn q4_0<const R: usize>(w: [&[BlockQ4_0]; R], a: &[BlockQ8_0], _pf: usize) -> [f32; R] {
            let mut acc = [0.0f32; R];
            if w.iter().all(|r| r.len() == a.len()) {
                let eight = vdupq_n_s8(8);
                for (i, y) in a.iter().enumerate() {
                    let [a0, a1] = halves(&y.qs);
                    let (a0, a1) = (ld16i(a0), ld16i(a1));
                    let da = f16(y.d);
                    for (acc, w) in acc.iter_mut().zip(&w) {
                        let x = &w[i];
                        let (lo, hi) = nib32(&x.qs);
                        let p = dot16s(vdupq_n_s32(0), vsubq_s8(lo, eight), a0);
                        let p = dot16s(p, vsubq_s8(hi, eight), a1);
                        *acc += vaddvq_s32(p) as f32 * (f16(x.d) * da);
                    }
                }
            }
            acc
        }

        /// Q4_1 · Q8_1: `(d_w · d_a) · sum(q · a) + m_w · s_a` per block.
        #[target_feature(enable = $feat)]
        #[inline]
        fn q4_1<const R: usize>(w: [&[BlockQ4_1]; R], a: &[BlockQ8_1], _pf: usize) -> [f32; R] {
            let mut acc = [0.0f32; R];
            if w.iter().all(|r| r.len() == a.len()) {
                for (i, y) in a.iter().enumerate() {
                    let [a0, a1] = halves(&y.qs);
                    let (a0, a1) = (ld16i(a0), ld16i(a1));
                    let (da, sa) = (f16(y.d), f16(y.s));
                    for (acc, w) in acc.iter_mut().zip(&w) {
                        let x = &w[i];
                        let (lo, hi) = nib32(&x.qs);
                        let p = dot16s(dot16s(vdupq_n_s32(0), lo, a0), hi, a1);
                        *acc += (f16(x.d) * da) * vaddvq_s32(p) as f32 + f16(x.m) * sa;
                    }
                }
            }
            acc
        }

        /// Q5_0 · Q8_0: `sum((q - 16) · a) · (d_w · d_a)` per block.
        #[target_feature(enable = $feat)]
        #[inline]
        fn q5_0<const R: usize>(w: [&[BlockQ5_0]; R], a: &[BlockQ8_0], _pf: usize) -> [f32; R] {
            let mut acc = [0.0f32; R];
            if w.iter().all(|r| r.len() == a.len()) {
                let sixteen = vdupq_n_s8(16);
                for (i, y) in a.iter().enumerate() {
                    let [a0, a1] = halves(&y.qs);
                    let (a0, a1) = (ld16i(a0), ld16i(a1));
                    let da = f16(y.d);
                    for (acc, w) in acc.iter_mut().zip(&w) {
                        let x = &w[i];
                        let (lo, hi) = nib32(&x.qs);
                        let (hlo, hhi) = hbits32(x.qh);
                        let lo = vsubq_s8(vorrq_s8(lo, vreinterpretq_s8_u8(hlo)), sixteen);
                        let hi = vsubq_s8(vorrq_s8(hi, vreinterpretq_s8_u8(hhi)), sixteen);
                        let p = dot16s(dot16s(vdupq_n_s32(0), lo, a0), hi, a1);
                        *acc += vaddvq_s32(p) as f32 * (f16(x.d) * da);
                    }
                }
            }
            acc
        }

        /// Q8_0 · Q8_0: `sum(q · a) · (d_w · d_a)` per block.
        #[target_feature(enable = $feat)]
        #[inline]
        fn q8_0<const R: usize>(w: [&[BlockQ8_0]; R], a: &[BlockQ8_0], _pf: usize) -> [f32; R] {
            let mut acc = [0.0f32; R];
            if w.iter().all(|r| r.len() == a.len()) {
                for (i, y) in a.iter().enumerate() {
                    let [a0, a1] = halves(&y.qs);
                    let (a0, a1) = (ld16i(a0), ld16i(a1));
                    let da = f16(y.d);
                    for (acc, w) in acc.iter_mut().zip(&w) {
                        let x = &w[i];
                        let [w0, w1] = halves(&x.qs);
                        let p = dot16(dot16(vdupq_n_s32(0), ld16i(w0), a0), ld16i(w1), a1);
                        *acc += vaddvq_s32(p) as f32 * (f16(x.d) * da);
                    }
                }
            }
            acc
        }

        rows_entry!($feat, q4_0_rows, BlockQ4_0, BlockQ8_0, q4_0, 4);
        rows_entry!($feat, q4_1_rows, BlockQ4_1, BlockQ8_1, q4_1, 4);
        rows_entry!($feat, q5_0_rows, BlockQ5_0, BlockQ8_0, q5_0, 4);
        rows_entry!($feat, q8_0_rows, BlockQ8_0, BlockQ8_0, q8_0, 4);
    };
}
pub(super) use neon_dot32;

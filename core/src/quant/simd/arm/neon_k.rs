//! The K-quant kernels (Q4_K, Q5_K, Q6_K against Q8_K) as a macro body for the NEON tiers.
//!
//! Per 16 elements the tier's `dot16s` sums `q · a` into `i32` lanes, which are multiplied
//! by the sub-block scale (`mla` by a scalar) and reduced once per super-block; the result is
//! then scaled exactly as the scalar kernel writes it. Q6_K subtracts its offset from the
//! quants (`q - 32` fits `i8`), so unlike the x86 kernels it does not read the block sums.

use core::arch::aarch64::*;

use super::super::super::blocks::I16Le;

/// `sum(m_j · (bsums[2j] + bsums[2j + 1]))`, exactly in `i32` for any sums.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn k4_mins(bsums: &[I16Le; 16], mins: u64) -> i32 {
    let [b0, b1] = bytemuck::cast_ref::<[I16Le; 16], [[u8; 16]; 2]>(bsums);
    let p0 = vpaddlq_s16(vreinterpretq_s16_u8(super::neon::ld16(b0)));
    let p1 = vpaddlq_s16(vreinterpretq_s16_u8(super::neon::ld16(b1)));
    let m = vmovl_u8(vcreate_u8(mins));
    let m0 = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(m)));
    let m1 = vreinterpretq_s32_u32(vmovl_high_u16(m));
    vaddvq_s32(vmlaq_s32(vmulq_s32(m0, p0), m1, p1))
}

/// The K-quant kernels and their `RowsFn` entries (`q4_k_rows`, `q5_k_rows`, `q6_k_rows`),
/// compiled for `$feat` with the calling module's `dot16s`.
macro_rules! neon_dotk {
    ($feat:literal) => {
        /// Q4_K · Q8_K.
        #[target_feature(enable = $feat)]
        #[inline]
        fn q4_k<const R: usize>(w: [&[BlockQ4K]; R], a: &[BlockQ8K], _pf: usize) -> [f32; R] {
            let mut acc = [0.0f32; R];
            if w.iter().all(|r| r.len() == a.len()) {
                let m4 = vdupq_n_u8(0x0f);
                for (i, y) in a.iter().enumerate() {
                    let ach: &[[i8; 16]; 16] = bytemuck::cast_ref(&y.qs);
                    let da = y.d.get();
                    for (acc, w) in acc.iter_mut().zip(&w) {
                        let x = &w[i];
                        let (sc, mn) = scales_mins_k4(&x.scales);
                        let sc = sc.to_le_bytes();
                        let qch: &[[u8; 16]; 8] = bytemuck::cast_ref(&x.qs);
                        let mut sumi = vdupq_n_s32(0);
                        for c in 0..4 {
                            let (q0, q1) = (ld16(&qch[2 * c]), ld16(&qch[2 * c + 1]));
                            let lo0 = vreinterpretq_s8_u8(vandq_u8(q0, m4));
                            let lo1 = vreinterpretq_s8_u8(vandq_u8(q1, m4));
                            let hi0 = vreinterpretq_s8_u8(vshrq_n_u8::<4>(q0));
                            let hi1 = vreinterpretq_s8_u8(vshrq_n_u8::<4>(q1));
                            let z = vdupq_n_s32(0);
                            let plo = dot16s(
                                dot16s(z, lo0, ld16i(&ach[4 * c])),
                                lo1,
                                ld16i(&ach[4 * c + 1]),
                            );
                            let phi = dot16s(
                                dot16s(z, hi0, ld16i(&ach[4 * c + 2])),
                                hi1,
                                ld16i(&ach[4 * c + 3]),
                            );
                            sumi = vmlaq_n_s32(sumi, plo, i32::from(sc[2 * c]));
                            sumi = vmlaq_n_s32(sumi, phi, i32::from(sc[2 * c + 1]));
                        }
                        let mins = k4_mins(&y.bsums, mn);
                        *acc += f16(x.d) * da * vaddvq_s32(sumi) as f32;
                        *acc -= f16(x.dmin) * da * mins as f32;
                    }
                }
            }
            acc
        }

        /// Q5_K · Q8_K: as Q4_K, with bit `j` of `qh[l]` added as 16 to element `32j + l`.
        #[target_feature(enable = $feat)]
        #[inline]
        fn q5_k<const R: usize>(w: [&[BlockQ5K]; R], a: &[BlockQ8K], _pf: usize) -> [f32; R] {
            let mut acc = [0.0f32; R];
            if w.iter().all(|r| r.len() == a.len()) {
                let m4 = vdupq_n_u8(0x0f);
                let m10 = vdupq_n_u8(0x10);
                for (i, y) in a.iter().enumerate() {
                    let ach: &[[i8; 16]; 16] = bytemuck::cast_ref(&y.qs);
                    let da = y.d.get();
                    for (acc, w) in acc.iter_mut().zip(&w) {
                        let x = &w[i];
                        let (sc, mn) = scales_mins_k4(&x.scales);
                        let sc = sc.to_le_bytes();
                        let qch: &[[u8; 16]; 8] = bytemuck::cast_ref(&x.qs);
                        let [h0, h1] = bytemuck::cast_ref::<[u8; 32], [[u8; 16]; 2]>(&x.qh);
                        let (mut h0, mut h1) = (ld16(h0), ld16(h1));
                        let mut sumi = vdupq_n_s32(0);
                        for c in 0..4 {
                            let (q0, q1) = (ld16(&qch[2 * c]), ld16(&qch[2 * c + 1]));
                            // Bits 2c and 2c + 1 of the qh bytes, moved to bit 4.
                            let lo0 =
                                vorrq_u8(vandq_u8(q0, m4), vandq_u8(vshlq_n_u8::<4>(h0), m10));
                            let lo1 =
                                vorrq_u8(vandq_u8(q1, m4), vandq_u8(vshlq_n_u8::<4>(h1), m10));
                            let hi0 =
                                vorrq_u8(vshrq_n_u8::<4>(q0), vandq_u8(vshlq_n_u8::<3>(h0), m10));
                            let hi1 =
                                vorrq_u8(vshrq_n_u8::<4>(q1), vandq_u8(vshlq_n_u8::<3>(h1), m10));
                            h0 = vshrq_n_u8::<2>(h0);
                            h1 = vshrq_n_u8::<2>(h1);
                            let z = vdupq_n_s32(0);
                            let (lo0, lo1) = (vreinterpretq_s8_u8(lo0), vreinterpretq_s8_u8(lo1));
                            let (hi0, hi1) = (vreinterpretq_s8_u8(hi0), vreinterpretq_s8_u8(hi1));
                            let plo = dot16s(
                                dot16s(z, lo0, ld16i(&ach[4 * c])),
                                lo1,
                                ld16i(&ach[4 * c + 1]),
                            );
                            let phi = dot16s(
                                dot16s(z, hi0, ld16i(&ach[4 * c + 2])),
                                hi1,
                                ld16i(&ach[4 * c + 3]),
                            );
                            sumi = vmlaq_n_s32(sumi, plo, i32::from(sc[2 * c]));
                            sumi = vmlaq_n_s32(sumi, phi, i32::from(sc[2 * c + 1]));
                        }
                        let mins = k4_mins(&y.bsums, mn);
                        *acc += f16(x.d) * da * vaddvq_s32(sumi) as f32;
                        *acc -= f16(x.dmin) * da * mins as f32;
                    }
                }
            }
            acc
        }

        /// Q6_K · Q8_K: `sum(scale · (q - 32) · a)` per super-block.
        #[target_feature(enable = $feat)]
        #[inline]
        fn q6_k<const R: usize>(w: [&[BlockQ6K]; R], a: &[BlockQ8K], _pf: usize) -> [f32; R] {
            let mut acc = [0.0f32; R];
            if w.iter().all(|r| r.len() == a.len()) {
                let m4 = vdupq_n_u8(0x0f);
                let m30 = vdupq_n_u8(0x30);
                let off = vdupq_n_s8(32);
                for (i, y) in a.iter().enumerate() {
                    let ach: &[[i8; 16]; 16] = bytemuck::cast_ref(&y.qs);
                    let da = y.d.get();
                    for (acc, w) in acc.iter_mut().zip(&w) {
                        let x = &w[i];
                        let ql: &[[u8; 16]; 8] = bytemuck::cast_ref(&x.ql);
                        let qh: &[[u8; 16]; 4] = bytemuck::cast_ref(&x.qh);
                        let mut sumi = vdupq_n_s32(0);
                        for h in 0..2 {
                            let l0 = ld16(&ql[4 * h]);
                            let l1 = ld16(&ql[4 * h + 1]);
                            let l2 = ld16(&ql[4 * h + 2]);
                            let l3 = ld16(&ql[4 * h + 3]);
                            let h0 = ld16(&qh[2 * h]);
                            let h1 = ld16(&qh[2 * h + 1]);
                            let q = [
                                vorrq_u8(vandq_u8(l0, m4), vandq_u8(vshlq_n_u8::<4>(h0), m30)),
                                vorrq_u8(vandq_u8(l1, m4), vandq_u8(vshlq_n_u8::<4>(h1), m30)),
                                vorrq_u8(vandq_u8(l2, m4), vandq_u8(vshlq_n_u8::<2>(h0), m30)),
                                vorrq_u8(vandq_u8(l3, m4), vandq_u8(vshlq_n_u8::<2>(h1), m30)),
                                vorrq_u8(vshrq_n_u8::<4>(l0), vandq_u8(h0, m30)),
                                vorrq_u8(vshrq_n_u8::<4>(l1), vandq_u8(h1, m30)),
                                vorrq_u8(vshrq_n_u8::<4>(l2), vandq_u8(vshrq_n_u8::<2>(h0), m30)),
                                vorrq_u8(vshrq_n_u8::<4>(l3), vandq_u8(vshrq_n_u8::<2>(h1), m30)),
                            ];
                            for (k, q) in q.into_iter().enumerate() {
                                let q = vsubq_s8(vreinterpretq_s8_u8(q), off);
                                let p = dot16s(vdupq_n_s32(0), q, ld16i(&ach[8 * h + k]));
                                sumi = vmlaq_n_s32(sumi, p, i32::from(x.scales[8 * h + k]));
                            }
                        }
                        *acc += f16(x.d) * da * vaddvq_s32(sumi) as f32;
                    }
                }
            }
            acc
        }

        rows_entry!($feat, q4_k_rows, BlockQ4K, BlockQ8K, q4_k, 4);
        rows_entry!($feat, q5_k_rows, BlockQ5K, BlockQ8K, q5_k, 4);
        rows_entry!($feat, q6_k_rows, BlockQ6K, BlockQ8K, q6_k, 4);
    };
}
pub(super) use neon_dotk;

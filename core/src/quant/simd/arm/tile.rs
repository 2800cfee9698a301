//! Register-blocked tile kernels for the NEON tiers, as macro bodies expanded next to
//! [`neon_dot32`](super::neon::neon_dot32) and [`neon_dotk`](super::neon_k::neon_dotk).
//!
//! Per block index, `R` weight blocks are unpacked once and `C` activation blocks loaded
//! once (see `simd::tile`). The NEON `dot_rows` kernels reduce each block (or super-block)
//! to an exact integer and scale it with scalar f32 steps; each pair here computes the same
//! integer and takes the same scalar steps in the same order, so every output is
//! bit-identical to `dot_rows` (and so to the scalar kernels).

/// The 32-element tile kernels and their `TileFn` entries (`q4_0_tile` … `q8_0_tile`) with
/// `$r × $c` register blocks, compiled for `$feat` with the calling module's `dot16` /
/// `dot16s`.
macro_rules! neon_tile32 {
    ($feat:literal, $r:literal, $c:literal) => {
        /// The two halves of an activation block and its scale as f32.
        #[target_feature(enable = $feat)]
        #[inline]
        fn act8(y: &BlockQ8_0) -> (int8x16_t, int8x16_t, f32) {
            let [a0, a1] = halves(&y.qs);
            (ld16i(a0), ld16i(a1), f16(y.d))
        }

        /// `acc[r][c] += sum(q_r · a_c) · (d_r · d_c)` per block, with `wq` giving a weight
        /// block's quants (minus its offset) and scale: the Q4_0 / Q5_0 / Q8_0 pair steps.
        #[target_feature(enable = $feat)]
        #[inline]
        fn tile_q8<T, const R: usize, const C: usize, const S: bool>(
            w: [&[T]; R],
            a: [&[BlockQ8_0]; C],
            wq: impl Fn(&T) -> (int8x16_t, int8x16_t, f32),
        ) -> [[f32; C]; R] {
            let mut acc = [[0.0f32; C]; R];
            let nb = a.first().map_or(0, |r| r.len());
            if w.iter().all(|r| r.len() == nb) && a.iter().all(|r| r.len() == nb) {
                for i in 0..nb {
                    let x: [(int8x16_t, int8x16_t, f32); R] =
                        core::array::from_fn(|r| wq(&w[r][i]));
                    for (c, a) in a.iter().enumerate() {
                        let (a0, a1, da) = act8(&a[i]);
                        for (acc, &(lo, hi, dw)) in acc.iter_mut().zip(&x) {
                            let z = vdupq_n_s32(0);
                            let p = if S {
                                dot16s(dot16s(z, lo, a0), hi, a1)
                            } else {
                                dot16(dot16(z, lo, a0), hi, a1)
                            };
                            acc[c] += vaddvq_s32(p) as f32 * (dw * da);
                        }
                    }
                }
            }
            acc
        }

        /// Q4_0 · Q8_0 on `R × C` rows (see `q4_0`).
        #[target_feature(enable = $feat)]
        #[inline]
        fn q4_0_t<const R: usize, const C: usize>(
            w: [&[BlockQ4_0]; R],
            a: [&[BlockQ8_0]; C],
        ) -> [[f32; C]; R] {
            let eight = vdupq_n_s8(8);
            tile_q8::<_, R, C, true>(w, a, |x| {
                let (lo, hi) = nib32(&x.qs);
                (vsubq_s8(lo, eight), vsubq_s8(hi, eight), f16(x.d))
            })
        }

        /// Q5_0 · Q8_0 on `R × C` rows (see `q5_0`).
        #[target_feature(enable = $feat)]
        #[inline]
        fn q5_0_t<const R: usize, const C: usize>(
            w: [&[BlockQ5_0]; R],
            a: [&[BlockQ8_0]; C],
        ) -> [[f32; C]; R] {
            let sixteen = vdupq_n_s8(16);
            tile_q8::<_, R, C, true>(w, a, |x| {
                let (lo, hi) = nib32(&x.qs);
                let (hlo, hhi) = hbits32(x.qh);
                let lo = vsubq_s8(vorrq_s8(lo, vreinterpretq_s8_u8(hlo)), sixteen);
                let hi = vsubq_s8(vorrq_s8(hi, vreinterpretq_s8_u8(hhi)), sixteen);
                (lo, hi, f16(x.d))
            })
        }

        /// Q8_0 · Q8_0 on `R × C` rows (see `q8_0`).
        #[target_feature(enable = $feat)]
        #[inline]
        fn q8_0_t<const R: usize, const C: usize>(
            w: [&[BlockQ8_0]; R],
            a: [&[BlockQ8_0]; C],
        ) -> [[f32; C]; R] {
            tile_q8::<_, R, C, false>(w, a, |x| act8(x))
        }

        /// Q4_1 · Q8_1 on `R × C` rows (see `q4_1`).
        #[target_feature(enable = $feat)]
        #[inline]
        fn q4_1_t<const R: usize, const C: usize>(
            w: [&[BlockQ4_1]; R],
            a: [&[BlockQ8_1]; C],
        ) -> [[f32; C]; R] {
            let mut acc = [[0.0f32; C]; R];
            let nb = a.first().map_or(0, |r| r.len());
            if w.iter().all(|r| r.len() == nb) && a.iter().all(|r| r.len() == nb) {
                for i in 0..nb {
                    let x: [(int8x16_t, int8x16_t, f32, f32); R] = core::array::from_fn(|r| {
                        let x = &w[r][i];
                        let (lo, hi) = nib32(&x.qs);
                        (lo, hi, f16(x.d), f16(x.m))
                    });
                    for (c, a) in a.iter().enumerate() {
                        let y = &a[i];
                        let [a0, a1] = halves(&y.qs);
                        let (a0, a1) = (ld16i(a0), ld16i(a1));
                        let (da, sa) = (f16(y.d), f16(y.s));
                        for (acc, &(lo, hi, dw, mw)) in acc.iter_mut().zip(&x) {
                            let p = dot16s(dot16s(vdupq_n_s32(0), lo, a0), hi, a1);
                            acc[c] += (dw * da) * vaddvq_s32(p) as f32 + mw * sa;
                        }
                    }
                }
            }
            acc
        }

        tile_entry!($feat, q4_0_tile, BlockQ4_0, BlockQ8_0, q4_0_t, $r, $c);
        tile_entry!($feat, q4_1_tile, BlockQ4_1, BlockQ8_1, q4_1_t, $r, $c);
        tile_entry!($feat, q5_0_tile, BlockQ5_0, BlockQ8_0, q5_0_t, $r, $c);
        tile_entry!($feat, q8_0_tile, BlockQ8_0, BlockQ8_0, q8_0_t, $r, $c);
    };
}
pub(super) use neon_tile32;

/// The K-quant tile kernels and their `TileFn` entries (`q4_k_tile`, `q5_k_tile`,
/// `q6_k_tile`) with `$r × $c` register blocks, compiled for `$feat` with the calling
/// module's `dot16s`.
macro_rules! neon_tilek {
    ($feat:literal, $r:literal, $c:literal) => {
        /// `sumi[r][c] += sc_r · (q_r · a_c)` for one 32-element group (two 16-byte halves
        /// of quants per weight row, two of activations per activation row): the group step
        /// of `q4_k` / `q5_k`.
        #[target_feature(enable = $feat)]
        #[inline]
        fn k_group32<const R: usize, const C: usize>(
            sumi: &mut [[int32x4_t; C]; R],
            q: &[(int8x16_t, int8x16_t, i32); R],
            a: [(int8x16_t, int8x16_t); C],
        ) {
            for (c, (a0, a1)) in a.into_iter().enumerate() {
                for (s, &(q0, q1, sc)) in sumi.iter_mut().zip(q) {
                    let p = dot16s(dot16s(vdupq_n_s32(0), q0, a0), q1, a1);
                    s[c] = vmlaq_n_s32(s[c], p, sc);
                }
            }
        }

        /// Q4_K (`H = false`) or Q5_K (`H = true`, with `qh`) on `R × C` rows; `blk(r, i)`
        /// gives the fields of weight block `i` of row `r` (`qh` unused when `H` is false).
        #[target_feature(enable = $feat)]
        #[inline]
        fn k45_t<'w, const R: usize, const C: usize, const H: bool>(
            nb: usize,
            blk: impl Fn(usize, usize) -> K45<'w>,
            a: [&[BlockQ8K]; C],
        ) -> [[f32; C]; R] {
            let mut acc = [[0.0f32; C]; R];
            let m4 = vdupq_n_u8(0x0f);
            let m10 = vdupq_n_u8(0x10);
            for i in 0..nb {
                let x: [K45<'w>; R] = core::array::from_fn(|r| blk(r, i));
                let sm: [(u64, u64); R] = core::array::from_fn(|r| scales_mins_k4(x[r].scales));
                let mut hv: [(uint8x16_t, uint8x16_t); R] = core::array::from_fn(|r| {
                    let [h0, h1] = bytemuck::cast_ref::<[u8; 32], [[u8; 16]; 2]>(x[r].qh);
                    (ld16(h0), ld16(h1))
                });
                let mut sumi = [[vdupq_n_s32(0); C]; R];
                for ch in 0..4 {
                    let acts = |g: usize| -> [(int8x16_t, int8x16_t); C] {
                        core::array::from_fn(|c| {
                            let ach: &[[i8; 16]; 16] = bytemuck::cast_ref(&a[c][i].qs);
                            (ld16i(&ach[2 * g]), ld16i(&ach[2 * g + 1]))
                        })
                    };
                    let mut lo = [(vdupq_n_s8(0), vdupq_n_s8(0), 0); R];
                    let mut hi = lo;
                    for (r, (lo, hi)) in lo.iter_mut().zip(&mut hi).enumerate() {
                        let qch: &[[u8; 16]; 8] = bytemuck::cast_ref(x[r].qs);
                        let (q0, q1) = (ld16(&qch[2 * ch]), ld16(&qch[2 * ch + 1]));
                        let (mut l0, mut l1) = (vandq_u8(q0, m4), vandq_u8(q1, m4));
                        let (mut h0, mut h1) = (vshrq_n_u8::<4>(q0), vshrq_n_u8::<4>(q1));
                        if H {
                            // Bits 2ch and 2ch + 1 of the qh bytes, moved to bit 4.
                            let (b0, b1) = hv[r];
                            l0 = vorrq_u8(l0, vandq_u8(vshlq_n_u8::<4>(b0), m10));
                            l1 = vorrq_u8(l1, vandq_u8(vshlq_n_u8::<4>(b1), m10));
                            h0 = vorrq_u8(h0, vandq_u8(vshlq_n_u8::<3>(b0), m10));
                            h1 = vorrq_u8(h1, vandq_u8(vshlq_n_u8::<3>(b1), m10));
                            hv[r] = (vshrq_n_u8::<2>(b0), vshrq_n_u8::<2>(b1));
                        }
                        let sc = sm[r].0.to_le_bytes();
                        let s8 = |v: uint8x16_t| vreinterpretq_s8_u8(v);
                        *lo = (s8(l0), s8(l1), i32::from(sc[2 * ch]));
                        *hi = (s8(h0), s8(h1), i32::from(sc[2 * ch + 1]));
                    }
                    k_group32(&mut sumi, &lo, acts(2 * ch));
                    k_group32(&mut sumi, &hi, acts(2 * ch + 1));
                }
                for (c, a) in a.iter().enumerate() {
                    let y = &a[i];
                    let da = y.d.get();
                    for (((acc, sumi), x), &(_, mn)) in acc.iter_mut().zip(&sumi).zip(&x).zip(&sm) {
                        let mins = k4_mins(&y.bsums, mn);
                        acc[c] += f16(x.d) * da * vaddvq_s32(sumi[c]) as f32;
                        acc[c] -= f16(x.dmin) * da * mins as f32;
                    }
                }
            }
            acc
        }

        /// Q4_K · Q8_K on `R × C` rows (see `q4_k`).
        #[target_feature(enable = $feat)]
        #[inline]
        fn q4_k_t<const R: usize, const C: usize>(
            w: [&[BlockQ4K]; R],
            a: [&[BlockQ8K]; C],
        ) -> [[f32; C]; R] {
            const NO_QH: [u8; 32] = [0; 32];
            let nb = a.first().map_or(0, |r| r.len());
            if !(w.iter().all(|r| r.len() == nb) && a.iter().all(|r| r.len() == nb)) {
                return [[0.0; C]; R];
            }
            let blk = |r: usize, i: usize| {
                let x = &w[r][i];
                K45 {
                    d: x.d,
                    dmin: x.dmin,
                    scales: &x.scales,
                    qs: &x.qs,
                    qh: &NO_QH,
                }
            };
            k45_t::<R, C, false>(nb, blk, a)
        }

        /// Q5_K · Q8_K on `R × C` rows (see `q5_k`).
        #[target_feature(enable = $feat)]
        #[inline]
        fn q5_k_t<const R: usize, const C: usize>(
            w: [&[BlockQ5K]; R],
            a: [&[BlockQ8K]; C],
        ) -> [[f32; C]; R] {
            let nb = a.first().map_or(0, |r| r.len());
            if !(w.iter().all(|r| r.len() == nb) && a.iter().all(|r| r.len() == nb)) {
                return [[0.0; C]; R];
            }
            let blk = |r: usize, i: usize| {
                let x = &w[r][i];
                K45 {
                    d: x.d,
                    dmin: x.dmin,
                    scales: &x.scales,
                    qs: &x.qs,
                    qh: &x.qh,
                }
            };
            k45_t::<R, C, true>(nb, blk, a)
        }

        /// Q6_K · Q8_K on `R × C` rows (see `q6_k`).
        #[target_feature(enable = $feat)]
        #[inline]
        fn q6_k_t<const R: usize, const C: usize>(
            w: [&[BlockQ6K]; R],
            a: [&[BlockQ8K]; C],
        ) -> [[f32; C]; R] {
            let mut acc = [[0.0f32; C]; R];
            let nb = a.first().map_or(0, |r| r.len());
            if w.iter().all(|r| r.len() == nb) && a.iter().all(|r| r.len() == nb) {
                let m4 = vdupq_n_u8(0x0f);
                let m30 = vdupq_n_u8(0x30);
                let off = vdupq_n_s8(32);
                for i in 0..nb {
                    let x: [&BlockQ6K; R] = core::array::from_fn(|r| &w[r][i]);
                    let mut sumi = [[vdupq_n_s32(0); C]; R];
                    // Group g = 8h + k (16 quants), as `q6_k`: low bits from ql[4h + k % 4]
                    // (low or high nibble by k / 4), high bits from qh[2h + k % 2] (bits
                    // 2 · (k / 2) and up, moved to bits 4-5).
                    for g in 0..16 {
                        let (h, k) = (g / 8, g % 8);
                        let q: [(int8x16_t, i32); R] = core::array::from_fn(|r| {
                            let ql: &[[u8; 16]; 8] = bytemuck::cast_ref(&x[r].ql);
                            let qh: &[[u8; 16]; 4] = bytemuck::cast_ref(&x[r].qh);
                            let l = ld16(&ql[4 * h + k % 4]);
                            let hb = ld16(&qh[2 * h + k % 2]);
                            let lq = if k < 4 {
                                vandq_u8(l, m4)
                            } else {
                                vshrq_n_u8::<4>(l)
                            };
                            let hq = match k / 2 {
                                0 => vshlq_n_u8::<4>(hb),
                                1 => vshlq_n_u8::<2>(hb),
                                2 => hb,
                                _ => vshrq_n_u8::<2>(hb),
                            };
                            let q = vorrq_u8(lq, vandq_u8(hq, m30));
                            let q = vsubq_s8(vreinterpretq_s8_u8(q), off);
                            (q, i32::from(x[r].scales[g]))
                        });
                        for (c, a) in a.iter().enumerate() {
                            let ach: &[[i8; 16]; 16] = bytemuck::cast_ref(&a[i].qs);
                            let av = ld16i(&ach[g]);
                            for (s, &(q, sc)) in sumi.iter_mut().zip(&q) {
                                let p = dot16s(vdupq_n_s32(0), q, av);
                                s[c] = vmlaq_n_s32(s[c], p, sc);
                            }
                        }
                    }
                    for (c, a) in a.iter().enumerate() {
                        let da = a[i].d.get();
                        for ((acc, sumi), x) in acc.iter_mut().zip(&sumi).zip(&x) {
                            acc[c] += f16(x.d) * da * vaddvq_s32(sumi[c]) as f32;
                        }
                    }
                }
            }
            acc
        }

        tile_entry!($feat, q4_k_tile, BlockQ4K, BlockQ8K, q4_k_t, $r, $c);
        tile_entry!($feat, q5_k_tile, BlockQ5K, BlockQ8K, q5_k_t, $r, $c);
        tile_entry!($feat, q6_k_tile, BlockQ6K, BlockQ8K, q6_k_t, $r, $c);
    };
}
pub(super) use neon_tilek;

/// The fields of one Q4_K / Q5_K block that the tile kernels read (Q4_K: `qh` all zero and
/// unused).
#[derive(Clone, Copy)]
pub(super) struct K45<'a> {
    /// Super-block scale.
    pub(super) d: super::super::super::blocks::F16Le,
    /// Super-block scale of the mins.
    pub(super) dmin: super::super::super::blocks::F16Le,
    /// Packed 6-bit sub-block scales and mins.
    pub(super) scales: &'a [u8; 12],
    /// Low four bits of each quant.
    pub(super) qs: &'a [u8; 128],
    /// Fifth bit of each quant (Q5_K).
    pub(super) qh: &'a [u8; 32],
}

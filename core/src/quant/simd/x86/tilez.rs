//! Tile kernels for the zero-offset 32-element formats (Q4_0, Q5_0, Q8_0) on 512-bit
//! vectors, as a macro body expanded in the `evex` tier next to
//! [`avx2_tile32`](super::tile32::avx2_tile32).
//!
//! Two activation rows share a vector: the low 256 bits hold row `2p`, the high ones row
//! `2p + 1`, and each weight block is broadcast to both halves. Every 256-bit half then
//! takes, lane for lane, exactly the integer and f32 steps of the 256-bit kernel
//! (`p = dpbusd(-k · sum(a), w', a)`, `acc = fma(f32(p), d_w · d_a, acc)`), and the halves go
//! through the same horizontal sums, so every output is bit-identical to `dot_rows`. What
//! changes is the count of vector instructions per (weight row, activation row) pair, which
//! halves: in the 256-bit kernels those four steps per pair fill ports 0 and 1 and bound the
//! tile's speed.
//!
//! An odd number of activation rows (the remainder the tile driver passes with `C = 1`) runs
//! the 256-bit kernel.

/// The 512-bit tile kernels (`q4_0_tilez`, `q5_0_tilez`, `q8_0_tilez`) with `$r × $c`
/// register blocks (`$c` even), compiled for `$feat`; the 256-bit `q4_0_t`, `q5_0_t`,
/// `q8_0_t` must be in scope.
macro_rules! evex_tilez {
    ($feat:literal, $r:literal, $c:literal) => {
        /// Pairs of activation rows the 512-bit kernels hold at most (`C ≤ 8`).
        const ZP: usize = 4;

        /// `R × C` tile of weight blocks `W` (unpacked to `w'` by `unpack`, each with the
        /// f16 scale `scale`) against Q8_0 activations, with `k` the offset `w' - w`.
        #[target_feature(enable = $feat)]
        #[inline]
        fn tile_z<W, const R: usize, const C: usize>(
            w: [&[W]; R],
            a: [&[BlockQ8_0]; C],
            k: i8,
            unpack: impl Fn(&W) -> (__m256i, crate::quant::blocks::F16Le),
        ) -> [[f32; C]; R] {
            // The callers send odd `C` to the 256-bit kernels; `C ≤ 8` in every tier.
            assert!(C % 2 == 0 && C / 2 <= ZP);
            let mut acc = [[_mm512_setzero_ps(); ZP]; R];
            let nb = a.first().map_or(0, |r| r.len());
            if w.iter().all(|r| r.len() == nb) && a.iter().all(|r| r.len() == nb) {
                let zero = _mm512_setzero_si512();
                let kv = _mm512_set1_epi8(k);
                for i in 0..nb {
                    let mut wq = [zero; R];
                    let mut wd = [_mm512_setzero_ps(); R];
                    for ((q, d), w) in wq.iter_mut().zip(wd.iter_mut()).zip(&w) {
                        let x = &w[i];
                        prefetch_ahead(x);
                        let (q256, d16) = unpack(x);
                        *q = _mm512_broadcast_i64x4(q256);
                        *d = _mm512_cvtph_ps(_mm256_set1_epi16(i16::from_le_bytes(d16.0)));
                    }
                    for p in 0..C / 2 {
                        let (y0, y1) = (&a[2 * p][i], &a[2 * p + 1][i]);
                        let av = _mm512_inserti64x4::<1>(
                            _mm512_castsi256_si512(ld32i(&y0.qs)),
                            ld32i(&y1.qs),
                        );
                        let off = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, kv, av));
                        let dh = _mm256_set_m128i(
                            _mm_set1_epi16(i16::from_le_bytes(y1.d.0)),
                            _mm_set1_epi16(i16::from_le_bytes(y0.d.0)),
                        );
                        let da = _mm512_cvtph_ps(dh);
                        for ((acc, &q), &wd) in acc.iter_mut().zip(&wq).zip(&wd) {
                            let s = _mm512_dpbusd_epi32(off, q, av);
                            let d = _mm512_mul_ps(wd, da);
                            acc[p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), d, acc[p]);
                        }
                    }
                }
            }
            let mut halves = [[_mm256_setzero_ps(); C]; R];
            for (h, a) in halves.iter_mut().zip(&acc) {
                for p in 0..C / 2 {
                    h[2 * p] = _mm512_castps512_ps256(a[p]);
                    h[2 * p + 1] =
                        _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(a[p])));
                }
            }
            tile_sums(halves)
        }

        /// Q4_0 · Q8_0 (see `q4_0_t`).
        #[target_feature(enable = $feat)]
        #[inline]
        fn q4_0_z<const R: usize, const C: usize>(
            w: [&[BlockQ4_0]; R],
            a: [&[BlockQ8_0]; C],
        ) -> [[f32; C]; R] {
            if C % 2 == 1 {
                return q4_0_t::<R, C>(w, a);
            }
            tile_z::<_, R, C>(w, a, 8, |x: &BlockQ4_0| (nib32(&x.qs), x.d))
        }

        /// Q5_0 · Q8_0 (see `q5_0_t`).
        #[target_feature(enable = $feat)]
        #[inline]
        fn q5_0_z<const R: usize, const C: usize>(
            w: [&[BlockQ5_0]; R],
            a: [&[BlockQ8_0]; C],
        ) -> [[f32; C]; R] {
            if C % 2 == 1 {
                return q5_0_t::<R, C>(w, a);
            }
            tile_z::<_, R, C>(w, a, 16, |x: &BlockQ5_0| {
                (_mm256_or_si256(nib32(&x.qs), hbits(x.qh)), x.d)
            })
        }

        /// Q8_0 · Q8_0 (see `q8_0_t`): the weights offset to unsigned by 128.
        #[target_feature(enable = $feat)]
        #[inline]
        fn q8_0_z<const R: usize, const C: usize>(
            w: [&[BlockQ8_0]; R],
            a: [&[BlockQ8_0]; C],
        ) -> [[f32; C]; R] {
            if C % 2 == 1 {
                return q8_0_t::<R, C>(w, a);
            }
            tile_z::<_, R, C>(w, a, -128, |x: &BlockQ8_0| (q8_w(&x.qs).0, x.d))
        }

        tile_entry!($feat, q4_0_tilez, BlockQ4_0, BlockQ8_0, q4_0_z, $r, $c);
        tile_entry!($feat, q5_0_tilez, BlockQ5_0, BlockQ8_0, q5_0_z, $r, $c);
        tile_entry!($feat, q8_0_tilez, BlockQ8_0, BlockQ8_0, q8_0_z, $r, $c);
    };
}
pub(super) use evex_tilez;

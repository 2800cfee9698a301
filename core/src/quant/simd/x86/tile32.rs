//! Register-blocked tile kernels for the 32-element formats (Q4_0, Q4_1, Q5_0, Q8_0) as a
//! macro body, expanded next to [`avx2_dot32`](super::avx2::avx2_dot32) in each tier.
//!
//! Per block index, `R` weight blocks are unpacked once and `C` activation blocks loaded
//! once; each of the `R × C` pairs then takes exactly the steps of the `dot_rows` kernel of
//! the same tier (the same integer lanes, then `acc = fma(f32(p), d_w · d_a, acc)`, and the
//! same horizontal sum at the end), so every output is bit-identical to `dot_rows`.

/// The tile kernels and their `TileFn` entries (`q4_0_tile` … `q8_0_tile`) with `$r × $c`
/// register blocks, compiled for `$feat` with the calling module's `dpbusd`, `hbits`,
/// `Q8Act` / `q8_act` and `Q8W` / `q8_w` / `q8_dotw`.
macro_rules! avx2_tile32 {
    ($feat:literal, $r:literal, $c:literal) => {
        super::tile32::avx2_tile32!(@kernels $feat);
        tile_entry!($feat, q4_0_tile, BlockQ4_0, BlockQ8_0, q4_0_t, $r, $c);
        tile_entry!($feat, q4_1_tile, BlockQ4_1, BlockQ8_1, q4_1_t, $r, $c);
        tile_entry!($feat, q5_0_tile, BlockQ5_0, BlockQ8_0, q5_0_t, $r, $c);
        tile_entry!($feat, q8_0_tile, BlockQ8_0, BlockQ8_0, q8_0_t, $r, $c);
    };
    // A tier with 512-bit tiles for Q4_0, Q5_0 and Q8_0 (`tilez`) takes only the Q4_1 entry;
    // the 256-bit kernels stay, for the odd activation rows.
    ($feat:literal, $r:literal, $c:literal, zmm) => {
        super::tile32::avx2_tile32!(@kernels $feat);
        tile_entry!($feat, q4_1_tile, BlockQ4_1, BlockQ8_1, q4_1_t, $r, $c);
    };
    (@kernels $feat:literal) => {
        /// Q4_0 · Q8_0 on `R × C` rows (see `q4_0`).
        #[target_feature(enable = $feat)]
        #[inline]
        fn q4_0_t<const R: usize, const C: usize>(
            w: [&[BlockQ4_0]; R],
            a: [&[BlockQ8_0]; C],
        ) -> [[f32; C]; R] {
            let mut acc = [[_mm256_setzero_ps(); C]; R];
            let nb = a.first().map_or(0, |r| r.len());
            if w.iter().all(|r| r.len() == nb) && a.iter().all(|r| r.len() == nb) {
                let zero = _mm256_setzero_si256();
                let eight = _mm256_set1_epi8(8);
                for i in 0..nb {
                    let mut wq = [zero; R];
                    let mut wd = [_mm256_setzero_ps(); R];
                    for ((q, d), w) in wq.iter_mut().zip(wd.iter_mut()).zip(&w) {
                        let x = &w[i];
                        prefetch_ahead(x);
                        *q = nib32(&x.qs);
                        *d = f16x8(x.d);
                    }
                    for (c, a) in a.iter().enumerate() {
                        let y = &a[i];
                        let av = ld32i(&y.qs);
                        let off = _mm256_sub_epi32(zero, dpbusd(zero, eight, av));
                        let da = f16x8(y.d);
                        for ((acc, &q), &wd) in acc.iter_mut().zip(&wq).zip(&wd) {
                            let p = dpbusd(off, q, av);
                            let d = _mm256_mul_ps(wd, da);
                            acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), d, acc[c]);
                        }
                    }
                }
            }
            tile_sums(acc)
        }

        /// Q4_1 · Q8_1 on `R × C` rows (see `q4_1`). The `m_w · s_a` sums of one weight
        /// row sit in one vector, a lane per activation row, each lane taking the same
        /// rounded products and sums as lane 1 of `q4_1`.
        #[target_feature(enable = $feat)]
        #[inline]
        fn q4_1_t<const R: usize, const C: usize>(
            w: [&[BlockQ4_1]; R],
            a: [&[BlockQ8_1]; C],
        ) -> [[f32; C]; R] {
            const { assert!(C <= 8) };
            let mut acc = [[_mm256_setzero_ps(); C]; R];
            let mut accm = [_mm256_setzero_ps(); R];
            let nb = a.first().map_or(0, |r| r.len());
            if w.iter().all(|r| r.len() == nb) && a.iter().all(|r| r.len() == nb) {
                let zero = _mm256_setzero_si256();
                for i in 0..nb {
                    let mut wq = [zero; R];
                    let mut wd = [_mm256_setzero_ps(); R];
                    let mut wm = [_mm256_setzero_ps(); R];
                    for (((q, d), m), w) in wq.iter_mut().zip(&mut wd).zip(&mut wm).zip(&w) {
                        let x = &w[i];
                        prefetch_ahead(x);
                        *q = nib32(&x.qs);
                        let dm = f16x2(x.d, x.m);
                        *d = _mm256_broadcastss_ps(dm);
                        *m = _mm256_broadcastss_ps(_mm_movehdup_ps(dm));
                    }
                    // The activation sums `s_a`, lane c for row c.
                    let mut sbits = [0u16; 8];
                    for (s, a) in sbits.iter_mut().zip(&a) {
                        *s = u16::from_le_bytes(a[i].s.0);
                    }
                    let sa = _mm256_cvtph_ps(ld16(bytemuck::cast_ref(&sbits)));
                    for (accm, &m) in accm.iter_mut().zip(&wm) {
                        *accm = _mm256_add_ps(*accm, _mm256_mul_ps(m, sa));
                    }
                    for (c, a) in a.iter().enumerate() {
                        let y = &a[i];
                        let av = ld32i(&y.qs);
                        let da = f16x8(y.d);
                        for ((acc, &q), &wd) in acc.iter_mut().zip(&wq).zip(&wd) {
                            let p = dpbusd(zero, q, av);
                            let d = _mm256_mul_ps(wd, da);
                            acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), d, acc[c]);
                        }
                    }
                }
            }
            let mut out = tile_sums(acc);
            for (o, m) in out.iter_mut().zip(accm) {
                let mut ms = [0.0f32; 8];
                // SAFETY: writes exactly the 32 bytes of `ms`; no alignment requirement.
                unsafe { _mm256_storeu_ps(ms.as_mut_ptr(), m) };
                for (o, m) in o.iter_mut().zip(ms) {
                    *o += m;
                }
            }
            out
        }

        /// Q5_0 · Q8_0 on `R × C` rows (see `q5_0`).
        #[target_feature(enable = $feat)]
        #[inline]
        fn q5_0_t<const R: usize, const C: usize>(
            w: [&[BlockQ5_0]; R],
            a: [&[BlockQ8_0]; C],
        ) -> [[f32; C]; R] {
            let mut acc = [[_mm256_setzero_ps(); C]; R];
            let nb = a.first().map_or(0, |r| r.len());
            if w.iter().all(|r| r.len() == nb) && a.iter().all(|r| r.len() == nb) {
                let zero = _mm256_setzero_si256();
                let sixteen = _mm256_set1_epi8(16);
                for i in 0..nb {
                    let mut wq = [zero; R];
                    let mut wd = [_mm256_setzero_ps(); R];
                    for ((q, d), w) in wq.iter_mut().zip(wd.iter_mut()).zip(&w) {
                        let x = &w[i];
                        prefetch_ahead(x);
                        *q = _mm256_or_si256(nib32(&x.qs), hbits(x.qh));
                        *d = f16x8(x.d);
                    }
                    for (c, a) in a.iter().enumerate() {
                        let y = &a[i];
                        let av = ld32i(&y.qs);
                        let off = _mm256_sub_epi32(zero, dpbusd(zero, sixteen, av));
                        let da = f16x8(y.d);
                        for ((acc, &q), &wd) in acc.iter_mut().zip(&wq).zip(&wd) {
                            let p = dpbusd(off, q, av);
                            let d = _mm256_mul_ps(wd, da);
                            acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), d, acc[c]);
                        }
                    }
                }
            }
            tile_sums(acc)
        }

        /// Q8_0 · Q8_0 on `R × C` rows (see `q8_0`).
        #[target_feature(enable = $feat)]
        #[inline]
        fn q8_0_t<const R: usize, const C: usize>(
            w: [&[BlockQ8_0]; R],
            a: [&[BlockQ8_0]; C],
        ) -> [[f32; C]; R] {
            let mut acc = [[_mm256_setzero_ps(); C]; R];
            let nb = a.first().map_or(0, |r| r.len());
            if w.iter().all(|r| r.len() == nb) && a.iter().all(|r| r.len() == nb) {
                for i in 0..nb {
                    let wq: [Q8W; R] = core::array::from_fn(|r| {
                        prefetch_ahead(&w[r][i]);
                        q8_w(&w[r][i].qs)
                    });
                    let wd: [__m256; R] = core::array::from_fn(|r| f16x8(w[r][i].d));
                    for (c, a) in a.iter().enumerate() {
                        let y = &a[i];
                        let act = q8_act(&y.qs);
                        let da = f16x8(y.d);
                        for ((acc, q), &wd) in acc.iter_mut().zip(&wq).zip(&wd) {
                            let p = q8_dotw(q, &act);
                            let d = _mm256_mul_ps(wd, da);
                            acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), d, acc[c]);
                        }
                    }
                }
            }
            tile_sums(acc)
        }

    };
}
pub(super) use avx2_tile32;

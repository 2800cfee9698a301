//! Register-blocked tile kernels for the K-quants (Q4_K, Q5_K, Q6_K) as a macro body,
//! expanded next to [`avx2_dotk`](super::avx2_k::avx2_dotk) in each tier.
//!
//! A super-block is walked in its eight groups of 32 elements (one Q8_K activation chunk
//! each). Per group, the `R` weight rows' quants and sub-block scales are unpacked once and
//! every activation row's chunk loaded once; each pair adds `vpmaddubsw` products times the
//! scale into its own `i32` lanes, as `dot_rows` does (integer sums, so the order of the
//! groups does not matter). The f32 steps per super-block are then those of `dot_rows`, in
//! its order, so every output is bit-identical to it.

/// The K-quant tile kernels and their `TileFn` entries (`q4_k_tile`, `q5_k_tile`,
/// `q6_k_tile`) with `$r × $c` register blocks, compiled for `$feat` with the calling
/// module's `dpwssd`.
macro_rules! avx2_tilek {
    ($feat:literal, $r:literal, $c:literal) => {
        /// `sumi[r][c] += scale_r · (q_r · a_c)` over one 32-element group, with the
        /// products summed by `vpmaddubsw` pairs and `dpwssd`, as in `dot_rows`.
        #[target_feature(enable = $feat)]
        #[inline]
        fn k_group<const R: usize, const C: usize>(
            sumi: &mut [[__m256i; C]; R],
            q: &[__m256i; R],
            sc: &[__m256i; R],
            a: [&[i8; 32]; C],
        ) {
            for (c, a) in a.into_iter().enumerate() {
                let av = ld32i(a);
                for ((s, &q), &sc) in sumi.iter_mut().zip(q).zip(sc) {
                    s[c] = dpwssd(s[c], _mm256_maddubs_epi16(q, av), sc);
                }
            }
        }

        /// Group `g` (0..8, 32 elements) of every activation row.
        #[target_feature(enable = $feat)]
        #[inline]
        fn k_chunks<'a, const C: usize>(a: &[&'a [i8; 256]; C], g: usize) -> [&'a [i8; 32]; C] {
            core::array::from_fn(|c| &bytemuck::cast_ref::<[i8; 256], [[i8; 32]; 8]>(a[c])[g])
        }

        /// One 64-element chunk of Q4_K or Q5_K: low nibbles (group `2ch`, scale `2ch`),
        /// then high nibbles; with `H`, bits `2ch` / `2ch + 1` of `qh` add 16.
        #[target_feature(enable = $feat)]
        #[inline]
        fn k45_chunk<const R: usize, const C: usize, const H: bool>(
            sumi: &mut [[__m256i; C]; R],
            qs: [&[u8; 128]; R],
            qh: [&[u8; 32]; R],
            s16: &[__m256i; R],
            a: &[&[i8; 256]; C],
            ch: usize,
        ) {
            let m4 = _mm256_set1_epi8(0x0f);
            let m10 = _mm256_set1_epi8(0x10);
            let cnt = _mm_cvtsi32_si128((2 * ch) as i32);
            let load = |r: usize| ld32(&bytemuck::cast_ref::<[u8; 128], [[u8; 32]; 4]>(qs[r])[ch]);
            // The qh bits of this chunk at bits 0 (low group) and 1 (high group) of each
            // byte; 16-bit shifts, so the masks below drop what crossed a byte.
            let hv = |r: usize| _mm256_srl_epi16(ld32(qh[r]), cnt);
            let mut q: [__m256i; R] = core::array::from_fn(|r| {
                let lo = _mm256_and_si256(load(r), m4);
                if H {
                    _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16::<4>(hv(r)), m10))
                } else {
                    lo
                }
            });
            let lo_sc = bcast16(2 * ch);
            let sc: [__m256i; R] = core::array::from_fn(|r| _mm256_shuffle_epi8(s16[r], lo_sc));
            k_group(sumi, &q, &sc, k_chunks(a, 2 * ch));
            for (r, q) in q.iter_mut().enumerate() {
                let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(load(r)), m4);
                *q = if H {
                    _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16::<3>(hv(r)), m10))
                } else {
                    hi
                };
            }
            let hi_sc = bcast16(2 * ch + 1);
            let sc: [__m256i; R] = core::array::from_fn(|r| _mm256_shuffle_epi8(s16[r], hi_sc));
            k_group(sumi, &q, &sc, k_chunks(a, 2 * ch + 1));
        }

        /// Q4_K (`H = false`) or Q5_K (`H = true`, with `qh`) on `R × C` rows: the shared
        /// part of `q4_k_t` and `q5_k_t`. `blk(r, i)` gives the fields of weight block `i`
        /// of row `r`: `d`, `dmin`, `scales`, `qs`, `qh` (zeros when `H` is false).
        #[target_feature(enable = $feat)]
        #[inline]
        fn k45_t<'w, const R: usize, const C: usize, const H: bool>(
            nb: usize,
            blk: impl Fn(usize, usize) -> K45<'w>,
            a: [&[BlockQ8K]; C],
        ) -> [[f32; C]; R] {
            let mut acc = [[_mm256_setzero_ps(); C]; R];
            let zero = _mm256_setzero_si256();
            for i in 0..nb {
                let x: [K45<'w>; R] = core::array::from_fn(|r| blk(r, i));
                let mut s16 = [zero; R];
                let mut mins = [0u64; R];
                for ((s16, mins), x) in s16.iter_mut().zip(&mut mins).zip(&x) {
                    let (sc, mn) = scales_mins_k4(x.scales);
                    *s16 = _mm256_broadcastsi128_si256(u8x8_to_i16(sc));
                    *mins = mn;
                }
                let ach: [&[i8; 256]; C] = core::array::from_fn(|c| &a[c][i].qs);
                let qs: [&[u8; 128]; R] = core::array::from_fn(|r| x[r].qs);
                let qh: [&[u8; 32]; R] = core::array::from_fn(|r| x[r].qh);
                let mut sumi = [[zero; C]; R];
                for ch in 0..4 {
                    k45_chunk::<R, C, H>(&mut sumi, qs, qh, &s16, &ach, ch);
                }
                for (c, a) in a.iter().enumerate() {
                    let y = &a[i];
                    let bs = ld32(bytemuck::cast_ref(&y.bsums));
                    let da = _mm256_set1_ps(y.d.get());
                    for (((acc, sumi), x), &mn) in acc.iter_mut().zip(&sumi).zip(&x).zip(&mins) {
                        let d = _mm256_mul_ps(f16x8(x.d), da);
                        let dm = _mm256_mul_ps(f16x8(x.dmin), da);
                        acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[c]), d, acc[c]);
                        let mv = _mm256_cvtepi32_ps(k4_mins(bs, mn));
                        acc[c] = _mm256_fnmadd_ps(mv, dm, acc[c]);
                    }
                }
            }
            tile_sums(acc)
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
                prefetch_ahead(x);
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
                prefetch_ahead(x);
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
            let mut acc = [[_mm256_setzero_ps(); C]; R];
            let nb = a.first().map_or(0, |r| r.len());
            if w.iter().all(|r| r.len() == nb) && a.iter().all(|r| r.len() == nb) {
                let zero = _mm256_setzero_si256();
                let m4 = _mm256_set1_epi8(0x0f);
                let m30 = _mm256_set1_epi8(0x30);
                for i in 0..nb {
                    let x: [&BlockQ6K; R] = core::array::from_fn(|r| {
                        prefetch_ahead(&w[r][i]);
                        &w[r][i]
                    });
                    let ach: [&[i8; 256]; C] = core::array::from_fn(|c| &a[c][i].qs);
                    let mut sumi = [[zero; C]; R];
                    for h in 0..2 {
                        let ql = |r: usize, j: usize| {
                            ld32(
                                &bytemuck::cast_ref::<[u8; 128], [[u8; 32]; 4]>(&x[r].ql)
                                    [2 * h + j],
                            )
                        };
                        let qh = |r: usize| {
                            ld32(&bytemuck::cast_ref::<[u8; 64], [[u8; 32]; 2]>(&x[r].qh)[h])
                        };
                        let sb: [__m256i; R] = core::array::from_fn(|r| {
                            let s = bytemuck::cast_ref::<[i8; 16], [[i8; 8]; 2]>(&x[r].scales);
                            let s8 = bytemuck::cast::<[i8; 8], i64>(s[h]);
                            _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(_mm_cvtsi64_si128(s8)))
                        });
                        let sc = |k: usize| -> [__m256i; R] {
                            let b = bcast16_pair(k);
                            core::array::from_fn(|r| _mm256_shuffle_epi8(sb[r], b))
                        };
                        let g = |k: usize| k_chunks(&ach, 4 * h + k);
                        let q: [__m256i; R] = core::array::from_fn(|r| {
                            _mm256_or_si256(
                                _mm256_and_si256(ql(r, 0), m4),
                                _mm256_and_si256(_mm256_slli_epi16::<4>(qh(r)), m30),
                            )
                        });
                        k_group(&mut sumi, &q, &sc(0), g(0));
                        let q: [__m256i; R] = core::array::from_fn(|r| {
                            _mm256_or_si256(
                                _mm256_and_si256(ql(r, 1), m4),
                                _mm256_and_si256(_mm256_slli_epi16::<2>(qh(r)), m30),
                            )
                        });
                        k_group(&mut sumi, &q, &sc(1), g(1));
                        let q: [__m256i; R] = core::array::from_fn(|r| {
                            _mm256_or_si256(
                                _mm256_and_si256(_mm256_srli_epi16::<4>(ql(r, 0)), m4),
                                _mm256_and_si256(qh(r), m30),
                            )
                        });
                        k_group(&mut sumi, &q, &sc(2), g(2));
                        let q: [__m256i; R] = core::array::from_fn(|r| {
                            _mm256_or_si256(
                                _mm256_and_si256(_mm256_srli_epi16::<4>(ql(r, 1)), m4),
                                _mm256_and_si256(_mm256_srli_epi16::<2>(qh(r)), m30),
                            )
                        });
                        k_group(&mut sumi, &q, &sc(3), g(3));
                    }
                    for (c, a) in a.iter().enumerate() {
                        let y = &a[i];
                        let bs = ld32(bytemuck::cast_ref(&y.bsums));
                        let da = _mm256_set1_ps(y.d.get());
                        for ((acc, sumi), x) in acc.iter_mut().zip(&sumi).zip(&x) {
                            let sc16 = _mm256_cvtepi8_epi16(ld16i(&x.scales));
                            let corr = _mm256_madd_epi16(bs, sc16);
                            let s = _mm256_sub_epi32(sumi[c], _mm256_slli_epi32::<5>(corr));
                            let d = _mm256_mul_ps(f16x8(x.d), da);
                            acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), d, acc[c]);
                        }
                    }
                }
            }
            tile_sums(acc)
        }

        tile_entry!($feat, q4_k_tile, BlockQ4K, BlockQ8K, q4_k_t, $r, $c);
        tile_entry!($feat, q5_k_tile, BlockQ5K, BlockQ8K, q5_k_t, $r, $c);
        tile_entry!($feat, q6_k_tile, BlockQ6K, BlockQ8K, q6_k_t, $r, $c);
    };
}
pub(super) use avx2_tilek;

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

//! The K-quant kernels (Q4_K, Q5_K, Q6_K against Q8_K) as a macro body for the 256-bit tiers.
//!
//! Per 32 (Q4_K, Q5_K) or 16 (Q6_K) elements, `vpmaddubsw` multiplies the unsigned weight
//! quants by the activation bytes into `i16` pairs (at most `2 · 63 · 128`, no saturation),
//! and the tier's `dpwssd` multiplies those by the sub-block scale and sums into `i32`.
//! The mins (Q4_K, Q5_K) and Q6_K's `-32` offset come from the Q8_K block sums.

use core::arch::x86_64::*;

/// Shuffle control that broadcasts `i16` lane `j` (of 8, in each 128-bit half) to all eight
/// lanes of the half.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn bcast16(j: usize) -> __m256i {
    let lo = (2 * j) as i16;
    _mm256_set1_epi16(lo | ((lo + 1) << 8))
}

/// Shuffle control for Q6_K: from eight `i16` scales in each half, the low half gets scale
/// `2k` and the high half scale `2k + 1` in every lane.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn bcast16_pair(k: usize) -> __m256i {
    let a = (4 * k) as i16;
    _mm256_set_m128i(
        _mm_set1_epi16((a + 2) | ((a + 3) << 8)),
        _mm_set1_epi16(a | ((a + 1) << 8)),
    )
}

/// Eight bytes, zero-extended to eight `i16` lanes.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn u8x8_to_i16(v: u64) -> __m128i {
    _mm_cvtepu8_epi16(_mm_cvtsi64_si128(v as i64))
}

/// `sum(m_j · (bsums[2j] + bsums[2j + 1]))` in eight `i32` lanes, from the mins in the bytes
/// of `mins` and the sixteen `i16` block sums in `bs`.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn k4_mins(bs: __m256i, mins: u64) -> __m256i {
    let m = u8x8_to_i16(mins);
    let pairs = _mm256_set_m128i(_mm_unpackhi_epi16(m, m), _mm_unpacklo_epi16(m, m));
    _mm256_madd_epi16(bs, pairs)
}

/// The K-quant kernels and their `RowsFn` entries (`q4_k_rows`, `q5_k_rows`, `q6_k_rows`),
/// compiled for `$feat` with the calling module's `dpwssd`.
macro_rules! avx2_dotk {
    ($feat:literal) => {
        /// Q4_K · Q8_K.
        #[target_feature(enable = $feat)]
        #[inline]
        fn q4_k<const R: usize>(w: [&[BlockQ4K]; R], a: &[BlockQ8K], pf: usize) -> [f32; R] {
            let mut acc = [_mm256_setzero_ps(); R];
            if w.iter().all(|r| r.len() == a.len()) {
                let m4 = _mm256_set1_epi8(0x0f);
                for (i, y) in a.iter().enumerate() {
                    let ach: &[[i8; 32]; 8] = bytemuck::cast_ref(&y.qs);
                    let bs = ld32(bytemuck::cast_ref(&y.bsums));
                    let da = _mm256_set1_ps(y.d.get());
                    for (acc, w) in acc.iter_mut().zip(&w) {
                        let x = &w[i];
                        prefetch_at(x, pf);
                        let (sc, mn) = scales_mins_k4(&x.scales);
                        let s16 = _mm256_broadcastsi128_si256(u8x8_to_i16(sc));
                        let qch: &[[u8; 32]; 4] = bytemuck::cast_ref(&x.qs);
                        let mut sumi = _mm256_setzero_si256();
                        for (c, q) in qch.iter().enumerate() {
                            let qv = ld32(q);
                            let lo = _mm256_and_si256(qv, m4);
                            let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(qv), m4);
                            let plo = _mm256_maddubs_epi16(lo, ld32i(&ach[2 * c]));
                            let phi = _mm256_maddubs_epi16(hi, ld32i(&ach[2 * c + 1]));
                            sumi = dpwssd(sumi, plo, _mm256_shuffle_epi8(s16, bcast16(2 * c)));
                            sumi = dpwssd(sumi, phi, _mm256_shuffle_epi8(s16, bcast16(2 * c + 1)));
                        }
                        let d = _mm256_mul_ps(f16x8(x.d), da);
                        let dm = _mm256_mul_ps(f16x8(x.dmin), da);
                        *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), d, *acc);
                        *acc = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(k4_mins(bs, mn)), dm, *acc);
                    }
                }
            }
            hsums(acc)
        }

        /// Q5_K · Q8_K: as Q4_K, with bit `j` of `qh[l]` added as 16 to element `32j + l`.
        #[target_feature(enable = $feat)]
        #[inline]
        fn q5_k<const R: usize>(w: [&[BlockQ5K]; R], a: &[BlockQ8K], pf: usize) -> [f32; R] {
            let mut acc = [_mm256_setzero_ps(); R];
            if w.iter().all(|r| r.len() == a.len()) {
                let m4 = _mm256_set1_epi8(0x0f);
                let m10 = _mm256_set1_epi8(0x10);
                for (i, y) in a.iter().enumerate() {
                    let ach: &[[i8; 32]; 8] = bytemuck::cast_ref(&y.qs);
                    let bs = ld32(bytemuck::cast_ref(&y.bsums));
                    let da = _mm256_set1_ps(y.d.get());
                    for (acc, w) in acc.iter_mut().zip(&w) {
                        let x = &w[i];
                        prefetch_at(x, pf);
                        let (sc, mn) = scales_mins_k4(&x.scales);
                        let s16 = _mm256_broadcastsi128_si256(u8x8_to_i16(sc));
                        let qch: &[[u8; 32]; 4] = bytemuck::cast_ref(&x.qs);
                        let mut hv = ld32(&x.qh);
                        let mut sumi = _mm256_setzero_si256();
                        for (c, q) in qch.iter().enumerate() {
                            let qv = ld32(q);
                            // Bits 2c and 2c + 1 of each qh byte, moved to bit 4 (the shifts
                            // are 16-bit wide; the mask drops what crossed a byte).
                            let hlo = _mm256_and_si256(_mm256_slli_epi16::<4>(hv), m10);
                            let hhi = _mm256_and_si256(_mm256_slli_epi16::<3>(hv), m10);
                            hv = _mm256_srli_epi16::<2>(hv);
                            let lo = _mm256_or_si256(_mm256_and_si256(qv, m4), hlo);
                            let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(qv), m4);
                            let hi = _mm256_or_si256(hi, hhi);
                            let plo = _mm256_maddubs_epi16(lo, ld32i(&ach[2 * c]));
                            let phi = _mm256_maddubs_epi16(hi, ld32i(&ach[2 * c + 1]));
                            sumi = dpwssd(sumi, plo, _mm256_shuffle_epi8(s16, bcast16(2 * c)));
                            sumi = dpwssd(sumi, phi, _mm256_shuffle_epi8(s16, bcast16(2 * c + 1)));
                        }
                        let d = _mm256_mul_ps(f16x8(x.d), da);
                        let dm = _mm256_mul_ps(f16x8(x.dmin), da);
                        *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), d, *acc);
                        *acc = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(k4_mins(bs, mn)), dm, *acc);
                    }
                }
            }
            hsums(acc)
        }

        /// Q6_K · Q8_K: `sum(sc · q · a) - 32 · sum(sc · bsums)` per super-block, with `q`
        /// the unsigned 6-bit quants.
        #[target_feature(enable = $feat)]
        #[inline]
        fn q6_k<const R: usize>(w: [&[BlockQ6K]; R], a: &[BlockQ8K], pf: usize) -> [f32; R] {
            let mut acc = [_mm256_setzero_ps(); R];
            if w.iter().all(|r| r.len() == a.len()) {
                let m4 = _mm256_set1_epi8(0x0f);
                let m30 = _mm256_set1_epi8(0x30);
                for (i, y) in a.iter().enumerate() {
                    let ach: &[[i8; 32]; 8] = bytemuck::cast_ref(&y.qs);
                    let bs = ld32(bytemuck::cast_ref(&y.bsums));
                    let da = _mm256_set1_ps(y.d.get());
                    for (acc, w) in acc.iter_mut().zip(&w) {
                        let x = &w[i];
                        prefetch_at(x, pf);
                        let corr = _mm256_madd_epi16(bs, _mm256_cvtepi8_epi16(ld16i(&x.scales)));
                        let scs: &[[i8; 8]; 2] = bytemuck::cast_ref(&x.scales);
                        let ql: &[[u8; 32]; 4] = bytemuck::cast_ref(&x.ql);
                        let qh: &[[u8; 32]; 2] = bytemuck::cast_ref(&x.qh);
                        let mut sumi = _mm256_setzero_si256();
                        for h in 0..2 {
                            let l0 = ld32(&ql[2 * h]);
                            let l1 = ld32(&ql[2 * h + 1]);
                            let hh = ld32(&qh[h]);
                            let q = [
                                _mm256_or_si256(
                                    _mm256_and_si256(l0, m4),
                                    _mm256_and_si256(_mm256_slli_epi16::<4>(hh), m30),
                                ),
                                _mm256_or_si256(
                                    _mm256_and_si256(l1, m4),
                                    _mm256_and_si256(_mm256_slli_epi16::<2>(hh), m30),
                                ),
                                _mm256_or_si256(
                                    _mm256_and_si256(_mm256_srli_epi16::<4>(l0), m4),
                                    _mm256_and_si256(hh, m30),
                                ),
                                _mm256_or_si256(
                                    _mm256_and_si256(_mm256_srli_epi16::<4>(l1), m4),
                                    _mm256_and_si256(_mm256_srli_epi16::<2>(hh), m30),
                                ),
                            ];
                            let s8 = bytemuck::cast::<[i8; 8], i64>(scs[h]);
                            let sb = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(
                                _mm_cvtsi64_si128(s8),
                            ));
                            for (k, q) in q.into_iter().enumerate() {
                                let p = _mm256_maddubs_epi16(q, ld32i(&ach[4 * h + k]));
                                sumi = dpwssd(sumi, p, _mm256_shuffle_epi8(sb, bcast16_pair(k)));
                            }
                        }
                        let sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32::<5>(corr));
                        let d = _mm256_mul_ps(f16x8(x.d), da);
                        *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), d, *acc);
                    }
                }
            }
            hsums(acc)
        }

        rows_entry!($feat, q4_k_rows, BlockQ4K, BlockQ8K, q4_k, 4);
        rows_entry!($feat, q5_k_rows, BlockQ5K, BlockQ8K, q5_k, 4);
        rows_entry!($feat, q6_k_rows, BlockQ6K, BlockQ8K, q6_k, 4);
    };
}
pub(super) use avx2_dotk;

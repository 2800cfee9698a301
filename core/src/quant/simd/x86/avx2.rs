//! AVX2 building blocks, and the 32-element formats (Q4_0, Q4_1, Q5_0, Q8_0) as a macro body.
//!
//! The helpers here need only AVX2 + FMA + F16C, so every tier can call them. The kernels in
//! [`avx2_dot32`] use the tier's `dpbusd` (bytes `u8 × i8` summed by 4 into `i32` lanes)
//! and `Q8Act` / `q8_act` / `q8_dot` (an exact `i8 × i8` block dot), which each tier
//! module defines.
//!
//! Every kernel keeps the integer part exact: the weight quants enter as unsigned bytes and
//! the offset (`8` for Q4_0, `16` for Q5_0) comes off as `offset * sum(act)` in `i32`, so no
//! `i16` intermediate can saturate for any activation byte.

use core::arch::x86_64::*;

use super::super::super::blocks::F16Le;
use super::super::PREFETCH_BYTES;

/// 16 bytes into a vector.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn ld16(b: &[u8; 16]) -> __m128i {
    // SAFETY: reads exactly the 16 bytes of `b`; `loadu` has no alignment requirement.
    unsafe { _mm_loadu_si128(b.as_ptr().cast()) }
}

/// 16 signed bytes into a vector.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn ld16i(b: &[i8; 16]) -> __m128i {
    // SAFETY: reads exactly the 16 bytes of `b`; `loadu` has no alignment requirement.
    unsafe { _mm_loadu_si128(b.as_ptr().cast()) }
}

/// 32 bytes into a vector.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn ld32(b: &[u8; 32]) -> __m256i {
    // SAFETY: reads exactly the 32 bytes of `b`; `loadu` has no alignment requirement.
    unsafe { _mm256_loadu_si256(b.as_ptr().cast()) }
}

/// 32 signed bytes into a vector.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn ld32i(b: &[i8; 32]) -> __m256i {
    // SAFETY: reads exactly the 32 bytes of `b`; `loadu` has no alignment requirement.
    unsafe { _mm256_loadu_si256(b.as_ptr().cast()) }
}

/// Eight f32s into a vector.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn ld8f(x: &[f32; 8]) -> __m256 {
    // SAFETY: reads exactly the 32 bytes of `x`; `loadu` has no alignment requirement.
    unsafe { _mm256_loadu_ps(x.as_ptr()) }
}

/// 32 bytes from a vector.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn st32i(b: &mut [i8; 32], v: __m256i) {
    // SAFETY: writes exactly the 32 bytes of `b`; `storeu` has no alignment requirement.
    unsafe { _mm256_storeu_si256(b.as_mut_ptr().cast(), v) }
}

/// Hints the cache to fetch the bytes `PREFETCH_BYTES` past `block`, one request per cache
/// line the block spans (for the tile kernels).
#[inline(always)]
pub(super) fn prefetch_ahead<T>(block: &T) {
    prefetch_at(block, PREFETCH_BYTES);
}

/// Hints the cache to fetch the bytes `dist` past `block`, one request per cache line the
/// block spans.
#[inline(always)]
pub(super) fn prefetch_at<T>(block: &T, dist: usize) {
    let p = (block as *const T).cast::<i8>();
    let mut off = 0;
    while off < core::mem::size_of::<T>() {
        // SAFETY: a prefetch is only a hint: it cannot fault or change memory at any
        // address, and `wrapping_add` makes the address without claiming it is in bounds.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(dist + off)) };
        off += 64;
    }
}

/// An f16 scale widened and broadcast to eight lanes (exact, as `F16Le::to_f32`).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn f16x8(h: F16Le) -> __m256 {
    _mm256_cvtph_ps(_mm_set1_epi16(i16::from_le_bytes(h.0)))
}

/// Two f16 values widened into lanes 0 and 1 (exact).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn f16x2(a: F16Le, b: F16Le) -> __m128 {
    let bits = u32::from(u16::from_le_bytes(a.0)) | (u32::from(u16::from_le_bytes(b.0)) << 16);
    _mm_cvtph_ps(_mm_cvtsi32_si128(bits as i32))
}

/// The sum of the eight lanes.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn hsum(v: __m256) -> f32 {
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_add_ss(s, _mm_movehdup_ps(s));
    _mm_cvtss_f32(s)
}

/// [`hsum`] of each vector.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn hsums<const R: usize>(acc: [__m256; R]) -> [f32; R] {
    let mut out = [0.0; R];
    for (o, a) in out.iter_mut().zip(acc) {
        *o = hsum(a);
    }
    out
}

/// [`hsums`] of each row of a tile's accumulators.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn tile_sums<const R: usize, const C: usize>(acc: [[__m256; C]; R]) -> [[f32; C]; R] {
    let mut out = [[0.0; C]; R];
    for (o, a) in out.iter_mut().zip(acc) {
        *o = hsums(a);
    }
    out
}

/// The 32 nibbles of a Q4 block in element order: byte `j` holds element `j` in its low
/// nibble and `j + 16` in its high one.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn nib32(qs: &[u8; 16]) -> __m256i {
    let x = ld16(qs);
    let hi = _mm_srli_epi16::<4>(x);
    _mm256_and_si256(_mm256_set_m128i(hi, x), _mm256_set1_epi8(0x0f))
}

/// Byte `j` is `0x10` where bit `j` of the little-endian `qh` is set, else 0.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn hbits32(qh: [u8; 4]) -> __m256i {
    let v = _mm256_set1_epi32(i32::from_le_bytes(qh));
    // Byte j takes qh byte j / 8 (in-lane shuffle; both lanes hold all four bytes).
    let spread = _mm256_setr_epi8(
        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, //
        2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
    );
    let bytes = _mm256_shuffle_epi8(v, spread);
    let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201_u64 as i64);
    let set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
    _mm256_and_si256(set, _mm256_set1_epi8(0x10))
}

/// The 32-element kernels and their `RowsFn` entries (`q4_0_rows` … `q8_0_rows`), compiled
/// for the features `$feat` with the calling module's `dpbusd`, `hbits` (as [`hbits32`]) and
/// `Q8Act` / `q8_act` / `q8_dot`.
macro_rules! avx2_dot32 {
    ($feat:literal) => {
        /// Q4_0 · Q8_0: `sum(q · a) - 8 · sum(a)` per block, scaled by `d_w · d_a`.
        #[target_feature(enable = $feat)]
        #[inline]
        fn q4_0<const R: usize>(w: [&[BlockQ4_0]; R], a: &[BlockQ8_0], pf: usize) -> [f32; R] {
            let mut acc = [_mm256_setzero_ps(); R];
            if w.iter().all(|r| r.len() == a.len()) {
                let zero = _mm256_setzero_si256();
                let eight = _mm256_set1_epi8(8);
                for (i, y) in a.iter().enumerate() {
                    let av = ld32i(&y.qs);
                    let off = _mm256_sub_epi32(zero, dpbusd(zero, eight, av));
                    let da = f16x8(y.d);
                    for (acc, w) in acc.iter_mut().zip(&w) {
                        let x = &w[i];
                        prefetch_at(x, pf);
                        let p = dpbusd(off, nib32(&x.qs), av);
                        let d = _mm256_mul_ps(f16x8(x.d), da);
                        *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), d, *acc);
                    }
                }
            }
            hsums(acc)
        }

        /// Q4_1 · Q8_1: `sum(q · a) · d_w · d_a + m_w · s_a` per block.
        #[target_feature(enable = $feat)]
        #[inline]
        fn q4_1<const R: usize>(w: [&[BlockQ4_1]; R], a: &[BlockQ8_1], pf: usize) -> [f32; R] {
            let mut acc = [_mm256_setzero_ps(); R];
            // Lane 1 sums `m_w · s_a`.
            let mut accm = [_mm_setzero_ps(); R];
            if w.iter().all(|r| r.len() == a.len()) {
                let zero = _mm256_setzero_si256();
                for (i, y) in a.iter().enumerate() {
                    let av = ld32i(&y.qs);
                    let ds = f16x2(y.d, y.s);
                    for ((acc, accm), w) in acc.iter_mut().zip(accm.iter_mut()).zip(&w) {
                        let x = &w[i];
                        prefetch_at(x, pf);
                        let p = dpbusd(zero, nib32(&x.qs), av);
                        // [d_w · d_a, m_w · s_a]
                        let dm = _mm_mul_ps(f16x2(x.d, x.m), ds);
                        *acc =
                            _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_broadcastss_ps(dm), *acc);
                        *accm = _mm_add_ps(*accm, dm);
                    }
                }
            }
            let mut out = hsums(acc);
            for (o, m) in out.iter_mut().zip(accm) {
                *o += _mm_cvtss_f32(_mm_movehdup_ps(m));
            }
            out
        }

        /// Q5_0 · Q8_0: `sum(q · a) - 16 · sum(a)` per block, scaled by `d_w · d_a`.
        #[target_feature(enable = $feat)]
        #[inline]
        fn q5_0<const R: usize>(w: [&[BlockQ5_0]; R], a: &[BlockQ8_0], pf: usize) -> [f32; R] {
            let mut acc = [_mm256_setzero_ps(); R];
            if w.iter().all(|r| r.len() == a.len()) {
                let zero = _mm256_setzero_si256();
                let sixteen = _mm256_set1_epi8(16);
                for (i, y) in a.iter().enumerate() {
                    let av = ld32i(&y.qs);
                    let off = _mm256_sub_epi32(zero, dpbusd(zero, sixteen, av));
                    let da = f16x8(y.d);
                    for (acc, w) in acc.iter_mut().zip(&w) {
                        let x = &w[i];
                        prefetch_at(x, pf);
                        let q = _mm256_or_si256(nib32(&x.qs), hbits(x.qh));
                        let p = dpbusd(off, q, av);
                        let d = _mm256_mul_ps(f16x8(x.d), da);
                        *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), d, *acc);
                    }
                }
            }
            hsums(acc)
        }

        /// Q8_0 · Q8_0: `sum(q · a)` per block, scaled by `d_w · d_a`.
        #[target_feature(enable = $feat)]
        #[inline]
        fn q8_0<const R: usize>(w: [&[BlockQ8_0]; R], a: &[BlockQ8_0], pf: usize) -> [f32; R] {
            let mut acc = [_mm256_setzero_ps(); R];
            if w.iter().all(|r| r.len() == a.len()) {
                for (i, y) in a.iter().enumerate() {
                    let act = q8_act(&y.qs);
                    let da = f16x8(y.d);
                    for (acc, w) in acc.iter_mut().zip(&w) {
                        let x = &w[i];
                        prefetch_at(x, pf);
                        let p = q8_dot(&x.qs, &act);
                        let d = _mm256_mul_ps(f16x8(x.d), da);
                        *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), d, *acc);
                    }
                }
            }
            hsums(acc)
        }

        rows_entry!($feat, q4_0_rows, BlockQ4_0, BlockQ8_0, q4_0, 4);
        rows_entry!($feat, q4_1_rows, BlockQ4_1, BlockQ8_1, q4_1, 4);
        rows_entry!($feat, q5_0_rows, BlockQ5_0, BlockQ8_0, q5_0, 4);
        rows_entry!($feat, q8_0_rows, BlockQ8_0, BlockQ8_0, q8_0, 4);
    };
}
pub(super) use avx2_dot32;

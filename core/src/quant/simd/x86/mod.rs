//! x86-64 kernels.
//!
//! Tiers, lowest first (a later one overrides an earlier one per type in [`install`]):
//! - `plain`: AVX2 + FMA + F16C, integer dots by `vpmaddubsw` + `vpmaddwd`.
//! - `vnni`: the same kernels with AVX-VNNI's VEX `vpdpbusd` / `vpdpwssd` (Alder Lake and
//!   later client cores, which lack AVX-512).
//! - `evex`: the same kernels with AVX512-VNNI's EVEX forms and AVX-512BW byte masks, on
//!   256-bit vectors. Per block the work of one row is dominated by unpacking quants and
//!   broadcasting f16 scales, which 512-bit vectors do not shrink, while they run on fewer
//!   ports (and lower clocks on some cores); so its one-row kernels stay at 256 bits. Its
//!   Q4_0 / Q5_0 / Q8_0 tile kernels (`tilez`) are the exception: there the per-pair steps
//!   dominate, and two activation rows per 512-bit vector halve them.
//!
//! All of them prefetch weight rows ahead: the one-row kernels by `simd::prefetch_distance`,
//! the tile kernels `simd::PREFETCH_BYTES` ahead.
//!
//! Each tier also has tile kernels for the prefill path (`tile32`, `tilek`): `R × C` register
//! blocks of weight rows × activation rows, by measurement 2 × 8 on `evex` (32 vector
//! registers; 4 × 8 for its 512-bit `tilez` kernels, which at 2 × 8 were no faster than the
//! 256-bit ones) and, on the 16-register tiers, 2 × 4 for the 32-element formats and 1 × 8
//! for the K-quants. One-thread tile speed on a 16 × 640 × 64 tile (scratch timing), 256-bit
//! 2 × 8 against 512-bit 4 × 8: Q5_0 39 → 44, Q8_0 40 → 48, Q4_0 39 → 46 GMAC/s.

mod attn;
mod attn512;
mod avx2;
mod avx2_k;
mod f16;
mod quant;
mod tile32;
mod tilek;
mod tilez;

use super::super::GgmlType as T;
use super::{Feature as F, Isa, Kernels};

/// AVX2 + FMA + F16C with `vpmaddubsw` / `vpmaddwd` integer dots.
mod plain {
    use core::arch::x86_64::*;

    use super::super::super::blocks::{
        BlockQ4K, BlockQ4_0, BlockQ4_1, BlockQ5K, BlockQ5_0, BlockQ6K, BlockQ8K, BlockQ8_0,
        BlockQ8_1,
    };
    use super::super::scales_mins_k4;
    use super::avx2::{
        f16x2, f16x8, hbits32 as hbits, hsums, ld16, ld16i, ld32, ld32i, nib32, prefetch_ahead,
        prefetch_at, tile_sums,
    };
    use super::avx2_k::{bcast16, bcast16_pair, k4_mins, u8x8_to_i16};
    use super::tilek::K45;

    /// `acc + sum of 4 (u8 × i8)` per `i32` lane. Exact while each adjacent pair of
    /// products fits `i16`: `u ≤ 127` (all 4-6-bit quants) with any `s`.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    fn dpbusd(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        let p = _mm256_maddubs_epi16(u, s);
        _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)))
    }

    /// `acc + sum of 2 (i16 × i16)` per `i32` lane.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    fn dpwssd(acc: __m256i, a: __m256i, b: __m256i) -> __m256i {
        _mm256_add_epi32(acc, _mm256_madd_epi16(a, b))
    }

    /// A Q8_0 activation block widened to `i16` (low and high 16 quants).
    struct Q8Act(__m256i, __m256i);

    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    fn q8_act(a: &[i8; 32]) -> Q8Act {
        let [lo, hi] = bytemuck::cast_ref::<[i8; 32], [[i8; 16]; 2]>(a);
        Q8Act(
            _mm256_cvtepi8_epi16(ld16i(lo)),
            _mm256_cvtepi8_epi16(ld16i(hi)),
        )
    }

    /// A Q8_0 weight block widened to `i16`, as [`q8_dotw`] takes it.
    struct Q8W(__m256i, __m256i);

    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    fn q8_w(w: &[i8; 32]) -> Q8W {
        let a = q8_act(w);
        Q8W(a.0, a.1)
    }

    /// Exact `sum(w · a)` of a Q8_0 block pair in eight `i32` lanes.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    fn q8_dotw(w: &Q8W, a: &Q8Act) -> __m256i {
        let plo = _mm256_madd_epi16(w.0, a.0);
        let phi = _mm256_madd_epi16(w.1, a.1);
        _mm256_add_epi32(plo, phi)
    }

    /// [`q8_dotw`] on the raw weight block.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    fn q8_dot(w: &[i8; 32], a: &Q8Act) -> __m256i {
        q8_dotw(&q8_w(w), a)
    }

    super::avx2::avx2_dot32!("avx2,fma,f16c");
    super::avx2_k::avx2_dotk!("avx2,fma,f16c");
    super::tile32::avx2_tile32!("avx2,fma,f16c", 2, 4);
    super::tilek::avx2_tilek!("avx2,fma,f16c", 1, 8);
}

/// The VNNI forms shared by the `vnni` and `evex` tiers: exact for any bytes.
macro_rules! vnni_tier {
    ($feat:literal, $dpbusd:ident, $dpwssd:ident, $hbits:path, $r:literal, $c:literal,
     $rk:literal, $ck:literal $(, $zmm:ident)?) => {
        use core::arch::x86_64::*;

        use super::super::super::blocks::{
            BlockQ4K, BlockQ4_0, BlockQ4_1, BlockQ5K, BlockQ5_0, BlockQ6K, BlockQ8K, BlockQ8_0,
            BlockQ8_1,
        };
        use super::super::scales_mins_k4;
        use super::avx2::{
            f16x2, f16x8, hsums, ld16, ld16i, ld32, ld32i, nib32, prefetch_ahead, prefetch_at,
            tile_sums,
        };
        use super::avx2_k::{bcast16, bcast16_pair, k4_mins, u8x8_to_i16};
        use super::tilek::K45;

        /// `acc + sum of 4 (u8 × i8)` per `i32` lane, exact.
        #[target_feature(enable = $feat)]
        #[inline]
        fn dpbusd(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
            $dpbusd(acc, u, s)
        }

        /// `acc + sum of 2 (i16 × i16)` per `i32` lane.
        #[target_feature(enable = $feat)]
        #[inline]
        fn dpwssd(acc: __m256i, a: __m256i, b: __m256i) -> __m256i {
            $dpwssd(acc, a, b)
        }

        /// Byte `j` is `0x10` where bit `j` of `qh` is set, else 0.
        #[target_feature(enable = $feat)]
        #[inline]
        fn hbits(qh: [u8; 4]) -> __m256i {
            $hbits(qh)
        }

        /// A Q8_0 activation block and `-128 · sum(a)` spread over the lanes, so that
        /// `sum(w · a) = sum((w + 128) · a) - 128 · sum(a)` with `w + 128` unsigned.
        struct Q8Act(__m256i, __m256i);

        #[target_feature(enable = $feat)]
        #[inline]
        fn q8_act(a: &[i8; 32]) -> Q8Act {
            let a = ld32i(a);
            let z = _mm256_setzero_si256();
            let off = _mm256_sub_epi32(z, dpbusd(z, _mm256_set1_epi8(-128), a));
            Q8Act(a, off)
        }

        /// A Q8_0 weight block offset to unsigned (`w + 128`), as [`q8_dotw`] takes it.
        struct Q8W(__m256i);

        #[target_feature(enable = $feat)]
        #[inline]
        fn q8_w(w: &[i8; 32]) -> Q8W {
            Q8W(_mm256_xor_si256(ld32i(w), _mm256_set1_epi8(-128)))
        }

        /// Exact `sum(w · a)` of a Q8_0 block pair in eight `i32` lanes.
        #[target_feature(enable = $feat)]
        #[inline]
        fn q8_dotw(w: &Q8W, a: &Q8Act) -> __m256i {
            dpbusd(a.1, w.0, a.0)
        }

        /// [`q8_dotw`] on the raw weight block.
        #[target_feature(enable = $feat)]
        #[inline]
        fn q8_dot(w: &[i8; 32], a: &Q8Act) -> __m256i {
            q8_dotw(&q8_w(w), a)
        }

        super::avx2::avx2_dot32!($feat);
        super::avx2_k::avx2_dotk!($feat);
        super::tile32::avx2_tile32!($feat, $r, $c $(, $zmm)?);
        super::tilek::avx2_tilek!($feat, $rk, $ck);
    };
}

/// AVX2 with AVX-VNNI.
mod vnni {
    vnni_tier!(
        "avx2,fma,f16c,avxvnni",
        _mm256_dpbusd_avx_epi32,
        _mm256_dpwssd_avx_epi32,
        super::avx2::hbits32,
        2,
        4,
        1,
        8
    );
}

/// AVX-512 (F, BW, VL) with AVX512-VNNI, on 256-bit vectors.
mod evex {
    vnni_tier!(
        "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni",
        _mm256_dpbusd_epi32,
        _mm256_dpwssd_epi32,
        hbits_mask,
        2,
        8,
        2,
        8,
        zmm
    );

    super::tilez::evex_tilez!("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni", 4, 8);

    /// [`hbits32`](super::avx2::hbits32) with an AVX-512 byte mask.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    #[inline]
    fn hbits_mask(qh: [u8; 4]) -> __m256i {
        _mm256_maskz_mov_epi8(u32::from_le_bytes(qh), _mm256_set1_epi8(0x10))
    }
}

/// Offers every x86 kernel to `k`; each call names the features its kernel is compiled for.
pub(super) fn install(k: &mut Kernels) {
    const AVX2: &[F] = &[F::Avx2];
    const VNNI: &[F] = &[F::Avx2, F::AvxVnni];
    const EVEX: &[F] = &[F::Avx2, F::Avx512, F::Avx512Vnni];

    k.offer_f16(AVX2, Isa::Avx2, f16::dot_f16, f16::axpy_f16);
    k.offer_attn(AVX2, attn::AVX2);
    k.offer_attn(&[F::Avx2, F::Avx512], attn512::AVX512);

    k.offer_quant(T::Q8_0, AVX2, Isa::Avx2, quant::quant_q8_0);
    k.offer_quant(T::Q8_1, AVX2, Isa::Avx2, quant::quant_q8_1);
    k.offer_quant(T::Q8_K, AVX2, Isa::Avx2, quant::quant_q8_k);

    k.offer_dot_tile(T::Q4_0, AVX2, Isa::Avx2, plain::q4_0_rows, plain::q4_0_tile);
    k.offer_dot_tile(T::Q4_1, AVX2, Isa::Avx2, plain::q4_1_rows, plain::q4_1_tile);
    k.offer_dot_tile(T::Q5_0, AVX2, Isa::Avx2, plain::q5_0_rows, plain::q5_0_tile);
    k.offer_dot_tile(T::Q8_0, AVX2, Isa::Avx2, plain::q8_0_rows, plain::q8_0_tile);
    k.offer_dot_tile(T::Q4_K, AVX2, Isa::Avx2, plain::q4_k_rows, plain::q4_k_tile);
    k.offer_dot_tile(T::Q5_K, AVX2, Isa::Avx2, plain::q5_k_rows, plain::q5_k_tile);
    k.offer_dot_tile(T::Q6_K, AVX2, Isa::Avx2, plain::q6_k_rows, plain::q6_k_tile);

    k.offer_dot_tile(
        T::Q4_0,
        VNNI,
        Isa::AvxVnni,
        vnni::q4_0_rows,
        vnni::q4_0_tile,
    );
    k.offer_dot_tile(
        T::Q4_1,
        VNNI,
        Isa::AvxVnni,
        vnni::q4_1_rows,
        vnni::q4_1_tile,
    );
    k.offer_dot_tile(
        T::Q5_0,
        VNNI,
        Isa::AvxVnni,
        vnni::q5_0_rows,
        vnni::q5_0_tile,
    );
    k.offer_dot_tile(
        T::Q8_0,
        VNNI,
        Isa::AvxVnni,
        vnni::q8_0_rows,
        vnni::q8_0_tile,
    );
    k.offer_dot_tile(
        T::Q4_K,
        VNNI,
        Isa::AvxVnni,
        vnni::q4_k_rows,
        vnni::q4_k_tile,
    );
    k.offer_dot_tile(
        T::Q5_K,
        VNNI,
        Isa::AvxVnni,
        vnni::q5_k_rows,
        vnni::q5_k_tile,
    );
    k.offer_dot_tile(
        T::Q6_K,
        VNNI,
        Isa::AvxVnni,
        vnni::q6_k_rows,
        vnni::q6_k_tile,
    );

    k.offer_dot_tile(
        T::Q4_0,
        EVEX,
        Isa::Avx512Vnni,
        evex::q4_0_rows,
        evex::q4_0_tilez,
    );
    k.offer_dot_tile(
        T::Q4_1,
        EVEX,
        Isa::Avx512Vnni,
        evex::q4_1_rows,
        evex::q4_1_tile,
    );
    k.offer_dot_tile(
        T::Q5_0,
        EVEX,
        Isa::Avx512Vnni,
        evex::q5_0_rows,
        evex::q5_0_tilez,
    );
    k.offer_dot_tile(
        T::Q8_0,
        EVEX,
        Isa::Avx512Vnni,
        evex::q8_0_rows,
        evex::q8_0_tilez,
    );
    k.offer_dot_tile(
        T::Q4_K,
        EVEX,
        Isa::Avx512Vnni,
        evex::q4_k_rows,
        evex::q4_k_tile,
    );
    k.offer_dot_tile(
        T::Q5_K,
        EVEX,
        Isa::Avx512Vnni,
        evex::q5_k_rows,
        evex::q5_k_tile,
    );
    k.offer_dot_tile(
        T::Q6_K,
        EVEX,
        Isa::Avx512Vnni,
        evex::q6_k_rows,
        evex::q6_k_tile,
    );
}

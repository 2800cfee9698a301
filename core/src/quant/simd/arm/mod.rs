//! aarch64 kernels.
//!
//! Tiers, lowest first (a later one overrides an earlier one per type in [`install`]):
//! - `plain`: NEON, integer dots by widening multiplies (`smull` + `sadalp`).
//! - `dotprod`: the same kernels with SDOT (FEAT_DotProd: Cortex-A55/A76 and later, every
//!   Apple core). The `sdot` instruction is written with `asm!` because its intrinsic is not
//!   stable yet.
//!
//! The byte views reinterpret little-endian data, so the kernels are built for
//! little-endian targets only.

mod attn;
mod neon;
mod neon_k;
mod quant;
mod tile;

use super::super::GgmlType as T;
use super::{Feature as F, Isa, Kernels};

/// NEON without the dot-product extension.
mod plain {
    use core::arch::aarch64::*;

    use super::super::super::blocks::{
        BlockQ4K, BlockQ4_0, BlockQ4_1, BlockQ5K, BlockQ5_0, BlockQ6K, BlockQ8K, BlockQ8_0,
        BlockQ8_1,
    };
    use super::super::scales_mins_k4;
    use super::neon::{f16, halves, hbits32, ld16, ld16i, nib32};
    use super::neon_k::k4_mins;
    use super::tile::K45;

    /// `acc + sum of 4 (w × a)` per `i32` lane (lane grouping differs from SDOT; only the
    /// total matters), exact for any bytes.
    #[target_feature(enable = "neon")]
    #[inline]
    fn dot16(acc: int32x4_t, w: int8x16_t, a: int8x16_t) -> int32x4_t {
        let acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(w), vget_low_s8(a)));
        vpadalq_s16(acc, vmull_high_s8(w, a))
    }

    /// As [`dot16`] when every `w` is in `-64..=64`: two products then fit one `i16`.
    #[target_feature(enable = "neon")]
    #[inline]
    fn dot16s(acc: int32x4_t, w: int8x16_t, a: int8x16_t) -> int32x4_t {
        let p = vmull_s8(vget_low_s8(w), vget_low_s8(a));
        vpadalq_s16(acc, vmlal_high_s8(p, w, a))
    }

    super::neon::neon_dot32!("neon");
    super::neon_k::neon_dotk!("neon");
    super::tile::neon_tile32!("neon", 2, 4);
    super::tile::neon_tilek!("neon", 2, 4);
}

/// NEON with SDOT.
mod dotprod {
    use core::arch::aarch64::*;
    use core::arch::asm;

    use super::super::super::blocks::{
        BlockQ4K, BlockQ4_0, BlockQ4_1, BlockQ5K, BlockQ5_0, BlockQ6K, BlockQ8K, BlockQ8_0,
        BlockQ8_1,
    };
    use super::super::scales_mins_k4;
    use super::neon::{f16, halves, hbits32, ld16, ld16i, nib32};
    use super::neon_k::k4_mins;
    use super::tile::K45;

    /// `acc + sum of 4 (w × a)` per `i32` lane (SDOT), exact for any bytes.
    #[target_feature(enable = "neon,dotprod")]
    #[inline]
    fn dot16(acc: int32x4_t, w: int8x16_t, a: int8x16_t) -> int32x4_t {
        let mut acc = acc;
        // SAFETY: `sdot` only reads and writes the named vector registers, and this function
        // is only compiled into kernels that require FEAT_DotProd.
        unsafe {
            asm!(
                "sdot {acc:v}.4s, {w:v}.16b, {a:v}.16b",
                acc = inout(vreg) acc,
                w = in(vreg) w,
                a = in(vreg) a,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        acc
    }

    /// Same as [`dot16`] (SDOT is exact for any bytes).
    #[target_feature(enable = "neon,dotprod")]
    #[inline]
    fn dot16s(acc: int32x4_t, w: int8x16_t, a: int8x16_t) -> int32x4_t {
        dot16(acc, w, a)
    }

    super::neon::neon_dot32!("neon,dotprod");
    super::neon_k::neon_dotk!("neon,dotprod");
    super::tile::neon_tile32!("neon,dotprod", 2, 4);
    super::tile::neon_tilek!("neon,dotprod", 2, 4);
}

/// Offers every aarch64 kernel to `k`; each call names the features its kernel is compiled
/// for.
pub(super) fn install(k: &mut Kernels) {
    if cfg!(not(target_endian = "little")) {
        return;
    }
    const NEON: &[F] = &[F::Neon];
    const DOT: &[F] = &[F::Neon, F::DotProd];

    k.offer_attn(NEON, attn::NEON);

    k.offer_quant(T::Q8_0, NEON, Isa::Neon, quant::quant_q8_0);
    k.offer_quant(T::Q8_1, NEON, Isa::Neon, quant::quant_q8_1);
    k.offer_quant(T::Q8_K, NEON, Isa::Neon, quant::quant_q8_k);

    k.offer_dot_tile(T::Q4_0, NEON, Isa::Neon, plain::q4_0_rows, plain::q4_0_tile);
    k.offer_dot_tile(T::Q4_1, NEON, Isa::Neon, plain::q4_1_rows, plain::q4_1_tile);
    k.offer_dot_tile(T::Q5_0, NEON, Isa::Neon, plain::q5_0_rows, plain::q5_0_tile);
    k.offer_dot_tile(T::Q8_0, NEON, Isa::Neon, plain::q8_0_rows, plain::q8_0_tile);
    k.offer_dot_tile(T::Q4_K, NEON, Isa::Neon, plain::q4_k_rows, plain::q4_k_tile);
    k.offer_dot_tile(T::Q5_K, NEON, Isa::Neon, plain::q5_k_rows, plain::q5_k_tile);
    k.offer_dot_tile(T::Q6_K, NEON, Isa::Neon, plain::q6_k_rows, plain::q6_k_tile);

    k.offer_dot_tile(
        T::Q4_0,
        DOT,
        Isa::NeonDot,
        dotprod::q4_0_rows,
        dotprod::q4_0_tile,
    );
    k.offer_dot_tile(
        T::Q4_1,
        DOT,
        Isa::NeonDot,
        dotprod::q4_1_rows,
        dotprod::q4_1_tile,
    );
    k.offer_dot_tile(
        T::Q5_0,
        DOT,
        Isa::NeonDot,
        dotprod::q5_0_rows,
        dotprod::q5_0_tile,
    );
    k.offer_dot_tile(
        T::Q8_0,
        DOT,
        Isa::NeonDot,
        dotprod::q8_0_rows,
        dotprod::q8_0_tile,
    );
    k.offer_dot_tile(
        T::Q4_K,
        DOT,
        Isa::NeonDot,
        dotprod::q4_k_rows,
        dotprod::q4_k_tile,
    );
    k.offer_dot_tile(
        T::Q5_K,
        DOT,
        Isa::NeonDot,
        dotprod::q5_k_rows,
        dotprod::q5_k_tile,
    );
    k.offer_dot_tile(
        T::Q6_K,
        DOT,
        Isa::NeonDot,
        dotprod::q6_k_rows,
        dotprod::q6_k_tile,
    );
}

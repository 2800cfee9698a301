//! Every SIMD kernel the CPU running the tests can execute, against the scalar reference.
//!
//! Every tier is tested on its own: the detected features are cut down to each subset, so a
//! CPU with AVX-512 also runs the AVX2 and AVX-VNNI kernels, and one with SDOT the plain
//! NEON ones. The aarch64 tests also run under `qemu-aarch64 -cpu max` / `-cpu cortex-a72`.
extern crate std;

use std::vec;
use std::vec::Vec;

use super::super::*;

mod api;
mod attn;
mod dots;
mod f16;
mod quants;
mod tile;

/// The features of the CPU running the tests, detected with std.
pub(crate) fn detected() -> CpuFeatures {
    let mut f = CpuFeatures::none();
    #[cfg(target_arch = "x86_64")]
    {
        use std::is_x86_feature_detected as has;
        let found = [
            (Feature::Avx2, has!("avx2") && has!("fma") && has!("f16c")),
            (Feature::AvxVnni, has!("avxvnni")),
            (
                Feature::Avx512,
                has!("avx512f") && has!("avx512bw") && has!("avx512vl"),
            ),
            (Feature::Avx512Vnni, has!("avx512vnni")),
        ];
        for (feat, on) in found {
            if on {
                // SAFETY: std just detected the feature on this CPU.
                f = unsafe { f.assume(feat) };
            }
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        use std::arch::is_aarch64_feature_detected as has;
        for (feat, on) in [
            (Feature::Neon, has!("neon")),
            (Feature::DotProd, has!("dotprod")),
        ] {
            if on {
                // SAFETY: std just detected the feature on this CPU.
                f = unsafe { f.assume(feat) };
            }
        }
    }
    f
}

/// Kernel tables for every subset of the detected features, one per distinct choice.
pub(super) fn tiers() -> Vec<Kernels> {
    let full = detected();
    let present: Vec<Feature> = Feature::ALL.into_iter().filter(|&x| full.has(x)).collect();
    let mut out: Vec<Kernels> = Vec::new();
    let mut seen: Vec<Vec<Isa>> = Vec::new();
    for mask in 0u32..(1 << present.len()) {
        let mut f = full;
        for (i, &feat) in present.iter().enumerate() {
            if mask & (1 << i) != 0 {
                f = f.without(feat);
            }
        }
        let k = Kernels::select(f);
        let sig: Vec<Isa> = DOT_TYPES
            .iter()
            .map(|&t| k.dot_isa(t))
            .chain(ACT_TYPES.iter().map(|&t| k.quantize_isa(t)))
            .collect();
        if !seen.contains(&sig) {
            seen.push(sig);
            out.push(k);
        }
    }
    std::println!("detected {full}; testing {} kernel tables", out.len());
    out
}

pub(super) const DOT_TYPES: [GgmlType; 7] = [
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q8_0,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
];

pub(super) const ACT_TYPES: [GgmlType; 3] = [GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K];

pub(super) fn deq(ty: GgmlType, b: &[u8], n: usize) -> Vec<f32> {
    let mut out = vec![0.0; n];
    dequantize_row(ty, b, &mut out).unwrap();
    out
}

pub(super) fn quant_act(ty: GgmlType, x: &[f32]) -> Vec<u8> {
    let mut out = vec![0u8; ty.row_bytes(x.len()).unwrap()];
    quantize_row(ty, x, &mut out).unwrap();
    out
}

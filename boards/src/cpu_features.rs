//! Run-time CPU feature detection for the core's SIMD kernels.
//!
//! The core is `no_std` and cannot ask the CPU what it supports; this module does, with
//! std's detection macros (CPUID plus the OS's register-state check on x86-64, the auxiliary
//! vector / sysctl on aarch64), and returns the [`CpuFeatures`] that
//! [`Kernels::select`](glimmer_core::quant::Kernels::select) takes.

use glimmer_core::quant::{CpuFeatures, Feature};

/// The features of the CPU this process runs on.
pub fn detect() -> CpuFeatures {
    let mut f = CpuFeatures::none();
    for (feat, on) in probe() {
        if on {
            // SAFETY: std's detection just confirmed that this CPU supports the feature and
            // that the OS has enabled it, which is what `assume` requires.
            f = unsafe { f.assume(feat) };
        }
    }
    f
}

/// Each feature the kernels know, with whether this CPU has it.
#[cfg(target_arch = "x86_64")]
fn probe() -> Vec<(Feature, bool)> {
    use std::is_x86_feature_detected as has;
    vec![
        (Feature::Avx2, has!("avx2") && has!("fma") && has!("f16c")),
        (Feature::AvxVnni, has!("avxvnni")),
        (
            Feature::Avx512,
            has!("avx512f") && has!("avx512bw") && has!("avx512vl"),
        ),
        (Feature::Avx512Vnni, has!("avx512vnni")),
    ]
}

/// Each feature the kernels know, with whether this CPU has it.
#[cfg(target_arch = "aarch64")]
fn probe() -> Vec<(Feature, bool)> {
    use std::arch::is_aarch64_feature_detected as has;
    vec![
        (Feature::Neon, has!("neon")),
        (Feature::DotProd, has!("dotprod")),
    ]
}

/// Each feature the kernels know, with whether this CPU has it.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn probe() -> Vec<(Feature, bool)> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_covers_the_compiled_baseline() {
        let d = detect();
        let c = CpuFeatures::compiled();
        for f in Feature::ALL {
            assert!(
                !c.has(f) || d.has(f),
                "{} compiled in, not detected",
                f.name()
            );
        }
        println!("detected: {d}");
    }
}

//! Which instruction-set extensions the running CPU has, as a value the core can trust.
//!
//! The core is `no_std` and cannot ask the CPU itself, so the host detects the features (in
//! the std crate, `glimmer_boards::cpu_features::detect`) and hands over a [`CpuFeatures`].
//! Building one that claims a feature is `unsafe` ([`CpuFeatures::assume`]): the kernels
//! picked from it execute those instructions. The safe constructors only ever claim less.

use core::fmt;

/// One instruction-set extension the SIMD kernels can use.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Feature {
    /// x86-64: AVX2 together with FMA and F16C (the AVX2 kernels need all three).
    Avx2,
    /// x86-64: AVX-VNNI, the VEX-encoded `vpdpbusd` / `vpdpwssd` on 256-bit vectors.
    AvxVnni,
    /// x86-64: AVX-512 Foundation, Byte/Word and Vector Length extensions (F, BW, VL).
    Avx512,
    /// x86-64: AVX512-VNNI (`vpdpbusd` / `vpdpwssd` on EVEX-encoded vectors).
    Avx512Vnni,
    /// aarch64: Advanced SIMD (NEON).
    Neon,
    /// aarch64: the SDOT / UDOT byte dot-product instructions (FEAT_DotProd).
    DotProd,
}

impl Feature {
    /// Every feature, in declaration order.
    pub const ALL: [Feature; 6] = [
        Self::Avx2,
        Self::AvxVnni,
        Self::Avx512,
        Self::Avx512Vnni,
        Self::Neon,
        Self::DotProd,
    ];

    /// Short lowercase name, as printed in logs.
    pub fn name(self) -> &'static str {
        match self {
            Self::Avx2 => "avx2",
            Self::AvxVnni => "avxvnni",
            Self::Avx512 => "avx512",
            Self::Avx512Vnni => "avx512vnni",
            Self::Neon => "neon",
            Self::DotProd => "dotprod",
        }
    }

    const fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// A set of [`Feature`]s that the running CPU is known to have.
///
/// Only [`CpuFeatures::assume`] (unsafe) can add a feature; [`CpuFeatures::none`],
/// [`CpuFeatures::compiled`] and [`CpuFeatures::without`] are safe because they never claim
/// more than is true. `glimmer_boards::cpu_features::detect` builds the full set on a std host.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CpuFeatures {
    bits: u16,
}

impl CpuFeatures {
    /// No features: only the scalar kernels.
    pub const fn none() -> Self {
        Self { bits: 0 }
    }

    /// The features this build was compiled to require (`-C target-feature` / the target's
    /// baseline), which every CPU that runs it must have. On aarch64 this includes NEON; on
    /// `aarch64-apple-darwin` also DotProd.
    pub fn compiled() -> Self {
        let mut f = Self::none();
        let has = [
            cfg!(all(
                target_arch = "x86_64",
                target_feature = "avx2",
                target_feature = "fma",
                target_feature = "f16c"
            )),
            cfg!(all(target_arch = "x86_64", target_feature = "avxvnni")),
            cfg!(all(
                target_arch = "x86_64",
                target_feature = "avx512f",
                target_feature = "avx512bw",
                target_feature = "avx512vl"
            )),
            cfg!(all(target_arch = "x86_64", target_feature = "avx512vnni")),
            cfg!(all(target_arch = "aarch64", target_feature = "neon")),
            cfg!(all(target_arch = "aarch64", target_feature = "dotprod")),
        ];
        for (feat, on) in Feature::ALL.into_iter().zip(has) {
            if on {
                f.bits |= feat.bit();
            }
        }
        f
    }

    /// This set plus `feature`.
    ///
    /// # Safety
    ///
    /// The CPU this program runs on (every core it may be scheduled on) must support
    /// `feature` as [`Feature`] defines it, and the OS must have enabled it (for AVX and
    /// AVX-512: saved the wider registers, as `is_x86_feature_detected!` checks). Kernels
    /// selected from the result execute those instructions; without them the program hits an
    /// illegal instruction or worse.
    pub const unsafe fn assume(self, feature: Feature) -> Self {
        Self {
            bits: self.bits | feature.bit(),
        }
    }

    /// This set without `feature` (always safe: it claims less). Tests and benchmarks use it
    /// to run a lower tier on a CPU that has a higher one.
    pub const fn without(self, feature: Feature) -> Self {
        Self {
            bits: self.bits & !feature.bit(),
        }
    }

    /// Whether `feature` is in the set.
    pub const fn has(self, feature: Feature) -> bool {
        self.bits & feature.bit() != 0
    }

    /// Whether every feature in `features` is in the set.
    pub fn has_all(self, features: &[Feature]) -> bool {
        features.iter().all(|&f| self.has(f))
    }
}

impl fmt::Debug for CpuFeatures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(
                Feature::ALL
                    .iter()
                    .filter(|&&x| self.has(x))
                    .map(|x| x.name()),
            )
            .finish()
    }
}

impl fmt::Display for CpuFeatures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for feat in Feature::ALL.iter().filter(|&&x| self.has(x)) {
            if !first {
                f.write_str(",")?;
            }
            f.write_str(feat.name())?;
            first = false;
        }
        if first {
            f.write_str("none")?;
        }
        Ok(())
    }
}

/// The instruction-set tier a kernel was written for.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// Portable scalar code (the reference kernels).
    Scalar,
    /// x86-64 AVX2 + FMA + F16C, 256-bit vectors.
    Avx2,
    /// As [`Isa::Avx2`] with AVX-VNNI dot-product instructions.
    AvxVnni,
    /// x86-64 AVX-512 (F, BW, VL) with AVX512-VNNI; the kernels use 256-bit vectors.
    Avx512Vnni,
    /// x86-64 AVX-512 (F, BW, VL) on 512-bit vectors (with AVX2, FMA and F16C).
    Avx512,
    /// aarch64 NEON.
    Neon,
    /// aarch64 NEON with the SDOT dot-product instruction.
    NeonDot,
}

impl Isa {
    /// Short lowercase name, as printed in logs and benchmark tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::Scalar => "scalar",
            Self::Avx2 => "avx2",
            Self::AvxVnni => "avxvnni",
            Self::Avx512Vnni => "avx512vnni",
            Self::Avx512 => "avx512",
            Self::Neon => "neon",
            Self::NeonDot => "neon+dotprod",
        }
    }
}

impl fmt::Display for Isa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

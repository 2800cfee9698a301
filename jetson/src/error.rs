//! [`CudaError`]: why the CUDA backend refused or failed an operation.

use core::fmt;

use glimmer_core::quant::GgmlType;

/// Why a CUDA backend operation failed.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CudaError {
    /// The CUDA driver library (libcuda) could not be loaded, or it reports no device.
    NoDriver,
    /// The NVRTC library (libnvrtc) could not be loaded.
    NoNvrtc,
    /// This build has no CUDA support (the target is not one cudarc runs on).
    Unavailable,
    /// A driver call failed; the value is the `CUresult` code.
    Driver(u32),
    /// NVRTC refused the kernel sources; the log is in the kernel cache directory.
    Compile,
    /// A region lies outside the arena, has the wrong length, or overlaps another.
    BadRegion,
    /// A weight with this tensor id was not uploaded, or its shape differs from the upload.
    UnknownWeight(u32),
    /// The weight's block format has no CUDA kernel (or its rows are not whole blocks of 32).
    UnsupportedType(GgmlType),
    /// A layer, slot or position lies outside the device KV cache.
    KvRange,
    /// The KV cache storage type is not f16 (the only one the device cache holds).
    KvType,
    /// A head is wider than 256, or the query heads are not a multiple of the KV heads.
    HeadTooWide,
    /// More rows, columns or heads than the backend was sized for.
    TooLarge,
    /// A size overflows `usize`.
    Overflow,
    /// An input changed while a decode step was being captured, or capture failed.
    Graph,
}

impl CudaError {
    /// Stable short code for logs and the wire protocol.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NoDriver => "no_driver",
            Self::NoNvrtc => "no_nvrtc",
            Self::Unavailable => "unavailable",
            Self::Driver(_) => "driver",
            Self::Compile => "compile",
            Self::BadRegion => "bad_region",
            Self::UnknownWeight(_) => "unknown_weight",
            Self::UnsupportedType(_) => "unsupported_type",
            Self::KvRange => "kv_range",
            Self::KvType => "kv_type",
            Self::HeadTooWide => "head_too_wide",
            Self::TooLarge => "too_large",
            Self::Overflow => "overflow",
            Self::Graph => "graph",
        }
    }
}

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoDriver => f.write_str("no CUDA driver (libcuda) or no CUDA device"),
            Self::NoNvrtc => f.write_str("no NVRTC library (libnvrtc)"),
            Self::Unavailable => f.write_str("this build has no CUDA support"),
            Self::Driver(c) => write!(f, "CUDA driver error {c}"),
            Self::Compile => f.write_str("NVRTC could not compile the kernels (see the cache log)"),
            Self::BadRegion => f.write_str("arena region out of range or overlapping"),
            Self::UnknownWeight(id) => write!(f, "tensor {id} was not uploaded"),
            Self::UnsupportedType(t) => write!(f, "no CUDA kernel for {}", t.name()),
            Self::KvRange => f.write_str("KV layer, slot or position out of range"),
            Self::KvType => f.write_str("the device KV cache stores f16 only"),
            Self::HeadTooWide => f.write_str("head wider than 256 or bad head grouping"),
            Self::TooLarge => f.write_str("more rows, columns or heads than the backend holds"),
            Self::Overflow => f.write_str("size overflow"),
            Self::Graph => f.write_str("CUDA graph capture failed or an input changed in it"),
        }
    }
}

impl std::error::Error for CudaError {}

//! [`GpuError`]: why the GPU backend refused or failed an operation.

use core::fmt;

use glimmer_core::quant::GgmlType;

/// Why the GPU backend refused or failed an operation.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuError {
    /// No Vulkan or Metal adapter was found.
    NoAdapter,
    /// The adapter refused to open a device with its own limits.
    RequestDevice,
    /// A region lies outside the arena, straddles two arena buffers, or has the wrong length.
    BadRegion,
    /// A weight tensor was not uploaded with [`crate::GpuBackend::upload`].
    NotUploaded,
    /// No kernel for this weight or table type.
    UnsupportedType(GgmlType),
    /// A buffer (one weight row, a group of arena regions, a KV layer) exceeds the adapter's
    /// largest storage binding.
    TooLarge,
    /// A KV layer or position is outside the cache.
    KvRange,
    /// A head is wider than the attention kernel supports (512), or the head counts do not
    /// divide.
    HeadTooWide,
    /// Shapes that do not fit the kernels (an odd KV width with f16 storage, a row that is not
    /// whole 32-element units, zero sizes).
    BadShape,
    /// Reading results back failed (mapping or device loss).
    Readback,
    /// The device cannot time dispatches (no `TIMESTAMP_QUERY`), or timing was not started.
    NoTimestamps,
}

impl GpuError {
    /// Stable short code for logs and the wire protocol.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NoAdapter => "no_adapter",
            Self::RequestDevice => "request_device",
            Self::BadRegion => "bad_region",
            Self::NotUploaded => "not_uploaded",
            Self::UnsupportedType(_) => "unsupported_type",
            Self::TooLarge => "too_large",
            Self::KvRange => "kv_range",
            Self::HeadTooWide => "head_too_wide",
            Self::BadShape => "bad_shape",
            Self::Readback => "readback",
            Self::NoTimestamps => "no_timestamps",
        }
    }
}

impl fmt::Display for GpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoAdapter => f.write_str("no Vulkan or Metal GPU adapter"),
            Self::RequestDevice => f.write_str("the adapter refused to open a device"),
            Self::BadRegion => f.write_str("arena region out of range or of the wrong length"),
            Self::NotUploaded => f.write_str("weight tensor was not uploaded to the GPU"),
            Self::UnsupportedType(t) => write!(f, "no GPU kernel for type {}", t.name()),
            Self::TooLarge => f.write_str("buffer exceeds the adapter's largest binding"),
            Self::KvRange => f.write_str("KV layer or position out of range"),
            Self::HeadTooWide => f.write_str("attention heads too wide or not divisible"),
            Self::BadShape => f.write_str("shape does not fit the GPU kernels"),
            Self::Readback => f.write_str("reading GPU results back failed"),
            Self::NoTimestamps => f.write_str("GPU timestamps are not available or not started"),
        }
    }
}

impl std::error::Error for GpuError {}

//! Quantized block formats.
mod types;
pub use types::GgmlType;

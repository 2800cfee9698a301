//! Byte-level entry points: length checks, then dispatch to the typed kernels.

use core::fmt;

use bytemuck::Pod;

use super::GgmlType;
use super::{dequant as dq, dot, kquantize as kq, quantize as q};

/// Why a quantization kernel refused its arguments.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuantError {
    /// The operation has no kernel for this type.
    UnsupportedType(GgmlType),
    /// A byte or element slice has the wrong length for the row.
    BadLength {
        /// The length the row needs.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// The element count is not a whole number of blocks.
    NotBlockMultiple {
        /// The element count.
        n: usize,
        /// The block size of the type.
        block: usize,
    },
}

impl QuantError {
    /// Stable short code for logs and the wire protocol.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::UnsupportedType(_) => "unsupported_type",
            Self::BadLength { .. } => "bad_length",
            Self::NotBlockMultiple { .. } => "not_block_multiple",
        }
    }
}

impl fmt::Display for QuantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnsupportedType(t) => write!(f, "no kernel for type {}", t.name()),
            Self::BadLength { expected, got } => {
                write!(f, "row needs {expected} bytes, got {got}")
            }
            Self::NotBlockMultiple { n, block } => {
                write!(
                    f,
                    "{n} elements is not a multiple of the block size {block}"
                )
            }
        }
    }
}

impl core::error::Error for QuantError {}

/// The activation format a weight type is dotted against (what llama.cpp's CPU backend uses):
/// Q4_0, Q5_0, Q8_0 → Q8_0; Q4_1, Q5_1 → Q8_1; Q2_K … Q6_K and Q8_K → Q8_K; F16 → F16;
/// BF16 → BF16; F32 → F32. Any other type maps to itself (and [`vec_dot`] refuses it).
pub fn vec_dot_type(ty: GgmlType) -> GgmlType {
    use GgmlType as T;
    match ty {
        T::Q4_0 | T::Q5_0 | T::Q8_0 => T::Q8_0,
        T::Q4_1 | T::Q5_1 | T::Q8_1 => T::Q8_1,
        T::Q2_K | T::Q3_K | T::Q4_K | T::Q5_K | T::Q6_K | T::Q8_K => T::Q8_K,
        other => other,
    }
}

/// The byte length of a row of `n` elements of `ty`, checking that `n` is whole blocks.
pub(super) fn row_len(ty: GgmlType, n: usize) -> Result<usize, QuantError> {
    let block = ty.block_size();
    if !n.is_multiple_of(block) {
        return Err(QuantError::NotBlockMultiple { n, block });
    }
    // `row_bytes` only fails here on overflow; no slice can be that long.
    Ok(ty.row_bytes(n).unwrap_or(usize::MAX))
}

/// Checks that `got` bytes hold exactly `n` elements of `ty`.
pub(super) fn check_bytes(ty: GgmlType, n: usize, got: usize) -> Result<(), QuantError> {
    let expected = row_len(ty, n)?;
    if got != expected {
        return Err(QuantError::BadLength { expected, got });
    }
    Ok(())
}

/// Views checked bytes as blocks (cannot fail after [`check_bytes`]: all blocks have
/// alignment 1 and the length is a whole number of blocks).
fn blocks<T: Pod>(b: &[u8]) -> Result<&[T], QuantError> {
    bytemuck::try_cast_slice(b).map_err(|_| QuantError::BadLength {
        expected: 0,
        got: b.len(),
    })
}

/// Mutable form of [`blocks`].
fn blocks_mut<T: Pod>(b: &mut [u8]) -> Result<&mut [T], QuantError> {
    let got = b.len();
    bytemuck::try_cast_slice_mut(b).map_err(|_| QuantError::BadLength { expected: 0, got })
}

/// Dequantize `dst.len()` elements from raw GGUF bytes `src` (exactly `row_bytes(dst.len())`
/// bytes). Supports F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q8_0, Q8_1, Q4_K, Q5_K, Q6_K, Q8_K.
pub fn dequantize_row(ty: GgmlType, src: &[u8], dst: &mut [f32]) -> Result<(), QuantError> {
    use GgmlType as T;
    if !matches!(
        ty,
        T::F32
            | T::F16
            | T::BF16
            | T::Q4_0
            | T::Q4_1
            | T::Q5_0
            | T::Q8_0
            | T::Q8_1
            | T::Q4_K
            | T::Q5_K
            | T::Q6_K
            | T::Q8_K
    ) {
        return Err(QuantError::UnsupportedType(ty));
    }
    check_bytes(ty, dst.len(), src.len())?;
    match ty {
        T::F32 => dq::dequantize_f32(blocks(src)?, dst),
        T::F16 => dq::dequantize_f16(blocks(src)?, dst),
        T::BF16 => dq::dequantize_bf16(blocks(src)?, dst),
        T::Q4_0 => dq::dequantize_q4_0(blocks(src)?, dst),
        T::Q4_1 => dq::dequantize_q4_1(blocks(src)?, dst),
        T::Q5_0 => dq::dequantize_q5_0(blocks(src)?, dst),
        T::Q8_0 => dq::dequantize_q8_0(blocks(src)?, dst),
        T::Q8_1 => dq::dequantize_q8_1(blocks(src)?, dst),
        T::Q4_K => dq::dequantize_q4_k(blocks(src)?, dst),
        T::Q5_K => dq::dequantize_q5_k(blocks(src)?, dst),
        T::Q6_K => dq::dequantize_q6_k(blocks(src)?, dst),
        T::Q8_K => dq::dequantize_q8_k(blocks(src)?, dst),
        _ => return Err(QuantError::UnsupportedType(ty)),
    }
    Ok(())
}

/// Quantize f32 activations `src` into `ty` (Q8_0, Q8_1, Q8_K, F16, BF16 or F32), writing all
/// of `dst`, which must be exactly `row_bytes(src.len())` bytes.
pub fn quantize_row(ty: GgmlType, src: &[f32], dst: &mut [u8]) -> Result<(), QuantError> {
    use GgmlType as T;
    if !matches!(ty, T::Q8_0 | T::Q8_1 | T::Q8_K | T::F16 | T::BF16 | T::F32) {
        return Err(QuantError::UnsupportedType(ty));
    }
    check_bytes(ty, src.len(), dst.len())?;
    match ty {
        T::Q8_0 => q::quantize_q8_0_act(src, blocks_mut(dst)?),
        T::Q8_1 => q::quantize_q8_1(src, blocks_mut(dst)?),
        T::Q8_K => q::quantize_q8_k(src, blocks_mut(dst)?),
        _ => quantize_float(ty, src, dst)?,
    }
    Ok(())
}

/// The F32 / F16 / BF16 cases shared by [`quantize_row`] and [`quantize_weights`].
fn quantize_float(ty: GgmlType, src: &[f32], dst: &mut [u8]) -> Result<(), QuantError> {
    match ty {
        GgmlType::F32 => q::quantize_f32(src, blocks_mut(dst)?),
        GgmlType::F16 => q::quantize_f16(src, blocks_mut(dst)?),
        GgmlType::BF16 => q::quantize_bf16(src, blocks_mut(dst)?),
        _ => return Err(QuantError::UnsupportedType(ty)),
    }
    Ok(())
}

/// Quantize f32 weights `src` into `ty` (Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K, F16, BF16
/// or F32), writing all of `dst`, which must be exactly `row_bytes(src.len())` bytes.
///
/// The 32-element formats, F16 and BF16 give the same bytes as ggml's reference quantizers;
/// the K-quants use a simpler one-pass search (see `kquantize`).
pub fn quantize_weights(ty: GgmlType, src: &[f32], dst: &mut [u8]) -> Result<(), QuantError> {
    use GgmlType as T;
    if !matches!(
        ty,
        T::Q4_0
            | T::Q4_1
            | T::Q5_0
            | T::Q8_0
            | T::Q4_K
            | T::Q5_K
            | T::Q6_K
            | T::F16
            | T::BF16
            | T::F32
    ) {
        return Err(QuantError::UnsupportedType(ty));
    }
    check_bytes(ty, src.len(), dst.len())?;
    match ty {
        T::Q4_0 => q::quantize_q4_0(src, blocks_mut(dst)?),
        T::Q4_1 => q::quantize_q4_1(src, blocks_mut(dst)?),
        T::Q5_0 => q::quantize_q5_0(src, blocks_mut(dst)?),
        T::Q8_0 => q::quantize_q8_0(src, blocks_mut(dst)?),
        T::Q4_K => kq::quantize_q4_k(src, blocks_mut(dst)?),
        T::Q5_K => kq::quantize_q5_k(src, blocks_mut(dst)?),
        T::Q6_K => kq::quantize_q6_k(src, blocks_mut(dst)?),
        _ => quantize_float(ty, src, dst)?,
    }
    Ok(())
}

/// Whether [`vec_dot`] has a kernel for weight type `wty`.
pub(super) fn has_dot(wty: GgmlType) -> bool {
    use GgmlType as T;
    matches!(
        wty,
        T::F32
            | T::F16
            | T::BF16
            | T::Q4_0
            | T::Q4_1
            | T::Q5_0
            | T::Q8_0
            | T::Q4_K
            | T::Q5_K
            | T::Q6_K
            | T::Q8_K
    )
}

/// Dot product of one weight row (type `wty`, raw bytes) with one activation row already
/// quantized to [`vec_dot_type`]`(wty)`; `n` is the element count of both.
///
/// Supports F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K and Q8_K weights.
pub fn vec_dot(wty: GgmlType, n: usize, w: &[u8], act: &[u8]) -> Result<f32, QuantError> {
    use GgmlType as T;
    if !has_dot(wty) {
        return Err(QuantError::UnsupportedType(wty));
    }
    check_bytes(wty, n, w.len())?;
    check_bytes(vec_dot_type(wty), n, act.len())?;
    Ok(match wty {
        T::F32 => dot::vec_dot_f32(blocks(w)?, blocks(act)?),
        T::F16 => dot::vec_dot_f16(blocks(w)?, blocks(act)?),
        T::BF16 => dot::vec_dot_bf16(blocks(w)?, blocks(act)?),
        T::Q4_0 => dot::vec_dot_q4_0_q8_0(blocks(w)?, blocks(act)?),
        T::Q4_1 => dot::vec_dot_q4_1_q8_1(blocks(w)?, blocks(act)?),
        T::Q5_0 => dot::vec_dot_q5_0_q8_0(blocks(w)?, blocks(act)?),
        T::Q8_0 => dot::vec_dot_q8_0_q8_0(blocks(w)?, blocks(act)?),
        T::Q4_K => dot::vec_dot_q4_k_q8_k(blocks(w)?, blocks(act)?),
        T::Q5_K => dot::vec_dot_q5_k_q8_k(blocks(w)?, blocks(act)?),
        T::Q6_K => dot::vec_dot_q6_k_q8_k(blocks(w)?, blocks(act)?),
        T::Q8_K => dot::vec_dot_q8_k_q8_k(blocks(w)?, blocks(act)?),
        _ => return Err(QuantError::UnsupportedType(wty)),
    })
}

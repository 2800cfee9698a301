//! Tensor-info records: reading and checking one entry of the tensor table.

use super::cursor::Cursor;
use super::error::{ErrName, Field, GgufError};
use crate::quant::GgmlType;

/// Most dimensions a GGUF tensor may have.
pub const MAX_DIMS: usize = 4;

/// One tensor of a parsed file: its name, type, shape and bytes.
///
/// `dims` are GGML's `ne0..ne3`: `ne0` is the row length (contiguous), unused trailing
/// dimensions are 1. `data` is exactly the tensor's bytes inside the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorInfo<'a> {
    /// The tensor's name (`"blk.0.attn_q.weight"`).
    pub name: &'a str,
    /// Element type.
    pub ty: GgmlType,
    /// Number of dimensions stored in the file (1..=4).
    pub n_dims: usize,
    /// `ne0..ne3`; dimensions past `n_dims` are 1.
    pub dims: [u64; 4],
    /// Offset of the bytes relative to [`super::Gguf::data_offset`].
    pub offset: u64,
    /// The tensor's bytes.
    pub data: &'a [u8],
}

impl TensorInfo<'_> {
    /// Total number of elements (product of the dimensions).
    pub fn n_elements(&self) -> u64 {
        // Checked at parse time to be at most i64::MAX; saturate rather than panic anyway.
        self.dims.iter().fold(1u64, |acc, &d| acc.saturating_mul(d))
    }

    /// Elements per row (`ne0`).
    pub fn row_len(&self) -> usize {
        usize::try_from(self.dims[0]).unwrap_or(usize::MAX)
    }

    /// Number of rows (product of `ne1..ne3`).
    pub fn n_rows(&self) -> usize {
        let rows = self.dims[1..]
            .iter()
            .fold(1u64, |acc, &d| acc.saturating_mul(d));
        usize::try_from(rows).unwrap_or(usize::MAX)
    }

    /// Bytes per row (`data.len() / n_rows()`).
    pub fn row_bytes(&self) -> usize {
        self.ty.row_bytes(self.row_len()).unwrap_or(0)
    }
}

/// A tensor-info record as read from the table, before its bytes are located.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawTensor<'a> {
    pub(crate) name: &'a str,
    pub(crate) ty: GgmlType,
    pub(crate) n_dims: usize,
    pub(crate) dims: [u64; 4],
    pub(crate) offset: u64,
    pub(crate) size: u64,
}

/// Reads tensor-info record `index` and checks its dimension count, type, shape and
/// alignment. Its data range is checked later, once the data region's start is known.
pub(crate) fn read_tensor_info<'a>(
    cur: &mut Cursor<'a>,
    index: usize,
    alignment: usize,
) -> Result<RawTensor<'a>, GgufError> {
    let name = cur.str()?;
    let n_dims_raw = cur.u32(Field::TensorNDims)?;
    let tensor = || ErrName::new(name);
    let n_dims = match usize::try_from(n_dims_raw) {
        Ok(n @ 1..=MAX_DIMS) => n,
        _ => {
            return Err(GgufError::BadDimCount {
                tensor: tensor(),
                index,
                n_dims: n_dims_raw,
            })
        }
    };
    let mut dims = [1u64; 4];
    for d in dims.iter_mut().take(n_dims) {
        *d = cur.u64(Field::TensorDims)?;
    }
    let ty_raw = cur.u32(Field::TensorType)?;
    let offset = cur.u64(Field::TensorOffset)?;

    let ty = GgmlType::from_u32(ty_raw).ok_or(GgufError::UnknownTensorType {
        tensor: tensor(),
        index,
        ty: ty_raw,
    })?;
    if let Some(dim) = dims.iter().position(|&d| d == 0) {
        return Err(GgufError::ZeroDim {
            tensor: tensor(),
            index,
            dim,
        });
    }
    let overflow = || GgufError::ShapeOverflow {
        tensor: tensor(),
        index,
    };
    let n_elements = dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .ok_or_else(overflow)?;
    if n_elements > i64::MAX as u64 {
        return Err(overflow());
    }
    let ne0 = dims[0];
    let block = ty.block_size();
    if !ne0.is_multiple_of(block as u64) {
        return Err(GgufError::RowNotBlockAligned {
            tensor: tensor(),
            index,
            ne0,
            block,
        });
    }
    let row_bytes = usize::try_from(ne0)
        .ok()
        .and_then(|n| ty.row_bytes(n))
        .ok_or_else(overflow)?;
    let n_rows = n_elements / ne0; // ne0 >= 1, checked above.
    let size = (row_bytes as u64)
        .checked_mul(n_rows)
        .ok_or_else(overflow)?;
    if usize::try_from(size).is_err() {
        return Err(overflow());
    }
    if offset.checked_rem(alignment as u64) != Some(0) {
        return Err(GgufError::MisalignedTensor {
            tensor: tensor(),
            index,
            offset,
            alignment,
        });
    }
    Ok(RawTensor {
        name,
        ty,
        n_dims,
        dims,
        offset,
        size,
    })
}

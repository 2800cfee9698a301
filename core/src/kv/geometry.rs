//! [`KvGeometry`]: how many positions each layer keeps, and how a page is laid out.

use crate::model::{LayerKind, ModelSpec, MAX_LAYERS};
use crate::plan::KvType;

use super::KvError;

/// Positions per page (per layer).
pub const PAGE_POSITIONS: usize = 64;

/// `u16` units of one Q8_0 block: an f16 scale and 32 `i8`s (34 bytes).
const Q8_0_UNITS: usize = 17;

/// The shape of one session's KV cache and of the pages that hold it.
///
/// Layer `il` keeps `cap(il)` positions: the context for a global layer, a ring of
/// `min(ctx, window + rows)` for a sliding one, where `rows` is the most tokens one forward
/// call writes (a chunk of `rows` new tokens written at the end of the ring still needs the
/// keys back to `window − 1` positions before its first one). Position `p` of a layer lives in
/// slot `p mod cap`, slot `s` in the layer's page `s / PAGE_POSITIONS`.
///
/// A page holds [`PAGE_POSITIONS`] positions of one layer: the keys `(PAGE_POSITIONS, k_units)`
/// then the values `(PAGE_POSITIONS, v_units)`, in `u16` units (f16 bits, or Q8_0 blocks of 17
/// units).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KvGeometry {
    /// Layers.
    pub n_layer: usize,
    /// Context length (positions of a global layer).
    pub ctx: usize,
    /// Positions kept by each layer (`ctx` or the ring length).
    pub caps: [usize; MAX_LAYERS],
    /// Key values per position.
    pub k_dim: usize,
    /// Value values per position.
    pub v_dim: usize,
    /// Storage type.
    pub ty: KvType,
}

impl KvGeometry {
    /// The geometry of `spec` at context `ctx`, for forward calls of at most `rows` tokens.
    pub fn new(spec: &ModelSpec, ctx: usize, rows: usize, ty: KvType) -> Result<Self, KvError> {
        if ctx == 0 || rows == 0 || spec.n_layer == 0 || spec.n_layer > MAX_LAYERS {
            return Err(KvError::BadShape);
        }
        let mut caps = [0usize; MAX_LAYERS];
        for (il, cap) in caps.iter_mut().enumerate().take(spec.n_layer) {
            *cap = match spec.layer_kind(il) {
                LayerKind::Global => ctx,
                LayerKind::Sliding { window } => (window as usize)
                    .checked_add(rows)
                    .ok_or(KvError::Overflow)?
                    .min(ctx),
            };
        }
        let g = KvGeometry {
            n_layer: spec.n_layer,
            ctx,
            caps,
            k_dim: spec.k_dim(),
            v_dim: spec.v_dim(),
            ty,
        };
        g.page_units()?;
        g.pages_per_slot()?;
        Ok(g)
    }

    /// `u16` units of one position's keys (or values) of width `dim`.
    pub fn row_units(&self, dim: usize) -> Result<usize, KvError> {
        match self.ty {
            KvType::F16 => Ok(dim),
            KvType::Q8_0 if dim.is_multiple_of(32) => Ok(dim / 32 * Q8_0_UNITS),
            KvType::Q8_0 => Err(KvError::NotBlocked),
        }
    }

    /// `u16` units of one page.
    pub fn page_units(&self) -> Result<usize, KvError> {
        let per_pos = self
            .row_units(self.k_dim)?
            .checked_add(self.row_units(self.v_dim)?)
            .ok_or(KvError::Overflow)?;
        per_pos.checked_mul(PAGE_POSITIONS).ok_or(KvError::Overflow)
    }

    /// Positions layer `il` keeps (0 past the last layer).
    pub fn cap(&self, il: usize) -> usize {
        self.caps.get(il).copied().unwrap_or(0)
    }

    /// Pages layer `il` needs.
    pub fn layer_pages(&self, il: usize) -> usize {
        self.cap(il).div_ceil(PAGE_POSITIONS)
    }

    /// Pages of one whole session (every layer fully written).
    pub fn pages_per_slot(&self) -> Result<usize, KvError> {
        (0..self.n_layer).try_fold(0usize, |acc, il| {
            acc.checked_add(self.layer_pages(il))
                .ok_or(KvError::Overflow)
        })
    }

    /// Index of layer `il`'s first entry in a session's page table.
    pub(super) fn table_base(&self, il: usize) -> usize {
        // Bounded by `pages_per_slot`, which was checked for overflow in `new`.
        (0..il).map(|l| self.layer_pages(l)).sum()
    }
}

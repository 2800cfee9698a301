//! [`KvLayout`]: where each slot and layer of the f16 KV cache lives in device memory.

use glimmer_core::kv::KvGeometry;
use glimmer_core::plan::KvType;

use crate::CudaError;

/// The device KV cache's layout, in `u16` (f16) units.
///
/// ```text
/// slot s            at s * slot_stride
///   layer l keys    at k_off[l]: (cap[l], k_dim)    position p in row p % cap[l]
///   layer l values  at v_off[l]: (cap[l], v_dim)
/// ```
/// Caps come from [`KvGeometry`] (the context for global layers, a ring for sliding ones).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KvLayout {
    /// Positions kept per layer.
    pub caps: Vec<usize>,
    /// Key offset of each layer inside a slot.
    pub k_off: Vec<usize>,
    /// Value offset of each layer inside a slot.
    pub v_off: Vec<usize>,
    /// Keys per position.
    pub k_dim: usize,
    /// Values per position.
    pub v_dim: usize,
    /// Context length.
    pub ctx: usize,
    /// Units per slot.
    pub slot_stride: usize,
    /// Slots (sessions).
    pub slots: usize,
}

impl KvLayout {
    /// The layout of `slots` sessions of geometry `geo` (which must store f16).
    pub fn new(geo: &KvGeometry, slots: usize) -> Result<Self, CudaError> {
        if geo.ty != KvType::F16 {
            return Err(CudaError::KvType);
        }
        if slots == 0 {
            return Err(CudaError::KvRange);
        }
        let mut caps = Vec::with_capacity(geo.n_layer);
        let mut k_off = Vec::with_capacity(geo.n_layer);
        let mut v_off = Vec::with_capacity(geo.n_layer);
        let mut at = 0usize;
        let ovf = CudaError::Overflow;
        for il in 0..geo.n_layer {
            let cap = geo.cap(il);
            caps.push(cap);
            k_off.push(at);
            at = at
                .checked_add(cap.checked_mul(geo.k_dim).ok_or(ovf)?)
                .ok_or(ovf)?;
            v_off.push(at);
            at = at
                .checked_add(cap.checked_mul(geo.v_dim).ok_or(ovf)?)
                .ok_or(ovf)?;
        }
        // Slots start 128-byte aligned.
        let slot_stride = at.checked_add(63).ok_or(ovf)? & !63;
        slot_stride.checked_mul(slots).ok_or(ovf)?;
        Ok(KvLayout {
            caps,
            k_off,
            v_off,
            k_dim: geo.k_dim,
            v_dim: geo.v_dim,
            ctx: geo.ctx,
            slot_stride,
            slots,
        })
    }

    /// Bytes of the whole cache.
    pub fn bytes(&self) -> usize {
        self.slot_stride * self.slots * 2
    }
}

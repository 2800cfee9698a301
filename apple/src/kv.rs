//! The KV cache on the GPU: one storage buffer per layer and session slot, keys then values,
//! positions at `pos % cap` (a ring for sliding layers, linear for global ones; caps from
//! [`glimmer_core::kv::KvGeometry`]). Each slot holds one sequence; the backend's current slot
//! ([`crate::GpuBackend::set_slot`]) is the one the KV ops read and write.

use glimmer_core::kv::KvGeometry;

use crate::GpuError;

/// How keys and values are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuKvType {
    /// IEEE half, two per `u32` word (the widths must be even).
    F16,
    /// f32.
    F32,
}

/// Per-layer shape of the cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KvShape {
    /// Positions each layer keeps.
    pub caps: Vec<usize>,
    /// Key values per position (all heads).
    pub k_dim: usize,
    /// Value values per position (all heads).
    pub v_dim: usize,
    /// Storage type.
    pub ty: GpuKvType,
    /// Independent sequences (session slots), each with a cache of its own (at least 1).
    pub slots: usize,
}

impl KvShape {
    /// The shape of a core [`KvGeometry`] (its caps and widths) stored as `ty`.
    pub fn from_geometry(g: &KvGeometry, ty: GpuKvType) -> Self {
        KvShape {
            caps: g.caps[..g.n_layer].to_vec(),
            k_dim: g.k_dim,
            v_dim: g.v_dim,
            ty,
            slots: 1,
        }
    }

    /// The same shape with `slots` session slots.
    pub fn with_slots(self, slots: usize) -> Self {
        KvShape { slots, ..self }
    }

    /// Words of one position's keys and values.
    pub(crate) fn words(&self) -> Result<(usize, usize), GpuError> {
        match self.ty {
            GpuKvType::F32 => Ok((self.k_dim, self.v_dim)),
            GpuKvType::F16 if self.k_dim.is_multiple_of(2) && self.v_dim.is_multiple_of(2) => {
                Ok((self.k_dim / 2, self.v_dim / 2))
            }
            GpuKvType::F16 => Err(GpuError::BadShape),
        }
    }

    /// Bytes of layer `il`'s buffer.
    pub(crate) fn layer_bytes(&self, il: usize) -> Result<u64, GpuError> {
        let (kw, vw) = self.words()?;
        let cap = *self.caps.get(il).ok_or(GpuError::KvRange)?;
        (cap as u64)
            .checked_mul((kw + vw) as u64 * 4)
            .ok_or(GpuError::TooLarge)
    }

    /// Bytes of the whole cache, every slot.
    pub fn total_bytes(&self) -> Result<u64, GpuError> {
        let one = (0..self.caps.len()).try_fold(0u64, |a, il| {
            a.checked_add(self.layer_bytes(il)?)
                .ok_or(GpuError::TooLarge)
        })?;
        one.checked_mul(self.slots as u64).ok_or(GpuError::TooLarge)
    }
}

//! A flat f16 KV cache: for every layer, `ctx` positions of keys then `ctx` positions of values.

use half::f16;

/// KV storage for every layer, in caller-provided memory.
///
/// Layout per layer: `k (ctx, k_dim)` then `v (ctx, v_dim)`, as f16 bits.
pub struct KvCache<'a> {
    data: &'a mut [u16],
    n_layer: usize,
    ctx: usize,
    k_dim: usize,
    v_dim: usize,
}

impl<'a> KvCache<'a> {
    /// `u16` elements needed for `n_layer` layers of `ctx` positions.
    pub fn elements(n_layer: usize, ctx: usize, k_dim: usize, v_dim: usize) -> Option<usize> {
        n_layer
            .checked_mul(ctx)?
            .checked_mul(k_dim.checked_add(v_dim)?)
    }

    /// Wraps `data`, which must hold [`KvCache::elements`] values; `None` if it is too small.
    pub fn new(
        data: &'a mut [u16],
        n_layer: usize,
        ctx: usize,
        k_dim: usize,
        v_dim: usize,
    ) -> Option<Self> {
        let need = Self::elements(n_layer, ctx, k_dim, v_dim)?;
        if data.len() < need {
            return None;
        }
        Some(KvCache {
            data,
            n_layer,
            ctx,
            k_dim,
            v_dim,
        })
    }

    /// Positions per layer.
    pub fn ctx(&self) -> usize {
        self.ctx
    }

    fn layer_base(&self, layer: usize) -> usize {
        layer * self.ctx * (self.k_dim + self.v_dim)
    }

    /// Writes one position's keys and values. `false` if out of range.
    pub fn store(&mut self, layer: usize, pos: usize, k: &[f32], v: &[f32]) -> bool {
        if layer >= self.n_layer
            || pos >= self.ctx
            || k.len() != self.k_dim
            || v.len() != self.v_dim
        {
            return false;
        }
        let base = self.layer_base(layer);
        let ko = base + pos * self.k_dim;
        let vo = base + self.ctx * self.k_dim + pos * self.v_dim;
        for (d, &s) in self.data[ko..ko + self.k_dim].iter_mut().zip(k) {
            *d = f16::from_f32(s).to_bits();
        }
        for (d, &s) in self.data[vo..vo + self.v_dim].iter_mut().zip(v) {
            *d = f16::from_f32(s).to_bits();
        }
        true
    }

    /// Keys of `layer` at positions `0..len`, as `(len, k_dim)` f16 bits.
    pub fn keys(&self, layer: usize, len: usize) -> Option<&[u16]> {
        if layer >= self.n_layer || len > self.ctx {
            return None;
        }
        let base = self.layer_base(layer);
        self.data.get(base..base + len * self.k_dim)
    }

    /// Values of `layer` at positions `0..len`, as `(len, v_dim)` f16 bits.
    pub fn values(&self, layer: usize, len: usize) -> Option<&[u16]> {
        if layer >= self.n_layer || len > self.ctx {
            return None;
        }
        let base = self.layer_base(layer) + self.ctx * self.k_dim;
        self.data.get(base..base + len * self.v_dim)
    }
}

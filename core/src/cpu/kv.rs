//! The hybrid f16 KV cache: linear storage for global layers, rings for sliding layers.
//!
//! A global layer keeps every position up to `ctx`. A sliding layer with window `W` only ever
//! reads the last `W` positions, so it keeps a ring of `ring` slots (`ring ≥ W + chunk − 1`,
//! the positions one chunk of new tokens can still need), and position `p` lives in slot
//! `p mod ring`. With Gemma 3's window of 512 at a context of 32K, the sliding layers hold 1/60
//! of what they would hold linearly.
//!
//! Layout: layer after layer, each `k (cap, k_dim)` then `v (cap, v_dim)` as f16 bits, where
//! `cap` is `ctx` (global) or `ring` (sliding).

use half::f16;

/// KV storage for every layer, in caller-provided memory.
pub struct KvCache<'a> {
    data: &'a mut [u16],
    n_layer: usize,
    ctx: usize,
    ring: usize,
    /// Bit `il` set: layer `il` is sliding (ring storage).
    sliding: u64,
    k_dim: usize,
    v_dim: usize,
}

/// The shape of a [`KvCache`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KvShape {
    /// Layers (at most 64).
    pub n_layer: usize,
    /// Positions of a global layer.
    pub ctx: usize,
    /// Slots of a sliding layer's ring (`min(ctx, window + chunk)`).
    pub ring: usize,
    /// Bit `il` set: layer `il` is sliding.
    pub sliding: u64,
    /// Key values per position.
    pub k_dim: usize,
    /// Value values per position.
    pub v_dim: usize,
}

impl KvShape {
    /// Capacity (positions) of layer `il`.
    pub fn cap(&self, il: usize) -> usize {
        if self.sliding >> il & 1 == 1 {
            self.ring
        } else {
            self.ctx
        }
    }

    /// `u16` elements before layer `il`, or `None` on overflow.
    fn base(&self, il: usize) -> Option<usize> {
        let below = if il >= 64 { u64::MAX } else { (1u64 << il) - 1 };
        let n_sliding = (self.sliding & below).count_ones() as usize;
        let n_global = il - n_sliding.min(il);
        let positions = n_global
            .checked_mul(self.ctx)?
            .checked_add(n_sliding.checked_mul(self.ring)?)?;
        positions.checked_mul(self.k_dim.checked_add(self.v_dim)?)
    }

    /// Total `u16` elements of the cache, or `None` on overflow.
    pub fn elements(&self) -> Option<usize> {
        if self.n_layer > 64 {
            return None;
        }
        self.base(self.n_layer)
    }
}

impl<'a> KvCache<'a> {
    /// Wraps `data`, which must hold [`KvShape::elements`] values; `None` if it is too small
    /// or the shape is invalid (a ring shorter than needed is the caller's contract: see
    /// [`crate::exec::Layout`]).
    pub fn new(data: &'a mut [u16], shape: KvShape) -> Option<Self> {
        let need = shape.elements()?;
        if data.len() < need || shape.ring == 0 || shape.ring > shape.ctx {
            return None;
        }
        Some(KvCache {
            data,
            n_layer: shape.n_layer,
            ctx: shape.ctx,
            ring: shape.ring,
            sliding: shape.sliding,
            k_dim: shape.k_dim,
            v_dim: shape.v_dim,
        })
    }

    fn shape(&self) -> KvShape {
        KvShape {
            n_layer: self.n_layer,
            ctx: self.ctx,
            ring: self.ring,
            sliding: self.sliding,
            k_dim: self.k_dim,
            v_dim: self.v_dim,
        }
    }

    /// Positions of a global layer (the context length).
    pub fn ctx(&self) -> usize {
        self.ctx
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
        let sh = self.shape();
        let (Some(base), cap) = (sh.base(layer), sh.cap(layer)) else {
            return false;
        };
        let slot = pos % cap;
        let ko = base + slot * self.k_dim;
        let vo = base + cap * self.k_dim + slot * self.v_dim;
        for (d, &s) in self.data[ko..ko + self.k_dim].iter_mut().zip(k) {
            *d = f16::from_f32(s).to_bits();
        }
        for (d, &s) in self.data[vo..vo + self.v_dim].iter_mut().zip(v) {
            *d = f16::from_f32(s).to_bits();
        }
        true
    }

    /// Keys and values of `layer` (`(cap, k_dim)` and `(cap, v_dim)` f16 bits) and its
    /// capacity: position `p` is in slot `p % cap`.
    pub fn layer(&self, layer: usize) -> Option<(&[u16], &[u16], usize)> {
        if layer >= self.n_layer {
            return None;
        }
        let sh = self.shape();
        let base = sh.base(layer)?;
        let cap = sh.cap(layer);
        let k = self.data.get(base..base + cap * self.k_dim)?;
        let v = self
            .data
            .get(base + cap * self.k_dim..base + cap * (self.k_dim + self.v_dim))?;
        Some((k, v, cap))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_layers_wrap_and_global_layers_do_not() {
        let shape = KvShape {
            n_layer: 2,
            ctx: 16,
            ring: 4,
            sliding: 0b01,
            k_dim: 2,
            v_dim: 2,
        };
        assert_eq!(shape.elements(), Some((16 + 4) * 4));
        let mut data = [0u16; 80];
        let mut kv = KvCache::new(&mut data, shape).unwrap();
        for p in 0..10 {
            let x = [p as f32, -(p as f32)];
            assert!(kv.store(0, p, &x, &x));
            assert!(kv.store(1, p, &x, &x));
        }
        let (k0, _, cap0) = kv.layer(0).unwrap();
        assert_eq!(cap0, 4);
        // Slot 9 % 4 = 1 holds position 9; slot 2 holds 6 (9 − 3): the last 4 positions.
        assert_eq!(f16::from_bits(k0[2]).to_f32(), 9.0);
        assert_eq!(f16::from_bits(k0[4]).to_f32(), 6.0);
        let (k1, v1, cap1) = kv.layer(1).unwrap();
        assert_eq!(cap1, 16);
        assert_eq!(f16::from_bits(k1[2 * 3]).to_f32(), 3.0);
        assert_eq!(f16::from_bits(v1[2 * 9 + 1]).to_f32(), -9.0);
        assert!(!kv.store(1, 16, &[0.0; 2], &[0.0; 2]));
    }
}

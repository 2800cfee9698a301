//! Quants of one block in element order, as small integer arrays (ggml's `aux8` step).
//!
//! Dequantization and dot products both start from these, so the bit layouts live in one
//! place, and the fixed-size loops that follow vectorize well.

use super::blocks::{BlockQ4K, BlockQ4_0, BlockQ4_1, BlockQ5K, BlockQ5_0, BlockQ6K, QK32, QK_K};

/// Element `j` from the low nibble of byte `j`, element `j + 16` from its high nibble, minus `off`.
#[inline(always)]
fn nibbles32(qs: &[u8; QK32 / 2], off: i8) -> [i8; QK32] {
    let mut q = [0i8; QK32];
    let (lo, hi) = q.split_at_mut(QK32 / 2);
    for ((&b, l), h) in qs.iter().zip(lo).zip(hi) {
        *l = (b & 0x0f) as i8 - off;
        *h = (b >> 4) as i8 - off;
    }
    q
}

/// 32-byte runs hold 64 elements: 32 low nibbles, then 32 high nibbles.
#[inline(always)]
fn nibbles256(qs: &[u8; QK_K / 2]) -> [i8; QK_K] {
    let mut q = [0i8; QK_K];
    for (src, dst) in qs.chunks_exact(32).zip(q.chunks_exact_mut(64)) {
        let (lo, hi) = dst.split_at_mut(32);
        for ((&b, l), h) in src.iter().zip(lo).zip(hi) {
            *l = (b & 0x0f) as i8;
            *h = (b >> 4) as i8;
        }
    }
    q
}

impl BlockQ4_0 {
    /// The signed quants `q - 8` (-8..=7).
    #[inline]
    pub fn quants(&self) -> [i8; QK32] {
        nibbles32(&self.qs, 8)
    }
}

impl BlockQ4_1 {
    /// The quants `q` (0..=15).
    #[inline]
    pub fn quants(&self) -> [i8; QK32] {
        nibbles32(&self.qs, 0)
    }
}

impl BlockQ5_0 {
    /// The signed quants `q - 16` (-16..=15).
    #[inline]
    pub fn quants(&self) -> [i8; QK32] {
        let mut q = nibbles32(&self.qs, 16);
        // Bit i of qh byte k is the fifth bit of element 8k + i (qh is a little-endian u32).
        for (&h, run) in self.qh.iter().zip(q.chunks_exact_mut(8)) {
            for (i, v) in run.iter_mut().enumerate() {
                if h & (1 << i) != 0 {
                    *v += 16;
                }
            }
        }
        q
    }
}

impl BlockQ4K {
    /// The quants `q` (0..=15); sub-block `j` is elements `32j..32j + 32`.
    #[inline]
    pub fn quants(&self) -> [i8; QK_K] {
        nibbles256(&self.qs)
    }
}

impl BlockQ5K {
    /// The quants `q` (0..=31); sub-block `j` is elements `32j..32j + 32`.
    #[inline]
    pub fn quants(&self) -> [i8; QK_K] {
        let mut q = nibbles256(&self.qs);
        for (j, sub) in q.chunks_exact_mut(32).enumerate() {
            for (v, &h) in sub.iter_mut().zip(&self.qh) {
                *v |= (((h >> j) & 1) << 4) as i8;
            }
        }
        q
    }
}

impl BlockQ6K {
    /// The signed quants `q - 32` (-32..=31); sub-block `j` is elements `16j..16j + 16`.
    #[inline]
    pub fn quants(&self) -> [i8; QK_K] {
        let mut q = [0i8; QK_K];
        let halves = self.ql.chunks_exact(64).zip(self.qh.chunks_exact(32));
        for ((ql, qh), dst) in halves.zip(q.chunks_exact_mut(128)) {
            let (d01, d23) = dst.split_at_mut(64);
            let (d0, d1) = d01.split_at_mut(32);
            let (d2, d3) = d23.split_at_mut(32);
            let (la, lb) = ql.split_at(32);
            let it = la.iter().zip(lb).zip(qh);
            for (l, ((&a, &b), &h)) in it.enumerate() {
                d0[l] = ((a & 0x0f) | ((h & 3) << 4)) as i8 - 32;
                d1[l] = ((b & 0x0f) | (((h >> 2) & 3) << 4)) as i8 - 32;
                d2[l] = ((a >> 4) | (((h >> 4) & 3) << 4)) as i8 - 32;
                d3[l] = ((b >> 4) | ((h >> 6) << 4)) as i8 - 32;
            }
        }
        q
    }
}

//! The hybrid KV cache in fixed pages: linear for global layers, rings for sliding layers.
//!
//! A global layer keeps every position up to the context; a sliding layer with window `W` only
//! ever reads the last `W` positions, so it keeps a ring of `W + rows` slots (see
//! [`KvGeometry`]). With Gemma 3's window of 512 at a context of 32K the sliding layers hold
//! 1/60 of what they would hold linearly.
//!
//! Storage is a [`PagePool`] of fixed pages of [`PAGE_POSITIONS`] positions of one layer, in
//! memory the host hands over once. Each session (slot) has a page table; pages are taken as
//! positions are written and carry reference counts, so sessions can share a prompt prefix
//! ([`PagePool::share_prefix`]) and copy a page only when one of them writes it.
//!
//! Values are stored as f16 bits or as Q8_0 blocks ([`crate::plan::KvType`]); this module only
//! places them. The backend converts rows on write and read.

mod geometry;
mod pool;
#[cfg(test)]
mod tests;

pub use geometry::{KvGeometry, PAGE_POSITIONS};
pub use pool::{data_len, meta_len, LayerView, PagePool, SlotKv, NO_PAGE};

/// Why the KV cache refused an operation.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvError {
    /// Zero layers, context or slots, or more layers than supported.
    BadShape,
    /// A size overflows `usize`.
    Overflow,
    /// Q8_0 storage needs key and value widths that are multiples of 32.
    NotBlocked,
    /// The host memory is smaller than the pool needs.
    TooSmall,
    /// No session slot has this index (or source and destination are the same).
    NoSlot,
    /// A layer or position is outside the cache, or a position was never written.
    Range,
    /// Every page is taken (only possible in a pool smaller than `slots × pages_per_slot`).
    PoolEmpty,
    /// The source session's ring has already overwritten positions the prefix needs.
    NotShareable,
}

impl core::fmt::Display for KvError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Self::BadShape => "KV shape has zero layers, context or slots",
            Self::Overflow => "KV sizes overflow",
            Self::NotBlocked => "q8_0 KV needs key and value widths divisible by 32",
            Self::TooSmall => "KV memory is smaller than the pool",
            Self::NoSlot => "no such KV slot",
            Self::Range => "KV layer or position out of range",
            Self::PoolEmpty => "KV page pool is empty",
            Self::NotShareable => "KV prefix is no longer in the source's ring",
        })
    }
}

impl core::error::Error for KvError {}

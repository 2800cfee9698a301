//! The static memory plan: what one model takes under given limits, before anything is allocated.
//!
//! [`Plan::new`] adds up the weights (the file's tensor bytes), the KV cache of every session and
//! the activation arena of one forward chunk ([`Layout`]); [`Plan::check`] compares the result
//! with a board's [`Budget`] and names the first budget it breaks.
//!
//! # KV geometry
//! Global layers keep `ctx` positions. Sliding layers keep a ring of `min(ctx, window + rows)`
//! positions, where `rows = max(chunk, spec_block)`: a chunk of `rows` new tokens written at the
//! end of the ring still needs the keys back to `window − 1` positions before its first token
//! (one spare position keeps the formula simple). Each layer's positions are rounded up to whole
//! pages of [`PAGE_POSITIONS`]. All sizes are `u64` with checked arithmetic.

mod budget;
#[cfg(test)]
mod tests;

pub use budget::{Budget, BudgetKind, ByteSize};

use crate::exec::{Layout, LayoutError, Limits};
use crate::model::{LayerKind, ModelSpec};

/// Positions per KV page (per layer): [`crate::kv::PAGE_POSITIONS`].
pub const PAGE_POSITIONS: u64 = crate::kv::PAGE_POSITIONS as u64;

/// Storage type of the KV cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvType {
    /// IEEE half floats: 2 bytes a value.
    F16,
    /// GGML Q8_0 blocks: 32 values in 34 bytes (an f16 scale and 32 `i8`).
    Q8_0,
}

impl KvType {
    /// The name used on the command line (`f16`, `q8_0`).
    pub const fn name(self) -> &'static str {
        match self {
            Self::F16 => "f16",
            Self::Q8_0 => "q8_0",
        }
    }

    /// Parses [`KvType::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "f16" => Some(Self::F16),
            "q8_0" => Some(Self::Q8_0),
            _ => None,
        }
    }

    /// Bytes of one position of one layer: keys (`k_dim` values) and values (`v_dim`).
    ///
    /// Q8_0 needs both widths to be multiples of 32 ([`PlanError::KvNotBlocked`]).
    pub fn bytes_per_position(self, k_dim: usize, v_dim: usize) -> Result<u64, PlanError> {
        let values = to_u64(k_dim)?
            .checked_add(to_u64(v_dim)?)
            .ok_or(PlanError::Overflow)?;
        match self {
            Self::F16 => values.checked_mul(2).ok_or(PlanError::Overflow),
            Self::Q8_0 => {
                if !k_dim.is_multiple_of(32) || !v_dim.is_multiple_of(32) {
                    return Err(PlanError::KvNotBlocked);
                }
                (values / 32).checked_mul(34).ok_or(PlanError::Overflow)
            }
        }
    }
}

/// The limits a plan is made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanLimits {
    /// Context length of each session (positions).
    pub ctx: usize,
    /// Sessions whose KV caches are resident at once.
    pub sessions: usize,
    /// Most tokens per forward call (prefill chunk).
    pub chunk: usize,
    /// Most rows of logits one call returns (1 for plain decoding).
    pub logit_rows: usize,
    /// Worker threads that each need their own attention scratch.
    pub threads: usize,
    /// Tokens of one speculative block verified in one call (0: no speculation). The forward
    /// chunk then has `max(chunk, spec_block)` rows and as many logit rows.
    pub spec_block: usize,
    /// Storage type of the KV cache.
    pub kv_type: KvType,
}

impl PlanLimits {
    /// Rows of one forward call: `max(chunk, spec_block)`.
    pub fn rows(&self) -> usize {
        self.chunk.max(self.spec_block)
    }
}

/// Why a plan could not be made, or does not fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlanError {
    /// The activation layout could not be made.
    Layout(LayoutError),
    /// A size overflows `u64` (or `usize`).
    Overflow,
    /// A limit is zero (`ctx`, `sessions`, `chunk`, `logit_rows`, `threads`).
    BadLimits,
    /// The KV type stores blocks of 32 values and the key or value width is not a multiple of 32.
    KvNotBlocked,
    /// The plan needs more than a budget allows.
    OverBudget {
        /// Which budget.
        which: BudgetKind,
        /// Bytes the plan needs.
        need: u64,
        /// Bytes the budget allows.
        have: u64,
    },
}

impl core::fmt::Display for PlanError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Self::Layout(LayoutError::BadLimits) => {
                f.write_str("bad activation limits (zero, or chunk above the maximum)")
            }
            Self::Layout(e) => write!(f, "activation layout: {e:?}"),
            Self::Overflow => f.write_str("sizes overflow"),
            Self::BadLimits => f.write_str("a limit is zero"),
            Self::KvNotBlocked => f.write_str("q8_0 KV needs key and value widths divisible by 32"),
            Self::OverBudget { which, need, have } => write!(
                f,
                "{} needs {}, budget {}: {} over",
                which.name(),
                ByteSize(need),
                ByteSize(have),
                ByteSize(need.saturating_sub(have))
            ),
        }
    }
}

/// Sizes of everything one model takes under [`PlanLimits`], in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The limits planned for.
    pub limits: PlanLimits,
    /// Weights (the file's tensor bytes, mapped or copied).
    pub weights_bytes: u64,
    /// Layers that keep every position.
    pub global_layers: u64,
    /// Layers that keep a ring of the last positions.
    pub sliding_layers: u64,
    /// Positions each global layer keeps (page-rounded).
    pub global_positions: u64,
    /// Positions the longest sliding ring keeps (page-rounded; 0 without sliding layers).
    pub sliding_positions: u64,
    /// Bytes of one position of one layer.
    pub kv_position_bytes: u64,
    /// KV of the global layers, all sessions.
    pub kv_global_bytes: u64,
    /// KV of the sliding layers, all sessions.
    pub kv_sliding_bytes: u64,
    /// What the KV would take if every layer kept `ctx` positions, all sessions (for reports).
    pub kv_all_global_bytes: u64,
    /// KV pages of [`PAGE_POSITIONS`] positions, all layers and sessions.
    pub kv_pages: u64,
    /// The page pool's bookkeeping: reference counts, free stack and page tables
    /// ([`crate::kv::meta_len`] `u32`s).
    pub kv_meta_bytes: u64,
    /// The packed activation arena. One arena serves every session: the decoder runs one
    /// session's step at a time.
    pub activation_bytes: u64,
    /// What the activations would take with no sharing between regions (for reports).
    pub activation_unshared_bytes: u64,
    /// Scratch for activations quantized to the weights' dot-product formats.
    pub scratch_bytes: u64,
    /// Weights, KV, activations and scratch.
    pub total_bytes: u64,
    /// The activation layout the arena is sized from.
    pub layout: Layout,
}

fn to_u64(x: usize) -> Result<u64, PlanError> {
    u64::try_from(x).map_err(|_| PlanError::Overflow)
}

fn mul(a: u64, b: u64) -> Result<u64, PlanError> {
    a.checked_mul(b).ok_or(PlanError::Overflow)
}

fn add(a: u64, b: u64) -> Result<u64, PlanError> {
    a.checked_add(b).ok_or(PlanError::Overflow)
}

fn kv_err(e: crate::kv::KvError) -> PlanError {
    match e {
        crate::kv::KvError::NotBlocked => PlanError::KvNotBlocked,
        crate::kv::KvError::BadShape => PlanError::BadLimits,
        _ => PlanError::Overflow,
    }
}

fn pages(positions: u64) -> u64 {
    positions.div_ceil(PAGE_POSITIONS)
}

impl Plan {
    /// Plans `spec` with `weights_bytes` of weights under `limits`.
    pub fn new(
        spec: &ModelSpec,
        weights_bytes: u64,
        limits: PlanLimits,
    ) -> Result<Self, PlanError> {
        let l = limits;
        if l.ctx == 0 || l.sessions == 0 || l.chunk == 0 || l.logit_rows == 0 || l.threads == 0 {
            return Err(PlanError::BadLimits);
        }
        let rows = l.rows();
        let layout = Layout::new(
            spec,
            Limits {
                chunk: rows,
                logit_rows: l.logit_rows.max(l.spec_block).min(rows),
                ctx: l.ctx,
                threads: l.threads,
            },
        )
        .map_err(PlanError::Layout)?;

        let ctx = to_u64(l.ctx)?;
        let rows = to_u64(rows)?;
        let sessions = to_u64(l.sessions)?;
        let ctx_pages = pages(ctx);
        let (mut global_layers, mut sliding_layers) = (0u64, 0u64);
        // Pages of all sliding layers of one session, and of the longest ring.
        let (mut sliding_pages_sum, mut sliding_pages) = (0u64, 0u64);
        for il in 0..spec.n_layer {
            match spec.layer_kind(il) {
                LayerKind::Global => global_layers += 1,
                LayerKind::Sliding { window } => {
                    sliding_layers += 1;
                    let ring = add(u64::from(window), rows)?.min(ctx);
                    sliding_pages_sum = add(sliding_pages_sum, pages(ring))?;
                    sliding_pages = sliding_pages.max(pages(ring));
                }
            }
        }
        let kv_position_bytes = l.kv_type.bytes_per_position(spec.k_dim(), spec.v_dim())?;
        let page_bytes = mul(PAGE_POSITIONS, kv_position_bytes)?;
        let global_page_count = mul(mul(global_layers, ctx_pages)?, sessions)?;
        let sliding_page_count = mul(sliding_pages_sum, sessions)?;
        let kv_global_bytes = mul(global_page_count, page_bytes)?;
        let kv_sliding_bytes = mul(sliding_page_count, page_bytes)?;
        let all_layers = add(global_layers, sliding_layers)?;
        let kv_all_global_bytes = mul(mul(mul(all_layers, ctx_pages)?, sessions)?, page_bytes)?;

        let kv_pages = add(global_page_count, sliding_page_count)?;
        let geo = crate::kv::KvGeometry::new(spec, l.ctx, l.rows(), l.kv_type).map_err(kv_err)?;
        let pool_pages = usize::try_from(kv_pages).map_err(|_| PlanError::Overflow)?;
        let kv_meta_bytes = mul(
            to_u64(crate::kv::meta_len(&geo, l.sessions, pool_pages).map_err(kv_err)?)?,
            4,
        )?;

        let activation_bytes = mul(to_u64(layout.arena_len)?, 4)?;
        let activation_unshared_bytes = mul(to_u64(layout.unshared_len)?, 4)?;
        let scratch_bytes = to_u64(layout.quant_scratch_bytes)?;
        let total_bytes = add(
            add(
                weights_bytes,
                add(add(kv_global_bytes, kv_sliding_bytes)?, kv_meta_bytes)?,
            )?,
            add(activation_bytes, scratch_bytes)?,
        )?;
        Ok(Plan {
            limits,
            weights_bytes,
            global_layers,
            sliding_layers,
            global_positions: mul(ctx_pages, PAGE_POSITIONS)?,
            sliding_positions: mul(sliding_pages, PAGE_POSITIONS)?,
            kv_position_bytes,
            kv_global_bytes,
            kv_sliding_bytes,
            kv_all_global_bytes,
            kv_pages,
            kv_meta_bytes,
            activation_bytes,
            activation_unshared_bytes,
            scratch_bytes,
            total_bytes,
            layout,
        })
    }

    /// KV pages of all layers and sessions (without [`Plan::kv_meta_bytes`]).
    pub fn kv_bytes(&self) -> u64 {
        // Both terms are parts of `total_bytes`, which was computed without overflow.
        self.kv_global_bytes + self.kv_sliding_bytes
    }

    /// KV of one session.
    pub fn kv_session_bytes(&self) -> u64 {
        // `sessions` is non-zero (checked in `new`).
        self.kv_bytes() / self.limits.sessions.max(1) as u64
    }

    /// Activations and scratch: what the arena budget covers.
    pub fn arena_bytes(&self) -> u64 {
        // Both terms are parts of `total_bytes`, which was computed without overflow.
        self.activation_bytes + self.scratch_bytes
    }

    /// Checks every budget in order (weights, KV, arena, total); the first one broken is the error.
    pub fn check(&self, budget: &Budget) -> Result<(), PlanError> {
        let lines = [
            (BudgetKind::Weights, self.weights_bytes, budget.weights),
            (
                BudgetKind::Kv,
                self.kv_bytes() + self.kv_meta_bytes,
                budget.kv,
            ),
            (BudgetKind::Arena, self.arena_bytes(), budget.arena),
            (BudgetKind::Total, self.total_bytes, budget.total),
        ];
        for (which, need, have) in lines {
            if need > have {
                return Err(PlanError::OverBudget { which, need, have });
            }
        }
        Ok(())
    }
}

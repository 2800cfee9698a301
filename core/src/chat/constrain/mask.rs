//! Applying a [`CallConstraint`] to a row of logits, without allocating.
//!
//! Each helper takes the token text through a closure `piece(id) -> Option<&str>`:
//! `None` marks a control token (BOS, EOS, end of turn…), which is never allowed inside a
//! call; a token with empty text is refused too. A special token whose text is part of the
//! closing tag (`</tool_call>` as one added token) should return that text.
//!
//! - [`mask_logits`](CallConstraint::mask_logits) tests every token: exact, for any
//!   sampler, one `allows` per vocabulary entry.
//! - [`best_allowed`](CallConstraint::best_allowed) (greedy) and
//!   [`mask_top_k`](CallConstraint::mask_top_k) (for top-k sampling) walk the tokens from
//!   the highest logit down, in chunks of [`CHUNK`] picked by partial selection, and stop
//!   as soon as they have what they need, so usually only a few dozen tokens are tested.
//!   They need an index scratch as long as the logits, like the sampler.

use super::{CallConstraint, ConstrainError};

/// How many tokens the ordered walk selects and sorts at a time.
pub const CHUNK: usize = 32;

impl<'a, const N: usize> CallConstraint<'a, N> {
    /// Whether token `id` is allowed next (see the module docs for `piece`).
    pub fn allows_token<'v>(&self, id: u32, piece: impl Fn(u32) -> Option<&'v str>) -> bool {
        piece(id).is_some_and(|p| self.allows(p))
    }

    /// Sets every logit whose token is not allowed to `-inf`; returns how many are allowed.
    /// Fails with [`ConstrainError::NoAllowedToken`] (logits all `-inf`) when none is.
    pub fn mask_logits<'v>(
        &self,
        logits: &mut [f32],
        piece: impl Fn(u32) -> Option<&'v str>,
    ) -> Result<usize, ConstrainError> {
        let mut allowed = 0;
        for (id, l) in (0u32..).zip(logits.iter_mut()) {
            if self.allows_token(id, &piece) {
                allowed += 1;
            } else {
                *l = f32::NEG_INFINITY;
            }
        }
        if allowed == 0 {
            return Err(ConstrainError::NoAllowedToken);
        }
        Ok(allowed)
    }

    /// The allowed token with the largest logit (the lowest id on ties), as greedy decoding
    /// of the masked logits would pick it. NaN logits are never picked.
    pub fn best_allowed<'v>(
        &self,
        logits: &[f32],
        piece: impl Fn(u32) -> Option<&'v str>,
        scratch: &mut [u32],
    ) -> Result<u32, ConstrainError> {
        let mut walk = Desc::new(logits, scratch)?;
        while let Some(id) = walk.next() {
            if !logit(logits, id).is_nan() && self.allows_token(id, &piece) {
                return Ok(id);
            }
        }
        Err(ConstrainError::NoAllowedToken)
    }

    /// Keeps the `k` allowed tokens with the largest logits (fewer if fewer are allowed) and
    /// sets every other logit to `-inf`; returns how many are kept. A sampler with
    /// `top_k >= k` (or none) then draws only allowed tokens. NaN logits are never kept.
    /// Fails with [`ConstrainError::NoAllowedToken`] (logits all `-inf`) when none is kept.
    pub fn mask_top_k<'v>(
        &self,
        logits: &mut [f32],
        k: usize,
        piece: impl Fn(u32) -> Option<&'v str>,
        scratch: &mut [u32],
    ) -> Result<usize, ConstrainError> {
        let mut kept = 0;
        let mut walk = Desc::new(logits, scratch)?;
        while kept < k {
            let Some(id) = walk.next() else { break };
            if !logit(logits, id).is_nan() && self.allows_token(id, &piece) {
                walk.keep(kept, id);
                kept += 1;
            }
        }
        let ids = &mut scratch[..kept];
        ids.sort_unstable();
        let mut next = ids.iter().peekable();
        for (id, l) in (0u32..).zip(logits.iter_mut()) {
            if next.next_if_eq(&&id).is_none() {
                *l = f32::NEG_INFINITY;
            }
        }
        if kept == 0 {
            return Err(ConstrainError::NoAllowedToken);
        }
        Ok(kept)
    }
}

fn logit(logits: &[f32], id: u32) -> f32 {
    logits.get(id as usize).copied().unwrap_or(f32::NAN)
}

/// Token ids from the highest logit down (the lowest id first on ties), selected and
/// sorted [`CHUNK`] at a time in the caller's scratch.
struct Desc<'l, 's> {
    logits: &'l [f32],
    /// `idx[..at]` visited, `idx[at..end]` sorted and next, `idx[end..]` not yet selected.
    idx: &'s mut [u32],
    at: usize,
    end: usize,
}

impl<'l, 's> Desc<'l, 's> {
    fn new(logits: &'l [f32], scratch: &'s mut [u32]) -> Result<Self, ConstrainError> {
        let idx = scratch
            .get_mut(..logits.len())
            .ok_or(ConstrainError::ScratchTooSmall)?;
        for (s, i) in idx.iter_mut().zip(0u32..) {
            *s = i;
        }
        Ok(Desc {
            logits,
            idx,
            at: 0,
            end: 0,
        })
    }

    fn next(&mut self) -> Option<u32> {
        if self.at == self.end {
            let logits = self.logits;
            let desc = |a: &u32, b: &u32| {
                let order = logit(logits, *b).total_cmp(&logit(logits, *a));
                order.then(a.cmp(b))
            };
            let rest = &mut self.idx[self.end..];
            let take = CHUNK.min(rest.len());
            if take == 0 {
                return None;
            }
            if take < rest.len() {
                rest.select_nth_unstable_by(take - 1, desc);
            }
            rest[..take].sort_unstable_by(desc);
            self.end += take;
        }
        let id = self.idx[self.at];
        self.at += 1;
        Some(id)
    }

    /// Stores `id` in visited slot `slot` (`slot < at`), to collect ids in the scratch.
    fn keep(&mut self, slot: usize, id: u32) {
        if slot < self.at {
            self.idx[slot] = id;
        }
    }
}

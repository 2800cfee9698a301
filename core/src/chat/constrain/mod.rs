//! Constrained decoding of tool calls: only tokens that keep the call valid are allowed.
//!
//! A [`CallConstraint`] is built from the session's [`ToolSchema`]s and a tool-call
//! [`Dialect`]. The decoder starts it right after the model has written the block opener
//! (`<tool_call>` for Hermes, `<atem:function_calls>` for ATEM; the decoder finds the
//! opener itself, e.g. with a [`CallParser`](super::toolcall::CallParser)). From there,
//! [`CallConstraint::allows`] says whether a piece of text keeps the call a valid *prefix*
//! of a complete call, [`CallConstraint::push`] commits a piece, and
//! [`CallConstraint::is_complete`] says when the call, closing tag included, is done. The
//! masking helpers ([`mask_logits`](CallConstraint::mask_logits),
//! [`best_allowed`](CallConstraint::best_allowed),
//! [`mask_top_k`](CallConstraint::mask_top_k)) apply it to a row of logits.
//!
//! # The language
//! Hermes (the body of `<tool_call>…</tool_call>`):
//! ```text
//! ws { ws "name" ws : ws "TOOL" ws , ws "arguments" ws : ws { ARGS ws } ws } ws </tool_call>
//! ARGS = ws (ws "KEY" ws : ws VALUE (ws , ws "KEY" ws : ws VALUE)*)?
//! ```
//! ATEM (the body of `<atem:function_calls>…</atem:function_calls>`):
//! ```text
//! ws <atem:invoke name="TOOL" ws > (ws <atem:parameter name="KEY" ws >VALUE</atem:parameter>)*
//! ws </atem:invoke> ws </atem:function_calls>
//! ```
//! `ws` is a run of JSON whitespace (space, tab, CR, LF) of at most [`MAX_WS`] bytes, so a
//! model cannot stall in it. The rules, beyond JSON's:
//! - One call per block; `"name"` comes first, then `"arguments"` (always present).
//! - `TOOL` is one of the tool names, `KEY` a parameter of that tool not given before.
//!   Names, keys and enum options are written literally (no JSON escapes); a partial
//!   one is allowed while it is a prefix of some candidate, and its closing quote only
//!   once it equals one.
//! - The arguments object (the invoke) may close only once every required parameter is
//!   given; a `,` (another parameter) is allowed only while some parameter is left.
//! - Values, by [`ParamType`]:
//!   - `String`: a JSON string (any valid escape, no raw control characters), not
//!     containing `</tool_call>` as raw text (the parser would end the block there; `<\/`
//!     is fine). In ATEM, raw text that does not contain `</` (it ends at
//!     `</atem:parameter>`, and the block at `</atem:function_calls>`).
//!   - `Enum`: one of the options, as a JSON string (ATEM: the raw option).
//!   - `Boolean`: `true` or `false`.
//!   - `Integer`: `-?(0|[1-9][0-9]*)`, within the bounds and `i64`.
//!   - `Number`: `-?(0|[1-9][0-9]*)(\.[0-9]+)?`: plain decimal notation, **no exponent**,
//!     at most [`NUM_MAX`] bytes, finite and within the bounds.
//!
//! # Bounds on number prefixes
//! A number is checked exactly (parsed as [`ToolSchema::check`] parses it) when the byte
//! after it arrives. Before that, a prefix is allowed only when some completion can still
//! land in the bounds:
//! - Integers, exactly: the prefix `-`, `d1…dn` can become `±(v·10^k … (v+1)·10^k − 1)`
//!   for some `k ≥ 0`; `-` alone needs `min ≤ 0`; `0` and `-0` are only 0. So with
//!   bounds 10..=20 the prefix `3` is refused (both `3` and `30` miss), `1` is allowed.
//! - Numbers, by interval (in `f64`): an integer part `v` can reach `[v·10^k, (v+1)·10^k)`,
//!   `0` reaches `[0, 1)`, and `x.f1…fk` reaches `[x, x + 10^-k)` (mirrored for `-`). The
//!   ends are open where no completion reaches them (`0.4` is refused for `min = 0.5`).
//!   Bounds so close that no decimal of [`NUM_MAX`] bytes lies between them can still dead
//!   end; the masking helpers then answer [`ConstrainError::NoAllowedToken`].
//!
//! An empty piece is never allowed (a token without text makes no progress), and nothing
//! is allowed once the call is complete: the decoder stops constraining there.

mod grammar;
mod mask;
mod num;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_mask;

use core::fmt;

use super::schema::{ParamType, ToolSchema};
use super::toolcall::Dialect;
use crate::gguf::ErrName;
use grammar::{Ctx, State};

pub use grammar::{MAX_WS, NUM_MAX};

/// Most tools, parameters of one tool, or options of one enum a constraint handles.
pub const MAX_CHOICES: usize = 64;

/// Why a constraint could not be built, or refused a piece.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConstrainError {
    /// The dialect has no constraint (Qwen XML).
    UnsupportedDialect,
    /// No tools were given.
    NoTools,
    /// More than [`MAX_CHOICES`] tools, parameters of a tool, or options of an enum.
    TooMany,
    /// A name or enum option cannot be written literally in the dialect (empty name,
    /// quote, backslash, control character; in ATEM also `<` or edge whitespace in options).
    BadName {
        /// The name or option.
        name: ErrName,
    },
    /// A tool lists the same parameter twice.
    DuplicateParam {
        /// The parameter.
        param: ErrName,
    },
    /// No value can satisfy the parameter (empty enum, empty or unreachable range).
    Unsatisfiable {
        /// The parameter.
        param: ErrName,
    },
    /// The piece would make the call invalid.
    Rejected,
    /// The text buffer is full; `needed` more bytes would have been written.
    Overflow {
        /// Bytes that did not fit.
        needed: usize,
    },
    /// No candidate token is allowed (the call is complete, or the vocabulary cannot go on).
    NoAllowedToken,
    /// The index scratch is shorter than the logits.
    ScratchTooSmall,
}

impl fmt::Display for ConstrainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConstrainError::UnsupportedDialect => f.write_str("dialect cannot be constrained"),
            ConstrainError::NoTools => f.write_str("no tools to constrain calls to"),
            ConstrainError::TooMany => f.write_str("too many tools, parameters or options"),
            ConstrainError::BadName { name } => write!(f, "name cannot be written: `{name}`"),
            ConstrainError::DuplicateParam { param } => write!(f, "duplicate parameter `{param}`"),
            ConstrainError::Unsatisfiable { param } => write!(f, "unsatisfiable `{param}`"),
            ConstrainError::Rejected => f.write_str("piece would make the call invalid"),
            ConstrainError::Overflow { needed } => write!(f, "buffer full ({needed} more bytes)"),
            ConstrainError::NoAllowedToken => f.write_str("no allowed token"),
            ConstrainError::ScratchTooSmall => f.write_str("scratch shorter than the logits"),
        }
    }
}

/// Tracks one tool call as it is generated and says which pieces keep it valid; see the
/// module docs for the language. `N` is the capacity of the text buffer in bytes.
#[derive(Clone, Debug)]
pub struct CallConstraint<'a, const N: usize> {
    ctx: Ctx<'a>,
    state: State,
    text: heapless::String<N>,
}

impl<'a, const N: usize> CallConstraint<'a, N> {
    /// A constraint for calls to `tools` in `dialect`, checking the schemas can be met.
    pub fn new(tools: &'a [ToolSchema<'a>], dialect: Dialect) -> Result<Self, ConstrainError> {
        let atem = match dialect {
            Dialect::Hermes => false,
            Dialect::Atem => true,
            Dialect::QwenXml => return Err(ConstrainError::UnsupportedDialect),
        };
        validate(tools, atem)?;
        let ctx = Ctx { tools, atem };
        Ok(CallConstraint {
            state: ctx.start(),
            ctx,
            text: heapless::String::new(),
        })
    }

    /// Whether appending `piece` keeps the text a valid prefix of a call. Empty pieces and
    /// anything after the end of the call are refused. The buffer's room is not considered
    /// ([`push`](Self::push) reports a full buffer).
    pub fn allows(&self, piece: &str) -> bool {
        let mut st = self.state;
        !piece.is_empty() && piece.bytes().all(|b| self.ctx.step(&mut st, b))
    }

    /// Appends `piece`; on error nothing changes.
    pub fn push(&mut self, piece: &str) -> Result<(), ConstrainError> {
        let mut st = self.state;
        if piece.is_empty() || !piece.bytes().all(|b| self.ctx.step(&mut st, b)) {
            return Err(ConstrainError::Rejected);
        }
        let room = N - self.text.len();
        self.text
            .push_str(piece)
            .map_err(|()| ConstrainError::Overflow {
                needed: piece.len() - room,
            })?;
        self.state = st;
        Ok(())
    }

    /// Whether the call is complete, closing tag included.
    pub fn is_complete(&self) -> bool {
        self.state.is_done()
    }

    /// The text of the call so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The tool being called, once its name is complete.
    pub fn tool(&self) -> Option<&'a ToolSchema<'a>> {
        self.state.tool().and_then(|i| self.ctx.tools.get(i))
    }

    /// Forgets the call, ready for the next one.
    pub fn reset(&mut self) {
        self.state = self.ctx.start();
        self.text.clear();
    }
}

/// Checks every name can be written and every parameter can be met.
fn validate(tools: &[ToolSchema<'_>], atem: bool) -> Result<(), ConstrainError> {
    if tools.is_empty() {
        return Err(ConstrainError::NoTools);
    }
    if tools.len() > MAX_CHOICES {
        return Err(ConstrainError::TooMany);
    }
    let literal = |s: &str| !s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20);
    let bad = |s: &str| ConstrainError::BadName {
        name: ErrName::new(s),
    };
    for t in tools {
        if t.name.is_empty() || !literal(t.name) {
            return Err(bad(t.name));
        }
        if t.params.len() > MAX_CHOICES {
            return Err(ConstrainError::TooMany);
        }
        for (i, p) in t.params.iter().enumerate() {
            if p.name.is_empty() || !literal(p.name) {
                return Err(bad(p.name));
            }
            if t.params[..i].iter().any(|q| q.name == p.name) {
                return Err(ConstrainError::DuplicateParam {
                    param: ErrName::new(p.name),
                });
            }
            let unsat = Err(ConstrainError::Unsatisfiable {
                param: ErrName::new(p.name),
            });
            match p.ty {
                ParamType::String | ParamType::Boolean => {}
                ParamType::Integer { min, max } => {
                    if min.zip(max).is_some_and(|(lo, hi)| lo > hi) {
                        return unsat;
                    }
                }
                ParamType::Number { min, max } => {
                    let (lo, hi) = (min.unwrap_or(f64::MIN), max.unwrap_or(f64::MAX));
                    // NaN fails every comparison, so `!(…)` also catches it.
                    if !(lo <= hi && lo <= num::REACH && hi >= -num::REACH) {
                        return unsat;
                    }
                }
                ParamType::Enum(opts) => {
                    if opts.is_empty() {
                        return unsat;
                    }
                    if opts.len() > MAX_CHOICES {
                        return Err(ConstrainError::TooMany);
                    }
                    let atem_ok = |o: &str| !o.contains('<') && o.trim() == o;
                    if let Some(o) = opts.iter().find(|o| !literal(o) || (atem && !atem_ok(o))) {
                        return Err(bad(o));
                    }
                }
            }
        }
    }
    Ok(())
}

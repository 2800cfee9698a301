//! Constrained decoding of tool-call arguments, the session option `constrained_tool_args`.
//!
//! While the model writes a call block (after the dialect's opener, `<tool_call>`), each step's
//! logits are restricted to tokens that keep the text a valid prefix of a call to one of the
//! session's tools with arguments that pass its schema (core's
//! [`CallConstraint`](glimmer_core::chat::constrain::CallConstraint)). Greedy sessions take
//! the best allowed token directly; sampling sessions have every other token masked to
//! `-inf` first. Outside call blocks nothing changes.

use glimmer_core::chat::constrain::{CallConstraint, ConstrainError};
use glimmer_core::chat::schema::{Param, ToolSchema};
use glimmer_core::chat::toolcall::Dialect;

use super::tools::{ToolDesc, MAX_OPTIONS, MAX_PARAMS};
use crate::tokenizer::Tokenizer;

/// Bytes of one call block the constraint follows.
const CALL_BYTES: usize = 4096;

/// The opening tag of a Hermes call block.
const OPENER: &str = "<tool_call>";

/// Each token's text, or `None` for tokens a call may never contain (end-of-generation
/// tokens, pieces that are not whole UTF-8).
pub(crate) fn token_texts(tok: &Tokenizer) -> Vec<Option<String>> {
    (0..tok.vocab_size() as u32)
        .map(|id| {
            if tok.is_eog(id) {
                return None;
            }
            let b = tok.decode_token(id).ok()?;
            std::str::from_utf8(&b).ok().map(str::to_owned)
        })
        .collect()
}

/// Follows the generated text of a turn: whether it is inside a call block, and the text
/// written after the opener.
#[derive(Default)]
pub(crate) struct CallTracker {
    inside: Option<String>,
    /// The end of the text outside call blocks, long enough to hold a split opener.
    tail: String,
}

impl CallTracker {
    /// A tracker already inside a call block whose opener was followed by `after` (a forced
    /// opener fed as prompt).
    pub fn inside_after(after: &str) -> Self {
        CallTracker {
            inside: Some(after.to_owned()),
            tail: String::new(),
        }
    }

    /// Adds a generated piece of text.
    pub fn push(&mut self, piece: &str) {
        match &mut self.inside {
            Some(call) => {
                call.push_str(piece);
                if call.contains("</tool_call>") {
                    self.inside = None;
                }
            }
            None => {
                self.tail.push_str(piece);
                if let Some(i) = self.tail.find(OPENER) {
                    let after = self.tail[i + OPENER.len()..].to_owned();
                    self.tail.clear();
                    self.inside = Some(after);
                } else if self.tail.len() > 64 {
                    let cut = self.tail.len() - OPENER.len();
                    let cut = (cut..self.tail.len())
                        .find(|&i| self.tail.is_char_boundary(i))
                        .unwrap_or(self.tail.len());
                    self.tail.drain(..cut);
                }
            }
        }
    }

    /// The call text after the opener, while inside a call block.
    pub fn call_text(&self) -> Option<&str> {
        self.inside.as_deref()
    }
}

/// Applies the constraint to `logits` for the call text `call` of `dialect`: returns the
/// token to take (greedy), or `None` after masking every disallowed token (the caller
/// samples). `scratch` holds at least as many `u32`s as the vocabulary.
pub(crate) fn constrain(
    tools: &[ToolDesc],
    dialect: Dialect,
    call: &str,
    logits: &mut [f32],
    texts: &[Option<String>],
    scratch: &mut [u32],
    greedy: bool,
) -> Result<Option<u32>, String> {
    let mut params: Vec<[Param<'_>; MAX_PARAMS]> = vec![[Param::EMPTY; MAX_PARAMS]; tools.len()];
    let mut options: Vec<[&str; MAX_OPTIONS]> = vec![[""; MAX_OPTIONS]; tools.len()];
    let mut schemas = Vec::with_capacity(tools.len());
    for ((t, p), o) in tools.iter().zip(params.iter_mut()).zip(options.iter_mut()) {
        let s = ToolSchema::from_json(&t.name, &t.description, &t.schema_json, p, o)
            .map_err(|e| format!("tool {}: schema: {e}", t.name))?;
        schemas.push(s);
    }
    let mut c = CallConstraint::<'_, CALL_BYTES>::new(&schemas, dialect).map_err(err)?;
    if !call.is_empty() {
        c.push(call).map_err(err)?;
    }
    let piece = |id: u32| texts.get(id as usize).and_then(|t| t.as_deref());
    if greedy {
        return c
            .best_allowed(logits, piece, scratch)
            .map(Some)
            .map_err(err);
    }
    c.mask_logits(logits, piece).map_err(err)?;
    Ok(None)
}

fn err(e: ConstrainError) -> String {
    format!("constrained decoding: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thermo() -> Vec<ToolDesc> {
        vec![ToolDesc {
            name: "read_temperature".into(),
            description: "Read a zone".into(),
            schema_json: r#"{"type":"object","properties":{"zone":{"type":"string","enum":["cabinet","ambient"]}},"required":["zone"]}"#.into(),
        }]
    }

    #[test]
    fn tracker_finds_split_openers_and_leaves_at_the_close() {
        let mut t = CallTracker::default();
        t.push("Let me check. <tool_");
        assert_eq!(t.call_text(), None);
        t.push("call>\n{\"na");
        assert_eq!(t.call_text(), Some("\n{\"na"));
        t.push("me\": \"x\"}\n</tool_call>");
        assert_eq!(t.call_text(), None);
        let t = CallTracker::inside_after("\n{\"name\": \"a\", \"arguments\": ");
        assert!(t.call_text().is_some());
    }

    #[test]
    fn greedy_takes_the_best_token_that_keeps_the_call_valid() {
        let texts: Vec<Option<String>> = ["{", "\"zone\"", "\"cpu\"", "\"cabinet\"", ":", " ", "}"]
            .iter()
            .map(|s| Some((*s).to_owned()))
            .collect();
        let mut scratch = vec![0u32; texts.len()];
        let call = "\n{\"name\": \"read_temperature\", \"arguments\": {\"zone\": ";
        // The model prefers "cpu", which is not in the enum: "cabinet" must win.
        let mut logits = vec![0.0, 0.0, 9.0, 1.0, 0.0, 0.0, 0.0];
        let got = constrain(
            &thermo(),
            Dialect::Hermes,
            call,
            &mut logits,
            &texts,
            &mut scratch,
            true,
        )
        .unwrap();
        assert_eq!(got, Some(3));
        // Sampling: everything but the allowed tokens is masked.
        let mut logits = vec![0.0, 0.0, 9.0, 1.0, 0.0, 0.0, 0.0];
        let got = constrain(
            &thermo(),
            Dialect::Hermes,
            call,
            &mut logits,
            &texts,
            &mut scratch,
            false,
        )
        .unwrap();
        assert_eq!(got, None);
        assert_eq!(logits[2], f32::NEG_INFINITY);
        assert_eq!(logits[3], 1.0);
    }
}

//! Splitting input text on special tokens written in it, before any model runs.

use super::table::{Attr, Table};

/// A piece of the input: text still to tokenize, or a token matched verbatim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fragment<'t> {
    /// Text for the model.
    Text(&'t str),
    /// A special token found in the text.
    Token(u32),
}

/// Splits `text` on the tokens of `specials` (longest text first) as llama.cpp does: each
/// token in turn splits every remaining text fragment at all its non-overlapping
/// occurrences, left to right. Control and unknown tokens take part only with
/// `parse_special`; user-defined tokens always do.
pub(crate) fn partition<'t>(
    text: &'t str,
    specials: &[u32],
    table: &Table,
    parse_special: bool,
) -> Vec<Fragment<'t>> {
    let mut frags = Vec::new();
    if text.is_empty() {
        return frags;
    }
    frags.push(Fragment::Text(text));
    let special_only = Attr::CONTROL.with(Attr::UNKNOWN);
    let mut next = Vec::new();
    for &id in specials {
        if !parse_special && table.attr(id).any(special_only) {
            continue;
        }
        let Some(needle) = table.text(id).filter(|t| !t.is_empty()) else {
            continue;
        };
        if !frags
            .iter()
            .any(|f| matches!(f, Fragment::Text(t) if t.contains(needle)))
        {
            continue;
        }
        next.clear();
        for &frag in &frags {
            let Fragment::Text(t) = frag else {
                next.push(frag);
                continue;
            };
            let mut rest = 0;
            for (at, _) in t.match_indices(needle) {
                if at > rest {
                    next.push(Fragment::Text(&t[rest..at]));
                }
                next.push(Fragment::Token(id));
                rest = at + needle.len();
            }
            if rest < t.len() {
                next.push(Fragment::Text(&t[rest..]));
            }
        }
        core::mem::swap(&mut frags, &mut next);
    }
    frags
}

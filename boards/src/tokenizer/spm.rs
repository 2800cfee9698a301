//! SentencePiece tokenization by scores (llama.cpp's SPM tokenizer).
//!
//! The text is split into UTF-8 characters; then, repeatedly, the adjacent pair whose
//! concatenation is a token with the highest score is merged (ties: leftmost first). Each
//! final piece that is not a token becomes one `<0xXX>` byte token per byte.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::error::TokenizerError;
use super::table::Table;

/// No neighbour.
const NONE: usize = usize::MAX;

/// A piece of the text: `text[start..start + len]`, linked to its live neighbours.
#[derive(Clone, Copy, Debug)]
struct Symbol {
    start: usize,
    len: usize,
    prev: usize,
    next: usize,
}

/// A candidate merge of symbols `left` and `right` into a token of `score`.
#[derive(Clone, Copy, Debug)]
struct Bigram {
    score: f32,
    left: usize,
    right: usize,
    len: usize,
}

impl Ord for Bigram {
    /// Higher score first; on equal scores the leftmost pair first.
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.left.cmp(&self.left))
    }
}

impl PartialOrd for Bigram {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Bigram {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Bigram {}

/// Appends the tokens of `text` (whitespace already escaped to `▁`) to `out`.
pub(crate) fn encode(text: &str, table: &Table, out: &mut Vec<u32>) -> Result<(), TokenizerError> {
    let mut symbols: Vec<Symbol> = Vec::with_capacity(text.len());
    for (i, (start, c)) in text.char_indices().enumerate() {
        let len = c.len_utf8();
        let next = if start + len == text.len() {
            NONE
        } else {
            i + 1
        };
        symbols.push(Symbol {
            start,
            len,
            prev: i.checked_sub(1).unwrap_or(NONE),
            next,
        });
    }
    let mut queue = BinaryHeap::new();
    for i in 1..symbols.len() {
        push_bigram(text, table, &symbols, i - 1, i, &mut queue);
    }
    while let Some(b) = queue.pop() {
        let (l, r) = (symbols[b.left], symbols[b.right]);
        if l.len == 0 || r.len == 0 || l.len + r.len != b.len {
            continue;
        }
        symbols[b.left].len += r.len;
        symbols[b.right].len = 0;
        symbols[b.left].next = r.next;
        if r.next != NONE {
            symbols[r.next].prev = b.left;
        }
        push_bigram(text, table, &symbols, l.prev, b.left, &mut queue);
        push_bigram(text, table, &symbols, b.left, r.next, &mut queue);
    }
    let mut i = if symbols.is_empty() { NONE } else { 0 };
    while i != NONE {
        let s = symbols[i];
        let piece = &text[s.start..s.start + s.len];
        match table.id(piece) {
            Some(id) => out.push(id),
            None => {
                for &b in piece.as_bytes() {
                    out.push(byte_token(table, b)?);
                }
            }
        }
        i = s.next;
    }
    Ok(())
}

/// Queues the merge of `left` and `right` if their concatenation is a token.
fn push_bigram(
    text: &str,
    table: &Table,
    symbols: &[Symbol],
    left: usize,
    right: usize,
    queue: &mut BinaryHeap<Bigram>,
) {
    if left == NONE || right == NONE {
        return;
    }
    let (l, r) = (symbols[left], symbols[right]);
    let len = l.len + r.len;
    let Some(id) = text.get(l.start..l.start + len).and_then(|t| table.id(t)) else {
        return;
    };
    queue.push(Bigram {
        score: table.score(id),
        left,
        right,
        len,
    });
}

/// The token for one raw byte: `<0xXX>`, else the byte itself as a one-character token.
pub(crate) fn byte_token(table: &Table, b: u8) -> Result<u32, TokenizerError> {
    let hex = format!("<0x{b:02X}>");
    if let Some(id) = table.id(&hex) {
        return Ok(id);
    }
    let single = [b];
    core::str::from_utf8(&single)
        .ok()
        .and_then(|s| table.id(s))
        .ok_or(TokenizerError::NoByteToken(b))
}

//! Byte-level BPE (GPT-2 style) on the `tokenizers` crate, with llama.cpp's pre-tokenizers.

use tokenizers::models::bpe::{Vocab as HfVocab, BPE};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{PreTokenizerWrapper, SplitDelimiterBehavior};

use super::error::TokenizerError;
use super::table::Table;

/// `tokenizer.ggml.pre` values whose pre-tokenizer is: isolate every `\p{N}`, then the GPT-2
/// pattern.
const DIGIT_THEN_GPT2: &[&str] = &["smollm"];

/// The id of the marker for characters outside the vocabulary; real ids fit in `i32`.
const UNKNOWN: u32 = u32::MAX;

/// A byte-level BPE model built in process (nothing is downloaded or read from disk).
pub(crate) struct Bpe {
    inner: tokenizers::Tokenizer,
    bytes: ByteDecoder,
}

impl core::fmt::Debug for Bpe {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Bpe").finish_non_exhaustive()
    }
}

/// Splits a merge line `"left right"` at the first space after its first byte.
fn split_merge(line: &str) -> Option<(&str, &str)> {
    let at = line.as_bytes().iter().skip(1).position(|&b| b == b' ')? + 1;
    Some((line.get(..at)?, line.get(at + 1..)?))
}

impl Bpe {
    /// Builds the model from the token table, the merges (rank = position) and the
    /// pre-tokenizer name.
    ///
    /// Merges whose halves or result are not tokens are dropped (they cannot produce a
    /// token), and for a repeated pair the first rank counts, as in llama.cpp.
    pub(crate) fn new(table: &Table, merges: &[String], pre: &str) -> Result<Self, TokenizerError> {
        if !DIGIT_THEN_GPT2.contains(&pre) {
            return Err(TokenizerError::UnsupportedPre);
        }
        if merges.is_empty() {
            return Err(TokenizerError::MissingMerges);
        }
        let mut vocab: HfVocab = table.ids.iter().map(|(t, &id)| (t.clone(), id)).collect();
        // Characters outside the vocabulary stay in the word as a marker that no merge
        // matches, and are dropped afterwards: llama.cpp keeps such a character as a
        // symbol (blocking merges across it) and finds no token for it at the end.
        let mut unknown = String::from("\u{0}glimmer-unknown");
        while table.id(&unknown).is_some() {
            unknown.push('\u{0}');
        }
        vocab.insert(unknown.clone(), UNKNOWN);
        let mut seen = std::collections::HashSet::new();
        let mut pairs = Vec::with_capacity(merges.len());
        for line in merges {
            let Some((a, b)) = split_merge(line) else {
                continue;
            };
            let joined = format!("{a}{b}");
            if table.id(a).is_none() || table.id(b).is_none() || table.id(&joined).is_none() {
                continue;
            }
            if seen.insert((a, b)) {
                pairs.push((a.to_owned(), b.to_owned()));
            }
        }
        let model = BPE::builder()
            .vocab_and_merges(vocab, pairs)
            .unk_token(unknown)
            .fuse_unk(false)
            .build()
            .map_err(|_| TokenizerError::BpeBuild)?;
        let digits = Split::new(
            SplitPattern::Regex(r"\p{N}".to_owned()),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .map_err(|_| TokenizerError::BpeBuild)?;
        let pre = Sequence::new(vec![
            PreTokenizerWrapper::Split(digits),
            PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, false, true)),
        ]);
        let mut inner = tokenizers::Tokenizer::new(model);
        inner.with_pre_tokenizer(Some(pre));
        Ok(Self {
            inner,
            bytes: ByteDecoder::new(),
        })
    }

    /// Appends the raw bytes a byte-level token text stands for (see [`ByteDecoder`]).
    pub(crate) fn decode_into(&self, text: &str, out: &mut Vec<u8>) {
        self.bytes.decode_into(text, out);
    }

    /// Appends the tokens of `text` (no special tokens inside) to `out`.
    pub(crate) fn encode(&self, text: &str, out: &mut Vec<u32>) -> Result<(), TokenizerError> {
        let enc = self
            .inner
            .encode_fast(text, false)
            .map_err(|_| TokenizerError::BpeEncode)?;
        out.extend(enc.get_ids().iter().copied().filter(|&id| id != UNKNOWN));
        Ok(())
    }
}

/// GPT-2's byte → character map: printable Latin-1 bytes map to themselves, the other 68
/// bytes to U+0100.. in byte order.
fn byte_to_char(b: u8) -> char {
    let keeps = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    if keeps(b) {
        return char::from(b);
    }
    let rank = (0..b).filter(|&x| !keeps(x)).count();
    char::from_u32(0x100 + rank as u32).unwrap_or('\u{FFFD}')
}

/// The inverse of [`byte_to_char`] as a table indexed by code point (below U+0144).
#[derive(Debug)]
pub(crate) struct ByteDecoder {
    bytes: [Option<u8>; 0x144],
}

impl ByteDecoder {
    /// Builds the table.
    pub(crate) fn new() -> Self {
        let mut bytes = [None; 0x144];
        for b in 0..=255u8 {
            if let Some(slot) = bytes.get_mut(byte_to_char(b) as usize) {
                *slot = Some(b);
            }
        }
        Self { bytes }
    }

    /// Appends the raw bytes a byte-level token text stands for. A character outside the
    /// map is written as llama.cpp does: `[UNK_BYTE_0x<utf-8 hex><whole text>]`.
    pub(crate) fn decode_into(&self, text: &str, out: &mut Vec<u8>) {
        for c in text.chars() {
            match self.bytes.get(c as usize).copied().flatten() {
                Some(b) => out.push(b),
                None => {
                    out.extend_from_slice(b"[UNK_BYTE_0x");
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        out.extend_from_slice(format!("{b:02x}").as_bytes());
                    }
                    out.extend_from_slice(text.as_bytes());
                    out.push(b']');
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_map_matches_gpt2() {
        assert_eq!(byte_to_char(b'a'), 'a');
        assert_eq!(byte_to_char(b' '), 'Ġ');
        assert_eq!(byte_to_char(b'\n'), 'Ċ');
        assert_eq!(byte_to_char(0), '\u{100}');
        assert_eq!(byte_to_char(0xAD), '\u{143}');
        let d = ByteDecoder::new();
        let all: String = (0..=255u8).map(byte_to_char).collect();
        let mut out = Vec::new();
        d.decode_into(&all, &mut out);
        assert_eq!(out, (0..=255u8).collect::<Vec<_>>());
    }

    #[test]
    fn merge_lines_split_after_first_byte() {
        assert_eq!(split_merge("Ġ t"), Some(("Ġ", "t")));
        assert_eq!(split_merge("a b c"), Some(("a", "b c")));
        assert_eq!(split_merge(" a"), None);
        assert_eq!(split_merge("ab"), None);
    }
}

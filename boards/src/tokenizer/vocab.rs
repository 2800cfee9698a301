//! The vocabulary as plain data: what a GGUF file's `tokenizer.ggml.*` keys hold.

use super::error::{SpecialToken, TokenizerError, VocabArray};

/// The kind of a token, as stored in `tokenizer.ggml.token_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenType {
    /// 0, or any value outside 1..=6.
    Undefined,
    /// 1: ordinary text.
    Normal,
    /// 2: the unknown token.
    Unknown,
    /// 3: a control token (BOS, EOS, turn markers); matched in text only with `parse_special`.
    Control,
    /// 4: a user-defined token; always matched verbatim in text.
    UserDefined,
    /// 5: an unused slot.
    Unused,
    /// 6: a byte token `<0xXX>` (SentencePiece byte fallback).
    Byte,
}

impl TokenType {
    /// The type for a stored `tokenizer.ggml.token_type` value.
    pub fn from_i32(v: i32) -> Self {
        match v {
            1 => Self::Normal,
            2 => Self::Unknown,
            3 => Self::Control,
            4 => Self::UserDefined,
            5 => Self::Unused,
            6 => Self::Byte,
            _ => Self::Undefined,
        }
    }
}

/// A vocabulary: tokens with their scores and types, merges and special ids.
///
/// `model` selects the algorithm: `"gpt2"` (byte-level BPE, needs `merges`) or `"llama"`
/// (SentencePiece, uses `scores`). [`Vocab::new`] fills in llama.cpp's defaults for a model;
/// loaders then override what the file states.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Vocab {
    /// `tokenizer.ggml.model`: `"gpt2"` or `"llama"`.
    pub model: String,
    /// `tokenizer.ggml.pre`: the BPE pre-tokenizer name (`"smollm"`); unused by SentencePiece.
    pub pre: String,
    /// Token texts, indexed by id.
    pub tokens: Vec<String>,
    /// Per-token scores (SentencePiece merge priority); empty means all 0.
    pub scores: Vec<f32>,
    /// Per-token types (see [`TokenType::from_i32`]); empty means all normal.
    pub types: Vec<i32>,
    /// BPE merges as `"left right"`, highest priority first.
    pub merges: Vec<String>,
    /// Beginning-of-sequence id.
    pub bos: Option<u32>,
    /// End-of-sequence id.
    pub eos: Option<u32>,
    /// End-of-turn id; when `None` it is detected by text as llama.cpp does.
    pub eot: Option<u32>,
    /// End-of-message id; when `None` it is detected by text as llama.cpp does.
    pub eom: Option<u32>,
    /// Unknown-token id.
    pub unk: Option<u32>,
    /// Padding id.
    pub pad: Option<u32>,
    /// Whether `encode(.., add_special = true, ..)` prepends BOS.
    pub add_bos: bool,
    /// Whether `encode(.., add_special = true, ..)` appends EOS.
    pub add_eos: bool,
    /// SentencePiece: whether a text run that starts the input or follows a special token
    /// gets a leading space.
    pub add_space_prefix: bool,
}

impl Vocab {
    /// A vocabulary of `tokens` with llama.cpp's defaults for `model`: for `"llama"` BOS 1,
    /// EOS 2, UNK 0, `add_bos` and `add_space_prefix`; for `"gpt2"` BOS = EOS = 11 and
    /// nothing added. Default ids that do not fit the vocabulary are left `None`.
    pub fn new(model: &str, pre: &str, tokens: Vec<String>) -> Self {
        let fit = |id: u32| (usize::try_from(id).is_ok_and(|i| i < tokens.len())).then_some(id);
        let (bos, eos, unk, spm) = match model {
            "llama" => (fit(1), fit(2), fit(0), true),
            "gpt2" => (fit(11), fit(11), None, false),
            _ => (None, None, None, false),
        };
        Self {
            model: model.to_owned(),
            pre: pre.to_owned(),
            bos,
            eos,
            unk,
            add_bos: spm,
            add_space_prefix: spm,
            tokens,
            ..Self::default()
        }
    }

    /// Checks array lengths and special ids against the token count.
    pub fn check(&self) -> Result<(), TokenizerError> {
        let n = self.tokens.len();
        if n == 0 {
            return Err(TokenizerError::EmptyVocab);
        }
        if i32::try_from(n).is_err() {
            return Err(TokenizerError::VocabTooLarge(n));
        }
        if !self.scores.is_empty() && self.scores.len() != n {
            return Err(TokenizerError::LengthMismatch {
                array: VocabArray::Scores,
                len: self.scores.len(),
                tokens: n,
            });
        }
        if !self.types.is_empty() && self.types.len() != n {
            return Err(TokenizerError::LengthMismatch {
                array: VocabArray::Types,
                len: self.types.len(),
                tokens: n,
            });
        }
        for (which, id) in self.specials() {
            if let Some(id) = id {
                if usize::try_from(id).map_or(true, |i| i >= n) {
                    return Err(TokenizerError::SpecialOutOfRange {
                        which,
                        id: u64::from(id),
                        vocab_size: n,
                    });
                }
            }
        }
        if self.add_bos && self.bos.is_none() {
            return Err(TokenizerError::SpecialMissing(SpecialToken::Bos));
        }
        if self.add_eos && self.eos.is_none() {
            return Err(TokenizerError::SpecialMissing(SpecialToken::Eos));
        }
        Ok(())
    }

    /// The special ids with their roles.
    fn specials(&self) -> [(SpecialToken, Option<u32>); 6] {
        [
            (SpecialToken::Bos, self.bos),
            (SpecialToken::Eos, self.eos),
            (SpecialToken::Eot, self.eot),
            (SpecialToken::Eom, self.eom),
            (SpecialToken::Unk, self.unk),
            (SpecialToken::Pad, self.pad),
        ]
    }

    /// The type of token `id` (normal when `types` is empty or `id` is out of range).
    pub fn token_type(&self, id: usize) -> TokenType {
        self.types
            .get(id)
            .map_or(TokenType::Normal, |&t| TokenType::from_i32(t))
    }
}

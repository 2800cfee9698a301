//! Tokenizers built from GGUF vocabularies, matching llama.cpp's tokenization exactly.
//!
//! How the pieces fit:
//! - [`Vocab`] is the vocabulary as plain data (token texts, scores, types, merges, special
//!   ids, flags); [`gguf::vocab_from_gguf`] fills it from a GGUF file.
//! - [`Tokenizer::from_vocab`] checks it and builds the model: byte-level BPE for
//!   `tokenizer.ggml.model = "gpt2"` (on the `tokenizers` crate, pre-tokenizer chosen by
//!   `tokenizer.ggml.pre`), SentencePiece-by-score for `"llama"`.
//! - [`Tokenizer::encode`] first splits the text on special tokens written in it (control
//!   tokens only with `parse_special`, user-defined ones always), then runs the model on
//!   each remaining piece, adding BOS/EOS as the vocabulary asks.
//! - [`Tokenizer::token_to_piece`] and [`Tokenizer::decode`] turn ids back into bytes.
//! - [`TokenizerError`] says why a vocabulary or an id was rejected.

mod bpe;
mod error;
// `gguf` is written against the core GGUF reader (`glimmer_core::gguf::Gguf`); declare it
// once that reader is merged:
pub mod gguf;
mod partition;
mod specials;
mod spm;
mod table;
#[cfg(test)]
mod tests;
mod vocab;

use std::borrow::Cow;

pub use error::{SpecialToken, TokenizerError, VocabArray};
pub use vocab::{TokenType, Vocab};

use partition::{partition, Fragment};
use table::{Attr, Table};

/// The algorithm a [`Tokenizer`] runs on text between special tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenizerKind {
    /// Byte-level BPE by merge rank (`tokenizer.ggml.model = "gpt2"`).
    Bpe,
    /// SentencePiece by token score (`tokenizer.ggml.model = "llama"`).
    Spm,
}

/// The per-algorithm state.
#[derive(Debug)]
enum Model {
    Bpe(Box<bpe::Bpe>),
    Spm,
}

/// A tokenizer: text ↔ token ids, as llama.cpp computes them.
#[derive(Debug)]
pub struct Tokenizer {
    table: Table,
    model: Model,
    specials: specials::Specials,
    bos: Option<u32>,
    eos: Option<u32>,
    add_bos: bool,
    add_eos: bool,
    add_space_prefix: bool,
}

impl Tokenizer {
    /// Checks `v` and builds its tokenizer.
    pub fn from_vocab(v: Vocab) -> Result<Self, TokenizerError> {
        v.check()?;
        let mut table = Table::new(&v);
        let model = match v.model.as_str() {
            "gpt2" => Model::Bpe(Box::new(bpe::Bpe::new(&table, &v.merges, &v.pre)?)),
            "llama" => Model::Spm,
            _ => return Err(TokenizerError::UnsupportedModel),
        };
        let specials = specials::detect(&mut table, v.eos, v.eot, v.eom);
        Ok(Self {
            table,
            model,
            specials,
            bos: v.bos,
            eos: v.eos,
            add_bos: v.add_bos,
            add_eos: v.add_eos,
            add_space_prefix: v.add_space_prefix,
        })
    }

    /// Tokenizes `text`.
    ///
    /// `add_special` adds BOS (and EOS) where the vocabulary's `add_bos` (`add_eos`) asks.
    /// `parse_special` makes control tokens written in the text (`<|im_start|>`) count as
    /// those tokens; without it they are tokenized as text. User-defined tokens are always
    /// recognised, as in llama.cpp.
    pub fn encode(
        &self,
        text: &str,
        add_special: bool,
        parse_special: bool,
    ) -> Result<Vec<u32>, TokenizerError> {
        let mut out = Vec::new();
        if add_special && self.add_bos {
            out.extend(self.bos);
        }
        let frags = partition(text, &self.specials.partition, &self.table, parse_special);
        match &self.model {
            Model::Bpe(bpe) => {
                for frag in frags {
                    match frag {
                        Fragment::Text(t) => bpe.encode(t, &mut out)?,
                        Fragment::Token(id) => out.push(id),
                    }
                }
            }
            Model::Spm => {
                let mut prev_special = true;
                for frag in frags {
                    match frag {
                        Fragment::Text(t) => {
                            let prefix = if self.add_space_prefix && prev_special {
                                " "
                            } else {
                                ""
                            };
                            let escaped = format!("{prefix}{t}").replace(' ', "\u{2581}");
                            spm::encode(&escaped, &self.table, &mut out)?;
                            prev_special = false;
                        }
                        Fragment::Token(id) => {
                            out.push(id);
                            prev_special = true;
                        }
                    }
                }
            }
        }
        if add_special && self.add_eos {
            out.extend(self.eos);
        }
        Ok(out)
    }

    /// The bytes token `id` stands for (possibly part of a UTF-8 character).
    ///
    /// Control and unknown tokens give their text with `special`, nothing without it;
    /// user-defined tokens give their text; byte tokens give their byte.
    pub fn token_to_piece(&self, id: u32, special: bool) -> Result<Cow<'_, [u8]>, TokenizerError> {
        let text = self.table.text(id).ok_or(TokenizerError::TokenOutOfRange {
            id,
            vocab_size: self.table.len(),
        })?;
        let attr = self.table.attr(id);
        let special_attr = Attr::UNKNOWN.with(Attr::CONTROL);
        if attr.any(special_attr) && !special {
            return Ok(Cow::Borrowed(&[]));
        }
        if attr.any(special_attr.with(Attr::USER_DEFINED)) {
            return Ok(Cow::Borrowed(text.as_bytes()));
        }
        if attr.any(Attr::NORMAL) {
            return Ok(match &self.model {
                Model::Spm if text.contains('\u{2581}') => {
                    Cow::Owned(text.replace('\u{2581}', " ").into_bytes())
                }
                Model::Spm => Cow::Borrowed(text.as_bytes()),
                Model::Bpe(bpe) => {
                    let mut out = Vec::with_capacity(text.len());
                    bpe.decode_into(text, &mut out);
                    Cow::Owned(out)
                }
            });
        }
        if attr.any(Attr::BYTE) {
            let byte = text.get(3..5).and_then(|h| u8::from_str_radix(h, 16).ok());
            return Ok(byte.map_or(Cow::Borrowed(&[][..]), |b| Cow::Owned(vec![b])));
        }
        Ok(Cow::Borrowed(&[]))
    }

    /// The bytes to print for token `id` while streaming: [`Self::token_to_piece`] without
    /// control tokens.
    pub fn decode_token(&self, id: u32) -> Result<Cow<'_, [u8]>, TokenizerError> {
        self.token_to_piece(id, false)
    }

    /// The bytes of `ids` as llama.cpp's detokenizer gives them with special tokens removed:
    /// a leading BOS and trailing EOS that the vocabulary adds are dropped, control tokens
    /// give nothing, and with `add_space_prefix` the first piece loses one leading space.
    pub fn decode_bytes(&self, ids: &[u32]) -> Result<Vec<u8>, TokenizerError> {
        let mut ids = ids;
        if self.add_bos {
            if let (Some(bos), Some((&first, rest))) = (self.bos, ids.split_first()) {
                if first == bos {
                    ids = rest;
                }
            }
        }
        if self.add_eos {
            if let (Some(eos), Some((&last, rest))) = (self.eos, ids.split_last()) {
                if last == eos {
                    ids = rest;
                }
            }
        }
        let mut out = Vec::new();
        for (i, &id) in ids.iter().enumerate() {
            let piece = self.token_to_piece(id, false)?;
            let piece = match piece.split_first() {
                Some((b' ', rest)) if i == 0 && self.add_space_prefix => rest,
                _ => &piece[..],
            };
            out.extend_from_slice(piece);
        }
        Ok(out)
    }

    /// [`Self::decode_bytes`] as a string; invalid UTF-8 becomes U+FFFD.
    pub fn decode(&self, ids: &[u32]) -> Result<String, TokenizerError> {
        Ok(String::from_utf8_lossy(&self.decode_bytes(ids)?).into_owned())
    }

    /// Number of tokens.
    pub fn vocab_size(&self) -> usize {
        self.table.len()
    }

    /// Which algorithm runs.
    pub fn kind(&self) -> TokenizerKind {
        match self.model {
            Model::Bpe(..) => TokenizerKind::Bpe,
            Model::Spm => TokenizerKind::Spm,
        }
    }

    /// The beginning-of-sequence token.
    pub fn bos(&self) -> Option<u32> {
        self.bos
    }

    /// The end-of-sequence token.
    pub fn eos(&self) -> Option<u32> {
        self.eos
    }

    /// The end-of-turn token (from the file, else detected by text).
    pub fn eot(&self) -> Option<u32> {
        self.specials.eot
    }

    /// The end-of-message token (from the file, else detected by text).
    pub fn eom(&self) -> Option<u32> {
        self.specials.eom
    }

    /// Whether `encode(.., add_special = true, ..)` prepends BOS.
    pub fn add_bos(&self) -> bool {
        self.add_bos
    }

    /// Whether generating `id` ends generation: EOS, EOT, EOM and the tokens llama.cpp
    /// marks by text (`<|im_end|>`, `<end_of_turn>`, `<|endoftext|>`, …).
    pub fn is_eog(&self, id: u32) -> bool {
        self.specials.eog.binary_search(&id).is_ok()
    }

    /// All end-of-generation tokens, sorted.
    pub fn eog_tokens(&self) -> &[u32] {
        &self.specials.eog
    }

    /// Whether `id` is a control token (rendered only on request, matched only with
    /// `parse_special`).
    pub fn is_control(&self, id: u32) -> bool {
        self.table.attr(id).any(Attr::CONTROL)
    }

    /// The stored text of token `id`.
    pub fn token_text(&self, id: u32) -> Option<&str> {
        self.table.text(id)
    }

    /// The id of the token whose text is exactly `text`.
    pub fn token_id(&self, text: &str) -> Option<u32> {
        self.table.id(text)
    }
}

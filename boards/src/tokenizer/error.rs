//! The tokenizer module's error type.

use core::fmt;

/// A per-token array of the vocabulary that must have one entry per token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum VocabArray {
    /// `tokenizer.ggml.scores`.
    Scores,
    /// `tokenizer.ggml.token_type`.
    Types,
}

impl fmt::Display for VocabArray {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Scores => "tokenizer.ggml.scores",
            Self::Types => "tokenizer.ggml.token_type",
        })
    }
}

/// A special token role that the vocabulary names by id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpecialToken {
    /// Beginning of sequence.
    Bos,
    /// End of sequence.
    Eos,
    /// End of turn.
    Eot,
    /// End of message.
    Eom,
    /// Unknown token.
    Unk,
    /// Padding.
    Pad,
}

impl fmt::Display for SpecialToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Bos => "BOS",
            Self::Eos => "EOS",
            Self::Eot => "EOT",
            Self::Eom => "EOM",
            Self::Unk => "UNK",
            Self::Pad => "PAD",
        })
    }
}

/// Why a vocabulary was rejected or a text could not be tokenized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenizerError {
    /// `tokenizer.ggml.model` is neither `gpt2` (byte-level BPE) nor `llama` (SentencePiece).
    #[error("unsupported tokenizer model (tokenizer.ggml.model)")]
    UnsupportedModel,
    /// `tokenizer.ggml.pre` names a BPE pre-tokenizer this crate does not implement.
    #[error("unsupported BPE pre-tokenizer (tokenizer.ggml.pre)")]
    UnsupportedPre,
    /// The vocabulary has no tokens.
    #[error("the vocabulary has no tokens")]
    EmptyVocab,
    /// The vocabulary has more tokens than an `i32` token id can address.
    #[error("the vocabulary has {0} tokens, more than token ids can address")]
    VocabTooLarge(usize),
    /// A per-token array has a different length than the token list.
    #[error("{array} has {len} entries but there are {tokens} tokens")]
    LengthMismatch {
        /// Which array.
        array: VocabArray,
        /// Its length.
        len: usize,
        /// The number of tokens.
        tokens: usize,
    },
    /// A special token id is not below the vocabulary size.
    #[error("{which} token id {id} is not below the vocabulary size {vocab_size}")]
    SpecialOutOfRange {
        /// Which special token.
        which: SpecialToken,
        /// The id given.
        id: u64,
        /// The number of tokens.
        vocab_size: usize,
    },
    /// `add_bos`/`add_eos` is set but the vocabulary names no such token.
    #[error("the vocabulary asks to add a {0} token but has none")]
    SpecialMissing(SpecialToken),
    /// A byte-level BPE vocabulary without `tokenizer.ggml.merges`.
    #[error("the BPE vocabulary has no merges")]
    MissingMerges,
    /// A required GGUF key is absent.
    #[error("GGUF key {key} is missing")]
    MissingKey {
        /// The key.
        key: &'static str,
    },
    /// A GGUF key has the wrong type or a malformed value.
    #[error("GGUF key {key} has the wrong type or a malformed value")]
    BadKey {
        /// The key.
        key: &'static str,
    },
    /// SentencePiece byte fallback found neither a `<0xXX>` token nor the byte itself.
    #[error("no token for byte 0x{0:02X}")]
    NoByteToken(u8),
    /// A token id passed in is not below the vocabulary size.
    #[error("token id {id} is not below the vocabulary size {vocab_size}")]
    TokenOutOfRange {
        /// The id given.
        id: u32,
        /// The number of tokens.
        vocab_size: usize,
    },
    /// The `tokenizers` crate refused to build the BPE model.
    #[error("the BPE model could not be built")]
    BpeBuild,
    /// The `tokenizers` crate failed while encoding a text.
    #[error("the BPE model failed on the input")]
    BpeEncode,
}

//! The token table: texts, attributes, scores and the text → id map.

use std::collections::HashMap;

use super::vocab::{TokenType, Vocab};

/// Token attribute bits (llama.cpp's `llama_token_attr`); a token may carry several.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Attr(pub(crate) u16);

impl Attr {
    pub(crate) const UNKNOWN: Attr = Attr(1 << 0);
    pub(crate) const UNUSED: Attr = Attr(1 << 1);
    pub(crate) const NORMAL: Attr = Attr(1 << 2);
    pub(crate) const CONTROL: Attr = Attr(1 << 3);
    pub(crate) const USER_DEFINED: Attr = Attr(1 << 4);
    pub(crate) const BYTE: Attr = Attr(1 << 5);

    /// The attribute a stored token type starts with.
    pub(crate) fn from_type(t: TokenType) -> Self {
        match t {
            TokenType::Normal => Self::NORMAL,
            TokenType::Unknown => Self::UNKNOWN,
            TokenType::Control => Self::CONTROL,
            TokenType::UserDefined => Self::USER_DEFINED,
            TokenType::Unused => Self::UNUSED,
            TokenType::Byte => Self::BYTE,
            TokenType::Undefined => Self(0),
        }
    }

    /// Whether any bit of `other` is set.
    pub(crate) fn any(self, other: Attr) -> bool {
        self.0 & other.0 != 0
    }

    /// Both sets of bits.
    pub(crate) fn with(self, other: Attr) -> Attr {
        Attr(self.0 | other.0)
    }
}

/// The per-token data every algorithm reads.
#[derive(Debug)]
pub(crate) struct Table {
    /// Token texts by id; an empty stored text becomes `[EMPTY_<id>]` as in llama.cpp.
    pub(crate) texts: Vec<String>,
    /// Attributes by id.
    pub(crate) attrs: Vec<Attr>,
    /// Scores by id (0 when the vocabulary has none).
    pub(crate) scores: Vec<f32>,
    /// Text → id; for duplicate texts the highest id wins, as in llama.cpp.
    pub(crate) ids: HashMap<String, u32>,
}

impl Table {
    /// Builds the table from a checked vocabulary.
    pub(crate) fn new(v: &Vocab) -> Self {
        let n = v.tokens.len();
        let mut texts = Vec::with_capacity(n);
        let mut ids = HashMap::with_capacity(n);
        for (i, t) in v.tokens.iter().enumerate() {
            let text = if t.is_empty() {
                format!("[EMPTY_{i}]")
            } else {
                t.clone()
            };
            // `Vocab::check` bounds the count by `i32::MAX`.
            let id = u32::try_from(i).unwrap_or(u32::MAX);
            ids.insert(text.clone(), id);
            texts.push(text);
        }
        let attrs = (0..n).map(|i| Attr::from_type(v.token_type(i))).collect();
        let scores = if v.scores.len() == n {
            v.scores.clone()
        } else {
            vec![0.0; n]
        };
        Self {
            texts,
            attrs,
            scores,
            ids,
        }
    }

    /// The id of the token with exactly this text.
    pub(crate) fn id(&self, text: &str) -> Option<u32> {
        self.ids.get(text).copied()
    }

    /// The text of token `id`.
    pub(crate) fn text(&self, id: u32) -> Option<&str> {
        self.texts
            .get(usize::try_from(id).ok()?)
            .map(String::as_str)
    }

    /// The attributes of token `id` (empty when out of range).
    pub(crate) fn attr(&self, id: u32) -> Attr {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.attrs.get(i))
            .copied()
            .unwrap_or_default()
    }

    /// The score of token `id` (0 when out of range).
    pub(crate) fn score(&self, id: u32) -> f32 {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.scores.get(i))
            .copied()
            .unwrap_or(0.0)
    }

    /// Adds `extra` to the attributes of token `id`.
    pub(crate) fn add_attr(&mut self, id: u32, extra: Attr) {
        if let Some(a) = usize::try_from(id).ok().and_then(|i| self.attrs.get_mut(i)) {
            *a = a.with(extra);
        }
    }

    /// Replaces the attributes of token `id`.
    pub(crate) fn set_attr(&mut self, id: u32, attr: Attr) {
        if let Some(a) = usize::try_from(id).ok().and_then(|i| self.attrs.get_mut(i)) {
            *a = attr;
        }
    }

    /// Number of tokens.
    pub(crate) fn len(&self) -> usize {
        self.texts.len()
    }
}

//! A synthetic byte-level BPE vocabulary: the 256 GPT-2 byte characters, seeded random merges
//! over letters, and a block of control tokens at the end.

use std::collections::HashSet;

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::tensors::{below, mix};

/// `tokenizer.ggml.token_type` of ordinary tokens.
const NORMAL: i32 = 1;
/// `tokenizer.ggml.token_type` of control tokens.
const CONTROL: i32 = 3;

/// The named control tokens: text, offset in the real model's control block (which starts at
/// id 200000), and offset in a compact block.
const NAMED: [(&str, usize, usize); 7] = [
    ("<|begin_of_text|>", 0, 0),
    ("<|end_of_text|>", 1, 1),
    ("<|eom|>", 7, 2),
    ("<|eot|>", 8, 3),
    ("<|start|>", 22, 4),
    ("<|message|>", 23, 5),
    ("<|mask|>", 1818, 6),
];

/// Longest merged token (in characters) that can still be a merge's left part.
const MAX_WORD: usize = 12;
/// Longest merged token that can be a merge's right part.
const MAX_CONT: usize = 3;

/// The smallest control block that can hold the named tokens.
pub(super) const MIN_SPECIAL: usize = NAMED.len();

/// A generated vocabulary.
#[derive(Clone, Debug)]
pub(super) struct SynthVocab {
    /// Token texts by id.
    pub tokens: Vec<String>,
    /// Token types by id.
    pub types: Vec<i32>,
    /// Merges, highest priority first.
    pub merges: Vec<String>,
    /// `<|begin_of_text|>`.
    pub bos: u32,
    /// `<|end_of_text|>`.
    pub eos: u32,
    /// `<|eot|>`.
    pub eot: u32,
    /// `<|eom|>`.
    pub eom: u32,
}

/// The GPT-2 byte-level character of byte `b`: printable Latin-1 bytes stand for themselves,
/// the other 68 bytes map in order to U+0100, U+0101, ….
pub(super) fn byte_char(b: u8) -> char {
    let printable = |x: u8| matches!(x, 33..=126 | 161..=172 | 174..=255);
    if printable(b) {
        char::from(b)
    } else {
        let n = (0..b).filter(|&x| !printable(x)).count() as u32;
        char::from_u32(256 + n).unwrap_or('?')
    }
}

/// Builds a vocabulary of `size` tokens whose last `n_special` ids are control tokens.
///
/// Ids 0..256 are the byte characters (id = byte). Then come merged tokens: each joins a
/// "word" token (a lowercase letter, the space character `Ġ`, or an earlier merged token of
/// at most [`MAX_WORD`] characters) with a "continuation" token (a lowercase letter or an
/// earlier merged token of at most [`MAX_CONT`] characters without `Ġ`), picked by a seeded
/// RNG, so every merge is a letter run the GPT-2 pre-tokenizer keeps together and no token is
/// longer than `MAX_WORD + MAX_CONT` characters.
/// When `n_special` reaches the real model's 2048-id block the named tokens sit at their real
/// offsets (`<|begin_of_text|>` at the block start, `<|eot|>` at +8, …); otherwise they are
/// packed at the start of the block. The rest of the block is `<|reserved_N|>`.
///
/// The caller guarantees `size >= 256 + n_special` and `n_special >= MIN_SPECIAL`.
pub(super) fn synth_vocab(size: usize, n_special: usize, seed: u64) -> SynthVocab {
    let base = size - n_special;
    let mut tokens: Vec<String> = (0..=255u8).map(|b| byte_char(b).to_string()).collect();
    let mut seen: HashSet<String> = tokens.iter().cloned().collect();
    let letters: Vec<usize> = (b'a'..=b'z').map(usize::from).collect();
    let mut word: Vec<usize> = letters.iter().copied().chain([usize::from(b' ')]).collect();
    let mut cont = letters;
    let mut merges = Vec::with_capacity(base.saturating_sub(256));
    let mut rng = ChaCha8Rng::seed_from_u64(mix(seed, u64::MAX));
    while tokens.len() < base {
        let l = word[below(&mut rng, word.len())];
        let r = cont[below(&mut rng, cont.len())];
        let text = format!("{}{}", tokens[l], tokens[r]);
        if !seen.insert(text.clone()) {
            continue;
        }
        merges.push(format!("{} {}", tokens[l], tokens[r]));
        let id = tokens.len();
        let chars = text.chars().count();
        if chars <= MAX_CONT && !text.starts_with(byte_char(b' ')) {
            cont.push(id);
        }
        if chars <= MAX_WORD {
            word.push(id);
        }
        tokens.push(text);
    }
    let real = n_special > NAMED.iter().map(|n| n.1).max().unwrap_or(0);
    let mut special: Vec<Option<&str>> = vec![None; n_special];
    for (text, real_off, compact_off) in NAMED {
        special[if real { real_off } else { compact_off }] = Some(text);
    }
    for (i, s) in special.iter().enumerate() {
        tokens.push(s.map_or_else(|| format!("<|reserved_{i}|>"), str::to_owned));
    }
    let mut types = vec![NORMAL; base];
    types.resize(size, CONTROL);
    let id_of = |name: &str| tokens.iter().rposition(|t| t == name).unwrap_or(0) as u32;
    SynthVocab {
        bos: id_of("<|begin_of_text|>"),
        eos: id_of("<|end_of_text|>"),
        eot: id_of("<|eot|>"),
        eom: id_of("<|eom|>"),
        tokens,
        types,
        merges,
    }
}

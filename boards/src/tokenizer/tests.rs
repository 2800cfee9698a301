//! Unit tests on tiny hand-made vocabularies.

use super::*;

/// A SentencePiece vocabulary: specials, the 256 byte tokens, then `pieces` with scores.
fn spm_vocab(pieces: &[(&str, f32)], user: &[&str]) -> Vocab {
    let mut tokens = vec![
        "<unk>".to_owned(),
        "<bos>".to_owned(),
        "<eos>".to_owned(),
        "<end_of_turn>".to_owned(),
    ];
    let mut types = vec![2, 3, 3, 3];
    for b in 0..=255u8 {
        tokens.push(format!("<0x{b:02X}>"));
        types.push(6);
    }
    for u in user {
        tokens.push((*u).to_owned());
        types.push(4);
    }
    let mut scores = vec![0.0; tokens.len()];
    for (p, s) in pieces {
        tokens.push((*p).to_owned());
        types.push(1);
        scores.push(*s);
    }
    let mut v = Vocab::new("llama", "default", tokens);
    v.scores = scores;
    v.types = types;
    v.bos = Some(1);
    v.eos = Some(2);
    v.unk = Some(0);
    v.add_space_prefix = false;
    v
}

fn ids(t: &Tokenizer, pieces: &[&str]) -> Vec<u32> {
    pieces
        .iter()
        .map(|p| t.token_id(p).unwrap_or_else(|| panic!("no token {p:?}")))
        .collect()
}

#[test]
fn spm_prefers_higher_score_over_position() {
    let t = Tokenizer::from_vocab(spm_vocab(
        &[
            ("a", -1.0),
            ("b", -1.0),
            ("c", -1.0),
            ("ab", -3.0),
            ("bc", -2.0),
        ],
        &[],
    ))
    .unwrap();
    assert_eq!(
        t.encode("abc", false, false).unwrap(),
        ids(&t, &["a", "bc"])
    );
}

#[test]
fn spm_breaks_score_ties_leftmost_first() {
    let t = Tokenizer::from_vocab(spm_vocab(
        &[
            ("a", -1.0),
            ("b", -1.0),
            ("c", -1.0),
            ("ab", -2.0),
            ("bc", -2.0),
        ],
        &[],
    ))
    .unwrap();
    assert_eq!(
        t.encode("abc", false, false).unwrap(),
        ids(&t, &["ab", "c"])
    );
}

#[test]
fn spm_merges_through_intermediate_pieces() {
    let pieces = [
        ("h", -5.0),
        ("e", -5.0),
        ("l", -5.0),
        ("o", -5.0),
        ("ll", -1.0),
        ("he", -2.0),
        ("llo", -1.5),
        ("hello", -0.5),
    ];
    let t = Tokenizer::from_vocab(spm_vocab(&pieces, &[])).unwrap();
    assert_eq!(
        t.encode("hello", false, false).unwrap(),
        ids(&t, &["hello"])
    );
    assert_eq!(
        t.encode("helo", false, false).unwrap(),
        ids(&t, &["he", "l", "o"])
    );
}

#[test]
fn spm_escapes_spaces_and_falls_back_to_bytes() {
    let t = Tokenizer::from_vocab(spm_vocab(
        &[("a", -1.0), ("▁", -1.0), ("▁b", -1.0), ("b", -1.0)],
        &[],
    ))
    .unwrap();
    assert_eq!(
        t.encode("a b", false, false).unwrap(),
        ids(&t, &["a", "▁b"])
    );
    assert_eq!(
        t.encode("é ", false, false).unwrap(),
        ids(&t, &["<0xC3>", "<0xA9>", "▁"])
    );
    for text in ["a b", "é ", "  ba\u{1F600}", "b\n"] {
        assert_eq!(
            t.decode(&t.encode(text, true, false).unwrap()).unwrap(),
            text
        );
    }
    // A lone byte of a multi-byte character is part of a character, not text.
    assert_eq!(
        &*t.decode_token(t.token_id("<0xC3>").unwrap()).unwrap(),
        &[0xC3]
    );
}

#[test]
fn spm_space_prefix_only_at_start_and_after_specials() {
    let mut v = spm_vocab(&[("a", -1.0), ("▁a", -0.5), ("▁", -1.0)], &[]);
    v.add_space_prefix = true;
    let t = Tokenizer::from_vocab(v).unwrap();
    assert_eq!(t.encode("aa", false, false).unwrap(), ids(&t, &["▁a", "a"]));
    assert_eq!(
        t.encode("a<eos>a", false, true).unwrap(),
        ids(&t, &["▁a", "<eos>", "▁a"])
    );
    // The detokenizer drops the prefix space again.
    assert_eq!(
        t.decode(&t.encode("aa", true, false).unwrap()).unwrap(),
        "aa"
    );
}

#[test]
fn bos_and_eos_follow_the_vocabulary_flags() {
    let mut v = spm_vocab(&[("a", -1.0)], &[]);
    v.add_bos = true;
    let t = Tokenizer::from_vocab(v.clone()).unwrap();
    assert_eq!(
        t.encode("a", true, false).unwrap(),
        ids(&t, &["<bos>", "a"])
    );
    assert_eq!(t.encode("a", false, false).unwrap(), ids(&t, &["a"]));
    assert_eq!(t.encode("", true, false).unwrap(), ids(&t, &["<bos>"]));
    v.add_eos = true;
    let t = Tokenizer::from_vocab(v).unwrap();
    assert_eq!(
        t.encode("a", true, false).unwrap(),
        ids(&t, &["<bos>", "a", "<eos>"])
    );
}

#[test]
fn control_tokens_need_parse_special_but_user_defined_do_not() {
    let t = Tokenizer::from_vocab(spm_vocab(&[("a", -1.0)], &["\n\n"])).unwrap();
    let eot = t.token_id("<end_of_turn>").unwrap();
    let nn = t.token_id("\n\n").unwrap();
    let parsed = t.encode("a<end_of_turn>\n\na", false, true).unwrap();
    assert_eq!(
        parsed,
        vec![t.token_id("a").unwrap(), eot, nn, t.token_id("a").unwrap()]
    );
    let plain = t.encode("a<end_of_turn>\n\na", false, false).unwrap();
    assert!(!plain.contains(&eot));
    assert!(plain.contains(&nn));
    // Control tokens render only on request; user-defined ones always.
    assert_eq!(&*t.token_to_piece(eot, true).unwrap(), b"<end_of_turn>");
    assert!(t.token_to_piece(eot, false).unwrap().is_empty());
    assert_eq!(&*t.decode_token(nn).unwrap(), b"\n\n");
    assert_eq!(t.decode(&plain).unwrap(), "a<end_of_turn>\n\na");
}

#[test]
fn longer_special_tokens_split_first() {
    let mut v = spm_vocab(&[("x", -1.0)], &["ab", "bcd"]);
    v.add_space_prefix = false;
    let t = Tokenizer::from_vocab(v).unwrap();
    let got = t.encode("abcd", false, false).unwrap();
    assert_eq!(got, ids(&t, &["<0x61>", "bcd"]));
}

#[test]
fn end_of_generation_tokens_are_found_by_text() {
    let t = Tokenizer::from_vocab(spm_vocab(&[("a", -1.0)], &["</s>"])).unwrap();
    let eot = t.token_id("<end_of_turn>").unwrap();
    assert_eq!(t.eot(), Some(eot));
    assert!(t.is_eog(eot));
    assert!(t.is_eog(2));
    assert!(!t.is_eog(1));
    // `</s>` ends generation and so becomes a control token.
    let s = t.token_id("</s>").unwrap();
    assert!(t.is_eog(s) && t.is_control(s));
}

/// GPT-2's byte → character map, written out independently of the implementation.
fn gpt2_chars() -> Vec<char> {
    let mut printable: Vec<u32> = (0x21..=0x7E)
        .chain(0xA1..=0xAC)
        .chain(0xAE..=0xFF)
        .collect();
    let mut chars = vec!['\0'; 256];
    let mut extra = 0;
    for b in 0..256u32 {
        if let Some(pos) = printable.iter().position(|&p| p == b) {
            printable.remove(pos);
            chars[b as usize] = char::from_u32(b).unwrap();
        } else {
            chars[b as usize] = char::from_u32(256 + extra).unwrap();
            extra += 1;
        }
    }
    chars
}

/// A byte-level BPE vocabulary: `<|endoftext|>`, `<|im_start|>`, the 256 byte characters,
/// then one token per merge result.
fn bpe_vocab(merges: &[&str]) -> Vocab {
    let mut tokens = vec!["<|endoftext|>".to_owned(), "<|im_start|>".to_owned()];
    let mut types = vec![3, 3];
    for c in gpt2_chars() {
        tokens.push(c.to_string());
        types.push(1);
    }
    for m in merges {
        tokens.push(m.replace(' ', ""));
        types.push(1);
    }
    let mut v = Vocab::new("gpt2", "smollm", tokens);
    v.types = types;
    v.merges = merges.iter().map(|m| (*m).to_owned()).collect();
    v.bos = Some(1);
    v.eos = Some(0);
    v
}

#[test]
fn bpe_applies_merges_by_rank() {
    let t = Tokenizer::from_vocab(bpe_vocab(&["a b", "b c"])).unwrap();
    assert_eq!(
        t.encode("abc", false, false).unwrap(),
        ids(&t, &["ab", "c"])
    );
    let t = Tokenizer::from_vocab(bpe_vocab(&["b c", "a b"])).unwrap();
    assert_eq!(
        t.encode("abc", false, false).unwrap(),
        ids(&t, &["a", "bc"])
    );
}

#[test]
fn bpe_pre_tokenizes_like_smollm() {
    let t =
        Tokenizer::from_vocab(bpe_vocab(&["Ġ t", "h e", "Ġt he", "1 2", "' s", "Ġ Ġ"])).unwrap();
    assert_eq!(t.encode(" the", false, false).unwrap(), ids(&t, &["Ġthe"]));
    // Digits are isolated before the GPT-2 pattern, so "1 2" never merges.
    assert_eq!(t.encode("12", false, false).unwrap(), ids(&t, &["1", "2"]));
    // A contraction is its own word; the pattern keeps a space run's last space for the word.
    assert_eq!(
        t.encode("he's   the", false, false).unwrap(),
        ids(&t, &["he", "'s", "ĠĠ", "Ġthe"])
    );
    assert_eq!(t.encode("\n", false, false).unwrap(), ids(&t, &["Ċ"]));
}

#[test]
fn bpe_characters_outside_the_vocabulary_block_merges_and_vanish() {
    let mut v = bpe_vocab(&["> '"]);
    let missing = gpt2_chars()[0x16].to_string();
    let at = v.tokens.iter().position(|t| *t == missing).unwrap();
    v.tokens[at] = "<unused>".to_owned();
    v.types[at] = 5;
    let t = Tokenizer::from_vocab(v).unwrap();
    assert_eq!(t.encode(">'", false, false).unwrap(), ids(&t, &[">'"]));
    assert_eq!(
        t.encode(">\u{16}'", false, false).unwrap(),
        ids(&t, &[">", "'"])
    );
}

#[test]
fn bpe_specials_and_decoding() {
    let t = Tokenizer::from_vocab(bpe_vocab(&["Ġ t", "h e", "Ġt he"])).unwrap();
    let start = t.token_id("<|im_start|>").unwrap();
    let text = "<|im_start|>the é😀";
    let parsed = t.encode(text, false, true).unwrap();
    assert_eq!(parsed[0], start);
    let plain = t.encode(text, false, false).unwrap();
    assert!(!plain.contains(&start));
    assert_eq!(t.decode(&plain).unwrap(), text);
    assert_eq!(t.decode(&parsed).unwrap(), "the é😀");
    assert_eq!(&*t.token_to_piece(start, true).unwrap(), b"<|im_start|>");
    // `add_bos` is off by default for gpt2.
    assert_eq!(t.encode("the", true, false).unwrap(), ids(&t, &["t", "he"]));
    assert!(t.is_eog(0));
}

#[test]
fn bad_vocabularies_are_typed_errors() {
    let mut v = bpe_vocab(&["a b"]);
    v.scores = vec![0.0; 3];
    assert!(matches!(
        Tokenizer::from_vocab(v).unwrap_err(),
        TokenizerError::LengthMismatch {
            array: VocabArray::Scores,
            len: 3,
            ..
        }
    ));
    let mut v = bpe_vocab(&["a b"]);
    v.types.pop();
    assert!(matches!(
        Tokenizer::from_vocab(v).unwrap_err(),
        TokenizerError::LengthMismatch {
            array: VocabArray::Types,
            ..
        }
    ));
    let mut v = bpe_vocab(&["a b"]);
    v.eos = Some(100_000);
    assert!(matches!(
        Tokenizer::from_vocab(v).unwrap_err(),
        TokenizerError::SpecialOutOfRange {
            which: SpecialToken::Eos,
            id: 100_000,
            ..
        }
    ));
    let mut v = bpe_vocab(&["a b"]);
    v.pre = "mystery".to_owned();
    assert_eq!(
        Tokenizer::from_vocab(v).unwrap_err(),
        TokenizerError::UnsupportedPre
    );
    let mut v = bpe_vocab(&[]);
    v.merges.clear();
    assert_eq!(
        Tokenizer::from_vocab(v).unwrap_err(),
        TokenizerError::MissingMerges
    );
    let mut v = bpe_vocab(&["a b"]);
    v.model = "t5".to_owned();
    assert_eq!(
        Tokenizer::from_vocab(v).unwrap_err(),
        TokenizerError::UnsupportedModel
    );
    assert_eq!(
        Tokenizer::from_vocab(Vocab::new("llama", "", vec![])).unwrap_err(),
        TokenizerError::EmptyVocab
    );
    let t = Tokenizer::from_vocab(bpe_vocab(&["a b"])).unwrap();
    assert!(matches!(
        t.decode(&[1_000_000]).unwrap_err(),
        TokenizerError::TokenOutOfRange { id: 1_000_000, .. }
    ));
}

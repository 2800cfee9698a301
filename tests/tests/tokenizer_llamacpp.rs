//! Tokenization must match llama.cpp exactly.
//!
//! The fixtures in `tests/fixtures/tokenizer/` hold llama.cpp's token ids for many texts
//! and flag combinations, and llama.cpp's detokenization of those ids (written by
//! `scripts/gen_tokenizer_fixtures.py`). Each test loads the real model's vocabulary through
//! the GGUF reader and compares every case; it skips with a message when the model file is
//! absent.
//!
//! Decoding must give back the text exactly, except where llama.cpp cannot either: a
//! SentencePiece vocabulary reads `▁` in the input as a space, and SmolLM2's vocabulary
//! lacks the byte-level characters of some bytes (0x04, 0xF1, …), which vanish.

use std::path::{Path, PathBuf};

use glimmer_boards::tokenizer::{gguf::vocab_from_gguf, Tokenizer};
use glimmer_core::gguf::Gguf;
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    llama_cpp_python: String,
    model_file: String,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    text: String,
    add_special: bool,
    parse_special: bool,
    ids: Vec<u32>,
    /// llama.cpp's detokenization of `ids`, when valid UTF-8.
    decoded: Option<String>,
    /// llama.cpp's detokenization of `ids` in hex, when not valid UTF-8.
    decoded_hex: Option<String>,
}

impl Case {
    /// The bytes llama.cpp decodes `ids` to.
    fn decoded_bytes(&self) -> Vec<u8> {
        if let Some(s) = &self.decoded {
            return s.as_bytes().to_vec();
        }
        let hex = self
            .decoded_hex
            .as_deref()
            .expect("case without decoded text");
        (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }
}

/// `$GLIMMER_MODELS`, else `~/.cache/glimmer/models`.
fn models_dir() -> PathBuf {
    match std::env::var_os("GLIMMER_MODELS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/glimmer/models"),
    }
}

fn load_fixture(name: &str) -> Fixture {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/tokenizer")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The tokenizer of the fixture's model, or `None` (after a message) when the file is absent.
fn load_tokenizer(fx: &Fixture) -> Option<Tokenizer> {
    let path = models_dir().join(&fx.model_file);
    if !path.exists() {
        eprintln!("SKIP: {} not found (set GLIMMER_MODELS)", path.display());
        return None;
    }
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let gguf = Gguf::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
    let vocab = vocab_from_gguf(&gguf).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Some(Tokenizer::from_vocab(vocab).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

fn check_model(name: &str) {
    let fx = load_fixture(name);
    let Some(tok) = load_tokenizer(&fx) else {
        return;
    };
    let mut failures = Vec::new();
    let mut lossy = 0;
    for case in &fx.cases {
        let got = tok
            .encode(&case.text, case.add_special, case.parse_special)
            .unwrap();
        if got != case.ids {
            failures.push(format!(
                "{:?} add_special={} parse_special={}\n  llama.cpp {:?}\n  glimmer   {:?}",
                case.text, case.add_special, case.parse_special, case.ids, got
            ));
        }
        let back = tok.decode_bytes(&case.ids).unwrap();
        let want = case.decoded_bytes();
        if back != want {
            failures.push(format!(
                "{:?} decodes to {:?}, llama.cpp to {:?}",
                case.ids,
                String::from_utf8_lossy(&back),
                String::from_utf8_lossy(&want)
            ));
        }
        if !case.parse_special && want != case.text.as_bytes() {
            // llama.cpp cannot give this text back either (see the module docs).
            lossy += 1;
        } else if !case.parse_special && tok.decode(&got).unwrap() != case.text {
            failures.push(format!("{:?} does not decode back to itself", case.text));
        }
    }
    println!(
        "{name}: {} cases against llama-cpp-python {}; {lossy} without a round trip in llama.cpp either",
        fx.cases.len(),
        fx.llama_cpp_python
    );
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn smollm2_matches_llama_cpp() {
    check_model("smollm2");
}

#[test]
fn gemma3_matches_llama_cpp() {
    check_model("gemma3");
}

#[test]
fn end_of_generation_tokens_match_llama_cpp() {
    // llama.cpp marks these (llama_vocab_is_eog over the whole vocabulary).
    for (name, eog) in [
        ("smollm2", &[0u32, 2, 4][..]),
        ("gemma3", &[1, 106, 212][..]),
    ] {
        let fx = load_fixture(name);
        let Some(tok) = load_tokenizer(&fx) else {
            continue;
        };
        assert_eq!(tok.eog_tokens(), eog, "{name}");
    }
}

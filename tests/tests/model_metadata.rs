//! Malformed model metadata gets its own typed error, with no panic: zero heads, BOS/EOS ids
//! past the vocabulary, vocabulary arrays of unequal length, unknown architectures, missing
//! tensors.

use glimmer_boards::gguf_writer::GgufWriter;
use glimmer_boards::tokenizer::gguf::vocab_from_gguf;
use glimmer_boards::tokenizer::{Tokenizer, TokenizerError};
use glimmer_core::gguf::Gguf;
use glimmer_core::model::{ModelError, ModelSpec, Weights};
use glimmer_core::quant::GgmlType;

/// A minimal llama header with a 64-token vocabulary and a `(32, 64)` f32 embedding table.
fn base() -> GgufWriter {
    let mut w = GgufWriter::new();
    w.kv_str("general.architecture", "llama")
        .kv_u32("llama.block_count", 1)
        .kv_u32("llama.embedding_length", 32)
        .kv_u32("llama.feed_forward_length", 64)
        .kv_u32("llama.attention.head_count", 4)
        .kv_u32("llama.attention.head_count_kv", 2)
        .kv_str("tokenizer.ggml.model", "llama");
    let tokens: Vec<String> = (0..64).map(|i| format!("t{i}")).collect();
    let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
    w.kv_array_str("tokenizer.ggml.tokens", &refs)
        .kv_array_f32("tokenizer.ggml.scores", &[0.0; 64])
        .kv_array_i32("tokenizer.ggml.token_type", &[1; 64]);
    w.tensor(
        "token_embd.weight",
        GgmlType::F32,
        &[32, 64],
        vec![0u8; 32 * 64 * 4],
    )
    .expect("tensor");
    w
}

fn spec_of(w: &mut GgufWriter) -> Result<ModelSpec, ModelError> {
    let bytes = w.to_bytes();
    let g = Gguf::parse(&bytes).expect("well-formed file");
    ModelSpec::from_gguf(&g)
}

fn vocab_err(w: &mut GgufWriter) -> TokenizerError {
    let bytes = w.to_bytes();
    let g = Gguf::parse(&bytes).expect("well-formed file");
    match vocab_from_gguf(&g).and_then(Tokenizer::from_vocab) {
        Ok(_) => panic!("vocabulary accepted"),
        Err(e) => e,
    }
}

#[test]
fn the_base_header_is_valid() {
    let spec = spec_of(&mut base()).expect("valid");
    assert_eq!(
        (spec.n_head, spec.n_head_kv, spec.head_dim, spec.n_vocab),
        (4, 2, 8, 64)
    );
    let bytes = base().to_bytes();
    let g = Gguf::parse(&bytes).unwrap();
    assert!(Tokenizer::from_vocab(vocab_from_gguf(&g).unwrap()).is_ok());
}

#[test]
fn head_count_zero() {
    let e = spec_of(base().kv_u32("llama.attention.head_count", 0)).unwrap_err();
    assert!(matches!(e, ModelError::BadValue(k) if k.as_str() == "llama.attention.head_count"));
    let e = spec_of(base().kv_u32("llama.attention.head_count_kv", 0)).unwrap_err();
    assert!(matches!(e, ModelError::BadValue(k) if k.as_str() == "llama.attention.head_count_kv"));
    // 4 query heads cannot share 3 KV heads.
    let e = spec_of(base().kv_u32("llama.attention.head_count_kv", 3)).unwrap_err();
    assert!(matches!(e, ModelError::BadValue(_)));
}

#[test]
fn bos_or_eos_past_the_vocabulary() {
    let e = vocab_err(base().kv_u32("tokenizer.ggml.bos_token_id", 64));
    assert!(
        matches!(
            e,
            TokenizerError::SpecialOutOfRange {
                id: 64,
                vocab_size: 64,
                ..
            }
        ),
        "{e:?}"
    );
    let e = vocab_err(base().kv_u32("tokenizer.ggml.eos_token_id", 1000));
    assert!(
        matches!(e, TokenizerError::SpecialOutOfRange { id: 1000, .. }),
        "{e:?}"
    );
}

#[test]
fn vocabulary_arrays_of_unequal_length() {
    let e = vocab_err(base().kv_array_f32("tokenizer.ggml.scores", &[0.0; 63]));
    assert!(
        matches!(
            e,
            TokenizerError::LengthMismatch {
                len: 63,
                tokens: 64,
                ..
            }
        ),
        "{e:?}"
    );
    let e = vocab_err(base().kv_array_i32("tokenizer.ggml.token_type", &[1; 65]));
    assert!(
        matches!(
            e,
            TokenizerError::LengthMismatch {
                len: 65,
                tokens: 64,
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn unknown_architecture_and_missing_keys() {
    let e = spec_of(base().kv_str("general.architecture", "mamba9")).unwrap_err();
    assert!(matches!(e, ModelError::UnknownArch(a) if a.as_str() == "mamba9"));
    let mut w = GgufWriter::new();
    w.kv_str("general.architecture", "llama");
    w.tensor(
        "token_embd.weight",
        GgmlType::F32,
        &[32, 64],
        vec![0u8; 32 * 64 * 4],
    )
    .unwrap();
    let e = spec_of(&mut w).unwrap_err();
    assert!(matches!(e, ModelError::MissingKey(k) if k.as_str() == "llama.block_count"));
}

#[test]
fn missing_layer_tensor() {
    let bytes = base().to_bytes();
    let g = Gguf::parse(&bytes).unwrap();
    let spec = ModelSpec::from_gguf(&g).unwrap();
    let e = Weights::bind(&g, &spec).unwrap_err();
    assert!(
        matches!(e, ModelError::MissingTensor(t) if t.as_str() == "output_norm.weight"),
        "{e:?}"
    );
}

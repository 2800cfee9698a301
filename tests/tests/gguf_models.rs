//! Parses the real model files, when present, and checks facts known about them.
//!
//! Models are looked up in `$GLIMMER_MODELS`, else `~/.cache/glimmer/models`; a missing
//! model skips its test with a message (`scripts/fetch-models.sh` fetches them).

use std::path::PathBuf;
use std::time::Instant;

use glimmer_core::gguf::{Gguf, ValueType};
use glimmer_core::quant::GgmlType;

const SMOLLM2: &str = "smollm2-135m-instruct-q4_1.gguf";
const GEMMA3: &str = "gemma-3-270m-q4_k_m.gguf";

fn models_dir() -> Option<PathBuf> {
    match std::env::var_os("GLIMMER_MODELS") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/glimmer/models")),
    }
}

/// The model's bytes, or `None` (with a message) when it is not there.
fn load(file: &str) -> Option<Vec<u8>> {
    let path = models_dir()?.join(file);
    match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            println!(
                "SKIP: {} not readable ({e}); set GLIMMER_MODELS",
                path.display()
            );
            None
        }
    }
}

/// Checks that hold for any valid file: tensors are in bounds, disjoint, sized by shape.
fn check_structure(g: &Gguf<'_>, file_len: usize) {
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for t in g.tensors() {
        let start = g.data_offset() as u64 + t.offset;
        let end = start + t.data.len() as u64;
        assert!(end <= file_len as u64, "{} past the end", t.name);
        assert_eq!(t.data.len(), t.row_bytes() * t.n_rows(), "{}", t.name);
        assert_eq!(t.n_elements(), t.dims.iter().product::<u64>(), "{}", t.name);
        ranges.push((start, end));
    }
    ranges.sort_unstable();
    assert!(
        ranges.windows(2).all(|w| w[0].1 <= w[1].0),
        "overlapping tensors"
    );
    assert_eq!(g.kvs().count(), g.n_kv());
}

fn parse_timed<'a>(bytes: &'a [u8], file: &str) -> Gguf<'a> {
    let start = Instant::now();
    let g = Gguf::parse(bytes).unwrap_or_else(|e| panic!("{file}: {e}"));
    println!(
        "{file}: parsed {} bytes in {:?}: {g:?}",
        bytes.len(),
        start.elapsed()
    );
    g
}

#[test]
fn smollm2_facts() {
    let Some(bytes) = load(SMOLLM2) else { return };
    let g = parse_timed(&bytes, SMOLLM2);
    check_structure(&g, bytes.len());
    assert_eq!(g.architecture(), Ok(Some("llama")));
    assert_eq!(g.n_tensors(), 272);
    assert_eq!(g.tensors().count(), 272);
    assert_eq!(g.get_u64("llama.block_count"), Ok(Some(30)));
    let embd = g.tensor("token_embd.weight").expect("token_embd.weight");
    assert_eq!(embd.ty, GgmlType::Q8_0);
    assert_eq!(&embd.dims[..embd.n_dims], &[576, 49152]);
    assert_eq!(embd.data.len(), 49152 * (576 / 32) * 34);
    let tokens = g
        .get_array("tokenizer.ggml.tokens")
        .unwrap()
        .expect("tokens");
    assert_eq!(tokens.elem_type(), ValueType::Str);
    assert_eq!(tokens.strs().count(), tokens.len());
    assert_eq!(g.get_u64("llama.vocab_size"), Ok(Some(tokens.len() as u64)));
}

#[test]
fn gemma3_facts() {
    let Some(bytes) = load(GEMMA3) else { return };
    let g = parse_timed(&bytes, GEMMA3);
    check_structure(&g, bytes.len());
    assert_eq!(g.architecture(), Ok(Some("gemma3")));
    assert_eq!(g.n_tensors(), 236);
    assert_eq!(g.get_u64("gemma3.block_count"), Ok(Some(18)));
    assert_eq!(g.get_u64("gemma3.attention.sliding_window"), Ok(Some(512)));
    let tokens = g
        .get_array("tokenizer.ggml.tokens")
        .unwrap()
        .expect("tokens");
    let scores = g
        .get_array("tokenizer.ggml.scores")
        .unwrap()
        .expect("scores");
    assert_eq!((tokens.len(), scores.len()), (262_144, 262_144));
    assert_eq!(tokens.strs().count(), 262_144);
    assert_eq!(scores.elem_type(), ValueType::F32);
    assert!(scores.f32_at(262_143).is_some() && scores.f32_at(262_144).is_none());
    let bos = g
        .get_u64("tokenizer.ggml.bos_token_id")
        .unwrap()
        .expect("bos");
    assert!(bos < tokens.len() as u64);
}

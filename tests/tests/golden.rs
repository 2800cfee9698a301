//! Golden tests: tokens, logits and greedy continuations against llama.cpp.
//!
//! The fixtures in `tests/fixtures/golden/` were written by `scripts/gen_golden.py` with
//! llama-cpp-python on the same GGUF files. For every fixture prompt this checks:
//! - tokenization is identical;
//! - the top-1 token agrees at every position, and the largest logit error over the stored
//!   logits (top 16 at every position, 512 sampled ids every 8th position) stays under
//!   1e-2 × max |logit| of that position;
//! - 64 greedy tokens are identical, or diverge only where our own top two logits are within
//!   float-summation distance (then the divergence is counted and printed).

use glimmer_boards::engine::{Engine, Loaded};
use glimmer_boards::model_file::{ModelFile, DEFAULT_MODEL, GEMMA3_MODEL};
use glimmer_core::exec::{Limits, LogitRows};
use glimmer_core::sample::argmax;
use glimmer_tests::{fixtures_dir, real_model};
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    n_vocab: usize,
    sample_ids: Vec<u32>,
    prompts: Vec<Prompt>,
}

#[derive(Deserialize)]
struct Prompt {
    name: String,
    text: String,
    tokens: Vec<u32>,
    positions: Vec<Position>,
    sampled: Vec<Sampled>,
    greedy: Vec<u32>,
}

#[derive(Deserialize)]
struct Position {
    top: Vec<(u32, f32)>,
    max_abs: f32,
}

#[derive(Deserialize)]
struct Sampled {
    pos: usize,
    logits: Vec<f32>,
}

const REL_TOL: f32 = 1e-2;
const CHUNK: usize = 32;

fn load_fixture(model: &str) -> Option<Fixture> {
    let p = fixtures_dir().join("golden").join(format!("{model}.json"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    Some(serde_json::from_str(&text).expect("fixture parses"))
}

/// Checks logits of every prompt position; returns the worst error relative to max |logit|.
fn check_logits(engine: &mut Engine, p: &Prompt, fx: &Fixture) -> f32 {
    let n_vocab = fx.n_vocab;
    let mut buf = vec![0.0f32; CHUNK * n_vocab];
    engine.reset();
    let mut worst_rel = 0.0f32;
    let mut worst_abs = 0.0f32;
    let mut next_sample = 0usize;
    for (ci, part) in p.tokens.chunks(CHUNK).enumerate() {
        let rows = &mut buf[..part.len() * n_vocab];
        engine.forward(part, LogitRows::All, rows).expect("forward");
        for (r, row) in rows.chunks_exact(n_vocab).enumerate() {
            let pos = ci * CHUNK + r;
            let want = &p.positions[pos];
            let ours = argmax(row).unwrap();
            assert_eq!(
                ours, want.top[0].0,
                "{}: top-1 differs at position {pos}: ours {ours} ({}), llama.cpp {} ({})",
                p.name, row[ours as usize], want.top[0].0, want.top[0].1
            );
            let mut err = 0.0f32;
            for &(id, v) in &want.top {
                err = err.max((row[id as usize] - v).abs());
            }
            if next_sample < p.sampled.len() && p.sampled[next_sample].pos == pos {
                for (&id, &v) in fx.sample_ids.iter().zip(&p.sampled[next_sample].logits) {
                    err = err.max((row[id as usize] - v).abs());
                }
                next_sample += 1;
            }
            let rel = err / want.max_abs.max(1e-6);
            assert!(
                rel < REL_TOL,
                "{}: logit error {err} at position {pos} is {rel} of max |logit| {}",
                p.name,
                want.max_abs
            );
            worst_rel = worst_rel.max(rel);
            worst_abs = worst_abs.max(err);
        }
    }
    assert_eq!(next_sample, p.sampled.len(), "{}: every sampled position checked", p.name);
    eprintln!(
        "{:>12}: {:4} tokens, max_diff {worst_abs:.5} (rel {worst_rel:.2e})",
        p.name,
        p.tokens.len()
    );
    worst_rel
}

/// Greedy continuation; returns how many tokens matched before a float-order divergence, or
/// `None` when all matched.
fn check_greedy(engine: &mut Engine, p: &Prompt, n_vocab: usize) -> Option<usize> {
    let mut logits = vec![0.0f32; n_vocab];
    engine.reset();
    engine.forward(&p.tokens, LogitRows::Last, &mut logits).expect("prefill");
    for (i, &want) in p.greedy.iter().enumerate() {
        let ours = argmax(&logits).unwrap();
        if ours != want {
            let max_abs = logits.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let gap = logits[ours as usize] - logits[want as usize];
            assert!(
                gap < REL_TOL * max_abs,
                "{}: greedy token {i} is {ours}, llama.cpp chose {want}; our gap {gap} is not a near-tie (max |logit| {max_abs})",
                p.name
            );
            eprintln!(
                "{:>12}: greedy diverges at token {i} on a near-tie (gap {gap:.4}, max |logit| {max_abs:.2})",
                p.name
            );
            return Some(i);
        }
        engine.forward(&[ours], LogitRows::Last, &mut logits).expect("decode");
    }
    None
}

fn run_model(file_name: &str, fixture: &str) {
    let Some(path) = real_model(file_name) else {
        return;
    };
    let Some(fx) = load_fixture(fixture) else {
        return;
    };
    let file = ModelFile::open(&path).expect("open model");
    let loaded = Loaded::new(&file).expect("load model");
    assert_eq!(loaded.spec.n_vocab, fx.n_vocab);
    let limits = Limits {
        chunk: CHUNK,
        logit_rows: CHUNK,
        ctx: 2048,
        threads: 1,
    };
    let mut engine = Engine::new(&loaded, limits).expect("engine");
    assert!(fx.prompts.len() >= 8, "at least 8 fixture prompts");
    let mut diverged = 0;
    for p in &fx.prompts {
        let ids = loaded.tokenizer.encode(&p.text, true, true).expect("encode");
        assert_eq!(ids, p.tokens, "{}: tokenization differs from llama.cpp", p.name);
        assert_eq!(p.positions.len(), p.tokens.len());
        check_logits(&mut engine, p, &fx);
        if check_greedy(&mut engine, p, fx.n_vocab).is_some() {
            diverged += 1;
        }
    }
    eprintln!(
        "{fixture}: greedy 64 identical for {}/{} prompts ({diverged} diverged on near-ties)",
        fx.prompts.len() - diverged,
        fx.prompts.len()
    );
}

#[test]
fn smollm2_matches_llama_cpp() {
    run_model(DEFAULT_MODEL, "smollm2");
}

#[test]
fn gemma3_matches_llama_cpp() {
    run_model(GEMMA3_MODEL, "gemma3");
}

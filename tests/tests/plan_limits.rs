//! The static memory plan at the real Muse Glimmer shape against the shipped board profiles.
//!
//! The full-size model is about 17 GB, so it is never written: the spec comes from the tiny
//! synthetic file (same architecture and metadata convention) with the full shape's numbers put
//! in, and the weights are the full file's size as the generator computes it.

use glimmer_boards::plan_report::weights_bytes;
use glimmer_boards::profiles::{profile, BoardProfile};
use glimmer_boards::synth::{synth_file_len, write_synth, SynthConfig};
use glimmer_core::gguf::Gguf;
use glimmer_core::model::{Arch, ModelSpec};
use glimmer_core::plan::{BudgetKind, ByteSize, KvType, Plan, PlanError, PlanLimits};

/// The full shape, read through the tiny file's metadata.
fn full_spec() -> ModelSpec {
    let mut bytes = Vec::new();
    write_synth(&SynthConfig::tiny(), &mut bytes, |_, _| {}).expect("write tiny");
    let g = Gguf::parse(&bytes).expect("parse tiny");
    let tiny = ModelSpec::from_gguf(&g).expect("tiny spec");
    assert_eq!(tiny.arch, Arch::Glimmer);
    // The tensor bytes are nearly the whole file (the rest is the header).
    let w = weights_bytes(&g);
    assert!(
        w < bytes.len() as u64 && w > bytes.len() as u64 * 9 / 10,
        "{w}"
    );
    let full = SynthConfig::full();
    ModelSpec {
        n_layer: full.n_layer,
        n_embd: full.dim,
        n_head: full.n_head,
        n_head_kv: full.n_head_kv,
        head_dim: full.head_dim,
        head_dim_v: full.head_dim,
        rope_dim: full.head_dim,
        n_ff: full.n_ff,
        n_vocab: full.vocab,
        n_ctx_train: full.ctx,
        sliding_window: Some(full.window as u32),
        ..tiny
    }
}

fn full_weights() -> u64 {
    synth_file_len(&SynthConfig::full()).expect("full file length")
}

fn limits_128k() -> PlanLimits {
    PlanLimits {
        ctx: 131_072,
        sessions: 1,
        chunk: 64,
        logit_rows: 1,
        threads: 4,
        spec_block: 0,
        kv_type: KvType::F16,
    }
}

fn board(name: &str) -> &'static BoardProfile {
    profile(name).unwrap_or_else(|| panic!("no profile {name}"))
}

#[test]
fn full_shape_128k_fits_the_big_boards() {
    let plan = Plan::new(&full_spec(), full_weights(), limits_128k()).expect("plan");
    println!(
        "full shape, ctx 131072, f16 KV: weights {} ({} B), KV {} ({} B: global {} B, sliding {} B), \
         arena {} (activations {} B packed / {} B unshared, scratch {} B), total {}",
        ByteSize(plan.weights_bytes),
        plan.weights_bytes,
        ByteSize(plan.kv_bytes()),
        plan.kv_bytes(),
        plan.kv_global_bytes,
        plan.kv_sliding_bytes,
        ByteSize(plan.arena_bytes()),
        plan.activation_bytes,
        plan.activation_unshared_bytes,
        plan.scratch_bytes,
        ByteSize(plan.total_bytes),
    );
    for name in ["jetson-agx-orin-64g", "apple-m3-max-128g"] {
        assert_eq!(plan.check(&board(name).budget), Ok(()), "{name}");
    }
    // 13 global layers of 131072 positions, 39 rings of 2048 + 64, 1 KiB a position (f16).
    assert_eq!(plan.kv_global_bytes, 13 * 131_072 * 1024);
    assert_eq!(plan.kv_sliding_bytes, 39 * 2112 * 1024);
}

#[test]
fn full_shape_is_over_the_nano_weights_budget() {
    let plan = Plan::new(&full_spec(), full_weights(), limits_128k()).expect("plan");
    let nano = board("jetson-orin-nano-8g");
    let err = plan.check(&nano.budget).unwrap_err();
    println!("jetson-orin-nano-8g: {err}");
    assert_eq!(
        err,
        PlanError::OverBudget {
            which: BudgetKind::Weights,
            need: full_weights(),
            have: 4 << 30,
        }
    );
    assert!(full_weights() > 16_000_000_000, "{}", full_weights());
}

#[test]
fn hybrid_kv_is_under_30_percent_of_all_global() {
    let plan = Plan::new(&full_spec(), full_weights(), limits_128k()).expect("plan");
    let ratio = plan.kv_bytes() as f64 / plan.kv_all_global_bytes as f64;
    println!(
        "hybrid KV {} vs all-global {}: {:.1} %",
        ByteSize(plan.kv_bytes()),
        ByteSize(plan.kv_all_global_bytes),
        100.0 * ratio
    );
    assert_eq!(plan.kv_all_global_bytes, 52 * 131_072 * 1024);
    assert!(ratio < 0.30, "{ratio}");
    // At least the 13 global layers' quarter.
    assert!(ratio >= 0.25, "{ratio}");
}

#[test]
fn q8_0_kv_and_sessions_at_full_shape() {
    let mut l = limits_128k();
    l.kv_type = KvType::Q8_0;
    l.sessions = 20;
    let plan = Plan::new(&full_spec(), full_weights(), l).expect("plan");
    let f16 = Plan::new(&full_spec(), full_weights(), limits_128k()).expect("plan");
    assert_eq!(plan.kv_bytes() * 64, f16.kv_bytes() * 20 * 34);
    println!(
        "20 sessions of 128K, q8_0 KV: {}",
        ByteSize(plan.kv_bytes())
    );
    // Twenty 128K sessions (about 18 GiB) fit the M3 Max's 32 GiB of KV but not the AGX Orin's 16 GiB.
    assert_eq!(plan.check(&board("apple-m3-max-128g").budget), Ok(()));
    assert!(matches!(
        plan.check(&board("jetson-agx-orin-64g").budget),
        Err(PlanError::OverBudget {
            which: BudgetKind::Kv,
            ..
        })
    ));
}

extern crate std;

use super::*;
use crate::model::{Activation, Arch, RopeStyle};

/// The full Muse Glimmer shape: 52 layers (13 global), 2 KV heads of 128, window 2048.
fn glimmer_full() -> ModelSpec {
    ModelSpec {
        arch: Arch::Glimmer,
        n_layer: 52,
        n_embd: 6656,
        n_head: 32,
        n_head_kv: 2,
        head_dim: 128,
        head_dim_v: 128,
        n_ff: 19968,
        n_vocab: 202_048,
        n_ctx_train: 131_072,
        eps: 1e-5,
        rope_dim: 128,
        rope_base: 5e5,
        rope_base_sliding: 5e5,
        rope_style: RopeStyle::HalfSplit,
        sliding_window: Some(2048),
        embd_scale: None,
        embd_norm: true,
        qk_norm: true,
        post_norms: true,
        post_norm_eps: 1e-8,
        attn_gate: true,
        global_interval: 4,
        logit_softcap: Some((20.0, 0.196)),
        attn_scale: 0.1,
        activation: Activation::Silu,
    }
}

fn limits(ctx: usize) -> PlanLimits {
    PlanLimits {
        ctx,
        sessions: 1,
        chunk: 64,
        logit_rows: 1,
        threads: 4,
        spec_block: 0,
        kv_type: KvType::F16,
    }
}

const GIB: u64 = 1 << 30;

#[test]
fn sliding_ring_is_smaller_than_global_for_long_ctx() {
    let p = Plan::new(&glimmer_full(), 0, limits(131_072)).unwrap();
    assert_eq!((p.global_layers, p.sliding_layers), (13, 39));
    assert_eq!(p.global_positions, 131_072);
    // window 2048 + chunk 64, already whole pages.
    assert_eq!(p.sliding_positions, 2112);
    assert_eq!(p.kv_position_bytes, 2 * (256 + 256));
    assert_eq!(p.kv_global_bytes, 13 * 131_072 * 1024);
    assert_eq!(p.kv_sliding_bytes, 39 * 2112 * 1024);
    assert_eq!(p.kv_pages, 13 * 2048 + 39 * 33);
    // The pool the engine builds from this plan has exactly these pages.
    let geo = crate::kv::KvGeometry::new(&glimmer_full(), 131_072, 64, KvType::F16).unwrap();
    assert_eq!(geo.pages_per_slot().unwrap() as u64, p.kv_pages);
    assert_eq!(
        crate::kv::data_len(&geo, p.kv_pages as usize).unwrap() as u64 * 2,
        p.kv_bytes()
    );
    // refs + free stack + one table: 3 u32s a page.
    assert_eq!(p.kv_meta_bytes, 3 * 4 * p.kv_pages);
    assert!(p.kv_sliding_bytes < p.kv_global_bytes);
    assert!(p.kv_bytes() < p.kv_all_global_bytes);
}

#[test]
fn short_ctx_caps_the_ring_and_rounds_to_pages() {
    let p = Plan::new(&glimmer_full(), 0, limits(100)).unwrap();
    // Both kinds keep min(ctx, ..) = 100 positions, rounded up to two pages.
    assert_eq!((p.global_positions, p.sliding_positions), (128, 128));
    assert_eq!(p.kv_bytes(), p.kv_all_global_bytes);
}

#[test]
fn speculative_block_widens_the_chunk_and_the_ring() {
    let mut l = limits(131_072);
    l.spec_block = 200;
    let p = Plan::new(&glimmer_full(), 0, l).unwrap();
    assert_eq!(p.layout.limits.chunk, 200);
    assert_eq!(p.layout.limits.logit_rows, 200);
    assert_eq!(p.sliding_positions, (2048u64 + 200).div_ceil(64) * 64);
    let base = Plan::new(&glimmer_full(), 0, limits(131_072)).unwrap();
    assert!(p.activation_bytes > base.activation_bytes);
}

#[test]
fn q8_0_kv_is_smaller_than_f16() {
    let f16 = Plan::new(&glimmer_full(), 0, limits(32_768)).unwrap();
    let mut l = limits(32_768);
    l.kv_type = KvType::Q8_0;
    let q8 = Plan::new(&glimmer_full(), 0, l).unwrap();
    assert_eq!(q8.kv_position_bytes, 512 / 32 * 34);
    assert!(q8.kv_bytes() < f16.kv_bytes());
    assert_eq!(q8.kv_bytes() * 64, f16.kv_bytes() * 34);
}

#[test]
fn q8_0_kv_needs_blocked_widths() {
    assert_eq!(
        KvType::Q8_0.bytes_per_position(48, 64),
        Err(PlanError::KvNotBlocked)
    );
    assert_eq!(KvType::F16.bytes_per_position(48, 64), Ok(224));
}

#[test]
fn sessions_multiply_kv_but_not_the_arena() {
    let one = Plan::new(&glimmer_full(), 0, limits(8192)).unwrap();
    let mut l = limits(8192);
    l.sessions = 3;
    let three = Plan::new(&glimmer_full(), 0, l).unwrap();
    assert_eq!(three.kv_bytes(), 3 * one.kv_bytes());
    assert_eq!(three.kv_session_bytes(), one.kv_bytes());
    assert_eq!(three.arena_bytes(), one.arena_bytes());
}

#[test]
fn absurd_limits_are_errors_not_panics() {
    let spec = glimmer_full();
    for ctx in [usize::MAX, usize::MAX / 2, 1 << 60] {
        let e = Plan::new(&spec, 0, limits(ctx)).unwrap_err();
        assert!(
            matches!(
                e,
                PlanError::Overflow | PlanError::Layout(LayoutError::Overflow)
            ),
            "{ctx}: {e:?}"
        );
    }
    let mut l = limits(1 << 40);
    l.sessions = usize::MAX;
    assert!(Plan::new(&spec, 0, l).is_err());
    assert_eq!(
        Plan::new(&spec, u64::MAX, limits(1024)).unwrap_err(),
        PlanError::Overflow
    );
    l = limits(1024);
    l.sessions = 0;
    assert_eq!(Plan::new(&spec, 0, l).unwrap_err(), PlanError::BadLimits);
    l = limits(1024);
    l.spec_block = 100_000;
    assert_eq!(
        Plan::new(&spec, 0, l).unwrap_err(),
        PlanError::Layout(LayoutError::BadLimits)
    );
}

#[test]
fn over_budget_names_the_budget_and_amount() {
    let p = Plan::new(&glimmer_full(), 10 * GIB, limits(131_072)).unwrap();
    let roomy = Budget {
        weights: 16 * GIB,
        kv: 4 * GIB,
        arena: 2 * GIB,
        total: 22 * GIB,
    };
    assert_eq!(p.check(&roomy), Ok(()));
    let small_kv = Budget { kv: GIB, ..roomy };
    assert_eq!(
        p.check(&small_kv),
        Err(PlanError::OverBudget {
            which: BudgetKind::Kv,
            need: p.kv_bytes() + p.kv_meta_bytes,
            have: GIB
        })
    );
    let small_weights = Budget {
        weights: 4 * GIB,
        ..small_kv
    };
    let e = p.check(&small_weights).unwrap_err();
    assert_eq!(
        e,
        PlanError::OverBudget {
            which: BudgetKind::Weights,
            need: 10 * GIB,
            have: 4 * GIB
        }
    );
    assert_eq!(
        std::format!("{e}"),
        "weights needs 10.0 GiB, budget 4.0 GiB: 6.0 GiB over"
    );
    let small_arena = Budget {
        arena: 1024,
        ..roomy
    };
    assert!(matches!(
        p.check(&small_arena),
        Err(PlanError::OverBudget { which: BudgetKind::Arena, need, have: 1024 }) if need == p.arena_bytes()
    ));
    let small_total = Budget {
        total: 11 * GIB,
        ..roomy
    };
    assert!(matches!(
        p.check(&small_total),
        Err(PlanError::OverBudget {
            which: BudgetKind::Total,
            ..
        })
    ));
}

#[test]
fn byte_sizes_pick_a_unit() {
    let s = |b| std::format!("{}", ByteSize(b));
    assert_eq!(s(17), "17 B");
    assert_eq!(s(3 * 1024), "3.0 KiB");
    assert_eq!(s(512 << 20), "512.0 MiB");
    assert_eq!(s(GIB * 98 / 10), "9.8 GiB");
}

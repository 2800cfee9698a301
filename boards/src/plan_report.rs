//! The `glimmer plan` report: a [`Plan`] as a table, with each budget line of a board.

use std::fmt::Write;

use glimmer_core::gguf::Gguf;
use glimmer_core::plan::{ByteSize, Plan};

use crate::profiles::BoardProfile;

/// Bytes of tensor data in a GGUF file (what the weights take once mapped).
pub fn weights_bytes(g: &Gguf<'_>) -> u64 {
    g.tensors().map(|t| t.data.len() as u64).sum()
}

fn budget_line(out: &mut String, name: &str, need: u64, have: u64) {
    let verdict = if need <= have {
        "OK".to_owned()
    } else {
        format!("OVER by {}", ByteSize(need - have))
    };
    let _ = writeln!(
        out,
        "  {name:<10} {:>12} of {:>12}  {verdict}",
        ByteSize(need).to_string(),
        ByteSize(have).to_string()
    );
}

/// Renders `plan` and the budget lines of `board` as a text table.
pub fn render(plan: &Plan, board: &BoardProfile) -> String {
    let l = &plan.limits;
    let sessions = l.sessions as u64;
    let mut out = String::new();
    let mut row = |label: &str, bytes: u64, note: String| {
        let line = format!("  {label:<22} {:>12}  {note}", ByteSize(bytes).to_string());
        let _ = writeln!(out, "{}", line.trim_end());
    };
    row("weights", plan.weights_bytes, String::new());
    row(
        "KV global",
        plan.kv_global_bytes,
        format!(
            "{} layers x {} positions",
            plan.global_layers, plan.global_positions
        ),
    );
    row(
        "KV sliding",
        plan.kv_sliding_bytes,
        format!(
            "{} layers x {} positions (ring)",
            plan.sliding_layers, plan.sliding_positions
        ),
    );
    row(
        "KV per session",
        plan.kv_session_bytes(),
        format!(
            "{} B/position/layer ({}), {} pages of 64",
            plan.kv_position_bytes,
            l.kv_type.name(),
            plan.kv_pages / sessions.max(1)
        ),
    );
    row(
        "KV total",
        plan.kv_bytes(),
        format!(
            "{} session(s); all-global would be {}",
            l.sessions,
            ByteSize(plan.kv_all_global_bytes)
        ),
    );
    row(
        "KV page tables",
        plan.kv_meta_bytes,
        "refcounts, free stack, tables".to_owned(),
    );
    row(
        "activations (packed)",
        plan.activation_bytes,
        format!(
            "unshared {}; {} rows",
            ByteSize(plan.activation_unshared_bytes),
            plan.layout.limits.chunk
        ),
    );
    row("quant scratch", plan.scratch_bytes, String::new());
    row("total", plan.total_bytes, String::new());
    let b = &board.budget;
    let _ = writeln!(
        out,
        "budget of {} ({}, {} GB/s, {}):",
        board.name,
        ByteSize(board.memory_bytes),
        board.bandwidth_gbs,
        board.default_backend
    );
    budget_line(&mut out, "weights", plan.weights_bytes, b.weights);
    budget_line(
        &mut out,
        "KV cache",
        plan.kv_bytes() + plan.kv_meta_bytes,
        b.kv,
    );
    budget_line(&mut out, "arena", plan.arena_bytes(), b.arena);
    budget_line(&mut out, "total", plan.total_bytes, b.total);
    out
}

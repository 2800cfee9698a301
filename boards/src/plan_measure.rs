//! `glimmer plan --measure`: builds the engine a plan describes, runs every session, and
//! compares the resident memory with the plan.

use std::fmt::Write as _;

use glimmer_core::exec::LogitRows;
use glimmer_core::plan::{ByteSize, Plan};
use glimmer_core::sample::argmax;

use crate::engine::{Engine, Loaded};
use crate::model_file::ModelFile;
use crate::rss::{self, Rss};
use crate::Error;

/// What one measurement found.
#[derive(Clone, Copy, Debug)]
pub struct Measured {
    /// After loading the model and tokenizer, before the engine.
    pub before: Rss,
    /// After running every session.
    pub after: Rss,
    /// Bytes the plan gives KV, page tables, activations and scratch.
    pub planned: u64,
    /// Bytes the engine allocated for them.
    pub allocated: u64,
}

impl Measured {
    /// Peak resident set less the resident file pages (the mapped weights and the binary).
    pub fn peak_less_file(&self) -> u64 {
        self.after.peak.saturating_sub(self.after.file)
    }

    /// Anonymous memory the engine and its runs added.
    pub fn engine_growth(&self) -> u64 {
        self.after.anon.saturating_sub(self.before.anon)
    }
}

/// Loads `file`, builds the engine from `plan`, feeds each session `prompt` tokens (cut to
/// fit) and decodes `decode` greedy tokens, then reads `/proc/self/status`.
pub fn measure(
    file: &ModelFile,
    plan: &Plan,
    prompt: usize,
    decode: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<Measured, Error> {
    let loaded = Loaded::new(file)?;
    let before = rss::read().ok_or(Error::TooLarge("/proc/self/status unavailable"))?;
    let mut engine = Engine::from_plan(&loaded, plan)?;
    let allocated = engine.allocated_bytes().total();
    let planned = plan.total_bytes - plan.weights_bytes;
    let n_vocab = loaded.spec.n_vocab;
    let mut logits = vec![0.0f32; n_vocab];
    let ctx = engine.ctx();
    let prompt = prompt.min(ctx.saturating_sub(decode + 1)).max(1);
    for slot in 0..engine.slots() {
        progress(&format!(
            "session {}/{}: {prompt} prompt tokens, {decode} decoded",
            slot + 1,
            engine.slots()
        ));
        // A deterministic token stream that touches the whole vocabulary range.
        let toks: Vec<u32> = (0..prompt)
            .map(|i| ((i * 7919 + slot * 104_729) % n_vocab) as u32)
            .collect();
        engine.forward_slot(slot, &toks, LogitRows::Last, &mut logits)?;
        for _ in 0..decode {
            let next = argmax(&logits).map_err(Error::Sample)?;
            engine.forward_slot(slot, &[next], LogitRows::Last, &mut logits)?;
        }
    }
    let after = rss::read().ok_or(Error::TooLarge("/proc/self/status unavailable"))?;
    Ok(Measured {
        before,
        after,
        planned,
        allocated,
    })
}

/// The report `glimmer plan --measure` prints.
pub fn render(m: &Measured) -> String {
    let mut out = String::new();
    let b = |x: u64| ByteSize(x).to_string();
    let pct = |a: u64, p: u64| 100.0 * (a as f64 - p as f64) / p.max(1) as f64;
    let _ = writeln!(out, "measured (/proc/self/status):");
    let _ = writeln!(
        out,
        "  planned non-weight bytes   {:>12}  (KV, page tables, activations, scratch)",
        b(m.planned)
    );
    let _ = writeln!(out, "  engine allocated           {:>12}", b(m.allocated));
    let _ = writeln!(
        out,
        "  anon before engine         {:>12}  (tokenizer, runtime)",
        b(m.before.anon)
    );
    let _ = writeln!(
        out,
        "  anon growth with engine    {:>12}  {:+.2}% of plan",
        b(m.engine_growth()),
        pct(m.engine_growth(), m.planned)
    );
    let _ = writeln!(
        out,
        "  peak RSS                   {:>12}  file-backed now {} (mapped weights, binary)",
        b(m.after.peak),
        b(m.after.file)
    );
    let _ = writeln!(
        out,
        "  peak RSS less file pages   {:>12}  {:+.2}% of plan",
        b(m.peak_less_file()),
        pct(m.peak_less_file(), m.planned)
    );
    out
}

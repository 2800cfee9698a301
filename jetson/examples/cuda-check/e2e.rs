//! End to end: the CUDA backend against the CPU engine on one GGUF, top-1 at every position.

use std::path::Path;
use std::sync::Arc;

use glimmer_boards::cuda_engine::CudaEngine;
use glimmer_boards::engine::{Engine, Loaded, SlotEngine};
use glimmer_boards::model_file::ModelFile;
use glimmer_core::exec::{Layout, Limits, LogitRows};
use glimmer_core::kv::KvGeometry;
use glimmer_core::plan::KvType;
use glimmer_jetson::{Capacity, CudaBackend, CudaModel, Gpu, KvLayout};

use crate::util::{argmax, compare, Rng};

/// A top-1 flip is a near-tie when the CPU ranks the device's pick within this fraction of
/// max|logit| of its own top-1 (so the CPU's top-2 gap is below it too), as in the golden tests.
const NEAR_TIE: f32 = 0.02;

/// Top-1 agreement of the device against the CPU over some positions.
#[derive(Default)]
struct Tally {
    /// Positions where both pick the same token.
    exact: usize,
    /// Flips where the CPU's own logits were a near-tie between the two picks.
    near_tie: usize,
    /// Flips that are not near-ties: the real failure signal.
    real: usize,
    /// Largest CPU-side gap (in units of max|logit|) of a real flip.
    worst_gap: f32,
}

impl Tally {
    /// Counts one position: `cpu` the CPU's logits, `pick` the device's top-1.
    fn add(&mut self, cpu: &[f32], pick: usize) {
        let want = argmax(cpu);
        if pick == want {
            self.exact += 1;
            return;
        }
        let max_abs = cpu
            .iter()
            .fold(0f32, |m, v| m.max(v.abs()))
            .max(f32::MIN_POSITIVE);
        let gap = (cpu[want] - cpu.get(pick).copied().unwrap_or(f32::NEG_INFINITY)) / max_abs;
        if gap < NEAR_TIE {
            self.near_tie += 1;
        } else {
            self.real += 1;
            self.worst_gap = self.worst_gap.max(gap);
        }
    }

    /// One line of counts.
    fn line(&self, n: usize) -> String {
        format!(
            "top-1 exact {}/{n}, flips on near-ties (gap < {NEAR_TIE} max|logit|) {}, real flips {}{}",
            self.exact,
            self.near_tie,
            self.real,
            if self.real > 0 {
                format!(" (worst gap {:.3} max|logit|)", self.worst_gap)
            } else {
                String::new()
            }
        )
    }
}

/// Loads `path` on both backends and feeds `n` pseudo-random tokens (or the whitespace-separated
/// token ids of the file `$CUDA_CHECK_IDS`, such as a fixture prompt's): token by token on the
/// CPU, then on the device eagerly (slot 0), with the CUDA graph (slot 1), and as one prefill
/// call with logits for every row (slot 0 again). Prints agreement (exact, flips on CPU-side
/// near-ties, real flips) and logit differences; fails on any real flip.
pub fn run(gpu: Arc<Gpu>, path: &Path, n: usize, seed: u64) -> Result<bool, String> {
    let file = ModelFile::open(path).map_err(|e| e.to_string())?;
    let loaded = Loaded::new(&file).map_err(|e| e.to_string())?;
    let spec = &loaded.spec;
    let ids: Option<Vec<u32>> = match std::env::var_os("CUDA_CHECK_IDS") {
        Some(f) => Some(
            std::fs::read_to_string(&f)
                .map_err(|e| format!("{}: {e}", f.to_string_lossy()))?
                .split_whitespace()
                .map(|w| w.parse().map_err(|_| format!("bad token id {w:?}")))
                .collect::<Result<_, String>>()?,
        ),
        None => None,
    };
    let n = ids.as_ref().map_or(n, |v| v.len());
    let chunk = n.clamp(1, 64);
    let ctx = (n + 1).next_power_of_two().max(64);
    let limits = Limits {
        chunk,
        logit_rows: chunk,
        ctx,
        threads: 1,
    };
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    println!(
        "e2e {name}: {} layers, dim {}, vocab {}, {n} tokens",
        spec.n_layer, spec.n_embd, spec.n_vocab
    );

    let mut rng = Rng::new(seed);
    let tokens: Vec<u32> = match ids {
        Some(v) => v,
        None => (0..n).map(|_| rng.below(spec.n_vocab) as u32).collect(),
    };

    // CPU reference, token by token.
    let t0 = std::time::Instant::now();
    let mut engine = Engine::new(&loaded, limits).map_err(|e| e.to_string())?;
    let nv = spec.n_vocab;
    let mut cpu_logits = vec![0f32; n * nv];
    for (i, &t) in tokens.iter().enumerate() {
        engine
            .forward(&[t], LogitRows::Last, &mut cpu_logits[i * nv..(i + 1) * nv])
            .map_err(|e| e.to_string())?;
    }
    println!("  cpu reference: {:.1} s", t0.elapsed().as_secs_f64());
    drop(engine);

    let layout = Layout::new(spec, limits).map_err(|e| format!("{e:?}"))?;
    let geo = KvGeometry::new(spec, ctx, chunk, KvType::F16).map_err(|e| e.to_string())?;
    let kvl = KvLayout::new(&geo, 2).map_err(|e| e.to_string())?;
    let mut be = CudaBackend::new(gpu, Capacity::for_model(spec, &layout), kvl)
        .map_err(|e| e.to_string())?;
    be.upload_model(&loaded.weights)
        .map_err(|e| e.to_string())?;
    let mut m = CudaModel::new(spec, &loaded.weights, &layout, be);

    let mut ok = true;
    let mut logits = vec![0f32; nv];
    // The device's own eager logits, token by token: what the engine must reproduce.
    let mut eager = vec![0f32; n * nv];
    for (mode, slot, graph) in [("eager", 0usize, false), ("graph", 1, true)] {
        let (mut tally, mut worst) = (Tally::default(), 0f32);
        for (i, &t) in tokens.iter().enumerate() {
            let top = m
                .decode_step(slot, t, i as u32, graph)
                .map_err(|e| format!("{e:?}"))?;
            m.read_logits(&mut logits).map_err(|e| e.to_string())?;
            if !graph {
                eager[i * nv..(i + 1) * nv].copy_from_slice(&logits);
            }
            let cl = &cpu_logits[i * nv..(i + 1) * nv];
            tally.add(cl, top as usize);
            if argmax(&logits) != top as usize {
                println!("  {mode}: device argmax {top} differs from host argmax of the same logits at {i}");
                ok = false;
            }
            worst = worst.max(compare(cl, &logits).max_rel);
        }
        println!(
            "  decode {mode}: {}, max |dlogit|/max|logit| {worst:.3e}",
            tally.line(n)
        );
        println!(
            "SUMMARY|e2e|{name} decode {mode}|{}/{n} exact, {} near-tie, {} real flips|{worst:.3e}",
            tally.exact, tally.near_tie, tally.real
        );
        ok &= tally.real == 0;
    }

    // Graph decode keeps one graph for the steps whose rows the attention clusters take and
    // one for later steps (CudaBackend::graph_class): both exist once the tokens pass the
    // clusters' keys (`GLIMMER_ATTN_CLUSTER_KEYS` below the token count takes that path).
    let graphs = m.graphs();
    let b = m.backend();
    let split = b.attn_clusters_on() && n > b.attn_cluster_keys as usize;
    let want = 1 + usize::from(split);
    println!("  decode graphs captured: {graphs} (expected {want})");
    if graphs != want {
        println!("  decode graphs: {graphs} captured, expected {want}  FAIL");
        ok = false;
    }

    // Which fused paths the decode steps took (a knob that silently fell back shows as 0).
    println!(
        "  decode launches: {} bulk-copy ({} teams of four, {} deeper first rings, {} a row a warp), {} fused norms, {} deferred norms taken, {} cluster norms, {} cluster attentions, {} flag hops, {} attn_inputs taken by attention, {} with run-time items",
        b.gemv_tma_launches, b.gemv_tma_wide_launches, b.gemv_tma_deep_launches, b.gemv_tma_rowsplit_launches, b.fused_norms, b.deferred_norms, b.cluster_norms, b.cluster_attns, b.flag_hops, b.fused_prep, b.gemv_steal_launches
    );

    // Prefill with every row's logits (one chunk).
    let rows = n.min(chunk);
    let got = m
        .forward(0, &tokens[..rows], 0, LogitRows::All)
        .map_err(|e| format!("{e:?}"))?;
    let mut all = vec![0f32; got * nv];
    m.read_logits(&mut all).map_err(|e| e.to_string())?;
    let (mut tally, mut worst) = (Tally::default(), 0f32);
    for i in 0..got {
        let cl = &cpu_logits[i * nv..(i + 1) * nv];
        let gl = &all[i * nv..(i + 1) * nv];
        tally.add(cl, argmax(gl));
        worst = worst.max(compare(cl, gl).max_rel);
    }
    println!(
        "  prefill ({got} rows): {}, max |dlogit|/max|logit| {worst:.3e}",
        tally.line(got)
    );
    println!(
        "SUMMARY|e2e|{name} prefill|{}/{got} exact, {} near-tie, {} real flips|{worst:.3e}",
        tally.exact, tally.near_tie, tally.real
    );
    ok &= tally.real == 0;
    ok &= sampled_decode(&mut m, &tokens, nv, &name)?;
    drop(m);
    ok &= engine_slots(&loaded, &layout, &tokens, &cpu_logits, &eager, &name)?;
    Ok(ok)
}

/// Graph decode with the token drawn on the device (`Pick::Sample`, the Gumbel-max kernel
/// after the graph) over slot 1 from the start, up to 24 steps at T = 0.9: each draw must have
/// the best perturbed score that the host twin (`glimmer_jetson::sample::host_scores`) gives
/// the same step's logits, read back, within the device's `f32` rounding.
fn sampled_decode(
    m: &mut CudaModel<'_, '_>,
    tokens: &[u32],
    nv: usize,
    name: &str,
) -> Result<bool, String> {
    use glimmer_jetson::sample::{draw_shortfall, host_scores};
    use glimmer_jetson::Pick;
    let (t, seed) = (0.9f32, 77u64);
    let mut logits = vec![0f32; nv];
    let (mut steps, mut same, mut worst) = (0usize, 0usize, 0f64);
    for (i, &tok) in tokens.iter().enumerate().take(24) {
        let pick = Pick::Sample {
            temperature: t,
            seed,
            counter: i as u64,
        };
        let got = m
            .decode_step_pick(1, tok, i as u32, true, Some(pick))
            .map_err(|e| format!("{e:?}"))?
            .ok_or("no token picked")? as usize;
        m.read_logits(&mut logits).map_err(|e| e.to_string())?;
        let (best, scores) = host_scores(&logits, t, seed, i as u64);
        worst = worst.max(draw_shortfall(&scores, best, got));
        steps += 1;
        same += usize::from(got == best);
    }
    let pass = worst <= 2e-5;
    println!(
        "  sampled decode (graph, T {t}): {same}/{steps} the host's draw, worst score shortfall {worst:.1e} (rel)  {}",
        if pass { "PASS" } else { "FAIL" }
    );
    println!(
        "SUMMARY|e2e|{name} sampled decode|{same}/{steps} the host's draw|{worst:.3e}|{}",
        if pass { "PASS" } else { "FAIL" }
    );
    Ok(pass)
}

/// The daemon's engine (`glimmerd --backend cuda`) through [`SlotEngine`], two slots: slot 0
/// prefills the first half in one call, slot 1 decodes from the start token by token with
/// the graph, then both decode interleaved (one graph, two sessions); then slot 1 is reset
/// and decodes the first half again over its old entries.
///
/// Slot 1's logits must equal the device's eager token-by-token logits bit for bit (the
/// graph, the other slot's steps and the reset change nothing). Slot 0's (after a prefill,
/// whose kernels differ) are checked against the CPU like the prefill above.
fn engine_slots(
    loaded: &Loaded<'_>,
    layout: &Layout,
    tokens: &[u32],
    cpu_logits: &[f32],
    eager: &[f32],
    name: &str,
) -> Result<bool, String> {
    let nv = loaded.spec.n_vocab;
    let n = tokens.len();
    let half = (n / 2).clamp(1, layout.limits.chunk);
    let mut e = CudaEngine::new(loaded, layout, 2, 0, true).map_err(|e| e.to_string())?;
    println!("  engine: {}", e.describe());
    let mut lg = vec![0f32; nv];
    let (mut tally, mut worst) = (Tally::default(), 0f32);
    let (mut same, mut differ) = (0usize, 0usize);
    let mut vs_cpu = |i: usize, lg: &[f32], tally: &mut Tally| {
        let cl = &cpu_logits[i * nv..(i + 1) * nv];
        tally.add(cl, argmax(lg));
        worst = worst.max(compare(cl, lg).max_rel);
    };
    let mut vs_eager = |i: usize, lg: &[f32]| {
        if lg == &eager[i * nv..(i + 1) * nv] {
            same += 1;
        } else {
            differ += 1;
        }
    };
    let mut step = |e: &mut CudaEngine<'_, '_>, slot: usize, t: &[u32]| {
        e.forward_slot(slot, t, LogitRows::Last, &mut lg)
            .map_err(|e| e.to_string())
            .map(|()| lg.clone())
    };
    let l = step(&mut e, 0, &tokens[..half])?;
    vs_cpu(half - 1, &l, &mut tally);
    for i in 0..n {
        vs_eager(i, &step(&mut e, 1, &tokens[i..=i])?);
        if i >= half {
            let l = step(&mut e, 0, &tokens[i..=i])?;
            vs_cpu(i, &l, &mut tally);
        }
    }
    e.reset_slot(1);
    for i in 0..half {
        vs_eager(i, &step(&mut e, 1, &tokens[i..=i])?);
    }
    let fed_ok =
        e.slot_pos(0) == n && e.slot_pos(1) == half && e.tokens_fed() == (2 * n + half) as u64;
    if !fed_ok {
        println!(
            "  engine: positions {} {} / fed {} (want {n} {half} / {})",
            e.slot_pos(0),
            e.slot_pos(1),
            e.tokens_fed(),
            2 * n + half
        );
    }
    let checked = n + 1 - half;
    println!(
        "  engine slot 1 (graph, interleaved, reset): {same} steps bit-identical to eager, {differ} differ"
    );
    println!(
        "  engine slot 0 (prefill, then graph): {}, max |dlogit|/max|logit| {worst:.3e}",
        tally.line(checked)
    );
    println!(
        "SUMMARY|e2e|{name} engine slots|slot 1: {same}/{} bit-identical to eager; slot 0: {}/{checked} exact, {} near-tie, {} real flips|{worst:.3e}",
        same + differ,
        tally.exact,
        tally.near_tie,
        tally.real
    );
    Ok(fed_ok && differ == 0 && tally.real == 0)
}

//! Benchmarks: HBM bandwidth, prefill and decode throughput, bytes read per token.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use glimmer_boards::engine::Loaded;
use glimmer_boards::model_file::ModelFile;
use glimmer_core::exec::{Buf, Layout, Limits, LogitRows};
use glimmer_core::kv::KvGeometry;
use glimmer_core::model::LayerKind;
use glimmer_core::plan::KvType;
use glimmer_jetson::{Capacity, CudaBackend, CudaModel, Gpu, KvLayout, Pick};

use crate::util::Rng;

/// Device bandwidth: a `bytes` copy by kernel and by the copy engine, bytes read + written
/// per second (best of `reps`). Returns the larger, in bytes per second.
pub fn bandwidth(gpu: &Gpu, bytes: usize, reps: usize) -> Result<f64, String> {
    let e = |e: glimmer_jetson::CudaError| e.to_string();
    let a = gpu.alloc(bytes).map_err(e)?;
    let b = gpu.alloc(bytes).map_err(e)?;
    let mut best = [0f64; 2];
    for (i, kind) in ["kernel", "memcpy"].iter().enumerate() {
        for r in 0..=reps {
            gpu.synchronize().map_err(e)?;
            let t = Instant::now();
            if i == 0 {
                gpu.copy_kernel(&b, &a, bytes).map_err(e)?;
            } else {
                gpu.copy_d2d(&b, &a, bytes).map_err(e)?;
            }
            gpu.synchronize().map_err(e)?;
            let bw = 2.0 * bytes as f64 / t.elapsed().as_secs_f64();
            if r > 0 {
                best[i] = best[i].max(bw);
            }
        }
        println!(
            "  HBM copy ({kind}, {:.1} GiB): {:.0} GB/s read+write",
            bytes as f64 / (1u64 << 30) as f64,
            best[i] / 1e9
        );
    }
    let bw = best[0].max(best[1]);
    println!(
        "SUMMARY|bandwidth|device-to-device copy|{:.0} GB/s",
        bw / 1e9
    );
    Ok(bw)
}

/// The layout of a run that prefills `prefill` tokens (in chunks of up to 512) within a
/// context of `ctx` tokens, keeping one row of logits.
fn layout_for(loaded: &Loaded<'_>, prefill: usize, ctx: usize) -> Result<Layout, String> {
    let limits = Limits {
        chunk: prefill.clamp(1, 512),
        logit_rows: 1,
        ctx,
        threads: 1,
    };
    Layout::new(&loaded.spec, limits).map_err(|e| format!("{e:?}"))
}

/// The backend (weights uploaded, one KV slot) and model for `layout`.
fn open_model<'a>(
    gpu: &Arc<Gpu>,
    loaded: &'a Loaded<'a>,
    layout: &'a Layout,
) -> Result<CudaModel<'a, 'a>, String> {
    let spec = &loaded.spec;
    let (ctx, chunk) = (layout.limits.ctx, layout.limits.chunk);
    let geo = KvGeometry::new(spec, ctx, chunk, KvType::F16).map_err(|e| e.to_string())?;
    let kvl = KvLayout::new(&geo, 1).map_err(|e| e.to_string())?;
    let mut be = CudaBackend::new(gpu.clone(), Capacity::for_model(spec, layout), kvl)
        .map_err(|e| e.to_string())?;
    be.upload_model(&loaded.weights)
        .map_err(|e| e.to_string())?;
    Ok(CudaModel::new(spec, &loaded.weights, layout, be))
}

/// Opens the model at `path`, prefills `prefill` random tokens, runs three eager decode
/// steps, then hands the model, the next token and its position to `step` (one decode step's
/// worth of measuring: `trace`, `cuda-check timeline`).
pub(crate) fn after_warm_steps<R>(
    gpu: &Arc<Gpu>,
    path: &Path,
    prefill: usize,
    step: impl FnOnce(&mut CudaModel<'_, '_>, u32, u32) -> Result<R, String>,
) -> Result<R, String> {
    let file = ModelFile::open(path).map_err(|e| e.to_string())?;
    let loaded = Loaded::new(&file).map_err(|e| e.to_string())?;
    let layout = layout_for(&loaded, prefill, (prefill + 8).next_power_of_two())?;
    let mut m = open_model(gpu, &loaded, &layout)?;
    let mut rng = Rng::new(7);
    let tokens: Vec<u32> = (0..prefill.max(1))
        .map(|_| rng.below(loaded.spec.n_vocab) as u32)
        .collect();
    let f = |e| format!("{e:?}");
    m.forward(0, &tokens, 0, LogitRows::Last).map_err(f)?;
    let mut tok = tokens.last().copied().unwrap_or(0);
    let mut pos = tokens.len() as u32;
    for _ in 0..3 {
        tok = m.decode_step(0, tok, pos, false).map_err(f)?;
        pos += 1;
    }
    step(&mut m, tok, pos)
}

/// For Nsight Compute (`ncu --profile-from-start off`): prefill `prefill` random tokens, run
/// three eager decode steps, then one more inside the profiler's capture range, so the
/// profile holds exactly the kernels of one decode step in launch order.
pub fn trace(gpu: Arc<Gpu>, path: &Path, prefill: usize) -> Result<(), String> {
    after_warm_steps(&gpu, path, prefill, |m, tok, pos| {
        let f = |e| format!("{e:?}");
        gpu.profiler_range(true).map_err(|e| e.to_string())?;
        m.decode_step(0, tok, pos, false).map_err(f)?;
        gpu.profiler_range(false).map_err(|e| e.to_string())?;
        println!("traced one eager decode step at position {pos}");
        Ok(())
    })
}

/// Prefill of `prefill` tokens, then `steps` greedy decode steps without and with the graph.
/// `quick`: skip the per-GEMV variants and the launch-mode sweep (the default mode only).
pub fn run(
    gpu: Arc<Gpu>,
    path: &Path,
    prefill: usize,
    steps: usize,
    bw: f64,
    quick: bool,
) -> Result<(), String> {
    let file = ModelFile::open(path).map_err(|e| e.to_string())?;
    let loaded = Loaded::new(&file).map_err(|e| e.to_string())?;
    let spec = &loaded.spec;
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let layout = layout_for(&loaded, prefill, (prefill + steps + 1).next_power_of_two())?;
    let t = Instant::now();
    let mut m = open_model(&gpu, &loaded, &layout)?;
    println!(
        "bench {name}: uploaded {:.2} GB of weights in {:.1} s; device memory {:.2} GB",
        m.backend().weights().bytes() as f64 / 1e9,
        t.elapsed().as_secs_f64(),
        m.backend().device_bytes() as f64 / 1e9
    );
    let mut rng = Rng::new(7);
    let tokens: Vec<u32> = (0..prefill)
        .map(|_| rng.below(spec.n_vocab) as u32)
        .collect();

    // Prefill: one warm-up, then the best of three.
    let mut best = f64::MAX;
    for r in 0..4 {
        let t = Instant::now();
        m.forward(0, &tokens, 0, LogitRows::Last)
            .map_err(|e| format!("{e:?}"))?;
        gpu.synchronize().map_err(|e| e.to_string())?;
        if r > 0 {
            best = best.min(t.elapsed().as_secs_f64());
        }
    }
    let pf = prefill as f64 / best;
    println!(
        "  prefill {prefill} tokens: {:.1} ms, {pf:.0} tok/s",
        best * 1e3
    );
    println!(
        "SUMMARY|bench|{name} prefill {prefill}|{pf:.0} tok/s|{:.1} ms",
        best * 1e3
    );

    // Bytes one decode token reads: every matrix except the embedding table (one row of it),
    // plus the KV cache each layer attends over at the middle of the timed steps.
    let w = &loaded.weights;
    let emb_row = w.tok_embd.data.len() / w.tok_embd.rows.max(1);
    let weight_bytes =
        m.backend().weights().bytes() as f64 - w.tok_embd.data.len() as f64 + emb_row as f64;
    let mid = prefill + steps / 2;
    let kv_row = (spec.k_dim() + spec.v_dim()) * 2;
    let kv_bytes: usize = (0..spec.n_layer)
        .map(|il| match spec.layer_kind(il) {
            LayerKind::Global => mid,
            LayerKind::Sliding { window } => mid.min(window as usize),
        })
        .sum::<usize>()
        * kv_row;
    let per_tok = weight_bytes + kv_bytes as f64;
    println!(
        "  bytes per decode token: {:.3} GB weights + {:.1} MB KV = {:.3} GB",
        weight_bytes / 1e9,
        kv_bytes as f64 / 1e6,
        per_tok / 1e9
    );

    if !quick {
        gemv_bench(&mut m, &gpu, &loaded, bw)?;
    }

    // Without and with programmatic dependent launch (where the GPU has it), and with the
    // activations of the one-row GEMVs in shared memory, alternated.
    // (PDL, shared-memory GEMV choice, matmul_many kernel); the last is the default.
    let pdl_on = gpu.compute_capability().0 >= 9;
    let multi_default = m.backend().gemv_multi;
    // A multi value of 1 means 2 with single matrices through the multi kernel too.
    let pdl_default = gpu.pdl();
    let smem_default = m.backend().gemv_smem;
    let single_default = m.backend().gemv_multi_single;
    let modes: Vec<(bool, Option<bool>, u32)> = if quick {
        // The default mode only, twice.
        let multi = if single_default { 1 } else { multi_default };
        vec![(pdl_default, smem_default, multi); 2]
    } else {
        let mut v = vec![(false, Some(false), 0)];
        for _ in 0..2 {
            v.push((pdl_on, None, 0));
            for multi in [2, 3, 1] {
                v.push((pdl_on, None, multi));
            }
        }
        v
    };
    for &(pdl, smem, multi) in &modes {
        gpu.set_pdl(pdl);
        m.backend().gemv_smem = smem;
        m.backend().gemv_multi = multi.max(2) * u32::from(multi > 0);
        m.backend().gemv_multi_single = multi == 1;
        m.drop_graph();
        let mut launch = match (pdl, smem) {
            (false, Some(false)) => "plain".to_owned(),
            (true, Some(false)) => "PDL".to_owned(),
            (false, _) => "shaped smem-GEMV".to_owned(),
            (true, _) => "PDL shaped smem-GEMV".to_owned(),
        };
        match multi {
            0 => {}
            1 => launch += " multi-GEMV/2 for all",
            n => launch += &format!(" multi-GEMV/{n}"),
        }
        if let (Some(t), true, true) = (m.backend().gemv_tma, multi != 0, pdl_on) {
            launch += &format!(" (one row: bulk copy {})", tma_name(t));
        }
        for (mode, graph) in [("eager", false), ("graph", true)] {
            let first = tokens.last().copied().unwrap_or(0);
            let tps = 1e3 / decode_ms(&mut m, first, prefill, steps, graph, Some(Pick::Greedy))?;
            let eff = per_tok * tps;
            println!(
            "  decode ({mode}, {launch} launches): {tps:.1} tok/s, {:.2} ms/tok, {:.0} GB/s effective = {:.1}% of measured HBM",
            1e3 / tps,
            eff / 1e9,
            100.0 * eff / bw
        );
            println!(
            "SUMMARY|bench|{name} decode b1 {mode} {launch}|{tps:.1} tok/s|{:.0} GB/s = {:.1}% of {:.0} GB/s",
            eff / 1e9,
            100.0 * eff / bw,
            bw / 1e9
        );
        }
    }
    gpu.set_pdl(pdl_default);
    m.backend().gemv_smem = smem_default;
    m.backend().gemv_multi = multi_default;
    m.backend().gemv_multi_single = single_default;

    // The default graph step with the token drawn on the device (sample_f32 after the graph,
    // T = 0.8) and with the logits read back instead of any pick (the daemon's engine, which
    // samples on the host): what each way of taking the token costs beside the greedy rows.
    m.drop_graph();
    let first = tokens.last().copied().unwrap_or(0);
    let greedy = decode_ms(&mut m, first, prefill, steps, true, Some(Pick::Greedy))?;
    let draw = Pick::Sample {
        temperature: 0.8,
        seed: 1,
        counter: 0,
    };
    let sampled = decode_ms(&mut m, first, prefill, steps, true, Some(draw))?;
    let read = decode_ms(&mut m, first, prefill, steps, true, None)?;
    for (what, ms) in [
        ("greedy (argmax on the device)", greedy),
        ("Gumbel-max draw on the device, T 0.8", sampled),
        ("logits read back, no pick (the daemon's engine)", read),
    ] {
        println!(
            "  decode (graph, default launches, {what}): {:.1} tok/s, {ms:.3} ms/tok ({:+.3} ms against greedy)",
            1e3 / ms,
            ms - greedy
        );
        println!(
            "SUMMARY|bench|{name} decode b1 graph pick|{what}|{:.1} tok/s|{ms:.3} ms",
            1e3 / ms
        );
    }

    // What each class of kernels costs inside the default graph step: the step without it
    // (its launches dropped, so the output is garbage), twice, against the full step.
    // Every kernel named gemv_* (read from the module, so a new GEMV kernel is counted).
    let gemvs: Vec<&str> = gpu
        .kernel_names()
        .iter()
        .map(String::as_str)
        .filter(|n| n.starts_with("gemv_"))
        .collect();
    const NORMS: &[&str] = &[
        "rmsnorm_f32",
        "rmsnorm_q8_f32",
        "add_rmsnorm_f32",
        "add_rmsnorm_q8_f32",
        "norm_add_rmsnorm_f32",
        "norm_add_rmsnorm_q8_f32",
        "norm_sums_q8_f32",
        "rmsnorm_q8_cl",
        "add_rmsnorm_q8_cl",
        "norm_add_rmsnorm_q8_cl",
    ];
    const ATTN: &[&str] = &["attn_split", "attn_split_cl"];
    const PREP: &[&str] = &["attn_inputs"];
    const ACT: &[&str] = &["gated_act_q8", "gated_silu_f32", "gated_gelu_tanh_f32"];
    const QUANT: &[&str] = &["quantize_q8_1"];
    // Every other kernel of the module.
    let others: Vec<&str> = gpu
        .kernel_names()
        .iter()
        .map(String::as_str)
        .filter(|n| !n.starts_with("gemv_"))
        .collect();
    let classes: [(&str, &[&str]); 8] = [
        ("nothing", &[]),
        ("GEMVs", &gemvs),
        ("norms", NORMS),
        ("attention", ATTN),
        ("Q/K norm+RoPE+KV store", PREP),
        ("gated activation", ACT),
        ("activation quantize", QUANT),
        ("everything but GEMVs", &others),
    ];
    let mut full_ms = f64::NAN;
    // A GEMV after a flag hop waits for its norm's signal: with the norms dropped it would wait
    // forever, so the costs are not measured then.
    let rounds = if m.backend().flag_hop {
        println!(
            "  (no per-class costs with GLIMMER_FLAG_HOP=1: the GEMVs wait on the norms' flags)"
        );
        0
    } else {
        2
    };
    for round in 0..rounds {
        for (name, kernels) in classes {
            gpu.set_skipped(kernels).map_err(|e| e.to_string())?;
            m.drop_graph();
            let ms = decode_ms(
                &mut m,
                tokens.last().copied().unwrap_or(0),
                prefill,
                steps,
                true,
                Some(Pick::Greedy),
            )?;
            if name == "nothing" {
                full_ms = ms;
            }
            println!(
                "  graph step without {name:<26} {ms:>7.3} ms/tok (round {round}): it costs {:>6.3} ms a token, {:>5.1}% of the step",
                full_ms - ms,
                100.0 * (full_ms - ms) / full_ms
            );
            println!(
                "SUMMARY|cost|{name} (round {round})|{:.3} ms/tok|{:.1}% of the {full_ms:.3} ms step",
                full_ms - ms,
                100.0 * (full_ms - ms) / full_ms
            );
        }
    }
    gpu.set_skipped(&[]).map_err(|e| e.to_string())?;
    m.drop_graph();
    Ok(())
}

/// Milliseconds a decode step takes, from position `prefill` on, each step's token picked as
/// `pick` says (a draw's counter is the step) and fed to the next; `None`: no pick, the logits
/// read back instead (as the daemon's engine runs a step) and the first token fed every step.
/// One untimed warm-up step (which captures the graph when `graph`), then the mean of
/// `steps - 1` steps.
fn decode_ms(
    m: &mut CudaModel<'_, '_>,
    first: u32,
    prefill: usize,
    steps: usize,
    graph: bool,
    pick: Option<Pick>,
) -> Result<f64, String> {
    let mut logits = vec![
        0f32;
        if pick.is_none() {
            m.parts().0.spec.n_vocab
        } else {
            0
        }
    ];
    let mut step = |m: &mut CudaModel<'_, '_>, tok: u32, s: usize| -> Result<u32, String> {
        let p = pick.map(|p| match p {
            Pick::Sample {
                temperature, seed, ..
            } => Pick::Sample {
                temperature,
                seed,
                counter: s as u64,
            },
            Pick::Greedy => Pick::Greedy,
        });
        let got = m
            .decode_step_pick(0, tok, (prefill + s) as u32, graph, p)
            .map_err(|e| format!("{e:?}"))?;
        match got {
            Some(t) => Ok(t),
            None => {
                m.read_logits(&mut logits).map_err(|e| e.to_string())?;
                Ok(first)
            }
        }
    };
    let mut tok = step(m, first, 0)?;
    let t = Instant::now();
    for s in 1..steps {
        tok = step(m, tok, s)?;
    }
    Ok(t.elapsed().as_secs_f64() * 1e3 / (steps - 1).max(1) as f64)
}

/// Each distinct weight of layer 0 and the output head as a one-row GEMV on its own, repeated:
/// time per call and weight bytes ÷ time against the measured bandwidth. Then one eager decode
/// step per op kind, with the stream synchronized after every op.
fn gemv_bench(
    m: &mut CudaModel<'_, '_>,
    gpu: &Gpu,
    loaded: &Loaded<'_>,
    bw: f64,
) -> Result<(), String> {
    use glimmer_boards::profile::{OpTimes, Profiled};
    use glimmer_core::exec::Backend;
    let e = |e: glimmer_jetson::CudaError| e.to_string();
    let w = &loaded.weights;
    let spec = &loaded.spec;
    let Some(l0) = w.layers.first() else {
        return Ok(());
    };
    let mut list = vec![
        ("attn_q", l0.wq),
        ("attn_k", l0.wk),
        ("attn_v", l0.wv),
        ("attn_output", l0.wo),
        ("ffn_gate", l0.w_gate),
        ("ffn_up", l0.w_up),
        ("ffn_down", l0.w_down),
        ("output", w.output),
    ];
    if let Some(g) = l0.attn_gate {
        list.push(("attn_gate", g));
    }
    let (model, be) = m.parts();
    let layout = model.layout;
    let reps = 50;
    // (rows a warp, team target, activations in shared memory); 0 = the backend's automatic
    // choice.
    let smem_default = be.gemv_smem;
    let single_default = be.gemv_multi_single;
    // The last: every Q4_K / Q6_K matrix through the grid-stride `gemv_k_multi` kernel.
    let variants: [(usize, usize, Option<bool>, bool); 5] = [
        (1, 6144, Some(false), false),
        (2, 6144, Some(false), false),
        (0, 0, Some(false), false),
        (0, 0, None, false),
        (0, 0, None, true),
    ];
    for (rw, target, smem, single) in variants {
        be.gemv_rows_per_warp = rw;
        be.gemv_team_target = target;
        be.gemv_smem = smem;
        be.gemv_multi_single = single;
        println!(
            "  GEMV variant: {rw} row(s) a warp on Q4_K/Q6_K matrices of >= {} rows, team target {target} warps, activations in shared memory: {}, multi-GEMV kernel: {single}",
            glimmer_jetson::WIDE_ROWS,
            smem.map_or("by shape".to_owned(), |b| b.to_string())
        );
        let mut total_bytes = 0f64;
        let mut total_s = 0f64;
        for &(name, t) in &list {
            // Inputs: a region at least `cols` wide; outputs: the logits region (the widest).
            let x = if t.cols <= layout.xn.len {
                layout.xn
            } else {
                layout.gate
            }
            .prefix(t.cols);
            let out = layout.logits.prefix(t.rows);
            if x.len > layout.gate.len.max(layout.xn.len) || out.len > layout.logits.len {
                continue;
            }
            for _ in 0..3 {
                be.matmul(&t, x, 1, out).map_err(e)?;
            }
            gpu.synchronize().map_err(e)?;
            let t0 = Instant::now();
            for _ in 0..reps {
                be.matmul(&t, x, 1, out).map_err(e)?;
            }
            gpu.synchronize().map_err(e)?;
            let s = t0.elapsed().as_secs_f64() / reps as f64;
            let bytes = t.data.len() as f64;
            let layers = if name == "output" {
                1.0
            } else {
                spec.n_layer as f64
            };
            total_bytes += bytes * layers;
            total_s += s * layers;
            println!(
                "  gemv {name:<12} {:>6} x {:>6} {:<5} {:>9.1} us  {:>7.0} GB/s = {:>5.1}% of HBM",
                t.rows,
                t.cols,
                t.ty.name(),
                s * 1e6,
                bytes / s / 1e9,
                100.0 * bytes / s / bw
            );
        }
        println!(
        "SUMMARY|gemv|rows/warp {rw} target {target} smem {smem:?} multi {single}: all weights of a token, one GEMV at a time|{:.2} ms|{:.0} GB/s = {:.1}% of HBM",
        total_s * 1e3,
        total_bytes / total_s / 1e9,
        100.0 * total_bytes / total_s / bw
    );
    }
    be.gemv_rows_per_warp = 0;
    be.gemv_team_target = 0;
    be.gemv_smem = smem_default;
    be.gemv_multi_single = single_default;

    // The matrices the forward pass gives `matmul_many` (Q, K, V and the attention gate; the
    // FFN gate and up, here without the activation), one launch each and in one launch.
    let d = |b: Buf, rows: usize| b.prefix(rows);
    let mut qkv = vec![
        (l0.wq, d(layout.q, l0.wq.rows)),
        (l0.wk, d(layout.k, l0.wk.rows)),
    ];
    qkv.push((l0.wv, d(layout.v, l0.wv.rows)));
    if let Some(g) = l0.attn_gate {
        qkv.push((g, d(layout.ogate, g.rows)));
    }
    let ffn = [
        (l0.w_gate, d(layout.gate, l0.w_gate.rows)),
        (l0.w_up, d(layout.up, l0.w_up.rows)),
    ];
    let multi_default = be.gemv_multi;
    let tma_default = be.gemv_tma;
    // The register kernels, then (compute capability 9.0 and later) the bulk-copy one.
    let mut kinds: Vec<(u32, Option<glimmer_jetson::TmaGemv>)> =
        [0, 2, 3, 4].into_iter().map(|m| (m, None)).collect();
    if gpu.compute_capability().0 >= 9 && tma_default.is_some() {
        kinds.push((2, tma_default));
    }
    for (multi, tma) in kinds {
        be.gemv_multi = multi;
        be.gemv_tma = tma;
        for (name, set) in [("Q/K/V/gate", &qkv[..]), ("FFN gate/up", &ffn[..])] {
            let ws: Vec<&glimmer_core::model::Tensor<'_>> = set.iter().map(|(t, _)| t).collect();
            let outs: Vec<Buf> = set.iter().map(|&(_, o)| o).collect();
            let x = layout.xn.prefix(ws[0].cols);
            if outs.iter().any(|o| o.len == 0) {
                continue;
            }
            for _ in 0..3 {
                be.matmul_many(&ws, x, 1, &outs).map_err(e)?;
            }
            gpu.synchronize().map_err(e)?;
            let t0 = Instant::now();
            for _ in 0..reps {
                be.matmul_many(&ws, x, 1, &outs).map_err(e)?;
            }
            gpu.synchronize().map_err(e)?;
            let s = t0.elapsed().as_secs_f64() / reps as f64;
            let bytes: f64 = ws.iter().map(|t| t.data.len() as f64).sum();
            let how = match (multi, tma) {
                (0, _) => "one launch a matrix".to_owned(),
                (_, Some(t)) => format!("bulk copy {}", tma_name(t)),
                _ => format!("one launch, {multi} blocks/SM"),
            };
            println!(
                "  matmul_many {name:<11} ({how:<22}) {:>9.1} us  {:>7.0} GB/s = {:>5.1}% of HBM",
                s * 1e6,
                bytes / s / 1e9,
                100.0 * bytes / s / bw
            );
        }
    }
    be.gemv_multi = multi_default;
    be.gemv_tma = tma_default;

    // One eager step per op, synchronizing after each.
    let mut times = OpTimes::default();
    let steps = 8;
    let sync: fn(&mut CudaBackend) = |b| {
        let _ = b.gpu().synchronize();
    };
    for s in 0..=steps {
        let mut one = OpTimes::default();
        let (model, be) = m.parts();
        be.set_inputs(&[1], &[s as u32]).map_err(e)?;
        let mut p = Profiled::with_fence(be, &mut one, sync);
        model
            .forward(&mut p, &[1], s as u32, LogitRows::Last)
            .map_err(|e| format!("{e:?}"))?;
        if s > 0 {
            times = times.merged(&one);
        }
    }
    println!(
        "  eager decode step, synchronized per op ({:.2} ms a step):\n{}",
        times.total().as_secs_f64() * 1e3 / steps as f64,
        times.table()
    );
    Ok(())
}

/// A bulk-copy setting as `$GLIMMER_GEMV_TMA` spells it.
fn tma_name(t: glimmer_jetson::TmaGemv) -> String {
    format!(
        "{}:{}:{}:{}:{}:{}:{}:{}",
        t.stages,
        t.max_warps,
        t.item_rows,
        t.min_warps,
        t.team,
        t.pre,
        u8::from(t.wide),
        t.ring
    )
}

//! Benchmarks: HBM bandwidth, prefill and decode throughput, bytes read per token.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use glimmer_boards::engine::Loaded;
use glimmer_boards::model_file::ModelFile;
use glimmer_core::exec::{Layout, Limits, LogitRows};
use glimmer_core::kv::KvGeometry;
use glimmer_core::model::LayerKind;
use glimmer_core::plan::KvType;
use glimmer_jetson::{Capacity, CudaBackend, CudaModel, Gpu, KvLayout};

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

/// Prefill of `prefill` tokens, then `steps` greedy decode steps without and with the graph.
pub fn run(
    gpu: Arc<Gpu>,
    path: &Path,
    prefill: usize,
    steps: usize,
    bw: f64,
) -> Result<(), String> {
    let file = ModelFile::open(path).map_err(|e| e.to_string())?;
    let loaded = Loaded::new(&file).map_err(|e| e.to_string())?;
    let spec = &loaded.spec;
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ctx = (prefill + steps + 1).next_power_of_two();
    let chunk = prefill.clamp(1, 512);
    let limits = Limits {
        chunk,
        logit_rows: 1,
        ctx,
        threads: 1,
    };
    let layout = Layout::new(spec, limits).map_err(|e| format!("{e:?}"))?;
    let geo = KvGeometry::new(spec, ctx, chunk, KvType::F16).map_err(|e| e.to_string())?;
    let kvl = KvLayout::new(&geo, 1).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let mut be = CudaBackend::new(gpu.clone(), Capacity::for_model(spec, &layout), kvl)
        .map_err(|e| e.to_string())?;
    be.upload_model(&loaded.weights)
        .map_err(|e| e.to_string())?;
    println!(
        "bench {name}: uploaded {:.2} GB of weights in {:.1} s; device memory {:.2} GB",
        be.weights().bytes() as f64 / 1e9,
        t.elapsed().as_secs_f64(),
        be.device_bytes() as f64 / 1e9
    );
    let mut m = CudaModel::new(spec, &loaded.weights, &layout, be);
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

    for (mode, graph) in [("eager", false), ("graph", true)] {
        let mut tok = tokens.last().copied().unwrap_or(0);
        // Warm-up step (captures the graph), not timed.
        tok = m
            .decode_step(0, tok, prefill as u32, graph)
            .map_err(|e| format!("{e:?}"))?;
        let t = Instant::now();
        for s in 1..steps {
            tok = m
                .decode_step(0, tok, (prefill + s) as u32, graph)
                .map_err(|e| format!("{e:?}"))?;
        }
        let secs = t.elapsed().as_secs_f64();
        let tps = (steps - 1) as f64 / secs;
        let eff = per_tok * tps;
        println!(
            "  decode ({mode}): {tps:.1} tok/s, {:.2} ms/tok, {:.0} GB/s effective = {:.1}% of measured HBM",
            1e3 / tps,
            eff / 1e9,
            100.0 * eff / bw
        );
        println!(
            "SUMMARY|bench|{name} decode b1 {mode}|{tps:.1} tok/s|{:.0} GB/s = {:.1}% of {:.0} GB/s",
            eff / 1e9,
            100.0 * eff / bw,
            bw / 1e9
        );
    }
    Ok(())
}

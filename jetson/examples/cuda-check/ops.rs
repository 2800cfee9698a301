//! Every CUDA kernel against the CPU reference backend on fresh random inputs.
//!
//! Both backends get the same inputs in the same arena regions; outputs are poisoned with NaN
//! first, so a kernel that skips part of its output fails.

use std::sync::Arc;

use glimmer_boards::cpu_features;
use glimmer_core::cpu::CpuBackend;
use glimmer_core::exec::{AttnParams, Backend, BranchEnd, Buf, QkPrep};
use glimmer_core::kv::{self, KvGeometry, PagePool};
use glimmer_core::model::{Activation, RopeStyle, Tensor, MAX_LAYERS};
use glimmer_core::plan::KvType;
use glimmer_core::quant::{quantize_weights, GgmlType, Kernels};
use glimmer_jetson::{Capacity, CudaBackend, Gpu, KvLayout, NormFusion, ATTN_CLUSTER_KEYS as KEYS};

use crate::util::{argmax, compare, report, verdict, Rng};

const REGION: usize = 1 << 17;
const ARENA: usize = 5 * REGION;
const A: usize = 0;
const B: usize = REGION;
const C: usize = 2 * REGION;
const D: usize = 3 * REGION;
const S: usize = 4 * REGION;

const N_HEAD: usize = 8;
const N_HEAD_KV: usize = 2;
const HEAD: usize = 64;
const CTX: usize = 256;
const WINDOW: u32 = 16;

fn buf(off: usize, len: usize) -> Buf {
    Buf { off, len }
}

/// The two backends side by side.
struct Pair {
    arena: Vec<f32>,
    scratch: Vec<u8>,
    pool: PagePool<Vec<u16>, Vec<u32>>,
    kernels: Kernels,
    cu: CudaBackend,
}

impl Pair {
    fn new(gpu: Arc<Gpu>) -> Result<Self, String> {
        let mut caps = [0usize; MAX_LAYERS];
        caps[0] = CTX; // global
        caps[1] = WINDOW as usize + 32; // sliding ring
        let geo = KvGeometry {
            n_layer: 2,
            ctx: CTX,
            caps,
            k_dim: N_HEAD_KV * HEAD,
            v_dim: N_HEAD_KV * HEAD,
            ty: KvType::F16,
        };
        let pages = geo.pages_per_slot().map_err(|e| e.to_string())?;
        let data = vec![0u16; kv::data_len(&geo, pages).map_err(|e| e.to_string())?];
        let meta = vec![0u32; kv::meta_len(&geo, 1, pages).map_err(|e| e.to_string())?];
        let pool = PagePool::new(geo, 1, pages, data, meta).map_err(|e| e.to_string())?;
        let cap = Capacity {
            arena_len: ARENA,
            chunk: 64,
            // The 30B shape's FFN width: the teams-of-four check below takes rows that long.
            max_cols: 19968,
            n_head: N_HEAD,
            head_dim_v: HEAD,
        };
        let kvl = KvLayout::new(&geo, 2).map_err(|e| e.to_string())?;
        let cu = CudaBackend::new(gpu, cap, kvl).map_err(|e| e.to_string())?;
        Ok(Pair {
            arena: vec![0.0; ARENA],
            scratch: vec![0; 64 * 1024 * 4],
            pool,
            kernels: Kernels::select(cpu_features::detect()),
            cu,
        })
    }

    /// Writes `v` at `b` in both arenas.
    fn put(&mut self, b: Buf, v: &[f32]) -> Result<(), String> {
        self.arena[b.off..b.off + b.len].copy_from_slice(v);
        self.cu.write(b, v).map_err(|e| e.to_string())
    }

    /// Fills `b` with NaN in both arenas.
    fn poison(&mut self, b: Buf) -> Result<(), String> {
        self.put(b, &vec![f32::NAN; b.len])
    }

    /// Copies the CUDA backend's region `b` into the CPU's arena (the CPU side then works on
    /// the device's values).
    fn take_device(&mut self, b: Buf) -> Result<(), String> {
        let arena = &mut self.arena[b.off..b.off + b.len];
        self.cu.read(b, arena).map_err(|e| e.to_string())
    }

    /// Runs `f` on the CPU backend then on the CUDA backend.
    fn run(&mut self, f: impl Fn(&mut dyn DynBackend) -> Result<(), String>) -> Result<(), String> {
        self.run_cpu(&f)?;
        f(&mut self.cu)
    }

    /// Runs `f` on the CPU backend only.
    fn run_cpu(
        &mut self,
        f: impl Fn(&mut dyn DynBackend) -> Result<(), String>,
    ) -> Result<(), String> {
        let slot = self.pool.slot(0).map_err(|e| e.to_string())?;
        let mut cpu = CpuBackend::new(
            &mut self.arena,
            &mut self.scratch,
            buf(S, CTX),
            slot,
            self.kernels,
            &glimmer_core::exec::Serial,
        );
        f(&mut cpu)
    }

    /// Compares region `b` of both arenas.
    fn check(&mut self, name: &str, b: Buf, tol: f32) -> Result<bool, String> {
        let mut g = vec![0f32; b.len];
        self.cu.read(b, &mut g).map_err(|e| e.to_string())?;
        let c = compare(&self.arena[b.off..b.off + b.len], &g);
        Ok(report(name, &c, tol))
    }
}

/// The Backend methods the checks call, object-safe with errors as strings.
trait DynBackend {
    fn b_embed(&mut self, t: &Tensor<'_>, tok: &[u32], out: Buf) -> Result<(), String>;
    fn b_rmsnorm(
        &mut self,
        x: Buf,
        w: Option<&Tensor<'_>>,
        dim: usize,
        out: Buf,
    ) -> Result<(), String>;
    fn b_matmul(&mut self, w: &Tensor<'_>, x: Buf, rows: usize, out: Buf) -> Result<(), String>;
    fn b_matmul_many(
        &mut self,
        ws: &[&Tensor<'_>],
        x: Buf,
        rows: usize,
        outs: &[Buf],
    ) -> Result<(), String>;
    fn b_branch_norms(&mut self, e: &BranchEnd<'_, '_>) -> Result<(), String>;
    fn b_matmul_add_rmsnorm(
        &mut self,
        w: &Tensor<'_>,
        a: Buf,
        rows: usize,
        e: &BranchEnd<'_, '_>,
    ) -> Result<(), String>;
    #[allow(clippy::too_many_arguments)]
    fn b_matmul_gated(
        &mut self,
        wg: &Tensor<'_>,
        wu: &Tensor<'_>,
        x: Buf,
        rows: usize,
        g: Buf,
        u: Buf,
        a: Activation,
    ) -> Result<(), String>;
    fn b_attn_inputs(
        &mut self,
        p: &QkPrep<'_, '_>,
        q: Buf,
        k: Buf,
        v: Buf,
        pos: &[u32],
    ) -> Result<(), String>;
    #[allow(clippy::too_many_arguments)]
    fn b_qkv_attn_inputs(
        &mut self,
        ws: &[&Tensor<'_>],
        x: Buf,
        q: Buf,
        k: Buf,
        v: Buf,
        gate: Option<Buf>,
        p: &QkPrep<'_, '_>,
        pos: &[u32],
    ) -> Result<(), String>;
    fn b_attention_gated(
        &mut self,
        p: &AttnParams,
        q: Buf,
        pos: &[u32],
        gate: Buf,
        out: Buf,
    ) -> Result<(), String>;
    /// `attention_project`.
    #[allow(clippy::too_many_arguments)]
    fn b_attention_project(
        &mut self,
        p: &AttnParams,
        q: Buf,
        pos: &[u32],
        gate: Option<Buf>,
        att: Buf,
        wo: &Tensor<'_>,
        e: &BranchEnd<'_, '_>,
    ) -> Result<(), String>;
    fn b_rope(
        &mut self,
        x: Buf,
        pos: &[u32],
        rope_dim: usize,
        style: RopeStyle,
    ) -> Result<(), String>;
    fn b_kv_store(&mut self, layer: usize, k: Buf, v: Buf, pos: &[u32]) -> Result<(), String>;
    fn b_attention(&mut self, p: &AttnParams, q: Buf, pos: &[u32], out: Buf) -> Result<(), String>;
    fn b_gated(&mut self, g: Buf, u: Buf, a: Activation) -> Result<(), String>;
    fn b_sigmoid_mul(&mut self, x: Buf, g: Buf) -> Result<(), String>;
    fn b_softcap(&mut self, x: Buf) -> Result<(), String>;
    fn b_add(&mut self, x: Buf, y: Buf) -> Result<(), String>;
    fn b_scale(&mut self, x: Buf) -> Result<(), String>;
}

/// The checks' attention at `layer` (global, or sliding over `window` keys): N_HEAD heads of
/// HEAD dims over N_HEAD_KV KV heads, scale 0.125.
fn attn_params(layer: usize, window: Option<u32>) -> AttnParams {
    AttnParams {
        layer,
        n_head: N_HEAD,
        n_head_kv: N_HEAD_KV,
        head_dim: HEAD,
        head_dim_v: HEAD,
        scale: 0.125,
        window,
    }
}

/// The checks' Q/K prep at `layer`: with `with`, per-head norms with gains `qt` / `kt`
/// (epsilon 1e-6) and half-split RoPE over half the head; without, neither.
fn qk_prep<'a, 'w>(
    layer: usize,
    with: bool,
    qt: &'a Tensor<'w>,
    kt: &'a Tensor<'w>,
) -> QkPrep<'a, 'w> {
    QkPrep {
        layer,
        n_head: N_HEAD,
        n_head_kv: N_HEAD_KV,
        head_dim: HEAD,
        norm: with.then_some((Some(qt), Some(kt), 1e-6)),
        rope: with.then_some((HEAD / 2, 10000.0, RopeStyle::HalfSplit)),
    }
}

/// The checks' [`BranchEnd`]: post-norm epsilon 1e-6, the next norm's 1e-5, rows of `dim`.
fn branch_end<'a, 'w>(
    y: Buf,
    x: Buf,
    post: Option<&'a Tensor<'w>>,
    g: Option<&'a Tensor<'w>>,
    dim: usize,
    out: Buf,
) -> BranchEnd<'a, 'w> {
    BranchEnd {
        y,
        x,
        post: post.map(|t| (t, 1e-6)),
        weight: g,
        dim,
        eps: 1e-5,
        out,
    }
}

impl<T: Backend> DynBackend for T {
    fn b_embed(&mut self, t: &Tensor<'_>, tok: &[u32], out: Buf) -> Result<(), String> {
        self.embed(t, tok, out).map_err(|e| format!("{e:?}"))
    }
    fn b_rmsnorm(
        &mut self,
        x: Buf,
        w: Option<&Tensor<'_>>,
        dim: usize,
        out: Buf,
    ) -> Result<(), String> {
        self.rmsnorm(x, w, dim, 1e-5, out)
            .map_err(|e| format!("{e:?}"))
    }
    fn b_matmul(&mut self, w: &Tensor<'_>, x: Buf, rows: usize, out: Buf) -> Result<(), String> {
        self.matmul(w, x, rows, out).map_err(|e| format!("{e:?}"))
    }
    fn b_matmul_many(
        &mut self,
        ws: &[&Tensor<'_>],
        x: Buf,
        rows: usize,
        outs: &[Buf],
    ) -> Result<(), String> {
        self.matmul_many(ws, x, rows, outs)
            .map_err(|e| format!("{e:?}"))
    }
    fn b_branch_norms(&mut self, e: &BranchEnd<'_, '_>) -> Result<(), String> {
        self.branch_norms(e).map_err(|e| format!("{e:?}"))
    }
    fn b_matmul_add_rmsnorm(
        &mut self,
        w: &Tensor<'_>,
        a: Buf,
        rows: usize,
        e: &BranchEnd<'_, '_>,
    ) -> Result<(), String> {
        self.matmul_add_rmsnorm(w, a, rows, e)
            .map_err(|e| format!("{e:?}"))
    }
    fn b_matmul_gated(
        &mut self,
        wg: &Tensor<'_>,
        wu: &Tensor<'_>,
        x: Buf,
        rows: usize,
        g: Buf,
        u: Buf,
        a: Activation,
    ) -> Result<(), String> {
        self.matmul_gated(wg, wu, x, rows, g, u, a)
            .map_err(|e| format!("{e:?}"))
    }
    fn b_attn_inputs(
        &mut self,
        p: &QkPrep<'_, '_>,
        q: Buf,
        k: Buf,
        v: Buf,
        pos: &[u32],
    ) -> Result<(), String> {
        self.attn_inputs(p, q, k, v, pos)
            .map_err(|e| format!("{e:?}"))
    }
    fn b_qkv_attn_inputs(
        &mut self,
        ws: &[&Tensor<'_>],
        x: Buf,
        q: Buf,
        k: Buf,
        v: Buf,
        gate: Option<Buf>,
        p: &QkPrep<'_, '_>,
        pos: &[u32],
    ) -> Result<(), String> {
        self.qkv_attn_inputs(ws, x, q, k, v, gate, p, pos)
            .map_err(|e| format!("{e:?}"))
    }
    fn b_attention_gated(
        &mut self,
        p: &AttnParams,
        q: Buf,
        pos: &[u32],
        gate: Buf,
        out: Buf,
    ) -> Result<(), String> {
        self.attention_gated(p, q, pos, gate, out)
            .map_err(|e| format!("{e:?}"))
    }
    fn b_attention_project(
        &mut self,
        p: &AttnParams,
        q: Buf,
        pos: &[u32],
        gate: Option<Buf>,
        att: Buf,
        wo: &Tensor<'_>,
        e: &BranchEnd<'_, '_>,
    ) -> Result<(), String> {
        self.attention_project(p, q, pos, gate, att, wo, e)
            .map_err(|e| format!("{e:?}"))
    }
    fn b_rope(
        &mut self,
        x: Buf,
        pos: &[u32],
        rope_dim: usize,
        style: RopeStyle,
    ) -> Result<(), String> {
        self.rope(x, N_HEAD, HEAD, rope_dim, pos, 10000.0, style)
            .map_err(|e| format!("{e:?}"))
    }
    fn b_kv_store(&mut self, layer: usize, k: Buf, v: Buf, pos: &[u32]) -> Result<(), String> {
        self.kv_store(layer, k, v, pos)
            .map_err(|e| format!("{e:?}"))
    }
    fn b_attention(&mut self, p: &AttnParams, q: Buf, pos: &[u32], out: Buf) -> Result<(), String> {
        self.attention(p, q, pos, out).map_err(|e| format!("{e:?}"))
    }
    fn b_gated(&mut self, g: Buf, u: Buf, a: Activation) -> Result<(), String> {
        self.gated_act(g, u, a).map_err(|e| format!("{e:?}"))
    }
    fn b_sigmoid_mul(&mut self, x: Buf, g: Buf) -> Result<(), String> {
        self.sigmoid_mul(x, g).map_err(|e| format!("{e:?}"))
    }
    fn b_softcap(&mut self, x: Buf) -> Result<(), String> {
        self.softcap(x, 20.0, 0.196_116_14)
            .map_err(|e| format!("{e:?}"))
    }
    fn b_add(&mut self, x: Buf, y: Buf) -> Result<(), String> {
        self.add(x, y).map_err(|e| format!("{e:?}"))
    }
    fn b_scale(&mut self, x: Buf) -> Result<(), String> {
        self.scale(x, 0.37).map_err(|e| format!("{e:?}"))
    }
}

/// Quantized bytes of a `(rows, cols)` random matrix.
fn matrix(
    rng: &mut Rng,
    ty: GgmlType,
    rows: usize,
    cols: usize,
    std: f32,
) -> Result<Vec<u8>, String> {
    let w = rng.vec(rows * cols, std);
    let rb = ty.row_bytes(cols).ok_or("row bytes")?;
    let mut out = vec![0u8; rb * rows];
    quantize_weights(ty, &w, &mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

const TYPES: [GgmlType; 10] = [
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q8_0,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::F16,
    GgmlType::BF16,
    GgmlType::F32,
];

/// Tolerance of attention's output against the CPU (relative to the largest CPU output): the
/// CPU rounds the softmax weights to f16, the device keeps them in f32.
const ATTN_TOL: f32 = 5e-3;

/// Tolerance of a matmul against the CPU (relative to the largest CPU output). The CPU
/// quantizes activations to Q8_0 (f16 scale), Q8_1 or Q8_K (blocks of 256) and F16 weights
/// dot f16 activations; the device uses blocks of 32 with f32 scales, or f32 activations.
fn matmul_tol(ty: GgmlType) -> f32 {
    match ty {
        GgmlType::F32 => 1e-5,
        GgmlType::F16 => 5e-3,
        GgmlType::BF16 => 1e-2,
        _ => 3e-2,
    }
}

/// A fresh random `ty` matrix of `n_out` x `cols` (tensor id `id`), uploaded, times fresh random
/// input rows for each count in `row_counts` on both backends, each output checked against the
/// CPU as `label(rows)`; with `mma`, each must have run on the tensor-core GEMM (counted, so a
/// silent fallback to the GEMVs fails).
#[allow(clippy::too_many_arguments)]
fn check_matmul_rows(
    p: &mut Pair,
    rng: &mut Rng,
    ty: GgmlType,
    (n_out, cols): (usize, usize),
    row_counts: &[usize],
    id: u32,
    mma: bool,
    label: impl Fn(usize) -> String,
) -> Result<bool, String> {
    let data = matrix(rng, ty, n_out, cols, 0.1)?;
    let t = Tensor {
        ty,
        rows: n_out,
        cols,
        data: &data,
        id,
    };
    p.cu.upload(&[t]).map_err(|e| e.to_string())?;
    let mut ok = true;
    for &rows in row_counts {
        let x = buf(A, rows * cols);
        let out = buf(B, rows * n_out);
        let xv = rng.vec(x.len, 1.0);
        p.put(x, &xv)?;
        p.poison(out)?;
        let before = p.cu.mma_matmuls;
        p.run(|b| b.b_matmul(&t, x, rows, out))?;
        let name = label(rows);
        ok &= p.check(&name, out, matmul_tol(ty))?;
        if mma && p.cu.mma_matmuls != before + 1 {
            println!("{name}: the tensor-core GEMM did not run  FAIL");
            ok = false;
        }
    }
    Ok(ok)
}

/// `matmul_many` of `ws` (all as wide) over `rows` fresh random input rows on both backends,
/// each output checked against the CPU as `{label}_{type}_{rows}x{cols}_rows{rows}`.
fn check_matmul_many(
    p: &mut Pair,
    rng: &mut Rng,
    ws: &[&Tensor<'_>],
    rows: usize,
    label: &str,
) -> Result<bool, String> {
    let cols = ws[0].cols;
    let x = buf(A, rows * cols);
    let mut outs = Vec::new();
    let mut off = B;
    for w in ws {
        outs.push(buf(off, rows * w.rows));
        off += rows * w.rows;
    }
    p.put(x, &rng.vec(x.len, 1.0))?;
    p.poison(buf(B, off - B))?;
    p.run(|b| b.b_matmul_many(ws, x, rows, &outs))?;
    let mut ok = true;
    for (w, &o) in ws.iter().zip(&outs) {
        let name = format!("{label}_{}_{}x{cols}_rows{rows}", w.ty.name(), w.rows);
        ok &= p.check(&name, o, matmul_tol(w.ty))?;
    }
    Ok(ok)
}

/// Run-time items (`gemv_steal`, kernels/gemv_k.cu KT_ITEM_OFF) in the default's two plain
/// shapes: teams of two (1 280 columns, Q4_K then Q6_K in one launch, so the handed-out items
/// cross a matrix's end) and teams of four (the 30B shape's FFN down width), and in the
/// row-split teams' (two rows an item, `TmaGemv::item_rows` 3), with rows enough
/// for one or two run-time rounds after at least the ring's first fill, each launch twice,
/// counted: the forward pass's first such launch runs statically and zeroes the counters, the
/// others hand out their last rounds (every row must come out once: the CPU's matmul).
fn check_steal(p: &mut Pair, rng: &mut Rng) -> Result<bool, String> {
    let mut ok = true;
    let (steal_default, tma_default) = (p.cu.gemv_steal, p.cu.gemv_tma);
    let sms = p.cu.gpu().sm_count() as usize;
    // (columns, rings a block, first matrix's type, id, rows an item): 1 280 columns leave 24
    // warps (12 teams of two); 19 968 columns of Q6_K six rings (teams of four).
    for (cols, rings, ty, id, item_rows) in [
        (1280usize, 12usize, GgmlType::Q4_K, 5000u32, 1u32),
        (19968, 6, GgmlType::Q6_K, 5100, 1),
        (1280, 12, GgmlType::Q4_K, 5200, 3),
    ] {
        p.cu.gemv_tma = Some(glimmer_jetson::TmaGemv {
            item_rows,
            ..glimmer_jetson::TmaGemv::DEFAULT
        });
        for steal in [1u32, 2] {
            // Rounds: the ring's two, the static ones, then `steal` run-time rounds, and a
            // partial one (items of two rows with row-split teams).
            let per_item = if item_rows == 3 { 2 } else { 1 };
            let rows = (2 + 1 + steal as usize) * sms * rings * per_item + 37;
            let specs = [(ty, rows / 2), (GgmlType::Q6_K, rows - rows / 2)];
            let data = matrices(rng, &specs, cols, 0.05)?;
            let ts = tensors(&specs, &data, cols, id + 10 * steal);
            p.cu.upload(&ts).map_err(|e| e.to_string())?;
            let ws = ts.iter().collect::<Vec<_>>();
            p.cu.gemv_steal = steal;
            for round in 0..2 {
                let label = format!("matmul_many2_steal{steal}_{cols}_r{item_rows}_round{round}");
                let (ord, before) = (p.cu.grab_ordinal(), p.cu.gemv_steal_launches);
                ok &= check_matmul_many(p, rng, &ws, 1, &label)?;
                let n = p.cu.gemv_steal_launches - before;
                // The pass's first such launch runs statically, and so do those past the
                // counters (ops never starts a pass: its ordinals only grow).
                let want = u64::from(ord > 0 && ord < glimmer_jetson::GRAB_COUNTERS);
                if n != want {
                    println!("{label}: {n} launches with run-time items, expected {want}  FAIL");
                    ok = false;
                }
            }
        }
    }
    (p.cu.gemv_steal, p.cu.gemv_tma) = (steal_default, tma_default);
    Ok(ok)
}

/// Random weights for each `(type, rows)` of `specs`, `cols` wide (values up to `scale`).
fn matrices(
    rng: &mut Rng,
    specs: &[(GgmlType, usize)],
    cols: usize,
    scale: f32,
) -> Result<Vec<Vec<u8>>, String> {
    specs
        .iter()
        .map(|&(ty, n)| matrix(rng, ty, n, cols, scale))
        .collect()
}

/// The q8 norms (`rmsnorm`, the residual add + norm, the post-norm + add + norm) over
/// `cols`-wide rows (1 and 3) with `cl` blocks a cluster, each against the CPU and followed by
/// a Q4_K matmul reading its quantized output; every one must have run over a cluster.
/// Weights get ids `id0..id0 + 3`.
fn check_cluster_norms(
    p: &mut Pair,
    rng: &mut Rng,
    cols: usize,
    cl: u32,
    id0: u32,
) -> Result<bool, String> {
    let mut ok = true;
    let gain: Vec<f32> = (0..cols).map(|_| 1.0 + rng.normal(0.1)).collect();
    let post: Vec<f32> = (0..cols).map(|_| 1.0 + rng.normal(0.2)).collect();
    let wdata = matrix(rng, GgmlType::Q4_K, 64, cols, 0.1)?;
    let gt = Tensor {
        ty: GgmlType::F32,
        rows: 1,
        cols,
        data: bytemuck::cast_slice(&gain),
        id: id0,
    };
    let pt = Tensor {
        data: bytemuck::cast_slice(&post),
        id: id0 + 1,
        ..gt
    };
    let wt = Tensor {
        ty: GgmlType::Q4_K,
        rows: 64,
        cols,
        data: &wdata,
        id: id0 + 2,
    };
    p.cu.upload(&[gt, pt, wt]).map_err(|e| e.to_string())?;
    p.cu.norm_cluster = cl;
    for rows in [1usize, 3] {
        for kind in ["rmsnorm", "add_rmsnorm", "norm_add_rmsnorm"] {
            let xr = buf(A, rows * cols);
            let yr = buf(D, rows * cols);
            let nb = buf(B, rows * cols);
            let mo = buf(C, rows * 64);
            p.put(xr, &rng.vec(xr.len, 3.0))?;
            p.put(yr, &rng.vec(yr.len, 2.0))?;
            p.poison(nb)?;
            p.poison(mo)?;
            let before = p.cu.cluster_norms;
            p.run(|b| {
                match kind {
                    "rmsnorm" => b.b_rmsnorm(xr, Some(&gt), cols, nb)?,
                    "add_rmsnorm" => {
                        b.b_branch_norms(&branch_end(yr, xr, None, Some(&gt), cols, nb))?
                    }
                    _ => b.b_branch_norms(&branch_end(yr, xr, Some(&pt), Some(&gt), cols, nb))?,
                }
                b.b_matmul(&wt, nb, rows, mo)
            })?;
            let label = format!("{kind}_cluster{cl}_{cols}_rows{rows}");
            if kind == "norm_add_rmsnorm" {
                ok &= p.check(&format!("{label}_y"), yr, 1e-5)?;
            }
            if kind != "rmsnorm" {
                ok &= p.check(&format!("{label}_x"), xr, 1e-5)?;
            }
            ok &= p.check(&format!("{label}_out"), nb, 1e-5)?;
            ok &= p.check(
                &format!("{label}_then_matmul_q4_K"),
                mo,
                matmul_tol(GgmlType::Q4_K),
            )?;
            // Both sides ran the norm; the device's must have been one cluster launch.
            let n = p.cu.cluster_norms - before;
            if n != 1 {
                println!("{label}: {n} cluster norm launches  FAIL");
                ok = false;
            }
        }
    }
    Ok(ok)
}

/// The tensors over `data` (as [`matrices`] made it for `specs`), ids from `id0`.
fn tensors<'a>(
    specs: &[(GgmlType, usize)],
    data: &'a [Vec<u8>],
    cols: usize,
    id0: u32,
) -> Vec<Tensor<'a>> {
    specs
        .iter()
        .zip(data)
        .enumerate()
        .map(|(i, (&(ty, rows), d))| Tensor {
            ty,
            rows,
            cols,
            data: d,
            id: id0 + i as u32,
        })
        .collect()
}

/// Runs every check; returns whether all passed.
pub fn run(gpu: Arc<Gpu>, seed: u64) -> Result<bool, String> {
    let mut p = Pair::new(gpu)?;
    let mut rng = Rng::new(seed);
    let mut ok = true;

    // Matmul: every type, 1 row (decode) and 11 rows (8-row path plus 3 single rows); then
    // decode shapes for the one-row kernels' other launch shapes: many rows with one warp each
    // and an odd super-block count (Q6_K rows at 2 mod 4 bytes), and few wide rows split over
    // warp teams.
    // (2050, 1280): the several-rows-a-warp Q4_K/Q6_K kernels with a ragged last warp and
    // three activation rows.
    // (8200, 512): the one-row Q4_K/Q6_K kernels that stage the activations in shared memory.
    let shapes: [(usize, usize, &[usize]); 5] = [
        (100, 512, &[1, 11]),
        (4100, 768, &[1]),
        (300, 4096, &[1, 3]),
        (2050, 1280, &[1, 3]),
        (8200, 512, &[1, 3]),
    ];
    let mut id = 1000;
    for (n_out, cols, row_counts) in shapes {
        for &ty in TYPES.iter() {
            id += 1;
            ok &= check_matmul_rows(
                &mut p,
                &mut rng,
                ty,
                (n_out, cols),
                row_counts,
                id,
                false,
                |rows| {
                    if n_out == 100 {
                        format!("matmul_{}_rows{rows}", ty.name())
                    } else {
                        format!("matmul_{}_{n_out}x{cols}_rows{rows}", ty.name())
                    }
                },
            )?;
        }
    }

    // The tensor-core prefill GEMM (`prefill_mma`, compute capability 8.0 and later) for
    // every quantized type: its fewest rows (16), a ragged activation tile (37 = 32 + 5) and
    // a whole one (64, the chunk here), over a ragged weight tile (200 = 3 x 64 + 8); and for
    // the formats of 32-value blocks a column count whose last step is one sub-block (800 =
    // 3 x 256 + 32). Counted.
    if p.cu.gpu().compute_capability().0 >= 8 {
        let mma_default = p.cu.prefill_mma;
        p.cu.prefill_mma = true;
        for &ty in glimmer_jetson::GEMV_TYPES.iter() {
            let k_quant = matches!(ty, GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::Q6_K);
            let shapes: &[(usize, usize, &[usize])] = if k_quant {
                &[(200, 1280, &[16, 37, 64])]
            } else {
                &[(200, 1280, &[16, 37, 64]), (200, 800, &[37])]
            };
            for &(n_out, cols, row_counts) in shapes {
                id += 1;
                ok &= check_matmul_rows(
                    &mut p,
                    &mut rng,
                    ty,
                    (n_out, cols),
                    row_counts,
                    id,
                    true,
                    |rows| format!("matmul_mma_{}_{n_out}x{cols}_rows{rows}", ty.name()),
                )?;
            }
        }
        p.cu.prefill_mma = mma_default;
    }

    // Several matrices over one input (`matmul_many`): at fewer than eight rows the device
    // runs up to four Q4_K / Q6_K matrices in one launch. Odd row counts end a matrix in the
    // middle of a warp's row pair; Q6_K between Q4_K matrices switches type mid-grid. Each
    // launch variant (one launch a matrix, and the three register budgets) against the CPU.
    let cols = 1280;
    let specs = [
        (GgmlType::Q4_K, 1001),
        (GgmlType::Q4_K, 257),
        (GgmlType::Q6_K, 255),
        (GgmlType::Q4_K, 512),
    ];
    let data = matrices(&mut rng, &specs, cols, 0.1)?;
    let ts = tensors(&specs, &data, cols, 1900);
    p.cu.upload(&ts).map_err(|e| e.to_string())?;
    let multi_default = p.cu.gemv_multi;
    let prefetch_default = p.cu.gemv_prefetch;
    // The register kernels here; the bulk-copy ones (the default on sm_90) below.
    let tma_default = p.cu.gemv_tma;
    p.cu.gemv_tma = None;
    // (kernel, deep L2 prefetch): the prefetch changes no result, but its address walk must
    // stay inside the rows and must not disturb what the warps then compute.
    for (multi, pf) in [(0, 0), (2, 0), (2, 4096), (3, 0), (4, 0)] {
        p.cu.gemv_multi = multi;
        p.cu.gemv_prefetch = (u64::MAX, pf);
        // One matrix takes the multi kernel only when asked to.
        p.cu.gemv_multi_single = multi != 0;
        for (n_mats, rows) in [(4, 1), (4, 3), (2, 1), (3, 2), (1, 3)] {
            let ws: Vec<&Tensor<'_>> = ts[4 - n_mats..].iter().collect();
            let label = format!("matmul_many{n_mats}_multi{multi}_pf{pf}");
            ok &= check_matmul_many(&mut p, &mut rng, &ws, rows, &label)?;
        }
    }
    p.cu.gemv_multi = multi_default;
    p.cu.gemv_prefetch = prefetch_default;

    p.cu.gemv_multi_single = true;
    let q6: Vec<&Tensor<'_>> = ts.iter().filter(|t| t.ty == GgmlType::Q6_K).collect();

    // The bulk-copy multi-GEMVs (compute capability 9.0 and later; one row): the four mixed
    // matrices (odd row counts end a matrix inside an item; Q6_K between Q4_K switches type
    // from one item to the next), two of them, and the Q6_K one alone, under ring shapes
    // with two and one rows an item, two to four slots and 1 to 16 warps. Counted, so a
    // silent fallback fails.
    if p.cu.gpu().compute_capability().0 >= 9 {
        // (stages, warps, rows an item, team, items asked for before the wait (0: all), ring
        // slots (0: stages; deeper: a first fill beyond the steady depth, counted below)).
        for (stages, max_warps, item_rows, team, pre, ring) in [
            (2, 8, 0, 1, 0, 0),
            (2, 8, 1, 1, 1, 0),
            (3, 4, 2, 1, 0, 0),
            (4, 16, 1, 1, 2, 0),
            (2, 1, 2, 1, 0, 0),
            (2, 24, 1, 1, 0, 0),
            (2, 16, 1, 2, 0, 0),
            (2, 24, 1, 2, 0, 0),
            (3, 24, 1, 2, 1, 0),
            (3, 24, 1, 4, 0, 0),
            (2, 24, 2, 2, 0, 0),
            (2, 16, 2, 2, 1, 0),
            (2, 1, 2, 1, 0, 4),
            (2, 2, 1, 1, 0, 5),
            (3, 2, 1, 1, 0, 7),
            (2, 4, 1, 2, 1, 8),
            (2, 4, 1, 2, 0, 3),
            // Two rows an item, a row a warp of each team of two (gemv_k_multi_tma2_rs).
            (2, 24, 3, 2, 0, 0),
            (2, 16, 3, 2, 1, 0),
            (2, 4, 3, 2, 0, 0),
        ] {
            p.cu.gemv_tma = Some(glimmer_jetson::TmaGemv {
                stages,
                max_warps,
                item_rows,
                min_warps: 1,
                team,
                pre,
                wide: false,
                ring,
            });
            for ws in [
                &ts.iter().collect::<Vec<_>>()[..],
                &ts.iter().collect::<Vec<_>>()[1..3],
                &q6[..],
            ] {
                let label = format!(
                    "matmul_many{}_tma{stages}x{max_warps}r{item_rows}t{team}p{pre}s{ring}",
                    ws.len()
                );
                let before = p.cu.gemv_tma_launches;
                let deep_before = p.cu.gemv_tma_deep_launches;
                let split_before = p.cu.gemv_tma_rowsplit_launches;
                ok &= check_matmul_many(&mut p, &mut rng, ws, 1, &label)?;
                if p.cu.gemv_tma_launches != before + 1 {
                    println!("{label}: the bulk-copy kernel did not run  FAIL");
                    ok = false;
                }
                let deep = p.cu.gemv_tma_deep_launches - deep_before;
                if deep != u64::from(ring > stages) {
                    println!("{label}: {deep} launches with a deeper first ring  FAIL");
                    ok = false;
                }
                let split = p.cu.gemv_tma_rowsplit_launches - split_before;
                if split != u64::from(item_rows == 3) {
                    println!("{label}: {split} launches with a row a warp  FAIL");
                    ok = false;
                }
            }
        }
        // Teams of four where teams of two would leave half the warps idle (`wide`): rows as
        // long as the 30B shape's FFN down (Q6_K, 19 968 columns: six rings of two slots),
        // alone and after a Q4_K matrix of the same width. Counted.
        let cols = 19968;
        let wide_specs = [(GgmlType::Q6_K, 45), (GgmlType::Q4_K, 13)];
        let wide_data = matrices(&mut rng, &wide_specs, cols, 0.05)?;
        let wide_ts = tensors(&wide_specs, &wide_data, cols, 1950);
        p.cu.upload(&wide_ts).map_err(|e| e.to_string())?;
        p.cu.gemv_tma = Some(glimmer_jetson::TmaGemv {
            wide: true,
            ..glimmer_jetson::TmaGemv::DEFAULT
        });
        for ws in [&wide_ts.iter().collect::<Vec<_>>()[..], &[&wide_ts[0]][..]] {
            let label = format!("matmul_many{}_tma_wide_{cols}", ws.len());
            let before = p.cu.gemv_tma_wide_launches;
            ok &= check_matmul_many(&mut p, &mut rng, ws, 1, &label)?;
            if p.cu.gemv_tma_wide_launches != before + 1 {
                println!("{label}: the teams-of-four kernel did not run  FAIL");
                ok = false;
            }
        }
    }
    p.cu.gemv_tma = tma_default;
    if p.cu.gpu().compute_capability().0 >= 9 {
        ok &= check_steal(&mut p, &mut rng)?;
    }
    p.cu.gemv_multi_single = false;

    // Embedding rows and the rest: 512 wide.
    let cols = 512;

    // Embedding rows of every type.
    for (i, &ty) in TYPES.iter().enumerate() {
        let data = matrix(&mut rng, ty, 40, cols, 0.5)?;
        let t = Tensor {
            ty,
            rows: 40,
            cols,
            data: &data,
            id: 2000 + i as u32,
        };
        p.cu.upload(&[t]).map_err(|e| e.to_string())?;
        let tokens = [3u32, 17, 39, 0, 25];
        let out = buf(A, tokens.len() * cols);
        p.poison(out)?;
        p.run(|b| b.b_embed(&t, &tokens, out))?;
        ok &= p.check(&format!("embed_{}", ty.name()), out, 1e-6)?;
    }

    // The one-block norms first (the default on sm_90 spreads wide q8 norms over a cluster,
    // checked after these).
    let cluster_default = p.cu.norm_cluster;
    p.cu.norm_cluster = 0;
    // RMSNorm with a gain (out of place) and without (in place).
    let gain: Vec<f32> = (0..cols).map(|_| 1.0 + rng.normal(0.1)).collect();
    let gt = Tensor {
        ty: GgmlType::F32,
        rows: 1,
        cols,
        data: bytemuck::cast_slice(&gain),
        id: 3000,
    };
    p.cu.upload(&[gt]).map_err(|e| e.to_string())?;
    let x = buf(A, 7 * cols);
    let xv = rng.vec(x.len, 3.0);
    p.put(x, &xv)?;
    p.poison(buf(B, x.len))?;
    p.run(|b| b.b_rmsnorm(x, Some(&gt), cols, buf(B, x.len)))?;
    ok &= p.check("rmsnorm_f32_gain", buf(B, x.len), 1e-5)?;
    // A 512-wide norm also quantizes its output for the next matmul (one launch): a matmul
    // straight after it reads that quantization.
    let wdata = matrix(&mut rng, GgmlType::Q4_K, 96, cols, 0.1)?;
    let wt = Tensor {
        ty: GgmlType::Q4_K,
        rows: 96,
        cols,
        data: &wdata,
        id: 3001,
    };
    p.cu.upload(&[wt]).map_err(|e| e.to_string())?;
    for rows in [1usize, 7] {
        let xr = buf(A, rows * cols);
        let nb = buf(B, rows * cols);
        let mo = buf(C, rows * 96);
        p.poison(nb)?;
        p.poison(mo)?;
        p.run(|b| {
            b.b_rmsnorm(xr, Some(&gt), cols, nb)?;
            b.b_matmul(&wt, nb, rows, mo)
        })?;
        ok &= p.check(
            &format!("rmsnorm_then_matmul_q4_K_rows{rows}"),
            mo,
            matmul_tol(GgmlType::Q4_K),
        )?;
    }
    // The residual add and the next norm in one launch (the CPU runs `add` then `rmsnorm`):
    // x itself (the add, exact) and the norm, with and without the q8_1 output a matmul then
    // reads.
    for rows in [1usize, 7] {
        let xr = buf(A, rows * cols);
        let yr = buf(D, rows * cols);
        let nb = buf(B, rows * cols);
        let mo = buf(C, rows * 96);
        let yv = rng.vec(yr.len, 1.0);
        p.put(xr, &xv[..xr.len])?;
        p.put(yr, &yv)?;
        p.poison(nb)?;
        p.poison(mo)?;
        p.run(|b| {
            b.b_branch_norms(&branch_end(yr, xr, None, Some(&gt), cols, nb))?;
            b.b_matmul(&wt, nb, rows, mo)
        })?;
        ok &= p.check(&format!("add_rmsnorm_x_rows{rows}"), xr, 0.0)?;
        ok &= p.check(&format!("add_rmsnorm_out_rows{rows}"), nb, 1e-5)?;
        ok &= p.check(
            &format!("add_rmsnorm_then_matmul_q4_K_rows{rows}"),
            mo,
            matmul_tol(GgmlType::Q4_K),
        )?;
    }
    // The branch's post-norm, the residual add and the next norm in one launch (the CPU runs
    // `rmsnorm` on y, then `add` and `rmsnorm`): y, x, the norm, and a matmul reading the
    // fused q8_1 output.
    let post: Vec<f32> = (0..cols).map(|_| 1.0 + rng.normal(0.2)).collect();
    let pt = Tensor {
        ty: GgmlType::F32,
        rows: 1,
        cols,
        data: bytemuck::cast_slice(&post),
        id: 3002,
    };
    p.cu.upload(&[pt]).map_err(|e| e.to_string())?;
    for rows in [1usize, 7] {
        let xr = buf(A, rows * cols);
        let yr = buf(D, rows * cols);
        let nb = buf(B, rows * cols);
        let mo = buf(C, rows * 96);
        p.put(xr, &xv[..xr.len])?;
        p.put(yr, &rng.vec(yr.len, 2.0))?;
        p.poison(nb)?;
        p.poison(mo)?;
        p.run(|b| {
            b.b_branch_norms(&branch_end(yr, xr, Some(&pt), Some(&gt), cols, nb))?;
            b.b_matmul(&wt, nb, rows, mo)
        })?;
        ok &= p.check(&format!("norm_add_rmsnorm_y_rows{rows}"), yr, 1e-5)?;
        ok &= p.check(&format!("norm_add_rmsnorm_x_rows{rows}"), xr, 1e-5)?;
        ok &= p.check(&format!("norm_add_rmsnorm_out_rows{rows}"), nb, 1e-5)?;
        ok &= p.check(
            &format!("norm_add_rmsnorm_then_matmul_q4_K_rows{rows}"),
            mo,
            matmul_tol(GgmlType::Q4_K),
        )?;
    }
    // The same three norms over thread-block clusters (sm_90): the 512-wide rows under every
    // cluster size, and the 30B shape's 6656-wide rows under 8 and 16 (832 and 416 values a
    // block). Counted, so a silent fallback to the one-block kernels fails.
    if p.cu.gpu().compute_capability().0 >= 9 {
        for (width, sizes, id0) in [
            (512usize, &[2u32, 4, 8, 16][..], 3100u32),
            (6656, &[8, 16][..], 3200),
        ] {
            // Fresh weight ids for each call: an id already uploaded keeps its first data.
            for &cl in sizes {
                ok &= check_cluster_norms(&mut p, &mut rng, width, cl, id0 + 4 * cl)?;
            }
        }
    }
    p.cu.norm_cluster = cluster_default;
    // Gate and up with the activation, which also quantizes its output for the down matmul
    // that follows (as the FFN runs): the activation and the down projection.
    let ff = 1024;
    let gdata = matrix(&mut rng, GgmlType::Q4_K, ff, cols, 0.1)?;
    let udata = matrix(&mut rng, GgmlType::Q4_K, ff, cols, 0.1)?;
    let ddata = matrix(&mut rng, GgmlType::Q6_K, cols, ff, 0.1)?;
    let wg = Tensor {
        ty: GgmlType::Q4_K,
        rows: ff,
        cols,
        data: &gdata,
        id: 3003,
    };
    let wu = Tensor {
        data: &udata,
        id: 3004,
        ..wg
    };
    let wd = Tensor {
        ty: GgmlType::Q6_K,
        rows: cols,
        cols: ff,
        data: &ddata,
        id: 3005,
    };
    p.cu.upload(&[wg, wu, wd]).map_err(|e| e.to_string())?;
    for (act, aname) in [(Activation::Silu, "silu"), (Activation::GeluTanh, "gelu")] {
        for rows in [1usize, 3] {
            let xr = buf(A, rows * cols);
            let (g, u) = (buf(B, rows * ff), buf(C, rows * ff));
            let down = buf(D, rows * cols);
            p.put(xr, &rng.vec(xr.len, 1.0))?;
            p.poison(g)?;
            p.poison(down)?;
            p.run(|b| {
                b.b_matmul_gated(&wg, &wu, xr, rows, g, u, act)?;
                b.b_matmul(&wd, g, rows, down)
            })?;
            let tol = matmul_tol(GgmlType::Q4_K);
            ok &= p.check(&format!("matmul_gated_{aname}_rows{rows}"), g, tol)?;
            ok &= p.check(
                &format!("matmul_gated_{aname}_then_down_rows{rows}"),
                down,
                tol,
            )?;
        }
    }
    // A branch's output projection and the norms after it (`matmul_add_rmsnorm`; the CPU runs
    // the matmul, then `branch_norms`). At one row the CUDA backend runs
    // the norms fused with the GEMV, three ways (`gemv_k_multi_norm`; `gemv_k_multi_sums` and
    // `norm_sums_q8_f32`; `gemv_k_multi_gridnorm`; counted, so a silent fallback fails); at three rows, a matmul
    // and a norm launch. y, x, the norm, and a matmul reading the fused q8_1 output; run back
    // to back, so a ticket counter left set by one launch fails the next.
    let odata = matrix(&mut rng, GgmlType::Q4_K, cols, ff, 0.1)?;
    let wo = Tensor {
        ty: GgmlType::Q4_K,
        rows: cols,
        cols: ff,
        data: &odata,
        id: 3006,
    };
    p.cu.upload(&[wo]).map_err(|e| e.to_string())?;
    let fuse_default = p.cu.fuse_norm;
    let tma_default = p.cu.gemv_tma;
    // The register kernels' three forms, then (sm_90) the grid-barrier norm in the bulk-copy
    // kernel with one row an item (`gemv_k_multi_tma1_t2_gridnorm`) and two
    // (`gemv_k_multi_tma2_t2_gridnorm`: both matrices here take two-row slots; counted too).
    let mut modes = vec![
        (NormFusion::Tail, "tail", None),
        (NormFusion::Split, "split", None),
        (NormFusion::Grid, "grid", None),
    ];
    if p.cu.gpu().compute_capability().0 >= 9 {
        modes.push((
            NormFusion::Grid,
            "gridtma",
            Some(glimmer_jetson::TmaGemv::DEFAULT),
        ));
        modes.push((
            NormFusion::Grid,
            "gridtma2",
            Some(glimmer_jetson::TmaGemv::TWO_ROWS),
        ));
    }
    for (mode, mname, tma) in modes {
        p.cu.fuse_norm = mode;
        p.cu.gemv_tma = tma;
        for (w, wname) in [(&wo, "q4_K"), (&wd, "q6_K")] {
            for post in [None, Some(&pt)] {
                for rows in [1usize, 3, 1] {
                    let a = buf(A, rows * ff);
                    let y = buf(B, rows * cols);
                    let xr = buf(C, rows * cols);
                    let nb = buf(D, rows * cols);
                    let mo = buf(S, rows * 96);
                    p.put(a, &rng.vec(a.len, 1.0))?;
                    p.put(xr, &rng.vec(xr.len, 1.0))?;
                    p.poison(y)?;
                    p.poison(nb)?;
                    p.poison(mo)?;
                    let before = p.cu.fused_norms;
                    let tma_before = p.cu.gemv_tma_launches;
                    let norm2_before = p.cu.gemv_tma_fused2_launches;
                    let e = branch_end(y, xr, post, Some(&gt), w.rows, nb);
                    p.run(|b| b.b_matmul_add_rmsnorm(w, a, rows, &e))?;
                    let tma_launches = p.cu.gemv_tma_launches - tma_before;
                    let norm2 = p.cu.gemv_tma_fused2_launches - norm2_before;
                    let want_norm2 = u64::from(mname == "gridtma2" && rows == 1);
                    if norm2 != want_norm2 {
                        println!(
                            "matmul_add_rmsnorm_{mname}_{wname}_rows{rows}: {norm2} two-row grid-norm launches, expected {want_norm2}  FAIL"
                        );
                        ok = false;
                    }
                    p.run(|b| b.b_matmul(&wt, nb, rows, mo))?;
                    let fused = p.cu.fused_norms - before;
                    let want = u64::from(rows == 1);
                    let want_tma = if tma.is_some() { want } else { 0 };
                    if tma_launches != want_tma {
                        println!(
                            "matmul_add_rmsnorm_{mname}_{wname}_rows{rows}: {tma_launches} bulk-copy launches, expected {want_tma}  FAIL"
                        );
                        ok = false;
                    }
                    let name = format!(
                        "matmul_{}add_rmsnorm_{mname}_{wname}_rows{rows}",
                        if post.is_some() { "norm_" } else { "" }
                    );
                    if fused != want {
                        println!("{name}: {fused} fused launches, expected {want}  FAIL");
                        ok = false;
                    }
                    let tol = matmul_tol(w.ty);
                    ok &= p.check(&format!("{name}_y"), y, tol)?;
                    ok &= p.check(&format!("{name}_x"), xr, tol)?;
                    ok &= p.check(&format!("{name}_out"), nb, tol)?;
                    ok &= p.check(&format!("{name}_then_matmul"), mo, tol)?;
                }
            }
        }
    }
    p.cu.fuse_norm = fuse_default;
    // One matrix takes the multi-GEMV kernels again, as by default (the checks above ran the
    // one-matrix kernels).
    p.cu.gemv_multi_single = true;
    // Each bulk-copy launch asking L2 for the next launch's first weights
    // (`GLIMMER_GEMV_NEXT`): the same results, twice over (the second round with the
    // successors the first learned; counted), on sm_90.
    if p.cu.gpu().compute_capability().0 >= 9 {
        let next_default = p.cu.gemv_next_bytes;
        p.cu.gemv_next_bytes = 1 << 20;
        p.cu.gemv_tma = Some(glimmer_jetson::TmaGemv::DEFAULT);
        for round in 0..2 {
            for (w, wname) in [(&wo, "q4_K"), (&wd, "q6_K")] {
                let (a, y, mo) = (buf(A, ff), buf(B, cols), buf(S, 96));
                p.put(a, &rng.vec(a.len, 1.0))?;
                p.poison(y)?;
                p.poison(mo)?;
                let before = p.cu.gemv_tma_launches;
                p.run(|b| {
                    b.b_matmul(w, a, 1, y)?;
                    b.b_matmul(&wt, y, 1, mo)
                })?;
                let launches = p.cu.gemv_tma_launches - before;
                let name = format!("gemv_next_round{round}_{wname}");
                if launches != 2 || (round == 1 && p.cu.gemv_next_known() < 2) {
                    println!(
                        "{name}: {launches} bulk-copy launches, {} successors known  FAIL",
                        p.cu.gemv_next_known()
                    );
                    ok = false;
                }
                let tol = matmul_tol(w.ty);
                ok &= p.check(&format!("{name}_y"), y, tol)?;
                ok &= p.check(&format!("{name}_then_matmul"), mo, tol)?;
            }
        }
        p.cu.gemv_next_bytes = next_default;
    }
    // A branch end's norms deferred into the next bulk-copy GEMV (`NormFusion::Pre`,
    // `gemv_k_multi_tma1_t2_prenorm`, sm_90): the projection then a `matmul_many` of two
    // matrices over the norm's output, which takes the norms (counted); and the projection
    // alone, whose norms then run as their own launch before the read (counted: none taken).
    // y, x, the norm's output and the matmuls against the CPU's separate ops.
    if p.cu.gpu().compute_capability().0 >= 9 {
        p.cu.fuse_norm = NormFusion::Pre;
        p.cu.gemv_tma = Some(glimmer_jetson::TmaGemv::DEFAULT);
        for (w, wname) in [(&wo, "q4_K"), (&wd, "q6_K")] {
            for post in [None, Some(&pt)] {
                for take in [true, false, true] {
                    let (a, y, xr, nb) = (buf(A, ff), buf(B, cols), buf(C, cols), buf(D, cols));
                    let (m0, m1) = (buf(S, 96), buf(S + 96, 96));
                    p.put(a, &rng.vec(a.len, 1.0))?;
                    p.put(xr, &rng.vec(xr.len, 1.0))?;
                    for r in [y, nb, m0, m1] {
                        p.poison(r)?;
                    }
                    let before = p.cu.deferred_norms;
                    let e = branch_end(y, xr, post, Some(&gt), w.rows, nb);
                    p.run(|b| {
                        b.b_matmul_add_rmsnorm(w, a, 1, &e)?;
                        match take {
                            true => b.b_matmul_many(&[&wt, &wt], nb, 1, &[m0, m1]),
                            false => Ok(()),
                        }
                    })?;
                    let taken = p.cu.deferred_norms - before;
                    let name = format!(
                        "prenorm_{}{wname}_{}",
                        if post.is_some() { "post_" } else { "" },
                        if take { "taken" } else { "flushed" }
                    );
                    if taken != u64::from(take) {
                        println!(
                            "{name}: {taken} deferred norms taken, expected {}  FAIL",
                            u64::from(take)
                        );
                        ok = false;
                    }
                    let tol = matmul_tol(w.ty);
                    ok &= p.check(&format!("{name}_y"), y, tol)?;
                    ok &= p.check(&format!("{name}_x"), xr, tol)?;
                    ok &= p.check(&format!("{name}_out"), nb, tol)?;
                    if take {
                        ok &= p.check(&format!("{name}_matmul0"), m0, tol)?;
                        ok &= p.check(&format!("{name}_matmul1"), m1, tol)?;
                    }
                }
            }
        }
        p.cu.fuse_norm = fuse_default;
    }
    p.cu.gemv_tma = tma_default;
    p.put(x, &xv)?;
    p.run(|b| b.b_rmsnorm(x, None, cols, x))?;
    ok &= p.check("rmsnorm_f32_inplace", x, 1e-5)?;

    // RoPE, both styles, full and partial rotary width, positions up to 4095.
    let pos = [0u32, 1, 77, 1000, 4095];
    for (style, sname) in [
        (RopeStyle::Interleaved, "interleaved"),
        (RopeStyle::HalfSplit, "halfsplit"),
    ] {
        for rope_dim in [HEAD, HEAD / 2] {
            let x = buf(A, pos.len() * N_HEAD * HEAD);
            let xv = rng.vec(x.len, 1.0);
            p.put(x, &xv)?;
            p.run(|b| b.b_rope(x, &pos, rope_dim, style))?;
            ok &= p.check(&format!("rope_{sname}_dim{rope_dim}"), x, 1e-4)?;
        }
    }

    // Element-wise ops.
    let n = 3001;
    for (act, name, tol) in [
        (Activation::Silu, "gated_silu", 1e-5),
        (Activation::GeluTanh, "gated_gelu_tanh", 2e-3),
    ] {
        let (g, u) = (buf(A, n), buf(B, n));
        p.put(g, &rng.vec(n, 3.0))?;
        p.put(u, &rng.vec(n, 1.0))?;
        p.run(|b| b.b_gated(g, u, act))?;
        ok &= p.check(name, g, tol)?;
    }
    let (x, y) = (buf(A, n), buf(B, n));
    p.put(x, &rng.vec(n, 2.0))?;
    p.put(y, &rng.vec(n, 3.0))?;
    p.run(|b| b.b_sigmoid_mul(x, y))?;
    ok &= p.check("sigmoid_mul_f32", x, 1e-5)?;
    p.put(x, &rng.vec(n, 60.0))?;
    p.run(|b| b.b_softcap(x))?;
    ok &= p.check("softcap_f32", x, 1e-5)?;
    p.put(x, &rng.vec(n, 1.0))?;
    p.run(|b| b.b_add(x, y))?;
    ok &= p.check("add_f32", x, 1e-6)?;
    p.run(|b| b.b_scale(x))?;
    ok &= p.check("scale_f32", x, 1e-6)?;

    ok &= attention(&mut p, &mut rng)?;

    // Argmax on the device: random rows (5 000, and the 30B shape's 202 048 logits, the
    // launch's most blocks), the largest value only in the last element, two equal largest
    // values in different blocks (the lower index wins) and NaNs beside the largest.
    let mut cases: Vec<(&str, Vec<f32>)> = vec![
        ("random 5000", rng.vec(5000, 1.0)),
        ("random 202048", rng.vec(202_048, 1.0)),
    ];
    let mut last = rng.vec(202_048, 1.0);
    last[202_047] = 100.0;
    cases.push(("largest last", last));
    let mut tie = rng.vec(202_048, 1.0);
    tie[150_001] = 50.0;
    tie[7_003] = 50.0;
    cases.push(("tie across blocks", tie));
    let mut nan = rng.vec(9000, 1.0);
    nan[10] = f32::NAN;
    nan[8999] = f32::NAN;
    nan[4321] = 20.0;
    cases.push(("NaNs", nan));
    for (what, v) in &cases {
        let n = v.len();
        p.put(buf(A, n), v)?;
        let g = p.cu.argmax(buf(A, n)).map_err(|e| e.to_string())? as usize;
        let c = argmax(v);
        ok &= verdict(
            "argmax_f32",
            &format!("{what}: cpu {c} gpu {g}"),
            &format!("argmax_f32 {what}|{}|exact", u8::from(g != c)),
            g == c,
        );
    }
    ok &= sampling(&mut p, &mut rng)?;
    Ok(ok)
}

/// `sample_f32` (a Gumbel-max draw on the device, `glimmer_jetson::sample`) against its host
/// twin, and its draws' frequencies against the softmax itself.
///
/// - Each draw over random logits (5 000, and 202 048 as the 30B shape's vocabulary, so the
///   launch has its most blocks) at three temperatures: the device's token must have the
///   best Gumbel-perturbed score the host computes in `f64`, within the `f32` rounding of the
///   device's own scores (`2e-5 · (1 + |best|)`); how many are the host's very index is printed.
/// - 20 000 draws over six logits at T = 0.8: chi-square of the counts against
///   softmax(x / T) below 30 (five degrees of freedom: a correct sampler exceeds it with
///   probability < 2e-5).
/// - A temperature of 0 picks greedily (the argmax).
fn sampling(p: &mut Pair, rng: &mut Rng) -> Result<bool, String> {
    use glimmer_jetson::sample::{draw_shortfall, host_scores, softmax_chi2};
    let mut ok = true;
    for n in [5000usize, 202_048] {
        let v = rng.vec(n, 4.0);
        p.put(buf(A, n), &v)?;
        let (mut draws, mut same, mut worst) = (0, 0, 0.0f64);
        for t in [0.7f32, 1.0, 1.6] {
            for c in 0..40u64 {
                let seed = 0x5eed + n as u64;
                let g =
                    p.cu.sample(buf(A, n), t, seed, c)
                        .map_err(|e| e.to_string())? as usize;
                let (best, scores) = host_scores(&v, t, seed, c);
                worst = worst.max(draw_shortfall(&scores, best, g));
                draws += 1;
                same += usize::from(g == best);
            }
        }
        ok &= verdict(
            "sample_f32",
            &format!(
                "n {n}: {same}/{draws} the host's index, worst score shortfall {worst:.1e} (rel)"
            ),
            &format!("sample_f32 n={n}|{worst:.3e}|2e-5"),
            worst <= 2e-5,
        );
    }
    // Frequencies against the softmax.
    let x = [0.0f32, 0.5, 1.0, -1.0, 2.0, 0.2];
    let t = 0.8f32;
    p.put(buf(A, x.len()), &x)?;
    let mut counts = [0u32; 6];
    let n = 20_000u64;
    for c in 0..n {
        let g =
            p.cu.sample(buf(A, x.len()), t, 9, c)
                .map_err(|e| e.to_string())? as usize;
        let Some(k) = counts.get_mut(g) else {
            println!(
                "{:<34} draw {c}: index {g} of 6 logits  FAIL",
                "sample_f32 softmax"
            );
            return Ok(false);
        };
        *k += 1;
    }
    let chi2 = softmax_chi2(&x, t, &counts);
    ok &= verdict(
        "sample_f32 softmax",
        &format!("20000 draws over 6 logits, T 0.8: chi2 {chi2:.2} (counts {counts:?})"),
        &format!("sample_f32 softmax|{chi2:.3}|30"),
        chi2 < 30.0,
    );
    // Greedy at temperature 0.
    let v = rng.vec(3000, 1.0);
    p.put(buf(A, v.len()), &v)?;
    let g =
        p.cu.sample(buf(A, v.len()), 0.0, 1, 1)
            .map_err(|e| e.to_string())? as usize;
    let c = argmax(&v);
    ok &= verdict(
        "sample_f32 greedy",
        &format!("T 0: {g} against the argmax {c}"),
        &format!("sample_f32 greedy|{}|exact", u8::from(g != c)),
        g == c,
    );
    Ok(ok)
}

/// The most keys a query at `pos` sees: up to and including the last position, at most
/// `window` of them on a sliding layer.
fn visible_keys(pos: &[u32], window: Option<u32>) -> u32 {
    let seen = pos.iter().max().map_or(0, |&m| m + 1);
    window.map_or(seen, |w| seen.min(w))
}

/// KV store and attention over a global and a sliding (ring) layer, decode (split-K) and
/// prefill, with the device reading KV slot 1 after slot 0 was filled with other data.
fn attention(p: &mut Pair, rng: &mut Rng) -> Result<bool, String> {
    let kd = N_HEAD_KV * HEAD;
    let n_pos = 200usize;
    let step = 40usize;
    // Decoy data in device slot 0, so reading the wrong slot shows.
    for layer in 0..2 {
        for start in (0..n_pos).step_by(step) {
            let pos: Vec<u32> = (start as u32..(start + step) as u32).collect();
            let (k, v) = (buf(A, step * kd), buf(B, step * kd));
            p.cu.write(k, &rng.vec(k.len, 1.0))
                .map_err(|e| e.to_string())?;
            p.cu.write(v, &rng.vec(v.len, 1.0))
                .map_err(|e| e.to_string())?;
            p.cu.kv_store(layer, k, v, &pos)
                .map_err(|e| e.to_string())?;
        }
    }
    p.cu.select_slot(1).map_err(|e| e.to_string())?;
    for layer in 0..2 {
        for start in (0..n_pos).step_by(step) {
            let pos: Vec<u32> = (start as u32..(start + step) as u32).collect();
            let (k, v) = (buf(A, step * kd), buf(B, step * kd));
            p.put(k, &rng.vec(k.len, 1.0))?;
            p.put(v, &rng.vec(v.len, 1.0))?;
            p.run(|b| b.b_kv_store(layer, k, v, &pos))?;
        }
    }
    let mut ok = true;
    let cases: [(&str, usize, Option<u32>, Vec<u32>); 5] = [
        ("attn_decode_global_pos199", 0, None, vec![199]),
        ("attn_decode_global_pos5", 0, None, vec![5]),
        ("attn_decode_sliding_pos199", 1, Some(WINDOW), vec![199]),
        ("attn_prefill_global_16rows", 0, None, (184..200).collect()),
        (
            "attn_prefill_sliding_16rows",
            1,
            Some(WINDOW),
            (184..200).collect(),
        ),
    ];
    // Decode over clusters of 16, 4 and 2 blocks a head (attn_split_cl: HEAD / 32 = 2 blocks
    // merge) and without (attn_split's splits and ticket), counted; prefill never clusters.
    let cluster_default = (p.cu.attn_cluster, p.cu.attn_cluster_keys);
    let sm90 = p.cu.gpu().compute_capability().0 >= 9;
    for (name, layer, window, pos) in cases {
        let prm = attn_params(layer, window);
        let q = buf(C, pos.len() * N_HEAD * HEAD);
        let out = buf(D, pos.len() * N_HEAD * HEAD);
        p.put(q, &rng.vec(q.len, 1.0))?;
        // (cluster size, most keys a cluster takes, in-launch): global pos199 has 200 keys,
        // so at 64 the host launches attn_split (the sliding layer's 16 keys still cluster),
        // unless the launch is told its rows fit (as a captured graph's are), when it takes
        // attn_split_cl's long-row path (attn_split's splits in that launch).
        let visible = visible_keys(&pos, window);
        let sizes: &[(u32, u32, bool)] = if pos.len() == 1 {
            &[
                (16, KEYS, false),
                (4, KEYS, false),
                (2, KEYS, false),
                (16, 64, false),
                (16, 64, true),
                (0, KEYS, false),
            ]
        } else {
            &[(16, KEYS, false)]
        };
        for &(cl, keys, inlaunch) in sizes {
            p.cu.attn_cluster = cl;
            p.cu.attn_cluster_keys = keys;
            p.cu.set_graph_keys(inlaunch.then_some(keys));
            let before = p.cu.cluster_attns;
            p.poison(out)?;
            let r = p.run(|b| b.b_attention(&prm, q, &pos, out));
            p.cu.set_graph_keys(None);
            r?;
            let tag = match (pos.len(), cl, keys, inlaunch) {
                (1, 0, _, _) => format!("{name}_splits"),
                (1, _, KEYS, _) => format!("{name}_cluster{cl}"),
                (1, _, _, false) => format!("{name}_cluster{cl}_keys{keys}"),
                (1, _, _, true) => format!("{name}_cluster{cl}_keys{keys}_inlaunch"),
                _ => name.to_owned(),
            };
            let want =
                u64::from(pos.len() == 1 && cl >= 2 && sm90 && (inlaunch || visible <= keys));
            if p.cu.cluster_attns - before != want {
                println!(
                    "{tag}: {} cluster attention launches, expected {want}  FAIL",
                    p.cu.cluster_attns - before
                );
                ok = false;
            }
            ok &= p.check(&tag, out, ATTN_TOL)?;
        }
    }
    p.cu.attn_cluster = cluster_default.0;
    p.cu.attn_cluster_keys = cluster_default.1;

    // The Q/K norms, RoPE and the KV store in one call, on both layers, then attention over
    // what it stored: with per-head norms (gains) and partial half-split RoPE, and with
    // neither (a NoPE layer without norms). Then gated attention, whose output a matmul reads
    // (the device quantizes it in the combine).
    let qgain: Vec<f32> = (0..HEAD).map(|_| 1.0 + rng.normal(0.2)).collect();
    let kgain: Vec<f32> = (0..HEAD).map(|_| 1.0 + rng.normal(0.2)).collect();
    let qt = Tensor {
        ty: GgmlType::F32,
        rows: 1,
        cols: HEAD,
        data: bytemuck::cast_slice(&qgain),
        id: 4000,
    };
    let kt = Tensor {
        id: 4001,
        data: bytemuck::cast_slice(&kgain),
        ..qt
    };
    p.cu.upload(&[qt, kt]).map_err(|e| e.to_string())?;
    let wo_data = matrix(rng, GgmlType::Q4_K, 256, N_HEAD * HEAD, 0.1)?;
    let wo = Tensor {
        ty: GgmlType::Q4_K,
        rows: 256,
        cols: N_HEAD * HEAD,
        data: &wo_data,
        id: 4002,
    };
    p.cu.upload(&[wo]).map_err(|e| e.to_string())?;
    for (case, with) in [("normed_rope", true), ("plain", false)] {
        for (layer, window) in [(0usize, None), (1, Some(WINDOW))] {
            // Positions 200..217 (each case rewrites them, on the CPU and the device alike).
            let mut start = n_pos as u32;
            for rows in [16usize, 1] {
                let pos: Vec<u32> = (start..start + rows as u32).collect();
                start += rows as u32;
                let prep = qk_prep(layer, with, &qt, &kt);
                let (q, k, v) = (
                    buf(A, rows * N_HEAD * HEAD),
                    buf(B, rows * kd),
                    buf(C, rows * kd),
                );
                p.put(q, &rng.vec(q.len, 2.0))?;
                p.put(k, &rng.vec(k.len, 2.0))?;
                p.put(v, &rng.vec(v.len, 1.0))?;
                p.run(|b| b.b_attn_inputs(&prep, q, k, v, &pos))?;
                let tag = format!("attn_inputs_{case}_layer{layer}_rows{rows}");
                ok &= p.check(&format!("{tag}_q"), q, 1e-4)?;
                ok &= p.check(&format!("{tag}_k"), k, 1e-4)?;
                let prm = attn_params(layer, window);
                let out = buf(D, rows * N_HEAD * HEAD);
                // k is in the cache now: its region is free for the gate.
                let gate = buf(B, out.len);
                p.put(gate, &rng.vec(gate.len, 2.0))?;
                // At one row also over clusters (attn_split_cl), short rows (merged in the
                // cluster) and, with a threshold below these rows' keys, long ones: attn_split
                // launched for the global layer (the sliding one's 16 keys still cluster), or
                // attn_split's splits in the cluster launch when it is told the rows fit.
                let variants: &[(&str, u32, u32, bool)] = match rows {
                    1 => &[
                        ("", 0, KEYS, false),
                        ("_cluster", 16, KEYS, false),
                        ("_cluster_long", 16, 64, false),
                        ("_cluster_inlaunch", 16, 64, true),
                    ],
                    _ => &[("", 0, KEYS, false)],
                };
                for &(suffix, cl, keys, inlaunch) in variants {
                    let saved = (p.cu.attn_cluster, p.cu.attn_cluster_keys);
                    (p.cu.attn_cluster, p.cu.attn_cluster_keys) = (cl, keys);
                    p.cu.set_graph_keys(inlaunch.then_some(keys));
                    let before = p.cu.cluster_attns;
                    let tag = format!("{tag}{suffix}");
                    p.poison(out)?;
                    p.run(|b| b.b_attention(&prm, q, &pos, out))?;
                    ok &= p.check(&format!("{tag}_attention"), out, ATTN_TOL)?;
                    // Gated, then the output projection reading the combine's quantization.
                    let proj = buf(C, rows * 256);
                    p.poison(out)?;
                    p.poison(proj)?;
                    p.run(|b| {
                        b.b_attention_gated(&prm, q, &pos, gate, out)?;
                        b.b_matmul(&wo, out, rows, proj)
                    })?;
                    ok &= p.check(&format!("{tag}_attention_gated"), out, ATTN_TOL)?;
                    ok &= p.check(
                        &format!("{tag}_attention_gated_then_matmul"),
                        proj,
                        matmul_tol(GgmlType::Q4_K),
                    )?;
                    (p.cu.attn_cluster, p.cu.attn_cluster_keys) = saved;
                    p.cu.set_graph_keys(None);
                    let n = p.cu.cluster_attns - before;
                    let fits = inlaunch || visible_keys(&pos, window) <= keys;
                    let want = if cl >= 2 && sm90 && fits { 2 } else { 0 };
                    if n != want {
                        println!("{tag}: {n} cluster attention launches, expected {want}  FAIL");
                        ok = false;
                    }
                }
            }
        }
    }

    // The Q/K/V/gate projections and attn_inputs in one call (`qkv_attn_inputs`) at one row,
    // position 217 (after the rows above), then attention over the cache it stored to: on
    // sm_90 with `fuse_qk` one launch, `gemv_k_multi_tma1_t2_qkprep` (counted), elsewhere the
    // two ops; the CPU runs the two ops.
    let cols = 256;
    let mats: Vec<(usize, Vec<u8>)> = [N_HEAD * HEAD, kd, kd, N_HEAD * HEAD]
        .iter()
        .map(|&r| Ok((r, matrix(rng, GgmlType::Q4_K, r, cols, 0.1)?)))
        .collect::<Result<_, String>>()?;
    let ws: Vec<Tensor<'_>> = mats
        .iter()
        .enumerate()
        .map(|(i, (r, d))| Tensor {
            ty: GgmlType::Q4_K,
            rows: *r,
            cols,
            data: d,
            id: 4010 + i as u32,
        })
        .collect();
    p.cu.upload(&ws).map_err(|e| e.to_string())?;
    let wr: Vec<&Tensor<'_>> = ws.iter().collect();
    let fuse_default = p.cu.fuse_qk;
    p.cu.fuse_qk = true;
    let pos = [217u32];
    // The default bulk-copy setting, then (sm_90) two rows an item
    // (`gemv_k_multi_tma2_t2_qkprep`, counted).
    let qk_tma_default = p.cu.gemv_tma;
    let mut qk_modes = vec![("", qk_tma_default)];
    if p.cu.gpu().compute_capability().0 >= 9 {
        qk_modes.push(("_r2", Some(glimmer_jetson::TmaGemv::TWO_ROWS)));
    }
    for (case, with, tname, tma) in qk_modes.iter().flat_map(|&(tname, tma)| {
        [("normed_rope", true), ("plain", false)].map(|(case, with)| (case, with, tname, tma))
    }) {
        p.cu.gemv_tma = tma;
        for (layer, window) in [(0usize, None), (1, Some(WINDOW))] {
            for gated in [true, false] {
                let prep = qk_prep(layer, with, &qt, &kt);
                let (q, k, v) = (buf(A, N_HEAD * HEAD), buf(B, kd), buf(C, kd));
                let (x, gate) = (buf(D, cols), buf(D + 4096, N_HEAD * HEAD));
                p.put(x, &rng.vec(cols, 1.0))?;
                for b in [q, k, v, gate] {
                    p.poison(b)?;
                }
                let n = if gated { 4 } else { 3 };
                let g = gated.then_some(gate);
                let before = p.cu.fused_qk;
                let fused2_before = p.cu.gemv_tma_fused2_launches;
                p.run(|b| b.b_qkv_attn_inputs(&wr[..n], x, q, k, v, g, &prep, &pos))?;
                let tag = format!(
                    "qkv_attn_inputs_{case}_layer{layer}{}{tname}",
                    if gated { "_gated" } else { "" }
                );
                let fused2 = p.cu.gemv_tma_fused2_launches - fused2_before;
                let want2 = u64::from(tname == "_r2");
                if fused2 != want2 {
                    println!("{tag}: {fused2} two-row one-launch calls, expected {want2}  FAIL");
                    ok = false;
                }
                let fused = p.cu.fused_qk - before;
                let want = u64::from(
                    p.cu.gpu().compute_capability().0 >= 9
                        && p.cu.gemv_tma.is_some_and(|t| t.team == 2),
                );
                if fused != want {
                    println!("{tag}: {fused} one-launch calls, expected {want}  FAIL");
                    ok = false;
                }
                let tol = matmul_tol(GgmlType::Q4_K);
                ok &= p.check(&format!("{tag}_q"), q, tol)?;
                ok &= p.check(&format!("{tag}_k"), k, tol)?;
                if gated {
                    ok &= p.check(&format!("{tag}_gate"), gate, tol)?;
                }
                let prm = attn_params(layer, window);
                let out = buf(D + 8192, N_HEAD * HEAD);
                p.poison(out)?;
                // Attention alone, over what the fused launch stored: the CPU takes the
                // device's Q, K and V (K after its norm and RoPE, as attn_inputs leaves it) and
                // stores that K and V at 217 itself, so both sides attend over the same rows
                // and the matmul's error (checked above) does not compound through the softmax
                // (against the CPU's own Q and K this measured 3.1–3.3 × 10⁻² at seeds 32 and
                // 40). A key or value row the launch did not store, or stored wrong, fails at
                // ATTN_TOL: that row carries ~1/218 of the global layer's softmax weight
                // and ~1/16 of the window's, against outputs that average as many rows.
                for b in [q, k, v] {
                    p.take_device(b)?;
                }
                p.run_cpu(|b| b.b_kv_store(layer, k, v, &pos))?;
                p.run(|b| b.b_attention(&prm, q, &pos, out))?;
                ok &= p.check(&format!("{tag}_attention"), out, ATTN_TOL)?;
            }
        }
    }
    p.cu.fuse_qk = fuse_default;
    p.cu.gemv_tma = qk_tma_default;
    // Key and value 217 afresh on both sides through kv_store, so that the checks below
    // (which see key 217) do not rest on the rows the fused launch stored above.
    for layer in 0..2 {
        let (k, v) = (buf(B, kd), buf(C, kd));
        p.put(k, &rng.vec(kd, 2.0))?;
        p.put(v, &rng.vec(kd, 1.0))?;
        p.run(|b| b.b_kv_store(layer, k, v, &[217]))?;
    }

    // attn_inputs deferred into the attention after it (`fuse_prep`, `attn_split_prep`) at
    // one row, position 218, plain and gated: counted (one taken), the output against the
    // CPU's two ops; then attention over the cache at 218 with another query (the fused launch
    // stored key and value there: the cache row was junk before it); then the same inputs
    // through the two launches on the device, whose output must be bit-identical.
    let prep_default = p.cu.fuse_prep;
    let pos = [218u32];
    for (case, with) in [("normed_rope", true), ("plain", false)] {
        for (layer, window) in [(0usize, None), (1, Some(WINDOW))] {
            for gated in [false, true] {
                let prep = qk_prep(layer, with, &qt, &kt);
                let prm = attn_params(layer, window);
                let tag = format!(
                    "attn_prep_{case}_layer{layer}{}",
                    if gated { "_gated" } else { "" }
                );
                let (q, k, v) = (buf(A, N_HEAD * HEAD), buf(B, kd), buf(C, kd));
                let (out, gate) = (buf(D, N_HEAD * HEAD), buf(D + 4096, N_HEAD * HEAD));
                let inputs = [
                    rng.vec(q.len, 2.0),
                    rng.vec(k.len, 2.0),
                    rng.vec(v.len, 1.0),
                    rng.vec(gate.len, 2.0),
                ];
                for (b, x) in [q, k, v, gate].into_iter().zip(&inputs) {
                    p.put(b, x)?;
                }
                p.poison(out)?;
                // Junk in the cache row the launch must store (device only).
                let junk = vec![1e3f32; kd];
                p.cu.write(k, &junk).map_err(|e| e.to_string())?;
                p.cu.write(v, &junk).map_err(|e| e.to_string())?;
                p.cu.kv_store(layer, k, v, &pos)
                    .map_err(|e| e.to_string())?;
                p.cu.write(k, &inputs[1]).map_err(|e| e.to_string())?;
                p.cu.write(v, &inputs[2]).map_err(|e| e.to_string())?;
                p.cu.fuse_prep = true;
                let before = p.cu.fused_prep;
                p.run(|b| {
                    b.b_attn_inputs(&prep, q, k, v, &pos)?;
                    match gated {
                        true => b.b_attention_gated(&prm, q, &pos, gate, out),
                        false => b.b_attention(&prm, q, &pos, out),
                    }
                })?;
                p.cu.fuse_prep = prep_default;
                let taken = p.cu.fused_prep - before;
                if taken != 1 {
                    println!("{tag}: {taken} attn_inputs taken by attention, expected 1  FAIL");
                    ok = false;
                }
                ok &= p.check(&format!("{tag}_attention"), out, ATTN_TOL)?;
                let mut fused = vec![0f32; out.len];
                p.cu.read(out, &mut fused).map_err(|e| e.to_string())?;
                // The cache row, through another query's attention.
                // (S holds the CPU's attention scores.)
                let (q2, out2) = (buf(C + 4096, N_HEAD * HEAD), buf(D + 8192, N_HEAD * HEAD));
                p.put(q2, &rng.vec(q2.len, 2.0))?;
                p.poison(out2)?;
                p.run(|b| b.b_attention(&prm, q2, &pos, out2))?;
                ok &= p.check(&format!("{tag}_cache"), out2, ATTN_TOL)?;
                // The two launches, device only, from the same inputs, with attention as
                // attn_split takes it (the prep kernel's splits and merge; attn_split_cl
                // merges in another order).
                for (b, x) in [q, k, v, gate].into_iter().zip(&inputs) {
                    p.cu.write(b, x).map_err(|e| e.to_string())?;
                }
                p.cu.write(out, &vec![f32::NAN; out.len])
                    .map_err(|e| e.to_string())?;
                p.cu.attn_inputs(&prep, q, k, v, &pos)
                    .map_err(|e| e.to_string())?;
                let cluster = std::mem::replace(&mut p.cu.attn_cluster, 0);
                let r = match gated {
                    true => p.cu.attention_gated(&prm, q, &pos, gate, out),
                    false => p.cu.attention(&prm, q, &pos, out),
                };
                p.cu.attn_cluster = cluster;
                r.map_err(|e| e.to_string())?;
                let mut apart = vec![0f32; out.len];
                p.cu.read(out, &mut apart).map_err(|e| e.to_string())?;
                let same = fused
                    .iter()
                    .zip(&apart)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                println!(
                    "{tag}_bitwise: {}",
                    if same {
                        "PASS"
                    } else {
                        "differs from the two launches  FAIL"
                    }
                );
                ok &= same;
            }
        }
    }
    // A deferred attn_inputs that the attention after it cannot take (another position: 219
    // prepared, attention at 218): it runs as its own launch first, with its own position
    // (the attention's upload of 218 must not reach it); counted (none taken). Then attention
    // at 219 over what it stored.
    {
        let (layer, window) = (1, Some(WINDOW));
        let prep = qk_prep(layer, true, &qt, &kt);
        let prm = attn_params(layer, window);
        let (q, k, v, out) = (
            buf(A, N_HEAD * HEAD),
            buf(B, kd),
            buf(C, kd),
            buf(D, N_HEAD * HEAD),
        );
        p.put(q, &rng.vec(q.len, 2.0))?;
        p.put(k, &rng.vec(k.len, 2.0))?;
        p.put(v, &rng.vec(v.len, 1.0))?;
        let q218 = buf(C + 4096, N_HEAD * HEAD);
        p.put(q218, &rng.vec(q218.len, 2.0))?;
        p.poison(out)?;
        p.cu.fuse_prep = true;
        let before = p.cu.fused_prep;
        p.run(|b| {
            b.b_attn_inputs(&prep, q, k, v, &[219])?;
            b.b_attention(&prm, q218, &[218], out)
        })?;
        p.cu.fuse_prep = prep_default;
        let tag = "attn_prep_not_taken_layer1";
        let taken = p.cu.fused_prep - before;
        if taken != 0 {
            println!("{tag}: {taken} attn_inputs taken by attention, expected 0  FAIL");
            ok = false;
        }
        ok &= p.check(&format!("{tag}_q"), q, 1e-4)?;
        ok &= p.check(&format!("{tag}_attention218"), out, ATTN_TOL)?;
        p.poison(out)?;
        p.run(|b| b.b_attention(&prm, q, &[219], out))?;
        ok &= p.check(&format!("{tag}_attention219"), out, ATTN_TOL)?;
    }

    // Attention and the output projection with its norms in one call (`attention_project`)
    // at one row, position 217, over the caches the calls above left: on sm_90 with
    // `fuse_attn` and the bulk-copy kernels one launch (counted), `gemv_k_multi_tma1_t2_attn`
    // then the norms, or with the grid-barrier norm `gemv_k_multi_tma1_t2_attn_gridnorm`;
    // elsewhere the two ops. The CPU runs attention then `matmul_add_rmsnorm`. Then a matmul
    // reading the norm's output (its quantization, where the launch left one).
    let dim = wo.rows;
    let gains: Vec<Vec<f32>> = (0..2)
        .map(|_| (0..dim).map(|_| 1.0 + rng.normal(0.2)).collect())
        .collect();
    let gt: Vec<Tensor<'_>> = gains
        .iter()
        .enumerate()
        .map(|(i, g)| Tensor {
            ty: GgmlType::F32,
            rows: 1,
            cols: dim,
            data: bytemuck::cast_slice(g),
            id: 4020 + i as u32,
        })
        .collect();
    p.cu.upload(&gt).map_err(|e| e.to_string())?;
    // Then the two ops with attention asking L2 for the projection's weights
    // (`attn_prefetch_bytes`; counted, no result changes), with the norms apart and deferred.
    // On sm_90 the one-launch forms again with two rows an item (`TmaGemv::TWO_ROWS`:
    // `gemv_k_multi_tma2_t2_attn` and `_attn_gridnorm`, counted).
    let (attn_default, norm_default) = (p.cu.fuse_attn, p.cu.fuse_norm);
    let prefetch_default = p.cu.attn_prefetch_bytes;
    let ap_tma_default = p.cu.gemv_tma;
    let two = Some(glimmer_jetson::TmaGemv::TWO_ROWS);
    let mut ap_modes = vec![
        (NormFusion::Off, "norms_apart", true, 0, ap_tma_default),
        (NormFusion::Grid, "gridnorm", true, 0, ap_tma_default),
        (NormFusion::Off, "prefetch", false, 1 << 20, ap_tma_default),
        (
            NormFusion::Pre,
            "prefetch_prenorm",
            false,
            1 << 20,
            ap_tma_default,
        ),
    ];
    if p.cu.gpu().compute_capability().0 >= 9 {
        ap_modes.push((NormFusion::Off, "norms_apart_r2", true, 0, two));
        ap_modes.push((NormFusion::Grid, "gridnorm_r2", true, 0, two));
    }
    for (mode, mname, one_launch, prefetch, tma) in ap_modes {
        p.cu.fuse_norm = mode;
        p.cu.fuse_attn = one_launch;
        p.cu.attn_prefetch_bytes = prefetch;
        p.cu.gemv_tma = tma;
        for (layer, window) in [(0usize, None), (1, Some(WINDOW))] {
            for gated in [true, false] {
                for post in [None, Some(&gt[1])] {
                    let prm = attn_params(layer, window);
                    let (q, gate, att) = (
                        buf(A, N_HEAD * HEAD),
                        buf(A + 4096, N_HEAD * HEAD),
                        buf(B, N_HEAD * HEAD),
                    );
                    let (y, xr, nb, mo) = (
                        buf(C, dim),
                        buf(C + 4096, dim),
                        buf(D, dim),
                        buf(D + 4096, wr[0].rows),
                    );
                    p.put(q, &rng.vec(q.len, 2.0))?;
                    p.put(gate, &rng.vec(gate.len, 2.0))?;
                    p.put(xr, &rng.vec(dim, 1.0))?;
                    for b in [att, y, nb, mo] {
                        p.poison(b)?;
                    }
                    let g = gated.then_some(gate);
                    let before = p.cu.fused_attn;
                    let fused2_before = p.cu.gemv_tma_fused2_launches;
                    let prefetches = p.cu.attn_prefetches;
                    p.run(|b| {
                        let e = branch_end(y, xr, post, Some(&gt[0]), wo.rows, nb);
                        b.b_attention_project(&prm, q, &pos, g, att, &wo, &e)?;
                        b.b_matmul(wr[0], nb, 1, mo)
                    })?;
                    let tag = format!(
                        "attention_project_{mname}_layer{layer}{}{}",
                        if gated { "_gated" } else { "" },
                        if post.is_some() { "_post" } else { "" }
                    );
                    let fused = p.cu.fused_attn - before;
                    let want = u64::from(
                        one_launch
                            && p.cu.gpu().compute_capability().0 >= 9
                            && p.cu.gemv_tma.is_some_and(|t| t.team == 2),
                    );
                    if fused != want {
                        println!("{tag}: {fused} one-launch calls, expected {want}  FAIL");
                        ok = false;
                    }
                    let fused2 = p.cu.gemv_tma_fused2_launches - fused2_before;
                    let want2 = u64::from(mname.ends_with("_r2"));
                    if fused2 != want2 {
                        println!(
                            "{tag}: {fused2} two-row one-launch calls, expected {want2}  FAIL"
                        );
                        ok = false;
                    }
                    let asked = p.cu.attn_prefetches - prefetches;
                    if asked != u64::from(prefetch > 0) {
                        println!("{tag}: {asked} attention launches asked L2 for weights  FAIL");
                        ok = false;
                    }
                    let tol = matmul_tol(GgmlType::Q4_K);
                    ok &= p.check(&format!("{tag}_attention"), att, ATTN_TOL)?;
                    ok &= p.check(&format!("{tag}_y"), y, tol)?;
                    ok &= p.check(&format!("{tag}_x"), xr, tol)?;
                    ok &= p.check(&format!("{tag}_out"), nb, tol)?;
                    ok &= p.check(&format!("{tag}_then_matmul"), mo, tol)?;
                }
            }
        }
    }
    p.cu.fuse_attn = attn_default;
    p.cu.fuse_norm = norm_default;
    p.cu.attn_prefetch_bytes = prefetch_default;
    p.cu.gemv_tma = ap_tma_default;
    Ok(ok)
}

//! Every GPU kernel against the CPU reference backend on fresh random inputs, with the output
//! regions poisoned (NaN) first, in both reduction variants (workgroup memory and subgroups).
//! Tolerances are stated per test.

mod common;

use glimmer_apple::{GpuBackend, GpuContext, GpuKvType, KvShape};
use glimmer_core::cpu::CpuBackend;
use glimmer_core::exec::{AttnParams, Backend, Buf};
use glimmer_core::kv::{self, KvGeometry, PagePool};
use glimmer_core::model::{Activation, Arch, ModelSpec, RopeStyle, Tensor};
use glimmer_core::plan::KvType;
use glimmer_core::quant::{self, GgmlType, Kernels};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Elements of each of the three generic test regions A, B, C.
const REGION: usize = 64 * 1024;
const A: Buf = Buf {
    off: 0,
    len: REGION,
};
const B: Buf = Buf {
    off: REGION,
    len: REGION,
};
const C: Buf = Buf {
    off: 2 * REGION,
    len: REGION,
};
const SCORES: Buf = Buf {
    off: 3 * REGION,
    len: 4096,
};
const ARENA: usize = 3 * REGION + 4096;

/// A small gemma3-like spec: layers 0-4 sliding (window 16), layer 5 global; GQA 4:2.
fn spec() -> ModelSpec {
    ModelSpec {
        arch: Arch::Gemma3,
        n_layer: 6,
        n_embd: 256,
        n_head: 4,
        n_head_kv: 2,
        head_dim: 64,
        head_dim_v: 64,
        n_ff: 512,
        n_vocab: 1000,
        n_ctx_train: 4096,
        eps: 1e-6,
        rope_dim: 64,
        rope_base: 10000.0,
        rope_base_sliding: 10000.0,
        rope_style: RopeStyle::HalfSplit,
        sliding_window: Some(16),
        embd_scale: None,
        embd_norm: false,
        qk_norm: false,
        post_norms: false,
        post_norm_eps: 1e-6,
        attn_gate: false,
        global_interval: 6,
        logit_softcap: None,
        attn_scale: 0.125,
        activation: Activation::GeluTanh,
    }
}

/// CPU and GPU backends over the same arena regions and KV geometry.
struct Pair {
    gpu: GpuBackend,
    arena: Vec<f32>,
    scratch: Vec<u8>,
    pool: PagePool<Vec<u16>, Vec<u32>>,
    rng: StdRng,
}

const CTX: usize = 512;
const ROWS: usize = 4;

impl Pair {
    fn new(ctx: GpuContext, seed: u64) -> Self {
        Self::with_kv(ctx, seed, GpuKvType::F16)
    }

    /// The CPU side always keeps an f16 cache; the GPU side keeps `ty`.
    fn with_kv(ctx: GpuContext, seed: u64, ty: GpuKvType) -> Self {
        let s = spec();
        let geo = KvGeometry::new(&s, CTX, ROWS, KvType::F16).unwrap();
        let pages = geo.pages_per_slot().unwrap();
        let data = vec![0u16; kv::data_len(&geo, pages).unwrap()];
        let meta = vec![0u32; kv::meta_len(&geo, 1, pages).unwrap()];
        let pool = PagePool::new(geo, 1, pages, data, meta).unwrap();
        let shape = KvShape::from_geometry(&geo, ty);
        let gpu = GpuBackend::with_arena(ctx, &[A, B, C, SCORES], ARENA, shape, 1 << 16).unwrap();
        Pair {
            gpu,
            arena: vec![0.0; ARENA],
            scratch: vec![0; 4 * REGION],
            pool,
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// Fresh N(0, sd)-ish values into `b` on both sides.
    fn fill(&mut self, b: Buf, sd: f32) -> Vec<f32> {
        let v: Vec<f32> = (0..b.len)
            .map(|_| (self.rng.random::<f32>() * 2.0 - 1.0) * sd * 1.7)
            .collect();
        self.arena[b.off..b.off + b.len].copy_from_slice(&v);
        self.gpu.write(b, &v).unwrap();
        v
    }

    /// NaN into `b` on both sides, so an unwritten output shows.
    fn poison(&mut self, b: Buf) {
        let v = vec![f32::NAN; b.len];
        self.arena[b.off..b.off + b.len].copy_from_slice(&v);
        self.gpu.write(b, &v).unwrap();
    }

    /// Runs `op` on both backends and returns (cpu, gpu) contents of `out`.
    fn both(&mut self, out: Buf, mut op: impl FnMut(&mut dyn DynBackend)) -> (Vec<f32>, Vec<f32>) {
        {
            let kv = self.pool.slot(0).unwrap();
            let mut cpu = CpuBackend::new(
                &mut self.arena,
                &mut self.scratch,
                SCORES,
                kv,
                Kernels::scalar(),
                &glimmer_core::exec::Serial,
            );
            op(&mut Cpu(&mut cpu));
        }
        op(&mut Gpu(&mut self.gpu));
        let c = self.arena[out.off..out.off + out.len].to_vec();
        let mut g = vec![0.0; out.len];
        self.gpu.read(out, &mut g).unwrap();
        (c, g)
    }
}

/// The ops both backends share, object-safe (errors become panics with the backend's name).
trait DynBackend {
    fn embed(&mut self, t: &Tensor<'_>, tokens: &[u32], out: Buf);
    fn rmsnorm(&mut self, x: Buf, w: Option<&Tensor<'_>>, dim: usize, eps: f32, out: Buf);
    fn matmul(&mut self, w: &Tensor<'_>, x: Buf, rows: usize, out: Buf);
    #[allow(clippy::too_many_arguments)]
    fn rope(
        &mut self,
        x: Buf,
        nh: usize,
        hd: usize,
        rd: usize,
        pos: &[u32],
        base: f32,
        st: RopeStyle,
    );
    fn kv_store(&mut self, layer: usize, k: Buf, v: Buf, pos: &[u32]);
    fn attention(&mut self, p: &AttnParams, q: Buf, pos: &[u32], out: Buf);
    fn gated_act(&mut self, g: Buf, u: Buf, a: Activation);
    fn sigmoid_mul(&mut self, x: Buf, g: Buf);
    fn softcap(&mut self, x: Buf, cap: f32, s: f32);
    fn add(&mut self, x: Buf, y: Buf);
    fn scale(&mut self, x: Buf, s: f32);
}

struct Cpu<'a, 'b>(&'a mut CpuBackend<'b>);
struct Gpu<'a>(&'a mut GpuBackend);

macro_rules! dyn_impl {
    ($t:ty, $name:literal) => {
        impl DynBackend for $t {
            fn embed(&mut self, t: &Tensor<'_>, tokens: &[u32], out: Buf) {
                self.0.embed(t, tokens, out).expect($name)
            }
            fn rmsnorm(&mut self, x: Buf, w: Option<&Tensor<'_>>, dim: usize, eps: f32, out: Buf) {
                self.0.rmsnorm(x, w, dim, eps, out).expect($name)
            }
            fn matmul(&mut self, w: &Tensor<'_>, x: Buf, rows: usize, out: Buf) {
                self.0.matmul(w, x, rows, out).expect($name)
            }
            fn rope(
                &mut self,
                x: Buf,
                nh: usize,
                hd: usize,
                rd: usize,
                pos: &[u32],
                base: f32,
                st: RopeStyle,
            ) {
                self.0.rope(x, nh, hd, rd, pos, base, st).expect($name)
            }
            fn kv_store(&mut self, layer: usize, k: Buf, v: Buf, pos: &[u32]) {
                self.0.kv_store(layer, k, v, pos).expect($name)
            }
            fn attention(&mut self, p: &AttnParams, q: Buf, pos: &[u32], out: Buf) {
                self.0.attention(p, q, pos, out).expect($name)
            }
            fn gated_act(&mut self, g: Buf, u: Buf, a: Activation) {
                self.0.gated_act(g, u, a).expect($name)
            }
            fn sigmoid_mul(&mut self, x: Buf, g: Buf) {
                self.0.sigmoid_mul(x, g).expect($name)
            }
            fn softcap(&mut self, x: Buf, cap: f32, s: f32) {
                self.0.softcap(x, cap, s).expect($name)
            }
            fn add(&mut self, x: Buf, y: Buf) {
                self.0.add(x, y).expect($name)
            }
            fn scale(&mut self, x: Buf, s: f32) {
                self.0.scale(x, s).expect($name)
            }
        }
    };
}
dyn_impl!(Cpu<'_, '_>, "cpu");
dyn_impl!(Gpu<'_>, "gpu");

/// Asserts `|c - g| <= tol(i, c)` everywhere (NaN fails) and prints the largest difference.
fn check(what: &str, c: &[f32], g: &[f32], tol: impl Fn(usize, f32) -> f32) {
    let mut max_diff = 0f32;
    for (i, (&a, &b)) in c.iter().zip(g).enumerate() {
        let d = (a - b).abs();
        assert!(
            d <= tol(i, a),
            "{what}: [{i}] cpu {a} gpu {b} (diff {d}, tol {})",
            tol(i, a)
        );
        max_diff = max_diff.max(d);
    }
    eprintln!("{what}: max_diff {max_diff:e} over {}", c.len());
}

/// Random weights of `ty` (rows × cols), quantized by the core's reference quantizer.
///
/// The bytes are leaked: the backend knows an uploaded tensor by the address of its bytes,
/// which must therefore stay valid (and not be reused by a later tensor) while it is in use.
fn weights(rng: &mut StdRng, ty: GgmlType, rows: usize, cols: usize) -> &'static [u8] {
    let rb = ty.row_bytes(cols).unwrap();
    let mut out = vec![0u8; rb * rows];
    for r in 0..rows {
        let row: Vec<f32> = (0..cols).map(|_| rng.random::<f32>() * 2.0 - 1.0).collect();
        quant::quantize_weights(ty, &row, &mut out[r * rb..(r + 1) * rb]).unwrap();
    }
    Box::leak(out.into_boxed_slice())
}

fn tensor(ty: GgmlType, rows: usize, cols: usize, data: &[u8]) -> Tensor<'_> {
    Tensor {
        ty,
        rows,
        cols,
        data,
        id: 0,
    }
}

const TYPES: [GgmlType; 9] = [
    GgmlType::F32,
    GgmlType::F16,
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q8_0,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
];

#[test]
fn embed_matches_dequantize_row() {
    for (vi, ctx) in common::variants().into_iter().enumerate() {
        let mut p = Pair::new(ctx, 1 + vi as u64);
        for ty in TYPES {
            let (rows, cols) = (300, 512);
            let data = weights(&mut p.rng, ty, rows, cols);
            let t = tensor(ty, rows, cols, data);
            p.gpu.upload(&[&t]).unwrap();
            let tokens: Vec<u32> = (0..7).map(|_| p.rng.random_range(0..rows as u32)).collect();
            let out = A.prefix(tokens.len() * cols);
            p.poison(out);
            let (c, g) = p.both(out, |b| b.embed(&t, &tokens, out));
            // Same f32 operations; only a fused multiply-add may round differently.
            check(&format!("embed {ty:?}"), &c, &g, |_, a| {
                1e-6 * a.abs().max(1e-3)
            });
        }
    }
}

/// `W · x` in f64 from the dequantized weights (what the GPU computes, up to f32 summation).
fn exact_matmul(
    ty: GgmlType,
    data: &[u8],
    rows: usize,
    cols: usize,
    x: &[f32],
    n: usize,
) -> (Vec<f32>, Vec<f32>) {
    let rb = ty.row_bytes(cols).unwrap();
    let mut w = vec![0f32; cols];
    let mut out = vec![0f32; n * rows];
    let mut mag = vec![0f32; n * rows];
    for r in 0..rows {
        quant::dequantize_row(ty, &data[r * rb..(r + 1) * rb], &mut w).unwrap();
        for b in 0..n {
            let xr = &x[b * cols..(b + 1) * cols];
            let s: f64 = w.iter().zip(xr).map(|(&a, &c)| a as f64 * c as f64).sum();
            let m: f64 = w
                .iter()
                .zip(xr)
                .map(|(&a, &c)| (a as f64 * c as f64).abs())
                .sum();
            out[b * rows + r] = s as f32;
            mag[b * rows + r] = m as f32;
        }
    }
    (out, mag)
}

/// What a Q4_K or Q6_K product on int8 activations (`vec_k8`) must give, and how far it may
/// be from it. The activations are rounded as `q8` does (d = amax / 127 per 32 values,
/// round half to even), and only the part of each weight that scales with its quantized
/// value multiplies the rounded values (Q4_K's minima and Q6_K's -32 offset use exact sums).
/// That part is the dequantized weight less `w0`, the weight the block gives when every
/// quantized value is zero (its scales kept). So the product is
/// Σ_j (w_j - w0_j) x̂_j + w0_j x_j, up to f32 summation error and a rounding of x / d that
/// lands on the other side of a half (allowed twice per row).
fn int8_expect(
    ty: GgmlType,
    data: &[u8],
    rows: usize,
    cols: usize,
    x: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let rb = ty.row_bytes(cols).unwrap();
    // The bytes holding the quantized values: Q4_K's nibbles after d, dmin and the scales;
    // Q6_K's ql and qh before its scales and d.
    let (block, values) = match ty {
        GgmlType::Q4_K => (144, 16..144),
        GgmlType::Q6_K => (210, 0..192),
        _ => unreachable!("int8 matvecs are Q4_K and Q6_K"),
    };
    let mut zero = data.to_vec();
    for blk in zero.chunks_exact_mut(block) {
        blk[values.clone()].fill(0);
    }
    let mut d = Vec::with_capacity(cols);
    let mut xr = Vec::with_capacity(cols);
    for b in x.chunks_exact(32) {
        let amax = b.iter().fold(0f32, |m, v| m.max(v.abs()));
        let (db, id) = (amax / 127.0, if amax > 0.0 { 127.0 / amax } else { 0.0 });
        for &v in b {
            d.push(db);
            xr.push(db * (v * id).round_ties_even().clamp(-127.0, 127.0));
        }
    }
    let (mut w, mut w0) = (vec![0f32; cols], vec![0f32; cols]);
    (0..rows)
        .map(|r| {
            quant::dequantize_row(ty, &data[r * rb..(r + 1) * rb], &mut w).unwrap();
            quant::dequantize_row(ty, &zero[r * rb..(r + 1) * rb], &mut w0).unwrap();
            let (mut e, mut mag, mut flip) = (0f64, 0f64, 0f32);
            for j in 0..cols {
                let (q, z) = ((w[j] - w0[j]) as f64, w0[j] as f64);
                e += q * xr[j] as f64 + z * x[j] as f64;
                mag += (q * xr[j] as f64).abs() + (z * x[j] as f64).abs();
                flip = flip.max((w[j] - w0[j]).abs() * d[j]);
            }
            (e as f32, 1e-5 * mag as f32 + 1e-6 + 2.0 * flip)
        })
        .unzip()
}

#[test]
fn matmul_matches_reference_every_format_and_batch() {
    for (vi, ctx) in common::variants().into_iter().enumerate() {
        let mut p = Pair::new(ctx, 10 + vi as u64);
        // 4352 columns: the one-row kernel stages activations 2048 at a time, so this takes
        // two whole chunks and a short one.
        for (ty, (rows, cols)) in TYPES
            .into_iter()
            .flat_map(|t| [(t, (98, 512)), (t, (37, 4352))])
        {
            for n in [1usize, 3, 6] {
                let data = weights(&mut p.rng, ty, rows, cols);
                let t = tensor(ty, rows, cols, data);
                p.gpu.upload(&[&t]).unwrap();
                let x = p.fill(A.prefix(n * cols), 1.0);
                let out = B.prefix(n * rows);
                p.poison(out);
                let (c, g) = p.both(out, |b| b.matmul(&t, A.prefix(n * cols), n, out));
                let (exact, mag) = exact_matmul(ty, data, rows, cols, &x, n);
                // Against the exact product: f32 summation error (for one Q4_K or Q6_K row
                // on int8 activations, against the product of the rounded activations).
                let int8 = matches!(ty, GgmlType::Q4_K | GgmlType::Q6_K);
                let (want, tol) = if int8 && n == 1 && p.gpu.context().uses_int_dot() {
                    int8_expect(ty, data, rows, cols, &x)
                } else {
                    (exact, mag.iter().map(|m| 1e-5 * m + 1e-6).collect())
                };
                check(
                    &format!("matmul {ty:?} n={n} vs exact"),
                    &want,
                    &g,
                    |i, _| tol[i],
                );
                // Against the CPU, which rounds x to 8 bits per block first: at most
                // sum|w x| / 127 apart (each x moves by at most amax/254 ≤ |x|max/254).
                let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
                check(&format!("matmul {ty:?} n={n} vs cpu"), &c, &g, |i, _| {
                    mag[i] / 127.0 + amax * 1e-3 + 1e-4
                });
            }
        }
    }
}

/// The Q4_K and Q6_K one-row matvecs read activations as 16-byte words when they start at a
/// multiple of 4 elements (`vec_k`) and take the generic entry otherwise: both
/// must agree with the exact product, at offsets inside a region and for rows and columns
/// that leave partial workgroups and partial steps (37 rows, 17 blocks).
#[test]
fn matvec_k_quants_aligned_and_unaligned_activations() {
    // Every reduction variant with Q4_K on int8 activations (`vec_k8`, the default), and one
    // with the float form (`vec_k`) for Q4_K too.
    let mut ctxs = common::variants();
    ctxs.extend(common::gpu(glimmer_apple::GpuOptions {
        int_dot: false,
        row_per_lane: Some(false),
        ..Default::default()
    }));
    for (vi, ctx) in ctxs.into_iter().enumerate() {
        let mut p = Pair::new(ctx, 30 + vi as u64);
        for ty in [GgmlType::Q4_K, GgmlType::Q6_K] {
            let (rows, cols) = (37, 17 * 256);
            let data = weights(&mut p.rng, ty, rows, cols);
            let t = tensor(ty, rows, cols, data);
            p.gpu.upload(&[&t]).unwrap();
            for shift in [0usize, 4, 1, 3] {
                let xb = Buf {
                    off: A.off + shift,
                    len: cols,
                };
                let x = p.fill(xb, 1.0);
                let out = B.prefix(rows);
                p.poison(out);
                let (_, g) = p.both(out, |b| b.matmul(&t, xb, 1, out));
                let int8 = p.gpu.context().uses_int_dot();
                let (want, tol) = if int8 {
                    int8_expect(ty, data, rows, cols, &x)
                } else {
                    let (exact, mag) = exact_matmul(ty, data, rows, cols, &x, 1);
                    (exact, mag.iter().map(|m| 1e-5 * m + 1e-6).collect())
                };
                check(
                    &format!("matvec {ty:?} x at +{shift} (int8: {int8})"),
                    &want,
                    &g,
                    |i, _| tol[i],
                );
            }
        }
    }
}

/// The int8 form of an activation row is made once and reused by the matvecs that follow on
/// the same row; an op that changes the row (here `add`) must make it again. The second
/// product, of the changed row, is checked against what the rounded new row gives: a stale
/// int8 row would give the product of the old values.
#[test]
fn int8_activations_follow_changes_to_the_row() {
    // The 16-lane layout: the one-row-per-lane layout (a CPU adapter's default) has no int8
    // matvecs.
    let Some(ctx) = common::gpu(glimmer_apple::GpuOptions {
        row_per_lane: Some(false),
        ..Default::default()
    }) else {
        return;
    };
    assert!(ctx.uses_int_dot());
    let mut p = Pair::new(ctx, 41);
    let (rows, cols) = (37, 9 * 256);
    let data = weights(&mut p.rng, GgmlType::Q4_K, rows, cols);
    let t = tensor(GgmlType::Q4_K, rows, cols, data);
    p.gpu.upload(&[&t]).unwrap();
    let x = A.prefix(cols);
    let y = C.prefix(cols);
    let x0 = p.fill(x, 1.0);
    let dy = p.fill(y, 1.0);
    let first = B.prefix(rows);
    let second = Buf {
        off: B.off + 64,
        len: rows,
    };
    p.poison(second);
    let (_, g) = p.both(second, |b| {
        b.matmul(&t, x, 1, first);
        b.matmul(&t, x, 1, first);
        b.add(x, y);
        b.matmul(&t, x, 1, second);
    });
    let x1: Vec<f32> = x0.iter().zip(&dy).map(|(a, b)| a + b).collect();
    let (want, tol) = int8_expect(GgmlType::Q4_K, data, rows, cols, &x1);
    check("matvec after the row changed", &want, &g, |i, _| tol[i]);
}

#[test]
fn matmul_rejects_tensors_never_uploaded() {
    let Some(ctx) = common::gpu(Default::default()) else {
        return;
    };
    let mut p = Pair::new(ctx, 3);
    let data = weights(&mut p.rng, GgmlType::Q4_0, 4, 64);
    let t = tensor(GgmlType::Q4_0, 4, 64, data);
    let e = p.gpu.matmul(&t, A.prefix(64), 1, B.prefix(4));
    assert_eq!(e, Err(glimmer_apple::GpuError::NotUploaded));
}

#[test]
fn rmsnorm_with_and_without_weight_in_place_or_not() {
    for (vi, ctx) in common::variants().into_iter().enumerate() {
        let mut p = Pair::new(ctx, 20 + vi as u64);
        // 643: the kernel reads four values at a time, then the last three one by one. (A
        // weight is whole 32-value units, so only the unweighted norm has such a tail.)
        // 640, 2720 and 9344 take the 16-byte-word entry, which covers 4096 values a step:
        // one partial step (the two of them), and two whole steps and a partial one.
        for dim in [640usize, 643, 2720, 9344] {
            let rows = 5;
            let wd = dim / 32 * 32;
            let w: Vec<f32> = (0..wd).map(|_| p.rng.random::<f32>() * 2.0).collect();
            let wb: &'static [u8] = Vec::leak(bytemuck::cast_slice(&w).to_vec());
            let t = tensor(GgmlType::F32, 1, wd, wb);
            p.gpu.upload(&[&t]).unwrap();
            let x = A.prefix(rows * dim);
            let cases: &[(Option<&Tensor<'_>>, bool)] = if wd == dim {
                &[(Some(&t), false), (None, false), (Some(&t), true)]
            } else {
                &[(None, false), (None, true)]
            };
            for &(weight, inplace) in cases {
                p.fill(x, 3.0);
                let out = if inplace { x } else { B.prefix(rows * dim) };
                if !inplace {
                    p.poison(out);
                }
                let (c, g) = p.both(out, |b| b.rmsnorm(x, weight, dim, 1e-6, out));
                check(&format!("rmsnorm {dim}"), &c, &g, |_, a| {
                    2e-6 * a.abs() + 1e-6
                });
            }
        }
    }
}

#[test]
fn rope_both_styles_partial_dims() {
    for (vi, ctx) in common::variants().into_iter().enumerate() {
        let mut p = Pair::new(ctx, 30 + vi as u64);
        for (style, rope_dim) in [
            (RopeStyle::Interleaved, 64),
            (RopeStyle::HalfSplit, 64),
            (RopeStyle::HalfSplit, 32),
        ] {
            let (nh, hd) = (4, 64);
            let pos: Vec<u32> = vec![0, 1, 37, 511, 3000];
            let x = A.prefix(pos.len() * nh * hd);
            p.fill(x, 1.0);
            let (c, g) = p.both(x, |b| b.rope(x, nh, hd, rope_dim, &pos, 10000.0, style));
            // sin/cos of angles up to 3000 rad after range reduction: ~1e-5 absolute.
            check(&format!("rope {style:?} {rope_dim}"), &c, &g, |_, _| 5e-5);
        }
    }
}

#[test]
fn elementwise_ops() {
    for (vi, ctx) in common::variants().into_iter().enumerate() {
        let mut p = Pair::new(ctx, 40 + vi as u64);
        let n = 5000;
        let (x, y) = (A.prefix(n), B.prefix(n));
        p.fill(x, 4.0);
        p.fill(y, 4.0);
        let (c, g) = p.both(x, |b| b.add(x, y));
        check("add", &c, &g, |_, _| 0.0);
        let (c, g) = p.both(x, |b| b.scale(x, 0.37));
        check("scale", &c, &g, |_, _| 0.0);
        p.fill(x, 20.0);
        let (c, g) = p.both(x, |b| b.softcap(x, 30.0, 0.5));
        // tanh differs from libm's by a few ulps: 1e-5 relative (3e-4 on a cap of 30).
        check("softcap", &c, &g, |_, a| 1e-5 * a.abs().max(1.0));
        p.fill(x, 4.0);
        let (c, g) = p.both(x, |b| b.sigmoid_mul(x, y));
        check("sigmoid_mul", &c, &g, |_, a| 2e-6 * a.abs().max(1e-3));
        p.fill(x, 4.0);
        let (c, g) = p.both(x, |b| b.gated_act(x, y, Activation::Silu));
        check("silu", &c, &g, |_, a| 2e-6 * a.abs().max(1e-3));
        let gate = p.fill(x, 6.0);
        let up = p.fill(y, 2.0);
        let (c, g) = p.both(x, |b| b.gated_act(x, y, Activation::GeluTanh));
        // The GELU is rounded to f16 on both sides: at most one f16 step (2^-10 relative) apart.
        check("gelu_tanh", &c, &g, |i, _| {
            let gl = (gate[i].abs() + 1e-3) * up[i].abs();
            gl * 2f32.powi(-10) + 1e-6
        });
    }
}

/// With the same f16 cache on both sides the CPU still rounds the softmax weights to f16
/// (2^-11 relative each); values are below 1.7.
const F16_TOL: f32 = 2e-3;

/// Stores random K/V for positions `0..n` (in chunks of ROWS), then attends a final chunk.
fn attention_case(p: &mut Pair, layer: usize, n: usize, q_rows: usize, tol: f32) {
    let s = spec();
    let (kd, vd) = (s.k_dim(), s.v_dim());
    let mut pos = 0u32;
    while (pos as usize) < n {
        let r = ROWS.min(n - pos as usize);
        let positions: Vec<u32> = (pos..pos + r as u32).collect();
        let (k, v) = (A.prefix(r * kd), B.prefix(r * vd));
        p.fill(k, 1.0);
        p.fill(v, 1.0);
        let _ = p.both(A.prefix(1), |b| b.kv_store(layer, k, v, &positions));
        pos += r as u32;
    }
    let positions: Vec<u32> = (n as u32 - q_rows as u32..n as u32).collect();
    let q = A.prefix(q_rows * s.q_dim());
    p.fill(q, 1.0);
    let out = C.prefix(q_rows * s.n_head * s.head_dim_v);
    p.poison(out);
    let window = match s.layer_kind(layer) {
        glimmer_core::model::LayerKind::Global => None,
        glimmer_core::model::LayerKind::Sliding { window } => Some(window),
    };
    let ap = AttnParams {
        layer,
        n_head: s.n_head,
        n_head_kv: s.n_head_kv,
        head_dim: s.head_dim,
        head_dim_v: s.head_dim_v,
        scale: 0.3,
        window,
    };
    let (c, g) = p.both(out, |b| b.attention(&ap, q, &positions, out));
    check(
        &format!("attention layer {layer} n={n} rows={q_rows}"),
        &c,
        &g,
        |_, _| tol,
    );
}

#[test]
fn kv_store_and_attention_global_many_splits() {
    for (vi, ctx) in common::variants().into_iter().enumerate() {
        let mut p = Pair::new(ctx, 50 + vi as u64);
        attention_case(&mut p, 5, 300, 1, F16_TOL);
        attention_case(&mut p, 5, 301, 1, F16_TOL);
        attention_case(&mut p, 5, 57, 4, F16_TOL);
    }
}

#[test]
fn kv_store_and_attention_f32_cache() {
    for (vi, ctx) in common::variants().into_iter().enumerate() {
        let mut p = Pair::with_kv(ctx, 80 + vi as u64, GpuKvType::F32);
        // The CPU's cache rounds keys and values to f16 (2^-11 relative): twice the f16 bound.
        attention_case(&mut p, 5, 130, 2, 2.0 * F16_TOL);
        attention_case(&mut p, 0, 50, 4, 2.0 * F16_TOL);
    }
}

#[test]
fn kv_store_and_attention_sliding_ring_wraps() {
    for (vi, ctx) in common::variants().into_iter().enumerate() {
        let mut p = Pair::new(ctx, 60 + vi as u64);
        // Window 16, ring of 20 slots: 100 positions wrap it five times.
        attention_case(&mut p, 0, 100, 4, F16_TOL);
        attention_case(&mut p, 1, 9, 1, F16_TOL);
        attention_case(&mut p, 2, 203, 3, F16_TOL);
    }
}

#[test]
fn argmax_rows_lowest_index_on_ties() {
    for (vi, ctx) in common::variants().into_iter().enumerate() {
        let mut p = Pair::new(ctx, 70 + vi as u64);
        // 49452: the chunked two-stage argmax with a partial last chunk; 1000: one stage.
        for width in [49152 + 300, 1000] {
            let rows = 3;
            let mut x = p.fill(A.prefix(rows * width), 5.0);
            // Row 0: the maximum is the last value (in the partial chunk).
            x[width - 1] = 100.0;
            // Row 1: a tie between two chunks (777 and, when wide enough, 9000).
            x[width + 777] = 100.0;
            x[width + 9000.min(width - 1)] = 100.0;
            // Row 2: a tie between two invocations of one chunk, the later index first.
            x[2 * width + 100] = 100.0;
            x[2 * width + 37] = 100.0;
            p.gpu.write(A.prefix(rows * width), &x).unwrap();
            let mut got = [0u32; 3];
            p.gpu
                .argmax(A.prefix(rows * width), width, &mut got)
                .unwrap();
            for r in 0..rows {
                let row = &x[r * width..(r + 1) * width];
                let mut best = 0;
                for (i, &v) in row.iter().enumerate() {
                    if v > row[best] {
                        best = i;
                    }
                }
                assert_eq!(got[r] as usize, best, "width {width} row {r}");
            }
            assert_eq!(got, [width as u32 - 1, 777, 37], "width {width}");
        }
    }
}

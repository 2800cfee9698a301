//! Threaded CPU kernels give the same bits as serial ones, whatever the split.

extern crate std;

use std::vec;
use std::vec::Vec;

use super::*;
use crate::exec::{Parallel, Serial};
use crate::kv::{data_len, meta_len, KvGeometry, PagePool};
use crate::model::MAX_LAYERS;
use crate::quant::{quantize_weights, GgmlType};

type Pool = PagePool<Vec<u16>, Vec<u32>>;

/// A one-layer, one-slot global cache of `ctx` positions.
fn pool(ctx: usize, k_dim: usize, v_dim: usize, ty: KvType) -> Pool {
    let mut caps = [0; MAX_LAYERS];
    caps[0] = ctx;
    let g = KvGeometry {
        n_layer: 1,
        ctx,
        caps,
        k_dim,
        v_dim,
        ty,
    };
    let n = g.pages_per_slot().unwrap();
    let data = vec![0u16; data_len(&g, n).unwrap()];
    let meta = vec![0u32; meta_len(&g, 1, n).unwrap()];
    PagePool::new(g, 1, n, data, meta).unwrap()
}

/// Claims `threads` workers and runs the tasks backwards on the calling thread, so the split
/// differs from serial and the task order is reversed.
struct Backwards(usize);

impl Parallel for Backwards {
    fn threads(&self) -> usize {
        self.0
    }

    fn run(&self, tasks: usize, f: &(dyn Fn(usize) + Sync)) {
        for i in (0..tasks).rev() {
            f(i);
        }
    }
}

fn data(seed: &mut u64, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            (*seed >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

fn kernels() -> Kernels {
    Kernels::select(crate::quant::simd::tests::detected())
}

/// `out = W x` for `rows` rows on a fresh backend over `par`.
fn run_matmul(par: &dyn Parallel, w: &Tensor<'_>, x: &[f32], rows: usize) -> Vec<f32> {
    let mut arena = vec![0.0f32; x.len() + rows * w.rows];
    arena[..x.len()].copy_from_slice(x);
    let mut scratch = vec![0u8; rows * w.cols * 4];
    let mut kvp = pool(2, 2, 2, KvType::F16);
    let kv = kvp.slot(0).unwrap();
    let scores = Buf { off: 0, len: 0 };
    let mut b = CpuBackend::new(&mut arena, &mut scratch, scores, kv, kernels(), par);
    let xb = Buf {
        off: 0,
        len: x.len(),
    };
    let ob = Buf {
        off: x.len(),
        len: rows * w.rows,
    };
    b.matmul(w, xb, rows, ob).unwrap();
    let mut out = vec![0.0; rows * w.rows];
    b.read(ob, &mut out).unwrap();
    out
}

#[test]
fn threaded_matmul_is_bit_identical_to_serial() {
    let mut seed = 0x5eed_u64;
    for ty in [
        GgmlType::Q4_1,
        GgmlType::Q4_K,
        GgmlType::Q6_K,
        GgmlType::Q8_0,
    ] {
        let (n_out, cols) = (83, 512);
        let src = data(&mut seed, n_out * cols);
        let mut bytes = vec![0u8; ty.row_bytes(cols).unwrap() * n_out];
        quantize_weights(ty, &src, &mut bytes).unwrap();
        let w = Tensor {
            ty,
            rows: n_out,
            cols,
            data: &bytes,
            id: 0,
        };
        for rows in [1usize, 2, 7, 70] {
            let x = data(&mut seed, rows * cols);
            let want = run_matmul(&Serial, &w, &x, rows);
            // Row by row (the decode path) must agree with the chunk (the tile path).
            let by_row: Vec<f32> = x
                .chunks_exact(cols)
                .flat_map(|xr| run_matmul(&Serial, &w, xr, 1))
                .collect();
            assert_eq!(bits(&want), bits(&by_row), "{} rows {rows}", ty.name());
            for t in [2usize, 3, 5] {
                let got = run_matmul(&Backwards(t), &w, &x, rows);
                assert_eq!(
                    bits(&want),
                    bits(&got),
                    "{} rows {rows} threads {t}",
                    ty.name()
                );
            }
        }
    }
}

/// Three weights of `cols` columns (different heights and types, one activation format
/// between Q4_K and Q6_K, another for Q8_0) over the same input.
fn three(seed: &mut u64, cols: usize, tys: [GgmlType; 3]) -> Vec<(GgmlType, usize, Vec<u8>)> {
    tys.iter()
        .zip([83usize, 37, 64])
        .map(|(&ty, n)| {
            let src = data(seed, n * cols);
            let mut bytes = vec![0u8; ty.row_bytes(cols).unwrap() * n];
            quantize_weights(ty, &src, &mut bytes).unwrap();
            (ty, n, bytes)
        })
        .collect()
}

/// `matmul_many` (or `matmul_gated` with `act`) over `par`, returning every output region.
fn run_many(
    par: &dyn Parallel,
    ws: &[Tensor<'_>],
    x: &[f32],
    rows: usize,
    act: Option<Activation>,
) -> Vec<Vec<f32>> {
    let total: usize = ws.iter().map(|w| rows * w.rows).sum();
    let mut arena = vec![0.0f32; x.len() + total];
    arena[..x.len()].copy_from_slice(x);
    let mut scratch = vec![0u8; rows * ws[0].cols * 4];
    let mut kvp = pool(2, 2, 2, KvType::F16);
    let kv = kvp.slot(0).unwrap();
    let scores = Buf { off: 0, len: 0 };
    let mut b = CpuBackend::new(&mut arena, &mut scratch, scores, kv, kernels(), par);
    let xb = Buf {
        off: 0,
        len: x.len(),
    };
    let mut outs = Vec::new();
    let mut off = x.len();
    for w in ws {
        outs.push(Buf {
            off,
            len: rows * w.rows,
        });
        off += rows * w.rows;
    }
    let refs: Vec<&Tensor<'_>> = ws.iter().collect();
    match act {
        Some(a) => b
            .matmul_gated(refs[0], refs[1], xb, rows, outs[0], outs[1], a)
            .unwrap(),
        None => b.matmul_many(&refs, xb, rows, &outs).unwrap(),
    }
    outs.iter()
        .map(|&o| {
            let mut v = vec![0.0; o.len];
            b.read(o, &mut v).unwrap();
            v
        })
        .collect()
}

#[test]
fn matmul_many_and_gated_match_separate_calls_bit_for_bit() {
    let mut seed = 0x3a7_u64;
    let cols = 256;
    for tys in [
        [GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q4_K],
        [GgmlType::Q4_1, GgmlType::Q4_1, GgmlType::Q4_1],
        // Mixed activation formats: the fallback path.
        [GgmlType::Q5_0, GgmlType::Q4_K, GgmlType::Q8_0],
    ] {
        let ws_mem = three(&mut seed, cols, tys);
        let ws: Vec<Tensor<'_>> = ws_mem
            .iter()
            .map(|(ty, n, bytes)| Tensor {
                ty: *ty,
                rows: *n,
                cols,
                data: bytes,
                id: 0,
            })
            .collect();
        for rows in [1usize, 5, 33] {
            let x = data(&mut seed, rows * cols);
            let want: Vec<Vec<f32>> = ws
                .iter()
                .map(|w| run_matmul(&Serial, w, &x, rows))
                .collect();
            for t in [1usize, 2, 3, 7] {
                let got = run_many(&Backwards(t), &ws, &x, rows, None);
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(bits(w), bits(g), "{tys:?} part {i} rows {rows} threads {t}");
                }
            }
            // Gate and up of equal shape: the first weight twice over is not allowed to
            // alias, so use it and a same-shaped copy of it.
            let pair = [ws[0], ws[0]];
            for act in [Activation::Silu, Activation::GeluTanh] {
                let mut gate = want[0].clone();
                matmul::apply_act(&kernels(), act, &mut gate, &want[0]);
                for t in [1usize, 2, 3] {
                    let got = run_many(&Backwards(t), &pair, &x, rows, Some(act));
                    assert_eq!(
                        bits(&gate),
                        bits(&got[0]),
                        "{tys:?} {act:?} rows {rows} threads {t}"
                    );
                    assert_eq!(bits(&want[0]), bits(&got[1]), "{tys:?} up rows {rows}");
                }
            }
        }
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Attention over a cache of `len` random positions for the chunk at `pos0..len`.
fn run_attention(
    par: &dyn Parallel,
    p: &AttnParams,
    len: usize,
    pos0: usize,
    ty: KvType,
) -> Vec<f32> {
    let mut seed = 0xa77e_u64;
    let (kd, vd) = (p.n_head_kv * p.head_dim, p.n_head_kv * p.head_dim_v);
    let rows = len - pos0;
    let (qw, ow) = (p.n_head * p.head_dim, p.n_head * p.head_dim_v);
    let threads = par.threads();
    let mut arena = vec![0.0f32; rows * qw + rows * ow + threads * len];
    let q = data(&mut seed, rows * qw);
    arena[..q.len()].copy_from_slice(&q);
    let mut kvp = pool(len, kd, vd, ty);
    let mut kv = kvp.slot(0).unwrap();
    for t in 0..len {
        let (k, v) = kv.row_mut(0, t).unwrap();
        store_row(&kernels(), ty, &data(&mut seed, kd), k).unwrap();
        store_row(&kernels(), ty, &data(&mut seed, vd), v).unwrap();
    }
    let mut scratch = vec![0u8; 4];
    let scores = Buf {
        off: rows * (qw + ow),
        len: threads * len,
    };
    let mut b = CpuBackend::new(&mut arena, &mut scratch, scores, kv, kernels(), par);
    let positions: Vec<u32> = (pos0 as u32..len as u32).collect();
    let qb = Buf {
        off: 0,
        len: rows * qw,
    };
    let ob = Buf {
        off: rows * qw,
        len: rows * ow,
    };
    b.attention(p, qb, &positions, ob).unwrap();
    let mut out = vec![0.0; rows * ow];
    b.read(ob, &mut out).unwrap();
    out
}

#[test]
fn threaded_attention_is_bit_identical_to_serial() {
    let p = AttnParams {
        layer: 0,
        n_head: 9,
        n_head_kv: 3,
        head_dim: 64,
        head_dim_v: 64,
        scale: 0.125,
        window: None,
    };
    for ty in [KvType::F16, KvType::Q8_0] {
        for (len, pos0) in [(1usize, 0usize), (40, 39), (40, 31), (33, 0), (130, 100)] {
            let want = run_attention(&Serial, &p, len, pos0, ty);
            for t in [2usize, 3, 4, 7] {
                let got = run_attention(&Backwards(t), &p, len, pos0, ty);
                assert_eq!(
                    bits(&want),
                    bits(&got),
                    "{ty:?} len {len} pos0 {pos0} threads {t}"
                );
            }
        }
    }
}

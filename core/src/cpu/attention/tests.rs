//! Attention against a straightforward reference, and the same bits for any split: thread
//! counts, the two schedules, scratch sizes and chunkings.

extern crate std;

use std::vec;
use std::vec::Vec;

use super::*;
use crate::exec::{Parallel, Serial};
use crate::kv::{data_len, meta_len, KvGeometry, PagePool};
use crate::model::MAX_LAYERS;
use crate::quant::dequantize_row;

type Pool = PagePool<Vec<u16>, Vec<u32>>;

/// Claims `threads` workers and runs the tasks backwards on the calling thread.
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

fn kernels() -> Kernels {
    Kernels::select(crate::quant::simd::tests::detected())
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    fn data(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.next() * scale).collect()
    }
}

/// A shape under test.
#[derive(Clone, Copy, Debug)]
struct Case {
    n_head: usize,
    n_head_kv: usize,
    head_dim: usize,
    window: Option<u32>,
    /// Positions the layer keeps (a ring when below `len`).
    cap: usize,
    /// Positions written.
    len: usize,
    ty: KvType,
}

impl Case {
    fn params(&self) -> AttnParams {
        AttnParams {
            layer: 0,
            n_head: self.n_head,
            n_head_kv: self.n_head_kv,
            head_dim: self.head_dim,
            head_dim_v: self.head_dim,
            scale: 1.0 / (self.head_dim as f32).sqrt(),
            window: self.window,
        }
    }

    /// A one-layer cache with positions `0..len` written in order (a ring keeps the last
    /// `cap`), and the f32 keys and values that were stored.
    fn pool(&self, k: &Kernels) -> Pool {
        let kd = self.n_head_kv * self.head_dim;
        let mut caps = [0; MAX_LAYERS];
        caps[0] = self.cap;
        let g = KvGeometry {
            n_layer: 1,
            ctx: self.len.max(self.cap),
            caps,
            k_dim: kd,
            v_dim: kd,
            ty: self.ty,
        };
        let n = g.pages_per_slot().unwrap();
        let data = vec![0u16; data_len(&g, n).unwrap()];
        let meta = vec![0u32; meta_len(&g, 1, n).unwrap()];
        let mut pool = PagePool::new(g, 1, n, data, meta).unwrap();
        let mut rng = Rng(0x5eed ^ (self.len as u64) << 8);
        let mut kv = pool.slot(0).unwrap();
        for t in 0..self.len {
            let (kr, vr) = kv.row_mut(0, t).unwrap();
            // Keys scaled so the softmax is neither flat nor one-hot.
            super::super::store_row(k, self.ty, &rng.data(kd, 2.5), kr).unwrap();
            super::super::store_row(k, self.ty, &rng.data(kd, 1.0), vr).unwrap();
        }
        pool
    }
}

/// Runs attention for rows at `positions` with `scratch` values of scratch.
fn attend(
    c: &Case,
    pool: &mut Pool,
    k: &Kernels,
    par: &dyn Parallel,
    q: &[f32],
    positions: &[u32],
    scratch: usize,
) -> Vec<u32> {
    let p = c.params();
    let kv = pool.slot(0).unwrap();
    let view = kv.layer(0).unwrap();
    let job = Job {
        p: &p,
        q,
        positions,
        kv: KvRead {
            view,
            ty: c.ty,
            kernels: k,
        },
    };
    let mut out = vec![f32::NAN; positions.len() * c.n_head * c.head_dim];
    let mut sc = vec![f32::NAN; scratch];
    run(par, &job, &mut out, &mut sc).unwrap();
    out.iter().map(|v| v.to_bits()).collect()
}

/// The reference: per (row, head), f64 softmax of the scaled scores (with Q rounded to f16,
/// or the scalar Q8_0 dot), f64 sum of the dequantized values.
fn reference(c: &Case, pool: &mut Pool, q: &[f32], positions: &[u32]) -> Vec<f32> {
    let p = c.params();
    let (d, g) = (c.head_dim, c.n_head / c.n_head_kv);
    let kv = pool.slot(0).unwrap();
    let view = kv.layer(0).unwrap();
    let scalar = Kernels::scalar();
    let row = |units: &[u16], kvh: usize| -> Vec<f32> {
        let mut o = vec![0.0; d];
        match c.ty {
            KvType::F16 => {
                for (o, &b) in o.iter_mut().zip(&units[kvh * d..(kvh + 1) * d]) {
                    *o = f16::from_bits(b).to_f32();
                }
            }
            KvType::Q8_0 => {
                let per = d / 32 * Q8_UNITS;
                let b: &[u8] = bytemuck::cast_slice(&units[kvh * per..(kvh + 1) * per]);
                dequantize_row(GgmlType::Q8_0, b, &mut o).unwrap();
            }
        }
        o
    };
    let mut out = Vec::new();
    for (r, &pos) in positions.iter().enumerate() {
        let pos = pos as usize;
        let first = first_visible(&p, pos);
        for h in 0..c.n_head {
            let kvh = h / g;
            let qh = &q[(r * c.n_head + h) * d..][..d];
            let s: Vec<f64> = (first..=pos)
                .map(|t| {
                    let kr = view.key(t).unwrap();
                    let dot = match c.ty {
                        KvType::F16 => row(kr, kvh)
                            .iter()
                            .zip(qh)
                            .map(|(&k, &q)| f64::from(k) * f64::from(f16::from_f32(q).to_f32()))
                            .sum::<f64>(),
                        KvType::Q8_0 => {
                            let mut q8 = vec![0u8; d / 32 * 34];
                            scalar.quantize_row(GgmlType::Q8_0, qh, &mut q8).unwrap();
                            let per = d / 32 * Q8_UNITS;
                            let kb: &[u8] = bytemuck::cast_slice(&kr[kvh * per..(kvh + 1) * per]);
                            f64::from(scalar.vec_dot(GgmlType::Q8_0, d, kb, &q8).unwrap())
                        }
                    };
                    dot * f64::from(p.scale)
                })
                .collect();
            let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = s.iter().map(|&v| (v - m).exp()).collect();
            let sum: f64 = e.iter().sum();
            let mut o = vec![0.0f64; d];
            for (j, t) in (first..=pos).enumerate() {
                let v = row(view.value(t).unwrap(), kvh);
                for (o, &v) in o.iter_mut().zip(&v) {
                    *o += e[j] / sum * f64::from(v);
                }
            }
            out.extend(o.iter().map(|&v| v as f32));
        }
    }
    out
}

fn cases() -> Vec<Case> {
    let f = KvType::F16;
    let q8 = KvType::Q8_0;
    let c = |n_head, n_head_kv, head_dim, window, cap, len, ty| Case {
        n_head,
        n_head_kv,
        head_dim,
        window,
        cap,
        len,
        ty,
    };
    vec![
        // SmolLM2: 9 heads over 3 KV heads of 64.
        c(9, 3, 64, None, 700, 700, f),
        c(9, 3, 64, None, 300, 300, q8),
        // Gemma 3: 4 over 1 of 256, sliding window 100 in a ring of 150 (it wrapped).
        c(4, 1, 256, Some(100), 150, 420, f),
        c(4, 1, 256, None, 260, 260, f),
        c(4, 1, 256, Some(200), 260, 600, q8),
        // No grouping, and a head width that is not a multiple of 8.
        c(3, 3, 36, None, 230, 230, f),
        c(6, 2, 72, Some(250), 300, 333, f),
    ]
}

#[test]
fn attention_matches_the_reference() {
    let k = kernels();
    for c in cases() {
        let mut pool = c.pool(&k);
        let mut rng = Rng(0x9e);
        // A prefill chunk at the end, and single decode rows (the split schedule for long
        // ranges with several threads).
        let chunk: Vec<u32> = ((c.len - 7) as u32..c.len as u32).collect();
        let q = rng.data(chunk.len() * c.n_head * c.head_dim, 1.0);
        let want = reference(&c, &mut pool, &q, &chunk);
        let scratch = scratch_len(c.n_head, c.n_head_kv, c.head_dim, c.len, 4).unwrap();
        for par in [&Serial as &dyn Parallel, &Backwards(4)] {
            let got = attend(&c, &mut pool, &k, par, &q, &chunk, scratch);
            let last = &q[(chunk.len() - 1) * c.n_head * c.head_dim..];
            let one = attend(
                &c,
                &mut pool,
                &k,
                par,
                last,
                &chunk[chunk.len() - 1..],
                scratch,
            );
            let w = c.n_head * c.head_dim;
            let mut worst = 0.0f32;
            for (i, (&g, &r)) in got.iter().zip(&want).enumerate() {
                let g = f32::from_bits(g);
                worst = worst.max((g - r).abs());
                assert!((g - r).abs() <= 5e-4, "{c:?} value {i}: {g} vs {r}");
            }
            std::println!("{c:?}: max_diff {worst:.2e}");
            assert_eq!(
                one,
                got[got.len() - w..],
                "{c:?} decode row == last chunk row"
            );
        }
    }
}

#[test]
fn attention_bits_do_not_depend_on_threads_schedule_scratch_or_chunking() {
    let k = kernels();
    for c in cases() {
        let mut pool = c.pool(&k);
        let mut rng = Rng(0x17);
        let w = c.n_head * c.head_dim;
        let full = scratch_len(c.n_head, c.n_head_kv, c.head_dim, c.len, 8).unwrap();
        // Enough for one row of one head per task, and for one task only.
        let tiny = c.len + 4;
        for rows in [1usize, 5, 13] {
            let positions: Vec<u32> = ((c.len - rows) as u32..c.len as u32).collect();
            let q = rng.data(rows * w, 1.0);
            let want = attend(&c, &mut pool, &k, &Serial, &q, &positions, full);
            for t in [1usize, 2, 3, 4, 7] {
                for scratch in [full, full / 3, 8 * (c.len + c.head_dim), tiny] {
                    let got = attend(&c, &mut pool, &k, &Backwards(t), &q, &positions, scratch);
                    assert_eq!(want, got, "{c:?} rows {rows} threads {t} scratch {scratch}");
                }
            }
            // Row by row (decode steps) gives the chunk's bits.
            for (r, &pos) in positions.iter().enumerate() {
                let qr = &q[r * w..(r + 1) * w];
                let got = attend(&c, &mut pool, &k, &Backwards(3), qr, &[pos], full);
                assert_eq!(got, want[r * w..(r + 1) * w], "{c:?} row {r}");
            }
        }
    }
}

#[test]
fn decode_split_runs_for_long_ranges_only() {
    let c = cases()[0];
    let k = kernels();
    let mut pool = c.pool(&k);
    let p = c.params();
    let slot = pool.slot(0).unwrap();
    let kv = KvRead {
        view: slot.layer(0).unwrap(),
        ty: c.ty,
        kernels: &k,
    };
    let job = |positions: &'static [u32]| Job {
        p: &p,
        q: &[],
        positions,
        kv,
    };
    let big = 1 << 20;
    assert!(split::applies(&Backwards(2), &job(&[699]), big));
    assert!(!split::applies(&Serial, &job(&[699]), big));
    assert!(!split::applies(&Backwards(2), &job(&[100]), big));
    assert!(!split::applies(&Backwards(2), &job(&[698, 699]), big));
    assert!(!split::applies(&Backwards(2), &job(&[699]), 1000));
}

#[test]
fn too_little_scratch_is_an_error() {
    let c = cases()[0];
    let k = kernels();
    let mut pool = c.pool(&k);
    let p = c.params();
    let kv = pool.slot(0).unwrap();
    let job = Job {
        p: &p,
        q: &[0.0; 9 * 64],
        positions: &[699],
        kv: KvRead {
            view: kv.layer(0).unwrap(),
            ty: c.ty,
            kernels: &k,
        },
    };
    let mut out = vec![0.0; 9 * 64];
    let mut sc = vec![0.0; 699];
    assert_eq!(
        run(&Backwards(2), &job, &mut out, &mut sc),
        Err(CpuError::KvRange)
    );
}

/// Time per call of the shapes the benchmarks run (`cargo test --release -p glimmer-core --
/// --ignored attention_speed --nocapture`); two tasks run back to back on one thread.
#[test]
#[ignore]
fn attention_speed() {
    let k = kernels();
    for (name, n_head, n_head_kv, head_dim, window) in [
        ("smollm2", 9, 3, 64, None),
        ("gemma3 sliding", 4, 1, 256, Some(512)),
        ("gemma3 global", 4, 1, 256, None),
    ] {
        let c = Case {
            n_head,
            n_head_kv,
            head_dim,
            window,
            cap: 640,
            len: 640,
            ty: KvType::F16,
        };
        let mut pool = c.pool(&k);
        let scratch = scratch_len(n_head, n_head_kv, head_dim, 640, 2).unwrap();
        let mut rng = Rng(1);
        let w = n_head * head_dim;
        for (what, positions) in [
            ("prefill 512", (0u32..512).collect::<Vec<_>>()),
            ("decode @600", vec![600]),
            ("decode @128", vec![128]),
        ] {
            let q = rng.data(positions.len() * w, 1.0);
            let mut best = f64::INFINITY;
            let reps = if positions.len() > 1 { 30 } else { 500 };
            for _ in 0..reps {
                let t0 = std::time::Instant::now();
                attend(&c, &mut pool, &k, &Backwards(2), &q, &positions, scratch);
                best = best.min(t0.elapsed().as_secs_f64());
            }
            std::println!("{name:>15} {what}: {:.1} us", best * 1e6);
        }
    }
}

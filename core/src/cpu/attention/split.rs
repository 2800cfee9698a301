//! The decode split: one query row over a long context, cut by positions so that every
//! thread has work whatever the number of heads.
//!
//! Three dispatches, over fixed pieces (never over the thread count):
//! 1. (block of [`BLOCK`] positions, KV head): scaled scores of the group's query heads and
//!    their maximum per block;
//! 2. the same items: `e = exp(s - m)` with the row's maximum `m`, and the sum per block;
//! 3. (KV head, range of value columns): the weights `e / sum` and the values, position by
//!    position in order.
//!
//! Between them the calling thread merges the block maxima and (in block order, in f64) the
//! block sums. Scratch: the prepared queries `(n_head, q_units)`, the scores
//! `(blocks, n_head, BLOCK)`, a value per (block, head) and two per head.

use core::sync::atomic::{AtomicBool, Ordering};

use crate::exec::{split_range, Parallel};
use crate::plan::KvType;

use super::super::shared::Shared;
use super::super::CpuError;
use super::{softmax, Job, BLOCK};

/// Shortest visible range worth three dispatches.
const MIN_SPAN: usize = 192;

/// Heads and columns the value pass keeps on the stack at once.
const ACC_HEADS: usize = 4;
/// See [`ACC_HEADS`].
const ACC_COLS: usize = 128;

/// The blocks of one row: the first block index and how many.
fn blocks(job: &Job<'_>) -> (usize, usize, usize, usize) {
    let pos = job.positions[0] as usize;
    let first = job.first(0);
    let b0 = first / BLOCK;
    (first, pos + 1, b0, pos / BLOCK + 1 - b0)
}

/// `f32`s of scratch the split needs.
fn need(job: &Job<'_>) -> Option<usize> {
    let (_, _, _, nb) = blocks(job);
    let h = job.p.n_head;
    let q = h.checked_mul(job.q_units())?;
    let s = nb.checked_mul(h)?.checked_mul(BLOCK + 1)?;
    q.checked_add(s)?.checked_add(2 * h)
}

/// Whether the split runs this call: one row, several threads, a long range, and scratch.
pub(super) fn applies(par: &dyn Parallel, job: &Job<'_>, scratch: usize) -> bool {
    if job.positions.len() != 1 || par.threads() < 2 {
        return false;
    }
    let (first, end, _, _) = blocks(job);
    end - first >= MIN_SPAN && need(job).is_some_and(|n| n <= scratch)
}

/// The positions of block `b` the row sees, and where the block starts.
fn block_range(first: usize, end: usize, b0: usize, b: usize) -> (usize, usize, usize) {
    let bs = (b0 + b) * BLOCK;
    (first.max(bs), end.min(bs + BLOCK), bs)
}

/// Runs the split.
pub(super) fn run(
    par: &dyn Parallel,
    job: &Job<'_>,
    out: &mut [f32],
    scratch: &mut [f32],
) -> Result<(), CpuError> {
    let p = job.p;
    let (nh, nkv, g) = (p.n_head, p.n_head_kv, job.group());
    let qu = job.q_units();
    let (first, end, b0, nb) = blocks(job);
    let need = need(job).ok_or(CpuError::KvRange)?;
    let scratch = scratch.get_mut(..need).ok_or(CpuError::KvRange)?;
    let (qp, rest) = scratch.split_at_mut(nh * qu);
    let (sc, rest) = rest.split_at_mut(nb * nh * BLOCK);
    let (st, rest) = rest.split_at_mut(nb * nh);
    let (mx, inv) = rest.split_at_mut(nh);
    for h in 0..nh {
        job.prep_query(0, h, &mut qp[h * qu..(h + 1) * qu])?;
    }
    let qp = &*qp;
    let items = nb * nkv;
    let tasks = par.threads().min(items);
    let failed = AtomicBool::new(false);

    // 1. Scores and block maxima.
    {
        let scs = Shared::new(&mut *sc);
        let sts = Shared::new(&mut *st);
        par.run(tasks, &|t| {
            for it in split_range(items, tasks, 1, t) {
                let (b, kvh) = (it / nkv, it % nkv);
                let h0 = b * nh + kvh * g;
                // SAFETY: item (b, kvh) owns the scores and maxima of block `b`, heads
                // `kvh·g..(kvh+1)·g`; items are split between tasks without overlap.
                let parts =
                    unsafe { (scs.part(h0 * BLOCK..(h0 + g) * BLOCK), sts.part(h0..h0 + g)) };
                let (Some(region), Some(maxima)) = parts else {
                    failed.store(true, Ordering::Relaxed);
                    return;
                };
                let (a, e, bs) = block_range(first, end, b0, b);
                let q = &qp[kvh * g * qu..];
                let r = job.for_runs(a, e, |t, k, _, n| {
                    job.scores(kvh, k, n, q, g, &mut region[t - bs..], BLOCK)
                });
                if r.is_err() {
                    failed.store(true, Ordering::Relaxed);
                    return;
                }
                for (gi, m) in maxima.iter_mut().enumerate() {
                    *m = softmax::max(&region[gi * BLOCK + a - bs..gi * BLOCK + e - bs]);
                }
            }
        });
    }
    if failed.load(Ordering::Relaxed) {
        return Err(CpuError::TaskFailed);
    }
    for (h, m) in mx.iter_mut().enumerate() {
        *m = (0..nb)
            .map(|b| st[b * nh + h])
            .fold(f32::NEG_INFINITY, |a, v| if v > a { v } else { a });
    }

    // 2. Numerators and block sums.
    {
        let mx = &*mx;
        let scs = Shared::new(&mut *sc);
        let sts = Shared::new(&mut *st);
        par.run(tasks, &|t| {
            for it in split_range(items, tasks, 1, t) {
                let (b, kvh) = (it / nkv, it % nkv);
                let h0 = b * nh + kvh * g;
                // SAFETY: as in the first dispatch.
                let parts =
                    unsafe { (scs.part(h0 * BLOCK..(h0 + g) * BLOCK), sts.part(h0..h0 + g)) };
                let (Some(region), Some(sums)) = parts else {
                    failed.store(true, Ordering::Relaxed);
                    return;
                };
                let (a, e, bs) = block_range(first, end, b0, b);
                for (gi, s) in sums.iter_mut().enumerate() {
                    let x = &mut region[gi * BLOCK + a - bs..gi * BLOCK + e - bs];
                    *s = job.kv.kernels.exp_sum_f32(x, mx[kvh * g + gi]);
                }
            }
        });
    }
    if failed.load(Ordering::Relaxed) {
        return Err(CpuError::TaskFailed);
    }
    for (h, v) in inv.iter_mut().enumerate() {
        *v = softmax::inv_sum((0..nb).map(|b| st[b * nh + h]));
    }

    // 3. Weights and values, by column ranges.
    let (sc, inv) = (&*sc, &*inv);
    let dv = p.head_dim_v;
    let unit = match job.kv.ty {
        KvType::F16 => 8,
        KvType::Q8_0 => 32,
    };
    let cap = dv.div_ceil(unit).max(1);
    let threads = par.threads();
    let nc = (1..=cap)
        .find(|&k| (nkv * k).is_multiple_of(threads))
        .unwrap_or(cap);
    let items = nkv * nc;
    let tasks = threads.min(items);
    let out = Shared::new(out);
    par.run(tasks, &|t| {
        for it in split_range(items, tasks, 1, t) {
            let (kvh, c) = (it / nc, it % nc);
            let cols = split_range(dv, nc, unit, c);
            let r = values(job, kvh, cols, (first, end, b0, nb), sc, inv, &out);
            if r.is_err() {
                failed.store(true, Ordering::Relaxed);
                return;
            }
        }
    });
    if failed.load(Ordering::Relaxed) {
        return Err(CpuError::TaskFailed);
    }
    Ok(())
}

/// Columns `cols` of the outputs of KV head `kvh`'s query heads.
fn values(
    job: &Job<'_>,
    kvh: usize,
    cols: core::ops::Range<usize>,
    (first, end, b0, nb): (usize, usize, usize, usize),
    sc: &[f32],
    inv: &[f32],
    out: &Shared<'_, f32>,
) -> Result<(), CpuError> {
    let p = job.p;
    let (nh, g, dv) = (p.n_head, job.group(), p.head_dim_v);
    let mut acc = [0.0f32; ACC_HEADS * ACC_COLS];
    let mut w = [0.0f32; ACC_HEADS * BLOCK];
    for h0 in (kvh * g..(kvh + 1) * g).step_by(ACC_HEADS) {
        let heads = h0..(h0 + ACC_HEADS).min((kvh + 1) * g);
        let ng = heads.len();
        for c0 in cols.clone().step_by(ACC_COLS) {
            let part = c0..(c0 + ACC_COLS).min(cols.end);
            let cw = part.len();
            let acc = &mut acc[..ng * cw];
            acc.fill(0.0);
            for b in 0..nb {
                let (a, e, bs) = block_range(first, end, b0, b);
                for (gi, h) in heads.clone().enumerate() {
                    let src = &sc[(b * nh + h) * BLOCK..][a - bs..e - bs];
                    let dst = &mut w[gi * BLOCK + a - bs..gi * BLOCK + e - bs];
                    dst.copy_from_slice(src);
                    softmax::weights(job.kv.kernels, job.kv.ty, dst, inv[h]);
                }
                job.for_runs(a, e, |t, _, v, n| {
                    let wt = &w[t - bs..];
                    job.values(kvh, v, n, part.clone(), wt, BLOCK, acc, cw, ng)
                })?;
            }
            for (gi, h) in heads.clone().enumerate() {
                // SAFETY: item (kvh, cols) owns columns `cols` of the heads of `kvh`; the
                // column ranges of one head are disjoint between items.
                let o = unsafe { out.part(h * dv + part.start..h * dv + part.end) };
                o.ok_or(CpuError::BadRegion)?
                    .copy_from_slice(&acc[gi * cw..(gi + 1) * cw]);
            }
        }
    }
    Ok(())
}

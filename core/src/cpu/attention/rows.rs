//! The row schedule: each task takes items of (up to [`ROW_BLOCK`] query rows, one KV head,
//! some of its query heads) and computes them whole: scores for every query of the item
//! against each key row of the union of their ranges, the softmax per (row, head) over its
//! own range, then the weighted values.
//!
//! Items are dealt round-robin, so the long rows at the end of a causal prefill chunk spread
//! over every task. How many heads and rows an item takes follows from the scratch each task
//! gets (the results do not depend on it).

use core::sync::atomic::{AtomicBool, Ordering};

use crate::exec::Parallel;

use super::super::shared::Shared;
use super::super::CpuError;
use super::{softmax, Job, ROW_BLOCK};

/// `f32`s of the stack buffer a query goes to when the scratch only holds scores.
const STACK_Q: usize = 512;

/// How the items are cut and how much scratch each task has.
#[derive(Clone, Copy, Debug)]
struct Cut {
    /// Tasks.
    tasks: usize,
    /// Scratch `f32`s per task.
    per_task: usize,
    /// Query heads per item (of one KV head).
    heads: usize,
    /// Query rows per item.
    rows: usize,
    /// The prepared query goes on the stack, not in the scratch (then `heads = rows = 1`).
    q_on_stack: bool,
}

impl Cut {
    fn new(job: &Job<'_>, threads: usize, scratch: usize) -> Result<Self, CpuError> {
        let n = job.positions.len();
        let g = job.group();
        let qu = job.q_units();
        let vis = (0..n)
            .map(|r| job.positions[r] as usize + 1 - job.first(r))
            .max()
            .unwrap_or(0);
        let mut tasks = threads.max(1);
        loop {
            let s = scratch / tasks;
            let fits = |h: usize, r: usize| h * r * (qu + vis + r - 1) <= s;
            if let Some(most) = (1..=g).rev().find(|&h| fits(h, 1)) {
                let rows = (1..=ROW_BLOCK.min(n).max(1))
                    .rev()
                    .find(|&r| fits(most, r))
                    .unwrap_or(1);
                // Fewer heads per item when there are fewer items than tasks (a decode row
                // of a model with one KV head).
                let per_sub = n.div_ceil(rows) * job.p.n_head_kv;
                let subs = tasks.div_ceil(per_sub).clamp(1, g);
                let heads = most.min(g.div_ceil(subs));
                return Ok(Cut {
                    tasks,
                    per_task: s,
                    heads,
                    rows,
                    q_on_stack: false,
                });
            }
            if vis <= s && qu <= STACK_Q {
                return Ok(Cut {
                    tasks,
                    per_task: s,
                    heads: 1,
                    rows: 1,
                    q_on_stack: true,
                });
            }
            if tasks == 1 {
                return Err(CpuError::KvRange);
            }
            tasks -= 1;
        }
    }
}

/// Runs the row schedule.
pub(super) fn run(
    par: &dyn Parallel,
    job: &Job<'_>,
    out: &mut [f32],
    scratch: &mut [f32],
) -> Result<(), CpuError> {
    let n = job.positions.len();
    let cut = Cut::new(job, par.threads(), scratch.len())?;
    let g = job.group();
    let subs = g.div_ceil(cut.heads);
    let items = n.div_ceil(cut.rows) * job.p.n_head_kv * subs;
    let tasks = cut.tasks.min(items);
    let out = Shared::new(out);
    let scratch = Shared::new(scratch);
    let failed = AtomicBool::new(false);
    par.run(tasks, &|t| {
        // SAFETY: task `t` takes its own `per_task` values of the scratch.
        let Some(sc) = (unsafe { scratch.part(t * cut.per_task..(t + 1) * cut.per_task) }) else {
            failed.store(true, Ordering::Relaxed);
            return;
        };
        let mut stack_q = [0.0f32; STACK_Q];
        for item in (t..items).step_by(tasks) {
            let rb = item / (job.p.n_head_kv * subs);
            let kvh = item / subs % job.p.n_head_kv;
            let h0 = kvh * g + item % subs * cut.heads;
            let heads = h0..(h0 + cut.heads).min((kvh + 1) * g);
            let rows = rb * cut.rows..((rb + 1) * cut.rows).min(n);
            let q_buf = cut.q_on_stack.then_some(&mut stack_q[..]);
            if do_item(job, rows, kvh, heads, sc, q_buf, &out).is_err() {
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

/// The positions `lo..hi` rows `rows` see together.
fn union(job: &Job<'_>, rows: &core::ops::Range<usize>) -> (usize, usize) {
    let lo = rows.clone().map(|r| job.first(r)).min().unwrap_or(0);
    let hi = rows
        .clone()
        .map(|r| job.positions[r] as usize + 1)
        .max()
        .unwrap_or(0);
    (lo, hi)
}

/// One item; rows whose union of ranges does not fit the scratch go one at a time.
fn do_item(
    job: &Job<'_>,
    rows: core::ops::Range<usize>,
    kvh: usize,
    heads: core::ops::Range<usize>,
    sc: &mut [f32],
    mut q_buf: Option<&mut [f32]>,
    out: &Shared<'_, f32>,
) -> Result<(), CpuError> {
    let (lo, hi) = union(job, &rows);
    let nq = rows.len() * heads.len();
    let qu = if q_buf.is_some() { 0 } else { job.q_units() };
    if nq * (qu + hi - lo) <= sc.len() {
        return block(job, rows, kvh, heads, sc, q_buf, out);
    }
    for r in rows {
        block(
            job,
            r..r + 1,
            kvh,
            heads.clone(),
            sc,
            q_buf.as_deref_mut(),
            out,
        )?;
    }
    Ok(())
}

/// Attention of query heads `heads` (of KV head `kvh`) of rows `rows`, all at once.
fn block(
    job: &Job<'_>,
    rows: core::ops::Range<usize>,
    kvh: usize,
    heads: core::ops::Range<usize>,
    sc: &mut [f32],
    q_buf: Option<&mut [f32]>,
    out: &Shared<'_, f32>,
) -> Result<(), CpuError> {
    let p = job.p;
    if rows.len() > ROW_BLOCK {
        return Err(CpuError::BadRegion);
    }
    let (lo, hi) = union(job, &rows);
    let span = hi - lo;
    let ng = heads.len();
    let nq = rows.len() * ng;
    let qu = job.q_units();
    let (q, s) = match q_buf {
        Some(b) => (b, &mut sc[..]),
        None => sc.split_at_mut((nq * qu).min(sc.len())),
    };
    let q = q.get_mut(..nq * qu).ok_or(CpuError::BadRegion)?;
    let s = s.get_mut(..nq * span).ok_or(CpuError::BadRegion)?;
    for (ri, r) in rows.clone().enumerate() {
        for (gi, h) in heads.clone().enumerate() {
            let i = ri * ng + gi;
            job.prep_query(r, h, &mut q[i * qu..(i + 1) * qu])?;
        }
    }
    job.for_runs(lo, hi, |t, k, _, n| {
        job.scores(kvh, k, n, q, nq, &mut s[t - lo..], span)
    })?;
    for (ri, r) in rows.clone().enumerate() {
        let (f, e) = (job.first(r), job.positions[r] as usize + 1);
        for gi in 0..ng {
            let row = &mut s[(ri * ng + gi) * span..(ri * ng + gi + 1) * span];
            row[..f - lo].fill(0.0);
            row[e - lo..].fill(0.0);
            softmax::row(job.kv.kernels, job.kv.ty, &mut row[f - lo..e - lo], f);
        }
    }
    let dv = p.head_dim_v;
    let ow = p.n_head * dv;
    let mut outs: [Option<&mut [f32]>; ROW_BLOCK] = Default::default();
    for (o, r) in outs.iter_mut().zip(rows.clone()) {
        let at = r * ow;
        // SAFETY: items own disjoint (row, head) pairs, and (row `r`, `heads`) owns these
        // output values; the parts of one item are different rows.
        let part = unsafe { out.part(at + heads.start * dv..at + heads.end * dv) };
        let part = part.ok_or(CpuError::BadRegion)?;
        part.fill(0.0);
        *o = Some(part);
    }
    job.for_runs(lo, hi, |t, _, v, n| {
        for (ri, o) in outs.iter_mut().enumerate().take(rows.len()) {
            let o = o.as_deref_mut().ok_or(CpuError::BadRegion)?;
            let w = &s[ri * ng * span + (t - lo)..];
            job.values(kvh, v, n, 0..dv, w, span, o, dv, ng)?;
        }
        Ok(())
    })
}

//! The threaded matmul: activation rows quantized in parallel, then the weight rows split
//! between tasks, each task computing its rows for every activation row.
//!
//! [`matmul_many`] does the same for several weights over one input (Q, K and V; gate and
//! up): the input is quantized once and every weight's rows go to the tasks of a single
//! dispatch, in proportion to their bytes. With an activation it also applies
//! `act(gate) · up` on each task's rows, so the feed-forward input costs one dispatch.
//!
//! Every output value is one call of the same dot kernel on the same bytes whatever the split,
//! so results do not depend on the number of threads or on how the weights are grouped.

use core::ops::Range;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::exec::{split_range, Buf, Parallel};
use crate::model::{Activation, Tensor};
use crate::quant::{self, GgmlType, Kernels};

use super::ops;
use super::shared::Shared;
use super::CpuError;

/// Activation rows one tile call covers (bounds the stack buffer of a task).
const ACT_GROUP: usize = 64;

/// Most weights one [`matmul_many`] call takes (Q, K, V and Glimmer's output gate).
pub(super) const MAX_PARTS: usize = 4;

/// One weight of a [`matmul_many`] call and the arena range its output goes to.
#[derive(Clone, Copy)]
pub(super) struct Part<'t, 'w> {
    /// The weight.
    pub w: &'t Tensor<'w>,
    /// Where its `(rows, w.rows)` outputs go in the arena.
    pub out: Buf,
}

/// The arena range of a region (`None` on overflow).
fn range(b: Buf) -> Option<Range<usize>> {
    Some(b.off..b.off.checked_add(b.len)?)
}

/// `os[r] = W · xs[r]` for `rows` rows, with `scratch` holding the quantized activations.
pub(super) fn matmul(
    k: &Kernels,
    par: &dyn Parallel,
    w: &Tensor<'_>,
    xs: &[f32],
    rows: usize,
    scratch: &mut [u8],
    os: &mut [f32],
) -> Result<(), CpuError> {
    let wrb = check_weight(w, rows, xs.len(), os.len())?;
    let act_ty = quant::vec_dot_type(w.ty);
    let acts = quantize(k, par, act_ty, w.cols, xs, rows, scratch)?;
    let job = Job {
        w,
        wrb,
        out: Shared::new(os),
    };
    run_parts(k, par, &[Some(job)], rows, acts, None)
}

/// Several weights over the same input (arena range `x`), each into its own arena range. With
/// `act`, `parts` is `[gate, up]` of equal shape and gate's range ends up holding
/// `act(gate) · up`. Weights that need different activation formats fall back to one
/// [`matmul`] each (and the activation then runs after them).
#[allow(clippy::too_many_arguments)]
pub(super) fn matmul_many(
    k: &Kernels,
    par: &dyn Parallel,
    arena: &mut [f32],
    x: Buf,
    parts: &[Part<'_, '_>],
    rows: usize,
    scratch: &mut [u8],
    act: Option<Activation>,
) -> Result<(), CpuError> {
    let first = parts.first().ok_or(CpuError::BadRegion)?;
    if parts.len() > MAX_PARTS || (act.is_some() && parts.len() != 2) {
        return Err(CpuError::BadRegion);
    }
    // Every range inside the arena and pairwise disjoint: what makes the parts below sound.
    // `ranges[0]` is `x`, `ranges[1 + i]` part `i`'s output.
    let mut ranges: [Range<usize>; MAX_PARTS + 1] = Default::default();
    let bufs = core::iter::once(x).chain(parts.iter().map(|p| p.out));
    for (i, b) in bufs.enumerate() {
        let a = range(b).ok_or(CpuError::BadRegion)?;
        if a.end > arena.len()
            || ranges[..i]
                .iter()
                .any(|r| a.start < r.end && r.start < a.end)
        {
            return Err(CpuError::BadRegion);
        }
        ranges[i] = a;
    }
    let outs = &ranges[1..=parts.len()];
    let mut wrbs = [0usize; MAX_PARTS];
    for (r, p) in wrbs.iter_mut().zip(parts) {
        *r = check_weight(p.w, rows, x.len, p.out.len)?;
    }
    if act.is_some() && parts[1].w.rows != first.w.rows {
        return Err(CpuError::BadRegion);
    }
    let act_ty = quant::vec_dot_type(first.w.ty);
    let arena = Shared::new(arena);
    // SAFETY: `x` lies inside the arena and overlaps no output range (checked above), and the
    // only other parts taken while it lives are those output ranges.
    let xs: &[f32] = unsafe { arena.part(ranges[0].clone()) }.ok_or(CpuError::BadRegion)?;
    if parts.iter().any(|p| quant::vec_dot_type(p.w.ty) != act_ty) {
        for (p, o) in parts.iter().zip(outs) {
            // SAFETY: the output ranges are disjoint from `x` and from each other, and each
            // lives only for its own call.
            let os = unsafe { arena.part(o.clone()) }.ok_or(CpuError::BadRegion)?;
            matmul(k, par, p.w, xs, rows, scratch, os)?;
        }
        if let (Some(act), [g, u]) = (act, outs) {
            // SAFETY: gate's and up's ranges are disjoint (checked above).
            let gs = unsafe { arena.part(g.clone()) }.ok_or(CpuError::BadRegion)?;
            // SAFETY: as above.
            let us = unsafe { arena.part(u.clone()) }.ok_or(CpuError::BadRegion)?;
            apply_act(k, act, gs, us);
        }
        return Ok(());
    }
    let acts = quantize(k, par, act_ty, first.w.cols, xs, rows, scratch)?;
    let mut jobs: [Option<Job<'_, '_, '_>>; MAX_PARTS] = [None, None, None, None];
    for (((j, p), &wrb), o) in jobs.iter_mut().zip(parts).zip(&wrbs).zip(outs) {
        // SAFETY: the output ranges are inside the arena, pairwise disjoint and disjoint from
        // `x` (checked above), and each is taken once.
        let os = unsafe { arena.part(o.clone()) }.ok_or(CpuError::BadRegion)?;
        *j = Some(Job {
            w: p.w,
            wrb,
            out: Shared::new(os),
        });
    }
    run_parts(k, par, &jobs[..parts.len()], rows, acts, act)
}

/// One weight of a dispatch: the weight, its row bytes, and its `(rows, w.rows)` output.
struct Job<'t, 'w, 'o> {
    w: &'t Tensor<'w>,
    wrb: usize,
    out: Shared<'o, f32>,
}

/// Checks a weight against its input and output lengths; returns its row bytes.
fn check_weight(
    w: &Tensor<'_>,
    rows: usize,
    x_len: usize,
    out_len: usize,
) -> Result<usize, CpuError> {
    let cols = w.cols;
    if rows == 0
        || Some(x_len) != rows.checked_mul(cols)
        || Some(out_len) != rows.checked_mul(w.rows)
    {
        return Err(CpuError::BadRegion);
    }
    let wrb = w.ty.row_bytes(cols).ok_or(CpuError::BadWeight)?;
    if Some(w.data.len()) != w.rows.checked_mul(wrb) {
        return Err(CpuError::BadWeight);
    }
    Ok(wrb)
}

/// Quantizes the `rows` activation rows of `xs` (width `cols`) to `act_ty` into `scratch`, in
/// parallel, and returns the quantized rows.
fn quantize<'s>(
    k: &Kernels,
    par: &dyn Parallel,
    act_ty: GgmlType,
    cols: usize,
    xs: &[f32],
    rows: usize,
    scratch: &'s mut [u8],
) -> Result<&'s [u8], CpuError> {
    let act_rb = act_ty.row_bytes(cols).ok_or(CpuError::BadWeight)?;
    let need = act_rb.checked_mul(rows).ok_or(CpuError::ScratchTooSmall)?;
    let scratch = scratch.get_mut(..need).ok_or(CpuError::ScratchTooSmall)?;
    let failed = AtomicBool::new(false);
    // Row 0 here (so a bad type or length reports its own error), the rest split between
    // tasks by rows.
    let (first, rest) = scratch.split_at_mut(act_rb);
    k.quantize_row(act_ty, &xs[..cols], first)?;
    if rows > 1 {
        let more = rows - 1;
        let tasks = par.threads().max(1).min(more);
        let dst = Shared::new(rest);
        par.run(tasks, &|t| {
            let r = split_range(more, tasks, 1, t);
            // SAFETY: `split_range` gives the tasks disjoint row ranges, so their byte ranges
            // are disjoint too.
            let Some(d) = (unsafe { dst.part(r.start * act_rb..r.end * act_rb) }) else {
                failed.store(true, Ordering::Relaxed);
                return;
            };
            for (j, qr) in d.chunks_exact_mut(act_rb).enumerate() {
                let x0 = (r.start + 1 + j) * cols;
                if k.quantize_row(act_ty, &xs[x0..x0 + cols], qr).is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
            }
        });
    }
    if failed.load(Ordering::Relaxed) {
        return Err(CpuError::TaskFailed);
    }
    Ok(scratch)
}

/// One dispatch over every weight in `jobs` (all `Some`), all sharing the quantized
/// activations `acts`: the weights' rows are split between the tasks in proportion to their
/// bytes. With `act`, `jobs` is `[gate, up]` and each task takes the same rows of both, then
/// applies the activation to them.
fn run_parts(
    k: &Kernels,
    par: &dyn Parallel,
    jobs: &[Option<Job<'_, '_, '_>>],
    rows: usize,
    acts: &[u8],
    act: Option<Activation>,
) -> Result<(), CpuError> {
    let Some(Some(j0)) = jobs.first() else {
        return Ok(());
    };
    let w0 = j0.w;
    let act_rb = acts.len() / rows;
    // Checks the weight type and the activation length once, with the caller's error.
    k.dot_rows(w0.ty, w0.cols, &[], &acts[..act_rb], &mut [])?;
    let align = if rows == 1 { 4 } else { Kernels::TILE_ROWS };
    // Rows are split over the first job only when the activation pairs jobs row for row.
    let split_jobs = if act.is_some() { &jobs[..1] } else { jobs };
    let bytes = |j: &Job<'_, '_, '_>| j.w.rows * j.wrb;
    let total: usize = split_jobs.iter().flatten().map(bytes).sum();
    let units: usize = split_jobs
        .iter()
        .flatten()
        .map(|j| j.w.rows.div_ceil(align))
        .sum();
    let tasks = par.threads().max(1).min(units).max(1);
    let failed = AtomicBool::new(false);
    par.run(tasks, &|t| {
        let mut before = 0usize;
        for j in split_jobs.iter().flatten() {
            let r = task_rows(j.w.rows, bytes(j), before, total, tasks, align, t);
            before += bytes(j);
            if r.is_empty() {
                continue;
            }
            let mut ok = compute(k, j, r.clone(), acts, act_rb, rows);
            if let (Some(act), Some(Some(up))) = (act, jobs.get(1)) {
                ok = ok && compute(k, up, r.clone(), acts, act_rb, rows);
                ok = ok && act_rows(k, act, j.w.rows, r.clone(), rows, &j.out, &up.out);
            }
            if !ok {
                failed.store(true, Ordering::Relaxed);
            }
        }
    });
    if failed.load(Ordering::Relaxed) {
        return Err(CpuError::TaskFailed);
    }
    Ok(())
}

/// Task `t`'s rows of a weight of `n` rows and `bytes` bytes that follows `before` bytes of
/// other weights, when `total` bytes are split evenly between `tasks` tasks: boundaries are
/// rounded down to multiples of `align` rows, and the last task takes the end.
fn task_rows(
    n: usize,
    bytes: usize,
    before: usize,
    total: usize,
    tasks: usize,
    align: usize,
    t: usize,
) -> Range<usize> {
    let at = |t: usize| -> usize {
        if t >= tasks {
            return n;
        }
        // Byte offset of boundary `t`, in u128 so that `total · t` cannot overflow.
        let c = (total as u128 * t as u128 / tasks as u128) as usize;
        if c <= before || bytes == 0 {
            return 0;
        }
        let row = ((c - before) as u128 * n as u128 / bytes as u128) as usize;
        (row / align * align).min(n)
    };
    at(t)..at(t + 1)
}

/// Weight rows `r` of a job against all `rows` activation rows, into its output.
fn compute(
    k: &Kernels,
    j: &Job<'_, '_, '_>,
    r: Range<usize>,
    acts: &[u8],
    act_rb: usize,
    rows: usize,
) -> bool {
    let (w, wrb, out) = (j.w, j.wrb, &j.out);
    if rows == 1 {
        // SAFETY: the tasks' weight-row ranges are disjoint, and with one activation row they
        // are the output ranges.
        match unsafe { out.part(r.clone()) } {
            Some(o) => k
                .dot_rows(w.ty, w.cols, &w.data[r.start * wrb..r.end * wrb], acts, o)
                .is_ok(),
            None => false,
        }
    } else {
        tile_rows(k, w, wrb, r, acts, act_rb, out)
    }
}

/// `gate = act(gate) · up` on columns `r` of every one of the `rows` rows (width `n`).
fn act_rows(
    k: &Kernels,
    act: Activation,
    n: usize,
    r: Range<usize>,
    rows: usize,
    gate: &Shared<'_, f32>,
    up: &Shared<'_, f32>,
) -> bool {
    for a in 0..rows {
        let o = a * n;
        // SAFETY: this task owns columns `r` of every row of gate and up, which no other task
        // touches.
        let (Some(g), Some(u)) = (unsafe { gate.part(o + r.start..o + r.end) }, unsafe {
            up.part(o + r.start..o + r.end)
        }) else {
            return false;
        };
        apply_act(k, act, g, u);
    }
    true
}

/// `g = act(g) · u`, element-wise (SiLU through the kernels' vectorized `exp`).
pub(super) fn apply_act(k: &Kernels, act: Activation, g: &mut [f32], u: &[f32]) {
    match act {
        Activation::Silu => ops::silu_mul(k, g, u),
        Activation::GeluTanh => ops::gelu_mul(k, g, u),
    }
}

/// Weight rows `r` against every activation row, tile by tile; writes row `i` of activation
/// row `a` to `out[a * w.rows + i]`. Returns false if a kernel refused its arguments.
fn tile_rows(
    k: &Kernels,
    w: &Tensor<'_>,
    wrb: usize,
    r: core::ops::Range<usize>,
    acts: &[u8],
    act_rb: usize,
    out: &Shared<'_, f32>,
) -> bool {
    let mut buf = [0f32; Kernels::TILE_ROWS * ACT_GROUP];
    let mut i0 = r.start;
    while i0 < r.end {
        let i1 = (i0 + Kernels::TILE_ROWS).min(r.end);
        let m = i1 - i0;
        let tile = &w.data[i0 * wrb..i1 * wrb];
        for (g, group) in acts.chunks(ACT_GROUP * act_rb).enumerate() {
            let na = group.len() / act_rb;
            let b = &mut buf[..m * na];
            if k.dot_tile(w.ty, w.cols, tile, group, b).is_err() {
                return false;
            }
            for (j, src) in b.chunks_exact(m).enumerate() {
                let a = g * ACT_GROUP + j;
                let o0 = a * w.rows + i0;
                // SAFETY: this task owns weight rows `r` (disjoint from every other task's),
                // and `o0..o0 + m` lies in activation row `a` within those rows.
                match unsafe { out.part(o0..o0 + m) } {
                    // A whole tile row is a fixed-size copy (no call into `memmove`).
                    Some(o) => match (
                        <&mut [f32; Kernels::TILE_ROWS]>::try_from(&mut *o),
                        <&[f32; Kernels::TILE_ROWS]>::try_from(src),
                    ) {
                        (Ok(o), Ok(src)) => *o = *src,
                        _ => o.copy_from_slice(src),
                    },
                    None => return false,
                }
            }
        }
        i0 = i1;
    }
    true
}

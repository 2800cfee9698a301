//! The threaded matmul: activation rows quantized in parallel, then the weight rows split
//! between tasks, each task computing its rows for every activation row.
//!
//! Every output value is one call of the same dot kernel on the same bytes whatever the split,
//! so results do not depend on the number of threads.

use core::sync::atomic::{AtomicBool, Ordering};

use crate::exec::{split_range, Parallel};
use crate::model::Tensor;
use crate::quant::{self, Kernels};

use super::shared::Shared;
use super::CpuError;

/// Activation rows one tile call covers (bounds the stack buffer of a task).
const ACT_GROUP: usize = 64;

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
    let cols = w.cols;
    if rows == 0 || xs.len() != rows * cols || os.len() != rows * w.rows {
        return Err(CpuError::BadRegion);
    }
    let act_ty = quant::vec_dot_type(w.ty);
    let act_rb = act_ty.row_bytes(cols).ok_or(CpuError::BadWeight)?;
    let need = act_rb.checked_mul(rows).ok_or(CpuError::ScratchTooSmall)?;
    let wrb = w.ty.row_bytes(cols).ok_or(CpuError::BadWeight)?;
    if w.data.len() != w.rows.checked_mul(wrb).ok_or(CpuError::BadWeight)? {
        return Err(CpuError::BadWeight);
    }
    let scratch = scratch.get_mut(..need).ok_or(CpuError::ScratchTooSmall)?;
    let threads = par.threads().max(1);
    let failed = AtomicBool::new(false);

    // Quantize: row 0 here (so a bad type or length reports its own error), the rest split
    // between tasks by rows.
    let (first, rest) = scratch.split_at_mut(act_rb);
    k.quantize_row(act_ty, &xs[..cols], first)?;
    if rows > 1 {
        let more = rows - 1;
        let tasks = threads.min(more);
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
    let acts = &*scratch;
    // Checks the weight type and the activation length once, with the caller's error.
    k.dot_rows(w.ty, cols, &[], &acts[..act_rb], &mut [])?;

    let align = if rows == 1 { 4 } else { Kernels::TILE_ROWS };
    let tasks = threads.min(w.rows.div_ceil(align)).max(1);
    let out = Shared::new(os);
    par.run(tasks, &|t| {
        let r = split_range(w.rows, tasks, align, t);
        let ok = if rows == 1 {
            // SAFETY: the tasks' weight-row ranges are disjoint, and with one activation row
            // they are the output ranges.
            match unsafe { out.part(r.clone()) } {
                Some(o) => k
                    .dot_rows(w.ty, cols, &w.data[r.start * wrb..r.end * wrb], acts, o)
                    .is_ok(),
                None => false,
            }
        } else {
            tile_rows(k, w, wrb, r, acts, act_rb, &out)
        };
        if !ok {
            failed.store(true, Ordering::Relaxed);
        }
    });
    if failed.load(Ordering::Relaxed) {
        return Err(CpuError::TaskFailed);
    }
    Ok(())
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
                    Some(o) => o.copy_from_slice(src),
                    None => return false,
                }
            }
        }
        i0 = i1;
    }
    true
}

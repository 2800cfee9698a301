//! `cuda-check timeline`: where the time of each bulk-copy GEMV launch of one decode step goes,
//! from the stamps every block leaves when the kernels are built with `KT_TRACE=1`
//! (kernels/gemv_k.cu, `CudaBackend::trace_gemvs`).
//!
//! The step's GEMV-only time runs ~3.5 µs (H100) to ~5 µs (H200) a launch above its bytes at
//! the copy bandwidth (BENCHMARKS.md, session 19); this says which part of a launch that is:
//! the wait for the previous kernel, staging the activation row, the first copy's latency,
//! the items, or the spread of the blocks' ends (the tail).

use std::path::Path;
use std::sync::Arc;

use glimmer_jetson::{BlockStamps, Gpu, TracedLaunch};

use crate::bench::after_warm_steps;

/// `Fns::gemv_multi_tma`'s kernels, by index.
const KERNELS: [&str; 20] = [
    "tma2",
    "tma1",
    "tma2_probe",
    "tma1_probe",
    "tma1_t2",
    "tma1_t4",
    "t2_gridnorm",
    "t2_qkprep",
    "t2_attn",
    "t2_attn_gridnorm",
    "tma2_t2",
    "t2_prenorm",
    "tma2_rs",
    "tma1_t2_dyn",
    "tma1_t4_dyn",
    "tma2_rs_dyn",
    "tma2_t2_gridnorm",
    "tma2_t2_qkprep",
    "tma2_t2_attn",
    "tma2_t2_attn_gridnorm",
];

/// The stamps' points (`KT_TRACE_POINTS`): entry, waited, staged, first item, items done, end.
const WAITED: usize = 1;
const STAGED: usize = 2;
const FIRST: usize = 3;
const DONE: usize = 4;
const END: usize = 5;

/// Median of `v` (sorted in place); 0 for none.
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// One launch's figures, in µs (global timer: across blocks; SM clock: within a block).
#[derive(Default)]
struct Row {
    /// The launch's span: the first block's wait released to the last block's end.
    span: f64,
    /// From the previous traced launch's last end to this one's first wait released (what
    /// ran between: the small kernels and the boundaries).
    gap: f64,
    /// How far apart the blocks' waits were released, and their ends.
    wait_spread: f64,
    end_spread: f64,
    /// The mean over the blocks of how long each ended before the last one (global timer):
    /// the time a block's multiprocessor waits on the launch's tail, which run-time items
    /// (`GLIMMER_GEMV_STEAL`) should shrink where the spread comes from unequal shares of HBM.
    tail_idle: f64,
    /// Medians over the blocks (SM clock): wait → activation staged, staged → first item
    /// landed, first item → its team's items done, done → block end.
    staged: f64,
    first: f64,
    items: f64,
    drain: f64,
}

fn analyze(launches: &[(TracedLaunch, Vec<BlockStamps>)]) -> Vec<Row> {
    let mut prev_end: Option<u64> = None;
    let mut rows = Vec::with_capacity(launches.len());
    for (_, blocks) in launches {
        let gt = |k: usize| blocks.iter().map(move |b| b[k][0]);
        let (w0, w1) = (gt(WAITED).min().unwrap_or(0), gt(WAITED).max().unwrap_or(0));
        let (e0, e1) = (gt(END).min().unwrap_or(0), gt(END).max().unwrap_or(0));
        // SM clocks a ns, from each block's own entry-to-end (the global timer may tick in µs:
        // the median over the blocks of long intervals is what is trusted).
        let mut ghz: Vec<f64> = blocks
            .iter()
            .filter(|b| b[END][0] > b[0][0])
            .map(|b| (b[END][1] - b[0][1]) as f64 / (b[END][0] - b[0][0]) as f64)
            .collect();
        let ghz = median(&mut ghz).max(1e-3);
        let phase = |a: usize, z: usize| {
            let mut v: Vec<f64> = blocks
                .iter()
                .map(|b| b[z][1].saturating_sub(b[a][1]) as f64 / ghz / 1e3)
                .collect();
            median(&mut v)
        };
        let us = |a: u64, z: u64| z.saturating_sub(a) as f64 / 1e3;
        rows.push(Row {
            span: us(w0, e1),
            gap: prev_end.map_or(0.0, |p| w0 as f64 / 1e3 - p as f64 / 1e3),
            wait_spread: us(w0, w1),
            end_spread: us(e0, e1),
            tail_idle: gt(END).map(|e| us(e, e1)).sum::<f64>() / blocks.len().max(1) as f64,
            staged: phase(WAITED, STAGED),
            first: phase(STAGED, FIRST),
            items: phase(FIRST, DONE),
            drain: phase(DONE, END),
        });
        prev_end = Some(e1);
    }
    rows
}

/// The launches of one shape (kernel and bytes: one matrix set of every layer) and the
/// medians of their rows.
struct Shape {
    kernel: usize,
    bytes: u64,
    n: usize,
    med: Row,
}

/// [`Row`]s grouped by launch shape, in the order each shape first appears, with the medians
/// of each column over the group (the layers' Q/K/V, projection, FFN launches each).
fn by_shape(launches: &[(TracedLaunch, Vec<BlockStamps>)], rows: &[Row]) -> Vec<Shape> {
    let mut keys: Vec<(usize, u64)> = Vec::new();
    for (l, _) in launches {
        if !keys.contains(&(l.kernel, l.bytes)) {
            keys.push((l.kernel, l.bytes));
        }
    }
    keys.into_iter()
        .map(|(kernel, bytes)| {
            let group: Vec<&Row> = launches
                .iter()
                .zip(rows)
                .filter(|((l, _), _)| (l.kernel, l.bytes) == (kernel, bytes))
                .map(|(_, r)| r)
                .collect();
            let med =
                |f: fn(&Row) -> f64| median(&mut group.iter().map(|r| f(r)).collect::<Vec<_>>());
            Shape {
                kernel,
                bytes,
                n: group.len(),
                med: Row {
                    span: med(|r| r.span),
                    gap: med(|r| r.gap),
                    wait_spread: med(|r| r.wait_spread),
                    end_spread: med(|r| r.end_spread),
                    tail_idle: med(|r| r.tail_idle),
                    staged: med(|r| r.staged),
                    first: med(|r| r.first),
                    items: med(|r| r.items),
                    drain: med(|r| r.drain),
                },
            }
        })
        .collect()
}

/// Prefill `prefill` random tokens, three eager decode steps, then one traced eager step;
/// prints each bulk-copy launch's row and the step's sums.
pub fn run(gpu: Arc<Gpu>, path: &Path, prefill: usize, copy_bw: f64) -> Result<(), String> {
    if !std::env::var("GLIMMER_CUDA_DEFINES").is_ok_and(|v| v.contains("KT_TRACE=1")) {
        return Err("timeline needs kernels built with GLIMMER_CUDA_DEFINES=KT_TRACE=1".into());
    }
    let (launches, pos) = after_warm_steps(&gpu, path, prefill, |m, tok, pos| {
        let e = |e: glimmer_jetson::CudaError| e.to_string();
        m.backend().trace_gemvs(Some(4096)).map_err(e)?;
        m.decode_step(0, tok, pos, false)
            .map_err(|e| format!("{e:?}"))?;
        let launches = m.backend().take_gemv_trace().map_err(e)?;
        m.backend().trace_gemvs(None).map_err(e)?;
        Ok((launches, pos))
    })?;
    if launches.is_empty() {
        return Err("no bulk-copy launch was traced (compute capability below 9.0?)".into());
    }
    let rows = analyze(&launches);
    println!(
        "timeline of one eager decode step at position {pos}: {} bulk-copy launches (µs; spreads and gap by the global timer, phases by the SM clock, medians over the blocks)",
        launches.len()
    );
    println!(
        "  {:>4} {:<16} {:>7} {:>7} {:>7} {:>6} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "#",
        "kernel",
        "MB",
        "grid",
        "span",
        "%copy",
        "gap",
        "w-sprd",
        "staged",
        "1st",
        "items",
        "drain",
        "e-sprd"
    );
    let mut sum = Row::default();
    let mut bytes = 0u64;
    for (i, ((l, _), r)) in launches.iter().zip(&rows).enumerate() {
        let ideal = l.bytes as f64 / copy_bw * 1e6;
        println!(
            "  {i:>4} {:<16} {:>7.2} {:>7} {:>7.1} {:>5.0}% {:>7.1} {:>7.1} {:>7.2} {:>7.2} {:>7.1} {:>7.2} {:>7.1}",
            KERNELS.get(l.kernel).copied().unwrap_or("?"),
            l.bytes as f64 / 1e6,
            format!("{}x{}", l.blocks, l.warps),
            r.span,
            100.0 * ideal / r.span.max(1e-9),
            r.gap,
            r.wait_spread,
            r.staged,
            r.first,
            r.items,
            r.drain,
            r.end_spread,
        );
        bytes += l.bytes;
        sum.span += r.span;
        sum.gap += r.gap;
        sum.wait_spread += r.wait_spread;
        sum.end_spread += r.end_spread;
        sum.tail_idle += r.tail_idle;
        sum.staged += r.staged;
        sum.first += r.first;
        sum.items += r.items;
        sum.drain += r.drain;
    }
    let ideal = bytes as f64 / copy_bw * 1e6;
    println!(
        "  sums (µs): spans {:.0} (their bytes at the copy bandwidth: {ideal:.0}), gaps {:.0}, wait spreads {:.0}, staging {:.0}, first copies {:.0}, items {:.0}, drains {:.0}, end spreads {:.0}, tail idle (mean a block) {:.0}",
        sum.span, sum.gap, sum.wait_spread, sum.staged, sum.first, sum.items, sum.drain, sum.end_spread, sum.tail_idle
    );
    println!(
        "SUMMARY|timeline|{} launches|spans {:.0} us, gaps {:.0} us, ideal {ideal:.0} us|staging {:.0}, first {:.0}, end spreads {:.0}, tail idle {:.0}",
        launches.len(), sum.span, sum.gap, sum.staged, sum.first, sum.end_spread, sum.tail_idle
    );
    println!("  medians by launch shape (kernel and bytes; µs):");
    for sh in by_shape(&launches, &rows) {
        let name = KERNELS.get(sh.kernel).copied().unwrap_or("?");
        let mb = sh.bytes as f64 / 1e6;
        let m = &sh.med;
        let ideal = sh.bytes as f64 / copy_bw * 1e6;
        println!(
            "  shape {name:<16} {mb:>7.2} MB x{:<3} span {:>6.1} ({:>3.0}% of copy)  gap {:>5.1}  staged {:>5.2}  items {:>6.1}  end spread {:>5.1}  tail idle {:>5.1}",
            sh.n, m.span, 100.0 * ideal / m.span.max(1e-9), m.gap, m.staged, m.items, m.end_spread, m.tail_idle
        );
        println!(
            "SUMMARY|timeline-shape|{name} {mb:.2} MB|x{}|span {:.1} us, gap {:.1} us, items {:.1} us",
            sh.n, m.span, m.gap, m.items
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{analyze, by_shape, BlockStamps, TracedLaunch};

    /// A block's stamps: global-timer ns `g` and SM clock at 2 GHz from the same instants.
    fn block(g: [u64; 6]) -> BlockStamps {
        core::array::from_fn(|k| [g[k], 2 * g[k]])
    }

    #[test]
    fn timeline_rows_measure_each_phase() {
        let l = TracedLaunch {
            kernel: 4,
            items: 10,
            blocks: 2,
            warps: 24,
            bytes: 1 << 20,
        };
        // Launch 0: waits released at 1.0 and 1.2 µs, ends at 10.0 and 11.0 µs.
        let a = vec![
            block([0, 1_000, 1_500, 3_000, 9_000, 10_000]),
            block([0, 1_200, 1_900, 3_200, 10_500, 11_000]),
        ];
        // Launch 1: its first wait released 4 µs after launch 0's last end.
        let b = vec![
            block([11_000, 15_000, 15_400, 17_000, 30_000, 31_000]),
            block([11_000, 15_000, 15_600, 17_400, 30_400, 31_000]),
        ];
        let rows = analyze(&[(l, a.clone()), (l, b.clone())]);
        let close = |x: f64, y: f64| (x - y).abs() < 1e-9;
        assert!(close(rows[0].span, 10.0));
        assert!(close(rows[0].gap, 0.0));
        assert!(close(rows[0].wait_spread, 0.2));
        assert!(close(rows[0].end_spread, 1.0));
        // Ends at 10 and 11 µs: 1 µs and 0 before the last, 0.5 on the mean.
        assert!(close(rows[0].tail_idle, 0.5));
        // Medians of two take the upper one.
        assert!(close(rows[0].staged, 0.7));
        assert!(close(rows[0].first, 1.5));
        assert!(close(rows[0].items, 7.3));
        assert!(close(rows[0].drain, 1.0));
        assert!(close(rows[1].gap, 4.0));
        assert!(close(rows[1].span, 16.0));
        assert!(close(rows[1].end_spread, 0.0));
        assert!(close(rows[1].tail_idle, 0.0));

        // Three launches of one shape and one of another: grouped in order of appearance,
        // each column's median over its group.
        let other = TracedLaunch {
            bytes: 2 << 20,
            ..l
        };
        let c = vec![block([31_000, 33_000, 33_500, 34_000, 40_000, 41_000])];
        let d = vec![block([41_000, 43_000, 43_200, 43_600, 45_000, 46_000])];
        let all = [(l, a.clone()), (other, c), (l, b.clone()), (l, d)];
        let rows = analyze(&all);
        let shapes = by_shape(&all, &rows);
        assert_eq!(shapes.len(), 2);
        assert_eq!((shapes[0].bytes, shapes[0].n), (1 << 20, 3));
        assert_eq!((shapes[1].bytes, shapes[1].n), (2 << 20, 1));
        // Spans of the first shape: 10, 16 and 3 µs; the median of three is the middle.
        assert!(close(shapes[0].med.span, 10.0));
        assert!(close(shapes[1].med.span, 8.0));
    }
}

//! [`Backend`] for [`CudaBackend`]: argument checks on the host, then kernel launches on the
//! device's stream.

use glimmer_core::exec::{
    attend_then_project, qkv_then_attn_inputs, AttnParams, Backend, BranchEnd, Buf, QkPrep,
};
use glimmer_core::model::{Activation, RopeStyle, Tensor};
use glimmer_core::quant::GgmlType;

use crate::backend::{
    CudaBackend, NormFusion, TmaGemv, TracedLaunch, GRAB_COUNTERS, MAX_HEAD_DIM,
    MIN_KEYS_PER_SPLIT, MMA_MIN_ROWS,
};
use crate::fns::{
    gemv_index, raw, Fns, ATT_SMEM, GEMM_THREADS, GEMM_TILE, KT_BAR_BYTES, MULTI_THREADS,
};
use crate::gpu::{Arg, MAX_ARGS, MAX_DYNAMIC_SMEM};
use crate::CudaError;

/// Warps (output rows) per GEMV block.
const GEMV_WARPS: usize = 4;

/// RMSNorms at least this wide (and a multiple of 32) quantize their output for the next
/// matmul in the same launch; narrower ones are per-head norms that feed no matmul.
const FUSED_NORM_MIN_DIM: usize = 512;

/// Matrices with at least this many output rows use the several-rows-per-warp Q4_K / Q6_K
/// GEMV for one activation row (enough warps to fill the GPU without splitting rows).
pub const WIDE_ROWS: usize = 2048;

/// Arguments `gemv_k_multi_norm` takes after `gemv_k_multi`'s (x, pw, peps, w, out, eps, aq,
/// ads, part, ctr).
const NORM_TAIL_ARGS: usize = 10;

/// Warps a block of `norm_sums_q8_f32` (one warp for each 32 values): small blocks spread a
/// 6656-wide row over 52 multiprocessors.
const NORM_SUMS_WARPS: usize = 4;

/// Arguments `gemv_k_multi_sums` takes after `gemv_k_multi`'s (x, pw, part).
const NORM_SUMS_ARGS: usize = 3;

/// Arguments `gemv_k_multi_tma1_t2_qkprep` takes after the bulk-copy kernel's: `attn_inputs`'
/// 21, then the grid barrier.
const QK_TAIL_ARGS: usize = 22;

/// Arguments of `attn_split`, which `gemv_k_multi_tma1_t2_attn*` also take after the bulk-copy
/// kernel's.
const ATT_ARGS: usize = 23;
// The longest launches, the bulk-copy kernel with attention in front and the grid norm after
// it, and with `attn_inputs` after it, fit a launch's arguments.
const _: () = assert!(4 + 6 * 4 + KT_ARGS + ATT_ARGS + NORM_TAIL_ARGS <= MAX_ARGS);
const _: () = assert!(4 + 6 * 4 + KT_ARGS + QK_TAIL_ARGS <= MAX_ARGS);
const _: () = assert!(PRE_ARGS <= QK_TAIL_ARGS);

/// The bulk-copy kernels' own arguments after the multi-GEMV's (`KT_PARAMS`,
/// kernels/gemv_k.cu): stages, slot bytes, `pre`, and the next launch's weights to fetch into
/// L2 (start, bytes).
/// Threads a block of the cluster norms, and the most values of a row one block takes
/// (`NORM_CL_THREADS`, `NORM_CL_THREADS * NORM_CL_VALUES`, kernels/norm.cu).
const NORM_CL_THREADS: u32 = 128;
const NORM_CL_VALUES: usize = 128 * 8;
const KT_ARGS: usize = 10;

/// Where the split count (`max_splits`) is among them.
const ATT_ARG_SPLITS: usize = 14;

/// An `attn_split` launch ([`CudaBackend::attn_args`]): its arguments and grid (heads, splits,
/// rows), and where it leaves its output (`rows` rows of `cols`, quantized into `aq`/`ads` too where `q8`).
struct AttnLaunch {
    args: [Arg; ATT_ARGS],
    grid: (u32, u32, u32),
    out: u64,
    rows: usize,
    cols: usize,
    q8: bool,
    /// Dims of each value head.
    head_dim_v: usize,
    /// The most visible keys a row of this launch may have: its own rows' when eager, the
    /// graph's bound ([`CudaBackend::graph_keys`]) when captured, capped by the window.
    keys: u32,
}

/// What a one-row multi-GEMV launch does besides the matmuls: the norms after a branch
/// (`matmul_norm_fused`: one matrix) or, with the bulk-copy kernel, `attn_inputs`
/// (`qkv_attn_inputs`: the Q, K, V and gate matrices).
#[derive(Clone, Copy)]
enum NormTail<'a> {
    /// `gemv_k_multi_norm`: its last block runs the norms.
    Tail(&'a [Arg; NORM_TAIL_ARGS]),
    /// `gemv_k_multi_sums`: its blocks leave the norms' partial sums.
    Sums(&'a [Arg; NORM_SUMS_ARGS]),
    /// `gemv_k_multi_gridnorm`: the sums, a grid barrier, then the norms (the tail's
    /// arguments, with the grid barrier in the ticket counter's place).
    Grid(&'a [Arg; NORM_TAIL_ARGS]),
    /// `gemv_k_multi_tma1_t2_qkprep`: a grid barrier, then `attn_inputs`' work (bulk-copy
    /// kernels only; elsewhere the launch is refused and the caller runs the two ops).
    Qk(&'a [Arg; QK_TAIL_ARGS]),
    /// `gemv_k_multi_tma1_t2_prenorm`: a deferred branch end's norms in front of the matmuls
    /// ([`NormFusion::Pre`]; bulk-copy kernels only, else refused).
    Pre(&'a [Arg; PRE_ARGS]),
}

/// `gemv_k_multi_tma1_t2_prenorm`'s own arguments: x, y, pw, peps, nw, nout, eps, bar.
const PRE_ARGS: usize = 8;

/// Values a thread of `gemv_k_multi_tma1_t2_prenorm` holds while it runs the norms
/// (`PRE_VALUES`, kernels/norm.cu): the row may be at most this many times the block's threads.
const PRE_VALUES: usize = 9;

/// Whether no two of `regions` overlap.
fn all_disjoint(regions: &[Buf]) -> bool {
    regions
        .iter()
        .enumerate()
        .all(|(i, r)| regions[i + 1..].iter().all(|o| r.disjoint(*o)))
}

/// Whether `e` is one row of the model width (y, x and out `dim` long) and its regions, and
/// the matmul's input `a` if given, all distinct: what the fused and deferred norms need.
fn one_row_end(e: &BranchEnd<'_, '_>, a: Option<Buf>) -> bool {
    let r = [e.y, e.x, e.out, a.unwrap_or(e.y)];
    let n = if a.is_some() { 4 } else { 3 };
    r[..3].iter().all(|b| b.len == e.dim) && all_disjoint(&r[..n])
}

/// A norm launch's device addresses: x, y (`None`: no residual add), the post-norm's gain and
/// epsilon (`None`: none), the norm's gain (0: 1), out; the row width and epsilon.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NormPtrs {
    xp: u64,
    yp: Option<u64>,
    post: Option<(u64, f32)>,
    w: u64,
    op: u64,
    dim: usize,
    eps: f32,
}

/// One norm launch's operands ([`CudaBackend::norm`]): RMSNorm of `x` into `out` (gain
/// `weight`, `None` is 1), after `x += y` when `y` is given, and before that
/// `y = rmsnorm(y) · post` when `post` is given too.
#[derive(Clone, Copy)]
struct NormArgs<'a, 'w> {
    x: Buf,
    y: Option<Buf>,
    post: Option<(&'a Tensor<'w>, f32)>,
    weight: Option<&'a Tensor<'w>>,
    dim: usize,
    eps: f32,
    out: Buf,
}

impl<'a, 'w> From<&BranchEnd<'a, 'w>> for NormArgs<'a, 'w> {
    /// A branch end's norms: its post-norm, residual add and next norm.
    fn from(e: &BranchEnd<'a, 'w>) -> Self {
        NormArgs {
            x: e.x,
            y: Some(e.y),
            post: e.post,
            weight: e.weight,
            dim: e.dim,
            eps: e.eps,
            out: e.out,
        }
    }
}

/// A norm deferred to the next op (a branch end's norms under [`NormFusion::Pre`], or one
/// norm under [`CudaBackend::flag_hop`]): the regions the op that takes it must keep clear of,
/// and the norm launch that runs it otherwise.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PendingNorm {
    x: Buf,
    y: Option<Buf>,
    out: Buf,
    ptrs: NormPtrs,
}

impl PendingNorm {
    /// Whether a matmul of `rows` rows over `x` into `outs` can take this norm: one row over
    /// the norm's output, every output clear of the norm's regions.
    fn feeds(&self, x: Buf, rows: usize, outs: &[Buf]) -> bool {
        let clear = |o: &Buf| {
            o.disjoint(self.x) && self.y.is_none_or(|y| o.disjoint(y)) && o.disjoint(self.out)
        };
        rows == 1 && x == self.out && outs.iter().all(clear)
    }
}

/// A one-row `attn_inputs` deferred into the attention after it ([`CudaBackend::fuse_prep`]):
/// its launch (run as is if no attention takes it), the query region and the layer and head
/// size the attention must match.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PendingPrep {
    launch: ([Arg; QK_TAIL_ARGS - 1], u32, u32),
    q: Buf,
    layer: usize,
    head_dim: usize,
    /// The one row's position.
    pos: u32,
}

/// Arguments `attn_split_prep` takes after `attn_split`'s: `attn_inputs`' k, v, qw, kw, norm,
/// eps, rope_dim, theta_scale, style, then the cache (writable).
const PREP_ARGS: usize = 10;
const _: () = assert!(ATT_ARGS + PREP_ARGS + 2 <= MAX_ARGS);

/// The widest row `gemv_k_multi_norm`'s last block normalizes (`MN_VALUES` values for each of
/// its [`MULTI_THREADS`] threads, kernels/norm.cu).
pub(crate) const NORM_TAIL_MAX_DIM: usize = 32 * MULTI_THREADS as usize;

/// Warps that the one-row GEMV gives each output row (1, 2, 4 or 8): split a row's columns over
/// more warps while there are too few rows to fill the GPU (about 6144 warps) and each warp keeps
/// at least one full pass (1024 columns).
pub(crate) fn team_warps(n_out: usize, cols: usize, target: usize) -> usize {
    let mut wpr = 1;
    while wpr < 8 && n_out * wpr < target && cols >= 2048 * wpr {
        wpr *= 2;
    }
    wpr
}

/// Output rows a warp of the one-row Q4_K / Q6_K GEMV takes, chosen from measurements on the
/// H200 (132 SMs; BENCHMARKS.md): two rows a warp when the matrix is narrow (≤ 8192 columns)
/// and either has few rows (Q, gate, output projections: the second row's loads add the
/// parallelism the few warps lack) or very many (the output head: activation reuse); one row a
/// warp otherwise, where halving the warps leaves a poorly filled last wave (19 968-row FFN
/// matrices). A GPU with far fewer SMs (Jetson Orin: 16) should be measured again.
pub(crate) fn auto_rows_per_warp(n_out: usize, cols: usize) -> usize {
    if cols <= 8192 && (n_out <= 8192 || n_out >= 65536) {
        2
    } else {
        1
    }
}

/// Whether the one-row Q4_K / Q6_K GEMV of a `(n_out, cols)` matrix stages its activations in
/// shared memory. Measured on the H200 (BENCHMARKS.md, session 7): it pays on many rows of
/// at most 8192 columns (the 19 968 × 6656 FFN gate and up: 27.2 → 25.0 µs), where a block's
/// copy of the row is small and serves eight rows; on few rows (K, V: 2.9 → 3.5 µs) or long
/// rows split over warp teams (FFN down: 45.8 → 48.3 µs) the copy costs more than it saves.
pub fn auto_smem(n_out: usize, cols: usize) -> bool {
    cols <= 8192 && n_out >= 8192
}

/// The RoPE kernels' `(theta_scale, style)` arguments: the angle step as the same f32 power
/// the CPU reference takes (libm), so the angles agree bit for bit, and the style's number.
fn rope_args(rope_dim: usize, base: f32, style: RopeStyle) -> (f32, i32) {
    let theta_scale = libm::powf(base, -2.0 / rope_dim as f32);
    let style = match style {
        RopeStyle::Interleaved => 0,
        RopeStyle::HalfSplit => 1,
    };
    (theta_scale, style)
}

/// The warp-team target of [`team_warps`]: long rows (more than 8192 columns, the FFN down
/// projection) are split over two warps sooner, which the H200 measurements favour.
pub(crate) fn auto_team_target(cols: usize) -> usize {
    if cols > 8192 {
        16384
    } else {
        6144
    }
}

impl CudaBackend {
    /// Launches an element-wise kernel whose arguments are `(x, [y,] ..., n)`.
    fn elementwise(
        &mut self,
        f: &cudarc::driver::CudaFunction,
        args: &[Arg],
        n: usize,
    ) -> Result<(), CudaError> {
        if n == 0 {
            return Ok(());
        }
        let mut all = [Arg::I(0); 6];
        all[..args.len()].copy_from_slice(args);
        all[args.len()] = Arg::U(n as u64);
        let grid = self.elementwise_grid(n);
        self.gpu.launch(raw(f), grid, 256, &all[..=args.len()])
    }

    /// An elementwise kernel over two equal, disjoint regions (`x` written in place, as the
    /// CPU backend's ops do), after the pending launches: `pick` names it in the module's
    /// functions (gated activations, the sigmoid gate, the residual add).
    fn elementwise_pair(
        &mut self,
        x: Buf,
        y: Buf,
        pick: impl FnOnce(&Fns) -> &cudarc::driver::CudaFunction,
    ) -> Result<(), CudaError> {
        self.flush_pending()?;
        self.qx = None;
        if x.len != y.len || !x.disjoint(y) {
            return Err(CudaError::BadRegion);
        }
        let (xp, yp) = (self.at(x)?, self.at(y)?);
        let gpu = self.gpu.clone();
        self.elementwise(pick(gpu.fns()), &[Arg::P(xp), Arg::P(yp)], x.len)
    }

    /// Quantizes the `(rows, cols)` activations at `x` to q8_1 into `aq`/`ads`, unless they
    /// already hold them.
    fn quantize_input(&mut self, x: u64, rows: usize, cols: usize) -> Result<(), CudaError> {
        if self.qx == Some((x, rows, cols)) {
            return Ok(());
        }
        self.qx = None;
        let n_blocks = rows * cols / 32;
        self.gpu.launch(
            raw(&self.gpu.fns().quantize_q8_1),
            (n_blocks.div_ceil(8) as u32, 1, 1),
            256,
            &[
                Arg::P(x),
                Arg::P(self.aq.ptr()),
                Arg::P(self.ads.ptr()),
                Arg::int(n_blocks)?,
            ],
        )?;
        self.qx = Some((x, rows, cols));
        Ok(())
    }

    /// `gemv_k_multi`: up to four Q4_K / Q6_K matrices of one width over the same `rows` (< 8)
    /// input rows in one launch. Returns the launch's blocks, or `Ok(None)` without launching
    /// anything when the matrices or regions do not qualify (the caller then runs them one by
    /// one).
    ///
    /// With `tail` (the caller, `matmul_norm_fused`, passes one matrix and one row), the
    /// launch is `gemv_k_multi_norm`, `gemv_k_multi_sums` or `gemv_k_multi_gridnorm`
    /// (kernels/norm.cu), or `gemv_k_multi_tma1_t2_gridnorm` for the grid form where the
    /// bulk-copy kernels run with teams of two.
    fn matmul_multi(
        &mut self,
        ws: &[&Tensor<'_>],
        x: Buf,
        rows: usize,
        outs: &[Buf],
        tail: Option<NormTail<'_>>,
        head: Option<&AttnLaunch>,
    ) -> Result<Option<u32>, CudaError> {
        const SEGS: usize = 4;
        let fewest = if self.gemv_multi_single || tail.is_some() || head.is_some() {
            1
        } else {
            2
        };
        debug_assert!(
            tail.is_none()
                || rows == 1
                    && (ws.len() == 1 || matches!(tail, Some(NormTail::Qk(_) | NormTail::Pre(_))))
        );
        // Attention in front: one row of one matrix, and the bulk-copy kernels only.
        if head.is_some()
            && (rows != 1
                || ws.len() != 1
                || self.gemv_probe
                || !matches!(tail, None | Some(NormTail::Grid(_))))
        {
            return Ok(None);
        }
        if !(2..=4).contains(&self.gemv_multi)
            || rows == 0
            || rows >= 8
            || ws.len() < fewest
            || ws.len() > SEGS
        {
            return Ok(None);
        }
        if ws.len() != outs.len() {
            return Err(CudaError::BadRegion);
        }
        if rows > self.cap.chunk {
            return Err(CudaError::TooLarge);
        }
        let mut d = [None; SEGS];
        for (slot, w) in d.iter_mut().zip(ws) {
            let t = self.weight(w)?;
            if !matches!(t.ty, GgmlType::Q4_K | GgmlType::Q6_K) {
                return Ok(None);
            }
            *slot = Some(t);
        }
        let cols = ws[0].cols;
        let cols_ok = cols.is_multiple_of(256) && cols <= self.cap.max_cols;
        for (i, (t, &o)) in d.iter().flatten().zip(outs).enumerate() {
            let aligned = t.ptr.is_multiple_of(16) && t.row_bytes.is_multiple_of(16);
            if t.cols != cols || !aligned || !cols_ok {
                return Ok(None);
            }
            if x.len != rows * cols || o.len != rows * t.rows || !x.disjoint(o) {
                return Err(CudaError::BadRegion);
            }
            if outs[..i].iter().any(|p| !p.disjoint(o)) {
                return Err(CudaError::BadRegion);
            }
        }
        let xp = self.at(x)?;
        // With attention or the deferred norms in front, the launch itself writes the
        // quantized row.
        let pre = matches!(tail, Some(NormTail::Pre(_)));
        if head.is_none() && !pre {
            self.quantize_input(xp, rows, cols)?;
        }
        let mut args = [Arg::I(0); 4 + 6 * SEGS];
        args[0] = Arg::int(cols)?;
        args[1] = Arg::P(self.aq.ptr());
        args[2] = Arg::P(self.ads.ptr());
        for (s, (t, &o)) in d.iter().flatten().zip(outs).enumerate() {
            let a = &mut args[4 + 6 * s..];
            a[0] = Arg::P(t.ptr);
            a[1] = Arg::U(t.row_bytes as u64);
            a[2] = Arg::int(t.rows)?;
            a[3] = Arg::I(t.ty as i32);
            a[4] = Arg::P(self.at(o)?);
        }
        // Unused segments: empty, of a type the kernels know.
        for s in ws.len()..SEGS {
            args[4 + 6 * s + 3] = Arg::I(GgmlType::Q4_K as i32);
        }
        // Work units of `unit` rows (row pairs for gemv_k_multi, items for the bulk-copy
        // kernels): each segment's cumulative end (an unused one's is the last used one's) and
        // the total, in `args`; returns the total.
        let set_ends = |args: &mut [Arg; 4 + 6 * SEGS], unit: usize| -> Result<usize, CudaError> {
            let mut end = 0usize;
            for s in 0..SEGS {
                end += d[s].map_or(0, |t| t.rows.div_ceil(unit));
                if s + 1 < SEGS {
                    args[4 + 6 * s + 5] = Arg::int(end)?;
                }
            }
            args[3] = Arg::int(end)?;
            Ok(end)
        };
        let pairs = set_ends(&mut args, 2)?;
        let bytes: u64 = d
            .iter()
            .flatten()
            .map(|t| t.rows as u64 * t.row_bytes as u64)
            .sum();
        let (max_bytes, per_warp) = self.gemv_prefetch;
        args[4 + 6 * SEGS - 1] = Arg::I(if bytes <= max_bytes {
            per_warp as i32
        } else {
            0
        });
        let gpu = self.gpu.clone();
        let fns = gpu.fns();
        let wpb = (MULTI_THREADS / 32) as usize;
        // Blocks of `warps` warps enough for a warp a row pair, at most `resident`.
        let grid = |warps: usize, resident: usize| pairs.div_ceil(warps).min(resident);
        let wave = |per_sm: u32| (per_sm * gpu.sm_count()) as usize;
        // The bulk-copy kernels: plain one-row launches, and, where the setting has teams of
        // two, the grid-barrier norm (`gemv_k_multi_tma1_t2_gridnorm`, kernel 6) or
        // attn_inputs (`gemv_k_multi_tma1_t2_qkprep`, kernel 7) after the matmuls, or
        // attention in front of them (`gemv_k_multi_tma1_t2_attn`, kernel 8, with the
        // grid-barrier norm after them `_attn_gridnorm`, kernel 9); with two rows an item they
        // are kernels 16 to 19 (`gemv_k_multi_tma2_t2_gridnorm`, `_qkprep`, `_attn`,
        // `_attn_gridnorm`).
        let bar = [Arg::P(self.grid_bar.ptr())];
        let tma_tail: Option<Option<(usize, &[Arg])>> = match (tail, head) {
            (None, None) => Some(None),
            (None, Some(_)) => Some(Some((8, &bar[..]))),
            (Some(NormTail::Grid(a)), Some(_)) => Some(Some((9, &a[..]))),
            (Some(NormTail::Grid(a)), None) if !self.gemv_probe => Some(Some((6, &a[..]))),
            (Some(NormTail::Qk(a)), None) if !self.gemv_probe => Some(Some((7, &a[..]))),
            (Some(NormTail::Pre(a)), None) if !self.gemv_probe => Some(Some((11, &a[..]))),
            _ => None,
        };
        let tma = self
            .gemv_tma
            .filter(|c| matches!(tma_tail, Some(None)) || c.team == 2);
        if let (Some(tma_tail), 1, Some(cfg), true) =
            (tma_tail, rows, tma, gpu.compute_capability().0 >= 9)
        {
            let max_rb = d.iter().flatten().map(|t| t.row_bytes).max().unwrap_or(0);
            // The probes have no teams: a ring a warp. The kernels with work before or after
            // the matmuls take one row an item, but for the grid-barrier norm, the Q/K prep
            // and attention in front, which have two-row forms (kernels 16 to 19).
            // Deeper first rings for plain launches only (the fused kernels lay out their own
            // shared memory after the rings').
            let cfg = match (self.gemv_probe, tma_tail) {
                (true, _) => TmaGemv {
                    team: 1,
                    ring: 0,
                    ..cfg
                },
                // The grid-barrier norm, the Q/K prep and attention in front keep two rows an
                // item where the setting asks for them (`gemv_k_multi_tma2_t2_*`).
                (false, Some((6..=9, _))) if cfg.team == 2 => TmaGemv {
                    item_rows: cfg.item_rows.min(2),
                    ring: 0,
                    ..cfg
                },
                (false, Some(_)) => TmaGemv {
                    item_rows: 1,
                    ring: 0,
                    ..cfg
                },
                _ => cfg,
            };
            let optin = gpu.smem_optin();
            let layout = match head {
                Some(_) => attn_tma_layout(cfg, cols, max_rb, optin),
                None => tma_layout(cfg, cols, max_rb, optin).map(|l| (l, l.smem)),
            };
            // Teams of four where teams of two leave half the warps idle (plain launches).
            let plain = tma_tail.is_none() && !self.gemv_probe;
            let wide = layout.is_some_and(|(l, _)| wide_teams(cfg, l, plain));
            let (cfg, layout) = match wide {
                true => {
                    let four = TmaGemv {
                        team: 4,
                        item_rows: 1,
                        ..cfg
                    };
                    (
                        four,
                        tma_layout(four, cols, max_rb, optin).map(|l| (l, l.smem)),
                    )
                }
                false => (cfg, layout),
            };
            // The deferred norms hold PRE_VALUES values of the row a thread.
            let layout = layout.filter(|(l, _)| !pre || cols <= PRE_VALUES * 32 * l.warps as usize);
            if let Some((l, smem)) = layout {
                let items = set_ends(&mut args, l.rows as usize)?;
                let k = match (cfg.team, tma_tail) {
                    // The two-row forms of the fused kernels 6 to 9 sit 10 indices on.
                    (_, Some((k @ 6..=9, _))) if l.rows == 2 => k + 10,
                    (_, Some((k, _))) => k,
                    (2, _) if l.rows == 2 && cfg.item_rows == 3 => 12,
                    (2, _) if l.rows == 2 => 10,
                    (2, _) => 4,
                    (4, _) => 5,
                    _ => usize::from(l.rows == 1) + 2 * usize::from(self.gemv_probe),
                };
                // Enough blocks for an item a ring (a team of warps shares one), at most one a
                // multiprocessor (so every block is resident, as the grid barrier needs) and,
                // with the norm, at most the partial sums there is room for.
                let rings = (l.warps / cfg.team.max(1)) as usize;
                let mut blocks = items.div_ceil(rings).min(gpu.sm_count() as usize);
                if matches!(k, 6 | 9 | 16 | 19) {
                    blocks = blocks.min(self.norm_blocks);
                }
                self.gemv_tma_fused2_launches += u64::from(matches!(k, 16..=19));
                let mut all = [Arg::I(0); 4 + 6 * SEGS + KT_ARGS + ATT_ARGS + QK_TAIL_ARGS];
                all[..args.len()].copy_from_slice(&args);
                // KT_PARAMS: the ring's slots; the items asked for before the wait (bits 0-7)
                // and, for a ring deeper than `stages`, the steady depth (bits 8-15).
                all[args.len()] = Arg::I(l.slots as i32);
                all[args.len() + 1] = Arg::I(l.slot as i32);
                let pre = if cfg.pre == 0 {
                    l.slots
                } else {
                    cfg.pre.min(l.slots)
                };
                let depth = if l.slots > cfg.stages { cfg.stages } else { 0 };
                all[args.len() + 2] = Arg::I((pre | depth << 8) as i32);
                self.gemv_tma_deep_launches += u64::from(depth > 0);
                let (nxt, nxt_bytes) = self.next_weights(d[0]);
                all[args.len() + 3] = Arg::P(nxt);
                all[args.len() + 4] = Arg::I(nxt_bytes as i32);
                all[args.len() + 5] = Arg::P(self.trace_slot(TracedLaunch {
                    kernel: k,
                    items: items as u32,
                    blocks: blocks as u32,
                    warps: l.warps,
                    bytes,
                }));
                // A waiting norm (flag hop): launched now with its flag, which this launch
                // waits on instead of the norm's grid (plain launches of one row only; the
                // fallbacks below refuse while it waits).
                let flag = match (self.flag_norm.take(), tma_tail, rows) {
                    (Some(np), None, 1) => {
                        let f = self.hop_flag.ptr();
                        let n = self.launch_norm(np.ptrs, 1, f)?;
                        self.flag_hops += 1;
                        Some((f, n))
                    }
                    (np, _, _) => {
                        self.flag_norm = np;
                        None
                    }
                };
                if self.flag_norm.is_some() {
                    return Ok(None);
                }
                all[args.len() + 6] = Arg::P(flag.map_or(0, |f| f.0));
                all[args.len() + 7] = Arg::I(flag.map_or(0, |f| f.1 as i32));
                // Run-time items for the last rounds (`gemv_steal`): the default's plain
                // shapes with rings `stages` deep; the pass's first such launch zeroes the
                // others' counters (kernels/gemv_k.cu, KT_ITEM_OFF).
                // The kernels that can: 4 and 5 (`_t2`, `_t4`) as 13 and 14, 12 (`_rs`) as 15.
                let dyn_k = |k: usize| if k == 12 { 15 } else { k + 9 };
                let (k, grab, grab_arg) = match k {
                    4 | 5 | 12 if self.gemv_steal > 0 && tma_tail.is_none() && depth == 0 => {
                        let ord = self.grab_ordinal;
                        self.grab_ordinal += 1;
                        let sr = steal_rounds(
                            items,
                            blocks * rings,
                            self.gemv_steal as usize,
                            l.slots as usize,
                        );
                        let base = self.grab.ptr();
                        match sr {
                            _ if ord == 0 => (dyn_k(k), base, -(GRAB_COUNTERS as i32)),
                            Some(sr) if ord < GRAB_COUNTERS => {
                                self.gemv_steal_launches += 1;
                                (
                                    dyn_k(k),
                                    base + 4 * ord as u64,
                                    i32::try_from(sr).map_err(|_| CudaError::TooLarge)?,
                                )
                            }
                            _ => (k, 0, 0),
                        }
                    }
                    _ => (k, 0, 0),
                };
                all[args.len() + 8] = Arg::P(grab);
                all[args.len() + 9] = Arg::I(grab_arg);
                let mut n = args.len() + KT_ARGS;
                if let Some(h) = head {
                    all[n..n + ATT_ARGS].copy_from_slice(&h.args);
                    // At most a split for each head a worker (four warps) can take in one
                    // round: a second round would double attention's time in the launch.
                    let (heads, splits) = (h.grid.0 as usize, h.grid.1 as usize);
                    let workers = blocks * (l.warps / 4) as usize;
                    let fit = (workers / heads.max(1)).max(1);
                    all[n + ATT_ARG_SPLITS] = Arg::int(splits.min(fit))?;
                    n += ATT_ARGS;
                }
                let extra = tma_tail.map_or(&[][..], |(_, a)| a);
                all[n..n + extra.len()].copy_from_slice(extra);
                n += extra.len();
                // The Q/K prep's head (MAX_HEAD_DIM floats and a double) reuses the
                // activation area and the rings after the barrier: at least that much.
                // (With attention in front, `smem` has its workers' after the rings.)
                let smem = match k {
                    7 | 17 => smem
                        .max(KT_BAR_BYTES + 4 * MAX_HEAD_DIM as u32 + 8)
                        .min(optin),
                    _ => smem,
                };
                gpu.launch_smem(
                    raw(&fns.gemv_multi_tma[k]),
                    (blocks as u32, 1, 1),
                    32 * l.warps,
                    smem,
                    &all[..n],
                )?;
                self.gemv_tma_launches += 1;
                self.gemv_tma_wide_launches += u64::from(wide);
                self.gemv_tma_rowsplit_launches += u64::from(k == 12 || k == 15);
                return Ok(Some(blocks as u32));
            }
        }
        if head.is_some() || pre || self.flag_norm.is_some() {
            return Ok(None);
        }
        // The fused launches: one wave, at most the `norm_blocks` partial sums `norm_part`
        // holds.
        let (f, per_sm, extra): (_, _, &[Arg]) = match tail {
            // The probe on gemv_k_multi's grid (it would fit more blocks a multiprocessor).
            None if self.gemv_probe => {
                let per_sm = fns.gemv_multi[self.gemv_multi as usize - 2].1;
                (&fns.gemv_multi_probe.0, per_sm, &[])
            }
            None => {
                let (f, per_sm) = &fns.gemv_multi[self.gemv_multi as usize - 2];
                (f, *per_sm, &[])
            }
            Some(NormTail::Tail(a)) => (&fns.gemv_multi_norm.0, fns.gemv_multi_norm.1, a),
            Some(NormTail::Sums(a)) => (&fns.gemv_multi_sums.0, fns.gemv_multi_sums.1, a),
            Some(NormTail::Grid(a)) => (&fns.gemv_multi_gridnorm.0, fns.gemv_multi_gridnorm.1, a),
            Some(NormTail::Qk(_) | NormTail::Pre(_)) => return Ok(None),
        };
        let mut blocks = grid(wpb, wave(per_sm));
        if tail.is_some() {
            blocks = blocks.min(self.norm_blocks);
        }
        let mut all = [Arg::I(0); 4 + 6 * SEGS + NORM_TAIL_ARGS];
        all[..args.len()].copy_from_slice(&args);
        all[args.len()..args.len() + extra.len()].copy_from_slice(extra);
        let n = args.len() + extra.len();
        gpu.launch(
            raw(f),
            (blocks as u32, rows as u32, 1),
            MULTI_THREADS,
            &all[..n],
        )?;
        Ok(Some(blocks as u32))
    }

    /// `attn_inputs`' checks and launch arguments (its positions uploaded), with its block
    /// size and grid width (one block a head).
    fn attn_inputs_args(
        &mut self,
        p: &QkPrep<'_, '_>,
        q: Buf,
        k: Buf,
        v: Buf,
        positions: &[u32],
    ) -> Result<([Arg; QK_TAIL_ARGS - 1], u32, u32), CudaError> {
        let n = positions.len();
        let (kd, vd) = (self.kvl.k_dim, self.kvl.v_dim);
        if p.n_head_kv == 0 || !vd.is_multiple_of(p.n_head_kv) {
            return Err(CudaError::HeadTooWide);
        }
        let head_dim_v = vd / p.n_head_kv;
        if p.head_dim > MAX_HEAD_DIM || head_dim_v > MAX_HEAD_DIM {
            return Err(CudaError::HeadTooWide);
        }
        if n == 0
            || q.len != n * p.n_head * p.head_dim
            || k.len != n * kd
            || p.n_head_kv * p.head_dim != kd
            || v.len != n * vd
            || !q.disjoint(k)
            || !q.disjoint(v)
            || !k.disjoint(v)
        {
            return Err(CudaError::BadRegion);
        }
        if positions.iter().any(|&pos| pos as usize >= self.kvl.ctx) {
            return Err(CudaError::KvRange);
        }
        let (norm, qw, kw, eps) = match p.norm {
            Some((qn, kn, eps)) => {
                let w = |t: Option<&Tensor<'_>>| match t {
                    Some(t) => self.norm_weight(t, p.head_dim),
                    None => Ok(0),
                };
                (1, w(qn)?, w(kn)?, eps)
            }
            None => (0, 0, 0, 0.0),
        };
        let (rope_dim, theta_scale, style) = match p.rope {
            Some((rd, _, _)) if rd > p.head_dim => return Err(CudaError::BadRegion),
            Some((rd, base, style)) if rd >= 2 => {
                let (theta_scale, style) = rope_args(rd, base, style);
                (rd, theta_scale, style)
            }
            _ => (0, 1.0, 0),
        };
        let kv = self.kv_args(p.layer)?;
        self.positions
            .sync_dev(&self.gpu, positions, self.capturing)?;
        let (qp, kp, vp) = (self.at(q)?, self.at(k)?, self.at(v)?);
        let args = [
            Arg::P(qp),
            Arg::P(kp),
            Arg::P(vp),
            Arg::P(qw),
            Arg::P(kw),
            Arg::I(norm),
            Arg::F(eps),
            Arg::int(p.n_head)?,
            Arg::int(p.n_head_kv)?,
            Arg::int(p.head_dim)?,
            Arg::int(head_dim_v)?,
            Arg::int(rope_dim)?,
            Arg::F(theta_scale),
            Arg::I(style),
            kv[0],
            kv[1],
            kv[2],
            kv[3],
            kv[4],
            kv[5],
            Arg::P(self.positions.dev.ptr()),
        ];
        let threads = (p.head_dim.max(head_dim_v).div_ceil(32) * 32) as u32;
        let blocks = (p.n_head + 2 * p.n_head_kv) as u32;
        Ok((args, threads, blocks))
    }

    /// The `attn_inputs` launch of [`Self::attn_inputs_args`]' making, for `rows` rows.
    fn launch_attn_inputs(
        &mut self,
        (args, threads, blocks): &([Arg; QK_TAIL_ARGS - 1], u32, u32),
        rows: usize,
    ) -> Result<(), CudaError> {
        self.qx = None;
        let f = raw(&self.gpu.fns().attn_inputs);
        self.gpu
            .launch(f, (*blocks, rows as u32, 1), *threads, args)
    }

    /// `matmul_add_rmsnorm` with its norms fused into the matmul's launch as
    /// [`CudaBackend::fuse_norm`] says: `gemv_k_multi_norm` alone, `gemv_k_multi_sums`
    /// then `norm_sums_q8_f32`, or `gemv_k_multi_gridnorm` alone. Where it qualifies: one row of a Q4_K / Q6_K matrix whose
    /// output is the model width (a multiple of 32; for the tail, at most
    /// [`NORM_TAIL_MAX_DIM`] wide); every region distinct. Returns `Ok(false)` having
    /// launched nothing otherwise. `head`: attention in front of the matmul in the same
    /// launch (`gemv_k_multi_tma1_t2_attn_gridnorm`; the grid form only).
    fn matmul_norm_fused(
        &mut self,
        w: &Tensor<'_>,
        a: Buf,
        rows: usize,
        e: &BranchEnd<'_, '_>,
        head: Option<&AttnLaunch>,
    ) -> Result<bool, CudaError> {
        let BranchEnd {
            y,
            x,
            post,
            weight,
            dim,
            eps,
            out,
        } = *e;
        let mode = self.fuse_norm;
        // The deferred norms (Pre) are not fused here: `defer_norm` hands them to the next op.
        if matches!(mode, NormFusion::Off | NormFusion::Pre)
            || (head.is_some() && mode != NormFusion::Grid)
            || rows != 1
            || w.rows != dim
            || !dim.is_multiple_of(32)
            || (mode == NormFusion::Tail && dim > NORM_TAIL_MAX_DIM)
            || dim > self.cap.max_cols
            || !one_row_end(e, Some(a))
        {
            return Ok(false);
        }
        let (xp, yp, op) = (self.at(x)?, self.at(y)?, self.at(out)?);
        let pw = match post {
            Some((t, _)) => self.norm_weight(t, dim)?,
            None => 0,
        };
        let nw = match weight {
            Some(t) => self.norm_weight(t, dim)?,
            None => 0,
        };
        let peps = post.map_or(0.0, |(_, e)| e);
        let part = self.norm_part.ptr();
        let (aq, ads) = (self.aq.ptr(), self.ads.ptr());
        if matches!(mode, NormFusion::Tail | NormFusion::Grid) {
            let grid = mode == NormFusion::Grid;
            // The tail's ticket counter, or the grid barrier in its place.
            let sync = if grid {
                self.grid_bar.ptr()
            } else {
                self.norm_ctr.ptr()
            };
            let tail = [
                Arg::P(xp),
                Arg::P(pw),
                Arg::F(peps),
                Arg::P(nw),
                Arg::P(op),
                Arg::F(eps),
                Arg::P(aq),
                Arg::P(ads),
                Arg::P(part),
                Arg::P(sync),
            ];
            let how = if grid {
                NormTail::Grid(&tail)
            } else {
                NormTail::Tail(&tail)
            };
            if self
                .matmul_multi(&[w], a, rows, &[y], Some(how), head)?
                .is_none()
            {
                return Ok(false);
            }
        } else {
            let sums = [Arg::P(xp), Arg::P(pw), Arg::P(part)];
            let Some(blocks) =
                self.matmul_multi(&[w], a, rows, &[y], Some(NormTail::Sums(&sums)), None)?
            else {
                return Ok(false);
            };
            let warps = dim / 32;
            self.gpu.launch(
                raw(&self.gpu.fns().norm_sums_q8),
                (warps.div_ceil(NORM_SUMS_WARPS) as u32, 1, 1),
                (NORM_SUMS_WARPS * 32) as u32,
                &[
                    Arg::P(xp),
                    Arg::P(yp),
                    Arg::P(pw),
                    Arg::F(peps),
                    Arg::P(nw),
                    Arg::P(op),
                    Arg::int(dim)?,
                    Arg::F(eps),
                    Arg::P(aq),
                    Arg::P(ads),
                    Arg::P(part),
                    Arg::int(blocks as usize)?,
                ],
            )?;
        }
        // `out` is left quantized in aq/ads for the matmul that reads it next.
        self.qx = Some((op, rows, dim));
        self.fused_norms += 1;
        Ok(true)
    }

    fn quantized_matmul(
        &mut self,
        wi: usize,
        w: crate::weights::DeviceTensor,
        x: u64,
        rows: usize,
        out: u64,
    ) -> Result<(), CudaError> {
        let cols = w.cols;
        if !cols.is_multiple_of(32) || cols > self.cap.max_cols.div_ceil(32) * 32 {
            return Err(CudaError::UnsupportedType(w.ty));
        }
        self.quantize_input(x, rows, cols)?;
        let fns = self.gpu.fns();
        // Q4_K and Q6_K rows are read with 16-byte loads (Q6_K rows are repacked and padded
        // for it on upload), the other formats with 2- or 4-byte loads.
        if !w.ptr.is_multiple_of(16)
            || (matches!(w.ty, GgmlType::Q4_K | GgmlType::Q6_K) && !w.row_bytes.is_multiple_of(16))
        {
            return Err(CudaError::UnsupportedType(w.ty));
        }
        if self.prefill_mma
            && rows >= MMA_MIN_ROWS
            && w.rows.div_ceil(GEMM_TILE) <= 65_535
            && self.gpu.compute_capability().0 >= 8
        {
            // kernels/gemm.cu: 64 x 64 output tiles, the activation tiles adjacent in the grid
            // (at most 65 535 weight tiles: the grid's y limit).
            self.mma_matmuls += 1;
            return self.gpu.launch(
                raw(&fns.gemm_mma[wi]),
                (
                    rows.div_ceil(GEMM_TILE) as u32,
                    w.rows.div_ceil(GEMM_TILE) as u32,
                    1,
                ),
                GEMM_THREADS,
                &[
                    Arg::P(w.ptr),
                    Arg::U(w.row_bytes as u64),
                    Arg::int(w.rows)?,
                    Arg::int(cols)?,
                    Arg::P(self.aq.ptr()),
                    Arg::P(self.ads.ptr()),
                    Arg::P(out),
                    Arg::int(rows)?,
                ],
            );
        }
        let (f1, f8) = &fns.gemv[wi];
        let full = rows / 8;
        let common = |aq: u64, ads: u64, out: u64, wpr: usize| -> Result<[Arg; 8], CudaError> {
            Ok([
                Arg::P(w.ptr),
                Arg::U(w.row_bytes as u64),
                Arg::int(w.rows)?,
                Arg::int(cols)?,
                Arg::P(aq),
                Arg::P(ads),
                Arg::P(out),
                Arg::int(wpr)?,
            ])
        };
        if full > 0 {
            let a = common(self.aq.ptr(), self.ads.ptr(), out, 1)?;
            let gx = w.rows.div_ceil(GEMV_WARPS) as u32;
            self.gpu
                .launch(raw(f8), (gx, full as u32, 1), (GEMV_WARPS * 32) as u32, &a)?;
        }
        let rest = rows - full * 8;
        let rw = match self.gemv_rows_per_warp {
            0 => auto_rows_per_warp(w.rows, cols),
            n => n,
        };
        let rows_fn = match w.ty {
            GgmlType::Q4_K => Some(&fns.gemv_rows[0]),
            GgmlType::Q6_K => Some(&fns.gemv_rows[1]),
            _ => None,
        };
        if let (true, Some(f), 2) = (rest > 0 && w.rows >= WIDE_ROWS, rows_fn, rw) {
            let r0 = (full * 8) as u64;
            let a = common(
                self.aq.ptr() + r0 * cols as u64,
                self.ads.ptr() + r0 * (cols as u64 / 32) * 8,
                out + r0 * w.rows as u64 * 4,
                1,
            )?;
            let gx = w.rows.div_ceil(GEMV_WARPS * rw) as u32;
            return self.gpu.launch(
                raw(f),
                (gx, rest as u32, 1),
                (GEMV_WARPS * 32) as u32,
                &a[..7],
            );
        }
        if rest > 0 {
            let r0 = (full * 8) as u64;
            let target = match self.gemv_team_target {
                0 => auto_team_target(cols),
                n => n,
            };
            let wpr = team_warps(w.rows, cols, target);
            let a = common(
                self.aq.ptr() + r0 * cols as u64,
                self.ads.ptr() + r0 * (cols as u64 / 32) * 8,
                out + r0 * w.rows as u64 * 4,
                wpr,
            )?;
            let smem = cols + cols / 4;
            let staged = match w.ty {
                GgmlType::Q4_K => Some(&fns.gemv_smem[0]),
                GgmlType::Q6_K => Some(&fns.gemv_smem[1]),
                _ => None,
            };
            let use_smem = self.gemv_smem.unwrap_or_else(|| auto_smem(w.rows, cols));
            if let (true, Some(f)) = (use_smem && smem <= MAX_DYNAMIC_SMEM as usize, staged) {
                let warps = 2 * GEMV_WARPS;
                let gx = w.rows.div_ceil(warps / wpr) as u32;
                self.gpu.launch_smem(
                    raw(f),
                    (gx, rest as u32, 1),
                    (warps * 32) as u32,
                    smem as u32,
                    &a,
                )?;
            } else {
                let warps = if wpr > GEMV_WARPS { wpr } else { GEMV_WARPS };
                let gx = w.rows.div_ceil(warps / wpr) as u32;
                self.gpu
                    .launch(raw(f1), (gx, rest as u32, 1), (warps * 32) as u32, &a)?;
            }
        }
        Ok(())
    }

    /// The KV-cache arguments of layer `layer`: `(kv, slot, slot_stride, k_off, v_off, cap)`.
    fn kv_args(&self, layer: usize) -> Result<[Arg; 6], CudaError> {
        let l = &self.kvl;
        if layer >= l.caps.len() {
            return Err(CudaError::KvRange);
        }
        Ok([
            Arg::P(self.kv.ptr()),
            Arg::P(self.slot.dev.ptr()),
            Arg::U(l.slot_stride as u64),
            Arg::U(l.k_off[layer] as u64),
            Arg::U(l.v_off[layer] as u64),
            Arg::int(l.caps[layer])?,
        ])
    }

    /// A post-norm weight: its device address, checked to be an F32 vector of `dim`.
    fn norm_weight(&self, t: &Tensor<'_>, dim: usize) -> Result<u64, CudaError> {
        let d = self.weight(t)?;
        if d.ty != GgmlType::F32 || d.rows * d.cols != dim {
            return Err(CudaError::UnknownWeight(t.id));
        }
        Ok(d.ptr)
    }

    /// One norm launch ([`NormArgs`]).
    fn norm(&mut self, a: NormArgs<'_, '_>) -> Result<(), CudaError> {
        self.qx = None;
        let (x, y, out) = (a.x, a.y, a.out);
        match self.norm_ptrs(a)? {
            // One row that the q8 kernels take: waits for the next op ([`Self::flag_hop`]).
            Some((ptrs, 1))
                if self.flag_hop
                    && self.gpu.compute_capability().0 >= 9
                    && self.norm_fuses(ptrs.dim, 1) =>
            {
                self.flag_norm = Some(PendingNorm { x, y, out, ptrs });
                self.qx = Some((ptrs.op, 1, ptrs.dim));
                Ok(())
            }
            Some((p, rows)) => self.launch_norm(p, rows, 0).map(|_| ()),
            None => Ok(()),
        }
    }

    /// Whether a norm of `rows` rows of `dim` also quantizes its output ([`Self::launch_norm`]).
    fn norm_fuses(&self, dim: usize, rows: usize) -> bool {
        dim.is_multiple_of(32)
            && dim >= FUSED_NORM_MIN_DIM
            && rows <= self.cap.chunk
            && dim <= self.cap.max_cols.div_ceil(32) * 32
    }

    /// [`Self::norm`]'s region checks and its launch's device addresses and rows (`None`:
    /// no rows).
    fn norm_ptrs(&self, a: NormArgs<'_, '_>) -> Result<Option<(NormPtrs, usize)>, CudaError> {
        let NormArgs {
            x,
            y,
            post,
            weight,
            dim,
            eps,
            out,
        } = a;
        // The residual (and its post-norm) is read and written beside x and out.
        if let Some(y) = y {
            if y.len != x.len || !x.disjoint(y) || !y.disjoint(out) || x == out {
                return Err(CudaError::BadRegion);
            }
        }
        let w = match weight {
            Some(t) => self.norm_weight(t, dim)?,
            None => 0,
        };
        if dim == 0
            || !x.len.is_multiple_of(dim)
            || out.len != x.len
            || (x != out && !x.disjoint(out))
        {
            return Err(CudaError::BadRegion);
        }
        let (xp, op) = (self.at(x)?, self.at(out)?);
        let rows = x.len / dim;
        if rows == 0 {
            return Ok(None);
        }
        let yp = match y {
            Some(y) => Some(self.at(y)?),
            None => None,
        };
        let post = match (y, post) {
            (Some(_), Some((pw, peps))) => Some((self.norm_weight(pw, dim)?, peps)),
            _ => None,
        };
        let p = NormPtrs {
            xp,
            yp,
            post,
            w,
            op,
            dim,
            eps,
        };
        Ok(Some((p, rows)))
    }

    /// The norm launch of [`Self::norm`] (its regions checked, its addresses resolved) over
    /// `rows` rows; a q8 norm adds one to the u32 at `sig` from each block once its output is
    /// written (0: none; [`Self::flag_hop`]). Returns the blocks launched.
    fn launch_norm(&mut self, p: NormPtrs, rows: usize, sig: u64) -> Result<u32, CudaError> {
        let (dim, post) = (p.dim, p.post);
        // About 8 values a thread: one warp for a 128-wide head, 832 threads for 6656.
        let threads = (dim.div_ceil(8).div_ceil(32) * 32).clamp(32, 1024) as u32;
        // (x, [y, [pw, peps,]] w, out, dim, eps, q, ds, sig): the kernels without q8 output
        // stop before q.
        let mut args = [Arg::I(0); 11];
        let mut n = 0;
        let mut push = |a: Arg| {
            args[n] = a;
            n += 1;
        };
        push(Arg::P(p.xp));
        if let Some(yp) = p.yp {
            push(Arg::P(yp));
            if let Some((pw, peps)) = post {
                push(Arg::P(pw));
                push(Arg::F(peps));
            }
        }
        for a in [
            Arg::P(p.w),
            Arg::P(p.op),
            Arg::int(dim)?,
            Arg::F(p.eps),
            Arg::P(self.aq.ptr()),
            Arg::P(self.ads.ptr()),
            Arg::P(sig),
        ] {
            push(a);
        }
        // A norm over whole rows of a matmul's width (the pre-attention, pre-FFN and output
        // norms) also quantizes its output for that matmul, saving it a launch.
        let fuse = self.norm_fuses(dim, rows);
        let fns = self.gpu.fns();
        let (plain, q8) = match (p.yp, post) {
            (Some(_), Some(_)) => (&fns.norm_add_rmsnorm, &fns.norm_add_rmsnorm_q8),
            (Some(_), None) => (&fns.add_rmsnorm, &fns.add_rmsnorm_q8),
            (None, _) => (&fns.rmsnorm, &fns.rmsnorm_q8),
        };
        // Over a cluster of blocks where asked and the row splits into whole q8_1 blocks that
        // the cluster's blocks can hold (kernels/norm.cu, NORM_CL_THREADS × NORM_CL_VALUES).
        let cl = self.norm_cluster as usize;
        let cluster = fuse
            && cl >= 2
            && self.gpu.compute_capability().0 >= 9
            && dim.is_multiple_of(32 * cl)
            && dim / cl <= NORM_CL_VALUES;
        if cluster {
            let k = match (p.yp, post) {
                (Some(_), Some(_)) => 2,
                (Some(_), None) => 1,
                (None, _) => 0,
            };
            let f = raw(&fns.norm_cl[k]);
            self.gpu.launch_ex(
                f,
                (cl as u32, rows as u32, 1),
                NORM_CL_THREADS,
                0,
                cl as u32,
                &args[..n],
            )?;
            self.cluster_norms += 1;
            self.qx = Some((p.op, rows, dim));
            Ok((cl * rows) as u32)
        } else if fuse {
            self.gpu
                .launch(raw(q8), (rows as u32, 1, 1), threads, &args[..n])?;
            self.qx = Some((p.op, rows, dim));
            Ok(rows as u32)
        } else if sig != 0 {
            Err(CudaError::BadRegion)
        } else {
            self.gpu
                .launch(raw(plain), (rows as u32, 1, 1), threads, &args[..n - 3])?;
            Ok(rows as u32)
        }
    }

    /// Runs whatever waits for the next op as its own launch: the deferred norms
    /// ([`NormFusion::Pre`]) or the deferred `attn_inputs` ([`CudaBackend::fuse_prep`]). Every
    /// op calls this first, but the ones that can take them: `matmul_many` the norms, the
    /// attention the `attn_inputs` (which flush only the other kind). At most one of them
    /// waits at any time (each op flushes the other before it defers its own).
    pub(crate) fn flush_pending(&mut self) -> Result<(), CudaError> {
        self.flush_norm()?;
        self.flush_prep()
    }

    /// Runs the deferred norms, if any, as their own launch.
    fn flush_norm(&mut self) -> Result<(), CudaError> {
        if let Some(p) = self.flag_norm.take() {
            self.launch_norm(p.ptrs, 1, 0)?;
        }
        match self.pending_norm.take() {
            Some(p) => self.launch_norm(p.ptrs, 1, 0).map(|_| ()),
            None => Ok(()),
        }
    }

    /// Runs the deferred `attn_inputs`, if any, as its own launch.
    fn flush_prep(&mut self) -> Result<(), CudaError> {
        match self.pending_prep.take() {
            Some(p) => self.launch_attn_inputs(&p.launch, 1),
            None => Ok(()),
        }
    }

    /// Whether attention over `q` at `positions` can take the deferred `attn_inputs`: it
    /// prepared this layer's `q` at the same one position. (Decided before attention's
    /// arguments are made: they upload the positions, which a flushed `attn_inputs` reads.)
    fn takes_prep(&self, p: &AttnParams, q: Buf, positions: &[u32]) -> bool {
        self.pending_prep.is_some_and(|pp| {
            positions == [pp.pos] && pp.q == q && pp.layer == p.layer && pp.head_dim == p.head_dim
        })
    }

    /// Attention at one row with the deferred `attn_inputs` in it (`attn_split_prep`), with
    /// the arguments made already ([`Self::takes_prep`] said it can).
    fn launch_prep(&mut self, a: &AttnLaunch) -> Result<(), CudaError> {
        let Some(pp) = self.pending_prep.take() else {
            return Err(CudaError::BadRegion);
        };
        // attn_inputs' arguments: q, k, v, qw, kw, norm, eps, n_head, n_head_kv, head_dim,
        // head_dim_v, rope_dim, theta_scale, style, the cache's six, positions.
        let t = &pp.launch.0;
        let mut all = [Arg::I(0); ATT_ARGS + PREP_ARGS + 2];
        all[..ATT_ARGS].copy_from_slice(&a.args);
        all[ATT_ARGS..ATT_ARGS + 6].copy_from_slice(&[t[1], t[2], t[3], t[4], t[5], t[6]]);
        all[ATT_ARGS + 6..ATT_ARGS + PREP_ARGS].copy_from_slice(&[t[11], t[12], t[13], t[14]]);
        all[ATT_ARGS + PREP_ARGS..].copy_from_slice(&self.attn_next_args(a.rows));
        self.gpu
            .launch(raw(&self.gpu.fns().attn_split_prep), a.grid, 128, &all)?;
        self.fused_prep += 1;
        if a.q8 {
            self.qx = Some((a.out, a.rows, a.cols));
        }
        Ok(())
    }

    /// `matmul_many` over the deferred norms' output at one row ([`NormFusion::Pre`]): one
    /// `gemv_k_multi_tma1_t2_prenorm` launch runs the norms and the matmuls. Returns whether
    /// it did; if not, the norms are still pending.
    fn take_norm(
        &mut self,
        ws: &[&Tensor<'_>],
        x: Buf,
        rows: usize,
        outs: &[Buf],
    ) -> Result<bool, CudaError> {
        let Some(p) = self.pending_norm.filter(|p| p.feeds(x, rows, outs)) else {
            return Ok(false);
        };
        let n = p.ptrs;
        let (pw, peps) = n.post.unwrap_or((0, 0.0));
        let args = [
            Arg::P(n.xp),
            Arg::P(n.yp.unwrap_or(0)),
            Arg::P(pw),
            Arg::F(peps),
            Arg::P(n.w),
            Arg::P(n.op),
            Arg::F(n.eps),
            Arg::P(self.grid_bar.ptr()),
        ];
        if self
            .matmul_multi(ws, x, 1, outs, Some(NormTail::Pre(&args)), None)?
            .is_none()
        {
            return Ok(false);
        }
        self.pending_norm = None;
        self.deferred_norms += 1;
        self.qx = Some((n.op, 1, n.dim));
        Ok(true)
    }

    /// The norm waiting under [`CudaBackend::flag_hop`], launched with its flag just before a
    /// plain bulk-copy GEMV over its output that waits on the flag: one row, distinct regions.
    /// `false` (nothing launched, the norm still waiting) where the GEMV would take another
    /// kernel.
    fn take_flag_norm(
        &mut self,
        ws: &[&Tensor<'_>],
        x: Buf,
        rows: usize,
        outs: &[Buf],
    ) -> Result<bool, CudaError> {
        if !self.flag_norm.is_some_and(|p| p.feeds(x, rows, outs)) {
            return Ok(false);
        }
        let taken = self.matmul_multi(ws, x, 1, outs, None, None)?.is_some();
        if taken && self.flag_norm.is_some() {
            // The GEMV did not take the flag (it launched without launching the norm).
            return Err(CudaError::BadRegion);
        }
        Ok(taken)
    }

    /// `matmul_add_rmsnorm`'s norms deferred to the next op ([`NormFusion::Pre`]), where
    /// `gemv_k_multi_tma1_t2_prenorm` could take them: one row, a bulk-copy setting of teams of
    /// two on compute capability 9.0 or later, the matmul's width, distinct regions. Returns
    /// whether it deferred them; the matmul itself has run either way.
    fn defer_norm(&mut self, e: &BranchEnd<'_, '_>, rows: usize) -> Result<bool, CudaError> {
        let dim = e.dim;
        if self.fuse_norm != NormFusion::Pre
            || rows != 1
            || self.gemv_tma.is_none_or(|c| c.team != 2)
            || self.gemv_probe
            || self.gpu.compute_capability().0 < 9
            || !dim.is_multiple_of(256)
            || dim > self.cap.max_cols
            || !one_row_end(e, None)
        {
            return Ok(false);
        }
        let Some((ptrs, _)) = self.norm_ptrs(NormArgs::from(e))? else {
            return Ok(false);
        };
        self.qx = None;
        self.pending_norm = Some(PendingNorm {
            x: e.x,
            y: Some(e.y),
            out: e.out,
            ptrs,
        });
        Ok(true)
    }

    /// What a bulk-copy launch whose first matrix is `first` asks L2 to fetch once its items
    /// are done ([`CudaBackend::gemv_next_bytes`], [`crate::backend::NextWeights::step`]), or
    /// nothing (`(0, 0)`).
    fn next_weights(&mut self, first: Option<crate::weights::DeviceTensor>) -> (u64, u32) {
        let Some(t) = first.filter(|_| self.gemv_next_bytes > 0) else {
            return (0, 0);
        };
        let bytes = t.rows as u64 * t.row_bytes as u64;
        self.gemv_next.step(t.ptr, bytes, self.gemv_next_bytes)
    }

    /// Attention's checks and `attn_split` arguments (its positions uploaded), or `None` for
    /// no rows. `aq`/`ads` no longer hold any row's quantization after this.
    fn attn_args(
        &mut self,
        p: &AttnParams,
        q: Buf,
        positions: &[u32],
        gate: Option<Buf>,
        out: Buf,
    ) -> Result<Option<AttnLaunch>, CudaError> {
        self.qx = None;
        if p.head_dim > MAX_HEAD_DIM
            || p.head_dim_v > MAX_HEAD_DIM
            || p.n_head_kv == 0
            || !p.n_head.is_multiple_of(p.n_head_kv)
        {
            return Err(CudaError::HeadTooWide);
        }
        let rows = positions.len();
        if q.len != rows * p.n_head * p.head_dim || out.len != rows * p.n_head * p.head_dim_v {
            return Err(CudaError::BadRegion);
        }
        if gate.is_some_and(|g| g.len != out.len || !g.disjoint(out)) {
            return Err(CudaError::BadRegion);
        }
        if p.n_head_kv * p.head_dim != self.kvl.k_dim
            || p.n_head_kv * p.head_dim_v != self.kvl.v_dim
        {
            return Err(CudaError::BadRegion);
        }
        if p.n_head > self.cap.n_head || p.head_dim_v > self.cap.head_dim_v || rows > self.cap.chunk
        {
            return Err(CudaError::TooLarge);
        }
        if rows == 0 {
            return Ok(None);
        }
        let kv = self.kv_args(p.layer)?;
        let max_pos = positions.iter().copied().max().unwrap_or(0) as usize;
        if max_pos >= self.kvl.ctx {
            return Err(CudaError::KvRange);
        }
        // The ring must still hold the oldest key any query of this call can see.
        let first_pos = positions.iter().copied().min().unwrap_or(0) as usize;
        let oldest = match p.window {
            Some(w) => first_pos.saturating_sub((w as usize).saturating_sub(1)),
            None => 0,
        };
        if max_pos + 1 - oldest > self.kvl.caps[p.layer] {
            return Err(CudaError::KvRange);
        }
        self.positions
            .sync_dev(&self.gpu, positions, self.capturing)?;
        let splits = if rows == 1 { self.decode_splits } else { 1 };
        if rows * p.n_head * splits > self.parts {
            return Err(CudaError::TooLarge);
        }
        let (qp, op) = (self.at(q)?, self.at(out)?);
        let window = match p.window {
            Some(w) => i32::try_from(w).map_err(|_| CudaError::TooLarge)?.max(1),
            None => 0,
        };
        // The last split of each query and head merges the partials, gates, and quantizes the
        // output for the output projection when each head is whole warps.
        let cols = p.n_head * p.head_dim_v;
        let q8 = p.head_dim_v.is_multiple_of(32) && cols <= self.cap.max_cols;
        let (aq, ads) = if q8 {
            (self.aq.ptr(), self.ads.ptr())
        } else {
            (0, 0)
        };
        let gp = match gate {
            Some(g) => self.at(g)?,
            None => 0,
        };
        let args = [
            Arg::P(qp),
            kv[0],
            kv[1],
            kv[2],
            kv[3],
            kv[4],
            kv[5],
            Arg::P(self.positions.dev.ptr()),
            Arg::int(p.n_head)?,
            Arg::int(p.n_head_kv)?,
            Arg::int(p.head_dim)?,
            Arg::int(p.head_dim_v)?,
            Arg::F(p.scale),
            Arg::I(window),
            Arg::int(splits)?,
            Arg::int(MIN_KEYS_PER_SPLIT)?,
            Arg::P(self.part.ptr()),
            Arg::P(self.ml.ptr()),
            Arg::P(self.attn_done.ptr()),
            Arg::P(op),
            Arg::P(gp),
            Arg::P(aq),
            Arg::P(ads),
        ];
        let seen = self.graph_keys.unwrap_or(max_pos as u32 + 1);
        let keys = p.window.map_or(seen, |w| seen.min(w));
        Ok(Some(AttnLaunch {
            args,
            keys,
            grid: (p.n_head as u32, splits as u32, rows as u32),
            out: op,
            rows,
            cols,
            q8,
            head_dim_v: p.head_dim_v,
        }))
    }

    /// The weights `attn_split` / `attn_split_prep` ask L2 for ([`Self::attn_next`]) at
    /// `rows` rows (decode only), as their last two arguments, counted.
    fn attn_next_args(&mut self, rows: usize) -> [Arg; 2] {
        match self.attn_next.filter(|_| rows == 1) {
            Some((ptr, bytes)) => {
                self.attn_prefetches += 1;
                [Arg::P(ptr), Arg::U(bytes)]
            }
            None => [Arg::P(0), Arg::U(0)],
        }
    }

    /// The `attn_split` launch of [`Self::attn_args`]' making, or at one row `attn_split_cl`
    /// over clusters of [`CudaBackend::attn_cluster`] blocks a head where that is on, the
    /// heads' values are whole warps that many blocks can merge (kernels/attention.cu), and
    /// no row may see more than [`CudaBackend::attn_cluster_keys`] keys.
    fn launch_attn(&mut self, a: &AttnLaunch) -> Result<(), CudaError> {
        let mut all = [Arg::I(0); ATT_ARGS + 3];
        all[..ATT_ARGS].copy_from_slice(&a.args);
        all[ATT_ARGS..ATT_ARGS + 2].copy_from_slice(&self.attn_next_args(a.rows));
        let c = self.attn_cluster;
        let cluster = a.rows == 1
            && self.attn_clusters_on()
            && a.head_dim_v.is_multiple_of(32)
            && a.head_dim_v <= 32 * c as usize
            && a.keys <= self.attn_cluster_keys;
        if cluster {
            // Whole clusters covering the split count: a row longer than `attn_cluster_keys`
            // (only where a launch was told otherwise, as `set_graph_keys` does) takes
            // attn_split's splits inside the launch.
            all[ATT_ARGS + 2] = Arg::int(self.attn_cluster_keys as usize)?;
            let x = a.grid.1.div_ceil(c) * c;
            self.gpu.launch_ex(
                raw(&self.gpu.fns().attn_split_cl),
                (x, a.grid.0, 1),
                128,
                0,
                c,
                &all,
            )?;
            self.cluster_attns += 1;
        } else {
            self.gpu.launch(
                raw(&self.gpu.fns().attn_split),
                a.grid,
                128,
                &all[..ATT_ARGS + 2],
            )?;
        }
        if a.q8 {
            self.qx = Some((a.out, a.rows, a.cols));
        }
        Ok(())
    }

    /// Attention, gated by `sigmoid(gate)` when `gate` is given.
    fn attend(
        &mut self,
        p: &AttnParams,
        q: Buf,
        positions: &[u32],
        gate: Option<Buf>,
        out: Buf,
    ) -> Result<(), CudaError> {
        let takes = self.takes_prep(p, q, positions);
        if !takes {
            self.flush_prep()?;
        }
        match self.attn_args(p, q, positions, gate, out)? {
            Some(a) if takes => self.launch_prep(&a),
            Some(a) => self.launch_attn(&a),
            None => Ok(()),
        }
    }
}

impl Backend for CudaBackend {
    type Error = CudaError;

    fn embed(&mut self, table: &Tensor<'_>, tokens: &[u32], out: Buf) -> Result<(), CudaError> {
        self.flush_pending()?;
        self.qx = None;
        // A forward pass starts: its first launch with run-time items zeroes the counters.
        self.grab_ordinal = 0;
        let t = self.weight(table)?;
        if out.len != tokens.len() * t.cols || tokens.is_empty() {
            return Err(CudaError::BadRegion);
        }
        if tokens.iter().any(|&tok| tok as usize >= t.rows) {
            return Err(CudaError::BadRegion);
        }
        self.tokens.sync_dev(&self.gpu, tokens, self.capturing)?;
        let o = self.at(out)?;
        let f = raw(&self.gpu.fns().embed_rows);
        self.gpu.launch(
            f,
            (tokens.len() as u32, 1, 1),
            256,
            &[
                Arg::P(t.ptr),
                Arg::I(t.ty as i32),
                Arg::U(t.row_bytes as u64),
                Arg::int(t.cols)?,
                Arg::P(self.tokens.dev.ptr()),
                Arg::P(o),
            ],
        )
    }

    fn rmsnorm(
        &mut self,
        x: Buf,
        weight: Option<&Tensor<'_>>,
        dim: usize,
        eps: f32,
        out: Buf,
    ) -> Result<(), CudaError> {
        self.flush_pending()?;
        self.norm(NormArgs {
            x,
            y: None,
            post: None,
            weight,
            dim,
            eps,
            out,
        })
    }

    /// In one launch (`CudaBackend::norm` with the residual). (`matmul_add_rmsnorm` may
    /// instead defer them into the next GEMV's launch, [`NormFusion::Pre`].)
    fn branch_norms(&mut self, e: &BranchEnd<'_, '_>) -> Result<(), CudaError> {
        self.flush_pending()?;
        self.norm(NormArgs::from(e))
    }

    fn matmul_add_rmsnorm(
        &mut self,
        w: &Tensor<'_>,
        a: Buf,
        rows: usize,
        e: &BranchEnd<'_, '_>,
    ) -> Result<(), CudaError> {
        self.flush_pending()?;
        if self.matmul_norm_fused(w, a, rows, e, None)? {
            return Ok(());
        }
        self.matmul(w, a, rows, e.y)?;
        if self.defer_norm(e, rows)? {
            return Ok(());
        }
        self.branch_norms(e)
    }

    fn matmul(&mut self, w: &Tensor<'_>, x: Buf, rows: usize, out: Buf) -> Result<(), CudaError> {
        self.flush_pending()?;
        let d = self.weight(w)?;
        if x.len != rows * d.cols || out.len != rows * d.rows || !x.disjoint(out) {
            return Err(CudaError::BadRegion);
        }
        if rows > self.cap.chunk {
            return Err(CudaError::TooLarge);
        }
        if rows == 0 {
            return Ok(());
        }
        if self
            .matmul_multi(&[w], x, rows, &[out], None, None)?
            .is_some()
        {
            return Ok(());
        }
        let (xp, op) = (self.at(x)?, self.at(out)?);
        match gemv_index(d.ty) {
            Some(i) => self.quantized_matmul(i, d, xp, rows, op),
            None if matches!(d.ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16) => {
                // Its output may overlap the activations that `aq` holds.
                self.qx = None;
                let f = raw(&self.gpu.fns().gemv_float);
                self.gpu.launch(
                    f,
                    (d.rows.div_ceil(GEMV_WARPS) as u32, rows as u32, 1),
                    (GEMV_WARPS * 32) as u32,
                    &[
                        Arg::P(d.ptr),
                        Arg::I(d.ty as i32),
                        Arg::U(d.row_bytes as u64),
                        Arg::int(d.rows)?,
                        Arg::int(d.cols)?,
                        Arg::P(xp),
                        Arg::P(op),
                    ],
                )
            }
            None => Err(CudaError::UnsupportedType(d.ty)),
        }
    }

    fn rope(
        &mut self,
        x: Buf,
        n_heads: usize,
        head_dim: usize,
        rope_dim: usize,
        positions: &[u32],
        base: f32,
        style: RopeStyle,
    ) -> Result<(), CudaError> {
        self.flush_pending()?;
        self.qx = None;
        if x.len != positions.len() * n_heads * head_dim || rope_dim > head_dim {
            return Err(CudaError::BadRegion);
        }
        if positions.is_empty() || rope_dim < 2 {
            return Ok(());
        }
        self.positions
            .sync_dev(&self.gpu, positions, self.capturing)?;
        let xp = self.at(x)?;
        let (theta_scale, style) = rope_args(rope_dim, base, style);
        let f = raw(&self.gpu.fns().rope);
        self.gpu.launch(
            f,
            (positions.len() as u32, 1, 1),
            256,
            &[
                Arg::P(xp),
                Arg::int(n_heads)?,
                Arg::int(head_dim)?,
                Arg::int(rope_dim)?,
                Arg::P(self.positions.dev.ptr()),
                Arg::F(theta_scale),
                Arg::I(style),
            ],
        )
    }

    fn kv_store(
        &mut self,
        layer: usize,
        k: Buf,
        v: Buf,
        positions: &[u32],
    ) -> Result<(), CudaError> {
        self.flush_pending()?;
        self.qx = None;
        let n = positions.len();
        let (kd, vd) = (self.kvl.k_dim, self.kvl.v_dim);
        if n == 0 || k.len != n * kd || v.len != n * vd {
            return Err(CudaError::BadRegion);
        }
        if positions.iter().any(|&p| p as usize >= self.kvl.ctx) {
            return Err(CudaError::KvRange);
        }
        let kv = self.kv_args(layer)?;
        self.positions
            .sync_dev(&self.gpu, positions, self.capturing)?;
        let (kp, vp) = (self.at(k)?, self.at(v)?);
        let f = raw(&self.gpu.fns().kv_store);
        let args = [
            kv[0],
            kv[1],
            kv[2],
            kv[3],
            kv[4],
            kv[5],
            Arg::P(kp),
            Arg::P(vp),
            Arg::int(kd)?,
            Arg::int(vd)?,
            Arg::P(self.positions.dev.ptr()),
        ];
        self.gpu.launch(f, (n as u32, 1, 1), 256, &args)
    }

    fn attention(
        &mut self,
        p: &AttnParams,
        q: Buf,
        positions: &[u32],
        out: Buf,
    ) -> Result<(), CudaError> {
        self.flush_norm()?;
        self.attend(p, q, positions, None, out)
    }

    fn attention_gated(
        &mut self,
        p: &AttnParams,
        q: Buf,
        positions: &[u32],
        gate: Buf,
        out: Buf,
    ) -> Result<(), CudaError> {
        self.flush_norm()?;
        self.attend(p, q, positions, Some(gate), out)
    }

    #[allow(clippy::too_many_arguments)]
    fn attention_project(
        &mut self,
        p: &AttnParams,
        q: Buf,
        positions: &[u32],
        gate: Option<Buf>,
        att: Buf,
        wo: &Tensor<'_>,
        e: &BranchEnd<'_, '_>,
    ) -> Result<(), CudaError> {
        // Attention takes a deferred attn_inputs in the two-op form; the one-launch form
        // does not.
        self.flush_norm()?;
        if !(self.fuse_attn && positions.len() == 1) {
            // The projection's first weights into L2 while attention runs, where asked for.
            if self.attn_prefetch_bytes > 0 {
                let t = self.weight(wo)?;
                let bytes = (t.rows as u64 * t.row_bytes as u64).min(self.attn_prefetch_bytes);
                self.attn_next =
                    (t.ptr.is_multiple_of(16) && bytes >= 16).then_some((t.ptr, bytes & !15));
            }
            let r = attend_then_project(self, p, q, positions, gate, att, wo, e);
            self.attn_next = None;
            return r;
        }
        self.flush_prep()?;
        let Some(a) = self.attn_args(p, q, positions, gate, att)? else {
            return Ok(());
        };
        // One launch where the combine quantizes the heads for the projection and the
        // bulk-copy kernels take it: with the grid-barrier norm after the matmul
        // (`gemv_k_multi_tma1_t2_attn_gridnorm`), else `gemv_k_multi_tma1_t2_attn` then the
        // norms.
        if a.q8 {
            let head = Some(&a);
            if self.fuse_norm == NormFusion::Grid && self.matmul_norm_fused(wo, att, 1, e, head)? {
                self.fused_attn += 1;
                return Ok(());
            }
            if self
                .matmul_multi(&[wo], att, 1, &[e.y], None, head)?
                .is_some()
            {
                self.qx = Some((a.out, a.rows, a.cols));
                self.fused_attn += 1;
                return self.branch_norms(e);
            }
        }
        // Refused: the two ops, with the arguments already made.
        self.launch_attn(&a)?;
        self.matmul_add_rmsnorm(wo, att, 1, e)
    }

    fn attn_inputs(
        &mut self,
        p: &QkPrep<'_, '_>,
        q: Buf,
        k: Buf,
        v: Buf,
        positions: &[u32],
    ) -> Result<(), CudaError> {
        self.flush_pending()?;
        let launch = self.attn_inputs_args(p, q, k, v, positions)?;
        if self.fuse_prep && positions.len() == 1 {
            self.qx = None;
            self.pending_prep = Some(PendingPrep {
                launch,
                q,
                layer: p.layer,
                head_dim: p.head_dim,
                pos: positions[0],
            });
            return Ok(());
        }
        self.launch_attn_inputs(&launch, positions.len())
    }

    #[allow(clippy::too_many_arguments)]
    fn qkv_attn_inputs(
        &mut self,
        ws: &[&Tensor<'_>],
        x: Buf,
        q: Buf,
        k: Buf,
        v: Buf,
        gate: Option<Buf>,
        p: &QkPrep<'_, '_>,
        positions: &[u32],
    ) -> Result<(), CudaError> {
        let outs = [q, k, v, gate.unwrap_or(v)];
        let outs = &outs[..3 + usize::from(gate.is_some())];
        // One launch (`gemv_k_multi_tma1_t2_qkprep`) where asked for and the bulk-copy
        // kernels run; else the two ops.
        if !(self.fuse_qk && positions.len() == 1 && ws.len() == outs.len()) {
            return qkv_then_attn_inputs(self, ws, x, q, k, v, gate, p, positions);
        }
        self.flush_pending()?;
        let launch = self.attn_inputs_args(p, q, k, v, positions)?;
        let mut tail = [Arg::I(0); QK_TAIL_ARGS];
        tail[..QK_TAIL_ARGS - 1].copy_from_slice(&launch.0);
        tail[QK_TAIL_ARGS - 1] = Arg::P(self.grid_bar.ptr());
        if self
            .matmul_multi(ws, x, 1, outs, Some(NormTail::Qk(&tail)), None)?
            .is_some()
        {
            self.qx = None;
            self.fused_qk += 1;
            return Ok(());
        }
        // Refused (not a bulk-copy launch): the two ops, with the arguments already made.
        self.matmul_many(ws, x, 1, outs)?;
        self.launch_attn_inputs(&launch, 1)
    }

    fn matmul_many(
        &mut self,
        ws: &[&Tensor<'_>],
        x: Buf,
        rows: usize,
        outs: &[Buf],
    ) -> Result<(), CudaError> {
        if self.take_norm(ws, x, rows, outs)? {
            return Ok(());
        }
        if self.take_flag_norm(ws, x, rows, outs)? {
            return Ok(());
        }
        self.flush_pending()?;
        if self.matmul_multi(ws, x, rows, outs, None, None)?.is_some() {
            return Ok(());
        }
        if ws.len() != outs.len() {
            return Err(CudaError::BadRegion);
        }
        for (w, &o) in ws.iter().zip(outs) {
            self.matmul(w, x, rows, o)?;
        }
        Ok(())
    }

    fn matmul_gated(
        &mut self,
        w_gate: &Tensor<'_>,
        w_up: &Tensor<'_>,
        x: Buf,
        rows: usize,
        gate: Buf,
        up: Buf,
        act: Activation,
    ) -> Result<(), CudaError> {
        self.matmul_many(&[w_gate, w_up], x, rows, &[gate, up])?;
        let n = gate.len;
        let cols = n.checked_div(rows).unwrap_or(0);
        // The activation also quantizes its output for the down projection (one launch).
        let fuse = rows > 0
            && rows <= self.cap.chunk
            && cols.is_multiple_of(32)
            && cols <= self.cap.max_cols
            && up.len == n
            && gate.disjoint(up);
        if !fuse {
            return self.gated_act(gate, up, act);
        }
        let (g, u) = (self.at(gate)?, self.at(up)?);
        let act = match act {
            Activation::Silu => 0,
            Activation::GeluTanh => 1,
        };
        let f = raw(&self.gpu.fns().gated_act_q8);
        self.gpu.launch(
            f,
            (n.div_ceil(256) as u32, 1, 1),
            256,
            &[
                Arg::P(g),
                Arg::P(u),
                Arg::U(n as u64),
                Arg::I(act),
                Arg::P(self.aq.ptr()),
                Arg::P(self.ads.ptr()),
            ],
        )?;
        self.qx = Some((g, rows, cols));
        Ok(())
    }

    fn gated_act(&mut self, gate: Buf, up: Buf, act: Activation) -> Result<(), CudaError> {
        self.elementwise_pair(gate, up, |f| match act {
            Activation::Silu => &f.gated_silu,
            Activation::GeluTanh => &f.gated_gelu_tanh,
        })
    }

    fn sigmoid_mul(&mut self, x: Buf, gate: Buf) -> Result<(), CudaError> {
        self.elementwise_pair(x, gate, |f| &f.sigmoid_mul)
    }

    fn softcap(&mut self, x: Buf, cap: f32, scale: f32) -> Result<(), CudaError> {
        self.flush_pending()?;
        self.qx = None;
        let xp = self.at(x)?;
        let gpu = self.gpu.clone();
        self.elementwise(
            &gpu.fns().softcap,
            &[Arg::P(xp), Arg::F(cap), Arg::F(scale)],
            x.len,
        )
    }

    fn add(&mut self, x: Buf, y: Buf) -> Result<(), CudaError> {
        self.elementwise_pair(x, y, |f| &f.add)
    }

    fn scale(&mut self, x: Buf, s: f32) -> Result<(), CudaError> {
        self.flush_pending()?;
        self.qx = None;
        let xp = self.at(x)?;
        let gpu = self.gpu.clone();
        self.elementwise(&gpu.fns().scale, &[Arg::P(xp), Arg::F(s)], x.len)
    }

    fn read(&mut self, src: Buf, dst: &mut [f32]) -> Result<(), CudaError> {
        self.flush_pending()?;
        if dst.len() != src.len {
            return Err(CudaError::BadRegion);
        }
        let p = self.at(src)?;
        self.gpu.download(dst, p)
    }
}

/// A `gemv_k_multi_tma*` launch's shape ([`tma_layout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TmaLayout {
    /// Rows an item (1 or 2).
    pub rows: u32,
    /// Bytes of a ring slot (a multiple of 128 holding `rows` rows).
    pub slot: u32,
    /// Warps a block (a whole number of teams).
    pub warps: u32,
    /// Slots a ring (`cfg.stages`, or more where [`TmaGemv::ring`] asks and there is room).
    pub slots: u32,
    /// Dynamic shared memory a block: the mbarriers, the activation row, the rings (one a
    /// team).
    pub smem: u32,
}

/// How a bulk-copy multi-GEMV over `cols`-wide rows of at most `max_rb` bytes lays out its
/// shared memory (at most `optin` bytes a block) under `cfg`: one row an item for teams of
/// warps; otherwise two rows an item where
/// `cfg.max_warps.min(6)` warps still fit (or `cfg.item_rows` says so), else one; as many
/// warps as fit, up to `cfg.max_warps`. `None` where fewer than `cfg.min_warps` (at least one)
/// fit.
pub fn tma_layout(cfg: TmaGemv, cols: usize, max_rb: usize, optin: u32) -> Option<TmaLayout> {
    let round = |x: usize| x.div_ceil(128) * 128;
    // The activation row: 80 bytes for each 64 int8 values, then cols / 32 (d, d·sum) pairs.
    let fixed = KT_BAR_BYTES as usize + round(cols / 64 * 80 + cols / 4);
    let avail = (optin as usize).checked_sub(fixed)?;
    let team = cfg.team.max(1) as usize;
    // Rings of `rows`-row slots that fit, each for `team` warps: (slot bytes, warps).
    let fit = |rows: usize| {
        let slot = round(rows * max_rb);
        let rings = (avail / (slot * cfg.stages as usize)).min(cfg.max_warps as usize / team);
        (slot, rings * team)
    };
    let rows = match cfg.item_rows {
        // Two rows an item with teams of two only where that costs no warps.
        2 | 3 if team == 2 && fit(2).1 >= fit(1).1 => 2,
        _ if team > 1 => 1,
        1 | 2 => cfg.item_rows as usize,
        _ if fit(2).1 >= cfg.max_warps.min(6) as usize => 2,
        _ => 1,
    };
    let (slot, warps) = fit(rows);
    if warps < cfg.min_warps.max(1) as usize || max_rb == 0 {
        return None;
    }
    // Deeper rings where `cfg.ring` asks: as many slots as shared memory and the 96
    // mbarriers of KT_BAR_BYTES hold, never fewer than `stages`.
    let rings = warps / team;
    let slots = (cfg.ring as usize)
        .min(avail / (slot * rings))
        .min(96 / rings)
        .max(cfg.stages as usize);
    Some(TmaLayout {
        rows: rows as u32,
        slot: u32::try_from(slot).ok()?,
        warps: warps as u32,
        slots: slots as u32,
        smem: u32::try_from(fixed + rings * slots * slot).ok()?,
    })
}

/// Whether a plain bulk-copy launch (`plain`: no work fused before or after the matmuls, not
/// the probe) laid out as `l` under `cfg` takes teams of four instead ([`TmaGemv::wide`]):
/// its rings are so few that teams of two leave at least half of `cfg.max_warps` unused.
pub fn wide_teams(cfg: TmaGemv, l: TmaLayout, plain: bool) -> bool {
    plain && cfg.wide && cfg.team == 2 && l.rows == 1 && 2 * l.warps <= cfg.max_warps
}

/// The static rounds of a bulk-copy launch with run-time items ([`CudaBackend::gemv_steal`]):
/// `items` items over `stride` rings (blocks × rings a block), the last `steal` whole rounds
/// and the partial one handed out at run time, each ring's first `slots` items static (its
/// first fill is asked for before the launch's wait). `None` where that leaves no run-time
/// item or too few static ones (the launch then takes its items statically).
pub(crate) fn steal_rounds(
    items: usize,
    stride: usize,
    steal: usize,
    slots: usize,
) -> Option<usize> {
    let sr = (items / stride.max(1)).checked_sub(steal)?;
    (steal > 0 && sr >= slots && items > sr * stride).then_some(sr)
}

/// [`tma_layout`] for `gemv_k_multi_tma1_t2_attn*` (attention in front of the matmul): the
/// rings laid out in what six attention workers (four warps each, [`ATT_SMEM`] bytes each,
/// after the rings) leave, with at least one worker; and the block's dynamic shared memory,
/// the workers' included.
pub fn attn_tma_layout(
    cfg: TmaGemv,
    cols: usize,
    max_rb: usize,
    optin: u32,
) -> Option<(TmaLayout, u32)> {
    let l = tma_layout(cfg, cols, max_rb, optin.checked_sub(6 * ATT_SMEM)?)?;
    (l.warps >= 4).then_some((l, l.smem + l.warps / 4 * ATT_SMEM))
}

#[cfg(test)]
mod tests {
    use super::{
        attn_tma_layout, auto_smem, one_row_end, steal_rounds, team_warps, tma_layout, wide_teams,
        TmaGemv, ATT_SMEM,
    };
    use glimmer_core::exec::{BranchEnd, Buf};

    #[test]
    fn fused_norms_need_one_distinct_row() {
        let b = |off, len| Buf { off, len };
        let end = |y, x, out| BranchEnd {
            y,
            x,
            post: None,
            weight: None,
            dim: 64,
            eps: 1e-6,
            out,
        };
        let e = end(b(0, 64), b(64, 64), b(128, 64));
        assert!(one_row_end(&e, None));
        assert!(one_row_end(&e, Some(b(192, 256))));
        // The matmul's input over the residual, or the output over y: refused.
        assert!(!one_row_end(&e, Some(b(100, 10))));
        assert!(!one_row_end(&end(b(0, 64), b(64, 64), b(32, 64)), None));
        // Two rows (or any other length than the width): refused.
        assert!(!one_row_end(
            &end(b(0, 128), b(128, 128), b(256, 128)),
            None
        ));
    }

    #[test]
    fn run_time_items_leave_the_last_rounds() {
        // The 30B shape's FFN gate/up on 132 multiprocessors of 12 rings: 39 936 items, 25
        // whole rounds of 1 584 and a partial one.
        let stride = 132 * 12;
        assert_eq!(steal_rounds(39936, stride, 2, 2), Some(23));
        assert_eq!(steal_rounds(39936, stride, 25, 2), None);
        assert_eq!(steal_rounds(39936, stride, 23, 2), Some(2));
        // Off, or no item left past the static ones (exactly whole rounds, none handed out).
        assert_eq!(steal_rounds(39936, stride, 0, 2), None);
        assert_eq!(steal_rounds(3 * stride, stride, 1, 2), Some(2));
        assert_eq!(steal_rounds(2 * stride, stride, 1, 2), None);
        // Fewer items than rings a round.
        assert_eq!(steal_rounds(100, stride, 1, 2), None);
    }

    #[test]
    fn attention_workers_fit_after_the_rings() {
        // Hopper: 227 KiB a block. The 30B shape's output projection: rows of 4096 (Q4_K
        // 2304 bytes, Q6_K 3360): the default's 24 warps and six workers fit.
        const OPTIN: u32 = 232_448;
        for rb in [2304, 3360] {
            let plain = tma_layout(TmaGemv::DEFAULT, 4096, rb, OPTIN).unwrap();
            let (l, smem) = attn_tma_layout(TmaGemv::DEFAULT, 4096, rb, OPTIN).unwrap();
            assert_eq!(l, plain);
            assert_eq!((l.warps, smem), (24, l.smem + 6 * ATT_SMEM));
            assert!(smem <= OPTIN);
        }
        // Too few warps for a worker: refused (the two ops run instead).
        let narrow = TmaGemv {
            max_warps: 2,
            ..TmaGemv::DEFAULT
        };
        assert!(attn_tma_layout(narrow, 4096, 2304, OPTIN).is_none());
        // Every layout it gives fits, with a worker for each four warps.
        for cols in [256, 1024, 4096, 19968] {
            for rb in [144, 2304, 16384, 60000] {
                if let Some((l, smem)) = attn_tma_layout(TmaGemv::DEFAULT, cols, rb, OPTIN) {
                    assert!(l.warps >= 4 && smem <= OPTIN);
                    assert_eq!(smem, l.smem + l.warps / 4 * ATT_SMEM);
                }
            }
        }
    }

    #[test]
    fn shared_memory_activations_only_for_many_short_rows() {
        // 30B shapes: FFN gate and up stage; Q, K, V, the output projection and FFN down do
        // not (the head takes the two-rows-a-warp kernel, which never stages).
        assert!(auto_smem(19968, 6656));
        assert!(!auto_smem(4096, 6656));
        assert!(!auto_smem(256, 6656));
        assert!(!auto_smem(6656, 19968));
        assert!(!auto_smem(6656, 4096));
    }

    #[test]
    fn team_warps_split_small_outputs_only() {
        // 30B shapes: K/V projections split four ways, wide outputs one warp per row.
        assert_eq!(team_warps(256, 6656, 6144), 4);
        assert_eq!(team_warps(4096, 6656, 6144), 2);
        assert_eq!(team_warps(6656, 19968, 6144), 1);
        assert_eq!(team_warps(19968, 6656, 6144), 1);
        // Narrow rows never split below one 1024-column pass per warp.
        assert_eq!(team_warps(100, 512, 6144), 1);
        assert_eq!(team_warps(300, 4096, 6144), 4);
        assert_eq!(team_warps(1, 1 << 20, 6144), 8);
    }

    #[test]
    fn bulk_copy_rings_fit_shared_memory() {
        // Hopper: 227 KiB a block.
        const OPTIN: u32 = 232_448;
        let d = EIGHT_WARPS;
        // 30B shapes: Q4_K rows of 6656 (3744 bytes) take two rows an item and eight warps.
        let l = tma_layout(d, 6656, 3744, OPTIN).unwrap();
        assert_eq!((l.rows, l.slot, l.warps), (2, 7552, 8));
        // FFN down (Q6_K rows of 19968, repacked: 16384 bytes): two rows would leave three
        // warps, so one row an item, six warps.
        let l = tma_layout(d, 19968, 16384, OPTIN).unwrap();
        assert_eq!((l.rows, l.slot, l.warps), (1, 16384, 6));
        // Every layout fits, and the activation row and barriers come first.
        for (cols, rb) in [
            (6656, 3744),
            (19968, 16384),
            (4096, 2304),
            (1280, 1056),
            (256, 144),
        ] {
            for stages in 2..=4 {
                for max_warps in [1, 8, 16, 24] {
                    for item_rows in 0..=2 {
                        let cfg = TmaGemv {
                            stages,
                            max_warps,
                            item_rows,
                            min_warps: 1,
                            team: 1,
                            pre: 0,
                            wide: false,
                            ring: 0,
                        };
                        let Some(l) = tma_layout(cfg, cols, rb, OPTIN) else {
                            continue;
                        };
                        assert!(l.smem <= OPTIN && l.warps >= 1 && l.warps <= max_warps);
                        assert!(l.slot as usize >= l.rows as usize * rb && l.slot % 128 == 0);
                        let fixed = 2048 + (cols / 64 * 80 + cols / 4).div_ceil(128) * 128;
                        assert_eq!(
                            l.smem as usize,
                            fixed + (l.warps * stages * l.slot) as usize
                        );
                        for team in [2, 4] {
                            let cfg = TmaGemv { team, ..cfg };
                            let Some(t) = tma_layout(cfg, cols, rb, OPTIN) else {
                                continue;
                            };
                            // One row an item, or two with teams of two where that keeps
                            // every warp of one row's layout.
                            let one = tma_layout(
                                TmaGemv {
                                    item_rows: 1,
                                    ..cfg
                                },
                                cols,
                                rb,
                                OPTIN,
                            );
                            let two_slot = (2 * rb).div_ceil(128) * 128;
                            let two_warps = ((OPTIN as usize - fixed)
                                / (two_slot * stages as usize))
                                .min((max_warps / team) as usize)
                                * team as usize;
                            let two = team == 2
                                && item_rows == 2
                                && one.is_some_and(|o| two_warps >= o.warps as usize);
                            assert_eq!(t.rows, if two { 2 } else { 1 });
                            assert!(t.warps % team == 0 && t.warps <= max_warps);
                            let rings = t.warps / team;
                            assert_eq!(t.smem as usize, fixed + (rings * stages * t.slot) as usize);
                            assert!(t.smem <= OPTIN);
                        }
                    }
                }
            }
        }
        // Two rows an item with teams of two: on the 3744-byte Q4_K rows 24 warps still fit
        // (two rows); on FFN down only six would, so one row and 12 warps.
        let two = TmaGemv {
            item_rows: 2,
            ..TmaGemv::DEFAULT
        };
        let l = tma_layout(two, 6656, 3744, OPTIN).unwrap();
        assert_eq!((l.rows, l.slot, l.warps), (2, 7552, 24));
        let l = tma_layout(two, 19968, 16384, OPTIN).unwrap();
        assert_eq!((l.rows, l.slot, l.warps), (1, 16384, 12));
        // The default at the 30B shapes: one row an item, teams of two; 24 warps (12 rings)
        // on the 3744-byte Q4_K rows, 12 (six rings of 16 KiB) on FFN down.
        let l = tma_layout(TmaGemv::DEFAULT, 6656, 3744, OPTIN).unwrap();
        assert_eq!((l.rows, l.slot, l.warps), (1, 3840, 24));
        let l = tma_layout(TmaGemv::DEFAULT, 19968, 16384, OPTIN).unwrap();
        assert_eq!((l.rows, l.slot, l.warps), (1, 16384, 12));
        // FFN down gets six warps: under a floor of eight, no layout (gemv_k_multi runs it).
        let floor = TmaGemv {
            max_warps: 16,
            min_warps: 8,
            ..d
        };
        assert_eq!(tma_layout(floor, 19968, 16384, OPTIN), None);
        assert_eq!(
            tma_layout(floor, 6656, 3744, OPTIN).map(|l| l.warps),
            Some(14)
        );
        assert_eq!(
            TmaGemv::parse("2:16:1:8"),
            Some(TmaGemv {
                stages: 2,
                max_warps: 16,
                item_rows: 1,
                min_warps: 8,
                team: 1,
                pre: 0,
                wide: false,
                ring: 0,
            })
        );
        // FFN down in teams of four: six rings, 24 warps.
        let teams = TmaGemv {
            max_warps: 24,
            team: 4,
            ..d
        };
        let l = tma_layout(teams, 19968, 16384, OPTIN).unwrap();
        assert_eq!((l.rows, l.slot, l.warps), (1, 16384, 24));
        assert_eq!(TmaGemv::parse("2:24:1:1:4"), Some(teams_parsed()));
        // Nothing fits: no layout.
        assert_eq!(tma_layout(d, 6656, 200_000, OPTIN), None);
        assert_eq!(tma_layout(d, 6656, 3744, 4096), None);
    }

    #[test]
    fn wide_teams_only_where_teams_of_two_leave_warps_idle() {
        // Hopper: 227 KiB a block.
        const OPTIN: u32 = 232_448;
        let wide = TmaGemv {
            wide: true,
            ..TmaGemv::DEFAULT
        };
        // 30B shapes. FFN down (Q6_K rows of 19968 repacked, 16384 bytes): six rings, so
        // teams of two give 12 of 24 warps; teams of four give all 24 on the same rings.
        let l = tma_layout(wide, 19968, 16384, OPTIN).unwrap();
        assert_eq!(l.warps, 12);
        assert!(wide_teams(wide, l, true));
        let l4 = tma_layout(TmaGemv { team: 4, ..wide }, 19968, 16384, OPTIN).unwrap();
        assert_eq!((l4.warps, l4.slot, l4.smem), (24, l.slot, l.smem));
        // Not fused launches, the probe, or without the setting.
        assert!(!wide_teams(wide, l, false));
        let narrow = TmaGemv {
            wide: false,
            ring: 0,
            ..TmaGemv::DEFAULT
        };
        assert!(!wide_teams(narrow, l, true));
        // Q/K/V (Q6_K V rows of 6656: 5504 bytes) and the output projection keep teams of
        // two: their rings give every warp.
        for (cols, rb) in [(6656, 5504), (6656, 3744), (4096, 3360)] {
            let l = tma_layout(wide, cols, rb, OPTIN).unwrap();
            assert_eq!(l.warps, 24);
            assert!(!wide_teams(wide, l, true), "{cols} {rb}");
        }
    }

    #[test]
    fn bulk_copy_setting_parses_or_is_refused() {
        assert_eq!(TmaGemv::parse("1"), Some(TmaGemv::DEFAULT));
        assert_eq!(TmaGemv::parse("2:24:1:1:2:0:1"), Some(TmaGemv::DEFAULT));
        assert_eq!(
            TmaGemv::parse("2:24:1:1:2"),
            Some(TmaGemv {
                wide: false,
                ring: 0,
                ..TmaGemv::DEFAULT
            })
        );
        assert_eq!(
            TmaGemv::parse("3:24:1:1:2:1"),
            Some(TmaGemv {
                stages: 3,
                pre: 1,
                wide: false,
                ring: 0,
                ..TmaGemv::DEFAULT
            })
        );
        assert_eq!(
            TmaGemv::parse("2:24:1:1:2:0:1"),
            Some(TmaGemv {
                wide: true,
                ..TmaGemv::DEFAULT
            })
        );
        // The variable: unset or refused, the default; `0`, off.
        let card = TmaGemv::TWO_ROWS;
        assert_eq!(TmaGemv::from_setting(None, card), Some(card));
        assert_eq!(TmaGemv::from_setting(Some(" 1"), card), Some(card));
        assert_eq!(TmaGemv::from_setting(Some(" 0 "), card), None);
        assert_eq!(TmaGemv::from_setting(Some("9:9"), card), Some(card));
        assert_eq!(
            TmaGemv::from_setting(Some("3:16:1"), card),
            TmaGemv::parse("3:16:1")
        );
        // The card's default: two rows an item from 28 GB/s a multiprocessor (the H200's
        // ~4 800 GB/s over 132), one on the H100's ~3 350 and where the bandwidth is unknown.
        assert_eq!(TmaGemv::for_card(4800.0, 132), TmaGemv::TWO_ROWS);
        assert_eq!(TmaGemv::for_card(3350.0, 132), TmaGemv::DEFAULT);
        assert_eq!(TmaGemv::for_card(0.0, 132), TmaGemv::DEFAULT);
        assert_eq!(TmaGemv::parse("2:24:2:1:2:0:1"), Some(TmaGemv::TWO_ROWS));
        assert_eq!(
            TmaGemv::parse("3:16:1"),
            Some(TmaGemv {
                stages: 3,
                max_warps: 16,
                item_rows: 1,
                min_warps: 1,
                team: 1,
                pre: 0,
                wide: false,
                ring: 0,
            })
        );
        assert_eq!(TmaGemv::parse("2:8"), Some(EIGHT_WARPS));
        for bad in [
            "",
            "0",
            "1:8",
            "5:8",
            "2:0",
            "2:25",
            "2:8:3",
            "2:8:1:9",
            "2:8:1:0",
            "2:8:1:1:3",
            "2:1:1:1:2",
            "2:8:1:1:1:3",
            "2:8:1:1:1:1:1",
            "2:24:1:1:2:0:2",
            "2:24:1:1:4:0:1",
            "2:24:1:1:2:0:1:9",
            "2:24:1:1:2:0:1:0:0",
            "a:b",
        ] {
            assert_eq!(TmaGemv::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn deeper_first_rings_fill_what_shared_memory_leaves() {
        const OPTIN: u32 = 232_448;
        let d = TmaGemv::DEFAULT;
        // Q/K/V/gate of the 30B shape: 3 744-byte rows, 12 rings of two slots.
        let base = tma_layout(d, 6656, 3744, OPTIN).unwrap();
        assert_eq!((base.slots, base.warps), (2, 24));
        let deep = tma_layout(TmaGemv { ring: 8, ..d }, 6656, 3744, OPTIN).unwrap();
        // The warps and slot size stay; the slots grow while they fit.
        assert_eq!((deep.warps, deep.slot), (base.warps, base.slot));
        assert_eq!(deep.slots, 4, "{deep:?}");
        assert!(deep.smem <= OPTIN);
        let more = TmaGemv {
            ring: deep.slots + 1,
            ..d
        };
        assert_eq!(
            tma_layout(more, 6656, 3744, OPTIN).unwrap().slots,
            deep.slots
        );
        // The output projection's 2 304-byte rows: eight, the mbarriers' limit (12 rings × 8 =
        // 96), in 229 376 bytes.
        let proj = tma_layout(TmaGemv { ring: 8, ..d }, 4096, 2304, OPTIN).unwrap();
        assert_eq!((proj.slots, proj.warps, proj.smem), (8, 24, 229_376));
        let narrow = TmaGemv {
            ring: 8,
            team: 1,
            ..d
        };
        // 24 rings of one warp: four slots each at most.
        assert_eq!(tma_layout(narrow, 4096, 2304, OPTIN).unwrap().slots, 4);
        // A ring at or below `stages` changes nothing.
        assert_eq!(
            tma_layout(TmaGemv { ring: 2, ..d }, 6656, 3744, OPTIN),
            Some(base)
        );
        // FFN down's rows leave no room for a third slot.
        let down = tma_layout(TmaGemv { ring: 8, ..d }, 19968, 16384, OPTIN).unwrap();
        assert_eq!(down.slots, 2);
        assert_eq!(
            TmaGemv::parse("2:24:1:1:2:0:1:6"),
            Some(TmaGemv { ring: 6, ..d })
        );
        // A row a warp of a team: two-row slots, as two rows an item with teams of two.
        let split = TmaGemv::parse("2:24:3:1:2").unwrap();
        assert_eq!(split.item_rows, 3);
        let two = TmaGemv::parse("2:24:2:1:2").unwrap();
        assert_eq!(
            tma_layout(split, 6656, 3744, OPTIN),
            tma_layout(two, 6656, 3744, OPTIN)
        );
        assert_eq!(tma_layout(split, 6656, 3744, OPTIN).unwrap().rows, 2);
        assert_eq!(TmaGemv::parse("2:24:3:1:1"), None);
        assert_eq!(TmaGemv::parse("2:24:3:1:4"), None);
    }

    /// The first shape measured (session 15): two slots, eight warps, rows an item by size.
    const EIGHT_WARPS: TmaGemv = TmaGemv {
        stages: 2,
        max_warps: 8,
        item_rows: 0,
        min_warps: 1,
        team: 1,
        pre: 0,
        wide: false,
        ring: 0,
    };

    fn teams_parsed() -> TmaGemv {
        TmaGemv {
            stages: 2,
            max_warps: 24,
            item_rows: 1,
            min_warps: 1,
            team: 4,
            pre: 0,
            wide: false,
            ring: 0,
        }
    }
}

//! [`CudaBackend`]: the device arena, scratch, KV cache and weights, and the inputs the
//! kernels read from device memory (tokens, positions, the active KV slot).
//!
//! Every input a decode step depends on lives in device memory, so one captured CUDA graph
//! replays for any token, position and session: the host only rewrites those few words before
//! a replay. The ops themselves are in `ops.rs`.

use std::collections::HashMap;
use std::sync::Arc;

use glimmer_core::exec::{Buf, Layout, MAX_CHUNK};
use glimmer_core::model::{ModelSpec, Tensor, Weights};

use crate::fns::{raw, SAMPLE_MAX_BLOCKS, SAMPLE_THREADS};
use crate::gpu::{Arg, DevMem, Gpu};
use crate::kv::KvLayout;
use crate::weights::{DeviceTensor, DeviceWeights};
use crate::CudaError;

/// Widest head the attention kernels take (`MAX_HEAD` in `attention.cu`).
pub const MAX_HEAD_DIM: usize = 256;
/// Most splits of the split-K attention (`MAX_SPLITS` in `attention.cu`).
pub(crate) const MAX_SPLITS: usize = 64;
/// Fewest keys per split of the split-K attention.
pub(crate) const MIN_KEYS_PER_SPLIT: usize = 16;

/// Run-time item counters a forward pass has ([`CudaBackend::gemv_steal`]); launches past
/// them take their items statically.
pub const GRAB_COUNTERS: usize = 1024;

/// What a [`CudaBackend`] is sized for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capacity {
    /// `f32`s of the activation arena.
    pub arena_len: usize,
    /// Most rows (tokens) per op.
    pub chunk: usize,
    /// Widest matmul input row.
    pub max_cols: usize,
    /// Most query heads.
    pub n_head: usize,
    /// Widest value head.
    pub head_dim_v: usize,
}

impl Capacity {
    /// What a model with `spec` needs under `layout`.
    pub fn for_model(spec: &ModelSpec, layout: &Layout) -> Self {
        let max_cols = spec
            .n_embd
            .max(spec.n_ff)
            .max(spec.n_head * spec.head_dim_v)
            .max(spec.q_dim());
        Capacity {
            arena_len: layout.arena_len,
            chunk: layout.limits.chunk,
            max_cols,
            n_head: spec.n_head,
            head_dim_v: spec.head_dim_v,
        }
    }
}

/// A host copy of a small device input, so unchanged inputs are not uploaded again (and an
/// input that changes during a graph capture is caught).
pub(crate) struct Mirror {
    pub dev: DevMem,
    pub host: Vec<u32>,
}

impl Mirror {
    fn new(gpu: &Gpu, n: usize) -> Result<Self, CudaError> {
        Ok(Mirror {
            dev: gpu.alloc(n * 4)?,
            host: Vec::with_capacity(n),
        })
    }

    /// Makes the device copy equal `src`.
    pub(crate) fn sync_dev(
        &mut self,
        gpu: &Gpu,
        src: &[u32],
        capturing: bool,
    ) -> Result<(), CudaError> {
        if self.host.as_slice() == src {
            return Ok(());
        }
        if capturing {
            return Err(CudaError::Graph);
        }
        if src.len() > self.host.capacity() {
            return Err(CudaError::TooLarge);
        }
        gpu.upload(self.dev.ptr(), src)?;
        self.host.clear();
        self.host.extend_from_slice(src);
        Ok(())
    }
}

/// The CUDA backend: one device arena (`f32`), scratch, an f16 KV cache of several slots, and
/// the weights.
///
/// Build it with [`CudaBackend::new`], upload weights with [`CudaBackend::upload_model`] (or
/// [`CudaBackend::upload`]), pick a session with [`CudaBackend::select_slot`], then run
/// [`glimmer_core::exec::Model::forward`] on it. Ops are queued on the device's stream;
/// [`glimmer_core::exec::Backend::read`] waits for them.
pub struct CudaBackend {
    pub(crate) gpu: Arc<Gpu>,
    pub(crate) cap: Capacity,
    pub(crate) arena: DevMem,
    /// Quantized activations: `(chunk, max_cols)` `i8`.
    pub(crate) aq: DevMem,
    /// Their scales: `(chunk, max_cols / 32)` `(d, d·Σq)`.
    pub(crate) ads: DevMem,
    /// Attention partial outputs: `(parts, head_dim_v)` `f32`.
    pub(crate) part: DevMem,
    /// Attention partial max and sum: `(parts)` `float2`.
    pub(crate) ml: DevMem,
    pub(crate) parts: usize,
    /// Per query row and head, how many attention splits have finished (`u32`, zero between
    /// launches: the last split resets it).
    pub(crate) attn_done: DevMem,
    pub(crate) decode_splits: usize,
    pub(crate) tokens: Mirror,
    pub(crate) positions: Mirror,
    pub(crate) slot: Mirror,
    /// `argmax_f32` / `sample_f32`'s scratch: each block's best value and index, then the
    /// ticket and the result.
    pub(crate) pick_scratch: DevMem,
    pub(crate) kv: DevMem,
    pub(crate) kvl: KvLayout,
    pub(crate) weights: DeviceWeights,
    pub(crate) capturing: bool,
    /// The activations that `aq`/`ads` hold, as `(x, rows, cols)`: a matmul on the same input
    /// (Q, K and V; gate and up) skips quantizing it again. Every op that may write the arena
    /// clears it, and so do graph capture and replay.
    pub(crate) qx: Option<(u64, usize, usize)>,
    /// Output rows one warp of the one-row Q4_K / Q6_K GEMV takes on matrices of at least
    /// [`WIDE_ROWS`](crate::ops::WIDE_ROWS) rows: 0 (the default) picks per matrix
    /// (`auto_rows_per_warp`), 2 forces the two-rows kernel, 1 the one-row-per-warp-team
    /// kernel (other values act as 1; four rows a warp was slower on the H200 and is gone).
    /// Public so benchmarks can compare them.
    pub gemv_rows_per_warp: usize,
    /// Whether quantized matmuls of at least [`MMA_MIN_ROWS`] activation rows (prefill) run on
    /// the tensor cores, `gemm_*_mma` (kernels/gemm.cu: 64 x 64 output tiles, int8
    /// `mma.sync`), instead of the eight-rows-a-launch-row dp4a GEMVs, where the compute
    /// capability is 8.0 or later. On by default (session 28, H100: 30B-shape prefill of 512
    /// tokens 146 -> 1 896 tok/s); `$GLIMMER_PREFILL_MMA=0` turns it off (a measuring knob).
    /// `cuda-check ops` checks it against the CPU at prefill shapes.
    pub prefill_mma: bool,
    /// How many matmuls ran on the tensor cores ([`Self::prefill_mma`]; checks read it).
    pub mma_matmuls: u64,
    /// Warps the one-row GEMV aims to launch when it splits rows over warp teams; 0 (the
    /// default) picks by width (`auto_team_target`). Public so benchmarks can compare.
    pub gemv_team_target: usize,
    /// Whether the one-row Q4_K / Q6_K GEMV stages its activation row in shared memory
    /// (eight warps a block) instead of reading it through L1 (four warps a block): `None`
    /// chooses by shape ([`crate::auto_smem`]), `Some` forces it (benchmarks).
    pub gemv_smem: Option<bool>,
    /// How [`Backend::matmul_many`](glimmer_core::exec::Backend::matmul_many) runs at fewer
    /// than eight rows: 0 runs one launch a matrix; 2, 3 or 4 run up to four Q4_K / Q6_K
    /// matrices in one launch (`gemv_k_multi`) compiled for that many resident blocks a
    /// multiprocessor (fewer registers a thread for more). Public so benchmarks can compare.
    pub gemv_multi: u32,
    /// Whether a single Q4_K / Q6_K matmul at fewer than eight rows also takes the
    /// `gemv_k_multi` kernel (the default: on the H100 it lifted 30B-shape decode from 109.4–109.7
    /// to 111.5–111.8 tok/s, BENCHMARKS.md) instead of the one-row kernels picked by shape.
    /// Public so benchmarks can compare.
    pub gemv_multi_single: bool,
    /// Deep L2 prefetch in `gemv_k_multi`: launches whose matrices hold at most `.0` bytes
    /// have each warp prefetch the first `.1` bytes of its rows before it waits on the kernel
    /// before it (the others prefetch one line a lane). Default from
    /// `gemv_prefetch_default`; public so benchmarks can compare.
    pub gemv_prefetch: (u64, u32),
    /// How `matmul_add_rmsnorm` at one row runs its norms: after the matmul in a norm launch
    /// of one block ([`NormFusion::Off`], the default), in the last block of the matmul's own
    /// launch ([`NormFusion::Tail`]), or from sums the matmul's blocks leave, in a launch of
    /// one warp for each 32 values ([`NormFusion::Split`]), or after a grid-wide barrier in
    /// the matmul's own launch ([`NormFusion::Grid`]; −0.11 ms a token with the register kernels
    /// on the H200, but slower than the bulk-copy default; where the bulk-copy setting has
    /// teams of two, as the default does, it runs in `gemv_k_multi_tma1_t2_gridnorm` instead,
    /// which saved nothing on the H100 in session 19), or in the next GEMV's launch
    /// ([`NormFusion::Pre`]: 129.8 against 138.1 tok/s on the H100 in session 20, its
    /// blocks' staging reading 14 MB from L2 a launch).
    /// `$GLIMMER_FUSE_NORM` = 1 (tail), 2 (split), 3 (grid) or 4 (pre) chooses (a measuring
    /// knob).
    /// Tail and split are correct and both measured slower on the H100's 30B-shape decode
    /// (BENCHMARKS.md sessions 13–14: tail 127 → 83 tok/s, split −0.19 ms a token: the wide
    /// norm launch costs what the one-block launch did, and the GEMV that leaves the sums is
    /// slower). Public so checks and benchmarks can choose.
    pub fuse_norm: NormFusion,
    /// Whether the multi-GEMV launches that `gemv_k_multi` would run take
    /// `gemv_k_multi_probe` instead: the same weight loads without the arithmetic, so the
    /// outputs are garbage. A measuring knob (`$GLIMMER_GEMV_PROBE=1`, for `cuda-check bench`
    /// only): the step's GEMV time with it says how much is the memory access itself.
    pub gemv_probe: bool,
    /// Whether one-row multi-GEMV launches stream their weights with the multiprocessors'
    /// bulk-copy units (`gemv_k_multi_tma*`, compute capability 9.0 and later), and how
    /// ([`TmaGemv`]; on by default there, [`TmaGemv::DEFAULT`]). `$GLIMMER_GEMV_TMA`
    /// chooses ([`TmaGemv::from_env`]; `0` turns it off); public so checks and benchmarks can
    /// choose.
    pub gemv_tma: Option<TmaGemv>,
    /// How many `gemv_k_multi_tma*` launches this backend has made (checks read it).
    pub gemv_tma_launches: u64,
    /// How many of them took teams of four through [`TmaGemv::wide`] (checks read it).
    pub gemv_tma_wide_launches: u64,
    /// How many of them had rings deeper than their steady depth ([`TmaGemv::ring`]; checks
    /// read it).
    pub gemv_tma_deep_launches: u64,
    /// How many of them split each item's rows over a team's warps ([`TmaGemv::item_rows`]
    /// 3; checks read it).
    pub gemv_tma_rowsplit_launches: u64,
    /// How many of them were a fused kernel with two rows an item (the grid-barrier norm, the
    /// Q/K prep, attention in front: `gemv_k_multi_tma2_t2_*`; checks read it).
    pub gemv_tma_fused2_launches: u64,
    /// Per-block partial sums of the fused norms: `gemv_k_multi_norm`'s (`f64` each) or
    /// `gemv_k_multi_sums`' and `gemv_k_multi_gridnorm`'s (four `f64` each),
    /// [`Self::norm_blocks`] of them.
    pub(crate) norm_part: DevMem,
    /// `gemv_k_multi_norm`'s ticket counter (`u32`, zero between launches: the last block
    /// resets it).
    pub(crate) norm_ctr: DevMem,
    /// The most blocks a `gemv_k_multi_norm`, `gemv_k_multi_sums` or `gemv_k_multi_gridnorm`
    /// launch may have (one resident wave of the one of them that fits most) and the size of
    /// [`Self::norm_part`].
    pub(crate) norm_blocks: usize,
    /// `gemv_k_multi_gridnorm`'s grid barrier (two `u32`: arrivals, generation; the barrier
    /// leaves the arrivals at zero).
    pub(crate) grid_bar: DevMem,
    /// Whether a one-row q8 norm whose next op is a plain bulk-copy GEMV over its output tells
    /// that GEMV it is done through a counter in device memory (`hop_signal` / `hop_wait`,
    /// kernels/common.cu) instead of the end of its grid: the norm waits for the next op,
    /// which launches it just before its own launch. `$GLIMMER_FLAG_HOP=1` (a measuring
    /// knob, off by default: slower on the H100 in session 21, 137.4–137.7 → 135.5–135.8
    /// tok/s; correct: e2e tallies and graph/eager bit-identity unchanged). `cuda-check
    /// bench` measures no per-class costs with it (a dropped norm never signals).
    pub flag_hop: bool,
    /// The norm waiting for the next op under [`Self::flag_hop`].
    pub(crate) flag_norm: Option<crate::ops::PendingNorm>,
    /// The flag hop's counter pair (two u32, zero between hops).
    pub(crate) hop_flag: DevMem,
    /// The last rounds of items that the default's one-row bulk-copy launches (and the
    /// row-split teams', [`TmaGemv::item_rows`] 3) hand out at run time
    /// (`gemv_k_multi_tma1_t2_dyn` / `_t4_dyn` / `_tma2_rs_dyn`, kernels/gemv_k.cu,
    /// KT_ITEM_OFF): each team
    /// takes its items in the static order but for the last this many rounds, which go to
    /// whichever team asks first, so that blocks on multiprocessors that stream their rows
    /// faster take more of them and a launch's blocks end together (with static items the
    /// 30B shape's FFN gate/up blocks end up to 12 µs apart on the H100, session 22). 0: off.
    /// `$GLIMMER_GEMV_STEAL` (a measuring knob, off by default). Measured on the H100 in
    /// session 23 (BENCHMARKS.md): correct (`cuda-check ops`, e2e), but the 30B decode loses
    /// 4–7 % (138.9 → 130.9, 129.2 and 133.6 tok/s with 1, 2 and 4 rounds; the GEMVs 6.03 →
    /// 6.3–6.6 ms). Why is not known: the rings stay `stages` deep (a grabbed item is asked
    /// for `stages` items ahead, like a static one); one suspect is the launch's single
    /// counter, which ~1 500 team leaders hit at once each round.
    pub gemv_steal: u32,
    /// The run-time item counters ([`Self::gemv_steal`]): `GRAB_COUNTERS` u32, one for each
    /// such launch of a forward pass; the pass's first one zeroes the others.
    pub(crate) grab: DevMem,
    /// Such launches so far in this forward pass (reset by `embed`).
    pub(crate) grab_ordinal: usize,
    /// How many launches handed out items at run time (checks read it).
    pub gemv_steal_launches: u64,
    /// How many GEMVs waited on a norm's flag (checks read it).
    pub flag_hops: u64,
    /// How many fused `matmul_add_rmsnorm` launches (any kind) this backend has made
    /// (checks read it to see that the fused path ran).
    pub fused_norms: u64,
    /// The branch end whose norms wait for the next op ([`NormFusion::Pre`]): `None` between
    /// ops unless the last op was a `matmul_add_rmsnorm` that deferred them.
    pub(crate) pending_norm: Option<crate::ops::PendingNorm>,
    /// How many deferred norms ran inside the next GEMV's launch (checks read it).
    pub deferred_norms: u64,
    /// Whether `qkv_attn_inputs` at one row runs as one launch,
    /// `gemv_k_multi_tma1_t2_qkprep` (the Q/K/V/gate matmuls, a grid barrier, then
    /// `attn_inputs`' work; where the bulk-copy kernels run with teams of two, as by
    /// default on compute capability 9.0 and later; with two rows an item where the setting
    /// takes them and the matrices' two-row slots keep every warp, the H200's default,
    /// `gemv_k_multi_tma2_t2_qkprep`: session 27, not yet run). `$GLIMMER_FUSE_QK=1` (a
    /// measuring knob, off by default: 0.12 ms a token slower than the two launches on the
    /// H100, session 19).
    pub fuse_qk: bool,
    /// How many such one-launch `qkv_attn_inputs` this backend has made (checks read it).
    pub fused_qk: u64,
    /// Whether a one-row `attn_inputs` waits for the attention after it and runs inside its
    /// launch, `attn_split_prep` (each attention block prepares its own query head and the
    /// block whose split holds the new position its key; output and cache bit-identical to the
    /// two launches). `$GLIMMER_FUSE_PREP=1` (a measuring knob, off by default: no gain on the
    /// H100 in session 20, 7.28 against 7.27 ms a step; each attention block's own query prep
    /// costs what the launch did).
    pub fuse_prep: bool,
    /// Blocks a cluster for the q8 norms over one wide row (2..=16 on compute capability 9.0
    /// and later, where dim / n is a multiple of 32 and at most 1 024; else, or 0 / 1, the
    /// one-block norms): `rmsnorm_q8_cl` and its kind (kernels/norm.cu) spread the row over a
    /// thread-block cluster whose blocks are small enough to start beside a running bulk-copy
    /// GEMV block, their sums meeting in distributed shared memory.
    /// `$GLIMMER_NORM_CLUSTER` (0 or 1: off); default 16, measured on the H100 in session 21
    /// (BENCHMARKS.md): 137.4–138.2 → 138.4–138.8 tok/s on the 30B shape over four
    /// alternating rounds in two calls (clusters of 8: no gain); then, with the sums of each
    /// norm meeting in one exchange and no block barrier (session 22, kernels/norm.cu),
    /// 138.2–138.6 → 140.7–141.2 tok/s in one call. Most of what a norm adds to a step is
    /// still the two grid hops around it.
    pub norm_cluster: u32,
    /// How many norms ran over a cluster ([`Self::norm_cluster`]; checks read it).
    pub cluster_norms: u64,
    /// Blocks a head for one-row (decode) attention over a thread-block cluster (2..=16 on
    /// compute capability 9.0 and later, where each value head is whole warps and at most
    /// 32 dims a block; else, or 0 / 1, `attn_split`'s splits): `attn_split_cl`
    /// (kernels/attention.cu) takes a row of at most [`Self::attn_cluster_keys`] visible keys
    /// in at most that many splits, one a block, and merges them in distributed shared memory
    /// after one cluster barrier instead of through global memory and a ticket; longer rows
    /// take attn_split's splits and ticket in the same launch. A launch whose rows may see
    /// more keys than that (`graph_keys`; eager: its own positions, capped by the
    /// layer's window) runs attn_split itself, so a decode graph serves either the rows the
    /// clusters take or longer ones ([`Self::graph_class`]: the runner keeps one graph of each).
    /// `$GLIMMER_ATTN_CLUSTER` (0 or 1: off; unset: 16). Measured on the H100 (BENCHMARKS.md):
    /// at 515 keys 141.5–141.8 → 142.9–143.1 tok/s on the 30B shape in session 22 and
    /// 138.9–139.0 → 141.6–141.7 in session 23 (attention 0.50 → 0.36 ms a token); at 3 000
    /// keys the in-launch long-row path lost (session 23: 133.7 → 130.8–130.9 tok/s, attention
    /// 0.77 → 0.93 ms: clusters of 16 co-resident blocks schedule worse than free blocks), which
    /// is why such rows now take attn_split's own launch, the same launches as with this off.
    /// Clusters of 8 lose at 515 (141.1–141.3: each block's walk over its keys gets longer than
    /// the merge saves).
    pub attn_cluster: u32,
    /// The most visible keys a row may have for [`Self::attn_cluster`]'s clusters to take it
    /// (`$GLIMMER_ATTN_CLUSTER_KEYS`, default [`ATTN_CLUSTER_KEYS`]).
    pub attn_cluster_keys: u32,
    /// While a decode graph is captured: the most visible keys any row of the steps it will be
    /// replayed for may have (before the layer's window caps it), set by the runner from
    /// [`Self::graph_class`]; `None` when eager, where each launch's own positions decide.
    pub(crate) graph_keys: Option<u32>,
    /// How many attention launches ran over clusters ([`Self::attn_cluster`]; checks read
    /// it).
    pub cluster_attns: u64,
    /// The `attn_inputs` waiting for the next op ([`Self::fuse_prep`]): `None` between ops
    /// unless the last op was a one-row `attn_inputs` that deferred itself.
    pub(crate) pending_prep: Option<crate::ops::PendingPrep>,
    /// How many deferred `attn_inputs` ran inside the attention launch (checks read it).
    pub fused_prep: u64,
    /// Bytes of the output projection's weights that one-row attention in
    /// `attention_project` asks L2 to fetch before it waits on the kernel before it (HBM is
    /// otherwise idle through attention and the Q/K prep before it); 0: none.
    /// `$GLIMMER_ATTN_PREFETCH` in MiB (a measuring knob, off by default: 0.13 ms a step
    /// slower on the H100 in session 20, attention slower and the projection no faster).
    pub attn_prefetch_bytes: u64,
    /// The weights the next attention launch asks L2 for (set by `attention_project` around
    /// its attention call): device address and bytes.
    pub(crate) attn_next: Option<(u64, u64)>,
    /// How many attention launches asked L2 for weights (checks read it).
    pub attn_prefetches: u64,
    /// Whether `attention_project` at one row runs attention in front of the output
    /// projection in one launch, `gemv_k_multi_tma1_t2_attn` (or, with
    /// [`NormFusion::Grid`], `gemv_k_multi_tma1_t2_attn_gridnorm`, the norms after it too):
    /// where the bulk-copy kernels run with teams of two, as by default on compute capability
    /// 9.0 and later (with two rows an item where the setting takes them and the projection's
    /// two-row slots keep every warp, the H200's default: `gemv_k_multi_tma2_t2_attn*`,
    /// session 27, not yet run). `$GLIMMER_FUSE_ATTN=1` (a measuring knob, off by default: 0.3
    /// ms a token slower than the two launches on the H100, session 19).
    pub fuse_attn: bool,
    /// How many such one-launch `attention_project` this backend has made (checks read it).
    pub fused_attn: u64,
    /// Bytes of the next bulk-copy launch's first matrix that each bulk-copy launch asks L2 to
    /// fetch once its own items are done (so that HBM keeps streaming through its tail and
    /// barriers); 0: none. The next launch is the one that followed the same matrix last time
    /// (learned from the step before). `$GLIMMER_GEMV_NEXT` in KiB (a measuring knob, off by
    /// default: no gain at 1–2 KiB and a loss from 8 KiB on the H100, session 19); at most
    /// 2 GiB.
    pub gemv_next_bytes: u32,
    /// Each bulk-copy launch's successor, as last seen.
    pub(crate) gemv_next: NextWeights,
    /// The bulk-copy launches' timeline while [`Self::trace_gemvs`] is on.
    pub(crate) gemv_trace: Option<GemvTrace>,
}

/// One bulk-copy launch of a traced step ([`CudaBackend::trace_gemvs`]): which kernel
/// (`Fns::gemv_multi_tma`'s index), its items, grid and weight bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracedLaunch {
    /// Index into the bulk-copy kernels (`crate::fns::Fns::gemv_multi_tma`).
    pub kernel: usize,
    /// Items (rows, or row pairs) of the launch.
    pub items: u32,
    /// Blocks of the grid.
    pub blocks: u32,
    /// Warps a block.
    pub warps: u32,
    /// Weight bytes the launch reads.
    pub bytes: u64,
}

/// What each block of a traced bulk-copy launch recorded: (global timer ns, SM clock) at its
/// entry, once the previous kernel was waited on, once its activation row was staged, when
/// its first team's first item landed, when that team's items were done, and at its end
/// (`KT_TRACE_POINTS`, kernels/gemv_k.cu).
pub type BlockStamps = [[u64; 2]; TRACE_POINTS];

/// Stamps a block leaves (`KT_TRACE_POINTS`).
pub const TRACE_POINTS: usize = 6;

/// The device buffer and the launches of [`CudaBackend::trace_gemvs`].
pub(crate) struct GemvTrace {
    pub(crate) buf: DevMem,
    /// Launches the buffer has room for.
    pub(crate) cap: usize,
    /// Blocks a launch has room for (the multiprocessors: one block each at most).
    pub(crate) blocks: usize,
    /// The launches so far (capacity `cap`, reserved up front).
    pub(crate) launches: Vec<TracedLaunch>,
}

/// The `u64` words a traced launch of `blocks` blocks may leave ([`BlockStamps`] a block).
fn trace_words(blocks: usize) -> usize {
    blocks * TRACE_POINTS * 2
}

/// The bulk-copy launches' successors behind [`CudaBackend::gemv_next_bytes`]: each launch's
/// first matrix (its device address) → the first matrix (address, bytes) of the launch that
/// came after it last time. Keys are weight matrices, so the map holds at most one entry for
/// each uploaded tensor; [`NextWeights::room_for`] makes that room at upload, so decode steps
/// never allocate.
#[derive(Debug, Default)]
pub(crate) struct NextWeights {
    next: HashMap<u64, (u64, u64)>,
    last: Option<u64>,
}

impl NextWeights {
    /// Room for `total` matrices in all (the tensors on the device).
    pub(crate) fn room_for(&mut self, total: usize) {
        self.next.reserve(total.saturating_sub(self.next.len()));
    }

    /// How many launches have a known successor.
    pub(crate) fn len(&self) -> usize {
        self.next.len()
    }

    /// A launch whose first matrix starts at `w` (`bytes` long): records it as the successor
    /// of the launch before, and returns what it should ask L2 for once its items are done:
    /// the start of its own successor's first matrix and at most `cap` of its bytes, a
    /// multiple of 16 (the bulk prefetch's unit); `(0, 0)` while it has none.
    pub(crate) fn step(&mut self, w: u64, bytes: u64, cap: u32) -> (u64, u32) {
        if let Some(prev) = self.last.replace(w) {
            // An overwrite in place: `insert` makes room for one more entry first, even for a
            // key it holds, and would grow a full map.
            match self.next.get_mut(&prev) {
                Some(e) => *e = (w, bytes),
                None => {
                    self.next.insert(prev, (w, bytes));
                }
            }
        }
        match self.next.get(&w) {
            Some(&(p, b)) => (p, (b.min(u64::from(cap)) & !15) as u32),
            None => (0, 0),
        }
    }
}

impl CudaBackend {
    /// How many bulk-copy launches have a known successor ([`CudaBackend::gemv_next_bytes`];
    /// checks read it).
    pub fn gemv_next_known(&self) -> usize {
        self.gemv_next.len()
    }
}

/// The default [`CudaBackend::gemv_prefetch`]: `$GLIMMER_GEMV_PREFETCH` as `MAX_MB:BYTES`
/// (a measuring knob, like `$GLIMMER_CUDA_DEFINES`), else off.
pub fn gemv_prefetch_default() -> (u64, u32) {
    std::env::var("GLIMMER_GEMV_PREFETCH")
        .ok()
        .and_then(|v| parse_prefetch(&v))
        .unwrap_or((0, 0))
}

impl CudaBackend {
    /// Launches with run-time items ([`Self::gemv_steal`]) so far in this forward pass: the
    /// pass's first such launch (0 here before it) runs its own items statically and zeroes
    /// the counters of the ones after it (checks read it).
    pub fn grab_ordinal(&self) -> usize {
        self.grab_ordinal
    }

    /// Makes the following launches assume their rows see at most `keys` keys, as while a
    /// decode graph is captured (`graph_keys`; `None`: their own positions decide).
    /// For checks: a bound below a row's keys takes `attn_split_cl`'s in-launch long-row path,
    /// which the runner's graphs never need.
    pub fn set_graph_keys(&mut self, keys: Option<u32>) {
        self.graph_keys = keys;
    }

    /// Which of the runner's two decode graphs serves a step at `pos` (0: rows the attention
    /// clusters take, 1: longer ones), and the most visible keys that graph's rows may have
    /// (`graph_keys` while it is captured): see the function `graph_class` in this module.
    pub fn graph_class(&self, pos: u32) -> (usize, u32) {
        // Where the clusters cannot run (compute capability below 9.0, as Orin's 8.7) one
        // graph serves every step.
        graph_class(self.attn_clusters_on(), self.attn_cluster_keys, pos)
    }

    /// Whether one-row attention may run over clusters at all ([`Self::attn_cluster`] in
    /// 2..=16 and compute capability 9.0 or later); the launch adds its head's conditions.
    pub fn attn_clusters_on(&self) -> bool {
        (2..=ATT_CL_MAX).contains(&self.attn_cluster) && self.gpu.compute_capability().0 >= 9
    }
}

/// The default of [`CudaBackend::attn_cluster_keys`]: the most visible keys a decode row may
/// have for attention to run over thread-block clusters. Swept on the H100 (session 24,
/// BENCHMARKS.md; the 30B shape, clusters against attn_split's launches at the same keys):
/// clusters win by 1.8 % at 512 keys and 0.9 % at 1 000, tie at 1 500 and lose 0.6 % at
/// 2 000 and 2.1 % at 3 000 (where 16 co-resident blocks a head walk ~190 keys each while
/// free blocks spread wider), so the cut sits at the tie.
pub const ATTN_CLUSTER_KEYS: u32 = 1536;

/// The decode graph a one-token step at `pos` replays, with the bound on its rows' visible
/// keys: with the attention clusters on (`clusters`), steps whose row sees at most
/// `cluster_keys` keys (`pos + 1` before a window caps it) share graph 0, captured with the
/// cluster launches, and later steps graph 1, whose launches are attn_split's where a
/// layer's rows can outgrow the clusters; with them off every step shares graph 0.
pub fn graph_class(clusters: bool, cluster_keys: u32, pos: u32) -> (usize, u32) {
    if clusters && pos.saturating_add(1) <= cluster_keys {
        (0, cluster_keys)
    } else if clusters {
        (1, u32::MAX)
    } else {
        (0, u32::MAX)
    }
}

/// Most blocks a head `attn_split_cl` takes (`ATT_CL_MAX`, kernels/attention.cu).
const ATT_CL_MAX: u32 = 16;

/// A cluster size from `$name`: unset, `unset`; a number in 2..=16, that; anything else, 0
/// (off).
fn cluster_from_env(name: &str, unset: u32) -> u32 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (2..=16).contains(n))
            .unwrap_or(0),
        Err(_) => unset,
    }
}

/// How the bulk-copy multi-GEMVs (`gemv_k_multi_tma*`, kernels/gemv_k.cu) are launched: each
/// warp keeps a ring of `stages` shared-memory slots, each filled with one item (`item_rows`
/// consecutive weight rows) by one bulk copy, and a block has at most `max_warps` warps (one
/// block a multiprocessor; fewer warps where the slots would not fit its shared memory).
/// Launches where fewer than `min_warps` fit take `gemv_k_multi` instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TmaGemv {
    /// Slots in each warp's ring (2..=4): one is worked on while the others are in flight.
    pub stages: u32,
    /// Most warps a block (1..=24).
    pub max_warps: u32,
    /// Rows an item: 1 or 2, or 0 to choose by size (two where `max_warps.min(6)` warps
    /// still fit, else one); 3, with teams of two on plain launches: two rows an item, each
    /// warp of the team taking one row whole (`gemv_k_multi_tma2_rs`: the items' chain of a
    /// warp a ring in the rings of teams of two; session 22 on the H100: checks pass, 135.5
    /// against 138.4–138.5 tok/s for the default, as two rows an item; not yet run on an
    /// H200, whose GEMVs are bound by their chain).
    pub item_rows: u32,
    /// Fewest warps a block worth a bulk-copy launch (1..=max_warps).
    pub min_warps: u32,
    /// Warps sharing each ring (1, 2 or 4; above one, the team's warps split its
    /// super-blocks, and items are one row, except that with teams of two `item_rows` 2 takes
    /// two where the two-row slots still give as many warps as one-row slots would:
    /// `gemv_k_multi_tma2_t2`, 1.6 % slower than one row on the H100, session 19).
    pub team: u32,
    /// How many of each ring's first items are asked for before the wait on the previous
    /// kernel (1..=stages; 0: all `stages`); the rest right after it. Deeper early copies
    /// overlap more of the small kernel before the GEMV but compete with the tail of the GEMV
    /// before that (session 16: three slots, all early, were slower than two).
    pub pre: u32,
    /// With teams of two: launches whose rings are so large that teams of two would leave
    /// at least half of `max_warps` unused (the 30B shape's FFN down: 16 KiB Q6_K rows, six
    /// rings, 12 of 24 warps) take teams of four instead (`gemv_k_multi_tma1_t4`), so that
    /// the same bytes in flight get twice the warps for their arithmetic. Plain launches only
    /// (the fused norm, Q/K prep and attention kernels have teams of two). On by default:
    /// H100, session 19, 135.1–135.4 → 135.9–136.4 tok/s on the 30B shape (FFN down's GEMV
    /// time −0.06 ms a token), steady over four runs in three calls.
    pub wide: bool,
    /// Ring slots a team of plain launches (no work fused before or after the matmuls): 0 or
    /// at most `stages`, `stages`; above, up to this many where shared memory and the
    /// mbarrier area have room (at most 96 a block). The slots beyond `stages` are filled
    /// once, before the wait on the previous kernel, so that a launch's first items stream
    /// into shared memory while the norm or attention before it runs; after that first fill
    /// `stages` items a ring stay in flight, as without. (Deeper steady rings were slower,
    /// session 16.) A measuring knob, off by default: slower on the H100 in session 21
    /// (138.1 → 134.1 tok/s with four slots, 133.0 with eight): the small launches' items
    /// gained nothing from bytes that landed early, and the larger blocks no longer fit beside
    /// the launch before them.
    pub ring: u32,
}

impl TmaGemv {
    /// The default on compute capability 9.0 and later where the memory is slow for the
    /// multiprocessors (the H100; [`Self::for_card`]: the H200 takes [`Self::TWO_ROWS`]): two
    /// slots, up to 24 warps a block in teams of two sharing each ring, one row an item, teams
    /// of four where the rings leave half the warps idle ([`Self::wide`]). Measured on the
    /// H200 (BENCHMARKS.md, session 16): 144.9 tok/s with `gemv_k_multi` on the 30B shape,
    /// 164.8 with this but `wide`; the other shapes tried there and on the H100 in session 19
    /// (8 to 24 warps alone, three or four slots, fewer early copies, teams of four everywhere,
    /// two rows an item, 12 warps) were slower. `wide` was added on the H100 (+0.5 %), not yet
    /// timed on the H200.
    pub const DEFAULT: TmaGemv = TmaGemv {
        stages: 2,
        max_warps: 24,
        item_rows: 1,
        min_warps: 1,
        team: 2,
        pre: 0,
        wide: true,
        ring: 0,
    };

    /// [`Self::DEFAULT`] with two rows an item: the choice where the memory is fast for the
    /// multiprocessors that consume it ([`Self::for_card`]).
    pub const TWO_ROWS: TmaGemv = TmaGemv {
        item_rows: 2,
        ..Self::DEFAULT
    };

    /// Peak memory bandwidth a multiprocessor (GB/s) from which [`Self::for_card`] takes
    /// [`Self::TWO_ROWS`]: between the H100 80GB HBM3 (~25 GB/s a multiprocessor) and the
    /// H200 (~36), the two cards measured, nearer the H100 so that an H200 whose driver
    /// reported a narrower bus (5 120 bits: ~31) would still take it.
    pub const TWO_ROWS_FROM_GBS_PER_SM: f64 = 28.0;

    /// The default for a card with `peak_gbs` of memory bandwidth (0: unknown) over `sm_count`
    /// multiprocessors. An item's arithmetic, reductions and slot bookkeeping (its chain) are
    /// the same on every Hopper multiprocessor, while the bytes it waits on arrive faster as the
    /// bandwidth a multiprocessor grows; two rows an item share each activation load and each
    /// item's overhead between two rows, a shorter chain for the same bytes, but coarser items
    /// at a launch's end. Measured (BENCHMARKS.md): on the H200, whose GEMVs are bound by their
    /// chain, two rows an item win (session 26: 179.8–180.2 tok/s against 176.6–177.9 on the
    /// 30B shape, +1.5 %; +1.7 % at 1 200 keys); on the H100, where the bytes bind, they lose
    /// (session 24: −2.3 %, with session 25's longer chain; not re-timed with session 26's).
    pub fn for_card(peak_gbs: f64, sm_count: u32) -> TmaGemv {
        if peak_gbs / f64::from(sm_count.max(1)) >= Self::TWO_ROWS_FROM_GBS_PER_SM {
            Self::TWO_ROWS
        } else {
            Self::DEFAULT
        }
    }

    /// `$GLIMMER_GEMV_TMA`: unset or `1`, `card` (the card's default, [`Self::for_card`]); `0`,
    /// `None` (every multi-GEMV takes `gemv_k_multi`); else
    /// `STAGES:WARPS[:ROWS[:MIN_WARPS[:TEAM[:PRE[:WIDE[:RING]]]]]]` as [`Self::parse`] reads it.
    /// A value it refuses also gives `card` (this is a measuring knob; `cuda-check bench`
    /// prints the setting it ran). The backend takes the bulk-copy kernels only on compute
    /// capability 9.0 and later whatever this says.
    pub fn from_env(card: TmaGemv) -> Option<TmaGemv> {
        Self::from_setting(std::env::var("GLIMMER_GEMV_TMA").ok().as_deref(), card)
    }

    /// [`Self::from_env`] on the variable's value (`None`: unset).
    pub fn from_setting(v: Option<&str>, card: TmaGemv) -> Option<TmaGemv> {
        match v.map(str::trim) {
            Some("0") => None,
            Some("1") | None => Some(card),
            Some(v) => Some(Self::parse(v).unwrap_or(card)),
        }
    }

    /// `1` ([`Self::DEFAULT`]) or `STAGES:WARPS[:ROWS[:MIN_WARPS[:TEAM[:PRE[:WIDE[:RING]]]]]]`
    /// (stages 2..=4, warps 1..=24, rows 0..=3 and 3 only with teams of two, min warps
    /// 1..=warps, team 1, 2 or 4 and at
    /// most the warps, early items 0..=stages, wide 0 or 1 and 1 only with teams of two, ring
    /// slots 0..=8); anything else, `None`.
    pub fn parse(v: &str) -> Option<TmaGemv> {
        let v = v.trim();
        if v == "1" {
            return Some(Self::DEFAULT);
        }
        let mut it = v.split(':').map(|x| x.parse::<u32>().ok());
        let stages = it.next()??;
        let max_warps = it.next()??;
        let item_rows = it.next().unwrap_or(Some(0))?;
        let min_warps = it.next().unwrap_or(Some(1))?;
        let team = it.next().unwrap_or(Some(1))?;
        let pre = it.next().unwrap_or(Some(0))?;
        let wide = it.next().unwrap_or(Some(0))?;
        let ring = it.next().unwrap_or(Some(0))?;
        let t = TmaGemv {
            stages,
            max_warps,
            item_rows,
            min_warps,
            team,
            pre,
            wide: wide == 1,
            ring,
        };
        ((2..=4).contains(&stages)
            && (1..=24).contains(&max_warps)
            && (item_rows <= 2 || (item_rows == 3 && team == 2))
            && (1..=max_warps).contains(&min_warps)
            && matches!(team, 1 | 2 | 4)
            && team <= max_warps
            && pre <= stages
            && (wide == 0 || (wide == 1 && team == 2))
            && ring <= 8
            && it.next().is_none())
        .then_some(t)
    }
}

/// Where `matmul_add_rmsnorm` at one row runs its norms ([`CudaBackend::fuse_norm`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NormFusion {
    /// A `norm_add_rmsnorm_q8` (or `add_rmsnorm_q8`) launch of one block after the matmul.
    Off,
    /// `gemv_k_multi_norm`: the matmul's last block to finish runs the norms (a ticket).
    Tail,
    /// `gemv_k_multi_sums`, whose blocks each leave four partial sums, then
    /// `norm_sums_q8_f32`, one warp for each 32 values (kernels/norm.cu).
    Split,
    /// `gemv_k_multi_gridnorm`: the sums as in [`Self::Split`], then a grid-wide barrier and
    /// the norm's 32-value groups shared out over the same launch's blocks (no second launch).
    /// On compute capability 9.0 and later with a bulk-copy setting of teams of two (the
    /// default), `gemv_k_multi_tma1_t2_gridnorm`: the same after the bulk-copy GEMV; where the
    /// setting takes two rows an item and the matrix's two-row slots keep every warp (the
    /// H200's default, [`TmaGemv::TWO_ROWS`]), `gemv_k_multi_tma2_t2_gridnorm` (session 27,
    /// written without a GPU: not yet run).
    Grid,
    /// The norms wait for the op after the matmul: where that is a one-row bulk-copy
    /// `matmul_many` over the norm's output (the next block's Q/K/V or FFN gate/up),
    /// `gemv_k_multi_tma1_t2_prenorm` runs them in its own blocks (each computes the norm of
    /// the one row into its shared-memory activations; a split grid barrier lets each then
    /// write its share of the norm's outputs after its items), so no norm launch and no launch
    /// boundary stands between the two GEMVs; any other op first runs the norm launch as
    /// [`Self::Off`] does. Written in session 19 (kernels/norm.cu); correct (`cuda-check
    /// ops`, e2e) and slower on the H100 in session 20: every block reads the whole f32 row
    /// and both gains, which costs more than the launch boundary it removes (BENCHMARKS.md).
    Pre,
}

impl NormFusion {
    /// `$GLIMMER_FUSE_NORM`: 1 is [`Self::Tail`], 2 [`Self::Split`], 3 [`Self::Grid`],
    /// 4 [`Self::Pre`], anything else (or unset) [`Self::Off`].
    pub fn from_env() -> Self {
        match std::env::var("GLIMMER_FUSE_NORM").as_deref().map(str::trim) {
            Ok("1") => Self::Tail,
            Ok("2") => Self::Split,
            Ok("3") => Self::Grid,
            Ok("4") => Self::Pre,
            _ => Self::Off,
        }
    }
}

/// Fewest activation rows a quantized matmul takes the tensor-core GEMM at
/// ([`CudaBackend::prefill_mma`]): below, the 64-row tiles would be mostly padding.
pub const MMA_MIN_ROWS: usize = 16;

/// Bytes of one block's partial sums in [`CudaBackend::norm_part`] (`gemv_k_multi_sums` and
/// `gemv_k_multi_gridnorm` leave four `f64`; `gemv_k_multi_norm` one).
const NORM_SUMS_BYTES: usize = 32;

/// Whether the measuring knob `name` is set to 1.
fn env_on(name: &str) -> bool {
    env_is(name, "1")
}

/// Whether `$name` is set to `value` (surrounding blanks ignored).
fn env_is(name: &str, value: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v.trim() == value)
}

/// `$name` as a number (surrounding blanks ignored); `None` where unset or not one.
fn env_num<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok()?.trim().parse().ok()
}

/// `MAX_MB:BYTES` (per-warp bytes at most 1 MiB) as (max bytes, per-warp bytes).
fn parse_prefetch(v: &str) -> Option<(u64, u32)> {
    let (mb, per) = v.trim().split_once(':')?;
    let mb: u64 = mb.parse().ok()?;
    let per: u32 = per.parse().ok()?;
    (per <= 1 << 20).then_some((mb.checked_mul(1 << 20)?, per))
}

impl CudaBackend {
    /// Allocates everything for `cap` and a KV cache laid out as `kv` (zeroed), on `gpu`.
    /// Slot 0 is active.
    pub fn new(gpu: Arc<Gpu>, cap: Capacity, kv: KvLayout) -> Result<Self, CudaError> {
        let ovf = CudaError::Overflow;
        if cap.chunk == 0 || cap.chunk > MAX_CHUNK || cap.head_dim_v > MAX_HEAD_DIM {
            return Err(CudaError::TooLarge);
        }
        let cols = cap.max_cols.div_ceil(32) * 32;
        let aq_bytes = cap.chunk.checked_mul(cols).ok_or(ovf)?;
        let ads_bytes = aq_bytes / 32 * 8;
        // Enough splits to give every multiprocessor eight blocks at batch 1 (each split then
        // walks few keys: its warps' key loop is a chain of dependent loads), or
        // `$GLIMMER_ATTN_SPLITS` (a measuring knob).
        let want = (8 * gpu.sm_count() as usize).div_ceil(cap.n_head.max(1));
        let want = env_num::<usize>("GLIMMER_ATTN_SPLITS").unwrap_or(want);
        let decode_splits = want.clamp(1, MAX_SPLITS);
        let parts = (cap.chunk.checked_mul(cap.n_head).ok_or(ovf)?).max(cap.n_head * decode_splits);
        let part_bytes = parts.checked_mul(cap.head_dim_v.max(1) * 4).ok_or(ovf)?;
        let arena_bytes = cap.arena_len.checked_mul(4).ok_or(ovf)?;
        let fns = gpu.fns();
        let norm_blocks = (fns
            .gemv_multi_norm
            .1
            .max(fns.gemv_multi_sums.1)
            .max(fns.gemv_multi_gridnorm.1)
            * gpu.sm_count()) as usize;
        let mut slot = Mirror::new(&gpu, 1)?;
        slot.sync_dev(&gpu, &[0], false)?;
        Ok(CudaBackend {
            arena: gpu.alloc(arena_bytes)?,
            aq: gpu.alloc(aq_bytes)?,
            ads: gpu.alloc(ads_bytes)?,
            part: gpu.alloc(part_bytes)?,
            ml: gpu.alloc(parts * 8)?,
            attn_done: gpu.alloc(cap.chunk.checked_mul(cap.n_head).ok_or(ovf)? * 4)?,
            parts,
            decode_splits,
            tokens: Mirror::new(&gpu, cap.chunk)?,
            positions: Mirror::new(&gpu, cap.chunk)?,
            slot,
            pick_scratch: gpu.alloc(SAMPLE_MAX_BLOCKS * 8 + 8)?,
            kv: gpu.alloc(kv.bytes())?,
            kvl: kv,
            weights: DeviceWeights::new(),
            capturing: false,
            qx: None,
            gemv_rows_per_warp: 0,
            prefill_mma: !env_is("GLIMMER_PREFILL_MMA", "0"),
            mma_matmuls: 0,
            gemv_smem: None,
            gemv_team_target: 0,
            gemv_multi: 2,
            gemv_multi_single: true,
            gemv_prefetch: gemv_prefetch_default(),
            fuse_norm: NormFusion::from_env(),
            fuse_qk: env_on("GLIMMER_FUSE_QK"),
            fused_qk: 0,
            fuse_prep: env_on("GLIMMER_FUSE_PREP"),
            norm_cluster: cluster_from_env("GLIMMER_NORM_CLUSTER", 16),
            cluster_norms: 0,
            attn_cluster: cluster_from_env("GLIMMER_ATTN_CLUSTER", 16),
            attn_cluster_keys: env_num::<u32>("GLIMMER_ATTN_CLUSTER_KEYS")
                .map_or(ATTN_CLUSTER_KEYS, |k| k.min(i32::MAX as u32)),
            graph_keys: None,
            cluster_attns: 0,
            pending_prep: None,
            fused_prep: 0,
            attn_prefetch_bytes: env_num::<u64>("GLIMMER_ATTN_PREFETCH")
                .map_or(0, |mib| mib.saturating_mul(1 << 20)),
            attn_next: None,
            attn_prefetches: 0,
            fuse_attn: env_on("GLIMMER_FUSE_ATTN"),
            fused_attn: 0,
            gemv_trace: None,
            gemv_next_bytes: env_num::<u64>("GLIMMER_GEMV_NEXT").map_or(0, |kib| {
                kib.saturating_mul(1024).min(i32::MAX as u64) as u32
            }),
            gemv_next: NextWeights::default(),
            gemv_probe: env_on("GLIMMER_GEMV_PROBE"),
            gemv_tma: TmaGemv::from_env(TmaGemv::for_card(
                gpu.peak_bandwidth_gbs(),
                gpu.sm_count(),
            )),
            gemv_tma_launches: 0,
            gemv_tma_wide_launches: 0,
            gemv_tma_deep_launches: 0,
            gemv_tma_rowsplit_launches: 0,
            gemv_tma_fused2_launches: 0,
            norm_part: gpu.alloc(norm_blocks * NORM_SUMS_BYTES)?,
            norm_ctr: gpu.alloc(4)?,
            norm_blocks,
            grid_bar: gpu.alloc(8)?,
            flag_hop: env_on("GLIMMER_FLAG_HOP"),
            flag_norm: None,
            hop_flag: gpu.alloc(8)?,
            gemv_steal: env_num::<u32>("GLIMMER_GEMV_STEAL").unwrap_or(0),
            grab: gpu.alloc(4 * GRAB_COUNTERS)?,
            grab_ordinal: 0,
            gemv_steal_launches: 0,
            flag_hops: 0,
            fused_norms: 0,
            pending_norm: None,
            deferred_norms: 0,
            cap,
            gpu,
        })
    }

    /// The device.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// What the backend was sized for.
    pub fn capacity(&self) -> Capacity {
        self.cap
    }

    /// The KV cache layout.
    pub fn kv_layout(&self) -> &KvLayout {
        &self.kvl
    }

    /// The uploaded weights.
    pub fn weights(&self) -> &DeviceWeights {
        &self.weights
    }

    /// Bytes of device memory the backend holds (weights, KV, arena, scratch).
    pub fn device_bytes(&self) -> u64 {
        [
            &self.arena,
            &self.aq,
            &self.ads,
            &self.part,
            &self.ml,
            &self.attn_done,
            &self.norm_part,
            &self.norm_ctr,
            &self.kv,
        ]
        .iter()
        .map(|m| m.bytes() as u64)
        .sum::<u64>()
            + self.weights.bytes()
    }

    /// Uploads every weight of a model.
    pub fn upload_model(&mut self, w: &Weights<'_>) -> Result<(), CudaError> {
        self.weights.add_model(&self.gpu, w)?;
        self.gemv_next.room_for(self.weights.len());
        Ok(())
    }

    /// Uploads extra tensors (tests, adapters).
    pub fn upload(&mut self, tensors: &[Tensor<'_>]) -> Result<(), CudaError> {
        self.weights.add(&self.gpu, tensors)?;
        self.gemv_next.room_for(self.weights.len());
        Ok(())
    }

    /// Makes `slot` the session whose KV cache the following ops (and graph replays) use.
    pub fn select_slot(&mut self, slot: usize) -> Result<(), CudaError> {
        if slot >= self.kvl.slots {
            return Err(CudaError::KvRange);
        }
        self.flush_pending()?;
        self.slot
            .sync_dev(&self.gpu, &[slot as u32], self.capturing)
    }

    /// Loads the tokens and positions of the next forward call into device memory (a graph
    /// replay reads them from there).
    pub fn set_inputs(&mut self, tokens: &[u32], positions: &[u32]) -> Result<(), CudaError> {
        self.flush_pending()?;
        self.tokens.sync_dev(&self.gpu, tokens, self.capturing)?;
        self.positions
            .sync_dev(&self.gpu, positions, self.capturing)
    }

    /// Writes host values into an arena region (tests and host-computed inputs).
    pub fn write(&mut self, dst: Buf, src: &[f32]) -> Result<(), CudaError> {
        if src.len() != dst.len {
            return Err(CudaError::BadRegion);
        }
        self.flush_pending()?;
        let p = self.at(dst)?;
        self.qx = None;
        self.gpu.upload(p, src)
    }

    /// Records a timeline of the next `launches` bulk-copy launches (none: off): every block's
    /// [`BlockStamps`], read back with [`Self::take_gemv_trace`]. The kernels leave stamps
    /// only when compiled with `KT_TRACE=1` (`$GLIMMER_CUDA_DEFINES`); a measuring mode
    /// (`cuda-check timeline`), which allocates.
    pub fn trace_gemvs(&mut self, launches: Option<usize>) -> Result<(), CudaError> {
        self.gemv_trace = match launches {
            Some(cap) => {
                let blocks = self.gpu.sm_count() as usize;
                Some(GemvTrace {
                    buf: self.gpu.alloc(cap * trace_words(blocks) * 8)?,
                    cap,
                    blocks,
                    launches: Vec::with_capacity(cap),
                })
            }
            None => None,
        };
        Ok(())
    }

    /// Where the next bulk-copy launch leaves its stamps (0: not traced), noting `l`.
    pub(crate) fn trace_slot(&mut self, l: TracedLaunch) -> u64 {
        match &mut self.gemv_trace {
            Some(t) if t.launches.len() < t.cap && l.blocks as usize <= t.blocks => {
                let at = t.launches.len() * trace_words(t.blocks) * 8;
                t.launches.push(l);
                t.buf.ptr() + at as u64
            }
            _ => 0,
        }
    }

    /// The traced launches since [`Self::trace_gemvs`] or the last call, each with its blocks'
    /// stamps; starts the next trace from an empty list.
    pub fn take_gemv_trace(&mut self) -> Result<Vec<(TracedLaunch, Vec<BlockStamps>)>, CudaError> {
        self.flush_pending()?;
        let Some(t) = &mut self.gemv_trace else {
            return Ok(Vec::new());
        };
        let per = trace_words(t.blocks);
        let mut raw = vec![0u64; t.launches.len() * per];
        self.gpu.download(&mut raw, t.buf.ptr())?;
        let out = t
            .launches
            .drain(..)
            .zip(raw.chunks(per.max(1)))
            .map(|(l, r)| {
                let stamps = r
                    .chunks(TRACE_POINTS * 2)
                    .take(l.blocks as usize)
                    .map(|b| core::array::from_fn(|k| [b[2 * k], b[2 * k + 1]]))
                    .collect();
                (l, stamps)
            })
            .collect();
        Ok(out)
    }

    /// Index of the largest value in `x` (lowest index on ties), computed on the device.
    pub fn argmax(&mut self, x: Buf) -> Result<u32, CudaError> {
        self.best_index(x, None)
    }

    /// A token drawn on the device from softmax(`x` / `temperature`) by the Gumbel-max trick,
    /// keyed by `seed` and `counter` ([`crate::sample`]); [`Self::argmax`] where `temperature`
    /// is not a positive finite number.
    pub fn sample(
        &mut self,
        x: Buf,
        temperature: f32,
        seed: u64,
        counter: u64,
    ) -> Result<u32, CudaError> {
        if !crate::sample::samples(temperature) {
            return self.argmax(x);
        }
        self.best_index(x, Some((1.0 / temperature, seed, counter)))
    }

    /// `argmax_f32` (`noise` none) or `sample_f32` (`noise`: 1 / temperature, seed, counter)
    /// over `x`: one launch of at most `SAMPLE_MAX_BLOCKS` blocks (kernels/argmax.cu), then the
    /// index alone is read back.
    fn best_index(&mut self, x: Buf, noise: Option<(f32, u64, u64)>) -> Result<u32, CudaError> {
        self.flush_pending()?;
        let p = self.at(x)?;
        let per_block = SAMPLE_THREADS as usize * 4;
        let blocks = x.len.div_ceil(per_block).clamp(1, SAMPLE_MAX_BLOCKS) as u32;
        let s = self.pick_scratch.ptr();
        let (vals, idx) = (s, s + SAMPLE_MAX_BLOCKS as u64 * 4);
        let ticket = s + SAMPLE_MAX_BLOCKS as u64 * 8;
        let out = ticket + 4;
        let tail = [Arg::P(vals), Arg::P(idx), Arg::P(ticket), Arg::P(out)];
        let n = Arg::int(x.len)?;
        let fns = self.gpu.fns();
        match noise {
            None => {
                let f = raw(&fns.argmax);
                let a = [Arg::P(p), n, tail[0], tail[1], tail[2], tail[3]];
                self.gpu.launch(f, (blocks, 1, 1), SAMPLE_THREADS, &a)?;
            }
            Some((inv_t, seed, counter)) => {
                let f = raw(&fns.sample);
                let a = [
                    Arg::P(p),
                    n,
                    Arg::F(inv_t),
                    Arg::U(seed),
                    Arg::U(counter),
                    tail[0],
                    tail[1],
                    tail[2],
                    tail[3],
                ];
                self.gpu.launch(f, (blocks, 1, 1), SAMPLE_THREADS, &a)?;
            }
        }
        let mut got = [0u32];
        self.gpu.download(&mut got, out)?;
        Ok(got[0])
    }

    /// Device address of an arena region, checked to lie inside the arena.
    pub(crate) fn at(&self, b: Buf) -> Result<u64, CudaError> {
        let end = b.off.checked_add(b.len).ok_or(CudaError::BadRegion)?;
        if end > self.cap.arena_len {
            return Err(CudaError::BadRegion);
        }
        Ok(self.arena.ptr() + (b.off as u64) * 4)
    }

    /// The device copy of a weight.
    pub(crate) fn weight(&self, t: &Tensor<'_>) -> Result<DeviceTensor, CudaError> {
        self.weights.get(t)
    }

    /// Launch shape for an element-wise kernel over `n` values.
    pub(crate) fn elementwise_grid(&self, n: usize) -> (u32, u32, u32) {
        let blocks = n.div_ceil(256).clamp(1, 8 * self.gpu.sm_count() as usize);
        (blocks as u32, 1, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::{graph_class, parse_prefetch, NextWeights};

    #[test]
    fn graph_class_parts_steps_at_the_cluster_keys() {
        // Clusters on, 640 keys: positions 0..=639 see at most 640 keys (graph 0, bound 640);
        // from 640 on a row may see more (graph 1, no bound).
        assert_eq!(graph_class(true, 640, 0), (0, 640));
        assert_eq!(graph_class(true, 640, 639), (0, 640));
        assert_eq!(graph_class(true, 640, 640), (1, u32::MAX));
        assert_eq!(graph_class(true, 640, 2999), (1, u32::MAX));
        assert_eq!(graph_class(true, 640, u32::MAX), (1, u32::MAX));
        // No keys at all for the clusters: every step is graph 1.
        assert_eq!(graph_class(true, 0, 0), (1, u32::MAX));
        // Clusters off: one graph for every step.
        assert_eq!(graph_class(false, 640, 0), (0, u32::MAX));
        assert_eq!(graph_class(false, 640, 5000), (0, u32::MAX));
        // The default cut: a step's row at position 1 535 sees 1 536 keys, the last of graph 0.
        let k = super::ATTN_CLUSTER_KEYS;
        assert_eq!(graph_class(true, k, k - 1), (0, k));
        assert_eq!(graph_class(true, k, k), (1, u32::MAX));
    }

    #[test]
    fn next_weights_follow_the_last_step() {
        let mut n = NextWeights::default();
        n.room_for(3);
        let cap = n.next.capacity();
        // First step: nothing known yet, so nothing is asked for.
        let order = [(0x1000, 4096), (0x9000, 100_000), (0x40000, 37)];
        for &(w, b) in &order {
            assert_eq!(n.step(w, b, 8192), (0, 0));
        }
        // Next step: each launch asks for its successor's first bytes, capped at 8 KiB and
        // cut to whole 16-byte units; the last launch's successor is the first.
        assert_eq!(n.step(0x1000, 4096, 8192), (0x9000, 8192));
        assert_eq!(n.step(0x9000, 100_000, 8192), (0x40000, 32));
        assert_eq!(n.step(0x40000, 37, 8192), (0x1000, 4096));
        assert_eq!(n.len(), 3);
        // A changed order (1, 3, 2): its first step still asks for the old successors, the
        // step after it for the new ones.
        assert_eq!(n.step(0x1000, 4096, 8192), (0x9000, 8192));
        assert_eq!(n.step(0x40000, 37, 8192), (0x1000, 4096));
        assert_eq!(n.step(0x9000, 100_000, 8192), (0x40000, 32));
        assert_eq!(n.step(0x1000, 4096, 8192), (0x40000, 32));
        assert_eq!(n.step(0x40000, 37, 1000), (0x9000, 992));
        assert_eq!(n.step(0x9000, 100_000, 8192), (0x1000, 4096));
        // Within the reserved room: no growth.
        assert_eq!((n.len(), n.next.capacity()), (3, cap));
    }

    #[test]
    fn prefetch_setting_parses_or_is_refused() {
        assert_eq!(parse_prefetch("16:8192"), Some((16 << 20, 8192)));
        assert_eq!(parse_prefetch(" 0:0 "), Some((0, 0)));
        for bad in ["", "16", "16:", ":8192", "a:1", "16:-1", "16:2000000"] {
            assert_eq!(parse_prefetch(bad), None, "{bad}");
        }
    }
}

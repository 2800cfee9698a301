//! # glimmer-jetson
//!
//! The CUDA backend for Jetson and NVIDIA GPUs.
//!
//! How the pieces fit:
//! - [`Gpu`] opens a device, creates the stream every op runs on, and compiles the CUDA C
//!   sources under `kernels/` with NVRTC for the device's compute capability (the PTX is
//!   cached on disk, keyed by a hash of the sources and the architecture: [`compile`]).
//! - [`CudaBackend`] implements [`glimmer_core::exec::Backend`]: one device arena of `f32`
//!   laid out by [`glimmer_core::exec::Layout`], scratch for quantized activations and
//!   split-K attention, an f16 KV cache of several slots laid out by [`KvLayout`] (from
//!   [`glimmer_core::kv::KvGeometry`]), and the weights ([`DeviceWeights`]), uploaded once.
//! - [`CudaModel`] runs [`glimmer_core::exec::Model::forward`] on it and captures the decode
//!   step into a CUDA graph; token, position and KV slot are read from device memory, so the
//!   graph replays for every step and session. After the step the token is picked on the
//!   device ([`Pick`]: the argmax, or a Gumbel-max draw from softmax(logits / T) keyed by a
//!   seed and the step, [`sample`]) so only its index comes back, or not at all where the
//!   caller samples from the logits on the host (the daemon's sessions: penalties, top-k /
//!   top-p and the tool-call grammar need the whole distribution).
//!
//! Matmuls read GGUF blocks (Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q5_K) as stored, and Q6_K repacked
//! on upload into aligned planes (`repack_q6k_row` in `weights.rs`), against activations quantized on
//! the device to blocks of 32 `i8` with an `f32` scale, with `dp4a` dot products; F32, F16 and
//! BF16 weights take a float path.
//!
//! What keeps a decode step short (measured in BENCHMARKS.md):
//! - **Programmatic dependent launch** (Hopper and later, [`Gpu::pdl`]): each kernel may start
//!   while the previous one finishes and waits for it in `pdl_begin()`; the GEMVs prefetch their
//!   first weight lines into L2 before that wait, and the small kernels between them let the
//!   next launch before they wait (`pdl_begin_small()`), so a GEMV after a norm prefetches too.
//! - **Fused per-layer ops**: [`glimmer_core::exec::Backend::attn_inputs`] (Q/K norms, RoPE
//!   and the KV store), `branch_norms` (post-norm, residual add, next norm),
//!   `attention_gated` (split-K, the last split merging), and the gated FFN activation each run
//!   as one launch, and the norms, the attention and the activation also quantize their output
//!   for the matmul that reads it next.
//! - **Several matrices a launch**: at batch sizes under eight, `matmul_many` runs Q, K, V and
//!   the attention gate, or the FFN gate and up, as one grid-stride launch (`gemv_k_multi`,
//!   [`CudaBackend::gemv_multi`]), and single Q4_K / Q6_K matrices take the same kernel. With
//!   the above, a layer of the Glimmer shape is 9 launches.
//! - **Weights by bulk copy** (compute capability 9.0 and later, the default there): the one-row
//!   multi-GEMVs run `gemv_k_multi_tma1_t2`, whose warps have the multiprocessor's bulk-copy
//!   unit stream whole weight rows into rings in shared memory (asked for before the wait on
//!   the previous kernel), two warps sharing each ring (four where the rows are so long that
//!   few rings fit: FFN down), and a Q4_K super-block four lanes ([`TmaGemv::DEFAULT`]; H200:
//!   144.9 -> 164.8 tok/s on the 30B shape; teams of four for FFN down +0.5 % on the H100).
//!   An item's own chain (its arithmetic, reductions and slot bookkeeping) bounds these GEMVs
//!   on the H200, so it is kept short (a Q4_K pass in 77 instructions, session 26: H200
//!   170.4 -> 177.5 tok/s), and where the memory is fast for the multiprocessors (the H200,
//!   [`TmaGemv::for_card`]) an item is two rows, sharing the activation loads and the item's
//!   overhead (+1.5 %).
//! - **Wide norms over a thread-block cluster** (compute capability 9.0 and later, the default
//!   there): a one-row q8 norm of the model width runs on 16 blocks of 128 threads, small enough
//!   to start beside a running bulk-copy GEMV block, their sums meeting in distributed shared
//!   memory in one exchange a norm, with no block barriers ([`CudaBackend::norm_cluster`];
//!   +0.4–0.8 % on the H100, then +2 % with the one exchange: 138.2–138.6 → 140.7–141.2 tok/s).
//! - **Decode attention over a cluster a head** (9.0 and later): a head's splits, one a block
//!   of a 16-block cluster (each warp with the next key iteration's loads in flight; four,
//!   `ATT_KEY_DEPTH=4`, lost 2.7 % on the H100 in session 28: kernels/attention.cu), merge
//!   in distributed shared memory after one cluster barrier instead of through global memory
//!   and an atomic ticket, for rows of at most [`CudaBackend::attn_cluster_keys`] keys
//!   ([`CudaBackend::attn_cluster`]; on the H100 +0.9–2.0 % at 515 keys, +0.9 % at 1 000).
//!   Longer rows gain nothing (even at 1 500 keys) or lose (−0.6 % at 2 000, −2 % at 3 000),
//!   so past [`ATTN_CLUSTER_KEYS`] they launch attn_split: decode keeps two graphs, one for
//!   the steps whose rows the clusters take and one for later steps
//!   ([`CudaBackend::graph_class`], [`CudaModel`]).
//! - **Per-shape GEMV kernels** for the rest (prefill rows, other formats): one or two rows a
//!   warp, warp teams for long rows, and the activation row staged in shared memory for many
//!   short rows ([`auto_smem`]).
//! - **A tensor-core prefill GEMM** (kernels/gemm.cu; 30B-shape prefill of 512 tokens on the
//!   H100 146 -> 1 896 tok/s against the dp4a GEMVs): at [`MMA_MIN_ROWS`] activation rows or
//!   more, 64 x 64 output tiles whose weights are decoded once a tile into int8 in shared
//!   memory and multiplied with `mma.sync` (compute capability 8.0 and later: Orin's sm_87 and
//!   the H100/H200's sm_90); [`CudaBackend::prefill_mma`].
//!
//! Measuring knobs (environment variables read when a backend is made; off by default unless
//! said, and each measured in BENCHMARKS.md or marked there as not yet run on a GPU, so a change can be
//! compared on a device without a rebuild):
//! `GLIMMER_CUDA_DEFINES` (kernel macros, e.g. `K_UNROLL=4`), `GLIMMER_PREFILL_MMA` (0: the
//! dp4a GEMVs for prefill instead of the tensor-core GEMM, [`CudaBackend::prefill_mma`]),
//! `GLIMMER_FUSE_NORM` (1: the norms in the output projection's last block; 2: its blocks
//! leave partial sums for a wide norm launch; 3: the same sums, then a grid barrier and the
//! norm in the same launch, in the bulk-copy kernel where that runs; 4: the norms deferred
//! into the next GEMV's launch; [`NormFusion`]),
//! `GLIMMER_FUSE_QK` (1: the Q/K/V/gate matmuls and `attn_inputs` in one bulk-copy launch,
//! [`CudaBackend::fuse_qk`]),
//! `GLIMMER_FUSE_ATTN` (1: attention in front of the output projection in one bulk-copy
//! launch, [`CudaBackend::fuse_attn`]),
//! `GLIMMER_FUSE_PREP` (1: a one-row `attn_inputs` deferred into the attention after it,
//! `attn_split_prep`, [`CudaBackend::fuse_prep`]),
//! `GLIMMER_ATTN_PREFETCH` (MiB: one-row attention asks L2 for the output projection's weights
//! before its wait, [`CudaBackend::attn_prefetch_bytes`]),
//! `GLIMMER_GEMV_NEXT` (KiB: each bulk-copy launch asks L2 for the next launch's first weights
//! once its items are done, [`CudaBackend::gemv_next_bytes`]),
//! `GLIMMER_GEMV_TMA` (sm_90: how the one-row multi-GEMVs stream whole weight rows into shared
//! memory with the bulk-copy unit, `gemv_k_multi_tma*`, on by default; `0`: `gemv_k_multi`
//! instead; [`TmaGemv`] says how, its 8th field a deeper first fill, [`TmaGemv::ring`], rows
//! 3 a row of each two-row item a warp of a team, [`TmaGemv::item_rows`]),
//! `GLIMMER_NORM_CLUSTER` (blocks a cluster for the wide q8 norms, 16 by default on sm_90;
//! `0`: one block, [`CudaBackend::norm_cluster`]), `GLIMMER_ATTN_CLUSTER` (blocks a head for
//! one-row attention over a cluster, 2..=16 on sm_90, 16 by default; `0`: `attn_split`'s
//! splits and ticket, [`CudaBackend::attn_cluster`]) and `GLIMMER_ATTN_CLUSTER_KEYS` (the
//! longest row it takes, [`CudaBackend::attn_cluster_keys`]), `GLIMMER_GEMV_STEAL` (rounds at the end of each
//! default bulk-copy launch whose items go to whichever team asks first,
//! [`CudaBackend::gemv_steal`]), `GLIMMER_FLAG_HOP` (1: a one-row norm
//! signals the GEMV after it through a counter instead of its grid's end,
//! [`CudaBackend::flag_hop`]),
//! `GLIMMER_GEMV_PREFETCH` (deep L2 prefetch), `GLIMMER_GEMV_PROBE` (the GEMVs' loads without
//! their arithmetic: garbage output, for timing only; where the bulk-copy kernels run, the
//! copies alone) and `GLIMMER_ATTN_SPLITS` (the decode attention's most splits). Kernel macros
//! for `GLIMMER_CUDA_DEFINES`: `K_UNROLL`, `PROBE_UNROLL`, `K_INTERLEAVE` (0: warps of a block on
//! consecutive row pairs), `K_Q4PAIR` (1: four lanes a Q4_K super-block in `gemv_k_multi`),
//! `TICKET_FENCE_ALL`, `NORM_PRELOAD`.
//!
//! Everything returns [`CudaError`]; without a driver, [`Gpu::open`] returns
//! [`CudaError::NoDriver`]. On macOS (no CUDA) the crate holds only the error type.

#[cfg(not(target_os = "macos"))]
mod backend;
#[cfg(not(target_os = "macos"))]
pub mod compile;
mod error;
#[cfg(not(target_os = "macos"))]
mod fns;
#[cfg(not(target_os = "macos"))]
mod gpu;
#[cfg(not(target_os = "macos"))]
mod kv;
#[cfg(not(target_os = "macos"))]
mod ops;
#[cfg(not(target_os = "macos"))]
mod runner;
pub mod sample;
#[cfg(not(target_os = "macos"))]
mod weights;

#[cfg(not(target_os = "macos"))]
pub use backend::{
    BlockStamps, Capacity, CudaBackend, NormFusion, TmaGemv, TracedLaunch, ATTN_CLUSTER_KEYS,
    GRAB_COUNTERS, MAX_HEAD_DIM, MMA_MIN_ROWS, TRACE_POINTS,
};
pub use error::CudaError;
#[cfg(not(target_os = "macos"))]
pub use fns::GEMV_TYPES;
#[cfg(not(target_os = "macos"))]
pub use gpu::{DevMem, Gpu};
#[cfg(not(target_os = "macos"))]
pub use kv::KvLayout;
#[cfg(not(target_os = "macos"))]
pub use ops::{auto_smem, tma_layout, TmaLayout, WIDE_ROWS};
#[cfg(not(target_os = "macos"))]
pub use runner::{CudaForwardError, CudaModel};
pub use sample::Pick;
#[cfg(not(target_os = "macos"))]
pub use weights::{device_row_bytes, repack_q6k_row, repack_q6k_rows, DeviceTensor, DeviceWeights};

/// Whether this build can drive a CUDA device at all (false on macOS, where every entry point
/// is absent and only [`CudaError`] remains).
pub const CUDA_BUILD: bool = cfg!(not(target_os = "macos"));

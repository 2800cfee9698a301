//! [`Fns`]: handles of every kernel in the compiled module.

use std::sync::Arc;

use cudarc::driver::{sys, CudaFunction, CudaModule};
use glimmer_core::quant::GgmlType;

use crate::CudaError;

/// Quantized weight types with a GEMV kernel, in the order of `Fns::gemv`.
pub const GEMV_TYPES: [GgmlType; 7] = [
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q8_0,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
];

const GEMV_NAMES: [&str; 7] = [
    "gemv_q4_0",
    "gemv_q4_1",
    "gemv_q5_0",
    "gemv_q8_0",
    "gemv_q4_k",
    "gemv_q5_k",
    "gemv_q6_k",
];

/// Threads a block of `gemv_k_multi` has (eight warps, two output rows each).
pub(crate) const MULTI_THREADS: u32 = 256;

/// Output rows and activation rows of a `gemm_*_mma` block's tile (`GEMM_BM`, `GEMM_BN`,
/// kernels/gemm.cu) and its threads (`GEMM_THREADS`).
pub(crate) const GEMM_TILE: usize = 64;
pub(crate) const GEMM_THREADS: u32 = 128;

/// Threads a block of `argmax_f32` / `sample_f32` has, and the most blocks they take
/// (`SAMPLE_THREADS`, `SAMPLE_MAX_BLOCKS`, kernels/argmax.cu).
pub(crate) const SAMPLE_THREADS: u32 = 256;
pub(crate) const SAMPLE_MAX_BLOCKS: usize = 256;

/// Bytes of `gemv_k_multi_tma*`'s mbarrier and team-sum area (`KT_BAR_BYTES`: 24 rings × 4
/// stages × 8 bytes, then the teams' partial sums, rounded up).
pub(crate) const KT_BAR_BYTES: u32 = 2048;

/// Bytes of dynamic shared memory each attention worker (four warps) of
/// `gemv_k_multi_tma1_t2_attn*` takes after the rings (`ATT_SMEM_BYTES`, kernels/attention.cu).
pub(crate) const ATT_SMEM: u32 = 6272;

/// Every kernel, by op.
pub(crate) struct Fns {
    pub quantize_q8_1: CudaFunction,
    /// `(one row, eight rows)` per entry of [`GEMV_TYPES`].
    pub gemv: [(CudaFunction, CudaFunction); 7],
    /// The tensor-core prefill GEMMs (`gemm_*_mma`, kernels/gemm.cu) per entry of
    /// [`GEMV_TYPES`].
    pub gemm_mma: [CudaFunction; 7],
    /// Two-rows-per-warp one-row GEMVs of Q4_K and Q6_K.
    pub gemv_rows: [CudaFunction; 2],
    /// One-row GEMVs of Q4_K and Q6_K that stage the activations in shared memory.
    pub gemv_smem: [CudaFunction; 2],
    /// Up to four Q4_K / Q6_K matrices over one input in one launch, with register budgets
    /// for 2, 3 and 4 resident blocks of [`MULTI_THREADS`] threads, each with how many of its
    /// blocks fit on a multiprocessor at once.
    pub gemv_multi: [(CudaFunction, u32); 3],
    /// `gemv_k_multi_norm` (a one-matrix `gemv_k_multi` whose last block runs the norms
    /// after it) and its resident blocks a multiprocessor.
    pub gemv_multi_norm: (CudaFunction, u32),
    /// `gemv_k_multi_sums` (a one-matrix `gemv_k_multi` whose blocks each leave the partial
    /// sums of the norms after it) and its resident blocks a multiprocessor.
    pub gemv_multi_sums: (CudaFunction, u32),
    /// `gemv_k_multi_gridnorm` (`gemv_k_multi_sums`, a grid barrier, then the norms in the
    /// same launch) and its resident blocks a multiprocessor.
    pub gemv_multi_gridnorm: (CudaFunction, u32),
    /// The norms after `gemv_k_multi_sums`, one warp for each 32 values.
    pub norm_sums_q8: CudaFunction,
    /// `gemv_k_multi_probe`: `gemv_k_multi`'s weight loads without its arithmetic (a
    /// measuring kernel; its outputs are meaningless) and its resident blocks a
    /// multiprocessor.
    pub gemv_multi_probe: (CudaFunction, u32),
    /// `gemv_k_multi_tma2`, `gemv_k_multi_tma1` (two and one rows an item: weights streamed
    /// by bulk copies), their probes (`_probe`: the same copies, no arithmetic), and
    /// `gemv_k_multi_tma1_t2` / `_t4` (one row an item, teams of two / four warps a ring), and
    /// `gemv_k_multi_tma1_t2_gridnorm` (`_t2` with the grid-barrier norm, kernels/norm.cu),
    /// `gemv_k_multi_tma1_t2_qkprep` (`_t2`, then `attn_inputs`, kernels/attn_inputs.cu),
    /// `gemv_k_multi_tma1_t2_attn` / `_attn_gridnorm` (attention, a grid barrier, then
    /// `_t2`, and then the grid-barrier norm in the second; kernels/attention.cu), and
    /// `gemv_k_multi_tma2_t2` (two rows an item, teams of two warps), and
    /// `gemv_k_multi_tma1_t2_prenorm` (`_t2` that runs the previous branch end's deferred
    /// norms itself, kernels/norm.cu), `gemv_k_multi_tma2_rs` (two rows an item, a row a warp
    /// of each team of two), and `gemv_k_multi_tma1_t2_dyn` / `_t4_dyn` (`_t2` / `_t4` that can
    /// hand out their items at run time, [`crate::CudaBackend::gemv_steal`]), and
    /// `gemv_k_multi_tma2_rs_dyn` (`_rs` that can), and `gemv_k_multi_tma2_t2_gridnorm`,
    /// `_qkprep`, `_attn` and `_attn_gridnorm` (the fused `_t2` kernels with two rows an item).
    pub gemv_multi_tma: [CudaFunction; 20],
    pub gemv_float: CudaFunction,
    pub embed_rows: CudaFunction,
    pub rmsnorm: CudaFunction,
    pub rmsnorm_q8: CudaFunction,
    /// Residual add + RMSNorm, without and with the q8_1 output.
    pub add_rmsnorm: CudaFunction,
    pub add_rmsnorm_q8: CudaFunction,
    /// Post-norm + residual add + RMSNorm, without and with the q8_1 output.
    pub norm_add_rmsnorm: CudaFunction,
    pub norm_add_rmsnorm_q8: CudaFunction,
    /// The q8 norms over a thread-block cluster (sm_90; `rmsnorm_q8_cl`, `add_rmsnorm_q8_cl`,
    /// `norm_add_rmsnorm_q8_cl`, kernels/norm.cu; [`crate::CudaBackend::norm_cluster`]).
    pub norm_cl: [CudaFunction; 3],
    /// Q/K norms + RoPE + KV store.
    pub attn_inputs: CudaFunction,
    /// Gated activation with the q8_1 output.
    pub gated_act_q8: CudaFunction,
    pub rope: CudaFunction,
    pub add: CudaFunction,
    pub scale: CudaFunction,
    pub softcap: CudaFunction,
    pub sigmoid_mul: CudaFunction,
    pub gated_silu: CudaFunction,
    pub gated_gelu_tanh: CudaFunction,
    pub argmax: CudaFunction,
    /// One Gumbel-max draw over the logits (kernels/argmax.cu, [`crate::sample`]).
    pub sample: CudaFunction,
    pub kv_store: CudaFunction,
    pub attn_split: CudaFunction,
    /// `attn_split` over a thread-block cluster a head (one row; kernels/attention.cu,
    /// [`crate::CudaBackend::attn_cluster`]).
    pub attn_split_cl: CudaFunction,
    /// `attn_split` with a deferred one-row `attn_inputs` in it (kernels/attn_inputs.cu).
    pub attn_split_prep: CudaFunction,
    pub copy_u128: CudaFunction,
}

impl Fns {
    pub(crate) fn load(m: &Arc<CudaModule>) -> Result<Self, CudaError> {
        let f = |name: &str| m.load_function(name).map_err(CudaError::from);
        let mut gemv = Vec::with_capacity(GEMV_NAMES.len());
        for name in GEMV_NAMES {
            gemv.push((f(&format!("{name}_r1"))?, f(&format!("{name}_r8"))?));
        }
        let gemv: [(CudaFunction, CudaFunction); 7] =
            gemv.try_into().map_err(|_| CudaError::Compile)?;
        let gemm_mma: [CudaFunction; 7] = GEMV_NAMES
            .iter()
            .map(|name| f(&format!("{}_mma", name.replacen("gemv", "gemm", 1))))
            .collect::<Result<Vec<_>, _>>()?
            .try_into()
            .map_err(|_| CudaError::Compile)?;
        let multi = |name: &str| -> Result<(CudaFunction, u32), CudaError> {
            let k = f(name)?;
            let n = k.occupancy_max_active_blocks_per_multiprocessor(MULTI_THREADS, 0, None)?;
            Ok((k, n.max(1)))
        };
        let gemv_multi = [
            multi("gemv_k_multi")?,
            multi("gemv_k_multi_b3")?,
            multi("gemv_k_multi_b4")?,
        ];
        Ok(Fns {
            quantize_q8_1: f("quantize_q8_1")?,
            gemv,
            gemm_mma,
            gemv_rows: [f("gemv_q4_k_rw2")?, f("gemv_q6_k_rw2")?],
            gemv_smem: [f("gemv_q4_k_s1")?, f("gemv_q6_k_s1")?],
            gemv_multi,
            gemv_multi_norm: multi("gemv_k_multi_norm")?,
            gemv_multi_sums: multi("gemv_k_multi_sums")?,
            gemv_multi_gridnorm: multi("gemv_k_multi_gridnorm")?,
            norm_sums_q8: f("norm_sums_q8_f32")?,
            gemv_multi_probe: multi("gemv_k_multi_probe")?,
            gemv_multi_tma: [
                f("gemv_k_multi_tma2")?,
                f("gemv_k_multi_tma1")?,
                f("gemv_k_multi_tma2_probe")?,
                f("gemv_k_multi_tma1_probe")?,
                f("gemv_k_multi_tma1_t2")?,
                f("gemv_k_multi_tma1_t4")?,
                f("gemv_k_multi_tma1_t2_gridnorm")?,
                f("gemv_k_multi_tma1_t2_qkprep")?,
                f("gemv_k_multi_tma1_t2_attn")?,
                f("gemv_k_multi_tma1_t2_attn_gridnorm")?,
                f("gemv_k_multi_tma2_t2")?,
                f("gemv_k_multi_tma1_t2_prenorm")?,
                f("gemv_k_multi_tma2_rs")?,
                f("gemv_k_multi_tma1_t2_dyn")?,
                f("gemv_k_multi_tma1_t4_dyn")?,
                f("gemv_k_multi_tma2_rs_dyn")?,
                f("gemv_k_multi_tma2_t2_gridnorm")?,
                f("gemv_k_multi_tma2_t2_qkprep")?,
                f("gemv_k_multi_tma2_t2_attn")?,
                f("gemv_k_multi_tma2_t2_attn_gridnorm")?,
            ],
            gemv_float: f("gemv_float")?,
            embed_rows: f("embed_rows")?,
            rmsnorm: f("rmsnorm_f32")?,
            rmsnorm_q8: f("rmsnorm_q8_f32")?,
            add_rmsnorm: f("add_rmsnorm_f32")?,
            add_rmsnorm_q8: f("add_rmsnorm_q8_f32")?,
            norm_add_rmsnorm: f("norm_add_rmsnorm_f32")?,
            norm_add_rmsnorm_q8: f("norm_add_rmsnorm_q8_f32")?,
            norm_cl: [
                f("rmsnorm_q8_cl")?,
                f("add_rmsnorm_q8_cl")?,
                f("norm_add_rmsnorm_q8_cl")?,
            ],
            attn_inputs: f("attn_inputs")?,
            gated_act_q8: f("gated_act_q8")?,
            rope: f("rope_f32")?,
            add: f("add_f32")?,
            scale: f("scale_f32")?,
            softcap: f("softcap_f32")?,
            sigmoid_mul: f("sigmoid_mul_f32")?,
            gated_silu: f("gated_silu_f32")?,
            gated_gelu_tanh: f("gated_gelu_tanh_f32")?,
            argmax: f("argmax_f32")?,
            sample: f("sample_f32")?,
            kv_store: f("kv_store_f16")?,
            attn_split: f("attn_split")?,
            attn_split_cl: f("attn_split_cl")?,
            attn_split_prep: f("attn_split_prep")?,
            copy_u128: f("copy_u128")?,
        })
    }
}

/// Index of `ty` in [`GEMV_TYPES`].
pub(crate) fn gemv_index(ty: GgmlType) -> Option<usize> {
    GEMV_TYPES.iter().position(|&t| t == ty)
}

/// The raw handle of a kernel.
pub(crate) fn raw(f: &CudaFunction) -> sys::CUfunction {
    f.cu_function()
}

//! WGSL sources (from `shaders/`) and how a kernel's module is put together.
//!
//! WGSL has no include, so a module is the concatenation of `common.wgsl`, a reduction file
//! (`reduce_sg.wgsl` with subgroup operations, or `reduce_wg.wgsl` through workgroup memory),
//! `quant.wgsl` for kernels that read weights, and the op's own file. Two markers in the op
//! files are filled in: `SG_ARGS` (the subgroup builtins in the entry point's parameters) and
//! `SG_INIT` (handing them to the reduction helpers); weight kernels get the block format's
//! `deq_<fmt>` and `dot_<fmt>` functions renamed to `deq_unit` and `dot_unit`. The Q4_K and
//! Q6_K matmul modules also get `matvec_k.wgsl` (the one-row entry `vec_k`, reading aligned
//! 16-byte words) and that format's hooks for it (`matvec_q4k.wgsl`, `matvec_q6k.wgsl`).

use glimmer_core::quant::GgmlType;

use crate::GpuError;

const COMMON: &str = include_str!("../../shaders/common.wgsl");
const REDUCE_SG: &str = include_str!("../../shaders/reduce_sg.wgsl");
const REDUCE_WG: &str = include_str!("../../shaders/reduce_wg.wgsl");
const QUANT: &str = include_str!("../../shaders/quant.wgsl");
const MATMUL: &str = include_str!("../../shaders/matmul.wgsl");
const MATVEC_K: &str = include_str!("../../shaders/matvec_k.wgsl");
const MATVEC_Q4K: &str = include_str!("../../shaders/matvec_q4k.wgsl");
const MATVEC_Q6K: &str = include_str!("../../shaders/matvec_q6k.wgsl");
const MATVEC_K8: &str = include_str!("../../shaders/matvec_k8.wgsl");
const MATVEC_Q4K_I8: &str = include_str!("../../shaders/matvec_q4k_i8.wgsl");
const MATVEC_Q6K_I8: &str = include_str!("../../shaders/matvec_q6k_i8.wgsl");
const QUANTIZE: &str = include_str!("../../shaders/quantize.wgsl");
const EMBED: &str = include_str!("../../shaders/embed.wgsl");
const RMSNORM: &str = include_str!("../../shaders/rmsnorm.wgsl");
const ROPE: &str = include_str!("../../shaders/rope.wgsl");
const ELTWISE: &str = include_str!("../../shaders/eltwise.wgsl");
const KV: &str = include_str!("../../shaders/kv.wgsl");
const ATTENTION: &str = include_str!("../../shaders/attention.wgsl");
const ARGMAX: &str = include_str!("../../shaders/argmax.wgsl");

/// One shader module's worth of kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kernel {
    /// Quantized matvec / matmul for a weight format.
    Matmul(GgmlType),
    /// Embedding-row dequantization for a table format.
    Embed(GgmlType),
    /// RMSNorm.
    RmsNorm,
    /// RoPE.
    Rope,
    /// Element-wise ops (entry points `add`, `scale`, `softcap`, `sigmoid_mul`, `silu_mul`,
    /// `gelu_mul`).
    Eltwise,
    /// KV store.
    KvStore,
    /// Activations to int8 blocks for the integer-dot matvec (entry point `q8`).
    QuantX,
    /// Attention (entry points `partial`, `combine`).
    Attention,
    /// Row argmax.
    Argmax,
}

/// The `deq_<fmt>` function of a weight format.
fn deq_fn(ty: GgmlType) -> Result<&'static str, GpuError> {
    Ok(match ty {
        GgmlType::F32 => "deq_f32",
        GgmlType::F16 => "deq_f16",
        GgmlType::Q4_0 => "deq_q4_0",
        GgmlType::Q4_1 => "deq_q4_1",
        GgmlType::Q5_0 => "deq_q5_0",
        GgmlType::Q8_0 => "deq_q8_0",
        GgmlType::Q4_K => "deq_q4_k",
        GgmlType::Q5_K => "deq_q5_k",
        GgmlType::Q6_K => "deq_q6_k",
        t => return Err(GpuError::UnsupportedType(t)),
    })
}

/// Whether the kernels can read weights of type `ty`.
pub fn supports(ty: GgmlType) -> bool {
    deq_fn(ty).is_ok()
}

/// The full WGSL source of `kernel`, with or without subgroup reductions.
pub(crate) fn source(kernel: Kernel, subgroups: bool) -> Result<String, GpuError> {
    let (body, weights) = match kernel {
        Kernel::Matmul(t) => (MATMUL, Some(t)),
        Kernel::Embed(t) => (EMBED, Some(t)),
        Kernel::RmsNorm => (RMSNORM, None),
        Kernel::QuantX => (QUANTIZE, None),
        Kernel::Rope => (ROPE, None),
        Kernel::Eltwise => (ELTWISE, None),
        Kernel::KvStore => (KV, None),
        Kernel::Attention => (ATTENTION, None),
        Kernel::Argmax => (ARGMAX, None),
    };
    let mut s = String::with_capacity(16 * 1024);
    // Naga takes subgroup builtins without `enable subgroups;` (it rejects the directive);
    // the device's SUBGROUP feature is what allows them.
    s.push_str(COMMON);
    s.push_str(if subgroups { REDUCE_SG } else { REDUCE_WG });
    if let Some(t) = weights {
        let f = deq_fn(t)?;
        let dot = f.replacen("deq_", "dot_", 1);
        s.push_str(
            &QUANT
                .replace(&format!("fn {f}("), "fn deq_unit(")
                .replace(&format!("fn {dot}("), "fn dot_unit("),
        );
    }
    let (args, init) = if subgroups {
        (
            ", @builtin(subgroup_size) sg_sz: u32, @builtin(subgroup_invocation_id) sg_ln: u32",
            "sg_init(sg_sz, sg_ln);",
        )
    } else {
        ("", "")
    };
    let mut body = body.to_string();
    let words = match kernel {
        Kernel::Matmul(GgmlType::Q4_K) => Some(MATVEC_Q4K),
        Kernel::Matmul(GgmlType::Q6_K) => Some(MATVEC_Q6K),
        _ => None,
    };
    if let Some(f) = words {
        body.push_str(MATVEC_K);
        body.push_str(f);
    }
    let int8 = match kernel {
        Kernel::Matmul(GgmlType::Q4_K) => Some(MATVEC_Q4K_I8),
        Kernel::Matmul(GgmlType::Q6_K) => Some(MATVEC_Q6K_I8),
        _ => None,
    };
    if let Some(f) = int8 {
        body.push_str(MATVEC_K8);
        body.push_str(f);
    }
    s.push_str(&body.replace("SG_ARGS", args).replace("SG_INIT", init));
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every module parses and validates with naga, in both reduction variants.
    #[test]
    fn every_module_validates() {
        let mut kernels = vec![
            Kernel::RmsNorm,
            Kernel::QuantX,
            Kernel::Rope,
            Kernel::Eltwise,
            Kernel::KvStore,
            Kernel::Attention,
            Kernel::Argmax,
        ];
        for t in [
            GgmlType::F32,
            GgmlType::F16,
            GgmlType::Q4_0,
            GgmlType::Q4_1,
            GgmlType::Q5_0,
            GgmlType::Q8_0,
            GgmlType::Q4_K,
            GgmlType::Q5_K,
            GgmlType::Q6_K,
        ] {
            kernels.push(Kernel::Matmul(t));
            kernels.push(Kernel::Embed(t));
        }
        for k in kernels {
            for sg in [false, true] {
                let src = source(k, sg).unwrap();
                let module = naga::front::wgsl::parse_str(&src)
                    .unwrap_or_else(|e| panic!("{k:?} sg={sg}: {}", e.emit_to_string(&src)));
                let mut v = naga::valid::Validator::new(
                    naga::valid::ValidationFlags::all(),
                    naga::valid::Capabilities::all(),
                );
                v.validate(&module)
                    .unwrap_or_else(|e| panic!("{k:?} sg={sg}: {e:?}"));
            }
        }
    }
}

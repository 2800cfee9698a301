//! [`Weights`]: the tensors of one model, bound by name and checked against its [`ModelSpec`].

use heapless::Vec;

use crate::gguf::{ErrName, Gguf, TensorInfo};
use crate::quant::GgmlType;

use super::{Arch, ModelError, ModelSpec, MAX_LAYERS};

/// A 2-D weight matrix (or a 1-D vector with `rows == 1`) viewed in place in the model file.
///
/// `data` holds `rows` rows of `cols` elements each, in `ty`'s block format. `id` is the tensor's
/// index in the GGUF tensor table, so a GPU backend can map it to its uploaded copy.
#[derive(Clone, Copy, Debug)]
pub struct Tensor<'a> {
    /// Block format.
    pub ty: GgmlType,
    /// Number of rows (output features for a projection).
    pub rows: usize,
    /// Elements per row (input features for a projection).
    pub cols: usize,
    /// The raw bytes, exactly `rows · row_bytes(cols)`.
    pub data: &'a [u8],
    /// Index in the GGUF tensor table.
    pub id: u32,
}

impl<'a> Tensor<'a> {
    /// Bytes of one row.
    pub fn row_bytes(&self) -> usize {
        self.data.len() / self.rows.max(1)
    }

    /// The raw bytes of row `r`, or `None` past the end.
    pub fn row(&self, r: usize) -> Option<&'a [u8]> {
        let rb = self.row_bytes();
        self.data
            .get(r.checked_mul(rb)?..r.checked_add(1)?.checked_mul(rb)?)
    }

    /// The tensor as `f32` values, when it is F32 and 4-byte aligned.
    pub fn as_f32(&self) -> Option<&'a [f32]> {
        if self.ty != GgmlType::F32 {
            return None;
        }
        bytemuck::try_cast_slice(self.data).ok()
    }
}

/// The tensors of one decoder layer.
#[derive(Clone, Copy, Debug)]
pub struct LayerWeights<'a> {
    /// RMSNorm before attention, `(n_embd)`.
    pub attn_norm: Tensor<'a>,
    /// Query projection, `(q_dim, n_embd)`.
    pub wq: Tensor<'a>,
    /// Key projection, `(k_dim, n_embd)`.
    pub wk: Tensor<'a>,
    /// Value projection, `(v_dim, n_embd)`.
    pub wv: Tensor<'a>,
    /// Output projection, `(n_embd, n_head · head_dim_v)`.
    pub wo: Tensor<'a>,
    /// Per-head RMSNorm weight for Q, `(head_dim)` (gemma3).
    pub q_norm: Option<Tensor<'a>>,
    /// Per-head RMSNorm weight for K, `(head_dim)` (gemma3).
    pub k_norm: Option<Tensor<'a>>,
    /// RMSNorm on the attention output before the residual add, `(n_embd)` (gemma3, glimmer).
    pub post_attn_norm: Option<Tensor<'a>>,
    /// Output gate projection, `(n_head · head_dim_v, n_embd)`: `att *= sigmoid(W_gate · x)`
    /// (glimmer).
    pub attn_gate: Option<Tensor<'a>>,
    /// RMSNorm before the FFN, `(n_embd)`.
    pub ffn_norm: Tensor<'a>,
    /// FFN gate projection, `(n_ff, n_embd)`.
    pub w_gate: Tensor<'a>,
    /// FFN up projection, `(n_ff, n_embd)`.
    pub w_up: Tensor<'a>,
    /// FFN down projection, `(n_embd, n_ff)`.
    pub w_down: Tensor<'a>,
    /// RMSNorm on the FFN output before the residual add, `(n_embd)` (gemma3).
    pub post_ffn_norm: Option<Tensor<'a>>,
}

impl<'a> LayerWeights<'a> {
    /// Every tensor of the layer, the optional ones only when present: the one list that
    /// uploads, byte counts and benchmarks walk, so a new tensor cannot be missed by one of them.
    pub fn tensors(&self) -> impl Iterator<Item = &Tensor<'a>> + '_ {
        [
            Some(&self.attn_norm),
            Some(&self.wq),
            Some(&self.wk),
            Some(&self.wv),
            Some(&self.wo),
            self.q_norm.as_ref(),
            self.k_norm.as_ref(),
            self.post_attn_norm.as_ref(),
            self.attn_gate.as_ref(),
            Some(&self.ffn_norm),
            Some(&self.w_gate),
            Some(&self.w_up),
            Some(&self.w_down),
            self.post_ffn_norm.as_ref(),
        ]
        .into_iter()
        .flatten()
    }
}

/// Every tensor the forward pass reads.
#[derive(Clone, Debug)]
pub struct Weights<'a> {
    /// Embedding table, `(n_vocab, n_embd)`.
    pub tok_embd: Tensor<'a>,
    /// Final RMSNorm, `(n_embd)`.
    pub output_norm: Tensor<'a>,
    /// LM head, `(n_vocab, n_embd)`; the embedding table when tied.
    pub output: Tensor<'a>,
    /// Decoder layers in order.
    pub layers: Vec<LayerWeights<'a>, MAX_LAYERS>,
}

/// Formats `blk.{il}.{suffix}` into `buf`.
fn layer_name<'b>(buf: &'b mut [u8; 96], il: usize, suffix: &str) -> &'b str {
    let mut n = 0;
    let mut push = |b: u8, n: &mut usize| {
        if *n < buf.len() {
            buf[*n] = b;
            *n += 1;
        }
    };
    for b in b"blk." {
        push(*b, &mut n);
    }
    let mut digits = [0u8; 20];
    let mut d = 0;
    let mut v = il;
    loop {
        digits[d] = b'0' + (v % 10) as u8;
        d += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    while d > 0 {
        d -= 1;
        push(digits[d], &mut n);
    }
    push(b'.', &mut n);
    for b in suffix.bytes() {
        push(b, &mut n);
    }
    core::str::from_utf8(&buf[..n]).unwrap_or("")
}

struct Binder<'g, 'a> {
    g: &'g Gguf<'a>,
}

impl<'a> Binder<'_, 'a> {
    fn find(&self, name: &str) -> Option<(u32, TensorInfo<'a>)> {
        self.g
            .tensors()
            .enumerate()
            .find(|(_, t)| t.name == name)
            .map(|(i, t)| (i as u32, t))
    }

    /// Binds `name` as a `(rows, cols)` matrix, or a vector when `rows == 1`.
    fn opt(&self, name: &str, rows: usize, cols: usize) -> Result<Option<Tensor<'a>>, ModelError> {
        let Some((id, t)) = self.find(name) else {
            return Ok(None);
        };
        let shape_ok = if rows == 1 {
            t.n_dims == 1 && t.dims[0] as usize == cols
        } else {
            t.n_dims == 2 && t.dims[0] as usize == cols && t.dims[1] as usize == rows
        };
        if !shape_ok {
            return Err(ModelError::BadShape(ErrName::new(name)));
        }
        if !t.ty.is_computable() || (rows == 1 && t.ty != GgmlType::F32) {
            return Err(ModelError::BadType {
                tensor: ErrName::new(name),
                ty: t.ty,
            });
        }
        let tensor = Tensor {
            ty: t.ty,
            rows,
            cols,
            data: t.data,
            id,
        };
        if rows == 1 && tensor.as_f32().is_none() {
            return Err(ModelError::Misaligned(ErrName::new(name)));
        }
        Ok(Some(tensor))
    }

    fn req(&self, name: &str, rows: usize, cols: usize) -> Result<Tensor<'a>, ModelError> {
        self.opt(name, rows, cols)?
            .ok_or(ModelError::MissingTensor(ErrName::new(name)))
    }

    fn layer_opt(
        &self,
        il: usize,
        suffix: &str,
        rows: usize,
        cols: usize,
    ) -> Result<Option<Tensor<'a>>, ModelError> {
        let mut buf = [0u8; 96];
        self.opt(layer_name(&mut buf, il, suffix), rows, cols)
    }

    fn layer(
        &self,
        il: usize,
        suffix: &str,
        rows: usize,
        cols: usize,
    ) -> Result<Tensor<'a>, ModelError> {
        let mut buf = [0u8; 96];
        self.req(layer_name(&mut buf, il, suffix), rows, cols)
    }
}

impl<'a> Weights<'a> {
    /// Binds every tensor the graph of `spec.arch` reads, checking each shape and type.
    pub fn bind(g: &Gguf<'a>, spec: &ModelSpec) -> Result<Self, ModelError> {
        let b = Binder { g };
        let s = spec;
        let tok_embd = b.req("token_embd.weight", s.n_vocab, s.n_embd)?;
        let output_norm = b.req("output_norm.weight", 1, s.n_embd)?;
        let output = match s.arch {
            // The example's GGUF path has no tie: glimmer's head must be present.
            Arch::Glimmer => b.req("output.weight", s.n_vocab, s.n_embd)?,
            _ => b
                .opt("output.weight", s.n_vocab, s.n_embd)?
                .unwrap_or(tok_embd),
        };
        let gemma = s.arch == Arch::Gemma3;
        let post_required = s.post_norms;
        let gate_rows = s.n_head * s.head_dim_v;
        let mut layers = Vec::new();
        for il in 0..s.n_layer {
            let norm = |suffix: &str, dim: usize, required: bool| {
                if required {
                    b.layer(il, suffix, 1, dim).map(Some)
                } else {
                    b.layer_opt(il, suffix, 1, dim)
                }
            };
            let attn_gate = if s.attn_gate {
                match b.layer_opt(il, "attn_gate.weight", gate_rows, s.n_embd)? {
                    Some(t) => Some(t),
                    None => Some(b.layer(il, "attn_output_gate.weight", gate_rows, s.n_embd)?),
                }
            } else {
                None
            };
            let lw = LayerWeights {
                attn_norm: b.layer(il, "attn_norm.weight", 1, s.n_embd)?,
                wq: b.layer(il, "attn_q.weight", s.q_dim(), s.n_embd)?,
                wk: b.layer(il, "attn_k.weight", s.k_dim(), s.n_embd)?,
                wv: b.layer(il, "attn_v.weight", s.v_dim(), s.n_embd)?,
                wo: b.layer(il, "attn_output.weight", s.n_embd, s.n_head * s.head_dim_v)?,
                q_norm: norm("attn_q_norm.weight", s.head_dim, gemma)?,
                k_norm: norm("attn_k_norm.weight", s.head_dim, gemma)?,
                post_attn_norm: norm("post_attention_norm.weight", s.n_embd, post_required)?,
                attn_gate,
                ffn_norm: b.layer(il, "ffn_norm.weight", 1, s.n_embd)?,
                w_gate: b.layer(il, "ffn_gate.weight", s.n_ff, s.n_embd)?,
                w_up: b.layer(il, "ffn_up.weight", s.n_ff, s.n_embd)?,
                w_down: b.layer(il, "ffn_down.weight", s.n_embd, s.n_ff)?,
                post_ffn_norm: norm("post_ffw_norm.weight", s.n_embd, post_required)?,
            };
            layers
                .push(lw)
                .map_err(|_| ModelError::TooManyLayers(s.n_layer))?;
        }
        Ok(Weights {
            tok_embd,
            output_norm,
            output,
            layers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::layer_name;

    #[test]
    fn layer_names() {
        let mut buf = [0u8; 96];
        assert_eq!(
            layer_name(&mut buf, 0, "attn_q.weight"),
            "blk.0.attn_q.weight"
        );
        assert_eq!(
            layer_name(&mut buf, 51, "ffn_up.weight"),
            "blk.51.ffn_up.weight"
        );
    }
}

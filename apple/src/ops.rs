//! The [`Backend`] kernels of [`GpuBackend`]: argument checks, then one or more dispatches.

use glimmer_core::exec::{AttnParams, Backend, Buf};
use glimmer_core::model::{Activation, RopeStyle, Tensor};
use glimmer_core::quant::GgmlType;

use crate::arena::locate;
use crate::backend::Src;
use crate::kv::GpuKvType;
use crate::shaders::Kernel;
use crate::{GpuBackend, GpuError};

/// Most keys one attention split takes (`SPLIT` in attention.wgsl).
const SPLIT_MAX: usize = 256;
/// Keys per split the attention prefers (more splits: more workgroups in flight).
const SPLIT_PREF: usize = 64;
/// Output rows one matmul workgroup computes (`RPW` in matmul.wgsl).
const MATMUL_ROWS_PER_GROUP: usize = 4;
/// Output rows one matmul workgroup computes on the CPU-adapter layout (`LANE_ROWS` in
/// matmul.wgsl; [`crate::GpuOptions::row_per_lane`]).
const MATMUL_LANE_ROWS: usize = 64;
/// Values of a row one argmax workgroup scans in the two-stage argmax (`CHUNK` in argmax.wgsl).
const ARGMAX_CHUNK: usize = 1024;
/// Widest head the attention kernel holds (`qs` in attention.wgsl).
const HEAD_MAX: usize = 512;

fn u(x: usize) -> Result<u32, GpuError> {
    u32::try_from(x).map_err(|_| GpuError::TooLarge)
}

impl GpuBackend {
    /// Locates `b` and returns (arena buffer, element offset).
    fn at(&self, b: Buf) -> Result<(usize, u32), GpuError> {
        locate(&self.segs, b)
    }

    /// Element-wise op over `x` (and `y`), `n = x.len`.
    fn eltwise(
        &mut self,
        entry: &'static str,
        x: Buf,
        y: Option<Buf>,
        f: [f32; 2],
    ) -> Result<(), GpuError> {
        let (sx, ox) = self.at(x)?;
        let (sy, oy) = match y {
            Some(y) if y.len != x.len => return Err(GpuError::BadRegion),
            Some(y) => self.at(y)?,
            None => (sx, ox),
        };
        self.rec.begin(&self.ctx, &[]);
        let p = [ox, oy, u(x.len)?, f[0].to_bits(), f[1].to_bits()];
        self.run(
            Kernel::Eltwise,
            entry,
            [sx, sy, sx],
            None,
            0,
            &p,
            u(x.len.div_ceil(64))?,
            1,
        )
    }

    /// Row-wise argmax of `src` (rows of `width`): the index of each row's largest value
    /// (lowest index among ties) goes to `out`, one per row.
    pub fn argmax(&mut self, src: Buf, width: usize, out: &mut [u32]) -> Result<(), GpuError> {
        if width == 0 || src.len != out.len() * width || out.len() > self.part_len {
            return Err(GpuError::BadRegion);
        }
        let (s, o) = self.at(src)?;
        self.rec.begin(&self.ctx, &[]);
        let rows = u(out.len())?;
        // Wide rows go through chunks in parallel, then a merge, when the scratch holds the
        // chunk results after the per-row answers.
        let chunks = width.div_ceil(ARGMAX_CHUNK);
        let scratch = out.len() + 2 * out.len() * chunks;
        if width >= 4 * ARGMAX_CHUNK && scratch <= self.part_len {
            let p = [o, u(width)?, rows, u(chunks)?];
            let n = u(out.len() * chunks)?;
            self.run(Kernel::Argmax, "chunk", [s, s, s], None, 0, &p, n, 1)?;
            self.run(Kernel::Argmax, "merge", [s, s, s], None, 0, &p, rows, 1)?;
        } else {
            let p = [o, u(width)?, rows];
            self.run(Kernel::Argmax, "main", [s, s, s], None, 0, &p, rows, 1)?;
        }
        self.readback(Src::Part, 0, bytemuck::cast_slice_mut(out))
    }
}

impl Backend for GpuBackend {
    type Error = GpuError;

    fn embed(&mut self, table: &Tensor<'_>, tokens: &[u32], out: Buf) -> Result<(), GpuError> {
        let e = self.weights.get(table)?;
        let (ty, rows, cols, row_bytes) = (e.ty, e.rows, e.cols, e.row_bytes);
        let pieces = e.pieces.len();
        if out.len != tokens.len() * cols || tokens.len() > self.rec.host_capacity() {
            return Err(GpuError::BadRegion);
        }
        if tokens.iter().any(|&t| t as usize >= rows) {
            return Err(GpuError::BadShape);
        }
        let (s, o) = self.at(out)?;
        for i in 0..pieces {
            let pc = self.weights.get(table)?.pieces[i];
            let h = self.rec.begin(&self.ctx, tokens);
            let p = [
                u(pc.row0)?,
                u(pc.rows)?,
                u(row_bytes)?,
                pc.base,
                u(cols)?,
                u(tokens.len())?,
                h,
                o,
            ];
            let n = u(tokens.len())?;
            self.run(
                Kernel::Embed(ty),
                "main",
                [s, s, s],
                Some(pc.pool),
                0,
                &p,
                n,
                1,
            )?;
        }
        Ok(())
    }

    fn rmsnorm(
        &mut self,
        x: Buf,
        weight: Option<&Tensor<'_>>,
        dim: usize,
        eps: f32,
        out: Buf,
    ) -> Result<(), GpuError> {
        if dim == 0 || !x.len.is_multiple_of(dim) || out.len != x.len {
            return Err(GpuError::BadRegion);
        }
        let (pool, base) = match weight {
            Some(t) => {
                let e = self.weights.get(t)?;
                if e.ty != GgmlType::F32 || e.rows * e.cols != dim || e.pieces.len() != 1 {
                    return Err(GpuError::UnsupportedType(e.ty));
                }
                (Some(e.pieces[0].pool), e.pieces[0].base)
            }
            None => (None, 0),
        };
        let (sx, ox) = self.at(x)?;
        let (so, oo) = self.at(out)?;
        let rows = u(x.len / dim)?;
        self.rec.begin(&self.ctx, &[]);
        let p = [
            ox,
            oo,
            u(dim)?,
            rows,
            base,
            u32::from(pool.is_some()),
            eps.to_bits(),
        ];
        // Rows of whole 16-byte words take the entry that loads four of them at a time (the
        // weight sits at a 256-byte piece offset).
        let words = dim.is_multiple_of(4) && ox % 4 == 0 && oo % 4 == 0 && base % 16 == 0;
        let entry = if words { "main4" } else { "main" };
        self.run(Kernel::RmsNorm, entry, [sx, so, sx], pool, 0, &p, rows, 1)
    }

    fn matmul(&mut self, w: &Tensor<'_>, x: Buf, rows: usize, out: Buf) -> Result<(), GpuError> {
        let e = self.weights.get(w)?;
        let (ty, w_rows, cols, row_bytes) = (e.ty, e.rows, e.cols, e.row_bytes);
        let pieces = e.pieces.len();
        if x.len != rows * cols || out.len != rows * w_rows {
            return Err(GpuError::BadRegion);
        }
        let (sx, ox) = self.at(x)?;
        let (so, oo) = self.at(out)?;
        // The one-row-per-invocation layout (CPU adapters); `main_rows` reads the activations
        // as 16-byte words, so a batch that starts off a 4-value boundary takes `main`.
        let lanes = self.ctx.row_per_lane && (rows == 1 || ox % 4 == 0);
        // Q4_K and Q6_K decode on int8 activations: the row is quantized into `part` once,
        // and the matvecs that follow on the same row (Q, K, V; gate, up) reuse it.
        let int8 = rows == 1
            && matches!(ty, GgmlType::Q4_K | GgmlType::Q6_K)
            && self.ctx.int_dot
            && cols / 32 * 12 <= self.part_len
            && e.pieces.iter().all(|pc| pc.base % 16 == 0)
            && row_bytes % 16 == 0;
        if int8 && self.qx != Some(x) {
            self.rec.begin(&self.ctx, &[]);
            let p = [ox, u(cols)?, 0];
            let n = u((cols / 32).div_ceil(8))?;
            self.run(Kernel::QuantX, "q8", [sx, sx, sx], None, 0, &p, n, 1)?;
            self.qx = Some(x);
        }
        for i in 0..pieces {
            let pc = self.weights.get(w)?.pieces[i];
            self.rec.begin(&self.ctx, &[]);
            let p = [
                u(pc.rows)?,
                u(cols)?,
                u(row_bytes)?,
                pc.base,
                // vec_k8 reads the int8 row from the start of `part`.
                if int8 { 0 } else { ox },
                oo + u(pc.row0)?,
                u(w_rows)?,
                u(rows)?,
            ];
            let z = u(rows.div_ceil(4))?;
            let per_group = if lanes {
                MATMUL_LANE_ROWS
            } else {
                MATMUL_ROWS_PER_GROUP
            };
            let n = u(pc.rows.div_ceil(per_group))?;
            // One activation row takes the fused dequantize-and-dot entry; Q4_K and Q6_K, with
            // the rows and activations 16-byte aligned, the entries reading 16-byte words.
            let aligned = pc.base % 16 == 0 && row_bytes % 16 == 0 && ox % 4 == 0;
            let entry = match (rows, ty) {
                (1, _) if lanes => "vec_rows",
                (_, _) if lanes => "main_rows",
                (1, GgmlType::Q4_K | GgmlType::Q6_K) if int8 => "vec_k8",
                (1, GgmlType::Q4_K | GgmlType::Q6_K) if aligned => "vec_k",
                (_, GgmlType::Q4_K | GgmlType::Q6_K) if aligned => "mat_k",
                (1, _) => "vec",
                _ => "main",
            };
            self.run(
                Kernel::Matmul(ty),
                entry,
                [sx, so, sx],
                Some(pc.pool),
                0,
                &p,
                n,
                z,
            )?;
        }
        if self.qx.is_some_and(|q| !q.disjoint(out)) {
            self.qx = None;
        }
        Ok(())
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
    ) -> Result<(), GpuError> {
        if x.len != positions.len() * n_heads * head_dim
            || rope_dim > head_dim
            || !rope_dim.is_multiple_of(2)
        {
            return Err(GpuError::BadRegion);
        }
        if rope_dim == 0 || positions.is_empty() {
            return Ok(());
        }
        let (s, o) = self.at(x)?;
        let h = self.rec.begin(&self.ctx, positions);
        let theta_scale = libm::powf(base, -2.0 / rope_dim as f32);
        let neox = u32::from(style == RopeStyle::HalfSplit);
        let p = [
            o,
            u(n_heads)?,
            u(head_dim)?,
            u(rope_dim)?,
            u(positions.len())?,
            h,
            neox,
            theta_scale.to_bits(),
        ];
        let n = u((positions.len() * n_heads * rope_dim / 2).div_ceil(64))?;
        self.run(Kernel::Rope, "main", [s, s, s], None, 0, &p, n, 1)
    }

    fn kv_store(
        &mut self,
        layer: usize,
        k: Buf,
        v: Buf,
        positions: &[u32],
    ) -> Result<(), GpuError> {
        let n = positions.len();
        let sh = &self.kv_shape;
        if n == 0 || k.len != n * sh.k_dim || v.len != n * sh.v_dim {
            return Err(GpuError::BadRegion);
        }
        let cap = *sh.caps.get(layer).ok_or(GpuError::KvRange)?;
        let (kw, vw) = sh.words()?;
        let f16 = u32::from(sh.ty == GpuKvType::F16);
        let (kd, vd) = (sh.k_dim, sh.v_dim);
        let (sk, ok) = self.at(k)?;
        let (sv, ov) = self.at(v)?;
        let h = self.rec.begin(&self.ctx, positions);
        let p = [ok, ov, u(kd)?, u(vd)?, u(n)?, h, u(cap)?, f16];
        let groups = u((n * (kw + vw)).div_ceil(64))?;
        let kvi = self.kv_index(layer)?;
        self.run(
            Kernel::KvStore,
            "main",
            [sk, sv, sk],
            None,
            kvi,
            &p,
            groups,
            1,
        )
    }

    fn attention(
        &mut self,
        p: &AttnParams,
        q: Buf,
        positions: &[u32],
        out: Buf,
    ) -> Result<(), GpuError> {
        if p.head_dim > HEAD_MAX || p.n_head_kv == 0 || !p.n_head.is_multiple_of(p.n_head_kv) {
            return Err(GpuError::HeadTooWide);
        }
        let sh = &self.kv_shape;
        if p.n_head_kv * p.head_dim != sh.k_dim || p.n_head_kv * p.head_dim_v != sh.v_dim {
            return Err(GpuError::BadShape);
        }
        let (qw, ow) = (p.n_head * p.head_dim, p.n_head * p.head_dim_v);
        let rows = positions.len();
        if rows == 0 || q.len != rows * qw || out.len != rows * ow {
            return Err(GpuError::BadRegion);
        }
        let cap = *sh.caps.get(p.layer).ok_or(GpuError::KvRange)?;
        let max_pos = positions.iter().copied().max().unwrap_or(0) as usize;
        let min_pos = positions.iter().copied().min().unwrap_or(0) as usize;
        let oldest = match p.window {
            Some(w) => min_pos.saturating_sub((w as usize).saturating_sub(1)),
            None => 0,
        };
        if max_pos + 1 - oldest > cap {
            return Err(GpuError::KvRange);
        }
        let max_len = match p.window {
            Some(w) => (max_pos + 1).min(w as usize),
            None => max_pos + 1,
        };
        let per_split = p.n_head * (p.head_dim_v + 2);
        let splits_fit = self.part_len / per_split;
        if splits_fit == 0 {
            return Err(GpuError::TooLarge);
        }
        let split_len = SPLIT_PREF.max(max_len.div_ceil(splits_fit));
        if split_len > SPLIT_MAX {
            return Err(GpuError::TooLarge);
        }
        let n_split = max_len.div_ceil(split_len);
        let group_rows = (splits_fit / n_split).clamp(1, rows);
        let f16 = u32::from(sh.ty == GpuKvType::F16);
        let (sq, oq) = self.at(q)?;
        let (so, oo) = self.at(out)?;
        let mut r0 = 0;
        while r0 < rows {
            let gr = group_rows.min(rows - r0);
            for (entry, n) in [
                ("partial", gr * p.n_head * n_split),
                ("combine", gr * p.n_head),
            ] {
                let h = self.rec.begin(&self.ctx, positions);
                let prm = [
                    oq + u(r0 * qw)?,
                    oo + u(r0 * ow)?,
                    u(gr)?,
                    u(r0)?,
                    u(p.n_head)?,
                    u(p.n_head / p.n_head_kv)?,
                    u(p.head_dim)?,
                    u(p.head_dim_v)?,
                    p.window.unwrap_or(0),
                    h,
                    u(cap)?,
                    f16,
                    u(n_split)?,
                    u(split_len)?,
                    p.scale.to_bits(),
                ];
                let kvi = self.kv_index(p.layer)?;
                self.run(
                    Kernel::Attention,
                    entry,
                    [sq, so, sq],
                    None,
                    kvi,
                    &prm,
                    u(n)?,
                    1,
                )?;
            }
            r0 += gr;
        }
        Ok(())
    }

    fn gated_act(&mut self, gate: Buf, up: Buf, act: Activation) -> Result<(), GpuError> {
        let entry = match act {
            Activation::Silu => "silu_mul",
            Activation::GeluTanh => "gelu_mul",
        };
        self.eltwise(entry, gate, Some(up), [0.0; 2])
    }

    fn sigmoid_mul(&mut self, x: Buf, gate: Buf) -> Result<(), GpuError> {
        self.eltwise("sigmoid_mul", x, Some(gate), [0.0; 2])
    }

    fn softcap(&mut self, x: Buf, cap: f32, scale: f32) -> Result<(), GpuError> {
        self.eltwise("softcap", x, None, [cap, scale])
    }

    fn add(&mut self, x: Buf, y: Buf) -> Result<(), GpuError> {
        self.eltwise("add", x, Some(y), [0.0; 2])
    }

    fn scale(&mut self, x: Buf, s: f32) -> Result<(), GpuError> {
        self.eltwise("scale", x, None, [s, 0.0])
    }

    fn read(&mut self, src: Buf, dst: &mut [f32]) -> Result<(), GpuError> {
        if dst.len() != src.len {
            return Err(GpuError::BadRegion);
        }
        let (s, o) = self.at(src)?;
        self.readback(Src::Arena(s), o as u64 * 4, bytemuck::cast_slice_mut(dst))
    }
}

//! [`GpuBackend`]: buffers, pipelines and the dispatch machinery; the kernels are in `ops.rs`.

use std::collections::HashMap;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use glimmer_core::exec::{Buf, Layout};
use glimmer_core::model::{Tensor, Weights};

use crate::arena;
use crate::kv::KvShape;
use crate::recorder::{Recorder, SLOT};
use crate::shaders::{self, Kernel};
use crate::weights::{self, WeightStore};
use crate::{GpuContext, GpuError};

/// Storage bindings of the shared layout: `host`, `a0`, `a1`, `a2`, `wq`, `kv`, `part`
/// (see shaders/common.wgsl); `true` marks read-only ones.
const STORAGE: [(u32, bool); 7] = [
    (1, true),
    (2, false),
    (3, false),
    (4, false),
    (5, true),
    (6, false),
    (7, false),
];

/// Bind group of one dispatch: arena buffers of its three regions, weight pool, KV layer.
type GroupKey = ([usize; 3], usize, usize);

/// The GPU backend: one activation arena, weights uploaded once, a KV cache per session slot.
///
/// Ops record compute passes into one command encoder; `read` (of the
/// [`Backend`](glimmer_core::exec::Backend) trait) submits the step and maps the result back, so a whole decode step is one
/// submission. Pipelines and bind groups are made on first use and cached.
pub struct GpuBackend {
    pub(crate) ctx: GpuContext,
    pub(crate) segs: Vec<(usize, usize)>,
    pub(crate) arena: Vec<wgpu::Buffer>,
    pub(crate) weights: WeightStore,
    pub(crate) kv_shape: KvShape,
    /// Per slot, per layer (slot-major).
    pub(crate) kv: Vec<wgpu::Buffer>,
    /// The slot the KV ops use.
    slot: usize,
    pub(crate) part: wgpu::Buffer,
    pub(crate) part_len: usize,
    staging: wgpu::Buffer,
    staging_len: usize,
    pub(crate) rec: Recorder,
    bgl: wgpu::BindGroupLayout,
    pl: wgpu::PipelineLayout,
    modules: HashMap<Kernel, wgpu::ShaderModule>,
    pipes: HashMap<(Kernel, &'static str), wgpu::ComputePipeline>,
    groups: HashMap<GroupKey, wgpu::BindGroup>,
    placeholder: wgpu::Buffer,
    /// The activation row whose int8 form (`q8`, for `vec_k8`) is in `part` now, if any.
    /// Every dispatch other than a matmul, and every host write, forgets it.
    pub(crate) qx: Option<Buf>,
    /// Per-dispatch GPU timestamps, while a profile runs.
    pub(crate) timing: Option<crate::timing::Timing>,
}

impl GpuBackend {
    /// A backend for one model: the arena of `layout`, a KV cache of `kv`, and attention
    /// scratch for `n_head` query heads of width `head_dim_v` at context `ctx`.
    pub fn new(
        ctx: GpuContext,
        layout: &Layout,
        kv: KvShape,
        n_head: usize,
        head_dim_v: usize,
    ) -> Result<Self, GpuError> {
        let l = layout;
        let regions = [
            l.x, l.xn, l.q, l.k, l.v, l.att, l.ogate, l.proj, l.gate, l.up, l.scores, l.logits,
        ];
        let max_cap = kv.caps.iter().copied().max().unwrap_or(1);
        // Enough split-K partials for splits of 32 keys over the longest layer.
        let part = n_head
            .checked_mul(head_dim_v + 2)
            .and_then(|x| x.checked_mul(max_cap.div_ceil(32)))
            .ok_or(GpuError::TooLarge)?
            .max(l.limits.logit_rows)
            // One activation row in int8 form for `vec_k8`: 48 bytes per 32 values.
            .max(
                [l.xn, l.att, l.gate, l.up]
                    .iter()
                    .map(|b| b.len / l.limits.chunk.max(1) / 32 * 12)
                    .max()
                    .unwrap_or(0),
            );
        Self::with_arena(ctx, &regions, l.arena_len, kv, part)
    }

    /// A backend over an arena of `arena_len` elements whose named regions are `regions`
    /// (every `Buf` later passed must lie inside one region group), with a KV cache of `kv` and
    /// `part_len` floats of attention scratch.
    pub fn with_arena(
        ctx: GpuContext,
        regions: &[Buf],
        arena_len: usize,
        kv: KvShape,
        part_len: usize,
    ) -> Result<Self, GpuError> {
        let max_elems = (ctx.max_binding() / 4) as usize;
        let segs = arena::split(regions, arena_len, max_elems)?;
        let storage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST;
        let mk = |label: &str, bytes: u64| {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.max(16).div_ceil(16) * 16,
                usage: storage,
                mapped_at_creation: false,
            })
        };
        let arena: Vec<_> = segs
            .iter()
            .map(|&(s, e)| mk("arena", ((e - s) * 4) as u64))
            .collect();
        if kv.slots == 0 {
            return Err(GpuError::BadShape);
        }
        let mut kvb = Vec::with_capacity(kv.caps.len() * kv.slots);
        for _ in 0..kv.slots {
            for il in 0..kv.caps.len() {
                let b = kv.layer_bytes(il)?;
                if b > ctx.max_binding() {
                    return Err(GpuError::TooLarge);
                }
                kvb.push(mk("kv", b));
            }
        }
        let part_bytes = (part_len as u64).checked_mul(4).ok_or(GpuError::TooLarge)?;
        if part_bytes > ctx.max_binding() {
            return Err(GpuError::TooLarge);
        }
        let part = mk("part", part_bytes);
        let staging_len = regions
            .iter()
            .map(|b| b.len)
            .max()
            .unwrap_or(0)
            .max(part_len)
            .max(1);
        let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("staging"),
            size: (staging_len * 4) as u64,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let placeholder = mk("placeholder", 256);
        let bgl = bind_group_layout(&ctx.device);
        let pl = ctx
            .device
            .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("glimmer"),
                bind_group_layouts: &[Some(&bgl)],
                immediate_size: 0,
            });
        let rec = Recorder::new(&ctx);
        Ok(GpuBackend {
            ctx,
            segs,
            arena,
            weights: WeightStore::default(),
            kv_shape: kv,
            kv: kvb,
            slot: 0,
            part,
            part_len,
            staging,
            staging_len,
            rec,
            bgl,
            pl,
            modules: HashMap::new(),
            pipes: HashMap::new(),
            groups: HashMap::new(),
            placeholder,
            timing: None,
            qx: None,
        })
    }

    /// Makes `slot` the session slot whose KV cache the following ops read and write (slot 0
    /// at first). Positions are the caller's: a slot's sequence continues where the caller
    /// says, and starting a new sequence in a slot needs nothing but position 0.
    pub fn set_slot(&mut self, slot: usize) -> Result<(), GpuError> {
        if slot >= self.kv_shape.slots {
            return Err(GpuError::KvRange);
        }
        self.slot = slot;
        Ok(())
    }

    /// Session slots of the KV cache.
    pub fn slots(&self) -> usize {
        self.kv_shape.slots
    }

    /// The KV buffer index of `layer` in the current slot.
    pub(crate) fn kv_index(&self, layer: usize) -> Result<usize, GpuError> {
        if layer >= self.kv_shape.caps.len() {
            return Err(GpuError::KvRange);
        }
        Ok(self.slot * self.kv_shape.caps.len() + layer)
    }

    /// The device this backend runs on.
    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// Copies tensors to the GPU (once each; tensors already there are skipped). Every tensor a
    /// later op names must have been uploaded.
    ///
    /// A tensor is known by the address and length of its bytes (normally a view of the mapped
    /// model file): they must stay valid, unchanged and not reused for another tensor while
    /// this backend runs.
    pub fn upload(&mut self, tensors: &[&Tensor<'_>]) -> Result<(), GpuError> {
        self.weights.upload(&self.ctx, tensors)
    }

    /// Uploads every tensor of a model.
    pub fn upload_model(&mut self, w: &Weights<'_>) -> Result<(), GpuError> {
        let ts = weights::model_tensors(w);
        self.weights.upload(&self.ctx, &ts)
    }

    /// Bytes of weights on the GPU.
    pub fn weight_bytes(&self) -> u64 {
        self.weights.pools.iter().map(|b| b.size()).sum()
    }

    /// Writes host values into an arena region (after everything recorded so far).
    pub fn write(&mut self, dst: Buf, src: &[f32]) -> Result<(), GpuError> {
        if src.len() != dst.len {
            return Err(GpuError::BadRegion);
        }
        let (seg, off) = arena::locate(&self.segs, dst)?;
        self.qx = None;
        self.rec.flush(&self.ctx);
        self.ctx
            .queue
            .write_buffer(&self.arena[seg], off as u64 * 4, bytemuck::cast_slice(src));
        Ok(())
    }

    /// Submits everything recorded and waits until the GPU has run it (for timing one op at a
    /// time, as `glimmer_boards::profile::Profiled::with_fence` does).
    pub fn finish(&mut self) -> Result<(), GpuError> {
        self.rec.flush(&self.ctx);
        self.ctx
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|_| GpuError::Readback)?;
        Ok(())
    }

    /// Submits everything recorded and copies `dst.len()` bytes (whole words) from `src` at
    /// byte `at` back.
    pub(crate) fn readback(&mut self, src: Src, at: u64, dst: &mut [u8]) -> Result<(), GpuError> {
        if dst.len() > self.staging_len * 4 || !dst.len().is_multiple_of(4) {
            return Err(GpuError::BadRegion);
        }
        let bytes = dst.len() as u64;
        if bytes > 0 {
            let buf = match src {
                Src::Arena(i) => &self.arena[i],
                Src::Part => &self.part,
            };
            let enc = self.rec.encoder(&self.ctx);
            enc.copy_buffer_to_buffer(buf, at, &self.staging, 0, bytes);
        }
        self.rec.flush(&self.ctx);
        if bytes == 0 {
            return Ok(());
        }
        read_mapped(&self.ctx, &self.staging, dst)
    }

    /// Records one dispatch of `n` workgroups (spread over x and y) times `z`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run(
        &mut self,
        kernel: Kernel,
        entry: &'static str,
        segs: [usize; 3],
        pool: Option<usize>,
        kv_layer: usize,
        params: &[u32],
        n: u32,
        z: u32,
    ) -> Result<(), GpuError> {
        if n == 0 || z == 0 {
            return Ok(());
        }
        if !matches!(kernel, Kernel::Matmul(_) | Kernel::QuantX) {
            self.qx = None;
        }
        let pool = pool.unwrap_or(usize::MAX);
        self.pipeline(kernel, entry)?;
        let key = (segs, pool, kv_layer);
        if !self.groups.contains_key(&key) {
            let g = self.bind_group(key)?;
            self.groups.insert(key, g);
        }
        let offset = self.rec.params(params);
        let maxd = self.ctx.limits.max_compute_workgroups_per_dimension.max(1);
        let (x, y) = if n <= maxd {
            (n, 1)
        } else {
            (maxd, n.div_ceil(maxd))
        };
        let pipe = &self.pipes[&(kernel, entry)];
        let group = &self.groups[&key];
        // A timed dispatch gets a compute pass of its own, bracketed by its timestamps; the
        // others share the step's one pass (fewer pass boundaries between kernels).
        match self.timing.as_mut().and_then(|t| t.next(kernel, entry)) {
            Some(tw) => {
                let enc = self.rec.encoder(&self.ctx);
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: None,
                    timestamp_writes: Some(tw),
                });
                pass.set_pipeline(pipe);
                pass.set_bind_group(0, group, &[offset]);
                pass.dispatch_workgroups(x, y, z);
            }
            None => {
                let pass = self.rec.pass(&self.ctx);
                pass.set_pipeline(pipe);
                pass.set_bind_group(0, group, &[offset]);
                pass.dispatch_workgroups(x, y, z);
            }
        }
        Ok(())
    }

    fn pipeline(&mut self, kernel: Kernel, entry: &'static str) -> Result<(), GpuError> {
        if self.pipes.contains_key(&(kernel, entry)) {
            return Ok(());
        }
        if !self.modules.contains_key(&kernel) {
            let src = shaders::source(kernel, self.ctx.subgroups)?;
            let m = self
                .ctx
                .device
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some("glimmer"),
                    source: wgpu::ShaderSource::Wgsl(src.into()),
                });
            self.modules.insert(kernel, m);
        }
        let p = self
            .ctx
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&self.pl),
                module: &self.modules[&kernel],
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            });
        self.pipes.insert((kernel, entry), p);
        Ok(())
    }

    fn bind_group(&self, (segs, pool, kv): GroupKey) -> Result<wgpu::BindGroup, GpuError> {
        let a = |i: usize| self.arena.get(segs[i]).ok_or(GpuError::BadRegion);
        let wq = if pool == usize::MAX {
            &self.placeholder
        } else {
            self.weights.pools.get(pool).ok_or(GpuError::NotUploaded)?
        };
        let kvb = self.kv.get(kv).unwrap_or(&self.placeholder);
        let bufs = [&self.rec.host_buf, a(0)?, a(1)?, a(2)?, wq, kvb, &self.part];
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &self.rec.params_buf,
                offset: 0,
                size: NonZeroU64::new(SLOT),
            }),
        }];
        for ((binding, _), b) in STORAGE.iter().zip(bufs) {
            entries.push(wgpu::BindGroupEntry {
                binding: *binding,
                resource: b.as_entire_binding(),
            });
        }
        Ok(self
            .ctx
            .device
            .create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &self.bgl,
                entries: &entries,
            }))
    }
}

/// A buffer results are read back from.
#[derive(Clone, Copy)]
pub(crate) enum Src {
    /// Arena buffer `i`.
    Arena(usize),
    /// The attention scratch (argmax results).
    Part,
}

fn bind_group_layout(device: &wgpu::Device) -> wgpu::BindGroupLayout {
    let mut entries = vec![wgpu::BindGroupLayoutEntry {
        binding: 0,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: true,
            min_binding_size: NonZeroU64::new(SLOT),
        },
        count: None,
    }];
    for (binding, read_only) in STORAGE {
        entries.push(wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        });
    }
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("glimmer"),
        entries: &entries,
    })
}

/// Maps the first `dst.len()` bytes of `buf` (a `MAP_READ` buffer the queue has been told to
/// fill), waits for the device, copies them into `dst` and unmaps.
pub(crate) fn read_mapped(
    ctx: &GpuContext,
    buf: &wgpu::Buffer,
    dst: &mut [u8],
) -> Result<(), GpuError> {
    let slice = buf.slice(..dst.len() as u64);
    let flag = Arc::new(AtomicU8::new(0));
    let f = Arc::clone(&flag);
    slice.map_async(wgpu::MapMode::Read, move |r| {
        f.store(if r.is_ok() { 1 } else { 2 }, Ordering::SeqCst);
    });
    ctx.device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|_| GpuError::Readback)?;
    if flag.load(Ordering::SeqCst) != 1 {
        return Err(GpuError::Readback);
    }
    {
        let view = slice.get_mapped_range().map_err(|_| GpuError::Readback)?;
        dst.copy_from_slice(&view[..]);
    }
    buf.unmap();
    Ok(())
}

//! [`GpuEngine`]: one model on the wgpu backend (Metal on Apple Silicon, Vulkan elsewhere),
//! serving several sequences the way the CPU [`Engine`](crate::engine::Engine) does.
//!
//! The weights are uploaded once, when the engine is built; every slot gets a KV cache of the
//! whole context on the device (f16, sliding-window layers as rings of their window), so a
//! slot never waits for pages. Prefix sharing between slots is CPU-only for now: on the GPU a
//! session that repeats another's prompt prefills it again.

use glimmer_apple::{GpuBackend, GpuContext, GpuKvType, GpuOptions, KvShape};
use glimmer_core::exec::{Layout, Limits, LogitRows, Model};
use glimmer_core::kv::KvGeometry;
use glimmer_core::plan::KvType;

use crate::engine::{Feed, Loaded, SlotEngine};
use crate::Error;

/// One loaded model on the GPU, with `slots` independent sequences.
///
/// All device memory (arena, KV caches, weights) is allocated in [`GpuEngine::new`];
/// [`SlotEngine::forward_slot`] records and submits work but allocates nothing on the device.
pub struct GpuEngine<'m, 'f> {
    loaded: &'m Loaded<'f>,
    layout: Layout,
    backend: GpuBackend,
    pos: Vec<usize>,
    fed: u64,
    device: String,
}

impl<'m, 'f> GpuEngine<'m, 'f> {
    /// Opens the GPU, sizes the arena for `limits` and a KV cache per slot, and uploads the
    /// weights. Fails with [`Error::Gpu`] when no adapter exists
    /// ([`glimmer_apple::GpuError::NoAdapter`]) or the model has a tensor type the shaders
    /// lack.
    pub fn new(
        loaded: &'m Loaded<'f>,
        limits: Limits,
        slots: usize,
        opts: GpuOptions,
    ) -> Result<Self, Error> {
        if slots == 0 {
            return Err(Error::NoSuchSlot(0));
        }
        let s = &loaded.spec;
        let layout = Layout::new(s, limits).map_err(Error::Layout)?;
        let geo = KvGeometry::new(s, limits.ctx, limits.chunk, KvType::F16)?;
        let shape = KvShape::from_geometry(&geo, GpuKvType::F16).with_slots(slots);
        let ctx = GpuContext::new(opts).map_err(Error::Gpu)?;
        let device = ctx.describe();
        let mut backend =
            GpuBackend::new(ctx, &layout, shape, s.n_head, s.head_dim_v).map_err(Error::Gpu)?;
        backend.upload_model(&loaded.weights).map_err(Error::Gpu)?;
        Ok(GpuEngine {
            loaded,
            layout,
            backend,
            pos: vec![0; slots],
            fed: 0,
            device,
        })
    }

    /// Weight bytes on the device.
    pub fn weight_bytes(&self) -> u64 {
        self.backend.weight_bytes()
    }
}

impl<'f> SlotEngine<'f> for GpuEngine<'_, 'f> {
    fn loaded(&self) -> &Loaded<'f> {
        self.loaded
    }

    fn describe(&self) -> String {
        format!("wgpu on {}", self.device)
    }

    fn slots(&self) -> usize {
        self.pos.len()
    }

    fn slot_pos(&self, slot: usize) -> usize {
        self.pos.get(slot).copied().unwrap_or(0)
    }

    fn ctx(&self) -> usize {
        self.layout.limits.ctx
    }

    fn tokens_fed(&self) -> u64 {
        self.fed
    }

    fn reset_slot(&mut self, slot: usize) {
        // Attention reads only positions below the slot's length, so the old entries need no
        // clearing: they are overwritten as the new sequence reaches them.
        if let Some(p) = self.pos.get_mut(slot) {
            *p = 0;
        }
    }

    fn forward_slot(
        &mut self,
        slot: usize,
        tokens: &[u32],
        rows: LogitRows,
        logits: &mut [f32],
    ) -> Result<(), Error> {
        if slot >= self.pos.len() {
            return Err(Error::NoSuchSlot(slot));
        }
        let end = self.pos[slot].saturating_add(tokens.len());
        if end > self.layout.limits.ctx {
            return Err(Error::PromptTooLong {
                prompt: end,
                ctx: self.layout.limits.ctx,
            });
        }
        self.backend.set_slot(slot).map_err(Error::Gpu)?;
        let model = Model {
            spec: &self.loaded.spec,
            weights: &self.loaded.weights,
            layout: &self.layout,
        };
        Feed {
            model: &model,
            chunk_rows: Feed::chunk_rows(&self.layout, rows),
            tokens,
            rows,
            pos: &mut self.pos[slot],
            fed: &mut self.fed,
        }
        .run(&mut self.backend, logits, Error::GpuForward)
    }
}

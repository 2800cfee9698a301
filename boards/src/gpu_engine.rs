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

use crate::engine::{Feed, Loaded, SlotEngine, Slots};
use crate::Error;

/// One loaded model on the GPU, with `slots` independent sequences.
///
/// All device memory (arena, KV caches, weights) is allocated in [`GpuEngine::new`];
/// [`SlotEngine::forward_slot`] records and submits work but allocates nothing on the device.
pub struct GpuEngine<'m, 'f> {
    loaded: &'m Loaded<'f>,
    layout: Layout,
    backend: GpuBackend,
    slots: Slots,
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
        let state = Slots::new(slots, limits.ctx)?;
        let s = &loaded.spec;
        let layout = Layout::new(s, limits).map_err(Error::Layout)?;
        let geo = KvGeometry::new(s, limits.ctx, limits.chunk, KvType::F16)?;
        let shape = KvShape::from_geometry(&geo, GpuKvType::F16).with_slots(slots);
        let ctx = GpuContext::new(opts).map_err(Error::Gpu)?;
        let device = ctx.describe();
        let mut backend =
            GpuBackend::new(ctx, &layout, shape, s.n_head, s.head_dim_v).map_err(Error::Gpu)?;
        log::info!("uploading the weights to {device}");
        let t = std::time::Instant::now();
        backend.upload_model(&loaded.weights).map_err(Error::Gpu)?;
        log::info!(
            "{:.2} GB of weights on {device} in {:.1} s",
            backend.weight_bytes() as f64 / 1e9,
            t.elapsed().as_secs_f64()
        );
        Ok(GpuEngine {
            loaded,
            layout,
            backend,
            slots: state,
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

    fn slot_state(&self) -> &Slots {
        &self.slots
    }

    fn reset_slot(&mut self, slot: usize) {
        self.slots.reset(slot);
    }

    fn forward_slot(
        &mut self,
        slot: usize,
        tokens: &[u32],
        rows: LogitRows,
        logits: &mut [f32],
    ) -> Result<(), Error> {
        let (pos, fed) = self.slots.admit(slot, tokens.len())?;
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
            pos,
            fed,
        }
        .run(&mut self.backend, logits, Error::GpuForward)
    }
}

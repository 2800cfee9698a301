//! [`CudaEngine`]: one model on the CUDA backend (Jetson, NVIDIA GPUs), serving several
//! sequences the way the CPU [`Engine`](crate::engine::Engine) does.
//!
//! Prefill chunks run eagerly (every kernel launched); a one-token decode step replays the
//! CUDA graph captured at the first such step. The graph reads its token, position and KV
//! slot from device memory, so one graph serves every session. All device memory (arena, a KV
//! cache of the whole context per slot, weights) is allocated when the engine is built.

use std::sync::Arc;

use glimmer_core::exec::{Layout, Limits, LogitRows};
use glimmer_core::kv::KvGeometry;
use glimmer_core::plan::KvType;
use glimmer_jetson::{Capacity, CudaBackend, CudaModel, Gpu, KvLayout};

use crate::engine::{Feed, Loaded, SlotEngine, Slots};
use crate::Error;

/// One loaded model on a CUDA device, with `slots` independent sequences.
pub struct CudaEngine<'m, 'f> {
    loaded: &'m Loaded<'f>,
    model: CudaModel<'m, 'f>,
    layout: &'m Layout,
    slots: Slots,
    graph: bool,
    device: String,
}

impl<'m, 'f> CudaEngine<'m, 'f> {
    /// Opens device `ordinal`, sizes a KV cache of `layout.limits.ctx` tokens per slot, and
    /// uploads the weights (kernels compile through NVRTC, cached on disk). `layout` must have
    /// been made for `loaded`'s model. With `graph`, decode steps replay a CUDA graph.
    /// Fails with [`Error::Cuda`] when no driver or device exists.
    pub fn new(
        loaded: &'m Loaded<'f>,
        layout: &'m Layout,
        slots: usize,
        ordinal: usize,
        graph: bool,
    ) -> Result<Self, Error> {
        let state = Slots::new(slots, layout.limits.ctx)?;
        let s = &loaded.spec;
        let l: Limits = layout.limits;
        let geo = KvGeometry::new(s, l.ctx, l.chunk, KvType::F16)?;
        let kv = KvLayout::new(&geo, slots).map_err(Error::Cuda)?;
        let gpu: Arc<Gpu> = Gpu::open(ordinal).map_err(Error::Cuda)?;
        let (major, minor) = gpu.compute_capability();
        let device = format!("{} (sm_{major}{minor})", gpu.name());
        log::info!(
            "compiling the kernels (NVRTC, cached on disk) and uploading the weights to {device}"
        );
        let t = std::time::Instant::now();
        let mut be =
            CudaBackend::new(gpu, Capacity::for_model(s, layout), kv).map_err(Error::Cuda)?;
        be.upload_model(&loaded.weights).map_err(Error::Cuda)?;
        log::info!(
            "{:.2} GB on {device} in {:.1} s",
            be.device_bytes() as f64 / 1e9,
            t.elapsed().as_secs_f64()
        );
        Ok(CudaEngine {
            loaded,
            model: CudaModel::new(s, &loaded.weights, layout, be),
            layout,
            slots: state,
            graph,
            device,
        })
    }

    /// Device bytes in use (arena, KV caches, weights).
    pub fn device_bytes(&mut self) -> u64 {
        self.model.backend().device_bytes()
    }
}

impl<'f> SlotEngine<'f> for CudaEngine<'_, 'f> {
    fn loaded(&self) -> &Loaded<'f> {
        self.loaded
    }

    fn describe(&self) -> String {
        let g = if self.graph { "graph decode" } else { "eager" };
        format!("cuda on {}, {g}", self.device)
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
        let n_vocab = self.loaded.spec.n_vocab;
        if let ([token], LogitRows::Last) = (tokens, rows) {
            // A decode step: the graph (or the same kernels launched one by one). The session
            // samples on the host from the logits (penalties, top-k / top-p, the tool-call
            // grammar), so no token is picked on the device.
            let at = u32::try_from(*pos).map_err(|_| Error::TooLarge("position"))?;
            self.model
                .decode_step_pick(slot, *token, at, self.graph, None)
                .map_err(Error::CudaForward)?;
            let dst = logits
                .get_mut(..n_vocab)
                .ok_or(Error::TooLarge("logits buffer"))?;
            self.model.read_logits(dst).map_err(Error::Cuda)?;
            *pos += 1;
            *fed += 1;
            return Ok(());
        }
        let (model, backend) = self.model.parts();
        backend.select_slot(slot).map_err(Error::Cuda)?;
        Feed {
            model,
            chunk_rows: Feed::chunk_rows(self.layout, rows),
            tokens,
            rows,
            pos,
            fed,
        }
        .run(backend, logits, Error::CudaForward)
    }
}

//! [`CudaModel`]: a model bound to a [`CudaBackend`], with a decode step that is captured once
//! into a CUDA graph and replayed.

use cudarc::driver::CudaGraph;
use glimmer_core::exec::{Backend, ForwardError, Layout, LogitRows, Model};
use glimmer_core::model::{ModelSpec, Weights};

use crate::backend::CudaBackend;
use crate::sample::Pick;
use crate::CudaError;

/// A forward-call failure on the CUDA backend.
pub type CudaForwardError = ForwardError<CudaError>;

/// One model on the device: the backend, and the captured decode-step graphs.
///
/// A graph holds the kernels of one forward call of one token with `LogitRows::Last`. Its
/// token, position and KV slot are read from device memory, so it is captured once (at the
/// first graph step it serves) and replayed for every later token, position and session of
/// its class: [`CudaBackend::graph_class`] parts the steps whose attention rows the
/// thread-block clusters take from longer ones, which launch attn_split, so there are at
/// most two graphs.
pub struct CudaModel<'m, 'w> {
    model: Model<'m, 'w>,
    backend: CudaBackend,
    graphs: [Option<CudaGraph>; 2],
}

impl<'m, 'w> CudaModel<'m, 'w> {
    /// Binds `backend` (with the weights already uploaded) to a model.
    pub fn new(
        spec: &'m ModelSpec,
        weights: &'m Weights<'w>,
        layout: &'m Layout,
        backend: CudaBackend,
    ) -> Self {
        CudaModel {
            model: Model {
                spec,
                weights,
                layout,
            },
            backend,
            graphs: [None, None],
        }
    }

    /// The backend.
    pub fn backend(&mut self) -> &mut CudaBackend {
        &mut self.backend
    }

    /// The model and the backend at once (for driving the forward pass through a wrapper,
    /// such as a per-op profiler).
    pub fn parts(&mut self) -> (&Model<'m, 'w>, &mut CudaBackend) {
        (&self.model, &mut self.backend)
    }

    /// Drops the captured decode graphs (the next graph step captures a new one, with the
    /// launch settings then in force).
    pub fn drop_graph(&mut self) {
        self.graphs = [None, None];
    }

    /// How many decode graphs have been captured (0, 1 or 2).
    pub fn graphs(&self) -> usize {
        self.graphs.iter().flatten().count()
    }

    /// Runs `tokens` at positions `pos0..` of `slot` eagerly (in chunks of the layout's
    /// size), leaving the requested logits in the layout's `logits` region; returns the rows
    /// of logits of the last chunk. With `LogitRows::All` every chunk must fit the layout's
    /// logit rows, and only the last chunk's logits remain.
    pub fn forward(
        &mut self,
        slot: usize,
        tokens: &[u32],
        pos0: u32,
        rows: LogitRows,
    ) -> Result<usize, CudaForwardError> {
        self.backend.select_slot(slot)?;
        let chunk = self.model.layout.limits.chunk;
        let n_chunks = tokens.len().div_ceil(chunk);
        let mut got = 0;
        for (i, part) in tokens.chunks(chunk).enumerate() {
            let want = if i + 1 == n_chunks {
                rows
            } else {
                LogitRows::None
            };
            let pos = pos0 + (i * chunk) as u32;
            got = self.model.forward(&mut self.backend, part, pos, want)?;
        }
        Ok(got)
    }

    /// One decode step: `token` at `pos` of `slot`, logits of that token left in the layout's
    /// `logits` region; returns their argmax. With `graph` the step replays the captured
    /// graph of its class (capturing it first if needed), otherwise it launches every kernel.
    pub fn decode_step(
        &mut self,
        slot: usize,
        token: u32,
        pos: u32,
        graph: bool,
    ) -> Result<u32, CudaForwardError> {
        let logits = self.step(slot, token, pos, graph)?;
        Ok(self.backend.argmax(logits)?)
    }

    /// [`Self::decode_step`] with the token picked as `pick` says on the device (greedy, or a
    /// Gumbel-max draw: [`crate::sample`]), or none picked (`None`: the caller reads the
    /// logits, [`Self::read_logits`], and samples on the host). The pick runs after the
    /// graph, so one graph serves every way of picking.
    pub fn decode_step_pick(
        &mut self,
        slot: usize,
        token: u32,
        pos: u32,
        graph: bool,
        pick: Option<Pick>,
    ) -> Result<Option<u32>, CudaForwardError> {
        let logits = self.step(slot, token, pos, graph)?;
        Ok(match pick {
            None => None,
            Some(Pick::Greedy) => Some(self.backend.argmax(logits)?),
            Some(Pick::Sample {
                temperature,
                seed,
                counter,
            }) => Some(self.backend.sample(logits, temperature, seed, counter)?),
        })
    }

    /// The decode step itself (launched, not waited for): returns the region of its logits.
    fn step(
        &mut self,
        slot: usize,
        token: u32,
        pos: u32,
        graph: bool,
    ) -> Result<glimmer_core::exec::Buf, CudaForwardError> {
        self.backend.select_slot(slot)?;
        self.backend.set_inputs(&[token], &[pos])?;
        if !graph {
            self.model
                .forward(&mut self.backend, &[token], pos, LogitRows::Last)?;
        } else {
            let (class, keys) = self.backend.graph_class(pos);
            if self.graphs[class].is_none() {
                self.graphs[class] = Some(self.capture(token, pos, keys)?);
            }
            let g = self.graphs[class].as_ref().ok_or(CudaError::Graph)?;
            self.backend.qx = None;
            g.launch().map_err(CudaError::from)?;
        }
        Ok(self.model.layout.logits.prefix(self.model.spec.n_vocab))
    }

    /// Captures one decode step (the inputs are already on the device) for steps whose rows
    /// see at most `keys` keys.
    fn capture(&mut self, token: u32, pos: u32, keys: u32) -> Result<CudaGraph, CudaForwardError> {
        let gpu = self.backend.gpu().clone();
        gpu.begin_capture()?;
        self.backend.capturing = true;
        self.backend.graph_keys = Some(keys);
        self.backend.qx = None;
        let r = self
            .model
            .forward(&mut self.backend, &[token], pos, LogitRows::Last)
            .and_then(|n| Ok(self.backend.flush_pending().map(|()| n)?));
        self.backend.capturing = false;
        self.backend.graph_keys = None;
        self.backend.qx = None;
        // End the capture whatever happened, so the stream is usable again.
        let g = gpu.end_capture();
        r?;
        Ok(g?)
    }

    /// Copies `n` values of the logits region to `dst`.
    pub fn read_logits(&mut self, dst: &mut [f32]) -> Result<(), CudaError> {
        let b = self.model.layout.logits.prefix(dst.len());
        self.backend.read(b, dst)
    }
}

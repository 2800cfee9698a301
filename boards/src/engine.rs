//! [`Engine`]: one model bound to the CPU backend, with its arena, scratch and KV cache.

use glimmer_core::cpu::{CpuBackend, KvCache, KvShape};
use glimmer_core::exec::{Backend, ForwardError, Layout, Limits, LogitRows, Model, Parallel};
use glimmer_core::model::{LayerKind, ModelSpec, Weights};
use glimmer_core::quant::Kernels;

use crate::pool::Pool;

use crate::model_file::ModelFile;
use crate::tokenizer::gguf::vocab_from_gguf;
use crate::tokenizer::Tokenizer;
use crate::Error;

/// The hybrid cache's shape: sliding layers keep `window + chunk` slots (every position a chunk
/// of new tokens can still see), global layers the whole context.
pub fn kv_shape(s: &ModelSpec, limits: &Limits) -> KvShape {
    let mut sliding = 0u64;
    let mut window = 0usize;
    for il in 0..s.n_layer.min(64) {
        if let LayerKind::Sliding { window: w } = s.layer_kind(il) {
            sliding |= 1 << il;
            window = window.max(w as usize);
        }
    }
    KvShape {
        n_layer: s.n_layer,
        ctx: limits.ctx,
        ring: (window + limits.chunk).min(limits.ctx).max(1),
        sliding,
        k_dim: s.k_dim(),
        v_dim: s.v_dim(),
    }
}

/// A model loaded from a mapped file: spec, weights and tokenizer.
pub struct Loaded<'f> {
    /// Hyperparameters.
    pub spec: ModelSpec,
    /// Zero-copy weight views into the file.
    pub weights: Weights<'f>,
    /// Tokenizer built from the file's vocabulary.
    pub tokenizer: Tokenizer,
}

impl<'f> Loaded<'f> {
    /// Reads spec, weights and vocabulary from `file`.
    pub fn new(file: &'f ModelFile) -> Result<Self, Error> {
        let g = file.gguf()?;
        let spec = ModelSpec::from_gguf(&g).map_err(Error::Model)?;
        let weights = Weights::bind(&g, &spec).map_err(Error::Model)?;
        let vocab = vocab_from_gguf(&g)?;
        let tokenizer = Tokenizer::from_vocab(vocab)?;
        if tokenizer.vocab_size() != spec.n_vocab {
            return Err(Error::VocabMismatch {
                tokenizer: tokenizer.vocab_size(),
                model: spec.n_vocab,
            });
        }
        Ok(Loaded {
            spec,
            weights,
            tokenizer,
        })
    }
}

/// One sequence's state on the CPU backend: arena, scratch, KV cache and position.
///
/// All memory is allocated here, once; [`Engine::forward`] allocates nothing.
pub struct Engine<'m, 'f> {
    loaded: &'m Loaded<'f>,
    layout: Layout,
    arena: Vec<f32>,
    scratch: Vec<u8>,
    kv: Vec<u16>,
    pos: usize,
    kernels: Kernels,
    pool: Pool,
}

impl<'m, 'f> Engine<'m, 'f> {
    /// Sizes every buffer for `limits`, with one worker thread per available core.
    pub fn new(loaded: &'m Loaded<'f>, limits: Limits) -> Result<Self, Error> {
        Self::with_threads(loaded, limits, Pool::default_threads())
    }

    /// As [`Engine::new`], with `threads` worker threads in all (at least 1, the calling
    /// thread included). The layout gets a softmax row per thread (`limits.threads` is raised
    /// to `threads` if lower).
    pub fn with_threads(
        loaded: &'m Loaded<'f>,
        limits: Limits,
        threads: usize,
    ) -> Result<Self, Error> {
        let s = &loaded.spec;
        let threads = threads.max(1);
        let limits = Limits {
            threads: limits.threads.max(threads),
            ..limits
        };
        let layout = Layout::new(s, limits).map_err(Error::Layout)?;
        let pool =
            Pool::new(threads).map_err(|e| Error::Io("spawning worker threads".into(), e))?;
        let kv_len = kv_shape(s, &limits)
            .elements()
            .ok_or(Error::TooLarge("KV cache"))?;
        Ok(Engine {
            loaded,
            layout,
            arena: vec![0.0; layout.arena_len],
            scratch: vec![0; layout.quant_scratch_bytes],
            kv: vec![0; kv_len],
            pos: 0,
            kernels: Kernels::select(crate::cpu_features::detect()),
            pool,
        })
    }

    /// The loaded model.
    pub fn loaded(&self) -> &'m Loaded<'f> {
        self.loaded
    }

    /// Tokens already in the KV cache.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Context length.
    pub fn ctx(&self) -> usize {
        self.layout.limits.ctx
    }

    /// Uses `kernels` (for example [`Kernels::scalar`], the reference) instead of the fastest
    /// ones the CPU supports, which [`Engine::new`] picks.
    pub fn set_kernels(&mut self, kernels: Kernels) {
        self.kernels = kernels;
    }

    /// Worker threads in use (the calling thread included).
    pub fn threads(&self) -> usize {
        self.pool.threads()
    }

    /// The thread pool the backend runs on.
    pub fn parallel(&self) -> &dyn Parallel {
        &self.pool
    }

    /// The dot-product kernels in use.
    pub fn kernels(&self) -> &Kernels {
        &self.kernels
    }

    /// Forgets the sequence (the cache is overwritten as positions are reused).
    pub fn reset(&mut self) {
        self.pos = 0;
    }

    /// Feeds `tokens` in chunks and writes the logits of the requested rows to `logits`
    /// (`n_vocab` values per row: one row for `Last`, `tokens.len()` rows for `All`).
    pub fn forward(
        &mut self,
        tokens: &[u32],
        rows: LogitRows,
        logits: &mut [f32],
    ) -> Result<(), Error> {
        let s = &self.loaded.spec;
        let chunk = self.layout.limits.chunk;
        let lr = self.layout.limits.logit_rows;
        let step = if rows == LogitRows::All {
            chunk.min(lr)
        } else {
            chunk
        };
        let n_chunks = tokens.len().div_ceil(step);
        let kv_len = self.kv.len();
        let kv = KvCache::new(&mut self.kv[..kv_len], kv_shape(s, &self.layout.limits))
            .ok_or(Error::TooLarge("KV cache"))?;
        let mut backend = CpuBackend::new(
            &mut self.arena,
            &mut self.scratch,
            self.layout.scores,
            kv,
            self.kernels,
            &self.pool,
        );
        let model = Model {
            spec: s,
            weights: &self.loaded.weights,
            layout: &self.layout,
        };
        let mut written = 0usize;
        for (ci, part) in tokens.chunks(step).enumerate() {
            let want = match rows {
                LogitRows::All => LogitRows::All,
                LogitRows::Last if ci + 1 == n_chunks => LogitRows::Last,
                _ => LogitRows::None,
            };
            let pos = u32::try_from(self.pos).map_err(|_| Error::TooLarge("position"))?;
            let got = model
                .forward(&mut backend, part, pos, want)
                .map_err(Error::Forward)?;
            self.pos += part.len();
            if got > 0 {
                let n = got * s.n_vocab;
                let dst = logits
                    .get_mut(written..written + n)
                    .ok_or(Error::TooLarge("logits buffer"))?;
                backend
                    .read(self.layout.logits.prefix(n), dst)
                    .map_err(|e| Error::Forward(ForwardError::Backend(e)))?;
                written += n;
            }
        }
        Ok(())
    }
}

//! [`Engine`]: one model bound to the CPU backend, with its arena, scratch and KV cache.

use glimmer_core::cpu::{CpuBackend, KvCache, KvShape};
use glimmer_core::exec::{Backend, ForwardError, Layout, Limits, LogitRows, Model};
use glimmer_core::model::{LayerKind, ModelSpec, Weights};
use glimmer_core::quant::Kernels;

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

/// One loaded model on the CPU backend, serving `slots` independent sequences (sessions).
///
/// Each slot has its own KV cache and position; the activation arena and scratch are shared,
/// since one forward call runs at a time. All memory is allocated in the constructor;
/// [`Engine::forward_slot`] allocates nothing.
///
/// The single-sequence methods ([`Engine::forward`], [`Engine::pos`], [`Engine::reset`]) work
/// on slot 0.
pub struct Engine<'m, 'f> {
    loaded: &'m Loaded<'f>,
    layout: Layout,
    arena: Vec<f32>,
    scratch: Vec<u8>,
    kv: Vec<Vec<u16>>,
    pos: Vec<usize>,
    kernels: Kernels,
    fed: u64,
}

impl<'m, 'f> Engine<'m, 'f> {
    /// Sizes every buffer for `limits`, with one slot.
    pub fn new(loaded: &'m Loaded<'f>, limits: Limits) -> Result<Self, Error> {
        Self::with_slots(loaded, limits, 1)
    }

    /// Sizes every buffer for `limits`, with `slots` independent sequences.
    pub fn with_slots(loaded: &'m Loaded<'f>, limits: Limits, slots: usize) -> Result<Self, Error> {
        let s = &loaded.spec;
        if slots == 0 {
            return Err(Error::NoSuchSlot(0));
        }
        let layout = Layout::new(s, limits).map_err(Error::Layout)?;
        let kv_len = kv_shape(s, &limits)
            .elements()
            .ok_or(Error::TooLarge("KV cache"))?;
        Ok(Engine {
            loaded,
            layout,
            arena: vec![0.0; layout.arena_len],
            scratch: vec![0; layout.quant_scratch_bytes],
            kv: (0..slots).map(|_| vec![0; kv_len]).collect(),
            pos: vec![0; slots],
            kernels: Kernels::select(crate::cpu_features::detect()),
            fed: 0,
        })
    }

    /// The loaded model.
    pub fn loaded(&self) -> &'m Loaded<'f> {
        self.loaded
    }

    /// Number of slots.
    pub fn slots(&self) -> usize {
        self.pos.len()
    }

    /// Tokens already in slot 0's KV cache.
    pub fn pos(&self) -> usize {
        self.pos[0]
    }

    /// Tokens already in `slot`'s KV cache (0 for a slot that does not exist).
    pub fn slot_pos(&self, slot: usize) -> usize {
        self.pos.get(slot).copied().unwrap_or(0)
    }

    /// Tokens fed through the model so far, all slots together. A caller can read it before
    /// and after a step to show which tokens were (re)computed.
    pub fn tokens_fed(&self) -> u64 {
        self.fed
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

    /// The dot-product kernels in use.
    pub fn kernels(&self) -> &Kernels {
        &self.kernels
    }

    /// Forgets slot 0's sequence.
    pub fn reset(&mut self) {
        self.reset_slot(0);
    }

    /// Forgets `slot`'s sequence (its cache is overwritten as positions are reused).
    pub fn reset_slot(&mut self, slot: usize) {
        if let Some(p) = self.pos.get_mut(slot) {
            *p = 0;
        }
    }

    /// [`Engine::forward_slot`] on slot 0.
    pub fn forward(
        &mut self,
        tokens: &[u32],
        rows: LogitRows,
        logits: &mut [f32],
    ) -> Result<(), Error> {
        self.forward_slot(0, tokens, rows, logits)
    }

    /// Feeds `tokens` to `slot` in chunks, after the tokens it already holds, and writes the
    /// logits of the requested rows to `logits` (`n_vocab` values per row: one row for `Last`,
    /// `tokens.len()` rows for `All`).
    pub fn forward_slot(
        &mut self,
        slot: usize,
        tokens: &[u32],
        rows: LogitRows,
        logits: &mut [f32],
    ) -> Result<(), Error> {
        if slot >= self.pos.len() {
            return Err(Error::NoSuchSlot(slot));
        }
        let s = &self.loaded.spec;
        let chunk = self.layout.limits.chunk;
        let lr = self.layout.limits.logit_rows;
        let step = if rows == LogitRows::All {
            chunk.min(lr)
        } else {
            chunk
        };
        let n_chunks = tokens.len().div_ceil(step);
        let kv_mem = &mut self.kv[slot];
        let kv_len = kv_mem.len();
        let kv = KvCache::new(&mut kv_mem[..kv_len], kv_shape(s, &self.layout.limits))
            .ok_or(Error::TooLarge("KV cache"))?;
        let mut backend = CpuBackend::new(
            &mut self.arena,
            &mut self.scratch,
            self.layout.scores,
            kv,
            self.kernels,
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
            let pos = u32::try_from(self.pos[slot]).map_err(|_| Error::TooLarge("position"))?;
            let got = model
                .forward(&mut backend, part, pos, want)
                .map_err(Error::Forward)?;
            self.pos[slot] += part.len();
            self.fed += part.len() as u64;
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

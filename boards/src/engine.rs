//! [`Engine`]: one model bound to the CPU backend, with its arena, scratch and KV cache, and
//! [`SlotEngine`], what the daemon needs of any engine (the CPU one here, the wgpu one in
//! `gpu_engine`, the CUDA one in `cuda_engine`), with [`build_engine`] to pick one.

use glimmer_core::cpu::CpuBackend;
use glimmer_core::exec::{Backend, ForwardError, Layout, Limits, LogitRows, Model, Parallel};
use glimmer_core::kv::{self, KvGeometry, PagePool};
use glimmer_core::model::{ModelSpec, Weights};
use glimmer_core::plan::{KvType, Plan};
use glimmer_core::quant::Kernels;

use crate::pool::Pool;
use crate::profile::{OpTimes, Profiled};

use crate::model_file::ModelFile;
use crate::tokenizer::gguf::vocab_from_gguf;
use crate::tokenizer::Tokenizer;
use crate::Error;

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

/// Which backend an engine runs on: the board profile's default, or `--backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// The CPU backend (the reference; always available).
    Cpu,
    /// The wgpu backend: Metal on Apple Silicon, Vulkan elsewhere.
    Wgpu,
    /// The CUDA backend (Jetson, NVIDIA GPUs).
    Cuda,
}

impl BackendKind {
    /// Every kind, in the order `--help` lists them.
    pub const ALL: [BackendKind; 3] = [BackendKind::Cpu, BackendKind::Wgpu, BackendKind::Cuda];

    /// The name used on the command line and in board profiles.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Wgpu => "wgpu",
            BackendKind::Cuda => "cuda",
        }
    }

    /// The kind called `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl core::str::FromStr for BackendKind {
    type Err = String;

    /// The kind called `s`, or an error that lists the known names.
    fn from_str(s: &str) -> Result<Self, String> {
        Self::from_name(s).ok_or_else(|| {
            let names: Vec<_> = Self::ALL.iter().map(|k| k.name()).collect();
            format!("unknown backend {s:?} (known: {})", names.join(", "))
        })
    }
}

impl core::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Each slot's length (tokens in its KV cache) and the tokens fed through the model in all:
/// the bookkeeping every [`SlotEngine`] keeps, whatever its backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slots {
    pos: Vec<usize>,
    fed: u64,
    ctx: usize,
}

impl Slots {
    /// `n` empty slots of `ctx` tokens each (at least one slot).
    pub fn new(n: usize, ctx: usize) -> Result<Self, Error> {
        if n == 0 {
            return Err(Error::NoSuchSlot(0));
        }
        Ok(Slots {
            pos: vec![0; n],
            fed: 0,
            ctx,
        })
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.pos.len()
    }

    /// Always `false`: there is at least one slot.
    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    /// Tokens in `slot` (0 for a slot that does not exist).
    pub fn pos(&self, slot: usize) -> usize {
        self.pos.get(slot).copied().unwrap_or(0)
    }

    /// Tokens fed through the model, all slots together.
    pub fn fed(&self) -> u64 {
        self.fed
    }

    /// Context length of each slot.
    pub fn ctx(&self) -> usize {
        self.ctx
    }

    /// Empties `slot` (nothing for a slot that does not exist).
    pub fn reset(&mut self, slot: usize) {
        if let Some(p) = self.pos.get_mut(slot) {
            *p = 0;
        }
    }

    /// Sets `slot`'s length to `n` (a shared prefix).
    fn set(&mut self, slot: usize, n: usize) {
        if let Some(p) = self.pos.get_mut(slot) {
            *p = n;
        }
    }

    /// Checks that `slot` exists and that `n` more tokens fit its context; returns its length
    /// and the fed-token count, for a feed to advance.
    pub(crate) fn admit(&mut self, slot: usize, n: usize) -> Result<(&mut usize, &mut u64), Error> {
        let ctx = self.ctx;
        let pos = self.pos.get_mut(slot).ok_or(Error::NoSuchSlot(slot))?;
        let end = pos.saturating_add(n);
        if end > ctx {
            return Err(Error::PromptTooLong { prompt: end, ctx });
        }
        Ok((pos, &mut self.fed))
    }
}

/// What the daemon needs of an engine, whatever its backend: sequences held in slots, token
/// chunks fed to a slot, logits back. [`Engine`] (CPU) implements it, and so do `GpuEngine`
/// (feature `wgpu`) and `CudaEngine` (feature `cuda`).
pub trait SlotEngine<'f> {
    /// The loaded model (tokenizer, spec, weights).
    fn loaded(&self) -> &Loaded<'f>;
    /// The backend, with the device it runs on (`cpu, 2 threads`, `wgpu on …`).
    fn describe(&self) -> String;
    /// The slots' lengths and the fed-token count.
    fn slot_state(&self) -> &Slots;
    /// Forgets `slot`'s sequence. (The GPU engines only reset its length: attention reads
    /// only positions below it, and old entries are overwritten as the new sequence reaches
    /// them. The CPU engine also returns the slot's KV pages to its pool.)
    fn reset_slot(&mut self, slot: usize);
    /// Number of slots.
    fn slots(&self) -> usize {
        self.slot_state().len()
    }
    /// Tokens already in `slot`'s KV cache (0 for a slot that does not exist).
    fn slot_pos(&self, slot: usize) -> usize {
        self.slot_state().pos(slot)
    }
    /// Context length of each slot.
    fn ctx(&self) -> usize {
        self.slot_state().ctx()
    }
    /// Tokens fed through the model so far, all slots together.
    fn tokens_fed(&self) -> u64 {
        self.slot_state().fed()
    }
    /// Feeds `tokens` to `slot` after what it holds, and writes the logits of the requested
    /// rows to `logits` (`n_vocab` values per row).
    fn forward_slot(
        &mut self,
        slot: usize,
        tokens: &[u32],
        rows: LogitRows,
        logits: &mut [f32],
    ) -> Result<(), Error>;
}

impl<'f> SlotEngine<'f> for Engine<'_, 'f> {
    fn loaded(&self) -> &Loaded<'f> {
        self.loaded
    }
    fn describe(&self) -> String {
        format!("cpu, {} threads", self.threads())
    }
    fn slot_state(&self) -> &Slots {
        &self.slots
    }
    fn reset_slot(&mut self, slot: usize) {
        Engine::reset_slot(self, slot)
    }
    fn forward_slot(
        &mut self,
        slot: usize,
        tokens: &[u32],
        rows: LogitRows,
        logits: &mut [f32],
    ) -> Result<(), Error> {
        Engine::forward_slot(self, slot, tokens, rows, logits)
    }
}

/// The engine for `kind` over `layout` (made for `loaded`'s model, with the thread count and
/// context the engine should have), with `slots` sequences; or why it cannot be had in this
/// build or on this machine. The daemon and `glimmer generate` use it.
pub fn build_engine<'m, 'f>(
    kind: BackendKind,
    loaded: &'m Loaded<'f>,
    layout: &'m Layout,
    slots: usize,
) -> Result<Box<dyn SlotEngine<'f> + 'm>, Error> {
    let limits = layout.limits;
    match kind {
        BackendKind::Cpu => Ok(Box::new(Engine::with_slots(loaded, limits, slots)?)),
        #[cfg(feature = "wgpu")]
        BackendKind::Wgpu => Ok(Box::new(crate::gpu_engine::GpuEngine::new(
            loaded,
            limits,
            slots,
            Default::default(),
        )?)),
        #[cfg(not(feature = "wgpu"))]
        BackendKind::Wgpu => Err(Error::BackendUnavailable {
            backend: "wgpu",
            why: "this build lacks the `wgpu` feature of glimmer-boards",
        }),
        #[cfg(all(feature = "cuda", not(target_os = "macos")))]
        BackendKind::Cuda => Ok(Box::new(crate::cuda_engine::CudaEngine::new(
            loaded, layout, slots, 0, true,
        )?)),
        #[cfg(not(all(feature = "cuda", not(target_os = "macos"))))]
        BackendKind::Cuda => Err(Error::BackendUnavailable {
            backend: "cuda",
            why: "this build has no CUDA engine (macOS, or no `cuda` feature of glimmer-boards)",
        }),
    }
}

/// One loaded model on the CPU backend, serving `slots` independent sequences (sessions).
///
/// Each slot has its own KV page table and position in one shared [`PagePool`]; the
/// activation arena and scratch are shared too, since one forward call runs at a time. All
/// memory is allocated (and touched, so the pages are resident) in the constructor;
/// [`Engine::forward_slot`] allocates nothing.
///
/// The single-sequence methods ([`Engine::forward`], [`Engine::pos`], [`Engine::reset`]) work
/// on slot 0.
pub struct Engine<'m, 'f> {
    loaded: &'m Loaded<'f>,
    layout: Layout,
    arena: Vec<f32>,
    scratch: Vec<u8>,
    kv: PagePool<Vec<u16>, Vec<u32>>,
    slots: Slots,
    kernels: Kernels,
    pool: Pool,
    profile: Option<OpTimes>,
}

impl<'m, 'f> Engine<'m, 'f> {
    /// Sizes every buffer for `limits`, with one slot, an f16 cache and one worker thread per
    /// available core.
    pub fn new(loaded: &'m Loaded<'f>, limits: Limits) -> Result<Self, Error> {
        Self::with_slots(loaded, limits, 1)
    }

    /// As [`Engine::new`], with `threads` worker threads in all (at least 1, the calling
    /// thread included).
    pub fn with_threads(
        loaded: &'m Loaded<'f>,
        limits: Limits,
        threads: usize,
    ) -> Result<Self, Error> {
        let limits = Limits {
            threads: threads.max(1),
            ..limits
        };
        Self::with_kv(loaded, limits, 1, KvType::F16)
    }

    /// Sizes every buffer for `limits`, with `slots` independent sequences and an f16 cache.
    pub fn with_slots(loaded: &'m Loaded<'f>, limits: Limits, slots: usize) -> Result<Self, Error> {
        Self::with_kv(loaded, limits, slots, KvType::F16)
    }

    /// Sizes every buffer for `limits`, with `slots` sequences whose cache stores `kv_type`.
    /// Reserves `slots × pages_per_slot` pages, so a slot never runs out before its context.
    /// `limits.threads` worker threads run the matmuls and attention (the calling thread
    /// included; 1 runs everything on the caller). [`Limits`] values built for a single
    /// thread can use [`Pool::default_threads`].
    pub fn with_kv(
        loaded: &'m Loaded<'f>,
        limits: Limits,
        slots: usize,
        kv_type: KvType,
    ) -> Result<Self, Error> {
        if slots == 0 {
            return Err(Error::NoSuchSlot(0));
        }
        let layout = Layout::new(&loaded.spec, limits).map_err(Error::Layout)?;
        let geo = KvGeometry::new(&loaded.spec, limits.ctx, limits.chunk, kv_type)?;
        let pages = geo
            .pages_per_slot()?
            .checked_mul(slots)
            .ok_or(Error::TooLarge("KV cache"))?;
        Self::build(loaded, layout, geo, slots, pages)
    }

    /// Sizes every buffer exactly as `plan` says (layout, KV type, sessions, pages); the plan
    /// must have been made for this model.
    pub fn from_plan(loaded: &'m Loaded<'f>, plan: &Plan) -> Result<Self, Error> {
        let l = &plan.limits;
        let geo = KvGeometry::new(&loaded.spec, l.ctx, l.rows(), l.kv_type)?;
        let pages = usize::try_from(plan.kv_pages).map_err(|_| Error::TooLarge("KV cache"))?;
        Self::build(loaded, plan.layout, geo, l.sessions, pages)
    }

    fn build(
        loaded: &'m Loaded<'f>,
        layout: Layout,
        geo: KvGeometry,
        slots: usize,
        pages: usize,
    ) -> Result<Self, Error> {
        let data = prefault(vec![0u16; kv::data_len(&geo, pages)?]);
        let meta = prefault(vec![0u32; kv::meta_len(&geo, slots, pages)?]);
        let pool = Pool::new(layout.limits.threads.max(1))
            .map_err(|e| Error::Io("spawning worker threads".into(), e))?;
        Ok(Engine {
            loaded,
            layout,
            arena: prefault(vec![0.0; layout.arena_len]),
            scratch: prefault(vec![0; layout.quant_scratch_bytes]),
            kv: PagePool::new(geo, slots, pages, data, meta)?,
            slots: Slots::new(slots, layout.limits.ctx)?,
            kernels: Kernels::select(crate::cpu_features::detect()),
            pool,
            profile: None,
        })
    }

    /// Turns per-op timing on (from zero) or off. While on, every forward call adds each
    /// backend op's wall time to [`Engine::op_times`].
    pub fn set_profiling(&mut self, on: bool) {
        self.profile = on.then(OpTimes::default);
    }

    /// The per-op times gathered since profiling was turned on (`None` when off).
    pub fn op_times(&self) -> Option<&OpTimes> {
        self.profile.as_ref()
    }

    /// Bytes this engine allocated: KV data and page tables, activation arena, scratch.
    pub fn allocated_bytes(&self) -> EngineBytes {
        let g = self.kv.geometry();
        let pages = self.kv.pages();
        EngineBytes {
            kv: kv::data_len(g, pages).unwrap_or(0) as u64 * 2,
            kv_meta: kv::meta_len(g, self.slots.len(), pages).unwrap_or(0) as u64 * 4,
            activations: self.arena.len() as u64 * 4,
            scratch: self.scratch.len() as u64,
        }
    }

    /// Worker threads in use (the calling thread included).
    pub fn threads(&self) -> usize {
        self.pool.threads()
    }

    /// The thread pool the backend runs on.
    pub fn parallel(&self) -> &dyn Parallel {
        &self.pool
    }

    /// The KV page pool (pages free, geometry).
    pub fn kv_pool(&self) -> &PagePool<Vec<u16>, Vec<u32>> {
        &self.kv
    }

    /// Gives slot `dst` the first `n` tokens of slot `src` by sharing its KV pages (copied
    /// only when written): a session that starts with another's prompt skips its prefill.
    pub fn share_prefix(&mut self, src: usize, dst: usize, n: usize) -> Result<(), Error> {
        let src_len = self.slot_pos(src);
        self.kv.share_prefix(src, dst, n, src_len)?;
        self.slots.set(dst, n);
        Ok(())
    }

    /// The loaded model.
    pub fn loaded(&self) -> &'m Loaded<'f> {
        self.loaded
    }

    /// Number of slots.
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Tokens already in slot 0's KV cache.
    pub fn pos(&self) -> usize {
        self.slots.pos(0)
    }

    /// Tokens already in `slot`'s KV cache (0 for a slot that does not exist).
    pub fn slot_pos(&self, slot: usize) -> usize {
        self.slots.pos(slot)
    }

    /// Tokens fed through the model so far, all slots together. A caller can read it before
    /// and after a step to show which tokens were (re)computed.
    pub fn tokens_fed(&self) -> u64 {
        self.slots.fed()
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

    /// Forgets `slot`'s sequence and returns its KV pages to the pool.
    pub fn reset_slot(&mut self, slot: usize) {
        if slot < self.slots.len() {
            self.slots.reset(slot);
            // The slot exists, so releasing it cannot fail.
            let _ = self.kv.release(slot);
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
        let (pos, fed) = self.slots.admit(slot, tokens.len())?;
        let s = &self.loaded.spec;
        let kv = self.kv.slot(slot)?;
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
        let feed = Feed {
            model: &model,
            chunk_rows: Feed::chunk_rows(&self.layout, rows),
            tokens,
            rows,
            pos,
            fed,
        };
        match &mut self.profile {
            Some(times) => feed.run(
                &mut Profiled::new(&mut backend, times),
                logits,
                Error::Forward,
            ),
            None => feed.run(&mut backend, logits, Error::Forward),
        }
    }
}

/// One `forward_slot` call's chunks, generic over the backend (CPU, [`Profiled`], GPU).
pub(crate) struct Feed<'a, 'm, 'w> {
    pub model: &'a Model<'m, 'w>,
    /// Tokens per forward call.
    pub chunk_rows: usize,
    pub tokens: &'a [u32],
    pub rows: LogitRows,
    /// The slot's position, advanced by every chunk.
    pub pos: &'a mut usize,
    /// The engine's fed-token count.
    pub fed: &'a mut u64,
}

impl Feed<'_, '_, '_> {
    /// Tokens per forward call for `layout`: a whole chunk, or no more than the logit rows
    /// when every row's logits are wanted.
    pub fn chunk_rows(layout: &Layout, rows: LogitRows) -> usize {
        let l = layout.limits;
        if rows == LogitRows::All {
            l.chunk.min(l.logit_rows)
        } else {
            l.chunk
        }
    }

    /// Feeds every chunk; `err` turns the backend's failures into [`Error`].
    pub fn run<B: Backend>(
        self,
        backend: &mut B,
        logits: &mut [f32],
        err: impl Fn(ForwardError<B::Error>) -> Error,
    ) -> Result<(), Error> {
        let Feed {
            model,
            chunk_rows: step,
            tokens,
            rows,
            pos: slot_pos,
            fed,
        } = self;
        let s = model.spec;
        let n_chunks = tokens.len().div_ceil(step);
        let mut written = 0usize;
        for (ci, part) in tokens.chunks(step).enumerate() {
            let want = match rows {
                LogitRows::All => LogitRows::All,
                LogitRows::Last if ci + 1 == n_chunks => LogitRows::Last,
                _ => LogitRows::None,
            };
            let pos = u32::try_from(*slot_pos).map_err(|_| Error::TooLarge("position"))?;
            let got = model.forward(backend, part, pos, want).map_err(&err)?;
            *slot_pos += part.len();
            *fed += part.len() as u64;
            if got > 0 {
                let n = got * s.n_vocab;
                let dst = logits
                    .get_mut(written..written + n)
                    .ok_or(Error::TooLarge("logits buffer"))?;
                backend
                    .read(model.layout.logits.prefix(n), dst)
                    .map_err(|e| err(ForwardError::Backend(e)))?;
                written += n;
            }
        }
        Ok(())
    }
}

/// What an [`Engine`] allocated, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineBytes {
    /// KV pages.
    pub kv: u64,
    /// KV reference counts, free stack and page tables.
    pub kv_meta: u64,
    /// Activation arena.
    pub activations: u64,
    /// Quantized-activation scratch.
    pub scratch: u64,
}

impl EngineBytes {
    /// Everything together.
    pub fn total(&self) -> u64 {
        self.kv + self.kv_meta + self.activations + self.scratch
    }
}

/// Writes every page of `v` once, so the memory is resident before the first token instead of
/// faulting in during decoding (`vec![0; n]` maps zero pages lazily).
fn prefault<T: Copy + Default>(mut v: Vec<T>) -> Vec<T> {
    let step = (4096 / core::mem::size_of::<T>().max(1)).max(1);
    let mut i = 0;
    while i < v.len() {
        // A volatile write the optimizer cannot drop: it is what makes the page resident.
        // SAFETY: `i < v.len()`, so the pointer is in bounds and aligned for `T`.
        unsafe { core::ptr::write_volatile(v.as_mut_ptr().add(i), T::default()) };
        i += step;
    }
    v
}

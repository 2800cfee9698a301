//! The decode step allocates nothing: a counting global allocator watches 256 decoded tokens of
//! each real model after the engine has been set up, on two threads (the caller and one pool
//! worker, both watched).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use glimmer_boards::engine::{Engine, Loaded};
use glimmer_boards::model_file::{ModelFile, DEFAULT_MODEL, GEMMA3_MODEL};
use glimmer_core::exec::{Limits, LogitRows, Parallel};
use glimmer_core::sample::{Sampler, SamplerConfig};
use glimmer_tests::real_model;

/// Counts allocations made by the watched threads while armed.
struct Counting;

static ARMED: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static WATCHED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn watched() -> bool {
    ARMED.load(Ordering::Relaxed) && WATCHED.try_with(|w| w.get()).unwrap_or(false)
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counter has no effect
// on the memory returned.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if watched() {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if watched() {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Only one test at a time may arm the counter.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn decode_allocs(file_name: &str, steps: usize) -> Option<usize> {
    let path = real_model(file_name)?;
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let file = ModelFile::open(&path).expect("open");
    let loaded = Loaded::new(&file).expect("load");
    let limits = Limits {
        chunk: 16,
        logit_rows: 1,
        ctx: 512,
        threads: 2,
    };
    let mut engine = Engine::with_threads(&loaded, limits, 2).expect("engine");
    assert_eq!(engine.threads(), 2);
    // Watch every pool thread: with as many tasks as threads, the barrier holds each task
    // until all have started, so each runs on a different thread.
    let barrier = std::sync::Barrier::new(2);
    engine.parallel().run(2, &|_| {
        barrier.wait();
        WATCHED.with(|w| w.set(true));
    });
    let mut logits = vec![0.0f32; loaded.spec.n_vocab];
    let mut scratch = vec![0u32; loaded.spec.n_vocab];
    let mut sampler = Sampler::new(SamplerConfig {
        temperature: 0.8,
        top_k: 40,
        top_p: 0.95,
        seed: 3,
    });
    let prompt = loaded
        .tokenizer
        .encode("Once upon a time", true, true)
        .expect("encode");
    engine
        .forward(&prompt, LogitRows::Last, &mut logits)
        .expect("prefill");

    ALLOCS.store(0, Ordering::SeqCst);
    ARMED.store(true, Ordering::SeqCst);
    for _ in 0..steps {
        let next = sampler.sample(&logits, &mut scratch).expect("sample");
        engine
            .forward(&[next], LogitRows::Last, &mut logits)
            .expect("decode");
    }
    ARMED.store(false, Ordering::SeqCst);
    engine.parallel().run(2, &|_| {
        barrier.wait();
        WATCHED.with(|w| w.set(false));
    });
    assert_eq!(engine.pos(), prompt.len() + steps);
    Some(ALLOCS.load(Ordering::SeqCst))
}

#[test]
fn counter_sees_allocations() {
    // The counter itself must work, or the zero below proves nothing.
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    WATCHED.with(|w| w.set(true));
    ALLOCS.store(0, Ordering::SeqCst);
    ARMED.store(true, Ordering::SeqCst);
    let v: Vec<u64> = std::hint::black_box(Vec::with_capacity(16));
    ARMED.store(false, Ordering::SeqCst);
    WATCHED.with(|w| w.set(false));
    drop(v);
    assert_eq!(ALLOCS.load(Ordering::SeqCst), 1);
}

#[test]
fn counter_sees_pool_worker_allocations() {
    // A pool worker, once watched, is counted too.
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pool = glimmer_boards::pool::Pool::new(2).expect("pool");
    let barrier = std::sync::Barrier::new(2);
    let main = std::thread::current().id();
    pool.run(2, &|_| {
        barrier.wait();
        if std::thread::current().id() != main {
            WATCHED.with(|w| w.set(true));
        }
    });
    ALLOCS.store(0, Ordering::SeqCst);
    ARMED.store(true, Ordering::SeqCst);
    pool.run(2, &|_| {
        barrier.wait();
        let v: Vec<u64> = std::hint::black_box(Vec::with_capacity(16));
        drop(v);
    });
    ARMED.store(false, Ordering::SeqCst);
    assert_eq!(ALLOCS.load(Ordering::SeqCst), 1);
}

#[test]
fn smollm2_decode_allocates_nothing() {
    if let Some(n) = decode_allocs(DEFAULT_MODEL, 256) {
        assert_eq!(n, 0, "256 decode steps made {n} heap allocations");
    }
}

#[test]
fn gemma3_decode_allocates_nothing() {
    if let Some(n) = decode_allocs(GEMMA3_MODEL, 256) {
        assert_eq!(n, 0, "256 decode steps made {n} heap allocations");
    }
}

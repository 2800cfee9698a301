//! [`Pool`]: a fixed thread pool implementing the core's [`Parallel`].
//!
//! `Pool::new(n)` spawns `n - 1` workers once; the thread calling [`Parallel::run`] is the
//! n-th. A dispatch publishes the job (a borrowed `&dyn Fn(usize)`) and bumps an epoch
//! counter; the workers, which spin on the epoch for a short while after each job and then
//! sleep on a condition variable, claim task indices from a shared atomic counter. The caller
//! claims tasks too, then waits (spinning, then sleeping) until every worker has finished.
//! Nothing is allocated per dispatch: the job is a pointer to the caller's closure, and the
//! synchronisation is atomics plus one `Mutex`/`Condvar` pair (futexes on Linux).

use std::cell::UnsafeCell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, TryLockError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use glimmer_core::exec::Parallel;

/// How long a worker (or a caller waiting for workers) spins before it sleeps. Dispatches in
/// one decode step come microseconds apart, so workers stay awake through a whole forward
/// call and fall asleep when the engine goes idle.
const SPIN: Duration = Duration::from_micros(200);

/// After this long, a spinning thread yields its core between checks, so that on a machine
/// with more runnable threads than cores the thread it waits for can run.
const PAUSE_ONLY: Duration = Duration::from_micros(20);

/// One step of a spin-wait that started at `t0`; false once the wait should go to sleep.
fn spin_step(t0: Instant, spins: &mut u32) -> bool {
    *spins = spins.wrapping_add(1);
    if spins.is_multiple_of(64) {
        let waited = t0.elapsed();
        if waited > SPIN {
            return false;
        }
        if waited > PAUSE_ONLY {
            std::thread::yield_now();
        }
    }
    std::hint::spin_loop();
    true
}

/// The job of the current dispatch: the caller's closure with its lifetime erased.
type Job = *const (dyn Fn(usize) + Sync + 'static);

/// State shared by the pool and its workers.
struct Shared {
    /// Bumped (SeqCst) once per dispatch, after `job` and `tasks` are set.
    epoch: AtomicUsize,
    /// The closure of the current dispatch. Written only by the dispatching thread while no
    /// worker is running a job (all have decremented `busy` for the previous one), read by
    /// workers only after they saw the epoch bumped: see `Pool::run`.
    job: UnsafeCell<Option<Job>>,
    /// Tasks of the current dispatch.
    tasks: AtomicUsize,
    /// Next task index to claim.
    next: AtomicUsize,
    /// Workers still running the current dispatch.
    busy: AtomicUsize,
    /// A task panicked in this dispatch.
    panicked: AtomicBool,
    /// Workers should exit.
    shutdown: AtomicBool,
    /// Workers asleep (or about to sleep) on `wake`.
    sleepers: AtomicUsize,
    /// The caller is asleep (or about to sleep) on `done`.
    caller_sleeps: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
    done: Condvar,
}

// SAFETY: every field but `job` is Sync on its own. `job` is an `UnsafeCell` whose writes and
// reads are ordered by the `epoch` / `busy` protocol documented on the field and in
// `Pool::run` (a write never overlaps a read), and the pointee is `Sync`, so sharing the
// pointer between threads is sound.
unsafe impl Sync for Shared {}
// SAFETY: as above; the raw pointer in `job` refers to a `Sync` closure and is only
// dereferenced while the dispatch that stored it is in progress.
unsafe impl Send for Shared {}

impl Shared {
    fn guard(&self) -> MutexGuard<'_, ()> {
        self.lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Claims and runs tasks of the current dispatch until none are left.
    fn work(&self, f: &(dyn Fn(usize) + Sync)) {
        let tasks = self.tasks.load(Ordering::Acquire);
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= tasks {
                break;
            }
            if catch_unwind(AssertUnwindSafe(|| f(i))).is_err() {
                self.panicked.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Waits until the epoch differs from `seen` (or shutdown) and returns the new epoch.
    fn wait_epoch(&self, seen: usize) -> usize {
        let t0 = Instant::now();
        let mut spins = 0u32;
        loop {
            let e = self.epoch.load(Ordering::SeqCst);
            if e != seen || self.shutdown.load(Ordering::Relaxed) {
                return e;
            }
            if !spin_step(t0, &mut spins) {
                break;
            }
        }
        let mut g = self.guard();
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        loop {
            let e = self.epoch.load(Ordering::SeqCst);
            if e != seen || self.shutdown.load(Ordering::SeqCst) {
                self.sleepers.fetch_sub(1, Ordering::SeqCst);
                return e;
            }
            g = self.wake.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// A worker's loop. `seen` is the epoch when the pool was made: reading it here instead
    /// would miss a dispatch made before this thread first ran.
    fn worker(&self, mut seen: usize) {
        loop {
            seen = self.wait_epoch(seen);
            if self.shutdown.load(Ordering::SeqCst) {
                return;
            }
            // SAFETY: the epoch moved, so the dispatcher stored `job` before bumping it
            // (SeqCst store after the write, SeqCst load here: the write happens-before this
            // read) and will not write it again before this worker decrements `busy`.
            let job = unsafe { *self.job.get() };
            if let Some(job) = job {
                // SAFETY: the dispatcher keeps the closure alive until `busy` reaches 0,
                // which cannot happen before this worker's decrement below.
                self.work(unsafe { &*job });
            }
            if self.busy.fetch_sub(1, Ordering::SeqCst) == 1
                && self.caller_sleeps.load(Ordering::SeqCst)
            {
                let _g = self.guard();
                self.done.notify_one();
            }
        }
    }

    /// Waits until every worker has finished the current dispatch.
    fn wait_done(&self) {
        let t0 = Instant::now();
        let mut spins = 0u32;
        while self.busy.load(Ordering::SeqCst) != 0 {
            if !spin_step(t0, &mut spins) {
                let mut g = self.guard();
                self.caller_sleeps.store(true, Ordering::SeqCst);
                while self.busy.load(Ordering::SeqCst) != 0 {
                    g = self.done.wait(g).unwrap_or_else(|e| e.into_inner());
                }
                self.caller_sleeps.store(false, Ordering::SeqCst);
                return;
            }
        }
    }
}

/// A fixed pool of worker threads; see the module docs.
pub struct Pool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    /// Held for the length of a dispatch: concurrent or nested `run` calls go serial.
    dispatch: Mutex<()>,
}

impl Pool {
    /// A pool of `threads` workers in all (at least 1), counting the thread that calls
    /// [`Parallel::run`]; spawns `threads - 1` threads.
    pub fn new(threads: usize) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            epoch: AtomicUsize::new(0),
            job: UnsafeCell::new(None),
            tasks: AtomicUsize::new(0),
            next: AtomicUsize::new(0),
            busy: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            caller_sleeps: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            done: Condvar::new(),
        });
        let mut pool = Pool {
            shared,
            workers: Vec::new(),
            dispatch: Mutex::new(()),
        };
        for i in 1..threads.max(1) {
            let s = Arc::clone(&pool.shared);
            let h = std::thread::Builder::new()
                .name(format!("glimmer-{i}"))
                .spawn(move || s.worker(0))?;
            pool.workers.push(h);
        }
        Ok(pool)
    }

    /// The number of available CPU cores (1 when unknown): the default pool size.
    pub fn default_threads() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

impl Parallel for Pool {
    fn threads(&self) -> usize {
        self.workers.len() + 1
    }

    fn run(&self, tasks: usize, f: &(dyn Fn(usize) + Sync)) {
        let _d = match self.dispatch.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            // Another dispatch is in progress (a nested call, or another thread): run here.
            Err(TryLockError::WouldBlock) => {
                for i in 0..tasks {
                    f(i);
                }
                return;
            }
        };
        if self.workers.is_empty() || tasks <= 1 {
            for i in 0..tasks {
                f(i);
            }
            return;
        }
        let s = &*self.shared;
        // SAFETY: this erases the closure's lifetime so workers can hold it. It stays valid
        // for the whole dispatch: `run` returns (or unwinds) only after `wait_done` saw every
        // worker decrement `busy`, and workers only dereference the job between seeing the
        // epoch bump and that decrement.
        let job: Job = unsafe {
            core::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), Job>(
                f as *const (dyn Fn(usize) + Sync),
            )
        };
        // SAFETY: no worker is reading `job`: the previous dispatch ended with `busy == 0`
        // (every worker past its read), and none reads again before the epoch bump below.
        // We hold `dispatch`, so no other thread writes it.
        unsafe { *s.job.get() = Some(job) };
        s.tasks.store(tasks, Ordering::Release);
        s.next.store(0, Ordering::Release);
        s.panicked.store(false, Ordering::Relaxed);
        s.busy.store(self.workers.len(), Ordering::SeqCst);
        s.epoch.fetch_add(1, Ordering::SeqCst);
        if s.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = s.guard();
            s.wake.notify_all();
        }
        let mine = catch_unwind(AssertUnwindSafe(|| s.work(f)));
        s.wait_done();
        // SAFETY: every worker is past its read (busy is 0); clear the dangling pointer.
        unsafe { *s.job.get() = None };
        if let Err(p) = mine {
            resume_unwind(p);
        }
        if s.panicked.load(Ordering::Relaxed) {
            panic!("a pool task panicked");
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        {
            let _g = self.shared.guard();
            self.shared.wake.notify_all();
        }
        for h in self.workers.drain(..) {
            let _ = h.join();
        }
    }
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("threads", &self.threads())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_every_task_once() {
        for threads in 1..4 {
            let pool = Pool::new(threads).unwrap();
            assert_eq!(pool.threads(), threads);
            for tasks in [0usize, 1, 2, 3, 7, 64] {
                for _ in 0..50 {
                    let hits: Vec<AtomicUsize> = (0..tasks).map(|_| AtomicUsize::new(0)).collect();
                    pool.run(tasks, &|i| {
                        hits[i].fetch_add(1, Ordering::Relaxed);
                    });
                    assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
                }
            }
        }
    }

    #[test]
    fn uses_several_threads_and_survives_sleep() {
        let pool = Pool::new(2).unwrap();
        // Let the worker fall asleep, then dispatch again.
        std::thread::sleep(Duration::from_millis(5));
        let ids = Mutex::new(std::collections::HashSet::new());
        let barrier = std::sync::Barrier::new(2);
        pool.run(2, &|_| {
            // Both tasks must be running at once to pass the barrier.
            barrier.wait();
            ids.lock().unwrap().insert(std::thread::current().id());
        });
        assert_eq!(ids.lock().unwrap().len(), 2);
    }

    #[test]
    fn dispatch_right_after_creation_reaches_every_worker() {
        // Regression: a worker that first read the epoch after the first dispatch missed it
        // and the caller waited forever.
        for _ in 0..200 {
            let pool = Pool::new(3).unwrap();
            let n = AtomicUsize::new(0);
            let barrier = std::sync::Barrier::new(3);
            pool.run(3, &|_| {
                barrier.wait();
                n.fetch_add(1, Ordering::Relaxed);
            });
            assert_eq!(n.load(Ordering::Relaxed), 3);
        }
    }

    #[test]
    fn nested_run_goes_serial() {
        let pool = Pool::new(2).unwrap();
        let n = AtomicUsize::new(0);
        pool.run(2, &|_| {
            pool.run(3, &|_| {
                n.fetch_add(1, Ordering::Relaxed);
            });
        });
        assert_eq!(n.load(Ordering::Relaxed), 6);
    }

    #[test]
    fn task_panic_reaches_caller_and_pool_still_works() {
        let pool = Pool::new(2).unwrap();
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool.run(4, &|i| {
                if i == 3 {
                    panic!("task 3");
                }
            })
        }));
        assert!(r.is_err());
        let n = AtomicUsize::new(0);
        pool.run(4, &|_| {
            n.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(n.load(Ordering::Relaxed), 4);
    }
}

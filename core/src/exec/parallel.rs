//! [`Parallel`]: how a backend spreads one op over worker threads, without knowing threads.
//!
//! The core never spawns or owns a thread. The host hands the backend something that can run
//! `tasks` closures at once ([`Parallel::run`]); the std side implements it with a fixed
//! thread pool (`glimmer_boards::pool::Pool`), and [`Serial`] runs everything on the calling
//! thread (bare-metal boards, tests, the reference).
//!
//! Backends split an op into at most [`Parallel::threads`] tasks of similar size and give task
//! `i` its own slice of any per-worker scratch (part `i` of `Layout::scores`), so a task never
//! needs to know which thread runs it.

/// Runs independent tasks, possibly on several threads at once.
///
/// Contract:
/// - [`run`](Parallel::run) calls `f(i)` exactly once for every `i` in `0..tasks`, in any
///   order and on any of the pool's threads (the calling thread included), and returns only
///   after every call has returned. Everything `f` wrote is visible to the caller afterwards.
/// - `f` must not call `run` on the same value; an implementation may then run the inner
///   tasks serially, but must not deadlock or skip them.
/// - Dispatching must not allocate: the decode loop calls `run` hundreds of times per token.
/// - If a call of `f` panics, `run` panics too, after every other call has returned.
pub trait Parallel: Sync {
    /// How many tasks can run at once (at least 1): backends split work into this many parts.
    fn threads(&self) -> usize;

    /// Calls `f(i)` for each `i` in `0..tasks` and returns when all calls have returned.
    fn run(&self, tasks: usize, f: &(dyn Fn(usize) + Sync));
}

/// Runs every task on the calling thread, in order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Serial;

impl Parallel for Serial {
    fn threads(&self) -> usize {
        1
    }

    fn run(&self, tasks: usize, f: &(dyn Fn(usize) + Sync)) {
        for i in 0..tasks {
            f(i);
        }
    }
}

/// The `i`-th of `parts` near-equal ranges of `0..n`, with every boundary but the last rounded
/// down to a multiple of `align` (at least 1), so parts differ by at most `align` items.
pub fn split_range(n: usize, parts: usize, align: usize, i: usize) -> core::ops::Range<usize> {
    let parts = parts.max(1);
    let align = align.max(1);
    let units = n.div_ceil(align);
    let at = |k: usize| -> usize {
        if k >= parts {
            n
        } else {
            // `units * k / parts` without overflow for any realistic sizes: k < parts.
            (units.saturating_mul(k) / parts)
                .saturating_mul(align)
                .min(n)
        }
    };
    at(i)..at(i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_runs_every_task_once_in_order() {
        use core::sync::atomic::{AtomicUsize, Ordering};
        let seen = AtomicUsize::new(0);
        let next = AtomicUsize::new(0);
        Serial.run(5, &|i| {
            assert_eq!(next.fetch_add(1, Ordering::Relaxed), i);
            seen.fetch_or(1 << i, Ordering::Relaxed);
        });
        assert_eq!(seen.load(Ordering::Relaxed), 0b11111);
        assert_eq!(Serial.threads(), 1);
    }

    #[test]
    fn split_range_covers_without_overlap() {
        for n in [0usize, 1, 3, 16, 17, 100, 576, 49152] {
            for parts in 1..6 {
                for align in [1usize, 4, 16] {
                    let mut end = 0;
                    for i in 0..parts {
                        let r = split_range(n, parts, align, i);
                        assert_eq!(r.start, end, "n {n} parts {parts} align {align}");
                        assert!(r.end >= r.start);
                        if i + 1 < parts {
                            assert_eq!(r.end % align, 0);
                        }
                        end = r.end;
                    }
                    assert_eq!(end, n);
                }
            }
        }
    }
}

//! Time for the plant simulation, rate limits and watchdogs: real by default, manual in
//! tests.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A monotonic clock.
///
/// Contract: [`now`](Clock::now) never goes backwards; its zero is arbitrary (the clock's
/// creation for [`SystemClock`]).
pub trait Clock: Send + Sync {
    /// Time since the clock's zero.
    fn now(&self) -> Duration;
}

/// Real time, from an [`Instant`] taken when it was made.
#[derive(Clone, Copy, Debug)]
pub struct SystemClock {
    start: Instant,
}

impl SystemClock {
    /// A clock whose zero is now.
    pub fn new() -> Self {
        SystemClock {
            start: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.start.elapsed()
    }
}

/// A clock that moves only when told to; clones share the time.
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    now: Arc<Mutex<Duration>>,
}

impl ManualClock {
    /// A clock at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        let mut now = self.now.lock().unwrap_or_else(|e| e.into_inner());
        *now = now.saturating_add(d);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        *self.now.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_advanced_and_clones_share_it() {
        let c = ManualClock::new();
        let c2 = c.clone();
        assert_eq!(c.now(), Duration::ZERO);
        c2.advance(Duration::from_millis(1500));
        assert_eq!(c.now(), Duration::from_millis(1500));
        let s = SystemClock::new();
        let a = s.now();
        assert!(s.now() >= a);
    }
}

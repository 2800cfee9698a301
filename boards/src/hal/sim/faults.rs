//! Fault injection for the simulated bus.

use std::sync::{Arc, Condvar, Mutex};

use embedded_hal::i2c::ErrorKind;

#[derive(Debug, Default)]
struct State {
    hang: bool,
    hung: usize,
    error: Option<ErrorKind>,
}

/// Faults the simulated I2C bus shows on its next transactions; clones share them.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    inner: Arc<(Mutex<State>, Condvar)>,
}

impl Faults {
    /// No faults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes every transaction block until [`release`](Self::release) (forever if never).
    pub fn hang(&self) {
        self.lock().hang = true;
    }

    /// Lets blocked and later transactions through.
    pub fn release(&self) {
        self.lock().hang = false;
        self.inner.1.notify_all();
    }

    /// Makes every transaction fail with `kind` (`None`: succeed again).
    pub fn fail_with(&self, kind: Option<ErrorKind>) {
        self.lock().error = kind;
    }

    /// How many transactions are blocked right now.
    pub fn hung(&self) -> usize {
        self.lock().hung
    }

    /// Applies the faults to one transaction: blocks while hanging, then the error, if any.
    pub(super) fn check(&self) -> Result<(), ErrorKind> {
        let mut s = self.lock();
        if s.hang {
            s.hung += 1;
            while s.hang {
                s = self.inner.1.wait(s).unwrap_or_else(|e| e.into_inner());
            }
            s.hung -= 1;
        }
        s.error.map_or(Ok(()), Err)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

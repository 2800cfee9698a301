//! One thread per device: calls run there with a timeout, so a hung driver stalls only
//! its own thread.
//!
//! A call waits for the device up to its deadline. A call that times out leaves the
//! device marked stuck: later calls fail at once with [`ToolError::Busy`] until the hung
//! call returns (its result is dropped). So each device holds at most one thread and one
//! hung call, however often the model retries.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use super::error::{HwError, ToolError};

type Job<D> = Box<dyn FnOnce(&mut D) + Send>;

#[derive(Debug, Default)]
struct Flight {
    /// A call is running on the device.
    busy: bool,
    /// The running call outlived its caller's timeout.
    stuck: bool,
}

#[derive(Debug, Default)]
struct Shared {
    flight: Mutex<Flight>,
    idle: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Flight> {
        self.flight.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The thread that owns a device `D`.
#[derive(Debug)]
pub(crate) struct Worker<D> {
    jobs: mpsc::Sender<Job<D>>,
    shared: Arc<Shared>,
}

impl<D: Send + 'static> Worker<D> {
    /// Starts a thread named `name` owning `device`.
    pub(crate) fn spawn(name: &str, mut device: D) -> std::io::Result<Self> {
        let (jobs, rx) = mpsc::channel::<Job<D>>();
        let shared = Arc::new(Shared::default());
        let mine = Arc::clone(&shared);
        thread::Builder::new()
            .name(format!("tool-{name}"))
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    job(&mut device);
                    let mut f = mine.lock();
                    f.busy = false;
                    f.stuck = false;
                    mine.idle.notify_all();
                }
            })?;
        Ok(Worker { jobs, shared })
    }

    /// Runs `f` on the device, waiting at most `timeout` in all.
    pub(crate) fn call<R: Send + 'static>(
        &self,
        timeout: Duration,
        f: impl FnOnce(&mut D) -> R + Send + 'static,
    ) -> Result<R, ToolError> {
        let deadline = Instant::now() + timeout;
        let after_ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
        {
            let mut flight = self.shared.lock();
            while flight.busy {
                if flight.stuck {
                    return Err(ToolError::Busy);
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(ToolError::Busy);
                }
                flight = self
                    .shared
                    .idle
                    .wait_timeout(flight, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            flight.busy = true;
        }
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job<D> = Box::new(move |d| {
            let r = catch_unwind(AssertUnwindSafe(|| f(d)));
            // The caller may have given up; then the result is dropped.
            let _ = tx.send(r);
        });
        if self.jobs.send(job).is_err() {
            self.shared.lock().busy = false;
            return Err(ToolError::ToolFailed(HwError::Stopped));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(_panic)) => Err(ToolError::ToolFailed(HwError::Panicked)),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let mut flight = self.shared.lock();
                if flight.busy {
                    flight.stuck = true;
                }
                Err(ToolError::ToolTimeout { after_ms })
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                Err(ToolError::ToolFailed(HwError::Stopped))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hung_call_times_out_then_busy_then_recovers() {
        let w = Worker::spawn("t", 0u32).unwrap();
        let ms = Duration::from_millis;
        assert_eq!(w.call(ms(500), |d| *d + 1), Ok(1));
        let (release, gate) = mpsc::channel::<()>();
        let t0 = Instant::now();
        let r = w.call(ms(50), move |d| {
            let _ = gate.recv();
            *d = 7;
        });
        assert_eq!(r, Err(ToolError::ToolTimeout { after_ms: 50 }));
        assert!(t0.elapsed() < ms(2000));
        let t1 = Instant::now();
        assert_eq!(w.call(ms(5000), |d| *d), Err(ToolError::Busy));
        assert!(t1.elapsed() < ms(1000), "Busy comes at once, not after 5 s");
        release.send(()).unwrap();
        // Once the hung call returns, the device serves again and kept its effect.
        let mut got = Err(ToolError::Busy);
        for _ in 0..200 {
            got = w.call(ms(500), |d| *d);
            if got != Err(ToolError::Busy) {
                break;
            }
            thread::sleep(ms(5));
        }
        assert_eq!(got, Ok(7));
    }

    #[test]
    fn panic_is_a_failure_and_the_worker_survives() {
        let w = Worker::spawn("p", ()).unwrap();
        // Generous: the panic hook may print a backtrace on a loaded machine.
        let long = Duration::from_secs(60);
        let r: Result<(), _> = w.call(long, |_| panic!("driver bug"));
        assert_eq!(r, Err(ToolError::ToolFailed(HwError::Panicked)));
        assert_eq!(w.call(long, |_| 3), Ok(3));
    }
}

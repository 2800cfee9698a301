//! The actuator watchdog: returns actuators left uncommanded past their period to their
//! safe state.

use std::sync::{mpsc, Arc, Weak};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use super::toolbox::ToolBox;

impl ToolBox {
    /// Returns every actuator not commanded within its watchdog period (on the box's
    /// clock) to its safe state; returns how many it moved. Actuators busy with a command
    /// right now are skipped (a command refreshes them anyway). A failed return leaves the
    /// actuator's value unknown, so the next service tries again.
    pub fn service_watchdog(&self) -> usize {
        let mut moved = 0;
        for dev in &self.devs {
            let Some(lock) = &dev.actuator else { continue };
            let Ok(mut state) = lock.try_lock() else {
                continue;
            };
            let now = self.clock.now();
            if !state.watchdog_due(now) {
                continue;
            }
            let safe = state.limits.safe;
            match dev.apply(safe) {
                Ok(()) => {
                    state.applied(safe, now);
                    state.watchdog_trips = state.watchdog_trips.saturating_add(1);
                    moved += 1;
                    log::warn!("watchdog: `{}` returned to safe {safe}", dev.entry.name);
                }
                Err(e) => {
                    state.value = None;
                    log::error!(
                        "watchdog: `{}` did not take safe state: {e}",
                        dev.entry.name
                    );
                }
            }
        }
        moved
    }

    /// Services the watchdog every `period` on a thread until the handle is dropped (or
    /// the box is).
    pub fn spawn_watchdog(self: &Arc<Self>, period: Duration) -> std::io::Result<WatchdogHandle> {
        let (stop, stopped) = mpsc::channel::<()>();
        let boxed: Weak<ToolBox> = Arc::downgrade(self);
        let thread = thread::Builder::new()
            .name("tool-watchdog".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(period) {
                    let Some(tb) = boxed.upgrade() else { break };
                    tb.service_watchdog();
                }
            })?;
        Ok(WatchdogHandle {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

/// Keeps the watchdog thread running; dropping it stops the thread and waits for it.
#[derive(Debug)]
pub struct WatchdogHandle {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for WatchdogHandle {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

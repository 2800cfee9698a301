//! Actuator policy: range, step and rate limits, and the watchdog's bookkeeping.
//!
//! Policy is checked before any hardware is touched; a command that breaks a limit is
//! refused whole ([`Limit`]), never clamped.

use std::time::Duration;

use super::error::{milli, Limit};
use crate::profiles::ActuatorLimits;

/// What the tool box knows of one actuator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ActuatorState {
    /// Its limits.
    pub limits: ActuatorLimits,
    /// The value last applied (`None` after a failed command: unknown).
    pub value: Option<f32>,
    /// When the value last changed (`None`: not since start).
    pub changed_at: Option<Duration>,
    /// When it was last commanded or refreshed (or returned to safe).
    pub commanded_at: Duration,
    /// How often the watchdog returned it to its safe state.
    pub watchdog_trips: u32,
}

impl ActuatorState {
    /// An actuator just set to its safe state at `now`.
    pub fn started(limits: ActuatorLimits, now: Duration) -> Self {
        ActuatorState {
            limits,
            value: Some(limits.safe),
            changed_at: None,
            commanded_at: now,
            watchdog_trips: 0,
        }
    }

    /// Whether the limits are consistent.
    pub fn limits_ok(l: &ActuatorLimits) -> bool {
        let finite = [l.min, l.max, l.safe].iter().all(|x| x.is_finite());
        let step_ok = l.max_step.is_none_or(|s| s.is_finite() && s > 0.0);
        finite && l.min <= l.max && (l.min..=l.max).contains(&l.safe) && step_ok
    }

    /// The range as a [`Limit`].
    pub fn range_limit(&self) -> Limit {
        Limit::OutOfRange {
            min_milli: milli(self.limits.min),
            max_milli: milli(self.limits.max),
        }
    }

    /// Checks a command to `v` at `now` against range, step and rate limits.
    pub fn check(&self, v: f32, now: Duration) -> Result<(), Limit> {
        let l = &self.limits;
        if !(l.min..=l.max).contains(&v) {
            return Err(self.range_limit());
        }
        let Some(current) = self.value else {
            // Unknown state: any in-range value may be set, to regain control.
            return Ok(());
        };
        if v == current {
            return Ok(());
        }
        if let Some(step) = l.max_step {
            if (v - current).abs() > step {
                return Err(Limit::StepTooLarge {
                    max_step_milli: milli(step),
                });
            }
        }
        if let Some(at) = self.changed_at {
            let min = Duration::from_millis(u64::from(l.min_interval_ms));
            let since = now.saturating_sub(at);
            if since < min {
                let wait = min - since;
                let wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1);
                return Err(Limit::TooSoon { wait_ms });
            }
        }
        Ok(())
    }

    /// Records that `v` was applied at `now`.
    pub fn applied(&mut self, v: f32, now: Duration) {
        if self.value != Some(v) {
            self.changed_at = Some(now);
        }
        self.value = Some(v);
        self.commanded_at = now;
    }

    /// Whether the watchdog should return it to safe at `now`.
    pub fn watchdog_due(&self, now: Duration) -> bool {
        let period = self.limits.watchdog_ms;
        period > 0
            && self.value != Some(self.limits.safe)
            && now.saturating_sub(self.commanded_at) >= Duration::from_millis(u64::from(period))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEATER: ActuatorLimits = ActuatorLimits {
        min: 0.0,
        max: 100.0,
        min_interval_ms: 1000,
        max_step: Some(50.0),
        safe: 0.0,
        watchdog_ms: 30_000,
    };

    fn s(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    #[test]
    fn range_step_rate_and_watchdog() {
        let mut a = ActuatorState::started(HEATER, s(0));
        let range = Limit::OutOfRange {
            min_milli: 0,
            max_milli: 100_000,
        };
        assert_eq!(a.check(100.5, s(0)), Err(range));
        assert_eq!(a.check(-1.0, s(0)), Err(range));
        assert_eq!(a.check(f32::NAN, s(0)), Err(range));
        let step = Limit::StepTooLarge {
            max_step_milli: 50_000,
        };
        assert_eq!(a.check(60.0, s(0)), Err(step));
        assert_eq!(a.check(50.0, s(0)), Ok(()), "first change is free");
        a.applied(50.0, s(0));
        assert_eq!(a.check(60.0, s(400)), Err(Limit::TooSoon { wait_ms: 600 }));
        assert_eq!(a.check(50.0, s(400)), Ok(()), "a refresh is no change");
        assert_eq!(a.check(60.0, s(1000)), Ok(()));
        a.applied(50.0, s(20_000));
        assert!(!a.watchdog_due(s(49_999)));
        assert!(a.watchdog_due(s(50_000)));
        a.value = None;
        assert_eq!(a.check(100.0, s(20_001)), Ok(()), "unknown state");
        assert!(ActuatorState::limits_ok(&HEATER));
        let bad = ActuatorLimits {
            safe: 101.0,
            ..HEATER
        };
        assert!(!ActuatorState::limits_ok(&bad));
    }
}

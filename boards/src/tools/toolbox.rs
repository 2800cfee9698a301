//! The tool box: the board's devices as tools the daemon can call from any thread.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::actuator::ActuatorState;
use super::board::{Board, LinuxBoard, SimBoard};
use super::device::Device;
use super::error::{BuildError, HwError, Problem, ToolError};
use super::spec::{self, Kind, ToolInfo};
use super::worker::Worker;
use crate::hal::clock::{Clock, SystemClock};
use crate::hal::sim::PlantParams;
use crate::profiles::{BoardProfile, ToolMapEntry};

/// Settings of a [`ToolBox`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolConfig {
    /// Longest tool output, in bytes; longer output is cut and ends with
    /// [`TRUNCATED_MARKER`].
    pub max_output_bytes: usize,
    /// Check actuator commands and report them, but touch no actuator.
    pub dry_run: bool,
    /// Timeout of entries whose `timeout_ms` is 0, in milliseconds.
    pub default_timeout_ms: u32,
}

impl Default for ToolConfig {
    fn default() -> Self {
        ToolConfig {
            max_output_bytes: 1024,
            dry_run: false,
            default_timeout_ms: 1000,
        }
    }
}

/// What ends output cut to [`ToolConfig::max_output_bytes`].
pub const TRUNCATED_MARKER: &str = "…[truncated]";

/// One opened device.
#[derive(Debug)]
pub(crate) struct Dev {
    pub entry: ToolMapEntry,
    pub worker: Worker<Device>,
    pub timeout: Duration,
    /// Policy state of an actuator (`None` for sensors).
    pub actuator: Option<Mutex<ActuatorState>>,
}

impl Dev {
    pub fn state(&self) -> Option<MutexGuard<'_, ActuatorState>> {
        self.actuator
            .as_ref()
            .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Sets an actuator to `v` on its worker (a switch is on for `v >= 0.5`).
    pub fn apply(&self, v: f32) -> Result<(), ToolError> {
        self.worker
            .call(self.timeout, move |d| match d {
                Device::Switch(s) => s.set_on(v >= 0.5).map_err(ToolError::ToolFailed),
                Device::Level(l) => l.set_level(v),
                Device::Thermometer(_) => Err(ToolError::ToolFailed(HwError::Stopped)),
            })
            .and_then(|r| r)
    }
}

/// The tools of one board. Cheap to share behind an [`Arc`]; every method takes `&self`
/// and may be called from any thread.
///
/// Each device runs on its own worker thread; a call waits at most the device's timeout
/// (see [`ToolError::ToolTimeout`] and [`ToolError::Busy`]). Actuators are set to their
/// safe state when the box is built, and [`service_watchdog`](ToolBox::service_watchdog)
/// returns those left uncommanded past their watchdog period to it.
pub struct ToolBox {
    pub(crate) devs: Vec<Dev>,
    pub(crate) infos: Vec<ToolInfo>,
    pub(crate) kinds: Vec<Kind>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) config: ToolConfig,
}

impl std::fmt::Debug for ToolBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolBox")
            .field("tools", &self.infos)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl ToolBox {
    /// Opens every device of `entries` on `board`, sets actuators to their safe state and
    /// derives the tools. `clock` times rate limits and watchdogs.
    pub fn new(
        entries: &[ToolMapEntry],
        board: &dyn Board,
        clock: Arc<dyn Clock>,
        config: ToolConfig,
    ) -> Result<Self, BuildError> {
        let fail = |i: usize, problem| BuildError {
            tool: entries[i].tool,
            name: entries[i].name,
            problem,
        };
        let (infos, kinds): (Vec<_>, Vec<_>) = spec::tools(entries)
            .map_err(|(i, p)| fail(i, p))?
            .into_iter()
            .unzip();
        let mut devs = Vec::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            if entries[..i].iter().any(|o| o.name == e.name) {
                return Err(fail(i, Problem::BadEntry));
            }
            let actuator = check_limits(e).map_err(|p| fail(i, p))?;
            let device = board.open(e).map_err(|p| fail(i, p))?;
            let worker = Worker::spawn(e.name, device).map_err(|_| fail(i, Problem::Spawn))?;
            let timeout_ms = match e.timeout_ms {
                0 => config.default_timeout_ms,
                t => t,
            };
            let dev = Dev {
                entry: *e,
                worker,
                timeout: Duration::from_millis(u64::from(timeout_ms)),
                actuator: None,
            };
            let dev = match actuator {
                Some(limits) => {
                    dev.apply(limits.safe)
                        .map_err(|t| fail(i, Problem::SafeState(t)))?;
                    let state = ActuatorState::started(limits, clock.now());
                    Dev {
                        actuator: Some(Mutex::new(state)),
                        ..dev
                    }
                }
                None => dev,
            };
            devs.push(dev);
        }
        Ok(ToolBox {
            devs,
            infos,
            kinds,
            clock,
            config,
        })
    }

    /// The tool box of `profile` on real time: the simulated plant (default constants)
    /// for `sim`, Linux devices for every other board.
    pub fn from_profile(profile: &BoardProfile, config: ToolConfig) -> Result<Self, BuildError> {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
        if profile.name == "sim" {
            let board = SimBoard::new(PlantParams::default(), Arc::clone(&clock));
            Self::new(profile.tools, &board, clock, config)
        } else {
            Self::new(profile.tools, &LinuxBoard, clock, config)
        }
    }

    /// The tools, in a stable order.
    pub fn tools(&self) -> &[ToolInfo] {
        &self.infos
    }

    /// The settings.
    pub fn config(&self) -> ToolConfig {
        self.config
    }
}

/// The limits of an actuator entry, checked; `None` for a sensor.
fn check_limits(e: &ToolMapEntry) -> Result<Option<crate::profiles::ActuatorLimits>, Problem> {
    match (e.driver, e.limits) {
        ("tmp102", None) => Ok(None),
        ("tmp102", Some(_)) => Err(Problem::BadEntry),
        (_, None) => Err(Problem::BadLimits),
        (driver, Some(l)) => {
            let fits = match driver {
                "relay" => l.min == 0.0 && l.max == 1.0 && (l.safe == 0.0 || l.safe == 1.0),
                _ => l.min >= 0.0 && l.max <= 100.0,
            };
            if fits && ActuatorState::limits_ok(&l) {
                Ok(Some(l))
            } else {
                Err(Problem::BadLimits)
            }
        }
    }
}

/// Cuts `s` to at most `max` bytes on a character boundary, ending it with
/// [`TRUNCATED_MARKER`] when there is room for it.
pub fn cap_output(mut s: String, max: usize) -> String {
    if s.len() <= max {
        return s;
    }
    let keep = max.checked_sub(TRUNCATED_MARKER.len());
    let mut at = keep.unwrap_or(max);
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    s.truncate(at);
    if keep.is_some() {
        s.push_str(TRUNCATED_MARKER);
    }
    s
}

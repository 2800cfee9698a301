//! Errors of tool calls and of building a tool box.

use std::fmt;

use embedded_hal::{digital, i2c, pwm};
use glimmer_core::chat::json::JsonError;
use glimmer_core::chat::schema::{ArgError, SchemaError};
use glimmer_core::proto::ErrorCode;

use crate::hal::OpenError;

/// Why a tool call failed. [`code`](ToolError::code) is what goes on the wire.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolError {
    /// No tool has this name.
    UnknownTool,
    /// The arguments are not a JSON object or fail the tool's schema.
    BadToolArgs(BadArgs),
    /// An actuator refused a value outside its range or rate limit (never clamped).
    ActuatorLimit(Limit),
    /// The device did not answer within the tool's timeout.
    ToolTimeout {
        /// The timeout, in milliseconds.
        after_ms: u32,
    },
    /// The device reported a failure.
    ToolFailed(HwError),
    /// A previous call to this device is still stuck (it timed out and has not returned).
    Busy,
}

impl ToolError {
    /// The stable wire code.
    pub fn code(&self) -> ErrorCode {
        match self {
            ToolError::UnknownTool => ErrorCode::UnknownTool,
            ToolError::BadToolArgs(_) => ErrorCode::BadToolArgs,
            ToolError::ActuatorLimit(_) => ErrorCode::ActuatorLimit,
            ToolError::ToolTimeout { .. } => ErrorCode::ToolTimeout,
            ToolError::ToolFailed(_) => ErrorCode::ToolFailed,
            ToolError::Busy => ErrorCode::Busy,
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::UnknownTool => f.write_str("no such tool"),
            ToolError::BadToolArgs(b) => write!(f, "bad arguments: {b}"),
            ToolError::ActuatorLimit(l) => write!(f, "refused: {l}"),
            ToolError::ToolTimeout { after_ms } => {
                write!(f, "the device did not answer within {after_ms} ms")
            }
            ToolError::ToolFailed(h) => write!(f, "device failure: {h}"),
            ToolError::Busy => f.write_str("the device is still busy with an earlier call"),
        }
    }
}

impl std::error::Error for ToolError {}

/// What is wrong with a call's arguments.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadArgs {
    /// The arguments are not a JSON object.
    Json(JsonError),
    /// An argument fails the schema.
    Arg(ArgError),
    /// The tool's own schema did not parse (a bug in the tool box).
    Schema(SchemaError),
}

impl fmt::Display for BadArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadArgs::Json(e) => write!(f, "arguments are not a JSON object ({e:?})"),
            BadArgs::Arg(e) => write!(f, "{e}"),
            BadArgs::Schema(e) => write!(f, "tool schema: {e}"),
        }
    }
}

/// An actuator limit a command broke. Values are in thousandths of the actuator's unit.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// The value is outside `min..=max`.
    OutOfRange {
        /// Smallest allowed value, in thousandths.
        min_milli: i64,
        /// Largest allowed value, in thousandths.
        max_milli: i64,
    },
    /// The value changed too recently.
    TooSoon {
        /// How long until a change is allowed, in milliseconds.
        wait_ms: u64,
    },
    /// The change is larger than one command may make.
    StepTooLarge {
        /// Largest step, in thousandths.
        max_step_milli: i64,
    },
}

/// `x` in thousandths (saturating).
pub(crate) fn milli(x: f32) -> i64 {
    (f64::from(x) * 1000.0).round() as i64
}

fn unit(m: i64) -> f64 {
    m as f64 / 1000.0
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Limit::OutOfRange {
                min_milli,
                max_milli,
            } => write!(f, "value outside {}..={}", unit(min_milli), unit(max_milli)),
            Limit::TooSoon { wait_ms } => {
                write!(f, "changed too recently; retry in {wait_ms} ms")
            }
            Limit::StepTooLarge { max_step_milli } => {
                write!(f, "step larger than {} at once", unit(max_step_milli))
            }
        }
    }
}

/// A device failure.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HwError {
    /// The I2C bus failed.
    I2c(i2c::ErrorKind),
    /// A GPIO line failed.
    Gpio(digital::ErrorKind),
    /// A PWM channel failed.
    Pwm(pwm::ErrorKind),
    /// The driver panicked.
    Panicked,
    /// The device's worker thread is gone.
    Stopped,
}

impl fmt::Display for HwError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HwError::I2c(k) => write!(f, "I2C: {k}"),
            HwError::Gpio(k) => write!(f, "GPIO: {k}"),
            HwError::Pwm(k) => write!(f, "PWM: {k}"),
            HwError::Panicked => f.write_str("the driver panicked"),
            HwError::Stopped => f.write_str("the device worker stopped"),
        }
    }
}

/// Why a tool map entry could not become a tool.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The driver name is not one this board knows.
    UnknownDriver,
    /// The bus is not one this board has.
    BadBus,
    /// The address does not parse or is out of range.
    BadAddress,
    /// An actuator has no limits, or limits with `min > max` or `safe` outside them.
    BadLimits,
    /// A sensor entry has limits, or two devices share a name.
    BadEntry,
    /// The device could not be opened.
    Open(OpenError),
    /// The device did not take its safe state at start.
    SafeState(ToolError),
    /// No thread could be started for the device.
    Spawn,
}

/// A tool map entry that could not become a tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuildError {
    /// The entry's tool.
    pub tool: &'static str,
    /// The entry's device name.
    pub name: &'static str,
    /// What went wrong.
    pub problem: Problem,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool `{}` device `{}`: ", self.tool, self.name)?;
        match self.problem {
            Problem::UnknownDriver => f.write_str("unknown driver"),
            Problem::BadBus => f.write_str("bus not on this board"),
            Problem::BadAddress => f.write_str("bad address"),
            Problem::BadLimits => f.write_str("missing or inconsistent actuator limits"),
            Problem::BadEntry => f.write_str("inconsistent entry"),
            Problem::Open(e) => write!(f, "cannot open: {e}"),
            Problem::SafeState(e) => write!(f, "cannot set the safe state: {e}"),
            Problem::Spawn => f.write_str("cannot start a worker thread"),
        }
    }
}

impl std::error::Error for BuildError {}

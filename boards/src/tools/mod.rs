//! Board devices as tools the model can call.
//!
//! A [`ToolBox`] is built from a board profile's tool map
//! ([`crate::profiles::ToolMapEntry`]) on a [`Board`] ([`SimBoard`] or [`LinuxBoard`]).
//! Each device becomes part of a tool: TMP102 sensors sharing a tool name make one
//! `read_temperature`-style tool with a `zone` argument, each relay a tool with `on`, each
//! PWM actuator a tool with `percent`; `list_zones` and `get_status` come with them.
//!
//! The daemon reads [`ToolBox::tools`] ([`ToolInfo`]: name, description, JSON schema; see
//! [`ToolInfo::def`] for the chat templates) and calls [`ToolBox::invoke`] with a tool name
//! and JSON arguments, from any thread. Arguments are checked with core's
//! [`ToolSchema`](glimmer_core::chat::schema::ToolSchema); failures are [`ToolError`]s with
//! a wire [`code`](ToolError::code).
//!
//! Safety rails:
//! - every device runs on its own worker thread and every call has a timeout; a device
//!   with a hung call answers [`ToolError::Busy`] at once until the call returns;
//! - output is capped at [`ToolConfig::max_output_bytes`], ending in [`TRUNCATED_MARKER`];
//! - actuators refuse values outside their range or too soon after a change
//!   ([`ToolError::ActuatorLimit`]), may be run dry (config or per-call `dry_run`), start
//!   in their safe state and return to it when the watchdog
//!   ([`ToolBox::service_watchdog`], [`ToolBox::spawn_watchdog`]) finds them uncommanded
//!   for longer than their period.

mod actuator;
mod board;
mod device;
mod error;
mod invoke;
mod spec;
mod toolbox;
mod watchdog;
mod worker;

#[cfg(test)]
mod tests;

pub use board::{parse_address, Board, LinuxBoard, SimBoard};
pub use device::{Device, Level, Switch, Thermometer};
pub use error::{BadArgs, BuildError, HwError, Limit, Problem, ToolError};
pub use spec::{ToolInfo, GET_STATUS, LIST_ZONES};
pub use toolbox::{cap_output, ToolBox, ToolConfig, TRUNCATED_MARKER};
pub use watchdog::WatchdogHandle;

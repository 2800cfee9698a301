//! Running one tool call: argument checks, policy, the device call, the capped result.

use glimmer_core::chat::json;
use glimmer_core::chat::schema::{ArgErrorKind, Param, ToolSchema, Value};
use glimmer_core::chat::toolcall::CallArgs;

use super::device::Device;
use super::error::{BadArgs, HwError, ToolError};
use super::spec::{json_str, Kind};
use super::toolbox::{cap_output, Dev, ToolBox};

/// Most parameters a tool of this box has.
const MAX_PARAMS: usize = 4;
/// Most enum options (zones) a tool of this box has.
const MAX_OPTIONS: usize = 64;

impl ToolBox {
    /// Runs tool `name` with `args_json` (a JSON object; empty text counts as `{}`) and
    /// returns its result as JSON text, at most [`max_output_bytes`] long.
    ///
    /// [`max_output_bytes`]: super::ToolConfig::max_output_bytes
    pub fn invoke(&self, name: &str, args_json: &str) -> Result<String, ToolError> {
        let t = self.infos.iter().position(|t| t.name == name);
        let t = t.ok_or(ToolError::UnknownTool)?;
        let info = &self.infos[t];
        let mut params = [Param::EMPTY; MAX_PARAMS];
        let mut options = [""; MAX_OPTIONS];
        let schema = ToolSchema::from_json(
            &info.name,
            &info.description,
            &info.parameters,
            &mut params,
            &mut options,
        )
        .map_err(|e| ToolError::BadToolArgs(BadArgs::Schema(e)))?;
        let args = if args_json.trim().is_empty() {
            "{}"
        } else {
            args_json
        };
        let obj = json::parse_object(args).map_err(|e| ToolError::BadToolArgs(BadArgs::Json(e)))?;
        let mut values = [Value::Absent; MAX_PARAMS];
        let checked = schema.check(&CallArgs::Json(obj), &mut values);
        let out = match (&self.kinds[t], checked) {
            // The schema carries an actuator's range; breaking it is a limit, not a typo.
            (Kind::Switch(d) | Kind::Level(d), Err(e)) if e.kind == ArgErrorKind::OutOfRange => {
                let state = self.devs[*d].state().ok_or(ToolError::UnknownTool)?;
                return Err(ToolError::ActuatorLimit(state.range_limit()));
            }
            (_, Err(e)) => return Err(ToolError::BadToolArgs(BadArgs::Arg(e))),
            (Kind::Read(devs), Ok(())) => self.read(devs, values[0])?,
            (Kind::ListZones(devs), Ok(())) => self.list_zones(devs),
            (Kind::Switch(d), Ok(())) => {
                let on = values[0] == Value::Bool(true);
                self.set(&self.devs[*d], if on { 1.0 } else { 0.0 }, values[1])?
            }
            (Kind::Level(d), Ok(())) => {
                let Value::Num(p) = values[0] else {
                    return Err(ToolError::UnknownTool);
                };
                self.set(&self.devs[*d], p as f32, values[1])?
            }
            (Kind::Status(devs), Ok(())) => self.status(devs),
        };
        Ok(cap_output(out, self.config.max_output_bytes))
    }

    fn read(&self, devs: &[usize], zone: Value<'_>) -> Result<String, ToolError> {
        let Value::Enum(z) = zone else {
            return Err(ToolError::UnknownTool);
        };
        let dev = devs
            .get(z)
            .map(|&i| &self.devs[i])
            .ok_or(ToolError::UnknownTool)?;
        let c = dev
            .worker
            .call(dev.timeout, |d| match d {
                Device::Thermometer(t) => t.read_celsius(),
                _ => Err(HwError::Stopped),
            })?
            .map_err(ToolError::ToolFailed)?;
        Ok(format!(
            "{{\"zone\":{},\"celsius\":{c}}}",
            json_str(dev.entry.name)
        ))
    }

    fn list_zones(&self, devs: &[usize]) -> String {
        let zones: Vec<String> = devs
            .iter()
            .map(|&i| {
                let e = &self.devs[i].entry;
                format!(
                    "{{\"zone\":{},\"description\":{}}}",
                    json_str(e.name),
                    json_str(e.description)
                )
            })
            .collect();
        format!("{{\"zones\":[{}]}}", zones.join(","))
    }

    fn set(&self, dev: &Dev, v: f32, dry_run: Value<'_>) -> Result<String, ToolError> {
        let dry = self.config.dry_run || dry_run == Value::Bool(true);
        let mut state = dev.state().ok_or(ToolError::UnknownTool)?;
        let now = self.clock.now();
        state.check(v, now).map_err(ToolError::ActuatorLimit)?;
        let name = json_str(dev.entry.name);
        let from = show(dev, state.value);
        let to = show(dev, Some(v));
        let change = state.value != Some(v);
        if dry {
            return Ok(format!(
                "{{\"dry_run\":true,\"device\":{name},\"from\":{from},\"to\":{to},\
                 \"would_change\":{change}}}"
            ));
        }
        if let Err(e) = dev.apply(v) {
            if matches!(e, ToolError::ToolTimeout { .. } | ToolError::ToolFailed(_)) {
                state.value = None;
            }
            return Err(e);
        }
        state.applied(v, now);
        Ok(format!(
            "{{\"device\":{name},\"from\":{from},\"to\":{to},\"changed\":{change}}}"
        ))
    }

    fn status(&self, devs: &[usize]) -> String {
        let now = self.clock.now();
        let items: Vec<String> = devs
            .iter()
            .filter_map(|&i| {
                let dev = &self.devs[i];
                let s = dev.state()?;
                let since = now.saturating_sub(s.commanded_at).as_secs_f32();
                Some(format!(
                    "{{\"device\":{},\"tool\":{},\"value\":{},\"safe\":{},\
                     \"seconds_since_command\":{since:.1},\"watchdog_seconds\":{},\
                     \"watchdog_trips\":{}}}",
                    json_str(dev.entry.name),
                    json_str(dev.entry.tool),
                    show(dev, s.value),
                    show(dev, Some(s.limits.safe)),
                    f64::from(s.limits.watchdog_ms) / 1000.0,
                    s.watchdog_trips
                ))
            })
            .collect();
        format!("{{\"actuators\":[{}]}}", items.join(","))
    }
}

/// An actuator value as JSON: `true`/`false` for a switch, a number for a level, `null`
/// when unknown.
fn show(dev: &Dev, v: Option<f32>) -> String {
    match (v, dev.entry.driver) {
        (None, _) => "null".into(),
        (Some(v), "relay") => (v >= 0.5).to_string(),
        (Some(v), _) => format!("{v}"),
    }
}

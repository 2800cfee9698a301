//! What the model sees: each tool's name, description and JSON schema, derived from the
//! tool map.

use glimmer_core::chat::ToolDef;

use super::error::Problem;
use crate::profiles::ToolMapEntry;

/// A tool as offered to the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolInfo {
    /// Tool name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON schema of its arguments (an object schema), as JSON text.
    pub parameters: String,
}

impl ToolInfo {
    /// The tool as core's chat templates take it.
    pub fn def(&self) -> ToolDef<'_> {
        ToolDef {
            name: &self.name,
            description: &self.description,
            parameters: &self.parameters,
        }
    }
}

/// Name of the tool that lists the sensor zones.
pub const LIST_ZONES: &str = "list_zones";
/// Name of the tool that reports every actuator's state.
pub const GET_STATUS: &str = "get_status";

/// What a tool does, over which devices (indices into the tool map).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Reads one of these sensors, chosen by the `zone` argument (an index into the list).
    Read(Vec<usize>),
    /// Lists these sensors.
    ListZones(Vec<usize>),
    /// Switches this relay (`on`).
    Switch(usize),
    /// Sets this PWM actuator (`percent`).
    Level(usize),
    /// Reports these actuators.
    Status(Vec<usize>),
}

/// `s` as a JSON string literal.
pub(crate) fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

const DRY_RUN: &str = "\"dry_run\":{\"type\":\"boolean\",\"description\":\"Only check the \
    command and report what it would do; change nothing.\"}";

/// The tools for `entries`, in order of first appearance, with list/status tools last.
pub(crate) fn tools(entries: &[ToolMapEntry]) -> Result<Vec<(ToolInfo, Kind)>, (usize, Problem)> {
    let mut out: Vec<(ToolInfo, Kind)> = Vec::new();
    let (mut sensors, mut actuators) = (Vec::new(), Vec::new());
    for (i, e) in entries.iter().enumerate() {
        let taken = out.iter().position(|(t, _)| t.name == e.tool);
        match (e.driver, taken) {
            ("tmp102", Some(k)) => match &mut out[k].1 {
                Kind::Read(devs) => devs.push(i),
                _ => return Err((i, Problem::BadEntry)),
            },
            ("tmp102", None) => out.push((info_stub(e.tool), Kind::Read(vec![i]))),
            (_, Some(_)) => return Err((i, Problem::BadEntry)),
            ("relay", None) => out.push((switch_info(e), Kind::Switch(i))),
            ("pwm", None) => out.push((level_info(e), Kind::Level(i))),
            _ => return Err((i, Problem::UnknownDriver)),
        }
        if e.driver == "tmp102" {
            sensors.push(i);
        } else {
            actuators.push(i);
        }
    }
    for (info, kind) in &mut out {
        if let Kind::Read(devs) = kind {
            *info = read_info(&info.name, entries, devs);
        }
    }
    for name in [LIST_ZONES, GET_STATUS] {
        if out.iter().any(|(t, _)| t.name == name) {
            let at = entries.iter().position(|e| e.tool == name).unwrap_or(0);
            return Err((at, Problem::BadEntry));
        }
    }
    if !sensors.is_empty() {
        let info = ToolInfo {
            name: LIST_ZONES.into(),
            description: "List the zones whose temperature can be read.".into(),
            parameters: "{\"type\":\"object\",\"properties\":{},\"required\":[]}".into(),
        };
        out.push((info, Kind::ListZones(sensors)));
    }
    if !actuators.is_empty() {
        let info = ToolInfo {
            name: GET_STATUS.into(),
            description: "Report each actuator's present value, safe value and watchdog state."
                .into(),
            parameters: "{\"type\":\"object\",\"properties\":{},\"required\":[]}".into(),
        };
        out.push((info, Kind::Status(actuators)));
    }
    Ok(out)
}

fn info_stub(name: &str) -> ToolInfo {
    ToolInfo {
        name: name.into(),
        description: String::new(),
        parameters: String::new(),
    }
}

fn read_info(name: &str, entries: &[ToolMapEntry], devs: &[usize]) -> ToolInfo {
    let zones: Vec<String> = devs.iter().map(|&i| json_str(entries[i].name)).collect();
    let what: Vec<String> = devs
        .iter()
        .map(|&i| format!("{} ({})", entries[i].name, entries[i].description))
        .collect();
    let desc = format!("Zone to read: {}.", what.join(", "));
    ToolInfo {
        name: name.into(),
        description: "Read the temperature of a zone, in degrees Celsius.".into(),
        parameters: format!(
            "{{\"type\":\"object\",\"properties\":{{\"zone\":{{\"type\":\"string\",\
             \"enum\":[{}],\"description\":{}}}}},\"required\":[\"zone\"]}}",
            zones.join(","),
            json_str(&desc)
        ),
    }
}

fn switch_info(e: &ToolMapEntry) -> ToolInfo {
    let safe = e.limits.is_some_and(|l| l.safe >= 0.5);
    ToolInfo {
        name: e.tool.into(),
        description: format!(
            "Switch {} on or off. Safe state: {}.",
            e.description,
            if safe { "on" } else { "off" }
        ),
        parameters: format!(
            "{{\"type\":\"object\",\"properties\":{{\"on\":{{\"type\":\"boolean\",\
             \"description\":\"true to switch on, false to switch off\"}},{DRY_RUN}}},\
             \"required\":[\"on\"]}}"
        ),
    }
}

fn level_info(e: &ToolMapEntry) -> ToolInfo {
    let (min, max, safe) = e
        .limits
        .map_or((0.0, 100.0, 0.0), |l| (l.min, l.max, l.safe));
    ToolInfo {
        name: e.tool.into(),
        description: format!("Set {}. Safe level: {safe} %.", e.description),
        parameters: format!(
            "{{\"type\":\"object\",\"properties\":{{\"percent\":{{\"type\":\"number\",\
             \"minimum\":{min:?},\"maximum\":{max:?},\
             \"description\":\"level in percent of full power\"}},{DRY_RUN}}},\
             \"required\":[\"percent\"]}}"
        ),
    }
}

//! The board's [`ToolBox`] as the daemon's [`ToolHost`].

use glimmer_core::proto::ErrorCode;

use super::tools::{ToolDesc, ToolFailure, ToolHost};
use crate::tools::{ToolBox, ToolError};

impl ToolHost for ToolBox {
    fn tools(&self) -> Vec<ToolDesc> {
        ToolBox::tools(self)
            .iter()
            .map(|t| ToolDesc {
                name: t.name.clone(),
                description: t.description.clone(),
                schema_json: t.parameters.clone(),
            })
            .collect()
    }

    fn invoke(&self, name: &str, args_json: &str) -> Result<String, ToolFailure> {
        ToolBox::invoke(self, name, args_json).map_err(|e| failure(&e))
    }
}

/// The wire code and message of a board tool's error.
pub fn failure(e: &ToolError) -> ToolFailure {
    let code = e.code();
    let code = if code == ErrorCode::Unknown {
        ErrorCode::ToolFailed
    } else {
        code
    };
    ToolFailure::new(code, e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiles;
    use crate::tools::ToolConfig;

    #[test]
    fn sim_tools_pass_through_with_their_codes() {
        let sim = profiles::profile("sim").unwrap();
        let tb = ToolBox::from_profile(sim, ToolConfig::default()).unwrap();
        let host: &dyn ToolHost = &tb;
        let names: Vec<String> = host.tools().into_iter().map(|t| t.name).collect();
        assert!(names.iter().any(|n| n == "read_temperature"), "{names:?}");
        let out = host
            .invoke("read_temperature", r#"{"zone":"cabinet"}"#)
            .unwrap();
        assert!(out.contains("celsius"), "{out}");
        let e = host.invoke("set_heater", r#"{"percent":250}"#).unwrap_err();
        assert_eq!(e.code, ErrorCode::ActuatorLimit);
        let e = host.invoke("no_such_tool", "{}").unwrap_err();
        assert_eq!(e.code, ErrorCode::UnknownTool);
    }
}

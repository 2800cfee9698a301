//! Shared by the `daemon_*` tests: a daemon on a private socket with the real default model
//! and a small test [`ToolHost`].

#![allow(dead_code)] // Each test binary uses a different part.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use glimmer_boards::client::{Client, Event, SessionOptions};
use glimmer_boards::daemon::{Daemon, DaemonConfig, ToolDesc, ToolFailure, ToolHost};
use glimmer_boards::model_file::default_model_path;
use glimmer_core::proto::{DoneStats, ErrorCode, Role, SamplingConfig};

/// Tools for the tests: a thermometer, a fan with a range check, and a hygrometer that hangs.
pub struct TestTools;

impl ToolHost for TestTools {
    fn tools(&self) -> Vec<ToolDesc> {
        let t = |name: &str, description: &str, schema_json: &str| ToolDesc {
            name: name.into(),
            description: description.into(),
            schema_json: schema_json.into(),
        };
        vec![
            t(
                "read_temperature",
                "Read the temperature of a thermal zone, in degrees Celsius.",
                r#"{"type":"object","properties":{"zone":{"type":"string","description":"zone name"}},"required":[]}"#,
            ),
            t(
                "set_fan",
                "Set the fan speed in percent (0 to 100).",
                r#"{"type":"object","properties":{"percent":{"type":"integer"}},"required":["percent"]}"#,
            ),
            t(
                "read_humidity",
                "Read the relative humidity of a zone (this test sensor hangs).",
                r#"{"type":"object","properties":{"zone":{"type":"string"}},"required":[]}"#,
            ),
        ]
    }

    fn invoke(&self, name: &str, args_json: &str) -> Result<String, ToolFailure> {
        match name {
            "read_temperature" => Ok("{\"celsius\":21.5}".into()),
            "set_fan" => {
                let v: serde_json::Value = serde_json::from_str(args_json)
                    .map_err(|e| ToolFailure::new(ErrorCode::BadToolArgs, e.to_string()))?;
                let p = v["percent"].as_i64().unwrap_or(-1);
                if !(0..=100).contains(&p) {
                    return Err(ToolFailure::new(
                        ErrorCode::ActuatorLimit,
                        format!("fan speed {p}% outside 0..=100"),
                    ));
                }
                Ok(format!("{{\"fan_percent\":{p}}}"))
            }
            "read_humidity" => {
                std::thread::sleep(Duration::from_secs(3600));
                Ok("never".into())
            }
            _ => Err(ToolFailure::new(ErrorCode::UnknownTool, name.to_string())),
        }
    }
}

/// The default model, or `None` (with a message) when it is absent.
pub fn model() -> Option<PathBuf> {
    let p = default_model_path();
    if p.exists() {
        Some(p)
    } else {
        eprintln!(
            "SKIP: model {} not found (set GLIMMER_MODELS or run scripts/fetch-models.sh)",
            p.display()
        );
        None
    }
}

static SEQ: AtomicU32 = AtomicU32::new(0);

/// A config on a fresh socket path in a directory the daemon creates.
pub fn config(model: PathBuf) -> DaemonConfig {
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("glimmerd-test-{}-{n}", std::process::id()));
    let mut cfg = DaemonConfig::new(dir.join("d.sock"));
    cfg.model = model;
    cfg.ctx = 1024;
    cfg.sessions = 2;
    cfg.limits.tool_timeout = Duration::from_millis(500);
    cfg.limits.client_tool_timeout = Duration::from_secs(10);
    cfg.limits.frame_timeout = Duration::from_millis(300);
    cfg
}

/// Starts a daemon with [`TestTools`].
pub fn start(cfg: DaemonConfig) -> Daemon {
    Daemon::start(cfg, Arc::new(TestTools)).expect("daemon starts")
}

/// A client that said hello, waiting at most 120 s for any one frame.
pub fn client(d: &Daemon) -> Client {
    client_waiting(d, Duration::from_secs(120))
}

/// A client that said hello, waiting at most `wait` for any one frame (a slow engine's
/// prefill sends nothing until it ends).
pub fn client_waiting(d: &Daemon, wait: Duration) -> Client {
    let mut c = Client::connect(d.socket()).expect("connect");
    c.stream().set_read_timeout(Some(wait)).expect("timeout");
    c.hello("daemon-tests").expect("hello");
    c
}

/// Greedy sampling of at most `n` tokens.
pub fn greedy(n: u32) -> SamplingConfig {
    SamplingConfig {
        temperature: 0.0,
        top_k: 0,
        top_p: 1.0,
        seed: 0,
        max_tokens: n,
    }
}

/// Session options: greedy, `n` tokens, the given tools.
pub fn opts(n: u32, tools: Option<&[&str]>) -> SessionOptions {
    SessionOptions {
        sampling: greedy(n),
        system: None,
        tools: tools.map(|t| t.iter().map(|s| s.to_string()).collect()),
        constrained_tool_args: false,
    }
}

/// As [`opts`], with tool-call arguments constrained to the tool's schema while decoding, so
/// the test does not hang on what the small model would write freely.
pub fn constrained_opts(n: u32, tools: Option<&[&str]>) -> SessionOptions {
    SessionOptions {
        constrained_tool_args: true,
        ..opts(n, tools)
    }
}

/// A finished turn: text, events, stats.
#[derive(Debug, Clone)]
pub struct TurnLog {
    pub text: String,
    pub events: Vec<Event>,
    pub done: DoneStats,
}

/// Runs one user turn on `session`.
pub fn turn(c: &mut Client, session: u64, msg: &str) -> TurnLog {
    let mut events = Vec::new();
    let done = c
        .chat(session, Role::User, msg, |e| events.push(e.clone()))
        .expect("turn");
    let text = events
        .iter()
        .filter_map(|e| match e {
            Event::Token(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    TurnLog { text, events, done }
}

/// Asserts `c` still gets answers (a `Stats` round trip).
pub fn still_serving(d: &Daemon) {
    let mut c = client(d);
    let s = c.stats().expect("stats after the bad input");
    assert!(s.connections_total >= 1);
}

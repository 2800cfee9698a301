//! `glimmerd` on the wgpu backend (lavapipe in CI, Metal on Apple Silicon) with the real
//! default model: a constrained agentic turn makes the same tool call as on the CPU backend,
//! with no re-prefill after the result; a session slot reused after another session closed
//! gives what a fresh slot gives (the old KV entries are never read).
//!
//! Without a GPU adapter the tests skip with a message, unless `GLIMMER_REQUIRE_GPU=1` (CI).

mod daemon_common;

use daemon_common::*;
use glimmer_apple::GpuError;
use glimmer_boards::client::Event;
use glimmer_boards::daemon::{Daemon, DaemonConfig, DaemonError};
use glimmer_boards::engine::BackendKind;
use glimmer_core::proto::ToolChoice;

const MSG: &str =
    "Read the temperature of the cpu zone: call read_temperature with {\"zone\": \"cpu\"}.";

/// A daemon on the wgpu backend, or `None` (with a message) when no adapter exists.
fn start_gpu(mut cfg: DaemonConfig) -> Option<Daemon> {
    cfg.backend = BackendKind::Wgpu;
    match Daemon::start(cfg, std::sync::Arc::new(TestTools)) {
        Ok(d) => Some(d),
        Err(DaemonError::Model(e))
            if matches!(*e, glimmer_boards::Error::Gpu(GpuError::NoAdapter))
                && std::env::var("GLIMMER_REQUIRE_GPU").as_deref() != Ok("1") =>
        {
            eprintln!(
                "SKIP: no Vulkan/Metal adapter (install mesa-vulkan-drivers for lavapipe); \
                 set GLIMMER_REQUIRE_GPU=1 to make this a failure"
            );
            None
        }
        Err(e) => panic!("wgpu daemon did not start: {e}"),
    }
}

/// `(name, args)` of each tool call.
type Calls = Vec<(String, String)>;
/// `(ok, content)` of each tool result.
type Results = Vec<(bool, String)>;

/// The tool calls and results of a turn.
fn calls(t: &TurnLog) -> (Calls, Results) {
    let mut c = Vec::new();
    let mut r = Vec::new();
    for e in &t.events {
        match e {
            Event::ToolCall {
                name, args_json, ..
            } => c.push((name.clone(), args_json.clone())),
            Event::ToolResult { ok, content, .. } => r.push((*ok, content.clone())),
            _ => {}
        }
    }
    (c, r)
}

/// One forced, constrained tool turn on a fresh session of `d`.
fn tool_turn(d: &Daemon) -> (TurnLog, u64) {
    let mut c = client(d);
    let s = c
        .open_session(&constrained_opts(24, Some(&["read_temperature"])))
        .unwrap();
    c.set_tool_choice(s, ToolChoice::Required).unwrap();
    let fed0 = d.tokens_fed();
    let t = turn(&mut c, s, MSG);
    let fed = d.tokens_fed() - fed0;
    c.close_session(s).unwrap();
    (t, fed)
}

#[test]
fn gpu_daemon_makes_the_cpu_daemons_tool_call() {
    let Some(model) = model() else { return };
    let Some(gpu) = start_gpu(config(model.clone())) else {
        return;
    };
    let (g, g_fed) = tool_turn(&gpu);
    eprintln!("gpu turn: {:?}", g.events);
    let (g_calls, g_results) = calls(&g);
    assert!(!g_calls.is_empty(), "the forced turn made no call: {g:?}");
    assert_eq!(g_calls[0].0, "read_temperature");
    assert_eq!(g_results.len(), g_calls.len());
    assert!(g_results[0].0, "tool failed: {:?}", g_results[0]);
    assert_eq!(g_results[0].1, "{\"celsius\":21.5}");
    // No re-prefill after the result: every prompt and appended token once, every generated
    // token but the last once.
    assert_eq!(
        g_fed,
        u64::from(g.done.tokens_in) + u64::from(g.done.tokens_out) - 1,
        "tokens fed {g_fed} vs {:?}",
        g.done
    );

    // The session's slot is free again: a new session reuses it over the old entries.
    let (again, _) = tool_turn(&gpu);
    assert_eq!(again.text, g.text, "a reused slot changed the reply");
    assert_eq!(calls(&again).0, g_calls, "a reused slot changed the call");
    gpu.shutdown().unwrap();

    // The CPU backend, same prompt: the same call (name and arguments).
    let cpu = start(config(model));
    let (c, _) = tool_turn(&cpu);
    cpu.shutdown().unwrap();
    assert_eq!(
        calls(&c).0,
        g_calls,
        "cpu {:?}\ngpu {:?}",
        c.events,
        g.events
    );
    eprintln!("cpu text {:?}\ngpu text {:?}", c.text, g.text);
}

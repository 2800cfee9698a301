//! `glimmerd` on the GPU engines with the real default model: wgpu (lavapipe in CI, Metal on
//! Apple Silicon) and CUDA (Jetson, NVIDIA GPUs). On each, a constrained agentic turn makes
//! the same tool call as on the CPU backend, with no re-prefill after the result, and a
//! session slot reused after another session closed gives what a fresh slot gives (the old KV
//! entries are never read).
//!
//! Without a Vulkan/Metal adapter the wgpu test skips with a message, unless
//! `GLIMMER_REQUIRE_GPU=1` (CI). Without a CUDA driver (CI has none) the CUDA test skips with a
//! message, unless `GLIMMER_REQUIRE_CUDA=1`.

mod daemon_common;

use daemon_common::*;
use glimmer_apple::GpuError;
use glimmer_boards::client::Event;
use glimmer_boards::daemon::{Daemon, DaemonConfig, DaemonError};
use glimmer_boards::engine::BackendKind;
use glimmer_core::proto::ToolChoice;
use glimmer_jetson::CudaError;

const MSG: &str =
    "Read the temperature of the cpu zone: call read_temperature with {\"zone\": \"cpu\"}.";

/// Whether a daemon that failed to start with `e` on `kind` lacks the device (rather than
/// failing on it).
fn no_device(kind: BackendKind, e: &glimmer_boards::Error) -> bool {
    use glimmer_boards::Error as E;
    match kind {
        BackendKind::Wgpu => matches!(e, E::Gpu(GpuError::NoAdapter)),
        BackendKind::Cuda => matches!(
            e,
            E::Cuda(CudaError::NoDriver | CudaError::NoNvrtc | CudaError::Unavailable)
                | E::BackendUnavailable { .. }
        ),
        BackendKind::Cpu => false,
    }
}

/// A daemon on `kind`, or `None` (with a message) when this machine has no such device.
fn start_on(kind: BackendKind, mut cfg: DaemonConfig) -> Option<Daemon> {
    cfg.backend = kind;
    let (var, hint) = match kind {
        BackendKind::Cuda => ("GLIMMER_REQUIRE_CUDA", "no CUDA driver or device"),
        _ => (
            "GLIMMER_REQUIRE_GPU",
            "no Vulkan/Metal adapter (install mesa-vulkan-drivers for lavapipe)",
        ),
    };
    match Daemon::start(cfg, std::sync::Arc::new(TestTools)) {
        Ok(d) => Some(d),
        Err(DaemonError::Model(e))
            if no_device(kind, &e) && std::env::var(var).as_deref() != Ok("1") =>
        {
            eprintln!("SKIP: {hint} ({e}); set {var}=1 to make this a failure");
            None
        }
        Err(e) => panic!("{kind} daemon did not start: {e}"),
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
    // lavapipe (CI's Vulkan device, on 2 CPU cores) prefills this prompt in minutes, and the
    // first frame comes only after it: the wait is for correctness, not speed.
    let mut c = client_waiting(d, std::time::Duration::from_secs(900));
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

/// The same short plain turn on two sessions open at once (the first over the slot the last
/// closed session left, the second on another slot): `(first, second)`.
fn short_turns(d: &Daemon) -> (TurnLog, TurnLog) {
    let mut c = client_waiting(d, std::time::Duration::from_secs(900));
    let a = c.open_session(&opts(4, Some(&[]))).unwrap();
    let b = c.open_session(&opts(4, Some(&[]))).unwrap();
    let ta = turn(&mut c, a, "Hi.");
    let tb = turn(&mut c, b, "Hi.");
    c.close_session(a).unwrap();
    c.close_session(b).unwrap();
    (ta, tb)
}

#[test]
fn wgpu_daemon_makes_the_cpu_daemons_tool_call() {
    gpu_daemon_makes_the_cpu_daemons_tool_call(BackendKind::Wgpu);
}

#[test]
fn cuda_daemon_makes_the_cpu_daemons_tool_call() {
    gpu_daemon_makes_the_cpu_daemons_tool_call(BackendKind::Cuda);
}

fn gpu_daemon_makes_the_cpu_daemons_tool_call(kind: BackendKind) {
    let Some(model) = model() else { return };
    let Some(gpu) = start_on(kind, config(model.clone())) else {
        return;
    };
    let (g, g_fed) = tool_turn(&gpu);
    eprintln!("{kind} turn: {:?}", g.events);
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

    // The session's slot is free again. Two sessions open together: the first takes the slot
    // the tool turn left (free slots are a stack), over its entries, the second a slot never
    // written. A shorter turn on each must give the same text: a decode that read any of the
    // old entries past the new prompt would differ from one that reads the fresh slot.
    let (reused, fresh) = short_turns(&gpu);
    assert!(!reused.text.is_empty(), "the short turn said nothing");
    assert!(
        reused.done.tokens_in + reused.done.tokens_out < g.done.tokens_in,
        "the short turn must end inside the old turn's entries: {:?} vs {:?}",
        reused.done,
        g.done
    );
    assert_eq!(reused.text, fresh.text, "a reused slot changed the reply");
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

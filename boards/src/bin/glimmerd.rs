//! `glimmerd`: the Glimmer inference daemon. See `glimmerd --help`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use glimmer_boards::daemon::{self, listen, DaemonConfig, NoTools, ServeLimits, ToolHost};
use glimmer_boards::engine::BackendKind;
use glimmer_boards::model_file::default_model_path;
use glimmer_boards::profiles;
use glimmer_boards::tools::{ToolBox, ToolConfig};

/// Set by SIGTERM / SIGINT.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// glimmerd: serve one LLM to local controller processes over a Unix socket.
///
/// The model file is mapped once; each session gets its own KV-cache slot, and one engine
/// thread runs all sessions round-robin (one prefill chunk or one token at a time). Clients
/// speak the postcard protocol of docs/PROTOCOL.md (see glimmerctl, the Rust client library
/// glimmer_boards::client, or clients/python/glimmer_client.py).
///
/// Tool calls the model writes are parsed as they stream, checked against the tool's
/// schema, run with a timeout (daemon tools, or tools a client registered), and their
/// results are appended to the session's cache without re-reading the conversation.
///
/// Only peers whose uid (or gid) is allowed may connect; the socket directory is created
/// with mode 0750 and the socket has mode 0660. SIGTERM or SIGINT shuts down cleanly: running
/// turns end, clients get ShuttingDown, the socket is removed.
#[derive(Parser)]
#[command(version, about, long_about)]
struct Args {
    /// GGUF model file [default: $GLIMMER_MODELS/smollm2-135m-instruct-q4_1.gguf, or
    /// ~/.cache/glimmer/models/… when GLIMMER_MODELS is unset].
    #[arg(long)]
    model: Option<PathBuf>,
    /// Board profile: sim, jetson-agx-orin-64g, jetson-orin-nano-8g, apple-m3-max-128g,
    /// linux-x86.
    #[arg(long, default_value = "sim")]
    board: String,
    /// Backend the model runs on: cpu, wgpu (Metal on Apple Silicon, Vulkan elsewhere) or
    /// cuda (decode replays one CUDA graph for every session; needs the NVIDIA driver and
    /// libnvrtc at run time) [default: the board profile's: cpu for sim and linux-x86, cuda
    /// for the Jetson boards, wgpu for apple-m3-max-128g]. The GPU engines keep a whole
    /// context of KV cache per session on the device. CUDA compiles its kernels once into
    /// $GLIMMER_CUDA_CACHE (default ~/.cache/glimmer/cuda); on Hopper and later its kernels
    /// overlap their launches (programmatic dependent launch), which GLIMMER_CUDA_PDL=0 turns
    /// off.
    #[arg(long)]
    backend: Option<String>,
    /// Socket path [default: $XDG_RUNTIME_DIR/glimmer/glimmerd.sock, else
    /// /tmp/glimmer-$UID/glimmerd.sock].
    #[arg(long)]
    socket: Option<PathBuf>,
    /// Uids allowed to connect, comma-separated [default: the daemon's own uid].
    #[arg(long, value_delimiter = ',')]
    allow_uid: Vec<u32>,
    /// Gids allowed to connect, comma-separated (a peer passes on uid or gid).
    #[arg(long, value_delimiter = ',')]
    allow_gid: Vec<u32>,
    /// Session slots (each holds a KV cache of --ctx tokens).
    #[arg(long, default_value_t = 4)]
    sessions: usize,
    /// Context length of each session, in tokens.
    #[arg(long, default_value_t = 2048)]
    ctx: usize,
    /// Most tokens per prefill step.
    #[arg(long, default_value_t = 64)]
    chunk: usize,
    /// Engine worker threads, the engine's own included [default: available cores].
    #[arg(long)]
    threads: Option<usize>,
    /// System prompt for sessions that give none [default: the model template's].
    #[arg(long)]
    system: Option<String>,
    /// Most connections per uid.
    #[arg(long, default_value_t = 16)]
    max_conns_per_uid: usize,
    /// Most requests in flight per connection.
    #[arg(long, default_value_t = 4)]
    max_inflight: usize,
    /// Milliseconds a partial frame may stay incomplete before the sender is dropped.
    #[arg(long, default_value_t = 5000)]
    frame_timeout_ms: u64,
    /// Milliseconds a daemon tool may run.
    #[arg(long, default_value_t = 5000)]
    tool_timeout_ms: u64,
    /// Milliseconds a client-registered tool may take to answer.
    #[arg(long, default_value_t = 30000)]
    client_tool_timeout_ms: u64,
    /// Most bytes of tool output fed back to the model.
    #[arg(long, default_value_t = 2048)]
    max_tool_output: usize,
    /// Most tool rounds per turn.
    #[arg(long, default_value_t = 4)]
    max_tool_rounds: u32,
    /// Validate actuator commands and report what they would do, without touching the
    /// hardware (or the simulated plant).
    #[arg(long)]
    dry_run: bool,
    /// Offer no board tools (only tools that clients register).
    #[arg(long)]
    no_board_tools: bool,
    /// Seconds between watchdog passes that return uncommanded actuators to their safe state.
    #[arg(long, default_value_t = 1.0)]
    watchdog_period: f64,
}

/// The default socket path.
fn default_socket() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) => PathBuf::from(d).join("glimmer").join("glimmerd.sock"),
        None => PathBuf::from(format!("/tmp/glimmer-{}", listen::own_uid())).join("glimmerd.sock"),
    }
}

fn install_signals() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: `on_signal` only stores to an atomic, which is async-signal-safe, and has
        // the `extern "C" fn(c_int)` signature `signal` expects.
        unsafe {
            libc::signal(
                sig,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let a = Args::parse();
    let mut cfg = DaemonConfig::new(a.socket.unwrap_or_else(default_socket));
    cfg.model = a.model.unwrap_or_else(default_model_path);
    cfg.board = a.board;
    if !a.allow_uid.is_empty() {
        cfg.allow_uids = a.allow_uid;
    }
    cfg.allow_gids = a.allow_gid;
    cfg.sessions = a.sessions;
    cfg.ctx = a.ctx;
    cfg.chunk = a.chunk;
    cfg.threads = a
        .threads
        .unwrap_or_else(glimmer_boards::pool::Pool::default_threads)
        .max(1);
    cfg.default_system = a.system;
    cfg.limits = ServeLimits {
        max_conns_per_uid: a.max_conns_per_uid,
        max_inflight: a.max_inflight,
        frame_timeout: Duration::from_millis(a.frame_timeout_ms),
        tool_timeout: Duration::from_millis(a.tool_timeout_ms),
        client_tool_timeout: Duration::from_millis(a.client_tool_timeout_ms),
        max_tool_output: a.max_tool_output,
        max_tool_rounds: a.max_tool_rounds,
        ..ServeLimits::default()
    };
    let Some(profile) = profiles::profile(&cfg.board) else {
        let names: Vec<_> = profiles::names().collect();
        eprintln!(
            "glimmerd: error: unknown board {:?} (known: {})",
            cfg.board,
            names.join(", ")
        );
        return ExitCode::FAILURE;
    };
    let backend_name = a.backend.as_deref().unwrap_or(profile.default_backend);
    cfg.backend = match backend_name.parse::<BackendKind>() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("glimmerd: error: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The board's sensors and actuators; the watchdog runs until the daemon exits.
    let mut _watchdog = None;
    let host: Arc<dyn ToolHost> = if a.no_board_tools {
        Arc::new(NoTools)
    } else {
        let config = ToolConfig {
            dry_run: a.dry_run,
            max_output_bytes: a.max_tool_output,
            ..ToolConfig::default()
        };
        let tb = match ToolBox::from_profile(profile, config) {
            Ok(tb) => Arc::new(tb),
            Err(e) => {
                eprintln!("glimmerd: error: board {} tools: {e}", profile.name);
                return ExitCode::FAILURE;
            }
        };
        let period = Duration::from_secs_f64(a.watchdog_period.clamp(0.01, 3600.0));
        match tb.spawn_watchdog(period) {
            Ok(h) => _watchdog = Some(h),
            Err(e) => {
                eprintln!("glimmerd: error: starting the actuator watchdog: {e}");
                return ExitCode::FAILURE;
            }
        }
        let names: Vec<_> = tb.tools().iter().map(|t| t.name.as_str()).collect();
        eprintln!("glimmerd: board tools: {}", names.join(", "));
        tb
    };
    install_signals();
    eprintln!(
        "glimmerd: model {}, board {}, backend {}, socket {}",
        cfg.model.display(),
        cfg.board,
        cfg.backend,
        cfg.socket.display()
    );
    match daemon::serve(cfg, host, &STOP) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("glimmerd: error: {e}");
            ExitCode::FAILURE
        }
    }
}

//! `glimmerctl`: talk to `glimmerd` from the command line. See `glimmerctl --help`.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use glimmer_boards::client::{Client, ClientError, Event, SessionOptions};
use glimmer_boards::daemon::listen;
use glimmer_core::proto::{Role, SamplingConfig, ToolChoice};

/// glimmerctl: chat with the model served by glimmerd, run its tools, read its counters.
///
/// Tool calls the model makes and their results are printed as they happen, between the
/// generated text: `[tool call #ID] NAME ARGS` and `[tool result #ID ok|error] CONTENT`.
#[derive(Parser)]
#[command(version, about, long_about)]
struct Cli {
    /// Socket path [default: $XDG_RUNTIME_DIR/glimmer/glimmerd.sock, else
    /// /tmp/glimmer-$UID/glimmerd.sock, as glimmerd].
    #[arg(long, global = true)]
    socket: Option<PathBuf>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Chat: one-shot with MESSAGE, or interactively (one message per line from stdin).
    Chat {
        /// The message; without it, lines are read from stdin until EOF.
        message: Option<String>,
        /// System prompt [default: the daemon's].
        #[arg(long)]
        system: Option<String>,
        /// Most tokens per reply (0: up to the context limit).
        #[arg(short = 'n', long, default_value_t = 256)]
        max_tokens: u32,
        /// Sampling temperature; 0 is greedy.
        #[arg(long = "temp", default_value_t = 0.0)]
        temperature: f32,
        /// RNG seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Tools the model may call, comma-separated [default: all the daemon offers].
        #[arg(long, value_delimiter = ',')]
        tools: Option<Vec<String>>,
        /// auto (the model decides), required (each reply starts with a tool call) or none.
        #[arg(long, default_value = "auto")]
        tool_choice: String,
        /// Let the model write tool-call arguments freely. By default the daemon constrains
        /// them while decoding, so every call names an offered tool and its arguments pass
        /// the tool's schema.
        #[arg(long)]
        unconstrained: bool,
    },
    /// Run a tool directly: `glimmerctl invoke read_temperature '{"zone":"sim"}'`.
    Invoke {
        /// Tool name.
        tool: String,
        /// Arguments as a JSON object.
        #[arg(default_value = "{}")]
        args: String,
    },
    /// List the daemon's tools with their schemas.
    Tools,
    /// Print the daemon's counters.
    Stats,
}

fn default_socket() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) => PathBuf::from(d).join("glimmer").join("glimmerd.sock"),
        None => PathBuf::from(format!("/tmp/glimmer-{}", listen::own_uid())).join("glimmerd.sock"),
    }
}

fn print_event(ev: &Event) {
    let mut out = std::io::stdout().lock();
    match ev {
        Event::Token(t) => {
            write!(out, "{t}").ok();
        }
        Event::ToolCall {
            call_id,
            name,
            args_json,
        } => {
            writeln!(out, "\n[tool call #{call_id}] {name} {args_json}").ok();
        }
        Event::ToolResult {
            call_id,
            ok,
            content,
        } => {
            let st = if *ok { "ok" } else { "error" };
            writeln!(out, "[tool result #{call_id} {st}] {content}").ok();
        }
        Event::Done(s) => {
            writeln!(out).ok();
            eprintln!(
                "[done: {:?}; {} prompt tokens, {} generated, {} tool calls, prefill {} ms, decode {} ms]",
                s.stop_reason, s.tokens_in, s.tokens_out, s.tool_calls, s.prefill_ms, s.decode_ms
            );
        }
        Event::ClientCall(_) => {}
    }
    out.flush().ok();
}

#[allow(clippy::too_many_arguments)]
fn chat(
    c: &mut Client,
    message: Option<String>,
    system: Option<String>,
    max_tokens: u32,
    temperature: f32,
    seed: u64,
    tools: Option<Vec<String>>,
    tool_choice: &str,
    constrained: bool,
) -> Result<(), ClientError> {
    let choice = match tool_choice {
        "auto" => ToolChoice::Auto,
        "required" => ToolChoice::Required,
        "none" => ToolChoice::None,
        other => {
            return Err(ClientError::Unexpected(format!(
                "tool choice {other:?} (auto, required or none)"
            )))
        }
    };
    let opts = SessionOptions {
        sampling: SamplingConfig {
            temperature,
            seed,
            max_tokens,
            ..SamplingConfig::default()
        },
        system,
        tools,
        constrained_tool_args: constrained,
    };
    let s = c.open_session(&opts)?;
    if choice != ToolChoice::Auto {
        c.set_tool_choice(s, choice)?;
    }
    match message {
        Some(m) => {
            c.chat(s, Role::User, &m, print_event)?;
        }
        None => {
            for line in std::io::stdin().lock().lines() {
                let line = line?;
                if line.trim().is_empty() {
                    continue;
                }
                c.chat(s, Role::User, &line, print_event)?;
            }
        }
    }
    c.close_session(s)
}

fn run(cli: Cli) -> Result<(), ClientError> {
    let path = cli.socket.unwrap_or_else(default_socket);
    let mut c = Client::connect(&path)?;
    let (server, model, board) = c.hello(concat!("glimmerctl/", env!("CARGO_PKG_VERSION")))?;
    log::info!("{server}: model {model}, board {board}");
    match cli.cmd {
        Cmd::Chat {
            message,
            system,
            max_tokens,
            temperature,
            seed,
            tools,
            tool_choice,
            unconstrained,
        } => chat(
            &mut c,
            message,
            system,
            max_tokens,
            temperature,
            seed,
            tools,
            &tool_choice,
            !unconstrained,
        ),
        Cmd::Invoke { tool, args } => {
            println!("{}", c.invoke_tool(&tool, &args)?);
            Ok(())
        }
        Cmd::Tools => {
            for t in c.list_tools()? {
                println!("{}: {}\n  {}", t.name, t.description, t.schema_json);
            }
            Ok(())
        }
        Cmd::Stats => {
            let s = c.stats()?;
            println!(
                "sessions {}/{}\nuptime {} ms\ntokens generated {}\nprompt tokens {}\ntool calls {}\nconnections {}",
                s.sessions, s.max_sessions, s.uptime_ms, s.tokens_total, s.prefill_total,
                s.tool_calls_total, s.connections_total
            );
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("glimmerctl: error: {e}");
            ExitCode::FAILURE
        }
    }
}

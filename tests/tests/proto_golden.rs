//! The wire encoding must not change by accident.
//!
//! Every sample message below is encoded as a frame and compared byte for byte with
//! `tests/fixtures/proto/<name>.bin`; the fixture is decoded back and compared with the
//! sample. `clients/python/glimmer_client.py --selftest` builds the same samples and checks
//! its own encoder against the same files, so the fixtures tie the two implementations.
//!
//! After a deliberate protocol change (bump `PROTOCOL_VERSION`), rewrite the fixtures with
//! `GLIMMER_BLESS=1 cargo test -p glimmer-tests --test proto_golden` and update the Python
//! client and `docs/PROTOCOL.md` to match.

use std::path::PathBuf;
use std::process::Command;

use glimmer_core::proto::{
    encode_frame, DoneStats, ErrorCode, EventKind, FrameDecoder, Request, Response, Role,
    SamplingConfig, ServerStats, StopReason, ToolChoice, ToolInfo,
};

#[allow(clippy::large_enum_variant)] // A handful of test samples.
enum Msg {
    Req(Request<'static>),
    Resp(Response<'static>),
}

fn samples() -> Vec<(&'static str, Msg)> {
    use Msg::{Req, Resp};
    let mut allow = heapless::Vec::new();
    allow.extend(["led", "servo"]);
    let mut tools = heapless::Vec::new();
    tools.extend([
        ToolInfo {
            name: "led",
            description: "Switch the status LED.",
            schema_json: r#"{"type":"object","properties":{"on":{"type":"boolean"}},"required":["on"]}"#,
        },
        ToolInfo { name: "uptime", description: "Seconds since boot.", schema_json: "{}" },
    ]);
    let ev = |kind| {
        Resp(Response::Event {
            session_id: 7,
            kind,
        })
    };
    vec![
        (
            "req_hello",
            Req(Request::Hello {
                client: "glimmerctl/0.1",
                version: 1,
            }),
        ),
        (
            "req_open_session",
            Req(Request::OpenSession {
                sampling: SamplingConfig {
                    temperature: 0.7,
                    top_k: 40,
                    top_p: 0.9,
                    seed: 42,
                    max_tokens: 256,
                },
                system: Some("You are a lamp."),
                tools: Some(allow),
                constrained_tool_args: true,
            }),
        ),
        (
            "req_open_session_defaults",
            Req(Request::OpenSession {
                sampling: SamplingConfig {
                    temperature: 0.0,
                    top_k: 0,
                    top_p: 1.0,
                    seed: 0,
                    max_tokens: 0,
                },
                system: None,
                tools: None,
                constrained_tool_args: false,
            }),
        ),
        (
            "req_close_session",
            Req(Request::CloseSession { session_id: 7 }),
        ),
        (
            "req_send",
            Req(Request::Send {
                session_id: 7,
                role: Role::User,
                content: "Turn the LED on, s'il vous plaît ✓",
            }),
        ),
        (
            "req_send_tool",
            Req(Request::Send {
                session_id: 300,
                role: Role::Tool,
                content: "{\"t\":21.5}",
            }),
        ),
        (
            "req_invoke_tool",
            Req(Request::InvokeTool {
                name: "led",
                args_json: r#"{"on":true}"#,
            }),
        ),
        ("req_list_tools", Req(Request::ListTools)),
        (
            "req_register_tool",
            Req(Request::RegisterTool {
                name: "weather",
                description: "Weather at a city.",
                schema_json: r#"{"type":"object","properties":{"city":{"type":"string"}}}"#,
            }),
        ),
        (
            "req_tool_result",
            Req(Request::ToolResult {
                call_id: 5,
                ok: true,
                content: "21.5 C",
            }),
        ),
        ("req_stats", Req(Request::Stats)),
        (
            "req_cancel",
            Req(Request::Cancel {
                session_id: 1 << 40,
            }),
        ),
        (
            "req_set_tool_choice",
            Req(Request::SetToolChoice {
                session_id: 7,
                choice: ToolChoice::Required,
            }),
        ),
        (
            "resp_hello_ok",
            Resp(Response::HelloOk {
                server: "glimmerd/0.1",
                version: 1,
                model: "smollm2-135m-instruct-q4_1",
                board: "sim",
            }),
        ),
        (
            "resp_session_opened",
            Resp(Response::SessionOpened { session_id: 7 }),
        ),
        (
            "resp_session_closed",
            Resp(Response::SessionClosed { session_id: 7 }),
        ),
        ("resp_event_token", ev(EventKind::Token { text: "Hello" })),
        (
            "resp_event_tool_call",
            ev(EventKind::ToolCall {
                call_id: 1,
                name: "led",
                args_json: r#"{"on":true}"#,
            }),
        ),
        (
            "resp_event_tool_result",
            ev(EventKind::ToolResult {
                call_id: 1,
                ok: false,
                content: "pin busy",
            }),
        ),
        (
            "resp_event_done",
            ev(EventKind::Done {
                stats: DoneStats {
                    tokens_in: 31,
                    tokens_out: 200,
                    prefill_ms: 12,
                    decode_ms: 4100,
                    tool_calls: 1,
                    stop_reason: StopReason::MaxTokens,
                },
            }),
        ),
        (
            "resp_tool_output",
            Resp(Response::ToolOutput {
                ok: true,
                content: "ok",
            }),
        ),
        ("resp_tools", Resp(Response::Tools { list: tools })),
        (
            "resp_registered",
            Resp(Response::Registered { name: "weather" }),
        ),
        (
            "resp_call_client_tool",
            Resp(Response::CallClientTool {
                call_id: 2,
                name: "weather",
                args_json: r#"{"city":"Oslo"}"#,
            }),
        ),
        (
            "resp_server_stats",
            Resp(Response::ServerStats(ServerStats {
                sessions: 2,
                max_sessions: 8,
                uptime_ms: 3_600_000,
                tokens_total: 5_000_000_000,
                prefill_total: 1234,
                tool_calls_total: 17,
                connections_total: 3,
            })),
        ),
        (
            "resp_error",
            Resp(Response::Error {
                code: ErrorCode::UnknownTool,
                session_id: Some(7),
                message: "no tool named lamp",
            }),
        ),
        (
            "resp_error_busy",
            Resp(Response::Error {
                code: ErrorCode::Busy,
                session_id: None,
                message: "",
            }),
        ),
        (
            "resp_tool_choice_set",
            Resp(Response::ToolChoiceSet {
                session_id: 7,
                choice: ToolChoice::None,
            }),
        ),
    ]
}

fn fixture_dir() -> PathBuf {
    glimmer_tests::fixtures_dir().join("proto")
}

fn encode(msg: &Msg) -> Vec<u8> {
    let mut out = vec![0u8; 4096];
    let n = match msg {
        Msg::Req(m) => encode_frame(m, &mut out),
        Msg::Resp(m) => encode_frame(m, &mut out),
    }
    .expect("sample encodes");
    out.truncate(n);
    out
}

#[test]
fn encodings_match_the_golden_fixtures() {
    let bless = std::env::var_os("GLIMMER_BLESS").is_some_and(|v| v == "1");
    let mut names = Vec::new();
    for (name, msg) in samples() {
        let path = fixture_dir().join(format!("{name}.bin"));
        let bytes = encode(&msg);
        if bless {
            std::fs::write(&path, &bytes).unwrap();
        }
        let want = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run with GLIMMER_BLESS=1)", path.display()));
        assert_eq!(bytes, want, "{name}: the encoding changed");

        let mut buf = [0u8; 4096];
        let mut dec = FrameDecoder::new(&mut buf);
        assert_eq!(dec.push(&want), want.len());
        let frame = dec.next_frame().unwrap().expect("one whole frame");
        match &msg {
            Msg::Req(m) => assert_eq!(&frame.request().unwrap(), m, "{name}"),
            Msg::Resp(m) => assert_eq!(&frame.response().unwrap(), m, "{name}"),
        }
        names.push(format!("{name}.bin"));
    }
    let mut on_disk: Vec<String> = std::fs::read_dir(fixture_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".bin"))
        .collect();
    on_disk.sort();
    names.sort();
    assert_eq!(on_disk, names, "stray or missing fixtures");
}

#[test]
fn python_client_matches_the_fixtures() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let script = root.join("clients/python/glimmer_client.py");
    let out = match Command::new("python3")
        .arg(&script)
        .arg("--selftest")
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            eprintln!("SKIP: python3 not runnable: {e}");
            return;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "python self-test failed:\n{text}\n{err}"
    );
    assert!(
        text.contains(&format!("{} fixtures ok", samples().len())),
        "{text}"
    );
}

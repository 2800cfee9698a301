//! Round trips, framing errors and a no-panic sweep over random bytes.

extern crate std;

use std::vec;
use std::vec::Vec;

use super::*;
use crate::sample::Rng;

fn requests() -> Vec<Request<'static>> {
    let mut tools = heapless::Vec::new();
    tools.push("led").unwrap();
    tools.push("servo.move").unwrap();
    vec![
        Request::Hello {
            client: "glimmerctl 0.1",
            version: 1,
        },
        Request::OpenSession {
            sampling: SamplingConfig {
                temperature: 0.7,
                top_k: 40,
                top_p: 0.9,
                seed: u64::MAX,
                max_tokens: 256,
            },
            system: Some("Be brief. ✓"),
            tools: Some(tools),
            constrained_tool_args: true,
        },
        Request::OpenSession {
            sampling: SamplingConfig::default(),
            system: None,
            tools: None,
            constrained_tool_args: false,
        },
        Request::CloseSession { session_id: 300 },
        Request::Send {
            session_id: 1,
            role: Role::User,
            content: "Turn the LED on.",
        },
        Request::Send {
            session_id: 2,
            role: Role::Tool,
            content: "",
        },
        Request::InvokeTool {
            name: "led",
            args_json: r#"{"on":true}"#,
        },
        Request::ListTools,
        Request::RegisterTool {
            name: "weather",
            description: "Current weather",
            schema_json: r#"{"type":"object"}"#,
        },
        Request::ToolResult {
            call_id: 7,
            ok: false,
            content: "no network",
        },
        Request::Stats,
        Request::Cancel {
            session_id: 1 << 40,
        },
    ]
}

fn responses() -> Vec<Response<'static>> {
    let mut list = heapless::Vec::new();
    list.push(ToolInfo {
        name: "led",
        description: "Switch the LED",
        schema_json: "{}",
    })
    .unwrap();
    let stats = DoneStats {
        tokens_in: 12,
        tokens_out: 300,
        prefill_ms: 5,
        decode_ms: 1234,
        tool_calls: 1,
        stop_reason: StopReason::MaxTokens,
    };
    let ev = |kind| Response::Event {
        session_id: 3,
        kind,
    };
    vec![
        Response::HelloOk {
            server: "glimmerd",
            version: 1,
            model: "smollm2",
            board: "sim",
        },
        Response::SessionOpened { session_id: 1 },
        Response::SessionClosed { session_id: 1 },
        ev(EventKind::Token { text: "Hel" }),
        ev(EventKind::ToolCall {
            call_id: 1,
            name: "led",
            args_json: r#"{"on":true}"#,
        }),
        ev(EventKind::ToolResult {
            call_id: 1,
            ok: true,
            content: "ok",
        }),
        ev(EventKind::Done { stats }),
        Response::ToolOutput {
            ok: true,
            content: "21.5",
        },
        Response::Tools { list },
        Response::Tools {
            list: heapless::Vec::new(),
        },
        Response::Registered { name: "weather" },
        Response::CallClientTool {
            call_id: 9,
            name: "weather",
            args_json: "{}",
        },
        Response::ServerStats(ServerStats {
            sessions: 2,
            max_sessions: 8,
            uptime_ms: 99_000,
            tokens_total: 1 << 33,
            prefill_total: 5,
            tool_calls_total: 3,
            connections_total: 4,
        }),
        Response::Error {
            code: ErrorCode::UnknownTool,
            session_id: Some(4),
            message: "no led2",
        },
        Response::Error {
            code: ErrorCode::Busy,
            session_id: None,
            message: "",
        },
    ]
}

fn decode_one(bytes: &[u8]) -> (FrameKind, Vec<u8>) {
    let mut buf = [0u8; 1024];
    let mut dec = FrameDecoder::new(&mut buf);
    assert_eq!(dec.push(bytes), bytes.len());
    let f = dec.next_frame().unwrap().unwrap();
    let out = (f.kind, f.body.to_vec());
    assert!(dec.next_frame().unwrap().is_none());
    out
}

#[test]
fn every_request_round_trips() {
    for msg in requests() {
        let mut out = [0u8; 512];
        let n = encode_frame(&msg, &mut out).unwrap();
        let (kind, body) = decode_one(&out[..n]);
        assert_eq!(kind, FrameKind::Request);
        let f = Frame { kind, body: &body };
        assert_eq!(f.request().unwrap(), msg);
        assert_eq!(f.response(), Err(ProtoError::WrongKind));
    }
}

#[test]
fn every_response_round_trips() {
    for msg in responses() {
        let mut out = [0u8; 512];
        let n = encode_frame(&msg, &mut out).unwrap();
        let (kind, body) = decode_one(&out[..n]);
        assert_eq!(kind, FrameKind::Response);
        assert_eq!(Frame { kind, body: &body }.response().unwrap(), msg);
    }
}

#[test]
fn header_layout_is_as_documented() {
    let mut out = [0u8; 64];
    let n = encode_frame(&Request::Stats, &mut out).unwrap();
    // len = 3 (version, kind, discriminant 8), version 1, kind 1 (request), body [8].
    assert_eq!(&out[..n], &[3, 0, 0, 0, 1, 1, 8]);
}

#[test]
fn stream_split_anywhere_yields_the_same_frames() {
    let mut stream = Vec::new();
    for msg in responses() {
        let mut out = [0u8; 512];
        let n = encode_frame(&msg, &mut out).unwrap();
        stream.extend_from_slice(&out[..n]);
    }
    for chunk in [1usize, 2, 3, 7, 64, 1000] {
        let mut buf = [0u8; 600];
        let mut dec = FrameDecoder::new(&mut buf);
        let mut got = Vec::new();
        let mut rest: &[u8] = &stream;
        while !rest.is_empty() {
            let take = chunk.min(rest.len());
            let n = dec.push(&rest[..take]);
            rest = &rest[n..];
            while let Some(f) = dec.next_frame().unwrap() {
                got.push(std::format!("{:?}", f.response().unwrap()));
            }
        }
        let want: Vec<_> = responses().iter().map(|m| std::format!("{m:?}")).collect();
        assert_eq!(got, want, "chunk {chunk}");
        assert_eq!(dec.buffered(), 0);
    }
}

#[test]
fn oversize_is_rejected_before_the_body_and_is_fatal() {
    let mut buf = [0u8; 128];
    let mut dec = FrameDecoder::new(&mut buf);
    assert_eq!(dec.max_frame(), 124);
    dec.push(&125u32.to_le_bytes());
    let e = ProtoError::FrameTooLarge { len: 125, max: 124 };
    assert_eq!(dec.next_frame(), Err(e));
    assert_eq!(e.code(), ErrorCode::FrameTooLarge);
    assert!(e.is_fatal());
    assert_eq!(dec.push(&[3, 0, 0, 0, 1, 1, 8]), 7);
    assert_eq!(dec.next_frame(), Err(e));
    dec.reset();
    dec.push(&[3, 0, 0, 0, 1, 1, 8]);
    assert_eq!(
        dec.next_frame().unwrap().unwrap().request(),
        Ok(Request::Stats)
    );

    let mut big = std::vec![0u8; MAX_FRAME + 64];
    let mut dec = FrameDecoder::new(&mut big);
    assert_eq!(dec.max_frame(), MAX_FRAME);
    dec.push(&(MAX_FRAME as u32 + 1).to_le_bytes());
    assert!(matches!(
        dec.next_frame(),
        Err(ProtoError::FrameTooLarge { .. })
    ));
}

#[test]
fn encoding_past_the_cap_or_the_buffer_fails() {
    let text = std::string::String::from_utf8(std::vec![b'a'; MAX_FRAME]).unwrap();
    let msg = Response::ToolOutput {
        ok: true,
        content: &text,
    };
    let mut out = std::vec![0u8; MAX_FRAME * 2];
    assert!(matches!(
        encode_frame(&msg, &mut out),
        Err(ProtoError::FrameTooLarge { .. })
    ));
    assert_eq!(
        encode_frame(&msg, &mut out[..100]),
        Err(ProtoError::BufferTooSmall)
    );
    assert_eq!(
        encode_frame(&Request::Stats, &mut out[..3]),
        Err(ProtoError::BufferTooSmall)
    );
}

#[test]
fn bad_version_and_bad_header_skip_the_frame() {
    let mut buf = [0u8; 64];
    let mut dec = FrameDecoder::new(&mut buf);
    dec.push(&[3, 0, 0, 0, 2, 1, 8]); // version 2
    dec.push(&[1, 0, 0, 0, 1]); // too short for a header
    dec.push(&[3, 0, 0, 0, 1, 9, 8]); // kind 9
    dec.push(&[4, 0, 0, 0, 1, 1, 8, 0]); // trailing byte
    dec.push(&[3, 0, 0, 0, 1, 1, 99]); // unknown discriminant
    dec.push(&[3, 0, 0, 0, 1, 1, 8]); // fine
    let e = dec.next_frame().unwrap_err();
    assert_eq!(e, ProtoError::BadVersion { got: 2 });
    assert_eq!(e.code(), ErrorCode::BadVersion);
    assert!(!e.is_fatal());
    assert_eq!(dec.next_frame(), Err(ProtoError::BadFrame));
    assert_eq!(dec.next_frame(), Err(ProtoError::BadFrame));
    assert_eq!(
        dec.next_frame().unwrap().unwrap().request(),
        Err(ProtoError::Garbage)
    );
    assert_eq!(
        dec.next_frame().unwrap().unwrap().request(),
        Err(ProtoError::Garbage)
    );
    assert_eq!(
        dec.next_frame().unwrap().unwrap().request(),
        Ok(Request::Stats)
    );
    assert_eq!(dec.next_frame(), Ok(None));
}

#[test]
fn full_buffer_pushes_back_until_the_frame_is_taken() {
    let mut buf = [0u8; 10];
    let mut dec = FrameDecoder::new(&mut buf);
    let two = [3, 0, 0, 0, 1, 1, 8, 3, 0, 0, 0, 1, 1, 5];
    assert_eq!(dec.push(&two), 10);
    assert!(dec.next_frame().unwrap().is_some());
    assert_eq!(dec.push(&two[10..]), 4);
    assert_eq!(
        dec.next_frame().unwrap().unwrap().request(),
        Ok(Request::ListTools)
    );
}

#[test]
fn error_codes_are_stable_and_round_trip() {
    for (i, c) in ALL_ERROR_CODES.iter().enumerate() {
        assert_eq!(usize::from(c.as_u16()), i + 1);
        assert_eq!(ErrorCode::from_u16(c.as_u16()), *c);
    }
    assert_eq!(ErrorCode::from_u16(0), ErrorCode::Unknown);
    assert_eq!(ErrorCode::from_u16(500), ErrorCode::Unknown);
    // Wire value is the u16 varint: 300 = [0xAC, 0x02].
    let body = [9u8, 0xAC, 0x02, 0, 0];
    let f = Frame {
        kind: FrameKind::Response,
        body: &body,
    };
    let r = f.response().unwrap();
    assert_eq!(
        r,
        Response::Error {
            code: ErrorCode::Unknown,
            session_id: None,
            message: ""
        }
    );
}

/// One random piece of stream: raw noise, a forged header with a noisy body, or a real
/// message with one byte changed.
fn random_piece(rng: &mut Rng, out: &mut Vec<u8>) {
    let small = |rng: &mut Rng| {
        let r = rng.next_u64();
        if r.is_multiple_of(4) {
            (r >> 8) as u8
        } else {
            (r >> 8) as u8 % 12
        }
    };
    match rng.next_u64() % 3 {
        0 => (0..rng.next_u64() % 24).for_each(|_| out.push(small(rng))),
        1 => {
            let len = (rng.next_u64() % 40) as u32;
            out.extend_from_slice(&len.to_le_bytes());
            (0..len).for_each(|_| out.push(small(rng)));
            if len >= 2 && !rng.next_u64().is_multiple_of(4) {
                let at = out.len() - len as usize;
                out[at] = PROTOCOL_VERSION;
                out[at + 1] = 1 + (rng.next_u64() % 2) as u8;
            }
        }
        _ => {
            let (reqs, resps) = (requests(), responses());
            let mut frame = [0u8; 512];
            let i = rng.next_u64() as usize % (reqs.len() + resps.len());
            let n = match reqs.get(i) {
                Some(m) => encode_frame(m, &mut frame).unwrap(),
                None => encode_frame(&resps[i - reqs.len()], &mut frame).unwrap(),
            };
            let at = LEN_PREFIX + HEADER_LEN + rng.next_u64() as usize % (n - 6).max(1);
            if at < n && rng.next_u64().is_multiple_of(2) {
                frame[at] = small(rng);
            }
            out.extend_from_slice(&frame[..n]);
        }
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng::new(0x5EED_F00D);
    let mut buf = [0u8; 256];
    let mut dec = FrameDecoder::new(&mut buf);
    let (mut frames, mut valid, mut errors, mut resets) = (0usize, 0usize, 0usize, 0usize);
    let mut piece = Vec::new();
    for _ in 0..50_000 {
        piece.clear();
        random_piece(&mut rng, &mut piece);
        let mut rest = &piece[..];
        while !rest.is_empty() {
            let taken = dec.push(rest);
            rest = &rest[taken..];
            loop {
                match dec.next_frame() {
                    Ok(Some(f)) => {
                        frames += 1;
                        valid += usize::from(f.request().is_ok() || f.response().is_ok());
                    }
                    Ok(None) => break,
                    Err(e) if e.is_fatal() => {
                        resets += 1;
                        dec.reset();
                        break;
                    }
                    Err(_) => errors += 1,
                }
            }
        }
    }
    assert!(
        frames > 1000,
        "only {frames} frames: the sweep is not exercising decoding"
    );
    assert!(valid > 1000, "only {valid} decodable frames");
    assert!(
        errors > 100 && resets > 100,
        "{errors} errors, {resets} resets"
    );
}

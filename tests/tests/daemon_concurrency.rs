//! Eight sessions at once on one `glimmerd`: each gives the same greedy output as the same
//! conversation run alone (isolated KV slots, round-robin scheduling).

mod daemon_common;

use std::time::Instant;

use daemon_common::*;

const PROMPTS: [&str; 8] = [
    "What is the capital of France?",
    "Name three colors.",
    "Write a haiku about the sea.",
    "What is 2 plus 2?",
    "Give me a tip for sleeping well.",
    "What does a thermostat do?",
    "Say hello in Spanish.",
    "Why is the sky blue?",
];

const MAX_TOKENS: u32 = 24;

#[test]
fn eight_concurrent_sessions_match_their_solo_runs() {
    let Some(model) = model() else { return };
    let mut cfg = config(model);
    cfg.sessions = 8;
    cfg.ctx = 256;
    let d = start(cfg);

    let t0 = Instant::now();
    let solo: Vec<TurnLog> = PROMPTS
        .iter()
        .map(|p| {
            let mut c = client(&d);
            let s = c.open_session(&opts(MAX_TOKENS, Some(&[]))).unwrap();
            let t = turn(&mut c, s, p);
            c.close_session(s).unwrap();
            t
        })
        .collect();
    let solo_time = t0.elapsed();

    let t0 = Instant::now();
    let socket = d.socket().to_path_buf();
    let handles: Vec<_> = PROMPTS
        .iter()
        .map(|p| {
            let socket = socket.clone();
            std::thread::spawn(move || {
                let mut c = glimmer_boards::client::Client::connect(&socket).unwrap();
                c.hello("concurrent").unwrap();
                let s = c.open_session(&opts(MAX_TOKENS, Some(&[]))).unwrap();
                let t = turn(&mut c, s, p);
                c.close_session(s).unwrap();
                t
            })
        })
        .collect();
    let together: Vec<TurnLog> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let together_time = t0.elapsed();
    eprintln!("solo {solo_time:?}, together {together_time:?}");
    for ((p, a), b) in PROMPTS.iter().zip(&solo).zip(&together) {
        eprintln!("{p:?} -> {:?}", a.text);
        assert!(a.done.tokens_out > 0);
        assert_eq!(a.text, b.text, "prompt {p:?}");
        assert_eq!(a.done.tokens_in, b.done.tokens_in);
        assert_eq!(a.done.tokens_out, b.done.tokens_out);
    }
    let st = d.stats();
    assert_eq!(st.sessions, 0);
    assert_eq!(st.max_sessions, 8);
    d.shutdown().unwrap();
}

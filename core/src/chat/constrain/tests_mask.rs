//! The masking helpers, and random logits forced into valid calls over a toy vocabulary.

extern crate std;

use std::string::String;
use std::vec::Vec;

use super::tests::{Constraint, TOOLS};
use super::*;
use crate::chat::schema::Value;
use crate::chat::toolcall::{CallParser, ToolEvent};
use crate::sample::{Rng, Sampler, SamplerConfig};

/// Token texts; `None` is a control token. Structural pieces, parts of names, digits,
/// string content, and a few tokens that are never valid in a call.
const VOCAB: &[Option<&str>] = &[
    None, // BOS
    None, // EOS
    Some(""),
    Some("{"),
    Some("}"),
    Some("\""),
    Some("\":"),
    Some(": "),
    Some(":"),
    Some(", "),
    Some(","),
    Some(" "),
    Some("\n"),
    Some("{\""),
    Some("\"name\""),
    Some("name"),
    Some("\"arguments\""),
    Some("arguments"),
    Some("weather"),
    Some("we"),
    Some("ather"),
    Some("led"),
    Some("_strip"),
    Some("uptime"),
    Some("nums"),
    Some("city"),
    Some("days"),
    Some("units"),
    Some("verbose"),
    Some("lat"),
    Some("on"),
    Some("level"),
    Some("i"),
    Some("n"),
    Some("neg"),
    Some("x"),
    Some("r"),
    Some("c"),
    Some("f"),
    Some("kel"),
    Some("vin"),
    Some("true"),
    Some("false"),
    Some("tr"),
    Some("ue"),
    Some("0"),
    Some("1"),
    Some("2"),
    Some("3"),
    Some("4"),
    Some("5"),
    Some("6"),
    Some("7"),
    Some("8"),
    Some("9"),
    Some("12"),
    Some("-"),
    Some("."),
    Some(".5"),
    Some("e"),
    Some("Paris"),
    Some(" São"),
    Some("\\"),
    Some("\\n"),
    Some("u00e9"),
    Some("<"),
    Some("</"),
    Some(">"),
    Some("\">"),
    Some("</tool_call>"),
    Some("</tool"),
    Some("_call>"),
    Some("<atem:invoke name=\""),
    Some("<atem:"),
    Some("invoke"),
    Some(" name=\""),
    Some("<atem:parameter name=\""),
    Some("parameter"),
    Some("</atem:parameter>"),
    Some("atem:"),
    Some("</atem:invoke>"),
    Some("</atem:function_calls>"),
    Some("function_calls>"),
    Some("<tool_call>"),
    Some("null"),
    Some("tool"),
    Some("alse"),
    Some("ity"),
];

/// Every printable ASCII char is a token too, after `VOCAB` (as byte-level BPE vocabularies
/// have), so a partial name can always be finished.
const ASCII: &str = " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~";
const VOCAB_LEN: usize = VOCAB.len() + ASCII.len();

fn piece(id: u32) -> Option<&'static str> {
    let id = id as usize;
    match VOCAB.get(id) {
        Some(p) => *p,
        None => ASCII.get(id - VOCAB.len()..id - VOCAB.len() + 1),
    }
}

fn random_logits(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.next_f32() * 10.0 - 5.0).collect()
}

/// The ids `allows` accepts, by brute force.
fn allowed_ids(c: &Constraint, n: usize) -> Vec<u32> {
    (0..n as u32)
        .filter(|&id| piece(id).is_some_and(|p| c.allows(p)))
        .collect()
}

/// Runs `text` (a constrained call, opener in front) through the dialect's parser and the
/// schema check; panics unless it is exactly one valid call.
fn parse_and_check(dialect: Dialect, opener: &str, text: &str) {
    let mut buf = [0u8; 16384];
    let mut p = CallParser::new(dialect, TOOLS, &mut buf);
    p.push(opener).unwrap();
    p.push(text).unwrap();
    p.finish();
    let mut calls = 0;
    while let Some(ev) = p.next_event() {
        match ev {
            ToolEvent::Call(call) => {
                let schema = TOOLS.iter().find(|t| t.name == call.name).unwrap();
                let mut values = [Value::Absent; 8];
                let checked = schema.check(&call.args, &mut values);
                assert_eq!(checked, Ok(()), "{text:?}");
                calls += 1;
            }
            other => panic!("{other:?} in {text:?}"),
        }
    }
    assert_eq!(calls, 1, "{text:?}");
}

/// Decodes one call from random logits; `how` picks the helper.
fn decode(dialect: Dialect, seed: u64, how: u64) -> String {
    // Room for a long string: with ~200 tokens allowed inside and one closing it, a string
    // runs ~200 tokens on average.
    let mut c: CallConstraint<'static, 16384> = CallConstraint::new(TOOLS, dialect).unwrap();
    let mut rng = Rng::new(seed);
    let mut scratch = [0u32; VOCAB_LEN];
    for _ in 0..16384 {
        let mut logits = random_logits(&mut rng, VOCAB_LEN);
        let id = match how {
            0 => c
                .best_allowed(&logits, piece, &mut scratch)
                .map_err(|e| (e, c.text()))
                .unwrap(),
            1 => {
                let allowed = c
                    .mask_logits(&mut logits, piece)
                    .map_err(|e| (e, c.text()))
                    .unwrap();
                let cfg = SamplerConfig {
                    temperature: 1.0,
                    top_k: allowed,
                    top_p: 1.0,
                    seed: rng.next_u64(),
                };
                Sampler::new(cfg).sample(&logits, &mut scratch).unwrap()
            }
            _ => {
                let kept = c
                    .mask_top_k(&mut logits, 4, piece, &mut scratch)
                    .map_err(|e| (e, c.text()))
                    .unwrap();
                let cfg = SamplerConfig {
                    temperature: 0.7,
                    top_k: kept,
                    top_p: 0.9,
                    seed: rng.next_u64(),
                };
                Sampler::new(cfg).sample(&logits, &mut scratch).unwrap()
            }
        };
        c.push(piece(id).unwrap()).unwrap();
        if c.is_complete() {
            assert_eq!(
                c.mask_logits(&mut logits, piece),
                Err(ConstrainError::NoAllowedToken)
            );
            return String::from(c.text());
        }
    }
    panic!("no complete call after 16384 tokens: {:?}", c.text());
}

#[test]
fn random_logits_are_forced_into_valid_calls() {
    let mut tools_seen = [false; 5];
    for seed in 0..150u64 {
        for (dialect, opener) in [
            (Dialect::Hermes, "<tool_call>"),
            (Dialect::Atem, "<atem:function_calls>"),
        ] {
            let text = decode(dialect, seed, seed % 3);
            parse_and_check(dialect, opener, &text);
            for (seen, t) in tools_seen.iter_mut().zip(TOOLS) {
                *seen |= text.contains(&std::format!("\"{}\"", t.name));
            }
        }
    }
    assert!(
        tools_seen.iter().all(|&s| s),
        "every tool called: {tools_seen:?}"
    );
}

#[test]
fn mask_logits_keeps_exactly_the_allowed_tokens() {
    let mut rng = Rng::new(11);
    let mut c: Constraint = CallConstraint::new(TOOLS, Dialect::Hermes).unwrap();
    for prefix in [
        "",
        "{\"name\": \"",
        "{\"name\": \"led\", \"arguments\": {\"on\": ",
    ] {
        c.reset();
        if !prefix.is_empty() {
            c.push(prefix).unwrap();
        }
        let mut logits = random_logits(&mut rng, VOCAB_LEN);
        let before = logits.clone();
        let want = allowed_ids(&c, VOCAB_LEN);
        assert!(!want.is_empty());
        assert_eq!(c.mask_logits(&mut logits, piece), Ok(want.len()));
        for (id, (l, b)) in logits.iter().zip(&before).enumerate() {
            let allowed = want.contains(&(id as u32));
            assert_eq!(
                *l,
                if allowed { *b } else { f32::NEG_INFINITY },
                "token {id}"
            );
        }
        assert!(
            !want.contains(&0) && !want.contains(&2),
            "control and empty tokens"
        );
    }
}

#[test]
fn best_and_top_k_agree_with_brute_force() {
    // A vocabulary many chunks long: the toy one repeated.
    let n = VOCAB_LEN * 4;
    let piece_n = |id: u32| piece(id % VOCAB_LEN as u32);
    let mut rng = Rng::new(3);
    let mut scratch = std::vec![0u32; n];
    let mut c: Constraint = CallConstraint::new(TOOLS, Dialect::Hermes).unwrap();
    for round in 0..60 {
        let logits: Vec<f32> = (0..n)
            .map(|_| (rng.next_u64() % 16) as f32) // many ties
            .collect();
        let stuck = c.text();
        let mut order: Vec<u32> = (0..n as u32)
            .filter(|&id| piece_n(id).is_some_and(|p| c.allows(p)))
            .collect();
        order.sort_by(|&a, &b| {
            let (la, lb) = (logits[a as usize], logits[b as usize]);
            lb.total_cmp(&la).then(a.cmp(&b))
        });
        assert!(!order.is_empty(), "stuck after {stuck:?}");
        assert_eq!(c.best_allowed(&logits, piece_n, &mut scratch), Ok(order[0]));
        for k in [1, 3, 40, n] {
            let mut masked = logits.clone();
            let kept = c.mask_top_k(&mut masked, k, piece_n, &mut scratch).unwrap();
            assert_eq!(kept, k.min(order.len()));
            let mut want: Vec<u32> = order[..kept].to_vec();
            want.sort_unstable();
            let got: Vec<u32> = (0..n as u32)
                .filter(|&id| masked[id as usize] > f32::NEG_INFINITY)
                .collect();
            assert_eq!(got, want, "round {round}, k {k}");
        }
        // Walk on: commit the best token.
        let best = piece_n(order[0]).unwrap();
        c.push(best).unwrap();
        if c.is_complete() {
            c.reset();
        }
    }
}

#[test]
fn helpers_report_nothing_allowed_and_bad_input() {
    let mut c: Constraint = CallConstraint::new(TOOLS, Dialect::Hermes).unwrap();
    let mut scratch = [0u32; VOCAB_LEN];
    let mut logits = std::vec![1.0f32; VOCAB_LEN];
    // `{` is the only way in; a NaN there is never picked, so the next best allowed wins.
    let brace = VOCAB.iter().position(|&p| p == Some("{")).unwrap();
    let brace_quote = VOCAB.iter().position(|&p| p == Some("{\"")).unwrap();
    logits[brace] = f32::NAN;
    logits[brace_quote] = 0.5;
    let space = VOCAB.iter().position(|&p| p == Some(" ")).unwrap();
    let best = c.best_allowed(&logits, piece, &mut scratch);
    assert_eq!(best, Ok(space as u32), "the first allowed token at logit 1");
    logits[space] = 0.0;
    let newline = VOCAB.iter().position(|&p| p == Some("\n")).unwrap();
    assert_eq!(
        c.best_allowed(&logits, piece, &mut scratch),
        Ok(newline as u32)
    );
    let mut short = [0u32; 4];
    assert_eq!(
        c.best_allowed(&logits, piece, &mut short),
        Err(ConstrainError::ScratchTooSmall)
    );
    assert_eq!(
        c.mask_top_k(&mut logits, 2, piece, &mut short),
        Err(ConstrainError::ScratchTooSmall)
    );
    c.push("{\"name\": \"uptime\", \"arguments\": {}}</tool_call>")
        .unwrap();
    let mut logits = std::vec![1.0f32; VOCAB_LEN];
    assert_eq!(
        c.best_allowed(&logits, piece, &mut scratch),
        Err(ConstrainError::NoAllowedToken)
    );
    assert_eq!(
        c.mask_top_k(&mut logits, 3, piece, &mut scratch),
        Err(ConstrainError::NoAllowedToken)
    );
    assert!(logits.iter().all(|&l| l == f32::NEG_INFINITY));
}

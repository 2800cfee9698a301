//! 20 000 random mutations of a small valid GGUF file (byte flips, overwrites with edge
//! values, truncations, insertions, deletions): the reader must never panic, and whatever it
//! accepts must be fully readable.

mod gguf_common;

use std::collections::BTreeSet;

use glimmer_core::gguf::{Gguf, Value};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use gguf_common::base_bytes;

const ITERATIONS: usize = 20_000;

/// Values that sit on size and sign boundaries, for overwriting count and length fields.
const EDGE_U64: [u64; 8] = [0, 1, 4, 5, 0xff, 1 << 32, 1 << 63, u64::MAX];

fn mutate(rng: &mut StdRng, bytes: &mut Vec<u8>) {
    let ops = rng.random_range(1..=3);
    for _ in 0..ops {
        let len = bytes.len();
        match rng.random_range(0..6) {
            0 if len > 0 => {
                let at = rng.random_range(0..len);
                bytes[at] ^= 1 << rng.random_range(0..8);
            }
            1 if len > 0 => {
                let at = rng.random_range(0..len);
                bytes[at] = rng.random();
            }
            2 if len >= 8 => {
                let at = rng.random_range(0..=len - 8);
                let v = EDGE_U64[rng.random_range(0..EDGE_U64.len())];
                bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
            }
            3 => {
                let cut = rng.random_range(0..=len);
                bytes.truncate(cut);
            }
            4 => {
                let at = rng.random_range(0..=len);
                let n = rng.random_range(1..=16);
                let insert: Vec<u8> = (0..n).map(|_| rng.random()).collect();
                bytes.splice(at..at, insert);
            }
            _ if len > 0 => {
                let at = rng.random_range(0..len);
                let end = (at + rng.random_range(1..=16)).min(len);
                bytes.drain(at..end);
            }
            _ => {}
        }
    }
}

/// Reads everything an accepted file offers, as a model loader would.
fn read_all(g: &Gguf<'_>) -> usize {
    let mut touched = 0usize;
    for (key, value) in g.kvs() {
        touched += key.len();
        assert_eq!(g.get(key).map(|v| v.ty()), Some(value.ty()));
        let _ = (
            g.get_u64(key),
            g.get_f32(key),
            g.get_bool(key),
            g.get_str(key),
        );
        if let Value::Array(a) = value {
            touched += a.iter().count() + a.strs().map(str::len).sum::<usize>();
            for i in [0, a.len() / 2, a.len().saturating_sub(1), a.len()] {
                let _ = (a.get(i), a.f32_at(i), a.i32_at(i));
            }
        }
    }
    for t in g.tensors() {
        assert_eq!(g.tensor(t.name).map(|u| u.offset), Some(t.offset));
        assert_eq!(t.data.len(), t.row_bytes() * t.n_rows());
        assert!(t.n_elements() > 0 && t.n_elements() <= i64::MAX as u64);
        touched += t.data.len();
    }
    touched
}

#[test]
fn random_mutations_never_panic() {
    let base = base_bytes();
    Gguf::parse(&base).expect("fixture parses");
    let mut rng = StdRng::seed_from_u64(0x6767_7566);
    let mut accepted = 0usize;
    let mut errors = BTreeSet::new();
    for _ in 0..ITERATIONS {
        let mut bytes = base.clone();
        mutate(&mut rng, &mut bytes);
        match Gguf::parse(&bytes) {
            Ok(g) => {
                accepted += 1;
                read_all(&g);
            }
            Err(e) => {
                // Display must not panic either.
                assert!(!e.to_string().is_empty());
                let debug = format!("{e:?}");
                errors.insert(debug.split([' ', '{', '(']).next().unwrap_or("").to_owned());
            }
        }
    }
    println!("accepted {accepted} of {ITERATIONS}; error variants seen: {errors:?}");
    // The mutations reach deep into the format, not just the magic.
    assert!(accepted > 0 && accepted < ITERATIONS);
    assert!(
        errors.len() >= 12,
        "only {} error variants: {errors:?}",
        errors.len()
    );
}

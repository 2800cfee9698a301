//! Bit-exactness of `glimmer_core::quant` against gguf-py.
//!
//! The fixtures under `tests/fixtures/quant/` come from `scripts/gen_quant_fixtures.py`:
//! random blocks of every computable type and the first rows of real model tensors,
//! dequantized by `gguf.quants.dequantize`, and random rows quantized by
//! `gguf.quants.quantize`. Every value must match to the bit.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use glimmer_core::quant::{self, GgmlType};
use serde::Deserialize;

#[derive(Deserialize)]
struct Index {
    dequant: Vec<DequantCase>,
    quantize: Vec<QuantCase>,
    models: Vec<ModelCase>,
}

#[derive(Deserialize)]
struct DequantCase {
    name: String,
    #[serde(rename = "type")]
    ty: String,
    n: usize,
    raw: String,
    f32: String,
}

#[derive(Deserialize)]
struct QuantCase {
    name: String,
    #[serde(rename = "type")]
    ty: String,
    n: usize,
    input: String,
    expected: String,
}

#[derive(Deserialize)]
struct ModelCase {
    model: String,
    file_size: u64,
    tensor: String,
    #[serde(rename = "type")]
    ty: String,
    data_offset: u64,
    row_len: usize,
    rows: usize,
    raw: String,
    f32: String,
    hash_rows: usize,
    f32_fnv1a64: String,
}

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join("quant")
}

fn index() -> Index {
    let text = std::fs::read_to_string(fixture_dir().join("index.json")).expect("index.json");
    serde_json::from_str(&text).expect("parse index.json")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn read_f32(name: &str) -> Vec<f32> {
    f32s(&read(name))
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn ggml_type(name: &str) -> GgmlType {
    GgmlType::ALL
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("unknown type {name}"))
}

/// Asserts `got == want` bit for bit, printing `max_diff` and the first mismatches.
fn assert_bits(case: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{case}: length");
    let mut max_diff = 0.0f32;
    let mut bad = Vec::new();
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g.to_bits() != w.to_bits() {
            let d = (g - w).abs();
            max_diff = if d > max_diff || d.is_nan() {
                d
            } else {
                max_diff
            };
            if bad.len() < 8 {
                bad.push(format!(
                    "[{i}] got {g:e} ({:#010x}) want {w:e} ({:#010x})",
                    g.to_bits(),
                    w.to_bits()
                ));
            }
        }
    }
    println!("{case}: {} values, max_diff {max_diff:e}", got.len());
    assert!(bad.is_empty(), "{case}: mismatches:\n{}", bad.join("\n"));
}

fn dequant(ty: GgmlType, raw: &[u8], n: usize) -> Vec<f32> {
    let mut out = vec![f32::NAN; n];
    quant::dequantize_row(ty, raw, &mut out).expect("dequantize_row");
    out
}

#[test]
fn dequantize_random_blocks_matches_gguf_py() {
    let idx = index();
    assert!(
        idx.dequant.len() >= 9,
        "fixture covers every computable type"
    );
    for c in &idx.dequant {
        let got = dequant(ggml_type(&c.ty), &read(&c.raw), c.n);
        assert_bits(&c.name, &got, &read_f32(&c.f32));
    }
}

#[test]
fn dequantize_committed_model_rows_matches_gguf_py() {
    let idx = index();
    for c in &idx.models {
        let ty = ggml_type(&c.ty);
        let raw = read(&c.raw);
        let want = read_f32(&c.f32);
        let rb = ty.row_bytes(c.row_len).expect("row bytes");
        assert_eq!(raw.len(), rb * c.rows, "{}: raw length", c.tensor);
        for (r, (src, w)) in raw
            .chunks_exact(rb)
            .zip(want.chunks_exact(c.row_len))
            .enumerate()
        {
            let got = dequant(ty, src, c.row_len);
            assert_bits(&format!("{} {} row {r}", c.model, c.tensor), &got, w);
        }
    }
}

#[test]
fn quantize_matches_gguf_py() {
    let idx = index();
    for c in &idx.quantize {
        let ty = ggml_type(&c.ty);
        let x = read_f32(&c.input);
        assert_eq!(x.len(), c.n, "{}: input length", c.name);
        let want = read(&c.expected);
        let mut got = vec![0u8; want.len()];
        quant::quantize_weights(ty, &x, &mut got).expect("quantize_weights");
        let bs = ty.type_size();
        let first_bad = got
            .chunks(bs)
            .zip(want.chunks(bs))
            .position(|(g, w)| g != w);
        assert!(
            first_bad.is_none(),
            "{}: block {first_bad:?} differs",
            c.name
        );
        // The activation quantizer of the same type must agree too (Q8_0 activations round as
        // llama.cpp's x86 path does, not as gguf-py does, so they are tested in core).
        if matches!(ty, GgmlType::F16 | GgmlType::BF16) {
            let mut act = vec![0u8; want.len()];
            quant::quantize_row(ty, &x, &mut act).expect("quantize_row");
            assert!(act == want, "{}: quantize_row differs from gguf-py", c.name);
        }
        println!("{}: {} blocks identical", c.name, want.len() / bs);
    }
}

/// `$GLIMMER_MODELS`, else `~/.cache/glimmer/models`.
fn models_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("GLIMMER_MODELS") {
        return Some(PathBuf::from(d));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/glimmer/models"))
}

fn fnv1a64(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

#[test]
fn dequantize_real_model_rows_matches_gguf_py() {
    let idx = index();
    let Some(dir) = models_dir() else {
        println!("SKIP: no $GLIMMER_MODELS and no $HOME");
        return;
    };
    let mut checked = 0;
    for c in &idx.models {
        let path = dir.join(&c.model);
        let Ok(mut f) = File::open(&path) else {
            println!("SKIP {}: {} not found", c.tensor, path.display());
            continue;
        };
        let size = f.metadata().expect("metadata").len();
        assert_eq!(
            size,
            c.file_size,
            "{} differs from the file the fixtures were made from; \
             rerun scripts/gen_quant_fixtures.py",
            path.display()
        );
        let ty = ggml_type(&c.ty);
        let rb = ty.row_bytes(c.row_len).expect("row bytes");
        let mut raw = vec![0u8; rb * c.hash_rows];
        f.seek(SeekFrom::Start(c.data_offset)).expect("seek");
        f.read_exact(&mut raw).expect("read tensor rows");
        assert!(
            raw[..rb * c.rows] == read(&c.raw)[..],
            "{}: bytes differ from the fixture",
            c.tensor
        );
        let want = read_f32(&c.f32);
        let mut all = Vec::with_capacity(c.row_len * c.hash_rows);
        for (r, src) in raw.chunks_exact(rb).enumerate() {
            let got = dequant(ty, src, c.row_len);
            if r < c.rows {
                let w = &want[r * c.row_len..(r + 1) * c.row_len];
                assert_bits(&format!("{} {} row {r}", c.model, c.tensor), &got, w);
            }
            all.extend(got);
        }
        let hash = fnv1a64(all.iter().flat_map(|v| v.to_le_bytes()));
        assert_eq!(
            format!("{hash:016x}"),
            c.f32_fnv1a64,
            "{} {}: hash of the first {} dequantized rows differs from gguf-py",
            c.model,
            c.tensor,
            c.hash_rows
        );
        println!(
            "{} {}: {} rows match gguf-py",
            c.model, c.tensor, c.hash_rows
        );
        checked += 1;
    }
    println!("{checked} of {} model tensors checked", idx.models.len());
}

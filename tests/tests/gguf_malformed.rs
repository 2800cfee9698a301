//! Malformed GGUF files: each class is rejected with its specific error, never a panic.
//! Files are written with the boards writer, then cut or patched field by field.

mod gguf_common;

use glimmer_boards::gguf_writer::{GgufWriter, OwnedValue};
use glimmer_core::gguf::{
    ErrName, ErrorKind, Field, Gguf, GgufError, Value, ValueType, MAX_KVS, MAX_TENSORS,
};
use glimmer_core::quant::GgmlType;

use gguf_common::*;

fn parse_err(bytes: &[u8]) -> GgufError {
    match Gguf::parse(bytes) {
        Ok(g) => panic!("parsed a malformed file: {g:?}"),
        Err(e) => e,
    }
}

fn name(s: &str) -> ErrName {
    ErrName::new(s)
}

#[test]
fn truncated_at_every_boundary() {
    let bytes = base_bytes();
    let g = Gguf::parse(&bytes).unwrap();
    let last = TENSORS[TENSORS.len() - 1].0;
    let table_end = record(&bytes, last).end;
    let data_end = g
        .tensors()
        .map(|t| g.data_offset() + t.offset as usize + t.data.len())
        .max();
    let data_end = data_end.unwrap();
    assert!(
        table_end < g.data_offset() && data_end < bytes.len(),
        "fixture shape changed"
    );

    let mut seen_fields = Vec::new();
    for cut in 0..bytes.len() {
        let prefix = &bytes[..cut];
        let result = Gguf::parse(prefix);
        if cut < table_end {
            match result {
                Err(GgufError::Truncated { what, offset }) => {
                    assert!(offset <= cut, "cut {cut}: truncation reported at {offset}");
                    if !seen_fields.contains(&what) {
                        seen_fields.push(what);
                    }
                }
                other => panic!("cut {cut} (metadata ends at {table_end}): {other:?}"),
            }
        } else if cut < data_end {
            match result {
                Err(GgufError::TensorOutOfRange { available, .. }) => {
                    assert_eq!(available, cut.saturating_sub(g.data_offset()) as u64);
                }
                other => panic!("cut {cut} (data ends at {data_end}): {other:?}"),
            }
        } else {
            // Only the trailing padding is missing: every tensor is still whole.
            let short = result.unwrap_or_else(|e| panic!("cut {cut} in trailing padding: {e}"));
            assert_eq!(short.tensors().count(), TENSORS.len());
        }
    }
    // Cuts landed inside every kind of structure the fixture has.
    for field in [
        Field::Magic,
        Field::Version,
        Field::TensorCount,
        Field::KvCount,
        Field::KvTable,
        Field::StringLength,
        Field::StringBytes,
        Field::ValueType,
        Field::Value,
        Field::ArrayType,
        Field::ArrayLength,
        Field::ArrayData,
        Field::TensorTable,
        Field::TensorNDims,
        Field::TensorDims,
        Field::TensorType,
        Field::TensorOffset,
    ] {
        assert!(
            seen_fields.contains(&field),
            "no cut was reported inside {field:?}"
        );
    }
}

#[test]
fn tensor_count_overflow() {
    let good = base_bytes();
    for count in [u64::MAX, 1 << 63, MAX_TENSORS as u64 + 1] {
        let mut bytes = good.clone();
        put_u64(&mut bytes, 8, count);
        assert_eq!(parse_err(&bytes), GgufError::TooManyTensors { count });
    }
    // Within the cap, but more entries than the remaining bytes could hold.
    let mut bytes = good.clone();
    put_u64(&mut bytes, 8, MAX_TENSORS as u64);
    assert!(matches!(
        parse_err(&bytes),
        GgufError::Truncated {
            what: Field::TensorTable,
            ..
        }
    ));
}

#[test]
fn kv_count_overflow() {
    let good = base_bytes();
    for count in [u64::MAX, 1 << 32, MAX_KVS as u64 + 1] {
        let mut bytes = good.clone();
        put_u64(&mut bytes, 16, count);
        assert_eq!(parse_err(&bytes), GgufError::TooManyKvs { count });
    }
    let mut bytes = good.clone();
    put_u64(&mut bytes, 16, MAX_KVS as u64);
    assert_eq!(
        parse_err(&bytes),
        GgufError::Truncated {
            what: Field::KvTable,
            offset: 24
        }
    );
}

#[test]
fn string_length_u64_max() {
    let good = base_bytes();
    // The first key's length, a string value, a string inside an array, and a tensor name.
    let value_at = find_unique(&good, &gguf_str("llama"));
    let elem_at = find_unique(&good, &gguf_str("héllo"));
    let name_at = record(&good, "output.weight").start;
    for at in [24, value_at, elem_at, name_at] {
        let mut bytes = good.clone();
        put_u64(&mut bytes, at, u64::MAX);
        assert_eq!(
            parse_err(&bytes),
            GgufError::StringTooLong {
                len: u64::MAX,
                offset: at
            },
            "string length at {at}"
        );
    }
    // A length within the cap but past the end is a truncation.
    let mut bytes = good.clone();
    put_u64(&mut bytes, 24, 1 << 31);
    assert_eq!(
        parse_err(&bytes),
        GgufError::Truncated {
            what: Field::StringBytes,
            offset: 32
        }
    );
}

#[test]
fn n_dims_above_4_or_zero() {
    let good = base_bytes();
    let r = record(&good, "output.weight");
    for n_dims in [0, 5, u32::MAX] {
        let mut bytes = good.clone();
        put_u32(&mut bytes, r.n_dims, n_dims);
        assert_eq!(
            parse_err(&bytes),
            GgufError::BadDimCount {
                tensor: name("output.weight"),
                index: 1,
                n_dims
            }
        );
    }
}

#[test]
fn unknown_tensor_type() {
    let good = base_bytes();
    let r = record(&good, "token_embd.weight");
    for ty in [4, 5, 16, 99, u32::MAX] {
        let mut bytes = good.clone();
        put_u32(&mut bytes, r.ty, ty);
        assert_eq!(
            parse_err(&bytes),
            GgufError::UnknownTensorType {
                tensor: name("token_embd.weight"),
                index: 0,
                ty
            }
        );
    }
}

#[test]
fn bad_alignment() {
    for alignment in [0u32, 3, 48, 96, (1 << 20) + 1, 1 << 21, u32::MAX] {
        let mut w = base_writer();
        w.alignment(alignment);
        assert_eq!(
            parse_err(&w.to_bytes()),
            GgufError::BadAlignment { alignment }
        );
    }
    let mut w = base_writer();
    w.kv_u64("general.alignment", 32);
    let err = parse_err(&w.to_bytes());
    assert_eq!(
        err,
        GgufError::WrongType {
            key: name("general.alignment"),
            expected: "u32",
            found: ValueType::U64
        }
    );
    // The largest accepted alignment still works end to end.
    let mut w = base_writer();
    w.alignment(1 << 20);
    let bytes = w.to_bytes();
    assert_eq!(Gguf::parse(&bytes).unwrap().alignment(), 1 << 20);
}

#[test]
fn tensor_offset_out_of_range() {
    let good = base_bytes();
    let g = Gguf::parse(&good).unwrap();
    let available = (good.len() - g.data_offset()) as u64;
    let r = record(&good, "output.weight");
    for offset in [available.next_multiple_of(32), 1 << 40, u64::MAX - 31] {
        let mut bytes = good.clone();
        put_u64(&mut bytes, r.offset, offset);
        assert_eq!(
            parse_err(&bytes),
            GgufError::TensorOutOfRange {
                tensor: name("output.weight"),
                index: 1,
                offset,
                size: 288,
                available
            }
        );
    }
    let mut bytes = good.clone();
    put_u64(&mut bytes, r.offset, read_u64(&good, r.offset) + 4);
    assert!(matches!(
        parse_err(&bytes),
        GgufError::MisalignedTensor {
            index: 1,
            alignment: 32,
            ..
        }
    ));
}

#[test]
fn overlapping_tensors() {
    let good = base_bytes();
    // token_embd is at 0..102, output.weight at 128..416, attn_norm at 416..436.
    let cases = [
        ("output.weight", 0),
        ("output.weight", 96),
        ("blk.0.attn_norm.weight", 384),
        ("blk.0.attn_norm.weight", 64),
        ("token_embd.weight", 320),
    ];
    for (moved, offset) in cases {
        let mut bytes = good.clone();
        put_u64(&mut bytes, record(&good, moved).offset, offset);
        match parse_err(&bytes) {
            GgufError::OverlappingTensors { first, second } => {
                let pair = [first.as_str(), second.as_str()];
                assert!(pair.contains(&moved), "{pair:?} should name {moved}");
            }
            other => panic!("moving {moved} to {offset}: {other:?}"),
        }
    }
}

#[test]
fn shape_bigger_than_its_data() {
    let good = base_bytes();
    let r = record(&good, "blk.0.attn_norm.weight");
    let mut bytes = good.clone();
    put_u64(&mut bytes, r.dims, 1_000_000);
    assert!(matches!(
        parse_err(&bytes),
        GgufError::TensorOutOfRange {
            index: 2,
            size: 4_000_000,
            ..
        }
    ));

    let r = record(&good, "output.weight");
    let patch_dim = |i: usize, v: u64| {
        let mut bytes = good.clone();
        put_u64(&mut bytes, r.dims + 8 * i, v);
        parse_err(&bytes)
    };
    let tensor = name("output.weight");
    assert_eq!(
        patch_dim(3, 1 << 62),
        GgufError::ShapeOverflow { tensor, index: 1 }
    );
    assert_eq!(
        patch_dim(1, u64::MAX),
        GgufError::ShapeOverflow { tensor, index: 1 }
    );
    assert_eq!(
        patch_dim(2, 0),
        GgufError::ZeroDim {
            tensor,
            index: 1,
            dim: 2
        }
    );
    assert_eq!(
        patch_dim(0, 300),
        GgufError::RowNotBlockAligned {
            tensor,
            index: 1,
            ne0: 300,
            block: 256
        }
    );
}

/// Two keys of one type whose names differ in the last byte; the second is renamed to the
/// first.
#[test]
fn duplicate_key() {
    let mut w = base_writer();
    w.kv_u32("dup.a", 1).kv_u32("dup.b", 2);
    let mut bytes = w.to_bytes();
    let at = find_unique(&bytes, &gguf_str("dup.b"));
    bytes[at + 8 + 4] = b'a';
    let n_before = Gguf::parse(&base_bytes()).unwrap().n_kv();
    assert_eq!(
        parse_err(&bytes),
        GgufError::DuplicateKey {
            key: name("dup.a"),
            index: n_before + 1
        }
    );
}

#[test]
fn duplicate_tensor_name() {
    let mut w = base_writer();
    w.tensor("dup.x", GgmlType::F32, &[1], vec![0; 4]).unwrap();
    w.tensor("dup.y", GgmlType::F32, &[1], vec![0; 4]).unwrap();
    let mut bytes = w.to_bytes();
    let at = find_unique(&bytes, &gguf_str("dup.y"));
    bytes[at + 8 + 4] = b'x';
    assert_eq!(
        parse_err(&bytes),
        GgufError::DuplicateTensor {
            tensor: name("dup.x"),
            index: TENSORS.len() + 1
        }
    );
}

#[test]
fn header_errors() {
    let good = base_bytes();
    let mut bytes = good.clone();
    bytes[0] = b'g';
    assert_eq!(parse_err(&bytes), GgufError::BadMagic { found: *b"gGUF" });
    for version in [0, 1, 4, u32::MAX] {
        put_u32(&mut bytes, 0, u32::from_le_bytes(*b"GGUF"));
        put_u32(&mut bytes, 4, version);
        assert_eq!(parse_err(&bytes), GgufError::UnsupportedVersion { version });
    }
    put_u32(&mut bytes, 4, 3u32.swap_bytes());
    let err = parse_err(&bytes);
    assert_eq!(
        err,
        GgufError::BigEndian {
            version: 3u32.swap_bytes()
        }
    );
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    // Version 2 has the same layout and is read.
    put_u32(&mut bytes, 4, 2);
    assert_eq!(Gguf::parse(&bytes).unwrap().version(), 2);
}

#[test]
fn bad_values() {
    let good = base_bytes();
    let key_at = |key: &str| find_unique(&good, &gguf_str(key)) + 8 + key.len();
    let with = |at: usize, patch: &[u8]| {
        let mut bytes = good.clone();
        bytes[at..at + patch.len()].copy_from_slice(patch);
        parse_err(&bytes)
    };
    // Unknown value type tag.
    let at = key_at("llama.block_count");
    assert_eq!(
        with(at, &13u32.to_le_bytes()),
        GgufError::UnknownValueType {
            key: name("llama.block_count"),
            ty: 13,
            offset: at
        }
    );
    // Unknown and nested array element types.
    let at = key_at("test.u32s") + 4;
    assert_eq!(
        with(at, &77u32.to_le_bytes()),
        GgufError::UnknownArrayType {
            key: name("test.u32s"),
            ty: 77,
            offset: at
        }
    );
    assert_eq!(
        with(at, &(ValueType::Array as u32).to_le_bytes()),
        GgufError::NestedArray {
            key: name("test.u32s"),
            offset: at
        }
    );
    // An array whose byte size overflows.
    assert_eq!(
        with(at + 4, &u64::MAX.to_le_bytes()),
        GgufError::ArrayTooLong {
            key: name("test.u32s"),
            len: u64::MAX,
            offset: at + 4
        }
    );
    // A bool byte of 2, as a value and inside an array.
    let at = key_at("tokenizer.ggml.add_bos_token") + 4;
    let key = name("tokenizer.ggml.add_bos_token");
    assert_eq!(
        with(at, &[2]),
        GgufError::InvalidBool {
            key,
            byte: 2,
            offset: at
        }
    );
    let at = key_at("test.bools") + 4 + 4 + 8 + 1;
    let key = name("test.bools");
    assert_eq!(
        with(at, &[0xff]),
        GgufError::InvalidBool {
            key,
            byte: 0xff,
            offset: at
        }
    );
    // Invalid UTF-8 in a key, a value and an array element.
    let at = find_unique(&good, b"h\xc3\xa9llo");
    assert_eq!(
        with(at + 1, &[0xc3, 0x28]),
        GgufError::InvalidUtf8 { offset: at }
    );
    let at = find_unique(&good, b"general.architecture");
    assert_eq!(with(at, &[0xff]), GgufError::InvalidUtf8 { offset: at });
}

#[test]
fn round_trip_every_kv_and_tensor() {
    let mut w = base_writer();
    w.kv("test.i64s", OwnedValue::I64(i64::MIN))
        .kv("test.str", OwnedValue::Str(String::new()));
    let mut expected_kvs: Vec<(String, OwnedValue)> = Vec::new();
    let bytes = w.to_bytes();
    let g = Gguf::parse(&bytes).unwrap();
    // Rebuild the same file from what the reader returns: equal bytes means equal content.
    let mut again = GgufWriter::new();
    for (key, value) in g.kvs() {
        expected_kvs.push((key.to_owned(), OwnedValue::from(value)));
        again.kv(key, OwnedValue::from(value));
    }
    for t in g.tensors() {
        again
            .tensor(t.name, t.ty, &t.dims[..t.n_dims], t.data.to_vec())
            .unwrap();
    }
    assert_eq!(again.to_bytes(), bytes);

    // And spot-check values against what the writer was given.
    assert_eq!(g.n_kv(), expected_kvs.len());
    assert_eq!(g.get_str("general.architecture"), Ok(Some("llama")));
    assert_eq!(g.get_u64("llama.context_length"), Ok(Some(2048)));
    assert_eq!(g.get_f32("llama.rope.freq_base"), Ok(Some(10_000.0)));
    assert_eq!(g.get_f32("test.f64"), Ok(Some(-0.5)));
    assert_eq!(g.get("test.i16"), Some(Value::I16(-7)));
    assert_eq!(g.get("test.i64s"), Some(Value::I64(i64::MIN)));
    assert_eq!(g.get_str("test.str"), Ok(Some("")));
    let tokens = g.get_array("tokenizer.ggml.tokens").unwrap().unwrap();
    assert!(tokens.strs().eq(["<s>", "</s>", "héllo"]));
    let scores = g.get_array("tokenizer.ggml.scores").unwrap().unwrap();
    assert_eq!((scores.len(), scores.f32_at(2)), (3, Some(-2.5)));
    let types = g.get_array("tokenizer.ggml.token_type").unwrap().unwrap();
    assert_eq!(
        types.iter().filter_map(|v| v.as_int()).collect::<Vec<_>>(),
        [3, 3, 1]
    );

    let mut counter = 0u8;
    for ((name, ty, dims), t) in TENSORS.iter().zip(g.tensors()) {
        assert_eq!((t.name, t.ty, &t.dims[..t.n_dims]), (*name, *ty, *dims));
        assert_eq!(t.offset % 32, 0);
        for &b in t.data {
            counter = counter.wrapping_add(1);
            assert_eq!(b, counter, "tensor {name}");
        }
    }
    assert_eq!(g.tensors().count(), TENSORS.len());
}

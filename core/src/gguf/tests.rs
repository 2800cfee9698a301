//! Happy-path tests on small hand-built files (the malformed-input suite lives in the
//! `glimmer-tests` crate, built with the boards GGUF writer).

extern crate std;

use std::vec::Vec;

use super::*;
use crate::quant::GgmlType;

/// Builds GGUF bytes field by field.
#[derive(Default)]
struct Bytes(Vec<u8>);

impl Bytes {
    fn header(version: u32, n_tensors: u64, n_kv: u64) -> Self {
        let mut b = Bytes::default();
        b.raw(b"GGUF").u32(version).u64(n_tensors).u64(n_kv);
        b
    }
    fn raw(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.extend_from_slice(bytes);
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.raw(&v.to_le_bytes())
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.raw(&v.to_le_bytes())
    }
    fn str(&mut self, s: &str) -> &mut Self {
        self.u64(s.len() as u64).raw(s.as_bytes())
    }
    /// A key and a value type tag.
    fn key(&mut self, key: &str, ty: ValueType) -> &mut Self {
        self.str(key).u32(ty as u32)
    }
    fn tensor(&mut self, name: &str, dims: &[u64], ty: GgmlType, offset: u64) -> &mut Self {
        self.str(name).u32(dims.len() as u32);
        for &d in dims {
            self.u64(d);
        }
        self.u32(ty as u32).u64(offset)
    }
    fn pad_to(&mut self, align: usize) -> &mut Self {
        while !self.0.len().is_multiple_of(align) {
            self.0.push(0);
        }
        self
    }
}

#[test]
fn empty_file_parses() {
    let b = Bytes::header(3, 0, 0);
    let g = Gguf::parse(&b.0).unwrap();
    assert_eq!((g.version(), g.n_kv(), g.n_tensors()), (3, 0, 0));
    assert_eq!(g.alignment(), 32);
    assert_eq!(g.data_offset(), 32); // 24 header bytes, aligned up.
    assert_eq!(g.kvs().count(), 0);
    assert_eq!(g.tensors().count(), 0);
    assert_eq!(g.get("x"), None);
    assert_eq!(g.get_u64("x"), Ok(None));
}

/// One key of every scalar type, plus arrays of strings, f32, i32, bool and u8.
fn all_types_file(version: u32) -> Vec<u8> {
    let mut b = Bytes::header(version, 0, 18);
    b.key("u8", ValueType::U8).raw(&[200]);
    b.key("i8", ValueType::I8).raw(&[0xfe]);
    b.key("u16", ValueType::U16).raw(&60_000u16.to_le_bytes());
    b.key("i16", ValueType::I16).raw(&(-300i16).to_le_bytes());
    b.key("u32", ValueType::U32).u32(4_000_000_000);
    b.key("i32", ValueType::I32).raw(&(-5i32).to_le_bytes());
    b.key("f32", ValueType::F32).raw(&1.5f32.to_le_bytes());
    b.key("bool", ValueType::Bool).raw(&[1]);
    b.key("str", ValueType::Str).str("héllo");
    b.key("u64", ValueType::U64).u64(1 << 40);
    b.key("i64", ValueType::I64).raw(&(-7i64).to_le_bytes());
    b.key("f64", ValueType::F64).raw(&0.25f64.to_le_bytes());
    b.key("strs", ValueType::Array)
        .u32(ValueType::Str as u32)
        .u64(3);
    b.str("a").str("").str("ünï");
    b.key("f32s", ValueType::Array)
        .u32(ValueType::F32 as u32)
        .u64(2);
    b.raw(&0.5f32.to_le_bytes()).raw(&(-2.0f32).to_le_bytes());
    b.key("i32s", ValueType::Array)
        .u32(ValueType::I32 as u32)
        .u64(3);
    b.raw(&1i32.to_le_bytes())
        .raw(&(-1i32).to_le_bytes())
        .raw(&i32::MAX.to_le_bytes());
    b.key("bools", ValueType::Array)
        .u32(ValueType::Bool as u32)
        .u64(2)
        .raw(&[0, 1]);
    b.key("empty", ValueType::Array)
        .u32(ValueType::U8 as u32)
        .u64(0);
    b.key("general.architecture", ValueType::Str).str("llama");
    b.0
}

#[test]
fn every_value_type_reads_back() {
    for version in [2, 3] {
        let bytes = all_types_file(version);
        let g = Gguf::parse(&bytes).unwrap();
        assert_eq!(g.version(), version);
        assert_eq!(g.n_kv(), 18);
        assert_eq!(g.kvs().count(), 18);
        assert_eq!(g.get("u8"), Some(Value::U8(200)));
        assert_eq!(g.get("i8"), Some(Value::I8(-2)));
        assert_eq!(g.get("u16"), Some(Value::U16(60_000)));
        assert_eq!(g.get("i16"), Some(Value::I16(-300)));
        assert_eq!(g.get("u32"), Some(Value::U32(4_000_000_000)));
        assert_eq!(g.get("i32"), Some(Value::I32(-5)));
        assert_eq!(g.get("f32"), Some(Value::F32(1.5)));
        assert_eq!(g.get("bool"), Some(Value::Bool(true)));
        assert_eq!(g.get("str"), Some(Value::Str("héllo")));
        assert_eq!(g.get("u64"), Some(Value::U64(1 << 40)));
        assert_eq!(g.get("i64"), Some(Value::I64(-7)));
        assert_eq!(g.get("f64"), Some(Value::F64(0.25)));
        assert_eq!(g.architecture(), Ok(Some("llama")));
    }
}

#[test]
fn typed_getters_convert_or_refuse() {
    let bytes = all_types_file(3);
    let g = Gguf::parse(&bytes).unwrap();
    assert_eq!(g.get_u64("u8"), Ok(Some(200)));
    assert_eq!(g.get_u64("u64"), Ok(Some(1 << 40)));
    assert_eq!(g.get_u32("u32"), Ok(Some(4_000_000_000)));
    assert_eq!(g.get_i64("i8"), Ok(Some(-2)));
    assert_eq!(g.get_u64("missing"), Ok(None));
    let neg = g.get_u64("i32").unwrap_err();
    assert_eq!(
        neg,
        GgufError::IntOutOfRange {
            key: ErrName::new("i32"),
            value: -5
        }
    );
    assert!(
        matches!(g.get_u32("u64"), Err(GgufError::IntOutOfRange { value, .. }) if value == 1 << 40)
    );
    let wrong = g.get_u64("f32").unwrap_err();
    assert_eq!(
        wrong,
        GgufError::WrongType {
            key: ErrName::new("f32"),
            expected: "integer",
            found: ValueType::F32
        }
    );
    assert_eq!(wrong.kind(), ErrorKind::WrongType);
    assert_eq!(g.get_f32("f32"), Ok(Some(1.5)));
    assert_eq!(g.get_f32("f64"), Ok(Some(0.25)));
    assert!(matches!(
        g.get_f32("u8"),
        Err(GgufError::WrongType {
            found: ValueType::U8,
            ..
        })
    ));
    assert_eq!(g.get_bool("bool"), Ok(Some(true)));
    assert!(matches!(
        g.get_bool("u8"),
        Err(GgufError::WrongType {
            expected: "bool",
            ..
        })
    ));
    assert_eq!(g.get_str("str"), Ok(Some("héllo")));
    assert!(matches!(
        g.get_str("strs"),
        Err(GgufError::WrongType {
            found: ValueType::Array,
            ..
        })
    ));
    assert!(matches!(
        g.get_array("str"),
        Err(GgufError::WrongType {
            found: ValueType::Str,
            ..
        })
    ));
    assert_eq!(g.get_array("nope"), Ok(None));
}

#[test]
fn arrays_read_in_place() {
    let bytes = all_types_file(3);
    let g = Gguf::parse(&bytes).unwrap();
    let strs = g.get_array("strs").unwrap().unwrap();
    assert_eq!(
        (strs.elem_type(), strs.len(), strs.is_empty()),
        (ValueType::Str, 3, false)
    );
    assert!(strs.strs().eq(["a", "", "ünï"]));
    assert_eq!(strs.get(2), Some(Value::Str("ünï")));
    assert_eq!(strs.get(3), None);
    assert_eq!(strs.f32_at(0), None);
    assert_eq!(strs.iter().count(), 3);

    let f = g.get_array("f32s").unwrap().unwrap();
    assert_eq!(
        (f.f32_at(0), f.f32_at(1), f.f32_at(2)),
        (Some(0.5), Some(-2.0), None)
    );
    assert_eq!(f.strs().count(), 0);
    assert_eq!(f.i32_at(0), None);

    let i = g.get_array("i32s").unwrap().unwrap();
    assert_eq!(
        (i.i32_at(0), i.i32_at(1), i.i32_at(2)),
        (Some(1), Some(-1), Some(i32::MAX))
    );
    assert_eq!(i.u32_at(1), None);
    assert_eq!(
        i.iter().collect::<Vec<_>>(),
        [Value::I32(1), Value::I32(-1), Value::I32(i32::MAX)]
    );

    let b = g.get_array("bools").unwrap().unwrap();
    assert_eq!(
        b.iter().collect::<Vec<_>>(),
        [Value::Bool(false), Value::Bool(true)]
    );
    let e = g.get_array("empty").unwrap().unwrap();
    assert!(e.is_empty() && e.iter().next().is_none() && e.get(0).is_none());
}

/// Two tensors (F32 [4, 2] and Q8_0 [32]) listed with the later one first, alignment 64.
fn tensor_file() -> (Vec<u8>, usize) {
    let mut b = Bytes::header(3, 2, 1);
    b.key("general.alignment", ValueType::U32).u32(64);
    b.tensor("late", &[32], GgmlType::Q8_0, 64);
    b.tensor("early", &[4, 2], GgmlType::F32, 0);
    b.pad_to(64);
    let data_offset = b.0.len();
    for i in 0..8 {
        b.raw(&(i as f32).to_le_bytes());
    }
    b.pad_to(64);
    b.raw(&[7u8; 34]);
    (b.0, data_offset)
}

#[test]
fn tensors_locate_their_bytes() {
    let (bytes, data_offset) = tensor_file();
    let g = Gguf::parse(&bytes).unwrap();
    assert_eq!(g.alignment(), 64);
    assert_eq!(g.data_offset(), data_offset);
    assert_eq!(g.data_offset() % 64, 0);
    let names: Vec<&str> = g.tensors().map(|t| t.name).collect();
    assert_eq!(names, ["late", "early"]);

    let early = g.tensor("early").unwrap();
    assert_eq!(
        (early.ty, early.n_dims, early.dims, early.offset),
        (GgmlType::F32, 2, [4, 2, 1, 1], 0)
    );
    assert_eq!(
        (early.n_elements(), early.row_len(), early.n_rows()),
        (8, 4, 2)
    );
    assert_eq!(early.row_bytes(), 16);
    assert_eq!(early.data.len(), 32);
    assert_eq!(early.data.get(4..8), Some(&1f32.to_le_bytes()[..]));

    let late = g.tensor("late").unwrap();
    assert_eq!(
        (late.ty, late.dims, late.offset),
        (GgmlType::Q8_0, [32, 1, 1, 1], 64)
    );
    assert_eq!(late.data, &[7u8; 34]);
    assert_eq!((late.n_rows(), late.row_bytes()), (1, 34));
    assert!(g.tensor("missing").is_none());
}

#[test]
fn structural_errors_name_their_place() {
    let (bytes, _) = tensor_file();
    // Data cut short: the later tensor no longer fits.
    let cut = bytes.get(..bytes.len() - 1).unwrap();
    assert!(matches!(
        Gguf::parse(cut),
        Err(GgufError::TensorOutOfRange {
            index: 0,
            offset: 64,
            size: 34,
            available: 97,
            ..
        })
    ));
    // Header cut short.
    assert_eq!(
        Gguf::parse(bytes.get(..10).unwrap()).err(),
        Some(GgufError::Truncated {
            what: Field::TensorCount,
            offset: 8
        })
    );
    // Version 1 and a big-endian version 3.
    let mut v1 = bytes.clone();
    v1[4..8].copy_from_slice(&1u32.to_le_bytes());
    assert_eq!(
        Gguf::parse(&v1).err(),
        Some(GgufError::UnsupportedVersion { version: 1 })
    );
    v1[4..8].copy_from_slice(&3u32.to_be_bytes());
    assert_eq!(Gguf::parse(&v1).unwrap_err().kind(), ErrorKind::Unsupported);
}

#[test]
fn err_name_truncates_on_char_boundary() {
    let long = "ü".repeat(40); // 80 bytes
    let n = ErrName::new(&long);
    assert!(n.is_truncated());
    assert_eq!(n.as_str(), "ü".repeat(24));
    assert_eq!(std::format!("{n}"), std::format!("{}…", "ü".repeat(24)));
    assert_eq!(ErrName::new("blk.0").as_str(), "blk.0");
}

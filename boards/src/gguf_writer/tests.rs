use std::io;

use glimmer_core::gguf::{Gguf, GgufError, Value};

use super::*;

#[test]
fn tensors_are_checked_when_added() {
    let mut w = GgufWriter::new();
    let err = |r: Result<&mut GgufWriter, GgufWriteError>| r.map(|_| ()).unwrap_err();
    assert!(matches!(
        err(w.tensor("a", GgmlType::F32, &[], vec![])),
        GgufWriteError::BadDimCount { n_dims: 0, .. }
    ));
    assert!(matches!(
        err(w.tensor("a", GgmlType::F32, &[1, 1, 1, 1, 1], vec![0; 4])),
        GgufWriteError::BadDimCount { n_dims: 5, .. }
    ));
    assert!(matches!(
        err(w.tensor("a", GgmlType::F32, &[2, 0], vec![])),
        GgufWriteError::ZeroDim { dim: 1, .. }
    ));
    assert!(matches!(
        err(w.tensor("a", GgmlType::Q8_0, &[16], vec![0; 17])),
        GgufWriteError::NotBlockAligned { ne0: 16, .. }
    ));
    assert!(matches!(
        err(w.tensor("a", GgmlType::F32, &[u64::MAX, 2], vec![])),
        GgufWriteError::ShapeOverflow { .. }
    ));
    let e = err(w.tensor("a", GgmlType::Q4_K, &[256, 2], vec![0; 287]));
    assert!(
        matches!(e, GgufWriteError::ByteLength { expected: 288, got: 287, ref name } if name == "a")
    );
    w.tensor("a", GgmlType::Q4_K, &[256, 2], vec![0; 288])
        .unwrap();
    assert!(matches!(
        err(w.tensor("a", GgmlType::F32, &[1], vec![0; 4])),
        GgufWriteError::DuplicateTensor { .. }
    ));
    assert_eq!(w.n_tensors(), 1);
}

#[test]
fn keys_replace_in_place() {
    let mut w = GgufWriter::new();
    w.kv_u32("a", 1).kv_str("b", "x").kv_u32("a", 2);
    let bytes = w.to_bytes();
    let g = Gguf::parse(&bytes).unwrap();
    let keys: Vec<_> = g.kvs().collect();
    assert_eq!(keys, [("a", Value::U32(2)), ("b", Value::Str("x"))]);
}

#[test]
fn alignment_sets_layout_and_padding() {
    let mut w = GgufWriter::new();
    w.alignment(256);
    w.tensor("x", GgmlType::F32, &[3], vec![1; 12]).unwrap();
    w.tensor("y", GgmlType::F32, &[1], vec![2; 4]).unwrap();
    let len = w.file_len();
    let bytes = w.to_bytes();
    assert_eq!(bytes.len() as u64, len);
    assert_eq!(bytes.len() % 256, 0, "the last tensor is padded too");
    let g = Gguf::parse(&bytes).unwrap();
    assert_eq!(g.alignment(), 256);
    assert_eq!(g.data_offset() % 256, 0);
    let y = g.tensor("y").unwrap();
    assert_eq!((y.offset, y.data), (256, &[2u8; 4][..]));
}

#[test]
fn invalid_alignment_is_declared_but_not_used() {
    for bad in [0u32, 48, 1 << 21] {
        let mut w = GgufWriter::new();
        w.alignment(bad);
        w.tensor("x", GgmlType::F32, &[1], vec![0; 4]).unwrap();
        let bytes = w.to_bytes();
        assert_eq!(bytes.len() % 32, 0);
        assert_eq!(
            Gguf::parse(&bytes).err(),
            Some(GgufError::BadAlignment { alignment: bad })
        );
    }
}

#[test]
fn lazy_sources_stream_and_are_size_checked() {
    let mut w = GgufWriter::new();
    w.tensor_with("z", GgmlType::F16, &[4, 2], |out| out.write_all(&[9; 16]))
        .unwrap();
    let bytes = w.to_bytes();
    let g = Gguf::parse(&bytes).unwrap();
    assert_eq!(g.tensor("z").unwrap().data, &[9u8; 16]);

    let mut short = GgufWriter::new();
    short
        .tensor_with("z", GgmlType::F16, &[4], |out| out.write_all(&[9; 7]))
        .unwrap();
    let e = short.write_to(io::sink()).unwrap_err();
    assert!(matches!(
        e,
        GgufWriteError::SourceLength {
            expected: 8,
            written: 7,
            ..
        }
    ));

    let mut failing = GgufWriter::new();
    failing
        .tensor_with("z", GgmlType::F16, &[4], |_| Err(io::Error::other("boom")))
        .unwrap();
    assert!(matches!(
        failing.write_to(io::sink()),
        Err(GgufWriteError::Io(_))
    ));
}

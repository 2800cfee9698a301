//! The largest tables the reader accepts parse in bounded time, and the whole-table checks
//! (duplicates, overlaps, table order) still fire at that size.

mod gguf_common;

use std::time::Instant;

use glimmer_boards::gguf_writer::GgufWriter;
use glimmer_core::gguf::{ErrName, Gguf, GgufError, MAX_KVS, MAX_TENSORS, MAX_UNSORTED_TENSORS};
use glimmer_core::quant::GgmlType;

use gguf_common::{find_unique, gguf_str, put_u64, read_u64, record};

/// `n_kv` u32 keys `k{i}` and `n_tensors` one-float tensors `t{i}`, in offset order.
fn table(n_kv: usize, n_tensors: usize) -> Vec<u8> {
    let mut w = GgufWriter::new();
    for i in 0..n_kv {
        w.kv_u32(format!("k{i}"), i as u32);
    }
    for i in 0..n_tensors {
        w.tensor(format!("t{i}"), GgmlType::F32, &[1], vec![0; 4])
            .unwrap();
    }
    w.to_bytes()
}

/// Swaps the data offsets of tensors `a` and `b` (same size): still valid, now unsorted.
fn swap_offsets(bytes: &mut [u8], a: &str, b: &str) {
    let (ra, rb) = (record(bytes, a), record(bytes, b));
    let (oa, ob) = (read_u64(bytes, ra.offset), read_u64(bytes, rb.offset));
    put_u64(bytes, ra.offset, ob);
    put_u64(bytes, rb.offset, oa);
}

#[test]
fn tables_at_the_caps_parse_and_are_checked() {
    let bytes = table(MAX_KVS, MAX_TENSORS);
    let start = Instant::now();
    let g = Gguf::parse(&bytes).unwrap();
    println!(
        "{MAX_KVS} kvs, {MAX_TENSORS} tensors parsed in {:?}",
        start.elapsed()
    );
    assert_eq!((g.n_kv(), g.n_tensors()), (MAX_KVS, MAX_TENSORS));

    // The last name repeats one from a much earlier chunk of the duplicate check.
    let mut dup = bytes.clone();
    let last = format!("t{}", MAX_TENSORS - 1);
    let at = find_unique(&dup, &gguf_str(&last)) + 8;
    dup[at..at + last.len()].copy_from_slice(b"t10000");
    let err = Gguf::parse(&dup).unwrap_err();
    let tensor = ErrName::new("t10000");
    assert_eq!(
        err,
        GgufError::DuplicateTensor {
            tensor,
            index: MAX_TENSORS - 1
        }
    );

    // Out of order beyond the unsorted limit: refused rather than checked slowly.
    let mut unsorted = bytes.clone();
    swap_offsets(&mut unsorted, "t0", "t1");
    assert_eq!(
        Gguf::parse(&unsorted).unwrap_err(),
        GgufError::UnsortedTensorTable { count: MAX_TENSORS }
    );
}

#[test]
fn unsorted_tables_up_to_the_limit_are_checked_for_overlaps() {
    let mut bytes = table(0, MAX_UNSORTED_TENSORS);
    swap_offsets(&mut bytes, "t0", &format!("t{}", MAX_UNSORTED_TENSORS - 1));
    let g = Gguf::parse(&bytes).unwrap();
    assert_eq!(
        g.tensor("t0").unwrap().offset,
        32 * (MAX_UNSORTED_TENSORS as u64 - 1)
    );

    // Point a middle tensor at the first's bytes.
    let r = record(&bytes, "t2000");
    put_u64(&mut bytes, r.offset, 32 * (MAX_UNSORTED_TENSORS as u64 - 1));
    match Gguf::parse(&bytes).unwrap_err() {
        GgufError::OverlappingTensors { first, second } => {
            assert_eq!((first.as_str(), second.as_str()), ("t0", "t2000"));
        }
        other => panic!("{other:?}"),
    }

    let mut too_many = table(0, MAX_UNSORTED_TENSORS + 1);
    swap_offsets(&mut too_many, "t0", "t1");
    assert!(matches!(
        Gguf::parse(&too_many),
        Err(GgufError::UnsortedTensorTable { .. })
    ));
}

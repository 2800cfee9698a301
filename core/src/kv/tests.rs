extern crate std;

use std::vec;
use std::vec::Vec;

use super::*;
use crate::model::MAX_LAYERS;
use crate::plan::KvType;

/// Two layers (0 sliding with a ring of `ring`, 1 global) of width 2.
fn geo(ctx: usize, ring: usize, ty: KvType, dim: usize) -> KvGeometry {
    let mut caps = [0; MAX_LAYERS];
    caps[0] = ring;
    caps[1] = ctx;
    KvGeometry {
        n_layer: 2,
        ctx,
        caps,
        k_dim: dim,
        v_dim: dim,
        ty,
    }
}

fn pool(g: KvGeometry, slots: usize) -> PagePool<Vec<u16>, Vec<u32>> {
    let n = slots * g.pages_per_slot().unwrap();
    let data = vec![0u16; data_len(&g, n).unwrap()];
    let meta = vec![0u32; meta_len(&g, slots, n).unwrap()];
    PagePool::new(g, slots, n, data, meta).unwrap()
}

fn put(p: &mut PagePool<Vec<u16>, Vec<u32>>, slot: usize, layer: usize, pos: usize, val: u16) {
    let mut s = p.slot(slot).unwrap();
    let (k, v) = s.row_mut(layer, pos).unwrap();
    k.fill(val);
    v.fill(val + 1);
}

fn get(p: &mut PagePool<Vec<u16>, Vec<u32>>, slot: usize, layer: usize, pos: usize) -> Option<u16> {
    let s = p.slot(slot).unwrap();
    let l = s.layer(layer).unwrap();
    let k = l.key(pos)?[0];
    assert_eq!(l.value(pos)?[0], k + 1);
    Some(k)
}

#[test]
fn ring_layers_wrap_and_global_layers_do_not() {
    let mut p = pool(geo(300, 100, KvType::F16, 2), 1);
    for pos in 0..250 {
        put(&mut p, 0, 0, pos, pos as u16);
        put(&mut p, 0, 1, pos, pos as u16);
    }
    // The ring holds the last 100 positions; slot 249 % 100 = 49.
    assert_eq!(get(&mut p, 0, 0, 249), Some(249));
    assert_eq!(get(&mut p, 0, 0, 150), Some(150));
    assert_eq!(
        get(&mut p, 0, 0, 49),
        Some(249),
        "position 49's slot now holds 249"
    );
    assert_eq!(get(&mut p, 0, 1, 3), Some(3));
    assert_eq!(get(&mut p, 0, 1, 260), None, "never written");
    let mut s = p.slot(0).unwrap();
    assert_eq!(s.row_mut(1, 300).err(), Some(KvError::Range));
}

#[test]
fn pages_are_taken_on_write_and_returned_on_release() {
    let g = geo(256, 128, KvType::F16, 2);
    assert_eq!(g.pages_per_slot().unwrap(), 2 + 4);
    let mut p = pool(g, 2);
    assert_eq!(p.free_pages(), 12);
    for pos in 0..65 {
        put(&mut p, 1, 1, pos, 7);
    }
    assert_eq!(
        p.free_pages(),
        10,
        "65 positions of one layer take two pages"
    );
    p.release(1).unwrap();
    assert_eq!(p.free_pages(), 12);
    assert_eq!(get(&mut p, 1, 1, 0), None);
}

#[test]
fn shared_prefix_is_copied_on_write() {
    let mut p = pool(geo(256, 128, KvType::F16, 4), 2);
    for pos in 0..80 {
        put(&mut p, 0, 0, pos, pos as u16);
        put(&mut p, 0, 1, pos, pos as u16);
    }
    let before = p.free_pages();
    p.share_prefix(0, 1, 70, 80).unwrap();
    assert_eq!(p.free_pages(), before, "sharing copies nothing");
    assert_eq!(get(&mut p, 1, 1, 10), Some(10));
    // Slot 1 continues at 70: its write copies the shared page, slot 0 keeps its own 70.
    put(&mut p, 1, 1, 70, 1000);
    put(&mut p, 1, 0, 70, 1000);
    assert_eq!(p.free_pages(), before - 2);
    assert_eq!(get(&mut p, 0, 1, 70), Some(70));
    assert_eq!(get(&mut p, 1, 1, 70), Some(1000));
    assert_eq!(
        get(&mut p, 1, 1, 69),
        Some(69),
        "the copy keeps the shared positions"
    );
    // Releasing the source leaves the sharer intact.
    p.release(0).unwrap();
    assert_eq!(get(&mut p, 1, 1, 5), Some(5));
    p.release(1).unwrap();
    assert_eq!(p.free_pages(), p.pages());
}

#[test]
fn a_ring_that_moved_on_cannot_be_shared() {
    let mut p = pool(geo(512, 128, KvType::F16, 2), 2);
    for pos in 0..300 {
        put(&mut p, 0, 0, pos, 1);
        put(&mut p, 0, 1, pos, 1);
    }
    assert_eq!(p.share_prefix(0, 1, 100, 300), Err(KvError::NotShareable));
    // A wrapped ring can only be shared up to where the source stands.
    assert_eq!(p.share_prefix(0, 1, 299, 300), Err(KvError::NotShareable));
    assert!(p.share_prefix(0, 1, 300, 300).is_ok());
}

#[test]
fn q8_0_pages_are_sized_in_blocks() {
    let g = geo(64, 64, KvType::Q8_0, 64);
    assert_eq!(g.row_units(64).unwrap(), 34);
    assert_eq!(g.page_units().unwrap(), 64 * 68);
    assert_eq!(
        geo(64, 64, KvType::Q8_0, 48).page_units(),
        Err(KvError::NotBlocked)
    );
}

#[test]
fn a_short_pool_reports_empty_and_small_memory_is_refused() {
    let g = geo(128, 64, KvType::F16, 2);
    let n = 2;
    let data = vec![0u16; data_len(&g, n).unwrap()];
    let meta = vec![0u32; meta_len(&g, 1, n).unwrap()];
    assert_eq!(
        PagePool::new(g, 1, n, &mut data.clone()[..1], &mut meta.clone()[..]).err(),
        Some(KvError::TooSmall)
    );
    let mut p = PagePool::new(g, 1, n, data, meta).unwrap();
    put(&mut p, 0, 0, 0, 1);
    put(&mut p, 0, 1, 0, 1);
    let mut s = p.slot(0).unwrap();
    assert_eq!(s.row_mut(1, 64).err(), Some(KvError::PoolEmpty));
}

#[test]
fn runs_cover_a_range_like_single_positions() {
    // A ring of 100 (pages of 64: slots 0-63, 64-99) and a global layer.
    let mut p = pool(geo(300, 100, KvType::F16, 3), 1);
    for pos in 0..250 {
        put(&mut p, 0, 0, pos, pos as u16);
        put(&mut p, 0, 1, pos, pos as u16);
    }
    let s = p.slot(0).unwrap();
    for (layer, lo, hi) in [(0usize, 150usize, 250usize), (1, 0, 250), (1, 70, 71)] {
        let l = s.layer(layer).unwrap();
        let mut t = lo;
        let mut lens = Vec::new();
        while t < hi {
            let (k, v, n) = l.run(t, hi - t).unwrap();
            assert!(n >= 1 && t + n <= hi);
            assert_eq!((k.len(), v.len()), (3 * n, 3 * n));
            for i in 0..n {
                assert_eq!(k[3 * i..3 * i + 3], *l.key(t + i).unwrap());
                assert_eq!(v[3 * i..3 * i + 3], *l.value(t + i).unwrap());
            }
            lens.push(n);
            t += n;
        }
        match layer {
            // 150 is slot 50: to the page end (64), to the ring end (100), wrap to 0..50.
            0 => assert_eq!(lens, [14, 36, 50]),
            _ if lo == 0 => assert_eq!(lens, [64, 64, 64, 58]),
            _ => assert_eq!(lens, [1]),
        }
    }
    let l = s.layer(1).unwrap();
    assert!(l.run(10, 0).is_none());
    // Never written: the page of positions 256.. does not exist.
    assert!(l.run(260, 5).is_none());
}

//! Device tests: they run where a CUDA driver and device are present and skip (with a
//! message) elsewhere. The full op-by-op suite is the `cuda-check` example.

#![cfg(not(target_os = "macos"))]

use glimmer_core::cpu::ops::rmsnorm_row;
use glimmer_core::exec::{Backend, Buf};
use glimmer_core::kv::KvGeometry;
use glimmer_core::model::{Tensor, MAX_LAYERS};
use glimmer_core::plan::KvType;
use glimmer_core::quant::GgmlType;
use glimmer_jetson::{Capacity, CudaBackend, CudaError, Gpu, KvLayout};

fn backend() -> Option<CudaBackend> {
    let gpu = match Gpu::open(0) {
        Ok(g) => g,
        Err(e @ (CudaError::NoDriver | CudaError::NoNvrtc)) => {
            eprintln!("SKIP: {e}");
            return None;
        }
        Err(e) => panic!("opening the GPU failed: {e}"),
    };
    let mut caps = [0usize; MAX_LAYERS];
    caps[0] = 64;
    let geo = KvGeometry {
        n_layer: 1,
        ctx: 64,
        caps,
        k_dim: 64,
        v_dim: 64,
        ty: KvType::F16,
    };
    let cap = Capacity {
        arena_len: 4096,
        chunk: 4,
        max_cols: 256,
        n_head: 2,
        head_dim_v: 32,
    };
    Some(CudaBackend::new(gpu, cap, KvLayout::new(&geo, 1).unwrap()).unwrap())
}

#[test]
fn rmsnorm_matches_the_cpu_reference() {
    let Some(mut b) = backend() else { return };
    let dim = 256;
    let x: Vec<f32> = (0..2 * dim)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
        .collect();
    let w: Vec<f32> = (0..dim).map(|i| 1.0 + (i % 5) as f32 * 0.01).collect();
    let t = Tensor {
        ty: GgmlType::F32,
        rows: 1,
        cols: dim,
        data: bytemuck::cast_slice(&w),
        id: 7,
    };
    b.upload(&[t]).unwrap();
    let (xb, ob) = (
        Buf {
            off: 0,
            len: 2 * dim,
        },
        Buf {
            off: 1024,
            len: 2 * dim,
        },
    );
    b.write(xb, &x).unwrap();
    b.write(ob, &vec![f32::NAN; 2 * dim]).unwrap();
    b.rmsnorm(xb, Some(&t), dim, 1e-5, ob).unwrap();
    let mut got = vec![0f32; 2 * dim];
    b.read(ob, &mut got).unwrap();
    let mut want = vec![0f32; 2 * dim];
    for (xr, or) in x.chunks(dim).zip(want.chunks_mut(dim)) {
        rmsnorm_row(xr, Some(&w), 1e-5, or);
    }
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{g} vs {w}");
    }
}

#[test]
fn regions_outside_the_arena_are_refused() {
    let Some(mut b) = backend() else { return };
    let r = b.scale(
        Buf {
            off: 4000,
            len: 200,
        },
        2.0,
    );
    assert_eq!(r, Err(CudaError::BadRegion));
    assert_eq!(b.select_slot(1), Err(CudaError::KvRange));
}

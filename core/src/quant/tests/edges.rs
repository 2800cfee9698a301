//! Exact rounding cases, layouts, error paths.

use core::mem::{offset_of, size_of};

use super::*;

#[test]
fn block_layouts_match_ggml() {
    for (size, ty) in [
        (size_of::<BlockQ4_0>(), GgmlType::Q4_0),
        (size_of::<BlockQ4_1>(), GgmlType::Q4_1),
        (size_of::<BlockQ5_0>(), GgmlType::Q5_0),
        (size_of::<BlockQ8_0>(), GgmlType::Q8_0),
        (size_of::<BlockQ8_1>(), GgmlType::Q8_1),
        (size_of::<BlockQ4K>(), GgmlType::Q4_K),
        (size_of::<BlockQ5K>(), GgmlType::Q5_K),
        (size_of::<BlockQ6K>(), GgmlType::Q6_K),
        (size_of::<BlockQ8K>(), GgmlType::Q8_K),
    ] {
        assert_eq!(size, ty.type_size(), "{}", ty.name());
    }
    assert_eq!(offset_of!(BlockQ5_0, qs), 6);
    assert_eq!(offset_of!(BlockQ8_1, qs), 4);
    assert_eq!(offset_of!(BlockQ5K, qh), 16);
    assert_eq!(offset_of!(BlockQ5K, qs), 48);
    assert_eq!(offset_of!(BlockQ6K, scales), 192);
    assert_eq!(offset_of!(BlockQ6K, d), 208);
    assert_eq!(offset_of!(BlockQ8K, bsums), 260);
}

#[test]
fn scale_min_packing_round_trips() {
    let mut rng = Rng::new(21);
    for _ in 0..200 {
        let sc: [u8; 8] = core::array::from_fn(|_| (rng.next_u64() % 64) as u8);
        let m: [u8; 8] = core::array::from_fn(|_| (rng.next_u64() % 64) as u8);
        assert_eq!(unpack_scales_mins(&pack_scales_mins(&sc, &m)), (sc, m));
    }
    // Every 12-byte pattern unpacks to 6-bit values and packs back to itself.
    for _ in 0..200 {
        let s: [u8; 12] = core::array::from_fn(|_| rng.next_u64() as u8);
        let (sc, m) = unpack_scales_mins(&s);
        assert!(sc.iter().chain(&m).all(|&v| v < 64));
        assert_eq!(pack_scales_mins(&sc, &m), s);
    }
}

#[test]
fn q8_0_weights_round_halves_away_from_zero() {
    let mut x = [0.0f32; 32];
    x[..7].copy_from_slice(&[127.0, 2.5, -2.5, 0.5, -0.5, 1.5, -126.5]);
    let mut q = [0u8; 34];
    crate::quant::quantize_weights(GgmlType::Q8_0, &x, &mut q).unwrap();
    let b: &[BlockQ8_0] = bytemuck::cast_slice(&q);
    assert_eq!(b[0].d.to_f32(), 1.0);
    assert_eq!(&b[0].qs[..7], &[127, 3, -3, 1, -1, 2, -127]);
}

/// Activations follow llama.cpp's x86 path: `127 / amax` and halves to even.
#[test]
fn q8_0_activations_round_halves_to_even() {
    let mut x = [0.0f32; 32];
    x[..7].copy_from_slice(&[127.0, 2.5, -2.5, 0.5, -0.5, 1.5, -126.5]);
    let q = quant_a(GgmlType::Q8_0, &x);
    let b: &[BlockQ8_0] = bytemuck::cast_slice(&q);
    assert_eq!(b[0].d.to_f32(), 1.0);
    assert_eq!(&b[0].qs[..7], &[127, 2, -2, 0, 0, 2, -126]);
}

#[test]
fn q8_1_sum_uses_unrounded_scale() {
    let x: std::vec::Vec<f32> = (0..32).map(|i| (i as f32 - 10.3) * 0.0371).collect();
    let q = quant_a(GgmlType::Q8_1, &x);
    let b: &[BlockQ8_1] = bytemuck::cast_slice(&q);
    let d = 20.7f32 * 0.0371 / 127.0; // max |x| is the last value
    let sum: i32 = b[0].qs.iter().map(|&v| i32::from(v)).sum();
    assert_eq!(b[0].d, F16Le::from_f32(d));
    assert_eq!(b[0].s, F16Le::from_f32(sum as f32 * d));
    // The data is chosen so that the rounded scale would give a different `s`.
    assert_ne!(b[0].s, F16Le::from_f32(sum as f32 * b[0].d.to_f32()));
}

#[test]
fn q8_k_rounds_halves_to_even_and_fills_bsums() {
    let mut x = [0.0f32; 256];
    x[..6].copy_from_slice(&[127.0, 2.5, 3.5, -2.5, 0.5, 1.5]);
    x[20] = -7.0;
    let q = quant_a(GgmlType::Q8_K, &x);
    let b: &[BlockQ8K] = bytemuck::cast_slice(&q);
    // iscale = -127 / 127 = -1, so q = nearest_int(-x) and d = -1.
    assert_eq!(b[0].d.get(), -1.0);
    assert_eq!(&b[0].qs[..6], &[-127, -2, -4, 2, 0, -2]);
    assert_eq!(b[0].qs[20], 7);
    assert_eq!(b[0].bsums[0].get(), -127 - 2 - 4 + 2 - 2);
    assert_eq!(b[0].bsums[1].get(), 7);
    assert!(b[0].bsums[2..].iter().all(|s| s.get() == 0));
}

#[test]
fn bf16_conversion_rounds_to_even_and_quiets_nan() {
    let cases = [
        (1.0f32, 0x3f80u16),
        (f32::from_bits(0x3f80_8000), 0x3f80), // tie, even stays
        (f32::from_bits(0x3f81_8000), 0x3f82), // tie, odd rounds up
        (f32::from_bits(0x3f80_8001), 0x3f81),
        (f32::INFINITY, 0x7f80),
        (f32::from_bits(0x7f80_0001), 0x7fc0), // signalling NaN made quiet
    ];
    for (x, want) in cases {
        assert_eq!(Bf16Le::from_f32(x), Bf16Le(want.to_le_bytes()), "{x:e}");
    }
}

#[test]
fn vec_dot_type_follows_llama_cpp() {
    use GgmlType as T;
    for (w, a) in [
        (T::Q4_0, T::Q8_0),
        (T::Q5_0, T::Q8_0),
        (T::Q8_0, T::Q8_0),
        (T::Q4_1, T::Q8_1),
        (T::Q4_K, T::Q8_K),
        (T::Q5_K, T::Q8_K),
        (T::Q6_K, T::Q8_K),
        (T::F16, T::F16),
        (T::BF16, T::BF16),
        (T::F32, T::F32),
    ] {
        assert_eq!(vec_dot_type(w), a, "{}", w.name());
    }
}

#[test]
fn bad_arguments_give_typed_errors() {
    use GgmlType as T;
    let mut out = [0.0f32; 64];
    assert_eq!(
        dequantize_row(T::Q2_K, &[0; 84], &mut [0.0; 256]),
        Err(QuantError::UnsupportedType(T::Q2_K))
    );
    assert_eq!(
        dequantize_row(T::Q4_0, &[0; 35], &mut out),
        Err(QuantError::BadLength {
            expected: 36,
            got: 35
        })
    );
    assert_eq!(
        dequantize_row(T::Q4_0, &[0; 36], &mut out[..33]),
        Err(QuantError::NotBlockMultiple { n: 33, block: 32 })
    );
    assert_eq!(
        quantize_row(T::Q4_0, &out, &mut [0; 36]),
        Err(QuantError::UnsupportedType(T::Q4_0))
    );
    assert_eq!(
        quantize_weights(T::Q8_K, &[0.0; 256], &mut [0; 292]),
        Err(QuantError::UnsupportedType(T::Q8_K))
    );
    assert_eq!(
        quantize_row(T::Q8_K, &out, &mut [0; 292]),
        Err(QuantError::NotBlockMultiple { n: 64, block: 256 })
    );
    let w = [0u8; 36];
    assert_eq!(vec_dot(T::Q4_0, 64, &w, &[0; 68]), Ok(0.0));
    assert_eq!(
        vec_dot(T::Q4_0, 64, &w, &[0; 67]),
        Err(QuantError::BadLength {
            expected: 68,
            got: 67
        })
    );
    assert_eq!(
        vec_dot(T::Q4_0, 64, &w[..35], &[0; 68]),
        Err(QuantError::BadLength {
            expected: 36,
            got: 35
        })
    );
    assert_eq!(
        vec_dot(T::Q5_1, 32, &[0; 24], &[0; 36]),
        Err(QuantError::UnsupportedType(T::Q5_1))
    );
    assert_eq!(
        QuantError::BadLength {
            expected: 1,
            got: 2
        }
        .kind(),
        "bad_length"
    );
}

#[test]
fn arbitrary_lengths_never_panic() {
    let mut rng = Rng::new(31);
    let bytes = rng.bytes(4096);
    let floats = rng.data(1024);
    let mut out = std::vec![0.0f32; 1024];
    let mut qout = std::vec![0u8; 4096];
    for ty in GgmlType::ALL {
        for _ in 0..50 {
            let nb = (rng.next_u64() % 4096) as usize;
            let n = (rng.next_u64() % 1024) as usize;
            let _ = dequantize_row(ty, &bytes[..nb], &mut out[..n]);
            let _ = quantize_row(ty, &floats[..n], &mut qout[..nb]);
            let _ = quantize_weights(ty, &floats[..n], &mut qout[..nb]);
            let na = (rng.next_u64() % 4096) as usize;
            let _ = vec_dot(ty, n, &bytes[..nb], &bytes[..na]);
        }
        // Exact lengths with random bytes: NaN scales are fine, panics are not.
        let n = 512;
        if let Some(len) = ty.row_bytes(n) {
            if len <= bytes.len() {
                let _ = dequantize_row(ty, &bytes[..len], &mut out[..n]);
                if let Some(alen) = vec_dot_type(ty).row_bytes(n) {
                    let _ = vec_dot(ty, n, &bytes[..len], &bytes[..alen.min(4096)]);
                }
            }
        }
    }
}

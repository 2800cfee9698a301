//! AVX2 + F16C kernels over f16 vectors (the KV cache): a dot product with f32 values and an
//! `out += w · v` update. F16C widens 8 halves at once, exactly as `f16::to_f32` does.

use core::arch::x86_64::*;

use super::avx2::{hsum, ld8f};

/// Eight f16 bit patterns widened to f32 (exact).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn cvt8(h: &[u16; 8]) -> __m256 {
    // SAFETY: reads exactly the 16 bytes of `h`; `loadu` has no alignment requirement.
    _mm256_cvtph_ps(unsafe { _mm_loadu_si128(h.as_ptr().cast()) })
}

/// `sum(k[i] · q[i])` over the common length, `k` as f16 bits.
#[target_feature(enable = "avx2,fma,f16c")]
pub(in crate::quant::simd) fn dot_f16(k: &[u16], q: &[f32]) -> f32 {
    let n = k.len().min(q.len());
    let (k8, kt) = k[..n].as_chunks::<8>();
    let (q8, qt) = q[..n].as_chunks::<8>();
    let mut acc = [_mm256_setzero_ps(); 2];
    let mut pairs = k8.chunks_exact(2).zip(q8.chunks_exact(2));
    for (kk, qq) in &mut pairs {
        acc[0] = _mm256_fmadd_ps(cvt8(&kk[0]), ld8f(&qq[0]), acc[0]);
        acc[1] = _mm256_fmadd_ps(cvt8(&kk[1]), ld8f(&qq[1]), acc[1]);
    }
    if k8.len() % 2 == 1 {
        let i = k8.len() - 1;
        acc[0] = _mm256_fmadd_ps(cvt8(&k8[i]), ld8f(&q8[i]), acc[0]);
    }
    let mut s = hsum(_mm256_add_ps(acc[0], acc[1]));
    for (&kb, &qv) in kt.iter().zip(qt) {
        s += half::f16::from_bits(kb).to_f32() * qv;
    }
    s
}

/// `out[i] += w · v[i]` over the common length, `v` as f16 bits.
#[target_feature(enable = "avx2,fma,f16c")]
pub(in crate::quant::simd) fn axpy_f16(out: &mut [f32], w: f32, v: &[u16]) {
    let n = out.len().min(v.len());
    let (o8, ot) = out[..n].as_chunks_mut::<8>();
    let (v8, vt) = v[..n].as_chunks::<8>();
    let wv = _mm256_set1_ps(w);
    for (o, vv) in o8.iter_mut().zip(v8) {
        let r = _mm256_fmadd_ps(cvt8(vv), wv, ld8f(o));
        // SAFETY: writes exactly the 32 bytes of `o`; `storeu` has no alignment requirement.
        unsafe { _mm256_storeu_ps(o.as_mut_ptr(), r) };
    }
    for (o, &vb) in ot.iter_mut().zip(vt) {
        *o += w * half::f16::from_bits(vb).to_f32();
    }
}

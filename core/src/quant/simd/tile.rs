//! The driver of the register-blocked tile kernels ([`TileFn`](super::kernels::TileFn)).
//!
//! A tile kernel `$kern::<R, C>(w: [&[W]; R], a: [&[A]; C]) -> [[f32; C]; R]` walks the
//! blocks of `R` weight rows and `C` activation rows together: each weight block is unpacked
//! once for the `C` activation rows, each activation block loaded once for the `R` weight
//! rows. Per (weight row, activation row) pair it runs exactly the steps of the tier's
//! `dot_rows` kernel (same integer lanes, same f32 operations in the same order, same
//! horizontal sum), so the results agree bit for bit.
//!
//! [`tile_entry`] wraps such a kernel into a `TileFn`: activation rows in groups of `C`
//! (outer loop, so a group stays in L1 while the weight rows pass), weight rows in groups of
//! `R` (inner loop), remainders with `R = 1` and `C = 1`.

/// Defines `$name`, a `TileFn` compiled for `$feat` over `$kern` (see the module docs) with
/// `$r × $c` register blocks.
macro_rules! tile_entry {
    ($feat:literal, $name:ident, $w:ty, $a:ty, $kern:ident, $r:literal, $c:literal) => {
        #[target_feature(enable = $feat)]
        pub(in crate::quant::simd) fn $name(
            w: &[u8],
            acts: &[u8],
            k: usize,
            out: &mut [f32],
            ldo: usize,
        ) {
            use $crate::quant::simd::tile::{rows, store};
            let (Ok(w), Ok(a)) = (
                bytemuck::try_cast_slice::<u8, $w>(w),
                bytemuck::try_cast_slice::<u8, $a>(acts),
            ) else {
                return;
            };
            let Some(nb) = a.len().checked_div(k) else {
                return;
            };
            let Some(m) = w.len().checked_div(nb) else {
                return;
            };
            let mut c0 = 0;
            while k - c0 >= $c {
                let ar = rows::<$a, $c>(a, nb, c0);
                let mut i0 = 0;
                while m - i0 >= $r {
                    store(out, ldo, i0, c0, $kern::<$r, $c>(rows(w, nb, i0), ar));
                    i0 += $r;
                }
                while i0 < m {
                    store(out, ldo, i0, c0, $kern::<1, $c>(rows(w, nb, i0), ar));
                    i0 += 1;
                }
                c0 += $c;
            }
            while c0 < k {
                let ar = rows::<$a, 1>(a, nb, c0);
                let mut i0 = 0;
                while m - i0 >= $r {
                    store(out, ldo, i0, c0, $kern::<$r, 1>(rows(w, nb, i0), ar));
                    i0 += $r;
                }
                while i0 < m {
                    store(out, ldo, i0, c0, $kern::<1, 1>(rows(w, nb, i0), ar));
                    i0 += 1;
                }
                c0 += 1;
            }
        }
    };
}

/// Rows `first..first + N` of `blocks` (rows of `nb` blocks); a row past the end is empty
/// (the kernels then return zeros for it).
#[inline(always)]
pub(super) fn rows<T, const N: usize>(blocks: &[T], nb: usize, first: usize) -> [&[T]; N] {
    core::array::from_fn(|j| {
        let s = (first + j) * nb;
        blocks.get(s..s + nb).unwrap_or(&[])
    })
}

/// Writes `v[r][c]` to `out[(c0 + c) * ldo + i0 + r]` (where that index exists).
#[inline(always)]
pub(super) fn store<const R: usize, const C: usize>(
    out: &mut [f32],
    ldo: usize,
    i0: usize,
    c0: usize,
    v: [[f32; C]; R],
) {
    for (r, vr) in v.iter().enumerate() {
        for (c, &x) in vr.iter().enumerate() {
            let at = (c0 + c)
                .checked_mul(ldo)
                .and_then(|x| x.checked_add(i0 + r));
            if let Some(o) = at.and_then(|at| out.get_mut(at)) {
                *o = x;
            }
        }
    }
}

//! Scalar rounding helpers with ggml's exact semantics, written without `std` float methods.

use super::blocks::F16Le;

/// C `roundf`: the nearest integer, halves away from zero. Saturates at the `i32` range;
/// NaN gives 0.
#[inline]
pub(crate) fn round_away(x: f32) -> i32 {
    // `as` truncates toward zero and saturates. Below 2^23 in magnitude `x - t` is exact;
    // above it `x` is already an integer.
    let t = x as i32;
    let frac = x - t as f32;
    if frac >= 0.5 {
        t.saturating_add(1)
    } else if frac <= -0.5 {
        t.saturating_sub(1)
    } else {
        t
    }
}

/// ggml's `nearest_int`: the nearest integer, halves to even. Saturates at the `i32` range;
/// NaN gives 0.
#[inline]
pub(crate) fn round_even(x: f32) -> i32 {
    if x.abs() < 4_194_304.0 {
        // 1.5 * 2^23 + x lies in (2^23, 2^24), where the f32 spacing is exactly 1, so the
        // addition itself rounds x half-to-even and the integer sits in the low mantissa bits.
        let v = x + 12_582_912.0;
        (v.to_bits() & 0x007f_ffff) as i32 - 0x0040_0000
    } else {
        x as i32
    }
}

/// The smallest f16 that is `>= x`, for `x >= 0` (f16 rounding of a scale must not shrink it
/// when the quantizer relies on values fitting the range).
#[inline]
pub(crate) fn f16_at_least(x: f32) -> F16Le {
    let h = half::f16::from_f32(x);
    if h.to_f32() < x {
        // h is finite and non-negative here, so the next bit pattern is the next f16 up
        // (at most +inf).
        F16Le(h.to_bits().wrapping_add(1).to_le_bytes())
    } else {
        F16Le(h.to_bits().to_le_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_away_matches_roundf() {
        let cases = [
            (0.5, 1),
            (-0.5, -1),
            (1.5, 2),
            (2.5, 3),
            (-2.5, -3),
            (0.499_999_97, 0),
            (-0.499_999_97, 0),
            (126.5, 127),
            (8_388_609.0, 8_388_609),
            (f32::NAN, 0),
            (f32::INFINITY, i32::MAX),
            (-1e20, i32::MIN),
        ];
        for (x, want) in cases {
            assert_eq!(round_away(x), want, "roundf({x})");
        }
    }

    #[test]
    fn round_even_matches_nearest_int() {
        let cases = [
            (0.5, 0),
            (1.5, 2),
            (2.5, 2),
            (-2.5, -2),
            (-3.5, -4),
            (0.500_000_06, 1),
            (-126.7, -127),
            (4_194_303.0, 4_194_303),
            (5_000_000.0, 5_000_000),
            (f32::NAN, 0),
        ];
        for (x, want) in cases {
            assert_eq!(round_even(x), want, "nearest_int({x})");
        }
    }

    #[test]
    fn f16_at_least_is_the_smallest_f16_above() {
        for &x in &[0.0f32, 1.0, 0.1, 1.0 / 3.0, 1e-6, 65504.0, 1234.567] {
            let h = f16_at_least(x);
            assert!(h.to_f32() >= x, "{x} -> {}", h.to_f32());
            let bits = u16::from_le_bytes(h.0);
            if bits > 0 {
                let prev = half::f16::from_bits(bits - 1).to_f32();
                assert!(
                    prev < x,
                    "{x} -> {} is not the smallest f16 above",
                    h.to_f32()
                );
            }
        }
    }
}

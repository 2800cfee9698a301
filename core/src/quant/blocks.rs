//! Block layouts, byte for byte as GGUF stores them.
//!
//! Every struct here has alignment 1: multi-byte fields are little-endian byte arrays behind
//! small wrappers ([`F16Le`], [`Bf16Le`], [`F32Le`], [`I16Le`]). That lets
//! [`bytemuck::try_cast_slice`] view any `&[u8]` of the right length as blocks, wherever the
//! bytes sit in a mapped file, and the compiler checks each size against
//! [`GgmlType::type_size`].

use bytemuck::{Pod, Zeroable};

use super::GgmlType;

/// Elements per block of the 32-element formats (Q4_0, Q4_1, Q5_0, Q8_0, Q8_1).
pub const QK32: usize = 32;
/// Elements per K-quant super-block (Q4_K, Q5_K, Q6_K, Q8_K).
pub const QK_K: usize = 256;
/// Bytes of packed 6-bit scales and mins in a Q4_K / Q5_K block.
pub const K_SCALE_SIZE: usize = 12;

/// An IEEE half-precision value stored little-endian.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct F16Le(pub [u8; 2]);

impl F16Le {
    /// The value widened to f32 (exact).
    #[inline]
    pub fn to_f32(self) -> f32 {
        half::f16::from_bits(u16::from_le_bytes(self.0)).to_f32()
    }

    /// `x` rounded to the nearest half (ties to even), as ggml's `GGML_FP32_TO_FP16`.
    #[inline]
    pub fn from_f32(x: f32) -> Self {
        Self(half::f16::from_f32(x).to_bits().to_le_bytes())
    }
}

/// A bfloat16 value stored little-endian.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Bf16Le(pub [u8; 2]);

impl Bf16Le {
    /// The value widened to f32 (exact: the bits become the top half of an f32).
    #[inline]
    pub fn to_f32(self) -> f32 {
        f32::from_bits(u32::from(u16::from_le_bytes(self.0)) << 16)
    }

    /// `x` rounded to the nearest bfloat16 (ties to even); a NaN stays a NaN and is made quiet.
    /// The same bits as ggml's `ggml_compute_fp32_to_bf16`.
    #[inline]
    pub fn from_f32(x: f32) -> Self {
        let u = x.to_bits();
        let h = if u & 0x7fff_ffff > 0x7f80_0000 {
            (u >> 16) | 0x40
        } else {
            // Cannot overflow: the largest finite or infinite input is below 0xff80_0001.
            (u + 0x7fff + ((u >> 16) & 1)) >> 16
        };
        Self((h as u16).to_le_bytes())
    }
}

/// An IEEE single-precision value stored little-endian.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct F32Le(pub [u8; 4]);

impl F32Le {
    /// The value.
    #[inline]
    pub fn get(self) -> f32 {
        f32::from_le_bytes(self.0)
    }

    /// Stores `x`.
    #[inline]
    pub fn new(x: f32) -> Self {
        Self(x.to_le_bytes())
    }
}

/// A signed 16-bit integer stored little-endian.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct I16Le(pub [u8; 2]);

impl I16Le {
    /// The value.
    #[inline]
    pub fn get(self) -> i16 {
        i16::from_le_bytes(self.0)
    }

    /// Stores `x`.
    #[inline]
    pub fn new(x: i16) -> Self {
        Self(x.to_le_bytes())
    }
}

/// Q4_0: 32 weights, `y = d * (q - 8)`. Byte `j` of `qs` holds element `j` (low nibble) and
/// element `j + 16` (high nibble).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct BlockQ4_0 {
    /// Scale.
    pub d: F16Le,
    /// Nibbles.
    pub qs: [u8; QK32 / 2],
}

/// Q4_1: 32 weights, `y = d * q + m`, nibbles as in [`BlockQ4_0`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct BlockQ4_1 {
    /// Scale.
    pub d: F16Le,
    /// Offset (the block minimum).
    pub m: F16Le,
    /// Nibbles.
    pub qs: [u8; QK32 / 2],
}

/// Q5_0: 32 weights, `y = d * (q - 16)`. Low nibbles as in [`BlockQ4_0`]; bit `j` of the
/// little-endian u32 `qh` is bit 4 of element `j`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct BlockQ5_0 {
    /// Scale.
    pub d: F16Le,
    /// Fifth bits, one per element.
    pub qh: [u8; 4],
    /// Low nibbles.
    pub qs: [u8; QK32 / 2],
}

/// Q8_0: 32 weights or activations, `y = d * q`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct BlockQ8_0 {
    /// Scale.
    pub d: F16Le,
    /// Quants.
    pub qs: [i8; QK32],
}

/// Q8_1: 32 activations, `y = d * q`, plus `s = d * sum(q)` for the Q4_1 offset term.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct BlockQ8_1 {
    /// Scale.
    pub d: F16Le,
    /// `d * sum(qs)`, computed with the unrounded f32 `d`.
    pub s: F16Le,
    /// Quants.
    pub qs: [i8; QK32],
}

/// Q4_K: 256 weights in 8 sub-blocks of 32, `y = d * sc[j] * q - dmin * m[j]` with 6-bit
/// `sc`/`m` packed in `scales` (see [`get_scale_min_k4`]). The 32 bytes `qs[32c..32c+32]`
/// hold sub-block `2c` in their low nibbles and sub-block `2c + 1` in their high nibbles.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct BlockQ4K {
    /// Super-block scale for the sub-block scales.
    pub d: F16Le,
    /// Super-block scale for the sub-block mins.
    pub dmin: F16Le,
    /// Packed 6-bit scales and mins.
    pub scales: [u8; K_SCALE_SIZE],
    /// Nibbles.
    pub qs: [u8; QK_K / 2],
}

/// Q5_K: like [`BlockQ4K`] with a fifth bit: element `32j + l` takes bit `j` of `qh[l]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct BlockQ5K {
    /// Super-block scale for the sub-block scales.
    pub d: F16Le,
    /// Super-block scale for the sub-block mins.
    pub dmin: F16Le,
    /// Packed 6-bit scales and mins.
    pub scales: [u8; K_SCALE_SIZE],
    /// Fifth bits.
    pub qh: [u8; QK_K / 8],
    /// Low nibbles.
    pub qs: [u8; QK_K / 2],
}

/// Q6_K: 256 weights in 16 sub-blocks of 16, `y = d * scales[j] * (q - 32)`.
///
/// Each half of 128 elements uses 64 bytes of `ql` and 32 of `qh`. Within a half, for
/// `l < 32`: element `l` is the low nibble of `ql[l]`, `l + 32` the low nibble of `ql[l + 32]`,
/// `l + 64` the high nibble of `ql[l]`, `l + 96` the high nibble of `ql[l + 32]`; their top two
/// bits are bits 0-1, 2-3, 4-5 and 6-7 of `qh[l]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct BlockQ6K {
    /// Low four bits.
    pub ql: [u8; QK_K / 2],
    /// High two bits.
    pub qh: [u8; QK_K / 4],
    /// Sub-block scales.
    pub scales: [i8; QK_K / 16],
    /// Super-block scale.
    pub d: F16Le,
}

/// Q8_K: 256 activations, `y = d * q`, with the sum of each 16 quants in `bsums`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct BlockQ8K {
    /// Scale (f32, not f16).
    pub d: F32Le,
    /// Quants.
    pub qs: [i8; QK_K],
    /// `bsums[j] = sum(qs[16j..16j+16])`.
    pub bsums: [I16Le; QK_K / 16],
}

/// Unpacks the 6-bit scale and min of sub-block `j` (0..8) of a Q4_K / Q5_K block.
///
/// Sub-blocks 0-3 keep their scale in the low 6 bits of bytes 0-3 and their min in bytes 4-7.
/// Sub-blocks 4-7 keep the low 4 bits of scale and min in the nibbles of bytes 8-11 and their
/// top 2 bits in the top 2 bits of bytes 0-3 (scale) and 4-7 (min).
#[inline]
pub fn get_scale_min_k4(j: usize, s: &[u8; K_SCALE_SIZE]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        let sc = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
        let m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
        (sc, m)
    }
}

/// All eight `(scales, mins)` of a Q4_K / Q5_K block.
#[inline]
pub fn unpack_scales_mins(s: &[u8; K_SCALE_SIZE]) -> ([u8; 8], [u8; 8]) {
    let mut sc = [0u8; 8];
    let mut m = [0u8; 8];
    for j in 0..8 {
        (sc[j], m[j]) = get_scale_min_k4(j, s);
    }
    (sc, m)
}

/// Packs eight 6-bit scales and mins (values above 63 are masked) into the Q4_K layout.
#[inline]
pub fn pack_scales_mins(sc: &[u8; 8], m: &[u8; 8]) -> [u8; K_SCALE_SIZE] {
    let mut s = [0u8; K_SCALE_SIZE];
    for j in 0..4 {
        s[j] = (sc[j] & 63) | (((sc[j + 4] >> 4) & 3) << 6);
        s[j + 4] = (m[j] & 63) | (((m[j + 4] >> 4) & 3) << 6);
        s[j + 8] = (sc[j + 4] & 0x0f) | ((m[j + 4] & 0x0f) << 4);
    }
    s
}

macro_rules! assert_layout {
    ($($t:ty => $g:expr),* $(,)?) => {
        $(
            const _: () = assert!(core::mem::size_of::<$t>() == $g.type_size());
            const _: () = assert!(core::mem::align_of::<$t>() == 1);
        )*
    };
}

assert_layout!(
    F32Le => GgmlType::F32,
    F16Le => GgmlType::F16,
    Bf16Le => GgmlType::BF16,
    BlockQ4_0 => GgmlType::Q4_0,
    BlockQ4_1 => GgmlType::Q4_1,
    BlockQ5_0 => GgmlType::Q5_0,
    BlockQ8_0 => GgmlType::Q8_0,
    BlockQ8_1 => GgmlType::Q8_1,
    BlockQ4K => GgmlType::Q4_K,
    BlockQ5K => GgmlType::Q5_K,
    BlockQ6K => GgmlType::Q6_K,
    BlockQ8K => GgmlType::Q8_K,
);

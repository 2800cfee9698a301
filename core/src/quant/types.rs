//! The GGML tensor type table: element type ids as stored in GGUF, block geometry and byte sizes.

/// A GGML tensor element type, with the numeric ids GGUF files store.
///
/// Every type listed here has a known block geometry, so the GGUF reader can size-check
/// tensors of any of them. Which types the kernels can *compute* with is a separate question:
/// see [`GgmlType::is_computable`].
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum GgmlType {
    /// 32-bit IEEE float.
    F32 = 0,
    /// 16-bit IEEE float.
    F16 = 1,
    /// 32 weights: f16 scale, 16 bytes of 4-bit quants (value = d * (q - 8)).
    Q4_0 = 2,
    /// 32 weights: f16 scale and min, 16 bytes of 4-bit quants (value = d * q + m).
    Q4_1 = 3,
    /// 32 weights: f16 scale, 4 bytes of high bits, 16 bytes of low nibbles (value = d * (q - 16)).
    Q5_0 = 6,
    /// 32 weights: f16 scale and min, high bits and low nibbles (value = d * q + m).
    Q5_1 = 7,
    /// 32 weights: f16 scale, 32 signed bytes (value = d * q).
    Q8_0 = 8,
    /// 32 weights: f16 scale, f16 `d * sum(q)`, 32 signed bytes. Activation format for Q4_1/Q5_1.
    Q8_1 = 9,
    /// 256-weight super-block, 2-bit K-quant.
    Q2_K = 10,
    /// 256-weight super-block, 3-bit K-quant.
    Q3_K = 11,
    /// 256-weight super-block, 4-bit K-quant with 6-bit sub-block scales and mins.
    Q4_K = 12,
    /// 256-weight super-block, 5-bit K-quant with 6-bit sub-block scales and mins.
    Q5_K = 13,
    /// 256-weight super-block, 6-bit K-quant with 8-bit sub-block scales.
    Q6_K = 14,
    /// 256-weight super-block, f32 scale, 8-bit quants and 16 partial sums. Activation format for K-quants.
    Q8_K = 15,
    /// 8-bit signed integer.
    I8 = 24,
    /// 16-bit signed integer.
    I16 = 25,
    /// 32-bit signed integer.
    I32 = 26,
    /// 64-bit signed integer.
    I64 = 27,
    /// 64-bit IEEE float.
    F64 = 28,
    /// bfloat16.
    BF16 = 30,
}

impl GgmlType {
    /// Every type in the table, in id order.
    pub const ALL: [GgmlType; 20] = [
        Self::F32,
        Self::F16,
        Self::Q4_0,
        Self::Q4_1,
        Self::Q5_0,
        Self::Q5_1,
        Self::Q8_0,
        Self::Q8_1,
        Self::Q2_K,
        Self::Q3_K,
        Self::Q4_K,
        Self::Q5_K,
        Self::Q6_K,
        Self::Q8_K,
        Self::I8,
        Self::I16,
        Self::I32,
        Self::I64,
        Self::F64,
        Self::BF16,
    ];

    /// The type with GGUF id `id`, or `None` for an id this table does not know.
    pub fn from_u32(id: u32) -> Option<Self> {
        Self::ALL.iter().copied().find(|t| *t as u32 == id)
    }

    /// Elements per block.
    pub const fn block_size(self) -> usize {
        match self {
            Self::F32 | Self::F16 | Self::BF16 | Self::I8 | Self::I16 | Self::I32 => 1,
            Self::I64 | Self::F64 => 1,
            Self::Q4_0 | Self::Q4_1 | Self::Q5_0 | Self::Q5_1 | Self::Q8_0 | Self::Q8_1 => 32,
            Self::Q2_K | Self::Q3_K | Self::Q4_K | Self::Q5_K | Self::Q6_K | Self::Q8_K => 256,
        }
    }

    /// Bytes per block.
    pub const fn type_size(self) -> usize {
        match self {
            Self::F32 | Self::I32 => 4,
            Self::F16 | Self::BF16 | Self::I16 => 2,
            Self::I8 => 1,
            Self::I64 | Self::F64 => 8,
            Self::Q4_0 => 18,
            Self::Q4_1 => 20,
            Self::Q5_0 => 22,
            Self::Q5_1 => 24,
            Self::Q8_0 => 34,
            Self::Q8_1 => 36,
            Self::Q2_K => 84,
            Self::Q3_K => 110,
            Self::Q4_K => 144,
            Self::Q5_K => 176,
            Self::Q6_K => 210,
            Self::Q8_K => 292,
        }
    }

    /// Bytes taken by a row of `n` elements, or `None` when `n` is not a whole number of
    /// blocks or the size overflows.
    pub fn row_bytes(self, n: usize) -> Option<usize> {
        if !n.is_multiple_of(self.block_size()) {
            return None;
        }
        (n / self.block_size()).checked_mul(self.type_size())
    }

    /// The name GGML uses for this type (`"q4_K"`, `"f32"`, …).
    pub const fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Q4_0 => "q4_0",
            Self::Q4_1 => "q4_1",
            Self::Q5_0 => "q5_0",
            Self::Q5_1 => "q5_1",
            Self::Q8_0 => "q8_0",
            Self::Q8_1 => "q8_1",
            Self::Q2_K => "q2_K",
            Self::Q3_K => "q3_K",
            Self::Q4_K => "q4_K",
            Self::Q5_K => "q5_K",
            Self::Q6_K => "q6_K",
            Self::Q8_K => "q8_K",
            Self::I8 => "i8",
            Self::I16 => "i16",
            Self::I32 => "i32",
            Self::I64 => "i64",
            Self::F64 => "f64",
            Self::BF16 => "bf16",
        }
    }

    /// Whether the kernels can dequantize this type and use it as a weight in matmuls.
    pub const fn is_computable(self) -> bool {
        matches!(
            self,
            Self::F32
                | Self::F16
                | Self::BF16
                | Self::Q4_0
                | Self::Q4_1
                | Self::Q5_0
                | Self::Q8_0
                | Self::Q4_K
                | Self::Q5_K
                | Self::Q6_K
                | Self::Q8_K
        )
    }
}

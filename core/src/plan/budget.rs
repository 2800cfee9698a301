//! [`Budget`]: how many bytes a board allows for each part of a [`super::Plan`].

/// Byte budgets of one board.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Weights.
    pub weights: u64,
    /// KV cache of all sessions.
    pub kv: u64,
    /// Activation arena and quantization scratch.
    pub arena: u64,
    /// Everything together (the board's memory less what the OS keeps).
    pub total: u64,
}

/// One line of a [`Budget`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BudgetKind {
    /// [`Budget::weights`].
    Weights,
    /// [`Budget::kv`].
    Kv,
    /// [`Budget::arena`].
    Arena,
    /// [`Budget::total`].
    Total,
}

impl BudgetKind {
    /// Human name ("weights", "KV cache", "arena", "total").
    pub const fn name(self) -> &'static str {
        match self {
            Self::Weights => "weights",
            Self::Kv => "KV cache",
            Self::Arena => "arena",
            Self::Total => "total",
        }
    }
}

/// Displays a byte count with a binary unit: `9.8 GiB`, `512.0 MiB`, `3.0 KiB`, `17 B`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl core::fmt::Display for ByteSize {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        const UNITS: [(u64, &str); 4] = [
            (1 << 40, "TiB"),
            (1 << 30, "GiB"),
            (1 << 20, "MiB"),
            (1 << 10, "KiB"),
        ];
        for (size, unit) in UNITS {
            if self.0 >= size {
                return write!(f, "{:.1} {unit}", self.0 as f64 / size as f64);
            }
        }
        write!(f, "{} B", self.0)
    }
}

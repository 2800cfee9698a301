//! Errors raised while turning GGUF metadata and tensors into a model.

use core::fmt;

use crate::gguf::{ErrName, GgufError};
use crate::quant::GgmlType;

/// Why a GGUF file could not be bound to a model graph.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelError {
    /// The file itself is malformed.
    Gguf(GgufError),
    /// `general.architecture` names an architecture Glimmer has no graph for.
    UnknownArch(ErrName),
    /// A required metadata key is missing.
    MissingKey(ErrName),
    /// A metadata value is out of its valid range (zero heads, a head count that does not divide, …).
    BadValue(ErrName),
    /// A required tensor is missing.
    MissingTensor(ErrName),
    /// A tensor's shape differs from what the metadata implies.
    BadShape(ErrName),
    /// A tensor's type cannot be used where it appears.
    BadType {
        /// The tensor.
        tensor: ErrName,
        /// Its type.
        ty: GgmlType,
    },
    /// A tensor's bytes are not aligned for their element type.
    Misaligned(ErrName),
    /// The model has more layers than [`crate::model::MAX_LAYERS`].
    TooManyLayers(usize),
}

impl ModelError {
    /// Stable short code for logs and the wire protocol.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Gguf(_) => "gguf",
            Self::UnknownArch(_) => "unknown_arch",
            Self::MissingKey(_) => "missing_key",
            Self::BadValue(_) => "bad_value",
            Self::MissingTensor(_) => "missing_tensor",
            Self::BadShape(_) => "bad_shape",
            Self::BadType { .. } => "bad_type",
            Self::Misaligned(_) => "misaligned",
            Self::TooManyLayers(_) => "too_many_layers",
        }
    }
}

impl From<GgufError> for ModelError {
    fn from(e: GgufError) -> Self {
        Self::Gguf(e)
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Gguf(e) => write!(f, "malformed GGUF: {e}"),
            Self::UnknownArch(a) => write!(f, "unknown architecture `{a}`"),
            Self::MissingKey(k) => write!(f, "missing metadata key `{k}`"),
            Self::BadValue(k) => write!(f, "metadata `{k}` has an invalid value"),
            Self::MissingTensor(t) => write!(f, "missing tensor `{t}`"),
            Self::BadShape(t) => write!(f, "tensor `{t}` has the wrong shape"),
            Self::BadType { tensor, ty } => {
                write!(f, "tensor `{tensor}` has unsupported type {}", ty.name())
            }
            Self::Misaligned(t) => write!(f, "tensor `{t}` is misaligned"),
            Self::TooManyLayers(n) => write!(f, "{n} layers is more than supported"),
        }
    }
}

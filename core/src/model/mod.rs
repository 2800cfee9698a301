//! Model description and weights.
//!
//! [`ModelSpec::from_gguf`] reads the hyperparameters of one architecture from GGUF metadata;
//! [`Weights::bind`] then finds every tensor the graph needs, checks its shape and type against the
//! spec, and keeps zero-copy views into the file. Nothing here allocates.

mod error;
mod spec;
mod weights;

pub use error::ModelError;
pub use spec::{Activation, Arch, LayerKind, ModelSpec, RopeStyle, MAX_LAYERS};
pub use weights::{LayerWeights, Tensor, Weights};

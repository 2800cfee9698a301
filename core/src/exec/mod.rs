//! Execution: the [`Backend`] kernel trait, the activation [`Layout`], and the forward pass
//! ([`Model::forward`]) written once against the trait.
//!
//! A backend owns the arena; the forward pass names regions of it ([`Buf`]) that the layout
//! assigned before the first token, so a forward call never allocates.

mod backend;
mod forward;
mod layout;

pub use backend::{AttnParams, Backend, Buf};
pub use forward::{ForwardError, LogitRows, Model};
pub use layout::{Layout, LayoutError, Limits, MAX_CHUNK};

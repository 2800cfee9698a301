//! Execution: the [`Backend`] kernel trait, the activation [`Layout`], and the forward pass
//! ([`Model::forward`]) written once against the trait, and [`Parallel`], through which a
//! backend spreads an op over the host's worker threads.
//!
//! A backend owns the arena; the forward pass names regions of it ([`Buf`]) that the layout
//! assigned before the first token, so a forward call never allocates.

mod backend;
mod forward;
mod layout;
mod parallel;

pub use backend::{
    attend_then_project, qkv_then_attn_inputs, AttnParams, Backend, BranchEnd, Buf, QkPrep,
};
pub use forward::{ForwardError, LogitRows, Model};
pub use layout::{Layout, LayoutError, Limits, MAX_CHUNK};
pub use parallel::{split_range, Parallel, Serial};

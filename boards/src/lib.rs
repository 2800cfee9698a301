//! # glimmer-boards
//!
//! The std side of Glimmer (being written).

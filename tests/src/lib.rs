//! Shared helpers for Glimmer's cross-crate tests (fixture loading, model lookup).

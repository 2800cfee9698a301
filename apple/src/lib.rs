//! # glimmer-apple
//!
//! The wgpu backend (Metal on Apple Silicon, Vulkan elsewhere) will live here, running the WGSL
//! shaders from `shaders/`. It has no code yet: the Apple issue builds it. The crate exists so
//! the workspace layout in DESIGN.md is whole and every target checks.
#![no_std]

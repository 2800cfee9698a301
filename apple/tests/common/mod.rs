//! Shared test helpers: finding the GPU (or skipping), and a CPU reference harness.
#![allow(dead_code)]

use glimmer_apple::{GpuContext, GpuError, GpuOptions};

/// Opens the GPU, or `None` (with a message) when no adapter exists. With
/// `GLIMMER_REQUIRE_GPU=1` a missing adapter fails the test instead.
pub fn gpu(opts: GpuOptions) -> Option<GpuContext> {
    match GpuContext::new(opts) {
        Ok(c) => Some(c),
        Err(GpuError::NoAdapter) if std::env::var("GLIMMER_REQUIRE_GPU").as_deref() != Ok("1") => {
            eprintln!(
                "SKIP: no Vulkan/Metal adapter (install mesa-vulkan-drivers for lavapipe); \
                 set GLIMMER_REQUIRE_GPU=1 to make this a failure"
            );
            None
        }
        Err(e) => panic!("GPU required but unavailable: {e}"),
    }
}

/// Both reduction variants the adapter supports: workgroup memory, and subgroups if present.
pub fn variants() -> Vec<GpuContext> {
    let mut v = Vec::new();
    if let Some(c) = gpu(GpuOptions {
        subgroups: false,
        ..Default::default()
    }) {
        v.push(c);
        if let Some(c) = gpu(GpuOptions {
            subgroups: true,
            ..Default::default()
        }) {
            if c.uses_subgroups() {
                v.push(c);
            }
        }
    }
    v
}

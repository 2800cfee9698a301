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

/// The kernel layouts the adapter supports, each on a device of its own: 16 invocations a
/// matmul row with workgroup-memory reductions, the same with subgroup reductions (if the
/// adapter has them), and one matmul row per invocation (`GpuOptions::row_per_lane`, what a
/// CPU adapter picks by default).
pub fn variants() -> Vec<GpuContext> {
    let mut v = Vec::new();
    if let Some(c) = gpu(GpuOptions {
        subgroups: false,
        row_per_lane: Some(false),
        ..Default::default()
    }) {
        v.push(c);
        if let Some(c) = gpu(GpuOptions {
            subgroups: true,
            row_per_lane: Some(false),
            ..Default::default()
        }) {
            if c.uses_subgroups() {
                v.push(c);
            }
        }
        if let Some(c) = gpu(GpuOptions {
            row_per_lane: Some(true),
            ..Default::default()
        }) {
            v.push(c);
        }
    }
    v
}

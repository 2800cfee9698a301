//! `cuda-check`: the CUDA backend's device test and benchmark in one binary.
//!
//! ```text
//! cuda-check synth  --out PATH [--full] [--type q8_0|q4_k_m|...]   write a synthetic Glimmer GGUF
//! cuda-check repack [--mib N]                                       Q6_K upload repacking speed (no GPU)
//! cuda-check ops    [--seed N]                                      every kernel vs the CPU backend
//! cuda-check e2e    --model PATH [--tokens N]                        top-1 vs the CPU engine
//! cuda-check bench  --model PATH [--prefill N] [--steps N] [--bw-gib N] [--quick]
//!                   (--quick: no per-GEMV variants and no launch-mode sweep; the default
//!                   mode's decode twice, then each kernel class's cost in the graph step)
//! cuda-check timeline --model PATH [--prefill N] [--bw-gib N]
//!                   (with GLIMMER_CUDA_DEFINES=KT_TRACE=1: each bulk-copy GEMV launch of one
//!                   eager decode step, where its time goes, from stamps its blocks leave)
//! ```
//! Lines starting with `SUMMARY|` are collected by `scripts/cuda-device.sh`. Without a CUDA
//! driver every GPU subcommand prints why and exits with status 2 (skipped).

#[cfg(not(target_os = "macos"))]
mod bench;
#[cfg(not(target_os = "macos"))]
mod cli;
#[cfg(not(target_os = "macos"))]
mod e2e;
#[cfg(not(target_os = "macos"))]
mod ops;
#[cfg(not(target_os = "macos"))]
mod timeline;
#[cfg(not(target_os = "macos"))]
mod util;

#[cfg(not(target_os = "macos"))]
fn main() -> std::process::ExitCode {
    cli::main_impl()
}

#[cfg(target_os = "macos")]
fn main() -> std::process::ExitCode {
    println!("SKIP: this build has no CUDA support");
    std::process::ExitCode::from(2)
}

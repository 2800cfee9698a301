//! # glimmer-jetson
//!
//! The CUDA backend for Jetson and NVIDIA GPUs will live here (NVRTC-compiled kernels from
//! `kernels/`, one device arena, CUDA-graph decode). It has no code yet: the CUDA issue builds it.
//! The crate exists so the workspace layout in DESIGN.md is whole and every target checks.
#![no_std]

//! GPU timestamps around every dispatch (wgpu's `TIMESTAMP_QUERY`), for per-kernel profiles.
//!
//! Every dispatch is its own compute pass (see `GpuBackend::run`), so the pass's beginning
//! and end timestamps bracket exactly one kernel. While timing is on, the first `cap`
//! dispatches get a pair of query slots each and their kernel's name; `GpuBackend::take_gpu_times`
//! resolves the pairs, reads them back and converts them to seconds.

use crate::shaders::Kernel;
use crate::{GpuBackend, GpuError};

/// The query set and buffers of one timing session.
pub(crate) struct Timing {
    pub(crate) set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    read: wgpu::Buffer,
    /// Dispatches the set holds (two queries each).
    pub(crate) cap: u32,
    /// The kernel and entry point of each timed dispatch, in order.
    pub(crate) labels: Vec<(Kernel, &'static str)>,
}

impl Timing {
    /// The timestamp writes for the next dispatch, if the set has room (and records its label).
    pub(crate) fn next(
        &mut self,
        kernel: Kernel,
        entry: &'static str,
    ) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        let i = u32::try_from(self.labels.len()).ok()?;
        if i >= self.cap {
            return None;
        }
        self.labels.push((kernel, entry));
        Some(wgpu::ComputePassTimestampWrites {
            query_set: &self.set,
            beginning_of_pass_write_index: Some(2 * i),
            end_of_pass_write_index: Some(2 * i + 1),
        })
    }
}

impl GpuBackend {
    /// Whether the device can time dispatches (the adapter offers `TIMESTAMP_QUERY`).
    pub fn gpu_timing_supported(&self) -> bool {
        self.ctx.timestamps
    }

    /// Starts timing the next `max_dispatches` dispatches on the GPU, at most 2048 (wgpu's
    /// query-set size) between two [`GpuBackend::take_gpu_times`]; the ones after that run
    /// untimed. Fails with [`GpuError::NoTimestamps`] where the device cannot.
    pub fn start_gpu_timing(&mut self, max_dispatches: u32) -> Result<(), GpuError> {
        if !self.ctx.timestamps {
            return Err(GpuError::NoTimestamps);
        }
        let cap = max_dispatches.clamp(1, wgpu::QUERY_SET_MAX_QUERIES / 2);
        let set = self.ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("dispatch times"),
            ty: wgpu::QueryType::Timestamp,
            count: 2 * cap,
        });
        let bytes = 16 * u64::from(cap);
        let resolve = self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("timestamps"),
            size: bytes,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let read = self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("timestamps read"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.timing = Some(Timing {
            set,
            resolve,
            read,
            cap,
            labels: Vec::new(),
        });
        Ok(())
    }

    /// Submits what was recorded, waits for it, and returns every timed dispatch since timing
    /// started (or since the last call) in order: its kernel (`"Matmul(Q4_K)/vec"`) and its
    /// GPU time in seconds. Timing stays on, with the set's slots free again.
    pub fn take_gpu_times(&mut self) -> Result<Vec<(String, f64)>, GpuError> {
        let Some(t) = self.timing.as_mut() else {
            return Err(GpuError::NoTimestamps);
        };
        let n = t.labels.len() as u32;
        if n == 0 {
            return Ok(Vec::new());
        }
        let bytes = 16 * u64::from(n);
        {
            let enc = self.rec.encoder(&self.ctx);
            enc.resolve_query_set(&t.set, 0..2 * n, &t.resolve, 0);
            enc.copy_buffer_to_buffer(&t.resolve, 0, &t.read, 0, bytes);
        }
        self.rec.flush(&self.ctx);
        let mut ticks = vec![0u64; 2 * n as usize];
        crate::backend::read_mapped(&self.ctx, &t.read, bytemuck::cast_slice_mut(&mut ticks))?;
        let period_s = f64::from(self.ctx.queue.get_timestamp_period()) * 1e-9;
        let out = t
            .labels
            .drain(..)
            .zip(ticks.chunks_exact(2))
            .map(|((k, e), p)| {
                let dt = p[1].saturating_sub(p[0]) as f64 * period_s;
                (format!("{k:?}/{e}"), dt)
            })
            .collect();
        Ok(out)
    }

    /// Stops timing dispatches.
    pub fn stop_gpu_timing(&mut self) {
        self.timing = None;
    }
}

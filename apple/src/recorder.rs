//! Recording a step: per-dispatch parameters, host data (tokens, positions), one command
//! encoder with one compute pass for the step's dispatches, and the submit that `read`
//! triggers.
//!
//! Each dispatch gets a 256-byte slot of one uniform buffer, bound with a dynamic offset;
//! tokens and positions go to a small storage buffer. Both are written with
//! `queue.write_buffer` when the step is submitted, which the queue orders before the step's
//! commands. When either fills up mid-step, the recorded part is submitted early.

use crate::GpuContext;

/// Bytes of one parameter slot (and of the uniform binding).
pub(crate) const SLOT: u64 = 256;
/// Parameter slots per submission.
const SLOTS: usize = 2048;
/// `u32`s of host data per submission.
const HOST_WORDS: usize = 1 << 16;

pub(crate) struct Recorder {
    stride: usize,
    params: Vec<u8>,
    pub(crate) params_buf: wgpu::Buffer,
    used: usize,
    host: Vec<u32>,
    pub(crate) host_buf: wgpu::Buffer,
    host_used: usize,
    pub(crate) encoder: Option<wgpu::CommandEncoder>,
    /// The compute pass the step's dispatches go into, open on `encoder` (ended before any
    /// other command is recorded on it, and before the submit).
    pass: Option<wgpu::ComputePass<'static>>,
}

impl Recorder {
    pub fn new(ctx: &GpuContext) -> Self {
        let stride = (ctx.limits.min_uniform_buffer_offset_alignment as usize).max(SLOT as usize);
        let params_buf = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("params"),
            size: (stride * SLOTS) as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let host_buf = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("host"),
            size: (HOST_WORDS * 4) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Recorder {
            stride,
            params: vec![0; stride * SLOTS],
            params_buf,
            used: 0,
            host: vec![0; HOST_WORDS],
            host_buf,
            host_used: 0,
            encoder: None,
            pass: None,
        }
    }

    /// Most host words one dispatch may take.
    pub fn host_capacity(&self) -> usize {
        HOST_WORDS
    }

    /// Makes room for one dispatch with `host_len` words of host data (submitting what was
    /// recorded if needed), copies `host` in, and returns its word offset.
    pub fn begin(&mut self, ctx: &GpuContext, host: &[u32]) -> u32 {
        if self.used == SLOTS || self.host_used + host.len() > HOST_WORDS {
            self.flush(ctx);
        }
        let off = self.host_used;
        self.host[off..off + host.len()].copy_from_slice(host);
        self.host_used += host.len();
        off as u32
    }

    /// Stores one dispatch's parameters (after [`Recorder::begin`]); returns the dynamic offset.
    pub fn params(&mut self, words: &[u32]) -> u32 {
        let at = self.used * self.stride;
        let dst = &mut self.params[at..at + self.stride];
        dst.fill(0);
        dst[..words.len() * 4].copy_from_slice(bytemuck::cast_slice(words));
        self.used += 1;
        at as u32
    }

    /// The step's encoder (started on first use), with the shared compute pass ended first
    /// so that other commands can be recorded.
    pub fn encoder(&mut self, ctx: &GpuContext) -> &mut wgpu::CommandEncoder {
        self.pass = None;
        self.encoder.get_or_insert_with(|| new_encoder(ctx))
    }

    /// The step's shared compute pass (begun on first use). wgpu still orders the
    /// dispatches inside it (a barrier where one reads what an earlier one wrote).
    pub fn pass(&mut self, ctx: &GpuContext) -> &mut wgpu::ComputePass<'static> {
        let enc = &mut self.encoder;
        self.pass.get_or_insert_with(|| {
            enc.get_or_insert_with(|| new_encoder(ctx))
                .begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: None,
                    timestamp_writes: None,
                })
                .forget_lifetime()
        })
    }

    /// Writes parameters and host data, and submits what was recorded.
    pub fn flush(&mut self, ctx: &GpuContext) {
        self.pass = None;
        if self.used > 0 {
            ctx.queue
                .write_buffer(&self.params_buf, 0, &self.params[..self.used * self.stride]);
        }
        if self.host_used > 0 {
            ctx.queue.write_buffer(
                &self.host_buf,
                0,
                bytemuck::cast_slice(&self.host[..self.host_used]),
            );
        }
        if let Some(enc) = self.encoder.take() {
            ctx.queue.submit([enc.finish()]);
        }
        self.used = 0;
        self.host_used = 0;
    }
}

/// A step's command encoder.
fn new_encoder(ctx: &GpuContext) -> wgpu::CommandEncoder {
    ctx.device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("step"),
        })
}

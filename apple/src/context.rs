//! [`GpuContext`]: the adapter, device and queue, and what the kernels may use on them.

use crate::GpuError;

/// Choices made when opening the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuOptions {
    /// Use subgroup reductions when the adapter supports them (otherwise, or when `false`,
    /// reductions go through workgroup memory).
    pub subgroups: bool,
    /// Q4_K decode matvecs on int8 activations with four-way integer dot products
    /// (`dot4I8Packed`; shaders/matvec_q4k_i8.wgsl). Vulkan drivers with
    /// `VK_KHR_shader_integer_dot_product` run it as one instruction; elsewhere (Metal) naga
    /// builds it from shifts and multiplies. When `false`, or when the scratch is too small,
    /// the float form (`vec_k`) runs.
    pub int_dot: bool,
    /// Matmuls with one weight row per invocation, 64 rows a workgroup (`main_rows`,
    /// `vec_rows` in shaders/matmul.wgsl), instead of 16 invocations a row. `None` picks it
    /// on CPU adapters (lavapipe), where invocations are SIMD lanes of one core and each
    /// workgroup has a fixed cost of tens of µs, so 16 times fewer workgroups is what
    /// matters; GPUs keep the 16-lane rows, which spread short rows over more threads.
    /// When on, the int8 matvecs are off.
    pub row_per_lane: Option<bool>,
}

impl Default for GpuOptions {
    fn default() -> Self {
        Self {
            subgroups: true,
            int_dot: true,
            row_per_lane: None,
        }
    }
}

/// An open GPU device (Metal on Apple, Vulkan elsewhere) with the facts the backend needs.
pub struct GpuContext {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) limits: wgpu::Limits,
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) subgroups: bool,
    /// See [`GpuOptions::int_dot`].
    pub(crate) int_dot: bool,
    /// See [`GpuOptions::row_per_lane`] (resolved against the adapter).
    pub(crate) row_per_lane: bool,
    /// Whether dispatches can be timed (`TIMESTAMP_QUERY` was granted).
    pub(crate) timestamps: bool,
}

impl GpuContext {
    /// Opens the first high-performance Vulkan or Metal adapter (`WGPU_BACKEND` and
    /// `WGPU_ADAPTER_NAME` may narrow the choice), with the adapter's own limits.
    pub fn new(opts: GpuOptions) -> Result<Self, GpuError> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = wgpu::Backends::VULKAN | wgpu::Backends::METAL;
        let instance = wgpu::Instance::new(desc.with_env());
        let ropts = wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            apply_limit_buckets: false,
            ..Default::default()
        };
        let adapter = pollster::block_on(instance.request_adapter(&ropts))
            .map_err(|_| GpuError::NoAdapter)?;
        let info = adapter.get_info();
        let limits = adapter.limits();
        // Subgroup reductions assume one fixed subgroup size that divides the 64-invocation
        // workgroups (see shaders/reduce_sg.wgsl).
        let sg = info.subgroup_min_size;
        let subgroups = opts.subgroups
            && adapter.features().contains(wgpu::Features::SUBGROUP)
            && sg == info.subgroup_max_size
            && (4..=64).contains(&sg)
            && 64 % sg == 0;
        let mut features = if subgroups {
            wgpu::Features::SUBGROUP
        } else {
            wgpu::Features::empty()
        };
        // Only for profiles (`GpuBackend::start_gpu_timing`); nothing else depends on it.
        let timestamps = adapter.features().contains(wgpu::Features::TIMESTAMP_QUERY);
        if timestamps {
            features |= wgpu::Features::TIMESTAMP_QUERY;
        }
        let ddesc = wgpu::DeviceDescriptor {
            label: Some("glimmer"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&ddesc))
            .map_err(|_| GpuError::RequestDevice)?;
        let row_per_lane = opts
            .row_per_lane
            .unwrap_or(info.device_type == wgpu::DeviceType::Cpu);
        Ok(GpuContext {
            row_per_lane,
            device,
            queue,
            limits,
            info,
            subgroups,
            int_dot: opts.int_dot && !row_per_lane,
            timestamps,
        })
    }

    /// The adapter's name and backend, for logs (`"llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan)"`).
    pub fn describe(&self) -> String {
        format!("{} ({:?})", self.info.name, self.info.backend)
    }

    /// Whether the kernels use subgroup reductions.
    pub fn uses_subgroups(&self) -> bool {
        self.subgroups
    }

    /// Whether Q4_K decode matvecs use int8 activations ([`GpuOptions::int_dot`]).
    pub fn uses_int_dot(&self) -> bool {
        self.int_dot
    }

    /// Whether matmuls take one weight row per invocation ([`GpuOptions::row_per_lane`]).
    pub fn uses_row_per_lane(&self) -> bool {
        self.row_per_lane
    }

    /// Whether the adapter is a CPU implementation (lavapipe, llvmpipe).
    pub fn is_cpu(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// Largest storage-buffer binding in bytes (buffers are split to stay under it).
    pub fn max_binding(&self) -> u64 {
        self.limits
            .max_storage_buffer_binding_size
            .min(self.limits.max_buffer_size)
    }
}

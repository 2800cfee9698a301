//! [`Gpu`]: one CUDA device with its context, stream and compiled kernels; [`DevMem`]: a
//! device allocation; [`Arg`]: a kernel argument.
//!
//! Memory and launches go through cudarc's thin `result` layer with raw device pointers, so no
//! launch allocates and no event is recorded behind the backend's back (which would break
//! graph capture).

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::{result, sys, CudaContext, CudaModule, CudaStream, DriverError};

use crate::compile;
use crate::fns::Fns;
use crate::CudaError;

impl From<DriverError> for CudaError {
    fn from(e: DriverError) -> Self {
        CudaError::Driver(e.0 as u32)
    }
}

/// Most dynamic shared memory a launch may ask for: the default limit, which needs no
/// per-kernel attribute.
pub(crate) const MAX_DYNAMIC_SMEM: u32 = 48 * 1024;

/// One CUDA device: context, the stream every op runs on, and the kernels.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    fns: Fns,
    sm_count: u32,
    /// Peak memory bandwidth, GB/s ([`Gpu::peak_bandwidth_gbs`]).
    peak_gbs: f64,
    /// Opt-in dynamic shared memory a block (`smem_optin`).
    smem_optin: u32,
    cc: (i32, i32),
    /// Launch with programmatic stream serialization (see [`Gpu::set_pdl`]).
    pdl: AtomicBool,
    module: Arc<CudaModule>,
    /// Kernels whose launches are dropped ([`Gpu::set_skipped`]; benchmarks only), and
    /// whether there are any (so a launch normally takes no lock).
    skipped: Mutex<Vec<usize>>,
    any_skipped: AtomicBool,
    /// Every kernel of the module, by name ([`Gpu::kernel_names`]).
    kernels: Vec<String>,
}

impl Gpu {
    /// Opens device `ordinal`, creates a stream, and compiles (or loads from the cache) the
    /// kernels for its compute capability.
    ///
    /// Returns [`CudaError::NoDriver`] when libcuda cannot be loaded or there is no device,
    /// and [`CudaError::NoNvrtc`] when the kernels must be compiled and libnvrtc is missing.
    pub fn open(ordinal: usize) -> Result<Arc<Self>, CudaError> {
        // SAFETY: only probes whether the shared library can be opened; nothing is called.
        if !unsafe { sys::is_culib_present() } {
            return Err(CudaError::NoDriver);
        }
        result::init().map_err(|_| CudaError::NoDriver)?;
        let count = result::device::get_count().map_err(|_| CudaError::NoDriver)?;
        if count <= 0 || ordinal >= count as usize {
            return Err(CudaError::NoDriver);
        }
        let ctx = CudaContext::new(ordinal)?;
        let stream = ctx.new_stream()?;
        let cc = ctx.compute_capability()?;
        let sm_count =
            ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let ptx = compile::ptx_for(cc.0, cc.1)?;
        let kernels = compile::entry_names(&ptx.to_src());
        let module = ctx.load_module(ptx)?;
        let fns = Fns::load(&module)?;
        // Opt-in dynamic shared memory a block (227 KiB on Hopper). The bulk-copy GEMVs (sm_90
        // and later) may use all of it; every other kernel stays under the 48 KiB default.
        let smem_optin = ctx
            .attribute(
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?
            .max(MAX_DYNAMIC_SMEM as i32) as u32;
        if cc.0 >= 9 {
            for f in &fns.gemv_multi_tma {
                f.set_attribute(
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    smem_optin as i32,
                )?;
            }
            // Clusters of up to 16 blocks for the cluster norms and attention (8 is the
            // portable limit).
            for f in fns.norm_cl.iter().chain([&fns.attn_split_cl]) {
                f.set_attribute(
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                    1,
                )?;
            }
        }
        // Peak memory bandwidth from the memory clock (kHz; two transfers a clock) and the bus
        // width (bits); 0 where the driver reports neither.
        let mem_clock_khz = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)
            .unwrap_or(0)
            .max(0) as f64;
        let bus_bits = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)
            .unwrap_or(0)
            .max(0) as f64;
        let peak_gbs = 2.0 * mem_clock_khz * 1e3 * bus_bits / 8.0 / 1e9;
        let pdl = cc.0 >= 9 && std::env::var_os("GLIMMER_CUDA_PDL").is_none_or(|v| v != "0");
        Ok(Arc::new(Gpu {
            ctx,
            stream,
            fns,
            sm_count: sm_count.max(1) as u32,
            peak_gbs,
            smem_optin,
            cc,
            pdl: AtomicBool::new(pdl),
            module,
            skipped: Mutex::new(Vec::new()),
            any_skipped: AtomicBool::new(false),
            kernels,
        }))
    }

    /// The device's name.
    pub fn name(&self) -> String {
        self.ctx.name().unwrap_or_else(|_| "unknown".to_owned())
    }

    /// Compute capability `(major, minor)`.
    pub fn compute_capability(&self) -> (i32, i32) {
        self.cc
    }

    /// Whether kernels are launched with programmatic dependent launch: each may start while
    /// the previous one on the stream finishes, and waits for it (`pdl_begin` in
    /// `kernels/common.cu`) before touching memory other kernels use. On by default from
    /// compute capability 9.0 (Hopper); `GLIMMER_CUDA_PDL=0` turns it off.
    pub fn pdl(&self) -> bool {
        self.pdl.load(Ordering::Relaxed)
    }

    /// Turns programmatic dependent launch on or off for later launches (ignored below
    /// compute capability 9.0, where the kernels have no wait to pair with it). A captured
    /// graph keeps the setting it was captured with.
    pub fn set_pdl(&self, on: bool) {
        self.pdl.store(on && self.cc.0 >= 9, Ordering::Relaxed);
    }

    /// Makes every later launch of the kernels named in `names` a no-op (none: launch all).
    /// For benchmarks only: it measures what a class of kernels costs inside a real decode
    /// step by leaving it out, so the step computes garbage (every kernel still reads and
    /// writes only its own buffers, so nothing goes out of bounds). A captured graph keeps
    /// the launches it was captured with.
    pub fn set_skipped(&self, names: &[&str]) -> Result<(), CudaError> {
        let mut fs = Vec::with_capacity(names.len());
        for n in names {
            fs.push(self.module.load_function(n)?.cu_function() as usize);
        }
        self.any_skipped.store(!fs.is_empty(), Ordering::Relaxed);
        *self.skipped.lock().map_err(|_| CudaError::Compile)? = fs;
        Ok(())
    }

    /// The name of every kernel in the compiled module (benchmarks group them by name, so a
    /// new kernel cannot be missed from a list).
    pub fn kernel_names(&self) -> &[String] {
        &self.kernels
    }

    fn is_skipped(&self, f: sys::CUfunction) -> bool {
        self.any_skipped.load(Ordering::Relaxed)
            && self.skipped.lock().is_ok_and(|s| s.contains(&(f as usize)))
    }

    /// Streaming multiprocessors.
    pub fn sm_count(&self) -> u32 {
        self.sm_count
    }

    /// Peak memory bandwidth in GB/s as the driver's memory clock and bus width give it (H100
    /// 80GB HBM3: ~3 350; H200: ~4 800), or 0 where it reports neither.
    pub fn peak_bandwidth_gbs(&self) -> f64 {
        self.peak_gbs
    }

    /// The most dynamic shared memory a block may opt in to (bytes).
    pub fn smem_optin(&self) -> u32 {
        self.smem_optin
    }

    /// Total device memory in bytes.
    pub fn total_mem(&self) -> usize {
        self.ctx.total_mem().unwrap_or(0)
    }

    /// The stream every op is issued on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    pub(crate) fn fns(&self) -> &Fns {
        &self.fns
    }

    /// Waits for every op issued so far.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.stream.synchronize()?;
        Ok(())
    }

    /// Allocates `bytes` (at least 1) of device memory, zeroed.
    pub fn alloc(&self, bytes: usize) -> Result<DevMem, CudaError> {
        self.ctx.bind_to_thread()?;
        let bytes = bytes.max(1);
        // SAFETY: the context is bound to this thread; the pointer is owned by the returned
        // DevMem, which frees it exactly once.
        let ptr = unsafe { result::malloc_sync(bytes) }?;
        let mem = DevMem {
            ctx: self.ctx.clone(),
            ptr,
            bytes,
        };
        // SAFETY: `ptr` points to `bytes` bytes just allocated.
        unsafe { result::memset_d8_sync(ptr, 0, bytes) }?;
        Ok(mem)
    }

    /// Copies `src` to device address `dst` (ordered on the stream; `src` may be reused as
    /// soon as this returns, since pageable copies are staged before the call returns).
    ///
    /// The caller checked that `dst .. dst + size_of_val(src)` lies in one allocation.
    pub(crate) fn upload<T: Copy>(&self, dst: u64, src: &[T]) -> Result<(), CudaError> {
        if src.is_empty() {
            return Ok(());
        }
        // SAFETY: `dst` has room for `src` (checked by the caller against the allocation);
        // pageable host memory is staged before cuMemcpyHtoDAsync returns.
        unsafe { result::memcpy_htod_async(dst, src, self.stream.cu_stream()) }?;
        Ok(())
    }

    /// Copies device address `src` into `dst`, waiting for the stream first and for the copy.
    pub(crate) fn download<T: Copy>(&self, dst: &mut [T], src: u64) -> Result<(), CudaError> {
        if dst.is_empty() {
            return Ok(());
        }
        self.stream.synchronize()?;
        // SAFETY: the caller checked that `src` holds `size_of_val(dst)` bytes; the stream is
        // idle, and the synchronous copy finishes before `dst` is used again.
        unsafe { result::memcpy_dtoh_sync(dst, src) }?;
        Ok(())
    }

    /// Device-to-device copy of `bytes` on the stream.
    pub fn copy_d2d(&self, dst: &DevMem, src: &DevMem, bytes: usize) -> Result<(), CudaError> {
        if bytes > dst.bytes || bytes > src.bytes {
            return Err(CudaError::TooLarge);
        }
        // SAFETY: both allocations hold at least `bytes` bytes (checked above).
        unsafe { result::memcpy_dtod_async(dst.ptr, src.ptr, bytes, self.stream.cu_stream()) }?;
        Ok(())
    }

    /// Copies `bytes` (a multiple of 16) from `src` to `dst` with the `copy_u128` kernel: the
    /// bandwidth probe (it reads and writes `bytes` each).
    pub fn copy_kernel(&self, dst: &DevMem, src: &DevMem, bytes: usize) -> Result<(), CudaError> {
        if bytes > dst.bytes || bytes > src.bytes || !bytes.is_multiple_of(16) {
            return Err(CudaError::TooLarge);
        }
        let f = crate::fns::raw(&self.fns.copy_u128);
        let grid = (self.sm_count * 8, 1, 1);
        let n = (bytes / 16) as u64;
        self.launch(f, grid, 512, &[Arg::P(src.ptr), Arg::P(dst.ptr), Arg::U(n)])
    }

    /// Launches `f` on the stream with `args` (at most [`MAX_ARGS`]).
    pub(crate) fn launch(
        &self,
        f: sys::CUfunction,
        grid: (u32, u32, u32),
        block: u32,
        args: &[Arg],
    ) -> Result<(), CudaError> {
        self.launch_smem(f, grid, block, 0, args)
    }

    /// [`Gpu::launch`] with `smem` bytes of dynamic shared memory a block (at most
    /// [`Gpu::smem_optin`]; kernels that have not opted in fail to launch above
    /// [`MAX_DYNAMIC_SMEM`]).
    pub(crate) fn launch_smem(
        &self,
        f: sys::CUfunction,
        grid: (u32, u32, u32),
        block: u32,
        smem: u32,
        args: &[Arg],
    ) -> Result<(), CudaError> {
        self.launch_ex(f, grid, block, smem, 1, args)
    }

    /// [`Gpu::launch_smem`] in clusters of `cluster` blocks along x (1: no cluster; above,
    /// compute capability 9.0 and later, `grid.0` a multiple of it, and at most 8 unless the
    /// kernel allows non-portable sizes).
    pub(crate) fn launch_ex(
        &self,
        f: sys::CUfunction,
        grid: (u32, u32, u32),
        block: u32,
        smem: u32,
        cluster: u32,
        args: &[Arg],
    ) -> Result<(), CudaError> {
        const MAX: usize = MAX_ARGS;
        if args.len() > MAX || grid.0 == 0 || grid.1 == 0 || grid.2 == 0 || smem > self.smem_optin {
            return Err(CudaError::TooLarge);
        }
        if cluster == 0 || !grid.0.is_multiple_of(cluster) || (cluster > 1 && self.cc.0 < 9) {
            return Err(CudaError::TooLarge);
        }
        if self.is_skipped(f) {
            return Ok(());
        }
        let mut store = [0u64; MAX];
        for (s, a) in store.iter_mut().zip(args) {
            *s = a.bits();
        }
        let mut ptrs = [core::ptr::null_mut::<c_void>(); MAX];
        for (p, s) in ptrs.iter_mut().zip(store.iter_mut()) {
            *p = s as *mut u64 as *mut c_void;
        }
        if !self.pdl() && cluster == 1 {
            // SAFETY: every kernel parameter is a pointer, i32, u64, i64 or f32 read from the
            // start of an 8-byte little-endian slot (the low bytes hold the 4-byte values);
            // `args` matches the kernel's parameter list (each call site mirrors its kernel's
            // signature); the slots outlive the call, which copies them.
            unsafe {
                result::launch_kernel(
                    f,
                    grid,
                    (block, 1, 1),
                    smem,
                    self.stream.cu_stream(),
                    &mut ptrs[..args.len()],
                )
            }?;
            return Ok(());
        }
        // SAFETY: an all-zero launch attribute is valid plain data (a union of integers and
        // structs of integers); ids and values are set next.
        let mut attrs: [sys::CUlaunchAttribute; 2] = unsafe { core::mem::zeroed() };
        let mut n_attrs = 0;
        if self.pdl() {
            let a = &mut attrs[n_attrs];
            a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
            a.value.programmaticStreamSerializationAllowed = 1;
            n_attrs += 1;
        }
        if cluster > 1 {
            let a = &mut attrs[n_attrs];
            a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            a.value.clusterDim.x = cluster;
            a.value.clusterDim.y = 1;
            a.value.clusterDim.z = 1;
            n_attrs += 1;
        }
        let cfg = sys::CUlaunchConfig {
            gridDimX: grid.0,
            gridDimY: grid.1,
            gridDimZ: grid.2,
            blockDimX: block,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: smem,
            hStream: self.stream.cu_stream(),
            attrs: attrs.as_mut_ptr(),
            numAttrs: n_attrs as u32,
        };
        // SAFETY: as above for the parameters; `cfg` and `attrs` live across the call, which
        // copies them; every kernel begins with `pdl_begin()`, so the early start that the
        // PDL attribute allows never lets a kernel touch memory before its predecessor is
        // done; a cluster size the kernel or device refuses is an error the driver returns.
        unsafe { sys::cuLaunchKernelEx(&cfg, f, ptrs.as_mut_ptr(), core::ptr::null_mut()) }
            .result()?;
        Ok(())
    }

    /// Starts (`true`) or stops the profiler's capture range, for Nsight Compute's
    /// `--profile-from-start off` (a no-op when no profiler is attached). Waits for the stream
    /// first, so the range holds exactly the work issued between the two calls.
    pub fn profiler_range(&self, on: bool) -> Result<(), CudaError> {
        self.synchronize()?;
        // SAFETY: takes no arguments; the context is current on this thread (bound when the
        // stream was created and by every allocation).
        unsafe {
            if on {
                sys::cuProfilerStart()
            } else {
                sys::cuProfilerStop()
            }
        }
        .result()?;
        Ok(())
    }

    /// Starts capturing the stream's work into a graph.
    pub(crate) fn begin_capture(&self) -> Result<(), CudaError> {
        self.stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)?;
        Ok(())
    }

    /// Ends a capture and instantiates the graph.
    pub(crate) fn end_capture(&self) -> Result<cudarc::driver::CudaGraph, CudaError> {
        let g = self
            .stream
            .end_capture(sys::CUgraphInstantiate_flags_enum(0))?;
        g.ok_or(CudaError::Graph)
    }
}

/// The most arguments a launch takes (`gemv_k_multi_tma1_t2_attn_gridnorm` has 66).
pub(crate) const MAX_ARGS: usize = 72;

/// A kernel argument, passed by value.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Arg {
    /// A device pointer.
    P(u64),
    /// An `int`.
    I(i32),
    /// An `unsigned long long` / `long long`.
    U(u64),
    /// A `float`.
    F(f32),
}

impl Arg {
    fn bits(self) -> u64 {
        match self {
            Arg::P(p) | Arg::U(p) => p,
            Arg::I(i) => u64::from(i as u32),
            Arg::F(f) => u64::from(f.to_bits()),
        }
    }

    /// An `int` argument from a size, or [`CudaError::TooLarge`].
    pub(crate) fn int(v: usize) -> Result<Arg, CudaError> {
        i32::try_from(v)
            .map(Arg::I)
            .map_err(|_| CudaError::TooLarge)
    }
}

/// Device memory, freed on drop.
pub struct DevMem {
    ctx: Arc<CudaContext>,
    ptr: u64,
    bytes: usize,
}

impl DevMem {
    /// Device address of the first byte.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for DevMem {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: `ptr` came from malloc_sync and is freed only here; a failure at
            // teardown leaves nothing to recover.
            let _ = unsafe { result::free_sync(self.ptr) };
        }
    }
}

//! One logical Vulkan device: queue, memory pool, command stream and kernel cache.
//!
//! A [`Device`] is one *generation* of a [`crate::Context`]: when the GPU times out or is
//! lost, the device is marked failed, every later call on it returns an error, and the context
//! builds a new one on next use. A failed device is leaked on purpose: destroying it would wait
//! for the GPU work that never finished.

use crate::adapter::Adapter;
use crate::capabilities::{wanted_extensions, wanted_features};
use crate::counters::{CounterSnapshot, Counters};
use crate::dispatch_profile::{self, DispatchProfile, PROFILED_DISPATCHES};
use crate::fma_probe::{FUSED_FMA_CONSTANT_ID, FUSED_FMA_F64_CONSTANT_ID, FusedFma};
use crate::kernel::{Kernel, KernelKey, SpecValue, kernel_key};
use crate::memory::{BufferPool, MemoryKind, RawBuffer};
use crate::newer_features;
use crate::pipeline::{self, Pipeline, needs_raw_build};
use crate::pipeline_cache_file::{self, PipelineCacheLoad};
use crate::resident::ResidentTables;
use crate::shader_store::ShaderStore;
use crate::stream::{Access, Stream};
use crate::strict::{Strict, strict};
use crate::{Capabilities, DType, Error, Knobs, Result};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use vulkano::device::{Device as VkDevice, DeviceCreateInfo, Queue, QueueCreateInfo};
use vulkano::memory::allocator::StandardMemoryAllocator;
use vulkano::pipeline::cache::{PipelineCache, PipelineCacheCreateInfo};
use vulkano::pipeline::compute::ComputePipelineCreateInfo;
use vulkano::pipeline::layout::{PipelineLayoutCreateInfo, PushConstantRange};
use vulkano::pipeline::{ComputePipeline, PipelineLayout, PipelineShaderStageCreateInfo};
use vulkano::shader::{ShaderModule, ShaderModuleCreateInfo, ShaderStages};

pub struct Device {
    pub(crate) adapter: Adapter,
    pub(crate) vk_device: Arc<VkDevice>,
    pub(crate) pool: Arc<BufferPool>,
    pub(crate) stream: Mutex<Stream>,
    pub(crate) layout: Arc<PipelineLayout>,
    kernels: Mutex<HashMap<KernelKey, Arc<Kernel>>>,
    /// Compiled-in modules by (address, length) of their words.
    static_kernels: Mutex<HashMap<(usize, usize), Arc<Kernel>>>,
    pub(crate) pipeline_cache: Arc<PipelineCache>,
    pipeline_cache_path: PathBuf,
    pipeline_cache_load: PipelineCacheLoad,
    shaders: ShaderStore,
    counters: Arc<Counters>,
    knobs: Knobs,
    failed: AtomicBool,
    warned_fallbacks: Mutex<HashSet<(String, DType)>>,
    /// Set while `profile_dispatches` runs.
    dispatch_profile: Mutex<Option<dispatch_profile::Recorder>>,
    /// Held for the whole of `profile_dispatches`: a second profile waits for the first (two at
    /// once replaced each other's recorder, and one then waited forever for timestamps that
    /// its dispatches had written into the other's query pool).
    profiling: Mutex<()>,
    resident_tables: Mutex<ResidentTables>,
    /// Which widths of the driver's fma round once (`fma_probe`), set when the device opens.
    fused_fma: OnceLock<FusedFma>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Device")
            .field("device", &self.adapter.capabilities.summary())
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl Device {
    pub(crate) fn open(
        adapter: Adapter,
        counters: Arc<Counters>,
        knobs: Knobs,
        cache_dir: PathBuf,
        raw_creation: bool,
    ) -> Result<Arc<Device>> {
        let physical = adapter.physical.clone();
        let create_info = DeviceCreateInfo {
            queue_create_infos: vec![QueueCreateInfo {
                queue_family_index: adapter.compute_queue_family,
                ..Default::default()
            }],
            enabled_extensions: wanted_extensions(physical.supported_extensions()),
            enabled_features: wanted_features(physical.supported_features()),
            ..Default::default()
        };
        let newer = adapter.capabilities.newer_features();
        let (vk_device, first_queue) = if newer.any() || raw_creation {
            let (device, mut queues) =
                newer_features::create_device(&physical, create_info, newer)?;
            (device, queues.next())
        } else {
            let (device, mut queues) = VkDevice::new(physical.clone(), create_info)
                .map_err(|error| Error::vulkan("create device", error))?;
            (device, queues.next())
        };
        let queue: Arc<Queue> = first_queue.ok_or_else(|| Error::NoDevice {
            reason: "the device returned no queue".into(),
        })?;
        let capabilities = &adapter.capabilities;
        let layout = PipelineLayout::new(
            vk_device.clone(),
            PipelineLayoutCreateInfo {
                push_constant_ranges: vec![PushConstantRange {
                    stages: ShaderStages::COMPUTE,
                    offset: 0,
                    size: capabilities.max_push_constants_bytes.min(256),
                }],
                ..Default::default()
            },
        )
        .map_err(|error| Error::vulkan("create pipeline layout", error))?;

        let pipeline_cache_path = pipeline_cache_file::cache_file_path(&cache_dir, capabilities);
        let (initial_data, pipeline_cache_load) =
            pipeline_cache_file::load(&pipeline_cache_path, capabilities);
        // SAFETY: `initial_data` passed our checks (magic, device, driver, checksum and the
        // driver's own header), or is empty.
        let pipeline_cache = unsafe {
            PipelineCache::new(
                vk_device.clone(),
                PipelineCacheCreateInfo {
                    initial_data,
                    ..Default::default()
                },
            )
        }
        .map_err(|error| Error::vulkan("create pipeline cache", error))?;

        let allocator = Arc::new(StandardMemoryAllocator::new_default(vk_device.clone()));
        let pool_bytes = knobs
            .pool_bytes
            .unwrap_or((capabilities.device_local_heap_bytes / 8).min(4 << 30));
        let pool = Arc::new(BufferPool::new(
            allocator,
            counters.clone(),
            pool_bytes,
            capabilities.device_local_heap_bytes,
            capabilities.unified_memory,
        ));
        let stream = Stream::new(
            queue,
            layout.clone(),
            counters.clone(),
            knobs.submit_threshold,
            knobs.timeout,
        )?;
        let device = Arc::new(Device {
            adapter,
            vk_device,
            pool,
            stream: Mutex::new(stream),
            layout,
            kernels: Mutex::new(HashMap::new()),
            static_kernels: Mutex::new(HashMap::new()),
            pipeline_cache,
            pipeline_cache_path,
            pipeline_cache_load,
            shaders: ShaderStore::new(&cache_dir),
            counters,
            knobs,
            failed: AtomicBool::new(false),
            warned_fallbacks: Mutex::new(HashSet::new()),
            dispatch_profile: Mutex::new(None),
            profiling: Mutex::new(()),
            resident_tables: Mutex::new(ResidentTables::default()),
            fused_fma: OnceLock::new(),
        });
        let fused_fma = crate::fma_probe::probe_fused_fma(&device)?;
        let _ = device.fused_fma.set(fused_fma);
        Ok(device)
    }

    /// Whether the driver's `fma()` rounds once (probed when the device opened; false, the
    /// safe answer, while the probe itself runs). Kernels see it as the specialization
    /// constant [`crate::FUSED_FMA_CONSTANT_ID`].
    pub fn fused_fma(&self) -> bool {
        self.fused_fma.get().copied().unwrap_or_default().f32
    }

    /// Whether the driver's f64 `fma()` rounds once (false without shaderFloat64); kernels see
    /// it as the specialization constant [`crate::FUSED_FMA_F64_CONSTANT_ID`].
    pub fn fused_fma_f64(&self) -> bool {
        self.fused_fma.get().copied().unwrap_or_default().f64
    }

    pub fn capabilities(&self) -> &Capabilities {
        &self.adapter.capabilities
    }

    pub fn knobs(&self) -> &Knobs {
        &self.knobs
    }

    pub fn counters(&self) -> CounterSnapshot {
        self.counters.snapshot()
    }

    /// True once a timeout or device loss made this device unusable.
    pub fn has_failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Passes `result` through, marking the device failed on a fatal error.
    pub(crate) fn guard<T>(&self, result: Result<T>) -> Result<T> {
        if let Err(error) = &result
            && error.is_device_fatal()
        {
            self.failed.store(true, Ordering::Relaxed);
        }
        result
    }

    /// Refuses buffers of another device (or of an earlier generation of this one).
    fn owns(&self, op: &'static str, buffer: &DeviceBuffer) -> Result<()> {
        if std::ptr::eq(Arc::as_ptr(&buffer.device), self) {
            Ok(())
        } else {
            Err(Error::ForeignTensor { op })
        }
    }

    fn usable(&self, op: &'static str) -> Result<()> {
        if self.has_failed() {
            return Err(Error::DeviceLost { op });
        }
        Ok(())
    }

    // --- Memory ---

    /// A device-local buffer of at least `bytes` bytes, from the pool when one is free.
    /// Its contents are undefined.
    pub fn alloc(self: &Arc<Self>, op: &'static str, bytes: u64) -> Result<DeviceBuffer> {
        self.usable(op)?;
        let raw = self.pool.acquire(op, MemoryKind::Device, bytes)?;
        Ok(DeviceBuffer {
            raw: Some(raw),
            device: self.clone(),
            pooled: true,
        })
    }

    /// The device-resident table under `key` (see the `resident` module for the policy): on
    /// the first request, `build` makes its bytes on the host and they are uploaded; later
    /// requests upload nothing. The key must name everything the bytes depend on.
    pub fn resident_table(
        self: &Arc<Self>,
        op: &'static str,
        key: &str,
        build: impl FnOnce() -> Vec<u8>,
    ) -> Result<DeviceBuffer> {
        self.usable(op)?;
        if let Some(raw) = self.resident_tables.lock().get(key) {
            Counters::add(&self.counters.resident_table_hits, 1);
            return Ok(DeviceBuffer {
                raw: Some(raw),
                device: self.clone(),
                pooled: false,
            });
        }
        let bytes = build();
        let mut buffer = self.alloc(op, bytes.len().max(1) as u64)?;
        self.upload(&buffer, 0, &bytes)?;
        // From here on the table belongs to the cache, never to the pool.
        buffer.pooled = false;
        self.resident_tables
            .lock()
            .insert(key.to_owned(), buffer.raw().clone());
        Counters::add(&self.counters.resident_table_builds, 1);
        Ok(buffer)
    }

    /// Bytes the pool holds for reuse now.
    pub fn pool_cached_bytes(&self) -> u64 {
        self.pool.cached_bytes()
    }

    /// Frees every cached buffer (after waiting for the GPU, so none is in use).
    pub fn trim_pool(&self) -> Result<()> {
        self.synchronize()?;
        self.pool.trim();
        Ok(())
    }

    /// Writes `bytes` into `buffer` at byte `offset`: directly on unified memory when the GPU
    /// is done with the buffer, through a staging buffer and a recorded copy otherwise.
    pub fn upload(&self, buffer: &DeviceBuffer, offset: u64, bytes: &[u8]) -> Result<()> {
        const OP: &str = "upload";
        self.usable(OP)?;
        self.owns(OP, buffer)?;
        let raw = buffer.raw();
        check_range(OP, raw, offset, bytes.len() as u64)?;
        if bytes.is_empty() {
            return Ok(());
        }
        let mut stream = self.stream.lock();
        if let Some(log) = stream.capture_log() {
            log.spoil("the run uploaded data from the host");
        }
        let idle = raw.last_use.load(Ordering::Relaxed) <= stream.completed();
        if let (true, true, Some(mapped)) = (self.capabilities().unified_memory, idle, raw.mapped())
        {
            // SAFETY: the buffer is host-visible and the GPU has finished every use of it
            // (its last use completed), so nothing reads or writes it concurrently; the range
            // was checked against the buffer size.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    mapped.as_ptr().cast::<u8>().add(offset as usize),
                    bytes.len(),
                )
            };
            raw.flush_from_host();
        } else {
            let result = crate::transfer::upload(&mut stream, &self.pool, raw, offset, bytes);
            self.guard(result)?;
        }
        Counters::add(&self.counters.bytes_uploaded, bytes.len() as u64);
        Ok(())
    }

    /// Reads `length` bytes of `buffer` from byte `offset`, waiting for the GPU work that
    /// writes it.
    pub fn download(&self, buffer: &DeviceBuffer, offset: u64, length: u64) -> Result<Vec<u8>> {
        const OP: &str = "download";
        self.usable(OP)?;
        self.owns(OP, buffer)?;
        let raw = buffer.raw();
        check_range(OP, raw, offset, length)?;
        if length == 0 {
            return Ok(Vec::new());
        }
        let mut stream = self.stream.lock();
        if let Some(log) = stream.capture_log() {
            log.spoil("the run read data back to the host");
        }
        let result =
            if let (true, Some(mapped)) = (self.capabilities().unified_memory, raw.mapped()) {
                let last_use = raw.last_use.load(Ordering::Relaxed);
                stream.wait_for(&self.pool, OP, last_use).map(|()| {
                    raw.invalidate_for_host();
                    // SAFETY: every GPU use of the buffer has completed and the range is inside it.
                    unsafe {
                        std::slice::from_raw_parts(
                            mapped.as_ptr().cast::<u8>().add(offset as usize),
                            length as usize,
                        )
                    }
                    .to_vec()
                })
            } else {
                crate::transfer::download(&mut stream, &self.pool, raw, offset, length)
            };
        let bytes = self.guard(result)?;
        Counters::add(&self.counters.bytes_downloaded, length);
        Ok(bytes)
    }

    /// Copies all of `source` to the start of `target` on the GPU.
    pub fn copy_buffer(&self, source: &DeviceBuffer, target: &DeviceBuffer) -> Result<()> {
        const OP: &str = "copy buffer";
        self.usable(OP)?;
        self.owns(OP, source)?;
        self.owns(OP, target)?;
        check_range(OP, target.raw(), 0, source.size())?;
        let mut stream = self.stream.lock();
        if let Some(log) = stream.capture_log() {
            log.spoil("the run copied a buffer");
        }
        let result = stream.copy(source.raw(), 0, target.raw(), 0, source.size());
        drop(stream);
        self.guard(result)
    }

    /// Fills `buffer` with a repeated 32-bit word on the GPU (for zeroing, or poisoning in tests).
    pub fn fill(&self, buffer: &DeviceBuffer, word: u32) -> Result<()> {
        self.usable("fill")?;
        self.owns("fill", buffer)?;
        let mut stream = self.stream.lock();
        let result = stream.fill(buffer.raw(), word);
        if let (Ok(()), Some(log)) = (&result, stream.capture_log()) {
            log.log_fill(buffer.raw(), word);
        }
        drop(stream);
        self.guard(result)
    }

    // --- Kernels ---

    /// The kernel of a compiled-in module (the catalog's `include_bytes!`, little-endian SPIR-V
    /// words): looked up by the bytes' address, so a dispatch neither converts nor hashes the
    /// module again; built through [`Device::kernel`] on first use.
    pub fn static_kernel(&self, name: &str, spirv_bytes: &'static [u8]) -> Result<Arc<Kernel>> {
        let key = (spirv_bytes.as_ptr() as usize, spirv_bytes.len());
        if let Some(kernel) = self.static_kernels.lock().get(&key) {
            return Ok(kernel.clone());
        }
        if !spirv_bytes.len().is_multiple_of(4) {
            return Err(nxvk_glsl::GlslError::Malformed {
                name: name.to_owned(),
                problem: format!("{} bytes is not a whole number of words", spirv_bytes.len()),
            }
            .into());
        }
        let words: Vec<u32> = spirv_bytes
            .chunks_exact(4)
            .map(|word| u32::from_le_bytes([word[0], word[1], word[2], word[3]]))
            .collect();
        let kernel = self.kernel(name, &words, &[])?;
        self.static_kernels.lock().insert(key, kernel.clone());
        Ok(kernel)
    }

    /// The kernel for `spirv` with `specialization`, built once and cached by content.
    pub fn kernel(
        &self,
        name: &str,
        spirv: &[u32],
        specialization: &[(u32, SpecValue)],
    ) -> Result<Arc<Kernel>> {
        let key = kernel_key(spirv, specialization);
        if let Some(kernel) = self.kernels.lock().get(&key) {
            Counters::add(&self.counters.pipeline_cache_hits, 1);
            return Ok(kernel.clone());
        }
        let info = nxvk_glsl::check_module(name, spirv)?;
        // Planners send ops that need f64 to the host fallback on such devices; this keeps a
        // module that slipped past them from reaching the driver.
        if info.float64 && !self.capabilities().shader_float64 {
            return Err(Error::KernelNeedsFeature {
                kernel: name.to_owned(),
                feature: "shaderFloat64",
                device: self.capabilities().device_name.clone(),
            });
        }
        let kernel = Arc::new(self.build_kernel(name, spirv, specialization, &info)?);
        Counters::add(&self.counters.pipeline_builds, 1);
        self.kernels.lock().insert(key, kernel.clone());
        Ok(kernel)
    }

    /// Compiles `body` (GLSL after [`nxvk_glsl::GLSL_PRELUDE`]) at run time, through the
    /// content-addressed SPIR-V cache, and returns its kernel.
    pub fn kernel_from_glsl(
        &self,
        name: &str,
        body: &str,
        specialization: &[(u32, SpecValue)],
    ) -> Result<Arc<Kernel>> {
        let spirv = self.shaders.spirv(&self.counters, name, body)?;
        self.kernel(name, &spirv, specialization)
    }

    pub(crate) fn build_kernel(
        &self,
        name: &str,
        spirv: &[u32],
        specialization: &[(u32, SpecValue)],
        info: &nxvk_glsl::ModuleInfo,
    ) -> Result<Kernel> {
        // f32 subnormals are kept where the device can be asked to (capabilities.rs).
        let widths = self.capabilities().denorm_preserve_widths();
        let patched;
        let spirv = if widths.is_empty() {
            spirv
        } else {
            patched = nxvk_glsl::request_denorm_preserve(name, spirv, widths)?;
            &patched[..]
        };
        // The device's own constants, in modules that declare them (unless the caller set them).
        let mut specialization = specialization.to_vec();
        for (id, value) in [
            (FUSED_FMA_CONSTANT_ID, self.fused_fma()),
            (FUSED_FMA_F64_CONSTANT_ID, self.fused_fma_f64()),
        ] {
            let declared = info.specialization_ids.contains(&id);
            if declared && !specialization.iter().any(|&(set, _)| set == id) {
                specialization.push((id, SpecValue::Bool(value)));
            }
        }
        let pipeline = if needs_raw_build(&info.capabilities) {
            pipeline::build_raw(
                &self.vk_device,
                name,
                spirv,
                &specialization,
                &self.layout,
                &self.pipeline_cache,
            )?
        } else {
            Pipeline::Vulkano(self.build_vulkano_pipeline(name, spirv, &specialization)?)
        };
        Ok(Kernel {
            name: name.to_owned(),
            pipeline: Arc::new(pipeline),
            local_size: info.local_size.unwrap_or([1, 1, 1]),
        })
    }

    fn build_vulkano_pipeline(
        &self,
        name: &str,
        spirv: &[u32],
        specialization: &[(u32, SpecValue)],
    ) -> Result<Arc<ComputePipeline>> {
        const OP: &str = "build kernel";
        // SAFETY: the module passed the structural check (the float-controls patch adds only
        // well-formed instructions); vulkano parses it again and the driver validates it when
        // the pipeline is created.
        let module = unsafe {
            ShaderModule::new(self.vk_device.clone(), ShaderModuleCreateInfo::new(spirv))
        }
        .map_err(|error| Error::vulkan(OP, error))?;
        let entry_point = if specialization.is_empty() {
            module.entry_point("main")
        } else {
            module
                .specialize(
                    specialization
                        .iter()
                        .map(|&(id, value)| (id, value.to_vulkano()))
                        .collect(),
                )
                .map_err(|error| Error::vulkan(OP, error))?
                .entry_point("main")
        }
        .ok_or_else(|| Error::Vulkan {
            op: OP,
            detail: format!("kernel `{name}` has no entry point `main`"),
        })?;
        ComputePipeline::new(
            self.vk_device.clone(),
            Some(self.pipeline_cache.clone()),
            ComputePipelineCreateInfo::stage_layout(
                PipelineShaderStageCreateInfo::new(entry_point),
                self.layout.clone(),
            ),
        )
        .map_err(|error| Error::vulkan(OP, error))
    }

    /// Writes the driver's pipeline cache to disk (also done when the device is dropped).
    pub fn save_pipeline_cache(&self) -> Result<()> {
        let data = self
            .pipeline_cache
            .get_data()
            .map_err(|error| Error::vulkan("save pipeline cache", error))?;
        pipeline_cache_file::save(&self.pipeline_cache_path, self.capabilities(), &data)
    }

    /// Whether the on-disk pipeline cache was loaded, missing or rejected when this device
    /// opened.
    pub fn pipeline_cache_load(&self) -> &PipelineCacheLoad {
        &self.pipeline_cache_load
    }

    /// The file the pipeline cache is kept in.
    pub fn pipeline_cache_path(&self) -> &std::path::Path {
        &self.pipeline_cache_path
    }

    // --- Work ---

    /// Records one dispatch. `push_constants` must fit [`crate::PORTABLE_PUSH_CONSTANT_BYTES`]
    /// and be a multiple of 4 bytes; `accesses` must list every buffer the kernel reads or
    /// writes (barriers come from that list).
    pub fn dispatch(
        &self,
        kernel: &Kernel,
        group_counts: [u32; 3],
        push_constants: &[u8],
        accesses: &[BufferAccess<'_>],
    ) -> Result<()> {
        self.record_dispatch(kernel, group_counts, push_constants, None, accesses)
    }

    /// Records one dispatch whose kernel reads a parameter block (arguments beyond the
    /// push-constant size): `params` is copied into memory that lives as long as the batch,
    /// and its device address is written into the push constants at byte
    /// `address_offset` (8 bytes). Copy and dispatch happen under one lock, so the block is
    /// always in the dispatch's own batch, whatever other threads submit.
    pub fn dispatch_with_params(
        &self,
        kernel: &Kernel,
        group_counts: [u32; 3],
        push_constants: &[u8],
        params: &[u8],
        address_offset: usize,
        accesses: &[BufferAccess<'_>],
    ) -> Result<()> {
        if address_offset + 8 > push_constants.len() {
            return Err(Error::Vulkan {
                op: "dispatch",
                detail: format!(
                    "kernel `{}`: parameter address at byte {address_offset} of {} push-constant bytes",
                    kernel.name,
                    push_constants.len()
                ),
            });
        }
        self.record_dispatch(
            kernel,
            group_counts,
            push_constants,
            Some((params, address_offset)),
            accesses,
        )
    }

    fn record_dispatch(
        &self,
        kernel: &Kernel,
        group_counts: [u32; 3],
        push_constants: &[u8],
        params: Option<(&[u8], usize)>,
        accesses: &[BufferAccess<'_>],
    ) -> Result<()> {
        self.usable("dispatch")?;
        if push_constants.len() > crate::PORTABLE_PUSH_CONSTANT_BYTES
            || !push_constants.len().is_multiple_of(4)
        {
            return Err(Error::Vulkan {
                op: "dispatch",
                detail: format!(
                    "kernel `{}`: {} bytes of push constants (at most {} and a multiple of 4)",
                    kernel.name,
                    push_constants.len(),
                    crate::PORTABLE_PUSH_CONSTANT_BYTES
                ),
            });
        }
        let limits = self.capabilities().max_workgroup_count;
        if group_counts
            .iter()
            .zip(limits)
            .any(|(&count, limit)| count > limit)
        {
            return Err(Error::Vulkan {
                op: "dispatch",
                detail: format!(
                    "kernel `{}`: {group_counts:?} workgroups exceed the device limit {limits:?}",
                    kernel.name
                ),
            });
        }
        for access in accesses {
            let (BufferAccess::Read(buffer) | BufferAccess::Write(buffer)) = access;
            self.owns("dispatch", buffer)?;
        }
        if group_counts.contains(&0) {
            return Ok(());
        }
        let accesses: smallvec::SmallVec<[Access<'_>; 8]> = accesses
            .iter()
            .map(|access| match access {
                BufferAccess::Read(buffer) => Access::Read(buffer.raw()),
                BufferAccess::Write(buffer) => Access::Write(buffer.raw()),
            })
            .collect();
        let mut stream = self.stream.lock();
        let profile_slot = self.dispatch_profile.lock().as_mut().and_then(|recorder| {
            Some((
                recorder.query_pool.clone(),
                recorder.next_slot(&kernel.name)?,
            ))
        });
        if let Some((query_pool, slot)) = &profile_slot {
            let result =
                stream.write_timestamp(vulkano::VulkanObject::handle(&**query_pool), *slot);
            self.guard(result)?;
        }
        let result = match params {
            None => stream.dispatch(&kernel.pipeline, group_counts, push_constants, &accesses),
            Some((bytes, address_offset)) => {
                let mut push: smallvec::SmallVec<[u8; 128]> = push_constants.into();
                stream.params(&self.pool, bytes).and_then(|address| {
                    push[address_offset..address_offset + 8]
                        .copy_from_slice(&address.to_le_bytes());
                    stream.dispatch(&kernel.pipeline, group_counts, &push, &accesses)
                })
            }
        };
        if let (Ok(()), Some(log)) = (&result, stream.capture_log()) {
            let logged: smallvec::SmallVec<[(&Arc<RawBuffer>, bool); 8]> = accesses
                .iter()
                .map(|access| match access {
                    Access::Read(buffer) => (*buffer, false),
                    Access::Write(buffer) => (*buffer, true),
                })
                .collect();
            log.log_dispatch(
                &kernel.pipeline,
                group_counts,
                push_constants,
                params,
                &logged,
            );
        }
        let result = result.and_then(|()| match &profile_slot {
            Some((query_pool, slot)) => {
                stream.write_timestamp(vulkano::VulkanObject::handle(&**query_pool), slot + 1)
            }
            None => Ok(()),
        });
        self.guard(result)
    }

    /// Submits recorded work without waiting.
    pub fn flush(&self) -> Result<()> {
        let mut stream = self.stream.lock();
        let result = stream.submit().and_then(|()| stream.poll(&self.pool));
        self.guard(result)
    }

    /// Submits recorded work and waits for all of it.
    pub fn synchronize(&self) -> Result<()> {
        self.usable("synchronize")?;
        let result = self.stream.lock().wait_idle(&self.pool, "synchronize");
        self.guard(result)
    }

    /// The timeout for GPU waits on this device.
    pub fn timeout(&self) -> Duration {
        self.stream.lock().timeout()
    }

    pub fn set_timeout(&self, timeout: Duration) {
        self.stream.lock().set_timeout(timeout);
    }

    /// A pool of `count` timestamp queries and the nanoseconds per tick, or an error naming
    /// `op` when the compute queue cannot write timestamps.
    fn timestamp_pool(
        &self,
        op: &'static str,
        count: u32,
    ) -> Result<(Arc<vulkano::query::QueryPool>, f32)> {
        let period = self
            .capabilities()
            .timestamp_period_ns
            .ok_or_else(|| Error::Vulkan {
                op,
                detail: "the device's compute queue cannot write timestamps".into(),
            })?;
        let query_pool = vulkano::query::QueryPool::new(
            self.vk_device.clone(),
            vulkano::query::QueryPoolCreateInfo {
                query_count: count,
                ..vulkano::query::QueryPoolCreateInfo::query_type(
                    vulkano::query::QueryType::Timestamp,
                )
            },
        )
        .map_err(|error| Error::vulkan(op, error))?;
        Ok((query_pool, period))
    }

    /// Runs `record` (which records GPU work on this device) between two GPU timestamps and
    /// returns the GPU time it took. Waits for the work.
    pub fn gpu_time(&self, record: impl FnOnce() -> Result<()>) -> Result<Duration> {
        const OP: &str = "gpu timer";
        let (query_pool, period) = self.timestamp_pool(OP, 2)?;
        let handle = vulkano::VulkanObject::handle(&*query_pool);
        self.guard(self.stream.lock().write_timestamp(handle, 0))?;
        record()?;
        self.guard(self.stream.lock().write_timestamp(handle, 1))?;
        self.synchronize()?;
        let mut ticks = [0u64; 2];
        query_pool
            .get_results(0..2, &mut ticks, vulkano::query::QueryResultFlags::WAIT)
            .map_err(|error| Error::vulkan(OP, error))?;
        let nanoseconds = ticks[1].saturating_sub(ticks[0]) as f64 * f64::from(period);
        Ok(Duration::from_nanos(nanoseconds as u64))
    }

    /// Runs `record` (which records GPU work on this device) with a timestamp pair around
    /// each of its dispatches, waits for the work, and returns each dispatch's GPU time
    /// (see `dispatch_profile`). Dispatches recorded meanwhile by other threads are timed too.
    pub fn profile_dispatches(
        &self,
        record: impl FnOnce() -> Result<()>,
    ) -> Result<DispatchProfile> {
        const OP: &str = "dispatch profile";
        let _one_profile_at_a_time = self.profiling.lock();
        let (query_pool, period) = self.timestamp_pool(OP, 2 * PROFILED_DISPATCHES)?;
        *self.dispatch_profile.lock() = Some(dispatch_profile::Recorder {
            query_pool: query_pool.clone(),
            kernels: Vec::new(),
            untimed: 0,
        });
        let recorded = record().and_then(|()| self.synchronize());
        let recorder = self.dispatch_profile.lock().take();
        recorded?;
        let recorder = recorder.ok_or_else(|| Error::Vulkan {
            op: OP,
            detail: "another profile replaced this one".into(),
        })?;
        let mut ticks = vec![0u64; 2 * recorder.kernels.len()];
        if !ticks.is_empty() {
            query_pool
                .get_results(
                    0..ticks.len() as u32,
                    &mut ticks,
                    vulkano::query::QueryResultFlags::WAIT,
                )
                .map_err(|error| Error::vulkan(OP, error))?;
        }
        Ok(recorder.finish(&ticks, period))
    }

    // --- Host fallbacks ---

    /// Called by an op about to run on the host: counts it by (op, dtype) and applies strict
    /// mode, which may refuse it.
    pub fn host_fallback(&self, op: &'static str, dtype: DType, shapes: &[&[usize]]) -> Result<()> {
        self.counters.record_fallback(op, dtype);
        match strict() {
            Strict::Allow => Ok(()),
            Strict::Warn => {
                if self.warned_fallbacks.lock().insert((op.to_owned(), dtype)) {
                    eprintln!("nxvk: {op} on {dtype} runs on the host (no GPU path)");
                }
                Ok(())
            }
            Strict::Raise => Err(Error::HostFallbackRefused {
                op,
                dtype,
                shapes: shapes.iter().map(|shape| shape.to_vec()).collect(),
            }),
        }
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // Only healthy devices are dropped (failed ones are leaked by the context), so the
        // stream can be drained; a cache that cannot be saved costs the next process builds.
        let _ = self.stream.get_mut().wait_idle(&self.pool, "drop device");
        if let Err(error) = self.save_pipeline_cache() {
            eprintln!("nxvk: pipeline cache not saved: {error}");
        }
    }
}

fn check_range(op: &'static str, raw: &RawBuffer, offset: u64, length: u64) -> Result<()> {
    if offset
        .checked_add(length)
        .is_none_or(|end| end > raw.size())
    {
        return Err(Error::Vulkan {
            op,
            detail: format!(
                "bytes {offset}..{} of a {}-byte buffer",
                offset.saturating_add(length),
                raw.size()
            ),
        });
    }
    Ok(())
}

/// A device-local buffer owned by one tensor (or several views of it). Dropping it returns the
/// memory to the pool.
#[derive(Debug)]
pub struct DeviceBuffer {
    raw: Option<Arc<RawBuffer>>,
    device: Arc<Device>,
    /// False for a handle of a resident table, whose memory the device's table cache owns.
    pooled: bool,
}

impl DeviceBuffer {
    pub(crate) fn raw(&self) -> &Arc<RawBuffer> {
        self.raw.as_ref().expect("present until drop")
    }

    pub fn device(&self) -> &Arc<Device> {
        &self.device
    }

    /// Size in bytes (the size class, at least what was asked for).
    pub fn size(&self) -> u64 {
        self.raw().size()
    }

    /// The device address of byte 0, for kernels' push constants.
    pub fn device_address(&self) -> u64 {
        self.raw().device_address()
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if let Some(raw) = self.raw.take()
            && self.pooled
        {
            self.device.pool.release(raw);
        }
    }
}

/// How a dispatch uses a buffer.
#[derive(Debug, Clone, Copy)]
pub enum BufferAccess<'a> {
    Read(&'a DeviceBuffer),
    Write(&'a DeviceBuffer),
}

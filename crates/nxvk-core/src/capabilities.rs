//! What a physical device can do, probed once into a plain struct.
//!
//! Code tests these fields (and the workaround flags), never vendor ids or device names.

use crate::cooperative_matrix::{
    CooperativeMatrix2, CooperativeMatrixShape, query_cooperative_matrices,
};
use crate::newer_features::{self, NewerFeatures};
use std::sync::Arc;
use vulkano::device::physical::{
    PhysicalDevice, PhysicalDeviceType, ShaderFloatControlsIndependence,
};
use vulkano::device::{DeviceExtensions, DeviceFeatures};
use vulkano::memory::MemoryPropertyFlags;

/// The kind of device, in nxvk's order of default preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DeviceKind {
    Discrete,
    Integrated,
    Virtual,
    Cpu,
    Other,
}

/// Subgroup operations the device supports in compute shaders.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubgroupOperations {
    pub basic: bool,
    pub vote: bool,
    pub arithmetic: bool,
    pub ballot: bool,
    pub shuffle: bool,
    pub shuffle_relative: bool,
    pub clustered: bool,
    pub quad: bool,
    /// `subgroupPartitionNV` (VK_NV_shader_subgroup_partitioned): the invocations holding the
    /// same value, as a ballot, in one operation.
    pub partitioned: bool,
}

/// How independently a kernel may set the denormal modes of its 16-, 32- and 64-bit floats
/// (`denormBehaviorIndependence`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatControlsIndependence {
    /// Each width on its own.
    All,
    /// 32-bit on its own; 16- and 64-bit together.
    Float32Only,
    /// All three the same.
    None,
}

/// Everything nxvk asks of a device, probed from its properties, features and memory types.
#[derive(Debug, Clone, PartialEq)]
pub struct Capabilities {
    pub device_name: String,
    pub device_kind: DeviceKind,
    /// The driver's name and version text (`driverName`, `driverInfo`), e.g. "llvmpipe" and
    /// "Mesa 22.3.6 (LLVM 15.0.6)".
    pub driver_name: String,
    pub driver_info: String,
    pub vendor_id: u32,
    pub device_id: u32,
    pub device_uuid: [u8; 16],
    pub driver_version: u32,
    pub pipeline_cache_uuid: [u8; 16],
    /// Vulkan version the device reports, as (major, minor, patch).
    pub api_version: (u32, u32, u32),

    pub shader_float64: bool,
    pub shader_int64: bool,
    pub shader_int16: bool,
    pub shader_int8: bool,
    pub shader_float16: bool,
    pub storage_8bit: bool,
    pub storage_16bit: bool,
    pub buffer_device_address: bool,
    pub timeline_semaphore: bool,
    pub scalar_block_layout: bool,
    pub float32_atomic_add: bool,
    pub float64_atomic_add: bool,
    pub int64_atomics: bool,
    /// Float controls: the driver keeps subnormals of that width in a kernel that declares
    /// DenormPreserve for it (otherwise it may flush them, as NVIDIA's does for f32).
    pub shader_denorm_preserve_float16: bool,
    pub shader_denorm_preserve_float32: bool,
    pub shader_denorm_preserve_float64: bool,
    pub denorm_behavior_independence: FloatControlsIndependence,

    pub subgroup_size: u32,
    pub subgroup_operations: SubgroupOperations,
    /// Subgroup operations on 8/16/64-bit types and f16.
    pub subgroup_extended_types: bool,

    pub max_shared_memory_bytes: u32,
    pub max_workgroup_invocations: u32,
    pub max_workgroup_size: [u32; 3],
    pub max_workgroup_count: [u32; 3],
    pub max_storage_buffer_range: u64,
    pub max_push_constants_bytes: u32,
    pub max_memory_allocation_bytes: u64,
    pub device_local_heap_bytes: u64,

    /// Shapes and types VK_KHR_cooperative_matrix offers (empty without the extension).
    pub cooperative_matrices: Vec<CooperativeMatrixShape>,
    /// VK_KHR_shader_bfloat16 with bf16 cooperative matrices, which nxvk-core then enables
    /// (below vulkano, `newer_features.rs`): kernels may declare `bfloat16_t` matrices.
    pub bfloat16_cooperative_matrix: bool,
    /// VK_NV_cooperative_matrix2's workgroup-scope matrices, which nxvk-core then enables
    /// (below vulkano): kernels compiled for SPIR-V 1.6 may use them.
    pub cooperative_matrix2: Option<CooperativeMatrix2>,

    /// Device memory is the host's memory (integrated GPUs, CPU drivers such as lavapipe):
    /// uploads and downloads map device buffers directly instead of going through staging.
    pub unified_memory: bool,
    /// Some memory type is both device-local and host-visible (UMA, or a resizable BAR).
    pub host_visible_device_local: bool,
    /// Nanoseconds per timestamp tick; `None` when compute queues cannot write timestamps.
    pub timestamp_period_ns: Option<f32>,
}

impl Capabilities {
    pub(crate) fn probe(physical: &Arc<PhysicalDevice>) -> Self {
        let properties = physical.properties();
        let features = physical.supported_features();
        let extensions = physical.supported_extensions();
        let memory = physical.memory_properties();
        // Probed once: the features newer than vulkano (raw queries).
        let newer = newer_features::probe(physical);

        let device_local_heap_bytes = memory
            .memory_heaps
            .iter()
            .filter(|heap| {
                heap.flags
                    .intersects(vulkano::memory::MemoryHeapFlags::DEVICE_LOCAL)
            })
            .map(|heap| heap.size)
            .max()
            .unwrap_or(0);
        let device_local_host_visible =
            MemoryPropertyFlags::DEVICE_LOCAL | MemoryPropertyFlags::HOST_VISIBLE;
        let host_visible_device_local = memory.memory_types.iter().any(|memory_type| {
            memory_type
                .property_flags
                .contains(device_local_host_visible)
        });
        let device_kind = match properties.device_type {
            PhysicalDeviceType::DiscreteGpu => DeviceKind::Discrete,
            PhysicalDeviceType::IntegratedGpu => DeviceKind::Integrated,
            PhysicalDeviceType::VirtualGpu => DeviceKind::Virtual,
            PhysicalDeviceType::Cpu => DeviceKind::Cpu,
            _ => DeviceKind::Other,
        };
        let unified_memory = host_visible_device_local
            && matches!(device_kind, DeviceKind::Integrated | DeviceKind::Cpu);

        let subgroup_features = properties.subgroup_supported_operations.unwrap_or_default();
        use vulkano::device::physical::SubgroupFeatures as Sub;
        let has = |flag: Sub| subgroup_features.intersects(flag);
        let version = properties.api_version;
        let queue_has_timestamps = physical
            .queue_family_properties()
            .iter()
            .any(|family| family.timestamp_valid_bits.is_some());

        Capabilities {
            device_name: properties.device_name.clone(),
            device_kind,
            driver_name: properties.driver_name.clone().unwrap_or_default(),
            driver_info: properties.driver_info.clone().unwrap_or_default(),
            vendor_id: properties.vendor_id,
            device_id: properties.device_id,
            device_uuid: properties.device_uuid.unwrap_or_default(),
            driver_version: properties.driver_version,
            pipeline_cache_uuid: properties.pipeline_cache_uuid,
            api_version: (version.major, version.minor, version.patch),
            shader_float64: features.shader_float64,
            shader_int64: features.shader_int64,
            shader_int16: features.shader_int16,
            shader_int8: features.shader_int8,
            shader_float16: features.shader_float16,
            storage_8bit: features.storage_buffer8_bit_access,
            storage_16bit: features.storage_buffer16_bit_access,
            buffer_device_address: features.buffer_device_address,
            timeline_semaphore: features.timeline_semaphore,
            scalar_block_layout: features.scalar_block_layout,
            float32_atomic_add: features.shader_buffer_float32_atomic_add,
            float64_atomic_add: features.shader_buffer_float64_atomic_add,
            int64_atomics: features.shader_buffer_int64_atomics,
            shader_denorm_preserve_float16: properties
                .shader_denorm_preserve_float16
                .unwrap_or(false),
            shader_denorm_preserve_float32: properties
                .shader_denorm_preserve_float32
                .unwrap_or(false),
            shader_denorm_preserve_float64: properties
                .shader_denorm_preserve_float64
                .unwrap_or(false),
            denorm_behavior_independence: match properties.denorm_behavior_independence {
                Some(ShaderFloatControlsIndependence::Float32Only) => {
                    FloatControlsIndependence::Float32Only
                }
                Some(ShaderFloatControlsIndependence::None) => FloatControlsIndependence::None,
                _ => FloatControlsIndependence::All,
            },
            subgroup_size: properties.subgroup_size.unwrap_or(1),
            subgroup_operations: SubgroupOperations {
                basic: has(Sub::BASIC),
                vote: has(Sub::VOTE),
                arithmetic: has(Sub::ARITHMETIC),
                ballot: has(Sub::BALLOT),
                shuffle: has(Sub::SHUFFLE),
                shuffle_relative: has(Sub::SHUFFLE_RELATIVE),
                clustered: has(Sub::CLUSTERED),
                quad: has(Sub::QUAD),
                partitioned: has(Sub::PARTITIONED) && extensions.nv_shader_subgroup_partitioned,
            },
            subgroup_extended_types: features.shader_subgroup_extended_types,
            max_shared_memory_bytes: properties.max_compute_shared_memory_size,
            max_workgroup_invocations: properties.max_compute_work_group_invocations,
            max_workgroup_size: properties.max_compute_work_group_size,
            max_workgroup_count: properties.max_compute_work_group_count,
            max_storage_buffer_range: u64::from(properties.max_storage_buffer_range),
            max_push_constants_bytes: properties.max_push_constants_size,
            max_memory_allocation_bytes: properties
                .max_memory_allocation_size
                .unwrap_or(device_local_heap_bytes),
            device_local_heap_bytes,
            cooperative_matrices: if extensions.khr_cooperative_matrix {
                query_cooperative_matrices(physical)
            } else {
                Vec::new()
            },
            bfloat16_cooperative_matrix: newer.bfloat16_cooperative_matrix,
            cooperative_matrix2: if newer.cooperative_matrix2 {
                newer_features::query_cooperative_matrix2(physical)
            } else {
                None
            },
            unified_memory,
            host_visible_device_local,
            timestamp_period_ns: (queue_has_timestamps
                && properties.timestamp_compute_and_graphics)
                .then_some(properties.timestamp_period),
        }
    }

    /// The features newer than vulkano that the device offers and nxvk enables.
    pub(crate) fn newer_features(&self) -> NewerFeatures {
        NewerFeatures {
            bfloat16_cooperative_matrix: self.bfloat16_cooperative_matrix,
            cooperative_matrix2: self.cooperative_matrix2.is_some(),
        }
    }

    /// The float widths whose subnormals every kernel asks the driver to keep
    /// (`nxvk_glsl::request_denorm_preserve`): f32 where the device offers it, so that f32
    /// results match the host's; where the widths' modes cannot be set apart, all three widths
    /// or none. f16 and f64 keep the driver's default otherwise (f64 is not flushed by the
    /// drivers measured; f16 subnormals are rounded by nxvk's own helpers).
    pub fn denorm_preserve_widths(&self) -> &'static [u32] {
        if !self.shader_denorm_preserve_float32 {
            return &[];
        }
        match self.denorm_behavior_independence {
            FloatControlsIndependence::All | FloatControlsIndependence::Float32Only => &[32],
            FloatControlsIndependence::None
                if self.shader_denorm_preserve_float16 && self.shader_denorm_preserve_float64 =>
            {
                &[16, 32, 64]
            }
            FloatControlsIndependence::None => &[],
        }
    }

    /// A one-line summary for logs and `device info` commands.
    pub fn summary(&self) -> String {
        format!(
            "{} ({:?}, {} {}, Vulkan {}.{}.{})",
            self.device_name,
            self.device_kind,
            self.driver_name,
            self.driver_info,
            self.api_version.0,
            self.api_version.1,
            self.api_version.2
        )
    }
}

/// Features nxvk turns on: every one of [`every_wanted_feature`] that the device supports.
pub(crate) fn wanted_features(supported: &DeviceFeatures) -> DeviceFeatures {
    every_wanted_feature().intersection(supported)
}

/// Every feature nxvk uses where a device has it.
pub(crate) fn every_wanted_feature() -> DeviceFeatures {
    DeviceFeatures {
        shader_float64: true,
        shader_int64: true,
        shader_int16: true,
        shader_int8: true,
        shader_float16: true,
        storage_buffer8_bit_access: true,
        uniform_and_storage_buffer8_bit_access: true,
        storage_buffer16_bit_access: true,
        uniform_and_storage_buffer16_bit_access: true,
        buffer_device_address: true,
        timeline_semaphore: true,
        scalar_block_layout: true,
        vulkan_memory_model: true,
        vulkan_memory_model_device_scope: true,
        subgroup_size_control: true,
        shader_subgroup_extended_types: true,
        shader_buffer_int64_atomics: true,
        shader_buffer_float32_atomics: true,
        shader_buffer_float32_atomic_add: true,
        shader_buffer_float64_atomics: true,
        shader_buffer_float64_atomic_add: true,
        cooperative_matrix: true,
        maintenance4: true,
        ..DeviceFeatures::empty()
    }
}

/// Extensions nxvk turns on when present (those promoted to the device's core version are
/// not needed and not asked for).
pub(crate) fn wanted_extensions(supported: &DeviceExtensions) -> DeviceExtensions {
    let wanted = DeviceExtensions {
        khr_cooperative_matrix: true,
        ext_shader_atomic_float: true,
        ext_memory_budget: true,
        khr_portability_subset: true,
        nv_shader_subgroup_partitioned: true,
        ..DeviceExtensions::empty()
    };
    wanted.intersection(supported)
}

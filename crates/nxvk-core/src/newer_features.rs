//! Device features newer than the Vulkan headers vulkano 0.35 and ash 0.38 were generated from
//! (1.3.281): VK_KHR_shader_bfloat16, whose bf16 cooperative matrices feed the tensor cores
//! from bf16 operands, and VK_NV_cooperative_matrix2, whose workgroup-scope matrices with
//! flexible dimensions and tensor addressing let the driver plan a GEMM's staging.
//!
//! vulkano cannot enable an extension it does not know, so a device that offers one is
//! created here with the raw `vkCreateDevice`, its feature chain written from the same
//! [`DeviceFeatures`] vulkano would have enabled, and handed to vulkano with
//! `Device::from_handle`. Every other device is created by vulkano as before. The structure
//! and enum values come from the Vulkan registry (vk.xml 1.4.309).
//!
//! The alternative, patching `vkCreateDevice` through a wrapping loader, was rejected: it needs
//! process-global state to smuggle the extra structures into vulkano's call.

use crate::cooperative_matrix::{
    CooperativeMatrix2, FlexibleMatrixShape, component_name, scope_name,
};
use crate::{Error, Result};
use ash::vk;
use std::ffi::{CStr, CString, c_char, c_void};
use std::sync::Arc;
use vulkano::device::physical::PhysicalDevice;
use vulkano::device::{Device as VkDevice, DeviceCreateInfo, DeviceFeatures, Queue};
use vulkano::{Version, VulkanObject};

const BFLOAT16_EXTENSION: &CStr = c"VK_KHR_shader_bfloat16";
/// `VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR`.
const BFLOAT16_FEATURES_STRUCTURE: i32 = 1_000_141_000;
const COOPERATIVE_MATRIX2_EXTENSION: &CStr = c"VK_NV_cooperative_matrix2";
/// `VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV`,
/// `..._COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV` and
/// `..._PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV`.
const COOPERATIVE_MATRIX2_FEATURES_STRUCTURE: i32 = 1_000_593_000;
const FLEXIBLE_DIMENSIONS_STRUCTURE: i32 = 1_000_593_001;
const COOPERATIVE_MATRIX2_PROPERTIES_STRUCTURE: i32 = 1_000_593_002;

/// `VkPhysicalDeviceShaderBfloat16FeaturesKHR`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct ShaderBfloat16Features {
    s_type: vk::StructureType,
    p_next: *mut c_void,
    shader_bfloat16_type: vk::Bool32,
    shader_bfloat16_dot_product: vk::Bool32,
    shader_bfloat16_cooperative_matrix: vk::Bool32,
}

impl Default for ShaderBfloat16Features {
    fn default() -> Self {
        ShaderBfloat16Features {
            s_type: vk::StructureType::from_raw(BFLOAT16_FEATURES_STRUCTURE),
            p_next: std::ptr::null_mut(),
            shader_bfloat16_type: vk::FALSE,
            shader_bfloat16_dot_product: vk::FALSE,
            shader_bfloat16_cooperative_matrix: vk::FALSE,
        }
    }
}

/// `VkPhysicalDeviceCooperativeMatrix2FeaturesNV`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct CooperativeMatrix2Features {
    s_type: vk::StructureType,
    p_next: *mut c_void,
    workgroup_scope: vk::Bool32,
    flexible_dimensions: vk::Bool32,
    reductions: vk::Bool32,
    conversions: vk::Bool32,
    per_element_operations: vk::Bool32,
    tensor_addressing: vk::Bool32,
    block_loads: vk::Bool32,
}

impl Default for CooperativeMatrix2Features {
    fn default() -> Self {
        CooperativeMatrix2Features {
            s_type: vk::StructureType::from_raw(COOPERATIVE_MATRIX2_FEATURES_STRUCTURE),
            p_next: std::ptr::null_mut(),
            workgroup_scope: vk::FALSE,
            flexible_dimensions: vk::FALSE,
            reductions: vk::FALSE,
            conversions: vk::FALSE,
            per_element_operations: vk::FALSE,
            tensor_addressing: vk::FALSE,
            block_loads: vk::FALSE,
        }
    }
}

/// `VkPhysicalDeviceCooperativeMatrix2PropertiesNV`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct CooperativeMatrix2Properties {
    s_type: vk::StructureType,
    p_next: *mut c_void,
    workgroup_scope_max_workgroup_size: u32,
    flexible_dimensions_max_dimension: u32,
    workgroup_scope_reserved_shared_memory: u32,
}

/// `VkCooperativeMatrixFlexibleDimensionsPropertiesNV`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct FlexibleDimensionsProperties {
    s_type: vk::StructureType,
    p_next: *mut c_void,
    m_granularity: u32,
    n_granularity: u32,
    k_granularity: u32,
    a_type: vk::ComponentTypeKHR,
    b_type: vk::ComponentTypeKHR,
    c_type: vk::ComponentTypeKHR,
    result_type: vk::ComponentTypeKHR,
    saturating_accumulation: vk::Bool32,
    scope: vk::ScopeKHR,
    workgroup_invocations: u32,
}

/// `vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV`.
type FlexibleDimensionsQuery = unsafe extern "system" fn(
    vk::PhysicalDevice,
    *mut u32,
    *mut FlexibleDimensionsProperties,
) -> vk::Result;

// SAFETY: each structure is `repr(C)` and starts with sType and pNext, as every structure in a
// feature or property query or a device's creation chain must; the registry lists the feature
// structures as extending the first and last, the properties structure the second.
unsafe impl vk::ExtendsPhysicalDeviceFeatures2 for ShaderBfloat16Features {}
// SAFETY: as above.
unsafe impl vk::ExtendsDeviceCreateInfo for ShaderBfloat16Features {}
// SAFETY: as above.
unsafe impl vk::ExtendsPhysicalDeviceFeatures2 for CooperativeMatrix2Features {}
// SAFETY: as above.
unsafe impl vk::ExtendsDeviceCreateInfo for CooperativeMatrix2Features {}
// SAFETY: as above.
unsafe impl vk::ExtendsPhysicalDeviceProperties2 for CooperativeMatrix2Properties {}

/// What the device offers among the newer features nxvk uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct NewerFeatures {
    /// VK_KHR_shader_bfloat16 with `shaderBFloat16Type` and `shaderBFloat16CooperativeMatrix`.
    pub(crate) bfloat16_cooperative_matrix: bool,
    /// VK_NV_cooperative_matrix2 with workgroup scope, flexible dimensions and tensor
    /// addressing.
    pub(crate) cooperative_matrix2: bool,
}

impl NewerFeatures {
    pub(crate) fn any(self) -> bool {
        self.bfloat16_cooperative_matrix || self.cooperative_matrix2
    }
}

/// The newer features `physical` supports. Devices below Vulkan 1.3 are not asked: the raw
/// creation below writes the Vulkan 1.3 feature structure, and VK_NV_cooperative_matrix2's
/// shaders are SPIR-V 1.6.
pub(crate) fn probe(physical: &PhysicalDevice) -> NewerFeatures {
    if physical.api_version() < Version::V1_3 || physical.instance().api_version() < Version::V1_3 {
        return NewerFeatures::default();
    }
    let extensions = extension_names(physical);
    let listed = |wanted: &CStr| extensions.iter().any(|name| **name == *wanted);
    let mut bfloat16 = ShaderBfloat16Features::default();
    let mut matrix2 = CooperativeMatrix2Features::default();
    let mut features = vk::PhysicalDeviceFeatures2::default();
    if listed(BFLOAT16_EXTENSION) {
        features = features.push_next(&mut bfloat16);
    }
    // VK_NV_cooperative_matrix2 extends the KHR matrices, which vulkano enables where listed.
    if listed(COOPERATIVE_MATRIX2_EXTENSION) && listed(c"VK_KHR_cooperative_matrix") {
        features = features.push_next(&mut matrix2);
    }
    // SAFETY: the instance is Vulkan 1.3 (checked above), the handle is alive, and the chain
    // holds only structures of supported extensions, each with its sType set.
    unsafe {
        (physical.instance().fns().v1_1.get_physical_device_features2)(
            physical.handle(),
            &mut features,
        );
    }
    NewerFeatures {
        bfloat16_cooperative_matrix: bfloat16.shader_bfloat16_type == vk::TRUE
            && bfloat16.shader_bfloat16_cooperative_matrix == vk::TRUE,
        cooperative_matrix2: matrix2.workgroup_scope == vk::TRUE
            && matrix2.flexible_dimensions == vk::TRUE
            && matrix2.tensor_addressing == vk::TRUE,
    }
}

/// VK_NV_cooperative_matrix2's limits and flexible shapes on a device where [`probe`] found
/// its features (the caller checks).
pub(crate) fn query_cooperative_matrix2(physical: &PhysicalDevice) -> Option<CooperativeMatrix2> {
    let mut limits = CooperativeMatrix2Properties {
        s_type: vk::StructureType::from_raw(COOPERATIVE_MATRIX2_PROPERTIES_STRUCTURE),
        p_next: std::ptr::null_mut(),
        workgroup_scope_max_workgroup_size: 0,
        flexible_dimensions_max_dimension: 0,
        workgroup_scope_reserved_shared_memory: 0,
    };
    let mut properties = vk::PhysicalDeviceProperties2::default().push_next(&mut limits);
    // SAFETY: the instance is Vulkan 1.3 and the extension supported (`probe`); the chain holds
    // one structure of it with its sType set.
    unsafe {
        (physical
            .instance()
            .fns()
            .v1_1
            .get_physical_device_properties2)(physical.handle(), &mut properties);
    }
    let instance = physical.instance();
    // SAFETY: the name is nul-terminated and the instance alive.
    let address = unsafe {
        instance.library().get_instance_proc_addr(
            instance.handle(),
            c"vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV".as_ptr(),
        )
    }?;
    // SAFETY: the loader returned this command's entry point, whose signature the registry
    // gives as `FlexibleDimensionsQuery`.
    let query: FlexibleDimensionsQuery = unsafe { std::mem::transmute(address) };
    let mut count = 0u32;
    // SAFETY: a null array asks for the count alone; the handle is alive.
    let result = unsafe { query(physical.handle(), &mut count, std::ptr::null_mut()) };
    if result != vk::Result::SUCCESS {
        return None;
    }
    let empty = FlexibleDimensionsProperties {
        s_type: vk::StructureType::from_raw(FLEXIBLE_DIMENSIONS_STRUCTURE),
        p_next: std::ptr::null_mut(),
        m_granularity: 0,
        n_granularity: 0,
        k_granularity: 0,
        a_type: vk::ComponentTypeKHR::FLOAT16,
        b_type: vk::ComponentTypeKHR::FLOAT16,
        c_type: vk::ComponentTypeKHR::FLOAT16,
        result_type: vk::ComponentTypeKHR::FLOAT16,
        saturating_accumulation: vk::FALSE,
        scope: vk::ScopeKHR::SUBGROUP,
        workgroup_invocations: 0,
    };
    let mut shapes = vec![empty; count as usize];
    // SAFETY: `shapes` holds `count` structures with their sType set; the driver writes at
    // most that many and updates `count`.
    let result = unsafe { query(physical.handle(), &mut count, shapes.as_mut_ptr()) };
    if result != vk::Result::SUCCESS && result != vk::Result::INCOMPLETE {
        return None;
    }
    shapes.truncate(count as usize);
    Some(CooperativeMatrix2 {
        max_workgroup_size: limits.workgroup_scope_max_workgroup_size,
        max_dimension: limits.flexible_dimensions_max_dimension,
        reserved_shared_memory: limits.workgroup_scope_reserved_shared_memory,
        flexible_dimensions: shapes
            .iter()
            .map(|shape| FlexibleMatrixShape {
                m_granularity: shape.m_granularity,
                n_granularity: shape.n_granularity,
                k_granularity: shape.k_granularity,
                a_type: component_name(shape.a_type),
                b_type: component_name(shape.b_type),
                c_type: component_name(shape.c_type),
                result_type: component_name(shape.result_type),
                saturating: shape.saturating_accumulation == vk::TRUE,
                scope: scope_name(shape.scope),
                workgroup_invocations: shape.workgroup_invocations,
            })
            .collect(),
    })
}

/// Every device extension `physical` lists, by name (vulkano's list omits those it does not
/// know).
fn extension_names(physical: &PhysicalDevice) -> Vec<Box<CStr>> {
    let enumerate = physical
        .instance()
        .fns()
        .v1_0
        .enumerate_device_extension_properties;
    let mut count = 0u32;
    // SAFETY: the handle is alive; a null layer name asks for the driver's own extensions and a
    // null array for the count alone.
    let result = unsafe {
        enumerate(
            physical.handle(),
            std::ptr::null(),
            &mut count,
            std::ptr::null_mut(),
        )
    };
    if result != vk::Result::SUCCESS {
        return Vec::new();
    }
    let mut properties = vec![vk::ExtensionProperties::default(); count as usize];
    // SAFETY: `properties` holds `count` elements; the driver writes at most that many.
    let result = unsafe {
        enumerate(
            physical.handle(),
            std::ptr::null(),
            &mut count,
            properties.as_mut_ptr(),
        )
    };
    if result != vk::Result::SUCCESS && result != vk::Result::INCOMPLETE {
        return Vec::new();
    }
    properties.truncate(count as usize);
    properties
        .iter()
        .filter_map(|property| property.extension_name_as_c_str().ok().map(Box::from))
        .collect()
}

/// The Vulkan structures that carry the features nxvk asks for, as `vkCreateDevice` reads them.
#[derive(Default)]
struct FeatureChain {
    core: vk::PhysicalDeviceFeatures,
    vulkan11: vk::PhysicalDeviceVulkan11Features<'static>,
    vulkan12: vk::PhysicalDeviceVulkan12Features<'static>,
    vulkan13: vk::PhysicalDeviceVulkan13Features<'static>,
    atomic_float: vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT<'static>,
    cooperative_matrix: vk::PhysicalDeviceCooperativeMatrixFeaturesKHR<'static>,
}

impl FeatureChain {
    /// Sets the member that carries the feature vulkano calls `name` (the registry's name);
    /// false for a feature this table does not know.
    fn enable(&mut self, name: &str) -> bool {
        let on = vk::TRUE;
        match name {
            "shaderFloat64" => self.core.shader_float64 = on,
            "shaderInt64" => self.core.shader_int64 = on,
            "shaderInt16" => self.core.shader_int16 = on,
            "storageBuffer16BitAccess" => self.vulkan11.storage_buffer16_bit_access = on,
            "uniformAndStorageBuffer16BitAccess" => {
                self.vulkan11.uniform_and_storage_buffer16_bit_access = on;
            }
            "shaderInt8" => self.vulkan12.shader_int8 = on,
            "shaderFloat16" => self.vulkan12.shader_float16 = on,
            "storageBuffer8BitAccess" => self.vulkan12.storage_buffer8_bit_access = on,
            "uniformAndStorageBuffer8BitAccess" => {
                self.vulkan12.uniform_and_storage_buffer8_bit_access = on;
            }
            "bufferDeviceAddress" => self.vulkan12.buffer_device_address = on,
            "timelineSemaphore" => self.vulkan12.timeline_semaphore = on,
            "scalarBlockLayout" => self.vulkan12.scalar_block_layout = on,
            "vulkanMemoryModel" => self.vulkan12.vulkan_memory_model = on,
            "vulkanMemoryModelDeviceScope" => self.vulkan12.vulkan_memory_model_device_scope = on,
            "shaderSubgroupExtendedTypes" => self.vulkan12.shader_subgroup_extended_types = on,
            "shaderBufferInt64Atomics" => self.vulkan12.shader_buffer_int64_atomics = on,
            "subgroupSizeControl" => self.vulkan13.subgroup_size_control = on,
            "maintenance4" => self.vulkan13.maintenance4 = on,
            "shaderBufferFloat32Atomics" => self.atomic_float.shader_buffer_float32_atomics = on,
            "shaderBufferFloat32AtomicAdd" => {
                self.atomic_float.shader_buffer_float32_atomic_add = on;
            }
            "shaderBufferFloat64Atomics" => self.atomic_float.shader_buffer_float64_atomics = on,
            "shaderBufferFloat64AtomicAdd" => {
                self.atomic_float.shader_buffer_float64_atomic_add = on;
            }
            "cooperativeMatrix" => self.cooperative_matrix.cooperative_matrix = on,
            _ => return false,
        }
        true
    }
}

/// The chain carrying `features`, or the names of those no member of it carries (a test
/// holds `wanted_features` to none).
fn feature_chain(
    features: &DeviceFeatures,
) -> std::result::Result<FeatureChain, Vec<&'static str>> {
    let mut chain = FeatureChain::default();
    let uncarried: Vec<&'static str> = features
        .into_iter()
        .filter(|&(name, enabled)| enabled && !chain.enable(name))
        .map(|(name, _)| name)
        .collect();
    if uncarried.is_empty() {
        Ok(chain)
    } else {
        Err(uncarried)
    }
}

/// Creates the device `create_info` describes, with the `newer` features enabled as well, and
/// wraps it for vulkano. `create_info` must already be valid for `physical` (the caller builds
/// it from the supported features and extensions, as for vulkano's own creation).
pub(crate) fn create_device(
    physical: &Arc<PhysicalDevice>,
    create_info: DeviceCreateInfo,
    newer: NewerFeatures,
) -> Result<(Arc<VkDevice>, impl ExactSizeIterator<Item = Arc<Queue>>)> {
    let mut chain =
        feature_chain(&create_info.enabled_features).map_err(|uncarried| Error::Vulkan {
            op: "create device",
            detail: format!("no raw structure carries the features {uncarried:?}"),
        })?;
    let extensions = &create_info.enabled_extensions;
    // vulkano's names are registry strings without a terminating nul.
    let extension_strings: Vec<CString> = extensions
        .into_iter()
        .filter(|&(_, enabled)| enabled)
        .filter_map(|(name, _)| CString::new(name).ok())
        .collect();
    let mut extension_names: Vec<*const c_char> =
        extension_strings.iter().map(|name| name.as_ptr()).collect();
    let mut bfloat16 = ShaderBfloat16Features::default();
    if newer.bfloat16_cooperative_matrix {
        bfloat16.shader_bfloat16_type = vk::TRUE;
        bfloat16.shader_bfloat16_cooperative_matrix = vk::TRUE;
        extension_names.push(BFLOAT16_EXTENSION.as_ptr());
    }
    let mut matrix2 = CooperativeMatrix2Features::default();
    if newer.cooperative_matrix2 {
        matrix2.workgroup_scope = vk::TRUE;
        matrix2.flexible_dimensions = vk::TRUE;
        matrix2.tensor_addressing = vk::TRUE;
        extension_names.push(COOPERATIVE_MATRIX2_EXTENSION.as_ptr());
    }
    let queue_priorities: Vec<Vec<f32>> = create_info
        .queue_create_infos
        .iter()
        .map(|queue| queue.queues.clone())
        .collect();
    let queue_infos: Vec<vk::DeviceQueueCreateInfo<'_>> = create_info
        .queue_create_infos
        .iter()
        .zip(&queue_priorities)
        .map(|(queue, priorities)| {
            vk::DeviceQueueCreateInfo::default()
                .queue_family_index(queue.queue_family_index)
                .queue_priorities(priorities)
        })
        .collect();
    let mut features2 = vk::PhysicalDeviceFeatures2::default()
        .features(chain.core)
        .push_next(&mut chain.vulkan11)
        .push_next(&mut chain.vulkan12)
        .push_next(&mut chain.vulkan13);
    // Structures of extensions are chained only where their extension is enabled.
    if extensions.ext_shader_atomic_float {
        features2 = features2.push_next(&mut chain.atomic_float);
    }
    if extensions.khr_cooperative_matrix {
        features2 = features2.push_next(&mut chain.cooperative_matrix);
    }
    if newer.bfloat16_cooperative_matrix {
        features2 = features2.push_next(&mut bfloat16);
    }
    if newer.cooperative_matrix2 {
        features2 = features2.push_next(&mut matrix2);
    }
    let device_info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queue_infos)
        .enabled_extension_names(&extension_names)
        .push_next(&mut features2);
    let mut handle = vk::Device::null();
    // SAFETY: every pointer in `device_info` points into locals that outlive the call; the
    // extensions and features are ones the device supports (the caller intersected them with
    // its lists, and `newer` came from `probe`); the physical device handle is alive.
    let result = unsafe {
        (physical.instance().fns().v1_0.create_device)(
            physical.handle(),
            &device_info,
            std::ptr::null(),
            &mut handle,
        )
    };
    if result != vk::Result::SUCCESS {
        return Err(Error::Vulkan {
            op: "create device",
            detail: format!("vkCreateDevice with newer features returned {result:?}"),
        });
    }
    // SAFETY: `handle` was just created from `physical` with exactly the queues, extensions and
    // features `create_info` names, plus the newer ones, which vulkano never consults.
    Ok(unsafe { VkDevice::from_handle(physical.clone(), handle, create_info) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capabilities::every_wanted_feature;

    /// Every feature nxvk may ask for has a member in the raw chain, so a device created here
    /// enables what vulkano would have.
    #[test]
    fn the_raw_chain_carries_every_wanted_feature() {
        let everything = every_wanted_feature();
        assert!(everything.into_iter().filter(|&(_, on)| on).count() > 20);
        assert_eq!(feature_chain(&everything).err(), None);
    }

    /// The null arm: a feature outside the table is reported, not silently dropped.
    #[test]
    fn an_unknown_feature_is_reported() {
        let features = DeviceFeatures {
            geometry_shader: true,
            shader_float64: true,
            ..DeviceFeatures::empty()
        };
        assert_eq!(feature_chain(&features).err(), Some(vec!["geometryShader"]));
    }
}

//! Cooperative-matrix shapes: VK_KHR_cooperative_matrix's fixed shapes (vulkano 0.35 loads the
//! extension's entry points but has no wrapper for the property query), and the description of
//! VK_NV_cooperative_matrix2's workgroup-scope matrices (queried in `newer_features.rs`).

use std::sync::Arc;
use vulkano::VulkanObject;
use vulkano::device::physical::PhysicalDevice;

/// One matrix multiply-accumulate shape the device offers: `M x K` times `K x N` into `M x N`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CooperativeMatrixShape {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    /// Component types, as Vulkan names them ("f16", "bf16", "f32", "s8", ...).
    pub a_type: String,
    pub b_type: String,
    pub c_type: String,
    pub result_type: String,
    pub saturating: bool,
    /// "subgroup", "workgroup", ... (the scope the matrix is shared across).
    pub scope: String,
}

/// VK_NV_cooperative_matrix2 on a device that offers workgroup-scope matrices, flexible
/// dimensions and tensor addressing (nxvk-core then enables them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CooperativeMatrix2 {
    /// The most invocations a workgroup using workgroup-scope matrices may have.
    pub max_workgroup_size: u32,
    /// The largest M, N or K a flexible-dimension matrix may have.
    pub max_dimension: u32,
    /// Shared memory the driver keeps for workgroup-scope matrices, in bytes.
    pub reserved_shared_memory: u32,
    /// The type combinations with flexible dimensions.
    pub flexible_dimensions: Vec<FlexibleMatrixShape>,
}

/// Matrices of any size that is a multiple of these granularities, of these component types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlexibleMatrixShape {
    pub m_granularity: u32,
    pub n_granularity: u32,
    pub k_granularity: u32,
    /// Component types, named as in [`CooperativeMatrixShape`].
    pub a_type: String,
    pub b_type: String,
    pub c_type: String,
    pub result_type: String,
    pub saturating: bool,
    /// "subgroup" or "workgroup".
    pub scope: String,
    /// The workgroup size these dimensions hold for (workgroup scope).
    pub workgroup_invocations: u32,
}

pub(crate) fn query_cooperative_matrices(
    physical: &Arc<PhysicalDevice>,
) -> Vec<CooperativeMatrixShape> {
    let query = physical
        .instance()
        .fns()
        .khr_cooperative_matrix
        .get_physical_device_cooperative_matrix_properties_khr;
    let mut count = 0u32;
    // SAFETY: the extension is supported (checked by the caller), the physical device handle is
    // alive for the duration of the call, and a null array asks only for the count.
    let result = unsafe { query(physical.handle(), &mut count, std::ptr::null_mut()) };
    if result != ash::vk::Result::SUCCESS || count == 0 {
        return Vec::new();
    }
    let mut properties = vec![ash::vk::CooperativeMatrixPropertiesKHR::default(); count as usize];
    // SAFETY: `properties` holds `count` default-initialised structures with their sType set, as
    // the call requires; the driver writes at most `count` of them and updates `count`.
    let result = unsafe { query(physical.handle(), &mut count, properties.as_mut_ptr()) };
    if result != ash::vk::Result::SUCCESS && result != ash::vk::Result::INCOMPLETE {
        return Vec::new();
    }
    properties.truncate(count as usize);
    properties
        .iter()
        .map(|property| CooperativeMatrixShape {
            m: property.m_size,
            n: property.n_size,
            k: property.k_size,
            a_type: component_name(property.a_type),
            b_type: component_name(property.b_type),
            c_type: component_name(property.c_type),
            result_type: component_name(property.result_type),
            saturating: property.saturating_accumulation == ash::vk::TRUE,
            scope: scope_name(property.scope),
        })
        .collect()
}

pub(crate) fn scope_name(scope: ash::vk::ScopeKHR) -> String {
    match scope {
        ash::vk::ScopeKHR::SUBGROUP => "subgroup".into(),
        ash::vk::ScopeKHR::WORKGROUP => "workgroup".into(),
        ash::vk::ScopeKHR::DEVICE => "device".into(),
        ash::vk::ScopeKHR::QUEUE_FAMILY => "queue family".into(),
        other => format!("scope {}", other.as_raw()),
    }
}

pub(crate) fn component_name(component: ash::vk::ComponentTypeKHR) -> String {
    use ash::vk::ComponentTypeKHR as C;
    match component {
        C::FLOAT16 => "f16".into(),
        C::FLOAT32 => "f32".into(),
        C::FLOAT64 => "f64".into(),
        C::SINT8 => "s8".into(),
        C::SINT16 => "s16".into(),
        C::SINT32 => "s32".into(),
        C::SINT64 => "s64".into(),
        C::UINT8 => "u8".into(),
        C::UINT16 => "u16".into(),
        C::UINT32 => "u32".into(),
        C::UINT64 => "u64".into(),
        // VK_KHR_shader_bfloat16 postdates the headers vulkano 0.35 ships.
        other if other.as_raw() == 1_000_141_000 => "bf16".into(),
        other => format!("component {}", other.as_raw()),
    }
}

//! Compute pipelines, built by vulkano or, for SPIR-V that vulkano 0.35 cannot parse, with raw
//! calls on the same device, layout and pipeline cache.
//!
//! vulkano parses every module it builds (to reflect on it and validate it), and its parser
//! predates bf16: a module that declares one of [`BELOW_VULKANO_CAPABILITIES`] fails there with
//! "parse error" although the driver accepts it. Such modules are built here instead; the
//! device layer checked them structurally (`nxvk_glsl::check_module`) and knows their
//! specialization constants from that check, which is all the raw path needs. Every other
//! module keeps vulkano's path and its validation.

use crate::kernel::SpecValue;
use crate::{Error, Result};
use ash::vk;
use std::sync::Arc;
use vulkano::VulkanObject;
use vulkano::device::Device as VkDevice;
use vulkano::pipeline::cache::PipelineCache;
use vulkano::pipeline::{ComputePipeline, PipelineLayout};

/// SPIR-V capabilities newer than vulkano 0.35's grammar (BFloat16TypeKHR,
/// BFloat16DotProductKHR, BFloat16CooperativeMatrixKHR; VK_NV_cooperative_matrix2's
/// CooperativeMatrixReductionsNV to CooperativeMatrixBlockLoadsNV and TensorAddressingNV):
/// modules declaring one are built raw.
pub(crate) const BELOW_VULKANO_CAPABILITIES: [u32; 9] =
    [5116, 5117, 5118, 5430, 5431, 5432, 5433, 5434, 5439];

/// Whether a module declaring `capabilities` must be built with raw calls.
pub(crate) fn needs_raw_build(capabilities: &[u32]) -> bool {
    capabilities
        .iter()
        .any(|capability| BELOW_VULKANO_CAPABILITIES.contains(capability))
}

/// A compute pipeline, however it was built. Dispatch only needs its handle; holding the value
/// keeps the pipeline alive.
#[derive(Debug)]
pub(crate) enum Pipeline {
    Vulkano(Arc<ComputePipeline>),
    Raw(RawPipeline),
}

impl Pipeline {
    pub(crate) fn handle(&self) -> vk::Pipeline {
        match self {
            Pipeline::Vulkano(pipeline) => pipeline.handle(),
            Pipeline::Raw(pipeline) => pipeline.pipeline,
        }
    }
}

/// A pipeline created with `vkCreateComputePipelines`, destroyed when dropped.
#[derive(Debug)]
pub(crate) struct RawPipeline {
    device: Arc<VkDevice>,
    pipeline: vk::Pipeline,
}

impl Drop for RawPipeline {
    fn drop(&mut self) {
        // SAFETY: the pipeline was created on `device`, which is alive; no command buffer still
        // uses it, since every batch and replay that recorded it holds this value until its work
        // has completed.
        unsafe {
            (self.device.fns().v1_0.destroy_pipeline)(
                self.device.handle(),
                self.pipeline,
                std::ptr::null(),
            );
        }
    }
}

/// Builds `spirv`'s `main` as a compute pipeline with raw calls. `specialization` holds only
/// constants the module declares.
pub(crate) fn build_raw(
    device: &Arc<VkDevice>,
    name: &str,
    spirv: &[u32],
    specialization: &[(u32, SpecValue)],
    layout: &PipelineLayout,
    cache: &PipelineCache,
) -> Result<Pipeline> {
    const OP: &str = "build kernel";
    let fns = device.fns();
    let failed = |call: &str, result: vk::Result| Error::Vulkan {
        op: OP,
        detail: format!("kernel `{name}`: {call} returned {result:?}"),
    };
    let module_info = vk::ShaderModuleCreateInfo::default().code(spirv);
    let mut module = vk::ShaderModule::null();
    // SAFETY: the words passed nxvk-glsl's structural check (a complete module with a compute
    // entry point); the device is alive.
    let result = unsafe {
        (fns.v1_0.create_shader_module)(
            device.handle(),
            &module_info,
            std::ptr::null(),
            &mut module,
        )
    };
    if result != vk::Result::SUCCESS {
        return Err(failed("vkCreateShaderModule", result));
    }
    let (entries, data) = specialization_data(specialization);
    let specialization_info = vk::SpecializationInfo::default()
        .map_entries(&entries)
        .data(&data);
    let stage = vk::PipelineShaderStageCreateInfo::default()
        .stage(vk::ShaderStageFlags::COMPUTE)
        .module(module)
        .name(c"main")
        .specialization_info(&specialization_info);
    let pipeline_info = vk::ComputePipelineCreateInfo::default()
        .stage(stage)
        .layout(layout.handle());
    let mut pipeline = vk::Pipeline::null();
    // SAFETY: the module, layout and cache belong to `device`; the create info and the
    // specialization data it points to outlive the call; one pipeline is written.
    let result = unsafe {
        (fns.v1_0.create_compute_pipelines)(
            device.handle(),
            cache.handle(),
            1,
            &pipeline_info,
            std::ptr::null(),
            &mut pipeline,
        )
    };
    // SAFETY: a module may be destroyed once the pipelines built from it exist (or failed).
    unsafe { (fns.v1_0.destroy_shader_module)(device.handle(), module, std::ptr::null()) };
    if result != vk::Result::SUCCESS {
        return Err(failed("vkCreateComputePipelines", result));
    }
    Ok(Pipeline::Raw(RawPipeline {
        device: device.clone(),
        pipeline,
    }))
}

/// Vulkan's specialization map and data: every value takes four bytes (booleans as VkBool32).
fn specialization_data(
    specialization: &[(u32, SpecValue)],
) -> (Vec<vk::SpecializationMapEntry>, Vec<u8>) {
    let mut entries = Vec::with_capacity(specialization.len());
    let mut data = Vec::with_capacity(4 * specialization.len());
    for &(constant_id, value) in specialization {
        let word = match value {
            SpecValue::Bool(flag) => u32::from(flag),
            SpecValue::U32(number) => number,
            SpecValue::I32(number) => number as u32,
            SpecValue::F32(number) => number.to_bits(),
        };
        entries.push(vk::SpecializationMapEntry {
            constant_id,
            offset: data.len() as u32,
            size: 4,
        });
        data.extend_from_slice(&word.to_le_bytes());
    }
    (entries, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specialization_values_take_four_bytes_each() {
        let (entries, data) = specialization_data(&[
            (3, SpecValue::Bool(true)),
            (9, SpecValue::F32(1.5)),
            (4, SpecValue::I32(-2)),
        ]);
        let placed: Vec<(u32, u32, usize)> = entries
            .iter()
            .map(|entry| (entry.constant_id, entry.offset, entry.size))
            .collect();
        assert_eq!(placed, [(3, 0, 4), (9, 4, 4), (4, 8, 4)]);
        let words: Vec<u32> = data
            .chunks_exact(4)
            .map(|word| u32::from_le_bytes(word.try_into().unwrap()))
            .collect();
        assert_eq!(words, [1, 1.5f32.to_bits(), (-2i32) as u32]);
    }

    /// A module built with raw calls runs, with its specialization constants set (lavapipe
    /// parses everything, so the raw path is taken here by calling it directly).
    #[test]
    fn a_raw_built_pipeline_runs_with_its_specialization() {
        use crate::{BufferAccess, Context, Kernel};
        const BODY: &str = "layout(local_size_x = 1) in;
layout(constant_id = 5) const uint WORD = 7u;
layout(constant_id = 6) const float SCALE = 2.0;
layout(constant_id = 7) const bool NEGATE = false;
layout(buffer_reference, scalar) buffer Words { uint values[]; };
layout(push_constant, scalar) uniform Push { Words target; } push;
void main() {
    push.target.values[0] = WORD;
    push.target.values[1] = floatBitsToUint(NEGATE ? -SCALE : SCALE);
}
";
        let context = Context::new().expect("a Vulkan device (run `cargo xtask setup`)");
        let device = context.device().unwrap();
        let (words, info) = nxvk_glsl::compile_compute("raw_spec", BODY).unwrap();
        let run = |specialization: &[(u32, SpecValue)]| {
            let pipeline = build_raw(
                &device.vk_device,
                "raw_spec",
                &words,
                specialization,
                &device.layout,
                &device.pipeline_cache,
            )
            .unwrap();
            let kernel = Kernel {
                name: "raw_spec".into(),
                pipeline: Arc::new(pipeline),
                local_size: info.local_size.unwrap(),
            };
            let buffer = device.alloc("test", 8).unwrap();
            let address = buffer.device_address().to_le_bytes();
            device
                .dispatch(
                    &kernel,
                    [1, 1, 1],
                    &address,
                    &[BufferAccess::Write(&buffer)],
                )
                .unwrap();
            let bytes = device.download(&buffer, 0, 8).unwrap();
            let word = |index: usize| {
                u32::from_le_bytes(bytes[4 * index..4 * index + 4].try_into().unwrap())
            };
            (word(0), f32::from_bits(word(1)))
        };
        let specialized = [
            (5, SpecValue::U32(41)),
            (6, SpecValue::F32(1.5)),
            (7, SpecValue::Bool(true)),
        ];
        assert_eq!(run(&specialized), (41, -1.5));
        // Null arm: without values the module's defaults are written.
        assert_eq!(run(&[]), (7, 2.0));
    }

    #[test]
    fn only_newer_capabilities_need_the_raw_build() {
        // Shader, Int64, CooperativeMatrixKHR: vulkano parses these.
        assert!(!needs_raw_build(&[1, 11, 6022]));
        assert!(needs_raw_build(&[1, 6022, 5118]));
        assert!(needs_raw_build(&[1, 6022, 5433, 5439]));
    }
}

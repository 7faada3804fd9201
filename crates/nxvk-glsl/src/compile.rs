//! The one way nxvk turns GLSL into SPIR-V.

use crate::fma_contraction::decorate_fma_no_contraction;
use crate::{GlslError, ModuleInfo, check_module};
use glslang::{
    Compiler, CompilerOptions, ShaderInput, ShaderSource, ShaderStage, SourceLanguage,
    SpirvVersion, Target, VulkanVersion,
};

/// The first lines of every nxvk shader: one `#version` everywhere (glslang pays a slow first
/// compile per version) and the extensions the kernels rely on. Shader sources start after it;
/// a source must not carry its own `#version`.
pub const GLSL_PRELUDE: &str = "#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference2 : require
#extension GL_EXT_scalar_block_layout : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_ballot : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
";

/// Names what [`compile_compute`] does to glslang's output; changes whenever a source would
/// compile to different words (a new patch), so caches of compiled modules key on it.
pub const COMPILE_REVISION: &str = "fma-no-contraction";

/// Extensions whose instructions glslang emits only for SPIR-V 1.6: a shader enabling one
/// compiles for Vulkan 1.3 / SPIR-V 1.6, every other shader for Vulkan 1.2 / SPIR-V 1.5 (what
/// every device nxvk opens accepts). Only devices of Vulkan 1.3 that offer the extension are
/// given such a shader.
const SPIRV_1_6_EXTENSIONS: [&str; 1] = ["GL_NV_cooperative_matrix2"];

/// Compiles one compute shader (the body after [`GLSL_PRELUDE`]) for Vulkan 1.2 / SPIR-V 1.5
/// (1.3 / 1.6 for the extensions in `SPIRV_1_6_EXTENSIONS`), marks its fmas exact
/// (`fma_contraction`) and checks the result. `name` only labels error messages.
pub fn compile_compute(name: &str, body: &str) -> Result<(Vec<u32>, ModuleInfo), GlslError> {
    let words = decorate_fma_no_contraction(&glslang_words(name, body)?);
    let info = check_module(name, &words)?;
    Ok((words, info))
}

/// The module glslang writes for `body`, unpatched and unchecked.
pub(crate) fn glslang_words(name: &str, body: &str) -> Result<Vec<u32>, GlslError> {
    let compiler = Compiler::acquire().ok_or(GlslError::CompilerUnavailable)?;
    let source = ShaderSource::from(format!("{GLSL_PRELUDE}{body}"));
    let needs_spirv_1_6 = SPIRV_1_6_EXTENSIONS
        .iter()
        .any(|extension| body.contains(&format!("#extension {extension} ")));
    let target = if needs_spirv_1_6 {
        Target::Vulkan {
            version: VulkanVersion::Vulkan1_3,
            spirv_version: SpirvVersion::SPIRV1_6,
        }
    } else {
        Target::Vulkan {
            version: VulkanVersion::Vulkan1_2,
            spirv_version: SpirvVersion::SPIRV1_5,
        }
    };
    let options = CompilerOptions {
        source_language: SourceLanguage::GLSL,
        target,
        ..CompilerOptions::default()
    };
    let compile_error = |log: String| GlslError::Compile {
        name: name.to_owned(),
        log,
    };
    let input = ShaderInput::new(&source, ShaderStage::Compute, &options, None, None)
        .map_err(|error| compile_error(error.to_string()))?;
    let shader = compiler
        .create_shader(input)
        .map_err(|error| compile_error(error.to_string()))?;
    shader
        .compile()
        .map_err(|error| compile_error(error.to_string()))
}

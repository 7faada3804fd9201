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

/// Compiles one compute shader (the body after [`GLSL_PRELUDE`]) for Vulkan 1.2 / SPIR-V 1.5,
/// marks its fmas exact (`fma_contraction`) and checks the result. `name` only labels error
/// messages.
pub fn compile_compute(name: &str, body: &str) -> Result<(Vec<u32>, ModuleInfo), GlslError> {
    let words = decorate_fma_no_contraction(&glslang_words(name, body)?);
    let info = check_module(name, &words)?;
    Ok((words, info))
}

/// The module glslang writes for `body`, unpatched and unchecked.
pub(crate) fn glslang_words(name: &str, body: &str) -> Result<Vec<u32>, GlslError> {
    let compiler = Compiler::acquire().ok_or(GlslError::CompilerUnavailable)?;
    let source = ShaderSource::from(format!("{GLSL_PRELUDE}{body}"));
    let options = CompilerOptions {
        source_language: SourceLanguage::GLSL,
        target: Target::Vulkan {
            version: VulkanVersion::Vulkan1_2,
            spirv_version: SpirvVersion::SPIRV1_5,
        },
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

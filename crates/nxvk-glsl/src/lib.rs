//! GLSL compute shaders to SPIR-V, for nxvk's build scripts and its run-time code generator.
//!
//! Both the kernel catalog (compiled in `nxvk-kernels`' build script) and the shaders that
//! `nxvk-fusion` generates at run time go through [`compile_compute`], so every module is built
//! with the same `#version`, target environment and extensions. This crate knows nothing about
//! Vulkan devices; it depends on `glslang` alone so that build scripts can use it.
//!
//! **Invariant:** every module that leaves this crate has passed [`check_module`].

mod check;
mod compile;
mod float_controls;
mod fma_contraction;
mod spirv_words;

pub use check::{ModuleInfo, check_module};
pub use compile::{COMPILE_REVISION, GLSL_PRELUDE, compile_compute};
pub use float_controls::request_denorm_preserve;

/// Why a shader could not be turned into a usable SPIR-V module.
#[derive(Debug, thiserror::Error)]
pub enum GlslError {
    /// glslang could not start (it failed to initialise its process state).
    #[error("the GLSL compiler could not be initialised")]
    CompilerUnavailable,
    /// The GLSL did not compile; `log` is glslang's message with line numbers.
    #[error("GLSL shader `{name}` failed to compile:\n{log}")]
    Compile { name: String, log: String },
    /// The SPIR-V words are not a well-formed compute module.
    #[error("SPIR-V module `{name}` is malformed: {problem}")]
    Malformed { name: String, problem: String },
}

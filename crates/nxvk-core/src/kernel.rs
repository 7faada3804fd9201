//! Compute pipelines ("kernels") and their in-memory cache.
//!
//! Every kernel shares one pipeline layout: no descriptor sets, one push-constant range as large
//! as the device allows. Kernels reach their data through device addresses passed in push
//! constants (or in a parameter block whose address is pushed), so there is nothing to bind
//! per dispatch (DESIGN.md, decision 4). Kernels must keep their push constants within 128
//! bytes, the smallest maximum Vulkan allows, to run everywhere.

use crate::pipeline::Pipeline;
use std::sync::Arc;
use vulkano::shader::SpecializationConstant;

/// Bytes of push constants every device accepts (Vulkan's minimum maximum).
pub const PORTABLE_PUSH_CONSTANT_BYTES: usize = 128;

/// A compiled compute pipeline with what callers need to launch it.
#[derive(Debug)]
pub struct Kernel {
    pub(crate) name: String,
    pub(crate) pipeline: Arc<Pipeline>,
    pub(crate) local_size: [u32; 3],
}

impl Kernel {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The workgroup size the shader declares.
    pub fn local_size(&self) -> [u32; 3] {
        self.local_size
    }

    /// Invocations per workgroup.
    pub fn workgroup_invocations(&self) -> u32 {
        self.local_size.iter().product()
    }
}

/// A specialization constant value, by constant id.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SpecValue {
    Bool(bool),
    U32(u32),
    I32(i32),
    F32(f32),
}

impl SpecValue {
    pub(crate) fn to_vulkano(self) -> SpecializationConstant {
        match self {
            SpecValue::Bool(value) => SpecializationConstant::Bool(value),
            SpecValue::U32(value) => SpecializationConstant::U32(value),
            SpecValue::I32(value) => SpecializationConstant::I32(value),
            SpecValue::F32(value) => SpecializationConstant::F32(value),
        }
    }

    /// Bits that identify the value in cache keys (f32 by its bit pattern).
    pub(crate) fn key_bits(self) -> (u8, u32) {
        match self {
            SpecValue::Bool(value) => (0, u32::from(value)),
            SpecValue::U32(value) => (1, value),
            SpecValue::I32(value) => (2, value as u32),
            SpecValue::F32(value) => (3, value.to_bits()),
        }
    }
}

/// The in-memory cache key: SPIR-V content hash plus the specialization.
pub(crate) type KernelKey = (blake3::Hash, Vec<(u32, (u8, u32))>);

pub(crate) fn kernel_key(spirv: &[u32], specialization: &[(u32, SpecValue)]) -> KernelKey {
    let mut hasher = blake3::Hasher::new();
    for word in spirv {
        hasher.update(&word.to_le_bytes());
    }
    let mut spec: Vec<_> = specialization
        .iter()
        .map(|&(id, value)| (id, value.key_bits()))
        .collect();
    spec.sort_unstable();
    (hasher.finalize(), spec)
}

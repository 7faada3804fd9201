//! The compiled catalog: the SPIR-V the build script generated from the op table, with one named
//! constant per kernel (`ADD_F32`, `AS_TYPE_S32_F32`, ...) and lookups by op and dtype.
//!
//! Kernel names are `<op>_<dtype>` for ops (the dtype is the compute type the operands are cast
//! to first) and `as_type_<from>_<to>` for casts.

use crate::kernel_knob::KernelKnob;
use crate::op_table::{BinaryOp, ComplexElem, Elem, UnaryOp, ValueType};
use nxvk_core::{Capabilities, DType, Device, Kernel, Result};
use std::sync::Arc;

/// One precompiled kernel of the catalog.
#[derive(Debug)]
pub struct CatalogKernel {
    pub name: &'static str,
    /// SPIR-V words as little-endian bytes (`include_bytes!` guarantees no alignment).
    pub spirv: &'static [u8],
    /// Whether it computes in f64 (f64 kernels, and f32 ones whose helpers round f64 results).
    pub float64: bool,
}

impl CatalogKernel {
    /// The pipeline for this kernel on `device` (built once, then cached by the device by the
    /// module's address, so a dispatch does not rehash it).
    pub fn load(&self, device: &Device) -> Result<Arc<Kernel>> {
        device.static_kernel(self.name, self.spirv)
    }

    /// True when a device with `capabilities` can run it or its [`portable`](Self::for_device)
    /// twin (the other features every kernel may use are checked by [`device_supports`]).
    pub fn runs_on(&self, capabilities: &Capabilities) -> bool {
        !self.float64 || capabilities.shader_float64 || self.portable().is_some()
    }

    /// The kernel to run on `device`: itself, or where [`f32_math`] says
    /// [`F32Math::F32Only`], the twin built with the f32 forms of the refined helpers
    /// (`codegen::F32_ONLY_MATH_DEFINE`), if it has one.
    pub fn for_device(&self, device: &Device) -> &CatalogKernel {
        // Every eager launch asks: the knob is looked up only for kernels that compute in f64.
        if self.float64 && f32_math(device) == F32Math::F32Only {
            self.portable().unwrap_or(self)
        } else {
            self
        }
    }

    fn portable(&self) -> Option<&'static CatalogKernel> {
        PORTABLE_KERNELS
            .binary_search_by(|(name, _)| (*name).cmp(self.name))
            .ok()
            .map(|position| PORTABLE_KERNELS[position].1)
    }
}

/// How f32 kernels compute log, tanh, sigmoid, erf and the other refined helpers
/// (`codegen::F64_REFINED_HELPERS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum F32Math {
    /// In f64, rounded once (1 ulp).
    ViaF64,
    /// In f32 alone (3 to 7 ulps; `accuracy::ulp_bound`).
    F32Only,
}

/// How f32 kernels compute on `device`: in f64 where it has shaderFloat64 and the
/// `f32_math_via_f64` knob is on (it is off by default: `kernel_knob.rs`).
pub fn f32_math(device: &Device) -> F32Math {
    if device.capabilities().shader_float64 && KernelKnob::F32MathViaF64.is_on(device) {
        F32Math::ViaF64
    } else {
        F32Math::F32Only
    }
}

/// The kernel of a generated `source` that may call the refined helpers (a fused kernel, a
/// GEMM epilogue): after `codegen::F32_ONLY_MATH_DEFINE` where [`f32_math`] says
/// [`F32Math::F32Only`], so that it computes them as this device's catalog kernels do.
pub fn kernel_for_device(device: &Device, name: &str, source: &str) -> Result<Arc<Kernel>> {
    match f32_math(device) {
        F32Math::ViaF64 => device.kernel_from_glsl(name, source, &[]),
        F32Math::F32Only => {
            let source = format!("{}{source}", crate::codegen::F32_ONLY_MATH_DEFINE);
            device.kernel_from_glsl(name, &source, &[])
        }
    }
}

include!(concat!(env!("OUT_DIR"), "/catalog.rs"));

/// The kernel of a binary op on compute type `elem`, if the catalog has one.
pub fn binary_kernel(op: BinaryOp, elem: Elem) -> Option<&'static CatalogKernel> {
    BINARY_KERNELS[op.index()][elem.index()]
}

/// The kernel of a unary op on compute type `elem`, if the catalog has one.
pub fn unary_kernel(op: UnaryOp, elem: Elem) -> Option<&'static CatalogKernel> {
    UNARY_KERNELS[op.index()][elem.index()]
}

/// The cast kernel from `from` to `to` (none when they are equal).
pub fn cast_kernel(from: Elem, to: Elem) -> Option<&'static CatalogKernel> {
    CAST_KERNELS[from.index()][to.index()]
}

/// The kernel of a binary op on compute type `value` (real or complex), if the catalog has one.
pub fn binary_value_kernel(op: BinaryOp, value: ValueType) -> Option<&'static CatalogKernel> {
    match value {
        ValueType::Real(elem) => binary_kernel(op, elem),
        ValueType::Complex(complex) => COMPLEX_BINARY_KERNELS[op.index()][complex.index()],
    }
}

/// The kernel of a unary op on compute type `value` (real or complex), if the catalog has one.
pub fn unary_value_kernel(op: UnaryOp, value: ValueType) -> Option<&'static CatalogKernel> {
    match value {
        ValueType::Real(elem) => unary_kernel(op, elem),
        ValueType::Complex(complex) => COMPLEX_UNARY_KERNELS[op.index()][complex.index()],
    }
}

/// The cast kernel from `from` to `to`, real or complex (none when they are equal).
pub fn value_cast_kernel(from: ValueType, to: ValueType) -> Option<&'static CatalogKernel> {
    match (from, to) {
        (ValueType::Real(from), ValueType::Real(to)) => cast_kernel(from, to),
        _ => COMPLEX_CAST_KERNELS[from.index()][to.index()],
    }
}

/// The iota/eye kernel writing `elem`.
pub fn iota_kernel(elem: Elem) -> &'static CatalogKernel {
    IOTA_KERNELS[elem.index()]
}

/// The select kernel moving elements of `bytes` bytes (1, 2, 4, 8 or 16).
pub fn select_kernel(bytes: usize) -> Option<&'static CatalogKernel> {
    crate::codegen::SELECT_BYTES
        .iter()
        .position(|&size| size == bytes)
        .map(|slot| SELECT_KERNELS[slot])
}

/// The kernel of scan pass `pass` for `op` on `value`, if the catalog has one (complex
/// numbers have sums and products only).
pub fn scan_kernel(
    op: crate::scan::ScanOp,
    value: ValueType,
    pass: crate::scan_codegen::ScanPass,
) -> Option<&'static CatalogKernel> {
    SCAN_KERNELS[pass.index()][op.index()][value.index()]
}

/// The catalog's element type for an Nx dtype; `None` for complex, sub-byte and 8-bit floats.
pub const fn elem_of(dtype: DType) -> Option<Elem> {
    Some(match dtype {
        DType::S8 => Elem::S8,
        DType::S16 => Elem::S16,
        DType::S32 => Elem::S32,
        DType::S64 => Elem::S64,
        DType::U8 => Elem::U8,
        DType::U16 => Elem::U16,
        DType::U32 => Elem::U32,
        DType::U64 => Elem::U64,
        DType::F16 => Elem::F16,
        DType::BF16 => Elem::BF16,
        DType::F32 => Elem::F32,
        DType::F64 => Elem::F64,
        DType::S2
        | DType::S4
        | DType::U2
        | DType::U4
        | DType::F8E5M2
        | DType::F8E4M3FN
        | DType::C64
        | DType::C128 => return None,
    })
}

/// The catalog's value type for an Nx dtype: an [`Elem`] or a complex type; `None` for
/// sub-byte integers and 8-bit floats.
pub const fn value_of(dtype: DType) -> Option<ValueType> {
    match dtype {
        DType::C64 => Some(ValueType::Complex(ComplexElem::C64)),
        DType::C128 => Some(ValueType::Complex(ComplexElem::C128)),
        other => match elem_of(other) {
            Some(elem) => Some(ValueType::Real(elem)),
            None => None,
        },
    }
}

/// The Nx dtype of a catalog element type.
pub const fn dtype_of(elem: Elem) -> DType {
    match elem {
        Elem::S8 => DType::S8,
        Elem::S16 => DType::S16,
        Elem::S32 => DType::S32,
        Elem::S64 => DType::S64,
        Elem::U8 => DType::U8,
        Elem::U16 => DType::U16,
        Elem::U32 => DType::U32,
        Elem::U64 => DType::U64,
        Elem::F16 => DType::F16,
        Elem::BF16 => DType::BF16,
        Elem::F32 => DType::F32,
        Elem::F64 => DType::F64,
    }
}

/// True when the device has the shader features kernels on `value` need: complex kernels of
/// both widths divide and take square roots in f64 (`glsl_complex.glsl`).
pub fn device_supports_value(capabilities: &Capabilities, value: ValueType) -> bool {
    match value {
        ValueType::Real(elem) => device_supports(capabilities, elem),
        ValueType::Complex(_) => device_supports(capabilities, Elem::F64),
    }
}

/// True when the device has the shader features kernels on `elem` need (the template widens
/// narrow integers to 32 bits but loads and stores them natively; f64 kernels also use 64-bit
/// integers for exact fmod and casts).
pub fn device_supports(capabilities: &Capabilities, elem: Elem) -> bool {
    let base = capabilities.storage_8bit
        && capabilities.shader_int8
        && capabilities.storage_16bit
        && capabilities.shader_int16
        && capabilities.shader_int64;
    base && match elem {
        Elem::F16 => capabilities.shader_float16,
        Elem::F64 => capabilities.shader_float64,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The capabilities a kernel's SPIR-V declares (`OpCapability`, opcode 17).
    fn declared_capabilities(kernel: &CatalogKernel) -> Vec<u32> {
        let words: Vec<u32> = kernel
            .spirv
            .chunks_exact(4)
            .map(|bytes| u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
            .collect();
        let mut capabilities = Vec::new();
        let mut at = 5; // past the header
        while at < words.len() {
            let (opcode, length) = (words[at] & 0xFFFF, (words[at] >> 16) as usize);
            if opcode == 17 {
                capabilities.push(words[at + 1]);
            }
            at += length.max(1);
        }
        capabilities
    }

    #[test]
    fn f32_arithmetic_kernels_do_not_declare_float64() {
        const FLOAT64: u32 = 10;
        // A helper's f64 global (not only its functions) would put Float64 into every float
        // kernel, which a device without shaderFloat64 then cannot load.
        let add = binary_kernel(BinaryOp::Add, Elem::F32).unwrap();
        assert!(!declared_capabilities(add).contains(&FLOAT64));
        // Null arm: the f64 kernel declares it.
        let add_f64 = binary_kernel(BinaryOp::Add, Elem::F64).unwrap();
        assert!(declared_capabilities(add_f64).contains(&FLOAT64));
    }
}

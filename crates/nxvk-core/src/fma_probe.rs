//! Whether the driver fuses `fma()`, for f32 and for f64: probed once per device, published
//! to kernels as specialization constants.
//!
//! Vulkan does not promise that GLSL's `fma(a, b, c)` rounds once, even under NoContraction:
//! NVIDIA's compiler emits a fused multiply-add, lavapipe (Mesa 22) a rounded multiply and a
//! rounded add. Kernels that need exact products (the catalog's correctly rounded f32
//! division) declare `layout(constant_id = FUSED_FMA_CONSTANT_ID) const bool NXVK_FUSED_FMA`
//! and take an fma path or an exact split-product path on it (the f64 double-double products
//! of `glsl_f64_math.glsl` likewise on `NXVK_FUSED_FMA_F64`); the device sets each constant in
//! every module that declares it. Probing the behaviour, rather than naming drivers, keeps the
//! rule honest on drivers nobody has tried. Rejected: assuming fused fmas everywhere (wrong
//! quotients on lavapipe) and the split product everywhere (about four times the work on the
//! GPUs that fuse).

use crate::{BufferAccess, Device, Result};
use std::sync::{Arc, OnceLock};

/// The specialization constant id of `NXVK_FUSED_FMA` (f32 `fma()`).
pub const FUSED_FMA_CONSTANT_ID: u32 = 7000;

/// The specialization constant id of `NXVK_FUSED_FMA_F64` (f64 `fma()`; false on devices
/// without shaderFloat64). Probed apart from f32: nothing promises a driver treats the widths
/// alike.
pub const FUSED_FMA_F64_CONSTANT_ID: u32 = 7001;

/// Which widths of the driver's `fma()` round once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FusedFma {
    pub f32: bool,
    pub f64: bool,
}

/// One invocation computes fma(x, x, z) from memory (no constant folding) in `scalar`
/// (`float` or `double`, `bytes` wide). For f32, x = 1 + 2^-12 and z = -(1 + 2^-11): one
/// rounding leaves the exact 2^-24, a rounded multiply first leaves 0; for f64, x = 1 + 2^-27
/// and z = -(1 + 2^-26) leave 2^-54 or 0.
fn probe_shader(scalar: &str, bytes: usize) -> String {
    format!(
        "layout(local_size_x = 1) in;
layout(buffer_reference, scalar, buffer_reference_align = {bytes}) buffer Values {{ {scalar} v[3]; }};
layout(push_constant, scalar) uniform Push {{ Values values; }} push;
void main() {{
    precise {scalar} result = fma(push.values.v[0], push.values.v[0], push.values.v[1]);
    push.values.v[2] = result;
}}
"
    )
}

/// Probes each width `device` can run (f64 only with shaderFloat64).
pub(crate) fn probe_fused_fma(device: &Arc<Device>) -> Result<FusedFma> {
    static MODULE_F32: OnceLock<Vec<u32>> = OnceLock::new();
    static MODULE_F64: OnceLock<Vec<u32>> = OnceLock::new();
    let x = 1.0 + 1.0 / 4096.0_f32;
    let f32_inputs = [x, -(1.0 + 1.0 / 2048.0), f32::NAN].map(f32::to_le_bytes);
    let f32 = run_probe(
        device,
        &MODULE_F32,
        "float",
        &f32_inputs.concat(),
        &2f32.powi(-24).to_le_bytes(),
    )?;
    let f64 = if device.capabilities().shader_float64 {
        let x = 1.0 + 2f64.powi(-27);
        let f64_inputs = [x, -(1.0 + 2f64.powi(-26)), f64::NAN].map(f64::to_le_bytes);
        run_probe(
            device,
            &MODULE_F64,
            "double",
            &f64_inputs.concat(),
            &2f64.powi(-54).to_le_bytes(),
        )?
    } else {
        false
    };
    Ok(FusedFma { f32, f64 })
}

/// Runs the probe in `scalar` over `inputs` (x, z, result slot): whether the result's bytes
/// are `fused`, the once-rounded value. The module is compiled once per process and its
/// pipeline built outside the kernel caches, so it shows in no counter and on no disk.
fn run_probe(
    device: &Arc<Device>,
    module: &OnceLock<Vec<u32>>,
    scalar: &str,
    inputs: &[u8],
    fused: &[u8],
) -> Result<bool> {
    const OP: &str = "fma probe";
    let words = match module.get() {
        Some(words) => words,
        None => {
            let source = probe_shader(scalar, fused.len());
            let (words, _) = nxvk_glsl::compile_compute("fma_probe", &source)?;
            module.get_or_init(|| words)
        }
    };
    let buffer = device.alloc(OP, inputs.len() as u64)?;
    device.upload(&buffer, 0, inputs)?;
    let info = nxvk_glsl::check_module("fma_probe", words)?;
    let kernel = device.build_kernel("fma_probe", words, &[], &info)?;
    device.dispatch(
        &kernel,
        [1, 1, 1],
        &buffer.device_address().to_le_bytes(),
        &[BufferAccess::Write(&buffer)],
    )?;
    let width = fused.len() as u64;
    Ok(device.download(&buffer, 2 * width, width)? == fused)
}

//! Whether the driver fuses `fma()`: probed once per device, published to kernels as a
//! specialization constant.
//!
//! Vulkan does not promise that GLSL's `fma(a, b, c)` rounds once, even under NoContraction:
//! NVIDIA's compiler emits a fused multiply-add, lavapipe (Mesa 22) a rounded multiply and a
//! rounded add. Kernels that need exact products (the catalog's correctly rounded f32
//! division) declare `layout(constant_id = FUSED_FMA_CONSTANT_ID) const bool NXVK_FUSED_FMA`
//! and take an fma path or an exact split-product path on it; the device sets the constant in
//! every module that declares it. Probing the behaviour, rather than naming drivers, keeps the
//! rule honest on drivers nobody has tried. Rejected: assuming fused fmas everywhere (wrong
//! quotients on lavapipe) and the split product everywhere (about four times the work on the
//! GPUs that fuse).

use crate::{BufferAccess, Device, Result};
use std::sync::{Arc, OnceLock};

/// The specialization constant id of `NXVK_FUSED_FMA`.
pub const FUSED_FMA_CONSTANT_ID: u32 = 7000;

/// One invocation computes fma(x, x, z) from memory (no constant folding) for x = 1 + 2^-12
/// and z = -(1 + 2^-11): one rounding leaves the exact 2^-24, a rounded multiply first
/// leaves 0.
const PROBE_SHADER: &str = "layout(local_size_x = 1) in;
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer Values { float v[3]; };
layout(push_constant, scalar) uniform Push { Values values; } push;
void main() {
    precise float result = fma(push.values.v[0], push.values.v[0], push.values.v[1]);
    push.values.v[2] = result;
}
";

const PROBE_INPUTS: [f32; 3] = [1.0 + 1.0 / 4096.0, -(1.0 + 1.0 / 2048.0), f32::NAN];

/// True when `device`'s fma rounds once. The probe's module is compiled once per process and
/// its pipeline built outside the kernel caches, so it shows in no counter and on no disk.
pub(crate) fn probe_fused_fma(device: &Arc<Device>) -> Result<bool> {
    const OP: &str = "fma probe";
    static MODULE: OnceLock<Vec<u32>> = OnceLock::new();
    let words = match MODULE.get() {
        Some(words) => words,
        None => {
            let (words, _) = nxvk_glsl::compile_compute("fma_probe", PROBE_SHADER)?;
            MODULE.get_or_init(|| words)
        }
    };
    let bytes: Vec<u8> = PROBE_INPUTS
        .iter()
        .flat_map(|value| value.to_le_bytes())
        .collect();
    let buffer = device.alloc(OP, bytes.len() as u64)?;
    device.upload(&buffer, 0, &bytes)?;
    let kernel = device.build_kernel("fma_probe", words, &[], Some([1, 1, 1]))?;
    device.dispatch(
        &kernel,
        [1, 1, 1],
        &buffer.device_address().to_le_bytes(),
        &[BufferAccess::Write(&buffer)],
    )?;
    let result = device.download(&buffer, 8, 4)?;
    let result = f32::from_le_bytes([result[0], result[1], result[2], result[3]]);
    Ok(result == 1.0 / 16_777_216.0)
}

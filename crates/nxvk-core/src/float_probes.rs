//! What the driver's f32 arithmetic does, probed once per device and published to kernels as
//! specialization constants. Probing the behaviour, rather than naming drivers, keeps the
//! rules honest on drivers nobody has tried.
//!
//! - **Fused fma**: Vulkan does not promise that GLSL's `fma(a, b, c)` rounds once, even under
//!   NoContraction: NVIDIA's compiler emits a fused multiply-add, lavapipe (Mesa 22) a rounded
//!   multiply and a rounded add. Kernels that need exact products (the catalog's correctly
//!   rounded f32 division) declare `layout(constant_id = FUSED_FMA_CONSTANT_ID) const bool
//!   NXVK_FUSED_FMA` and take an fma path or an exact split-product path on it. Rejected:
//!   assuming fused fmas everywhere (wrong quotients on lavapipe) and the split product
//!   everywhere (about four times the work on the GPUs that fuse).
//! - **Flushed f32 subnormals**: a driver may flush subnormal operands of f32 instructions to
//!   zero (NVIDIA's does, and cannot be asked otherwise where it reports
//!   shaderDenormPreserveFloat32 = false). The catalog's f32 add, subtract and multiply declare
//!   `NXVK_FLUSHES_F32` (`FLUSHES_F32_CONSTANT_ID`) and take an exact path for subnormal
//!   operands where it is true; elsewhere the check folds away. Rejected: checking on every
//!   device (a cost lavapipe and any preserving driver need not pay).
//!
//! Modules that declare a constant get the device's value unless the caller set it.

use crate::{BufferAccess, Device, Result};
use std::sync::{Arc, OnceLock};

/// The specialization constant id of `NXVK_FUSED_FMA`.
pub const FUSED_FMA_CONSTANT_ID: u32 = 7000;
/// The specialization constant id of `NXVK_FLUSHES_F32`.
pub const FLUSHES_F32_CONSTANT_ID: u32 = 7001;

/// The probed behaviour of a device's f32 arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FloatBehaviour {
    /// `fma()` rounds once.
    pub fused_fma: bool,
    /// Subnormal operands of f32 instructions are flushed to zero.
    pub flushes_f32: bool,
}

/// One invocation computes, from memory (no constant folding), fma(x, x, z) for x = 1 + 2^-12
/// and z = -(1 + 2^-11), where one rounding leaves the exact 2^-24 and a rounded multiply
/// first leaves 0; and 2^-149 * 2^100, which is 2^-49 unless the subnormal operand is flushed.
const PROBE_SHADER: &str = "layout(local_size_x = 1) in;
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer Values { float v[6]; };
layout(push_constant, scalar) uniform Push { Values values; } push;
void main() {
    precise float fused = fma(push.values.v[0], push.values.v[0], push.values.v[1]);
    precise float product = push.values.v[2] * push.values.v[3];
    push.values.v[4] = fused;
    push.values.v[5] = product;
}
";

fn probe_inputs() -> [f32; 6] {
    [
        1.0 + 1.0 / 4096.0,
        -(1.0 + 1.0 / 2048.0),
        f32::from_bits(1),
        2f32.powi(100),
        f32::NAN,
        f32::NAN,
    ]
}

/// How `device`'s f32 arithmetic behaves. The probe's module is compiled once per process and
/// its pipeline built outside the kernel caches, so it shows in no counter and on no disk.
pub(crate) fn probe(device: &Arc<Device>) -> Result<FloatBehaviour> {
    const OP: &str = "float probe";
    static MODULE: OnceLock<Vec<u32>> = OnceLock::new();
    let words = match MODULE.get() {
        Some(words) => words,
        None => {
            let (words, _) = nxvk_glsl::compile_compute("float_probe", PROBE_SHADER)?;
            MODULE.get_or_init(|| words)
        }
    };
    let bytes: Vec<u8> = probe_inputs()
        .iter()
        .flat_map(|value| value.to_le_bytes())
        .collect();
    let buffer = device.alloc(OP, bytes.len() as u64)?;
    device.upload(&buffer, 0, &bytes)?;
    let kernel = device.build_kernel("float_probe", words, &[], Some([1, 1, 1]))?;
    device.dispatch(
        &kernel,
        [1, 1, 1],
        &buffer.device_address().to_le_bytes(),
        &[BufferAccess::Write(&buffer)],
    )?;
    let results = device.download(&buffer, 16, 8)?;
    let word = |at: usize| {
        u32::from_le_bytes([
            results[at],
            results[at + 1],
            results[at + 2],
            results[at + 3],
        ])
    };
    Ok(FloatBehaviour {
        fused_fma: word(0) == (1.0f32 / 16_777_216.0).to_bits(),
        flushes_f32: word(4) != 2f32.powi(-49).to_bits(),
    })
}

//! Shared helpers of the core test binaries: one context per binary, the test kernels, and the
//! comparison helpers (each with a null-arm test in `comparisons.rs`).
#![allow(dead_code)] // Each test binary uses a different subset of these helpers.

use nxvk_core::{BufferAccess, Context, Device, Kernel, Tensor};
use std::sync::{Arc, OnceLock};

/// The context every test in a binary shares (opening a device costs tens of milliseconds).
pub fn context() -> &'static Context {
    static CONTEXT: OnceLock<Context> = OnceLock::new();
    CONTEXT.get_or_init(|| Context::new().expect("a Vulkan device (run `cargo xtask setup`)"))
}

pub fn device() -> Arc<Device> {
    context().device().expect("device")
}

/// A device of its own, for tests that assert on counters or memory while others run.
pub fn private_device() -> Arc<Device> {
    Context::new()
        .and_then(|context| context.device())
        .expect("a Vulkan device (run `cargo xtask setup`)")
}

/// `target[i] = source[i] + 1` over `count` f32 elements, with a grid-stride loop so that any
/// count fits the workgroup-count limit. Byte offsets are computed in 64 bits: indexing an
/// array with a 32-bit index made the H200's driver wrap the offset past 4 GiB.
pub const ADD_ONE: &str = "layout(local_size_x = 64) in;
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer Float { float value; };
layout(push_constant, scalar) uniform Push { uint64_t source; uint64_t target; uint count; } push;
void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint index = gl_GlobalInvocationID.x; index < push.count; index += stride) {
        uint64_t offset = uint64_t(index) * 4ul;
        Float(push.target + offset).value = Float(push.source + offset).value + 1.0;
    }
}
";

/// Spins until word 0 of its buffer becomes non-zero, which nothing ever makes it: on a GPU
/// this shader never ends. The atomic read is a side effect, so no compiler may delete the
/// loop. Mesa 22's llvmpipe caps each invocation at 65,535 loop iterations in all (gallivm's
/// loop limiter; about 1.2 ms an invocation here), so the launch of [`SPIN_GROUPS`] still
/// runs for days there. Lavapipe runs all devices of one instance on one thread pool, which
/// stays busy: the context rebuilds on a fresh instance (see `adapter::reopen`).
pub const SPIN_UNTIL_FLAG: &str = "layout(local_size_x = 1) in;
layout(buffer_reference, scalar) buffer Flag { uint value; };
layout(push_constant, scalar) uniform Push { Flag flag; } push;
void main() {
    while (atomicAdd(push.flag.value, 0u) == 0u) {}
}
";

/// Workgroups to launch [`SPIN_UNTIL_FLAG`] with.
pub const SPIN_GROUPS: [u32; 3] = [65_535, 65_535, 1];

pub fn add_one_kernel(device: &Device) -> Arc<Kernel> {
    device
        .kernel_from_glsl("add_one", ADD_ONE, &[])
        .expect("add_one compiles")
}

/// Records `target = source + 1` for f32 tensors of equal, contiguous shape.
pub fn add_one(device: &Device, kernel: &Kernel, source: &Tensor, target: &Tensor) {
    let count = source.n_elements() as u32;
    let mut push = Vec::with_capacity(24);
    push.extend_from_slice(&source.device_address().unwrap().to_le_bytes());
    push.extend_from_slice(&target.device_address().unwrap().to_le_bytes());
    push.extend_from_slice(&count.to_le_bytes());
    push.extend_from_slice(&0u32.to_le_bytes());
    let groups = count.div_ceil(64).clamp(1, 4096);
    device
        .dispatch(
            kernel,
            [groups, 1, 1],
            &push,
            &[
                BufferAccess::Read(source.buffer()),
                BufferAccess::Write(target.buffer()),
            ],
        )
        .expect("dispatch add_one");
}

/// Equal bytes, or a message naming the first difference.
pub fn same_bytes(label: &str, actual: &[u8], expected: &[u8]) -> Result<(), String> {
    if actual.len() != expected.len() {
        return Err(format!(
            "{label}: {} bytes, expected {}",
            actual.len(),
            expected.len()
        ));
    }
    match actual.iter().zip(expected).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(index) => Err(format!(
            "{label}: byte {index} is {:#04x}, expected {:#04x}",
            actual[index], expected[index]
        )),
    }
}

/// Equal f32 values bit for bit, or a message naming the first difference.
pub fn same_f32(label: &str, actual: &[f32], expected: &[f32]) -> Result<(), String> {
    if actual.len() != expected.len() {
        return Err(format!(
            "{label}: {} values, expected {}",
            actual.len(),
            expected.len()
        ));
    }
    match actual
        .iter()
        .zip(expected)
        .position(|(a, b)| a.to_bits() != b.to_bits())
    {
        None => Ok(()),
        Some(index) => Err(format!(
            "{label}: element {index} is {}, expected {}",
            actual[index], expected[index]
        )),
    }
}

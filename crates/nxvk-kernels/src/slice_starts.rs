//! Slice starts given as a tensor (Nx's `slice` and `put_slice` accept tensors as start
//! indices): a one-invocation kernel reads the starts on the device, clamps each to
//! `0..=size - length` as Nx does so that the window fits, and writes the 64-bit address of the
//! window's first element into an 8-byte buffer, from which the copy kernels take their base
//! address (`movement_codegen::CopyVariant`'s indirect addresses).
//!
//! Nothing is read back to the host, so a slice at a position computed on the GPU stays in the
//! command stream; the alternative, reading the starts back and slicing with known offsets,
//! costs a full submit-and-wait round trip per slice (about 75 us on the H200). The kernel is
//! generated per start type (any integer type, converted on load) and compiled at run time.

use crate::catalog::elem_of;
use crate::codegen::{compute_type, load, storage_bytes, storage_type};
use crate::op_table::Elem;
use crate::operand_errors::bad_operands;
use nxvk_core::{BufferAccess, DeviceBuffer, Result, Tensor};
use std::fmt::Write as _;

/// Bytes of the kernel's push constants: the starts' address, the result's address, the
/// parameter block's address, the view's base address, the starts' element stride, the rank.
const PUSH_CONSTANT_BYTES: usize = 40;

/// Byte offset of the parameter block's address in the push constants.
const PARAMS_ADDRESS_OFFSET: usize = 16;

/// Checks that `starts` is a rank-1 integer tensor of `rank` elements on `operand`'s device,
/// and returns its element type.
pub(crate) fn check_starts(
    op: &'static str,
    operand: &Tensor,
    starts: &Tensor,
    rank: usize,
) -> Result<Elem> {
    let elem = elem_of(starts.dtype()).filter(|elem| !elem.is_float());
    match elem {
        Some(elem)
            if starts.shape() == [rank]
                && std::sync::Arc::ptr_eq(starts.device(), operand.device()) =>
        {
            Ok(elem)
        }
        _ => Err(bad_operands(
            op,
            &[operand, starts],
            format!(
                "start indices must be a rank-1 tensor of {rank} integers (8 to 64 bits) on the operand's device"
            ),
        )),
    }
}

/// A fresh 8-byte buffer that will hold (once the recorded work runs) the address of the
/// window's first element in `tensor`'s buffer: logical element zero of the view is element
/// `start` of the buffer, axis `axis` has element stride `strides[axis]`, and start `axis` is
/// read from `starts` and clamped to `0..=limits[axis]`.
pub(crate) fn window_address(
    op: &'static str,
    tensor: &Tensor,
    start: usize,
    strides: &[i64],
    starts: &Tensor,
    limits: &[usize],
) -> Result<DeviceBuffer> {
    let elem = check_starts(op, tensor, starts, limits.len())?;
    let element_bytes = tensor.dtype().byte_size().ok_or_else(|| {
        bad_operands(
            op,
            &[tensor],
            "sub-byte elements have no addresses to slice at".into(),
        )
    })?;
    let too_large = |what: String| {
        bad_operands(
            op,
            &[tensor, starts],
            format!("{what} does not fit the start kernel's 32-bit words"),
        )
    };
    let mut words = Vec::with_capacity(limits.len() * 2 + 1);
    for &limit in limits {
        words.push(u32::try_from(limit).map_err(|_| too_large(format!("limit {limit}")))?);
    }
    for &stride in strides {
        let word = i32::try_from(stride).map_err(|_| too_large(format!("stride {stride}")))?;
        words.push(word as u32);
    }
    words.push(0);
    let starts_stride = starts.layout().strides().first().copied().unwrap_or(0);
    let starts_stride =
        u32::try_from(starts_stride).map_err(|_| too_large(format!("stride {starts_stride}")))?;
    let device = tensor.device();
    let address = device.alloc(op, 8)?;
    let starts_address = starts.buffer().device_address()
        + starts.layout().offset() as u64 * u64::from(storage_bytes(elem));
    let base_address = tensor.buffer().device_address() + start as u64 * element_bytes;
    let mut push = Vec::with_capacity(PUSH_CONSTANT_BYTES);
    for word in [starts_address, address.device_address(), 0, base_address] {
        push.extend_from_slice(&word.to_le_bytes());
    }
    push.extend_from_slice(&starts_stride.to_le_bytes());
    push.extend_from_slice(&(limits.len() as u32).to_le_bytes());
    let params: Vec<u8> = words.iter().flat_map(|word| word.to_le_bytes()).collect();
    let kernel = device.kernel_from_glsl(
        &kernel_name(elem, element_bytes),
        &shader(elem, element_bytes),
        &[],
    )?;
    device.dispatch_with_params(
        &kernel,
        [1, 1, 1],
        &push,
        &params,
        PARAMS_ADDRESS_OFFSET,
        &[
            BufferAccess::Read(starts.buffer()),
            BufferAccess::Write(&address),
        ],
    )?;
    Ok(address)
}

fn kernel_name(elem: Elem, element_bytes: u64) -> String {
    format!("slice_start_{}_{element_bytes}", elem.name())
}

/// The start kernel for starts stored as `elem`, for elements of `element_bytes` bytes. Starts
/// are clamped in 64 bits: negative ones (signed types) to 0, then to the limit, so that a u64
/// start above 2^63 clamps to the limit as Nx clamps it.
fn shader(elem: Elem, element_bytes: u64) -> String {
    let compute = compute_type(elem);
    let clamp_negative = if elem.is_signed() {
        format!("(start < {compute}(0)) ? 0ul : uint64_t(start)")
    } else {
        "uint64_t(start)".to_owned()
    };
    let mut shader = String::new();
    let _ = write!(
        shader,
        "
layout(local_size_x = 1) in;
layout(buffer_reference, scalar, buffer_reference_align = {start_bytes}) readonly buffer Start {{ {storage} v; }};
layout(buffer_reference, scalar, buffer_reference_align = 8) writeonly buffer Address {{ uint64_t v; }};
layout(buffer_reference, scalar) readonly buffer Params {{ uint v[]; }};
layout(push_constant, scalar) uniform Push {{
    uint64_t starts;
    uint64_t address;
    Params params;
    uint64_t base;
    uint starts_stride;
    uint rank;
}} push;

// Parameter words: the largest start of each axis, then the view's signed element strides.
void main() {{
    int64_t offset = 0l;
    for (uint axis = 0u; axis < push.rank; axis++) {{
        uint64_t element = uint64_t(axis) * uint64_t(push.starts_stride);
        {compute} start = {loaded};
        uint64_t clamped = min({clamp_negative}, uint64_t(push.params.v[axis]));
        offset += int64_t(clamped) * int64_t(int(push.params.v[push.rank + axis]));
    }}
    // Two's complement: a negative offset (a reversed view) walks back from the base.
    Address(push.address).v = push.base + uint64_t(offset) * {element_bytes}ul;
}}
",
        start_bytes = storage_bytes(elem),
        storage = storage_type(elem),
        loaded = load(elem, &format!("Start(push.starts + element * {}ul).v", storage_bytes(elem))),
    );
    shader
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every start type compiles, signed ones with the negative clamp.
    #[test]
    fn start_kernels_compile_for_every_integer_type() {
        for elem in Elem::ALL.into_iter().filter(|elem| !elem.is_float()) {
            let source = shader(elem, 4);
            assert_eq!(source.contains("start < "), elem.is_signed(), "{elem:?}");
            nxvk_glsl::compile_compute(&kernel_name(elem, 4), &source)
                .unwrap_or_else(|error| panic!("{error}"));
        }
    }
}

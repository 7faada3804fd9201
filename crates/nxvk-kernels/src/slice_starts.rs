//! Slice starts given as tensors (Nx's `slice` and `put_slice` accept scalar tensors as start
//! indices): a one-invocation kernel reads the starts on the device, clamps each to
//! `0..=size - length` as Nx does so that the window fits, and writes the 64-bit address of the
//! window's first element into an 8-byte buffer, from which the copy kernels take their base
//! address (`movement_codegen::CopyVariant`'s indirect addresses).
//!
//! Each axis's start is either known on the host (clamped here and folded into the base
//! address) or one integer element in device memory, of its own type: an element of a rank-1
//! start tensor (the eager backend stacks Nx's starts into one), or a scalar tensor of its own
//! (a graph's start nodes, which Nx lets differ in type). Each device start is read in its own
//! type and clamped in 64 bits, so every integer value clamps exactly as Nx clamps it (a u64
//! above 2^63 to the limit, a negative s8 to 0); converting the starts to one common type
//! first would cost a dispatch per start and wrap such values.
//!
//! Nothing is read back to the host, so a slice at a position computed on the GPU stays in the
//! command stream; the alternative, reading the starts back and slicing with known offsets,
//! costs a full submit-and-wait round trip per slice (about 75 us on the H200). The kernel is
//! generated per sequence of device-start types (any integer types, converted on load) and
//! compiled at run time; the limits, strides and addresses are parameters, so one kernel
//! serves every shape and position.

use crate::catalog::elem_of;
use crate::codegen::{compute_type, load, storage_bytes, storage_type};
use crate::op_table::Elem;
use crate::operand_errors::bad_operands;
use nxvk_core::{BufferAccess, DeviceBuffer, Result, Tensor};
use std::fmt::Write as _;

/// Bytes of the kernel's push constants: the result's address, the parameter block's address,
/// the window's base address before the device starts are added.
const PUSH_CONSTANT_BYTES: usize = 24;

/// Byte offset of the parameter block's address in the push constants.
const PARAMS_ADDRESS_OFFSET: usize = 8;

/// Where one axis's start comes from.
pub(crate) enum StartSource<'a> {
    /// Known on the host (clamped before the kernel runs).
    Host(i64),
    /// One integer element of `elem` at `address`, inside `buffer`.
    Device {
        buffer: &'a DeviceBuffer,
        address: u64,
        elem: Elem,
    },
}

/// The integer element type of `starts`, when it has one the start kernel reads (8 to 64
/// bits) and lives on `operand`'s device.
fn start_elem(operand: &Tensor, starts: &Tensor) -> Option<Elem> {
    elem_of(starts.dtype())
        .filter(|elem| !elem.is_float())
        .filter(|_| std::sync::Arc::ptr_eq(starts.device(), operand.device()))
}

/// The address of element `index` of `starts`' view.
fn element_address(starts: &Tensor, elem: Elem, index: usize) -> u64 {
    let stride = starts.layout().strides().first().copied().unwrap_or(0);
    let element = starts.layout().offset() + index * stride;
    starts.buffer().device_address() + element as u64 * u64::from(storage_bytes(elem))
}

/// The starts of a rank-1 integer tensor of `rank` elements on `operand`'s device, one per
/// axis.
pub(crate) fn tensor_starts<'a>(
    op: &'static str,
    operand: &Tensor,
    starts: &'a Tensor,
    rank: usize,
) -> Result<Vec<StartSource<'a>>> {
    match start_elem(operand, starts) {
        Some(elem) if starts.shape() == [rank] => Ok((0..rank)
            .map(|index| StartSource::Device {
                buffer: starts.buffer(),
                address: element_address(starts, elem, index),
                elem,
            })
            .collect()),
        _ => Err(bad_operands(
            op,
            &[operand, starts],
            format!(
                "start indices must be a rank-1 tensor of {rank} integers (8 to 64 bits) on the operand's device"
            ),
        )),
    }
}

/// The start of axis `axis` given as a scalar integer tensor on `operand`'s device.
pub(crate) fn scalar_start<'a>(
    op: &'static str,
    operand: &Tensor,
    start: &'a Tensor,
    axis: usize,
) -> Result<StartSource<'a>> {
    match start_elem(operand, start) {
        Some(elem) if start.shape().is_empty() => Ok(StartSource::Device {
            buffer: start.buffer(),
            address: element_address(start, elem, 0),
            elem,
        }),
        _ => Err(bad_operands(
            op,
            &[operand, start],
            format!(
                "the start of axis {axis} must be a scalar integer tensor (8 to 64 bits) on the operand's device"
            ),
        )),
    }
}

/// A fresh 8-byte buffer that will hold (once the recorded work runs) the address of the
/// window's first element in `tensor`'s buffer: logical element zero of the view is element
/// `start` of the buffer, axis `axis` has element stride `strides[axis]`, and start `axis`
/// comes from `starts[axis]`, clamped to `0..=limits[axis]`.
pub(crate) fn window_address(
    op: &'static str,
    tensor: &Tensor,
    start: usize,
    strides: &[i64],
    starts: &[StartSource<'_>],
    limits: &[usize],
) -> Result<DeviceBuffer> {
    let element_bytes = tensor.dtype().byte_size().ok_or_else(|| {
        bad_operands(
            op,
            &[tensor],
            "sub-byte elements have no addresses to slice at".into(),
        )
    })? as i64;
    // Host starts are folded into the base; each device start adds three parameter words:
    // its address, its largest value, its axis's stride in bytes.
    let mut base = start as i64;
    let mut elems = Vec::new();
    let mut words: Vec<u64> = Vec::new();
    let mut accesses = Vec::new();
    for ((source, &limit), &stride) in starts.iter().zip(limits).zip(strides) {
        match *source {
            StartSource::Host(value) => base += value.clamp(0, limit as i64) * stride,
            StartSource::Device {
                buffer,
                address,
                elem,
            } => {
                elems.push(elem);
                words.extend([address, limit as u64, (stride * element_bytes) as u64]);
                accesses.push(BufferAccess::Read(buffer));
            }
        }
    }
    let device = tensor.device();
    let address = device.alloc(op, 8)?;
    accesses.push(BufferAccess::Write(&address));
    // The base is an element of the view (every host start is clamped inside it).
    let base_address = tensor.buffer().device_address() + (base * element_bytes) as u64;
    let mut push = Vec::with_capacity(PUSH_CONSTANT_BYTES);
    for word in [address.device_address(), 0, base_address] {
        push.extend_from_slice(&word.to_le_bytes());
    }
    let params: Vec<u8> = words.iter().flat_map(|word| word.to_le_bytes()).collect();
    let kernel = device.kernel_from_glsl(&kernel_name(&elems), &shader(&elems), &[])?;
    device.dispatch_with_params(
        &kernel,
        [1, 1, 1],
        &push,
        &params,
        PARAMS_ADDRESS_OFFSET,
        &accesses,
    )?;
    Ok(address)
}

/// `slice_start_` and the device starts' types, runs counted (`s32x3_u8`).
fn kernel_name(elems: &[Elem]) -> String {
    let mut name = String::from("slice_start");
    let mut index = 0;
    while index < elems.len() {
        let run = elems[index..]
            .iter()
            .take_while(|&&elem| elem == elems[index])
            .count();
        let _ = write!(name, "_{}", elems[index].name());
        if run > 1 {
            let _ = write!(name, "x{run}");
        }
        index += run;
    }
    name
}

/// The start kernel for device starts of types `elems`, in axis order. Each start is clamped
/// in 64 bits: a negative one (signed types) to 0, then to its limit, so that a u64 start
/// above 2^63 clamps to the limit as Nx clamps it.
fn shader(elems: &[Elem]) -> String {
    let mut shader = String::from(
        "
layout(local_size_x = 1) in;
layout(buffer_reference, scalar, buffer_reference_align = 8) writeonly buffer Address { uint64_t v; };
layout(buffer_reference, scalar) readonly buffer Params { uint64_t v[]; };
",
    );
    let mut declared: Vec<Elem> = Vec::new();
    for &elem in elems {
        if !declared.contains(&elem) {
            declared.push(elem);
            let _ = writeln!(
                shader,
                "layout(buffer_reference, scalar, buffer_reference_align = {}) readonly buffer Start_{} {{ {} v; }};",
                storage_bytes(elem),
                elem.name(),
                storage_type(elem),
            );
        }
    }
    shader.push_str(
        "layout(push_constant, scalar) uniform Push {
    uint64_t address;
    Params params;
    uint64_t base;
} push;

// Parameter words, three per device start: its address, its largest value, the signed stride
// of its axis in bytes.
void main() {
    int64_t offset = 0l;
",
    );
    for (index, &elem) in elems.iter().enumerate() {
        let compute = compute_type(elem);
        let non_negative = if elem.is_signed() {
            format!("(start < {compute}(0)) ? 0ul : uint64_t(start)")
        } else {
            "uint64_t(start)".to_owned()
        };
        let word = 3 * index;
        let _ = write!(
            shader,
            "    {{
        {compute} start = {loaded};
        uint64_t clamped = min({non_negative}, push.params.v[{limit}]);
        offset += int64_t(clamped) * int64_t(push.params.v[{stride}]);
    }}
",
            loaded = load(
                elem,
                &format!("Start_{}(push.params.v[{word}]).v", elem.name())
            ),
            limit = word + 1,
            stride = word + 2,
        );
    }
    shader.push_str(
        "    // Two's complement: a negative offset (a reversed view) walks back from the base.
    Address(push.address).v = push.base + uint64_t(offset);
}
",
    );
    shader
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every start type compiles, alone and mixed with the others, signed ones with the
    /// negative clamp; names count runs of one type.
    #[test]
    fn start_kernels_compile_for_every_integer_type() {
        let integers: Vec<Elem> = Elem::ALL
            .into_iter()
            .filter(|elem| !elem.is_float())
            .collect();
        for &elem in &integers {
            let source = shader(&[elem]);
            assert_eq!(source.contains("start < "), elem.is_signed(), "{elem:?}");
            nxvk_glsl::compile_compute(&kernel_name(&[elem]), &source)
                .unwrap_or_else(|error| panic!("{error}"));
        }
        let mixed = [integers.clone(), integers.clone()].concat();
        nxvk_glsl::compile_compute(&kernel_name(&mixed), &shader(&mixed))
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(
            kernel_name(&[Elem::S32, Elem::S32, Elem::U8, Elem::S32]),
            "slice_start_s32x2_u8_s32"
        );
        assert_eq!(kernel_name(&[]), "slice_start");
    }
}

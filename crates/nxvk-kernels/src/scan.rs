//! Nx's cumulative ops (`cumulative_sum`, `cumulative_product`, `cumulative_min`,
//! `cumulative_max`) over any axis, forward or reversed (Nx's `reverse: true`), as parallel
//! scans on the GPU (see `scan_codegen.rs` for the kernels).
//!
//! The result has the input's type and shape; integers wrap, f16 and bf16 combine in f32 and
//! round each stored value, min and max follow Nx's NaN rules. The input is made contiguous
//! first (a copy only when it is a strided view). Short lines are scanned by one invocation
//! each; a longer line is scanned in blocks, leaving a carry per block, which is scanned by
//! the same kernels (recursively) and combined back. Long lines across an inner axis are
//! transposed to rows first and back after, so that blocks read contiguous memory.
//!
//! Complex sums and products scan on the GPU too (the same kernels over `vec2`/`dvec2`:
//! componentwise sums, Complex.multiply in the component type, so c64 accumulates in f32 as
//! f32 scans do). Sub-byte inputs (and dtypes the device lacks shader features for) take the
//! counted host fallback (a sequential scan of the host reference); complex min and max are
//! errors, as in Nx; 8-bit floats are `Unsupported`.

use crate::catalog::{device_supports_value, scan_kernel, value_of};
use crate::launch::{MAX_ELEMENTS, poison_output};
use crate::movement::{contiguous, transpose};
use crate::op_table::BinaryOp;
use crate::reference;
pub use crate::scan_codegen::ScanOp;
use crate::scan_codegen::{
    SCAN_BLOCK, SCAN_LINE_MAX, SCAN_PUSH_CONSTANT_BYTES, SCAN_WORKGROUP_SIZE, ScanPass,
};
use nxvk_core::{BufferAccess, DType, Device, Error, Result, Tensor};
use std::sync::Arc;

fn bad(op: ScanOp, input: &Tensor, detail: String) -> Error {
    Error::BadOperands {
        op: op.name(),
        shapes: vec![input.shape().to_vec()],
        dtypes: vec![input.dtype()],
        detail,
    }
}

/// A scan over contiguous data: `lines` lines of `length` elements, `inner` apart, walked
/// from the end when `reverse`.
#[derive(Debug, Clone, Copy)]
struct Lines {
    length: usize,
    inner: usize,
    lines: usize,
    reverse: bool,
}

impl Lines {
    fn blocks(self) -> usize {
        self.length.div_ceil(SCAN_BLOCK as usize)
    }
}

fn dispatch(
    device: &Arc<Device>,
    kernel: &crate::catalog::CatalogKernel,
    addresses: [u64; 3],
    lines: Lines,
    groups: u64,
    accesses: &[BufferAccess<'_>],
) -> Result<()> {
    let mut push = Vec::with_capacity(SCAN_PUSH_CONSTANT_BYTES);
    for address in addresses {
        push.extend_from_slice(&address.to_le_bytes());
    }
    // Every count is at most the element count, checked to fit 32 bits.
    for word in [
        lines.length,
        lines.inner,
        lines.lines,
        lines.blocks(),
        usize::from(lines.reverse),
    ] {
        push.extend_from_slice(&(word as u32).to_le_bytes());
    }
    let loaded = kernel.load(device)?;
    let groups = groups.clamp(1, u64::from(device.capabilities().max_workgroup_count[0])) as u32;
    device.dispatch(&loaded, [groups, 1, 1], &push, accesses)
}

/// Scans contiguous `input` into a fresh tensor of its shape.
fn scan_lines(
    op: ScanOp,
    value: crate::op_table::ValueType,
    input: &Tensor,
    lines: Lines,
) -> Result<Tensor> {
    let device = input.device();
    let kernel =
        |pass| scan_kernel(op, value, pass).expect("cumulative() checked that the kernel exists");
    let output = Tensor::empty(device, input.dtype(), input.shape())?;
    let address = |tensor: &Tensor| {
        tensor
            .device_address()
            .expect("native dtypes have addresses")
    };
    if lines.length <= SCAN_LINE_MAX as usize {
        poison_output(output.buffer())?;
        dispatch(
            device,
            kernel(ScanPass::Lines),
            [address(input), address(&output), 0],
            lines,
            (lines.lines as u64).div_ceil(u64::from(SCAN_WORKGROUP_SIZE)),
            &[
                BufferAccess::Read(input.buffer()),
                BufferAccess::Write(output.buffer()),
            ],
        )?;
        return Ok(output);
    }
    let blocks = lines.blocks();
    let carries = Tensor::empty(device, input.dtype(), &[lines.lines, blocks])?;
    let address = |tensor: &Tensor| {
        tensor
            .device_address()
            .expect("native dtypes have addresses")
    };
    let addresses = [address(input), address(&output), address(&carries)];
    poison_output(output.buffer())?;
    dispatch(
        device,
        kernel(ScanPass::Blocks),
        addresses,
        lines,
        (lines.lines * blocks) as u64,
        &[
            BufferAccess::Read(input.buffer()),
            BufferAccess::Write(output.buffer()),
            BufferAccess::Write(carries.buffer()),
        ],
    )?;
    if blocks > 1 {
        // The carries are in scan order already: scan them forward, then combine.
        let carry_lines = Lines {
            length: blocks,
            inner: 1,
            lines: lines.lines,
            reverse: false,
        };
        let scanned = scan_lines(op, value, &carries, carry_lines)?;
        let n_elements = (lines.lines * lines.length) as u64;
        dispatch(
            device,
            kernel(ScanPass::Carry),
            [address(&output), address(&output), address(&scanned)],
            lines,
            n_elements.div_ceil(u64::from(SCAN_WORKGROUP_SIZE)),
            &[
                BufferAccess::Read(scanned.buffer()),
                BufferAccess::Write(output.buffer()),
            ],
        )?;
    }
    Ok(output)
}

/// Nx's cumulative `op` along `axis`, from the end when `reverse`.
pub fn cumulative(op: ScanOp, input: &Tensor, axis: usize, reverse: bool) -> Result<Tensor> {
    let shape = input.shape();
    if axis >= shape.len() {
        return Err(bad(
            op,
            input,
            format!("axis {axis} is out of range for rank {}", shape.len()),
        ));
    }
    let dtype = input.dtype();
    if dtype.is_complex() && matches!(op, ScanOp::Min | ScanOp::Max) {
        return Err(bad(op, input, "Nx does not order complex numbers".into()));
    }
    let n_elements = input.n_elements();
    if n_elements == 0 {
        return Tensor::empty(input.device(), dtype, shape);
    }
    let capabilities = input.device().capabilities();
    let Some(value) = value_of(dtype).filter(|&value| {
        device_supports_value(capabilities, value)
            && scan_kernel(op, value, ScanPass::Lines).is_some()
    }) else {
        return scan_on_host(op, input, axis, reverse);
    };
    if n_elements > MAX_ELEMENTS {
        return Err(bad(
            op,
            input,
            format!("{n_elements} elements exceed the kernels' 32-bit index arithmetic"),
        ));
    }
    let length = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    if inner > 1 && length > SCAN_LINE_MAX as usize {
        // Long lines across an inner axis: a block would read elements `inner` apart, so scan
        // them as rows (contiguous, coalesced) between two transposes.
        let rank = shape.len();
        let mut axis_last: Vec<usize> = (0..rank).filter(|&other| other != axis).collect();
        axis_last.push(axis);
        let mut inverse = vec![0; rank];
        for (position, &original) in axis_last.iter().enumerate() {
            inverse[original] = position;
        }
        let scanned = cumulative(op, &transpose(input, &axis_last)?, rank - 1, reverse)?;
        return transpose(&scanned, &inverse);
    }
    let lines = Lines {
        length,
        inner,
        lines: n_elements / length,
        reverse,
    };
    scan_lines(op, value, &contiguous(input)?, lines)
}

/// The counted host fallback for sub-byte inputs (and devices lacking a shader feature): a
/// sequential scan of the host reference's op (8-bit floats have no host values:
/// `Unsupported`).
fn scan_on_host(op: ScanOp, input: &Tensor, axis: usize, reverse: bool) -> Result<Tensor> {
    let dtype = input.dtype();
    let device = input.device();
    let shape = input.shape();
    let unsupported = || Error::Unsupported {
        op: op.name(),
        dtype,
        detail: "8-bit floats have no kernels or host values yet".into(),
    };
    if matches!(dtype, DType::F8E5M2 | DType::F8E4M3FN) {
        return Err(unsupported());
    }
    device.host_fallback(op.name(), dtype, &[shape])?;
    let mut values = reference::decode(dtype, &contiguous(input)?.to_bytes()?, input.n_elements())
        .ok_or_else(unsupported)?;
    let combine = match op {
        ScanOp::Sum => BinaryOp::Add,
        ScanOp::Product => BinaryOp::Multiply,
        ScanOp::Min => BinaryOp::Min,
        ScanOp::Max => BinaryOp::Max,
    };
    let length = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    for line in 0..values.len() / length {
        let (outer, within) = (line / inner, line % inner);
        let index = |step: usize| {
            let along = if reverse { length - 1 - step } else { step };
            (outer * length + along) * inner + within
        };
        for step in 1..length {
            let combined =
                reference::binary(combine, dtype, values[index(step - 1)], values[index(step)])
                    .ok_or_else(unsupported)?;
            values[index(step)] = reference::round_to(combined, dtype);
        }
    }
    Tensor::from_bytes(device, dtype, shape, &reference::encode(dtype, &values))
}

/// Nx's `cumulative_sum(input, axis: axis, reverse: reverse)`.
pub fn cumulative_sum(input: &Tensor, axis: usize, reverse: bool) -> Result<Tensor> {
    cumulative(ScanOp::Sum, input, axis, reverse)
}

/// Nx's `cumulative_product(input, axis: axis, reverse: reverse)`.
pub fn cumulative_product(input: &Tensor, axis: usize, reverse: bool) -> Result<Tensor> {
    cumulative(ScanOp::Product, input, axis, reverse)
}

/// Nx's `cumulative_min(input, axis: axis, reverse: reverse)`.
pub fn cumulative_min(input: &Tensor, axis: usize, reverse: bool) -> Result<Tensor> {
    cumulative(ScanOp::Min, input, axis, reverse)
}

/// Nx's `cumulative_max(input, axis: axis, reverse: reverse)`.
pub fn cumulative_max(input: &Tensor, axis: usize, reverse: bool) -> Result<Tensor> {
    cumulative(ScanOp::Max, input, axis, reverse)
}

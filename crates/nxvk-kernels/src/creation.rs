//! Creation ops, made on the GPU: Nx's `iota`, `eye` and `full` (a constant), and `bitcast`.
//!
//! iota and eye share one generated kernel per dtype (`codegen::iota_shader`): each element
//! computes its value from its index, so nothing is uploaded. `full` uploads one element and
//! materialises its broadcast with the strided copy kernel. `bitcast` is a view: the same
//! bits under another dtype of the same width.
//!
//! Complex and sub-byte iota and eye are made in a native type and converted by `as_type`
//! (whose host fallback for those types is counted); 8-bit floats are `Unsupported`. A result
//! of more elements than the kernels' 32-bit indices handle is `BadOperands`.

use crate::catalog::{elem_of, iota_kernel};
use crate::codegen::{IOTA_PUSH_CONSTANT_BYTES, WORKGROUP_SIZE};
use crate::launch::{MAX_ELEMENTS, poison_output};
use crate::movement::contiguous;
use crate::reference::{self, Value};
use nxvk_core::{BufferAccess, DType, Device, Error, Result, Tensor};
use std::sync::Arc;

fn bad_shape(op: &'static str, dtype: DType, shape: &[usize], detail: String) -> Error {
    Error::BadOperands {
        op,
        shapes: vec![shape.to_vec()],
        dtypes: vec![dtype],
        detail,
    }
}

/// Runs the iota kernel: element `index` gets `(index / inner) % size`, or with `diagonal`
/// whether that equals `index % inner`.
fn run_iota(
    op: &'static str,
    device: &Arc<Device>,
    dtype: DType,
    shape: &[usize],
    pattern: (usize, usize, bool),
) -> Result<Tensor> {
    let Some(elem) = elem_of(dtype) else {
        // Complex and sub-byte results: made in a native type holding the same values, then
        // converted by `as_type` (a GPU cast for complex, the counted fallback for sub-byte
        // types).
        let carrier = match dtype {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            DType::S2 | DType::S4 => DType::S8,
            DType::U2 | DType::U4 => DType::U8,
            _ => {
                return Err(Error::Unsupported {
                    op,
                    dtype,
                    detail: "8-bit floats have no kernels yet".into(),
                });
            }
        };
        let values = run_iota(op, device, carrier, shape, pattern)?;
        return crate::ops::as_type(&values, dtype);
    };
    let (inner, size, diagonal) = pattern;
    let output = Tensor::empty(device, dtype, shape)?;
    let n_elements = output.n_elements();
    if n_elements == 0 {
        return Ok(output);
    }
    if n_elements > MAX_ELEMENTS {
        return Err(bad_shape(
            op,
            dtype,
            shape,
            format!("{n_elements} elements exceed the kernels' 32-bit index arithmetic"),
        ));
    }
    let address = output
        .device_address()
        .expect("native dtypes have addresses");
    let mut push = Vec::with_capacity(IOTA_PUSH_CONSTANT_BYTES);
    push.extend_from_slice(&address.to_le_bytes());
    // All three are at most the element count, which fits in 32 bits (checked above).
    for word in [n_elements, inner, size, usize::from(diagonal)] {
        push.extend_from_slice(&(word as u32).to_le_bytes());
    }
    poison_output(output.buffer())?;
    let kernel = iota_kernel(elem).load(device)?;
    let groups = (n_elements as u64)
        .div_ceil(u64::from(WORKGROUP_SIZE))
        .min(u64::from(device.capabilities().max_workgroup_count[0])) as u32;
    device.dispatch(
        &kernel,
        [groups, 1, 1],
        &push,
        &[BufferAccess::Write(output.buffer())],
    )?;
    Ok(output)
}

/// Nx's `iota`: each element's coordinate along `axis`, or with `None` its row-major position
/// in the whole tensor.
pub fn iota(
    device: &Arc<Device>,
    dtype: DType,
    shape: &[usize],
    axis: Option<usize>,
) -> Result<Tensor> {
    let n_elements: usize = shape.iter().product();
    let (inner, size) = match axis {
        None => (1, n_elements.max(1)),
        Some(axis) if axis < shape.len() => (shape[axis + 1..].iter().product(), shape[axis]),
        Some(axis) => {
            return Err(bad_shape(
                "iota",
                dtype,
                shape,
                format!("axis {axis} is out of range for rank {}", shape.len()),
            ));
        }
    };
    run_iota(
        "iota",
        device,
        dtype,
        shape,
        (inner.max(1), size.max(1), false),
    )
}

/// Nx's `eye`: ones on the diagonal of the last two axes (rank 2 or more), zeros elsewhere.
pub fn eye(device: &Arc<Device>, dtype: DType, shape: &[usize]) -> Result<Tensor> {
    let rank = shape.len();
    if rank < 2 {
        return Err(bad_shape(
            "eye",
            dtype,
            shape,
            "eye needs a shape of rank 2 or more".into(),
        ));
    }
    let (rows, columns) = (shape[rank - 2], shape[rank - 1]);
    run_iota(
        "eye",
        device,
        dtype,
        shape,
        (columns.max(1), rows.max(1), true),
    )
}

/// Nx's `full` (`Nx.broadcast` of a number): every element is `value` converted to `dtype`
/// as `as_type` would convert it.
pub fn full(device: &Arc<Device>, value: Value, dtype: DType, shape: &[usize]) -> Result<Tensor> {
    let element = reference::encode(dtype, &[reference::round_to(value, dtype)]);
    let scalar = Tensor::from_bytes(device, dtype, &[], &element)?;
    contiguous(&scalar.broadcast_to(shape)?)
}

/// Nx's `bitcast`: the same bits read as `dtype`, which must have the same width; a view, no
/// copy.
pub fn bitcast(input: &Tensor, dtype: DType) -> Result<Tensor> {
    if input.dtype().bits() != dtype.bits() {
        return Err(Error::BadOperands {
            op: "bitcast",
            shapes: vec![input.shape().to_vec()],
            dtypes: vec![input.dtype(), dtype],
            detail: format!(
                "bitcast needs types of the same width ({} bits vs {} bits)",
                input.dtype().bits(),
                dtype.bits()
            ),
        });
    }
    Tensor::from_parts(input.buffer().clone(), input.layout().clone(), dtype)
}

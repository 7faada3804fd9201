//! Nx's `select` and `clip`.
//!
//! `select(pred, on_true, on_false)` broadcasts the three operands together; the result has
//! the merged type of `on_true` and `on_false` (`Nx.Type.merge`), and a non-zero predicate
//! picks `on_true`. On the GPU the predicate becomes u8 first (`not_equal(pred, 0)`, unless it
//! already is u8; complex predicates are non-zero when either part is), the values are cast to
//! the result type, and one kernel per element size (`codegen::select_shader`, 1 to 16 bytes,
//! so c64 and c128 too) moves the chosen bits through strided views, reading only the chosen
//! operand. Sub-byte types take the counted host fallback.
//!
//! `clip(x, min, max)` is `min(max(x, min), max)` with Nx's types and NaN rules: two
//! dispatches of the op table's `max` and `min`. As in Nx, `min` and `max` must be scalars
//! and complex types are refused.

use crate::catalog::select_kernel;
use crate::codegen::{SELECT_PARAMS_ADDRESS_OFFSET, SELECT_PUSH_CONSTANT_BYTES, WORKGROUP_SIZE};
use crate::fallback::run_on_host;
use crate::launch::{MAX_ELEMENTS, poison_output, simplify};
use crate::op_table::BinaryOp;
use crate::operand_errors::bad_operands;
use crate::ops::{Path, binary, broadcast_shapes, cast_on_gpu, plan_values, same_device};
use crate::reference::Value;
use crate::types::merge;
use nxvk_core::{BufferAccess, DType, Result, Tensor};

const SELECT: &str = "select";

/// The predicate as u8 truth values (0 or non-zero), computed on the device.
fn truth(pred: &Tensor) -> Result<Tensor> {
    if pred.dtype() == DType::U8 {
        return Ok(pred.clone());
    }
    let zero = Tensor::zeros(pred.device(), pred.dtype(), &[])?;
    binary(BinaryOp::NotEqual, pred, &zero)
}

/// A host value as a predicate: anything but zero (of either sign) is true.
fn truthy(value: Value) -> bool {
    match value {
        Value::Int(integer) => integer != 0,
        Value::Float(float) => float != 0.0,
        Value::Complex(complex) => complex.re != 0.0 || complex.im != 0.0,
    }
}

/// Nx's `select(pred, on_true, on_false)`.
pub fn select(pred: &Tensor, on_true: &Tensor, on_false: &Tensor) -> Result<Tensor> {
    let operands = [pred, on_true, on_false];
    same_device(SELECT, pred, on_true)?;
    same_device(SELECT, pred, on_false)?;
    let shape = broadcast_shapes(SELECT, &operands)?;
    let result = merge(on_true.dtype(), on_false.dtype());
    let device = pred.device();
    let n_elements: usize = shape.iter().product();
    if n_elements == 0 {
        return Tensor::empty(device, result, &shape);
    }
    let truth = truth(pred)?;
    let path = plan_values(
        device.capabilities(),
        result,
        &[on_true.dtype(), on_false.dtype()],
        |_| {
            result
                .byte_size()
                .is_some_and(|bytes| select_kernel(bytes as usize).is_some())
        },
    );
    if let Path::Fallback(counted) = path {
        // The u8 truth values survive the cast to the compute type (0 stays 0, 1 stays
        // non-zero), so the host picks by them.
        return run_on_host(
            SELECT,
            counted,
            &[&truth, on_true, on_false],
            &shape,
            result,
            result,
            |values| {
                Some(if truthy(values[0]) {
                    values[1]
                } else {
                    values[2]
                })
            },
        );
    }
    if n_elements > MAX_ELEMENTS {
        return Err(bad_operands(
            SELECT,
            &operands,
            format!("{n_elements} elements exceed the kernels' 32-bit index arithmetic"),
        ));
    }
    let bytes = result.byte_size().expect("planned as native") as usize;
    let kernel = select_kernel(bytes).expect("planned");
    let views = [
        truth.broadcast_to(&shape)?,
        cast_on_gpu(SELECT, on_true, result)?.broadcast_to(&shape)?,
        cast_on_gpu(SELECT, on_false, result)?.broadcast_to(&shape)?,
    ];
    let output = Tensor::empty(device, result, &shape)?;
    let strides: Vec<Vec<usize>> = views
        .iter()
        .map(|view| view.layout().strides().to_vec())
        .collect();
    let (merged_shape, merged_strides) = simplify(&shape, &strides);
    let dense = merged_shape.len() <= 1
        && merged_strides
            .iter()
            .all(|operand| operand.iter().all(|&stride| stride == 1));
    let mut push = Vec::with_capacity(SELECT_PUSH_CONSTANT_BYTES);
    for view in views.iter().chain([&output]) {
        let address = view.device_address().expect("native dtypes have addresses");
        push.extend_from_slice(&address.to_le_bytes());
    }
    // The parameter block's address, written by the device when it records the dispatch.
    push.extend_from_slice(&0u64.to_le_bytes());
    push.extend_from_slice(&(n_elements as u32).to_le_bytes());
    let rank = if dense { 0 } else { merged_shape.len() };
    push.extend_from_slice(&(rank as u32).to_le_bytes());
    let mut params: Vec<u8> = Vec::new();
    if !dense {
        // Every size and stride is below the element count of a view of at most
        // MAX_ELEMENTS elements, hence fits 32 bits.
        for word in merged_shape.iter().chain(merged_strides.iter().flatten()) {
            params.extend_from_slice(&(*word as u32).to_le_bytes());
        }
    }
    poison_output(output.buffer())?;
    let loaded = kernel.load(device)?;
    let groups = (n_elements as u64)
        .div_ceil(u64::from(WORKGROUP_SIZE))
        .min(u64::from(device.capabilities().max_workgroup_count[0])) as u32;
    let mut accesses: Vec<BufferAccess<'_>> = views
        .iter()
        .map(|view| BufferAccess::Read(view.buffer()))
        .collect();
    accesses.push(BufferAccess::Write(output.buffer()));
    if params.is_empty() {
        device.dispatch(&loaded, [groups, 1, 1], &push, &accesses)?;
    } else {
        device.dispatch_with_params(
            &loaded,
            [groups, 1, 1],
            &push,
            &params,
            SELECT_PARAMS_ADDRESS_OFFSET,
            &accesses,
        )?;
    }
    Ok(output)
}

/// Nx's `clip(x, min, max)`: `min(max(x, min), max)`, with the merged type of all three.
pub fn clip(input: &Tensor, min: &Tensor, max: &Tensor) -> Result<Tensor> {
    const CLIP: &str = "clip";
    let operands = [input, min, max];
    if !min.shape().is_empty() || !max.shape().is_empty() {
        return Err(bad_operands(
            CLIP,
            &operands,
            "min and max must be scalars".into(),
        ));
    }
    if operands.iter().any(|operand| operand.dtype().is_complex()) {
        return Err(bad_operands(
            CLIP,
            &operands,
            "clip is not defined on complex types".into(),
        ));
    }
    binary(BinaryOp::Min, &binary(BinaryOp::Max, input, min)?, max)
}

//! The eager API: one op on whole tensors, now.
//!
//! Every op goes through [`binary`] or [`unary`] (the named functions, `add`, `exp`, ..., are
//! generated from the op table and only pick the op). An op runs on the GPU when its compute
//! type and operand types have catalog kernels the device can run: the operands are cast to the
//! compute type (the cast kernels), broadcast as views and handed to the op's kernel. Ops on
//! sub-byte integers (s2, s4, u2, u4) and 8-bit floats run on the GPU through wider native
//! types (`narrow_widening`). Otherwise an op takes the counted host fallback. Empty results
//! dispatch nothing.

use crate::catalog::{
    binary_value_kernel, device_supports_value, dtype_of, unary_value_kernel, value_cast_kernel,
    value_of,
};
use crate::fallback::run_on_host;
use crate::launch::launch;
use crate::op_table::{BinaryOp, Elem, UnaryOp, ValueType};
use crate::operand_errors::bad_operands;
use crate::reference;
use crate::types::{OpTypes, binary_types, unary_types};
use nxvk_core::{Capabilities, DType, Error, Result, Tensor};
use std::sync::Arc;

/// Where an op on given operand types runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// Catalog kernels on the device.
    Gpu,
    /// The counted host fallback, counted under this dtype.
    Fallback(DType),
}

/// The right-aligned broadcast of the operands' shapes (Nx's broadcasting).
pub fn broadcast_shapes(op: &'static str, operands: &[&Tensor]) -> Result<Vec<usize>> {
    let rank = operands
        .iter()
        .map(|operand| operand.shape().len())
        .max()
        .unwrap_or(0);
    let size = |shape: &[usize], axis: usize| {
        (axis + shape.len())
            .checked_sub(rank)
            .map_or(1, |index| shape[index])
    };
    (0..rank)
        .map(|axis| {
            operands.iter().try_fold(1, |merged, operand| {
                match (merged, size(operand.shape(), axis)) {
                    (x, y) if x == y => Ok(x),
                    (1, y) => Ok(y),
                    (x, 1) => Ok(x),
                    _ => Err(bad_operands(
                        op,
                        operands,
                        "shapes cannot be broadcast together (right-aligned)".into(),
                    )),
                }
            })
        })
        .collect()
}

/// Where an op with kernels on real and complex compute types (`has_kernel`) runs.
pub(crate) fn plan_values(
    capabilities: &Capabilities,
    compute: DType,
    inputs: &[DType],
    has_kernel: impl Fn(ValueType) -> bool,
) -> Path {
    let not_native = std::iter::once(compute)
        .chain(inputs.iter().copied())
        .find(|&dtype| {
            value_of(dtype).is_none_or(|value| !device_supports_value(capabilities, value))
        });
    match (not_native, value_of(compute)) {
        (None, Some(value)) if has_kernel(value) => Path::Gpu,
        (None, _) => Path::Fallback(compute),
        (Some(dtype), _) => Path::Fallback(dtype),
    }
}

/// Where `op` on operands of types `left` and `right` runs on a device with `capabilities`.
pub fn binary_path(
    op: BinaryOp,
    left: DType,
    right: DType,
    capabilities: &Capabilities,
) -> Result<Path> {
    let types = binary_types(op, left, right, &[])?;
    if let Some(widened) = narrow_widening(types.compute, &[left, right], false, capabilities) {
        return binary_path(op, widened[0], widened[1], capabilities);
    }
    Ok(plan_binary(op, types.compute, &[left, right], capabilities))
}

/// Where `op` on an operand of type `input` runs on a device with `capabilities`.
pub fn unary_path(op: UnaryOp, input: DType, capabilities: &Capabilities) -> Result<Path> {
    let types = unary_types(op, input, &[])?;
    if let Some(widened) = narrow_widening(
        types.compute,
        &[input],
        is_width_dependent(op),
        capabilities,
    ) {
        return unary_path(op, widened[0], capabilities);
    }
    Ok(plan_unary(op, types.compute, &[input], capabilities))
}

/// Where `op` computing in `compute` on operands of types `inputs` runs: on the GPU where the
/// catalog has its kernel and the device can run it (or its f32 twin).
fn plan_binary(
    op: BinaryOp,
    compute: DType,
    inputs: &[DType],
    capabilities: &Capabilities,
) -> Path {
    plan_values(capabilities, compute, inputs, |value| {
        binary_value_kernel(op, value).is_some_and(|kernel| kernel.runs_on(capabilities))
    })
}

/// [`plan_binary`] for a unary op.
fn plan_unary(op: UnaryOp, compute: DType, inputs: &[DType], capabilities: &Capabilities) -> Path {
    plan_values(capabilities, compute, inputs, |value| {
        unary_value_kernel(op, value).is_some_and(|kernel| kernel.runs_on(capabilities))
    })
}

pub(crate) fn same_device(op: &'static str, left: &Tensor, right: &Tensor) -> Result<()> {
    if Arc::ptr_eq(left.device(), right.device()) {
        Ok(())
    } else {
        Err(Error::ForeignTensor { op })
    }
}

/// `tensor` as `dtype` on the GPU (both native), or `tensor` itself when it already is.
pub(crate) fn cast_on_gpu(op: &'static str, tensor: &Tensor, dtype: DType) -> Result<Tensor> {
    if tensor.dtype() == dtype {
        return Ok(tensor.clone());
    }
    let from = value_of(tensor.dtype()).expect("planned as native");
    let to = value_of(dtype).expect("planned as native");
    let kernel =
        value_cast_kernel(from, to).expect("every pair of native value types has a cast kernel");
    let output = Tensor::empty(tensor.device(), dtype, tensor.shape())?;
    launch(op, kernel, &[tensor], &output)?;
    Ok(output)
}

/// Unary ops whose integer results depend on the type's width.
fn is_width_dependent(op: UnaryOp) -> bool {
    matches!(op, UnaryOp::CountLeadingZeros | UnaryOp::PopulationCount)
}

fn is_sub_byte(dtype: DType) -> bool {
    matches!(dtype, DType::S2 | DType::S4 | DType::U2 | DType::U4)
}

fn is_f8(dtype: DType) -> bool {
    matches!(dtype, DType::F8E5M2 | DType::F8E4M3FN)
}

/// The types `narrow_types.rs` converts and [`narrow_widening`] widens.
fn is_narrow(dtype: DType) -> bool {
    is_sub_byte(dtype) || is_f8(dtype)
}

/// The native types an op's narrow operands (sub-byte integers s2, s4, u2, u4; 8-bit floats)
/// are converted to on the GPU (`narrow_types.rs`, through [`widen`]) before the op runs on
/// them, one per input; the result is converted back to the op's result type (8-bit floats
/// with Nx.Floating's rounding).
/// - A sub-byte compute type widens both operands to s32 or u32: integer results wrap back to
///   the narrow type as they wrap in it (the low bits of a sum, product, shift or negation do
///   not depend on the width, and quotients, remainders, comparisons and min/max of values
///   that fit are the same).
/// - An 8-bit float compute type widens both operands to f64, as Nx.BinaryBackend computes
///   them, then rounds once to 8 bits. (f32, on devices without shaderFloat64, gives the same
///   sums, products, quotients and square roots, but may round a transcendental up to a power
///   of two, which E4M3FN's no-carry rounding then writes an ulp away: erf(-5.5).)
/// - Otherwise (a narrow operand of an op computing in a native or complex type) each sub-byte
///   operand becomes s8 or u8 and each 8-bit float f32, which hold their values and promote
///   to the same compute type or a wider one whose wrapped or rounded result is the same.
///
/// `None`: no narrow type, or a case that keeps the host fallback: ops whose result depends
/// on the width (`width_dependent`: count_leading_zeros, population_count) of a sub-byte
/// type, or a device that cannot convert.
fn narrow_widening(
    compute: DType,
    inputs: &[DType],
    width_dependent: bool,
    capabilities: &Capabilities,
) -> Option<Vec<DType>> {
    if !inputs.iter().copied().chain([compute]).any(is_narrow)
        || width_dependent && is_sub_byte(compute)
    {
        return None;
    }
    let signed = |dtype: DType| dtype.class() == nxvk_core::DTypeClass::SignedInt;
    let f8_compute = if crate::catalog::device_supports(capabilities, Elem::F64) {
        DType::F64
    } else {
        DType::F32
    };
    let widened: Vec<DType> = inputs
        .iter()
        .map(|&input| {
            if is_f8(compute) {
                f8_compute
            } else if is_f8(input) {
                DType::F32
            } else if is_sub_byte(compute) {
                if signed(compute) {
                    DType::S32
                } else {
                    DType::U32
                }
            } else if is_sub_byte(input) {
                if signed(input) { DType::S8 } else { DType::U8 }
            } else {
                input
            }
        })
        .collect();
    // Operands pass through a narrow compute type first (`widen`).
    let converts = |from: DType, to: DType| {
        from == to
            || !is_narrow(from) && !is_narrow(to)
            || crate::narrow_types::converts(from, to, capabilities)
    };
    let all_convert = inputs.iter().zip(&widened).all(|(&from, &to)| {
        if is_narrow(compute) {
            converts(from, compute) && converts(compute, to)
        } else {
            converts(from, to)
        }
    });
    all_convert.then_some(widened)
}

/// `operand` as `wide` (from [`narrow_widening`]): through the compute type first when that
/// is narrow, since Nx casts operands to the compute type (an f32 operand of an op computing in
/// f8 is rounded to f8 first).
fn widen(operand: &Tensor, compute: DType, wide: DType) -> Result<Tensor> {
    if is_narrow(compute) {
        as_type(&as_type(operand, compute)?, wide)
    } else {
        as_type(operand, wide)
    }
}

/// Runs a binary op with Nx's broadcasting and type promotion.
pub fn binary(op: BinaryOp, left: &Tensor, right: &Tensor) -> Result<Tensor> {
    let name = op.name();
    same_device(name, left, right)?;
    let shape = broadcast_shapes(name, &[left, right])?;
    let OpTypes { result, compute } = binary_types(
        op,
        left.dtype(),
        right.dtype(),
        &[left.shape(), right.shape()],
    )?;
    let device = left.device();
    if shape.iter().product::<usize>() == 0 {
        return Tensor::empty(device, result, &shape);
    }
    let inputs = [left.dtype(), right.dtype()];
    if let Some(widened) = narrow_widening(compute, &inputs, false, device.capabilities()) {
        let wide_result = binary(
            op,
            &widen(left, compute, widened[0])?,
            &widen(right, compute, widened[1])?,
        )?;
        return as_type(&wide_result, result);
    }
    match plan_binary(
        op,
        compute,
        &[left.dtype(), right.dtype()],
        device.capabilities(),
    ) {
        Path::Gpu => {
            let kernel =
                binary_value_kernel(op, value_of(compute).expect("planned")).expect("planned");
            let left = cast_on_gpu(name, left, compute)?.broadcast_to(&shape)?;
            let right = cast_on_gpu(name, right, compute)?.broadcast_to(&shape)?;
            let output = Tensor::empty(device, result, &shape)?;
            launch(name, kernel, &[&left, &right], &output)?;
            Ok(output)
        }
        Path::Fallback(counted) => run_on_host(
            name,
            counted,
            &[left, right],
            &shape,
            compute,
            result,
            |operands| reference::binary(op, compute, operands[0], operands[1]),
        ),
    }
}

/// Runs a unary op with Nx's result-type rule.
pub fn unary(op: UnaryOp, input: &Tensor) -> Result<Tensor> {
    let name = op.name();
    let OpTypes { result, compute } = unary_types(op, input.dtype(), input.shape())?;
    let device = input.device();
    if input.n_elements() == 0 {
        return Tensor::empty(device, result, input.shape());
    }
    if let Some(widened) = narrow_widening(
        compute,
        &[input.dtype()],
        is_width_dependent(op),
        device.capabilities(),
    ) {
        return as_type(&unary(op, &widen(input, compute, widened[0])?)?, result);
    }
    match plan_unary(op, compute, &[input.dtype()], device.capabilities()) {
        Path::Gpu => {
            let kernel =
                unary_value_kernel(op, value_of(compute).expect("planned")).expect("planned");
            let operand = cast_on_gpu(name, input, compute)?;
            let output = Tensor::empty(device, result, input.shape())?;
            launch(name, kernel, &[&operand], &output)?;
            Ok(output)
        }
        Path::Fallback(counted) => run_on_host(
            name,
            counted,
            &[input],
            input.shape(),
            compute,
            result,
            |operands| reference::unary(op, compute, operands[0]),
        ),
    }
}

/// Nx's `as_type`: integers wrap, floats round to nearest even (f16 and bf16 through f32),
/// floats to integers truncate and wrap, NaN becomes 0 and infinities the type's limits.
/// Returns the tensor itself (a view) when it already has `dtype`.
pub fn as_type(input: &Tensor, dtype: DType) -> Result<Tensor> {
    const OP: &str = "as_type";
    if input.dtype() == dtype {
        return Ok(input.clone());
    }
    let device = input.device();
    if input.n_elements() == 0 {
        return Tensor::empty(device, dtype, input.shape());
    }
    // 8-bit floats and sub-byte integers have kernels of their own (`narrow_types.rs`).
    if crate::narrow_types::converts(input.dtype(), dtype, device.capabilities()) {
        return crate::narrow_types::convert(input, dtype);
    }
    match plan_values(device.capabilities(), dtype, &[input.dtype()], |_| true) {
        Path::Gpu => cast_on_gpu(OP, input, dtype),
        Path::Fallback(counted) => run_on_host(
            OP,
            counted,
            &[input],
            input.shape(),
            dtype,
            dtype,
            |operands| Some(operands[0]),
        ),
    }
}

/// The native dtypes, for tests and reports.
pub fn native_dtypes() -> impl Iterator<Item = DType> {
    Elem::ALL.into_iter().map(dtype_of)
}

include!(concat!(env!("OUT_DIR"), "/ops.rs"));

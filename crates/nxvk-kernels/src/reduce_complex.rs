//! Complex (c64, c128) sum, product, all and any on the GPU, with Nx.BinaryBackend's results:
//! sums and products keep the complex type, all and any give u8.
//!
//! - `sum` is the real sum of the parts view (`complex_view.rs`: shape `S ++ [2]`) over the same
//!   axes, so it takes the tuned real templates (trees, subgroups, split passes) and reads each
//!   element once; the parts accumulate in f32 for c64 (f64 with [`Accumulation::F64`]) and f64
//!   for c128, as real sums do, so the error bound of real float sums applies per part.
//! - `any` is the real `any` of the parts view over the axes and the part axis: an element is
//!   non-zero when either part is (a NaN part included, -0.0 not).
//! - `all` reduces `not_equal(x, 0)` (the complex kernel, one u8 per element) with the u8 `all`:
//!   an element's truth needs both parts, which a fold over the parts view cannot see.
//! - `product` folds Complex.multiply (`nx_cmul`, IEEE Inf/NaN rules, no contraction) in the
//!   component type through the Strided template (`reduce_codegen::complex_product_shader`): a
//!   workgroup per output or per chunk of a long one, a shared-memory tree, a second pass over
//!   the partial products. The final pass multiplies by (1, 0) once, as BinaryBackend's fold
//!   starting from the integer 1 does. An intermediate c64 product that overflows f32 becomes
//!   infinite (and NaN beside it, as Complex.multiply makes it) where BinaryBackend, whose
//!   Elixir floats are f64, might still round a finite value. [`Accumulation::F64`] applies to
//!   sums only: products always fold in the component type.
//!
//! [`Accumulation::F64`]: crate::reduce::Accumulation::F64

use crate::catalog::REDUCE_COMPLEX_PRODUCT_KERNELS;
use crate::complex_view::{from_parts, parts};
use crate::op_table::{BinaryOp, ComplexElem};
use crate::ops::binary;
use crate::reduce::{
    CHUNK_ELEMENTS, Pass, ReduceOptions, SPLIT_MAX_TASKS, SPLIT_MIN_REDUCED, dispatch,
    reduce as real_reduce, split_axes, to_u32,
};
use crate::reduce_codegen::{FLAG_FINAL_PASS, ReduceOp};
use nxvk_core::{DType, Result, Tensor};

/// True when complex inputs of `op` have a GPU path (the others are errors in Nx).
pub(crate) const fn has_kernel(op: ReduceOp) -> bool {
    matches!(
        op,
        ReduceOp::Sum | ReduceOp::Product | ReduceOp::All | ReduceOp::Any
    )
}

/// Runs complex `op` over the sorted, checked `axes` of `input` into `output_shape`.
pub(crate) fn reduce(
    op: ReduceOp,
    input: &Tensor,
    axes: &[usize],
    options: &ReduceOptions<'_>,
    output_shape: &[usize],
) -> Result<Tensor> {
    let name = op.name();
    match op {
        ReduceOp::Sum => {
            let sums = real_reduce(
                op,
                &parts(name, input)?,
                &ReduceOptions {
                    axes: Some(axes),
                    ..*options
                },
            )?;
            from_parts(name, &sums)
        }
        ReduceOp::Any => {
            let part_axis = [axes, &[input.shape().len()]].concat();
            let any = real_reduce(
                op,
                &parts(name, input)?,
                &ReduceOptions {
                    axes: Some(&part_axis),
                    ..*options
                },
            )?;
            any.reshape(output_shape)
        }
        ReduceOp::All => {
            let zero = Tensor::zeros(input.device(), input.dtype(), &[])?;
            let truth = binary(BinaryOp::NotEqual, input, &zero)?;
            real_reduce(
                op,
                &truth,
                &ReduceOptions {
                    axes: Some(axes),
                    ..*options
                },
            )
        }
        _ => product(input, axes, output_shape),
    }
}

/// Complex.multiply's product over `axes` (see the module documentation).
fn product(input: &Tensor, axes: &[usize], output_shape: &[usize]) -> Result<Tensor> {
    const OP: ReduceOp = ReduceOp::Product;
    let complex = if input.dtype() == DType::C64 {
        ComplexElem::C64
    } else {
        ComplexElem::C128
    };
    let kernel = REDUCE_COMPLEX_PRODUCT_KERNELS[complex.index()];
    let device = input.device();
    let [(kept_shape, kept_strides), (reduced_shape, reduced_strides)] = split_axes(input, axes);
    let n_outputs: usize = kept_shape.iter().product();
    let n_reduced: usize = reduced_shape.iter().product();
    to_u32(OP.name(), input, n_outputs.max(n_reduced))?;
    let chunks = if n_reduced < SPLIT_MIN_REDUCED {
        1
    } else {
        n_reduced
            .div_ceil(CHUNK_ELEMENTS)
            .min(SPLIT_MAX_TASKS / n_outputs)
            .max(1)
    };
    let mut pass = Pass {
        op: OP,
        kernel,
        input,
        kept: (&kept_shape, &kept_strides),
        reduced: (&reduced_shape, &reduced_strides),
        chunks,
        flags: FLAG_FINAL_PASS,
        groups: n_outputs * chunks,
    };
    let output = Tensor::empty(device, input.dtype(), output_shape)?;
    if chunks == 1 {
        dispatch(&pass, &output)?;
        return Ok(output);
    }
    // Partial products [outputs, chunks], then one workgroup per output over its row.
    let partials = Tensor::empty(device, input.dtype(), &[n_outputs, chunks])?;
    pass.flags = 0;
    dispatch(&pass, &partials)?;
    let final_pass = Pass {
        op: OP,
        kernel,
        input: &partials,
        kept: (&[n_outputs], &[chunks]),
        reduced: (&[chunks], &[1]),
        chunks: 1,
        flags: FLAG_FINAL_PASS,
        groups: n_outputs,
    };
    dispatch(&final_pass, &output)?;
    Ok(output)
}

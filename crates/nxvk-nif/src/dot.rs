//! Contractions: Nx's `dot/6` and `conv/4` (nxvk-kernels' GEMM and convolution kernels).
//!
//! Axis checks, result types and tile choices are nxvk-kernels'. Dirty: both may autotune,
//! compile kernels and record GPU work.

use crate::reply::{Reply, guarded, message};
use crate::tensor::{TensorArc, wrap};
use crate::terms::decode_indices;
use nxvk_kernels::ConvOptions;
use rustler::{NifMap, Term};

/// `dot(a, contract_a, batch_a, b, contract_b, batch_b)`, with Nx's axis lists.
#[rustler::nif(schedule = "DirtyCpu")]
fn dot<'a>(
    a: TensorArc,
    contract_a: Term<'a>,
    batch_a: Term<'a>,
    b: TensorArc,
    contract_b: Term<'a>,
    batch_b: Term<'a>,
) -> Reply<TensorArc> {
    guarded("dot", || {
        nxvk_kernels::dot(
            &a.tensor,
            &decode_indices("dot", contract_a)?,
            &decode_indices("dot", batch_a)?,
            &b.tensor,
            &decode_indices("dot", contract_b)?,
            &decode_indices("dot", batch_b)?,
        )
        .map(wrap)
        .map_err(message)
    })
}

/// Nx's conv/4 options as the Elixir side passes them: a map with these atom keys (the
/// permutations may be `nil`, meaning the identity).
#[derive(NifMap)]
struct ConvTerm {
    strides: Vec<usize>,
    padding: Vec<(i64, i64)>,
    input_dilation: Vec<usize>,
    kernel_dilation: Vec<usize>,
    feature_group_size: usize,
    batch_group_size: usize,
    input_permutation: Option<Vec<usize>>,
    kernel_permutation: Option<Vec<usize>>,
    output_permutation: Option<Vec<usize>>,
}

impl From<ConvTerm> for ConvOptions {
    fn from(term: ConvTerm) -> Self {
        ConvOptions {
            strides: term.strides,
            padding: term.padding,
            input_dilation: term.input_dilation,
            kernel_dilation: term.kernel_dilation,
            feature_group_size: term.feature_group_size,
            batch_group_size: term.batch_group_size,
            input_permutation: term.input_permutation,
            kernel_permutation: term.kernel_permutation,
            output_permutation: term.output_permutation,
        }
    }
}

/// `conv(input, kernel, options)`: Nx's conv/4, `options` a map of [`ConvTerm`]'s fields.
#[rustler::nif(schedule = "DirtyCpu")]
fn conv<'a>(input: TensorArc, kernel: TensorArc, options: Term<'a>) -> Reply<TensorArc> {
    guarded("conv", || {
        let options: ConvTerm = options.decode().map_err(|_| {
            "conv: expected a map of strides, padding, input_dilation, kernel_dilation, \
             feature_group_size, batch_group_size and the three permutations"
                .to_owned()
        })?;
        nxvk_kernels::conv(&input.tensor, &kernel.tensor, &options.into())
            .map(wrap)
            .map_err(message)
    })
}

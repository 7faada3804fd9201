//! Complex (c64/c128) window_sum and window_product, composed from GPU ops rather than a
//! kernel of their own: the input is padded with the reduction's identity (`pad`), each window
//! position becomes one strided slice of the padded input (the positions' elements for every
//! output), the slices are stacked on a new last axis, and that axis is reduced by the
//! complex sum or product of `reduce_complex.rs` (Complex.multiply's rules). It moves
//! (window size) x (output size) elements, which window shapes of pooling layers keep small;
//! complex windows are rare next to real ones. window_max and window_min are errors, as in Nx
//! (complex numbers have no order).

use crate::movement;
use crate::operand_errors::bad_operands;
use crate::reduce::{ReduceOp, ReduceOptions, reduce};
use crate::window::{WindowOp, WindowOptions, window_output_shape};
use nxvk_core::{Complex32, Complex64, DType, Result, Tensor};

/// Nx's window_sum / window_product of the complex `input` (see the module documentation).
pub(crate) fn complex_window_reduce(
    op: WindowOp,
    input: &Tensor,
    window_dimensions: &[usize],
    options: &WindowOptions,
) -> Result<Tensor> {
    let name = op.name();
    let (reduction, identity) = match op {
        WindowOp::Sum => (ReduceOp::Sum, 0.0),
        WindowOp::Product => (ReduceOp::Product, 1.0),
        WindowOp::Max | WindowOp::Min => {
            return Err(bad_operands(
                name,
                &[input],
                "complex numbers have no order (Nx refuses this too)".into(),
            ));
        }
    };
    let output_shape = window_output_shape(input.shape(), window_dimensions, options)
        .map_err(|detail| bad_operands(name, &[input], detail))?;
    if output_shape.contains(&0) {
        return Tensor::empty(input.device(), input.dtype(), &output_shape);
    }
    let device = input.device();
    let identity = match input.dtype() {
        DType::C64 => Tensor::from_slice(device, &[], &[Complex32::new(identity, 0.0)])?,
        _ => Tensor::from_slice(device, &[], &[Complex64::new(f64::from(identity), 0.0)])?,
    };
    let padding: Vec<(i64, i64, usize)> = options
        .padding
        .iter()
        .map(|&(low, high)| (low, high, 0))
        .collect();
    let padded = movement::pad(input, &identity, &padding)?;
    // Elements each slice spans along an axis: one per output, `stride` apart.
    let spans: Vec<usize> = output_shape
        .iter()
        .zip(&options.strides)
        .map(|(&outputs, &stride)| (outputs - 1) * stride + 1)
        .collect();
    let mut slices = Vec::new();
    for position in window_positions(window_dimensions) {
        let starts: Vec<i64> = position
            .iter()
            .zip(&options.window_dilations)
            .map(|(&offset, &dilation)| (offset * dilation) as i64)
            .collect();
        slices.push(movement::slice(&padded, &starts, &spans, &options.strides)?);
    }
    let slices: Vec<&Tensor> = slices.iter().collect();
    let rank = output_shape.len();
    let stacked = movement::stack(&slices, rank)?;
    reduce(
        reduction,
        &stacked,
        &ReduceOptions {
            axes: Some(&[rank]),
            ..ReduceOptions::default()
        },
    )
}

/// Every position of a window of `dimensions`, in row-major order.
fn window_positions(dimensions: &[usize]) -> Vec<Vec<usize>> {
    let count: usize = dimensions.iter().product();
    (0..count)
        .map(|mut index| {
            let mut position = vec![0; dimensions.len()];
            for (axis, &size) in dimensions.iter().enumerate().rev() {
                position[axis] = index % size;
                index /= size;
            }
            position
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::window_positions;

    #[test]
    fn positions_are_row_major() {
        assert_eq!(
            window_positions(&[2, 3]),
            vec![
                vec![0, 0],
                vec![0, 1],
                vec![0, 2],
                vec![1, 0],
                vec![1, 1],
                vec![1, 2]
            ]
        );
        assert_eq!(window_positions(&[]), vec![Vec::<usize>::new()]);
    }
}

//! Complex (c64, c128) `conv` as one real implicit-GEMM convolution of the component type.
//!
//! The input is read as its parts (`complex_view::parts`, `[..input, p]`) with the part axis
//! as one more spatial axis (size 2, stride 1): the implicit GEMM's gather reads any strides,
//! so the complex input is never copied. The kernel becomes real filters `(f, q, o)` of the
//! same spatial axes plus a part axis `p` of size 2, whose window covers the input's part axis
//! exactly once (an output size of 1): filter `(f, 0, o)` holds the parts of `conj(w)`,
//! `(re, -im)`, and `(f, 1, o)` those of `i conj(w)`, `(im, re)`, so the contraction over
//! channels, kernel positions and `p` yields `sum re_x re_w - im_x im_w` (q = 0) and
//! `sum re_x im_w + im_x re_w` (q = 1), Complex.multiply's parts summed. `f` runs over the
//! filter groups (feature or batch groups), so each group of real filters stays contiguous and
//! pairs with its group of channels and images as the real convolution groups them. One copy
//! at the end moves `q` last (the complex result's parts view) and applies the output
//! permutation. Accumulation is the real convolution's, per part in the component type.

use crate::complex_view::{from_parts, imaginary_unit, parts};
use crate::conv::{ConvGeometry, ConvOptions, conv as real_conv, result_dtype};
use crate::movement::{contiguous, stack};
use crate::ops;
use nxvk_core::{Result, Tensor};

const OP: &str = "conv";

/// The real filters `[groups * 2 * group_filters, channels per group, spatial..., 2]` of a
/// complex canonical kernel `[filters, channels per group, spatial...]` (see the module doc).
fn real_filters(kernel: &Tensor, groups: usize) -> Result<Tensor> {
    let rank = kernel.shape().len();
    let conjugated = ops::conjugate(kernel)?;
    let rotated = ops::multiply(&imaginary_unit(kernel)?, &conjugated)?;
    // [filters, channels, spatial..., q, p], contiguous: split filters into (group, filter).
    let blocks = stack(&[&parts(OP, &conjugated)?, &parts(OP, &rotated)?], rank)?;
    let filters = kernel.shape()[0];
    let mut split_shape = vec![groups, filters / groups];
    split_shape.extend_from_slice(&blocks.shape()[1..]);
    // Axes now: group 0, filter 1, channels 2, spatial 3..rank+1, q rank+1, p rank+2.
    let q = rank + 1;
    let permutation: Vec<usize> = [0, q, 1]
        .into_iter()
        .chain(2..q)
        .chain([rank + 2])
        .collect();
    let ordered = contiguous(&blocks.reshape(&split_shape)?.transpose(&permutation)?)?;
    let mut real_shape = vec![2 * filters];
    real_shape.extend_from_slice(&kernel.shape()[1..]);
    real_shape.push(2);
    ordered.reshape(&real_shape)
}

/// Complex `conv` of `input` and `kernel` with checked `geometry` (see the module doc).
pub(crate) fn conv(
    input: &Tensor,
    kernel: &Tensor,
    options: &ConvOptions,
    geometry: &ConvGeometry,
) -> Result<Tensor> {
    let result = result_dtype(input.dtype(), kernel.dtype());
    let rank = input.shape().len();
    let groups = options.feature_group_size.max(options.batch_group_size);
    let input = ops::as_type(input, result)?;
    let canonical_kernel = ops::as_type(kernel, result)?.transpose(&geometry.kernel_permutation)?;
    let filters = real_filters(&canonical_kernel, groups)?;
    let mut input_permutation = geometry.input_permutation.clone();
    input_permutation.push(rank);
    let with_part_axis = |values: &[usize]| [values, &[1]].concat();
    let real_options = ConvOptions {
        strides: with_part_axis(&geometry.strides),
        padding: [&geometry.padding[..], &[(0, 0)]].concat(),
        input_dilation: with_part_axis(&geometry.input_dilation),
        kernel_dilation: with_part_axis(&geometry.kernel_dilation),
        feature_group_size: options.feature_group_size,
        batch_group_size: options.batch_group_size,
        input_permutation: Some(input_permutation),
        kernel_permutation: None,
        output_permutation: None,
    };
    // [images, groups * 2 * group filters, output spatial..., 1]
    let real = real_conv(&parts(OP, &input)?, &filters, &real_options)?;
    let spatial = geometry.output_spatial.len();
    let mut split_shape = vec![real.shape()[0], groups, 2, geometry.filters / groups];
    split_shape.extend_from_slice(&geometry.output_spatial);
    // Axes: images 0, group 1, q 2, filter 3, spatial 4..; each canonical complex axis of the
    // output (images, filters = (group, filter), spatial) in the output's order, then q.
    let canonical_axes = |axis: usize| -> Vec<usize> {
        match axis {
            0 => vec![0],
            1 => vec![1, 3],
            spatial_axis => vec![spatial_axis + 2],
        }
    };
    let mut inverse_output = vec![0; spatial + 2];
    for (axis, &target) in geometry.output_permutation.iter().enumerate() {
        inverse_output[target] = axis;
    }
    let permutation: Vec<usize> = inverse_output
        .iter()
        .flat_map(|&axis| canonical_axes(axis))
        .chain([2])
        .collect();
    let ordered = contiguous(&real.reshape(&split_shape)?.transpose(&permutation)?)?;
    let parts_shape = [&geometry.output_shape[..], &[2]].concat();
    from_parts(OP, &ordered.reshape(&parts_shape)?)
}

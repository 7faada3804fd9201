//! `conv` (Nx's conv/4) as an implicit GEMM on the device: no im2col buffer, host or device.
//!
//! Semantics are Nx.BinaryBackend's (and XLA's): the input is seen through
//! `input_permutation` as [batch, channels, spatial...], the kernel through
//! `kernel_permutation` as [filters, channels per group, spatial...]; the input is dilated
//! (`input_dilation` - 1 zeros between elements) and padded (`padding` low/high per spatial
//! axis, negative values crop), the kernel dilated (`kernel_dilation`), and windows are taken
//! every `strides`. With `feature_group_size` G, filter `o` sees input channels of group
//! `o / (filters / G)`; with `batch_group_size` B, the output batch is `batch / B` and filter
//! `o` of group `j = o / (filters / B)` sees input image `i + j * (batch / B)`. The canonical
//! output [batch / B, filters, spatial...] is laid out so that canonical axis `a` becomes axis
//! `output_permutation[a]` (Nx.Shape.conv's rule; the permutations Nx's gradients use are
//! swaps, for which every reading agrees). The result type is
//! `to_floating(merge(input, kernel))`. Padding and input-dilation zeros take part in the
//! products (0 * inf is NaN, as in Nx); kernel-dilation holes do not (XLA's reading; Nx's
//! BinaryBackend multiplies them as zeros, which differs only for non-finite inputs).
//!
//! Lowering: per group g, `C[g]` (filters of the group x output positions of all images) =
//! `A[g]` (the group's filters, dense `[filters][channels * kernel positions]`) times `B[g]`, where
//! `B[g]`'s element (channel * kernel position, image * output position) is gathered from the
//! input view inside the GEMM's staging loop (`conv_gather.rs`, geometry baked in): any input
//! strides, so the input permutation never moves data. The kernel is made dense once (it is
//! small). The GEMM stores C straight into the canonical output layout [image][group][filter]
//! [position] (split-K sums its partials first and moves them), so only an output
//! permutation other than the identity copies. Tiles, split-K and the autotuner are the
//! GEMM's (`dot.rs`), and so are epilogues ([`conv_with_epilogue`]: an elementwise function
//! applied in the store, where the output is not permuted and the GEMM takes one pass).
//!
//! f16, bf16, f32 and f64 results run on the GPU (f16/bf16 accumulate in f32); c64 and c128
//! run as one real convolution over the parts (`conv_complex.rs`); other result types (8-bit
//! floats) are `Error::Unsupported`. Nx rejects convolutions whose output
//! has an empty spatial axis, and so does this function.

use crate::catalog::{device_supports, elem_of};
use crate::conv_gather::{ConvolutionGather, GatherAxis};
use crate::dot::{
    EpilogueArguments, EpilogueOutcome, Matrices, Problem, check_epilogue_operands, collapse,
    saturating_product, strided_or_copied,
};
use crate::dot_codegen::GemmEpilogue;
use crate::{movement, ops, types};
use nxvk_core::{DType, Error, Result, Tensor};

const OP: &str = "conv";

/// Nx's conv/4 options. Empty vectors mean "1 on every spatial axis" (strides, dilations) or
/// "no padding"; `None` permutations are the identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvOptions {
    pub strides: Vec<usize>,
    /// (low, high) per spatial axis; negative values crop.
    pub padding: Vec<(i64, i64)>,
    pub input_dilation: Vec<usize>,
    pub kernel_dilation: Vec<usize>,
    pub feature_group_size: usize,
    pub batch_group_size: usize,
    pub input_permutation: Option<Vec<usize>>,
    pub kernel_permutation: Option<Vec<usize>>,
    pub output_permutation: Option<Vec<usize>>,
}

impl Default for ConvOptions {
    fn default() -> Self {
        ConvOptions {
            strides: Vec::new(),
            padding: Vec::new(),
            input_dilation: Vec::new(),
            kernel_dilation: Vec::new(),
            feature_group_size: 1,
            batch_group_size: 1,
            input_permutation: None,
            kernel_permutation: None,
            output_permutation: None,
        }
    }
}

/// Nx's result type of `conv` on an input of type `input` and a kernel of type `kernel`.
pub fn result_dtype(input: DType, kernel: DType) -> DType {
    types::to_floating(types::merge(input, kernel))
}

fn bad(input: &Tensor, kernel: &Tensor, detail: String) -> Error {
    Error::BadOperands {
        op: OP,
        shapes: vec![input.shape().to_vec(), kernel.shape().to_vec()],
        dtypes: vec![input.dtype(), kernel.dtype()],
        detail,
    }
}

/// One value per spatial axis: `values`, or `default` everywhere when empty.
fn per_axis<T: Copy>(
    name: &str,
    values: &[T],
    default: T,
    spatial: usize,
) -> std::result::Result<Vec<T>, String> {
    match values.len() {
        0 => Ok(vec![default; spatial]),
        length if length == spatial => Ok(values.to_vec()),
        length => Err(format!(
            "{name} has {length} entries for {spatial} spatial axes"
        )),
    }
}

fn permutation(
    name: &str,
    given: &Option<Vec<usize>>,
    rank: usize,
) -> std::result::Result<Vec<usize>, String> {
    let Some(given) = given else {
        return Ok((0..rank).collect());
    };
    let mut sorted = given.clone();
    sorted.sort_unstable();
    if sorted != (0..rank).collect::<Vec<_>>() {
        return Err(format!(
            "{name} {given:?} is not a permutation of the {rank} axes"
        ));
    }
    Ok(given.clone())
}

/// The output size of one spatial axis (`None` when the window does not fit, which Nx rejects).
/// In 128-bit arithmetic: the options are caller input and may be anything.
fn output_size(
    input_size: usize,
    kernel_size: usize,
    stride: usize,
    input_dilation: usize,
    kernel_dilation: usize,
    (low, high): (i64, i64),
) -> Option<usize> {
    let dilated = |size: usize, dilation: usize| -> i128 {
        if size == 0 {
            0
        } else {
            (size as i128 - 1) * dilation as i128 + 1
        }
    };
    let padded = dilated(input_size, input_dilation) + i128::from(low) + i128::from(high);
    let span = padded - dilated(kernel_size, kernel_dilation);
    if span < 0 {
        return None;
    }
    usize::try_from(span / stride as i128 + 1).ok()
}

/// A convolution's options checked against its operand shapes, with every default filled in
/// (one value per spatial axis, identity permutations).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvGeometry {
    pub strides: Vec<usize>,
    pub padding: Vec<(i64, i64)>,
    pub input_dilation: Vec<usize>,
    pub kernel_dilation: Vec<usize>,
    pub input_permutation: Vec<usize>,
    pub kernel_permutation: Vec<usize>,
    pub output_permutation: Vec<usize>,
    /// The canonical input's [batch, channels] and the canonical kernel's [filters, channels
    /// per group].
    pub batch: usize,
    pub channels: usize,
    pub filters: usize,
    pub group_channels: usize,
    /// Output size per spatial axis.
    pub output_spatial: Vec<usize>,
    /// The result's shape, after the output permutation.
    pub output_shape: Vec<usize>,
}

impl ConvGeometry {
    /// Checks `options` against an input and a kernel of these shapes (Nx's rules); the error
    /// says what does not fit.
    pub fn new(
        input_shape: &[usize],
        kernel_shape: &[usize],
        options: &ConvOptions,
    ) -> std::result::Result<Self, String> {
        let rank = input_shape.len();
        if rank < 3 || kernel_shape.len() != rank {
            return Err(
                "input and kernel need the same rank, at least 3 ([batch, channels, spatial...])"
                    .into(),
            );
        }
        let spatial = rank - 2;
        let strides = per_axis("strides", &options.strides, 1, spatial)?;
        let padding = per_axis("padding", &options.padding, (0, 0), spatial)?;
        let input_dilation = per_axis("input_dilation", &options.input_dilation, 1, spatial)?;
        let kernel_dilation = per_axis("kernel_dilation", &options.kernel_dilation, 1, spatial)?;
        let positive = [&strides, &input_dilation, &kernel_dilation]
            .iter()
            .all(|values| values.iter().all(|&value| value >= 1));
        let (feature_groups, batch_groups) = (options.feature_group_size, options.batch_group_size);
        if !positive || feature_groups == 0 || batch_groups == 0 {
            return Err("strides, dilations and group sizes must be at least 1".into());
        }
        let input_permutation = permutation("input_permutation", &options.input_permutation, rank)?;
        let kernel_permutation =
            permutation("kernel_permutation", &options.kernel_permutation, rank)?;
        let output_permutation =
            permutation("output_permutation", &options.output_permutation, rank)?;
        let canonical_input: Vec<usize> = input_permutation
            .iter()
            .map(|&axis| input_shape[axis])
            .collect();
        let canonical_kernel: Vec<usize> = kernel_permutation
            .iter()
            .map(|&axis| kernel_shape[axis])
            .collect();
        let (batch, channels) = (canonical_input[0], canonical_input[1]);
        let (filters, group_channels) = (canonical_kernel[0], canonical_kernel[1]);
        let groups_valid = (feature_groups == 1 || batch_groups == 1)
            && batch % batch_groups == 0
            && filters % feature_groups == 0
            && filters % batch_groups == 0
            && channels == group_channels * feature_groups;
        if !groups_valid {
            return Err(format!(
                "groups do not fit: {batch} images, {channels} input channels, {filters} filters of {group_channels} channels, feature_group_size {feature_groups}, batch_group_size {batch_groups}"
            ));
        }
        let mut output_spatial = Vec::with_capacity(spatial);
        for axis in 0..spatial {
            let size = output_size(
                canonical_input[axis + 2],
                canonical_kernel[axis + 2],
                strides[axis],
                input_dilation[axis],
                kernel_dilation[axis],
                padding[axis],
            )
            .filter(|&size| size > 0)
            .ok_or_else(|| format!("spatial axis {axis} of the output would be empty"))?;
            output_spatial.push(size);
        }
        let canonical_output: Vec<usize> =
            [vec![batch / batch_groups, filters], output_spatial.clone()].concat();
        let mut inverse_output = vec![0; rank];
        for (axis, &target) in output_permutation.iter().enumerate() {
            inverse_output[target] = axis;
        }
        let output_shape = inverse_output
            .iter()
            .map(|&axis| canonical_output[axis])
            .collect();
        Ok(ConvGeometry {
            strides,
            padding,
            input_dilation,
            kernel_dilation,
            input_permutation,
            kernel_permutation,
            output_permutation,
            batch,
            channels,
            filters,
            group_channels,
            output_spatial,
            output_shape,
        })
    }
}

/// Nx's `conv(input, kernel, options)`; see the module documentation for the semantics.
pub fn conv(input: &Tensor, kernel: &Tensor, options: &ConvOptions) -> Result<Tensor> {
    match lower(input, kernel, options)? {
        Lowering::Finished(result) => Ok(result),
        Lowering::Gemm(gemm) => gemm.output(gemm.problem.run(None)?),
    }
}

/// [`conv`] with `epilogue` applied to each output element in the GEMM's store (as
/// [`dot_with_epilogue`](crate::dot::dot_with_epilogue) does; each of `operands` has the
/// output's shape). It applies where the output permutation is the identity and the GEMM
/// takes one tiled pass; otherwise the plain result comes back. An operand is read through
/// its strides along the output's channels and along (image, position) as one axis; one
/// whose image and position strides do not make one axis (a full-size operand) is first
/// copied channel-major, where they do.
pub fn conv_with_epilogue(
    input: &Tensor,
    kernel: &Tensor,
    options: &ConvOptions,
    epilogue: &GemmEpilogue,
    operands: &[&Tensor],
) -> Result<EpilogueOutcome> {
    let gemm = match lower(input, kernel, options)? {
        Lowering::Finished(result) => return Ok(EpilogueOutcome::Plain(result)),
        Lowering::Gemm(gemm) => gemm,
    };
    let output_shape: Vec<usize> = gemm
        .inverse_output
        .iter()
        .map(|&axis| gemm.canonical_shape[axis])
        .collect();
    check_epilogue_operands(&output_shape, gemm.problem.elem, operands)?;
    let identity = gemm
        .inverse_output
        .iter()
        .enumerate()
        .all(|(axis, &target)| axis == target);
    let variant = identity.then(|| gemm.problem.epilogue_variant()).flatten();
    let Some(variant) = variant else {
        return Ok(EpilogueOutcome::Plain(
            gemm.output(gemm.problem.run(None)?)?,
        ));
    };
    let rank = gemm.canonical_shape.len();
    // Channel-major order: channels, images, then the spatial axes.
    let channel_major: Vec<usize> = [1, 0].into_iter().chain(2..rank).collect();
    let image_and_positions: Vec<usize> = [0].into_iter().chain(2..rank).collect();
    let group_filters = gemm.problem.m;
    let strides = |tensor: &Tensor| -> Option<[usize; 3]> {
        let (shape, strides) = (tensor.shape(), tensor.layout().strides());
        let channel = collapse(shape, strides, &[1])?.1;
        let column = collapse(shape, strides, &image_and_positions)?.1;
        Some([group_filters * channel, channel, column])
    };
    let channel_major_copy = |operand: &Tensor| {
        movement::contiguous(&operand.transpose(&channel_major)?)?.transpose(&channel_major)
    };
    let epilogue_operands = operands
        .iter()
        .map(|operand| strided_or_copied(operand, strides, channel_major_copy))
        .collect::<Result<_>>()?;
    let arguments = EpilogueArguments {
        epilogue,
        operands: epilogue_operands,
    };
    let output = gemm
        .problem
        .run_with(variant, gemm.problem.order(), Some(&arguments))?;
    Ok(EpilogueOutcome::Applied(gemm.output(output)?))
}

/// A convolution after validation: its result already (complex, empty, no depth), or one
/// implicit GEMM.
enum Lowering {
    Finished(Tensor),
    Gemm(Box<ConvolutionGemm>),
}

/// The implicit GEMM of a convolution and how its C becomes the result.
struct ConvolutionGemm {
    problem: Problem,
    /// [image, filters, spatial...]: C's layout.
    canonical_shape: Vec<usize>,
    /// The transpose from the canonical layout to the result's.
    inverse_output: Vec<usize>,
}

impl ConvolutionGemm {
    /// The result from C: the canonical output, moved only when the output permutation is
    /// not the identity.
    fn output(&self, c: Tensor) -> Result<Tensor> {
        let canonical = c.reshape(&self.canonical_shape)?;
        movement::contiguous(&canonical.transpose(&self.inverse_output)?)
    }
}

fn lower(input: &Tensor, kernel: &Tensor, options: &ConvOptions) -> Result<Lowering> {
    if !std::sync::Arc::ptr_eq(input.device(), kernel.device()) {
        return Err(Error::ForeignTensor { op: OP });
    }
    let geometry = ConvGeometry::new(input.shape(), kernel.shape(), options)
        .map_err(|detail| bad(input, kernel, detail))?;
    let ConvGeometry {
        strides,
        padding,
        input_dilation,
        kernel_dilation,
        batch,
        filters,
        group_channels,
        output_spatial,
        output_shape: final_shape,
        ..
    } = geometry.clone();
    let spatial = output_spatial.len();
    let (feature_groups, batch_groups) = (options.feature_group_size, options.batch_group_size);
    let canonical_input = input.transpose(&geometry.input_permutation)?;
    let canonical_kernel = kernel.transpose(&geometry.kernel_permutation)?;
    let result = result_dtype(input.dtype(), kernel.dtype());
    let device = input.device();
    if result.is_complex() && crate::dot::runs_on_gpu(result, device.capabilities()) {
        return crate::conv_complex::conv(input, kernel, options, &geometry)
            .map(Lowering::Finished);
    }
    let Some(elem) = elem_of(result).filter(|&elem| device_supports(device.capabilities(), elem))
    else {
        return Err(Error::Unsupported {
            op: OP,
            dtype: result,
            detail: "conv runs on the GPU for f16, bf16, f32, f64, c64 and c128 results (on devices with their shader features)".into(),
        });
    };
    let output_batch = batch / batch_groups;
    let canonical_shape: Vec<usize> =
        [vec![output_batch, filters], output_spatial.clone()].concat();
    let mut inverse_output = vec![0; canonical_shape.len()];
    for (axis, &target) in geometry.output_permutation.iter().enumerate() {
        inverse_output[target] = axis;
    }
    let kernel_positions = saturating_product(&canonical_kernel.shape()[2..]);
    let output_positions = saturating_product(&output_spatial);
    let depth = group_channels.saturating_mul(kernel_positions);
    if final_shape.contains(&0) {
        return Tensor::empty(device, result, &final_shape).map(Lowering::Finished);
    }
    if depth == 0 {
        return Tensor::zeros(device, result, &final_shape).map(Lowering::Finished);
    }

    let groups = feature_groups.max(batch_groups);
    let group_filters = filters / groups;
    let cast_input = ops::as_type(&canonical_input, result)?;
    let dense_kernel = movement::contiguous(&ops::as_type(&canonical_kernel, result)?)?;
    let word = |value: usize| -> Result<u32> {
        u32::try_from(value).map_err(|_| {
            bad(
                input,
                kernel,
                format!("{value} does not fit the kernel's 32-bit index arithmetic"),
            )
        })
    };
    let input_strides = cast_input.layout().strides().to_vec();
    let mut axes = Vec::with_capacity(spatial);
    for axis in 0..spatial {
        // The gather computes `output * stride + kernel * dilation - padding` in signed 32 bits.
        let reach = (output_spatial[axis] as i128) * strides[axis] as i128
            + (canonical_kernel.shape()[axis + 2] as i128) * kernel_dilation[axis] as i128;
        let low_padding = i32::try_from(padding[axis].0).ok();
        let (Some(low_padding), true) = (low_padding, reach <= i128::from(i32::MAX)) else {
            return Err(bad(
                input,
                kernel,
                format!("spatial axis {axis} exceeds the kernel's 32-bit index arithmetic"),
            ));
        };
        axes.push(GatherAxis {
            output_size: word(output_spatial[axis])?,
            kernel_size: word(canonical_kernel.shape()[axis + 2])?,
            stride: word(strides[axis])?,
            kernel_dilation: word(kernel_dilation[axis])?,
            input_dilation: word(input_dilation[axis])?,
            low_padding,
            input_size: word(canonical_input.shape()[axis + 2])?,
            input_stride: word(input_strides[axis + 2])?,
        });
    }
    let gather = ConvolutionGather {
        kernel_positions: word(kernel_positions)?,
        output_positions: word(output_positions)?,
        group_channel_offset: word(if feature_groups > 1 {
            group_channels
        } else {
            0
        })?,
        group_batch_offset: word(if batch_groups > 1 { output_batch } else { 0 })?,
        input_batch_stride: word(input_strides[0])?,
        input_channel_stride: word(input_strides[1])?,
        axes,
    };
    let problem = Problem {
        elem,
        batches: groups,
        m: group_filters,
        n: output_batch * output_positions,
        k: depth,
        a: Matrices {
            tensor: dense_kernel,
            batch_stride: group_filters * depth,
            first_stride: depth,
            second_stride: 1,
        },
        b: Matrices {
            tensor: cast_input,
            batch_stride: 0,
            first_stride: 0,
            second_stride: 0,
        },
        convolution: Some(gather),
    };
    // C comes as [image][group][filter][position]: the canonical output.
    Ok(Lowering::Gemm(Box::new(ConvolutionGemm {
        problem,
        canonical_shape,
        inverse_output,
    })))
}

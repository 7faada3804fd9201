//! `conv` against a direct host evaluation of Nx's conv/4 (Nx.BinaryBackend's semantics): one
//! and two spatial axes (three in a fixed case), strides, low/high padding (negative crops),
//! input and kernel dilation, feature and batch groups, input/kernel/output permutations,
//! strided views, mixed dtypes, and the shapes Nx.Defn.Grad produces for the input and kernel
//! gradients. Tolerances as in `gemm_check`. Padding and input-dilation zeros take part in
//! the products (0 * inf is NaN, as in Nx); kernel-dilation holes do not (XLA's reading;
//! Nx.BinaryBackend pads the kernel with zeros, which differs only for non-finite inputs).

mod common;
mod gemm_check;

use common::*;
use gemm_check::check_all;
use nxvk_core::{Complex64, DType, Error, Layout, Tensor, contiguous_strides};
use nxvk_kernels::conv::{ConvOptions, conv, result_dtype};
use nxvk_kernels::reference::{self, Value};
use proptest::prelude::*;

/// Moderate values (a conv sums many products), now and then NaN or an infinity.
fn conv_value(dtype: DType, specials: bool, rng: &mut SplitMix) -> Value {
    if !dtype.is_float() && !dtype.is_complex() {
        return Value::Int(rng.below(9) as i128 - 4);
    }
    let mut part = || match rng.below(64) {
        0 if specials => f64::NAN,
        1 if specials => f64::INFINITY,
        _ => rng.unit() * 4.0 - 2.0,
    };
    let value = if dtype.is_complex() {
        let re = part();
        Value::Complex(Complex64::new(re, part()))
    } else {
        Value::Float(part())
    };
    reference::round_to(value, dtype)
}

/// A tensor of `shape` (contiguous, or a slice of a larger one), with its row-major values.
fn input(
    dtype: DType,
    shape: &[usize],
    sliced: bool,
    specials: bool,
    rng: &mut SplitMix,
) -> (Tensor, Vec<Value>) {
    let base_shape: Vec<usize> = if sliced {
        shape.iter().map(|size| size + 1).collect()
    } else {
        shape.to_vec()
    };
    let count: usize = base_shape.iter().product();
    let values: Vec<Value> = (0..count)
        .map(|_| conv_value(dtype, specials, rng))
        .collect();
    let base = Tensor::from_bytes(
        &device(),
        dtype,
        &base_shape,
        &reference::encode(dtype, &values),
    )
    .unwrap();
    if !sliced {
        return (base, values);
    }
    let starts = vec![1; shape.len()];
    let layout = Layout::contiguous(&base_shape)
        .slice(&starts, shape)
        .unwrap();
    let logical = layout
        .element_indices()
        .map(|index| values[index])
        .collect();
    (base.slice(&starts, shape).unwrap(), logical)
}

fn identity(rank: usize) -> Vec<usize> {
    (0..rank).collect()
}

/// Nx's conv on the host: values in the final (permuted) layout, product magnitudes, depth.
fn reference_conv(
    input_shape: &[usize],
    input_values: &[Value],
    kernel_shape: &[usize],
    kernel_values: &[Value],
    options: &ConvOptions,
    result: DType,
) -> (Vec<usize>, Vec<Value>, Vec<f64>, usize) {
    let rank = input_shape.len();
    let spatial = rank - 2;
    let input_permutation = options
        .input_permutation
        .clone()
        .unwrap_or_else(|| identity(rank));
    let kernel_permutation = options
        .kernel_permutation
        .clone()
        .unwrap_or_else(|| identity(rank));
    let output_permutation = options
        .output_permutation
        .clone()
        .unwrap_or_else(|| identity(rank));
    let one_or = |values: &[usize], axis: usize| values.get(axis).copied().unwrap_or(1);
    let canonical_input: Vec<usize> = input_permutation.iter().map(|&a| input_shape[a]).collect();
    let canonical_kernel: Vec<usize> = kernel_permutation
        .iter()
        .map(|&a| kernel_shape[a])
        .collect();
    let input_strides = contiguous_strides(input_shape);
    let kernel_strides = contiguous_strides(kernel_shape);
    let (batch, filters, group_channels) =
        (canonical_input[0], canonical_kernel[0], canonical_kernel[1]);
    let (feature_groups, batch_groups) = (options.feature_group_size, options.batch_group_size);
    let output_batch = batch / batch_groups;
    let output_spatial: Vec<usize> = (0..spatial)
        .map(|axis| {
            let (low, high) = options.padding.get(axis).copied().unwrap_or((0, 0));
            let dilated_input = (canonical_input[axis + 2] as i64 - 1)
                * one_or(&options.input_dilation, axis) as i64
                + 1;
            let dilated_kernel = (canonical_kernel[axis + 2] as i64 - 1)
                * one_or(&options.kernel_dilation, axis) as i64
                + 1;
            ((dilated_input + low + high - dilated_kernel) / one_or(&options.strides, axis) as i64
                + 1) as usize
        })
        .collect();
    let canonical_output: Vec<usize> =
        [vec![output_batch, filters], output_spatial.clone()].concat();
    let mut final_shape = vec![0; rank];
    for (axis, &target) in output_permutation.iter().enumerate() {
        final_shape[target] = canonical_output[axis];
    }
    let final_strides = contiguous_strides(&final_shape);
    let kernel_spatial = &canonical_kernel[2..];
    let kernel_positions: usize = kernel_spatial.iter().product();
    let depth = group_channels * kernel_positions;
    let n_out: usize = canonical_output.iter().product();
    let mut values = vec![Value::Float(0.0); n_out];
    // Real products are complex ones with zero imaginary parts (exactly the real product in
    // the real part); complex ones are Complex.multiply's four real products.
    let as_complex = |value: Value| match reference::round_to(value, result) {
        Value::Float(x) => Complex64::new(x, 0.0),
        Value::Complex(z) => z,
        other => panic!("{other:?}"),
    };
    let mut magnitudes = vec![0.0; n_out];
    for output in 0..n_out {
        let coordinates = common::coordinates(&canonical_output, output);
        let (image, filter) = (coordinates[0], coordinates[1]);
        let (source_image, channel_offset) = if batch_groups > 1 {
            let group = filter / (filters / batch_groups);
            (image + group * output_batch, 0)
        } else {
            let group = filter / (filters / feature_groups);
            (image, group * group_channels)
        };
        let mut sum = Complex64::new(0.0, 0.0);
        let mut magnitude = 0.0;
        for channel in 0..group_channels {
            for position in 0..kernel_positions {
                let kernel_coordinates = common::coordinates(kernel_spatial, position);
                // A position in the padding or between dilated input elements reads a zero,
                // which still multiplies the kernel value (0 * inf is NaN, as in Nx).
                let mut input_canonical = vec![source_image, channel_offset + channel];
                let mut inside = true;
                for axis in 0..spatial {
                    let (low, _) = options.padding.get(axis).copied().unwrap_or((0, 0));
                    let padded = (coordinates[axis + 2] * one_or(&options.strides, axis)
                        + kernel_coordinates[axis] * one_or(&options.kernel_dilation, axis))
                        as i64
                        - low;
                    let dilation = one_or(&options.input_dilation, axis) as i64;
                    let coordinate = (padded / dilation.max(1)) as usize;
                    if padded < 0
                        || padded % dilation != 0
                        || coordinate >= canonical_input[axis + 2]
                    {
                        inside = false;
                    }
                    input_canonical.push(coordinate);
                }
                let input_value = if inside {
                    let input_index: usize = input_canonical
                        .iter()
                        .enumerate()
                        .map(|(axis, &c)| c * input_strides[input_permutation[axis]])
                        .sum();
                    input_values[input_index]
                } else {
                    Value::Float(0.0)
                };
                let kernel_canonical: Vec<usize> =
                    [vec![filter, channel], kernel_coordinates].concat();
                let kernel_index: usize = kernel_canonical
                    .iter()
                    .enumerate()
                    .map(|(axis, &c)| c * kernel_strides[kernel_permutation[axis]])
                    .sum();
                let (x, w) = (
                    as_complex(input_value),
                    as_complex(kernel_values[kernel_index]),
                );
                sum.re += x.re * w.re - x.im * w.im;
                sum.im += x.im * w.re + x.re * w.im;
                magnitude += if result.is_complex() {
                    (x.re * w.re).abs()
                        + (x.im * w.im).abs()
                        + (x.im * w.re).abs()
                        + (x.re * w.im).abs()
                } else {
                    (x.re * w.re).abs()
                };
            }
        }
        let final_index: usize = (0..rank)
            .map(|axis| coordinates[axis] * final_strides[output_permutation[axis]])
            .sum();
        values[final_index] = if result.is_complex() {
            Value::Complex(sum)
        } else {
            Value::Float(sum.re)
        };
        magnitudes[final_index] = magnitude;
    }
    (final_shape, values, magnitudes, depth)
}

/// Runs one conv on the GPU and the host and compares them.
fn run_and_check(
    input_dtype: DType,
    input_shape: &[usize],
    kernel_dtype: DType,
    kernel_shape: &[usize],
    options: &ConvOptions,
    specials: bool,
    rng: &mut SplitMix,
) -> Result<(), String> {
    let (input_tensor, input_values) =
        input(input_dtype, input_shape, rng.below(2) == 0, specials, rng);
    let (kernel_tensor, kernel_values) =
        input(kernel_dtype, kernel_shape, rng.below(2) == 0, specials, rng);
    let output = conv(&input_tensor, &kernel_tensor, options)
        .map_err(|error| format!("{options:?}: {error}"))?;
    let result = result_dtype(input_dtype, kernel_dtype);
    let (shape, expected, magnitudes, depth) = reference_conv(
        input_shape,
        &input_values,
        kernel_shape,
        &kernel_values,
        options,
        result,
    );
    if output.shape() != shape || output.dtype() != result {
        return Err(format!(
            "{:?} {} but expected {shape:?} {result}",
            output.shape(),
            output.dtype()
        ));
    }
    check_all(result, &read(&output), &expected, &magnitudes, depth)
        .map_err(|why| format!("{input_shape:?} * {kernel_shape:?} {options:?}: {why}"))
}

/// The float dtypes of the device and the complex ones (one real convolution of the parts).
fn float_dtypes() -> Vec<DType> {
    [DType::F16, DType::BF16, DType::F32, DType::F64]
        .into_iter()
        .filter(|dtype| nxvk_kernels::ops::native_dtypes().any(|native| native == *dtype))
        .chain([DType::C64, DType::C128])
        .collect()
}

fn random_permutation(rank: usize, rng: &mut SplitMix) -> Option<Vec<usize>> {
    if rng.below(3) != 0 {
        return None;
    }
    let mut order: Vec<usize> = (0..rank).collect();
    for index in (1..rank).rev() {
        order.swap(index, rng.below(index as u64 + 1) as usize);
    }
    Some(order)
}

/// A random valid convolution: shapes in the permuted layouts and the options.
fn random_problem(rng: &mut SplitMix) -> (Vec<usize>, Vec<usize>, ConvOptions) {
    let spatial = 1 + rng.below(2) as usize;
    let rank = spatial + 2;
    let (feature_groups, batch_groups) = match rng.below(4) {
        0 => (1 + rng.below(3) as usize, 1),
        1 => (1, 1 + rng.below(3) as usize),
        _ => (1, 1),
    };
    let groups = feature_groups.max(batch_groups);
    let batch = batch_groups * (1 + rng.below(2) as usize);
    let group_channels = 1 + rng.below(3) as usize;
    let channels = group_channels * feature_groups;
    let filters = groups * (1 + rng.below(3) as usize);
    let mut options = ConvOptions {
        feature_group_size: feature_groups,
        batch_group_size: batch_groups,
        ..ConvOptions::default()
    };
    let mut canonical_input = vec![batch, channels];
    let mut canonical_kernel = vec![filters, group_channels];
    for _ in 0..spatial {
        let kernel_size = 1 + rng.below(3) as usize;
        let stride = 1 + rng.below(2) as usize;
        let input_dilation = 1 + rng.below(2) as usize;
        let kernel_dilation = 1 + rng.below(2) as usize;
        let low = rng.below(4) as i64 - 1;
        let high = rng.below(4) as i64 - 1;
        let dilated_kernel = ((kernel_size - 1) * kernel_dilation + 1) as i64;
        // Enough input that the padded, dilated input covers the kernel.
        let mut size = 1 + rng.below(6) as usize;
        while ((size as i64 - 1) * input_dilation as i64 + 1 + low + high) < dilated_kernel {
            size += 1;
        }
        canonical_input.push(size);
        canonical_kernel.push(kernel_size);
        options.strides.push(stride);
        options.input_dilation.push(input_dilation);
        options.kernel_dilation.push(kernel_dilation);
        options.padding.push((low, high));
    }
    options.input_permutation = random_permutation(rank, rng);
    options.kernel_permutation = random_permutation(rank, rng);
    options.output_permutation = random_permutation(rank, rng);
    // The stored tensors are laid out so that the permutations bring them to canonical order.
    let stored = |canonical: &[usize], permutation: &Option<Vec<usize>>| -> Vec<usize> {
        let mut shape = canonical.to_vec();
        if let Some(permutation) = permutation {
            for (axis, &source) in permutation.iter().enumerate() {
                shape[source] = canonical[axis];
            }
        }
        shape
    };
    (
        stored(&canonical_input, &options.input_permutation),
        stored(&canonical_kernel, &options.kernel_permutation),
        options,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases_or(32), ..ProptestConfig::default() })]

    #[test]
    fn conv_matches_the_reference(seed in any::<u64>()) {
        let mut rng = SplitMix(seed);
        let dtypes = float_dtypes();
        let (input_shape, kernel_shape, options) = random_problem(&mut rng);
        let input_dtype = dtypes[rng.below(dtypes.len() as u64) as usize];
        // Now and then an integer kernel (the result is the input's float type).
        let kernel_dtype = if rng.below(5) == 0 { DType::S8 } else { input_dtype };
        let specials = rng.below(3) == 0;
        if let Err(why) = run_and_check(input_dtype, &input_shape, kernel_dtype, &kernel_shape, &options, specials, &mut rng) {
            return Err(TestCaseError::fail(why));
        }
    }
}

/// The null arm: a perturbed output element is rejected by the same comparison.
#[test]
fn perturbed_results_are_rejected() {
    let mut rng = SplitMix(9);
    for dtype in [DType::F32, DType::C64, DType::C128] {
        let (input_tensor, input_values) = input(dtype, &[2, 3, 6, 5], false, false, &mut rng);
        let (kernel_tensor, kernel_values) = input(dtype, &[4, 3, 3, 2], false, false, &mut rng);
        let options = ConvOptions::default();
        let output = conv(&input_tensor, &kernel_tensor, &options).unwrap();
        let (_, expected, magnitudes, depth) = reference_conv(
            &[2, 3, 6, 5],
            &input_values,
            &[4, 3, 3, 2],
            &kernel_values,
            &options,
            dtype,
        );
        let mut actual = read(&output);
        check_all(dtype, &actual, &expected, &magnitudes, depth).unwrap();
        actual[7] = match actual[7] {
            Value::Float(value) => Value::Float(value + (value.abs() + 1.0) / 16.0),
            Value::Complex(value) => Value::Complex(Complex64::new(
                value.re + (value.re.abs() + 1.0) / 16.0,
                value.im,
            )),
            other => other,
        };
        assert!(
            check_all(dtype, &actual, &expected, &magnitudes, depth).is_err(),
            "{dtype}: the perturbed result passed"
        );
    }
}

/// The conv Nx.Defn.Grad builds for the input gradient of a strided 2-D conv: the output
/// gradient dilated by the strides, the kernel reversed spatially with its two channel axes
/// swapped (kernel_permutation [1, 0, 2, 3]), padded by kernel size - 1.
#[test]
fn input_gradient_shape() {
    let mut rng = SplitMix(21);
    for dtype in float_dtypes() {
        let options = ConvOptions {
            padding: vec![(2, 3), (1, 2)],
            input_dilation: vec![2, 2],
            kernel_permutation: Some(vec![1, 0, 2, 3]),
            ..ConvOptions::default()
        };
        // Output gradient [batch 2, filters 4, 3, 4]; forward kernel [4 filters, 3 channels, 3, 2].
        run_and_check(
            dtype,
            &[2, 4, 3, 4],
            dtype,
            &[4, 3, 3, 2],
            &options,
            false,
            &mut rng,
        )
        .unwrap();
    }
}

/// The conv Nx.Defn.Grad builds for the kernel gradient: input and output gradient with their
/// batch and channel axes swapped (input, kernel and output permutations [1, 0, 2, 3]) and the
/// forward strides as kernel dilation.
#[test]
fn kernel_gradient_shape() {
    let mut rng = SplitMix(22);
    for dtype in float_dtypes() {
        let options = ConvOptions {
            padding: vec![(1, 1), (0, 1)],
            kernel_dilation: vec![2, 2],
            input_permutation: Some(vec![1, 0, 2, 3]),
            kernel_permutation: Some(vec![1, 0, 2, 3]),
            output_permutation: Some(vec![1, 0, 2, 3]),
            ..ConvOptions::default()
        };
        // Input [batch 3, channels 2, 7, 6]; output gradient [batch 3, filters 4, 3, 3].
        run_and_check(
            dtype,
            &[3, 2, 7, 6],
            dtype,
            &[3, 4, 3, 3],
            &options,
            false,
            &mut rng,
        )
        .unwrap();
    }
}

/// Grouped kernel gradients use batch groups: each group of filters sees its own images.
#[test]
fn batch_and_feature_groups() {
    let mut rng = SplitMix(23);
    let batch_grouped = ConvOptions {
        batch_group_size: 3,
        ..ConvOptions::default()
    };
    run_and_check(
        DType::F32,
        &[6, 2, 5, 4],
        DType::F32,
        &[6, 2, 2, 2],
        &batch_grouped,
        false,
        &mut rng,
    )
    .unwrap();
    let depthwise = ConvOptions {
        feature_group_size: 4,
        strides: vec![2, 1],
        ..ConvOptions::default()
    };
    run_and_check(
        DType::F64,
        &[2, 4, 7, 5],
        DType::F64,
        &[8, 1, 3, 3],
        &depthwise,
        false,
        &mut rng,
    )
    .unwrap();
}

/// Three spatial axes, and a deep channel count that takes the split-K path.
#[test]
fn volumes_and_deep_channels() {
    let mut rng = SplitMix(24);
    let options = ConvOptions {
        strides: vec![1, 2, 1],
        padding: vec![(1, 0), (0, 0), (1, 1)],
        ..ConvOptions::default()
    };
    run_and_check(
        DType::F32,
        &[1, 2, 4, 5, 3],
        DType::F32,
        &[3, 2, 2, 2, 3],
        &options,
        false,
        &mut rng,
    )
    .unwrap();
    run_and_check(
        DType::F32,
        &[1, 600, 3, 3],
        DType::F32,
        &[2, 600, 3, 3],
        &ConvOptions::default(),
        false,
        &mut rng,
    )
    .unwrap();
}

/// Bad options are errors naming the op; an empty output axis is refused as Nx does; complex
/// results are unsupported.
#[test]
fn bad_options_are_errors() {
    let dev = device();
    let input_tensor = Tensor::zeros(&dev, DType::F32, &[1, 2, 4, 4]).unwrap();
    let kernel_tensor = Tensor::zeros(&dev, DType::F32, &[3, 2, 2, 2]).unwrap();
    let refused = |options: ConvOptions| match conv(&input_tensor, &kernel_tensor, &options) {
        Err(Error::BadOperands { op: "conv", .. }) => {}
        other => panic!("{options:?}: expected BadOperands, got {other:?}"),
    };
    refused(ConvOptions {
        strides: vec![1],
        ..ConvOptions::default()
    });
    refused(ConvOptions {
        feature_group_size: 2,
        ..ConvOptions::default()
    });
    refused(ConvOptions {
        padding: vec![(-2, -2), (0, 0)],
        ..ConvOptions::default()
    });
    refused(ConvOptions {
        input_permutation: Some(vec![0, 0, 1, 2]),
        ..ConvOptions::default()
    });
    // Hostile values are errors, not overflows.
    refused(ConvOptions {
        kernel_dilation: vec![usize::MAX, 1],
        ..ConvOptions::default()
    });
    refused(ConvOptions {
        padding: vec![(i64::MIN, 0), (0, 0)],
        ..ConvOptions::default()
    });
    refused(ConvOptions {
        padding: vec![(i64::MAX, i64::MAX), (0, 0)],
        ..ConvOptions::default()
    });
    // 8-bit floats have no kernels (complex ones run as real convolutions of their parts).
    let f8 = Tensor::zeros(&dev, DType::F8E5M2, &[3, 2, 2, 2]).unwrap();
    assert!(matches!(
        conv(&f8, &f8, &ConvOptions::default()),
        Err(Error::Unsupported { op: "conv", .. })
    ));
    let empty_batch = Tensor::zeros(&dev, DType::F32, &[0, 2, 4, 4]).unwrap();
    let output = conv(&empty_batch, &kernel_tensor, &ConvOptions::default()).unwrap();
    assert_eq!(output.shape(), &[0, 3, 3, 3]);
}

//! Window reductions and window_scatter_max/min against a direct host evaluation of Nx's
//! semantics: random ranks 1-3, window sizes, strides, dilations and low/high padding
//! (negative crops), contiguous/transposed/sliced inputs, every native dtype, NaN and
//! infinities. Max, min and integer results must match exactly; float sums and products
//! within the bound of `gemm_check` (f32 accumulation for f16/bf16/f32), and scattered float
//! sums likewise (their addition order differs).

mod common;
mod gemm_check;

use common::*;
use gemm_check::check;
use nxvk_core::{DType, Error, Tensor};
use nxvk_kernels::reference::{self, Value};
use nxvk_kernels::window::{ScatterSelect, WindowOp, WindowOptions, window_reduce, window_scatter};
use proptest::prelude::*;

/// Random window geometry for `shape` that fits (padding grows until the window does).
fn random_geometry(shape: &[usize], rng: &mut SplitMix) -> (Vec<usize>, WindowOptions) {
    let mut window = Vec::new();
    let mut options = WindowOptions::default();
    for &size in shape {
        let extent = 1 + rng.below(3) as usize;
        let dilation = 1 + rng.below(2) as usize;
        let mut low = rng.below(3) as i64 - 1;
        let high = rng.below(3) as i64 - 1;
        let dilated = ((extent - 1) * dilation + 1) as i64;
        while (size as i64 + low + high) < dilated {
            low += 1;
        }
        window.push(extent);
        options.window_dilations.push(dilation);
        options.strides.push(1 + rng.below(2) as usize);
        options.padding.push((low, high));
    }
    (window, options)
}

fn output_shape(shape: &[usize], window: &[usize], options: &WindowOptions) -> Vec<usize> {
    (0..shape.len())
        .map(|axis| {
            let (low, high) = options.padding[axis];
            let padded = shape[axis] as i64 + low + high;
            let dilated = ((window[axis] - 1) * options.window_dilations[axis] + 1) as i64;
            ((padded - dilated) / options.strides[axis] as i64 + 1) as usize
        })
        .collect()
}

/// The input coordinate (row-major index) of window `output` at window offset `position`,
/// or `None` in the padding.
fn window_element(
    shape: &[usize],
    window: &[usize],
    options: &WindowOptions,
    output: &[usize],
    position: usize,
) -> Option<usize> {
    let offsets = common::coordinates(window, position);
    let mut index = 0;
    for axis in 0..shape.len() {
        let coordinate = (output[axis] * options.strides[axis]
            + offsets[axis] * options.window_dilations[axis]) as i64
            - options.padding[axis].0;
        if coordinate < 0 || coordinate >= shape[axis] as i64 {
            return None;
        }
        index = index * shape[axis] + coordinate as usize;
    }
    Some(index)
}

fn padding_value(op: WindowOp, dtype: DType) -> Value {
    let (min, max) = if dtype.is_float() {
        (f64::NEG_INFINITY, f64::INFINITY)
    } else {
        let (min, max) = reference::integer_limits(dtype);
        (min as f64, max as f64)
    };
    let value = match op {
        WindowOp::Sum => 0.0,
        WindowOp::Product => 1.0,
        WindowOp::Max => min,
        WindowOp::Min => max,
    };
    if dtype.is_float() {
        Value::Float(value)
    } else {
        Value::Int(match op {
            WindowOp::Max => reference::integer_limits(dtype).0,
            WindowOp::Min => reference::integer_limits(dtype).1,
            _ => value as i128,
        })
    }
}

/// Nx's window reduction on the host: values, and per value the error scale of a float sum
/// or product (sum of magnitudes, or the product's magnitude).
fn reference_window(
    op: WindowOp,
    dtype: DType,
    shape: &[usize],
    values: &[Value],
    window: &[usize],
    options: &WindowOptions,
) -> (Vec<Value>, Vec<f64>) {
    let out_shape = output_shape(shape, window, options);
    let positions: usize = window.iter().product();
    let count: usize = out_shape.iter().product();
    let mut results = Vec::with_capacity(count);
    let mut scales = Vec::with_capacity(count);
    for output in 0..count {
        let coordinates = common::coordinates(&out_shape, output);
        let elements: Vec<Value> = (0..positions)
            .map(|position| {
                window_element(shape, window, options, &coordinates, position)
                    .map_or(padding_value(op, dtype), |index| values[index])
            })
            .collect();
        let (value, scale) = match elements[0] {
            Value::Int(_) => {
                let ints = elements.iter().map(|value| match value {
                    Value::Int(x) => *x,
                    _ => unreachable!(),
                });
                let folded = match op {
                    WindowOp::Sum => ints.fold(0i128, i128::wrapping_add),
                    WindowOp::Product => ints.fold(1i128, i128::wrapping_mul),
                    WindowOp::Max => ints.max().unwrap(),
                    WindowOp::Min => ints.min().unwrap(),
                };
                (reference::round_to(Value::Int(folded), dtype), 0.0)
            }
            _ => {
                let floats: Vec<f64> = elements
                    .iter()
                    .map(|value| match value {
                        Value::Float(x) => *x,
                        _ => unreachable!(),
                    })
                    .collect();
                let nan = floats.iter().any(|x| x.is_nan());
                let (folded, scale) = match op {
                    WindowOp::Sum => (floats.iter().sum(), floats.iter().map(|x| x.abs()).sum()),
                    WindowOp::Product => {
                        let product: f64 = floats.iter().product();
                        (product, product.abs())
                    }
                    WindowOp::Max if nan => (f64::NAN, 0.0),
                    WindowOp::Min if nan => (f64::NAN, 0.0),
                    WindowOp::Max => (
                        floats.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                        0.0,
                    ),
                    WindowOp::Min => (floats.iter().copied().fold(f64::INFINITY, f64::min), 0.0),
                };
                (Value::Float(folded), scale)
            }
        };
        results.push(value);
        scales.push(scale);
    }
    (results, scales)
}

fn compare(
    dtype: DType,
    actual: &[Value],
    expected: &[Value],
    scales: &[f64],
    depth: usize,
) -> Result<(), String> {
    if actual.len() != expected.len() {
        return Err(format!(
            "{} values, expected {}",
            actual.len(),
            expected.len()
        ));
    }
    for (index, ((&got, &wanted), &scale)) in actual.iter().zip(expected).zip(scales).enumerate() {
        check(dtype, got, wanted, scale, depth).map_err(|why| format!("element {index}: {why}"))?;
    }
    Ok(())
}

fn view_kind(rng: &mut SplitMix) -> ViewKind {
    [ViewKind::Contiguous, ViewKind::Transposed, ViewKind::Sliced][rng.below(3) as usize]
}

fn native() -> Vec<DType> {
    nxvk_kernels::ops::native_dtypes().collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases_or(32), ..ProptestConfig::default() })]

    #[test]
    fn window_reductions_match_the_reference(seed in any::<u64>()) {
        let mut rng = SplitMix(seed);
        let dtypes = native();
        let dtype = dtypes[rng.below(dtypes.len() as u64) as usize];
        let op = [WindowOp::Sum, WindowOp::Product, WindowOp::Max, WindowOp::Min][rng.below(4) as usize];
        let rank = 1 + rng.below(3) as usize;
        let shape: Vec<usize> = (0..rank).map(|_| 1 + rng.below(6) as usize).collect();
        let (window, options) = random_geometry(&shape, &mut rng);
        let domain = if op == WindowOp::Product { Domain::Unit } else { Domain::Moderate };
        let (input, values) = make_input(&device(), dtype, &shape, view_kind(&mut rng), domain, &mut rng);
        let output = window_reduce(op, &input, &window, &options).unwrap();
        prop_assert_eq!(output.shape(), &output_shape(&shape, &window, &options)[..]);
        prop_assert_eq!(output.dtype(), dtype);
        let (expected, scales) = reference_window(op, dtype, &shape, &values, &window, &options);
        let depth = window.iter().product();
        if let Err(why) = compare(dtype, &read(&output), &expected, &scales, depth) {
            return Err(TestCaseError::fail(format!("{op:?} {dtype} {shape:?} {window:?} {options:?}: {why}")));
        }
    }

    #[test]
    fn window_scatter_matches_the_reference(seed in any::<u64>()) {
        let mut rng = SplitMix(seed);
        let dtypes = native();
        let dtype = dtypes[rng.below(dtypes.len() as u64) as usize];
        let select = if rng.below(2) == 0 { ScatterSelect::Max } else { ScatterSelect::Min };
        let rank = 1 + rng.below(3) as usize;
        let shape: Vec<usize> = (0..rank).map(|_| 1 + rng.below(6) as usize).collect();
        let (window, options) = random_geometry(&shape, &mut rng);
        let pooled = output_shape(&shape, &window, &options);
        let (input, values) = make_input(&device(), dtype, &shape, view_kind(&mut rng), Domain::Moderate, &mut rng);
        let (source, source_values) = make_input(&device(), dtype, &pooled, ViewKind::Contiguous, Domain::SmallInteger, &mut rng);
        let init = random_value(dtype, Domain::SmallInteger, &mut rng);
        let init_tensor = Tensor::from_bytes(&device(), dtype, &[], &reference::encode(dtype, &[init])).unwrap();
        let output = window_scatter(select, &input, &source, &init_tensor, &window, &options).unwrap();
        // Host: each window picks its last extreme position, the padding holding `init` (as
        // Nx pads before selecting); a selection in the padding is dropped.
        let positions: usize = window.iter().product();
        let mut sums: Vec<Vec<Value>> = vec![Vec::new(); values.len()];
        for (window_index, &source_value) in source_values.iter().enumerate() {
            let coordinates = common::coordinates(&pooled, window_index);
            let element = |position: usize| window_element(&shape, &window, &options, &coordinates, position);
            let value = |position: usize| element(position).map_or(init, |index| values[index]);
            let better = |a: Value, b: Value| match (a, b, select) {
                (Value::Int(a), Value::Int(b), ScatterSelect::Max) => a >= b,
                (Value::Int(a), Value::Int(b), ScatterSelect::Min) => a <= b,
                (Value::Float(a), Value::Float(b), ScatterSelect::Max) => a >= b,
                (Value::Float(a), Value::Float(b), ScatterSelect::Min) => a <= b,
                _ => unreachable!(),
            };
            let mut chosen = 0;
            for candidate in 1..positions {
                if better(value(candidate), value(chosen)) {
                    chosen = candidate;
                }
            }
            if let Some(index) = element(chosen) {
                sums[index].push(source_value);
            }
        }
        let mut expected = Vec::new();
        let mut scales = Vec::new();
        for added in &sums {
            let mut total = init;
            let mut scale = 0.0;
            for &value in added {
                total = match (total, value) {
                    (Value::Int(a), Value::Int(b)) => reference::round_to(Value::Int(a + b), dtype),
                    (Value::Float(a), Value::Float(b)) => { scale += b.abs(); Value::Float(a + b) }
                    _ => unreachable!(),
                };
            }
            if let Value::Float(init) = init { scale += init.abs(); }
            expected.push(total);
            scales.push(scale);
        }
        if let Err(why) = compare(dtype, &read(&output), &expected, &scales, positions + 1) {
            return Err(TestCaseError::fail(format!("{select:?} {dtype} {shape:?} {window:?} {options:?}: {why}")));
        }
    }
}

/// Null arm and fixed values: 2x2 windows of a 3x4 matrix, stride 1, no padding.
#[test]
fn fixed_windows_and_a_perturbed_result() {
    let dev = device();
    let input = Tensor::from_slice(
        &dev,
        &[3, 4],
        &[
            1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0,
        ],
    )
    .unwrap();
    let options = WindowOptions::default();
    let sums = window_reduce(WindowOp::Sum, &input, &[2, 2], &options).unwrap();
    assert_eq!(
        sums.to_vec::<f32>().unwrap(),
        vec![14.0, 18.0, 22.0, 30.0, 34.0, 38.0]
    );
    let maxima = window_reduce(WindowOp::Max, &input, &[2, 2], &options).unwrap();
    assert_eq!(
        maxima.to_vec::<f32>().unwrap(),
        vec![6.0, 7.0, 8.0, 10.0, 11.0, 12.0]
    );
    let source = Tensor::from_slice(&dev, &[2, 3], &[1.0f32; 6]).unwrap();
    let zero = Tensor::from_slice(&dev, &[], &[0.0f32]).unwrap();
    let scattered = window_scatter(
        ScatterSelect::Max,
        &input,
        &source,
        &zero,
        &[2, 2],
        &options,
    )
    .unwrap();
    // Overlapping windows: each window's maximum is its bottom-right element.
    assert_eq!(
        scattered.to_vec::<f32>().unwrap(),
        vec![0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    );
    let values = read(&sums);
    let expected: Vec<Value> = [14.0, 18.0, 22.0, 30.0, 34.0, 38.0]
        .iter()
        .map(|&x| Value::Float(x))
        .collect();
    let scales = vec![40.0; 6];
    compare(DType::F32, &values, &expected, &scales, 4).unwrap();
    let mut perturbed = values.clone();
    perturbed[2] = Value::Float(22.0 * (1.0 + 1.0 / 64.0));
    assert!(compare(DType::F32, &perturbed, &expected, &scales, 4).is_err());
}

/// Bad geometry is an error naming the op; complex inputs are unsupported.
#[test]
fn bad_windows_are_errors() {
    let dev = device();
    let input = Tensor::zeros(&dev, DType::F32, &[3, 4]).unwrap();
    let refused = |result: nxvk_core::Result<Tensor>| match result {
        Err(Error::BadOperands {
            op: "window_sum", ..
        }) => {}
        other => panic!("expected BadOperands, got {other:?}"),
    };
    refused(window_reduce(
        WindowOp::Sum,
        &input,
        &[2],
        &WindowOptions::default(),
    ));
    refused(window_reduce(
        WindowOp::Sum,
        &input,
        &[4, 1],
        &WindowOptions::default(),
    ));
    refused(window_reduce(
        WindowOp::Sum,
        &input,
        &[0, 1],
        &WindowOptions::default(),
    ));
    // Complex numbers have no order (complex sums and products: tests/complex_window.rs).
    let complex = Tensor::zeros(&dev, DType::C64, &[3]).unwrap();
    assert!(matches!(
        window_reduce(WindowOp::Max, &complex, &[1], &WindowOptions::default()),
        Err(Error::BadOperands { .. })
    ));
}

//! `dot` against a host reference of Nx's dot/6: random batch, contraction and free axes in
//! random positions (ranks up to 5, sizes 0 to 9, rank-0 operands), mixed operand dtypes with
//! Nx's promotion, contiguous/transposed/sliced views, NaN and infinities. Integers must match
//! exactly (wrapping in the result width). Floats are compared with an f64 reference of the
//! inputs cast to the result type, within `(k + 2) * eps(accumulator) * sum|a*b|` (the error
//! bound of a length-k sum, with f32 accumulators for f16/bf16/f32) plus one rounding to the
//! result type. Complex dtypes (c64, c128, and real operands promoted to them) are compared per
//! part (`gemm_check`). Every tile configuration, the split-K path and the autotuner are
//! exercised.

mod common;
mod gemm_check;

use common::*;
use gemm_check::check_all;
use nxvk_core::{DType, Error, Tensor};
use nxvk_kernels::dot::{dot, dot_with_config, result_dtype};
use nxvk_kernels::dot_autotune::{TuneKey, TuneTable, candidates, tune_file_path};
use nxvk_kernels::elem_of;
use nxvk_kernels::reference::{self, Value};
use proptest::prelude::*;

/// One dot problem: shapes and axis lists.
#[derive(Debug, Clone)]
struct Case {
    a_shape: Vec<usize>,
    b_shape: Vec<usize>,
    contract_a: Vec<usize>,
    batch_a: Vec<usize>,
    contract_b: Vec<usize>,
    batch_b: Vec<usize>,
}

impl Case {
    /// M, N and K: the products of A's free, B's free and the contracted sizes.
    fn sizes(&self) -> (usize, usize, usize) {
        let product = |shape: &[usize], keep: &dyn Fn(usize) -> bool| -> usize {
            (0..shape.len())
                .filter(|&axis| keep(axis))
                .map(|axis| shape[axis])
                .product()
        };
        let free = |shape: &[usize], contract: &[usize], batch: &[usize]| {
            product(shape, &|axis| {
                !contract.contains(&axis) && !batch.contains(&axis)
            })
        };
        (
            free(&self.a_shape, &self.contract_a, &self.batch_a),
            free(&self.b_shape, &self.contract_b, &self.batch_b),
            product(&self.a_shape, &|axis| self.contract_a.contains(&axis)),
        )
    }
}

fn shuffled(length: usize, rng: &mut SplitMix) -> Vec<usize> {
    let mut order: Vec<usize> = (0..length).collect();
    for index in (1..length).rev() {
        order.swap(index, rng.below(index as u64 + 1) as usize);
    }
    order
}

fn size(rng: &mut SplitMix, max: u64) -> usize {
    // Mostly non-empty; now and then an empty axis.
    if rng.below(24) == 0 {
        0
    } else {
        1 + rng.below(max) as usize
    }
}

fn random_case(rng: &mut SplitMix) -> Case {
    let batch: Vec<usize> = (0..rng.below(3)).map(|_| size(rng, 3)).collect();
    let contract: Vec<usize> = (0..rng.below(3)).map(|_| size(rng, 9)).collect();
    let free_a: Vec<usize> = (0..rng.below(3)).map(|_| size(rng, 9)).collect();
    let free_b: Vec<usize> = (0..rng.below(3)).map(|_| size(rng, 9)).collect();
    // Each operand's axes are batch, contraction and free axes in a random order.
    let place = |free: &[usize], rng: &mut SplitMix| {
        let rank = batch.len() + contract.len() + free.len();
        let order = shuffled(rank, rng);
        let mut shape = vec![0; rank];
        let roles: Vec<usize> = batch.iter().chain(&contract).chain(free).copied().collect();
        for (role, &axis) in order.iter().enumerate() {
            shape[axis] = roles[role];
        }
        let batch_axes = order[..batch.len()].to_vec();
        let contract_axes = order[batch.len()..batch.len() + contract.len()].to_vec();
        (shape, contract_axes, batch_axes)
    };
    let (a_shape, contract_a, batch_a) = place(&free_a, rng);
    let (b_shape, contract_b, batch_b) = place(&free_b, rng);
    Case {
        a_shape,
        b_shape,
        contract_a,
        batch_a,
        contract_b,
        batch_b,
    }
}

/// A float with a small chance of being NaN or an infinity (when `specials`), else a
/// moderate value; integers over their whole range.
fn dot_value(dtype: DType, specials: bool, rng: &mut SplitMix) -> Value {
    if !dtype.is_float() && !dtype.is_complex() {
        return random_value(dtype, Domain::Wide, rng);
    }
    let mut part = || match rng.below(64) {
        0 if specials => f64::NAN,
        1 if specials => f64::INFINITY,
        2 if specials => f64::NEG_INFINITY,
        _ => rng.unit() * 8.0 - 4.0,
    };
    let value = if dtype.is_complex() {
        let re = part();
        Value::Complex(nxvk_core::Complex64::new(re, part()))
    } else {
        Value::Float(part())
    };
    reference::round_to(value, dtype)
}

/// A tensor of `shape` in layout `view`, with its logical values in row-major order.
fn input(
    dtype: DType,
    shape: &[usize],
    view: ViewKind,
    specials: bool,
    rng: &mut SplitMix,
) -> (Tensor, Vec<Value>) {
    make_view_input(&device(), dtype, shape, view, || {
        dot_value(dtype, specials, rng)
    })
}

fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    nxvk_core::contiguous_strides(shape)
}

/// Nx's output shape: batch sizes, a's free sizes, b's free sizes.
fn output_shape(case: &Case) -> Vec<usize> {
    let free = |shape: &[usize], contract: &[usize], batch: &[usize]| -> Vec<usize> {
        (0..shape.len())
            .filter(|axis| !contract.contains(axis) && !batch.contains(axis))
            .map(|axis| shape[axis])
            .collect()
    };
    let batch: Vec<usize> = case
        .batch_a
        .iter()
        .map(|&axis| case.a_shape[axis])
        .collect();
    [
        batch,
        free(&case.a_shape, &case.contract_a, &case.batch_a),
        free(&case.b_shape, &case.contract_b, &case.batch_b),
    ]
    .concat()
}

/// The host result: per output element the exact (integers, wrapped) or f64 value, and the sum
/// of the magnitudes of its products (the float error scale).
fn reference_dot(
    case: &Case,
    a: &[Value],
    b: &[Value],
    result: DType,
) -> (Vec<Value>, Vec<f64>, usize) {
    let free = |rank: usize, contract: &[usize], batch: &[usize]| -> Vec<usize> {
        (0..rank)
            .filter(|axis| !contract.contains(axis) && !batch.contains(axis))
            .collect()
    };
    let free_a = free(case.a_shape.len(), &case.contract_a, &case.batch_a);
    let free_b = free(case.b_shape.len(), &case.contract_b, &case.batch_b);
    let sizes = |shape: &[usize], axes: &[usize]| -> Vec<usize> {
        axes.iter().map(|&axis| shape[axis]).collect()
    };
    let out_sizes = [
        sizes(&case.a_shape, &case.batch_a),
        sizes(&case.a_shape, &free_a),
        sizes(&case.b_shape, &free_b),
    ]
    .concat();
    let contract_sizes = sizes(&case.a_shape, &case.contract_a);
    let k: usize = contract_sizes.iter().product();
    let a_strides = row_major_strides(&case.a_shape);
    let b_strides = row_major_strides(&case.b_shape);
    let n_out: usize = out_sizes.iter().product();
    let (n_batch, n_free_a) = (case.batch_a.len(), free_a.len());
    // Each depth's offset into a and b, and the operands rounded to the result type, once.
    let contract_offsets = |contract: &[usize], strides: &[usize]| -> Vec<usize> {
        (0..k)
            .map(|depth| {
                common::coordinates(&contract_sizes, depth)
                    .iter()
                    .zip(contract)
                    .map(|(c, &axis)| c * strides[axis])
                    .sum()
            })
            .collect()
    };
    let a_offsets = contract_offsets(&case.contract_a, &a_strides);
    let b_offsets = contract_offsets(&case.contract_b, &b_strides);
    let rounded = |values: &[Value]| -> Vec<Value> {
        values
            .iter()
            .map(|&value| reference::round_to(value, result))
            .collect()
    };
    let (a, b) = (rounded(a), rounded(b));
    let mut values = Vec::with_capacity(n_out);
    let mut magnitudes = Vec::with_capacity(n_out);
    for output in 0..n_out {
        let coordinates = common::coordinates(&out_sizes, output);
        let mut a_base = 0;
        let mut b_base = 0;
        for (position, (&axis_a, &axis_b)) in case.batch_a.iter().zip(&case.batch_b).enumerate() {
            a_base += coordinates[position] * a_strides[axis_a];
            b_base += coordinates[position] * b_strides[axis_b];
        }
        for (position, &axis) in free_a.iter().enumerate() {
            a_base += coordinates[n_batch + position] * a_strides[axis];
        }
        for (position, &axis) in free_b.iter().enumerate() {
            b_base += coordinates[n_batch + n_free_a + position] * b_strides[axis];
        }
        let mut integer_sum: i128 = 0;
        let mut float_sum = 0.0f64;
        let mut complex_sum = nxvk_core::Complex64::new(0.0, 0.0);
        let mut magnitude = 0.0f64;
        for (a_offset, b_offset) in a_offsets.iter().zip(&b_offsets) {
            match (a[a_base + a_offset], b[b_base + b_offset]) {
                (Value::Int(x), Value::Int(y)) => {
                    integer_sum = integer_sum.wrapping_add(x.wrapping_mul(y));
                }
                (Value::Float(x), Value::Float(y)) => {
                    float_sum += x * y;
                    magnitude += (x * y).abs();
                }
                // Complex.multiply's four real products, summed part by part.
                (Value::Complex(x), Value::Complex(y)) => {
                    complex_sum.re += x.re * y.re - x.im * y.im;
                    complex_sum.im += x.im * y.re + x.re * y.im;
                    magnitude += (x.re * y.re).abs()
                        + (x.im * y.im).abs()
                        + (x.im * y.re).abs()
                        + (x.re * y.im).abs();
                }
                other => panic!("unexpected operands {other:?}"),
            }
        }
        values.push(if result.is_complex() {
            Value::Complex(complex_sum)
        } else if result.is_float() {
            Value::Float(float_sum)
        } else {
            reference::round_to(Value::Int(integer_sum), result)
        });
        magnitudes.push(magnitude);
    }
    (values, magnitudes, k)
}

fn view_kind(rng: &mut SplitMix) -> ViewKind {
    [ViewKind::Contiguous, ViewKind::Transposed, ViewKind::Sliced][rng.below(3) as usize]
}

/// Runs `case` on the GPU and the host; returns the GPU values, the reference and its scales.
fn run_case(
    case: &Case,
    a_dtype: DType,
    b_dtype: DType,
    specials: bool,
    rng: &mut SplitMix,
) -> (Tensor, Vec<Value>, Vec<Value>, Vec<f64>, usize) {
    let (a, a_values) = input(a_dtype, &case.a_shape, view_kind(rng), specials, rng);
    let (b, b_values) = input(b_dtype, &case.b_shape, view_kind(rng), specials, rng);
    let output = dot(
        &a,
        &case.contract_a,
        &case.batch_a,
        &b,
        &case.contract_b,
        &case.batch_b,
    )
    .unwrap_or_else(|error| panic!("{case:?} {a_dtype} {b_dtype}: {error}"));
    let result = result_dtype(a_dtype, b_dtype);
    let (expected, magnitudes, k) = reference_dot(case, &a_values, &b_values, result);
    let actual = read(&output);
    (output, actual, expected, magnitudes, k)
}

/// The native dtypes and the complex ones (complex dots run as real GEMMs of their parts).
fn gpu_dtypes() -> Vec<DType> {
    nxvk_kernels::ops::native_dtypes()
        .chain([DType::C64, DType::C128])
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases_or(48), ..ProptestConfig::default() })]

    #[test]
    fn dot_matches_the_reference(seed in any::<u64>()) {
        let mut rng = SplitMix(seed);
        let dtypes = gpu_dtypes();
        let case = random_case(&mut rng);
        let a_dtype = dtypes[rng.below(dtypes.len() as u64) as usize];
        let b_dtype = if rng.below(3) == 0 {
            dtypes[rng.below(dtypes.len() as u64) as usize]
        } else {
            a_dtype
        };
        let result = result_dtype(a_dtype, b_dtype);
        let (output, actual, expected, magnitudes, k) =
            run_case(&case, a_dtype, b_dtype, rng.below(2) == 0, &mut rng);
        prop_assert_eq!(output.dtype(), result);
        prop_assert_eq!(output.shape(), &output_shape(&case)[..]);
        prop_assert_eq!(output.n_elements(), expected.len());
        if let Err(why) = check_all(result, &actual, &expected, &magnitudes, k) {
            return Err(TestCaseError::fail(format!("{case:?} {a_dtype} x {b_dtype}: {why}")));
        }
    }
}

/// Output shape: batch sizes, then a's free sizes, then b's.
#[test]
fn output_shape_follows_nx() {
    let dev = device();
    let a = Tensor::zeros(&dev, DType::F32, &[2, 3, 4, 5]).unwrap();
    let b = Tensor::zeros(&dev, DType::S32, &[5, 7, 2, 4]).unwrap();
    // Contract a's axis 2 with b's 3 and a's 3 with b's 0; batch a's 0 with b's 2.
    let output = dot(&a, &[2, 3], &[0], &b, &[3, 0], &[2]).unwrap();
    assert_eq!(output.shape(), &[2, 3, 7]);
    assert_eq!(output.dtype(), DType::F32);
    assert_eq!(output.to_vec::<f32>().unwrap(), vec![0.0; 42]);
}

/// The null arm: a result perturbed by one unit (integers) or by a relative 2^-4 (floats, above bf16's rounding) is
/// rejected, so the checks above can fail.
#[test]
fn perturbed_results_are_rejected() {
    let mut rng = SplitMix(7);
    let case = Case {
        a_shape: vec![5, 6],
        b_shape: vec![6, 4],
        contract_a: vec![1],
        batch_a: vec![],
        contract_b: vec![0],
        batch_b: vec![],
    };
    for dtype in [
        DType::S32,
        DType::F32,
        DType::F16,
        DType::F64,
        DType::BF16,
        DType::C64,
        DType::C128,
    ] {
        let (_, actual, expected, magnitudes, k) = run_case(&case, dtype, dtype, false, &mut rng);
        check_all(dtype, &actual, &expected, &magnitudes, k).unwrap();
        let mut perturbed = actual.clone();
        perturbed[3] = match perturbed[3] {
            Value::Int(value) => Value::Int(value + 1),
            Value::Float(value) => Value::Float(value + (value.abs() + 1.0) / 16.0),
            Value::Complex(value) => Value::Complex(nxvk_core::Complex64::new(
                value.re,
                value.im + (value.im.abs() + 1.0) / 16.0,
            )),
        };
        assert!(
            check_all(dtype, &perturbed, &expected, &magnitudes, k).is_err(),
            "{dtype}: the perturbed result passed"
        );
    }
}

/// Every tile configuration the device can run, on odd sizes (partial tiles on every edge),
/// transposed operands and the four-wide loading path: f32 and f64 on each (the looped and the
/// written-out register block, `dot_registers.rs`), and one other dtype per configuration in
/// turn (every configuration compiles a pipeline per dtype and layout, which lavapipe takes a
/// while over).
#[test]
fn every_tile_configuration_matches() {
    let mut rng = SplitMix(11);
    let dev = device();
    let others: Vec<DType> = [DType::F16, DType::BF16, DType::S8, DType::U64]
        .into_iter()
        .filter(|dtype| gpu_dtypes().contains(dtype))
        .collect();
    let configs = candidates(nxvk_kernels::Elem::F32, dev.capabilities());
    for (index, config) in configs.into_iter().enumerate() {
        let f64 = gpu_dtypes().contains(&DType::F64).then_some(DType::F64);
        let dtypes = [Some(DType::F32), f64, Some(others[index % others.len()])];
        for dtype in dtypes.into_iter().flatten() {
            if !candidates(elem_of(dtype).unwrap(), dev.capabilities()).contains(&config) {
                continue;
            }
            for (a_view, b_view, m, k, n) in [
                (ViewKind::Contiguous, ViewKind::Contiguous, 37, 44, 68),
                (ViewKind::Transposed, ViewKind::Transposed, 70, 13, 9),
                (ViewKind::Contiguous, ViewKind::Sliced, 3, 20, 136),
            ] {
                let (a, a_values) = input(dtype, &[m, k], a_view, false, &mut rng);
                let (b, b_values) = input(dtype, &[k, n], b_view, false, &mut rng);
                let output = dot_with_config(&a, &[1], &[], &b, &[0], &[], Some(config)).unwrap();
                let case = Case {
                    a_shape: vec![m, k],
                    b_shape: vec![k, n],
                    contract_a: vec![1],
                    batch_a: vec![],
                    contract_b: vec![0],
                    batch_b: vec![],
                };
                let (expected, magnitudes, depth) =
                    reference_dot(&case, &a_values, &b_values, dtype);
                check_all(dtype, &read(&output), &expected, &magnitudes, depth).unwrap_or_else(
                    |why| panic!("{dtype} {config:?} {a_view:?}/{b_view:?}: {why}"),
                );
            }
        }
    }
}

/// Thin outputs with deep contractions take the split-K path; f16 inputs accumulate in f32
/// (an f16 running sum of ones would stop at 2048).
#[test]
fn deep_contractions_split_k() {
    let mut rng = SplitMix(5);
    for dtype in [DType::F32, DType::S32, DType::U8] {
        let case = Case {
            a_shape: vec![3, 70_001],
            b_shape: vec![70_001, 2],
            contract_a: vec![1],
            batch_a: vec![],
            contract_b: vec![0],
            batch_b: vec![],
        };
        let (_, actual, expected, magnitudes, k) = run_case(&case, dtype, dtype, false, &mut rng);
        check_all(dtype, &actual, &expected, &magnitudes, k).unwrap();
    }
    let dev = device();
    let ones = vec![half::f16::ONE; 4096];
    let a = Tensor::from_slice(&dev, &[1, 4096], &ones).unwrap();
    let b = Tensor::from_slice(&dev, &[4096, 1], &ones).unwrap();
    let output = dot(&a, &[1], &[], &b, &[0], &[]).unwrap();
    assert_eq!(
        output.to_vec::<half::f16>().unwrap(),
        vec![half::f16::from_f32(4096.0)]
    );
}

/// Empty axes, K = 0 (zeros), rank-0 operands and outer products.
#[test]
fn degenerate_shapes() {
    let dev = device();
    let a = Tensor::from_slice(&dev, &[2, 0], &[0f32; 0]).unwrap();
    let b = Tensor::from_slice(&dev, &[0, 3], &[0f32; 0]).unwrap();
    let output = dot(&a, &[1], &[], &b, &[0], &[]).unwrap();
    assert_eq!(output.shape(), &[2, 3]);
    assert_eq!(output.to_vec::<f32>().unwrap(), vec![0.0; 6]);
    let output = dot(&a, &[], &[], &b, &[], &[]).unwrap();
    assert_eq!(output.shape(), &[2, 0, 0, 3]);
    let scalar = Tensor::from_slice(&dev, &[], &[3i64]).unwrap();
    let other = Tensor::from_slice(&dev, &[], &[-5i64]).unwrap();
    let output = dot(&scalar, &[], &[], &other, &[], &[]).unwrap();
    assert_eq!(output.shape(), &[] as &[usize]);
    assert_eq!(output.to_vec::<i64>().unwrap(), vec![-15]);
    let column = Tensor::from_slice(&dev, &[3], &[1.0f64, 2.0, 3.0]).unwrap();
    let row = Tensor::from_slice(&dev, &[2], &[10.0f64, -1.0]).unwrap();
    let output = dot(&column, &[], &[], &row, &[], &[]).unwrap();
    assert_eq!(
        output.to_vec::<f64>().unwrap(),
        vec![10.0, -1.0, 20.0, -2.0, 30.0, -3.0]
    );
}

/// Bad axes and sizes are errors naming the op; complex operands are unsupported.
#[test]
fn bad_operands_are_errors() {
    let dev = device();
    let a = Tensor::zeros(&dev, DType::F32, &[2, 3]).unwrap();
    let b = Tensor::zeros(&dev, DType::F32, &[4, 2]).unwrap();
    let refused = |result: nxvk_core::Result<Tensor>| match result {
        Err(Error::BadOperands { op: "dot", .. }) => {}
        other => panic!("expected BadOperands, got {other:?}"),
    };
    refused(dot(&a, &[1], &[], &b, &[0], &[]));
    refused(dot(&a, &[2], &[], &b, &[0], &[]));
    refused(dot(&a, &[0, 0], &[], &b, &[1, 1], &[]));
    refused(dot(&a, &[0], &[0], &b, &[1], &[1]));
    refused(dot(&a, &[0], &[], &b, &[], &[]));
    // 8-bit floats have no kernels (complex dots run as real GEMMs of their parts).
    let f8 = Tensor::zeros(&dev, DType::F8E5M2, &[3, 2]).unwrap();
    assert!(matches!(
        dot(&f8, &[1], &[], &f8, &[1], &[]),
        Err(Error::Unsupported { op: "dot", .. })
    ));
}

/// A problem big enough to race: the tuner picks a candidate, persists it beside the pipeline
/// cache under the problem's key, and the result is right.
#[test]
fn the_autotuner_races_and_persists() {
    let dev = device();
    let mut rng = SplitMix(3);
    let (m, k, n) = (256, 256, 256);
    let (a, a_values) = input(DType::F32, &[m, k], ViewKind::Contiguous, false, &mut rng);
    let (b, b_values) = input(DType::F32, &[k, n], ViewKind::Contiguous, false, &mut rng);
    let output = dot(&a, &[1], &[], &b, &[0], &[]).unwrap();
    let case = Case {
        a_shape: vec![m, k],
        b_shape: vec![k, n],
        contract_a: vec![1],
        batch_a: vec![],
        contract_b: vec![0],
        batch_b: vec![],
    };
    let (expected, magnitudes, depth) = reference_dot(&case, &a_values, &b_values, DType::F32);
    check_all(DType::F32, &read(&output), &expected, &magnitudes, depth).unwrap();
    if !nxvk_kernels::dot_autotune::autotune_enabled()
        || dev.capabilities().timestamp_period_ns.is_none()
    {
        return;
    }
    let text = std::fs::read_to_string(tune_file_path(&dev)).expect("the tuning file");
    let table = TuneTable::from_text(&text).expect("a valid tuning file");
    let key = TuneKey::of(nxvk_kernels::Elem::F32, 1, m, n, k);
    let chosen = table.choices.get(&key).expect("the raced key");
    assert!(candidates(nxvk_kernels::Elem::F32, dev.capabilities()).contains(chosen));
}

#[test]
fn integer_products_wrap() {
    let dev = device();
    let a = Tensor::from_slice(&dev, &[1, 2], &[100i8, -128]).unwrap();
    let b = Tensor::from_slice(&dev, &[2, 1], &[3i8, 3]).unwrap();
    // 300 - 384 = -84 (exact here); 100*3 alone wraps to 44.
    assert_eq!(
        dot(&a, &[1], &[], &b, &[0], &[])
            .unwrap()
            .to_vec::<i8>()
            .unwrap(),
        vec![-84]
    );
    let a = Tensor::from_slice(&dev, &[1, 1], &[100i8]).unwrap();
    let b = Tensor::from_slice(&dev, &[1, 1], &[3i8]).unwrap();
    assert_eq!(
        dot(&a, &[1], &[], &b, &[0], &[])
            .unwrap()
            .to_vec::<i8>()
            .unwrap(),
        vec![44]
    );
}

/// f16 and bf16 problems whose sizes fit the cooperative-matrix tiles (the direct kernel's M a
/// multiple of 64, N of 128, K of 16; the staged kernel's 128, 128 and 32; row- or
/// column-major operands; batched and split-K): on a device with cooperative matrices of that
/// type (the H200) these run that kernel (`NXVK_KNOB_COOPMAT_STAGED` picks which), as its
/// profile shows, elsewhere the tiled template; the results must match the reference either
/// way.
#[test]
fn cooperative_matrix_sized_f16_and_bf16_problems() {
    for dtype in [DType::F16, DType::BF16] {
        cooperative_matrix_sized_problems(dtype);
    }
}

fn cooperative_matrix_sized_problems(dtype: DType) {
    let mut rng = SplitMix(31);
    let elem = nxvk_kernels::elem_of(dtype).unwrap();
    let uses_cooperative =
        nxvk_kernels::dot_cooperative::has_cooperative_matrices(device().capabilities(), elem);
    eprintln!("{dtype} cooperative matrices on this device: {uses_cooperative}");
    for (a_shape, b_shape, contract_a, batch_a, contract_b, batch_b, a_view) in [
        (
            vec![128, 48],
            vec![48, 256],
            vec![1],
            vec![],
            vec![0],
            vec![],
            ViewKind::Contiguous,
        ),
        (
            vec![32, 64],
            vec![32, 128],
            vec![0],
            vec![],
            vec![0],
            vec![],
            ViewKind::Transposed,
        ),
        (
            vec![2, 64, 32],
            vec![2, 32, 128],
            vec![2],
            vec![0],
            vec![1],
            vec![0],
            ViewKind::Contiguous,
        ),
        (
            vec![64, 1024],
            vec![1024, 128],
            vec![1],
            vec![],
            vec![0],
            vec![],
            ViewKind::Contiguous,
        ),
        (
            vec![256, 96],
            vec![96, 128],
            vec![1],
            vec![],
            vec![0],
            vec![],
            ViewKind::Contiguous,
        ),
        (
            vec![64, 128],
            vec![256, 64],
            vec![0],
            vec![],
            vec![1],
            vec![],
            ViewKind::Transposed,
        ),
        (
            vec![128, 64],
            vec![128, 64],
            vec![1],
            vec![],
            vec![1],
            vec![],
            ViewKind::Contiguous,
        ),
        (
            vec![2, 128, 32],
            vec![2, 32, 256],
            vec![2],
            vec![0],
            vec![1],
            vec![0],
            ViewKind::Contiguous,
        ),
        (
            vec![128, 4096],
            vec![4096, 128],
            vec![1],
            vec![],
            vec![0],
            vec![],
            ViewKind::Contiguous,
        ),
    ] {
        let case = Case {
            a_shape,
            b_shape,
            contract_a,
            batch_a,
            contract_b,
            batch_b,
        };
        let (m, n, k) = case.sizes();
        // Multiples of both kernels' tiles (staged 128 x 128 x 32, direct 64 x 128 x 16).
        let fits_tiles = m % 128 == 0 && n % 128 == 0 && k % 32 == 0;
        let expected = (uses_cooperative && fits_tiles).then_some(("gemm_coopmat", true));
        check_sized_case(&device(), dtype, &case, a_view, expected, &mut rng, "");
    }
}

/// Runs `case` on `device` (A as `a_view`) and checks it against the reference. With
/// `expected`, a kernel-name prefix and whether a dispatch of it must run: the profile shows
/// which kernel ran (a driver error would quietly send the problem to another kernel).
/// `label` names the configuration in failures.
fn check_sized_case(
    device: &std::sync::Arc<nxvk_core::Device>,
    dtype: DType,
    case: &Case,
    a_view: ViewKind,
    expected: Option<(&str, bool)>,
    rng: &mut SplitMix,
    label: &str,
) {
    let (a, a_values) = make_view_input(device, dtype, &case.a_shape, a_view, || {
        dot_value(dtype, false, rng)
    });
    let (b, b_values) = make_view_input(device, dtype, &case.b_shape, ViewKind::Contiguous, || {
        dot_value(dtype, false, rng)
    });
    let run = || {
        dot(
            &a,
            &case.contract_a,
            &case.batch_a,
            &b,
            &case.contract_b,
            &case.batch_b,
        )
    };
    if let Some((prefix, must_run)) = expected {
        let profile = device.profile_dispatches(|| run().map(drop)).unwrap();
        let ran = profile
            .dispatches
            .iter()
            .any(|dispatch| dispatch.kernel.starts_with(prefix));
        assert_eq!(
            ran, must_run,
            "{dtype} {case:?} {label}: {prefix} expected {must_run}, ran {:?}",
            profile.dispatches
        );
    }
    let output = run().unwrap();
    let (expected, magnitudes, k) = reference_dot(case, &a_values, &b_values, dtype);
    check_all(dtype, &read(&output), &expected, &magnitudes, k)
        .unwrap_or_else(|why| panic!("{dtype} {case:?} {label}: {why}"));
}

/// f16 and bf16 problems of at least one workgroup tile whose M, N and K are not multiples of
/// it (ragged edges, a ragged last split of K), row- and column-major operands, batched: on a
/// device with VK_NV_cooperative_matrix2 every one runs the workgroup-scope kernel, with each
/// tile `NXVK_KNOB_COOPMAT2_TILE` offers (a device per tile), as the profile must show; with
/// the knob `off` none does. Elsewhere (lavapipe) the other kernels run them; the results must
/// match the reference either way.
#[test]
fn workgroup_matrix_problems() {
    use nxvk_core::{Context, ContextOptions, Knobs};
    use nxvk_kernels::dot_cooperative2::{TILES, has_workgroup_matrices};
    let offered =
        has_workgroup_matrices(device().capabilities(), nxvk_kernels::Elem::F16, TILES[0]);
    eprintln!("workgroup-scope matrices on this device: {offered}");
    let mut knob_values: Vec<String> = vec!["off".into()];
    if offered {
        knob_values.extend(TILES.iter().map(|(m, n, k)| format!("{m}x{n}x{k}")));
    }
    for knob in knob_values {
        let context = Context::with_options(ContextOptions {
            knobs: Knobs::from_env().with_variant("coopmat2_tile", &knob),
            ..ContextOptions::default()
        })
        .unwrap();
        let device = context.device().unwrap();
        for dtype in [DType::F16, DType::BF16] {
            let elem = elem_of(dtype).unwrap();
            let expect_workgroup =
                knob != "off" && has_workgroup_matrices(device.capabilities(), elem, TILES[0]);
            workgroup_matrix_cases(&device, dtype, expect_workgroup, &knob);
        }
    }
}

fn workgroup_matrix_cases(
    device: &std::sync::Arc<nxvk_core::Device>,
    dtype: DType,
    expect_workgroup: bool,
    knob: &str,
) {
    let mut rng = SplitMix(33);
    for (a_shape, b_shape, contract_a, batch_a, contract_b, batch_b, a_view) in [
        (
            vec![200, 72],
            vec![72, 296],
            vec![1],
            vec![],
            vec![0],
            vec![],
            ViewKind::Contiguous,
        ),
        (
            vec![72, 200],
            vec![72, 296],
            vec![0],
            vec![],
            vec![0],
            vec![],
            ViewKind::Transposed,
        ),
        (
            vec![2, 136, 40],
            vec![2, 40, 264],
            vec![2],
            vec![0],
            vec![1],
            vec![0],
            ViewKind::Contiguous,
        ),
        (
            vec![128, 4104],
            vec![4104, 256],
            vec![1],
            vec![],
            vec![0],
            vec![],
            ViewKind::Contiguous,
        ),
        (
            vec![264, 64],
            vec![392, 64],
            vec![1],
            vec![],
            vec![1],
            vec![],
            ViewKind::Contiguous,
        ),
    ] {
        let case = Case {
            a_shape,
            b_shape,
            contract_a,
            batch_a,
            contract_b,
            batch_b,
        };
        let expected = device
            .capabilities()
            .timestamp_period_ns
            .is_some()
            .then_some(("gemm_coopmat2", expect_workgroup));
        let label = format!("coopmat2_tile={knob}");
        check_sized_case(device, dtype, &case, a_view, expected, &mut rng, &label);
    }
}

/// The contractions Nx.Defn.Grad builds for dot's backward pass: over axis 0 of both operands
/// (the weight gradient, x^T . dy) and over axis 1 of both (the input gradient, dy . w^T).
#[test]
fn gradient_contractions() {
    let mut rng = SplitMix(32);
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        for (a_shape, b_shape, axis) in [(vec![9, 5], vec![9, 7], 0), (vec![6, 11], vec![4, 11], 1)]
        {
            let case = Case {
                a_shape,
                b_shape,
                contract_a: vec![axis],
                batch_a: vec![],
                contract_b: vec![axis],
                batch_b: vec![],
            };
            let (_, actual, expected, magnitudes, k) =
                run_case(&case, dtype, dtype, false, &mut rng);
            check_all(dtype, &actual, &expected, &magnitudes, k)
                .unwrap_or_else(|why| panic!("{dtype} {case:?}: {why}"));
        }
    }
}

/// The coverage report lists dot and conv: GPU for native and complex dtypes, unsupported for
/// 8-bit floats.
#[test]
fn coverage_lists_dot_and_conv() {
    use nxvk_kernels::coverage::{Cell, coverage};
    let rows = coverage(device().capabilities());
    for op in ["dot", "conv"] {
        let row = rows
            .iter()
            .find(|row| row.op == op)
            .expect("a coverage row");
        let cell = |dtype: DType| row.cells.iter().find(|(d, _)| *d == dtype).unwrap().1;
        assert_eq!(cell(DType::F32), Cell::Gpu, "{op} f32");
        assert_eq!(cell(DType::S8), Cell::Gpu, "{op} s8");
        assert_eq!(cell(DType::C64), Cell::Gpu, "{op} c64");
        assert_eq!(cell(DType::C128), Cell::Gpu, "{op} c128");
        assert_eq!(cell(DType::F8E5M2), Cell::Unsupported, "{op} f8");
    }
}

//! Complex (c64, c128) window_sum and window_product on the GPU against a host fold in f64
//! complex arithmetic: random shapes up to rank 3, windows with padding, strides and window
//! dilations. Bounds per part: sums within 16 eps (1 + sum|x|), products within 16 n eps
//! (1 + |z|) for n window positions (moduli stay in [0.5, 2]). window_max/min are errors, as
//! in Nx. Null arm: the comparison rejects the other reduction's reference.

mod common;

use nxvk_core::{Complex32, Complex64, DType, Tensor};
use nxvk_kernels::window::{WindowOp, WindowOptions, window_output_shape, window_reduce};
use proptest::prelude::*;

/// One case: input shape, window, options, and the input's values.
#[derive(Debug, Clone)]
struct Case {
    shape: Vec<usize>,
    window: Vec<usize>,
    options: WindowOptions,
    values: Vec<Complex64>,
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..=3)
        .prop_flat_map(|rank| {
            (
                prop::collection::vec(1usize..=5, rank),
                prop::collection::vec(1usize..=3, rank),
                prop::collection::vec(1usize..=2, rank),
                prop::collection::vec(1usize..=2, rank),
                prop::collection::vec((0i64..=1, 0i64..=2), rank),
                any::<u64>(),
            )
        })
        .prop_filter_map(
            "the window must fit",
            |(shape, window, strides, dilations, padding, seed)| {
                let options = WindowOptions {
                    strides,
                    padding,
                    window_dilations: dilations,
                };
                window_output_shape(&shape, &window, &options).ok()?;
                let mut rng = common::SplitMix(seed);
                let values = (0..shape.iter().product::<usize>())
                    .map(|_| {
                        Complex64::from_polar(
                            0.5 + 1.5 * rng.unit(),
                            std::f64::consts::TAU * rng.unit(),
                        )
                    })
                    .collect();
                Some(Case {
                    shape,
                    window,
                    options,
                    values,
                })
            },
        )
}

/// The host fold of every window (padding holds the identity).
fn reference(op: WindowOp, case: &Case) -> (Vec<usize>, Vec<Complex64>) {
    let output = window_output_shape(&case.shape, &case.window, &case.options).unwrap();
    let identity = Complex64::new(if op == WindowOp::Sum { 0.0 } else { 1.0 }, 0.0);
    let positions: usize = case.window.iter().product();
    let results = (0..output.iter().product::<usize>())
        .map(|index| {
            let at = common::coordinates(&output, index);
            (0..positions).fold(identity, |folded, position| {
                let offset = common::coordinates(&case.window, position);
                let mut source = Vec::with_capacity(at.len());
                for axis in 0..at.len() {
                    let padded = (at[axis] * case.options.strides[axis]
                        + offset[axis] * case.options.window_dilations[axis])
                        as i64
                        - case.options.padding[axis].0;
                    if padded < 0 || padded >= case.shape[axis] as i64 {
                        return folded;
                    }
                    source.push(padded as usize);
                }
                let value = case.values[common::linear(&case.shape, &source)];
                if op == WindowOp::Sum {
                    folded + value
                } else {
                    folded * value
                }
            })
        })
        .collect();
    (output, results)
}

fn run(op: WindowOp, dtype: DType, case: &Case) -> Vec<Complex64> {
    let device = common::device();
    let input = match dtype {
        DType::C64 => {
            let narrow: Vec<Complex32> = case
                .values
                .iter()
                .map(|z| Complex32::new(z.re as f32, z.im as f32))
                .collect();
            Tensor::from_slice(&device, &case.shape, &narrow).unwrap()
        }
        _ => Tensor::from_slice(&device, &case.shape, &case.values).unwrap(),
    };
    let result = window_reduce(op, &input, &case.window, &case.options).unwrap();
    assert_eq!(result.dtype(), dtype);
    match dtype {
        DType::C64 => result
            .to_vec::<Complex32>()
            .unwrap()
            .into_iter()
            .map(|z| Complex64::new(f64::from(z.re), f64::from(z.im)))
            .collect(),
        _ => result.to_vec::<Complex64>().unwrap(),
    }
}

/// The first element outside the bound, described.
fn mismatch(
    op: WindowOp,
    dtype: DType,
    case: &Case,
    actual: &[Complex64],
    expected: &[Complex64],
) -> Option<String> {
    let positions: f64 = case.window.iter().product::<usize>() as f64;
    let eps = if dtype == DType::C64 {
        f64::from(f32::EPSILON)
    } else {
        f64::EPSILON
    };
    let scale = if op == WindowOp::Sum {
        1.0 + positions * 2.0
    } else {
        positions * (1.0 + 2f64.powf(positions))
    };
    let bound = 16.0 * eps * scale;
    if actual.len() != expected.len() {
        return Some(format!("{} results for {}", actual.len(), expected.len()));
    }
    actual
        .iter()
        .zip(expected)
        .position(|(a, e)| (a.re - e.re).abs() > bound || (a.im - e.im).abs() > bound)
        .map(|index| {
            format!(
                "element {index}: {} against {} (bound {bound:e})",
                actual[index], expected[index]
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(common::cases_or(24)))]

    #[test]
    fn complex_windows_match_the_host_fold(case in case()) {
        for dtype in [DType::C64, DType::C128] {
            for op in [WindowOp::Sum, WindowOp::Product] {
                let (shape, expected) = reference(op, &case);
                let actual = run(op, dtype, &case);
                prop_assert_eq!(shape.iter().product::<usize>(), actual.len());
                if let Some(failure) = mismatch(op, dtype, &case, &actual, &expected) {
                    return Err(TestCaseError::fail(format!("{op:?} {dtype}: {failure}")));
                }
            }
        }
        prop_assert_eq!(common::fallbacks("window_sum", DType::C64), 0);
    }
}

#[test]
fn the_comparison_rejects_the_other_reduction() {
    let case = Case {
        shape: vec![4, 3],
        window: vec![2, 2],
        options: WindowOptions {
            strides: vec![1, 1],
            padding: vec![(1, 0), (0, 1)],
            window_dilations: vec![1, 2],
        },
        values: (0..12)
            .map(|i| Complex64::from_polar(1.0 + 0.05 * i as f64, 0.3 * i as f64))
            .collect(),
    };
    let actual = run(WindowOp::Sum, DType::C128, &case);
    let (_, sums) = reference(WindowOp::Sum, &case);
    let (_, products) = reference(WindowOp::Product, &case);
    assert!(mismatch(WindowOp::Sum, DType::C128, &case, &actual, &sums).is_none());
    assert!(mismatch(WindowOp::Sum, DType::C128, &case, &actual, &products).is_some());
}

#[test]
fn complex_window_max_and_min_are_errors() {
    let device = common::device();
    let input = Tensor::from_slice(&device, &[3], &[Complex64::new(1.0, 0.0); 3]).unwrap();
    let options = WindowOptions {
        strides: vec![1],
        padding: vec![(0, 0)],
        window_dilations: vec![1],
    };
    for op in [WindowOp::Max, WindowOp::Min] {
        let error = window_reduce(op, &input, &[2], &options)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(op.name()) && error.contains("order"),
            "{error}"
        );
    }
}

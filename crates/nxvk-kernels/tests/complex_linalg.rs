//! Complex (c64, c128) `triangular_solve` against an f64 host substitution with Complex
//! arithmetic: random batches, orders 0..8, vector and matrix right-hand sides, both sides,
//! lower/upper, `transform_a: :transpose` (a plain transpose, as Nx defines it for complex
//! matrices), a transposed view of `a`, NaN in the triangle that must not be read. Bound per
//! part: 64 (n + 1) eps max(1, |x|) for well-conditioned matrices (diagonal moduli in [1, 2],
//! off-diagonal parts below 1 / n). Null arm: the conjugate transpose is rejected where the
//! transpose is asked for.

mod common;

use common::complex_matrices::*;
use common::*;
use nxvk_core::{Complex64, DType, Tensor};
use nxvk_kernels::{TriangularSolveOptions, triangular_solve};
use proptest::prelude::*;

/// `batches` matrices n x n (row-major), triangular as `lower` says, NaN in the other triangle.
fn triangular(
    dtype: DType,
    batches: usize,
    n: usize,
    lower: bool,
    rng: &mut SplitMix,
) -> Vec<Complex64> {
    let mut values = Vec::with_capacity(batches * n * n);
    for _ in 0..batches * n * n {
        let index = values.len() % (n * n);
        let (row, column) = (index / n, index % n);
        values.push(if row == column {
            let modulus = 1.0 + rng.unit();
            Complex64::from_polar(modulus, std::f64::consts::TAU * rng.unit())
        } else if (column < row) == lower {
            random_complex(dtype, rng, 1.0 / n as f64)
        } else {
            Complex64::new(f64::NAN, f64::NAN)
        });
    }
    values.iter().map(|&z| rounded_complex(dtype, z)).collect()
}

/// Solves `t x = b` by substitution, `t` triangular (`lower` or upper) by an element function.
fn solve(
    n: usize,
    lower: bool,
    t: impl Fn(usize, usize) -> Complex64,
    b: &[Complex64],
) -> Vec<Complex64> {
    let mut x = vec![Complex64::new(0.0, 0.0); n];
    let rows: Vec<usize> = if lower {
        (0..n).collect()
    } else {
        (0..n).rev().collect()
    };
    for row in rows {
        let known = if lower { 0..row } else { row + 1..n };
        let sum = known.fold(b[row], |sum, j| sum - t(row, j) * x[j]);
        x[row] = sum / t(row, row);
    }
    x
}

/// One case; `conjugate_reference` solves with the conjugate transpose instead (null arm).
#[allow(clippy::too_many_arguments)] // One case of the property, as drawn.
fn solve_case(
    dtype: DType,
    options: TriangularSolveOptions,
    batches: usize,
    n: usize,
    m: usize,
    vector: bool,
    a_transposed_view: bool,
    seed: u64,
    conjugate_reference: bool,
) -> Result<(), String> {
    let mut rng = SplitMix(seed);
    let a_values = triangular(dtype, batches, n, options.lower, &mut rng);
    let b_shape = match (vector, options.left_side) {
        (true, _) => vec![batches, n],
        (false, true) => vec![batches, n, m],
        (false, false) => vec![batches, m, n],
    };
    let b_count: usize = b_shape.iter().product();
    let b_values: Vec<Complex64> = (0..b_count)
        .map(|_| random_complex(dtype, &mut rng, 2.0))
        .collect();
    // The transposed view holds the transposed matrix, so the logical `a` is the same.
    let a = if a_transposed_view {
        let stored: Vec<Complex64> = (0..a_values.len())
            .map(|index| {
                let (batch, within) = (index / (n * n), index % (n * n));
                a_values[batch * n * n + (within % n) * n + within / n]
            })
            .collect();
        upload_complex(dtype, &[batches, n, n], &stored)
            .transpose(&[0, 2, 1])
            .unwrap()
    } else {
        upload_complex(dtype, &[batches, n, n], &a_values)
    };
    let b = upload_complex(dtype, &b_shape, &b_values);
    let before = fallbacks("triangular_solve", dtype);
    let output = triangular_solve(&a, &b, &options).map_err(|error| error.to_string())?;
    if fallbacks("triangular_solve", dtype) != before || output.shape() != b_shape {
        return Err(format!("shape {:?} or a host fallback", output.shape()));
    }
    let got = complex_values(&output);
    let columns = if vector { 1 } else { m };
    let eps = component_epsilon(dtype);
    for batch in 0..batches {
        let a_at = |row: usize, column: usize| a_values[batch * n * n + row * n + column];
        // op(a) as Nx defines it (a plain transpose), seen from x: X op(a) = B is
        // op(a)^T X^T = B^T, so the right side solves with op(a) transposed once more.
        let transposed = options.transpose_a == options.left_side;
        let t = |row: usize, column: usize| {
            let value = if transposed {
                a_at(column, row)
            } else {
                a_at(row, column)
            };
            if conjugate_reference && options.transpose_a {
                value.conj()
            } else {
                value
            }
        };
        let lower = options.lower != transposed;
        for column in 0..columns {
            let at = |i: usize| match (vector, options.left_side) {
                (true, _) => batch * n + i,
                (false, true) => (batch * n + i) * m + column,
                (false, false) => (batch * m + column) * n + i,
            };
            let rhs: Vec<Complex64> = (0..n).map(|i| b_values[at(i)]).collect();
            let x = solve(n, lower, t, &rhs);
            let scale = x.iter().map(|z| z.norm()).fold(1.0, f64::max);
            let bound = 64.0 * (n as f64 + 1.0) * eps * scale;
            for (i, expected) in x.iter().enumerate() {
                let actual = got[at(i)];
                let close = (actual.re - expected.re).abs() <= bound
                    && (actual.im - expected.im).abs() <= bound;
                if !close {
                    return Err(format!(
                        "{dtype} {options:?} batch {batch} column {column} row {i}: {actual} vs {expected} (bound {bound:e})"
                    ));
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases_or(48), max_shrink_iters: 32, ..ProptestConfig::default() })]

    #[test]
    fn complex_triangular_solve_matches_the_host(
        complex in 0usize..2,
        lower in any::<bool>(),
        left_side in any::<bool>(),
        transpose_a in any::<bool>(),
        batches in 1usize..3,
        n in 0usize..8,
        m in 1usize..4,
        vector_draw in 0u8..3,
        a_transposed_view in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let options = TriangularSolveOptions { lower, left_side, transpose_a };
        let dtype = [DType::C64, DType::C128][complex];
        let result = solve_case(dtype, options, batches, n, m, vector_draw == 0, a_transposed_view, seed, false);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}

#[test]
fn the_null_arm_rejects_a_conjugate_transpose() {
    for dtype in [DType::C64, DType::C128] {
        for left_side in [true, false] {
            let options = TriangularSolveOptions {
                lower: true,
                left_side,
                transpose_a: true,
            };
            solve_case(dtype, options, 1, 5, 2, false, false, 3, false).unwrap();
            let wrong = solve_case(dtype, options, 1, 5, 2, false, false, 3, true);
            assert!(
                wrong.is_err(),
                "{dtype}: a conjugate transpose passed for a transpose"
            );
        }
    }
}

#[test]
fn real_and_complex_operands_promote_to_complex() {
    // a real lower-triangular f32, b complex: the result is c64.
    let device = device();
    let a = Tensor::from_slice(&device, &[2, 2], &[2.0f32, 0.0, 1.0, 4.0]).unwrap();
    let b = Tensor::from_slice(
        &device,
        &[2],
        &[
            nxvk_core::Complex32::new(2.0, 4.0),
            nxvk_core::Complex32::new(5.0, 2.0),
        ],
    )
    .unwrap();
    let x = triangular_solve(&a, &b, &TriangularSolveOptions::default()).unwrap();
    assert_eq!(x.dtype(), DType::C64);
    // x0 = (2 + 4i) / 2 = 1 + 2i; x1 = (5 + 2i - (1 + 2i)) / 4 = 1
    assert_eq!(
        x.to_vec::<nxvk_core::Complex32>().unwrap(),
        [
            nxvk_core::Complex32::new(1.0, 2.0),
            nxvk_core::Complex32::new(1.0, 0.0)
        ]
    );
}

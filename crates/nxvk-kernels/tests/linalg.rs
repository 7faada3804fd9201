//! triangular_solve and cholesky against f64 host references on random well-conditioned
//! batched problems (diagonally dominant triangles, SPD matrices M M^T + n I): every option
//! combination of triangular_solve (lower/upper, left/right side, transposed a, vector b),
//! transposed views of the operands, f16/bf16/f32/f64. Tolerance: `16 * n * eps(result) *
//! (1 + |reference|)` per element (the problems are conditioned so that this bounds the
//! forward error); a null arm shows a perturbed result is rejected.

mod common;

use common::*;
use nxvk_core::{DType, Error, Tensor};
use nxvk_kernels::linalg::{
    TriangularSolveOptions, cholesky, determinant, eigh, lu, qr, solve, triangular_solve,
};
use nxvk_kernels::reference::{self, Value};
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("NXVK_TEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(32)
}

fn float_dtypes() -> Vec<DType> {
    [DType::F16, DType::BF16, DType::F32, DType::F64]
        .into_iter()
        .filter(|dtype| nxvk_kernels::ops::native_dtypes().any(|native| native == *dtype))
        .collect()
}

fn epsilon(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 2f64.powi(-10),
        DType::BF16 => 2f64.powi(-7),
        DType::F32 => 2f64.powi(-23),
        _ => 2f64.powi(-52),
    }
}

fn rounded(dtype: DType, value: f64) -> f64 {
    match reference::round_to(Value::Float(value), dtype) {
        Value::Float(value) => value,
        other => panic!("{other:?}"),
    }
}

fn upload(dtype: DType, shape: &[usize], values: &[f64]) -> Tensor {
    let encoded: Vec<Value> = values.iter().map(|&value| Value::Float(value)).collect();
    Tensor::from_bytes(&device(), dtype, shape, &reference::encode(dtype, &encoded)).unwrap()
}

fn floats(tensor: &Tensor) -> Vec<f64> {
    read(tensor)
        .into_iter()
        .map(|value| match value {
            Value::Float(value) => value,
            other => panic!("{other:?}"),
        })
        .collect()
}

fn compare(dtype: DType, n: usize, actual: &[f64], expected: &[f64]) -> Result<(), String> {
    if actual.len() != expected.len() {
        return Err(format!(
            "{} values, expected {}",
            actual.len(),
            expected.len()
        ));
    }
    let tolerance = 16.0 * n.max(1) as f64 * epsilon(dtype);
    for (index, (&got, &wanted)) in actual.iter().zip(expected).enumerate() {
        // A NaN fails the comparison, so it counts as a mismatch.
        let close = (got - wanted).abs() <= tolerance * (1.0 + wanted.abs());
        if !close {
            return Err(format!(
                "element {index}: got {got}, expected {wanted} ({dtype}, n = {n})"
            ));
        }
    }
    Ok(())
}

/// A batch of n x n matrices whose `lower` (or upper) triangle is diagonally dominant; the
/// other triangle holds garbage that must never be read.
fn triangular(dtype: DType, batches: usize, n: usize, lower: bool, rng: &mut SplitMix) -> Vec<f64> {
    let mut values = Vec::with_capacity(batches * n * n);
    for _ in 0..batches {
        for row in 0..n {
            for column in 0..n {
                let inside = if lower { column <= row } else { column >= row };
                let value = if row == column {
                    (1.0 + rng.unit()) * if rng.below(2) == 0 { 1.0 } else { -1.0 }
                } else if inside {
                    (rng.unit() * 2.0 - 1.0) / n as f64
                } else {
                    1.0e4
                };
                values.push(rounded(dtype, value));
            }
        }
    }
    values
}

/// Host solve of T x = b for one right-hand side, T given by an element function.
fn substitute(n: usize, lower: bool, t: impl Fn(usize, usize) -> f64, b: &[f64]) -> Vec<f64> {
    let mut x = vec![0.0; n];
    for step in 0..n {
        let row = if lower { step } else { n - 1 - step };
        let range = if lower { 0..row } else { row + 1..n };
        let sum: f64 = range.map(|j| t(row, j) * x[j]).sum();
        x[row] = (b[row] - sum) / t(row, row);
    }
    x
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn triangular_solve_matches_the_reference(seed in any::<u64>()) {
        let mut rng = SplitMix(seed);
        let dtypes = float_dtypes();
        let dtype = dtypes[rng.below(dtypes.len() as u64) as usize];
        let options = TriangularSolveOptions {
            lower: rng.below(2) == 0,
            left_side: rng.below(2) == 0,
            transpose_a: rng.below(2) == 0,
        };
        let batches = 1 + rng.below(3) as usize;
        let n = 1 + rng.below(7) as usize;
        let vector = options.left_side && rng.below(3) == 0;
        let m = 1 + rng.below(4) as usize;
        let a_values = triangular(dtype, batches, n, options.lower, &mut rng);
        let b_shape: Vec<usize> = if vector {
            vec![batches, n]
        } else if options.left_side {
            vec![batches, n, m]
        } else {
            vec![batches, m, n]
        };
        let b_count: usize = b_shape.iter().product();
        let b_values: Vec<f64> = (0..b_count).map(|_| rounded(dtype, rng.unit() * 4.0 - 2.0)).collect();
        let a = upload(dtype, &[batches, n, n], &a_values);
        let b = upload(dtype, &b_shape, &b_values);
        let output = triangular_solve(&a, &b, &options).unwrap();
        prop_assert_eq!(output.shape(), &b_shape[..]);
        // Host: each right-hand side solved against op(a) (or op(a)^T for the right side).
        let columns = if vector { 1 } else { m };
        let mut expected = vec![0.0; b_count];
        for batch in 0..batches {
            let a_at = |row: usize, column: usize| a_values[batch * n * n + row * n + column];
            let transposed = options.transpose_a == options.left_side;
            let t = |row: usize, column: usize| if transposed { a_at(column, row) } else { a_at(row, column) };
            let lower = options.lower != transposed;
            for column in 0..columns {
                let index = |i: usize| -> usize {
                    if vector {
                        batch * n + i
                    } else if options.left_side {
                        batch * n * m + i * m + column
                    } else {
                        batch * m * n + column * n + i
                    }
                };
                let rhs: Vec<f64> = (0..n).map(|i| b_values[index(i)]).collect();
                let x = substitute(n, lower, t, &rhs);
                for i in 0..n {
                    expected[index(i)] = x[i];
                }
            }
        }
        if let Err(why) = compare(dtype, n, &floats(&output), &expected) {
            return Err(TestCaseError::fail(format!("{options:?} {dtype} n={n} m={m}: {why}")));
        }
    }

    #[test]
    fn cholesky_matches_the_reference(seed in any::<u64>()) {
        let mut rng = SplitMix(seed);
        let dtypes = float_dtypes();
        let dtype = dtypes[rng.below(dtypes.len() as u64) as usize];
        let batches = 1 + rng.below(3) as usize;
        let n = 1 + rng.below(8) as usize;
        let mut a_values = Vec::new();
        for _ in 0..batches {
            let m: Vec<f64> = (0..n * n).map(|_| rng.unit() * 2.0 - 1.0).collect();
            for row in 0..n {
                for column in 0..n {
                    let product: f64 = (0..n).map(|k| m[row * n + k] * m[column * n + k]).sum();
                    let diagonal = if row == column { n as f64 } else { 0.0 };
                    a_values.push(rounded(dtype, product + diagonal));
                }
            }
        }
        // Read through a transposed view: a symmetric matrix is its own transpose, so only
        // the addressing changes.
        let a = upload(dtype, &[batches, n, n], &a_values).transpose(&[0, 2, 1]).unwrap();
        let output = cholesky(&a).unwrap();
        let mut expected = vec![0.0; batches * n * n];
        for batch in 0..batches {
            let base = batch * n * n;
            for j in 0..n {
                let sum: f64 = (0..j).map(|k| expected[base + j * n + k] * expected[base + j * n + k]).sum();
                let diagonal = (a_values[base + j * n + j] - sum).sqrt();
                expected[base + j * n + j] = diagonal;
                for i in j + 1..n {
                    let sum: f64 = (0..j).map(|k| expected[base + i * n + k] * expected[base + j * n + k]).sum();
                    expected[base + i * n + j] = (a_values[base + i * n + j] - sum) / diagonal;
                }
            }
        }
        if let Err(why) = compare(dtype, n, &floats(&output), &expected) {
            return Err(TestCaseError::fail(format!("{dtype} n={n}: {why}")));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// P is a permutation matrix, L unit lower with |L| <= 1 (partial pivoting), U upper, and
    /// P L U reproduces A; the determinant matches an f64 host elimination within a bound
    /// scaled by Hadamard's (the product of the row norms).
    #[test]
    fn lu_and_determinant_match(seed in any::<u64>()) {
        let mut rng = SplitMix(seed);
        let dtypes = float_dtypes();
        let dtype = dtypes[rng.below(dtypes.len() as u64) as usize];
        let batches = 1 + rng.below(3) as usize;
        let n = 1 + rng.below(7) as usize;
        let values: Vec<f64> = (0..batches * n * n).map(|_| rounded(dtype, rng.unit() * 4.0 - 2.0)).collect();
        let a = upload(dtype, &[batches, n, n], &values);
        let (p, l, u) = lu(&a).unwrap();
        prop_assert_eq!(p.dtype(), DType::S64);
        let p_values: Vec<i64> = p.to_vec::<i64>().unwrap();
        let (l_values, u_values) = (floats(&l), floats(&u));
        let tolerance = 16.0 * n as f64 * epsilon(dtype);
        for batch in 0..batches {
            let at = |matrix: &[f64], i: usize, j: usize| matrix[batch * n * n + i * n + j];
            for i in 0..n {
                let ones = (0..n).filter(|&j| p_values[batch * n * n + i * n + j] == 1).count();
                let zeros = (0..n).filter(|&j| p_values[batch * n * n + i * n + j] == 0).count();
                prop_assert!(ones == 1 && zeros == n - 1, "P row {} of batch {}: {:?}", i, batch, p_values);
                for j in 0..n {
                    prop_assert!(j <= i || at(&l_values, i, j) == 0.0);
                    prop_assert!(i != j || at(&l_values, i, j) == 1.0);
                    prop_assert!(at(&l_values, i, j).abs() <= 1.0 + tolerance, "|L| > 1");
                    prop_assert!(j >= i || at(&u_values, i, j) == 0.0);
                    // (P L U)[i][j] against A[i][j].
                    let mut product = 0.0;
                    for r in 0..n {
                        if p_values[batch * n * n + i * n + r] == 1 {
                            product += (0..n).map(|k| at(&l_values, r, k) * at(&u_values, k, j)).sum::<f64>();
                        }
                    }
                    let scale: f64 = (0..n).map(|k| at(&values, k, j).abs()).sum::<f64>() + 1.0;
                    prop_assert!((product - at(&values, i, j)).abs() <= 4.0 * tolerance * scale,
                        "PLU[{}][{}] = {} but A = {} ({} n={})", i, j, product, at(&values, i, j), dtype, n);
                }
            }
        }
        let determinants = floats(&determinant(&a).unwrap());
        prop_assert_eq!(determinants.len(), batches);
        for batch in 0..batches {
            let mut m: Vec<f64> = values[batch * n * n..(batch + 1) * n * n].to_vec();
            let mut expected = 1.0;
            for k in 0..n {
                let pivot = (k..n).max_by(|&x, &y| m[x * n + k].abs().total_cmp(&m[y * n + k].abs())).unwrap();
                if pivot != k {
                    for j in 0..n { m.swap(k * n + j, pivot * n + j); }
                    expected = -expected;
                }
                expected *= m[k * n + k];
                for i in k + 1..n {
                    let factor = m[i * n + k] / m[k * n + k];
                    for j in k..n { m[i * n + j] -= factor * m[k * n + j]; }
                }
            }
            let hadamard: f64 = (0..n)
                .map(|i| (0..n).map(|j| values[batch * n * n + i * n + j].powi(2)).sum::<f64>().sqrt())
                .product();
            let bound = tolerance * (hadamard + 1.0) + epsilon(dtype) * expected.abs();
            prop_assert!((determinants[batch] - expected).abs() <= bound,
                "det {} but expected {} ({} n={})", determinants[batch], expected, dtype, n);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// solve on diagonally dominant systems (vector and matrix right-hand sides, batched)
    /// against an f64 host Gaussian elimination.
    #[test]
    fn solve_matches_the_reference(seed in any::<u64>()) {
        let mut rng = SplitMix(seed);
        let dtypes = float_dtypes();
        let dtype = dtypes[rng.below(dtypes.len() as u64) as usize];
        let batches = 1 + rng.below(3) as usize;
        let n = 1 + rng.below(6) as usize;
        let vector = rng.below(2) == 0;
        let m = if vector { 1 } else { 1 + rng.below(3) as usize };
        let mut a_values = Vec::new();
        for _ in 0..batches {
            for row in 0..n {
                for column in 0..n {
                    let value = if row == column { 2.0 + rng.unit() } else { (rng.unit() * 2.0 - 1.0) / n as f64 };
                    a_values.push(rounded(dtype, value));
                }
            }
        }
        let b_values: Vec<f64> = (0..batches * n * m).map(|_| rounded(dtype, rng.unit() * 4.0 - 2.0)).collect();
        let b_shape = if vector { vec![batches, n] } else { vec![batches, n, m] };
        let x = solve(&upload(dtype, &[batches, n, n], &a_values), &upload(dtype, &b_shape, &b_values)).unwrap();
        prop_assert_eq!(x.shape(), &b_shape[..]);
        let mut expected = vec![0.0; batches * n * m];
        for batch in 0..batches {
            for column in 0..m {
                // Gauss-Jordan on the f64 copy (the matrices are diagonally dominant).
                let mut matrix: Vec<f64> = a_values[batch * n * n..(batch + 1) * n * n].to_vec();
                let mut rhs: Vec<f64> = (0..n).map(|i| b_values[batch * n * m + i * m + column]).collect();
                for k in 0..n {
                    for i in 0..n {
                        if i != k {
                            let factor = matrix[i * n + k] / matrix[k * n + k];
                            for j in 0..n { matrix[i * n + j] -= factor * matrix[k * n + j]; }
                            rhs[i] -= factor * rhs[k];
                        }
                    }
                }
                for i in 0..n {
                    expected[batch * n * m + i * m + column] = rhs[i] / matrix[i * n + i];
                }
            }
        }
        if let Err(why) = compare(dtype, n, &floats(&x), &expected) {
            return Err(TestCaseError::fail(format!("{dtype} n={n} m={m}: {why}")));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// Q has orthonormal columns, R is upper triangular with the documented shapes (reduced
    /// and complete, tall and wide), and Q R reproduces A.
    #[test]
    fn qr_reconstructs(seed in any::<u64>()) {
        let mut rng = SplitMix(seed);
        let dtypes = float_dtypes();
        let dtype = dtypes[rng.below(dtypes.len() as u64) as usize];
        let batches = 1 + rng.below(2) as usize;
        let (m, n) = (1 + rng.below(6) as usize, 1 + rng.below(6) as usize);
        let complete = rng.below(2) == 0;
        let values: Vec<f64> = (0..batches * m * n).map(|_| rounded(dtype, rng.unit() * 4.0 - 2.0)).collect();
        let (q, r) = qr(&upload(dtype, &[batches, m, n], &values), complete).unwrap();
        let k = if complete { m } else { m.min(n) };
        prop_assert_eq!(q.shape(), &[batches, m, k][..]);
        prop_assert_eq!(r.shape(), &[batches, k, n][..]);
        let (q_values, r_values) = (floats(&q), floats(&r));
        let tolerance = 32.0 * m.max(n) as f64 * epsilon(dtype);
        for batch in 0..batches {
            let q_at = |i: usize, j: usize| q_values[batch * m * k + i * k + j];
            let r_at = |i: usize, j: usize| r_values[batch * k * n + i * n + j];
            for i in 0..k {
                for j in 0..k {
                    let dot: f64 = (0..m).map(|row| q_at(row, i) * q_at(row, j)).sum();
                    let identity = if i == j { 1.0 } else { 0.0 };
                    prop_assert!((dot - identity).abs() <= tolerance, "Q^T Q [{}][{}] = {} ({} {}x{})", i, j, dot, dtype, m, n);
                }
                for j in 0..i.min(n) {
                    prop_assert_eq!(r_at(i, j), 0.0);
                }
            }
            for i in 0..m {
                for j in 0..n {
                    let product: f64 = (0..k).map(|l| q_at(i, l) * r_at(l, j)).sum();
                    let scale: f64 = (0..m).map(|row| values[batch * m * n + row * n + j].abs()).sum::<f64>() + 1.0;
                    let wanted = values[batch * m * n + i * n + j];
                    prop_assert!((product - wanted).abs() <= tolerance * scale,
                        "QR[{}][{}] = {} but A = {} ({} {}x{})", i, j, product, wanted, dtype, m, n);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// Eigenvalues ascending, eigenvectors orthonormal, A v = lambda v, within
    /// `32 n eps(result) (1 + |A|_F)`; the upper triangle holds garbage that must be ignored.
    #[test]
    fn eigh_decomposes(seed in any::<u64>()) {
        let mut rng = SplitMix(seed);
        let dtypes = float_dtypes();
        let dtype = dtypes[rng.below(dtypes.len() as u64) as usize];
        let batches = 1 + rng.below(2) as usize;
        let n = 1 + rng.below(6) as usize;
        let mut values = vec![0.0; batches * n * n];
        let mut symmetric = vec![0.0; batches * n * n];
        for batch in 0..batches {
            for i in 0..n {
                for j in 0..=i {
                    let x = rounded(dtype, rng.unit() * 4.0 - 2.0);
                    symmetric[batch * n * n + i * n + j] = x;
                    symmetric[batch * n * n + j * n + i] = x;
                    values[batch * n * n + i * n + j] = x;
                    if j < i {
                        values[batch * n * n + j * n + i] = 99.0;
                    }
                }
            }
        }
        let (eigenvalues, eigenvectors) = eigh(&upload(dtype, &[batches, n, n], &values)).unwrap();
        prop_assert_eq!(eigenvalues.shape(), &[batches, n][..]);
        prop_assert_eq!(eigenvectors.shape(), &[batches, n, n][..]);
        prop_assert_eq!(eigenvalues.dtype(), dtype);
        let (lambda, vectors) = (floats(&eigenvalues), floats(&eigenvectors));
        for batch in 0..batches {
            let a = |i: usize, j: usize| symmetric[batch * n * n + i * n + j];
            let v = |i: usize, j: usize| vectors[batch * n * n + i * n + j];
            let frobenius: f64 = (0..n * n).map(|index| a(index / n, index % n).powi(2)).sum::<f64>().sqrt();
            let tolerance = 32.0 * n as f64 * epsilon(dtype) * (1.0 + frobenius);
            for i in 1..n {
                prop_assert!(lambda[batch * n + i - 1] <= lambda[batch * n + i], "not ascending: {:?}", lambda);
            }
            for column in 0..n {
                for other in 0..n {
                    let dot: f64 = (0..n).map(|row| v(row, column) * v(row, other)).sum();
                    let identity = if column == other { 1.0 } else { 0.0 };
                    prop_assert!((dot - identity).abs() <= tolerance, "V^T V [{}][{}] = {}", column, other, dot);
                }
                for row in 0..n {
                    let av: f64 = (0..n).map(|k| a(row, k) * v(k, column)).sum();
                    let lv = lambda[batch * n + column] * v(row, column);
                    prop_assert!((av - lv).abs() <= tolerance, "(A v - lambda v)[{}] = {} ({} n={})", row, av - lv, dtype, n);
                }
            }
        }
    }
}

/// Fixed determinants (a row swap flips the sign) and a perturbed one that is rejected.
#[test]
fn fixed_determinants() {
    let a = upload(
        DType::F64,
        &[2, 2, 2],
        &[1.0, 2.0, 3.0, 4.0, 0.0, 1.0, 1.0, 0.0],
    );
    let determinants = floats(&determinant(&a).unwrap());
    compare(DType::F64, 2, &determinants, &[-2.0, -1.0]).unwrap();
    assert!(compare(DType::F64, 2, &[-2.0, 1.0], &[-2.0, -1.0]).is_err());
}

/// The null arm: a fixed solve is right, and a perturbed copy of it is rejected.
#[test]
fn perturbed_solutions_are_rejected() {
    let a = upload(DType::F32, &[2, 2], &[2.0, 0.0, 1.0, 4.0]);
    let b = upload(DType::F32, &[2], &[2.0, 9.0]);
    let x = floats(&triangular_solve(&a, &b, &TriangularSolveOptions::default()).unwrap());
    compare(DType::F32, 2, &x, &[1.0, 2.0]).unwrap();
    assert!(compare(DType::F32, 2, &[1.0, 2.0 + 1.0e-4], &[1.0, 2.0]).is_err());
    let l = floats(&cholesky(&upload(DType::F64, &[2, 2], &[4.0, 2.0, 2.0, 5.0])).unwrap());
    compare(DType::F64, 2, &l, &[2.0, 0.0, 1.0, 2.0]).unwrap();
    let (eigenvalues, _) = eigh(&upload(DType::F64, &[2, 2], &[2.0, 0.0, 1.0, 2.0])).unwrap();
    compare(DType::F64, 2, &floats(&eigenvalues), &[1.0, 3.0]).unwrap();
    assert!(compare(DType::F64, 2, &[1.0, 3.0 + 1.0e-9], &[1.0, 3.0]).is_err());
}

/// Mismatched shapes are errors naming the op, complex operands included; integer inputs give
/// float results.
#[test]
fn shapes_and_types() {
    let dev = device();
    let a = Tensor::from_slice(&dev, &[2, 2], &[2i32, 0, 1, 4]).unwrap();
    let b = Tensor::from_slice(&dev, &[2], &[2i32, 9]).unwrap();
    let x = triangular_solve(&a, &b, &TriangularSolveOptions::default()).unwrap();
    assert_eq!(x.dtype(), DType::F32);
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    let wrong = Tensor::zeros(&dev, DType::F32, &[3]).unwrap();
    assert!(matches!(
        triangular_solve(&a, &wrong, &TriangularSolveOptions::default()),
        Err(Error::BadOperands {
            op: "triangular_solve",
            ..
        })
    ));
    let rectangle = Tensor::zeros(&dev, DType::F32, &[2, 3]).unwrap();
    assert!(matches!(
        cholesky(&rectangle),
        Err(Error::BadOperands { op: "cholesky", .. })
    ));
    let complex_rectangle = Tensor::zeros(&dev, DType::C64, &[2, 3]).unwrap();
    assert!(matches!(
        cholesky(&complex_rectangle),
        Err(Error::BadOperands { op: "cholesky", .. })
    ));
}

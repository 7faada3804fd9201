//! Complex (c64, c128) cholesky, lu, determinant, solve, qr and eigh against f64 complex host
//! references (num_complex arithmetic on the rounded inputs), on random well-conditioned
//! batches: orders 0..7 (1 x 1 included), odd sizes, empty batches, tall and wide qr in both
//! modes.
//!
//! - cholesky: Hermitian positive definite `M M^H + n I`, NaN in the strict upper triangle
//!   (never read); against the host's A = L L^H factor, per part within
//!   `64 (n + 1) eps max(1, |L|)`.
//! - lu: P a permutation, L unit lower with |L| <= 1 (pivoting by modulus), U upper, P L U = A
//!   within `64 (n + 1) eps (1 + sum |A|)`; the determinant against a host elimination within
//!   a bound scaled by Hadamard's (the product of the row norms).
//! - solve: diagonally dominant systems, vector and matrix right-hand sides, against a host
//!   Gauss-Jordan elimination.
//! - qr: against a host Householder QR with the documented reflector (alpha = -e^(i arg x0)
//!   |x|) and R's diagonal turned real (LAPACK's signs), element by element, plus Q^H Q = I
//!   and a real diagonal.
//! - eigh: Hermitian matrices (NaN above the diagonal): eigenvalues real (zero imaginary
//!   parts), ascending, V^H V = I and A v = lambda v within `32 n eps (1 + |A|_F)`.
//!
//! `eps` is the component type's (f32 for c64). Null arms: each reference made without the
//! conjugation the Hermitian algebra needs (L L^T, a conjugate-free reflector, a transposed
//! instead of Hermitian mirror) is rejected on the same inputs.

mod common;

use common::complex_matrices::*;
use common::*;
use nxvk_core::{Complex64, DType, Tensor};
use nxvk_kernels::{cholesky, determinant, eigh, lu, qr, solve};
use proptest::prelude::*;

const ZERO: Complex64 = Complex64::new(0.0, 0.0);
const ONE: Complex64 = Complex64::new(1.0, 0.0);

/// The complex dtype drawn as 0 or 1.
fn complex_dtype(draw: usize) -> DType {
    [DType::C64, DType::C128][draw]
}

fn random_matrix(dtype: DType, count: usize, scale: f64, rng: &mut SplitMix) -> Vec<Complex64> {
    (0..count)
        .map(|_| random_complex(dtype, rng, scale))
        .collect()
}

/// `left [rows, inner] . right [inner, columns]`, row-major.
fn product(
    left: &[Complex64],
    right: &[Complex64],
    (rows, inner, columns): (usize, usize, usize),
) -> Vec<Complex64> {
    let mut out = vec![ZERO; rows * columns];
    for i in 0..rows {
        for j in 0..columns {
            out[i * columns + j] = (0..inner)
                .map(|k| left[i * inner + k] * right[k * columns + j])
                .sum();
        }
    }
    out
}

/// The conjugate transpose of `matrix` [rows, columns].
fn adjoint(matrix: &[Complex64], rows: usize, columns: usize) -> Vec<Complex64> {
    let mut out = vec![ZERO; rows * columns];
    for i in 0..rows {
        for j in 0..columns {
            out[j * rows + i] = matrix[i * columns + j].conj();
        }
    }
    out
}

fn largest_modulus(values: &[Complex64]) -> f64 {
    values.iter().map(|z| z.norm()).fold(1.0, f64::max)
}

/// Batches of Hermitian positive definite `M M^H + n I`, rounded to `dtype`, with NaN in the
/// strict upper triangle (which cholesky must not read).
fn hermitian_positive(
    dtype: DType,
    batches: usize,
    n: usize,
    rng: &mut SplitMix,
) -> Vec<Complex64> {
    let mut values = Vec::with_capacity(batches * n * n);
    for _ in 0..batches {
        let m = random_matrix(DType::C128, n * n, 1.0, rng);
        let mut a = product(&m, &adjoint(&m, n, n), (n, n, n));
        for i in 0..n {
            a[i * n + i] = Complex64::new(a[i * n + i].re + n as f64, 0.0);
            for j in i + 1..n {
                a[i * n + j] = Complex64::new(f64::NAN, f64::NAN);
            }
        }
        values.extend(a.into_iter().map(|z| rounded_complex(dtype, z)));
    }
    values
}

/// The host factor of one matrix: A = L L^H (Nx's formulas), or L L^T when not `conjugate`
/// (the null arm's wrong algebra).
fn host_cholesky(n: usize, a: &[Complex64], conjugate: bool) -> Vec<Complex64> {
    let partner = |z: Complex64| if conjugate { z.conj() } else { z };
    let mut l = vec![ZERO; n * n];
    for j in 0..n {
        let pivot = (0..j).fold(a[j * n + j], |sum, k| {
            sum - l[j * n + k] * partner(l[j * n + k])
        });
        l[j * n + j] = pivot.sqrt();
        for i in j + 1..n {
            let sum = (0..j).fold(a[i * n + j], |sum, k| {
                sum - l[i * n + k] * partner(l[j * n + k])
            });
            l[i * n + j] = sum / l[j * n + j];
        }
    }
    l
}

fn cholesky_case(
    dtype: DType,
    batches: usize,
    n: usize,
    seed: u64,
    conjugate: bool,
) -> Result<(), String> {
    let mut rng = SplitMix(seed);
    let values = hermitian_positive(dtype, batches, n, &mut rng);
    let before = fallbacks("cholesky", dtype);
    let l =
        cholesky(&upload_complex(dtype, &[batches, n, n], &values)).map_err(|e| e.to_string())?;
    if fallbacks("cholesky", dtype) != before || l.dtype() != dtype || l.shape() != [batches, n, n]
    {
        return Err(format!(
            "{:?} {}: a host fallback or the wrong type",
            l.shape(),
            l.dtype()
        ));
    }
    let got = complex_values(&l);
    for batch in 0..batches {
        let range = batch * n * n..(batch + 1) * n * n;
        let expected = host_cholesky(n, &values[range.clone()], conjugate);
        let bound = 64.0 * (n as f64 + 1.0) * component_epsilon(dtype) * largest_modulus(&expected);
        if let Some(why) = complex_mismatch(&got[range], &expected, bound) {
            return Err(format!("{dtype} n={n} batch {batch}: {why}"));
        }
    }
    Ok(())
}

/// The host determinant of one matrix by elimination with pivoting by modulus.
fn host_determinant(n: usize, a: &[Complex64]) -> Complex64 {
    let mut m = a.to_vec();
    let mut determinant = ONE;
    for k in 0..n {
        let pivot = (k..n)
            .max_by(|&x, &y| m[x * n + k].norm().total_cmp(&m[y * n + k].norm()))
            .unwrap();
        if pivot != k {
            for j in 0..n {
                m.swap(k * n + j, pivot * n + j);
            }
            determinant = -determinant;
        }
        determinant *= m[k * n + k];
        for i in k + 1..n {
            let factor = m[i * n + k] / m[k * n + k];
            for j in k..n {
                let above = m[k * n + j];
                m[i * n + j] -= factor * above;
            }
        }
    }
    determinant
}

/// Checks P L U = A (A conjugated for the null arm) and the determinant of one case.
fn lu_case(
    dtype: DType,
    batches: usize,
    n: usize,
    seed: u64,
    conjugate_a: bool,
) -> Result<(), String> {
    let mut rng = SplitMix(seed);
    let values = random_matrix(dtype, batches * n * n, 2.0, &mut rng);
    let a = upload_complex(dtype, &[batches, n, n], &values);
    let (p, l, u) = lu(&a).map_err(|e| e.to_string())?;
    if p.dtype() != DType::S64 || l.dtype() != dtype || u.dtype() != dtype {
        return Err(format!("types {} {} {}", p.dtype(), l.dtype(), u.dtype()));
    }
    let p_values: Vec<i64> = p.to_vec().unwrap();
    let (l_values, u_values) = (complex_values(&l), complex_values(&u));
    let eps = component_epsilon(dtype);
    for batch in 0..batches {
        let range = batch * n * n..(batch + 1) * n * n;
        let (l_matrix, u_matrix) = (&l_values[range.clone()], &u_values[range.clone()]);
        for i in 0..n {
            let row = &p_values[batch * n * n + i * n..batch * n * n + (i + 1) * n];
            if row.iter().filter(|&&x| x == 1).count() != 1 || row.iter().any(|&x| x != 0 && x != 1)
            {
                return Err(format!("P row {i} of batch {batch}: {row:?}"));
            }
            for j in 0..n {
                let (lij, uij) = (l_matrix[i * n + j], u_matrix[i * n + j]);
                let shape_ok =
                    (j <= i || lij == ZERO) && (i != j || lij == ONE) && (j >= i || uij == ZERO);
                if !shape_ok || lij.norm() > 1.0 + 16.0 * eps {
                    return Err(format!("L or U shape at ({i}, {j}): {lij} {uij}"));
                }
            }
        }
        let lu_product = product(l_matrix, u_matrix, (n, n, n));
        let p_matrix: Vec<Complex64> = p_values[range.clone()]
            .iter()
            .map(|&x| Complex64::new(x as f64, 0.0))
            .collect();
        let reconstructed = product(&p_matrix, &lu_product, (n, n, n));
        let original: Vec<Complex64> = values[range.clone()]
            .iter()
            .map(|&z| if conjugate_a { z.conj() } else { z })
            .collect();
        let scale: f64 = 1.0 + original.iter().map(|z| z.norm()).sum::<f64>();
        let bound = 64.0 * (n as f64 + 1.0) * eps * scale;
        if let Some(why) = complex_mismatch(&reconstructed, &original, bound) {
            return Err(format!(
                "{dtype} n={n} batch {batch}: P L U against A: {why}"
            ));
        }
    }
    let determinants = complex_values(&determinant(&a).map_err(|e| e.to_string())?);
    for batch in 0..batches {
        let matrix = &values[batch * n * n..(batch + 1) * n * n];
        let expected = host_determinant(n, matrix);
        let expected = if conjugate_a {
            expected.conj()
        } else {
            expected
        };
        let hadamard: f64 = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| matrix[i * n + j].norm_sqr())
                    .sum::<f64>()
                    .sqrt()
            })
            .product();
        let bound = 64.0 * (n as f64 + 1.0) * eps * (hadamard + 1.0);
        if let Some(why) = complex_mismatch(&determinants[batch..batch + 1], &[expected], bound) {
            return Err(format!("{dtype} n={n} determinant of batch {batch}: {why}"));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases_or(24), max_shrink_iters: 32, ..ProptestConfig::default() })]

    #[test]
    fn complex_cholesky_matches_the_host(complex in 0usize..2, batches in 0usize..3, n in 0usize..8, seed in any::<u64>()) {
        let result = cholesky_case(complex_dtype(complex), batches, n, seed, true);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }

    #[test]
    fn complex_lu_and_determinant_match_the_host(complex in 0usize..2, batches in 0usize..3, n in 0usize..8, seed in any::<u64>()) {
        let result = lu_case(complex_dtype(complex), batches, n, seed, false);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }

    #[test]
    fn complex_solve_matches_the_host(complex in 0usize..2, batches in 0usize..3, n in 1usize..7, columns in 0usize..3, seed in any::<u64>()) {
        let result = solve_case(complex_dtype(complex), batches, n, columns, seed);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }

    #[test]
    fn complex_qr_matches_the_host_householder(complex in 0usize..2, batches in 0usize..3, m in 1usize..7, n in 1usize..7, complete in any::<bool>(), seed in any::<u64>()) {
        let result = qr_case(complex_dtype(complex), batches, (m, n), complete, seed, true);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }

    #[test]
    fn complex_eigh_decomposes(complex in 0usize..2, batches in 0usize..3, n in 0usize..7, seed in any::<u64>()) {
        let result = eigh_case(complex_dtype(complex), batches, n, seed, true);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}

/// Solves diagonally dominant systems; `columns` 0 means a vector right-hand side.
fn solve_case(
    dtype: DType,
    batches: usize,
    n: usize,
    columns: usize,
    seed: u64,
) -> Result<(), String> {
    let mut rng = SplitMix(seed);
    let mut a_values = random_matrix(dtype, batches * n * n, 1.0 / n as f64, &mut rng);
    for batch in 0..batches {
        for i in 0..n {
            let unit = Complex64::from_polar(2.0 + rng.unit(), std::f64::consts::TAU * rng.unit());
            a_values[batch * n * n + i * n + i] = rounded_complex(dtype, unit);
        }
    }
    let m = columns.max(1);
    let b_shape = if columns == 0 {
        vec![batches, n]
    } else {
        vec![batches, n, m]
    };
    let b_values = random_matrix(dtype, batches * n * m, 2.0, &mut rng);
    let x = solve(
        &upload_complex(dtype, &[batches, n, n], &a_values),
        &upload_complex(dtype, &b_shape, &b_values),
    )
    .map_err(|e| e.to_string())?;
    if x.shape() != b_shape || x.dtype() != dtype {
        return Err(format!("{:?} {}", x.shape(), x.dtype()));
    }
    let got = complex_values(&x);
    for batch in 0..batches {
        let mut matrix = a_values[batch * n * n..(batch + 1) * n * n].to_vec();
        let mut rhs = b_values[batch * n * m..(batch + 1) * n * m].to_vec();
        // Gauss-Jordan (diagonally dominant: no pivoting needed).
        for k in 0..n {
            for i in (0..n).filter(|&i| i != k) {
                let factor = matrix[i * n + k] / matrix[k * n + k];
                for j in 0..n {
                    let above = matrix[k * n + j];
                    matrix[i * n + j] -= factor * above;
                }
                for column in 0..m {
                    let above = rhs[k * m + column];
                    rhs[i * m + column] -= factor * above;
                }
            }
        }
        let expected: Vec<Complex64> = (0..n * m)
            .map(|index| rhs[index] / matrix[(index / m) * n + index / m])
            .collect();
        let bound = 64.0 * (n as f64 + 1.0) * component_epsilon(dtype) * largest_modulus(&expected);
        if let Some(why) =
            complex_mismatch(&got[batch * n * m..(batch + 1) * n * m], &expected, bound)
        {
            return Err(format!("{dtype} n={n} m={m} batch {batch}: {why}"));
        }
    }
    Ok(())
}

/// The host Householder QR of one m x n matrix: Q [m, m], R [m, n]. `conjugate` false drops
/// the conjugations of the reflector (the null arm's real-only algebra).
fn host_qr(
    m: usize,
    n: usize,
    a: &[Complex64],
    conjugate: bool,
) -> (Vec<Complex64>, Vec<Complex64>) {
    let partner = |z: Complex64| if conjugate { z.conj() } else { z };
    let mut r = a.to_vec();
    let mut q: Vec<Complex64> = (0..m * m)
        .map(|index| if index / m == index % m { ONE } else { ZERO })
        .collect();
    for j in 0..m.min(n) {
        let norm2: f64 = (j..m).map(|i| r[i * n + j].norm_sqr()).sum();
        let x0 = r[j * n + j];
        let unit = if x0 == ZERO { ONE } else { x0 / x0.norm() };
        let alpha = -unit * norm2.sqrt();
        let v: Vec<Complex64> = (0..m)
            .map(|i| {
                if i < j {
                    ZERO
                } else if i == j {
                    x0 - alpha
                } else {
                    r[i * n + j]
                }
            })
            .collect();
        let v_norm2: f64 = v.iter().map(|z| z.norm_sqr()).sum();
        let scale = if v_norm2 > 0.0 { 2.0 / v_norm2 } else { 0.0 };
        for column in j..n {
            let dot: Complex64 = (j..m).map(|i| partner(v[i]) * r[i * n + column]).sum();
            for i in j..m {
                r[i * n + column] -= scale * dot * v[i];
            }
        }
        for row in 0..m {
            let dot: Complex64 = (j..m).map(|i| q[row * m + i] * v[i]).sum();
            for i in j..m {
                q[row * m + i] -= scale * dot * partner(v[i]);
            }
        }
    }
    for i in 0..m {
        for j in 0..n.min(i) {
            r[i * n + j] = ZERO;
        }
    }
    // R's diagonal turned onto the real axis, the sign of its real part kept (LAPACK's).
    for j in 0..m.min(n) {
        let diagonal = r[j * n + j];
        let sign = if diagonal.re < 0.0 { -1.0 } else { 1.0 };
        let turn = if diagonal == ZERO {
            ONE
        } else {
            sign * diagonal.conj() / diagonal.norm()
        };
        for column in j..n {
            r[j * n + column] *= turn;
        }
        for row in 0..m {
            q[row * m + j] *= turn.conj();
        }
    }
    (q, r)
}

fn qr_case(
    dtype: DType,
    batches: usize,
    (m, n): (usize, usize),
    complete: bool,
    seed: u64,
    conjugate: bool,
) -> Result<(), String> {
    let mut rng = SplitMix(seed);
    let mut values = random_matrix(dtype, batches * m * n, 1.0, &mut rng);
    // A shifted leading diagonal keeps the columns well apart.
    for batch in 0..batches {
        for i in 0..m.min(n) {
            let at = batch * m * n + i * n + i;
            values[at] = rounded_complex(dtype, values[at] + Complex64::new(2.0, 1.0));
        }
    }
    let (q, r) = qr(&upload_complex(dtype, &[batches, m, n], &values), complete)
        .map_err(|e| e.to_string())?;
    let k = if complete { m } else { m.min(n) };
    if q.shape() != [batches, m, k] || r.shape() != [batches, k, n] || q.dtype() != dtype {
        return Err(format!(
            "shapes {:?} {:?}, {}",
            q.shape(),
            r.shape(),
            q.dtype()
        ));
    }
    let (q_values, r_values) = (complex_values(&q), complex_values(&r));
    let eps = component_epsilon(dtype);
    for batch in 0..batches {
        let (host_q, host_r) =
            host_qr(m, n, &values[batch * m * n..(batch + 1) * m * n], conjugate);
        let expected_q: Vec<Complex64> = (0..m * k)
            .map(|index| host_q[(index / k) * m + index % k])
            .collect();
        let expected_r = host_r[..k * n].to_vec();
        let got_q = &q_values[batch * m * k..(batch + 1) * m * k];
        let got_r = &r_values[batch * k * n..(batch + 1) * k * n];
        let bound = 64.0 * (m + n) as f64 * eps * largest_modulus(&expected_r);
        let q_check = complex_mismatch(got_q, &expected_q, bound);
        let r_check = complex_mismatch(got_r, &expected_r, bound);
        if let Some(why) = q_check
            .map(|why| format!("Q {why}"))
            .or(r_check.map(|why| format!("R {why}")))
        {
            return Err(format!(
                "{dtype} {m}x{n} complete={complete} batch {batch}: {why}"
            ));
        }
        if let Some(j) = (0..k.min(n)).find(|&j| got_r[j * n + j].im.abs() > bound) {
            return Err(format!(
                "{dtype} {m}x{n}: R[{j}][{j}] = {} is not real",
                got_r[j * n + j]
            ));
        }
        let gram = product(&adjoint(got_q, m, k), got_q, (k, m, k));
        let identity: Vec<Complex64> = (0..k * k)
            .map(|index| if index / k == index % k { ONE } else { ZERO })
            .collect();
        if let Some(why) = complex_mismatch(&gram, &identity, 64.0 * m as f64 * eps) {
            return Err(format!("{dtype} {m}x{n}: Q^H Q: {why}"));
        }
    }
    Ok(())
}

/// Hermitian batches; `hermitian_reference` false checks A v = lambda v against the mirror
/// transposed without conjugation (the null arm).
fn eigh_case(
    dtype: DType,
    batches: usize,
    n: usize,
    seed: u64,
    hermitian_reference: bool,
) -> Result<(), String> {
    let mut rng = SplitMix(seed);
    let mut stored = Vec::with_capacity(batches * n * n);
    let mut full = Vec::with_capacity(batches * n * n);
    for _ in 0..batches {
        let lower = random_matrix(dtype, n * n, 2.0, &mut rng);
        for i in 0..n {
            for j in 0..n {
                let (value, mirrored) = if i == j {
                    let real = Complex64::new(lower[i * n + i].re, 0.0);
                    (real, real)
                } else if j < i {
                    (lower[i * n + j], lower[i * n + j])
                } else {
                    let partner = lower[j * n + i];
                    (
                        Complex64::new(f64::NAN, f64::NAN),
                        if hermitian_reference {
                            partner.conj()
                        } else {
                            partner
                        },
                    )
                };
                stored.push(value);
                full.push(mirrored);
            }
        }
    }
    let (values, vectors) =
        eigh(&upload_complex(dtype, &[batches, n, n], &stored)).map_err(|e| e.to_string())?;
    if values.shape() != [batches, n]
        || vectors.shape() != [batches, n, n]
        || values.dtype() != dtype
    {
        return Err(format!(
            "{:?} {:?} {}",
            values.shape(),
            vectors.shape(),
            values.dtype()
        ));
    }
    let (lambda, v) = (complex_values(&values), complex_values(&vectors));
    for batch in 0..batches {
        let a = &full[batch * n * n..(batch + 1) * n * n];
        let v = &v[batch * n * n..(batch + 1) * n * n];
        let lambda = &lambda[batch * n..(batch + 1) * n];
        let frobenius = a.iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt();
        let bound = 32.0 * n as f64 * component_epsilon(dtype) * (1.0 + frobenius);
        if lambda.iter().any(|z| z.im != 0.0)
            || lambda.windows(2).any(|pair| pair[0].re > pair[1].re)
        {
            return Err(format!("eigenvalues not real and ascending: {lambda:?}"));
        }
        let gram = product(&adjoint(v, n, n), v, (n, n, n));
        let identity: Vec<Complex64> = (0..n * n)
            .map(|index| if index / n == index % n { ONE } else { ZERO })
            .collect();
        let av = product(a, v, (n, n, n));
        let v_lambda: Vec<Complex64> = (0..n * n)
            .map(|index| v[index] * lambda[index % n])
            .collect();
        let failure = complex_mismatch(&gram, &identity, bound)
            .map(|why| format!("V^H V: {why}"))
            .or(complex_mismatch(&av, &v_lambda, bound)
                .map(|why| format!("A V - V diag(lambda): {why}")));
        if let Some(why) = failure {
            return Err(format!("{dtype} n={n} batch {batch}: {why}"));
        }
    }
    Ok(())
}

/// The null arms: on inputs where the right algebra passes, a reference without the
/// conjugations (L L^T, a conjugate-free reflector, a transposed mirror, P L U against
/// conj(A)) is rejected.
#[test]
fn the_null_arms_reject_the_algebra_without_conjugation() {
    for dtype in [DType::C64, DType::C128] {
        cholesky_case(dtype, 2, 4, 7, true).unwrap();
        assert!(
            cholesky_case(dtype, 2, 4, 7, false).is_err(),
            "{dtype}: L L^T passed"
        );
        lu_case(dtype, 1, 4, 8, false).unwrap();
        assert!(
            lu_case(dtype, 1, 4, 8, true).is_err(),
            "{dtype}: conj(A) passed"
        );
        qr_case(dtype, 1, (5, 3), true, 9, true).unwrap();
        assert!(
            qr_case(dtype, 1, (5, 3), true, 9, false).is_err(),
            "{dtype}: a real reflector passed"
        );
        eigh_case(dtype, 1, 4, 10, true).unwrap();
        assert!(
            eigh_case(dtype, 1, 4, 10, false).is_err(),
            "{dtype}: a symmetric mirror passed"
        );
    }
}

/// Real operands with a complex right-hand side solve in complex; a real matrix typed c64
/// factors as the real kernel does (cholesky of a real SPD matrix has zero imaginary parts).
#[test]
fn mixed_and_real_valued_complex_operands() {
    let device = device();
    let a = Tensor::from_slice(&device, &[2, 2], &[2.0f32, 1.0, 1.0, 3.0]).unwrap();
    let b = upload_complex(
        DType::C64,
        &[2],
        &[Complex64::new(3.0, 1.0), Complex64::new(4.0, -2.0)],
    );
    let x = complex_values(&solve(&a, &b).unwrap());
    // [[2, 1], [1, 3]] x = b: x = (3 b0 - b1) / 5, (2 b1 - b0) / 5.
    let expected = [Complex64::new(1.0, 1.0), Complex64::new(1.0, -1.0)];
    assert!(complex_mismatch(&x, &expected, 1e-6).is_none(), "{x:?}");
    let spd = upload_complex(
        DType::C128,
        &[2, 2],
        &[
            Complex64::new(4.0, 0.0),
            ZERO,
            Complex64::new(2.0, 0.0),
            Complex64::new(5.0, 0.0),
        ],
    );
    let l = complex_values(&cholesky(&spd).unwrap());
    let expected = [
        Complex64::new(2.0, 0.0),
        ZERO,
        ONE,
        Complex64::new(2.0, 0.0),
    ];
    assert!(complex_mismatch(&l, &expected, 1e-15).is_none(), "{l:?}");
    // Nx's doctest: cholesky([[1, -2i], [2i, 5]]) = [[1, 0], [2i, 1]].
    let doctest = upload_complex(
        DType::C64,
        &[2, 2],
        &[
            ONE,
            Complex64::new(0.0, -2.0),
            Complex64::new(0.0, 2.0),
            Complex64::new(5.0, 0.0),
        ],
    );
    let l = complex_values(&cholesky(&doctest).unwrap());
    let expected = [ONE, ZERO, Complex64::new(0.0, 2.0), ONE];
    assert!(complex_mismatch(&l, &expected, 1e-6).is_none(), "{l:?}");
    assert!(complex_mismatch(&l, &[ONE, ZERO, Complex64::new(0.0, -2.0), ONE], 1e-6).is_some());
}

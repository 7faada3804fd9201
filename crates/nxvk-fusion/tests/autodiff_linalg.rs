//! Gradients of the fft, triangular_solve and linear-algebra nodes against central finite
//! differences, in f64 on the device.
//!
//! Each loss is `sum(f(node(parameters)))` for a smooth `f`; the gradient graph's value for
//! every parameter element must agree with `(loss(p + h) - loss(p - h)) / 2h`. Matrices are
//! kept well-conditioned (a shifted diagonal), symmetric where the op reads a symmetric
//! matrix (cholesky, eigh: the parameter is symmetrised in the graph, so the check covers the
//! rule's symmetric part), with distinct eigenvalues and clear LU pivots. Null arms show a
//! wrong rule (a gradient checked against another forward function) is rejected.
//!
//! The complex (c128) cases build each complex operand from two f64 parameters, its real and
//! imaginary parts, so the differences move each part of each element separately; their
//! losses read both parts of the results: triangular_solve (every option), solve and
//! determinant, cholesky and eigh of Hermitian matrices, lu, qr (tall, square, complete,
//! wide), conv and elementwise ops with conjugations. Their null arms: a conjugate transpose
//! taken for a transpose, and a conjugation left out, are rejected.

mod common;
#[path = "common/finite_differences.rs"]
mod finite_differences;
use finite_differences::{complex_of, finite_difference_failure};

use nxvk_core::DType;
use nxvk_fusion::{GraphBuilder, NodeId};
use nxvk_kernels::{BinaryOp, ReduceOp, TieBreak, TriangularSolveOptions, UnaryOp};
use proptest::prelude::*;

type Build = dyn Fn(&mut GraphBuilder, &[NodeId]) -> NodeId;

/// The first parameter element where the gradient of `gradient_of`'s loss disagrees with
/// central differences of `forward_of`'s loss at `values`, described; `None` when all agree.
fn mismatch(
    shapes: &[Vec<usize>],
    values: &[Vec<f64>],
    forward_of: &Build,
    gradient_of: &Build,
) -> Option<String> {
    let shapes: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
    finite_difference_failure(&shapes, forward_of, gradient_of, values)
}

/// Values in [-1, 1] for `shape`, plus `diagonal` on each trailing square matrix's diagonal.
fn values(random: &mut common::SplitMix, shape: &[usize], diagonal: f64) -> Vec<f64> {
    let count: usize = shape.iter().product();
    let columns = shape.last().copied().unwrap_or(1);
    let rows = if shape.len() >= 2 {
        shape[shape.len() - 2]
    } else {
        0
    };
    (0..count)
        .map(|index| {
            let value = (random.next() % 2001) as f64 / 1000.0 - 1.0;
            let on_diagonal = rows == columns && (index / columns) % rows.max(1) == index % columns;
            value + if on_diagonal { diagonal } else { 0.0 }
        })
        .collect()
}

fn check(shapes: &[Vec<usize>], values: &[Vec<f64>], value_of: &Build) {
    if let Some(failure) = mismatch(shapes, values, value_of, value_of) {
        panic!("{failure}");
    }
}

/// `v^3 + v`: a smooth nonlinear map without transcendentals (lavapipe compiles a fused f64
/// `sin` kernel of two operands at its first dispatch, about 10 s each on a loaded 2-core
/// machine: several of them ran past the 120 s wait timeout).
fn cubic(builder: &mut GraphBuilder, value: NodeId) -> NodeId {
    let square = mul(builder, value, value);
    let cube = mul(builder, square, value);
    add(builder, cube, value)
}

fn add(builder: &mut GraphBuilder, left: NodeId, right: NodeId) -> NodeId {
    builder.binary(BinaryOp::Add, left, right).unwrap()
}

fn mul(builder: &mut GraphBuilder, left: NodeId, right: NodeId) -> NodeId {
    builder.binary(BinaryOp::Multiply, left, right).unwrap()
}

/// `m + m^T` over the last two axes (plus `shift` on the diagonal, through an iota mask).
fn symmetrise(builder: &mut GraphBuilder, m: NodeId, shift: f64) -> NodeId {
    let shape = builder.type_of(m).unwrap().tensor().unwrap().shape.clone();
    let rank = shape.len();
    let mut permutation: Vec<usize> = (0..rank).collect();
    permutation.swap(rank - 2, rank - 1);
    let transposed = builder.transpose(m, &permutation).unwrap();
    let sum = add(builder, m, transposed);
    let n = shape[rank - 1];
    let rows = builder.iota(DType::S32, &[n, n], Some(0)).unwrap();
    let columns = builder.iota(DType::S32, &[n, n], Some(1)).unwrap();
    let diagonal = builder.binary(BinaryOp::Equal, rows, columns).unwrap();
    let diagonal = builder.as_type(diagonal, DType::F64).unwrap();
    let shift = builder.constant(DType::F64, shift).unwrap();
    let shifted = mul(builder, diagonal, shift);
    add(builder, sum, shifted)
}

/// `sum(real(y) * w) + sum(imag(y) * v)` as a value: the real and imaginary parts weighted
/// by the parameters `w` and `v` (so neither part's gradient can hide behind the other).
fn weighted_parts(builder: &mut GraphBuilder, y: NodeId, w: NodeId, v: NodeId) -> NodeId {
    let real = builder.unary(UnaryOp::Real, y).unwrap();
    let imag = builder.unary(UnaryOp::Imag, y).unwrap();
    let left = mul(builder, real, w);
    let right = mul(builder, imag, v);
    add(builder, left, right)
}

#[test]
fn fft_gradients_pad_and_truncate_along_the_axis() {
    let mut random = common::SplitMix(11);
    for (axis, length, inverse) in [(1, 5, false), (1, 3, true), (1, 8, false), (0, 4, true)] {
        let input = vec![3, 5];
        let mut output = input.clone();
        output[axis] = length;
        let shapes = vec![input.clone(), output.clone(), output];
        let data: Vec<Vec<f64>> = shapes.iter().map(|s| values(&mut random, s, 0.0)).collect();
        check(&shapes, &data, &move |b, p| {
            let y = b.fft(p[0], inverse, Some(length), axis).unwrap();
            weighted_parts(b, y, p[1], p[2])
        });
    }
}

#[test]
fn fft_of_complex_values_passes_the_gradient_through() {
    // ifft(fft(x, 7), 4) along axis 1: the second transform's input is complex.
    let mut random = common::SplitMix(12);
    let shapes = vec![vec![2, 5], vec![2, 4], vec![2, 4]];
    let data: Vec<Vec<f64>> = shapes.iter().map(|s| values(&mut random, s, 0.0)).collect();
    check(&shapes, &data, &|b, p| {
        let once = b.fft(p[0], false, Some(7), 1).unwrap();
        let twice = b.fft(once, true, Some(4), 1).unwrap();
        weighted_parts(b, twice, p[1], p[2])
    });
}

/// Null arm: the fft's gradient checked against the loss of the ifft must be rejected.
#[test]
fn a_wrong_fft_gradient_is_rejected() {
    let mut random = common::SplitMix(13);
    let shapes = vec![vec![2, 4], vec![2, 4], vec![2, 4]];
    let data: Vec<Vec<f64>> = shapes.iter().map(|s| values(&mut random, s, 0.0)).collect();
    let transform = |inverse: bool| {
        move |b: &mut GraphBuilder, p: &[NodeId]| {
            let y = b.fft(p[0], inverse, None, 1).unwrap();
            weighted_parts(b, y, p[1], p[2])
        }
    };
    assert!(mismatch(&shapes, &data, &transform(true), &transform(false)).is_some());
}

fn triangular_solve_loss(
    options: TriangularSolveOptions,
) -> impl Fn(&mut GraphBuilder, &[NodeId]) -> NodeId {
    move |b, p| {
        let x = b.triangular_solve(p[0], p[1], options).unwrap();
        cubic(b, x)
    }
}

/// `cubic(solve(a, b)) + sum(det(a))` (the determinant, in the tens here, enters linearly:
/// its cube made the loss large enough for rounding to move the central differences).
fn solve_and_determinant_loss(b: &mut GraphBuilder, p: &[NodeId]) -> NodeId {
    let x = b.solve(p[0], p[1]).unwrap();
    let x = cubic(b, x);
    let d = b.determinant(p[0]).unwrap();
    let total = b
        .reduce(ReduceOp::Sum, d, None, false, TieBreak::Low)
        .unwrap();
    add(b, x, total)
}

fn solve_shapes(batch: &[usize], n: usize, b_tail: &[usize]) -> Vec<Vec<usize>> {
    vec![[batch, &[n, n]].concat(), [batch, b_tail].concat()]
}

/// The triangular_solve options drawn as `flags` (lower, left side, transposed a) and the
/// shapes of (a, b) for 3 x 3 systems, batched or not: b a vector, or a matrix on the side
/// the options say.
fn triangular_solve_case(
    flags: usize,
    vector_b: bool,
    batched: bool,
) -> (TriangularSolveOptions, Vec<Vec<usize>>) {
    let options = TriangularSolveOptions {
        lower: flags & 1 != 0,
        left_side: flags & 2 != 0,
        transpose_a: flags & 4 != 0,
    };
    let batch: &[usize] = if batched { &[2] } else { &[] };
    let tail: &[usize] = match (vector_b, options.left_side) {
        (true, _) => &[3],
        (false, true) => &[3, 2],
        (false, false) => &[2, 3],
    };
    (options, solve_shapes(batch, 3, tail))
}

/// The shapes of (a, b) for solve's 3 x 3 systems, batched or not, b a vector or a matrix.
fn solve_case(vector_b: bool, batched: bool) -> Vec<Vec<usize>> {
    let batch: &[usize] = if batched { &[2] } else { &[] };
    solve_shapes(batch, 3, if vector_b { &[3] } else { &[3, 2] })
}

/// Values for `shapes`, `diagonal` added on the diagonals of square ones (b never is).
fn system_values(
    random: &mut common::SplitMix,
    shapes: &[Vec<usize>],
    diagonal: f64,
) -> Vec<Vec<f64>> {
    shapes
        .iter()
        .map(|shape| values(random, shape, diagonal))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    #[test]
    fn triangular_solve_gradients_match_finite_differences(
        seed in any::<u64>(),
        flags in 0usize..8,
        vector_b in any::<bool>(),
        batched in any::<bool>(),
    ) {
        let (options, shapes) = triangular_solve_case(flags, vector_b, batched);
        let mut random = common::SplitMix(seed);
        let data = system_values(&mut random, &shapes, 3.0);
        let failure = mismatch(&shapes, &data, &triangular_solve_loss(options), &triangular_solve_loss(options));
        prop_assert!(failure.is_none(), "{options:?}: {failure:?}");
    }

    #[test]
    fn solve_and_determinant_gradients_match_finite_differences(
        seed in any::<u64>(),
        vector_b in any::<bool>(),
        batched in any::<bool>(),
    ) {
        let shapes = solve_case(vector_b, batched);
        let mut random = common::SplitMix(seed);
        let data = system_values(&mut random, &shapes, 2.5);
        let failure = mismatch(&shapes, &data, &solve_and_determinant_loss, &solve_and_determinant_loss);
        prop_assert!(failure.is_none(), "{failure:?}");
    }
}

/// Null arm: a lower solve's gradient checked against the upper solve's loss is rejected.
#[test]
fn a_wrong_triangular_solve_gradient_is_rejected() {
    let shapes = solve_shapes(&[], 3, &[3, 2]);
    let mut random = common::SplitMix(21);
    let data = vec![
        values(&mut random, &shapes[0], 3.0),
        values(&mut random, &shapes[1], 0.0),
    ];
    let lower = TriangularSolveOptions::default();
    let upper = TriangularSolveOptions {
        lower: false,
        ..lower
    };
    let failure = mismatch(
        &shapes,
        &data,
        &triangular_solve_loss(upper),
        &triangular_solve_loss(lower),
    );
    assert!(failure.is_some());
}

#[test]
fn cholesky_gradients_match_finite_differences() {
    let shapes = vec![vec![2, 3, 3]];
    let mut random = common::SplitMix(31);
    let data = vec![values(&mut random, &shapes[0], 0.0)];
    check(&shapes, &data, &|b, p| {
        let a = symmetrise(b, p[0], 6.0);
        let l = b.cholesky(a).unwrap();
        cubic(b, l)
    });
}

#[test]
fn eigh_gradients_match_finite_differences() {
    let shapes = vec![vec![2, 3, 3], vec![3, 3]];
    let mut random = common::SplitMix(41);
    let data = vec![
        values(&mut random, &shapes[0], 0.0),
        values(&mut random, &shapes[1], 0.0),
    ];
    // Distinct eigenvalues: a spread diagonal. The vectors enter squared (their sign is free).
    check(&shapes, &data, &|b, p| {
        let spread = b.iota(DType::F64, &[3, 3], Some(1)).unwrap();
        let rows = b.iota(DType::F64, &[3, 3], Some(0)).unwrap();
        let on_diagonal = b.binary(BinaryOp::Equal, rows, spread).unwrap();
        let on_diagonal = b.as_type(on_diagonal, DType::F64).unwrap();
        let three = b.constant(DType::F64, 3.0).unwrap();
        let spread = mul(b, spread, three);
        let spread = mul(b, spread, on_diagonal);
        let a = symmetrise(b, p[0], 0.0);
        let a = add(b, a, spread);
        let (eigenvalues, vectors) = b.eigh(a).unwrap();
        let squared = mul(b, vectors, vectors);
        let weighted = mul(b, squared, p[1]);
        let values = cubic(b, eigenvalues);
        let values = b.reshape(values, &[2, 1, 3]).unwrap();
        add(b, weighted, values)
    });
}

fn qr_loss(complete: bool) -> impl Fn(&mut GraphBuilder, &[NodeId]) -> NodeId {
    move |b, p| {
        let (q, r) = b.qr(p[0], complete).unwrap();
        let q = cubic(b, q);
        let r = cubic(b, r);
        let q_sum = b
            .reduce(ReduceOp::Sum, q, None, false, TieBreak::Low)
            .unwrap();
        add(b, r, q_sum)
    }
}

#[test]
fn qr_gradients_match_finite_differences() {
    let mut random = common::SplitMix(51);
    for shape in [vec![2, 4, 3], vec![3, 3]] {
        let shapes = vec![shape];
        let data = vec![values(&mut random, &shapes[0], 1.0)];
        check(&shapes, &data, &qr_loss(false));
    }
    let shapes = vec![vec![4, 3]];
    let data = vec![values(&mut random, &shapes[0], 1.0)];
    check(&shapes, &data, &qr_loss(true));
}

#[test]
fn qr_gradients_of_wide_matrices_match_finite_differences() {
    let mut random = common::SplitMix(52);
    let shapes = vec![vec![2, 3, 5]];
    let data = vec![values(&mut random, &shapes[0], 1.0)];
    check(&shapes, &data, &qr_loss(false));
}

#[test]
fn lu_gradients_match_finite_differences() {
    // Clear pivots: the first column's largest entry is far from the others, and so on.
    let shapes = vec![vec![3, 3]];
    let data = vec![vec![0.3, 4.1, -0.2, 5.2, 0.7, 0.4, -0.5, 0.6, 3.3]];
    check(&shapes, &data, &|b, p| {
        let (_, l, u) = b.lu(p[0]).unwrap();
        let l = cubic(b, l);
        let u = cubic(b, u);
        add(b, l, u)
    });
}

/// Null arm: the cholesky gradient checked against another loss of the factor.
#[test]
fn a_wrong_linear_algebra_gradient_is_rejected() {
    let shapes = vec![vec![3, 3]];
    let mut random = common::SplitMix(61);
    let data = vec![values(&mut random, &shapes[0], 0.0)];
    let factor = |square: bool| {
        move |b: &mut GraphBuilder, p: &[NodeId]| {
            let a = symmetrise(b, p[0], 6.0);
            let l = b.cholesky(a).unwrap();
            if square { mul(b, l, l) } else { cubic(b, l) }
        }
    };
    assert!(mismatch(&shapes, &data, &factor(true), &factor(false)).is_some());
}

// Complex operands (c128): each complex matrix is built in the graph from two f64 parameters
// (its real and imaginary parts), so the central differences move each part separately, and
// the loss reads both parts of the result. The gradient graph's value for every part of every
// element must match them.

/// `cubic(real(y)) + cubic(imag(y))`: both parts of `y`, each through a nonlinear map.
fn cubic_parts(builder: &mut GraphBuilder, y: NodeId) -> NodeId {
    let real = builder.unary(UnaryOp::Real, y).unwrap();
    let imag = builder.unary(UnaryOp::Imag, y).unwrap();
    let real = cubic(builder, real);
    let imag = cubic(builder, imag);
    add(builder, real, imag)
}

/// `sum(f(y))` of a complex `y` as a rank-0 value (to add results of different shapes).
fn summed_parts(builder: &mut GraphBuilder, y: NodeId) -> NodeId {
    let value = cubic_parts(builder, y);
    builder
        .reduce(ReduceOp::Sum, value, None, false, TieBreak::Low)
        .unwrap()
}

/// `m + m^H + shift I` for a complex `m` [..., n, n]: Hermitian, positive definite for a
/// large enough shift.
fn hermitian(builder: &mut GraphBuilder, m: NodeId, shift: f64) -> NodeId {
    let shape = builder.type_of(m).unwrap().tensor().unwrap().shape.clone();
    let rank = shape.len();
    let mut permutation: Vec<usize> = (0..rank).collect();
    permutation.swap(rank - 2, rank - 1);
    let transposed = builder.transpose(m, &permutation).unwrap();
    let adjoint = builder.unary(UnaryOp::Conjugate, transposed).unwrap();
    let sum = add(builder, m, adjoint);
    let n = shape[rank - 1];
    let rows = builder.iota(DType::S32, &[n, n], Some(0)).unwrap();
    let columns = builder.iota(DType::S32, &[n, n], Some(1)).unwrap();
    let diagonal = builder.binary(BinaryOp::Equal, rows, columns).unwrap();
    let diagonal = builder.as_type(diagonal, DType::C128).unwrap();
    let shift = builder.constant(DType::C128, shift).unwrap();
    let shifted = mul(builder, diagonal, shift);
    add(builder, sum, shifted)
}

/// The shapes of (re, im) pairs for `shapes`, in order.
fn part_shapes(shapes: &[Vec<usize>]) -> Vec<Vec<usize>> {
    shapes
        .iter()
        .flat_map(|shape| [shape.clone(), shape.clone()])
        .collect()
}

/// Values for the parts of complex matrices of `shapes`: real parts with `diagonal` added on
/// the diagonal, imaginary parts in [-1, 1].
fn part_values(
    random: &mut common::SplitMix,
    shapes: &[Vec<usize>],
    diagonal: f64,
) -> Vec<Vec<f64>> {
    shapes
        .iter()
        .flat_map(|shape| [values(random, shape, diagonal), values(random, shape, 0.0)])
        .collect()
}

/// The complex values of the parameter pairs `p`.
fn complex_parameters(builder: &mut GraphBuilder, p: &[NodeId]) -> Vec<NodeId> {
    p.chunks(2)
        .map(|pair| complex_of(builder, pair[0], pair[1]))
        .collect()
}

fn complex_triangular_solve_loss(
    options: TriangularSolveOptions,
    conjugate_a: bool,
) -> impl Fn(&mut GraphBuilder, &[NodeId]) -> NodeId {
    move |b, p| {
        let operands = complex_parameters(b, p);
        let a = if conjugate_a {
            b.unary(UnaryOp::Conjugate, operands[0]).unwrap()
        } else {
            operands[0]
        };
        let x = b.triangular_solve(a, operands[1], options).unwrap();
        cubic_parts(b, x)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    #[test]
    fn complex_triangular_solve_gradients_match_finite_differences(
        seed in any::<u64>(),
        flags in 0usize..8,
        vector_b in any::<bool>(),
        batched in any::<bool>(),
    ) {
        let (options, matrices) = triangular_solve_case(flags, vector_b, batched);
        let shapes = part_shapes(&matrices);
        let mut random = common::SplitMix(seed);
        let data = part_values(&mut random, &matrices, 3.0);
        let loss = complex_triangular_solve_loss(options, false);
        let failure = mismatch(&shapes, &data, &loss, &loss);
        prop_assert!(failure.is_none(), "{options:?}: {failure:?}");
    }

    #[test]
    fn complex_solve_and_determinant_gradients_match_finite_differences(
        seed in any::<u64>(),
        vector_b in any::<bool>(),
        batched in any::<bool>(),
    ) {
        let matrices = solve_case(vector_b, batched);
        let shapes = part_shapes(&matrices);
        let mut random = common::SplitMix(seed);
        let data = part_values(&mut random, &matrices, 2.5);
        let loss = |b: &mut GraphBuilder, p: &[NodeId]| {
            let operands = complex_parameters(b, p);
            let x = b.solve(operands[0], operands[1]).unwrap();
            let x = summed_parts(b, x);
            // The determinant (in the tens) enters linearly, each part weighted differently.
            let d = b.determinant(operands[0]).unwrap();
            let real = b.unary(UnaryOp::Real, d).unwrap();
            let imag = b.unary(UnaryOp::Imag, d).unwrap();
            let half = b.constant(DType::F64, 0.5).unwrap();
            let imag = mul(b, imag, half);
            let parts = add(b, real, imag);
            let total = b.reduce(ReduceOp::Sum, parts, None, false, TieBreak::Low).unwrap();
            add(b, x, total)
        };
        let failure = mismatch(&shapes, &data, &loss, &loss);
        prop_assert!(failure.is_none(), "{failure:?}");
    }
}

/// Null arm: the gradient of a transposed complex solve checked against the differences of
/// the conjugate-transposed solve (conj(a) with the same options) is rejected.
#[test]
fn a_conjugate_transpose_is_not_a_transpose_in_the_gradient() {
    let shapes = part_shapes(&solve_shapes(&[], 3, &[3, 2]));
    let mut random = common::SplitMix(71);
    let data = part_values(&mut random, &solve_shapes(&[], 3, &[3, 2]), 3.0);
    let options = TriangularSolveOptions {
        transpose_a: true,
        ..TriangularSolveOptions::default()
    };
    let right = complex_triangular_solve_loss(options, false);
    assert!(mismatch(&shapes, &data, &right, &right).is_none());
    let wrong = complex_triangular_solve_loss(options, true);
    assert!(mismatch(&shapes, &data, &wrong, &right).is_some());
}

#[test]
fn complex_cholesky_gradients_match_finite_differences() {
    let matrices = vec![vec![2, 3, 3]];
    let shapes = part_shapes(&matrices);
    let mut random = common::SplitMix(72);
    let data = part_values(&mut random, &matrices, 0.0);
    check(&shapes, &data, &|b, p| {
        let m = complex_parameters(b, p)[0];
        let a = hermitian(b, m, 6.0);
        let l = b.cholesky(a).unwrap();
        cubic_parts(b, l)
    });
}

#[test]
fn complex_lu_gradients_match_finite_differences() {
    // Clear pivots (the real parts of the lu test), imaginary parts up to 0.3.
    let shapes = part_shapes(&[vec![3, 3]]);
    let data = vec![
        vec![0.3, 4.1, -0.2, 5.2, 0.7, 0.4, -0.5, 0.6, 3.3],
        vec![0.1, -0.3, 0.2, 0.25, -0.1, 0.3, 0.05, -0.2, 0.15],
    ];
    check(&shapes, &data, &|b, p| {
        let a = complex_parameters(b, p)[0];
        let (_, l, u) = b.lu(a).unwrap();
        let l = summed_parts(b, l);
        let u = summed_parts(b, u);
        add(b, l, u)
    });
}

/// `cubic_parts(r)` plus the parts of q's first min(m, n) columns; in complete mode the other
/// columns of q (an orthonormal completion, unique only up to a unitary mix: here a phase)
/// enter through |q|^2, weighted by row, which depends on their span only.
fn complex_qr_loss(complete: bool) -> impl Fn(&mut GraphBuilder, &[NodeId]) -> NodeId {
    move |b, p| {
        let a = complex_parameters(b, p)[0];
        let shape = b.type_of(a).unwrap().tensor().unwrap().shape.clone();
        let rank = shape.len();
        let (m, n) = (shape[rank - 2], shape[rank - 1]);
        let (q, r) = b.qr(a, complete).unwrap();
        let unique = m.min(n);
        let mut lengths = shape.clone();
        lengths[rank - 1] = unique;
        let starts = vec![0; rank];
        let ones = vec![1; rank];
        let leading = b.slice(q, &starts, &lengths, &ones).unwrap();
        let leading = summed_parts(b, leading);
        let r = cubic_parts(b, r);
        let value = add(b, r, leading);
        if !complete || m <= n {
            return value;
        }
        let mut rest_starts = starts.clone();
        rest_starts[rank - 1] = unique;
        lengths[rank - 1] = m - unique;
        let rest = b.slice(q, &rest_starts, &lengths, &ones).unwrap();
        let conjugate = b.unary(UnaryOp::Conjugate, rest).unwrap();
        let squared = mul(b, rest, conjugate);
        let squared = b.unary(UnaryOp::Real, squared).unwrap();
        let rows = b.iota(DType::F64, &lengths, Some(rank - 2)).unwrap();
        let weighted = mul(b, squared, rows);
        let weighted = b
            .reduce(ReduceOp::Sum, weighted, None, false, TieBreak::Low)
            .unwrap();
        add(b, value, weighted)
    }
}

#[test]
fn complex_qr_gradients_match_finite_differences() {
    let mut random = common::SplitMix(73);
    for (shape, complete) in [
        (vec![2, 4, 3], false),
        (vec![3, 3], false),
        (vec![4, 3], true),
        (vec![5, 3], true),
        (vec![2, 3, 5], false),
    ] {
        let matrices = vec![shape];
        let shapes = part_shapes(&matrices);
        let data = part_values(&mut random, &matrices, 1.0);
        if let Some(failure) = mismatch(
            &shapes,
            &data,
            &complex_qr_loss(complete),
            &complex_qr_loss(complete),
        ) {
            panic!("{:?} complete={complete}: {failure}", matrices[0]);
        }
    }
}

#[test]
fn complex_eigh_gradients_match_finite_differences() {
    let matrices = vec![vec![2, 3, 3]];
    let mut shapes = part_shapes(&matrices);
    shapes.push(vec![3, 3]);
    let mut random = common::SplitMix(74);
    let mut data = part_values(&mut random, &matrices, 0.0);
    data.push(values(&mut random, &[3, 3], 0.0));
    // Distinct eigenvalues: a spread diagonal. The vectors enter through |v|^2, which their
    // free phase leaves unchanged.
    check(&shapes, &data, &|b, p| {
        let m = complex_of(b, p[0], p[1]);
        let spread = b.iota(DType::F64, &[3, 3], Some(1)).unwrap();
        let rows = b.iota(DType::F64, &[3, 3], Some(0)).unwrap();
        let on_diagonal = b.binary(BinaryOp::Equal, rows, spread).unwrap();
        let on_diagonal = b.as_type(on_diagonal, DType::F64).unwrap();
        let three = b.constant(DType::F64, 3.0).unwrap();
        let spread = mul(b, spread, three);
        let spread = mul(b, spread, on_diagonal);
        let spread = b.as_type(spread, DType::C128).unwrap();
        let a = hermitian(b, m, 0.0);
        let a = add(b, a, spread);
        let (eigenvalues, vectors) = b.eigh(a).unwrap();
        let conjugate = b.unary(UnaryOp::Conjugate, vectors).unwrap();
        let squared = mul(b, vectors, conjugate);
        let squared = b.unary(UnaryOp::Real, squared).unwrap();
        let weighted = mul(b, squared, p[2]);
        let values = b.unary(UnaryOp::Real, eigenvalues).unwrap();
        let values = cubic(b, values);
        let values = b.reshape(values, &[2, 1, 3]).unwrap();
        add(b, weighted, values)
    });
}

/// Elementwise complex ops and `abs` on the way to a real loss: `abs(z * w + conj(z) / w)`
/// and `exp(z)` (holomorphic and conjugating rules together).
#[test]
fn complex_elementwise_gradients_match_finite_differences() {
    let shapes = part_shapes(&[vec![2, 3], vec![2, 3]]);
    let mut random = common::SplitMix(75);
    let data = part_values(&mut random, &[vec![2, 3], vec![2, 3]], 0.0);
    check(&shapes, &data, &|b, p| {
        let operands = complex_parameters(b, p);
        let (z, w) = (operands[0], operands[1]);
        let two = b.constant(DType::C128, 2.0).unwrap();
        let w = add(b, w, two);
        let product = mul(b, z, w);
        let conjugate = b.unary(UnaryOp::Conjugate, z).unwrap();
        let quotient = b.binary(BinaryOp::Divide, conjugate, w).unwrap();
        let sum = add(b, product, quotient);
        let modulus = b.unary(UnaryOp::Abs, sum).unwrap();
        let exponential = b.unary(UnaryOp::Exp, z).unwrap();
        let parts = cubic_parts(b, exponential);
        add(b, modulus, parts)
    });
}

/// Null arm of the conjugating rules: the gradient of `abs(z + conj(w))` checked against the
/// differences of `abs(z + w)` is rejected (while `abs(z + w)` against itself passes).
#[test]
fn a_missing_conjugation_is_rejected() {
    let shapes = part_shapes(&[vec![4], vec![4]]);
    let mut random = common::SplitMix(76);
    let data = part_values(&mut random, &[vec![4], vec![4]], 0.0);
    let loss = |conjugate: bool| {
        move |b: &mut GraphBuilder, p: &[NodeId]| {
            let operands = complex_parameters(b, p);
            let w = if conjugate {
                b.unary(UnaryOp::Conjugate, operands[1]).unwrap()
            } else {
                operands[1]
            };
            let sum = add(b, operands[0], w);
            let modulus = b.unary(UnaryOp::Abs, sum).unwrap();
            cubic(b, modulus)
        }
    };
    assert!(mismatch(&shapes, &data, &loss(false), &loss(false)).is_none());
    assert!(mismatch(&shapes, &data, &loss(false), &loss(true)).is_some());
}

/// Complex conv (holomorphic in both operands: the real rule with plain transposes).
#[test]
fn complex_conv_gradients_match_finite_differences() {
    let matrices = vec![vec![1, 2, 5], vec![3, 2, 2]];
    let shapes = part_shapes(&matrices);
    let mut random = common::SplitMix(77);
    let data = part_values(&mut random, &matrices, 0.0);
    check(&shapes, &data, &|b, p| {
        let operands = complex_parameters(b, p);
        let options = nxvk_kernels::ConvOptions {
            strides: vec![2],
            padding: vec![(1, 0)],
            ..nxvk_kernels::ConvOptions::default()
        };
        let y = b.conv(operands[0], operands[1], options).unwrap();
        cubic_parts(b, y)
    });
}

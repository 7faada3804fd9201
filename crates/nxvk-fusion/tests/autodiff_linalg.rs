//! Gradients of the fft, triangular_solve and linear-algebra nodes against central finite
//! differences, in f64 on the device.
//!
//! Each loss is `sum(f(node(parameters)))` for a smooth `f`; the gradient graph's value for
//! every parameter element must agree with `(loss(p + h) - loss(p - h)) / 2h`. Matrices are
//! kept well-conditioned (a shifted diagonal), symmetric where the op reads a symmetric
//! matrix (cholesky, eigh: the parameter is symmetrised in the graph, so the check covers the
//! rule's symmetric part), with distinct eigenvalues and clear LU pivots. Null arms show a
//! wrong rule (a gradient checked against another forward function) is rejected.

mod common;
#[path = "common/finite_differences.rs"]
mod finite_differences;
use finite_differences::finite_difference_failure;

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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    #[test]
    fn triangular_solve_gradients_match_finite_differences(
        seed in any::<u64>(),
        flags in 0usize..8,
        vector_b in any::<bool>(),
        batched in any::<bool>(),
    ) {
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
        let shapes = solve_shapes(batch, 3, tail);
        let mut random = common::SplitMix(seed);
        let data = vec![values(&mut random, &shapes[0], 3.0), values(&mut random, &shapes[1], 0.0)];
        let failure = mismatch(&shapes, &data, &triangular_solve_loss(options), &triangular_solve_loss(options));
        prop_assert!(failure.is_none(), "{options:?}: {failure:?}");
    }

    #[test]
    fn solve_and_determinant_gradients_match_finite_differences(
        seed in any::<u64>(),
        vector_b in any::<bool>(),
        batched in any::<bool>(),
    ) {
        let batch: &[usize] = if batched { &[2] } else { &[] };
        let tail: &[usize] = if vector_b { &[3] } else { &[3, 2] };
        let shapes = solve_shapes(batch, 3, tail);
        let mut random = common::SplitMix(seed);
        let data = vec![values(&mut random, &shapes[0], 2.5), values(&mut random, &shapes[1], 0.0)];
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

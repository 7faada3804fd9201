//! The Fourier-transform, triangular-solve and linear-algebra nodes run through a plan compute,
//! byte for byte, what the eager catalog op of the same name computes on the same tensors (the
//! catalog's own tests hold those kernels to host references), on random shapes with batch
//! axes (empty batches included), values and options, in f32, f64 and s32 inputs (and c64 and
//! c128 for the linear-algebra nodes). The builder's inferred types must match the results'.
//! The encoding round-trips every new node and damaged bytes never panic. Null arms show the
//! comparisons reject a different option.

mod common;

use common::{planned_outputs as planned, same};

use nxvk_core::{DType, Error, Tensor};
use nxvk_fusion::{GraphBuilder, LinAlgKind, NodeId, NodeType, PlanCache, decode, encode};
use nxvk_kernels::fft::{Transform, fft};
use nxvk_kernels::{TriangularSolveOptions, as_type, linalg};
use proptest::prelude::*;

/// A random tensor of `dtype` and `shape` with values in [-1, 1] (small integers for s32),
/// plus `diagonal` on the diagonal of each trailing square matrix (well-conditioned systems).
fn tensor(random: &mut common::SplitMix, dtype: DType, shape: &[usize], diagonal: f64) -> Tensor {
    let count: usize = shape.iter().product();
    let columns = shape.last().copied().unwrap_or(1);
    let rows = if shape.len() >= 2 {
        shape[shape.len() - 2]
    } else {
        0
    };
    let values: Vec<f64> = (0..count)
        .map(|index| {
            let value = (random.next() % 2001) as f64 / 1000.0 - 1.0;
            let (row, column) = ((index / columns) % rows.max(1), index % columns);
            let on_diagonal = rows == columns && row == column;
            if dtype == DType::S32 {
                (value * 4.0).round() + if on_diagonal { diagonal } else { 0.0 }
            } else {
                value + if on_diagonal { diagonal } else { 0.0 }
            }
        })
        .collect();
    let device = common::device();
    let f64_tensor = Tensor::from_slice(&device, shape, &values).unwrap();
    let typed = as_type(&f64_tensor, dtype).unwrap();
    if !dtype.is_complex() {
        return typed;
    }
    // Complex values off the real axis: each turned by the phase 0.6 + 0.8i.
    let phase = Tensor::from_slice(&device, &[], &[nxvk_core::Complex64::new(0.6, 0.8)]).unwrap();
    let phase = as_type(&phase, dtype).unwrap();
    nxvk_kernels::binary(nxvk_kernels::BinaryOp::Multiply, &typed, &phase).unwrap()
}

/// `a + a^T` over the last two axes plus `shift` on the diagonal, computed on the host: a
/// symmetric (positive definite for a large `shift`) operand for cholesky and eigh (real
/// valued, so Hermitian as a complex matrix too).
fn symmetric(random: &mut common::SplitMix, dtype: DType, shape: &[usize], shift: f64) -> Tensor {
    let n = shape[shape.len() - 1];
    let a: Vec<f64> = as_type(&tensor(random, DType::F64, shape, 0.0), DType::F64)
        .unwrap()
        .to_vec()
        .unwrap();
    let values: Vec<f64> = (0..a.len())
        .map(|index| {
            let (matrix, row, column) = (index / (n * n), (index / n) % n, index % n);
            let base = matrix * n * n;
            let diagonal = if row == column { shift } else { 0.0 };
            a[base + row * n + column] + a[base + column * n + row] + diagonal
        })
        .collect();
    let f64_tensor = Tensor::from_slice(&common::device(), shape, &values).unwrap();
    as_type(&f64_tensor, dtype).unwrap()
}

const DTYPES: [DType; 3] = [DType::F32, DType::F64, DType::S32];

/// The linear-algebra nodes take complex operands too.
const LINALG_DTYPES: [DType; 5] = [DType::F32, DType::F64, DType::S32, DType::C64, DType::C128];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn fft_nodes_compute_what_the_eager_fft_computes(
        seed in any::<u64>(),
        dtype_index in 0usize..3,
        shape in prop::collection::vec(0usize..6, 1..4),
        length_change in -2i64..4,
        inverse in any::<bool>(),
    ) {
        let cache = PlanCache::new(&common::device());
        let mut random = common::SplitMix(seed);
        let dtype = DTYPES[dtype_index];
        let axis = random.below(shape.len());
        let x = tensor(&mut random, dtype, &shape, 0.0);
        let length = (shape[axis] as i64 + length_change).max(1) as usize;
        let transform = if inverse { Transform::Inverse } else { Transform::Forward };
        let result = planned(&cache, &[&x], |b, p| vec![b.fft(p[0], inverse, Some(length), axis).unwrap()]);
        let eager = fft(&x, transform, Some(length), axis).unwrap();
        prop_assert!(same(&result[0], &eager), "fft {shape:?} axis {axis} length {length}");
        // The transform of a transform: complex input.
        let result = planned(&cache, &[&x], |b, p| {
            let once = b.fft(p[0], inverse, Some(length), axis).unwrap();
            vec![b.fft(once, !inverse, None, axis).unwrap()]
        });
        let other = if inverse { Transform::Forward } else { Transform::Inverse };
        let eager = fft(&eager, other, None, axis).unwrap();
        prop_assert!(same(&result[0], &eager));
    }

    #[test]
    fn linear_algebra_nodes_compute_what_the_eager_ops_compute(
        seed in any::<u64>(),
        dtype_index in 0usize..5,
        batch in prop::collection::vec(0usize..3, 0..2),
        n in 1usize..5,
        m in 1usize..4,
        flags in 0usize..8,
        vector_b in any::<bool>(),
    ) {
        let cache = PlanCache::new(&common::device());
        let mut random = common::SplitMix(seed);
        let dtype = LINALG_DTYPES[dtype_index];
        let with = |tail: &[usize]| [&batch[..], tail].concat();
        let square = with(&[n, n]);
        let a = tensor(&mut random, dtype, &square, 4.0);

        // triangular_solve, every option combination over the flags, vector or matrix b.
        let options = TriangularSolveOptions {
            lower: flags & 1 != 0,
            left_side: flags & 2 != 0,
            transpose_a: flags & 4 != 0,
        };
        let b_shape = match (vector_b, options.left_side) {
            (true, _) => with(&[n]),
            (false, true) => with(&[n, m]),
            (false, false) => with(&[m, n]),
        };
        let b = tensor(&mut random, dtype, &b_shape, 0.0);
        let result = planned(&cache, &[&a, &b], |g, p| vec![g.triangular_solve(p[0], p[1], options).unwrap()]);
        let eager = linalg::triangular_solve(&a, &b, &options).unwrap();
        prop_assert!(same(&result[0], &eager), "{options:?}");

        // solve and determinant.
        let right = tensor(&mut random, dtype, &if vector_b { with(&[n]) } else { with(&[n, m]) }, 0.0);
        let result = planned(&cache, &[&a, &right], |g, p| {
            vec![g.solve(p[0], p[1]).unwrap(), g.determinant(p[0]).unwrap()]
        });
        prop_assert!(same(&result[0], &linalg::solve(&a, &right).unwrap()));
        prop_assert!(same(&result[1], &linalg::determinant(&a).unwrap()));

        // cholesky and eigh of symmetric matrices.
        let spd = symmetric(&mut random, dtype, &square, 2.0 * n as f64 + 2.0);
        let result = planned(&cache, &[&spd], |g, p| {
            let (values, vectors) = g.eigh(p[0]).unwrap();
            vec![g.cholesky(p[0]).unwrap(), values, vectors]
        });
        prop_assert!(same(&result[0], &linalg::cholesky(&spd).unwrap()));
        let (values, vectors) = linalg::eigh(&spd).unwrap();
        prop_assert!(same(&result[1], &values) && same(&result[2], &vectors));

        // lu (the permutation in the input's dtype) and qr of tall, square and wide matrices.
        let result = planned(&cache, &[&a], |g, p| {
            let (p_, l, u) = g.lu(p[0]).unwrap();
            vec![p_, l, u]
        });
        let (p, l, u) = linalg::lu(&a).unwrap();
        prop_assert!(same(&result[0], &as_type(&p, dtype).unwrap()));
        prop_assert!(same(&result[1], &l) && same(&result[2], &u));
        let rectangular = tensor(&mut random, dtype, &with(&[n, m]), 0.0);
        for complete in [false, true] {
            let result = planned(&cache, &[&rectangular], |g, p| {
                let (q, r) = g.qr(p[0], complete).unwrap();
                vec![q, r]
            });
            let (q, r) = linalg::qr(&rectangular, complete).unwrap();
            prop_assert!(same(&result[0], &q) && same(&result[1], &r), "qr complete {complete}");
        }
    }
}

/// Null arm: the comparisons tell a different option apart.
#[test]
fn a_different_option_is_told_apart() {
    let cache = PlanCache::new(&common::device());
    let mut random = common::SplitMix(7);
    let a = tensor(&mut random, DType::F32, &[3, 3], 4.0);
    let b = tensor(&mut random, DType::F32, &[3, 2], 0.0);
    let lower = TriangularSolveOptions::default();
    let upper = TriangularSolveOptions {
        lower: false,
        ..lower
    };
    let result = planned(&cache, &[&a, &b], |g, p| {
        vec![g.triangular_solve(p[0], p[1], lower).unwrap()]
    });
    assert!(same(
        &result[0],
        &linalg::triangular_solve(&a, &b, &lower).unwrap()
    ));
    assert!(!same(
        &result[0],
        &linalg::triangular_solve(&a, &b, &upper).unwrap()
    ));
    let x = tensor(&mut random, DType::F32, &[2, 5], 0.0);
    let result = planned(&cache, &[&x], |g, p| {
        vec![g.fft(p[0], false, Some(6), 1).unwrap()]
    });
    assert!(same(
        &result[0],
        &fft(&x, Transform::Forward, Some(6), 1).unwrap()
    ));
    assert!(!same(
        &result[0],
        &fft(&x, Transform::Forward, Some(4), 1).unwrap()
    ));
}

/// A graph with every new node; `variant` changes one option of each.
fn linalg_graph(variant: bool) -> nxvk_fusion::Graph {
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[2, 4]).unwrap();
    let a = builder.parameter(DType::F64, &[3, 3]).unwrap();
    let b = builder.parameter(DType::F32, &[3, 2]).unwrap();
    let spectrum = builder
        .fft(x, variant, Some(if variant { 5 } else { 3 }), 1)
        .unwrap();
    let back = builder.fft(spectrum, !variant, None, 0).unwrap();
    let options = TriangularSolveOptions {
        lower: variant,
        left_side: true,
        transpose_a: !variant,
    };
    let solved = builder.triangular_solve(a, b, options).unwrap();
    let l = builder.cholesky(a).unwrap();
    let x_solved = builder.solve(a, b).unwrap();
    let determinant = builder.determinant(a).unwrap();
    let (q, r) = builder.qr(b, variant).unwrap();
    let (p, lower, upper) = builder.lu(a).unwrap();
    let (values, vectors) = builder.eigh(a).unwrap();
    let outputs = [
        back,
        solved,
        l,
        x_solved,
        determinant,
        q,
        r,
        p,
        lower,
        upper,
        values,
        vectors,
    ];
    builder.finish(&outputs).unwrap()
}

#[test]
fn linalg_nodes_round_trip_through_the_encoding() {
    for variant in [false, true] {
        let graph = linalg_graph(variant);
        let bytes = encode(&graph);
        assert_eq!(decode(&bytes).expect("decodes"), graph);
        assert_eq!(encode(&decode(&bytes).unwrap()), bytes);
    }
    // Null arm: a changed option is a different encoding and a different graph.
    let (plain, changed) = (linalg_graph(false), linalg_graph(true));
    assert_ne!(encode(&plain), encode(&changed));
    assert_ne!(decode(&encode(&changed)).unwrap(), plain);
}

#[test]
fn linalg_node_types_follow_nx() {
    let graph = linalg_graph(false);
    let types: Vec<(DType, Vec<usize>)> = graph
        .output_types()
        .into_iter()
        .map(|ty| (ty.dtype, ty.shape))
        .collect();
    // fft of f32 is c64; qr reduced of [3, 2] is q [3, 2], r [2, 2]; lu's p keeps f64.
    assert_eq!(types[0], (DType::C64, vec![2, 3]));
    assert_eq!(types[1], (DType::F64, vec![3, 2]));
    assert_eq!(types[4], (DType::F64, vec![]));
    assert_eq!(types[5], (DType::F32, vec![3, 2]));
    assert_eq!(types[6], (DType::F32, vec![2, 2]));
    assert_eq!(types[7], (DType::F64, vec![3, 3]));
    assert_eq!(types[10], (DType::F64, vec![3]));
    let complete = linalg_graph(true);
    assert_eq!(complete.output_types()[5].shape, [3, 3], "qr complete q");
    let tuple = graph
        .nodes()
        .iter()
        .find(|node| {
            matches!(
                node.op,
                nxvk_fusion::Op::LinAlg {
                    kind: LinAlgKind::Lu,
                    ..
                }
            )
        })
        .unwrap();
    assert!(matches!(&tuple.ty, NodeType::Tuple(items) if items.len() == 3));
}

#[test]
fn linalg_nodes_reject_bad_operands() {
    let mut builder = GraphBuilder::new();
    let scalar = builder.parameter(DType::F32, &[]).unwrap();
    let wide = builder.parameter(DType::F32, &[2, 3]).unwrap();
    let square = builder.parameter(DType::F32, &[3, 3]).unwrap();
    let batched = builder.parameter(DType::F32, &[2, 3, 3]).unwrap();
    let column = builder.parameter(DType::F32, &[3, 2]).unwrap();
    let bad = |result: nxvk_core::Result<NodeId>| matches!(result, Err(Error::BadOperands { .. }));
    assert!(bad(builder.fft(scalar, false, None, 0)), "rank 0");
    assert!(bad(builder.fft(wide, false, Some(0), 1)), "zero length");
    assert!(bad(builder.fft(wide, true, None, 2)), "no axis 2");
    assert!(bad(builder.cholesky(wide)), "not square");
    assert!(bad(builder.determinant(scalar)), "rank 0");
    assert!(bad(builder.solve(square, wide)), "b rows");
    assert!(bad(builder.solve(batched, column)), "batch axes differ");
    let right = TriangularSolveOptions {
        left_side: false,
        ..TriangularSolveOptions::default()
    };
    assert!(
        bad(builder.triangular_solve(square, column, right)),
        "right side [m, n]"
    );
    assert!(builder.triangular_solve(square, wide, right).is_ok());
    assert!(bad(builder.linalg(LinAlgKind::Solve, &[square])), "arity");
    assert!(bad(
        builder.linalg(LinAlgKind::Qr { complete: false }, &[scalar])
    ));
    assert!(
        builder
            .linalg(LinAlgKind::Qr { complete: false }, &[wide])
            .is_ok()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn damaged_linalg_encodings_never_panic(seed in any::<u64>(), position in any::<usize>(), value in any::<u8>(), cut in any::<usize>()) {
        let mut bytes = encode(&linalg_graph(seed % 2 == 0));
        let position = position % bytes.len();
        bytes[position] = value;
        let _ = decode(&bytes);
        let _ = decode(&bytes[..cut % bytes.len()]);
    }
}

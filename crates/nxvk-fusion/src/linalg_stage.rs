//! Running the Fourier-transform, triangular-solve and linear-algebra nodes.
//!
//! Each node is one call of the eager catalog's op of the same name (GPU kernels, no host
//! path), so a planned node computes bit for bit what the eager op computes; the planner gives
//! each its own stage, as it does the movement nodes. The only conversion is LU's permutation,
//! which the kernel writes as s64 and Nx types as the input.

use crate::graph::{LinAlgKind, Op};
use nxvk_core::{DType, Error, Result, Tensor};
use nxvk_kernels::fft::{Transform, fft};
use nxvk_kernels::{as_type, linalg};

/// The values of `op` (one tensor, or a tuple's elements in order) over its `operands`;
/// `permutation_dtype` is the dtype of LU's permutation (the input's).
pub(crate) fn run(op: &Op, operands: &[&Tensor], permutation_dtype: DType) -> Result<Vec<Tensor>> {
    let first = operands[0];
    Ok(match op {
        Op::Fft {
            inverse,
            length,
            axis,
            ..
        } => {
            let transform = if *inverse {
                Transform::Inverse
            } else {
                Transform::Forward
            };
            vec![fft(first, transform, Some(*length), *axis)?]
        }
        Op::TriangularSolve { options, .. } => {
            vec![linalg::triangular_solve(first, operands[1], options)?]
        }
        Op::LinAlg { kind, .. } => match kind {
            LinAlgKind::Cholesky => vec![linalg::cholesky(first)?],
            LinAlgKind::Solve => vec![linalg::solve(first, operands[1])?],
            LinAlgKind::Determinant => vec![linalg::determinant(first)?],
            LinAlgKind::Qr { complete } => {
                let (q, r) = linalg::qr(first, *complete)?;
                vec![q, r]
            }
            LinAlgKind::Lu => {
                let (p, l, u) = linalg::lu(first)?;
                vec![as_type(&p, permutation_dtype)?, l, u]
            }
            LinAlgKind::Eigh => {
                let (values, vectors) = linalg::eigh(first)?;
                vec![values, vectors]
            }
        },
        other => {
            return Err(Error::BadOperands {
                op: other.name(),
                shapes: Vec::new(),
                dtypes: Vec::new(),
                detail: "not a Fourier-transform or linear-algebra node (executor bug)".into(),
            });
        }
    })
}

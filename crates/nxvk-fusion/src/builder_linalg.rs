//! Building the Fourier-transform and linear-algebra nodes.
//!
//! `fft`/`ifft` and `triangular_solve` are Nx.Backend callbacks; `cholesky`, `solve`, `qr`,
//! `lu`, `determinant` and `eigh` are Nx's `Nx.Block.LinAlg.*` blocks, built here as native
//! [`Op::LinAlg`] nodes (so a graph never carries their default expressions). Every one runs
//! the eager catalog's GPU kernel of the same name as its own stage, so types and shapes are
//! Nx's and the catalog's: transforms give `Nx.Type.to_complex` of the input, linear algebra
//! `to_floating` of the (merged) inputs, and LU's permutation keeps the input's dtype (Nx's
//! block template). Shapes the catalog rejects are rejected here, naming op, shapes and
//! dtypes; a dtype a device lacks is the catalog's `Unsupported` at run time, as for the
//! movement nodes.
//!
//! The multi-output ops make one tuple node; [`GraphBuilder::linalg`] returns it (the decoder
//! reads `elem` nodes after it), while the named methods return its elements.

use crate::builder::{GraphBuilder, bad};
use crate::graph::{LinAlgKind, NodeId, NodeType, Op, TensorType};
use nxvk_core::Result;
use nxvk_kernels::TriangularSolveOptions;
use nxvk_kernels::linalg::MAX_ORDER;
use nxvk_kernels::types::{merge, to_complex, to_floating};

/// The batch axes and the two matrix sizes of `tensor` (rank 2 or more).
fn matrix_axes(tensor: &TensorType) -> Option<(&[usize], usize, usize)> {
    let rank = tensor.shape.len();
    (rank >= 2).then(|| {
        (
            &tensor.shape[..rank - 2],
            tensor.shape[rank - 2],
            tensor.shape[rank - 1],
        )
    })
}

/// The order `n` of the square matrices [..., n, n] in `tensor`, or a `BadOperands` error.
fn square_order(op: &'static str, tensor: &TensorType) -> Result<usize> {
    match matrix_axes(tensor) {
        Some((_, rows, columns)) if rows == columns && rows <= MAX_ORDER => Ok(rows),
        _ => Err(bad(
            op,
            &[tensor],
            format!("expects [..., n, n] matrices with n at most {MAX_ORDER}"),
        )),
    }
}

/// True when `b` is a right-hand side of `a` [..., n, n]: the same batch axes, then `[n]`,
/// or `[n, m]` (`[m, n]` when `rows_last`, a right-side solve).
fn fits_right_hand_side(a: &TensorType, b: &TensorType, n: usize, rows_last: bool) -> bool {
    let batch = &a.shape[..a.shape.len() - 2];
    let Some(own) = b.shape.strip_prefix(batch) else {
        return false;
    };
    match *own {
        [size] => size == n,
        [rows, columns] => (if rows_last { columns } else { rows }) == n,
        _ => false,
    }
}

impl GraphBuilder {
    /// Nx's `fft` (`inverse: false`) or `ifft` along `axis` with the transform `length`
    /// (`None`: the axis's size; a shorter input is padded with zeros, a longer one
    /// truncated). The result is `to_complex` of the input with `length` on `axis`.
    pub fn fft(
        &mut self,
        input: NodeId,
        inverse: bool,
        length: Option<usize>,
        axis: usize,
    ) -> Result<NodeId> {
        let op = if inverse { "ifft" } else { "fft" };
        let tensor = self.tensor(op, input)?;
        let size = tensor.shape.get(axis).copied();
        let length = length.or(size);
        let (Some(_), Some(length)) = (size, length.filter(|&length| length > 0)) else {
            return Err(bad(
                op,
                &[&tensor],
                format!("axis {axis} must be an axis and the length ({length:?}) positive"),
            ));
        };
        let mut shape = tensor.shape.clone();
        shape[axis] = length;
        self.push_tensor(
            Op::Fft {
                input,
                inverse,
                length,
                axis,
            },
            to_complex(tensor.dtype),
            shape,
        )
    }

    /// Nx's `triangular_solve(a, b, options)`: `a` [..., n, n] (one triangle read), `b`
    /// [..., n] or [..., n, m] (left side) or [..., m, n] (right side) with `a`'s batch axes;
    /// the result has `b`'s shape and `to_floating(merge(a, b))`.
    pub fn triangular_solve(
        &mut self,
        a: NodeId,
        b: NodeId,
        options: TriangularSolveOptions,
    ) -> Result<NodeId> {
        const OP: &str = "triangular_solve";
        let (matrix, right) = (self.tensor(OP, a)?, self.tensor(OP, b)?);
        let n = square_order(OP, &matrix)?;
        if !fits_right_hand_side(&matrix, &right, n, !options.left_side) {
            return Err(bad(
                OP,
                &[&matrix, &right],
                format!(
                    "b must have a's batch axes, then [n], or [n, m] (left side) or [m, n] (right side); {options:?}"
                ),
            ));
        }
        self.push_tensor(
            Op::TriangularSolve { a, b, options },
            to_floating(merge(matrix.dtype, right.dtype)),
            right.shape,
        )
    }

    /// The node of the linear-algebra block `kind` over `inputs`: one tensor for cholesky,
    /// solve and determinant, a tuple for qr (`q`, `r`), lu (`p`, `l`, `u`) and eigh
    /// (`eigenvalues`, `eigenvectors`).
    pub fn linalg(&mut self, kind: LinAlgKind, inputs: &[NodeId]) -> Result<NodeId> {
        let op = kind.name();
        let tensors = inputs
            .iter()
            .map(|&id| self.tensor(op, id))
            .collect::<Result<Vec<_>>>()?;
        let shown: Vec<&TensorType> = tensors.iter().collect();
        if tensors.len() != kind.arity() {
            return Err(bad(op, &shown, format!("takes {} tensor(s)", kind.arity())));
        }
        let a = &tensors[0];
        let dtype = to_floating(
            tensors
                .iter()
                .map(|t| t.dtype)
                .reduce(merge)
                .unwrap_or(a.dtype),
        );
        let tensor = |shape: &[usize]| TensorType::new(dtype, shape);
        let with = |tail: &[usize]| -> Vec<usize> {
            let mut shape = a.shape[..a.shape.len().saturating_sub(2)].to_vec();
            shape.extend(tail);
            shape
        };
        let ty = match kind {
            LinAlgKind::Cholesky => {
                square_order(op, a)?;
                NodeType::Tensor(tensor(&a.shape))
            }
            LinAlgKind::Determinant => {
                square_order(op, a)?;
                NodeType::Tensor(tensor(&with(&[])))
            }
            LinAlgKind::Solve => {
                let n = square_order(op, a)?;
                if !fits_right_hand_side(a, &tensors[1], n, false) {
                    return Err(bad(
                        op,
                        &shown,
                        "b must have a's batch axes, then [n] or [n, m]",
                    ));
                }
                NodeType::Tensor(tensor(&tensors[1].shape))
            }
            LinAlgKind::Lu => {
                square_order(op, a)?;
                NodeType::Tuple(vec![
                    TensorType::new(a.dtype, &a.shape),
                    tensor(&a.shape),
                    tensor(&a.shape),
                ])
            }
            LinAlgKind::Eigh => {
                let n = square_order(op, a)?;
                NodeType::Tuple(vec![tensor(&with(&[n])), tensor(&a.shape)])
            }
            LinAlgKind::Qr { complete } => {
                let Some((_, rows, columns)) =
                    matrix_axes(a).filter(|&(_, rows, columns)| rows.max(columns) <= MAX_ORDER)
                else {
                    return Err(bad(
                        op,
                        &shown,
                        format!("expects [..., m, n] matrices with m and n at most {MAX_ORDER}"),
                    ));
                };
                let kept = if complete { rows } else { rows.min(columns) };
                NodeType::Tuple(vec![
                    tensor(&with(&[rows, kept])),
                    tensor(&with(&[kept, columns])),
                ])
            }
        };
        // Results hold at most MAX_ORDER times an operand's elements: no size overflows.
        self.push(
            Op::LinAlg {
                kind,
                inputs: inputs.to_vec(),
            },
            ty,
        )
    }

    /// The elements of the tuple node `tuple`, in order.
    fn elements<const N: usize>(&mut self, tuple: NodeId) -> Result<[NodeId; N]> {
        let mut elements = [tuple; N];
        for (index, element) in elements.iter_mut().enumerate() {
            *element = self.elem(tuple, index)?;
        }
        Ok(elements)
    }

    /// Nx's `cholesky(a)`: lower-triangular `l` with `l l^T = a` (only `a`'s lower triangle
    /// is read; a matrix that is not positive definite gives NaN).
    pub fn cholesky(&mut self, a: NodeId) -> Result<NodeId> {
        self.linalg(LinAlgKind::Cholesky, &[a])
    }

    /// Nx's `solve(a, b)`: `x` with `a x = b`.
    pub fn solve(&mut self, a: NodeId, b: NodeId) -> Result<NodeId> {
        self.linalg(LinAlgKind::Solve, &[a, b])
    }

    /// Nx's `determinant(a)`: one value per matrix.
    pub fn determinant(&mut self, a: NodeId) -> Result<NodeId> {
        self.linalg(LinAlgKind::Determinant, &[a])
    }

    /// Nx's `qr(a, mode: :complete | :reduced)`: `(q, r)`.
    pub fn qr(&mut self, a: NodeId, complete: bool) -> Result<(NodeId, NodeId)> {
        let tuple = self.linalg(LinAlgKind::Qr { complete }, &[a])?;
        let [q, r] = self.elements(tuple)?;
        Ok((q, r))
    }

    /// Nx's `lu(a)`: `(p, l, u)` with `a = p l u`.
    pub fn lu(&mut self, a: NodeId) -> Result<(NodeId, NodeId, NodeId)> {
        let tuple = self.linalg(LinAlgKind::Lu, &[a])?;
        let [p, l, u] = self.elements(tuple)?;
        Ok((p, l, u))
    }

    /// Nx's `eigh(a)`: `(eigenvalues, eigenvectors)` of symmetric `a` (lower triangle read),
    /// eigenvalues ascending.
    pub fn eigh(&mut self, a: NodeId) -> Result<(NodeId, NodeId)> {
        let tuple = self.linalg(LinAlgKind::Eigh, &[a])?;
        let [values, vectors] = self.elements(tuple)?;
        Ok((values, vectors))
    }
}

//! Gradient rules of the Fourier-transform, triangular-solve and linear-algebra nodes.
//!
//! Closed forms, built from the same nodes (triangular solves instead of explicit inverses):
//! - fft/ifft: the same transform of the gradient (the DFT matrix is symmetric), cropped
//!   back to the input's length where the forward pass padded, padded with zeros where it
//!   truncated (Nx's `grad_fft`, along the node's axis).
//! - triangular_solve (every option): with `op(a)` the transformed matrix, `db` solves the
//!   same system with `op(a)` transposed, `da` is `-db x^T` (left side) or `-x^T db` (right
//!   side), transposed back for `transform_a` and masked to the triangle the kernel reads
//!   (Nx's formula, without forming the inverse).
//! - solve: `db = solve(a^T, g)`, `da = -db x^T`.
//! - determinant: `g det(a) a^-T` (`a^-T` by a solve; singular matrices give inf/NaN as the
//!   forward pass does).
//! - cholesky: `a_bar = l^-T phi(l^T tril(g)) conj(l)^-1` (phi: the lower triangle with a
//!   halved diagonal) by two triangular solves, then made symmetric (Hermitian): the gradient
//!   with respect to the symmetric matrix (as JAX gives; Nx returns the unsymmetrised matrix,
//!   whose symmetric part is this one).
//! - qr: Nx's formulas (arXiv 2009.10071): eq. 3 for `m >= n` (reduced or complete), its
//!   Proposition 2 for wide matrices, with Nx's conjugate transposes; on complex values
//!   copyltu keeps only the real part of the diagonal (R's diagonal is real; see
//!   `qr_tall_rule`).
//! - eigh (distinct eigenvalues): Nx's and JAX's `v (diag(g_values) + f * v^H g_vectors) v^H`,
//!   made Hermitian, with `f_ij = 1 / (lambda_j - lambda_i)` off the diagonal.
//! - lu: with the permutation held constant, `p l^-T (tril(l^T g_l, -1) + triu(g_u u^T)) u^-T`.
//!
//! Complex values (see `autodiff.rs`: adjoints are JAX's transpose-convention cotangents):
//! triangular_solve, solve, determinant, lu and fft are holomorphic, so the formulas above
//! hold as written, with plain transposes (Nx's conjugate transposes act on its
//! conjugate-convention cotangents: conjugating both sides gives these). cholesky, qr and
//! eigh are not holomorphic: cholesky's closed form carries its one conjugation (`conj(l)`,
//! derived from Nx's `l^-H phi(l^H g) l^-1` the same way), and qr and eigh apply Nx's formulas
//! (conjugate transposes and all) to the conjugated element adjoints, then conjugate the
//! result. On real values every conjugation is the identity and is not built. A real input
//! of a complex node takes the real part of its adjoint.
//!
//! Tuple-valued nodes (qr, lu, eigh): each `elem` records its adjoint per element; an element
//! nobody used has a zero adjoint. The tuple's own adjoint slot holds the first recorded
//! element gradient, only to mark it reached in the backward sweep.

use super::{Differentiator, carries_gradient};
use crate::graph::{DotAxes, LinAlgKind, NodeId, Op};
use nxvk_core::{DType, Result};
use nxvk_kernels::{BinaryOp, TriangularSolveOptions, UnaryOp};

/// The batch axes of rank-`rank` matrices (all but the last two).
fn batch_axes(rank: usize) -> Vec<usize> {
    (0..rank.saturating_sub(2)).collect()
}

/// The little-endian bytes of the complex scalar `re + i im` of `dtype` (c64 or c128).
fn complex_bytes(dtype: DType, re: f64, im: f64) -> Vec<u8> {
    if dtype == DType::C64 {
        [(re as f32).to_le_bytes(), (im as f32).to_le_bytes()].concat()
    } else {
        [re.to_le_bytes(), im.to_le_bytes()].concat()
    }
}

impl Differentiator<'_> {
    /// The contributions of `gradient` (the adjoint of `node`) to the operands of an fft,
    /// triangular_solve or linear-algebra node.
    pub(super) fn linalg_rule(
        &mut self,
        op: &Op,
        node: NodeId,
        gradient: NodeId,
        needed: &[bool],
    ) -> Result<Vec<(NodeId, NodeId)>> {
        let wants = |this: &Self, operand: NodeId| {
            needed[operand.index()] && this.ty(operand).is_ok_and(|ty| carries_gradient(ty.dtype))
        };
        let mut contributions = Vec::new();
        match op {
            Op::Fft {
                input,
                inverse,
                length,
                axis,
            } => {
                if wants(self, *input) {
                    let value = self.fft_rule(*input, *inverse, *length, *axis, gradient)?;
                    contributions.push((*input, value));
                }
            }
            Op::TriangularSolve { a, b, options } => {
                let (want_a, want_b) = (wants(self, *a), wants(self, *b));
                if want_a || want_b {
                    let (to_a, to_b) =
                        self.triangular_solve_rule(*a, *b, options, node, gradient)?;
                    contributions.extend(want_a.then_some((*a, to_a)));
                    contributions.extend(want_b.then_some((*b, to_b)));
                }
            }
            Op::LinAlg { kind, inputs } => {
                let a = inputs[0];
                match kind {
                    LinAlgKind::Solve => {
                        let b = inputs[1];
                        let (want_a, want_b) = (wants(self, a), wants(self, b));
                        if want_a || want_b {
                            let (to_a, to_b) = self.solve_rule(a, b, node, gradient)?;
                            contributions.extend(want_a.then_some((a, to_a)));
                            contributions.extend(want_b.then_some((b, to_b)));
                        }
                    }
                    _ if !wants(self, a) => {}
                    LinAlgKind::Determinant => {
                        contributions.push((a, self.determinant_rule(a, node, gradient)?));
                    }
                    LinAlgKind::Cholesky => {
                        contributions.push((a, self.cholesky_rule(node, gradient)?));
                    }
                    // Tuple-valued: their element adjoints arrive through `tuple_rule`.
                    LinAlgKind::Qr { .. } | LinAlgKind::Lu | LinAlgKind::Eigh => {
                        return Err(self.no_rule(op.name(), node));
                    }
                }
            }
            _ => return Err(self.no_rule(op.name(), node)),
        }
        Ok(contributions)
    }

    /// d z of `real(z)` or `imag(z)` for complex `z`: `g`, or `-i g`.
    pub(super) fn complex_part_rule(
        &mut self,
        op: UnaryOp,
        input: NodeId,
        gradient: NodeId,
    ) -> Result<NodeId> {
        let complex = self.ty(input)?.dtype;
        let widened = self.builder.as_type(gradient, complex)?;
        if op == UnaryOp::Real {
            return Ok(widened);
        }
        let minus_i =
            self.builder
                .constant_bytes(complex, &[], &complex_bytes(complex, 0.0, -1.0))?;
        self.mul(widened, minus_i)
    }

    fn fft_rule(
        &mut self,
        input: NodeId,
        inverse: bool,
        length: usize,
        axis: usize,
        gradient: NodeId,
    ) -> Result<NodeId> {
        let input_shape = self.ty(input)?.shape;
        let transformed = self.builder.fft(gradient, inverse, Some(length), axis)?;
        let size = input_shape[axis];
        if size == length {
            return Ok(transformed);
        }
        if size < length {
            // The forward pass padded with zeros: keep the input's positions.
            let starts = vec![0; input_shape.len()];
            let strides = vec![1; input_shape.len()];
            return self
                .builder
                .slice(transformed, &starts, &input_shape, &strides);
        }
        // The forward pass truncated: the dropped elements get zeros.
        let complex = self.ty(transformed)?.dtype;
        let zero = self
            .builder
            .constant_bytes(complex, &[], &complex_bytes(complex, 0.0, 0.0))?;
        let mut config = vec![(0, 0, 0); input_shape.len()];
        config[axis] = (0, (size - length) as i64, 0);
        self.builder.pad(transformed, zero, &config)
    }

    /// `left . right` over the last two axes (batched over the others), each operand
    /// transposed first when asked.
    fn matmul(
        &mut self,
        left: NodeId,
        transpose_left: bool,
        right: NodeId,
        transpose_right: bool,
    ) -> Result<NodeId> {
        let rank = self.ty(left)?.shape.len();
        let axes = DotAxes {
            contract_left: vec![if transpose_left { rank - 2 } else { rank - 1 }],
            batch_left: batch_axes(rank),
            contract_right: vec![if transpose_right { rank - 1 } else { rank - 2 }],
            batch_right: batch_axes(rank),
        };
        self.builder.dot(left, right, axes)
    }

    /// `value` with its last two axes swapped.
    fn transpose_matrix(&mut self, value: NodeId) -> Result<NodeId> {
        let rank = self.ty(value)?.shape.len();
        let mut permutation: Vec<usize> = (0..rank).collect();
        permutation.swap(rank - 2, rank - 1);
        self.builder.transpose(value, &permutation)
    }

    /// `conj(value)` for a complex value; a real value itself.
    fn conjugated(&mut self, value: NodeId) -> Result<NodeId> {
        if self.ty(value)?.dtype.is_complex() {
            self.unary(UnaryOp::Conjugate, value)
        } else {
            Ok(value)
        }
    }

    /// `value^H` (the conjugate transpose; the transpose of a real value) over the last two
    /// axes.
    fn adjoint_matrix(&mut self, value: NodeId) -> Result<NodeId> {
        let transposed = self.transpose_matrix(value)?;
        self.conjugated(transposed)
    }

    /// The diagonal of `value` [..., n, n] (zeros elsewhere), its real part only (as
    /// `value`'s dtype).
    fn real_diagonal(&mut self, value: NodeId) -> Result<NodeId> {
        let lower = self.triangle(value, true, 0)?;
        let diagonal = self.triangle(lower, false, 0)?;
        let dtype = self.ty(value)?.dtype;
        if !dtype.is_complex() {
            return Ok(diagonal);
        }
        let real = self.unary(UnaryOp::Real, diagonal)?;
        self.builder.as_type(real, dtype)
    }

    /// `(value + value^H) / 2` over the last two axes: the Hermitian (real: symmetric) part.
    fn symmetrised(&mut self, value: NodeId) -> Result<NodeId> {
        let adjoint = self.adjoint_matrix(value)?;
        let sum = self.binary(BinaryOp::Add, value, adjoint)?;
        self.scale(sum, 0.5)
    }

    /// The u8 mask [n, n] of `row - column >= offset` (`lower`) or `column - row >= offset`.
    fn triangle_mask(&mut self, n: usize, lower: bool, offset: i64) -> Result<NodeId> {
        let rows = self.builder.iota(DType::S32, &[n, n], Some(0))?;
        let columns = self.builder.iota(DType::S32, &[n, n], Some(1))?;
        let (from, to) = if lower {
            (columns, rows)
        } else {
            (rows, columns)
        };
        let distance = self.binary(BinaryOp::Subtract, to, from)?;
        let offset = self.scalar(DType::S32, offset as f64)?;
        self.binary(BinaryOp::GreaterEqual, distance, offset)
    }

    /// `value` [..., n, n] with the elements outside its lower (or upper) triangle, shifted
    /// by `offset` diagonals inward, set to zero.
    fn triangle(&mut self, value: NodeId, lower: bool, offset: i64) -> Result<NodeId> {
        let shape = self.ty(value)?.shape;
        let mask = self.triangle_mask(shape[shape.len() - 1], lower, offset)?;
        self.mask(mask, value, true)
    }

    /// The identity [n, n] of `dtype`.
    fn identity(&mut self, n: usize, dtype: DType) -> Result<NodeId> {
        let mask = self.triangle_mask(n, true, 0)?;
        let upper = self.triangle_mask(n, false, 0)?;
        let diagonal = self.binary(BinaryOp::LogicalAnd, mask, upper)?;
        self.builder.as_type(diagonal, dtype)
    }

    /// `value` [..., n] (a vector right-hand side) as the matrix [..., n, 1] (or [..., 1, n]
    /// when `row`), or `value` itself when it is already a matrix of `matrix_rank`.
    fn as_matrix(&mut self, value: NodeId, matrix_rank: usize, row: bool) -> Result<NodeId> {
        let mut shape = self.ty(value)?.shape;
        if shape.len() == matrix_rank {
            return Ok(value);
        }
        shape.insert(if row { shape.len() - 1 } else { shape.len() }, 1);
        self.builder.reshape(value, &shape)
    }

    /// The adjoints of `a` (before any transform) and `b` of a linear system whose solution
    /// is `x`: `to_b = solve_adjoint(g)` (the system with its matrix transposed), `to_a =
    /// -to_b x^T` (left side) or `-x^T to_b` (right side); a vector `b` is a one-column (or
    /// one-row) matrix meanwhile.
    fn system_rule(
        &mut self,
        (a, b, x): (NodeId, NodeId, NodeId),
        gradient: NodeId,
        left_side: bool,
        solve_adjoint: &dyn Fn(&mut Self, NodeId) -> Result<NodeId>,
    ) -> Result<(NodeId, NodeId)> {
        let rank = self.ty(a)?.shape.len();
        let b_shape = self.ty(b)?.shape;
        let g = self.as_matrix(gradient, rank, !left_side)?;
        let x = self.as_matrix(x, rank, !left_side)?;
        let to_b = solve_adjoint(self, g)?;
        let product = if left_side {
            self.matmul(to_b, false, x, true)?
        } else {
            self.matmul(x, true, to_b, false)?
        };
        let to_a = self.unary(UnaryOp::Negate, product)?;
        let to_b = self.builder.reshape(to_b, &b_shape)?;
        Ok((to_a, to_b))
    }

    fn triangular_solve_rule(
        &mut self,
        a: NodeId,
        b: NodeId,
        options: &TriangularSolveOptions,
        x: NodeId,
        gradient: NodeId,
    ) -> Result<(NodeId, NodeId)> {
        let transposed = TriangularSolveOptions {
            transpose_a: !options.transpose_a,
            ..*options
        };
        let (mut to_a, to_b) =
            self.system_rule((a, b, x), gradient, options.left_side, &|this, g| {
                this.builder.triangular_solve(a, g, transposed)
            })?;
        if options.transpose_a {
            to_a = self.transpose_matrix(to_a)?;
        }
        Ok((self.triangle(to_a, options.lower, 0)?, to_b))
    }

    fn solve_rule(
        &mut self,
        a: NodeId,
        b: NodeId,
        x: NodeId,
        gradient: NodeId,
    ) -> Result<(NodeId, NodeId)> {
        let a_transposed = self.transpose_matrix(a)?;
        self.system_rule((a, b, x), gradient, true, &|this, g| {
            this.builder.solve(a_transposed, g)
        })
    }

    fn determinant_rule(
        &mut self,
        a: NodeId,
        determinant: NodeId,
        gradient: NodeId,
    ) -> Result<NodeId> {
        let a_type = self.ty(a)?;
        let dtype = self.ty(determinant)?.dtype;
        let n = a_type.shape[a_type.shape.len() - 1];
        let identity = self.identity(n, dtype)?;
        let identities = self.builder.broadcast_to(identity, &a_type.shape)?;
        let a_transposed = self.transpose_matrix(a)?;
        let inverse_transposed = self.builder.solve(a_transposed, identities)?;
        let weight = self.mul(gradient, determinant)?;
        let mut kept = self.ty(weight)?.shape;
        kept.extend([1, 1]);
        let weight = self.builder.reshape(weight, &kept)?;
        self.mul(weight, inverse_transposed)
    }

    /// `lower^-T middle right^-1` (`right^-T` when `transpose_right`) by two triangular
    /// solves; `lower` is lower triangular, `right` lower when `right_lower`, else upper.
    fn between_triangles(
        &mut self,
        lower: NodeId,
        middle: NodeId,
        right: NodeId,
        right_lower: bool,
        transpose_right: bool,
    ) -> Result<NodeId> {
        let transposed_lower = TriangularSolveOptions {
            transpose_a: true,
            ..TriangularSolveOptions::default()
        };
        let left = self
            .builder
            .triangular_solve(lower, middle, transposed_lower)?;
        let on_the_right = TriangularSolveOptions {
            lower: right_lower,
            left_side: false,
            transpose_a: transpose_right,
        };
        self.builder.triangular_solve(right, left, on_the_right)
    }

    fn cholesky_rule(&mut self, l: NodeId, gradient: NodeId) -> Result<NodeId> {
        let shape = self.ty(l)?.shape;
        let dtype = self.ty(l)?.dtype;
        let lower_g = self.triangle(gradient, true, 0)?;
        let product = self.matmul(l, true, lower_g, false)?;
        // phi: the lower triangle with the diagonal halved.
        let identity = self.identity(shape[shape.len() - 1], dtype)?;
        let divisor = self.offset(identity, 1.0)?;
        let halved = self.div(product, divisor)?;
        let phi = self.triangle(halved, true, 0)?;
        let conjugate_l = self.conjugated(l)?;
        let both = self.between_triangles(l, phi, conjugate_l, true, false)?;
        self.symmetrised(both)
    }

    /// The contribution to the input of the tuple-valued linear-algebra node `node` (qr, lu,
    /// eigh) from its elements' adjoints `recorded` (`None` for elements nobody used).
    pub(super) fn linalg_tuple_rule(
        &mut self,
        node: NodeId,
        kind: LinAlgKind,
        input: NodeId,
        recorded: &[Option<NodeId>],
        needed: &[bool],
    ) -> Result<Vec<(NodeId, NodeId)>> {
        if !needed[input.index()] || !carries_gradient(self.ty(input)?.dtype) {
            return Ok(Vec::new());
        }
        Ok(vec![(
            input,
            self.factorisation_rule(kind, node, recorded)?,
        )])
    }

    /// The adjoints of the tuple node's elements (zeros for elements nobody used) and the
    /// elements themselves.
    fn tuple_parts(
        &mut self,
        tuple: NodeId,
        count: usize,
        recorded: &[Option<NodeId>],
    ) -> Result<(Vec<NodeId>, Vec<NodeId>)> {
        let mut adjoints = Vec::with_capacity(count);
        let mut elements = Vec::with_capacity(count);
        for index in 0..count {
            let element = self.builder.elem(tuple, index)?;
            elements.push(element);
            adjoints.push(match recorded.get(index).copied().flatten() {
                Some(adjoint) => adjoint,
                None => self.zeros_like(element)?,
            });
        }
        Ok((adjoints, elements))
    }

    /// d a of qr, lu or eigh from its elements' adjoints.
    fn factorisation_rule(
        &mut self,
        kind: LinAlgKind,
        tuple: NodeId,
        recorded: &[Option<NodeId>],
    ) -> Result<NodeId> {
        match kind {
            LinAlgKind::Qr { .. } => {
                let (adjoints, elements) = self.tuple_parts(tuple, 2, recorded)?;
                self.qr_rule(&elements, &adjoints)
            }
            LinAlgKind::Lu => {
                let (adjoints, elements) = self.tuple_parts(tuple, 3, recorded)?;
                self.lu_rule(&elements, &adjoints)
            }
            _ => {
                let (adjoints, elements) = self.tuple_parts(tuple, 2, recorded)?;
                self.eigh_rule(&elements, &adjoints)
            }
        }
    }

    /// `value`'s `count` columns (last axis) from `start`.
    fn columns(&mut self, value: NodeId, start: usize, count: usize) -> Result<NodeId> {
        let mut lengths = self.ty(value)?.shape;
        let rank = lengths.len();
        let mut starts = vec![0; rank];
        starts[rank - 1] = start;
        lengths[rank - 1] = count;
        self.builder.slice(value, &starts, &lengths, &vec![1; rank])
    }

    /// d a of `(q, r) = qr(a)`: Nx's tall/square rule, and for wide matrices (`r = [u | v]`,
    /// `a = [x | y]`) the square rule for `x` with `dq + y dv^H`, and `q dv` for `y`; in Nx's
    /// conjugate convention, between conjugations (see the module docs).
    fn qr_rule(&mut self, elements: &[NodeId], adjoints: &[NodeId]) -> Result<NodeId> {
        let (q, r) = (elements[0], elements[1]);
        let (dq, dr) = (self.conjugated(adjoints[0])?, self.conjugated(adjoints[1])?);
        let gradient = self.qr_conjugate_convention_rule(q, r, dq, dr)?;
        self.conjugated(gradient)
    }

    /// Nx's qr gradient of the conjugate-convention adjoints `dq` and `dr`.
    fn qr_conjugate_convention_rule(
        &mut self,
        q: NodeId,
        r: NodeId,
        dq: NodeId,
        dr: NodeId,
    ) -> Result<NodeId> {
        let r_shape = self.ty(r)?.shape;
        let rank = r_shape.len();
        let (rows, columns) = (r_shape[rank - 2], r_shape[rank - 1]);
        if rows >= columns {
            return self.qr_tall_rule(q, r, dq, dr);
        }
        let (u, du) = (self.columns(r, 0, rows)?, self.columns(dr, 0, rows)?);
        let rest = columns - rows;
        let (v, dv) = (self.columns(r, rows, rest)?, self.columns(dr, rows, rest)?);
        let y = self.matmul(q, false, v, false)?;
        let dv_conjugate = self.conjugated(dv)?;
        let y_dv = self.matmul(y, false, dv_conjugate, true)?;
        let shifted_dq = self.binary(BinaryOp::Add, dq, y_dv)?;
        let dx = self.qr_tall_rule(q, u, shifted_dq, du)?;
        let dy = self.matmul(q, false, dv, false)?;
        self.builder.concatenate(&[dx, dy], rank - 1)
    }

    /// Nx's rule for `r` with at least as many rows as columns (arXiv 2009.10071, eq. 3).
    fn qr_tall_rule(&mut self, q: NodeId, r: NodeId, dq: NodeId, dr: NodeId) -> Result<NodeId> {
        let r_shape = self.ty(r)?.shape;
        let rank = r_shape.len();
        let columns = r_shape[rank - 1];
        let dr_conjugate = self.conjugated(dr)?;
        let r_dr = self.matmul(r, false, dr_conjugate, true)?;
        let dq_conjugate = self.conjugated(dq)?;
        let dq_q = self.matmul(dq_conjugate, true, q, false)?;
        let m = self.binary(BinaryOp::Subtract, r_dr, dq_q)?;
        // copyltu(m): the strict lower triangle mirrored (conjugated) onto the upper one, and
        // the real part of the diagonal. R's diagonal is real, so dR's is: Q^H dQ (which is
        // anti-Hermitian) has an imaginary diagonal, and the adjoint of that constraint keeps
        // re(diag m) only (Nx keeps the whole complex diagonal; on real values they agree).
        let strict = self.triangle(m, true, 1)?;
        let mirrored = self.adjoint_matrix(strict)?;
        let diagonal = self.real_diagonal(m)?;
        let mirrored = self.binary(BinaryOp::Add, mirrored, diagonal)?;
        let copied = self.binary(BinaryOp::Add, strict, mirrored)?;
        let q_m = self.matmul(q, false, copied, false)?;
        let sum = self.binary(BinaryOp::Add, dq, q_m)?;
        // Complete mode: r has zero rows below its leading square block; only that block
        // and the matching columns of the sum enter the solve.
        let mut square = r_shape.clone();
        square[rank - 2] = columns;
        let r_square = self
            .builder
            .slice(r, &vec![0; rank], &square, &vec![1; rank])?;
        let sum = self.columns(sum, 0, columns)?;
        // sum . r^-H, solved as x conj(r)^T = sum.
        let r_square = self.conjugated(r_square)?;
        self.builder.triangular_solve(
            r_square,
            sum,
            TriangularSolveOptions {
                lower: false,
                left_side: false,
                transpose_a: true,
            },
        )
    }

    fn lu_rule(&mut self, elements: &[NodeId], adjoints: &[NodeId]) -> Result<NodeId> {
        let (p, l, u, dl, du) = (
            elements[0],
            elements[1],
            elements[2],
            adjoints[1],
            adjoints[2],
        );
        let l_dl = self.matmul(l, true, dl, false)?;
        let below = self.triangle(l_dl, true, 1)?;
        let du_u = self.matmul(du, false, u, true)?;
        let above = self.triangle(du_u, false, 0)?;
        let middle = self.binary(BinaryOp::Add, below, above)?;
        // l's unit diagonal is stored, so the solve reads it as it is.
        let both = self.between_triangles(l, middle, u, false, true)?;
        let dtype = self.ty(both)?.dtype;
        let permutation = self.builder.as_type(p, dtype)?;
        self.matmul(permutation, false, both, false)
    }

    /// d a of `(values, vectors) = eigh(a)`: Nx's formula in its conjugate convention, between
    /// conjugations (see the module docs).
    fn eigh_rule(&mut self, elements: &[NodeId], adjoints: &[NodeId]) -> Result<NodeId> {
        let (values, vectors) = (elements[0], elements[1]);
        let d_values = self.conjugated(adjoints[0])?;
        let d_vectors = self.conjugated(adjoints[1])?;
        let values_type = self.ty(values)?;
        let n = values_type.shape[values_type.shape.len() - 1];
        let identity = self.identity(n, values_type.dtype)?;
        let mut row_shape = values_type.shape.clone();
        row_shape.insert(row_shape.len() - 1, 1);
        let mut column_shape = values_type.shape.clone();
        column_shape.push(1);
        let as_row = self.builder.reshape(values, &row_shape)?;
        let as_column = self.builder.reshape(values, &column_shape)?;
        // f_ij = 1 / (lambda_j - lambda_i) off the diagonal, 0 on it.
        let gaps = self.binary(BinaryOp::Subtract, as_row, as_column)?;
        let shifted = self.binary(BinaryOp::Add, gaps, identity)?;
        let one = self.scalar(values_type.dtype, 1.0)?;
        let inverse = self.div(one, shifted)?;
        let f = self.binary(BinaryOp::Subtract, inverse, identity)?;
        let vectors_conjugate = self.conjugated(vectors)?;
        let projected = self.matmul(vectors_conjugate, true, d_vectors, false)?;
        let weighted = self.mul(f, projected)?;
        let d_values_row = self.builder.reshape(d_values, &row_shape)?;
        let diagonal = self.mul(d_values_row, identity)?;
        let middle = self.binary(BinaryOp::Add, diagonal, weighted)?;
        let left = self.matmul(vectors, false, middle, false)?;
        let full = self.matmul(left, false, vectors_conjugate, true)?;
        let hermitian = self.symmetrised(full)?;
        self.conjugated(hermitian)
    }
}

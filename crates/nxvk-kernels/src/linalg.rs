//! Linear algebra on the GPU for small and medium batched matrices: triangular_solve,
//! cholesky, lu, determinant, solve, qr and eigh (Nx.LinAlg's), on real floats and on c64 and
//! c128. The kernels' GLSL is `linalg_codegen.rs`'s, one template per kernel for every value
//! type (complex values with Complex.multiply, Complex.divide, Complex.sqrt and Complex.abs in
//! the component type: f32 for c64, f64 for c128). SVD is not implemented here (see
//! docs/CAPABILITIES.md: Nx's default implementation runs on these kernels).
//!
//! triangular_solve: one invocation per (matrix, right-hand column) runs the substitution
//! sequentially over the rows (O(n^2) work each, all columns and batch entries in parallel).
//! Every operand is addressed through (batch, row, column) element strides, so `transform_a:
//! transpose` and `left_side: false` are views (X A = B is solved as A^T X^T = B^T), never
//! copies. cholesky: one workgroup per matrix computes L column by column (left-looking): the
//! diagonal element, then the column below it in parallel, with a workgroup barrier between
//! columns; only the lower triangle of the input is read. Complex matrices are Hermitian
//! (A = L L^H, Nx's formulas). A real matrix that is not positive definite yields NaN (the
//! square root of a negative number) rather than an error; a complex one yields Complex.sqrt's
//! imaginary pivot, as Nx's formula does.
//!
//! lu: one workgroup per matrix runs Gaussian elimination with partial pivoting (the largest
//! modulus in the column below the diagonal, first on ties; Complex.abs on complex values, as
//! Nx's default implementation) in a working copy, then one invocation per element unpacks P
//! (s64), L (unit lower) and U with A = P L U. This is LAPACK's and EXLA's pivoting;
//! Nx.BinaryBackend pivots once on the original matrix instead, so its factors can differ
//! where both are valid. determinant: the product of U's diagonal, negated for an odd number
//! of row swaps.
//!
//! qr: one workgroup per matrix applies Householder reflections to a working copy of A
//! (columns in parallel) and accumulates Q = H1 H2 ... (rows in parallel); reflections follow
//! LAPACK's sign choice (alpha = -sign(x0) |x|), so R's diagonal may be negative. Complex
//! reflections are Hermitian (alpha = -e^(i arg x0) |x|, the phase of Nx's complex reflector),
//! after which each row of R and column of Q is turned by a unit phase so that R's diagonal is
//! real, -sign(re x0) |x| (LAPACK's zgeqrf; Nx's complex default leaves it complex): the QR
//! gradient's formula holds for a real diagonal only. `:reduced` keeps the first min(m, n)
//! columns of Q and rows of R.
//!
//! eigh: one workgroup per matrix runs cyclic Jacobi sweeps (each rotation's angle by one
//! invocation, the row, column and eigenvector updates in parallel) on the lower triangle
//! mirrored (conjugated above the diagonal for complex, Hermitian, matrices, whose rotations
//! first turn the pivot real by a phase), in f32 (f64 for f64, c64 for c64, c128 for c128)
//! until the off-diagonal norm is below the working type's epsilon times the Frobenius norm
//! (at most [`MAX_SWEEPS`] sweeps), then sorts the eigenvalues ascending (LAPACK's and EXLA's
//! order) with their eigenvector columns. Complex eigenvalues are real numbers typed c64/c128
//! (Nx's `to_floating` of the input), their imaginary parts zero.
//!
//! Results are `to_floating(merge(...))` of the inputs (Nx's); f16 and bf16 compute in f32
//! but keep intermediate solutions in their own type. Sizes: n up to [`MAX_ORDER`] (each
//! invocation loops over n^2 / 2 products; lavapipe stops loops at 65,535 iterations).

use crate::catalog::{device_supports, device_supports_value, value_of};
use crate::dot::collapse;
use crate::launch::poison_output;
pub use crate::linalg_codegen::{MAX_EIGH_ORDER, MAX_SWEEPS};
use crate::linalg_codegen::{
    WORKGROUP_SIZE, cholesky_shader, eigh_shader, lu_shader, lu_unpack_shader, qr_shader,
    triangular_solve_shader,
};
use crate::op_table::{ComplexElem, Elem, ValueType};
use crate::operand_errors::bad_operands;
use crate::{movement, ops, types};
use nxvk_core::{BufferAccess, DType, Error, Result, Tensor};

/// The largest matrix order the kernels take.
pub const MAX_ORDER: usize = 1024;

/// Nx's triangular_solve options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TriangularSolveOptions {
    /// `a` is lower triangular (else upper); the other triangle is never read.
    pub lower: bool,
    /// Solve `a x = b` (else `x a = b`).
    pub left_side: bool,
    /// Use the transpose of `a` (Nx's `transform_a: :transpose`).
    pub transpose_a: bool,
}

impl Default for TriangularSolveOptions {
    fn default() -> Self {
        TriangularSolveOptions {
            lower: true,
            left_side: true,
            transpose_a: false,
        }
    }
}

/// Every linear-algebra op this module implements (for the coverage report).
pub const LINALG_OPS: [&str; 7] = [
    "triangular_solve",
    "cholesky",
    "lu",
    "determinant",
    "solve",
    "qr",
    "eigh",
];

/// True when the linear-algebra ops on `dtype` operands run on a device with `capabilities`:
/// their result, `to_floating(dtype)`, is a real float the device computes, or c64/c128 on a
/// device with f64 shaders (c64 division and square roots round through f64); else they are
/// unsupported.
pub fn runs_on_gpu(dtype: DType, capabilities: &nxvk_core::Capabilities) -> bool {
    value_of(types::to_floating(dtype)).is_some_and(|value| match value {
        ValueType::Real(elem) => elem.is_float() && device_supports(capabilities, elem),
        ValueType::Complex(_) => device_supports_value(capabilities, value),
    })
}

/// Nx's result type of a linear-algebra op: `to_floating` of the operands' merged type.
fn floating_result(tensors: &[&Tensor]) -> DType {
    let merged = tensors
        .iter()
        .map(|tensor| tensor.dtype())
        .reduce(types::merge)
        .expect("at least one operand");
    types::to_floating(merged)
}

/// The result dtype of `op` over `tensors` and its value type, or `Unsupported`.
fn linalg_value(op: &'static str, tensors: &[&Tensor]) -> Result<(DType, ValueType)> {
    let result = floating_result(tensors);
    let capabilities = tensors[0].device().capabilities();
    value_of(result)
        .filter(|_| runs_on_gpu(result, capabilities))
        .map(|value| (result, value))
        .ok_or_else(|| Error::Unsupported {
            op,
            dtype: result,
            detail: "linear algebra runs on the GPU for f16, bf16, f32, f64, c64 and c128 results (complex ones on devices with f64 shaders)".into(),
        })
}

/// The packed factorisation of `a` ([..., n, n]): the working matrix (L below the diagonal,
/// U on and above it) and the row permutation plus swap count ([batches, n + 1], u32).
fn lu_packed(op: &'static str, a: &Tensor) -> Result<(Tensor, Tensor, ValueType, usize, usize)> {
    let (result, value) = linalg_value(op, &[a])?;
    let n = square_order(op, a, MAX_ORDER)?;
    let a = ops::as_type(a, result)?;
    let (a_view, batches, a_strides) = matrix_view(&a)?;
    let device = a.device();
    let working = Tensor::empty(device, result, &[batches, n, n])?;
    let permutation = Tensor::empty(device, nxvk_core::DType::U32, &[batches, n + 1])?;
    if batches * n == 0 {
        return Ok((working, permutation, value, batches, n));
    }
    Launch {
        op,
        kernel_name: format!("lu_{}", value.name()),
        shader: lu_shader(value),
        addressed: &[&a_view, &working, &permutation],
        words: &[n, batches, a_strides[0], a_strides[1], a_strides[2]],
        reads: &[&a_view],
        outputs: &[],
        scratch: &[&working, &permutation],
        workgroups: workgroup_per_matrix(batches),
    }
    .dispatch()?;
    Ok((working, permutation, value, batches, n))
}

/// Runs the unpacking kernel in `mode` (0: P, L, U; 1: determinant into `l`).
fn lu_unpack(
    op: &'static str,
    value: ValueType,
    packed: (&Tensor, &Tensor),
    outputs: [&Tensor; 3],
    batches: usize,
    n: usize,
    mode: u32,
) -> Result<()> {
    let tasks = if mode == 0 { batches * n * n } else { batches };
    Launch {
        op,
        kernel_name: format!("lu_unpack_{}", value.name()),
        shader: lu_unpack_shader(value),
        addressed: &[packed.0, packed.1, outputs[0], outputs[1], outputs[2]],
        words: &[n, batches, mode as usize],
        reads: &[packed.0, packed.1],
        outputs: &outputs,
        scratch: &[],
        workgroups: workgroups_for_tasks(tasks),
    }
    .dispatch()
}

/// Nx's `lu(a)`: `(p, l, u)` with `a = p . l . u` for `a` of shape [..., n, n]; `p` is an s64
/// permutation matrix, `l` unit lower triangular, `u` upper triangular (partial pivoting).
pub fn lu(a: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    const OP: &str = "lu";
    let (working, permutation, value, batches, n) = lu_packed(OP, a)?;
    let device = a.device();
    let p = Tensor::empty(device, nxvk_core::DType::S64, a.shape())?;
    let l = Tensor::empty(device, working.dtype(), a.shape())?;
    let u = Tensor::empty(device, working.dtype(), a.shape())?;
    if batches * n > 0 {
        lu_unpack(
            OP,
            value,
            (&working, &permutation),
            [&p, &l, &u],
            batches,
            n,
            0,
        )?;
    }
    Ok((p, l, u))
}

/// Nx's `determinant(a)` for `a` of shape [..., n, n]: one value per matrix (LU-based).
pub fn determinant(a: &Tensor) -> Result<Tensor> {
    const OP: &str = "determinant";
    let (working, permutation, value, batches, n) = lu_packed(OP, a)?;
    let rank = a.shape().len();
    let output = Tensor::empty(a.device(), working.dtype(), &a.shape()[..rank - 2])?;
    if batches == 0 {
        return Ok(output);
    }
    if n == 0 {
        // The determinant of an empty matrix is 1.
        return ops::as_type(
            &Tensor::from_slice(a.device(), &[batches], &vec![1.0f64; batches])?,
            working.dtype(),
        )?
        .reshape(output.shape());
    }
    lu_unpack(
        OP,
        value,
        (&working, &permutation),
        [&output, &output, &output],
        batches,
        n,
        1,
    )?;
    Ok(output)
}

/// Nx's `solve(a, b)`: x with `a x = b`, for `a` of shape [..., n, n] and `b` of shape
/// [..., n] or [..., n, m] with a's batch axes; through `lu` (P^T b is a GEMM with the 0/1
/// permutation matrix, exact for finite b) and two triangular solves.
pub fn solve(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    const OP: &str = "solve";
    let (result, _) = linalg_value(OP, &[a, b])?;
    let rank = a.shape().len();
    let shapes_fit = rank >= 2
        && (b.shape().len() == rank || b.shape().len() == rank - 1)
        && b.shape()[..rank - 2] == a.shape()[..rank - 2]
        && b.shape().get(rank - 2) == a.shape().last();
    if !shapes_fit {
        return Err(bad_operands(
            OP,
            &[a, b],
            "a must be [..., n, n] and b [..., n] or [..., n, m] with a's batch axes".into(),
        ));
    }
    let a = ops::as_type(a, result)?;
    let b = ops::as_type(b, result)?;
    let (p, l, u) = lu(&a)?;
    let batch_axes: Vec<usize> = (0..rank - 2).collect();
    // The 0/1 permutation in the result type, so the GEMM is real or complex as b is.
    let p = ops::as_type(&p, result)?;
    let permuted = crate::dot::dot(&p, &[rank - 2], &batch_axes, &b, &[rank - 2], &batch_axes)?;
    let lower = triangular_solve(&l, &permuted, &TriangularSolveOptions::default())?;
    triangular_solve(
        &u,
        &lower,
        &TriangularSolveOptions {
            lower: false,
            ..TriangularSolveOptions::default()
        },
    )
}

/// Nx's `qr(a, mode)`: `(q, r)` with `a = q . r`, `q` with orthonormal columns and `r` upper
/// triangular, for `a` of shape [..., m, n]. `complete`: q is [..., m, m] and r [..., m, n];
/// else (Nx's `:reduced`) q is [..., m, k] and r [..., k, n] with k = min(m, n).
pub fn qr(a: &Tensor, complete: bool) -> Result<(Tensor, Tensor)> {
    const OP: &str = "qr";
    let (result, value) = linalg_value(OP, &[a])?;
    let rank = a.shape().len();
    if rank < 2 || a.shape()[rank - 2].max(a.shape()[rank - 1]) > MAX_ORDER {
        return Err(bad_operands(
            OP,
            &[a],
            format!("expects [..., m, n] matrices with m and n at most {MAX_ORDER}"),
        ));
    }
    let (m, n) = (a.shape()[rank - 2], a.shape()[rank - 1]);
    let a = ops::as_type(a, result)?;
    let (a_view, batches, a_strides) = matrix_view(&a)?;
    let device = a.device();
    let batch_shape = &a.shape()[..rank - 2];
    let q = Tensor::empty(device, result, &[batch_shape, &[m, m]].concat())?;
    let r = Tensor::empty(device, result, &[batch_shape, &[m, n]].concat())?;
    if batches * m > 0 {
        let v = Tensor::empty(device, result, &[batches, m])?;
        Launch {
            op: OP,
            kernel_name: format!("{OP}_{}", value.name()),
            shader: qr_shader(value),
            addressed: &[&a_view, &q, &r, &v],
            words: &[m, n, batches, a_strides[0], a_strides[1], a_strides[2]],
            reads: &[&a_view],
            outputs: &[&q, &r],
            scratch: &[&v],
            workgroups: workgroup_per_matrix(batches),
        }
        .dispatch()?;
    }
    let k = m.min(n);
    if complete || k == m {
        return Ok((q, r));
    }
    // Reduced: the first k columns of Q and rows of R.
    let starts = vec![0; rank];
    let q_lengths = [batch_shape, &[m, k]].concat();
    let r_lengths = [batch_shape, &[k, n]].concat();
    Ok((
        movement::contiguous(&q.slice(&starts, &q_lengths)?)?,
        movement::contiguous(&r.slice(&starts, &r_lengths)?)?,
    ))
}

/// Nx's `eigh(a)`: `(eigenvalues, eigenvectors)` of the symmetric (complex: Hermitian)
/// matrices `a` ([..., n, n], only the lower triangle read), eigenvalues ascending, eigenvector
/// `i` in column `i`.
pub fn eigh(a: &Tensor) -> Result<(Tensor, Tensor)> {
    const OP: &str = "eigh";
    let (result, value) = linalg_value(OP, &[a])?;
    let rank = a.shape().len();
    let n = square_order(OP, a, MAX_EIGH_ORDER)?;
    // Rotations accumulate rounding: f16 and bf16 work in f32.
    let (working, working_dtype) = match value {
        ValueType::Real(Elem::F64) => (value, DType::F64),
        ValueType::Real(_) => (ValueType::Real(Elem::F32), DType::F32),
        ValueType::Complex(ComplexElem::C64) => (value, DType::C64),
        ValueType::Complex(ComplexElem::C128) => (value, DType::C128),
    };
    let a = ops::as_type(a, working_dtype)?;
    let (a_view, batches, a_strides) = matrix_view(&a)?;
    let device = a.device();
    let batch_shape = &a.shape()[..rank - 2];
    let values = Tensor::empty(device, working_dtype, &[batch_shape, &[n]].concat())?;
    let vectors = Tensor::empty(device, working_dtype, a.shape())?;
    if batches * n > 0 {
        let scratch_w = Tensor::empty(device, working_dtype, &[batches, n, n])?;
        let scratch_v = Tensor::empty(device, working_dtype, &[batches, n, n])?;
        Launch {
            op: OP,
            kernel_name: format!("{OP}_{}", working.name()),
            shader: eigh_shader(working),
            addressed: &[&a_view, &scratch_w, &scratch_v, &values, &vectors],
            words: &[n, batches, a_strides[0], a_strides[1], a_strides[2]],
            reads: &[&a_view],
            outputs: &[&values, &vectors],
            scratch: &[&scratch_w, &scratch_v],
            workgroups: workgroup_per_matrix(batches),
        }
        .dispatch()?;
    }
    Ok((
        ops::as_type(&values, result)?,
        ops::as_type(&vectors, result)?,
    ))
}

/// Batch size and the (batch, row, column) strides of the last two axes of `tensor`, whose
/// leading axes must collapse to one stride (else it is made contiguous first).
fn matrix_view(tensor: &Tensor) -> Result<(Tensor, usize, [usize; 3])> {
    let rank = tensor.shape().len();
    let leading: Vec<usize> = (0..rank - 2).collect();
    let batches: usize = tensor.shape()[..rank - 2].iter().product();
    let collapsed = collapse(tensor.shape(), tensor.layout().strides(), &leading);
    let tensor = match collapsed {
        Some(_) => tensor.clone(),
        None => movement::contiguous(tensor)?,
    };
    let strides = tensor.layout().strides();
    let batch_stride = collapse(tensor.shape(), strides, &leading).map_or(0, |(_, stride)| stride);
    let matrix_strides = [batch_stride, strides[rank - 2], strides[rank - 1]];
    Ok((tensor, batches, matrix_strides))
}

fn address(op: &'static str, tensor: &Tensor) -> Result<u64> {
    tensor
        .device_address()
        .ok_or_else(|| bad_operands(op, &[tensor], "sub-byte tensors have no addresses".into()))
}

fn words(op: &'static str, tensors: &[&Tensor], values: &[usize]) -> Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(values.len() * 4);
    for &value in values {
        let word = u32::try_from(value)
            .map_err(|_| bad_operands(op, tensors, format!("{value} exceeds 32-bit indexing")))?;
        bytes.extend_from_slice(&word.to_le_bytes());
    }
    Ok(bytes)
}

/// One dispatch of a linear-algebra kernel.
struct Launch<'a> {
    op: &'static str,
    /// The kernel's cache name and its GLSL.
    kernel_name: String,
    shader: String,
    /// The tensors whose device addresses open the push constants, in the shader's order.
    addressed: &'a [&'a Tensor],
    /// The 32-bit words after the addresses (sizes, strides, modes).
    words: &'a [usize],
    /// What the kernel reads (they also name the operands in an error about `words`).
    reads: &'a [&'a Tensor],
    /// Results, poisoned first (when poisoning is on) so an element the kernel misses shows.
    outputs: &'a [&'a Tensor],
    /// Working memory the kernel writes before it reads it: never poisoned.
    scratch: &'a [&'a Tensor],
    workgroups: u32,
}

impl Launch<'_> {
    fn dispatch(self) -> Result<()> {
        let device = self.reads[0].device();
        let kernel = device.kernel_from_glsl(&self.kernel_name, &self.shader, &[])?;
        let mut push = Vec::with_capacity(8 * self.addressed.len() + 4 * self.words.len());
        for tensor in self.addressed {
            push.extend_from_slice(&address(self.op, tensor)?.to_le_bytes());
        }
        push.extend(words(self.op, self.reads, self.words)?);
        let mut accesses: Vec<BufferAccess<'_>> = self
            .reads
            .iter()
            .map(|tensor| BufferAccess::Read(tensor.buffer()))
            .collect();
        for output in self.outputs {
            poison_output(output.buffer())?;
            accesses.push(BufferAccess::Write(output.buffer()));
        }
        accesses.extend(
            self.scratch
                .iter()
                .map(|tensor| BufferAccess::Write(tensor.buffer())),
        );
        device.dispatch(&kernel, [self.workgroups, 1, 1], &push, &accesses)
    }
}

/// Workgroups for kernels that give each matrix a workgroup (looping past the grid's limit).
fn workgroup_per_matrix(batches: usize) -> u32 {
    batches.clamp(1, 65_535) as u32
}

/// Workgroups for kernels that give each task an invocation (looping past the grid's limit).
fn workgroups_for_tasks(tasks: usize) -> u32 {
    tasks.div_ceil(WORKGROUP_SIZE as usize).clamp(1, 65_535) as u32
}

/// The order n of `a`'s [..., n, n] matrices, at most `max_order`.
fn square_order(op: &'static str, a: &Tensor, max_order: usize) -> Result<usize> {
    let rank = a.shape().len();
    let n = *a.shape().last().unwrap_or(&0);
    if rank < 2 || a.shape()[rank - 2] != n || n > max_order {
        return Err(bad_operands(
            op,
            &[a],
            format!("expects [..., n, n] matrices with n at most {max_order}"),
        ));
    }
    Ok(n)
}

/// Nx's `triangular_solve(a, b, opts)`: `a` is [..., n, n], `b` is [..., n] or [..., n, m]
/// (left side) or [..., m, n] (right side) with the same batch axes. Complex operands solve
/// with Complex.multiply and Complex.divide; `transpose_a` is Nx's `:transpose`, a plain
/// transpose on complex matrices too (no conjugation), and Nx's `:conjugate` (conjugate
/// without transposing) is this function on `conjugate(a)`.
pub fn triangular_solve(
    a: &Tensor,
    b: &Tensor,
    options: &TriangularSolveOptions,
) -> Result<Tensor> {
    const OP: &str = "triangular_solve";
    let (result, value) = linalg_value(OP, &[a, b])?;
    let rank = a.shape().len();
    let n = *a.shape().last().unwrap_or(&0);
    let square = rank >= 2 && a.shape()[rank - 2] == n;
    let vector = b.shape().len() == rank - 1 && square;
    let batch_matches = square
        && (vector || b.shape().len() == rank)
        && b.shape()[..rank - 2] == a.shape()[..rank - 2];
    let solved_axis = if vector || options.left_side {
        rank - 2
    } else {
        rank - 1
    };
    if !batch_matches || b.shape().get(solved_axis) != Some(&n) || n > MAX_ORDER {
        return Err(bad_operands(
            OP,
            &[a, b],
            format!(
                "a must be [..., n, n] (n at most {MAX_ORDER}) and b [..., n] or [..., n, m] / [..., m, n] with a's batch axes"
            ),
        ));
    }
    let a = ops::as_type(a, result)?;
    let b = ops::as_type(b, result)?;
    let b_matrix = if vector {
        let mut shape = b.shape().to_vec();
        shape.push(1);
        b.reshape(&shape)?
    } else {
        b.clone()
    };
    let output = Tensor::empty(a.device(), result, b_matrix.shape())?;
    if output.n_elements() == 0 {
        return output.reshape(b.shape());
    }
    // Everything as a left-side solve with the matrix as seen through views.
    let swap = |tensor: &Tensor| -> Result<Tensor> {
        let mut permutation: Vec<usize> = (0..rank).collect();
        permutation.swap(rank - 2, rank - 1);
        tensor.transpose(&permutation)
    };
    let transposed = options.transpose_a == options.left_side;
    let a_view = if transposed { swap(&a)? } else { a.clone() };
    let lower = options.lower != transposed;
    let (b_view, x_view) = if options.left_side || vector {
        (b_matrix.clone(), output.clone())
    } else {
        (swap(&b_matrix)?, swap(&output)?)
    };
    let (a_view, batches, a_strides) = matrix_view(&a_view)?;
    let (b_view, _, b_strides) = matrix_view(&b_view)?;
    let x_strides = {
        let strides = x_view.layout().strides();
        let batch = output.shape()[rank - 2] * output.shape()[rank - 1];
        [batch, strides[rank - 2], strides[rank - 1]]
    };
    let columns = b_view.shape()[rank - 1];
    Launch {
        op: OP,
        kernel_name: format!("{OP}_{}", value.name()),
        shader: triangular_solve_shader(value),
        addressed: &[&a_view, &b_view, &output],
        words: &[
            n,
            columns,
            batches,
            usize::from(lower),
            a_strides[0],
            a_strides[1],
            a_strides[2],
            b_strides[0],
            b_strides[1],
            b_strides[2],
            x_strides[0],
            x_strides[1],
            x_strides[2],
        ],
        reads: &[&a_view, &b_view],
        outputs: &[&output],
        scratch: &[],
        workgroups: workgroups_for_tasks(batches * columns),
    }
    .dispatch()?;
    output.reshape(b.shape())
}

/// Nx's `cholesky(a)`: the lower-triangular L with L L^T = a, for `a` of shape [..., n, n]
/// (only its lower triangle is read).
pub fn cholesky(a: &Tensor) -> Result<Tensor> {
    const OP: &str = "cholesky";
    let (result, value) = linalg_value(OP, &[a])?;
    let n = square_order(OP, a, MAX_ORDER)?;
    let a = ops::as_type(a, result)?;
    let output = Tensor::empty(a.device(), result, a.shape())?;
    if output.n_elements() == 0 {
        return Ok(output);
    }
    let (a_view, batches, a_strides) = matrix_view(&a)?;
    Launch {
        op: OP,
        kernel_name: format!("{OP}_{}", value.name()),
        shader: cholesky_shader(value),
        addressed: &[&a_view, &output],
        words: &[n, batches, a_strides[0], a_strides[1], a_strides[2]],
        reads: &[&a_view],
        outputs: &[&output],
        scratch: &[],
        workgroups: workgroup_per_matrix(batches),
    }
    .dispatch()?;
    Ok(output)
}

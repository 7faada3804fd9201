//! Linear algebra on the GPU for small and medium batched matrices: triangular_solve,
//! cholesky, lu, determinant, solve, qr and eigh (Nx.LinAlg's). SVD is not implemented yet.
//!
//! triangular_solve: one invocation per (matrix, right-hand column) runs the substitution
//! sequentially over the rows (O(n^2) work each, all columns and batch entries in parallel),
//! on real floats and on c64/c128 (Complex.multiply and Complex.divide in the component type).
//! Every operand is addressed through (batch, row, column) element strides, so `transform_a:
//! transpose` and `left_side: false` are views (X A = B is solved as A^T X^T = B^T), never
//! copies. cholesky: one workgroup per matrix computes L column by column (left-looking): the
//! diagonal element, then the column below it in parallel, with a workgroup barrier between
//! columns; only the lower triangle of the input is read, and a matrix that is not positive
//! definite yields NaN (the square root of a negative number) rather than an error.
//!
//! lu: one workgroup per matrix runs Gaussian elimination with partial pivoting (the largest
//! magnitude in the column below the diagonal, first on ties) in a working copy, then one
//! invocation per element unpacks P (s64), L (unit lower) and U with A = P L U. This is
//! LAPACK's and EXLA's pivoting; Nx.BinaryBackend pivots once on the original matrix instead,
//! so its factors can differ where both are valid. determinant: the product of U's diagonal,
//! negated for an odd number of row swaps.
//!
//! qr: one workgroup per matrix applies Householder reflections to a working copy of A
//! (columns in parallel) and accumulates Q = H1 H2 ... (rows in parallel); reflections follow
//! LAPACK's sign choice (alpha = -sign(x0) |x|), so R's diagonal may be negative, as it may be
//! in Nx. `:reduced` keeps the first min(m, n) columns of Q and rows of R.
//!
//! eigh: one workgroup per matrix runs cyclic Jacobi sweeps (each rotation's angle by one
//! invocation, the row, column and eigenvector updates in parallel) on the lower triangle
//! mirrored, in f32 (f64 for f64) until the off-diagonal norm is below the working type's
//! epsilon times the Frobenius norm (at most [`MAX_SWEEPS`] sweeps), then sorts the
//! eigenvalues ascending (LAPACK's and EXLA's order) with their eigenvector columns.
//!
//! Results are `to_floating(merge(...))` of the inputs (Nx's); f16 and bf16 compute in f32
//! but keep intermediate solutions in their own type. Sizes: n up to [`MAX_ORDER`] (each
//! invocation loops over n^2 / 2 products; lavapipe stops loops at 65,535 iterations).

use crate::catalog::{device_supports, device_supports_value, elem_of, value_of};
use crate::codegen::{
    BF16_HELPERS, FLOAT_CONTROLS, complex_prelude, complex_type, compute_type, load_value,
    store_value, value_alignment, value_storage_bytes, value_storage_type,
};
use crate::dot::collapse;
use crate::launch::poison_output;
use crate::op_table::{Elem, ValueType};
use crate::operand_errors::bad_operands;
use crate::{movement, ops, types};
use nxvk_core::{BufferAccess, Error, Result, Tensor};

/// The largest matrix order the kernels take.
pub const MAX_ORDER: usize = 1024;

const WORKGROUP_SIZE: u32 = 64;

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

/// True when the linear-algebra ops on `dtype` operands run on a device with `capabilities`
/// (their result, `to_floating(dtype)`, has a kernel); else they are unsupported.
pub fn runs_on_gpu(dtype: nxvk_core::DType, capabilities: &nxvk_core::Capabilities) -> bool {
    elem_of(types::to_floating(dtype))
        .is_some_and(|elem| elem.is_float() && device_supports(capabilities, elem))
}

/// Nx's result type of a linear-algebra op: `to_floating` of the operands' merged type.
fn floating_result(tensors: &[&Tensor]) -> nxvk_core::DType {
    let merged = tensors
        .iter()
        .map(|tensor| tensor.dtype())
        .reduce(types::merge)
        .expect("at least one operand");
    types::to_floating(merged)
}

fn float_elem(op: &'static str, tensors: &[&Tensor]) -> Result<(nxvk_core::DType, Elem)> {
    let result = floating_result(tensors);
    let capabilities = tensors[0].device().capabilities();
    elem_of(result)
        .filter(|_| runs_on_gpu(result, capabilities))
        .map(|elem| (result, elem))
        .ok_or_else(|| Error::Unsupported {
            op,
            dtype: result,
            detail: "linear algebra runs on the GPU for f16, bf16, f32 and f64 results".into(),
        })
}

/// True when `triangular_solve` on `dtype` operands runs on a device with `capabilities`: the
/// real floats of [`runs_on_gpu`], and c64/c128 (complex substitution in the same kernel).
pub fn triangular_solve_runs_on_gpu(
    dtype: nxvk_core::DType,
    capabilities: &nxvk_core::Capabilities,
) -> bool {
    match value_of(types::to_floating(dtype)) {
        Some(value @ ValueType::Complex(_)) => device_supports_value(capabilities, value),
        _ => runs_on_gpu(dtype, capabilities),
    }
}

/// [`float_elem`] for triangular_solve, which takes complex operands too.
fn solve_value(op: &'static str, tensors: &[&Tensor]) -> Result<(nxvk_core::DType, ValueType)> {
    let result = floating_result(tensors);
    if result.is_complex() {
        let capabilities = tensors[0].device().capabilities();
        return value_of(result)
            .filter(|_| triangular_solve_runs_on_gpu(result, capabilities))
            .map(|value| (result, value))
            .ok_or_else(|| Error::Unsupported {
                op,
                dtype: result,
                detail: "complex triangular_solve needs a device with f64 shaders".into(),
            });
    }
    float_elem(op, tensors).map(|(result, elem)| (result, ValueType::Real(elem)))
}

/// Shared GLSL: element access through 64-bit addresses, in the compute type (complex
/// numbers as `vec2`/`dvec2` with `glsl_complex.glsl`'s arithmetic), and the workgroup size.
fn preamble(value: ValueType) -> String {
    let head = match value {
        ValueType::Real(Elem::BF16) => format!("{FLOAT_CONTROLS}{BF16_HELPERS}"),
        ValueType::Real(_) => FLOAT_CONTROLS.to_owned(),
        ValueType::Complex(complex) => complex_prelude(complex, "", ""),
    };
    let compute = match value {
        ValueType::Real(elem) => compute_type(elem),
        ValueType::Complex(complex) => complex_type(complex),
    };
    format!(
        "{head}
#define V {compute}
#define BYTES {bytes}ul
layout(buffer_reference, scalar, buffer_reference_align = {align}) coherent buffer Element {{ {storage} v; }};
V read_at(uint64_t base, uint64_t index) {{ return {loaded}; }}
void write_at(uint64_t base, uint64_t index, V result) {{ Element(base + index * BYTES).v = {stored}; }}

layout(local_size_x = {WORKGROUP_SIZE}) in;",
        bytes = value_storage_bytes(value),
        align = value_alignment(value),
        storage = value_storage_type(value),
        loaded = load_value(value, "Element(base + index * BYTES).v"),
        stored = store_value(value, "result"),
    )
}

/// The substitution kernel on `value`: real arithmetic, or Complex.multiply and
/// Complex.divide (`nx_cmul`, `nx_cdiv`) for complex values.
fn triangular_solve_shader(value: ValueType) -> String {
    let (multiply, divide) = match value {
        ValueType::Real(_) => ("((a) * (b))", "((a) / (b))"),
        ValueType::Complex(_) => ("nx_cmul(a, b)", "nx_cdiv(a, b)"),
    };
    format!(
        "{preamble}
#define NX_MULTIPLY(a, b) {multiply}
#define NX_DIVIDE(a, b) {divide}
layout(push_constant, scalar) uniform Push {{
    uint64_t a;
    uint64_t b;
    uint64_t x;
    uint n;
    uint columns;
    uint batches;
    uint lower;
    uint a_batch; uint a_row; uint a_column;
    uint b_batch; uint b_row; uint b_column;
    uint x_batch; uint x_row; uint x_column;
}} push;

void main() {{
    uint tasks = push.batches * push.columns;
    uint threads = gl_NumWorkGroups.x * {WORKGROUP_SIZE}u;
    for (uint task = gl_GlobalInvocationID.x; task < tasks; task += threads) {{
        uint batch = task / push.columns;
        uint column = task % push.columns;
        uint64_t a_base = uint64_t(batch) * push.a_batch;
        uint64_t b_base = uint64_t(batch) * push.b_batch + uint64_t(column) * push.b_column;
        uint64_t x_base = uint64_t(batch) * push.x_batch + uint64_t(column) * push.x_column;
        for (uint step = 0u; step < push.n; step++) {{
            uint row = (push.lower != 0u) ? step : push.n - 1u - step;
            V sum = read_at(push.b, b_base + uint64_t(row) * push.b_row);
            uint begin = (push.lower != 0u) ? 0u : row + 1u;
            uint end = (push.lower != 0u) ? row : push.n;
            for (uint j = begin; j < end; j++) {{
                V coefficient = read_at(push.a, a_base + uint64_t(row) * push.a_row + uint64_t(j) * push.a_column);
                sum -= NX_MULTIPLY(coefficient, read_at(push.x, x_base + uint64_t(j) * push.x_row));
            }}
            V diagonal = read_at(push.a, a_base + uint64_t(row) * push.a_row + uint64_t(row) * push.a_column);
            write_at(push.x, x_base + uint64_t(row) * push.x_row, NX_DIVIDE(sum, diagonal));
        }}
    }}
}}
",
        preamble = preamble(value)
    )
}

fn cholesky_shader(elem: Elem) -> String {
    format!(
        "{preamble}
layout(push_constant, scalar) uniform Push {{
    uint64_t a;
    uint64_t l;
    uint n;
    uint batches;
    uint a_batch; uint a_row; uint a_column;
}} push;

// L[i][k] of matrix `batch` (dense n x n output).
V l_at(uint64_t base, uint i, uint k) {{ return read_at(push.l, base + uint64_t(i) * push.n + k); }}

void main() {{
    for (uint batch = gl_WorkGroupID.x; batch < push.batches; batch += gl_NumWorkGroups.x) {{
        uint64_t a_base = uint64_t(batch) * push.a_batch;
        uint64_t l_base = uint64_t(batch) * uint64_t(push.n) * uint64_t(push.n);
        for (uint j = 0u; j < push.n; j++) {{
            if (gl_LocalInvocationID.x == 0u) {{
                V sum = read_at(push.a, a_base + uint64_t(j) * push.a_row + uint64_t(j) * push.a_column);
                for (uint k = 0u; k < j; k++) {{
                    V value = l_at(l_base, j, k);
                    sum -= value * value;
                }}
                write_at(push.l, l_base + uint64_t(j) * push.n + j, sqrt(sum));
            }}
            memoryBarrierBuffer();
            barrier();
            V diagonal = l_at(l_base, j, j);
            for (uint i = j + 1u + gl_LocalInvocationID.x; i < push.n; i += {WORKGROUP_SIZE}u) {{
                V sum = read_at(push.a, a_base + uint64_t(i) * push.a_row + uint64_t(j) * push.a_column);
                for (uint k = 0u; k < j; k++) {{
                    sum -= l_at(l_base, i, k) * l_at(l_base, j, k);
                }}
                write_at(push.l, l_base + uint64_t(i) * push.n + j, sum / diagonal);
                write_at(push.l, l_base + uint64_t(j) * push.n + i, V(0));
            }}
            memoryBarrierBuffer();
            barrier();
        }}
    }}
}}
",
        preamble = preamble(ValueType::Real(elem))
    )
}

fn lu_shader(elem: Elem) -> String {
    format!(
        "{preamble}
layout(buffer_reference, scalar, buffer_reference_align = 4) coherent buffer Index {{ uint v; }};
layout(push_constant, scalar) uniform Push {{
    uint64_t a;
    uint64_t w;
    uint64_t permutation;
    uint n;
    uint batches;
    uint a_batch; uint a_row; uint a_column;
}} push;
shared uint pivot_row;

// Working matrix element (i, j) and permutation entry i of the current matrix.
uint64_t w_index(uint64_t base, uint i, uint j) {{ return base + uint64_t(i) * push.n + j; }}
Index permutation_entry(uint batch, uint i) {{
    return Index(push.permutation + (uint64_t(batch) * (push.n + 1u) + i) * 4ul);
}}

void main() {{
    uint invocation = gl_LocalInvocationID.x;
    uint n = push.n;
    for (uint batch = gl_WorkGroupID.x; batch < push.batches; batch += gl_NumWorkGroups.x) {{
        uint64_t a_base = uint64_t(batch) * push.a_batch;
        uint64_t base = uint64_t(batch) * uint64_t(n) * uint64_t(n);
        for (uint index = invocation; index < n * n; index += {WORKGROUP_SIZE}u) {{
            uint i = index / n;
            uint j = index % n;
            write_at(push.w, w_index(base, i, j), read_at(push.a, a_base + uint64_t(i) * push.a_row + uint64_t(j) * push.a_column));
        }}
        for (uint i = invocation; i < n; i += {WORKGROUP_SIZE}u) {{
            permutation_entry(batch, i).v = i;
        }}
        if (invocation == 0u) {{
            permutation_entry(batch, n).v = 0u;
        }}
        memoryBarrierBuffer();
        barrier();
        for (uint k = 0u; k < n; k++) {{
            if (invocation == 0u) {{
                uint best = k;
                V best_magnitude = abs(read_at(push.w, w_index(base, k, k)));
                for (uint i = k + 1u; i < n; i++) {{
                    V magnitude = abs(read_at(push.w, w_index(base, i, k)));
                    if (magnitude > best_magnitude) {{
                        best = i;
                        best_magnitude = magnitude;
                    }}
                }}
                pivot_row = best;
                if (best != k) {{
                    uint kept = permutation_entry(batch, k).v;
                    permutation_entry(batch, k).v = permutation_entry(batch, best).v;
                    permutation_entry(batch, best).v = kept;
                    permutation_entry(batch, n).v += 1u;
                }}
            }}
            memoryBarrierShared();
            memoryBarrierBuffer();
            barrier();
            uint pivot = pivot_row;
            if (pivot != k) {{
                for (uint j = invocation; j < n; j += {WORKGROUP_SIZE}u) {{
                    V kept = read_at(push.w, w_index(base, k, j));
                    write_at(push.w, w_index(base, k, j), read_at(push.w, w_index(base, pivot, j)));
                    write_at(push.w, w_index(base, pivot, j), kept);
                }}
            }}
            memoryBarrierBuffer();
            barrier();
            V diagonal = read_at(push.w, w_index(base, k, k));
            for (uint i = k + 1u + invocation; i < n; i += {WORKGROUP_SIZE}u) {{
                write_at(push.w, w_index(base, i, k), read_at(push.w, w_index(base, i, k)) / diagonal);
            }}
            memoryBarrierBuffer();
            barrier();
            uint rest = n - k - 1u;
            for (uint index = invocation; index < rest * rest; index += {WORKGROUP_SIZE}u) {{
                uint i = k + 1u + index / rest;
                uint j = k + 1u + index % rest;
                V updated = read_at(push.w, w_index(base, i, j))
                    - read_at(push.w, w_index(base, i, k)) * read_at(push.w, w_index(base, k, j));
                write_at(push.w, w_index(base, i, j), updated);
            }}
            memoryBarrierBuffer();
            barrier();
        }}
    }}
}}
",
        preamble = preamble(ValueType::Real(elem))
    )
}

/// Unpacks the working matrix: `mode` 0 writes P, L and U (one invocation per element),
/// 1 writes the determinant (one invocation per matrix).
fn lu_unpack_shader(elem: Elem) -> String {
    format!(
        "{preamble}
layout(buffer_reference, scalar, buffer_reference_align = 4) readonly buffer Index {{ uint v; }};
layout(buffer_reference, scalar, buffer_reference_align = 8) writeonly buffer Index64 {{ int64_t v; }};
layout(push_constant, scalar) uniform Push {{
    uint64_t w;
    uint64_t permutation;
    uint64_t p;
    uint64_t l;
    uint64_t u;
    uint n;
    uint batches;
    uint mode;
}} push;

void main() {{
    uint n = push.n;
    uint threads = gl_NumWorkGroups.x * {WORKGROUP_SIZE}u;
    if (push.mode == 1u) {{
        for (uint batch = gl_GlobalInvocationID.x; batch < push.batches; batch += threads) {{
            uint64_t base = uint64_t(batch) * uint64_t(n) * uint64_t(n);
            V product = V(1);
            for (uint i = 0u; i < n; i++) {{
                product *= read_at(push.w, base + uint64_t(i) * n + i);
            }}
            uint swaps = Index(push.permutation + (uint64_t(batch) * (n + 1u) + n) * 4ul).v;
            write_at(push.l, uint64_t(batch), ((swaps & 1u) != 0u) ? -product : product);
        }}
        return;
    }}
    uint count = push.batches * n * n;
    for (uint index = gl_GlobalInvocationID.x; index < count; index += threads) {{
        uint batch = index / (n * n);
        uint i = (index / n) % n;
        uint j = index % n;
        V value = read_at(push.w, uint64_t(index));
        write_at(push.l, uint64_t(index), (i > j) ? value : ((i == j) ? V(1) : V(0)));
        write_at(push.u, uint64_t(index), (i <= j) ? value : V(0));
        uint source = Index(push.permutation + (uint64_t(batch) * (n + 1u) + j) * 4ul).v;
        Index64(push.p + uint64_t(index) * 8ul).v = (source == i) ? 1l : 0l;
    }}
}}
",
        preamble = preamble(ValueType::Real(elem))
    )
}

/// The packed factorisation of `a` ([..., n, n]): the working matrix (L below the diagonal,
/// U on and above it) and the row permutation plus swap count ([batches, n + 1], u32).
fn lu_packed(op: &'static str, a: &Tensor) -> Result<(Tensor, Tensor, Elem, usize, usize)> {
    let (result, elem) = float_elem(op, &[a])?;
    let n = square_order(op, a, MAX_ORDER)?;
    let a = ops::as_type(a, result)?;
    let (a_view, batches, a_strides) = matrix_view(&a)?;
    let device = a.device();
    let working = Tensor::empty(device, result, &[batches, n, n])?;
    let permutation = Tensor::empty(device, nxvk_core::DType::U32, &[batches, n + 1])?;
    if batches * n == 0 {
        return Ok((working, permutation, elem, batches, n));
    }
    Launch {
        op,
        kernel_name: format!("lu_{}", elem.name()),
        shader: lu_shader(elem),
        addressed: &[&a_view, &working, &permutation],
        words: &[n, batches, a_strides[0], a_strides[1], a_strides[2]],
        reads: &[&a_view],
        outputs: &[],
        scratch: &[&working, &permutation],
        workgroups: workgroup_per_matrix(batches),
    }
    .dispatch()?;
    Ok((working, permutation, elem, batches, n))
}

/// Runs the unpacking kernel in `mode` (0: P, L, U; 1: determinant into `l`).
fn lu_unpack(
    op: &'static str,
    elem: Elem,
    packed: (&Tensor, &Tensor),
    outputs: [&Tensor; 3],
    batches: usize,
    n: usize,
    mode: u32,
) -> Result<()> {
    let tasks = if mode == 0 { batches * n * n } else { batches };
    Launch {
        op,
        kernel_name: format!("lu_unpack_{}", elem.name()),
        shader: lu_unpack_shader(elem),
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
    let (working, permutation, elem, batches, n) = lu_packed(OP, a)?;
    let device = a.device();
    let p = Tensor::empty(device, nxvk_core::DType::S64, a.shape())?;
    let l = Tensor::empty(device, working.dtype(), a.shape())?;
    let u = Tensor::empty(device, working.dtype(), a.shape())?;
    if batches * n > 0 {
        lu_unpack(
            OP,
            elem,
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
    let (working, permutation, elem, batches, n) = lu_packed(OP, a)?;
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
        elem,
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
    let (result, _) = float_elem(OP, &[a, b])?;
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
    let permuted = ops::as_type(
        &crate::dot::dot(&p, &[rank - 2], &batch_axes, &b, &[rank - 2], &batch_axes)?,
        result,
    )?;
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

fn qr_shader(elem: Elem) -> String {
    format!(
        "{preamble}
layout(push_constant, scalar) uniform Push {{
    uint64_t a;
    uint64_t q;
    uint64_t r;
    uint64_t v;
    uint rows;
    uint columns;
    uint batches;
    uint a_batch; uint a_row; uint a_column;
}} push;
shared V scale;

void main() {{
    uint invocation = gl_LocalInvocationID.x;
    uint m = push.rows;
    uint n = push.columns;
    for (uint batch = gl_WorkGroupID.x; batch < push.batches; batch += gl_NumWorkGroups.x) {{
        uint64_t a_base = uint64_t(batch) * push.a_batch;
        uint64_t q_base = uint64_t(batch) * uint64_t(m) * uint64_t(m);
        uint64_t r_base = uint64_t(batch) * uint64_t(m) * uint64_t(n);
        uint64_t v_base = uint64_t(batch) * uint64_t(m);
        for (uint index = invocation; index < m * n; index += {WORKGROUP_SIZE}u) {{
            uint i = index / n;
            uint j = index % n;
            write_at(push.r, r_base + index, read_at(push.a, a_base + uint64_t(i) * push.a_row + uint64_t(j) * push.a_column));
        }}
        for (uint index = invocation; index < m * m; index += {WORKGROUP_SIZE}u) {{
            write_at(push.q, q_base + index, (index / m == index % m) ? V(1) : V(0));
        }}
        memoryBarrierBuffer();
        barrier();
        uint steps = min(m, n);
        for (uint j = 0u; j < steps; j++) {{
            if (invocation == 0u) {{
                V norm2 = V(0);
                for (uint i = j; i < m; i++) {{
                    V x = read_at(push.r, r_base + uint64_t(i) * n + j);
                    norm2 += x * x;
                }}
                V x0 = read_at(push.r, r_base + uint64_t(j) * n + j);
                V alpha = (x0 < V(0)) ? sqrt(norm2) : -sqrt(norm2);
                V head = x0 - alpha;
                // |v|^2 = |x|^2 - x0^2 + (x0 - alpha)^2.
                V v_norm2 = norm2 - x0 * x0 + head * head;
                write_at(push.v, v_base + j, head);
                for (uint i = j + 1u; i < m; i++) {{
                    write_at(push.v, v_base + i, read_at(push.r, r_base + uint64_t(i) * n + j));
                }}
                scale = (v_norm2 > V(0)) ? V(2) / v_norm2 : V(0);
            }}
            memoryBarrierShared();
            memoryBarrierBuffer();
            barrier();
            V s = scale;
            // R = H R, column by column.
            for (uint c = j + invocation; c < n; c += {WORKGROUP_SIZE}u) {{
                V dot = V(0);
                for (uint i = j; i < m; i++) {{
                    dot += read_at(push.v, v_base + i) * read_at(push.r, r_base + uint64_t(i) * n + c);
                }}
                for (uint i = j; i < m; i++) {{
                    uint64_t at = r_base + uint64_t(i) * n + c;
                    write_at(push.r, at, read_at(push.r, at) - s * dot * read_at(push.v, v_base + i));
                }}
            }}
            // Q = Q H, row by row.
            for (uint row = invocation; row < m; row += {WORKGROUP_SIZE}u) {{
                V dot = V(0);
                for (uint i = j; i < m; i++) {{
                    dot += read_at(push.q, q_base + uint64_t(row) * m + i) * read_at(push.v, v_base + i);
                }}
                for (uint i = j; i < m; i++) {{
                    uint64_t at = q_base + uint64_t(row) * m + i;
                    write_at(push.q, at, read_at(push.q, at) - s * dot * read_at(push.v, v_base + i));
                }}
            }}
            memoryBarrierBuffer();
            barrier();
        }}
        // Below the diagonal R is zero by construction; write exact zeros.
        for (uint index = invocation; index < m * n; index += {WORKGROUP_SIZE}u) {{
            if (index / n > index % n) {{
                write_at(push.r, r_base + index, V(0));
            }}
        }}
    }}
}}
",
        preamble = preamble(ValueType::Real(elem))
    )
}

/// Nx's `qr(a, mode)`: `(q, r)` with `a = q . r`, `q` with orthonormal columns and `r` upper
/// triangular, for `a` of shape [..., m, n]. `complete`: q is [..., m, m] and r [..., m, n];
/// else (Nx's `:reduced`) q is [..., m, k] and r [..., k, n] with k = min(m, n).
pub fn qr(a: &Tensor, complete: bool) -> Result<(Tensor, Tensor)> {
    const OP: &str = "qr";
    let (result, elem) = float_elem(OP, &[a])?;
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
            kernel_name: format!("{OP}_{}", elem.name()),
            shader: qr_shader(elem),
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

/// Most Jacobi sweeps eigh runs (quadratic convergence needs well under ten in practice).
pub const MAX_SWEEPS: u32 = 30;

/// The largest matrix order eigh takes (its sort keeps one index per row in shared memory).
pub const MAX_EIGH_ORDER: usize = 256;

fn eigh_shader(working: Elem) -> String {
    let epsilon = if working == Elem::F64 {
        "V(1.1102230246251565e-16lf)"
    } else {
        "V(5.9604645e-8)"
    };
    format!(
        "{preamble}
layout(push_constant, scalar) uniform Push {{
    uint64_t a;
    uint64_t w;
    uint64_t v;
    uint64_t values;
    uint64_t vectors;
    uint n;
    uint batches;
    uint a_batch; uint a_row; uint a_column;
}} push;
shared V rotation_c;
shared V rotation_s;
shared uint converged;
shared uint order[{MAX_EIGH_ORDER}];

void main() {{
    uint invocation = gl_LocalInvocationID.x;
    uint n = push.n;
    for (uint batch = gl_WorkGroupID.x; batch < push.batches; batch += gl_NumWorkGroups.x) {{
        uint64_t a_base = uint64_t(batch) * push.a_batch;
        uint64_t base = uint64_t(batch) * uint64_t(n) * uint64_t(n);
        for (uint index = invocation; index < n * n; index += {WORKGROUP_SIZE}u) {{
            uint i = index / n;
            uint j = index % n;
            uint row = max(i, j);
            uint column = min(i, j);
            write_at(push.w, base + index, read_at(push.a, a_base + uint64_t(row) * push.a_row + uint64_t(column) * push.a_column));
            write_at(push.v, base + index, (i == j) ? V(1) : V(0));
        }}
        memoryBarrierBuffer();
        barrier();
        for (uint sweep = 0u; sweep < {MAX_SWEEPS}u; sweep++) {{
            if (invocation == 0u) {{
                V off = V(0);
                V total = V(0);
                for (uint index = 0u; index < n * n; index++) {{
                    V x = read_at(push.w, base + index);
                    total += x * x;
                    if (index / n != index % n) off += x * x;
                }}
                converged = (off <= {epsilon} * {epsilon} * total) ? 1u : 0u;
            }}
            memoryBarrierShared();
            barrier();
            if (converged != 0u) break;
            for (uint p = 0u; p + 1u < n; p++) {{
                for (uint q = p + 1u; q < n; q++) {{
                    if (invocation == 0u) {{
                        V apq = read_at(push.w, base + uint64_t(p) * n + q);
                        V c = V(1);
                        V s = V(0);
                        if (apq != V(0)) {{
                            V theta = (read_at(push.w, base + uint64_t(q) * n + q) - read_at(push.w, base + uint64_t(p) * n + p)) / (V(2) * apq);
                            V t = V(1) / (abs(theta) + sqrt(theta * theta + V(1)));
                            if (theta < V(0)) t = -t;
                            c = V(1) / sqrt(t * t + V(1));
                            s = t * c;
                        }}
                        rotation_c = c;
                        rotation_s = s;
                    }}
                    memoryBarrierShared();
                    barrier();
                    V c = rotation_c;
                    V s = rotation_s;
                    // Columns: W = W J, V = V J.
                    for (uint k = invocation; k < n; k += {WORKGROUP_SIZE}u) {{
                        uint64_t kp = base + uint64_t(k) * n + p;
                        uint64_t kq = base + uint64_t(k) * n + q;
                        V wp = read_at(push.w, kp);
                        V wq = read_at(push.w, kq);
                        write_at(push.w, kp, c * wp - s * wq);
                        write_at(push.w, kq, s * wp + c * wq);
                        V vp = read_at(push.v, kp);
                        V vq = read_at(push.v, kq);
                        write_at(push.v, kp, c * vp - s * vq);
                        write_at(push.v, kq, s * vp + c * vq);
                    }}
                    memoryBarrierBuffer();
                    barrier();
                    // Rows: W = J^T W.
                    for (uint k = invocation; k < n; k += {WORKGROUP_SIZE}u) {{
                        uint64_t pk = base + uint64_t(p) * n + k;
                        uint64_t qk = base + uint64_t(q) * n + k;
                        V wp = read_at(push.w, pk);
                        V wq = read_at(push.w, qk);
                        write_at(push.w, pk, c * wp - s * wq);
                        write_at(push.w, qk, s * wp + c * wq);
                    }}
                    memoryBarrierBuffer();
                    barrier();
                }}
            }}
        }}
        if (invocation == 0u) {{
            // Selection order of the diagonal, ascending (stable on ties).
            for (uint i = 0u; i < n; i++) order[i] = i;
            for (uint i = 0u; i < n; i++) {{
                uint best = i;
                for (uint j = i + 1u; j < n; j++) {{
                    V candidate = read_at(push.w, base + uint64_t(order[j]) * n + order[j]);
                    V current = read_at(push.w, base + uint64_t(order[best]) * n + order[best]);
                    if (candidate < current) best = j;
                }}
                uint kept = order[i];
                order[i] = order[best];
                order[best] = kept;
            }}
        }}
        memoryBarrierShared();
        barrier();
        for (uint index = invocation; index < n * n; index += {WORKGROUP_SIZE}u) {{
            uint row = index / n;
            uint column = index % n;
            write_at(push.vectors, base + index, read_at(push.v, base + uint64_t(row) * n + order[column]));
        }}
        for (uint i = invocation; i < n; i += {WORKGROUP_SIZE}u) {{
            write_at(push.values, uint64_t(batch) * n + i, read_at(push.w, base + uint64_t(order[i]) * n + order[i]));
        }}
        memoryBarrierBuffer();
        barrier();
    }}
}}
",
        preamble = preamble(ValueType::Real(working))
    )
}

/// Nx's `eigh(a)`: `(eigenvalues, eigenvectors)` of the symmetric matrices `a` ([..., n, n],
/// only the lower triangle read), eigenvalues ascending, eigenvector `i` in column `i`.
pub fn eigh(a: &Tensor) -> Result<(Tensor, Tensor)> {
    const OP: &str = "eigh";
    let (result, elem) = float_elem(OP, &[a])?;
    let rank = a.shape().len();
    let n = square_order(OP, a, MAX_EIGH_ORDER)?;
    // Rotations accumulate rounding: f16 and bf16 work in f32.
    let working_elem = if elem == Elem::F64 {
        Elem::F64
    } else {
        Elem::F32
    };
    let working_dtype = crate::catalog::dtype_of(working_elem);
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
            kernel_name: format!("{OP}_{}", working_elem.name()),
            shader: eigh_shader(working_elem),
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
    let (result, value) = solve_value(OP, &[a, b])?;
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
    let (result, elem) = float_elem(OP, &[a])?;
    let n = square_order(OP, a, MAX_ORDER)?;
    let a = ops::as_type(a, result)?;
    let output = Tensor::empty(a.device(), result, a.shape())?;
    if output.n_elements() == 0 {
        return Ok(output);
    }
    let (a_view, batches, a_strides) = matrix_view(&a)?;
    Launch {
        op: OP,
        kernel_name: format!("{OP}_{}", elem.name()),
        shader: cholesky_shader(elem),
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

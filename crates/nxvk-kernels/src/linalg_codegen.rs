//! GLSL of the linear-algebra kernels (`linalg.rs` runs them), one template per kernel for
//! every value type: the real floats (f16 and bf16 computed in f32) and c64/c128.
//!
//! The templates are written once against a small arithmetic vocabulary (`NX_MUL`, `NX_DIV`,
//! `NX_CONJ`, `NX_ABS2`, ...) that [`preamble`] defines per value type: plain operators on
//! real values, `glsl_complex.glsl`'s Complex.multiply/Complex.divide/Complex.sqrt/Complex.abs
//! on complex ones, whose components are the component type (f32 for c64, f64 for c128: a
//! c128 kernel never computes in f32). On real values the vocabulary reduces to exactly the
//! operators the real kernels used before they took complex values (conjugation is the
//! identity, a Jacobi pivot's phase is 1), so the real results did not move. The rejected
//! alternative, separate complex kernels, would have been a second copy of each algorithm.

use crate::codegen::{
    BF16_HELPERS, FLOAT_CONTROLS, complex_prelude, complex_type, compute_type, load_value,
    store_value, value_alignment, value_storage_bytes, value_storage_type,
};
use crate::op_table::{ComplexElem, Elem, ValueType};

/// Threads per workgroup of every linear-algebra kernel.
pub(crate) const WORKGROUP_SIZE: u32 = 64;

/// The largest matrix order eigh takes (its sort keeps one index per row in shared memory).
pub const MAX_EIGH_ORDER: usize = 256;

/// Most Jacobi sweeps eigh runs (quadratic convergence needs well under ten in practice).
pub const MAX_SWEEPS: u32 = 30;

/// The arithmetic vocabulary on real values (`V` a float compute type; `REAL` is `V`).
const REAL_ARITHMETIC: &str = "
#define NX_COMPLEX 0
#define REAL V
#define NX_ZERO V(0)
#define NX_ONE V(1)
#define NX_FROM_REAL(x) (x)
#define NX_RE(a) (a)
#define NX_CONJ(a) (a)
#define NX_MUL(a, b) ((a) * (b))
#define NX_DIV(a, b) ((a) / (b))
#define NX_ABS2(a) ((a) * (a))
#define NX_MAGNITUDE(a) abs(a)
#define NX_SQRT(a) sqrt(a)
#define NX_UNIT(a) (((a) < V(0)) ? V(-1) : V(1))
#define NX_PIVOT(a) (a)
#define NX_PIVOT_PHASE(a) V(1)
#define NX_TURN(phase, a) (a)
#define NX_TURN_BACK(phase, a) (a)
";

/// The arithmetic vocabulary on complex values (`V` is `C`, `vec2`/`dvec2`; `REAL` the
/// component type `T`): Complex's multiply, divide, sqrt and abs, as the elementwise kernels
/// compute them.
const COMPLEX_ARITHMETIC: &str = "
#define NX_COMPLEX 1
#define REAL T
#define NX_ZERO V(0)
#define NX_ONE V(1, 0)
#define NX_FROM_REAL(x) V((x), 0)
#define NX_RE(a) (a).x
#define NX_CONJ(a) V((a).x, -(a).y)
#define NX_MUL(a, b) nx_cmul(a, b)
#define NX_DIV(a, b) nx_cdiv(a, b)
#define NX_ABS2(a) ((a).x * (a).x + (a).y * (a).y)
#define NX_MAGNITUDE(a) nx_cabs(a)
#define NX_SQRT(a) nx_csqrt(a)
#define NX_UNIT(a) (((a) == V(0)) ? V(1, 0) : (a) / nx_cabs(a))
#define NX_PIVOT(a) nx_cabs(a)
#define NX_PIVOT_PHASE(a) (((a) == V(0)) ? V(1, 0) : NX_CONJ(a) / nx_cabs(a))
#define NX_TURN(phase, a) nx_cmul(phase, a)
#define NX_TURN_BACK(phase, a) nx_cmul(NX_CONJ(phase), a)
#define NX_TO_REAL_AXIS(a) (((a) == V(0)) ? V(1, 0) : (((a).x < T(0)) ? -NX_CONJ(a) : NX_CONJ(a)) / nx_cabs(a))
";

/// Shared GLSL: element access through 64-bit addresses, in the compute type `V` (complex
/// numbers as `vec2`/`dvec2`), the arithmetic vocabulary, and the workgroup size.
///
/// The vocabulary: `REAL` the real scalar type (moduli, norms, rotation cosines and sines);
/// `NX_ZERO`/`NX_ONE`; `NX_FROM_REAL(x)` (x + 0i); `NX_RE(a)`; `NX_CONJ(a)`; `NX_MUL(a, b)`,
/// `NX_DIV(a, b)`; `NX_ABS2(a)` (|a|^2, `REAL`), `NX_MAGNITUDE(a)` (|a|, the pivot order of
/// lu); `NX_SQRT(a)`; `NX_UNIT(a)`, a's direction (its sign on real values, +1 at 0; a / |a|
/// on complex ones); and for Jacobi rotations `NX_PIVOT(a)` (the real number the rotation
/// annihilates: a itself on real values, |a| on complex ones), `NX_PIVOT_PHASE(a)` (conj(a) /
/// |a|, 1 on real values) and `NX_TURN`/`NX_TURN_BACK(phase, a)` (phase a and conj(phase) a).
/// `NX_COMPLEX` is 1 on complex values, and there `NX_TO_REAL_AXIS(a)` is the unit d with d a
/// real, of a's real part's sign (+ at 0).
pub(crate) fn preamble(value: ValueType) -> String {
    let head = match value {
        ValueType::Real(Elem::BF16) => format!("{FLOAT_CONTROLS}{BF16_HELPERS}"),
        ValueType::Real(_) => FLOAT_CONTROLS.to_owned(),
        ValueType::Complex(complex) => complex_prelude(complex, "", ""),
    };
    let compute = match value {
        ValueType::Real(elem) => compute_type(elem),
        ValueType::Complex(complex) => complex_type(complex),
    };
    let arithmetic = match value {
        ValueType::Real(_) => REAL_ARITHMETIC,
        ValueType::Complex(_) => COMPLEX_ARITHMETIC,
    };
    format!(
        "{head}
#define V {compute}
{arithmetic}
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

/// The substitution kernel: one invocation per (matrix, right-hand column).
pub(crate) fn triangular_solve_shader(value: ValueType) -> String {
    format!(
        "{preamble}
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
                sum -= NX_MUL(coefficient, read_at(push.x, x_base + uint64_t(j) * push.x_row));
            }}
            V diagonal = read_at(push.a, a_base + uint64_t(row) * push.a_row + uint64_t(row) * push.a_column);
            write_at(push.x, x_base + uint64_t(row) * push.x_row, NX_DIV(sum, diagonal));
        }}
    }}
}}
",
        preamble = preamble(value)
    )
}

/// Left-looking Cholesky, one workgroup per matrix: L[j][j] = sqrt(A[j][j] - sum |L[j][k]|^2),
/// then L[i][j] = (A[i][j] - sum L[i][k] conj(L[j][k])) / L[j][j] for the rows below in
/// parallel (A = L L^H; Nx's formulas, whose square root is Complex.sqrt on complex values).
pub(crate) fn cholesky_shader(value: ValueType) -> String {
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
                    sum -= NX_FROM_REAL(NX_ABS2(l_at(l_base, j, k)));
                }}
                write_at(push.l, l_base + uint64_t(j) * push.n + j, NX_SQRT(sum));
            }}
            memoryBarrierBuffer();
            barrier();
            V diagonal = l_at(l_base, j, j);
            for (uint i = j + 1u + gl_LocalInvocationID.x; i < push.n; i += {WORKGROUP_SIZE}u) {{
                V sum = read_at(push.a, a_base + uint64_t(i) * push.a_row + uint64_t(j) * push.a_column);
                for (uint k = 0u; k < j; k++) {{
                    sum -= NX_MUL(l_at(l_base, i, k), NX_CONJ(l_at(l_base, j, k)));
                }}
                write_at(push.l, l_base + uint64_t(i) * push.n + j, NX_DIV(sum, diagonal));
                write_at(push.l, l_base + uint64_t(j) * push.n + i, NX_ZERO);
            }}
            memoryBarrierBuffer();
            barrier();
        }}
    }}
}}
",
        preamble = preamble(value)
    )
}

/// Gaussian elimination with partial pivoting (the largest modulus below the diagonal, the
/// first on ties), one workgroup per matrix, in a working copy: L below the diagonal, U on and
/// above it, plus the row permutation and the swap count.
pub(crate) fn lu_shader(value: ValueType) -> String {
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
                REAL best_magnitude = NX_MAGNITUDE(read_at(push.w, w_index(base, k, k)));
                for (uint i = k + 1u; i < n; i++) {{
                    REAL magnitude = NX_MAGNITUDE(read_at(push.w, w_index(base, i, k)));
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
                write_at(push.w, w_index(base, i, k), NX_DIV(read_at(push.w, w_index(base, i, k)), diagonal));
            }}
            memoryBarrierBuffer();
            barrier();
            uint rest = n - k - 1u;
            for (uint index = invocation; index < rest * rest; index += {WORKGROUP_SIZE}u) {{
                uint i = k + 1u + index / rest;
                uint j = k + 1u + index % rest;
                V updated = read_at(push.w, w_index(base, i, j))
                    - NX_MUL(read_at(push.w, w_index(base, i, k)), read_at(push.w, w_index(base, k, j)));
                write_at(push.w, w_index(base, i, j), updated);
            }}
            memoryBarrierBuffer();
            barrier();
        }}
    }}
}}
",
        preamble = preamble(value)
    )
}

/// Unpacks the working matrix: `mode` 0 writes P, L and U (one invocation per element),
/// 1 writes the determinant (one invocation per matrix).
pub(crate) fn lu_unpack_shader(value: ValueType) -> String {
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
            V product = NX_ONE;
            for (uint i = 0u; i < n; i++) {{
                product = NX_MUL(product, read_at(push.w, base + uint64_t(i) * n + i));
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
        write_at(push.l, uint64_t(index), (i > j) ? value : ((i == j) ? NX_ONE : NX_ZERO));
        write_at(push.u, uint64_t(index), (i <= j) ? value : NX_ZERO);
        uint source = Index(push.permutation + (uint64_t(batch) * (n + 1u) + j) * 4ul).v;
        Index64(push.p + uint64_t(index) * 8ul).v = (source == i) ? 1l : 0l;
    }}
}}
",
        preamble = preamble(value)
    )
}

/// Householder QR, one workgroup per matrix: reflections H = I - 2 v v^H / |v|^2 with
/// v = x - alpha e_j and alpha = -unit(x_j) |x| (LAPACK's sign on real values, -e^(i arg x_j)
/// |x| on complex ones, as Nx's complex reflector), applied to a working copy of A (columns
/// in parallel), accumulated into Q = H1 H2 ... (rows in parallel). On complex values each
/// row j of R is then turned by the unit d_j that makes R_jj real, of the sign of its real
/// part, and column j of Q by conj(d_j): R's diagonal is LAPACK's (zgeqrf's beta =
/// -sign(re x_j) |x|), real as the QR gradient's derivation assumes.
pub(crate) fn qr_shader(value: ValueType) -> String {
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
shared REAL scale;

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
            write_at(push.q, q_base + index, (index / m == index % m) ? NX_ONE : NX_ZERO);
        }}
        memoryBarrierBuffer();
        barrier();
        uint steps = min(m, n);
        for (uint j = 0u; j < steps; j++) {{
            if (invocation == 0u) {{
                REAL norm2 = REAL(0);
                for (uint i = j; i < m; i++) {{
                    norm2 += NX_ABS2(read_at(push.r, r_base + uint64_t(i) * n + j));
                }}
                V x0 = read_at(push.r, r_base + uint64_t(j) * n + j);
                V alpha = -NX_UNIT(x0) * sqrt(norm2);
                V head = x0 - alpha;
                // |v|^2 = |x|^2 - |x0|^2 + |x0 - alpha|^2.
                REAL v_norm2 = norm2 - NX_ABS2(x0) + NX_ABS2(head);
                write_at(push.v, v_base + j, head);
                for (uint i = j + 1u; i < m; i++) {{
                    write_at(push.v, v_base + i, read_at(push.r, r_base + uint64_t(i) * n + j));
                }}
                scale = (v_norm2 > REAL(0)) ? REAL(2) / v_norm2 : REAL(0);
            }}
            memoryBarrierShared();
            memoryBarrierBuffer();
            barrier();
            REAL s = scale;
            // R = H R, column by column.
            for (uint c = j + invocation; c < n; c += {WORKGROUP_SIZE}u) {{
                V dot = NX_ZERO;
                for (uint i = j; i < m; i++) {{
                    dot += NX_MUL(NX_CONJ(read_at(push.v, v_base + i)), read_at(push.r, r_base + uint64_t(i) * n + c));
                }}
                for (uint i = j; i < m; i++) {{
                    uint64_t at = r_base + uint64_t(i) * n + c;
                    write_at(push.r, at, read_at(push.r, at) - NX_MUL(s * dot, read_at(push.v, v_base + i)));
                }}
            }}
            // Q = Q H, row by row.
            for (uint row = invocation; row < m; row += {WORKGROUP_SIZE}u) {{
                V dot = NX_ZERO;
                for (uint i = j; i < m; i++) {{
                    dot += NX_MUL(read_at(push.q, q_base + uint64_t(row) * m + i), read_at(push.v, v_base + i));
                }}
                for (uint i = j; i < m; i++) {{
                    uint64_t at = q_base + uint64_t(row) * m + i;
                    write_at(push.q, at, read_at(push.q, at) - NX_MUL(s * dot, NX_CONJ(read_at(push.v, v_base + i))));
                }}
            }}
            memoryBarrierBuffer();
            barrier();
        }}
        // Below the diagonal R is zero by construction; write exact zeros.
        for (uint index = invocation; index < m * n; index += {WORKGROUP_SIZE}u) {{
            if (index / n > index % n) {{
                write_at(push.r, r_base + index, NX_ZERO);
            }}
        }}
#if NX_COMPLEX
        // Q D^H and D R with D = diag(d_j): R's diagonal onto the real axis.
        for (uint j = 0u; j < steps; j++) {{
            V turn = NX_TO_REAL_AXIS(read_at(push.r, r_base + uint64_t(j) * n + j));
            barrier();
            for (uint c = j + invocation; c < n; c += {WORKGROUP_SIZE}u) {{
                uint64_t at = r_base + uint64_t(j) * n + c;
                write_at(push.r, at, NX_MUL(turn, read_at(push.r, at)));
            }}
            for (uint row = invocation; row < m; row += {WORKGROUP_SIZE}u) {{
                uint64_t at = q_base + uint64_t(row) * m + j;
                write_at(push.q, at, NX_MUL(read_at(push.q, at), NX_CONJ(turn)));
            }}
        }}
#endif
    }}
}}
",
        preamble = preamble(value)
    )
}

/// Cyclic Jacobi sweeps, one workgroup per matrix, on `working` values (f32, f64, c64 or
/// c128). A complex pivot w_pq = |w_pq| e^(i phi) is first turned real by the diagonal unitary
/// D = diag(1 at p, e^(-i phi) at q), then annihilated by the real rotation R of the real
/// algorithm: J = D R, W <- J^H W J, V <- V J. On real values the phase is 1 and J = R.
pub(crate) fn eigh_shader(working: ValueType) -> String {
    let epsilon = match working {
        ValueType::Real(Elem::F64) | ValueType::Complex(ComplexElem::C128) => {
            "REAL(1.1102230246251565e-16lf)"
        }
        _ => "REAL(5.9604645e-8)",
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
shared REAL rotation_c;
shared REAL rotation_s;
shared V rotation_phase;
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
            // The lower triangle mirrored as a Hermitian matrix (a real diagonal).
            V x = read_at(push.a, a_base + uint64_t(row) * push.a_row + uint64_t(column) * push.a_column);
            x = (i < j) ? NX_CONJ(x) : ((i == j) ? NX_FROM_REAL(NX_RE(x)) : x);
            write_at(push.w, base + index, x);
            write_at(push.v, base + index, (i == j) ? NX_ONE : NX_ZERO);
        }}
        memoryBarrierBuffer();
        barrier();
        for (uint sweep = 0u; sweep < {MAX_SWEEPS}u; sweep++) {{
            if (invocation == 0u) {{
                // Only the upper triangle counts as off-diagonal: the rotations annihilate those
                // pivots, and rounding leaves the lower triangle a few ulps from their
                // conjugates, a residue no pivot removes (it kept a c128 matrix sweeping to the
                // limit with pivots near 1e-160, and its eigenvectors lost orthogonality).
                REAL off = REAL(0);
                REAL total = REAL(0);
                for (uint index = 0u; index < n * n; index++) {{
                    REAL square = NX_ABS2(read_at(push.w, base + index));
                    total += square;
                    if (index / n < index % n) off += REAL(2) * square;
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
                        REAL c = REAL(1);
                        REAL s = REAL(0);
                        V phase = NX_ONE;
                        if (apq != NX_ZERO) {{
                            REAL theta = (NX_RE(read_at(push.w, base + uint64_t(q) * n + q)) - NX_RE(read_at(push.w, base + uint64_t(p) * n + p))) / (REAL(2) * NX_PIVOT(apq));
                            REAL t = REAL(1) / (abs(theta) + sqrt(theta * theta + REAL(1)));
                            if (theta < REAL(0)) t = -t;
                            c = REAL(1) / sqrt(t * t + REAL(1));
                            s = t * c;
                            phase = NX_PIVOT_PHASE(apq);
                        }}
                        rotation_c = c;
                        rotation_s = s;
                        rotation_phase = phase;
                    }}
                    memoryBarrierShared();
                    barrier();
                    REAL c = rotation_c;
                    REAL s = rotation_s;
                    V phase = rotation_phase;
                    // Columns: W = W J, V = V J.
                    for (uint k = invocation; k < n; k += {WORKGROUP_SIZE}u) {{
                        uint64_t kp = base + uint64_t(k) * n + p;
                        uint64_t kq = base + uint64_t(k) * n + q;
                        V wp = read_at(push.w, kp);
                        V wq = NX_TURN(phase, read_at(push.w, kq));
                        write_at(push.w, kp, c * wp - s * wq);
                        write_at(push.w, kq, s * wp + c * wq);
                        V vp = read_at(push.v, kp);
                        V vq = NX_TURN(phase, read_at(push.v, kq));
                        write_at(push.v, kp, c * vp - s * vq);
                        write_at(push.v, kq, s * vp + c * vq);
                    }}
                    memoryBarrierBuffer();
                    barrier();
                    // Rows: W = J^H W.
                    for (uint k = invocation; k < n; k += {WORKGROUP_SIZE}u) {{
                        uint64_t pk = base + uint64_t(p) * n + k;
                        uint64_t qk = base + uint64_t(q) * n + k;
                        V wp = read_at(push.w, pk);
                        V wq = NX_TURN_BACK(phase, read_at(push.w, qk));
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
                    REAL candidate = NX_RE(read_at(push.w, base + uint64_t(order[j]) * n + order[j]));
                    REAL current = NX_RE(read_at(push.w, base + uint64_t(order[best]) * n + order[best]));
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
            write_at(push.values, uint64_t(batch) * n + i, NX_FROM_REAL(NX_RE(read_at(push.w, base + uint64_t(order[i]) * n + order[i]))));
        }}
        memoryBarrierBuffer();
        barrier();
    }}
}}
",
        preamble = preamble(working)
    )
}

//! The cooperative-matrix GEMM (VK_KHR_cooperative_matrix): f16 inputs, f32 accumulation, on
//! devices that report a subgroup-scope 16x16x16 f16 x f16 -> f32 shape (the H200 does;
//! lavapipe has none, so there the tiled template in `dot_codegen.rs` runs instead).
//!
//! Two kernels, chosen by the `coopmat_staged` knob (`kernel_knob.rs`):
//! - **direct**: each subgroup owns a 2x4 block of 16x16 accumulator fragments and loads its
//!   A and B fragments straight from the operands (row- or column-major, whichever axis is
//!   dense); neighbouring subgroups share loads only through the cache.
//! - **staged**: a workgroup of 2x2 subgroups owns a 128x128 tile of C (4x4 fragments per
//!   subgroup). Each K step of 32 copies the A and B tiles into shared memory with 16-byte
//!   loads, in the operands' own orientation (rows padded by one vector against bank
//!   conflicts), and the fragments load from there; the next step's global loads are issued
//!   into registers before this step's products, so they overlap.
//!
//! The push constants are the tiled template's, so dispatch, split-K and batching are shared
//! with it. Only problems whose M, N and K are multiples of the kernel's tile and whose
//! operands are dense along one axis with 16-byte aligned rows take this path (`dot.rs`
//! checks); anything else runs the tiled template. bf16 needs VK_KHR_shader_bfloat16 enabled by nxvk-core (not yet), so bf16 runs
//! the tiled template.

use crate::codegen::{storage_bytes, storage_type};
use crate::dot_codegen::gemm_push_block;
use crate::op_table::Elem;
use nxvk_core::Capabilities;

/// Subgroups per workgroup along M and N (both kernels).
const SUBGROUPS_M: u32 = 2;
const SUBGROUPS_N: u32 = 2;
/// The fragment edge (16x16x16 shapes).
const FRAGMENT: u32 = 16;
/// K per shared-memory step of the staged kernel.
const STAGED_TILE_K: u32 = 32;

/// True when the device offers the f16 shape this path uses, at a subgroup size it can lay a
/// workgroup out with.
pub fn has_f16_cooperative_matrices(capabilities: &Capabilities) -> bool {
    let subgroup_size = capabilities.subgroup_size;
    let invocations = subgroup_size * SUBGROUPS_M * SUBGROUPS_N;
    (1..=128).contains(&subgroup_size)
        && invocations <= capabilities.max_workgroup_invocations
        && capabilities.cooperative_matrices.iter().any(|shape| {
            (shape.m, shape.n, shape.k) == (FRAGMENT, FRAGMENT, FRAGMENT)
                && shape.a_type == "f16"
                && shape.b_type == "f16"
                && shape.c_type == "f32"
                && shape.result_type == "f32"
                && shape.scope == "subgroup"
                && !shape.saturating
        })
}

/// One cooperative-matrix kernel: its subgroup size, whether it stages tiles in shared
/// memory, and the operands' dense axes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CooperativeKernel {
    pub subgroup_size: u32,
    pub staged: bool,
    pub a_k_contiguous: bool,
    pub b_n_contiguous: bool,
}

impl CooperativeKernel {
    /// Accumulator fragments per subgroup along M and N.
    fn fragments(self) -> (u32, u32) {
        if self.staged { (4, 4) } else { (2, 4) }
    }

    /// Rows and columns of C per workgroup, and K per step: M, N and K must be multiples.
    pub fn tile(self) -> (u32, u32, u32) {
        let (fragments_m, fragments_n) = self.fragments();
        let tile_k = if self.staged { STAGED_TILE_K } else { FRAGMENT };
        (
            SUBGROUPS_M * fragments_m * FRAGMENT,
            SUBGROUPS_N * fragments_n * FRAGMENT,
            tile_k,
        )
    }

    /// The kernel name for `output` elements.
    pub fn name(self, output: Elem) -> String {
        format!(
            "gemm_coopmat{}_f16_s{}_{}{}_to_{}",
            if self.staged { "_staged" } else { "" },
            self.subgroup_size,
            if self.a_k_contiguous { "k" } else { "m" },
            if self.b_n_contiguous { "n" } else { "k" },
            output.name()
        )
    }

    /// The shader: f16 A and B, C written as `output` (f16, or f32 for split-K partial sums).
    pub fn shader(self, output: Elem) -> String {
        let a_layout = matrix_layout(self.a_k_contiguous);
        let b_layout = matrix_layout(self.b_n_contiguous);
        let store = if output == Elem::F32 {
            "coopMatStore(sums[i][j], Outputs(address).v, 0u, push.n, gl_CooperativeMatrixLayoutRowMajor);"
                .to_owned()
        } else {
            format!(
                "coopmat<{0}, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> narrowed =
                    coopmat<{0}, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(sums[i][j]);
                coopMatStore(narrowed, Outputs(address).v, 0u, push.n, gl_CooperativeMatrixLayoutRowMajor);",
                storage_type(output)
            )
        };
        let (fragments_m, fragments_n) = self.fragments();
        let (tile_m, tile_n, tile_k) = self.tile();
        let invocations = self.subgroup_size * SUBGROUPS_M * SUBGROUPS_N;
        let (declarations, k_loop) = if self.staged {
            self.staged_k_loop(tile_m, tile_n, invocations)
        } else {
            (String::new(), self.direct_k_loop())
        };
        format!(
            "#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#define FRAGMENTS_M {fragments_m}u
#define FRAGMENTS_N {fragments_n}u
#define SUBGROUPS_N {SUBGROUPS_N}u
#define TILE_M {tile_m}u
#define TILE_N {tile_n}u
#define TILE_K {tile_k}u
#define INVOCATIONS {invocations}u
#define A_LAYOUT {a_layout}
#define B_LAYOUT {b_layout}
layout(local_size_x = INVOCATIONS) in;
layout(buffer_reference, scalar, buffer_reference_align = 16) readonly buffer Halves {{ float16_t v[]; }};
layout(buffer_reference, scalar, buffer_reference_align = 16) readonly buffer Vectors {{ uvec4 v[]; }};
layout(buffer_reference, scalar, buffer_reference_align = 16) writeonly buffer Outputs {{ {output_storage} v[]; }};
{push_block}
{declarations}
void main() {{
    uint subgroup_m = gl_SubgroupID / SUBGROUPS_N;
    uint subgroup_n = gl_SubgroupID % SUBGROUPS_N;
    uint block_row0 = gl_WorkGroupID.y * TILE_M;
    uint block_column0 = gl_WorkGroupID.x * TILE_N;
    uint local_row0 = subgroup_m * FRAGMENTS_M * 16u;
    uint local_column0 = subgroup_n * FRAGMENTS_N * 16u;
    uint row0 = block_row0 + local_row0;
    uint column0 = block_column0 + local_column0;
    uint tasks = push.batches * push.splits;
    for (uint task = gl_WorkGroupID.z; task < tasks; task += gl_NumWorkGroups.z) {{
        uint batch = task / push.splits;
        uint k_begin = (task % push.splits) * push.k_per_split;
        uint k_end = min(k_begin + push.k_per_split, push.k);
        uint64_t a_base = push.a + uint64_t(batch) * uint64_t(push.a_batch_stride) * 2ul;
        uint64_t b_base = push.b + uint64_t(batch) * uint64_t(push.b_batch_stride) * 2ul;
        coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> sums[FRAGMENTS_M][FRAGMENTS_N];
        for (uint i = 0u; i < FRAGMENTS_M; i++) {{
            for (uint j = 0u; j < FRAGMENTS_N; j++) {{
                sums[i][j] = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
            }}
        }}
{k_loop}
        uint64_t c_base = push.c + uint64_t(task) * uint64_t(push.m) * uint64_t(push.n) * {output_bytes}ul;
        for (uint i = 0u; i < FRAGMENTS_M; i++) {{
            for (uint j = 0u; j < FRAGMENTS_N; j++) {{
                uint64_t address = c_base
                    + (uint64_t(row0 + i * 16u) * uint64_t(push.n) + uint64_t(column0 + j * 16u)) * {output_bytes}ul;
                {store}
            }}
        }}
    }}
}}
",
            output_storage = storage_type(output),
            output_bytes = storage_bytes(output),
            push_block = gemm_push_block(false),
        )
    }

    /// The direct kernel's K loop: fragments load from the operands.
    fn direct_k_loop(self) -> String {
        let a_stride = if self.a_k_contiguous {
            "push.a_m_stride"
        } else {
            "push.a_k_stride"
        };
        let b_stride = if self.b_n_contiguous {
            "push.b_k_stride"
        } else {
            "push.b_n_stride"
        };
        format!(
            "        for (uint k0 = k_begin; k0 < k_end; k0 += TILE_K) {{
            coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a_fragments[FRAGMENTS_M];
            coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> b_fragments[FRAGMENTS_N];
            for (uint i = 0u; i < FRAGMENTS_M; i++) {{
                uint64_t offset = uint64_t(row0 + i * 16u) * uint64_t(push.a_m_stride)
                    + uint64_t(k0) * uint64_t(push.a_k_stride);
                coopMatLoad(a_fragments[i], Halves(a_base + offset * 2ul).v, 0u, {a_stride}, A_LAYOUT);
            }}
            for (uint j = 0u; j < FRAGMENTS_N; j++) {{
                uint64_t offset = uint64_t(k0) * uint64_t(push.b_k_stride)
                    + uint64_t(column0 + j * 16u) * uint64_t(push.b_n_stride);
                coopMatLoad(b_fragments[j], Halves(b_base + offset * 2ul).v, 0u, {b_stride}, B_LAYOUT);
            }}
{MULTIPLY_ADD}        }}
"
        )
    }

    /// The staged kernel's shared tiles and K loop. Each tile is stored as rows of 16-byte
    /// vectors along the operand's dense axis (A: rows of M when K is dense, rows of K when M
    /// is; B likewise), one vector of padding per row.
    fn staged_k_loop(self, tile_m: u32, tile_n: u32, invocations: u32) -> (String, String) {
        let tile_k = STAGED_TILE_K;
        let a = StagedOperand {
            name: "a",
            rows_and_row_vectors: if self.a_k_contiguous {
                (tile_m, tile_k / 8)
            } else {
                (tile_k, tile_m / 8)
            },
            row_stride: if self.a_k_contiguous {
                "push.a_m_stride"
            } else {
                "push.a_k_stride"
            },
            origin: "uint64_t(block_row0) * uint64_t(push.a_m_stride) + uint64_t(K0) * uint64_t(push.a_k_stride)",
            invocations,
        };
        let b = StagedOperand {
            name: "b",
            rows_and_row_vectors: if self.b_n_contiguous {
                (tile_k, tile_n / 8)
            } else {
                (tile_n, tile_k / 8)
            },
            row_stride: if self.b_n_contiguous {
                "push.b_k_stride"
            } else {
                "push.b_n_stride"
            },
            origin: "uint64_t(K0) * uint64_t(push.b_k_stride) + uint64_t(block_column0) * uint64_t(push.b_n_stride)",
            invocations,
        };
        // Fragment offsets in vectors: (first, second) is (row, column) in the stored rows.
        let a_offset = if self.a_k_contiguous {
            "(local_row0 + i * 16u) * A_STRIDE + kk / 8u"
        } else {
            "kk * A_STRIDE + (local_row0 + i * 16u) / 8u"
        };
        let b_offset = if self.b_n_contiguous {
            "kk * B_STRIDE + (local_column0 + j * 16u) / 8u"
        } else {
            "(local_column0 + j * 16u) * B_STRIDE + kk / 8u"
        };
        let declarations = format!("{}{}", a.declarations(), b.declarations());
        let fetch = |k0: &str| format!("{}{}", a.fetch(k0), b.fetch(k0));
        let k_loop = format!(
            "        uint steps = (k_end - k_begin) / TILE_K;
        uvec4 a_staged[A_LOADS];
        uvec4 b_staged[B_LOADS];
        if (steps > 0u) {{
{first_fetch}        }}
        for (uint step = 0u; step < steps; step++) {{
            barrier();
{a_store}{b_store}            barrier();
            if (step + 1u < steps) {{
                uint k_next = k_begin + (step + 1u) * TILE_K;
{next_fetch}            }}
            for (uint kk = 0u; kk < TILE_K; kk += 16u) {{
                coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a_fragments[FRAGMENTS_M];
                coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> b_fragments[FRAGMENTS_N];
                for (uint i = 0u; i < FRAGMENTS_M; i++) {{
                    coopMatLoad(a_fragments[i], a_tile, {a_offset}, A_STRIDE, A_LAYOUT);
                }}
                for (uint j = 0u; j < FRAGMENTS_N; j++) {{
                    coopMatLoad(b_fragments[j], b_tile, {b_offset}, B_STRIDE, B_LAYOUT);
                }}
{MULTIPLY_ADD}            }}
        }}
",
            first_fetch = fetch("k_begin"),
            next_fetch = fetch("k_next"),
            a_store = a.store(),
            b_store = b.store(),
        );
        (declarations, k_loop)
    }
}

/// The products of one K step of 16 (both kernels).
const MULTIPLY_ADD: &str = "            for (uint i = 0u; i < FRAGMENTS_M; i++) {
                for (uint j = 0u; j < FRAGMENTS_N; j++) {
                    sums[i][j] = coopMatMulAdd(a_fragments[i], b_fragments[j], sums[i][j]);
                }
            }
";

/// Row-major when the operand's second axis (A's K, B's N) is the dense one.
fn matrix_layout(second_contiguous: bool) -> &'static str {
    if second_contiguous {
        "gl_CooperativeMatrixLayoutRowMajor"
    } else {
        "gl_CooperativeMatrixLayoutColumnMajor"
    }
}

/// One operand's shared tile in the staged kernel: `rows` rows of `row_vectors` 16-byte
/// vectors, each thread copying `LOADS` of them per step through registers.
struct StagedOperand {
    name: &'static str,
    rows_and_row_vectors: (u32, u32),
    /// The operand's element stride between stored rows.
    row_stride: &'static str,
    /// The tile's first element, with `K0` standing for the step's first K.
    origin: &'static str,
    invocations: u32,
}

impl StagedOperand {
    fn upper(&self) -> String {
        self.name.to_uppercase()
    }

    fn declarations(&self) -> String {
        let (rows, row_vectors) = self.rows_and_row_vectors;
        let vectors = rows * row_vectors;
        format!(
            "#define {n}_ROW_VECTORS {row_vectors}u
#define {n}_STRIDE {stride}u
#define {n}_VECTORS {vectors}u
#define {n}_LOADS {loads}u
shared uvec4 {name}_tile[{rows}u * {n}_STRIDE];
",
            n = self.upper(),
            name = self.name,
            stride = row_vectors + 1,
            loads = vectors.div_ceil(self.invocations),
        )
    }

    /// Loads this thread's vectors of the step starting at K = `k0` into registers.
    fn fetch(&self, k0: &str) -> String {
        format!(
            "            for (uint load = 0u; load < {n}_LOADS; load++) {{
                uint vector = gl_LocalInvocationIndex + load * INVOCATIONS;
                if (vector < {n}_VECTORS) {{
                    uint64_t element = {origin}
                        + uint64_t(vector / {n}_ROW_VECTORS) * uint64_t({row_stride})
                        + uint64_t((vector % {n}_ROW_VECTORS) * 8u);
                    {name}_staged[load] = Vectors({name}_base + element * 2ul).v[0];
                }}
            }}
",
            n = self.upper(),
            name = self.name,
            origin = self.origin.replace("K0", k0),
            row_stride = self.row_stride,
        )
    }

    /// Stores this thread's registers into the shared tile.
    fn store(&self) -> String {
        format!(
            "            for (uint load = 0u; load < {n}_LOADS; load++) {{
                uint vector = gl_LocalInvocationIndex + load * INVOCATIONS;
                if (vector < {n}_VECTORS) {{
                    {name}_tile[(vector / {n}_ROW_VECTORS) * {n}_STRIDE + vector % {n}_ROW_VECTORS] = {name}_staged[load];
                }}
            }}
",
            n = self.upper(),
            name = self.name,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shader compiles for every layout and output (glslang needs no device for that).
    #[test]
    fn shaders_compile() {
        for staged in [false, true] {
            for output in [Elem::F16, Elem::F32] {
                for (a_k_contiguous, b_n_contiguous) in
                    [(true, true), (false, false), (true, false), (false, true)]
                {
                    let kernel = CooperativeKernel {
                        subgroup_size: 32,
                        staged,
                        a_k_contiguous,
                        b_n_contiguous,
                    };
                    let name = kernel.name(output);
                    nxvk_glsl::compile_compute(&name, &kernel.shader(output))
                        .unwrap_or_else(|error| panic!("{name}: {error}"));
                }
            }
        }
    }
}

//! The cooperative-matrix GEMM (VK_KHR_cooperative_matrix): f16 inputs, f32 accumulation, on
//! devices that report a subgroup-scope 16x16x16 f16 x f16 -> f32 shape (the H200 does;
//! lavapipe has none, so there the tiled template in `dot_codegen.rs` runs instead).
//!
//! Each subgroup owns a `FRAGMENTS_M x FRAGMENTS_N` block of 16x16 accumulator fragments and
//! loads its A and B fragments straight from the operands (row- or column-major, whichever
//! axis is dense); a workgroup is `SUBGROUPS_M x SUBGROUPS_N` subgroups, so the fragments one
//! subgroup loads are reused by its neighbours through the cache. The push constants are the
//! tiled template's, so dispatch, split-K and batching are shared with it. Only problems whose
//! M, N and K are multiples of the workgroup tile and whose operands are dense along one axis
//! with 16-byte aligned rows take this path (`dot.rs` checks); anything else runs the tiled
//! template. bf16 needs VK_KHR_shader_bfloat16 enabled by nxvk-core (not yet), so bf16 runs
//! the tiled template.

use crate::codegen::{storage_bytes, storage_type};
use crate::dot_codegen::gemm_push_block;
use crate::op_table::Elem;
use nxvk_core::Capabilities;

/// Fragments per subgroup along M and N.
pub const FRAGMENTS_M: u32 = 2;
pub const FRAGMENTS_N: u32 = 4;
/// Subgroups per workgroup along M and N.
pub const SUBGROUPS_M: u32 = 2;
pub const SUBGROUPS_N: u32 = 2;
/// The fragment edge (16x16x16 shapes).
pub const FRAGMENT: u32 = 16;
/// Rows and columns of C per workgroup.
pub const COOPERATIVE_TILE_M: u32 = SUBGROUPS_M * FRAGMENTS_M * FRAGMENT;
pub const COOPERATIVE_TILE_N: u32 = SUBGROUPS_N * FRAGMENTS_N * FRAGMENT;

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

/// The kernel name for `output` elements and the operands' dense axes.
pub fn cooperative_kernel_name(
    output: Elem,
    subgroup_size: u32,
    a_k_contiguous: bool,
    b_n_contiguous: bool,
) -> String {
    format!(
        "gemm_coopmat_f16_s{subgroup_size}_{}{}_to_{}",
        if a_k_contiguous { "k" } else { "m" },
        if b_n_contiguous { "n" } else { "k" },
        output.name()
    )
}

/// The shader: f16 A and B, C written as `output` (f16, or f32 for split-K partial sums).
pub fn cooperative_shader(
    output: Elem,
    subgroup_size: u32,
    a_k_contiguous: bool,
    b_n_contiguous: bool,
) -> String {
    let (a_layout, a_stride) = if a_k_contiguous {
        ("gl_CooperativeMatrixLayoutRowMajor", "push.a_m_stride")
    } else {
        ("gl_CooperativeMatrixLayoutColumnMajor", "push.a_k_stride")
    };
    let (b_layout, b_stride) = if b_n_contiguous {
        ("gl_CooperativeMatrixLayoutRowMajor", "push.b_k_stride")
    } else {
        ("gl_CooperativeMatrixLayoutColumnMajor", "push.b_n_stride")
    };
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
    format!(
        "#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#define FRAGMENTS_M {FRAGMENTS_M}u
#define FRAGMENTS_N {FRAGMENTS_N}u
#define SUBGROUPS_N {SUBGROUPS_N}u
layout(local_size_x = {invocations}) in;
layout(buffer_reference, scalar, buffer_reference_align = 16) readonly buffer Halves {{ float16_t v[]; }};
layout(buffer_reference, scalar, buffer_reference_align = 16) writeonly buffer Outputs {{ {output_storage} v[]; }};
{push_block}

void main() {{
    uint subgroup_m = gl_SubgroupID / SUBGROUPS_N;
    uint subgroup_n = gl_SubgroupID % SUBGROUPS_N;
    uint row0 = gl_WorkGroupID.y * {tile_m}u + subgroup_m * FRAGMENTS_M * 16u;
    uint column0 = gl_WorkGroupID.x * {tile_n}u + subgroup_n * FRAGMENTS_N * 16u;
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
        for (uint k0 = k_begin; k0 < k_end; k0 += 16u) {{
            coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a_fragments[FRAGMENTS_M];
            coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> b_fragments[FRAGMENTS_N];
            for (uint i = 0u; i < FRAGMENTS_M; i++) {{
                uint64_t offset = uint64_t(row0 + i * 16u) * uint64_t(push.a_m_stride)
                    + uint64_t(k0) * uint64_t(push.a_k_stride);
                coopMatLoad(a_fragments[i], Halves(a_base + offset * 2ul).v, 0u, {a_stride}, {a_layout});
            }}
            for (uint j = 0u; j < FRAGMENTS_N; j++) {{
                uint64_t offset = uint64_t(k0) * uint64_t(push.b_k_stride)
                    + uint64_t(column0 + j * 16u) * uint64_t(push.b_n_stride);
                coopMatLoad(b_fragments[j], Halves(b_base + offset * 2ul).v, 0u, {b_stride}, {b_layout});
            }}
            for (uint i = 0u; i < FRAGMENTS_M; i++) {{
                for (uint j = 0u; j < FRAGMENTS_N; j++) {{
                    sums[i][j] = coopMatMulAdd(a_fragments[i], b_fragments[j], sums[i][j]);
                }}
            }}
        }}
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
        invocations = subgroup_size * SUBGROUPS_M * SUBGROUPS_N,
        tile_m = COOPERATIVE_TILE_M,
        tile_n = COOPERATIVE_TILE_N,
        output_storage = storage_type(output),
        output_bytes = storage_bytes(output),
        push_block = gemm_push_block(false),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shader compiles for every layout and output (glslang needs no device for that).
    #[test]
    fn shaders_compile() {
        for output in [Elem::F16, Elem::F32] {
            for (a_k, b_n) in [(true, true), (false, false), (true, false)] {
                let name = cooperative_kernel_name(output, 32, a_k, b_n);
                nxvk_glsl::compile_compute(&name, &cooperative_shader(output, 32, a_k, b_n))
                    .unwrap_or_else(|error| panic!("{name}: {error}"));
            }
        }
    }
}

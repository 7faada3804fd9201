//! The workgroup-scope cooperative-matrix GEMM (VK_NV_cooperative_matrix2): f16 or bf16
//! inputs, f32 accumulation, one matrix per workgroup for its whole tile of C.
//!
//! With the KHR extension alone (`dot_cooperative.rs`) each subgroup holds 16x16 fragments and
//! the kernel stages tiles in shared memory itself; that kernel reached 0.37x of cuBLAS on an
//! H100. Here a workgroup declares its `TILE_M x TILE_N` accumulator, its `TILE_M x TILE_K` A
//! and `TILE_K x TILE_N` B as workgroup-scope matrices and loads them through tensor layouts
//! (bounds, strides and transposition described to the driver), so the driver plans the
//! staging, pipelining and fragment layout for its own hardware.
//!
//! Tensor layouts clamp: loads past the operands' bounds (M, N, or the end of this split's K
//! range) read zeros and stores past C's bounds are dropped, so any M, N and K take this
//! kernel. Interior tiles load through layouts without clamping, which the driver may load
//! faster; C's layout always clamps (stores without a clamp mode are not bounds-checked).
//!
//! On an H100 (driver 580.159.04) this kernel reached 78 TFLOP/s at 8192^3 against the
//! subgroup kernel's 291, so `dot.rs` prefers the subgroup kernel and gives this one the
//! problems that kernel cannot take (M, N or K off its 128x128x32 tile), which otherwise run
//! the tiled template (29.9 TFLOP/s for bf16 at 8192 on the H200).
//! Only dense operands (one axis of stride 1, other strides and the base 16-byte aligned) are
//! given to it (`dot.rs` checks). The push constants, dispatch, batching and split-K are the
//! tiled template's.
//!
//! The kernel is opt-in: `NXVK_KNOB_COOPMAT2_TILE=on` (the first of [`TILES`]) or `MxNxK`
//! (256 invocations); unset or `off`, these problems keep the tiled template. The device must
//! list that shape among its flexible workgroup-scope dimensions. It is off by default because
//! its first GPU run found ragged tiles' stores unclamped, and the fix (C's layout clamps) has
//! not yet run on a GPU: `tests/dot.rs`'s `workgroup_matrix_problems` runs every tile there.

use crate::codegen::storage_type;
use crate::dot_codegen::{gemm_push_block, gemm_task_loop_head};
use crate::op_table::Elem;
use nxvk_core::{Capabilities, Device};

/// Invocations per workgroup.
const INVOCATIONS: u32 = 256;

/// The tiles (M, N, K per step) the knob may choose; the first is `on`'s (the fastest of the
/// four measured on an H100: docs/BENCHMARKS.md, seventeenth session).
pub const TILES: [(u32, u32, u32); 7] = [
    (128, 256, 32),
    (128, 128, 32),
    (128, 256, 64),
    (128, 128, 64),
    (256, 128, 32),
    (64, 256, 32),
    (128, 256, 16),
];

/// The tile `NXVK_KNOB_COOPMAT2_TILE` names (`MxNxK`, one of [`TILES`]; `on`, or a name of no
/// such tile, reported once, is the first), none when it is unset or says `off`: the kernel is
/// opt-in until its fixed stores have passed on a GPU (module docs).
pub fn tile_of(device: &Device) -> Option<(u32, u32, u32)> {
    let text = device.knobs().variant("coopmat2_tile")?;
    match text {
        "off" => return None,
        "on" => return Some(TILES[0]),
        _ => {}
    }
    let sizes: Vec<u32> = text
        .split('x')
        .filter_map(|size| size.parse().ok())
        .collect();
    let named = TILES.into_iter().find(|&(m, n, k)| sizes == [m, n, k]);
    if named.is_none() {
        static REPORTED: std::sync::Once = std::sync::Once::new();
        REPORTED.call_once(|| {
            eprintln!("nxvk: NXVK_KNOB_COOPMAT2_TILE={text:?} is not off, on or one of {TILES:?} as MxNxK; using {:?}", TILES[0]);
        });
    }
    Some(named.unwrap_or(TILES[0]))
}

/// True when the device offers workgroup-scope matrices of `input` (f16, or bf16 where its
/// bf16 matrices are enabled) into f32 whose granularity divides `tile`, for this kernel's
/// invocations.
pub fn has_workgroup_matrices(
    capabilities: &Capabilities,
    input: Elem,
    tile: (u32, u32, u32),
) -> bool {
    let Some(matrices) = &capabilities.cooperative_matrix2 else {
        return false;
    };
    let type_enabled = match input {
        Elem::F16 => true,
        Elem::BF16 => capabilities.bfloat16_cooperative_matrix,
        _ => false,
    };
    let (tile_m, tile_n, tile_k) = tile;
    type_enabled
        && INVOCATIONS
            <= matrices
                .max_workgroup_size
                .min(capabilities.max_workgroup_invocations)
        && tile_m.max(tile_n).max(tile_k) <= matrices.max_dimension
        && matrices.flexible_dimensions.iter().any(|shape| {
            shape.scope == "workgroup"
                && shape.workgroup_invocations == INVOCATIONS
                && shape.a_type == input.name()
                && shape.b_type == input.name()
                && shape.c_type == "f32"
                && shape.result_type == "f32"
                && !shape.saturating
                && tile_m.is_multiple_of(shape.m_granularity)
                && tile_n.is_multiple_of(shape.n_granularity)
                && tile_k.is_multiple_of(shape.k_granularity)
        })
}

/// One workgroup-scope GEMM kernel: its input type, tile and the operands' dense axes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkgroupMatrixKernel {
    pub input: Elem,
    pub tile: (u32, u32, u32),
    pub a_k_contiguous: bool,
    pub b_n_contiguous: bool,
}

impl WorkgroupMatrixKernel {
    /// The kernel name for `output` elements.
    pub fn name(self, output: Elem) -> String {
        let (tile_m, tile_n, tile_k) = self.tile;
        format!(
            "gemm_coopmat2_{}_{tile_m}x{tile_n}x{tile_k}_{}{}_to_{}",
            self.input.name(),
            if self.a_k_contiguous { "k" } else { "m" },
            if self.b_n_contiguous { "n" } else { "k" },
            output.name()
        )
    }

    /// The shader: A and B of the input type, C written as `output` (the input type, or f32 for
    /// split-K partial sums).
    pub fn shader(self, output: Elem) -> String {
        let (tile_m, tile_n, tile_k) = self.tile;
        let glsl_type = |elem: Elem| match elem {
            Elem::F16 => "float16_t",
            Elem::BF16 => "bfloat16_t",
            other => storage_type(other),
        };
        let bfloat16_extension = if self.input == Elem::BF16 || output == Elem::BF16 {
            "#extension GL_EXT_bfloat16 : require\n"
        } else {
            ""
        };
        // A is sliced as rows of M and columns of K when K is dense, else as rows of K,
        // transposed on load; B as rows of K when N is dense, else as rows of N, transposed.
        let (a_dimensions, a_slice, a_view) = if self.a_k_contiguous {
            ("push.m, k_end", "row0, TILE_M, k0, TILE_K", "")
        } else {
            ("k_end, push.m", "k0, TILE_K, row0, TILE_M", ", transposed")
        };
        let a_stride = if self.a_k_contiguous {
            "push.a_m_stride"
        } else {
            "push.a_k_stride"
        };
        let (b_dimensions, b_slice, b_view) = if self.b_n_contiguous {
            ("k_end, push.n", "k0, TILE_K, column0, TILE_N", "")
        } else {
            (
                "push.n, k_end",
                "column0, TILE_N, k0, TILE_K",
                ", transposed",
            )
        };
        let b_stride = if self.b_n_contiguous {
            "push.b_k_stride"
        } else {
            "push.b_n_stride"
        };
        let k_loop = |clamped: &str| {
            format!(
                "            for (uint k0 = k_begin; k0 < k_end; k0 += TILE_K) {{
                A_MATRIX a;
                B_MATRIX b;
                coopMatLoadTensorNV(a, Inputs(a_base).v, 0u, sliceTensorLayoutNV(a_layout{clamped}, {a_slice}){a_view});
                coopMatLoadTensorNV(b, Inputs(b_base).v, 0u, sliceTensorLayoutNV(b_layout{clamped}, {b_slice}){b_view});
                sum = coopMatMulAdd(a, b, sum);
            }}
"
            )
        };
        format!(
            "#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
{bfloat16_extension}#define TILE_M {tile_m}u
#define TILE_N {tile_n}u
#define TILE_K {tile_k}u
#define ACCUMULATOR coopmat<float, gl_ScopeWorkgroup, TILE_M, TILE_N, gl_MatrixUseAccumulator>
#define A_MATRIX coopmat<{input_type}, gl_ScopeWorkgroup, TILE_M, TILE_K, gl_MatrixUseA>
#define B_MATRIX coopmat<{input_type}, gl_ScopeWorkgroup, TILE_K, TILE_N, gl_MatrixUseB>
#define OUTPUT_MATRIX coopmat<{output_type}, gl_ScopeWorkgroup, TILE_M, TILE_N, gl_MatrixUseAccumulator>
#define CLAMPED tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV>
layout(local_size_x = {INVOCATIONS}) in;
layout(buffer_reference, scalar, buffer_reference_align = 16) readonly buffer Inputs {{ {input_type} v[]; }};
layout(buffer_reference, scalar, buffer_reference_align = 16) writeonly buffer Outputs {{ {output_type} v[]; }};
{push_block}
void main() {{
    uint row0 = gl_WorkGroupID.y * TILE_M;
    uint column0 = gl_WorkGroupID.x * TILE_N;
    tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
    // Stores through a layout without a clamp mode are not bounds-checked (an H100 wrote a
    // ragged tile's columns past N into the next row), so C's layout clamps too.
    CLAMPED c_layout = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    c_layout = setTensorLayoutDimensionNV(c_layout, push.m, push.n);
    c_layout = setTensorLayoutStrideNV(c_layout, push.n, 1u);
{task_loop_head}        tensorLayoutNV<2> a_layout = createTensorLayoutNV(2);
        a_layout = setTensorLayoutDimensionNV(a_layout, {a_dimensions});
        a_layout = setTensorLayoutStrideNV(a_layout, {a_stride}, 1u);
        tensorLayoutNV<2> b_layout = createTensorLayoutNV(2);
        b_layout = setTensorLayoutDimensionNV(b_layout, {b_dimensions});
        b_layout = setTensorLayoutStrideNV(b_layout, {b_stride}, 1u);
        ACCUMULATOR sum = ACCUMULATOR(0.0);
        bool interior = row0 + TILE_M <= push.m && column0 + TILE_N <= push.n
            && (k_end - k_begin) % TILE_K == 0u;
        if (interior) {{
{plain_loop}        }} else {{
            CLAMPED a_layout_clamped = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
            a_layout_clamped = setTensorLayoutDimensionNV(a_layout_clamped, {a_dimensions});
            a_layout_clamped = setTensorLayoutStrideNV(a_layout_clamped, {a_stride}, 1u);
            CLAMPED b_layout_clamped = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
            b_layout_clamped = setTensorLayoutDimensionNV(b_layout_clamped, {b_dimensions});
            b_layout_clamped = setTensorLayoutStrideNV(b_layout_clamped, {b_stride}, 1u);
{clamped_loop}        }}
        uint64_t c_base = push.c + uint64_t(task) * uint64_t(push.m) * uint64_t(push.n) * {output_bytes}ul;
        OUTPUT_MATRIX result = OUTPUT_MATRIX(sum);
        coopMatStoreTensorNV(result, Outputs(c_base).v, 0u, sliceTensorLayoutNV(c_layout, row0, TILE_M, column0, TILE_N));
    }}
}}
",
            input_type = glsl_type(self.input),
            output_type = glsl_type(output),
            output_bytes = crate::codegen::storage_bytes(output),
            push_block = gemm_push_block(false),
            task_loop_head = gemm_task_loop_head(crate::codegen::storage_bytes(self.input)),
            plain_loop = k_loop(""),
            clamped_loop = k_loop("_clamped"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nxvk_core::{Context, CooperativeMatrix2, FlexibleMatrixShape};

    /// This machine's capabilities with VK_NV_cooperative_matrix2 described as an H100's
    /// driver describes it (f16 workgroup matrices of granularity 16, 256 invocations).
    fn with_matrices(bf16: bool) -> Capabilities {
        let context = Context::new().expect("a Vulkan device (lavapipe in CI)");
        let mut capabilities = context.capabilities().clone();
        let shape = |input: &str| FlexibleMatrixShape {
            m_granularity: 16,
            n_granularity: 16,
            k_granularity: 16,
            a_type: input.into(),
            b_type: input.into(),
            c_type: "f32".into(),
            result_type: "f32".into(),
            saturating: false,
            scope: "workgroup".into(),
            workgroup_invocations: INVOCATIONS,
        };
        capabilities.max_workgroup_invocations = 1024;
        capabilities.bfloat16_cooperative_matrix = bf16;
        capabilities.cooperative_matrix2 = Some(CooperativeMatrix2 {
            max_workgroup_size: 256,
            max_dimension: 256,
            reserved_shared_memory: 0,
            flexible_dimensions: vec![shape("f16"), shape("bf16")],
        });
        capabilities
    }

    /// The knob: off unless set; `on` and unknown names take the first tile.
    #[test]
    fn the_knob_turns_the_kernel_on_and_picks_its_tile() {
        use nxvk_core::{ContextOptions, Knobs};
        let tile = |value: Option<&str>| {
            let knobs = match value {
                Some(value) => Knobs::default().with_variant("coopmat2_tile", value),
                None => Knobs::default(),
            };
            let context = Context::with_options(ContextOptions {
                knobs,
                ..ContextOptions::default()
            })
            .unwrap();
            tile_of(&context.device().unwrap())
        };
        assert_eq!(tile(None), None);
        assert_eq!(tile(Some("off")), None);
        assert_eq!(tile(Some("on")), Some(TILES[0]));
        assert_eq!(tile(Some("128x128x32")), Some((128, 128, 32)));
        assert_eq!(tile(Some("96x96x96")), Some(TILES[0]));
    }

    #[test]
    fn workgroup_matrices_need_the_type_tile_and_size_the_device_lists() {
        let capabilities = with_matrices(true);
        for tile in TILES {
            assert!(has_workgroup_matrices(&capabilities, Elem::F16, tile));
            assert!(has_workgroup_matrices(&capabilities, Elem::BF16, tile));
        }
        // Null arms: a type without matrices, bf16 without its extension, a tile off the
        // granularity or past the largest dimension, a device without the extension.
        assert!(!has_workgroup_matrices(&capabilities, Elem::F32, TILES[0]));
        assert!(!has_workgroup_matrices(
            &with_matrices(false),
            Elem::BF16,
            TILES[0]
        ));
        assert!(!has_workgroup_matrices(
            &capabilities,
            Elem::F16,
            (128, 256, 40)
        ));
        assert!(!has_workgroup_matrices(
            &capabilities,
            Elem::F16,
            (512, 256, 64)
        ));
        let mut small_workgroups = capabilities.clone();
        small_workgroups
            .cooperative_matrix2
            .as_mut()
            .unwrap()
            .max_workgroup_size = 128;
        assert!(!has_workgroup_matrices(
            &small_workgroups,
            Elem::F16,
            TILES[0]
        ));
        let mut without = capabilities;
        without.cooperative_matrix2 = None;
        assert!(!has_workgroup_matrices(&without, Elem::F16, TILES[0]));
    }

    /// The shader compiles (for SPIR-V 1.6) for both inputs, every layout and output, and every
    /// tile the knob offers; glslang needs no device for that.
    #[test]
    fn shaders_compile() {
        for input in [Elem::F16, Elem::BF16] {
            for output in [input, Elem::F32] {
                for (a_k_contiguous, b_n_contiguous) in
                    [(true, true), (false, false), (true, false), (false, true)]
                {
                    for tile in TILES {
                        let kernel = WorkgroupMatrixKernel {
                            input,
                            tile,
                            a_k_contiguous,
                            b_n_contiguous,
                        };
                        let name = kernel.name(output);
                        let (_, info) = nxvk_glsl::compile_compute(&name, &kernel.shader(output))
                            .unwrap_or_else(|error| panic!("{name}: {error}"));
                        assert_eq!(info.version, (1, 6), "{name}");
                    }
                }
            }
        }
    }
}

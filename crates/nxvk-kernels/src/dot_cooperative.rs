//! The cooperative-matrix GEMM (VK_KHR_cooperative_matrix): f16 or bf16 inputs, f32
//! accumulation, on devices that report a subgroup-scope 16x16x16 shape of that input type into
//! f32 (the H200 reports both; lavapipe has none, so there the tiled template in
//! `dot_codegen.rs` runs instead). bf16 matrices also need VK_KHR_shader_bfloat16, which
//! nxvk-core enables below vulkano where the device offers it
//! (`Capabilities::bfloat16_cooperative_matrix`); bf16 kernels are built below vulkano too.
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
//! Both are written out here: every fragment a named variable (`c<i>_<j>`, `a<i>`, `b<j>`),
//! the loops over fragments, over the K steps inside a staged tile and over each thread's
//! staged vectors unrolled in Rust, so that no driver has to unroll a loop to keep an array
//! of fragments in registers (the 8-byte GEMM block spilled for want of exactly that:
//! `dot_registers.rs`). On the H200 this took hgemm_8192 from 36.6 TFLOP/s (the same kernels
//! with loops over fragment arrays) to 288 (docs/BENCHMARKS.md, eleventh session); K steps of
//! 64 (225), 2x4 or 4x2 subgroups of 4x4 fragments (277, 255) and more subgroups of fewer
//! fragments (152-172) measured slower than the 128x128x32 tile kept here.
//!
//! The push constants are the tiled template's, so dispatch, split-K and batching are shared
//! with it. Only problems whose M, N and K are multiples of the kernel's tile and whose
//! operands are dense along one axis with 16-byte aligned rows take this path (`dot.rs`
//! checks); anything else runs the tiled template. Both input types share one kernel text:
//! the staged tiles hold raw 16-byte vectors, so only the fragments' element type differs.
//! The opt-in bf16x3 f32 path stages three bf16 planes per operand (`dot_split.rs` splits them
//! beforehand) in K steps of 16 and multiplies them three times (`split_product_step`).

use crate::codegen::{storage_bytes, storage_type};
use crate::dot_codegen::{gemm_push_block, gemm_task_loop_head};
use crate::op_table::Elem;
use nxvk_core::Capabilities;
use std::fmt::Write as _;

/// Subgroups per workgroup along M and N (both kernels).
const SUBGROUPS_M: u32 = 2;
const SUBGROUPS_N: u32 = 2;
/// The fragment edge (16x16x16 shapes).
const FRAGMENT: u32 = 16;
/// K per shared-memory step of the staged kernel: 32, or 16 for split inputs, whose three
/// tiles per operand (heads, finite heads, tails) would not fit 48 KiB at 32.
const STAGED_TILE_K: u32 = 32;
const SPLIT_TILE_K: u32 = 16;

/// True when the device offers this path's shape for `input` (f16 or bf16), at a subgroup size
/// it can lay a workgroup out with.
pub fn has_cooperative_matrices(capabilities: &Capabilities, input: Elem) -> bool {
    let subgroup_size = capabilities.subgroup_size;
    let invocations = subgroup_size * SUBGROUPS_M * SUBGROUPS_N;
    let type_enabled = match input {
        Elem::F16 => true,
        Elem::BF16 => capabilities.bfloat16_cooperative_matrix,
        _ => false,
    };
    type_enabled
        && (1..=128).contains(&subgroup_size)
        && invocations <= capabilities.max_workgroup_invocations
        && capabilities.cooperative_matrices.iter().any(|shape| {
            (shape.m, shape.n, shape.k) == (FRAGMENT, FRAGMENT, FRAGMENT)
                && shape.a_type == input.name()
                && shape.b_type == input.name()
                && shape.c_type == "f32"
                && shape.result_type == "f32"
                && shape.scope == "subgroup"
                && !shape.saturating
        })
}

/// What a cooperative kernel's operands hold and how they reach its fragments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CooperativeInput {
    F16,
    Bf16,
    /// f32 operands split beforehand into three bf16 planes (`dot_split.rs`: heads, finite
    /// heads, tails); C accumulates tail x finite head + head x head + finite head x tail in
    /// f32, dropping tail x tail (the opt-in `bf16x3` precision of
    /// [`crate::dot::DotPrecision`]). Staged kernels only.
    F32SplitBf16,
}

impl CooperativeInput {
    /// The fragments' element type (what the device must offer matrices of).
    pub fn fragment(self) -> Elem {
        match self {
            CooperativeInput::F16 => Elem::F16,
            CooperativeInput::Bf16 | CooperativeInput::F32SplitBf16 => Elem::BF16,
        }
    }

    fn name(self) -> &'static str {
        match self {
            CooperativeInput::F16 => "f16",
            CooperativeInput::Bf16 => "bf16",
            CooperativeInput::F32SplitBf16 => "f32_bf16x3",
        }
    }

    fn split(self) -> bool {
        self == CooperativeInput::F32SplitBf16
    }
}

/// One cooperative-matrix kernel: its input, subgroup size, whether it stages tiles in shared
/// memory (always, for split inputs), and the operands' dense axes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CooperativeKernel {
    pub input: CooperativeInput,
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
        let tile_k = match (self.staged, self.input.split()) {
            (true, true) => SPLIT_TILE_K,
            (true, false) => STAGED_TILE_K,
            (false, _) => FRAGMENT,
        };
        (
            SUBGROUPS_M * fragments_m * FRAGMENT,
            SUBGROUPS_N * fragments_n * FRAGMENT,
            tile_k,
        )
    }

    /// The kernel name for `output` elements.
    pub fn name(self, output: Elem) -> String {
        format!(
            "gemm_coopmat{}_{}_s{}_{}{}_to_{}",
            if self.staged { "_staged" } else { "" },
            self.input.name(),
            self.subgroup_size,
            if self.a_k_contiguous { "k" } else { "m" },
            if self.b_n_contiguous { "n" } else { "k" },
            output.name()
        )
    }

    /// The shader: A and B of the input type, C written as `output` (the input type, or f32 for
    /// split-K partial sums).
    /// Every fragment is a named variable and every loop over fragments, K steps within a
    /// shared tile and staged loads is unrolled here (see the module comment for why).
    pub fn shader(self, output: Elem) -> String {
        let (fragments_m, fragments_n) = self.fragments();
        let (tile_m, tile_n, tile_k) = self.tile();
        let invocations = self.subgroup_size * SUBGROUPS_M * SUBGROUPS_N;
        let block = FragmentBlock {
            fragments_m,
            fragments_n,
        };
        let (declarations, k_loop) = if self.staged {
            self.staged_k_loop(block, tile_m, tile_n, invocations)
        } else {
            (String::new(), self.direct_k_loop(block))
        };
        let (input_type, input_extension) = match self.input.fragment() {
            Elem::BF16 => ("bfloat16_t", "#extension GL_EXT_bfloat16 : require\n"),
            _ => ("float16_t", ""),
        };
        // bf16 results convert as bf16 matrices and store their bits into the u16 storage.
        let output_type = if output == Elem::BF16 {
            "bfloat16_t"
        } else {
            storage_type(output)
        };
        format!(
            "#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
{input_extension}#define SUBGROUPS_N {SUBGROUPS_N}u
#define TILE_M {tile_m}u
#define TILE_N {tile_n}u
#define TILE_K {tile_k}u
#define INVOCATIONS {invocations}u
#define A_LAYOUT {a_layout}
#define B_LAYOUT {b_layout}
#define ACCUMULATOR coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#define A_FRAGMENT coopmat<{input_type}, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define B_FRAGMENT coopmat<{input_type}, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB>
#define OUTPUT_FRAGMENT coopmat<{output_type}, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
layout(local_size_x = INVOCATIONS) in;
layout(buffer_reference, scalar, buffer_reference_align = 16) readonly buffer Halves {{ {input_type} v[]; }};
layout(buffer_reference, scalar, buffer_reference_align = 16) readonly buffer Vectors {{ uvec4 v[]; }};
layout(buffer_reference, scalar, buffer_reference_align = 16) writeonly buffer Outputs {{ {output_storage} v[]; }};
{push_block}
{declarations}
void main() {{
    uint subgroup_m = gl_SubgroupID / SUBGROUPS_N;
    uint subgroup_n = gl_SubgroupID % SUBGROUPS_N;
    uint block_row0 = gl_WorkGroupID.y * TILE_M;
    uint block_column0 = gl_WorkGroupID.x * TILE_N;
    uint local_row0 = subgroup_m * {subgroup_rows}u;
    uint local_column0 = subgroup_n * {subgroup_columns}u;
    uint row0 = block_row0 + local_row0;
    uint column0 = block_column0 + local_column0;
{task_loop_head}{zero}{k_loop}        uint64_t c_base = push.c + uint64_t(task) * uint64_t(push.m) * uint64_t(push.n) * {output_bytes}ul
            + (uint64_t(row0) * uint64_t(push.n) + uint64_t(column0)) * {output_bytes}ul;
{stores}    }}
}}
",
            a_layout = matrix_layout(self.a_k_contiguous),
            b_layout = matrix_layout(self.b_n_contiguous),
            output_storage = storage_type(output),
            output_bytes = storage_bytes(output),
            push_block = gemm_push_block(false),
            // Split operands arrive as bf16 planes.
            task_loop_head = gemm_task_loop_head(storage_bytes(self.input.fragment())),
            subgroup_rows = fragments_m * FRAGMENT,
            subgroup_columns = fragments_n * FRAGMENT,
            zero = block.zero_accumulators(),
            stores = block.stores(output, storage_bytes(output)),
        )
    }

    /// The direct kernel's K loop: fragments load from the operands.
    fn direct_k_loop(self, block: FragmentBlock) -> String {
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
        let a_load = |i: u32| {
            format!(
                "coopMatLoad(a{i}, Halves(a_base + (uint64_t(row0 + {}u) * uint64_t(push.a_m_stride) + uint64_t(k0) * uint64_t(push.a_k_stride)) * 2ul).v, 0u, {a_stride}, A_LAYOUT);",
                i * FRAGMENT
            )
        };
        let b_load = |j: u32| {
            format!(
                "coopMatLoad(b{j}, Halves(b_base + (uint64_t(k0) * uint64_t(push.b_k_stride) + uint64_t(column0 + {}u) * uint64_t(push.b_n_stride)) * 2ul).v, 0u, {b_stride}, B_LAYOUT);",
                j * FRAGMENT
            )
        };
        format!(
            "        for (uint k0 = k_begin; k0 < k_end; k0 += TILE_K) {{
{step}        }}
",
            step = block.product_step(a_load, b_load),
        )
    }

    /// The staged kernel's shared tiles and K loop. Each tile is stored as rows of 16-byte
    /// vectors along the operand's dense axis (A: rows of M when K is dense, rows of K when M
    /// is; B likewise), one vector of padding per row.
    fn staged_k_loop(
        self,
        block: FragmentBlock,
        tile_m: u32,
        tile_n: u32,
        invocations: u32,
    ) -> (String, String) {
        let (_, _, tile_k) = self.tile();
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
            subgroup_first: "local_row0",
            fragments_along_rows: self.a_k_contiguous,
            invocations,
            split: self.input.split(),
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
            subgroup_first: "local_column0",
            fragments_along_rows: !self.b_n_contiguous,
            invocations,
            split: self.input.split(),
        };
        let mut steps = String::new();
        for kk in (0..tile_k).step_by(FRAGMENT as usize) {
            let a_load = |i: u32, tile: &str| {
                format!(
                    "coopMatLoad(a{i}, a_{tile}, a_origin + {}u, A_STRIDE, A_LAYOUT);",
                    a.fragment_offset(i, kk)
                )
            };
            let b_load = |j: u32, tile: &str| {
                format!(
                    "coopMatLoad(b{j}, b_{tile}, b_origin + {}u, B_STRIDE, B_LAYOUT);",
                    b.fragment_offset(j, kk)
                )
            };
            steps += &if self.input.split() {
                block.split_product_step(a_load, b_load)
            } else {
                block.product_step(|i| a_load(i, "tile"), |j| b_load(j, "tile"))
            };
        }
        let declarations = format!("{}{}", a.declarations(), b.declarations());
        let fetch = |k0: &str| format!("{}{}", a.fetch(k0), b.fetch(k0));
        let k_loop = format!(
            "        uint a_origin = {a_origin};
        uint b_origin = {b_origin};
        uint steps = (k_end - k_begin) / TILE_K;
{a_registers}{b_registers}        if (steps > 0u) {{
{first_fetch}        }}
        for (uint step = 0u; step < steps; step++) {{
            barrier();
{a_store}{b_store}            barrier();
            if (step + 1u < steps) {{
                uint k_next = k_begin + (step + 1u) * TILE_K;
{next_fetch}            }}
{steps}        }}
",
            a_origin = a.subgroup_origin(),
            b_origin = b.subgroup_origin(),
            a_registers = a.registers(),
            b_registers = b.registers(),
            first_fetch = fetch("k_begin"),
            next_fetch = fetch("k_next"),
            a_store = a.store(),
            b_store = b.store(),
        );
        (declarations, k_loop)
    }
}

/// A subgroup's fragments, written out: accumulators `c<i>_<j>`, A fragments `a<i>`, B
/// fragments `b<j>`.
#[derive(Debug, Clone, Copy)]
struct FragmentBlock {
    fragments_m: u32,
    fragments_n: u32,
}

impl FragmentBlock {
    fn zero_accumulators(self) -> String {
        let mut text = String::new();
        for i in 0..self.fragments_m {
            for j in 0..self.fragments_n {
                let _ = writeln!(text, "        ACCUMULATOR c{i}_{j} = ACCUMULATOR(0.0);");
            }
        }
        text
    }

    /// One K step of 16: the fragments loaded by the statements `a_load(i)` and `b_load(j)`,
    /// then every accumulator's product.
    fn product_step(
        self,
        a_load: impl Fn(u32) -> String,
        b_load: impl Fn(u32) -> String,
    ) -> String {
        format!(
            "            {{\n{}{}{}{}            }}\n",
            self.declarations(),
            self.loads(self.fragments_m, a_load),
            self.loads(self.fragments_n, b_load),
            self.products(),
        )
    }

    /// One K step of 16 on split operands, with `a_load(i, tile)` and `b_load(j, tile)`
    /// reading the heads (`tile`), the finite heads (`finite`: infinities and NaNs as zeros)
    /// or the tails (`tail`): the products tail x finite head, head x head and finite head x
    /// tail, small terms first, reusing the fragment variables so that no more fragments are
    /// live than in a plain step. The cross terms take finite heads because an infinite head
    /// times a zero tail would make NaN where the product is infinite; non-finite values reach
    /// C through head x head alone (their tails are zero).
    fn split_product_step(
        self,
        a_load: impl Fn(u32, &str) -> String,
        b_load: impl Fn(u32, &str) -> String,
    ) -> String {
        format!(
            "            {{\n{}{}{}{}{}{}{}{}{}{}            }}\n",
            self.declarations(),
            self.loads(self.fragments_m, |i| a_load(i, "tail")),
            self.loads(self.fragments_n, |j| b_load(j, "finite")),
            self.products(),
            self.loads(self.fragments_m, |i| a_load(i, "tile")),
            self.loads(self.fragments_n, |j| b_load(j, "tile")),
            self.products(),
            self.loads(self.fragments_m, |i| a_load(i, "finite")),
            self.loads(self.fragments_n, |j| b_load(j, "tail")),
            self.products(),
        )
    }

    fn declarations(self) -> String {
        let mut text = String::new();
        for i in 0..self.fragments_m {
            let _ = writeln!(text, "                A_FRAGMENT a{i};");
        }
        for j in 0..self.fragments_n {
            let _ = writeln!(text, "                B_FRAGMENT b{j};");
        }
        text
    }

    fn loads(self, count: u32, load: impl Fn(u32) -> String) -> String {
        (0..count)
            .map(|index| format!("                {}\n", load(index)))
            .collect()
    }

    fn products(self) -> String {
        let mut text = String::new();
        for i in 0..self.fragments_m {
            for j in 0..self.fragments_n {
                let _ = writeln!(
                    text,
                    "                c{i}_{j} = coopMatMulAdd(a{i}, b{j}, c{i}_{j});"
                );
            }
        }
        text
    }

    /// Stores every accumulator at `c_base` (the subgroup's first element of C), converted
    /// to `output` unless it is f32.
    fn stores(self, output: Elem, output_bytes: u32) -> String {
        let mut text = String::new();
        for i in 0..self.fragments_m {
            for j in 0..self.fragments_n {
                let fragment = if output == Elem::F32 {
                    format!("c{i}_{j}")
                } else {
                    format!("OUTPUT_FRAGMENT(c{i}_{j})")
                };
                let _ = writeln!(
                    text,
                    "        coopMatStore({fragment}, Outputs(c_base + (uint64_t({row}u) * uint64_t(push.n) + {column}ul) * {output_bytes}ul).v, 0u, push.n, gl_CooperativeMatrixLayoutRowMajor);",
                    row = i * FRAGMENT,
                    column = j * FRAGMENT,
                );
            }
        }
        text
    }
}

/// Row-major when the operand's second axis (A's K, B's N) is the dense one.
fn matrix_layout(second_contiguous: bool) -> &'static str {
    if second_contiguous {
        "gl_CooperativeMatrixLayoutRowMajor"
    } else {
        "gl_CooperativeMatrixLayoutColumnMajor"
    }
}

/// One operand's shared tile in the staged kernel: `rows` rows of `row_vectors` 16-byte
/// vectors, each thread copying `loads()` of them per step through the registers
/// `<name>_staged<l>`.
struct StagedOperand {
    name: &'static str,
    rows_and_row_vectors: (u32, u32),
    /// The operand's element stride between stored rows.
    row_stride: &'static str,
    /// The tile's first element, with `K0` standing for the step's first K.
    origin: &'static str,
    /// The subgroup's first row of A (`local_row0`) or column of B (`local_column0`).
    subgroup_first: &'static str,
    /// Whether the subgroup's fragments follow each other along the stored rows (A's M or
    /// B's N is the stored rows' axis: K is the dense one) or along the vectors of a row.
    fragments_along_rows: bool,
    invocations: u32,
    /// Split operands: three bf16 planes, `<name>_plane` bytes apart, staged through
    /// `<name>_staged<l>`, `<name>_finite<l>` and `<name>_tail<l>` into the tiles of heads
    /// (`<name>_tile`), finite heads (`<name>_finite`) and tails (`<name>_tail`).
    split: bool,
}

impl StagedOperand {
    fn upper(&self) -> String {
        self.name.to_uppercase()
    }

    fn vectors(&self) -> u32 {
        self.rows_and_row_vectors.0 * self.rows_and_row_vectors.1
    }

    /// Vectors per stored row, padding included.
    fn stride(&self) -> u32 {
        self.rows_and_row_vectors.1 + 1
    }

    /// The subgroup's first vector in the tile (set once per invocation).
    fn subgroup_origin(&self) -> String {
        if self.fragments_along_rows {
            format!("{} * {}_STRIDE", self.subgroup_first, self.upper())
        } else {
            format!("{} / 8u", self.subgroup_first)
        }
    }

    /// Fragment `index`'s first vector at the tile's K step `kk`, past the subgroup origin:
    /// 16 rows or 2 vectors per fragment, and 2 vectors or 16 rows per K step of 16.
    fn fragment_offset(&self, index: u32, kk: u32) -> u32 {
        let rows = FRAGMENT * self.stride();
        let vectors = FRAGMENT / 8;
        let (per_fragment, per_step) = if self.fragments_along_rows {
            (rows, vectors)
        } else {
            (vectors, rows)
        };
        index * per_fragment + kk / FRAGMENT * per_step
    }

    fn loads(&self) -> u32 {
        self.vectors().div_ceil(self.invocations)
    }

    fn declarations(&self) -> String {
        let (rows, row_vectors) = self.rows_and_row_vectors;
        let tail = if self.split {
            format!(
                "shared uvec4 {name}_finite[{rows}u * {n}_STRIDE];\nshared uvec4 {name}_tail[{rows}u * {n}_STRIDE];\n",
                name = self.name,
                n = self.upper()
            )
        } else {
            String::new()
        };
        format!(
            "#define {n}_ROW_VECTORS {row_vectors}u
#define {n}_STRIDE {stride}u
shared uvec4 {name}_tile[{rows}u * {n}_STRIDE];
{tail}",
            n = self.upper(),
            name = self.name,
            stride = self.stride(),
        )
    }

    fn registers(&self) -> String {
        let name = self.name;
        let plane = if self.split {
            format!(
                "        uint64_t {name}_plane = uint64_t(push.batches) * uint64_t(push.{name}_batch_stride) * 2ul;\n"
            )
        } else {
            String::new()
        };
        let registers: String = (0..self.loads())
            .map(|load| {
                let planes = if self.split {
                    format!(", {name}_finite{load}, {name}_tail{load}")
                } else {
                    String::new()
                };
                format!("        uvec4 {name}_staged{load}{planes};\n")
            })
            .collect();
        plane + &registers
    }

    /// Runs `statement(load, vector)` for each of this thread's vectors (`vector` a GLSL
    /// expression), guarded where the last round of loads is partial.
    fn each_vector(&self, statement: impl Fn(u32, &str) -> String) -> String {
        let mut text = String::new();
        for load in 0..self.loads() {
            let vector = format!("(gl_LocalInvocationIndex + {}u)", load * self.invocations);
            let body = statement(load, &vector);
            if (load + 1) * self.invocations > self.vectors() {
                let _ = writeln!(
                    text,
                    "            if ({vector} < {}u) {{ {body} }}",
                    self.vectors()
                );
            } else {
                let _ = writeln!(text, "            {body}");
            }
        }
        text
    }

    /// Loads this thread's vectors of the step starting at K = `k0` into registers.
    fn fetch(&self, k0: &str) -> String {
        let (n, name) = (self.upper(), self.name);
        let origin = self.origin.replace("K0", k0);
        self.each_vector(|load, vector| {
            let address = format!(
                "{name}_base + ({origin} + uint64_t({vector} / {n}_ROW_VECTORS) * uint64_t({row_stride}) + uint64_t(({vector} % {n}_ROW_VECTORS) * 8u)) * 2ul",
                row_stride = self.row_stride,
            );
            if self.split {
                format!(
                    "{{ uint64_t address = {address}; {name}_staged{load} = Vectors(address).v[0]; {name}_finite{load} = Vectors(address + {name}_plane).v[0]; {name}_tail{load} = Vectors(address + 2ul * {name}_plane).v[0]; }}"
                )
            } else {
                format!("{name}_staged{load} = Vectors({address}).v[0];")
            }
        })
    }

    /// Stores this thread's registers into the shared tile (split: heads, finite heads and
    /// tails).
    fn store(&self) -> String {
        let (n, name) = (self.upper(), self.name);
        self.each_vector(|load, vector| {
            let index = format!("({vector} / {n}_ROW_VECTORS) * {n}_STRIDE + {vector} % {n}_ROW_VECTORS");
            if self.split {
                format!(
                    "{{ uint index = {index}; {name}_tile[index] = {name}_staged{load}; {name}_finite[index] = {name}_finite{load}; {name}_tail[index] = {name}_tail{load}; }}"
                )
            } else {
                format!("{name}_tile[{index}] = {name}_staged{load};")
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shader compiles for every input, layout and output (glslang needs no device for
    /// that).
    #[test]
    fn shaders_compile() {
        use CooperativeInput::{Bf16, F16, F32SplitBf16};
        for (input, staged, result) in [
            (F16, false, Elem::F16),
            (F16, true, Elem::F16),
            (Bf16, false, Elem::BF16),
            (Bf16, true, Elem::BF16),
            (F32SplitBf16, true, Elem::F32),
        ] {
            for output in [result, Elem::F32] {
                for (a_k_contiguous, b_n_contiguous) in
                    [(true, true), (false, false), (true, false), (false, true)]
                {
                    let kernel = CooperativeKernel {
                        input,
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

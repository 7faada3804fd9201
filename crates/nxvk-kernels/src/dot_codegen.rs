//! GLSL for the batched GEMM behind `dot` and convolution's implicit GEMM: one
//! template for every dtype and tile configuration, compiled at run time through
//! `Device::kernel_from_glsl` (content-addressed on disk), so the autotuner can try
//! configurations the build script never saw.
//!
//! The kernel computes `C[task][m][n] = sum over k in the task's K range of A[batch][m][k] *
//! B[batch][k][n]`, where a task is one (batch, K split) pair. A and B are arbitrary strided
//! views (three element strides each); C is dense. A workgroup owns a `tile_m x tile_n` block of
//! C: per step it stages a `tile_m x tile_k` slice of A and a `tile_k x tile_n` slice of B in
//! shared memory (in the accumulator type, so f16/bf16 are widened once), then each invocation
//! accumulates a `thread_m x thread_n` grid of outputs in registers from `thread_m + thread_n`
//! shared reads per `k` (register blocking). The grid is interleaved across the tile (its
//! rows `tile_m / thread_m` apart, its columns `tile_n / thread_n` apart), so neighbouring
//! invocations read neighbouring shared words (no bank conflicts) and store neighbouring
//! outputs (coalesced). For 8-byte accumulators the block is written out statement by
//! statement (`dot_registers.rs`), since looped blocks of 32 or more doubles spilled. Staging is split in two: each invocation loads its share of the next
//! step's slices into registers before computing the current step (so global loads overlap
//! the arithmetic) and writes them to shared memory after the step's closing barrier. The staging loads walk whichever axis of the
//! operand is contiguous in memory (`a_k_contiguous`, `b_n_contiguous`), so neighbouring
//! invocations read neighbouring addresses; when that axis is dense and its length a multiple
//! of four, f32 and f16 staging reads four elements at once (`vector_loads`).
//!
//! Tile sizes are `#define`s rather than specialization constants: every loop bound is then a
//! literal the compiler unrolls, and per-thread accumulator arrays have literal sizes (which
//! some drivers mishandle when sized by specialization constants). A configuration is just
//! another cached module.
//!
//! An epilogue ([`GemmEpilogue`]) replaces the plain store of each element by a call of its
//! function on the stored value (so C holds the function's result, and the product is
//! rounded to its type exactly where the plain kernel stores it).
//!
//! Accumulators: f32 for f16, bf16 and f32 (fused multiply-add), f64 for f64, and for integers
//! the widened compute type with wrapping multiply-add, which equals Nx's wrapping result after
//! the store truncates to the result width.

use crate::codegen::{
    BF16_HELPERS, FLOAT_CONTROLS, compute_type, load, storage_bytes, storage_type, store,
};
use crate::conv_gather::ConvolutionGather;
use crate::dot_registers::RegisterBlock;
use crate::op_table::Elem;

/// Bytes of the GEMM kernels' push constants: three addresses and twelve words.
pub const GEMM_PUSH_CONSTANT_BYTES: usize = 24 + 12 * 4;

/// Bytes of a GEMM with an epilogue: its parameter block's address and its word follow.
pub const GEMM_EPILOGUE_PUSH_CONSTANT_BYTES: usize = GEMM_PUSH_CONSTANT_BYTES + 8 + 4;

/// The push-constant block of every GEMM kernel (tiled and cooperative), as dot.rs fills it;
/// with an epilogue, `epilogue` and `epilogue_word` follow ([`GemmEpilogue`]).
pub(crate) fn gemm_push_block(epilogue: bool) -> String {
    let epilogue_fields = if epilogue {
        "
    uint64_t epilogue;
    uint epilogue_word;"
    } else {
        ""
    };
    format!(
        "{GEMM_PUSH_FIELDS}{epilogue_fields}
}} push;"
    )
}

/// The opening of every GEMM kernel's loop over its tasks (a batch and a split of K, along the
/// grid's z): `task`, `batch`, the split's `k_begin` and `k_end`, and the batch's `a_base` and
/// `b_base` for operands of `input_bytes` per element. The kernel closes the loop.
pub(crate) fn gemm_task_loop_head(input_bytes: u32) -> String {
    format!(
        "    uint tasks = push.batches * push.splits;
    for (uint task = gl_WorkGroupID.z; task < tasks; task += gl_NumWorkGroups.z) {{
        uint batch = task / push.splits;
        uint k_begin = (task % push.splits) * push.k_per_split;
        uint k_end = min(k_begin + push.k_per_split, push.k);
        uint64_t a_base = push.a + uint64_t(batch) * uint64_t(push.a_batch_stride) * {input_bytes}ul;
        uint64_t b_base = push.b + uint64_t(batch) * uint64_t(push.b_batch_stride) * {input_bytes}ul;
"
    )
}

const GEMM_PUSH_FIELDS: &str = "layout(push_constant, scalar) uniform Push {
    uint64_t a;
    uint64_t b;
    uint64_t c;
    uint m;
    uint n;
    uint k;
    uint batches;
    uint a_batch_stride;
    uint a_m_stride;
    uint a_k_stride;
    uint b_batch_stride;
    uint b_k_stride;
    uint b_n_stride;
    uint k_per_split;
    uint splits;";

/// An elementwise function applied to every element of C before it is stored, so that a
/// consumer of the product (a bias, an activation, a scale: nxvk-fusion's GEMM epilogues)
/// costs no second pass over C. The tiled template (plain or a convolution's) calls it in
/// place of its plain store; split-K and the cooperative kernel have no epilogue (their
/// callers keep C and apply it separately).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GemmEpilogue {
    /// GLSL placed before `main` (after the push constants and the shared tiles): whatever
    /// it needs, ending with `<storage of output> nx_gemm_epilogue(<storage of C's elements>
    /// value, uint batch, uint row, uint column)`, which returns the element to store for
    /// C's element (batch, row, column) of stored value `value`. It may read
    /// `push.epilogue`, the address of its parameter block (dot.rs fills it with each extra
    /// operand's address, then its three element strides: batch, row, column), and
    /// `push.epilogue_word`.
    pub functions: String,
    /// The element type `nx_gemm_epilogue` returns, which C then holds.
    pub output: Elem,
    /// The value of `push.epilogue_word`.
    pub word: u32,
}

/// Elements each shared-memory row is padded by (staging stores along K then spread over
/// the banks instead of hitting one).
pub const TILE_PAD: u32 = 4;

/// One tile configuration of the GEMM template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TileConfig {
    /// Rows of C per workgroup.
    pub tile_m: u32,
    /// Columns of C per workgroup.
    pub tile_n: u32,
    /// Depth of one shared-memory step.
    pub tile_k: u32,
    /// Rows of C per invocation (register block).
    pub thread_m: u32,
    /// Columns of C per invocation (register block).
    pub thread_n: u32,
}

impl TileConfig {
    /// Invocations per workgroup.
    pub const fn invocations(self) -> u32 {
        (self.tile_m / self.thread_m) * (self.tile_n / self.thread_n)
    }

    /// Shared memory the configuration stages, for accumulators of `accumulator_bytes`.
    pub const fn shared_bytes(self, accumulator_bytes: u32) -> u32 {
        (self.tile_m + self.tile_n + 2 * TILE_PAD) * self.tile_k * accumulator_bytes
    }

    /// The name used in kernel names and the autotune file: `128x128x8/8x8`.
    pub fn label(self) -> String {
        format!(
            "{}x{}x{}/{}x{}",
            self.tile_m, self.tile_n, self.tile_k, self.thread_m, self.thread_n
        )
    }

    /// Parses [`TileConfig::label`]'s format.
    pub fn parse(text: &str) -> Option<TileConfig> {
        let (tile, thread) = text.split_once('/')?;
        let mut tile = tile.split('x').map(|part| part.parse::<u32>().ok());
        let mut thread = thread.split('x').map(|part| part.parse::<u32>().ok());
        let config = TileConfig {
            tile_m: tile.next()??,
            tile_n: tile.next()??,
            tile_k: tile.next()??,
            thread_m: thread.next()??,
            thread_n: thread.next()??,
        };
        let complete = tile.next().is_none() && thread.next().is_none();
        (complete && config.is_well_formed()).then_some(config)
    }

    /// Tiles divide evenly into register blocks, and staging loads cover whole tiles.
    pub fn is_well_formed(self) -> bool {
        let positive = [
            self.tile_m,
            self.tile_n,
            self.tile_k,
            self.thread_m,
            self.thread_n,
        ]
        .iter()
        .all(|&size| (1..=256).contains(&size));
        positive
            && self.tile_m.is_multiple_of(self.thread_m)
            && self.tile_n.is_multiple_of(self.thread_n)
            && (1..=1024).contains(&self.invocations())
            && self.tile_k.is_multiple_of(4)
            && self.tile_m.is_multiple_of(4)
            && self.tile_n.is_multiple_of(4)
    }
}

/// How the operands are laid out, which selects the staging loops of the template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OperandOrder {
    /// A's K axis has element stride 1 (row-major A).
    pub a_k_contiguous: bool,
    /// B's N axis has element stride 1 (row-major B).
    pub b_n_contiguous: bool,
    /// Staging may read four elements at once along the contiguous axes (their lengths are
    /// multiples of four and the operands' addresses are 16-byte aligned).
    pub vector_loads: bool,
}

/// The element type products are accumulated in.
pub const fn gemm_accumulator(elem: Elem) -> Elem {
    match elem {
        Elem::F16 | Elem::BF16 | Elem::F32 => Elem::F32,
        other => other,
    }
}

/// The kernel name of one instantiation: `gemm_f32_128x128x8_8x8_kn_v4_to_f32`.
pub fn gemm_kernel_name(
    input: Elem,
    output: Elem,
    config: TileConfig,
    order: OperandOrder,
    convolution: bool,
) -> String {
    format!(
        "gemm_{}_{}_{}{}{}{}_to_{}",
        input.name(),
        config.label().replace('/', "_"),
        if order.a_k_contiguous { "k" } else { "m" },
        if order.b_n_contiguous { "n" } else { "k" },
        if order.vector_loads { "_v4" } else { "" },
        if convolution { "_conv" } else { "" },
        output.name()
    )
}

/// Whether four-wide staging loads exist for `input` elements.
pub const fn has_vector_loads(input: Elem) -> bool {
    matches!(input, Elem::F32 | Elem::F16)
}

/// The shader of one instantiation: `input` operands, `output` elements written to C (the
/// result type, or the accumulator type for split-K partial sums); with `convolution`, B is
/// that convolution's input, gathered on the fly (implicit GEMM, `conv_gather.rs`); with
/// `epilogue`, each stored `output` element passes through it and C holds its result.
pub fn gemm_shader(
    input: Elem,
    output: Elem,
    config: TileConfig,
    order: OperandOrder,
    convolution: Option<&ConvolutionGather>,
    epilogue: Option<&GemmEpilogue>,
) -> String {
    let accumulator = gemm_accumulator(input);
    let accumulator_type = compute_type(accumulator);
    let multiply_add = if accumulator.is_float() {
        "fma(a_value, b_value, sum)"
    } else {
        "sum + a_value * b_value"
    };
    let vector_loads = order.vector_loads && has_vector_loads(input);
    let vector_type = match input {
        Elem::F16 => "f16vec4",
        _ => "vec4",
    };
    // An epilogue's helpers may round through bf16 and f16 whatever the GEMM's types.
    let bf16 = if input == Elem::BF16 || output == Elem::BF16 || epilogue.is_some() {
        BF16_HELPERS
    } else {
        ""
    };
    let a_staging = staging(Operand::A, order.a_k_contiguous, vector_loads, input);
    let b_staging = if convolution.is_some() {
        convolution_staging(config)
    } else {
        staging(Operand::B, !order.b_n_contiguous, vector_loads, input)
    };
    let declare = format!("{}\n{}", a_staging.declare(), b_staging.declare());
    let first_load = format!(
        "{}\n{}",
        a_staging.load("k_begin"),
        b_staging.load("k_begin")
    );
    let next_load = format!(
        "{}\n{}",
        a_staging.load("(k0 + TILE_K)"),
        b_staging.load("(k0 + TILE_K)")
    );
    let store_staged = format!("{}\n{}", a_staging.store(), b_staging.store());
    let loader = convolution.map_or_else(String::new, |gather| gather.functions(input));
    let stored_elem = epilogue.map_or(output, |epilogue| epilogue.output);
    let stored = match epilogue {
        Some(_) => format!(
            "nx_gemm_epilogue({}, batch, row, COLUMN)",
            store(output, "SUM")
        ),
        None => store(output, "SUM"),
    };
    let (row_part, column_part) = if convolution.is_some() {
        (
            "convolution_output_row(task, batch, row)",
            "convolution_output_column(COLUMN)",
        )
    } else {
        (
            "(uint64_t(task) * uint64_t(push.m) + uint64_t(row)) * uint64_t(push.n)",
            "uint64_t(COLUMN)",
        )
    };
    let output_bytes = storage_bytes(stored_elem);
    let (accumulators, product_steps, store_outputs) = if storage_bytes(accumulator) >= 8 {
        let block = RegisterBlock::new(config, accumulator_type);
        (
            block.zero_accumulators(),
            unrolled_k_steps(&block.product_step(multiply_add), config.tile_k),
            block.store(row_part, column_part, &stored, output_bytes),
        )
    } else {
        let column = "tile_n0 + block_n + j * (TILE_N / THREAD_N)";
        (
            LOOP_ACCUMULATORS.to_string(),
            looped_k_steps(&LOOP_PRODUCT_STEP.replace("MULTIPLY_ADD", multiply_add)),
            LOOP_STORE
                .replace("COLUMN_PART", &column_part.replace("COLUMN", column))
                .replace("ROW_PART", row_part)
                .replace("OUTPUT_BYTES", &output_bytes.to_string())
                .replace(
                    "STORED",
                    &stored
                        .replace("SUM", "sums[i][j]")
                        .replace("COLUMN", "column"),
                ),
        )
    };
    format!(
        "{FLOAT_CONTROLS}
#define TILE_M {tile_m}u
#define TILE_N {tile_n}u
#define TILE_K {tile_k}u
#define THREAD_M {thread_m}u
#define THREAD_N {thread_n}u
#define INVOCATIONS {invocations}u
#define TILE_PAD {TILE_PAD}u
#define ACC {accumulator_type}
layout(local_size_x = {invocations}) in;
layout(buffer_reference, scalar, buffer_reference_align = {input_bytes}) readonly buffer Element {{ {input_storage} v; }};
layout(buffer_reference, scalar, buffer_reference_align = {vector_align}) readonly buffer Element4 {{ {vector_type} v; }};
layout(buffer_reference, scalar, buffer_reference_align = {output_bytes}) writeonly buffer Output {{ {output_storage} v; }};
{push_block}
{bf16}
// Staged slices, K-major; each row padded so that staging stores along K fall in different
// banks.
shared ACC a_tile[TILE_K][TILE_M + TILE_PAD];
shared ACC b_tile[TILE_K][TILE_N + TILE_PAD];
{epilogue_functions}

ACC load_element(uint64_t address) {{ return {loaded}; }}
{loader}
void main() {{
    uint invocation = gl_LocalInvocationID.x;
    uint block_n = invocation % (TILE_N / THREAD_N);
    uint block_m = invocation / (TILE_N / THREAD_N);
    uint tile_m0 = gl_WorkGroupID.y * TILE_M;
    uint tile_n0 = gl_WorkGroupID.x * TILE_N;
{task_loop_head}{accumulators}{declare}
{first_load}
        for (uint k0 = k_begin; k0 < k_end; k0 += TILE_K) {{
{store_staged}
            barrier();
            if (k0 + TILE_K < k_end) {{
{next_load}
            }}
{product_steps}
            barrier();
        }}
        // C's element (row, column) is at row_part(row) + column_part(column) from push.c.
{store_outputs}    }}
}}
",
        tile_m = config.tile_m,
        tile_n = config.tile_n,
        tile_k = config.tile_k,
        thread_m = config.thread_m,
        thread_n = config.thread_n,
        invocations = config.invocations(),
        input_bytes = storage_bytes(input),
        input_storage = storage_type(input),
        vector_align = storage_bytes(input) * 4,
        output_storage = storage_type(stored_elem),
        loaded = load(input, "Element(address).v"),
        push_block = gemm_push_block(epilogue.is_some()),
        task_loop_head = gemm_task_loop_head(storage_bytes(input)),
        epilogue_functions = epilogue.map_or("", |epilogue| &epilogue.functions),
    )
}

/// The product over one staged slice for 8-byte accumulators: `product_step` once per K
/// index `kk` of the slice, unrolled here with `kk` a constant (on the H200 this took
/// dgemm_8192 from 18.1 to 20.1 TFLOP/s against the driver's own unrolling of the loop:
/// docs/BENCHMARKS.md, eleventh session).
fn unrolled_k_steps(product_step: &str, tile_k: u32) -> String {
    (0..tile_k)
        .map(|kk| format!("            {{\n                const uint kk = {kk}u;\n{product_step}            }}\n"))
        .collect()
}

/// The product over one staged slice for 4-byte accumulators, as a loop over `kk`: unrolled
/// in Rust, f32 gained only 0.6 % on the H200 (sgemm_8192 37.9 -> 38.1 TFLOP/s) while
/// lavapipe's compile time of every f32 GEMM nearly doubled, which the CI run could not bear.
fn looped_k_steps(product_step: &str) -> String {
    format!("            for (uint kk = 0u; kk < TILE_K; kk++) {{\n{product_step}            }}\n")
}

/// The register block of 4-byte accumulators as loops over arrays (the form f32 ran fastest
/// in on the H200; 8-byte accumulators take `dot_registers.rs`'s written-out block).
const LOOP_ACCUMULATORS: &str = "        ACC sums[THREAD_M][THREAD_N];
        for (uint i = 0u; i < THREAD_M; i++) {
            for (uint j = 0u; j < THREAD_N; j++) {
                sums[i][j] = ACC(0);
            }
        }
";

/// One K index `kk` of the looped block's product.
const LOOP_PRODUCT_STEP: &str = "                ACC a_block[THREAD_M];
                ACC b_block[THREAD_N];
                for (uint i = 0u; i < THREAD_M; i++) {
                    a_block[i] = a_tile[kk][block_m + i * (TILE_M / THREAD_M)];
                }
                for (uint j = 0u; j < THREAD_N; j++) {
                    b_block[j] = b_tile[kk][block_n + j * (TILE_N / THREAD_N)];
                }
                for (uint i = 0u; i < THREAD_M; i++) {
                    for (uint j = 0u; j < THREAD_N; j++) {
                        ACC a_value = a_block[i];
                        ACC b_value = b_block[j];
                        ACC sum = sums[i][j];
                        sums[i][j] = MULTIPLY_ADD;
                    }
                }
";

/// The looped block's store of every output in range.
const LOOP_STORE: &str = "        // the column parts are computed once per column.
        uint64_t column_parts[THREAD_N];
        for (uint j = 0u; j < THREAD_N; j++) {
            column_parts[j] = COLUMN_PART;
        }
        for (uint i = 0u; i < THREAD_M; i++) {
            uint row = tile_m0 + block_m + i * (TILE_M / THREAD_M);
            if (row >= push.m) break;
            uint64_t row_part = ROW_PART;
            for (uint j = 0u; j < THREAD_N; j++) {
                uint column = tile_n0 + block_n + j * (TILE_N / THREAD_N);
                if (column >= push.n) break;
                Output(push.c + (row_part + column_parts[j]) * OUTPUT_BYTESul).v = STORED;
            }
        }
";

/// How one operand's slice is staged: `slots` elements of `value_type` (one element or four)
/// per step, split over the workgroup; each invocation first loads its share into registers
/// (`load`, issued for the next step before the current one is computed, so global loads
/// overlap the arithmetic), then writes them into shared memory (`store`).
struct Staging {
    /// `a` or `b`.
    name: &'static str,
    /// `m` or `n`.
    axis: &'static str,
    value_type: &'static str,
    zero: &'static str,
    /// Elements per step (a GLSL constant expression).
    count: String,
    /// GLSL expressions decoding `slot` into `kk` and the row/column within the tile.
    k_local: String,
    axis_local: String,
    /// The GLSL expression loading the element at (`position`, `depth`).
    load: String,
    /// GLSL statements writing `value` at (`kk`, local) of the shared tile.
    scatter: String,
    /// GLSL statements run once per task, before the first load.
    prelude: String,
}

impl Staging {
    fn slots(&self) -> String {
        format!(
            "(({count} + INVOCATIONS - 1u) / INVOCATIONS)",
            count = self.count
        )
    }

    fn declare(&self) -> String {
        format!(
            "        {} {}_stage[{}];{}",
            self.value_type,
            self.name,
            self.slots(),
            self.prelude
        )
    }

    /// Loads the step starting at K index `k0` into the registers.
    fn load(&self, k0: &str) -> String {
        let Staging {
            name,
            axis,
            value_type,
            zero,
            count,
            k_local,
            axis_local,
            load,
            ..
        } = self;
        format!(
            "            for (uint r = 0u; r < {slots}; r++) {{
                uint slot = invocation + r * INVOCATIONS;
                {value_type} value = {zero};
                if (slot < {count}) {{
                    uint kk = {k_local};
                    uint {axis}_local = {axis_local};
                    uint position = tile_{axis}0 + {axis}_local;
                    uint depth = {k0} + kk;
                    if (position < push.{axis} && depth < k_end) {{
                        value = {load};
                    }}
                }}
                {name}_stage[r] = value;
            }}",
            slots = self.slots()
        )
    }

    fn store(&self) -> String {
        let Staging {
            name,
            axis,
            value_type,
            count,
            k_local,
            axis_local,
            scatter,
            ..
        } = self;
        format!(
            "            for (uint r = 0u; r < {slots}; r++) {{
                uint slot = invocation + r * INVOCATIONS;
                if (slot < {count}) {{
                    uint kk = {k_local};
                    uint {axis}_local = {axis_local};
                    {value_type} value = {name}_stage[r];
                    {scatter}
                }}
            }}",
            slots = self.slots()
        )
    }
}

/// B's staging for a convolution input: neighbouring invocations take neighbouring columns
/// (output positions, usually neighbouring input addresses). When the workgroup's invocations
/// are a whole number of tile rows, each invocation stages the same column at every slot and
/// step, so its column is decoded once per task.
fn convolution_staging(config: TileConfig) -> Staging {
    let fixed_column = config.invocations().is_multiple_of(config.tile_n);
    let (prelude, load) = if fixed_column {
        (
            "
        ConvolutionColumn b_column = convolution_column(batch, tile_n0 + invocation % TILE_N);",
            "load_convolution_input(b_column, depth)",
        )
    } else {
        (
            "",
            "load_convolution_input(convolution_column(batch, position), depth)",
        )
    };
    Staging {
        name: "b",
        axis: "n",
        value_type: "ACC",
        zero: "ACC(0)",
        count: "(TILE_N * TILE_K)".into(),
        k_local: "slot / TILE_N".into(),
        axis_local: "slot % TILE_N".into(),
        load: load.into(),
        scatter: "b_tile[kk][n_local] = value;".into(),
        prelude: prelude.into(),
    }
}

/// Which operand a staging fills: A (rows `m` of C) or B (columns `n`).
#[derive(Clone, Copy)]
enum Operand {
    A,
    B,
}

/// The staging of one strided operand. `k_fast` says the operand's K axis is the dense one
/// (neighbouring invocations then take neighbouring `k`); out-of-range elements stage zeros.
/// With `vector_loads`, each invocation reads four consecutive elements along the dense axis
/// (whose length the caller checked is a multiple of four, so a group is wholly in range or
/// wholly out).
fn staging(operand: Operand, k_fast: bool, vector_loads: bool, input: Elem) -> Staging {
    let (name, tile, axis, outer_stride, k_stride) = match operand {
        Operand::A => ("a", "TILE_M", "m", "a_m_stride", "a_k_stride"),
        Operand::B => ("b", "TILE_N", "n", "b_n_stride", "b_k_stride"),
    };
    let width = if vector_loads { 4 } else { 1 };
    let (k_local, axis_local) = if k_fast {
        (
            format!("(slot % (TILE_K / {width}u)) * {width}u"),
            format!("slot / (TILE_K / {width}u)"),
        )
    } else {
        (
            format!("slot / ({tile} / {width}u)"),
            format!("(slot % ({tile} / {width}u)) * {width}u"),
        )
    };
    let address = format!(
        "{name}_base + (uint64_t(position) * uint64_t(push.{outer_stride}) + uint64_t(depth) * uint64_t(push.{k_stride})) * {bytes}ul",
        bytes = storage_bytes(input)
    );
    let count = format!("(({tile} * TILE_K) / {width}u)");
    if vector_loads {
        let load = match input {
            Elem::F16 => format!("vec4(Element4({address}).v)"),
            _ => format!("Element4({address}).v"),
        };
        let (k_step, axis_step) = if k_fast {
            ("lane", "0u")
        } else {
            ("0u", "lane")
        };
        Staging {
            name,
            axis,
            value_type: "vec4",
            zero: "vec4(0.0)",
            count,
            k_local,
            axis_local,
            load,
            scatter: format!(
                "for (uint lane = 0u; lane < 4u; lane++) {{
                        {name}_tile[kk + {k_step}][{axis}_local + {axis_step}] = value[lane];
                    }}"
            ),
            prelude: String::new(),
        }
    } else {
        Staging {
            name,
            axis,
            value_type: "ACC",
            zero: "ACC(0)",
            count,
            k_local,
            axis_local,
            load: format!("load_element({address})"),
            scatter: format!("{name}_tile[kk][{axis}_local] = value;"),
            prelude: String::new(),
        }
    }
}

//! GLSL for the catalog's reduction kernels: one template per memory layout of the reduced
//! elements, each serving every reduction and dtype.
//!
//! - [`ReduceLayout::Strided`], the general one: a workgroup reduces one output element (or one
//!   chunk of one), each invocation folding a strided run of the reduced elements addressed
//!   through shapes and strides, then a shared-memory tree over the 256 partial results. Any
//!   view (transposed, sliced, broadcast, several reduced axes) reduces in place.
//! - [`ReduceLayout::Rows`]: every output reduces one contiguous run (the last axes of a
//!   contiguous tensor, or all of them). A team (a whole workgroup for long rows, one subgroup
//!   per row for short ones) reads the run in packets of four elements (one vector load each,
//!   four packets in flight per invocation), folds each packet lane into its own accumulator,
//!   then combines lanes, the subgroup (a shuffle butterfly) and, for workgroup teams, the
//!   subgroups through shared memory. Long runs split into chunks whose partial results a
//!   second pass (the same kernel, one row of partials) reduces.
//! - [`ReduceLayout::Columns`]: the outputs are contiguous columns and the reduced axis walks
//!   rows with a stride. An invocation owns a column (or four neighbours, one vector load per
//!   row, when aligned), walks its chunk of rows in order, and writes one partial per chunk;
//!   further passes reduce the partial rows the same way until one row is left.
//!
//! Accumulation order of float sums (deterministic for a given device): Strided is a
//! per-invocation sequential run then a binary tree; Rows is four interleaved per-invocation
//! sequential runs (one per packet lane) combined pairwise, then a butterfly tree over the
//! subgroup, a short sequential fold of subgroup results (as many as subgroups per lane) and
//! a second butterfly; Columns is sequential over at most a chunk of rows per pass, passes
//! nesting like a tree. The Rows order depends on the subgroup size (8 on lavapipe, 32 on
//! NVIDIA), so f32 sums may differ in the last bits between devices, not between runs.
//!
//! Kernels write the accumulator type (`accumulator_elem`); the eager API casts to Nx's result
//! type afterwards where the two differ (f16 and bf16 sums accumulate in f32). Like
//! `codegen.rs`, this file is included by the build script and depends only on the op table and
//! the elementwise code generators.

use crate::codegen::{
    BF16_HELPERS, FLOAT_CONTROLS, complex_prelude, compute_type, load, storage_bytes, storage_type,
    store, value_alignment, value_storage_bytes,
};
use crate::dense_codegen::{PACKET_ELEMENTS, packet_bytes, packet_type};
use crate::op_table::{ComplexElem, Elem, ValueType};
use std::fmt::Write as _;

/// Invocations per workgroup of every reduction kernel (a power of two: the tree halves it).
pub const REDUCE_WORKGROUP_SIZE: u32 = 256;

/// Bytes of push constants of the reduction kernels: input, output and parameter-block
/// addresses, then output count, reduced count, kept rank, reduced rank, chunks and flags.
pub const REDUCE_PUSH_CONSTANT_BYTES: usize = 48;

/// Byte offset of the parameter block's address in the push constants.
pub const REDUCE_PARAMS_ADDRESS_OFFSET: usize = 16;

/// Flag bit: argmax/argmin break ties towards the highest index (Nx's `tie_break: :high`).
pub const FLAG_TIE_BREAK_HIGH: u32 = 1;

/// Flag bit of [`ReduceLayout::Rows`]: one subgroup per row instead of one workgroup.
pub const FLAG_SUBGROUP_TEAMS: u32 = 2;

/// Flag bit of [`ReduceLayout::Columns`]: each invocation owns four neighbouring columns and
/// loads them as one packet per row.
pub const FLAG_PACKED_COLUMNS: u32 = 4;

/// Flag bit of the complex product: this pass writes the results (not partial products).
pub const FLAG_FINAL_PASS: u32 = 8;

/// How the elements one output reduces lie in memory, which picks the kernel's template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceLayout {
    /// Any kept and reduced axes, through shapes and strides.
    Strided,
    /// Each output reduces one contiguous run of elements; kept axes through shapes and strides.
    Rows,
    /// Outputs are contiguous columns; the one reduced axis has a stride (the row length).
    Columns,
}

impl ReduceLayout {
    pub const ALL: [ReduceLayout; 3] = [
        ReduceLayout::Strided,
        ReduceLayout::Rows,
        ReduceLayout::Columns,
    ];

    /// Position in [`ReduceLayout::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The kernel name suffix (`reduce_sum_f32_rows`).
    const fn suffix(self) -> &'static str {
        match self {
            ReduceLayout::Strided => "",
            ReduceLayout::Rows => "_rows",
            ReduceLayout::Columns => "_columns",
        }
    }
}

/// The reductions of Nx.Backend the catalog implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Product,
    ReduceMax,
    ReduceMin,
    All,
    Any,
    ArgMax,
    ArgMin,
}

impl ReduceOp {
    pub const ALL: &'static [ReduceOp] = &[
        ReduceOp::Sum,
        ReduceOp::Product,
        ReduceOp::ReduceMax,
        ReduceOp::ReduceMin,
        ReduceOp::All,
        ReduceOp::Any,
        ReduceOp::ArgMax,
        ReduceOp::ArgMin,
    ];

    /// Nx's name of the op.
    pub const fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Product => "product",
            ReduceOp::ReduceMax => "reduce_max",
            ReduceOp::ReduceMin => "reduce_min",
            ReduceOp::All => "all",
            ReduceOp::Any => "any",
            ReduceOp::ArgMax => "argmax",
            ReduceOp::ArgMin => "argmin",
        }
    }

    /// Position in [`ReduceOp::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// True for argmax and argmin, which produce indices.
    pub const fn is_arg(self) -> bool {
        matches!(self, ReduceOp::ArgMax | ReduceOp::ArgMin)
    }

    /// True when a reduction over no elements has no value (Nx has no identity for it).
    pub const fn needs_elements(self) -> bool {
        matches!(
            self,
            ReduceOp::ReduceMax | ReduceOp::ReduceMin | ReduceOp::ArgMax | ReduceOp::ArgMin
        )
    }
}

/// The type sums and products accumulate in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Accumulation {
    /// Nx's aggregate type: 64-bit integers, f32 for f16, bf16 and f32, f64 for f64.
    #[default]
    Native,
    /// f64 for every float type (more accurate f32 sums, at f64 speed).
    F64,
}

/// The element type a reduction kernel accumulates in and writes.
pub const fn accumulator_elem(op: ReduceOp, input: Elem, accumulation: Accumulation) -> Elem {
    match op {
        ReduceOp::Sum | ReduceOp::Product => match input {
            Elem::S8 | Elem::S16 | Elem::S32 | Elem::S64 => Elem::S64,
            Elem::U8 | Elem::U16 | Elem::U32 | Elem::U64 => Elem::U64,
            Elem::F16 | Elem::BF16 | Elem::F32 => match accumulation {
                Accumulation::Native => Elem::F32,
                Accumulation::F64 => Elem::F64,
            },
            Elem::F64 => Elem::F64,
        },
        ReduceOp::ReduceMax | ReduceOp::ReduceMin => input,
        ReduceOp::All | ReduceOp::Any => Elem::U8,
        ReduceOp::ArgMax | ReduceOp::ArgMin => Elem::S64,
    }
}

/// True when the catalog has an [`Accumulation::F64`] variant of `op` on `input` (one that
/// differs from the native kernel).
pub const fn has_f64_variant(op: ReduceOp, input: Elem) -> bool {
    matches!(op, ReduceOp::Sum | ReduceOp::Product)
        && matches!(input, Elem::F16 | Elem::BF16 | Elem::F32)
}

/// The kernel name of `op` on `input` (`reduce_sum_f32`, `reduce_sum_f32_acc_f64`, `argmax_s8`).
pub fn reduce_kernel_name(
    op: ReduceOp,
    input: Elem,
    accumulation: Accumulation,
    layout: ReduceLayout,
) -> String {
    let prefix = if op.is_arg() { "" } else { "reduce_" };
    let base = op.name().trim_start_matches("reduce_");
    let suffix = match accumulation {
        Accumulation::F64 if has_f64_variant(op, input) => "_acc_f64",
        _ => "",
    };
    format!("{prefix}{base}_{}{suffix}{}", input.name(), layout.suffix())
}

/// The largest and smallest value of a GLSL compute type, as literals.
fn compute_limits(glsl_type: &str) -> (&'static str, &'static str) {
    match glsl_type {
        "int" => ("2147483647", "(-2147483647 - 1)"),
        "uint" => ("4294967295u", "0u"),
        "int64_t" => ("9223372036854775807l", "(-9223372036854775807l - 1l)"),
        "uint64_t" => ("18446744073709551615ul", "0ul"),
        "float" => (
            "uintBitsToFloat(0x7F800000u)",
            "uintBitsToFloat(0xFF800000u)",
        ),
        _ => (
            "packDouble2x32(uvec2(0u, 0x7FF00000u))",
            "packDouble2x32(uvec2(0u, 0xFFF00000u))",
        ),
    }
}

/// The identity and the combining expression of `op` over values of GLSL type `value_type`
/// (the macro `V`), combining `a` and `b`: shared by the catalog's reduction kernels and
/// nxvk-fusion's fused ones, so both fold with the same NaN rules.
pub fn fold(op: ReduceOp, value_type: &str, is_float: bool) -> (String, String) {
    let (max, min) = compute_limits(value_type);
    match op {
        ReduceOp::Sum => ("V(0)".to_owned(), "a + b".to_owned()),
        ReduceOp::Product => ("V(1)".to_owned(), "a * b".to_owned()),
        ReduceOp::ReduceMax | ReduceOp::ReduceMin => {
            let (identity, comparison) = if op == ReduceOp::ReduceMax {
                (min, ">")
            } else {
                (max, "<")
            };
            // NaN wins (Nx.BinaryBackend's non_finite_max/min); `a + b` is a NaN then.
            let nan = if is_float {
                "(isnan(a) || isnan(b)) ? a + b : "
            } else {
                ""
            };
            (
                format!("V({identity})"),
                format!("{nan}((a {comparison} b) ? a : b)"),
            )
        }
        ReduceOp::All => ("V(1)".to_owned(), "a & b".to_owned()),
        ReduceOp::Any => ("V(0)".to_owned(), "a | b".to_owned()),
        ReduceOp::ArgMax | ReduceOp::ArgMin => ("V(0)".to_owned(), "a".to_owned()),
    }
}

/// The value type folded: the accumulator's compute type, or the input's for argmax/argmin
/// (whose accumulator is the index beside it).
fn folded_type(op: ReduceOp, input: Elem, accumulation: Accumulation) -> &'static str {
    if op.is_arg() {
        compute_type(input)
    } else {
        compute_type(accumulator_elem(op, input, accumulation))
    }
}

/// The whole shader of `op` on `input` elements for `layout`.
pub fn reduce_shader(
    op: ReduceOp,
    input: Elem,
    accumulation: Accumulation,
    layout: ReduceLayout,
) -> String {
    let mut shader = reduce_prelude(op, input, accumulation);
    shader.push_str(&match layout {
        ReduceLayout::Strided => STRIDED_MAIN.to_owned(),
        ReduceLayout::Rows => format!(
            "{}{ROWS_MAIN}",
            subgroup_helpers(folded_type(op, input, accumulation))
        ),
        ReduceLayout::Columns => COLUMNS_MAIN.to_owned(),
    });
    shader
}

/// Everything of a reduction shader but its `main`: the push constants, the loads and
/// offsets, the fold and store functions (shared with the second pass of
/// `argmax_two_pass.rs`).
pub fn reduce_prelude(op: ReduceOp, input: Elem, accumulation: Accumulation) -> String {
    let accumulator = accumulator_elem(op, input, accumulation);
    let value_type = folded_type(op, input, accumulation);
    let is_float = input.is_float();
    let (identity, combine) = fold(op, value_type, is_float);
    let loaded = load(input, "raw");
    let value_of_raw = match op {
        ReduceOp::All | ReduceOp::Any => {
            format!("(({loaded}) != {}(0)) ? 1u : 0u", compute_type(input))
        }
        _ => format!("V({loaded})"),
    };
    let better = if op == ReduceOp::ArgMax { ">" } else { "<" };
    let nan_rule = if is_float && op.is_arg() {
        "
    bool a_nan = isnan(a);
    bool b_nan = isnan(b);
    // Nx.BinaryBackend: every NaN replaces the current extreme, so the last NaN wins.
    if (a_nan || b_nan) return (a_nan && b_nan) ? b_index > a_index : b_nan;"
    } else {
        ""
    };
    // Folding (value, index) pairs: indices only matter to argmax/argmin.
    let fold_step = if op.is_arg() {
        "if (nx_take(value, index, other_value, other_index)) { value = other_value; index = other_index; }"
    } else {
        "value = nx_combine(value, other_value);"
    };
    let mut shader = String::from(FLOAT_CONTROLS);
    shader.push_str(BF16_HELPERS);
    let _ = write!(
        shader,
        "
#define V {value_type}
#define INPUT_BYTES {input_bytes}ul
// Indices are 32-bit: every reduced extent is below launch::MAX_ELEMENTS (< 2^32 - 1), so
// NO_INDEX never names an element (and argmax folds no 64-bit arithmetic per element).
#define NO_INDEX 0xFFFFFFFFu
#define IDENTITY {identity}
#define HAS_INDEX {has_index}
#define WORKGROUP_SIZE {REDUCE_WORKGROUP_SIZE}u
#define PACKET_ELEMENTS {PACKET_ELEMENTS}u
#define INPUT_PACKET {input_packet}
#define FLAG_SUBGROUP_TEAMS {FLAG_SUBGROUP_TEAMS}u
#define FLAG_PACKED_COLUMNS {FLAG_PACKED_COLUMNS}u
// Folds (other_value, other_index) into (value, index).
#define NX_FOLD(value, index, other_value, other_index) {{ {fold_step} }}
// Folds packet lane k into accumulator k (element indices `element` + k, or all `row`).
#define NX_FOLD_PACKET(packet, element) \\
    NX_FOLD(value0, index0, nx_value(packet.x), uint(element)) \\
    NX_FOLD(value1, index1, nx_value(packet.y), uint(element) + 1u) \\
    NX_FOLD(value2, index2, nx_value(packet.z), uint(element) + 2u) \\
    NX_FOLD(value3, index3, nx_value(packet.w), uint(element) + 3u)
#define NX_FOLD_COLUMNS(packet, row) \\
    NX_FOLD(value0, index0, nx_value(packet.x), row) \\
    NX_FOLD(value1, index1, nx_value(packet.y), row) \\
    NX_FOLD(value2, index2, nx_value(packet.z), row) \\
    NX_FOLD(value3, index3, nx_value(packet.w), row)
layout(local_size_x = {REDUCE_WORKGROUP_SIZE}) in;
// Elements are addressed in 64 bits (32-bit array indices wrap the byte offset past 4 GiB on
// NVIDIA's driver).
layout(buffer_reference, scalar, buffer_reference_align = {input_bytes}) readonly buffer Input {{ {input_storage} v; }};
layout(buffer_reference, scalar, buffer_reference_align = {packet_bytes}) readonly buffer InputPacket {{ {input_packet} v; }};
layout(buffer_reference, scalar, buffer_reference_align = {output_bytes}) writeonly buffer Output {{ {output_storage} v; }};
{PUSH_AND_OFFSETS}
V nx_value({input_storage} raw) {{ return {value_of_raw}; }}

V nx_load(uint64_t element) {{ return nx_value(Input(push.input0 + element * INPUT_BYTES).v); }}

{input_packet} nx_load_packet(uint64_t element) {{
    return InputPacket(push.input0 + element * INPUT_BYTES).v;
}}

void nx_store(uint position, V value, uint index) {{
    Output(push.output0 + uint64_t(position) * {output_bytes}ul).v = {stored};
}}

V nx_combine(V a, V b) {{ return {combine}; }}

// True when (b, b_index) should replace (a, a_index) as the extreme of an argmax/argmin.
bool nx_take(V a, uint a_index, V b, uint b_index) {{
    if (b_index == NO_INDEX) return false;
    if (a_index == NO_INDEX) return true;{nan_rule}
    if (b {better} a) return true;
    if (a {better} b) return false;
    return ((push.flags & {FLAG_TIE_BREAK_HIGH}u) != 0u) ? b_index > a_index : b_index < a_index;
}}
",
        input_bytes = storage_bytes(input),
        has_index = u8::from(op.is_arg()),
        packet_bytes = packet_bytes(input),
        output_bytes = storage_bytes(accumulator),
        input_storage = storage_type(input),
        input_packet = packet_type(input),
        output_storage = storage_type(accumulator),
        stored = if op.is_arg() {
            "int64_t(index)".to_owned()
        } else {
            store(accumulator, "value")
        },
    );
    shader
}

/// The push constants and the parameter-block addressing every reduction kernel shares.
const PUSH_AND_OFFSETS: &str =
    "layout(buffer_reference, scalar) readonly buffer Params { uint v[]; };
layout(push_constant, scalar) uniform Push {
    uint64_t input0;
    uint64_t output0;
    Params params;
    uint n_outputs;
    uint n_reduced;
    uint kept_rank;
    uint reduced_rank;
    uint chunks;
    uint flags;
} push;

// Parameter words: kept shape, kept strides, reduced shape, reduced strides (row-major axes).
uint64_t nx_offset(uint index, uint first_word, uint rank) {
    uint64_t offset = 0ul;
    uint rest = index;
    for (uint axis = rank; axis > 0u; axis--) {
        uint size = push.params.v[first_word + axis - 1u];
        offset += uint64_t(rest % size) * uint64_t(push.params.v[first_word + rank + axis - 1u]);
        rest /= size;
    }
    return offset;
}";

/// Complex.multiply's product of a c64 or c128 input over any view, in the [`STRIDED_MAIN`]
/// template (the only layout complex products take: they are rare next to sums, which run as
/// real sums of the parts). Partial products fold without an identity (an index other than
/// `NO_INDEX` marks a value that holds elements); the final pass ([`FLAG_FINAL_PASS`])
/// multiplies by Elixir's integer 1 once, as BinaryBackend's fold starting from 1 does, which
/// turns a lone infinite part's zero partner into NaN there too. An empty group gives 1.
pub fn complex_product_shader(complex: ComplexElem) -> String {
    let mut shader = complex_prelude(complex, "", "");
    let value = ValueType::Complex(complex);
    let _ = write!(
        shader,
        "
#define V C
#define INPUT_BYTES {bytes}ul
#define NO_INDEX 0xFFFFFFFFu
#define IDENTITY C(1, 0)
#define WORKGROUP_SIZE {REDUCE_WORKGROUP_SIZE}u
#define NX_FOLD(value, index, other_value, other_index) {{ \\
    if (other_index != NO_INDEX) {{ \\
        value = (index == NO_INDEX) ? other_value : nx_cmul(value, other_value); \\
        index = 0u; \\
    }} \\
}}
layout(local_size_x = {REDUCE_WORKGROUP_SIZE}) in;
layout(buffer_reference, scalar, buffer_reference_align = {align}) readonly buffer Input {{ C v; }};
layout(buffer_reference, scalar, buffer_reference_align = {align}) writeonly buffer Output {{ C v; }};
{PUSH_AND_OFFSETS}
V nx_load(uint64_t element) {{ return Input(push.input0 + element * INPUT_BYTES).v; }}

void nx_store(uint position, V value, uint index) {{
    bool final_pass = (push.flags & {FLAG_FINAL_PASS}u) != 0u;
    V stored = (index == NO_INDEX) ? IDENTITY : (final_pass ? nx_times_one(value) : value);
    Output(push.output0 + uint64_t(position) * INPUT_BYTES).v = stored;
}}
{STRIDED_MAIN}",
        bytes = value_storage_bytes(value),
        align = value_alignment(value),
    );
    shader
}

/// Kernel name of the complex product (`reduce_product_c64`).
pub fn complex_product_kernel_name(complex: ComplexElem) -> String {
    format!("reduce_product_{}", complex.name())
}

/// The general template: one workgroup per (output, chunk) task, a shared-memory tree.
const STRIDED_MAIN: &str = "
shared V partial_value[WORKGROUP_SIZE];
shared uint partial_index[WORKGROUP_SIZE];

void main() {
    uint local = gl_LocalInvocationID.x;
    uint total = push.n_outputs * push.chunks;
    uint step = push.chunks * WORKGROUP_SIZE;
    uint reduced_first_word = 2u * push.kept_rank;
    // Grid-stride over workgroup tasks; `task` is uniform, so every barrier is reached by all.
    for (uint task = gl_WorkGroupID.x; task < total; task += gl_NumWorkGroups.x) {
        uint output_index = task / push.chunks;
        uint chunk = task % push.chunks;
        uint64_t base = nx_offset(output_index, 0u, push.kept_rank);
        V value = IDENTITY;
        uint index = NO_INDEX;
        for (uint reduced = chunk * WORKGROUP_SIZE + local; reduced < push.n_reduced; reduced += step) {
            V other_value = nx_load(base + nx_offset(reduced, reduced_first_word, push.reduced_rank));
            uint other_index = reduced;
            NX_FOLD(value, index, other_value, other_index)
        }
        partial_value[local] = value;
        partial_index[local] = index;
        barrier();
        for (uint half_size = WORKGROUP_SIZE / 2u; half_size > 0u; half_size >>= 1u) {
            if (local < half_size) {
                V other_value = partial_value[local + half_size];
                uint other_index = partial_index[local + half_size];
                value = partial_value[local];
                index = partial_index[local];
                NX_FOLD(value, index, other_value, other_index)
                partial_value[local] = value;
                partial_index[local] = index;
            }
            barrier();
        }
        if (local == 0u) {
            nx_store(task, partial_value[0], partial_index[0]);
        }
        barrier();
    }
}
";

/// Subgroup shuffles of the folded value and index. 64-bit values move as two 32-bit words:
/// shuffles of 64-bit integers need shaderSubgroupExtendedTypes, which not every device has.
fn subgroup_helpers(value_type: &str) -> String {
    let value_shuffle = match value_type {
        "int64_t" | "uint64_t" => {
            format!("{value_type}(nx_shuffle_xor_u64(uint64_t(value), mask))")
        }
        "double" => "packDouble2x32(subgroupShuffleXor(unpackDouble2x32(value), mask))".to_owned(),
        _ => "subgroupShuffleXor(value, mask)".to_owned(),
    };
    format!(
        "
uint64_t nx_shuffle_xor_u64(uint64_t word, uint mask) {{
    uvec2 words = subgroupShuffleXor(uvec2(uint(word), uint(word >> 32)), mask);
    return uint64_t(words.x) | (uint64_t(words.y) << 32);
}}

V nx_shuffle_xor_value(V value, uint mask) {{ return {value_shuffle}; }}
"
    )
}

/// The contiguous-run template (see the module documentation).
const ROWS_MAIN: &str = "
shared V subgroup_value[WORKGROUP_SIZE];
shared uint subgroup_index[WORKGROUP_SIZE];

// A butterfly over the subgroup: every lane ends with the fold of all lanes. Indices travel
// only for argmax/argmin.
void nx_subgroup_fold(inout V value, inout uint index) {
    for (uint mask = gl_SubgroupSize >> 1u; mask > 0u; mask >>= 1u) {
        V other_value = nx_shuffle_xor_value(value, mask);
#if HAS_INDEX
        uint other_index = subgroupShuffleXor(index, mask);
#else
        uint other_index = NO_INDEX;
#endif
        NX_FOLD(value, index, other_value, other_index)
    }
}

void main() {
    bool subgroup_teams = (push.flags & FLAG_SUBGROUP_TEAMS) != 0u;
    uint team = subgroup_teams ? gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID : gl_WorkGroupID.x;
    uint teams = subgroup_teams ? gl_NumWorkGroups.x * gl_NumSubgroups : gl_NumWorkGroups.x;
    uint lane = subgroup_teams ? gl_SubgroupInvocationID : gl_LocalInvocationID.x;
    uint team_size = subgroup_teams ? gl_SubgroupSize : WORKGROUP_SIZE;
    uint total = push.n_outputs * push.chunks;
    // Chunks hold whole packets, so every chunk of an aligned row starts aligned.
    uint chunk_length = ((push.n_reduced + push.chunks - 1u) / push.chunks + 3u) & ~3u;
    // `task` is uniform over the team, so shuffles and barriers are reached by all of it.
    for (uint task = team; task < total; task += teams) {
        uint row = task / push.chunks;
        uint chunk = task % push.chunks;
        uint64_t row_base = nx_offset(row, 0u, push.kept_rank);
        uint begin = min(chunk * chunk_length, push.n_reduced);
        uint end = min(begin + chunk_length, push.n_reduced);
        // Elements before the first packet-aligned one, whole packets, then the rest.
        uint head = min((PACKET_ELEMENTS - uint((row_base + uint64_t(begin)) % uint64_t(PACKET_ELEMENTS))) % PACKET_ELEMENTS, end - begin);
        uint body = begin + head;
        uint packets = (end - body) / PACKET_ELEMENTS;
        uint tail = body + packets * PACKET_ELEMENTS;
        V value0 = IDENTITY, value1 = IDENTITY, value2 = IDENTITY, value3 = IDENTITY;
        uint index0 = NO_INDEX, index1 = NO_INDEX, index2 = NO_INDEX, index3 = NO_INDEX;
        if (lane < head) {
            NX_FOLD(value0, index0, nx_load(row_base + uint64_t(begin + lane)), begin + lane)
        }
        if (lane < end - tail) {
            NX_FOLD(value1, index1, nx_load(row_base + uint64_t(tail + lane)), tail + lane)
        }
        uint packet = lane;
        // Four packets in flight per invocation, then one at a time.
        for (; packet + 3u * team_size < packets; packet += 4u * team_size) {
            uint64_t element = uint64_t(body) + uint64_t(packet) * uint64_t(PACKET_ELEMENTS);
            uint64_t step = uint64_t(team_size) * uint64_t(PACKET_ELEMENTS);
            INPUT_PACKET packet0 = nx_load_packet(row_base + element);
            INPUT_PACKET packet1 = nx_load_packet(row_base + element + step);
            INPUT_PACKET packet2 = nx_load_packet(row_base + element + 2ul * step);
            INPUT_PACKET packet3 = nx_load_packet(row_base + element + 3ul * step);
            NX_FOLD_PACKET(packet0, element)
            NX_FOLD_PACKET(packet1, element + step)
            NX_FOLD_PACKET(packet2, element + 2ul * step)
            NX_FOLD_PACKET(packet3, element + 3ul * step)
        }
        for (; packet < packets; packet += team_size) {
            uint64_t element = uint64_t(body) + uint64_t(packet) * uint64_t(PACKET_ELEMENTS);
            INPUT_PACKET packet0 = nx_load_packet(row_base + element);
            NX_FOLD_PACKET(packet0, element)
        }
        NX_FOLD(value0, index0, value1, index1)
        NX_FOLD(value2, index2, value3, index3)
        NX_FOLD(value0, index0, value2, index2)
        nx_subgroup_fold(value0, index0);
        if (subgroup_teams) {
            if (lane == 0u) {
                nx_store(task, value0, index0);
            }
            continue;
        }
        if (gl_SubgroupInvocationID == 0u) {
            subgroup_value[gl_SubgroupID] = value0;
            subgroup_index[gl_SubgroupID] = index0;
        }
        barrier();
        if (gl_SubgroupID == 0u) {
            V value = IDENTITY;
            uint index = NO_INDEX;
            for (uint subgroup = gl_SubgroupInvocationID; subgroup < gl_NumSubgroups; subgroup += gl_SubgroupSize) {
                NX_FOLD(value, index, subgroup_value[subgroup], subgroup_index[subgroup])
            }
            nx_subgroup_fold(value, index);
            if (lane == 0u) {
                nx_store(task, value, index);
            }
        }
        barrier();
    }
}
";

/// The column template (see the module documentation).
const COLUMNS_MAIN: &str = "
void main() {
    bool packed = (push.flags & FLAG_PACKED_COLUMNS) != 0u;
    uint width = packed ? PACKET_ELEMENTS : 1u;
    uint column_groups = (push.n_outputs + width - 1u) / width;
    uint total = column_groups * push.chunks;
    // Parameter words: kept shape and stride (one axis of stride 1), reduced shape and stride.
    uint64_t row_stride = uint64_t(push.params.v[3]);
    uint rows_per_chunk = (push.n_reduced + push.chunks - 1u) / push.chunks;
    uint threads = gl_NumWorkGroups.x * WORKGROUP_SIZE;
    // Neighbouring invocations own neighbouring columns: every row read is coalesced.
    for (uint item = gl_GlobalInvocationID.x; item < total; item += threads) {
        uint column = (item % column_groups) * width;
        uint chunk = item / column_groups;
        uint row = min(chunk * rows_per_chunk, push.n_reduced);
        uint end = min(row + rows_per_chunk, push.n_reduced);
        uint position = chunk * push.n_outputs + column;
        if (packed) {
            V value0 = IDENTITY, value1 = IDENTITY, value2 = IDENTITY, value3 = IDENTITY;
            uint index0 = NO_INDEX, index1 = NO_INDEX, index2 = NO_INDEX, index3 = NO_INDEX;
            // Four rows in flight, folded in row order.
            for (; row + 3u < end; row += 4u) {
                uint64_t element = uint64_t(row) * row_stride + uint64_t(column);
                INPUT_PACKET packet0 = nx_load_packet(element);
                INPUT_PACKET packet1 = nx_load_packet(element + row_stride);
                INPUT_PACKET packet2 = nx_load_packet(element + 2ul * row_stride);
                INPUT_PACKET packet3 = nx_load_packet(element + 3ul * row_stride);
                NX_FOLD_COLUMNS(packet0, row)
                NX_FOLD_COLUMNS(packet1, row + 1u)
                NX_FOLD_COLUMNS(packet2, row + 2u)
                NX_FOLD_COLUMNS(packet3, row + 3u)
            }
            for (; row < end; row++) {
                INPUT_PACKET packet0 = nx_load_packet(uint64_t(row) * row_stride + uint64_t(column));
                NX_FOLD_COLUMNS(packet0, row)
            }
            nx_store(position, value0, index0);
            nx_store(position + 1u, value1, index1);
            nx_store(position + 2u, value2, index2);
            nx_store(position + 3u, value3, index3);
        } else {
            V value = IDENTITY;
            uint index = NO_INDEX;
            for (; row < end; row++) {
                NX_FOLD(value, index, nx_load(uint64_t(row) * row_stride + uint64_t(column)), row)
            }
            nx_store(position, value, index);
        }
    }
}
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_accumulators_follow_nx_aggregate_types() {
        assert_eq!(
            reduce_kernel_name(
                ReduceOp::Sum,
                Elem::F32,
                Accumulation::F64,
                ReduceLayout::Rows
            ),
            "reduce_sum_f32_acc_f64_rows"
        );
        assert_eq!(
            reduce_kernel_name(
                ReduceOp::ReduceMax,
                Elem::S8,
                Accumulation::F64,
                ReduceLayout::Strided
            ),
            "reduce_max_s8"
        );
        assert_eq!(
            reduce_kernel_name(
                ReduceOp::ArgMin,
                Elem::BF16,
                Accumulation::Native,
                ReduceLayout::Columns
            ),
            "argmin_bf16_columns"
        );
        assert_eq!(
            accumulator_elem(ReduceOp::Sum, Elem::U8, Accumulation::Native),
            Elem::U64
        );
        assert_eq!(
            accumulator_elem(ReduceOp::Product, Elem::F16, Accumulation::Native),
            Elem::F32
        );
        assert_eq!(
            accumulator_elem(ReduceOp::Any, Elem::F64, Accumulation::Native),
            Elem::U8
        );
    }

    /// Data buffers are reached through 64-bit byte offsets, never 32-bit array indices (the
    /// parameter block, a few words long, is the one indexed array).
    #[test]
    fn shaders_address_elements_in_64_bits() {
        for &op in ReduceOp::ALL {
            for layout in ReduceLayout::ALL {
                let shader = reduce_shader(op, Elem::F16, Accumulation::Native, layout);
                assert!(shader.contains("Input(push.input0 + element * INPUT_BYTES)"));
                assert!(shader.contains("InputPacket(push.input0 + element * INPUT_BYTES)"));
                assert!(shader.contains("Output(push.output0 + uint64_t(position) *"));
                assert!(!shader.contains("Input v[") && !shader.contains("v[index]"));
            }
        }
    }
}

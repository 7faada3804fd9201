//! GLSL for the catalog's reduction kernels, one template for every reduction and dtype.
//!
//! A workgroup reduces one output element (or, for the first pass of a two-pass reduction, one
//! chunk of one): each invocation folds a strided run of the reduced elements sequentially,
//! then the workgroup combines the 256 partial results with a shared-memory tree. The tree
//! (rather than one long sequential loop, or subgroup operations whose width differs between
//! drivers: 8 on lavapipe, 32 on NVIDIA) keeps f32 sums accurate and the result independent of
//! the subgroup size. Kept and reduced axes are addressed through shapes and element strides
//! read from a parameter block, so any view (transposed, sliced, broadcast) is reduced in place.
//!
//! Kernels write the accumulator type (`accumulator_elem`); the eager API casts to Nx's result
//! type afterwards where the two differ (f16 and bf16 sums accumulate in f32). Like
//! `codegen.rs`, this file is included by the build script and depends only on the op table and
//! the elementwise code generator.

use crate::codegen::{
    BF16_HELPERS, FLOAT_CONTROLS, compute_type, load, storage_bytes, storage_type, store,
};
use crate::op_table::Elem;
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
pub fn reduce_kernel_name(op: ReduceOp, input: Elem, accumulation: Accumulation) -> String {
    let prefix = if op.is_arg() { "" } else { "reduce_" };
    let base = op.name().trim_start_matches("reduce_");
    let suffix = match accumulation {
        Accumulation::F64 if has_f64_variant(op, input) => "_acc_f64",
        _ => "",
    };
    format!("{prefix}{base}_{}{suffix}", input.name())
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

/// The whole shader of `op` on `input` elements.
pub fn reduce_shader(op: ReduceOp, input: Elem, accumulation: Accumulation) -> String {
    let accumulator = accumulator_elem(op, input, accumulation);
    // The value type folded by the tree: the accumulator's compute type, or the input's for
    // argmax/argmin (whose accumulator is the index beside it).
    let value_type = if op.is_arg() {
        compute_type(input)
    } else {
        compute_type(accumulator)
    };
    let loaded = load(input, "Input(push.input0 + element * INPUT_BYTES).v");
    let is_float = input.is_float();
    let (identity, combine) = fold(op, value_type, is_float);
    let load_value = match op {
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
    let mut shader = String::from(FLOAT_CONTROLS);
    shader.push_str(BF16_HELPERS);
    let _ = write!(
        shader,
        "
#define V {value_type}
#define INPUT_BYTES {input_bytes}ul
#define NO_INDEX 0xFFFFFFFFFFFFFFFFul
layout(local_size_x = {REDUCE_WORKGROUP_SIZE}) in;
// One element per reference, addressed in 64 bits (32-bit array indices wrap the byte offset
// past 4 GiB on NVIDIA's driver).
layout(buffer_reference, scalar, buffer_reference_align = {input_bytes}) readonly buffer Input {{ {input_storage} v; }};
layout(buffer_reference, scalar, buffer_reference_align = {output_bytes}) writeonly buffer Output {{ {output_storage} v; }};
layout(buffer_reference, scalar) readonly buffer Params {{ uint v[]; }};
layout(push_constant, scalar) uniform Push {{
    uint64_t input0;
    uint64_t output0;
    Params params;
    uint n_outputs;
    uint n_reduced;
    uint kept_rank;
    uint reduced_rank;
    uint chunks;
    uint flags;
}} push;

shared V partial_value[{REDUCE_WORKGROUP_SIZE}];
shared uint64_t partial_index[{REDUCE_WORKGROUP_SIZE}];

// Parameter words: kept shape, kept strides, reduced shape, reduced strides (row-major axes).
uint64_t nx_offset(uint index, uint first_word, uint rank) {{
    uint64_t offset = 0ul;
    uint rest = index;
    for (uint axis = rank; axis > 0u; axis--) {{
        uint size = push.params.v[first_word + axis - 1u];
        offset += uint64_t(rest % size) * uint64_t(push.params.v[first_word + rank + axis - 1u]);
        rest /= size;
    }}
    return offset;
}}

V nx_load(uint64_t element) {{ return {load_value}; }}

V nx_combine(V a, V b) {{ return {combine}; }}

// True when (b, b_index) should replace (a, a_index) as the extreme of an argmax/argmin.
bool nx_take(V a, uint64_t a_index, V b, uint64_t b_index) {{
    if (b_index == NO_INDEX) return false;
    if (a_index == NO_INDEX) return true;{nan_rule}
    if (b {better} a) return true;
    if (a {better} b) return false;
    return ((push.flags & {FLAG_TIE_BREAK_HIGH}u) != 0u) ? b_index > a_index : b_index < a_index;
}}

void main() {{
    uint local = gl_LocalInvocationID.x;
    uint total = push.n_outputs * push.chunks;
    uint step = push.chunks * {REDUCE_WORKGROUP_SIZE}u;
    uint reduced_first_word = 2u * push.kept_rank;
    // Grid-stride over workgroup tasks; `task` is uniform, so every barrier is reached by all.
    for (uint task = gl_WorkGroupID.x; task < total; task += gl_NumWorkGroups.x) {{
        uint output_index = task / push.chunks;
        uint chunk = task % push.chunks;
        uint64_t base = nx_offset(output_index, 0u, push.kept_rank);
        V value = {identity};
        uint64_t index = NO_INDEX;
        for (uint reduced = chunk * {REDUCE_WORKGROUP_SIZE}u + local; reduced < push.n_reduced; reduced += step) {{
            V element = nx_load(base + nx_offset(reduced, reduced_first_word, push.reduced_rank));
            {fold}
        }}
        partial_value[local] = value;
        partial_index[local] = index;
        barrier();
        for (uint half_size = {half}u; half_size > 0u; half_size >>= 1u) {{
            if (local < half_size) {{
                {tree}
            }}
            barrier();
        }}
        if (local == 0u) {{
            Output(push.output0 + uint64_t(task) * {output_bytes}ul).v = {stored};
        }}
        barrier();
    }}
}}
",
        input_bytes = storage_bytes(input),
        output_bytes = storage_bytes(accumulator),
        input_storage = storage_type(input),
        output_storage = storage_type(accumulator),
        half = REDUCE_WORKGROUP_SIZE / 2,
        fold = if op.is_arg() {
            "if (nx_take(value, index, element, uint64_t(reduced))) { value = element; index = uint64_t(reduced); }"
        } else {
            "value = nx_combine(value, element);"
        },
        tree = if op.is_arg() {
            "uint other = local + half_size;
                if (nx_take(partial_value[local], partial_index[local], partial_value[other], partial_index[other])) {
                    partial_value[local] = partial_value[other];
                    partial_index[local] = partial_index[other];
                }"
        } else {
            "partial_value[local] = nx_combine(partial_value[local], partial_value[local + half_size]);"
        },
        stored = if op.is_arg() {
            "int64_t(partial_index[0])".to_owned()
        } else {
            store(accumulator, "partial_value[0]")
        },
    );
    shader
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_accumulators_follow_nx_aggregate_types() {
        assert_eq!(
            reduce_kernel_name(ReduceOp::Sum, Elem::F32, Accumulation::F64),
            "reduce_sum_f32_acc_f64"
        );
        assert_eq!(
            reduce_kernel_name(ReduceOp::ReduceMax, Elem::S8, Accumulation::F64),
            "reduce_max_s8"
        );
        assert_eq!(
            reduce_kernel_name(ReduceOp::ArgMin, Elem::BF16, Accumulation::Native),
            "argmin_bf16"
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
            let shader = reduce_shader(op, Elem::F16, Accumulation::Native);
            assert!(shader.contains("Input(push.input0 + element * INPUT_BYTES)"));
            assert!(shader.contains("Output(push.output0 + uint64_t(task) *"));
            assert!(!shader.contains("Input v[") && !shader.contains("v[index]"));
        }
    }
}

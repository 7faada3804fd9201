//! GLSL for the catalog's scans (Nx's cumulative_sum, cumulative_product, cumulative_min and
//! cumulative_max), one template for every op and dtype, in three kernels.
//!
//! Lines of up to [`SCAN_LINE_MAX`] elements are scanned by one invocation each. For longer
//! lines, the block kernel scans blocks of [`SCAN_BLOCK`] consecutive elements: each
//! of the 256 invocations scans [`SCAN_ITEMS`] elements sequentially, a shared-memory
//! Hillis-Steele scan (8 steps) combines the invocations' totals, and every element gets its
//! invocation's prefix; each block's total goes to a carries buffer. A line longer than one
//! block is finished by scanning its carries (the same kernels, recursively, 1024 times
//! shorter each level) and running the carry kernel, which combines each element with the
//! scanned total of the blocks before its own. No invocation loops more than a few times per
//! group (lavapipe caps loops at 65,535 iterations), and a scan is O(n) work at any length.
//!
//! The input is contiguous (`[outer, length, inner]` around the scanned axis); `reverse`
//! scans from the end. Combining is `combine(earlier, later)`, which keeps Nx's rules for
//! NaN and equal operands of min and max. Complex sums and products (c64, c128) use the same
//! template over `vec2`/`dvec2` values: componentwise addition, and `glsl_complex.glsl`'s
//! Complex.multiply (IEEE Inf/NaN rules) in the component type. Like `codegen.rs`, this file
//! is included by the build script.

use crate::codegen::{
    BF16_HELPERS, FLOAT_CONTROLS, complex_prelude, complex_type, compute_type, load_value,
    store_value, value_alignment, value_storage_bytes, value_storage_type,
};
use crate::op_table::ValueType;
use std::fmt::Write as _;

/// Invocations per workgroup of the scan kernels.
pub const SCAN_WORKGROUP_SIZE: u32 = 256;

/// Elements each invocation scans sequentially.
pub const SCAN_ITEMS: u32 = 4;

/// Elements per block: one workgroup's share of a scan line.
pub const SCAN_BLOCK: u32 = SCAN_WORKGROUP_SIZE * SCAN_ITEMS;

/// Bytes of push constants: input, output and carries addresses, then length, inner, line
/// count, blocks per line and the reverse flag.
pub const SCAN_PUSH_CONSTANT_BYTES: usize = 44;

/// Nx's cumulative ops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScanOp {
    Sum,
    Product,
    Min,
    Max,
}

impl ScanOp {
    pub const ALL: [ScanOp; 4] = [ScanOp::Sum, ScanOp::Product, ScanOp::Min, ScanOp::Max];

    /// Nx's name of the op.
    pub const fn name(self) -> &'static str {
        match self {
            ScanOp::Sum => "cumulative_sum",
            ScanOp::Product => "cumulative_product",
            ScanOp::Min => "cumulative_min",
            ScanOp::Max => "cumulative_max",
        }
    }

    pub const fn index(self) -> usize {
        self as usize
    }

    /// True when the catalog has this scan on `value` (complex numbers have no order).
    pub const fn has_kernel(self, value: ValueType) -> bool {
        matches!(value, ValueType::Real(_)) || matches!(self, ScanOp::Sum | ScanOp::Product)
    }

    /// `combine(earlier, later)` in GLSL over the compute type `S` of `value`.
    const fn combine(self, value: ValueType) -> &'static str {
        let is_float = match value {
            ValueType::Real(elem) => elem.is_float(),
            ValueType::Complex(_) => {
                return match self {
                    ScanOp::Product => "return nx_cmul(earlier, later);",
                    _ => "return earlier + later;",
                };
            }
        };
        match (self, is_float) {
            (ScanOp::Sum, _) => "return earlier + later;",
            (ScanOp::Product, _) => "return earlier * later;",
            (ScanOp::Min, false) => "return (earlier <= later) ? earlier : later;",
            (ScanOp::Max, false) => "return (earlier >= later) ? earlier : later;",
            // NaN wins; equal operands give the earlier one (Nx's min and max).
            (ScanOp::Min, true) => {
                "if (isnan(earlier)) return earlier; if (isnan(later)) return later; return (earlier <= later) ? earlier : later;"
            }
            (ScanOp::Max, true) => {
                "if (isnan(earlier)) return earlier; if (isnan(later)) return later; return (earlier >= later) ? earlier : later;"
            }
        }
    }
}

/// Lines up to this length are scanned by one invocation each ([`ScanPass::Lines`]): short
/// lines would leave most of a block's workgroup idle, and neighbouring invocations then
/// read neighbouring elements whenever the scanned axis is not the last.
pub const SCAN_LINE_MAX: u32 = 64;

/// The kernels of a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScanPass {
    /// One invocation scans one whole (short) line sequentially.
    Lines,
    /// A workgroup scans one block of a long line and writes the block's total.
    Blocks,
    /// Combines each element of a long line with the scanned totals of the blocks before it.
    Carry,
}

impl ScanPass {
    pub const ALL: [ScanPass; 3] = [ScanPass::Lines, ScanPass::Blocks, ScanPass::Carry];

    pub const fn index(self) -> usize {
        self as usize
    }

    const fn prefix(self) -> &'static str {
        match self {
            ScanPass::Lines => "scan_lines",
            ScanPass::Blocks => "scan",
            ScanPass::Carry => "scan_carry",
        }
    }
}

/// Kernel name of a scan pass: `scan_lines_<op>_<dtype>`, `scan_<op>_<dtype>` (blocks) or
/// `scan_carry_<op>_<dtype>`.
pub fn scan_kernel_name(op: ScanOp, value: ValueType, pass: ScanPass) -> String {
    let short = op.name().trim_start_matches("cumulative_");
    format!("{}_{short}_{}", pass.prefix(), value.name())
}

/// The kernel of `pass` for `op` on `value` (complex: sums and products only).
pub fn scan_shader(op: ScanOp, value: ValueType, pass: ScanPass) -> String {
    // Complex shaders start from the complex prelude (float controls, the component's type
    // macros, `nx_cmul`); real ones need only the float controls and bf16 conversions.
    let (mut shader, compute) = match value {
        ValueType::Real(elem) => {
            let mut shader = String::from(FLOAT_CONTROLS);
            shader.push_str(BF16_HELPERS);
            (shader, compute_type(elem))
        }
        ValueType::Complex(complex) => (complex_prelude(complex, "", ""), complex_type(complex)),
    };
    let bytes = value_storage_bytes(value);
    let load = |access: &str| load_value(value, access);
    let store = |result: &str| store_value(value, result);
    let body = if pass == ScanPass::Lines {
        format!(
            "
void main() {{
    uint threads = gl_NumWorkGroups.x * {SCAN_WORKGROUP_SIZE}u;
    for (uint line = gl_GlobalInvocationID.x; line < push.lines; line += threads) {{
        S running = S(0);
        for (uint position = 0u; position < push.line_length; position++) {{
            uint64_t at = nx_element(line, position);
            S value = {value_load};
            running = (position == 0u) ? value : nx_combine(running, value);
            Element(push.output0 + at * {bytes}ul).v = {stored};
        }}
    }}
}}
",
            value_load = load(&format!("Element(push.input0 + at * {bytes}ul).v")),
            stored = store("running"),
        )
    } else if pass == ScanPass::Carry {
        format!(
            "
// Combines every element of blocks 1.. with the scanned total of the blocks before it.
void main() {{
    uint threads = gl_NumWorkGroups.x * {SCAN_WORKGROUP_SIZE}u;
    uint total = push.lines * push.line_length;
    for (uint index = gl_GlobalInvocationID.x; index < total; index += threads) {{
        uint line = index / push.line_length;
        uint position = index % push.line_length;
        uint block = position / {SCAN_BLOCK}u;
        if (block == 0u) continue;
        uint64_t at = nx_element(line, position);
        S carry = {carry_load};
        Element(push.output0 + at * {bytes}ul).v = {stored};
    }}
}}
",
            carry_load = load(&format!(
                "Element(push.carries + uint64_t(line * push.blocks + block - 1u) * {bytes}ul).v"
            )),
            stored = store(&format!(
                "nx_combine(carry, {})",
                load(&format!("Element(push.output0 + at * {bytes}ul).v"))
            )),
        )
    } else {
        format!(
            "
shared S partial[{SCAN_WORKGROUP_SIZE}];

void main() {{
    uint lane = gl_LocalInvocationID.x;
    uint groups = push.lines * push.blocks;
    for (uint group = gl_WorkGroupID.x; group < groups; group += gl_NumWorkGroups.x) {{
        uint line = group / push.blocks;
        uint block = group % push.blocks;
        uint first = block * {SCAN_BLOCK}u + lane * {SCAN_ITEMS}u;
        S items[{SCAN_ITEMS}];
        S running = S(0);
        for (uint item = 0u; item < {SCAN_ITEMS}u; item++) {{
            uint position = first + item;
            if (position < push.line_length) {{
                S value = {value_load};
                running = (item == 0u) ? value : nx_combine(running, value);
            }}
            items[item] = running;
        }}
        partial[lane] = running;
        barrier();
        for (uint offset = 1u; offset < {SCAN_WORKGROUP_SIZE}u; offset <<= 1) {{
            S value = partial[lane];
            if (lane >= offset) value = nx_combine(partial[lane - offset], value);
            barrier();
            partial[lane] = value;
            barrier();
        }}
        for (uint item = 0u; item < {SCAN_ITEMS}u; item++) {{
            uint position = first + item;
            if (position < push.line_length) {{
                S value = (lane == 0u) ? items[item] : nx_combine(partial[lane - 1u], items[item]);
                Element(push.output0 + nx_element(line, position) * {bytes}ul).v = {stored};
            }}
        }}
        if (lane == 0u && push.blocks > 1u) {{
            uint last = min({SCAN_BLOCK}u, push.line_length - block * {SCAN_BLOCK}u) - 1u;
            Element(push.carries + uint64_t(group) * {bytes}ul).v = {carry_stored};
        }}
        barrier();
    }}
}}
",
            value_load = load(&format!(
                "Element(push.input0 + nx_element(line, position) * {bytes}ul).v"
            )),
            stored = store("value"),
            carry_stored = store(&format!("partial[last / {SCAN_ITEMS}u]")),
        )
    };
    let _ = write!(
        shader,
        "
#define S {compute}
layout(local_size_x = {SCAN_WORKGROUP_SIZE}) in;
layout(buffer_reference, scalar, buffer_reference_align = {align}) buffer Element {{ {storage} v; }};
layout(push_constant, scalar) uniform Push {{
    uint64_t input0;
    uint64_t output0;
    uint64_t carries;
    uint line_length;
    uint inner;
    uint lines;
    uint blocks;
    uint reverse;
}} push;

S nx_combine(S earlier, S later) {{ {combine} }}

// Element index of `position` (in scan order) of scan line `line` = outer * inner + i.
uint64_t nx_element(uint line, uint position) {{
    uint along = (push.reverse != 0u) ? push.line_length - 1u - position : position;
    uint outer = line / push.inner;
    uint within = line % push.inner;
    return (uint64_t(outer) * push.line_length + along) * push.inner + within;
}}
{body}",
        align = value_alignment(value),
        storage = value_storage_type(value),
        combine = op.combine(value),
    );
    shader
}

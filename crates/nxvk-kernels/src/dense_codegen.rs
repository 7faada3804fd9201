//! GLSL for the dense variant of the catalog's elementwise kernels.
//!
//! When every operand and the output are dense in output order and their addresses are aligned
//! to a packet (four elements), `launch.rs` runs this variant instead of the generic template:
//! each invocation loads and stores whole packets (a `vec4` for 32-bit types, two 16-byte
//! halves for 64-bit ones, 8 or 4 bytes for 16- and 8-bit ones), [`PACKETS_PER_ITERATION`]
//! packets per grid-stride iteration with every load issued before the first store, then the
//! last `count % 4` elements one by one. On the H200 a hand-written kernel of this shape moved
//! 4377 GB/s on a 256M f32 add against 3313 GB/s for the generic template (docs/BENCHMARKS.md),
//! while unrolling the generic template's scalar loop gave nothing: the wide accesses matter.
//!
//! The value of each element comes from the same `nx_apply` function as the generic kernel
//! (`codegen::op_function` for ops, `codegen::cast_function` for casts), applied per packet component with the same load and store
//! conversions, so both variants give bit-identical results. Like `codegen.rs`, this file is
//! included by the build script.

use crate::codegen::{
    WORKGROUP_SIZE, cast_function, elementwise_prelude, load, op_function, storage_bytes,
    storage_type, store,
};
use crate::op_table::{Elem, OpSpec};
use std::fmt::Write as _;

/// Elements in one packet (one vector access).
pub const PACKET_ELEMENTS: u32 = 4;

/// Packets each invocation loads per grid-stride iteration before storing any (the unroll that
/// won on the H200).
pub const PACKETS_PER_ITERATION: u32 = 4;

/// Bytes of push constants: the two input addresses, the output address and the element count.
pub const DENSE_PUSH_CONSTANT_BYTES: usize = 32;

/// Bytes of one packet of `elem`: the alignment every address of a dense launch needs.
pub const fn packet_bytes(elem: Elem) -> u64 {
    storage_bytes(elem) as u64 * PACKET_ELEMENTS as u64
}

/// The kernel name of the dense variant of kernel `name` (`add_f32_dense`).
pub fn dense_kernel_name(name: &str) -> String {
    format!("{name}_dense")
}

/// The GLSL vector type holding one packet of `elem` in memory (bf16 as raw bits).
pub const fn packet_type(elem: Elem) -> &'static str {
    match elem {
        Elem::S8 => "i8vec4",
        Elem::U8 => "u8vec4",
        Elem::S16 => "i16vec4",
        Elem::U16 | Elem::BF16 => "u16vec4",
        Elem::S32 => "ivec4",
        Elem::U32 => "uvec4",
        Elem::S64 => "i64vec4",
        Elem::U64 => "u64vec4",
        Elem::F16 => "f16vec4",
        Elem::F32 => "vec4",
        Elem::F64 => "dvec4",
    }
}

/// The dense shader of an op with `arity` operands on compute type `elem`, when the table has
/// one (exactly when `codegen::op_shader` has one).
pub fn dense_op_shader(spec: &OpSpec, arity: usize, elem: Elem) -> Option<String> {
    let (function, output) = op_function(spec, arity, elem)?;
    Some(dense_shader(elem, arity, output, &function, ""))
}

/// The dense shader of the cast from `from` to `to` (from the same function as
/// `codegen::cast_shader`).
pub fn dense_cast_shader(from: Elem, to: Elem) -> String {
    let (function, extra) = cast_function(from, to);
    dense_shader(from, 1, to, &function, extra)
}

/// A dense shader: `arity` inputs of compute type `elem`, `function` defining `nx_apply`, its
/// result stored as `output`, `extra` helpers beside the shared ones.
fn dense_shader(elem: Elem, arity: usize, output: Elem, function: &str, extra: &str) -> String {
    let mut shader = elementwise_prelude(elem, function, extra);
    // One element's value, exactly as the generic template computes it.
    let component = |access_a: &str, access_b: &str| {
        let a = load(elem, access_a);
        let applied = if arity == 2 {
            format!("nx_apply({a}, {})", load(elem, access_b))
        } else {
            format!("nx_apply({a})")
        };
        store(output, &applied)
    };
    let lanes: Vec<String> = ["x", "y", "z", "w"]
        .iter()
        .map(|lane| component(&format!("a.{lane}"), &format!("b.{lane}")))
        .collect();
    let load_b = if arity == 2 {
        format!(
            "{packet} b = InputPacket1(push.input1 + uint64_t(packet) * {packet_bytes}ul).v;",
            packet = packet_type(elem),
            packet_bytes = packet_bytes(elem)
        )
    } else {
        String::new()
    };
    let tail = component(
        "Input0(push.input0 + uint64_t(element) * ELEMENT_BYTES).v",
        "Input1(push.input1 + uint64_t(element) * ELEMENT_BYTES).v",
    );
    let _ = write!(
        shader,
        "
#define ELEMENT_BYTES {element_bytes}ul
#define PACKET_BYTES {packet_bytes}ul
#define OUTPUT_ELEMENT_BYTES {output_bytes}ul
#define OUTPUT_PACKET_BYTES {output_packet_bytes}ul
layout(local_size_x = {WORKGROUP_SIZE}) in;
// Packets and elements are addressed in 64 bits (32-bit array indices wrap the byte offset
// past 4 GiB on NVIDIA's driver). Both inputs have the compute type.
layout(buffer_reference, scalar, buffer_reference_align = {packet_bytes}) readonly buffer InputPacket0 {{ {packet} v; }};
layout(buffer_reference, scalar, buffer_reference_align = {packet_bytes}) readonly buffer InputPacket1 {{ {packet} v; }};
layout(buffer_reference, scalar, buffer_reference_align = {output_packet_bytes}) writeonly buffer OutputPacket {{ {output_packet} v; }};
layout(buffer_reference, scalar, buffer_reference_align = {element_bytes}) readonly buffer Input0 {{ {storage} v; }};
layout(buffer_reference, scalar, buffer_reference_align = {element_bytes}) readonly buffer Input1 {{ {storage} v; }};
layout(buffer_reference, scalar, buffer_reference_align = {output_bytes}) writeonly buffer Output {{ {output_storage} v; }};
layout(push_constant, scalar) uniform Push {{
    uint64_t input0;
    uint64_t input1;
    uint64_t output0;
    uint count;
}} push;

{function}

{output_packet} nx_apply_packet(uint packet) {{
    {packet} a = InputPacket0(push.input0 + uint64_t(packet) * PACKET_BYTES).v;
    {load_b}
    return {output_packet}({lanes});
}}

void main() {{
    uint threads = gl_NumWorkGroups.x * {WORKGROUP_SIZE}u;
    uint packets = push.count / {PACKET_ELEMENTS}u;
    uint packet = gl_GlobalInvocationID.x;
    for (; packet + {last_unroll}u * threads < packets; packet += {PACKETS_PER_ITERATION}u * threads) {{
        {output_packet} results[{PACKETS_PER_ITERATION}];
        for (uint unroll = 0u; unroll < {PACKETS_PER_ITERATION}u; unroll++) {{
            results[unroll] = nx_apply_packet(packet + unroll * threads);
        }}
        for (uint unroll = 0u; unroll < {PACKETS_PER_ITERATION}u; unroll++) {{
            OutputPacket(push.output0 + uint64_t(packet + unroll * threads) * OUTPUT_PACKET_BYTES).v = results[unroll];
        }}
    }}
    for (; packet < packets; packet += threads) {{
        OutputPacket(push.output0 + uint64_t(packet) * OUTPUT_PACKET_BYTES).v = nx_apply_packet(packet);
    }}
    // The last count % {PACKET_ELEMENTS} elements, one per invocation of the first workgroup.
    uint element = packets * {PACKET_ELEMENTS}u + gl_GlobalInvocationID.x;
    if (element < push.count) {{
        Output(push.output0 + uint64_t(element) * OUTPUT_ELEMENT_BYTES).v = {tail};
    }}
}}
",
        element_bytes = storage_bytes(elem),
        packet_bytes = packet_bytes(elem),
        output_bytes = storage_bytes(output),
        output_packet_bytes = packet_bytes(output),
        packet = packet_type(elem),
        output_packet = packet_type(output),
        storage = storage_type(elem),
        output_storage = storage_type(output),
        lanes = lanes.join(", "),
        last_unroll = PACKETS_PER_ITERATION - 1,
    );
    shader
}

//! GLSL for the catalog's data-movement kernel: one strided copy per element size.
//!
//! Data movement never looks at values, so the copy moves raw bits (1, 2, 4 or 8 bytes) and one
//! kernel per size serves every dtype of that size, NaN payloads and -0.0 included. The input
//! is addressed with signed element strides (a reversed axis walks backwards from its last
//! element), the output with unsigned ones (a slice, strided or interior-padded region of a
//! larger tensor). Like `codegen.rs`, this file is included by the build script.

use crate::codegen::{storage_bytes, storage_type};
use crate::op_table::Elem;
use std::fmt::Write as _;

/// Invocations per workgroup of the copy kernels.
pub const COPY_WORKGROUP_SIZE: u32 = 256;

/// Bytes of push constants: input, output and parameter-block addresses, count and rank.
pub const COPY_PUSH_CONSTANT_BYTES: usize = 32;

/// Byte offset of the parameter block's address in the push constants.
pub const COPY_PARAMS_ADDRESS_OFFSET: usize = 16;

/// The unsigned types whose bits the copy kernels move, one per element size.
pub const COPY_ELEMS: [Elem; 4] = [Elem::U8, Elem::U16, Elem::U32, Elem::U64];

/// The kernel name of the copy of `elem`'s size (`copy_32`).
pub fn copy_kernel_name(elem: Elem) -> String {
    format!("copy_{}", elem.bits())
}

/// The strided copy of elements stored as `elem`.
pub fn copy_shader(elem: Elem) -> String {
    let mut shader = String::new();
    let _ = write!(
        shader,
        "
layout(local_size_x = {COPY_WORKGROUP_SIZE}) in;
// One element per reference, addressed in 64 bits (32-bit array indices wrap the byte offset
// past 4 GiB on NVIDIA's driver).
layout(buffer_reference, scalar, buffer_reference_align = {bytes}) readonly buffer Input {{ {storage} v; }};
layout(buffer_reference, scalar, buffer_reference_align = {bytes}) writeonly buffer Output {{ {storage} v; }};
layout(buffer_reference, scalar) readonly buffer Params {{ uint v[]; }};
layout(push_constant, scalar) uniform Push {{
    uint64_t input0;
    uint64_t output0;
    Params params;
    uint count;
    uint rank;
}} push;

// Parameter words: shape, input strides (signed), output strides.
void main() {{
    uint threads = gl_NumWorkGroups.x * {COPY_WORKGROUP_SIZE}u;
    for (uint index = gl_GlobalInvocationID.x; index < push.count; index += threads) {{
        uint rest = index;
        int64_t input_offset = 0l;
        uint64_t output_offset = 0ul;
        for (uint axis = push.rank; axis > 0u; axis--) {{
            uint size = push.params.v[axis - 1u];
            uint coordinate = rest % size;
            rest /= size;
            input_offset += int64_t(coordinate) * int64_t(int(push.params.v[push.rank + axis - 1u]));
            output_offset += uint64_t(coordinate) * uint64_t(push.params.v[2u * push.rank + axis - 1u]);
        }}
        // Two's complement: a negative offset walks back from the base address.
        Output(push.output0 + output_offset * {bytes}ul).v =
            Input(push.input0 + uint64_t(input_offset) * {bytes}ul).v;
    }}
}}
",
        bytes = storage_bytes(elem),
        storage = storage_type(elem),
    );
    shader
}

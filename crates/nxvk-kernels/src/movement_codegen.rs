//! GLSL for the catalog's data-movement kernels, one per element size: a strided copy, and a
//! tiled transpose for copies whose innermost output axis is strided in the input.
//!
//! Data movement never looks at values, so the copy moves raw bits (1, 2, 4 or 8 bytes) and one
//! kernel per size serves every dtype of that size, NaN payloads and -0.0 included. The input
//! is addressed with signed element strides (a reversed axis walks backwards from its last
//! element), the output with unsigned ones (a slice, strided or interior-padded region of a
//! larger tensor). Like `codegen.rs`, this file is included by the build script.
//!
//! Ops joining operands of several types into one result type (Nx's `concatenate`, `pad` and
//! `put_slice` with mixed operands) use a *converting* copy instead: the same strided walk,
//! with Nx's `as_type` applied between load and store (`codegen::cast_function`), so a mixed
//! concatenation reads each operand once instead of casting it into a temporary first. One
//! converting copy exists per (from, to) pair of native real types: 132 modules the catalog
//! does not precompile; they are generated and compiled at run time on first use, as are the
//! copies whose first element's address is computed on the device ([`CopyVariant`]).

use crate::codegen::{
    cast_function, elementwise_prelude, load, storage_bytes, storage_type, store,
};
use crate::op_table::Elem;
use std::fmt::Write as _;

/// Invocations per workgroup of the copy kernels.
pub const COPY_WORKGROUP_SIZE: u32 = 256;

/// Bytes of push constants: input, output and parameter-block addresses, count and rank.
pub const COPY_PUSH_CONSTANT_BYTES: usize = 32;

/// Byte offset of the parameter block's address in the push constants.
pub const COPY_PARAMS_ADDRESS_OFFSET: usize = 16;

/// Side of the square tiles of the transpose kernels.
pub const TILE_SIDE: u32 = 32;

/// Rows of a tile each transpose invocation moves (the workgroup is TILE_SIDE x
/// TILE_SIDE / TILE_ROWS_PER_INVOCATION invocations).
pub const TILE_ROWS_PER_INVOCATION: u32 = 4;

/// Bytes of push constants of the transpose kernels: input, output and parameter-block
/// addresses, then the two tiled axes' sizes and strides, the batch rank and the tile counts.
pub const TRANSPOSE_PUSH_CONSTANT_BYTES: usize = 56;

/// The unsigned types whose bits the copy kernels move, one per element size.
pub const COPY_ELEMS: [Elem; 4] = [Elem::U8, Elem::U16, Elem::U32, Elem::U64];

/// The kernel name of the copy of `elem`'s size (`copy_32`).
pub fn copy_kernel_name(elem: Elem) -> String {
    format!("copy_{}", elem.bits())
}

/// The references the copy kernels read elements stored as `input` and write elements stored
/// as `output` through (one element each, addressed in 64 bits), and their parameter block.
fn element_references(input: Elem, output: Elem) -> String {
    format!(
        "layout(buffer_reference, scalar, buffer_reference_align = {input_bytes}) readonly buffer Input {{ {input_storage} v; }};
layout(buffer_reference, scalar, buffer_reference_align = {output_bytes}) writeonly buffer Output {{ {output_storage} v; }};
layout(buffer_reference, scalar) readonly buffer Params {{ uint v[]; }};
layout(buffer_reference, scalar, buffer_reference_align = 8) readonly buffer Address {{ uint64_t v; }};",
        input_bytes = storage_bytes(input),
        input_storage = storage_type(input),
        output_bytes = storage_bytes(output),
        output_storage = storage_type(output),
    )
}

/// The strided copy of elements stored as `elem`.
pub fn copy_shader(elem: Elem) -> String {
    CopyVariant {
        input: elem,
        output: elem,
        input_indirect: false,
        output_indirect: false,
    }
    .shader()
}

/// A strided copy beyond the catalog's plain ones, generated and compiled at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyVariant {
    /// The stored input and output types: equal for a raw copy (then the unsigned type of the
    /// element size), different for a converting one (then native real types).
    pub input: Elem,
    pub output: Elem,
    /// The input (output) address in the push constants points at an 8-byte device word that
    /// holds the real address of the first element (written on the device by
    /// `slice_starts.rs`, for starts given as a tensor).
    pub input_indirect: bool,
    pub output_indirect: bool,
}

impl CopyVariant {
    /// The kernel name (`copy_s32_to_f32`, `copy_32_indirect_input`).
    pub fn name(&self) -> String {
        let mut name = if self.input == self.output {
            format!("copy_{}", self.input.bits())
        } else {
            format!("copy_{}_to_{}", self.input.name(), self.output.name())
        };
        if self.input_indirect {
            name.push_str("_indirect_input");
        }
        if self.output_indirect {
            name.push_str("_indirect_output");
        }
        name
    }

    /// The GLSL: a converting copy applies Nx's `as_type` between load and store (the cast
    /// kernels' function, so both agree bit for bit).
    pub fn shader(&self) -> String {
        let (input, output) = (self.input, self.output);
        if input == output {
            return self.strided_copy_shader(String::new(), "Input(input_address).v");
        }
        let (function, helpers) = cast_function(input, output);
        let mut prelude = elementwise_prelude(input, &function, helpers);
        prelude.push_str(&function);
        let loaded = load(input, "Input(input_address).v");
        let converted = store(output, &format!("nx_apply({loaded})"));
        self.strided_copy_shader(prelude, &converted)
    }

    /// The strided copy storing `value` (GLSL reading `Input(input_address).v`) after
    /// `shader` (a prelude, or nothing).
    fn strided_copy_shader(&self, mut shader: String, value: &str) -> String {
        let base = |indirect: bool, address: &str| {
            if indirect {
                format!("Address({address}).v")
            } else {
                address.to_owned()
            }
        };
        let _ = write!(
        shader,
        "
layout(local_size_x = {COPY_WORKGROUP_SIZE}) in;
// One element per reference, addressed in 64 bits (32-bit array indices wrap the byte offset
// past 4 GiB on NVIDIA's driver).
{references}
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
    uint64_t input0 = {input_base};
    uint64_t output0 = {output_base};
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
        uint64_t input_address = input0 + uint64_t(input_offset) * {input_bytes}ul;
        Output(output0 + output_offset * {output_bytes}ul).v = {value};
    }}
}}
",
            input_bytes = storage_bytes(self.input),
            output_bytes = storage_bytes(self.output),
            references = element_references(self.input, self.output),
            input_base = base(self.input_indirect, "push.input0"),
            output_base = base(self.output_indirect, "push.output0"),
        );
        shader
    }
}

/// The kernel name of the tiled transpose of `elem`'s size (`transpose_tiles_32`).
pub fn transpose_kernel_name(elem: Elem) -> String {
    format!("transpose_tiles_{}", elem.bits())
}

/// The tiled transpose of elements stored as `elem`: a batch of 2-D copies in which axis
/// `across` has input stride 1 and axis `along` (the innermost output axis) output stride 1.
/// A workgroup reads a tile coalesced along `across` into shared memory and writes it
/// coalesced along `along`; the tile's rows are padded by one element so that reading it by
/// columns does not hit one shared-memory bank 32 times. Batch axes (any others) are addressed
/// through the parameter block: shape, signed input strides, output strides.
pub fn transpose_shader(elem: Elem) -> String {
    let mut shader = String::new();
    let _ = write!(
        shader,
        "
#define SIDE {TILE_SIDE}u
#define ROWS_PER_INVOCATION {TILE_ROWS_PER_INVOCATION}u
#define ROW_STEP (SIDE / ROWS_PER_INVOCATION)
layout(local_size_x = {invocations}) in;
{references}
layout(push_constant, scalar) uniform Push {{
    uint64_t input0;
    uint64_t output0;
    Params params;
    uint across_size;
    uint along_size;
    // Input stride of `along` (signed) and output stride of `across`.
    uint along_input_stride;
    uint across_output_stride;
    uint batch_rank;
    uint across_tiles;
    uint along_tiles;
    uint tiles;
}} push;

shared {storage} tile[SIDE][SIDE + 1u];

void main() {{
    uint column = gl_LocalInvocationID.x % SIDE;
    uint first_row = gl_LocalInvocationID.x / SIDE;
    int64_t along_input_stride = int64_t(int(push.along_input_stride));
    // `task` is uniform over the workgroup, so every barrier is reached by all of it.
    for (uint task = gl_WorkGroupID.x; task < push.tiles; task += gl_NumWorkGroups.x) {{
        uint along_tile = task % push.along_tiles;
        uint rest = task / push.along_tiles;
        uint across_tile = rest % push.across_tiles;
        uint batch = rest / push.across_tiles;
        int64_t input_base = 0l;
        uint64_t output_base = 0ul;
        for (uint axis = push.batch_rank; axis > 0u; axis--) {{
            uint size = push.params.v[axis - 1u];
            uint coordinate = batch % size;
            batch /= size;
            input_base += int64_t(coordinate) * int64_t(int(push.params.v[push.batch_rank + axis - 1u]));
            output_base += uint64_t(coordinate) * uint64_t(push.params.v[2u * push.batch_rank + axis - 1u]);
        }}
        // Read: neighbouring invocations take neighbouring `across` elements (input stride 1).
        uint across = across_tile * SIDE + column;
        for (uint row = first_row; row < SIDE; row += ROW_STEP) {{
            uint along = along_tile * SIDE + row;
            if (across < push.across_size && along < push.along_size) {{
                int64_t element = input_base + int64_t(across) + int64_t(along) * along_input_stride;
                tile[row][column] = Input(push.input0 + uint64_t(element) * {bytes}ul).v;
            }}
        }}
        barrier();
        // Write: neighbouring invocations take neighbouring `along` elements (output stride 1).
        uint along = along_tile * SIDE + column;
        for (uint row = first_row; row < SIDE; row += ROW_STEP) {{
            uint across_out = across_tile * SIDE + row;
            if (across_out < push.across_size && along < push.along_size) {{
                uint64_t element = output_base + uint64_t(across_out) * uint64_t(push.across_output_stride) + uint64_t(along);
                Output(push.output0 + element * {bytes}ul).v = tile[column][row];
            }}
        }}
        barrier();
    }}
}}
",
        invocations = TILE_SIDE * TILE_SIDE / TILE_ROWS_PER_INVOCATION,
        bytes = storage_bytes(elem),
        references = element_references(elem, elem),
        storage = storage_type(elem),
    );
    shader
}

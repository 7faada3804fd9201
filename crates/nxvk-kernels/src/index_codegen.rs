//! GLSL for the indexing kernels (`index.rs`): one template walks a space of elements whose
//! addresses into the indexed tensor come partly from coordinates and partly from values read
//! in an index tensor, and either gathers (reads the indexed tensor, writes a contiguous
//! result) or scatters (reads contiguous updates, writes or adds into the indexed tensor).
//!
//! Kernels are compiled at run time (`Device::kernel_from_glsl`, cached by content): they vary
//! by mode, by the unit of bits moved (1 to 16 bytes: a gather of whole rows moves 16-byte
//! units whatever the dtype), and by the index dtype, which is read as it is stored (no cast
//! pass over the indices).

use nxvk_core::DType;
use std::fmt::Write as _;

/// Invocations per workgroup of the indexing kernels.
pub(crate) const INDEX_WORKGROUP_SIZE: u32 = 256;

/// Byte offset of the parameter block's address in the push constants.
pub(crate) const INDEX_PARAMS_ADDRESS_OFFSET: usize = 24;

/// What an indexing kernel does with each element of its walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndexMode {
    /// Reads the indexed tensor, writes the contiguous result.
    Gather,
    /// Records, per destination unit, the highest update row that writes it (`atomicMax`).
    MarkLastWriter,
    /// Writes the update units whose row is the recorded last writer.
    PutMarked,
    /// Adds each update element into the destination (atomics or compare-and-swap).
    Add,
}

impl IndexMode {
    fn name(self) -> &'static str {
        match self {
            IndexMode::Gather => "gather",
            IndexMode::MarkLastWriter => "mark",
            IndexMode::PutMarked => "put",
            IndexMode::Add => "add",
        }
    }
}

/// The GLSL storage type of an integer index dtype.
fn index_storage(index: DType) -> Option<&'static str> {
    Some(match index {
        DType::S8 => "int8_t",
        DType::S16 => "int16_t",
        DType::S32 => "int",
        DType::S64 => "int64_t",
        DType::U8 => "uint8_t",
        DType::U16 => "uint16_t",
        DType::U32 => "uint",
        DType::U64 => "uint64_t",
        _ => return None,
    })
}

/// The GLSL type that moves `unit_bytes` raw bytes.
fn unit_type(unit_bytes: u64) -> &'static str {
    match unit_bytes {
        1 => "uint8_t",
        2 => "uint16_t",
        4 => "uint",
        8 => "uvec2",
        _ => "uvec4",
    }
}

/// The kernel's name (also its cache key's readable part).
pub(crate) fn index_kernel_name(
    mode: IndexMode,
    unit_bytes: u64,
    value: DType,
    index: DType,
) -> String {
    match mode {
        IndexMode::Add => format!("index_add_{value}_{index}"),
        _ => format!("index_{}_{}_{index}", mode.name(), unit_bytes * 8),
    }
}

/// The atomic read-modify-write that adds `value` (of `dtype`) at a byte address, for
/// [`IndexMode::Add`]. Elements narrower than 4 bytes are added by compare-and-swap on the
/// aligned 32-bit word that holds them (buffers are allocated in multiples of 4 bytes).
fn add_function(dtype: DType) -> Option<String> {
    let narrow = |bits: u32, combine: &str| {
        format!(
            "
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer Word {{ uint v; }};
void add_at(uint64_t address, uint addend) {{
    Word word = Word(address & ~3ul);
    uint shift = uint(address & 3ul) * 8u;
    uint mask = {mask}u << shift;
    uint old = word.v;
    for (;;) {{
        uint part = (old >> shift) & {mask}u;
        uint sum = ({combine}) & {mask}u;
        uint seen = atomicCompSwap(word.v, old, (old & ~mask) | (sum << shift));
        if (seen == old) break;
        old = seen;
    }}
}}
",
            mask = (1u64 << bits) - 1,
        )
    };
    Some(match dtype {
        DType::S8 | DType::U8 => narrow(8, "part + addend"),
        DType::S16 | DType::U16 => narrow(16, "part + addend"),
        DType::F16 => narrow(
            16,
            "uint(float16BitsToUint16(uint16BitsToFloat16(uint16_t(part)) + uint16BitsToFloat16(uint16_t(addend))))",
        ),
        DType::BF16 => narrow(16, "bf16_of(uintBitsToFloat(part << 16) + uintBitsToFloat(addend << 16))"),
        DType::S32 | DType::U32 => "
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer Word { uint v; };
void add_at(uint64_t address, uint addend) { atomicAdd(Word(address).v, addend); }
"
        .to_owned(),
        DType::S64 | DType::U64 => "
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer Word { uint64_t v; };
void add_at(uint64_t address, uint64_t addend) { atomicAdd(Word(address).v, addend); }
"
        .to_owned(),
        DType::F32 => "
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer Word { uint v; };
void add_at(uint64_t address, uint addend) {
    Word word = Word(address);
    uint old = word.v;
    for (;;) {
        uint seen = atomicCompSwap(word.v, old, floatBitsToUint(uintBitsToFloat(old) + uintBitsToFloat(addend)));
        if (seen == old) break;
        old = seen;
    }
}
"
        .to_owned(),
        DType::F64 => "
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer Word { uint64_t v; };
void add_at(uint64_t address, uint64_t addend) {
    Word word = Word(address);
    uint64_t old = word.v;
    for (;;) {
        uint64_t seen = atomicCompSwap(word.v, old,
            doubleBitsToUint64(uint64BitsToDouble(old) + uint64BitsToDouble(addend)));
        if (seen == old) break;
        old = seen;
    }
}
"
        .to_owned(),
        _ => return None,
    })
}

/// The indexing kernel for `mode`, moving `unit_bytes` per walk element (the element size of
/// `value` for [`IndexMode::Add`]) and reading indices of `index`'s dtype. `None` when the
/// combination has no kernel (a non-integer index, or an add of a type without one).
pub(crate) fn index_shader(
    mode: IndexMode,
    unit_bytes: u64,
    value: DType,
    index: DType,
) -> Option<String> {
    let index_type = index_storage(index)?;
    let index_to_signed = if index == DType::U64 {
        // Beyond the largest s64 is out of range anyway: saturate before the signed clamp.
        "int64_t(min(raw, 0x7FFFFFFFFFFFFFFFul))"
    } else {
        "int64_t(raw)"
    };
    let (unit, add) = if mode == IndexMode::Add {
        let add = add_function(value)?;
        let bits = value.bits();
        (
            if bits == 64 {
                "uint64_t"
            } else {
                unit_type(u64::from(bits / 8))
            },
            add,
        )
    } else {
        (unit_type(unit_bytes), String::new())
    };
    let add_bits = if value.bits() == 64 {
        "uint64_t"
    } else {
        "uint"
    };
    let atomic_extension = if mode == IndexMode::Add && value.bits() == 64 {
        "#extension GL_EXT_shader_atomic_int64 : require\n"
    } else {
        ""
    };
    let bf16 = if value == DType::BF16 {
        // Round to nearest even; a NaN stays a quiet NaN.
        "
uint bf16_of(float value) {
    uint bits = floatBitsToUint(value);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return (bits >> 16) | 0x40u;
    return (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
}
"
    } else {
        ""
    };
    let action = match mode {
        IndexMode::Gather => {
            "Units(push.linear + element * UNIT).v = Units(push.data + data_offset * UNIT).v;"
                .to_owned()
        }
        IndexMode::MarkLastWriter => "uint row = element / push.row_elements;
        atomicMax(Marks(push.marks + data_offset * 4ul).v, row + 1u);"
            .to_owned(),
        IndexMode::PutMarked => "uint row = element / push.row_elements;
        if (Marks(push.marks + data_offset * 4ul).v == row + 1u) {
            Units(push.data + data_offset * UNIT).v = Units(push.linear + element * UNIT).v;
        }"
        .to_owned(),
        IndexMode::Add => format!(
            "add_at(push.data + data_offset * UNIT, {add_bits}(Units(push.linear + element * UNIT).v));"
        ),
    };
    let unit_size = if mode == IndexMode::Add {
        u64::from(value.bits() / 8)
    } else {
        unit_bytes
    };
    let mut shader = String::new();
    let _ = write!(
        shader,
        "{atomic_extension}
layout(local_size_x = {INDEX_WORKGROUP_SIZE}) in;
const uint64_t UNIT = {unit_size}ul;
layout(buffer_reference, scalar, buffer_reference_align = {unit_size}) buffer Units {{ {unit} v; }};
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer Marks {{ uint v; }};
layout(buffer_reference, scalar, buffer_reference_align = {index_bytes}) readonly buffer Indices {{ {index_type} v; }};
layout(buffer_reference, scalar, buffer_reference_align = 4) readonly buffer Params {{ uint v[]; }};
layout(push_constant, scalar) uniform Push {{
    uint64_t data;
    uint64_t linear;
    uint64_t indices;
    Params params;
    uint64_t marks;
    uint count;
    uint rank;
    uint positions;
    uint row_elements;
}} push;
{bf16}{add}
// Parameter words: per walk axis (size, data stride, index stride), then per index position
// (index stride, axis size, data stride). Offsets are 64-bit: a 32-bit one wraps past 4 GiB.
void main() {{
    uint threads = gl_NumWorkGroups.x * {INDEX_WORKGROUP_SIZE}u;
    for (uint element = gl_GlobalInvocationID.x; element < push.count; element += threads) {{
        uint rest = element;
        uint64_t data_offset = 0ul;
        uint64_t index_offset = 0ul;
        for (uint axis = push.rank; axis > 0u; axis--) {{
            uint size = push.params.v[3u * (axis - 1u)];
            uint coordinate = rest % size;
            rest /= size;
            data_offset += uint64_t(coordinate) * uint64_t(push.params.v[3u * (axis - 1u) + 1u]);
            index_offset += uint64_t(coordinate) * uint64_t(push.params.v[3u * (axis - 1u) + 2u]);
        }}
        for (uint position = 0u; position < push.positions; position++) {{
            uint word = 3u * (push.rank + position);
            {index_type} raw = Indices(push.indices + (index_offset + uint64_t(push.params.v[word])) * {index_bytes}ul).v;
            // Nx's clamping (as EXLA does): an out-of-range index selects the nearest edge.
            int64_t clamped = clamp({index_to_signed}, 0l, int64_t(push.params.v[word + 1u]) - 1l);
            data_offset += uint64_t(clamped) * uint64_t(push.params.v[word + 2u]);
        }}
        {action}
    }}
}}
",
        index_bytes = index.bits() / 8,
    );
    Some(shader)
}

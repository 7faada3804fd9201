//! GLSL for the sort kernels (`sort.rs`): order-preserving keys, bitonic sorting networks in
//! shared memory and in global passes, and the finishing gathers.
//!
//! An *item* is a key with the element's position in its row: one `uint64_t` (key in the high
//! word, position in the low one) for types of up to 32 bits, a `u64vec2` (key, position) for
//! 64-bit types. Items compare as (key, position), so equal keys keep their order: a sorting
//! network is unstable on its own, but never on distinct items.

use nxvk_core::DType;
use std::fmt::Write as _;

/// Invocations per workgroup of the sort kernels.
pub(crate) const SORT_WORKGROUP_SIZE: u32 = 256;

/// Items a workgroup sorts in shared memory (four per invocation).
pub(crate) const SORT_BLOCK: u32 = 1024;

/// True when `dtype`'s keys need 64 bits (items are then a key word and a position word).
pub(crate) const fn wide_keys(dtype: DType) -> bool {
    dtype.bits() == 64
}

/// GLSL shared by the sort kernels: the item type, its order, and its parts.
fn item_prelude(wide: bool) -> &'static str {
    if wide {
        "
#define ITEM u64vec2
#define ITEM_BYTES 16ul
bool item_less(ITEM a, ITEM b) { return a.x < b.x || (a.x == b.x && a.y < b.y); }
uint item_position(ITEM item) { return uint(item.y); }
"
    } else {
        "
#define ITEM uint64_t
#define ITEM_BYTES 8ul
bool item_less(ITEM a, ITEM b) { return a < b; }
uint item_position(ITEM item) { return uint(item); }
"
    }
}

/// How a dtype's bits become its order-preserving key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyRule {
    /// Unsigned integers: the bits are the key.
    Unsigned,
    /// Two's complement integers: the sign bit flipped.
    Signed,
    /// IEEE floats (the bits of +infinity given): NaN above +infinity, -0.0 equal to 0.0,
    /// negatives complemented and positives with the sign bit set.
    Float { infinity: u64 },
}

/// The bits of `dtype`'s sort key (its width: 8, 16, 32 or 64) and its rule, or `None` for
/// dtypes without an order (complex) or without keys yet (sub-byte, 8-bit floats).
fn key_rule(dtype: DType) -> Option<(u32, KeyRule)> {
    let rule = match dtype {
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => KeyRule::Unsigned,
        DType::S8 | DType::S16 | DType::S32 | DType::S64 => KeyRule::Signed,
        DType::F16 => KeyRule::Float { infinity: 0x7C00 },
        DType::BF16 => KeyRule::Float { infinity: 0x7F80 },
        DType::F32 => KeyRule::Float {
            infinity: 0x7F80_0000,
        },
        DType::F64 => KeyRule::Float {
            infinity: 0x7FF0_0000_0000_0000,
        },
        _ => return None,
    };
    Some((dtype.bits(), rule))
}

/// The number of bits of `dtype`'s sort keys (keys are exactly as wide as the dtype, so
/// narrow dtypes need fewer radix passes), or `None` when it has none.
pub(crate) fn key_bits(dtype: DType) -> Option<u32> {
    key_rule(dtype).map(|(bits, _)| bits)
}

/// GLSL that reads an element of `dtype` and returns its order-preserving unsigned key, as
/// wide as the dtype (NaN above +infinity, -0.0 equal to 0.0, as Nx orders them):
/// `element_bits(address)` (the element's bits, zero-extended), `key_of_bits(bits)`,
/// `read_key(address)`, and `bits_of_key(key)`, the key's canonical element (the key of every
/// NaN gives the positive quiet NaN, the key of both zeros +0.0; see `shares_keys`). Keys of up
/// to 32 bits are `uint`, 64-bit keys `uint64_t`.
pub(crate) fn key_function(dtype: DType) -> Option<String> {
    let (bits, rule) = key_rule(dtype)?;
    let (key, suffix) = if bits == 64 {
        ("uint64_t", "ul")
    } else {
        ("uint", "u")
    };
    let storage = match bits {
        8 => "uint8_t",
        16 => "uint16_t",
        32 => "uint",
        _ => "uint64_t",
    };
    let sign = 1u64 << (bits - 1);
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let (body, inverse) = match rule {
        KeyRule::Unsigned => ("return bits;".to_owned(), "return key;".to_owned()),
        KeyRule::Signed => (
            format!("return bits ^ {sign:#x}{suffix};"),
            format!("return key ^ {sign:#x}{suffix};"),
        ),
        KeyRule::Float { infinity } => {
            let magnitude = sign - 1;
            // The quiet bit: the highest mantissa bit, just below the exponent's lowest.
            let quiet_nan = infinity | ((infinity >> 1) & !infinity);
            (
                format!(
                    "if ((bits & {magnitude:#x}{suffix}) > {infinity:#x}{suffix}) return {mask:#x}{suffix};
    if ((bits & {magnitude:#x}{suffix}) == 0{suffix}) bits = 0{suffix};
    return ((bits & {sign:#x}{suffix}) != 0{suffix}) ? (~bits & {mask:#x}{suffix}) : (bits | {sign:#x}{suffix});"
                ),
                format!(
                    "if (key == {mask:#x}{suffix}) return {quiet_nan:#x}{suffix};
    return ((key & {sign:#x}{suffix}) != 0{suffix}) ? (key & {magnitude:#x}{suffix}) : (~key & {mask:#x}{suffix});"
                ),
            )
        }
    };
    let bytes = bits / 8;
    Some(format!(
        "
layout(buffer_reference, scalar, buffer_reference_align = {bytes}) readonly buffer Element {{ {storage} v; }};
{key} element_bits(uint64_t address) {{ return {key}(Element(address).v); }}
{key} key_of_bits({key} bits) {{
    {body}
}}
{key} read_key(uint64_t address) {{ return key_of_bits(element_bits(address)); }}
{key} bits_of_key({key} key) {{
    {inverse}
}}
"
    ))
}

/// True when some keys of `dtype` stand for several elements: the floats' zeros (-0.0 and
/// 0.0 share a key) and NaNs (every payload and sign shares one), so `bits_of_key` gives back
/// one element of each class; every other key is its element's alone.
pub(crate) fn shares_keys(dtype: DType) -> bool {
    matches!(key_rule(dtype), Some((_, KeyRule::Float { .. })))
}

/// GLSL of `is_zero_bits(bits)` and `is_nan_bits(bits)` for a float `dtype` (`shares_keys`),
/// on the zero-extended bits `element_bits` returns.
pub(crate) fn float_classes(dtype: DType) -> Option<String> {
    let (bits, KeyRule::Float { infinity }) = key_rule(dtype)? else {
        return None;
    };
    let suffix = if bits == 64 { "ul" } else { "u" };
    let magnitude = (1u64 << (bits - 1)) - 1;
    Some(format!(
        "
bool is_zero_bits(KEY bits) {{ return (bits & {magnitude:#x}{suffix}) == 0{suffix}; }}
bool is_nan_bits(KEY bits) {{ return (bits & {magnitude:#x}{suffix}) > {infinity:#x}{suffix}; }}
"
    ))
}

/// The kernel that turns rows of `n` elements into rows of `m` (a power of two) items, padding
/// with items above every real one; descending order complements the keys.
pub(crate) fn keys_shader(dtype: DType) -> Option<String> {
    let wide = wide_keys(dtype);
    let key_function = key_function(dtype)?;
    let make = if wide {
        "ITEM(key, uint64_t(position))"
    } else {
        "(uint64_t(key) << 32) | uint64_t(position)"
    };
    let max_key = if wide {
        "0xFFFFFFFFFFFFFFFFul"
    } else {
        "0xFFFFFFFFu"
    };
    let key_type = if wide { "uint64_t" } else { "uint" };
    let mut shader = String::new();
    let _ = write!(
        shader,
        "
layout(local_size_x = {SORT_WORKGROUP_SIZE}) in;
{prelude}
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer Items {{ ITEM v; }};
{key_function}
layout(push_constant, scalar) uniform Push {{
    uint64_t input0;
    uint64_t items;
    uint total;
    uint row_length;
    uint log2_padded;
    uint descending;
    uint rows;
}} push;

void main() {{
    uint threads = gl_NumWorkGroups.x * {SORT_WORKGROUP_SIZE}u;
    uint padded_mask = (1u << push.log2_padded) - 1u;
    for (uint item = gl_GlobalInvocationID.x; item < push.total; item += threads) {{
        uint row = item >> push.log2_padded;
        uint position = item & padded_mask;
        {key_type} key = {max_key};
        // Rows past the last (block padding) hold padding items too.
        if (position < push.row_length && row < push.rows) {{
            uint64_t element = uint64_t(row) * uint64_t(push.row_length) + uint64_t(position);
            key = read_key(push.input0 + element * {bytes}ul);
            if (push.descending != 0u) key = ~key;
        }}
        Items(push.items + uint64_t(item) * ITEM_BYTES).v = {make};
    }}
}}
",
        prelude = item_prelude(wide),
        bytes = dtype.bits() / 8,
    );
    Some(shader)
}

/// The compare-exchange of a bitonic network at `low` and `low + distance`, ascending where
/// bit `stage` of the position in the row is clear.
const COMPARE_EXCHANGE: &str = "
bool ascending_at(uint item, uint stage) { return (item & push.padded_mask & stage) == 0u; }
";

/// The shared-memory kernel: each workgroup loads `SORT_BLOCK` items and runs the network's
/// steps whose distance is below the block: all stages up to the block or the row, whichever
/// is shorter (`stage == 0`), or the tail of one larger stage.
pub(crate) fn local_shader(wide: bool) -> String {
    let mut shader = String::new();
    let _ = write!(
        shader,
        "
layout(local_size_x = {SORT_WORKGROUP_SIZE}) in;
{prelude}
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer Items {{ ITEM v; }};
layout(push_constant, scalar) uniform Push {{
    uint64_t items;
    uint total;
    uint padded_mask;
    uint stage;
}} push;
{COMPARE_EXCHANGE}
shared ITEM block[{SORT_BLOCK}];

void step(uint base, uint stage, uint distance) {{
    for (uint pair = gl_LocalInvocationID.x; pair < {SORT_BLOCK}u / 2u; pair += {SORT_WORKGROUP_SIZE}u) {{
        uint low = ((pair & ~(distance - 1u)) << 1u) | (pair & (distance - 1u));
        uint high = low + distance;
        ITEM a = block[low];
        ITEM b = block[high];
        bool ascending = ascending_at(base + low, stage);
        if (item_less(b, a) == ascending) {{
            block[low] = b;
            block[high] = a;
        }}
    }}
    barrier();
}}

void main() {{
    // The item count is a multiple of the block (the caller pads it).
    for (uint base = gl_WorkGroupID.x * {SORT_BLOCK}u; base < push.total; base += gl_NumWorkGroups.x * {SORT_BLOCK}u) {{
        for (uint slot = gl_LocalInvocationID.x; slot < {SORT_BLOCK}u; slot += {SORT_WORKGROUP_SIZE}u) {{
            block[slot] = Items(push.items + uint64_t(base + slot) * ITEM_BYTES).v;
        }}
        barrier();
        if (push.stage == 0u) {{
            uint last = min({SORT_BLOCK}u, push.padded_mask + 1u);
            for (uint stage = 2u; stage <= last; stage <<= 1u) {{
                for (uint distance = stage >> 1u; distance > 0u; distance >>= 1u) {{
                    step(base, stage, distance);
                }}
            }}
        }} else {{
            for (uint distance = {SORT_BLOCK}u / 2u; distance > 0u; distance >>= 1u) {{
                step(base, push.stage, distance);
            }}
        }}
        for (uint slot = gl_LocalInvocationID.x; slot < {SORT_BLOCK}u; slot += {SORT_WORKGROUP_SIZE}u) {{
            Items(push.items + uint64_t(base + slot) * ITEM_BYTES).v = block[slot];
        }}
        barrier();
    }}
}}
",
        prelude = item_prelude(wide),
    );
    shader
}

/// Items each invocation of a global pass holds in registers, at most (four steps).
pub(crate) const MAX_GLOBAL_STEPS: u32 = 4;

/// `steps` consecutive global steps of the network (distances `2^(log2_low + steps - 1)`
/// down to `2^log2_low`, all at least a block) in one pass: each invocation loads the
/// `2^steps` items those steps connect, runs the steps in registers and stores them, so a
/// pass reads and writes the items once for up to four steps.
pub(crate) fn global_shader(wide: bool, steps: u32) -> String {
    let mut shader = String::new();
    let _ = write!(
        shader,
        "
layout(local_size_x = {SORT_WORKGROUP_SIZE}) in;
{prelude}
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer Items {{ ITEM v; }};
layout(push_constant, scalar) uniform Push {{
    uint64_t items;
    uint total;
    uint padded_mask;
    uint stage;
    uint log2_low;
}} push;
{COMPARE_EXCHANGE}
const uint STEPS = {steps}u;
const uint GROUP = 1u << STEPS;

void main() {{
    uint threads = gl_NumWorkGroups.x * {SORT_WORKGROUP_SIZE}u;
    uint low = push.log2_low;
    uint low_mask = (1u << low) - 1u;
    for (uint group = gl_GlobalInvocationID.x; group < (push.total >> STEPS); group += threads) {{
        uint base = ((group >> low) << (low + STEPS)) | (group & low_mask);
        ITEM items[GROUP];
        for (uint t = 0u; t < GROUP; t++) {{
            items[t] = Items(push.items + uint64_t(base + (t << low)) * ITEM_BYTES).v;
        }}
        // The stage's bit lies above every bit that varies in the group: one direction.
        bool ascending = ascending_at(base, push.stage);
        for (uint step = STEPS; step > 0u; step--) {{
            uint bit = 1u << (step - 1u);
            for (uint t = 0u; t < GROUP; t++) {{
                if ((t & bit) == 0u) {{
                    ITEM a = items[t];
                    ITEM b = items[t | bit];
                    if (item_less(b, a) == ascending) {{
                        items[t] = b;
                        items[t | bit] = a;
                    }}
                }}
            }}
        }}
        for (uint t = 0u; t < GROUP; t++) {{
            Items(push.items + uint64_t(base + (t << low)) * ITEM_BYTES).v = items[t];
        }}
    }}
}}
",
        prelude = item_prelude(wide),
    );
    shader
}

/// The GLSL storage type of an integer dtype, for argsort's positions.
pub(crate) fn integer_storage(dtype: DType) -> Option<&'static str> {
    Some(match dtype {
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

/// What the finishing kernel writes per sorted item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    /// The element itself, gathered (as bits) from the input row.
    Values { element_bytes: u32 },
    /// Its position in the input row, as the given integer dtype.
    Positions { dtype: DType },
}

/// The kernel that writes the first `output_length` sorted items of each row.
pub(crate) fn finish_shader(wide: bool, finish: Finish) -> Option<String> {
    let (declarations, write) = match finish {
        Finish::Values { element_bytes } => {
            let storage = match element_bytes {
                1 => "uint8_t",
                2 => "uint16_t",
                4 => "uint",
                _ => "uint64_t",
            };
            (
                format!(
                    "layout(buffer_reference, scalar, buffer_reference_align = {element_bytes}) buffer Element {{ {storage} v; }};
const uint64_t OUT_BYTES = {element_bytes}ul;"
                ),
                "Element(push.output0 + out_element * OUT_BYTES).v =
            Element(push.input0 + (uint64_t(row) * uint64_t(push.row_length) + uint64_t(position)) * OUT_BYTES).v;"
                    .to_owned(),
            )
        }
        Finish::Positions { dtype } => {
            let storage = integer_storage(dtype)?;
            let bytes = dtype.bits() / 8;
            (
                format!(
                    "layout(buffer_reference, scalar, buffer_reference_align = {bytes}) buffer Element {{ {storage} v; }};
const uint64_t OUT_BYTES = {bytes}ul;"
                ),
                format!("Element(push.output0 + out_element * OUT_BYTES).v = {storage}(position);"),
            )
        }
    };
    let mut shader = String::new();
    let _ = write!(
        shader,
        "
layout(local_size_x = {SORT_WORKGROUP_SIZE}) in;
{prelude}
layout(buffer_reference, scalar, buffer_reference_align = 8) readonly buffer Items {{ ITEM v; }};
{declarations}
layout(push_constant, scalar) uniform Push {{
    uint64_t items;
    uint64_t input0;
    uint64_t output0;
    uint total;
    uint row_length;
    uint output_length;
    uint log2_padded;
}} push;

void main() {{
    uint threads = gl_NumWorkGroups.x * {SORT_WORKGROUP_SIZE}u;
    for (uint index = gl_GlobalInvocationID.x; index < push.total; index += threads) {{
        uint row = index / push.output_length;
        uint slot = index - row * push.output_length;
        ITEM item = Items(push.items + ((uint64_t(row) << push.log2_padded) + uint64_t(slot)) * ITEM_BYTES).v;
        uint position = item_position(item);
        uint64_t out_element = uint64_t(index);
        {write}
    }}
}}
",
        prelude = item_prelude(wide),
    );
    Some(shader)
}

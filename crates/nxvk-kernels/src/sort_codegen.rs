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

/// GLSL that reads element `index` of `dtype` at `base` and returns its order-preserving
/// unsigned key (NaN above +infinity, -0.0 equal to 0.0, as Nx orders them).
fn key_function(dtype: DType) -> Option<String> {
    let float_key = "
uint float_key(float value) {
    uint bits = floatBitsToUint(value);
    if (isnan(value)) return 0xFFFFFFFFu;
    if ((bits & 0x7FFFFFFFu) == 0u) bits = 0u;
    return ((bits & 0x80000000u) != 0u) ? ~bits : (bits | 0x80000000u);
}
";
    let (storage, body, helper) = match dtype {
        DType::U8 => ("uint8_t", "return uint(v);", ""),
        DType::U16 => ("uint16_t", "return uint(v);", ""),
        DType::U32 => ("uint", "return v;", ""),
        DType::S8 => ("int8_t", "return uint(int(v)) ^ 0x80000000u;", ""),
        DType::S16 => ("int16_t", "return uint(int(v)) ^ 0x80000000u;", ""),
        DType::S32 => ("int", "return uint(v) ^ 0x80000000u;", ""),
        DType::U64 => ("uint64_t", "return v;", ""),
        DType::S64 => ("int64_t", "return uint64_t(v) ^ 0x8000000000000000ul;", ""),
        DType::F16 => ("float16_t", "return float_key(float(v));", float_key),
        DType::BF16 => (
            "uint16_t",
            "return float_key(uintBitsToFloat(uint(v) << 16));",
            float_key,
        ),
        DType::F32 => ("float", "return float_key(v);", float_key),
        DType::F64 => (
            "double",
            "uint64_t bits = doubleBitsToUint64(v);
    if (isnan(v)) return 0xFFFFFFFFFFFFFFFFul;
    if ((bits & 0x7FFFFFFFFFFFFFFFul) == 0ul) bits = 0ul;
    return ((bits & 0x8000000000000000ul) != 0ul) ? ~bits : (bits | 0x8000000000000000ul);",
            "",
        ),
        _ => return None,
    };
    let key = if wide_keys(dtype) { "uint64_t" } else { "uint" };
    let bytes = dtype.bits() / 8;
    Some(format!(
        "{helper}
layout(buffer_reference, scalar, buffer_reference_align = {bytes}) readonly buffer Element {{ {storage} v; }};
{key} read_key(uint64_t address) {{
    {storage} v = Element(address).v;
    {body}
}}
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
fn integer_storage(dtype: DType) -> Option<&'static str> {
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

/// Items per tile of the radix passes: 256 invocations holding 16 consecutive items each.
pub(crate) const RADIX_TILE: u32 = 4096;

/// Bits per radix digit (16 bins: counts pack two 16-bit fields per word).
pub(crate) const RADIX_BITS: u32 = 4;

/// GLSL shared by the radix kernels: each invocation loads its 16 consecutive items of a tile
/// and counts their digits (of the key, the item's high word) in eight words of two 16-bit
/// fields, noting each item's rank among its own earlier items of the same digit.
const RADIX_PRELUDE: &str = "
layout(local_size_x = 256) in;
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer Items { uint64_t v; };
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer Words { uint v; };
const uint PER_INVOCATION = 16u;
const uint NO_DIGIT = 16u;

uint field(uint packed[8], uint digit) { return (packed[digit >> 1u] >> ((digit & 1u) * 16u)) & 0xFFFFu; }
";

/// Counts the digits at `shift` per tile: `counts[digit * tiles + tile]`.
pub(crate) fn radix_count_shader() -> String {
    format!(
        "{RADIX_PRELUDE}
layout(push_constant, scalar) uniform Push {{
    uint64_t items;
    uint64_t counts;
    uint total;
    uint tiles;
    uint shift;
}} push;
shared uint tile_counts[16];

void main() {{
    for (uint tile = gl_WorkGroupID.x; tile < push.tiles; tile += gl_NumWorkGroups.x) {{
        if (gl_LocalInvocationID.x < 16u) tile_counts[gl_LocalInvocationID.x] = 0u;
        barrier();
        uint packed[8] = uint[8](0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
        uint first = tile * {RADIX_TILE}u + gl_LocalInvocationID.x * PER_INVOCATION;
        for (uint i = 0u; i < PER_INVOCATION; i++) {{
            if (first + i < push.total) {{
                uint digit = uint(Items(push.items + uint64_t(first + i) * 8ul).v >> (32u + push.shift)) & 15u;
                packed[digit >> 1u] += 1u << ((digit & 1u) * 16u);
            }}
        }}
        for (uint digit = 0u; digit < 16u; digit++) {{
            uint count = subgroupAdd(field(packed, digit));
            if (subgroupElect() && count != 0u) atomicAdd(tile_counts[digit], count);
        }}
        barrier();
        if (gl_LocalInvocationID.x < 16u) {{
            Words(push.counts + uint64_t(gl_LocalInvocationID.x * push.tiles + tile) * 4ul).v =
                tile_counts[gl_LocalInvocationID.x];
        }}
        barrier();
    }}
}}
"
    )
}

/// Replaces `entries` counts by their exclusive prefix sums, in one workgroup: blocks of 4,096
/// counts (16 consecutive per invocation, loaded together), scanned in shared memory, each
/// block carrying the previous blocks' total.
pub(crate) fn radix_scan_shader() -> String {
    format!(
        "{RADIX_PRELUDE}
layout(push_constant, scalar) uniform Push {{
    uint64_t counts;
    uint entries;
}} push;
shared uint partial[256];

void main() {{
    uint lane = gl_LocalInvocationID.x;
    uint carry = 0u;
    for (uint block = 0u; block < push.entries; block += 256u * PER_INVOCATION) {{
        uint begin = block + lane * PER_INVOCATION;
        uint values[PER_INVOCATION];
        uint sum = 0u;
        for (uint i = 0u; i < PER_INVOCATION; i++) {{
            values[i] = (begin + i < push.entries) ? Words(push.counts + uint64_t(begin + i) * 4ul).v : 0u;
            sum += values[i];
        }}
        partial[lane] = sum;
        barrier();
        for (uint offset = 1u; offset < 256u; offset <<= 1u) {{
            uint value = partial[lane] + (lane >= offset ? partial[lane - offset] : 0u);
            barrier();
            partial[lane] = value;
            barrier();
        }}
        uint running = carry + partial[lane] - sum;
        carry += partial[255];
        barrier();
        for (uint i = 0u; i < PER_INVOCATION; i++) {{
            if (begin + i < push.entries) Words(push.counts + uint64_t(begin + i) * 4ul).v = running;
            running += values[i];
        }}
    }}
}}
"
    )
}

/// Moves each item to its place for the digit at `shift`: the digit's scanned offset for the
/// tile, plus the counts of that digit in earlier invocations of the tile (a shared-memory
/// scan of the packed counts), plus its rank among the invocation's own items. Items keep
/// their order within a digit: the pass is stable.
pub(crate) fn radix_scatter_shader() -> String {
    format!(
        "{RADIX_PRELUDE}
layout(push_constant, scalar) uniform Push {{
    uint64_t source;
    uint64_t destination;
    uint64_t offsets;
    uint total;
    uint tiles;
    uint shift;
}} push;
shared uint scanned[8][256];

void main() {{
    uint lane = gl_LocalInvocationID.x;
    for (uint tile = gl_WorkGroupID.x; tile < push.tiles; tile += gl_NumWorkGroups.x) {{
        uint packed[8] = uint[8](0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
        uint64_t items[PER_INVOCATION];
        uint digits[PER_INVOCATION];
        uint ranks[PER_INVOCATION];
        uint first = tile * {RADIX_TILE}u + lane * PER_INVOCATION;
        for (uint i = 0u; i < PER_INVOCATION; i++) {{
            digits[i] = NO_DIGIT;
            ranks[i] = 0u;
            if (first + i < push.total) {{
                items[i] = Items(push.source + uint64_t(first + i) * 8ul).v;
                uint digit = uint(items[i] >> (32u + push.shift)) & 15u;
                digits[i] = digit;
                ranks[i] = field(packed, digit);
                packed[digit >> 1u] += 1u << ((digit & 1u) * 16u);
            }}
        }}
        for (uint word = 0u; word < 8u; word++) scanned[word][lane] = packed[word];
        barrier();
        // Inclusive scan over the invocations (fields never carry: a tile has 4096 items).
        for (uint offset = 1u; offset < 256u; offset <<= 1u) {{
            uint values[8];
            for (uint word = 0u; word < 8u; word++) {{
                values[word] = scanned[word][lane] + (lane >= offset ? scanned[word][lane - offset] : 0u);
            }}
            barrier();
            for (uint word = 0u; word < 8u; word++) scanned[word][lane] = values[word];
            barrier();
        }}
        uint before[8];
        for (uint word = 0u; word < 8u; word++) before[word] = scanned[word][lane] - packed[word];
        for (uint i = 0u; i < PER_INVOCATION; i++) {{
            uint digit = digits[i];
            if (digit != NO_DIGIT) {{
                uint base = Words(push.offsets + uint64_t(digit * push.tiles + tile) * 4ul).v;
                uint place = base + field(before, digit) + ranks[i];
                Items(push.destination + uint64_t(place) * 8ul).v = items[i];
            }}
        }}
        barrier();
    }}
}}
"
    )
}

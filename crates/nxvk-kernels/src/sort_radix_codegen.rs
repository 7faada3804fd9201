//! GLSL for the radix sort (`sort_radix.rs`): per-tile digit counts, a flat exclusive scan of
//! those counts (block sums, then each block scanned from its offset), and the stable scatter
//! that ranks a tile's items in shared memory and writes them to their places in runs.
//!
//! An *item* holds the key (already complemented for a descending sort) and, for argsort and
//! top_k, the element's position in its row. With positions, keys of up to 32 bits make one
//! `uint64_t` (key in the high word, position in the low one) and 64-bit keys a `u64vec2`, the
//! layout of the network's items (`sort_codegen.rs`), so top_k's finishing kernels read either.
//! Sort's items are the keys alone (`uint` or `uint64_t`): the last pass writes each key's
//! element (`bits_of_key`), which is the input element itself except where floats share keys
//! (zeros of either sign, NaNs of any payload). Those are put back by the *fix-up*: each class
//! is one run of the sorted row holding the class's elements in input order (the sort is
//! stable), so the count kernel of the first pass also tallies, per tile, its zeros, its NaNs,
//! its keys below the zeros' and whether it holds an element unlike its key's
//! (`TallyGlsl`), and the fix-up kernel rewrites, in the tiles so marked, those elements
//! at their places in the runs. The first pass reads the input elements and builds the items
//! as it goes; the last pass writes the final result (items, values or positions) straight
//! away.
//!
//! Rows: the input is `rows` contiguous rows of `row_length` elements; a tile is
//! `workgroup_size * per_invocation` consecutive items of one row (a row's last tile may be
//! partly empty; tiles never span rows). Counts are laid out row-major, then digit-major, then
//! by tile: `counts[(row * 256 + digit) * tiles_per_row + tile_in_row]`, so one exclusive scan
//! over the whole array gives every (row, digit, tile) its place in the packed rows: the rows
//! before it (whose counts sum to their lengths), the smaller digits of its row, and the same
//! digit in the row's earlier tiles. The scatter then needs no digit totals of its own.
//!
//! Within a tile, subgroup `s` of the workgroup owns the `s`-th run of
//! `subgroup_size * per_invocation` items and walks it in rounds of one item per invocation.
//! Thread order everywhere is (`gl_SubgroupID`, `gl_SubgroupInvocationID`), which the kernels
//! define themselves rather than assume `gl_LocalInvocationID` follows. The shapes assume
//! `gl_SubgroupSize` is the device's reported subgroup size, which Vulkan guarantees for SPIR-V
//! 1.5 modules created without the varying subgroup size flag (nxvk's case).

use crate::sort_codegen::{float_classes, integer_storage, key_function, shares_keys};
use nxvk_core::{Capabilities, DType};

/// Digits are 8 bits: 256 bins, four passes for 32-bit keys, eight for 64-bit ones.
pub(crate) const RADIX_BITS: u32 = 8;

/// Bins per digit.
pub(crate) const BINS: u32 = 1 << RADIX_BITS;

/// Words of the fix-up's tallies per tile (`TallyGlsl`).
pub(crate) const TALLY_WORDS: u32 = 3;

/// Subgroups per workgroup of the count and scatter kernels (at most; fewer when subgroups are
/// wide, so a workgroup never exceeds 256 invocations and each invocation owns whole digits).
const SUBGROUPS_PER_WORKGROUP: u32 = 8;

/// Items per invocation in a tile, at most (16 x 256 invocations = 4,096 items, whose 32 KiB
/// exchange buffer of 8-byte items fits a 48 KiB workgroup beside the counters; sort's 4-byte
/// keys leave room for more workgroups per multiprocessor).
const MAX_PER_INVOCATION: u32 = 16;

/// Items per invocation, at most, for sort's keys alone of up to 32 bits: on the H200 tiles of
/// 2,048 sorted sort_f32_16M in 1.169 ms, against 1.341 with 4,096 and 1.286 with 8,192
/// (docs/BENCHMARKS.md, fifteenth session); 64-bit keys alone lost with them (2.91 against
/// 2.41 ms) and keep `MAX_PER_INVOCATION`.
const MAX_PER_INVOCATION_NARROW_KEYS: u32 = 8;

/// The shape of the radix kernels on one device for one item width, derived from its subgroup
/// size and shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RadixShape {
    pub(crate) subgroup_size: u32,
    pub(crate) workgroup_size: u32,
    pub(crate) per_invocation: u32,
    /// Peers (the invocations holding the same digit) come from one `subgroupPartitionNV`
    /// instead of one ballot per digit bit.
    pub(crate) partitioned: bool,
    /// Keys are 64 bits rather than 32 (or fewer).
    pub(crate) wide: bool,
    /// Items carry the element's position beside the key (argsort, top_k); sort's are keys.
    pub(crate) positions: bool,
}

impl RadixShape {
    /// The largest shape for items of 64-bit keys (`wide`) or narrower ones, with or without
    /// `positions`, whose scatter fits the device's shared memory, or `None` when the device
    /// lacks the subgroup votes, ballots and scans the kernels count and rank with.
    pub(crate) fn for_device(
        capabilities: &Capabilities,
        wide: bool,
        positions: bool,
    ) -> Option<RadixShape> {
        let operations = &capabilities.subgroup_operations;
        if !(operations.basic && operations.vote && operations.ballot && operations.arithmetic) {
            return None;
        }
        let shape = RadixShape::fitting(
            capabilities.subgroup_size,
            capabilities.max_shared_memory_bytes,
            capabilities.max_workgroup_invocations,
            wide,
            positions,
        )?;
        Some(RadixShape {
            partitioned: operations.partitioned,
            ..shape
        })
    }

    /// The largest shape for subgroups of `subgroup_size` whose scatter fits
    /// `max_shared_bytes` and whose workgroups fit `max_invocations`.
    fn fitting(
        subgroup_size: u32,
        max_shared_bytes: u32,
        max_invocations: u32,
        wide: bool,
        positions: bool,
    ) -> Option<RadixShape> {
        if !subgroup_size.is_power_of_two() || subgroup_size > 128 {
            return None;
        }
        let workgroup_size = (subgroup_size * SUBGROUPS_PER_WORKGROUP).min(BINS);
        if workgroup_size > max_invocations {
            return None;
        }
        let mut per_invocation = if wide || positions {
            MAX_PER_INVOCATION
        } else {
            MAX_PER_INVOCATION_NARROW_KEYS
        };
        while per_invocation > 0 {
            let shape = RadixShape {
                subgroup_size,
                workgroup_size,
                per_invocation,
                partitioned: false,
                wide,
                positions,
            };
            if shape.scatter_shared_bytes() <= max_shared_bytes {
                return Some(shape);
            }
            per_invocation /= 2;
        }
        None
    }

    /// Items per tile.
    pub(crate) fn tile(&self) -> u32 {
        self.workgroup_size * self.per_invocation
    }

    /// Bytes of one item.
    pub(crate) fn item_bytes(&self) -> u32 {
        let key = if self.wide { 8 } else { 4 };
        if self.positions { 2 * key } else { key }
    }

    fn subgroups(&self) -> u32 {
        self.workgroup_size / self.subgroup_size
    }

    /// Shared memory of the scatter kernel: per-subgroup digit counters, the digits' places,
    /// the tile's items (the exchange), the scan's per-subgroup sums, and the look-back's
    /// ticket and fallback counters (one shape serves both placements).
    fn scatter_shared_bytes(&self) -> u32 {
        let look_back = (1 + BINS) * 4;
        (self.subgroups() * BINS + BINS + self.subgroups()) * 4
            + self.tile() * self.item_bytes()
            + look_back
    }

    /// A label naming the shape in kernel names.
    fn label(&self) -> String {
        let peers = if self.partitioned { "_partitioned" } else { "" };
        let width = if self.wide { "_wide" } else { "" };
        let items = if self.positions { "" } else { "_keys" };
        format!(
            "s{}_w{}_k{}{peers}{width}{items}",
            self.subgroup_size, self.workgroup_size, self.per_invocation
        )
    }
}

/// Where a pass reads its items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RadixSource {
    /// The input rows of `dtype` (the first pass): items are built as they are loaded.
    Input { dtype: DType },
    /// Items written by the previous pass.
    Items,
}

/// What a pass writes at each item's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RadixDestination {
    /// The whole item (every pass but the last, and the last when items are the result).
    Items,
    /// The element of `dtype` each key stands for (sort's values; items are keys alone).
    Values { dtype: DType },
    /// The payload as a position of the integer `dtype` (argsort).
    Positions { dtype: DType },
}

impl RadixSource {
    fn label(&self) -> String {
        match self {
            RadixSource::Input { dtype } => dtype.to_string().to_lowercase(),
            RadixSource::Items => "items".into(),
        }
    }

    /// The dtype whose key functions (`key_function`) the source's GLSL calls.
    fn dtype(&self) -> Option<DType> {
        match *self {
            RadixSource::Input { dtype } => Some(dtype),
            RadixSource::Items => None,
        }
    }

    /// GLSL of `load_key(row, position)` (the key, complemented by `push.flip`) and
    /// `load_item(row, position)`; the input's also of `element_address(row, position)`.
    fn functions(&self) -> String {
        match *self {
            RadixSource::Input { dtype } => {
                let bytes = dtype.bits() / 8;
                format!(
                    "
uint64_t element_address(uint row, uint position) {{
    return push.source + (uint64_t(row) * uint64_t(push.row_length) + uint64_t(position)) * {bytes}ul;
}}
KEY load_key(uint row, uint position) {{ return key_of_bits(element_bits(element_address(row, position))) ^ KEY(push.flip); }}
ITEM load_item(uint row, uint position) {{ return make_item(load_key(row, position), uint64_t(position)); }}
"
                )
            }
            RadixSource::Items => "
ITEM load_item(uint row, uint position) {
    return Items(push.source + (uint64_t(row) * uint64_t(push.row_length) + uint64_t(position)) * ITEM_BYTES).v;
}
KEY load_key(uint row, uint position) { return key_of_item(load_item(row, position)); }
"
            .into(),
        }
    }
}

/// GLSL of the key functions of the dtype that `source` or `destination` names (once, though
/// a single pass names it twice), or `None` when it has no keys.
fn key_functions(source: RadixSource, destination: Option<RadixDestination>) -> Option<String> {
    let named = source.dtype().or(match destination {
        Some(RadixDestination::Values { dtype }) => Some(dtype),
        _ => None,
    });
    match named {
        Some(dtype) => key_function(dtype),
        None => Some(String::new()),
    }
}

impl RadixDestination {
    fn label(&self) -> String {
        match self {
            RadixDestination::Items => "items".into(),
            RadixDestination::Values { dtype } => format!("values_{dtype}").to_lowercase(),
            RadixDestination::Positions { dtype } => format!("positions_{dtype}"),
        }
    }

    /// GLSL of `store_item(index, item)`, `index` counted in the destination's elements; for
    /// values also of `store_bits(index, bits)`, which writes an element's bits.
    fn function(&self) -> Option<String> {
        let (storage, bytes, value) = match *self {
            RadixDestination::Items => {
                return Some(
                    "void store_item(uint64_t index, ITEM item) { Items(push.destination + index * ITEM_BYTES).v = item; }"
                        .into(),
                );
            }
            RadixDestination::Values { dtype } => {
                let bytes = dtype.bits() / 8;
                let storage = match bytes {
                    1 => "uint8_t",
                    2 => "uint16_t",
                    4 => "uint",
                    8 => "uint64_t",
                    _ => return None,
                };
                (
                    storage,
                    bytes,
                    "bits_of_key(key_of_item(item) ^ KEY(push.flip))",
                )
            }
            RadixDestination::Positions { dtype } => (
                integer_storage(dtype)?,
                dtype.bits() / 8,
                "payload_of(item)",
            ),
        };
        Some(format!(
            "layout(buffer_reference, scalar, buffer_reference_align = {bytes}) writeonly buffer Output {{ {storage} v; }};
void store_bits(uint64_t index, uint64_t bits) {{ Output(push.destination + index * {bytes}ul).v = {storage}(bits); }}
void store_item(uint64_t index, ITEM item) {{ store_bits(index, uint64_t({value})); }}"
        ))
    }
}

/// GLSL of the item type of a shape: `ITEM`, `KEY`, `ITEM_BYTES`, and `make_item`,
/// `key_of_item`, `digit_of_key` (the digit at `push.shift`) and, with positions, `payload_of`.
fn item_functions(shape: RadixShape) -> String {
    match (shape.wide, shape.positions) {
        (true, true) => {
            "
#define ITEM u64vec2
#define KEY uint64_t
const uint64_t ITEM_BYTES = 16ul;
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer Items { ITEM v; };
ITEM make_item(KEY key, uint64_t payload) { return ITEM(key, payload); }
KEY key_of_item(ITEM item) { return item.x; }
uint64_t payload_of(ITEM item) { return item.y; }
uint digit_of_key(KEY key) { return uint(key >> push.shift) & (BINS - 1u); }
"
        }
        (false, true) => {
            "
#define ITEM uint64_t
#define KEY uint
const uint64_t ITEM_BYTES = 8ul;
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer Items { ITEM v; };
ITEM make_item(KEY key, uint64_t payload) { return (uint64_t(key) << 32) | payload; }
KEY key_of_item(ITEM item) { return uint(item >> 32); }
uint64_t payload_of(ITEM item) { return item & 0xFFFFFFFFul; }
uint digit_of_key(KEY key) { return (key >> push.shift) & (BINS - 1u); }
"
        }
        (wide, false) => {
            // Sort's items: the key alone, 32 or 64 bits.
            let (key, bytes) = if wide { ("uint64_t", 8) } else { ("uint", 4) };
            return format!(
                "
#define ITEM {key}
#define KEY {key}
const uint64_t ITEM_BYTES = {bytes}ul;
layout(buffer_reference, scalar, buffer_reference_align = {bytes}) buffer Items {{ ITEM v; }};
ITEM make_item(KEY key, uint64_t position) {{ return key; }}
KEY key_of_item(ITEM item) {{ return item; }}
uint digit_of_key(KEY key) {{ return uint(key >> push.shift) & (BINS - 1u); }}
"
            );
        }
    }
    .into()
}

/// The declarations every radix kernel starts with: sizes, push constants, the item type
/// and the workgroup scan.
fn prelude(shape: RadixShape) -> String {
    let RadixShape {
        subgroup_size,
        workgroup_size,
        per_invocation,
        partitioned,
        ..
    } = shape;
    let subgroups = shape.subgroups();
    let tile = shape.tile();
    let digit_peers = digit_peers_function(partitioned);
    let extension = if partitioned {
        "#extension GL_NV_shader_subgroup_partitioned : require"
    } else {
        ""
    };
    // Loops over an invocation's items, digits or subgroups are marked for unrolling
    // (GL_EXT_control_flow_attributes): their arrays then stay in registers. On the H200 this
    // took sort_f32_16M from 1.805 to 1.702 ms (docs/BENCHMARKS.md, eleventh session).
    format!(
        "#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_vote : require
{extension}
layout(local_size_x = {workgroup_size}) in;
const uint WORKGROUP = {workgroup_size}u;
const uint SUBGROUP = {subgroup_size}u;
const uint SUBGROUPS = {subgroups}u;
const uint PER_INVOCATION = {per_invocation}u;
const uint TILE = {tile}u;
const uint BINS = {BINS}u;
// A digit past every bin: the counting's mark of a position past the row.
const uint NO_DIGIT = BINS;
const uint TALLY_WORDS = {TALLY_WORDS}u;
const uint UNLIKE_ITS_KEY = 0x80000000u;
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer Words {{ uint v; }};
// Addresses (source, destination, tile counts or the look-back's tile statuses, block sums of
// the counts), the key complement of a descending sort, the look-back's digit totals and tile
// tickets, the fix-up's tile tallies; then the rows' length, tiles per row, tiles in all, the
// digit's shift, the destination's row stride (in its elements), the number of counts, the
// length of a block of counts, the number of blocks, the pass and the number of passes.
layout(push_constant, scalar) uniform Push {{
    uint64_t source, destination, counts, block_sums, flip, totals, tickets, tallies;
    uint row_length, tiles_per_row, tiles, shift, destination_row_stride, count_total, block_length, blocks, pass, passes;
}} push;
{items}
// Thread order: subgroups in order, invocations in order within each.
uint invocation_index() {{ return gl_SubgroupID * SUBGROUP + gl_SubgroupInvocationID; }}

// The place of the count of (`row`, `digit`, `tile_in_row`).
uint64_t count_address(uint row, uint digit, uint tile_in_row) {{
    return push.counts + ((uint64_t(row) * BINS + uint64_t(digit)) * uint64_t(push.tiles_per_row) + uint64_t(tile_in_row)) * 4ul;
}}
// Word `word` of the fix-up's tallies of tile `tile` (`TallyGlsl`).
uint64_t tally_address(uint tile, uint word) {{ return push.tallies + (uint64_t(tile) * TALLY_WORDS + uint64_t(word)) * 4ul; }}
{digit_peers}
shared uint subgroup_sums[SUBGROUPS];

// An exclusive sum of one value per invocation in thread order; `total` receives the sum of
// all. Every invocation must call it (it holds barriers).
uint workgroup_exclusive_add(uint value, out uint total) {{
    uint inclusive = subgroupInclusiveAdd(value);
    if (gl_SubgroupInvocationID == SUBGROUP - 1u) subgroup_sums[gl_SubgroupID] = inclusive;
    barrier();
    uint before = 0u;
    total = 0u;
    [[unroll]] for (uint subgroup = 0u; subgroup < SUBGROUPS; subgroup++) {{
        uint sum = subgroup_sums[subgroup];
        before += subgroup < gl_SubgroupID ? sum : 0u;
        total += sum;
    }}
    barrier();
    return before + inclusive - value;
}}
",
        items = item_functions(shape),
    )
}

/// GLSL of `digit_peers(digit, valid)`: the valid invocations of the subgroup holding the same
/// digit, as a ballot. Every invocation of the subgroup must call it.
fn digit_peers_function(partitioned: bool) -> String {
    if partitioned {
        return "
uvec4 digit_peers(uint digit, bool valid) {
    // Invalid invocations get a digit of their own (no real digit exceeds 255).
    return subgroupPartitionNV(valid ? digit : 256u) & subgroupBallot(valid);
}
"
        .into();
    }
    format!(
        "
// One vote per digit bit.
uvec4 digit_peers(uint digit, bool valid) {{
    uvec4 peers = subgroupBallot(valid);
    for (uint bit = 0u; bit < {RADIX_BITS}u; bit++) {{
        bool set = ((digit >> bit) & 1u) != 0u;
        uvec4 vote = subgroupBallot(set);
        peers &= set ? vote : ~vote;
    }}
    return peers;
}}
"
    )
}

/// A kernel's name: its role, source, destination and shape.
pub(crate) fn kernel_name(
    role: &str,
    shape: RadixShape,
    source: RadixSource,
    destination: Option<RadixDestination>,
) -> String {
    let destination = destination.map(|d| format!("_to_{}", d.label()));
    format!(
        "sort_radix_{role}_{}{}_{}",
        source.label(),
        destination.unwrap_or_default(),
        shape.label()
    )
}

/// GLSL that splits `tile` into its `row` and `tile_in_row`.
const TILE_ROW: &str = "uint row = tile / push.tiles_per_row;
        uint tile_in_row = tile - row * push.tiles_per_row;";

/// Whether the first pass, reading `source`, tallies its tiles for the fix-up: sort's items
/// (keys alone) of a dtype whose keys some elements share.
pub(crate) fn keeps_tallies(shape: RadixShape, source: RadixSource) -> bool {
    !shape.positions && source.dtype().is_some_and(shares_keys)
}

/// Counts the digits at `push.shift` of each tile (see the module doc for the layout;
/// `tile_histogram_glsl` does the counting), and tallies the tile for the fix-up when the pass
/// keeps tallies (`keeps_tallies`).
pub(crate) fn count_shader(shape: RadixShape, source: RadixSource) -> Option<String> {
    let tallies = TallyGlsl::for_pass(shape, source)?;
    Some(format!(
        "{prelude}
{keys}
{functions}
{declarations}
shared uint histogram[BINS];

void main() {{
    uint invocation = invocation_index();
    for (uint tile = gl_WorkGroupID.x; tile < push.tiles; tile += gl_NumWorkGroups.x) {{
        {TILE_ROW}
        for (uint digit = invocation; digit < BINS; digit += WORKGROUP) histogram[digit] = 0u;
{start}        barrier();
{counting}        barrier();
        for (uint digit = invocation; digit < BINS; digit += WORKGROUP) {{
            Words(count_address(row, digit, tile_in_row)).v = histogram[digit];
        }}
{store}        barrier();
    }}
}}
",
        prelude = prelude(shape),
        keys = key_functions(source, None)?,
        functions = source.functions(),
        declarations = tallies.declarations,
        start = tallies.start,
        store = tallies.store,
        counting = tile_histogram_glsl("histogram", "tile_in_row", &tallies),
    ))
}

/// The GLSL of the fix-up's tallies in a first pass's counting kernel (`TallyGlsl::default()`
/// where the pass keeps none: then only `load`). A tile's tallies are three words: word 0 its
/// zeros, with bit 31 set when it holds an element unlike its key's (-0.0, a NaN other than the
/// positive quiet one), word 1 its NaNs, word 2 its keys below the zeros' key (all after
/// `push.flip`). Sums pack two counts in 16 bits each: a tile holds at most 4,096 elements.
struct TallyGlsl {
    /// `is_zero_bits`, `is_nan_bits` and the workgroup's shared sums.
    declarations: String,
    /// Zeroes the shared sums (before the tile's first barrier).
    start: &'static str,
    /// The invocation's running tallies, declared before the tile's loads.
    locals: &'static str,
    /// Declares `key`, the key at `position` (a valid one) after `push.flip`, tallying its
    /// element.
    load: &'static str,
    /// Adds the invocation's tallies into the shared sums.
    flush: &'static str,
    /// Writes the shared sums as the tile's tallies (after a barrier).
    store: &'static str,
}

impl Default for TallyGlsl {
    fn default() -> TallyGlsl {
        TallyGlsl {
            declarations: String::new(),
            start: "",
            locals: "",
            load: "KEY key = load_key(row, position);",
            flush: "",
            store: "",
        }
    }
}

impl TallyGlsl {
    /// The tallies of the first pass from `source` when it keeps them (`keeps_tallies`).
    fn for_pass(shape: RadixShape, source: RadixSource) -> Option<TallyGlsl> {
        if !keeps_tallies(shape, source) {
            return Some(TallyGlsl::default());
        }
        Some(TallyGlsl {
            declarations: float_classes(source.dtype()?)? + "shared uint tally_sums[2];\n",
            start: "        if (invocation == 0u) {
            tally_sums[0] = 0u;
            tally_sums[1] = 0u;
        }
",
            locals: "KEY zero_key = key_of_bits(KEY(0)) ^ KEY(push.flip);
        uint classes = 0u;
        uint below_and_unlike = 0u;",
            load: "KEY bits = element_bits(element_address(row, position));
                KEY unflipped = key_of_bits(bits);
                KEY key = unflipped ^ KEY(push.flip);
                classes += is_zero_bits(bits) ? 1u : (is_nan_bits(bits) ? 0x10000u : 0u);
                below_and_unlike += key < zero_key ? 1u : 0u;
                below_and_unlike += bits_of_key(unflipped) != bits ? 0x10000u : 0u;",
            flush: "        uint classes_sum = subgroupAdd(classes);
        uint below_and_unlike_sum = subgroupAdd(below_and_unlike);
        if (subgroupElect()) {
            atomicAdd(tally_sums[0], classes_sum);
            atomicAdd(tally_sums[1], below_and_unlike_sum);
        }
",
            store: "        if (invocation == 0u) {
            uint unlike = (tally_sums[1] >> 16) != 0u ? UNLIKE_ITS_KEY : 0u;
            Words(tally_address(tile, 0u)).v = (tally_sums[0] & 0xFFFFu) | unlike;
            Words(tally_address(tile, 1u)).v = tally_sums[0] >> 16;
            Words(tally_address(tile, 2u)).v = tally_sums[1] & 0xFFFFu;
        }
",
        })
    }
}

/// The fix-up (module doc): in each tile tallied as holding an element unlike its key's, each
/// such element rewritten at its place in its class's run. From the row's tallies: the zeros'
/// run starts after the row's keys below the zeros', the NaNs' at the row's end (ascending) or
/// start (descending, where their complemented keys are the smallest); within a run the
/// tile's elements follow the row's earlier tiles' and keep their input order.
pub(crate) fn fix_up_shader(shape: RadixShape, dtype: DType) -> Option<String> {
    let source = RadixSource::Input { dtype };
    let destination = RadixDestination::Values { dtype };
    Some(format!(
        "{prelude}
{keys}
{classes}
{functions}
{store}
void main() {{
    uint invocation = invocation_index();
    for (uint tile = gl_WorkGroupID.x; tile < push.tiles; tile += gl_NumWorkGroups.x) {{
        {TILE_ROW}
        // The same word for every invocation: the whole workgroup skips or fixes the tile.
        if ((Words(tally_address(tile, 0u)).v & UNLIKE_ITS_KEY) == 0u) continue;
        uint zeros_before = 0u;
        uint nans_before = 0u;
        uint row_below = 0u;
        uint row_nans = 0u;
        for (uint other = invocation; other < push.tiles_per_row; other += WORKGROUP) {{
            uint tallied = row * push.tiles_per_row + other;
            uint zeros = Words(tally_address(tallied, 0u)).v & ~UNLIKE_ITS_KEY;
            uint nans = Words(tally_address(tallied, 1u)).v;
            row_below += Words(tally_address(tallied, 2u)).v;
            row_nans += nans;
            if (other < tile_in_row) {{
                zeros_before += zeros;
                nans_before += nans;
            }}
        }}
        uint zero_place;
        uint nan_place;
        uint below_total;
        uint nan_total;
        workgroup_exclusive_add(zeros_before, zero_place);
        workgroup_exclusive_add(nans_before, nan_place);
        workgroup_exclusive_add(row_below, below_total);
        workgroup_exclusive_add(row_nans, nan_total);
        zero_place += below_total;
        nan_place += push.flip == 0ul ? push.row_length - nan_total : 0u;
        uint first = tile_in_row * TILE;
        uint64_t row_start = uint64_t(row) * uint64_t(push.destination_row_stride);
        [[unroll]] for (uint round = 0u; round < PER_INVOCATION; round++) {{
            uint position = first + round * WORKGROUP + invocation;
            bool valid = position < push.row_length;
            KEY bits = valid ? element_bits(element_address(row, position)) : KEY(0);
            bool zero = valid && is_zero_bits(bits);
            bool nan = valid && is_nan_bits(bits);
            uint round_sums;
            uint ranks = workgroup_exclusive_add(zero ? 1u : (nan ? 0x10000u : 0u), round_sums);
            if (valid && bits_of_key(key_of_bits(bits)) != bits) {{
                uint place = zero ? zero_place + (ranks & 0xFFFFu) : nan_place + (ranks >> 16);
                store_bits(row_start + uint64_t(place), uint64_t(bits));
            }}
            zero_place += round_sums & 0xFFFFu;
            nan_place += round_sums >> 16;
        }}
    }}
}}
",
        prelude = prelude(shape),
        keys = key_function(dtype)?,
        classes = float_classes(dtype)?,
        functions = source.functions(),
        store = destination.function()?,
    ))
}

/// GLSL adding the digits at `push.shift` of tile `tile` (a variable) of `row` into the
/// shared counters `histogram` (zeroed before; every invocation takes part), loading keys as
/// `tallies.load` does and adding its tallies. Loads are coalesced (round `i` reads
/// `WORKGROUP` consecutive items) and all issued before any counting, so their latencies
/// overlap; counting is `add_digit_glsl`'s.
fn tile_histogram_glsl(histogram: &str, tile: &str, tallies: &TallyGlsl) -> String {
    format!(
        "        {{
        uint first = {tile} * TILE;
        {locals}
        uint digits[PER_INVOCATION];
        [[unroll]] for (uint round = 0u; round < PER_INVOCATION; round++) {{
            uint position = first + round * WORKGROUP + invocation;
            digits[round] = NO_DIGIT;
            if (position < push.row_length) {{
                {load}
                digits[round] = digit_of_key(key);
            }}
        }}
        [[unroll]] for (uint round = 0u; round < PER_INVOCATION; round++) {{
{add}        }}
{flush}        }}
",
        locals = tallies.locals,
        load = tallies.load,
        flush = tallies.flush,
        add = add_digit_glsl(histogram, "0u", "digits[round]"),
    )
}

/// GLSL adding one to `counters[offset + digit]` for each invocation of the subgroup whose
/// `digit` is not `NO_DIGIT`: one atomic for the subgroup when all its invocations hold the
/// same digit (the exponent byte of floats in a narrow range), else one per invocation, which
/// the hardware serialises only where digits repeat. On the H200 this counted a pass of 16M
/// random keys in 0.048 ms, against 0.11 for one atomic per distinct digit found by
/// `digit_peers` (docs/BENCHMARKS.md, fifteenth session).
fn add_digit_glsl(counters: &str, offset: &str, digit: &str) -> String {
    format!(
        "            {{
            uint digit = {digit};
            if (subgroupAllEqual(digit)) {{
                if (subgroupElect() && digit != NO_DIGIT) atomicAdd({counters}[{offset} + digit], SUBGROUP);
            }} else if (digit != NO_DIGIT) {{
                atomicAdd({counters}[{offset} + digit], 1u);
            }}
            }}
"
    )
}

/// The first half of the flat exclusive scan of the counts: the sum of each block of
/// `push.block_length` counts (a multiple of `TILE`) into `block_sums`.
pub(crate) fn block_sums_shader(shape: RadixShape) -> String {
    format!(
        "{prelude}
void main() {{
    uint invocation = invocation_index();
    for (uint block = gl_WorkGroupID.x; block < push.blocks; block += gl_NumWorkGroups.x) {{
        uint begin = block * push.block_length;
        uint end = min(begin + push.block_length, push.count_total);
        uint sum = 0u;
        for (uint index = begin + invocation; index < end; index += WORKGROUP) {{
            sum += Words(push.counts + uint64_t(index) * 4ul).v;
        }}
        uint total;
        workgroup_exclusive_add(sum, total);
        if (invocation == 0u) Words(push.block_sums + uint64_t(block) * 4ul).v = total;
    }}
}}
",
        prelude = prelude(shape),
    )
}

/// The second half of the flat exclusive scan: each block of counts replaced by its exclusive
/// prefix sums, starting from the sum of the earlier blocks (few: the driver keeps the block
/// count bounded), in chunks of `TILE` counts with a carry.
pub(crate) fn scan_blocks_shader(shape: RadixShape) -> String {
    format!(
        "{prelude}
void main() {{
    uint invocation = invocation_index();
    for (uint block = gl_WorkGroupID.x; block < push.blocks; block += gl_NumWorkGroups.x) {{
        uint earlier = 0u;
        for (uint other = invocation; other < block; other += WORKGROUP) {{
            earlier += Words(push.block_sums + uint64_t(other) * 4ul).v;
        }}
        uint carry;
        workgroup_exclusive_add(earlier, carry);
        uint begin = block * push.block_length;
        uint end = min(begin + push.block_length, push.count_total);
        for (uint chunk = begin; chunk < end; chunk += TILE) {{
            uint first = chunk + invocation * PER_INVOCATION;
            uint values[PER_INVOCATION];
            uint sum = 0u;
            [[unroll]] for (uint i = 0u; i < PER_INVOCATION; i++) {{
                values[i] = first + i < end ? Words(push.counts + uint64_t(first + i) * 4ul).v : 0u;
                sum += values[i];
            }}
            uint chunk_total;
            uint running = carry + workgroup_exclusive_add(sum, chunk_total);
            [[unroll]] for (uint i = 0u; i < PER_INVOCATION; i++) {{
                if (first + i < end) Words(push.counts + uint64_t(first + i) * 4ul).v = running;
                running += values[i];
            }}
            carry += chunk_total;
        }}
    }}
}}
",
        prelude = prelude(shape),
    )
}

/// Where a scatter's tiles find the places of their digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// The scanned counts of the count kernel (the default passes: count, scan, scatter).
    ScannedCounts,
    /// A decoupled look-back over the row's earlier tiles, each tile publishing its counts and
    /// then its inclusive prefix, plus the digit starts from one histogram of every pass
    /// (`histogram_shader`): one dispatch per pass. Tiles are taken in order from a ticket
    /// counter, so the tile before has started; a tile whose counts are not published after a
    /// few polls is counted again from the pass's source (complete since the pass before), so
    /// no workgroup ever waits on another's progress, which Vulkan does not promise.
    LookBack,
}

impl Placement {
    /// A suffix naming the placement in kernel names.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Placement::ScannedCounts => "",
            Placement::LookBack => "_lookback",
        }
    }
}

/// GLSL of the look-back's declarations: tile statuses (flag in the top two bits, count or
/// prefix below) in `push.counts`, tile-major then by digit, so the polls of consecutive
/// digits read consecutive words.
const LOOK_BACK_GLSL: &str = "
const uint FLAG_AGGREGATE = 1u << 30;
const uint FLAG_PREFIX = 2u << 30;
const uint FLAG_MASK = 3u << 30;
// Polls of an unpublished tile before counting it here (each poll is an atomic read and a
// workgroup vote).
const uint POLLS = 8u;
uint64_t status_address(uint row, uint tile_in_row, uint digit) {
    return push.counts + ((uint64_t(row) * uint64_t(push.tiles_per_row) + uint64_t(tile_in_row)) * BINS + uint64_t(digit)) * 4ul;
}
shared uint ticket;
shared uint fallback_histogram[BINS];
";

/// GLSL of the look-back itself: after this tile published its counts, walks back over the
/// row's earlier tiles, adding each digit's published counts until a published prefix, and
/// counting from the source any tile still unpublished after `POLLS` polls; every step is
/// workgroup-uniform (votes by `workgroup_exclusive_add`), so the counting can use barriers.
/// Leaves `earlier[j]`, the count of digit `j` in the row's earlier tiles.
fn look_back_glsl() -> String {
    format!(
        "        uint earlier[DIGITS_PER_INVOCATION];
        bool found[DIGITS_PER_INVOCATION];
        [[unroll]] for (uint j = 0u; j < DIGITS_PER_INVOCATION; j++) {{
            earlier[j] = 0u;
            found[j] = tile_in_row == 0u;
        }}
        for (uint back = tile_in_row; back > 0u; back--) {{
            uint before_tile = back - 1u;
            uint statuses[DIGITS_PER_INVOCATION];
            uint absent_total = 0u;
            for (uint poll = 0u; poll < POLLS; poll++) {{
                uint absent = 0u;
                [[unroll]] for (uint j = 0u; j < DIGITS_PER_INVOCATION; j++) {{
                    uint digit = invocation * DIGITS_PER_INVOCATION + j;
                    statuses[j] = found[j] ? FLAG_PREFIX : atomicAdd(Words(status_address(row, before_tile, digit)).v, 0u);
                    absent += (statuses[j] & FLAG_MASK) == 0u ? 1u : 0u;
                }}
                workgroup_exclusive_add(absent, absent_total);
                if (absent_total == 0u) break;
            }}
            if (absent_total != 0u) {{
                // The tile before has not published: count its digits from the source here.
                for (uint digit = invocation; digit < BINS; digit += WORKGROUP) fallback_histogram[digit] = 0u;
                barrier();
{counting}                barrier();
                [[unroll]] for (uint j = 0u; j < DIGITS_PER_INVOCATION; j++) {{
                    if ((statuses[j] & FLAG_MASK) == 0u) {{
                        statuses[j] = FLAG_AGGREGATE | fallback_histogram[invocation * DIGITS_PER_INVOCATION + j];
                    }}
                }}
                barrier();
            }}
            uint open = 0u;
            [[unroll]] for (uint j = 0u; j < DIGITS_PER_INVOCATION; j++) {{
                if (!found[j]) {{
                    earlier[j] += statuses[j] & ~FLAG_MASK;
                    found[j] = (statuses[j] & FLAG_MASK) == FLAG_PREFIX;
                }}
                open += found[j] ? 0u : 1u;
            }}
            uint open_total;
            workgroup_exclusive_add(open, open_total);
            if (open_total == 0u) break;
        }}
",
        counting = tile_histogram_glsl("fallback_histogram", "before_tile", &TallyGlsl::default()),
    )
}

/// The stable scatter of one pass. Per tile: each subgroup ranks its rounds of items by digit
/// (peers from `digit_peers`; the last peer bumps the subgroup's counter), the counters become
/// exclusive offsets (over subgroups, then over digits in the tile), the items are exchanged
/// through shared memory into digit order, and written out in thread order, so consecutive
/// invocations write consecutive places of a digit's run. An item's place is its (row, digit,
/// tile)'s place, from the scanned counts or the look-back (`placement`), plus its rank in the
/// tile: ties keep their input order. Places count in packed rows; a destination with longer
/// rows (top_k's items, padded for the network's finishing kernels) adds the difference per
/// row.
pub(crate) fn scatter_shader(
    shape: RadixShape,
    source: RadixSource,
    destination: RadixDestination,
    placement: Placement,
) -> Option<String> {
    let digits_per_invocation = BINS / shape.workgroup_size;
    let (tile_loop, digit_loads, digit_places) = match placement {
        Placement::ScannedCounts => (
            "for (uint tile = gl_WorkGroupID.x; tile < push.tiles; tile += gl_NumWorkGroups.x) {",
            "        // This invocation's digits' places (the scanned counts), loaded first so that
        // their latency overlaps the items'.
        uint scanned[DIGITS_PER_INVOCATION];
        [[unroll]] for (uint j = 0u; j < DIGITS_PER_INVOCATION; j++) {
            scanned[j] = Words(count_address(row, invocation * DIGITS_PER_INVOCATION + j, tile_in_row)).v;
        }",
            "        [[unroll]] for (uint j = 0u; j < DIGITS_PER_INVOCATION; j++) {
            // Unsigned wrap-around cancels when a slot of this digit is added back.
            digit_places[invocation * DIGITS_PER_INVOCATION + j] = scanned[j] - local_starts[j];
        }"
            .to_owned(),
        ),
        Placement::LookBack => (
            "for (;;) {
        // Tiles in the order workgroups reach this point.
        if (invocation == 0u) ticket = atomicAdd(Words(push.tickets + uint64_t(push.pass) * 4ul).v, 1u);
        barrier();
        uint tile = ticket;
        if (tile >= push.tiles) break;",
            "        // This invocation's digits' totals in the row (for their starts).
        uint digit_totals[DIGITS_PER_INVOCATION];
        uint row_sum = 0u;
        [[unroll]] for (uint j = 0u; j < DIGITS_PER_INVOCATION; j++) {
            uint digit = invocation * DIGITS_PER_INVOCATION + j;
            digit_totals[j] = Words(push.totals + ((uint64_t(row) * uint64_t(push.passes) + uint64_t(push.pass)) * BINS + uint64_t(digit)) * 4ul).v;
            row_sum += digit_totals[j];
        }",
            "        uint unused;
        uint digit_start = workgroup_exclusive_add(row_sum, unused);
        // Publish this tile's counts (a first tile's are its prefix), then look back.
        [[unroll]] for (uint j = 0u; j < DIGITS_PER_INVOCATION; j++) {
            uint flag = tile_in_row == 0u ? FLAG_PREFIX : FLAG_AGGREGATE;
            atomicExchange(Words(status_address(row, tile_in_row, invocation * DIGITS_PER_INVOCATION + j)).v, flag | tile_counts[j]);
        }
{look_back_walk}        [[unroll]] for (uint j = 0u; j < DIGITS_PER_INVOCATION; j++) {
            uint digit = invocation * DIGITS_PER_INVOCATION + j;
            if (tile_in_row != 0u) atomicExchange(Words(status_address(row, tile_in_row, digit)).v, FLAG_PREFIX | (earlier[j] + tile_counts[j]));
            // Unsigned wrap-around cancels when a slot of this digit is added back.
            digit_places[digit] = row * push.row_length + digit_start + earlier[j] - local_starts[j];
            digit_start += digit_totals[j];
        }"
            .replace("{look_back_walk}", &look_back_glsl()),
        ),
    };
    let look_back = if placement == Placement::LookBack {
        LOOK_BACK_GLSL
    } else {
        ""
    };
    Some(format!(
        "{prelude}
{keys}
{functions}
{store}
{look_back}
const uint DIGITS_PER_INVOCATION = {digits_per_invocation}u;
const uint NO_RANK = 0xFFFFFFFFu;
shared uint subgroup_counts[SUBGROUPS * BINS];
shared uint digit_places[BINS];
shared ITEM exchange[TILE];

uint digit_of(ITEM item) {{ return digit_of_key(key_of_item(item)); }}

void main() {{
    uint invocation = invocation_index();
    uint lane = gl_SubgroupInvocationID;
    uint counters = gl_SubgroupID * BINS;
    {tile_loop}
        {TILE_ROW}
{digit_loads}
        for (uint slot = invocation; slot < SUBGROUPS * BINS; slot += WORKGROUP) subgroup_counts[slot] = 0u;
        barrier();
        uint first = tile_in_row * TILE;
        uint run = first + gl_SubgroupID * SUBGROUP * PER_INVOCATION;
        // All of the tile's loads are issued before the ranking, whose subgroup barriers would
        // otherwise expose one load latency per round.
        ITEM items[PER_INVOCATION];
        [[unroll]] for (uint round = 0u; round < PER_INVOCATION; round++) {{
            uint position = run + round * SUBGROUP + lane;
            items[round] = position < push.row_length ? load_item(row, position) : ITEM(0ul);
        }}
        uint ranks[PER_INVOCATION];
        [[unroll]] for (uint round = 0u; round < PER_INVOCATION; round++) {{
            bool valid = run + round * SUBGROUP + lane < push.row_length;
            uint digit = digit_of(items[round]);
            uvec4 peers = digit_peers(digit, valid);
            uint below = subgroupBallotExclusiveBitCount(peers);
            uint count = subgroupBallotBitCount(peers);
            uint before = subgroup_counts[counters + digit];
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            if (valid && below + 1u == count) subgroup_counts[counters + digit] = before + count;
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            ranks[round] = valid ? before + below : NO_RANK;
        }}
        barrier();
        // This invocation's digits: their counts in the tile.
        uint tile_counts[DIGITS_PER_INVOCATION];
        uint tile_sum = 0u;
        [[unroll]] for (uint j = 0u; j < DIGITS_PER_INVOCATION; j++) {{
            uint digit = invocation * DIGITS_PER_INVOCATION + j;
            uint count = 0u;
            [[unroll]] for (uint subgroup = 0u; subgroup < SUBGROUPS; subgroup++) count += subgroup_counts[subgroup * BINS + digit];
            tile_counts[j] = count;
            tile_sum += count;
        }}
        uint ignored;
        uint local_start = workgroup_exclusive_add(tile_sum, ignored);
        uint local_starts[DIGITS_PER_INVOCATION];
        [[unroll]] for (uint j = 0u; j < DIGITS_PER_INVOCATION; j++) {{
            uint digit = invocation * DIGITS_PER_INVOCATION + j;
            local_starts[j] = local_start;
            uint running = local_start;
            [[unroll]] for (uint subgroup = 0u; subgroup < SUBGROUPS; subgroup++) {{
                uint count = subgroup_counts[subgroup * BINS + digit];
                subgroup_counts[subgroup * BINS + digit] = running;
                running += count;
            }}
            local_start += tile_counts[j];
        }}
{digit_places}
        barrier();
        [[unroll]] for (uint round = 0u; round < PER_INVOCATION; round++) {{
            if (ranks[round] != NO_RANK) {{
                exchange[subgroup_counts[counters + digit_of(items[round])] + ranks[round]] = items[round];
            }}
        }}
        barrier();
        uint tile_items = min(TILE, push.row_length - first);
        uint64_t row_gap = uint64_t(row) * uint64_t(push.destination_row_stride - push.row_length);
        [[unroll]] for (uint round = 0u; round < PER_INVOCATION; round++) {{
            uint slot = round * WORKGROUP + invocation;
            if (slot < tile_items) {{
                ITEM item = exchange[slot];
                store_item(uint64_t(digit_places[digit_of(item)] + slot) + row_gap, item);
            }}
        }}
        barrier();
    }}
}}
",
        prelude = prelude(shape),
        keys = key_functions(source, Some(destination))?,
        functions = source.functions(),
        store = destination.function()?,
    ))
}

/// The look-back passes' histogram: every pass's digit totals of every row in one read of the
/// input, `totals[(row * passes + pass) * 256 + digit]` (zeroed before): per tile, shared
/// counters per pass (`add_digit_glsl`, as in the count kernel), then one global atomic per
/// nonzero counter; and the fix-up's tallies, as the count kernel keeps them.
pub(crate) fn histogram_shader(shape: RadixShape, dtype: DType) -> Option<String> {
    let source = RadixSource::Input { dtype };
    let tallies = TallyGlsl::for_pass(shape, source)?;
    let passes = crate::sort_codegen::key_bits(dtype)? / RADIX_BITS;
    Some(format!(
        "{prelude}
{keys}
{functions}
{declarations}
const uint PASSES = {passes}u;
shared uint histogram[PASSES * BINS];

void main() {{
    uint invocation = invocation_index();
    for (uint tile = gl_WorkGroupID.x; tile < push.tiles; tile += gl_NumWorkGroups.x) {{
        {TILE_ROW}
        for (uint slot = invocation; slot < PASSES * BINS; slot += WORKGROUP) histogram[slot] = 0u;
{start}        barrier();
        uint first = tile_in_row * TILE;
        {locals}
        KEY keys[PER_INVOCATION];
        bool valid[PER_INVOCATION];
        [[unroll]] for (uint round = 0u; round < PER_INVOCATION; round++) {{
            uint position = first + round * WORKGROUP + invocation;
            keys[round] = KEY(0);
            valid[round] = position < push.row_length;
            if (valid[round]) {{
                {load}
                keys[round] = key;
            }}
        }}
{flush}        [[unroll]] for (uint pass = 0u; pass < PASSES; pass++) {{
            [[unroll]] for (uint round = 0u; round < PER_INVOCATION; round++) {{
{add}            }}
        }}
        barrier();
        for (uint slot = invocation; slot < PASSES * BINS; slot += WORKGROUP) {{
            uint count = histogram[slot];
            if (count != 0u) atomicAdd(Words(push.totals + (uint64_t(row) * PASSES * BINS + uint64_t(slot)) * 4ul).v, count);
        }}
{store}        barrier();
    }}
}}
",
        prelude = prelude(shape),
        keys = key_functions(source, None)?,
        functions = source.functions(),
        declarations = tallies.declarations,
        start = tallies.start,
        locals = tallies.locals,
        load = tallies.load,
        flush = tallies.flush,
        store = tallies.store,
        add = add_digit_glsl(
            "histogram",
            "pass * BINS",
            &format!("valid[round] ? uint(keys[round] >> (pass * {RADIX_BITS}u)) & (BINS - 1u) : NO_DIGIT"),
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sort_codegen::wide_keys;

    /// The shapes of lavapipe (subgroups of 8, 32 KiB), the H200 (32, 48 KiB) and wider
    /// subgroups, for narrow and wide keys with and without positions: tiles as large as
    /// shared memory allows, and every kernel compiles for them (glslang needs no device), so
    /// the H200's shape is compiled here even though only lavapipe runs the tests.
    #[test]
    fn kernels_compile_for_every_subgroup_size() {
        let h200 = RadixShape::fitting(32, 48 * 1024, 1024, false, true).unwrap();
        assert_eq!((h200.workgroup_size, h200.tile()), (256, 4096));
        let h200_wide = RadixShape::fitting(32, 48 * 1024, 1024, true, true).unwrap();
        assert_eq!((h200_wide.workgroup_size, h200_wide.tile()), (256, 2048));
        // Keys alone: 4,096-item tiles for 64-bit keys too, 2,048 for 32-bit keys
        // (`MAX_PER_INVOCATION_NARROW_KEYS`), in less memory.
        let h200_wide_keys = RadixShape::fitting(32, 48 * 1024, 1024, true, false).unwrap();
        assert_eq!(
            (h200_wide_keys.item_bytes(), h200_wide_keys.tile()),
            (8, 4096)
        );
        let h200_keys = RadixShape::fitting(32, 48 * 1024, 1024, false, false).unwrap();
        assert_eq!((h200_keys.item_bytes(), h200_keys.tile()), (4, 2048));
        assert!(h200_keys.scatter_shared_bytes() < h200.scatter_shared_bytes());
        let lavapipe = RadixShape::fitting(8, 32 * 1024, 1024, false, true).unwrap();
        assert_eq!((lavapipe.workgroup_size, lavapipe.tile()), (64, 1024));
        let lavapipe_wide = RadixShape::fitting(8, 32 * 1024, 1024, true, true).unwrap();
        assert_eq!(lavapipe_wide.tile(), 1024);
        // Less shared memory: smaller tiles, never an overflowing shape.
        let small = RadixShape::fitting(32, 16 * 1024, 1024, false, true).unwrap();
        assert!(small.per_invocation < MAX_PER_INVOCATION);
        assert!(RadixShape::fitting(32, 1024, 1024, false, true).is_none());
        assert!(RadixShape::fitting(24, 48 * 1024, 1024, false, true).is_none());
        for (subgroup_size, shared, partitioned) in [
            (8, 32, false),
            (32, 48, false),
            (32, 48, true),
            (64, 64, false),
            (128, 64, false),
        ] {
            for (wide, positions) in [(false, true), (true, true), (false, false), (true, false)] {
                let shape = RadixShape {
                    partitioned,
                    ..RadixShape::fitting(subgroup_size, shared * 1024, 1024, wide, positions)
                        .unwrap()
                };
                assert!(shape.scatter_shared_bytes() <= shared * 1024, "{shape:?}");
                compile_every_kernel(shape);
            }
        }
    }

    /// Compiles every radix kernel of `shape`: the scan's, and per source the count, the
    /// scatters to each destination its items allow, the histogram, and the fix-up.
    fn compile_every_kernel(shape: RadixShape) {
        let compile = |name: String, shader: Option<String>| {
            nxvk_glsl::compile_compute(&name, &shader.unwrap())
                .unwrap_or_else(|error| panic!("{name}: {error}"));
        };
        compile(
            kernel_name("block_sums", shape, RadixSource::Items, None),
            Some(block_sums_shader(shape)),
        );
        compile(
            kernel_name("scan_blocks", shape, RadixSource::Items, None),
            Some(scan_blocks_shader(shape)),
        );
        let dtypes = [
            DType::F32,
            DType::F64,
            DType::S8,
            DType::BF16,
            DType::S64,
            DType::F16,
        ];
        let dtypes = dtypes
            .into_iter()
            .filter(|&dtype| wide_keys(dtype) == shape.wide);
        for dtype in dtypes {
            let destinations: Vec<RadixDestination> = if shape.positions {
                vec![
                    RadixDestination::Items,
                    RadixDestination::Positions { dtype: DType::S64 },
                    RadixDestination::Positions { dtype: DType::U16 },
                ]
            } else {
                vec![RadixDestination::Items, RadixDestination::Values { dtype }]
            };
            for source in [RadixSource::Input { dtype }, RadixSource::Items] {
                compile(
                    kernel_name("count", shape, source, None),
                    count_shader(shape, source),
                );
                for &destination in &destinations {
                    for placement in [Placement::ScannedCounts, Placement::LookBack] {
                        compile(
                            kernel_name("scatter", shape, source, Some(destination))
                                + placement.label(),
                            scatter_shader(shape, source, destination, placement),
                        );
                    }
                }
            }
            let input = RadixSource::Input { dtype };
            compile(
                kernel_name("histogram", shape, input, None),
                histogram_shader(shape, dtype),
            );
            if keeps_tallies(shape, input) {
                compile(
                    kernel_name("fix_up", shape, input, None),
                    fix_up_shader(shape, dtype),
                );
            }
        }
    }
}

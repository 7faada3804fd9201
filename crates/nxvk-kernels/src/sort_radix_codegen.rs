//! GLSL for the radix sort (`sort_radix.rs`): per-tile digit counts, a scan of those counts per
//! digit, and the stable scatter that ranks a tile's items in shared memory and writes them to
//! their places in runs.
//!
//! An *item* is one `uint64_t`: the key (already complemented for a descending sort) in the
//! high word and a 32-bit payload in the low one: the element's position in the row (argsort,
//! top_k) or its own bits (sort, which then needs no gather at the end). The first pass reads
//! the input elements and builds the items as it goes; the last pass writes the final result
//! (items, values or positions) straight away.
//!
//! A tile is `workgroup_size * per_invocation` consecutive items; subgroup `s` of the tile's
//! workgroup owns the `s`-th run of `subgroup_size * per_invocation` of them and walks it in
//! rounds of one item per invocation. Thread order everywhere is (`gl_SubgroupID`,
//! `gl_SubgroupInvocationID`), which the kernels define themselves rather than assume
//! `gl_LocalInvocationID` follows. The shapes assume `gl_SubgroupSize` is the device's reported
//! subgroup size, which Vulkan guarantees for SPIR-V 1.5 modules created without the varying
//! subgroup size flag (nxvk's case).

use crate::sort_codegen::{integer_storage, key_function};
use nxvk_core::{Capabilities, DType};

/// Digits are 8 bits: 256 bins, four passes for 32-bit keys.
pub(crate) const RADIX_BITS: u32 = 8;

/// Bins per digit.
const BINS: u32 = 1 << RADIX_BITS;

/// Subgroups per workgroup of the count and scatter kernels (at most; fewer when subgroups are
/// wide, so a workgroup never exceeds 256 invocations and each invocation owns whole digits).
const SUBGROUPS_PER_WORKGROUP: u32 = 8;

/// Items per invocation in a tile, at most (16 x 256 invocations = 4,096 items, whose 32 KiB
/// exchange buffer fits a 48 KiB workgroup beside the counters).
const MAX_PER_INVOCATION: u32 = 16;

/// The shape of the radix kernels on one device, derived from its subgroup size and shared
/// memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RadixShape {
    pub(crate) subgroup_size: u32,
    pub(crate) workgroup_size: u32,
    pub(crate) per_invocation: u32,
    /// Peers (the invocations holding the same digit) come from one `subgroupPartitionNV`
    /// instead of one ballot per digit bit.
    pub(crate) partitioned: bool,
}

impl RadixShape {
    /// The largest shape whose scatter fits the device's shared memory, or `None` when the
    /// device lacks the subgroup ballots and scans the kernels rank with.
    pub(crate) fn for_device(capabilities: &Capabilities) -> Option<RadixShape> {
        let operations = &capabilities.subgroup_operations;
        if !(operations.basic && operations.ballot && operations.arithmetic) {
            return None;
        }
        let shape = RadixShape::fitting(
            capabilities.subgroup_size,
            capabilities.max_shared_memory_bytes,
            capabilities.max_workgroup_invocations,
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
    ) -> Option<RadixShape> {
        if !subgroup_size.is_power_of_two() || subgroup_size > 128 {
            return None;
        }
        let workgroup_size = (subgroup_size * SUBGROUPS_PER_WORKGROUP).min(BINS);
        if workgroup_size > max_invocations {
            return None;
        }
        let mut per_invocation = MAX_PER_INVOCATION;
        while per_invocation > 0 {
            let shape = RadixShape {
                subgroup_size,
                workgroup_size,
                per_invocation,
                partitioned: false,
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

    fn subgroups(&self) -> u32 {
        self.workgroup_size / self.subgroup_size
    }

    /// Shared memory of the scatter kernel: per-subgroup digit counters, the digits' places,
    /// the tile's items (the exchange) and the scan's per-subgroup sums.
    fn scatter_shared_bytes(&self) -> u32 {
        (self.subgroups() * BINS + BINS + self.subgroups()) * 4 + self.tile() * 8
    }

    /// A label naming the shape in kernel names.
    fn label(&self) -> String {
        let peers = if self.partitioned { "_partitioned" } else { "" };
        format!(
            "s{}_w{}_k{}{peers}",
            self.subgroup_size, self.workgroup_size, self.per_invocation
        )
    }
}

/// What the low word of an item built from the input holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Payload {
    /// The element's bits (zero-extended): the sorted values come out of the items directly.
    Bits,
    /// The element's position in the row.
    Position,
}

/// Where a pass reads its items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RadixSource {
    /// The input row of `dtype` (the first pass): items are built as they are loaded.
    Input { dtype: DType, payload: Payload },
    /// Items written by the previous pass.
    Items,
}

/// What a pass writes at each item's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RadixDestination {
    /// The whole item (every pass but the last, and the last when items are the result).
    Items,
    /// The payload as an element of `element_bytes` (sort's values).
    Values { element_bytes: u32 },
    /// The payload as a position of the integer `dtype` (argsort).
    Positions { dtype: DType },
}

impl RadixSource {
    fn label(&self) -> String {
        match self {
            RadixSource::Input { dtype, payload } => format!("{dtype}_{payload:?}").to_lowercase(),
            RadixSource::Items => "items".into(),
        }
    }

    /// GLSL of `load_key(index)` (the key, complemented by `push.flip`) and, for the scatter,
    /// `load_item(index)`.
    fn functions(&self) -> Option<String> {
        Some(match *self {
            RadixSource::Input { dtype, payload } => {
                let bytes = dtype.bits() / 8;
                let payload = match payload {
                    Payload::Bits => "uint64_t(bits)",
                    Payload::Position => "uint64_t(index)",
                };
                format!(
                    "{keys}
uint64_t element_address(uint index) {{ return push.source + uint64_t(index) * {bytes}ul; }}
uint load_key(uint index) {{ return key_of_bits(element_bits(element_address(index))) ^ push.flip; }}
uint64_t load_item(uint index) {{
    uint bits = element_bits(element_address(index));
    return (uint64_t(key_of_bits(bits) ^ push.flip) << 32) | {payload};
}}
",
                    keys = key_function(dtype)?,
                )
            }
            RadixSource::Items => "
uint64_t load_item(uint index) { return Items(push.source + uint64_t(index) * 8ul).v; }
uint load_key(uint index) { return uint(load_item(index) >> 32); }
"
            .into(),
        })
    }
}

impl RadixDestination {
    fn label(&self) -> String {
        match self {
            RadixDestination::Items => "items".into(),
            RadixDestination::Values { element_bytes } => format!("values{}", element_bytes * 8),
            RadixDestination::Positions { dtype } => format!("positions_{dtype}"),
        }
    }

    /// GLSL of `store_item(place, item)`.
    fn function(&self) -> Option<String> {
        let (storage, bytes) = match *self {
            RadixDestination::Items => {
                return Some(
                    "void store_item(uint place, uint64_t item) { Items(push.destination + uint64_t(place) * 8ul).v = item; }"
                        .into(),
                );
            }
            RadixDestination::Values { element_bytes } => (
                match element_bytes {
                    1 => "uint8_t",
                    2 => "uint16_t",
                    4 => "uint",
                    _ => return None,
                },
                element_bytes,
            ),
            RadixDestination::Positions { dtype } => (integer_storage(dtype)?, dtype.bits() / 8),
        };
        Some(format!(
            "layout(buffer_reference, scalar, buffer_reference_align = {bytes}) writeonly buffer Output {{ {storage} v; }};
void store_item(uint place, uint64_t item) {{ Output(push.destination + uint64_t(place) * {bytes}ul).v = {storage}(uint(item)); }}"
        ))
    }
}

/// The declarations every radix kernel starts with: sizes, buffers, push constants and the
/// workgroup scan.
fn prelude(shape: RadixShape) -> String {
    let RadixShape {
        subgroup_size,
        workgroup_size,
        per_invocation,
        partitioned,
    } = shape;
    let subgroups = shape.subgroups();
    let tile = shape.tile();
    let digit_peers = digit_peers_function(partitioned);
    let extension = if partitioned {
        "#extension GL_NV_shader_subgroup_partitioned : require"
    } else {
        ""
    };
    format!(
        "{extension}
layout(local_size_x = {workgroup_size}) in;
const uint WORKGROUP = {workgroup_size}u;
const uint SUBGROUP = {subgroup_size}u;
const uint SUBGROUPS = {subgroups}u;
const uint PER_INVOCATION = {per_invocation}u;
const uint TILE = {tile}u;
const uint BINS = {BINS}u;
layout(buffer_reference, scalar, buffer_reference_align = 8) buffer Items {{ uint64_t v; }};
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer Words {{ uint v; }};
// Addresses (source, destination, tile counts, digit totals), then the row's length, its
// tiles, the digit's shift and the key complement of a descending sort.
layout(push_constant, scalar) uniform Push {{
    uint64_t source, destination, counts, totals;
    uint total, tiles, shift, flip;
}} push;

// Thread order: subgroups in order, invocations in order within each.
uint invocation_index() {{ return gl_SubgroupID * SUBGROUP + gl_SubgroupInvocationID; }}

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
    for (uint subgroup = 0u; subgroup < SUBGROUPS; subgroup++) {{
        uint sum = subgroup_sums[subgroup];
        before += subgroup < gl_SubgroupID ? sum : 0u;
        total += sum;
    }}
    barrier();
    return before + inclusive - value;
}}
"
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

/// Counts the digits at `push.shift` of each tile: `counts[digit * tiles + tile]`. Loads are
/// coalesced (round `i` of a tile reads `WORKGROUP` consecutive items); the counters are shared
/// atomics, one per distinct digit of a subgroup's round.
pub(crate) fn count_shader(shape: RadixShape, source: RadixSource) -> Option<String> {
    Some(format!(
        "{prelude}
{functions}
shared uint histogram[BINS];

void main() {{
    uint invocation = invocation_index();
    for (uint tile = gl_WorkGroupID.x; tile < push.tiles; tile += gl_NumWorkGroups.x) {{
        for (uint digit = invocation; digit < BINS; digit += WORKGROUP) histogram[digit] = 0u;
        barrier();
        uint first = tile * TILE;
        // All of the tile's loads are issued before any ballot, so their latencies overlap.
        uint digits[PER_INVOCATION];
        for (uint round = 0u; round < PER_INVOCATION; round++) {{
            uint index = first + round * WORKGROUP + invocation;
            digits[round] = index < push.total ? (load_key(index) >> push.shift) & (BINS - 1u) : 0u;
        }}
        for (uint round = 0u; round < PER_INVOCATION; round++) {{
            bool valid = first + round * WORKGROUP + invocation < push.total;
            uint digit = digits[round];
            uvec4 peers = digit_peers(digit, valid);
            // One atomic per distinct digit of the subgroup: skewed digits (the exponent byte
            // of floats in a narrow range) would otherwise serialise on one counter. (Per-
            // subgroup histograms updated without atomics ran no faster on the H200: the
            // peer search and the round-to-round dependency cost the time, not the atomics.)
            if (valid && subgroupBallotFindMSB(peers) == gl_SubgroupInvocationID) {{
                atomicAdd(histogram[digit], subgroupBallotBitCount(peers));
            }}
        }}
        barrier();
        for (uint digit = invocation; digit < BINS; digit += WORKGROUP) {{
            Words(push.counts + (uint64_t(digit) * uint64_t(push.tiles) + uint64_t(tile)) * 4ul).v = histogram[digit];
        }}
        barrier();
    }}
}}
",
        prelude = prelude(shape),
        functions = source.functions()?,
    ))
}

/// Replaces each digit's row of tile counts by its exclusive prefix sums (one workgroup per
/// digit, blocks of `TILE` counts with a carry) and writes the digit's total to `totals`.
pub(crate) fn scan_shader(shape: RadixShape) -> String {
    format!(
        "{prelude}
void main() {{
    uint invocation = invocation_index();
    for (uint digit = gl_WorkGroupID.x; digit < BINS; digit += gl_NumWorkGroups.x) {{
        uint64_t row = push.counts + uint64_t(digit) * uint64_t(push.tiles) * 4ul;
        uint carry = 0u;
        for (uint block = 0u; block < push.tiles; block += TILE) {{
            uint begin = block + invocation * PER_INVOCATION;
            uint values[PER_INVOCATION];
            uint sum = 0u;
            for (uint i = 0u; i < PER_INVOCATION; i++) {{
                values[i] = begin + i < push.tiles ? Words(row + uint64_t(begin + i) * 4ul).v : 0u;
                sum += values[i];
            }}
            uint block_total;
            uint running = carry + workgroup_exclusive_add(sum, block_total);
            for (uint i = 0u; i < PER_INVOCATION; i++) {{
                if (begin + i < push.tiles) Words(row + uint64_t(begin + i) * 4ul).v = running;
                running += values[i];
            }}
            carry += block_total;
        }}
        if (invocation == 0u) Words(push.totals + uint64_t(digit) * 4ul).v = carry;
    }}
}}
",
        prelude = prelude(shape),
    )
}

/// The stable scatter of one pass. Per tile: each subgroup ranks its rounds of items by digit
/// (peers found with eight ballots, one per digit bit; the last peer bumps the subgroup's
/// counter), the counters become exclusive offsets (over subgroups, then over digits in the
/// tile), the items are exchanged through shared memory into digit order, and written out in
/// thread order, so consecutive invocations write consecutive places of a digit's run. An
/// item's place is its digit's start (sum of all smaller digits' totals), plus the same digit
/// in earlier tiles (the scan), plus its rank in the tile: ties keep their input order.
pub(crate) fn scatter_shader(
    shape: RadixShape,
    source: RadixSource,
    destination: RadixDestination,
) -> Option<String> {
    let digits_per_invocation = BINS / shape.workgroup_size;
    Some(format!(
        "{prelude}
{functions}
{store}
const uint DIGITS_PER_INVOCATION = {digits_per_invocation}u;
const uint NO_RANK = 0xFFFFFFFFu;
shared uint subgroup_counts[SUBGROUPS * BINS];
shared uint digit_places[BINS];
shared uint64_t exchange[TILE];

uint digit_of(uint64_t item) {{ return uint(item >> (32u + push.shift)) & (BINS - 1u); }}

void main() {{
    uint invocation = invocation_index();
    uint lane = gl_SubgroupInvocationID;
    uint counters = gl_SubgroupID * BINS;
    for (uint tile = gl_WorkGroupID.x; tile < push.tiles; tile += gl_NumWorkGroups.x) {{
        // This invocation's digits: their totals in the row and their counts in earlier tiles,
        // loaded first so that these latencies overlap the items' (they were exposed one
        // after another at the digit phase, with few workgroups per SM to hide them).
        uint digit_totals[DIGITS_PER_INVOCATION];
        uint earlier_tiles[DIGITS_PER_INVOCATION];
        for (uint j = 0u; j < DIGITS_PER_INVOCATION; j++) {{
            uint digit = invocation * DIGITS_PER_INVOCATION + j;
            digit_totals[j] = Words(push.totals + uint64_t(digit) * 4ul).v;
            earlier_tiles[j] = Words(push.counts + (uint64_t(digit) * uint64_t(push.tiles) + uint64_t(tile)) * 4ul).v;
        }}
        for (uint slot = invocation; slot < SUBGROUPS * BINS; slot += WORKGROUP) subgroup_counts[slot] = 0u;
        barrier();
        uint first = tile * TILE;
        uint run = first + gl_SubgroupID * SUBGROUP * PER_INVOCATION;
        // All of the tile's loads are issued before the ranking, whose subgroup barriers would
        // otherwise expose one load latency per round.
        uint64_t items[PER_INVOCATION];
        for (uint round = 0u; round < PER_INVOCATION; round++) {{
            uint index = run + round * SUBGROUP + lane;
            items[round] = index < push.total ? load_item(index) : 0ul;
        }}
        uint ranks[PER_INVOCATION];
        for (uint round = 0u; round < PER_INVOCATION; round++) {{
            bool valid = run + round * SUBGROUP + lane < push.total;
            uint64_t item = items[round];
            uint digit = digit_of(item);
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
        // This invocation's digits: their counts in the tile, and their totals in the row.
        uint tile_counts[DIGITS_PER_INVOCATION];
        uint tile_sum = 0u;
        uint row_sum = 0u;
        for (uint j = 0u; j < DIGITS_PER_INVOCATION; j++) {{
            uint digit = invocation * DIGITS_PER_INVOCATION + j;
            uint count = 0u;
            for (uint subgroup = 0u; subgroup < SUBGROUPS; subgroup++) count += subgroup_counts[subgroup * BINS + digit];
            tile_counts[j] = count;
            tile_sum += count;
            row_sum += digit_totals[j];
        }}
        uint ignored;
        uint local_start = workgroup_exclusive_add(tile_sum, ignored);
        uint row_start = workgroup_exclusive_add(row_sum, ignored);
        for (uint j = 0u; j < DIGITS_PER_INVOCATION; j++) {{
            uint digit = invocation * DIGITS_PER_INVOCATION + j;
            // Unsigned wrap-around cancels when a slot of this digit is added back.
            digit_places[digit] = row_start + earlier_tiles[j] - local_start;
            uint running = local_start;
            for (uint subgroup = 0u; subgroup < SUBGROUPS; subgroup++) {{
                uint count = subgroup_counts[subgroup * BINS + digit];
                subgroup_counts[subgroup * BINS + digit] = running;
                running += count;
            }}
            local_start += tile_counts[j];
            row_start += digit_totals[j];
        }}
        barrier();
        for (uint round = 0u; round < PER_INVOCATION; round++) {{
            if (ranks[round] != NO_RANK) {{
                exchange[subgroup_counts[counters + digit_of(items[round])] + ranks[round]] = items[round];
            }}
        }}
        barrier();
        uint tile_items = min(TILE, push.total - first);
        for (uint round = 0u; round < PER_INVOCATION; round++) {{
            uint slot = round * WORKGROUP + invocation;
            if (slot < tile_items) {{
                uint64_t item = exchange[slot];
                store_item(digit_places[digit_of(item)] + slot, item);
            }}
        }}
        barrier();
    }}
}}
",
        prelude = prelude(shape),
        functions = source.functions()?,
        store = destination.function()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shapes of lavapipe (subgroups of 8, 32 KiB), the H200 (32, 48 KiB) and wider
    /// subgroups: tiles as large as shared memory allows, and every kernel compiles for them
    /// (glslang needs no device), so the H200's shape is compiled here even though only
    /// lavapipe runs the tests.
    #[test]
    fn kernels_compile_for_every_subgroup_size() {
        let h200 = RadixShape::fitting(32, 48 * 1024, 1024).unwrap();
        assert_eq!((h200.workgroup_size, h200.tile()), (256, 4096));
        let lavapipe = RadixShape::fitting(8, 32 * 1024, 1024).unwrap();
        assert_eq!((lavapipe.workgroup_size, lavapipe.tile()), (64, 1024));
        // Less shared memory: smaller tiles, never an overflowing shape.
        let small = RadixShape::fitting(32, 16 * 1024, 1024).unwrap();
        assert!(small.per_invocation < MAX_PER_INVOCATION);
        assert!(RadixShape::fitting(32, 1024, 1024).is_none());
        assert!(RadixShape::fitting(24, 48 * 1024, 1024).is_none());
        let sources = [
            RadixSource::Input {
                dtype: DType::F32,
                payload: Payload::Bits,
            },
            RadixSource::Input {
                dtype: DType::S8,
                payload: Payload::Position,
            },
            RadixSource::Items,
        ];
        let destinations = [
            RadixDestination::Items,
            RadixDestination::Values { element_bytes: 2 },
            RadixDestination::Positions { dtype: DType::S64 },
        ];
        for (subgroup_size, shared, partitioned) in [
            (8, 32, false),
            (32, 48, false),
            (32, 48, true),
            (64, 64, false),
            (128, 64, false),
        ] {
            let shape = RadixShape {
                partitioned,
                ..RadixShape::fitting(subgroup_size, shared * 1024, 1024).unwrap()
            };
            assert!(shape.scatter_shared_bytes() <= shared * 1024, "{shape:?}");
            let compile = |name: String, shader: Option<String>| {
                nxvk_glsl::compile_compute(&name, &shader.unwrap())
                    .unwrap_or_else(|error| panic!("{name}: {error}"));
            };
            compile(
                kernel_name("scan", shape, RadixSource::Items, None),
                Some(scan_shader(shape)),
            );
            for source in sources {
                compile(
                    kernel_name("count", shape, source, None),
                    count_shader(shape, source),
                );
                for destination in destinations {
                    compile(
                        kernel_name("scatter", shape, source, Some(destination)),
                        scatter_shader(shape, source, destination),
                    );
                }
            }
        }
    }
}

//! GLSL for the FFT kernels (`fft.rs`): the block kernel (a tile of transforms of up to
//! [`tile_capacity`] elements with radix-8/4/2 butterflies in registers, exchanging through
//! shared memory; one pass of a four-step transform), a load pass (pad or truncate each row,
//! widen real input to complex, optionally multiply by Bluestein's chirp), the radix-2
//! Stockham pass for rows too long for two block passes, a pointwise product with a spectrum,
//! and the store pass (chirp and scale).
//!
//! Complex numbers are `vec2` (c64) or `dvec2` (c128), stored interleaved as Nx stores them.
//! No kernel computes a sine: twiddles and chirps come from device-resident tables the host
//! computes in f64 (`fft_tables.rs`), because GLSL's trigonometry is 32-bit only (and coarse on
//! some GPUs) and c128 must be accurate to f64.

use nxvk_core::DType;

/// Invocations per workgroup of the FFT kernels.
pub(crate) const FFT_WORKGROUP_SIZE: u32 = 256;

/// The precision of a transform: c64 computes in f32, c128 in f64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Precision {
    Single,
    Double,
}

impl Precision {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Precision::Single => "c64",
            Precision::Double => "c128",
        }
    }

    /// The complex type of results in this precision.
    pub(crate) fn dtype(self) -> DType {
        match self {
            Precision::Single => DType::C64,
            Precision::Double => DType::C128,
        }
    }

    /// Bytes of one complex number.
    pub(crate) fn complex_bytes(self) -> u64 {
        match self {
            Precision::Single => 8,
            Precision::Double => 16,
        }
    }

    /// The workgroup size, the precision's types and complex buffers, and complex products.
    pub(crate) fn prelude(self, workgroup_size: u32) -> String {
        let (real, complex, half_root) = match self {
            Precision::Single => ("float", "vec2", "0.70710678f"),
            Precision::Double => ("double", "dvec2", "0.70710678118654752440LF"),
        };
        let bytes = self.complex_bytes();
        format!(
            "
layout(local_size_x = {workgroup_size}) in;

#define REAL {real}
#define COMPLEX {complex}
const uint64_t COMPLEX_BYTES = {bytes}ul;
// sqrt(1/2), for the radix-8 butterfly.
const REAL HALF_ROOT = {half_root};
layout(buffer_reference, scalar, buffer_reference_align = {half}) buffer Complexes {{ COMPLEX v; }};
COMPLEX complex_multiply(COMPLEX a, COMPLEX b) {{
    return COMPLEX(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}}
// An inverse transform's final conjugate, which leaves a zero imaginary part +0: negating it
// would turn the +0 of a real result into -0 (Nx.BinaryBackend's ifft gives 1.0+0.0i).
COMPLEX conjugate_output(COMPLEX value) {{
    return COMPLEX(value.x, (value.y == REAL(0)) ? REAL(0) : -value.y);
}}
",
            half = bytes / 2,
        )
    }
}

/// One radix-2 Stockham pass over rows of `2^log2_length` complex numbers: pair `j` of a row
/// splits into `p = j / stride` and `q = j % stride`, reads elements `q + stride * p` and
/// `q + stride * (p + half)`, and writes their sum and twiddled difference to
/// `q + stride * 2p` and `q + stride * (2p + 1)`. After `log2_length` passes (stride doubling)
/// the row is transformed, in natural order.
pub(crate) fn radix2_shader(precision: Precision) -> String {
    format!(
        "{prelude}{TWIDDLE_GLSL}
layout(push_constant, scalar) uniform Push {{
    uint64_t source;
    uint64_t destination;
    uint64_t twiddles;
    uint pairs;
    uint log2_length;
    uint log2_stride;
    uint log2_fine;
    uint inverse;
    REAL scale;
}} push;

void main() {{
    uint threads = gl_NumWorkGroups.x * {FFT_WORKGROUP_SIZE}u;
    uint half_length = 1u << (push.log2_length - 1u);
    uint stride = 1u << push.log2_stride;
    // Sub-transforms of this pass have `half_length / stride` pairs.
    uint span = half_length >> push.log2_stride;
    for (uint pair = gl_GlobalInvocationID.x; pair < push.pairs; pair += threads) {{
        uint row = pair >> (push.log2_length - 1u);
        uint j = pair & (half_length - 1u);
        uint p = j >> push.log2_stride;
        uint q = j & (stride - 1u);
        uint64_t base = uint64_t(row) << push.log2_length;
        COMPLEX a = Complexes(push.source + (base + uint64_t(q + stride * p)) * COMPLEX_BYTES).v;
        COMPLEX b = Complexes(push.source + (base + uint64_t(q + stride * (p + span))) * COMPLEX_BYTES).v;
        COMPLEX factor = twiddle(push.twiddles, push.log2_fine, p * stride);
        if (push.inverse != 0u) factor.y = -factor.y;
        Complexes(push.destination + (base + uint64_t(q + stride * 2u * p)) * COMPLEX_BYTES).v = (a + b) * push.scale;
        Complexes(push.destination + (base + uint64_t(q + stride * (2u * p + 1u))) * COMPLEX_BYTES).v =
            complex_multiply(a - b, factor) * push.scale;
    }}
}}
",
        prelude = precision.prelude(FFT_WORKGROUP_SIZE),
    )
}

/// Complex numbers in a block workgroup's tile: 2048 c64 or 1,024 c128, so that the tile (as
/// separate real and imaginary arrays) takes 16 KiB of shared memory, well within every
/// device's 32 KiB, and several workgroups share a multiprocessor.
pub(crate) fn tile_capacity(precision: Precision) -> u32 {
    (16 << 10) / precision.complex_bytes() as u32
}

/// Complex numbers each invocation of the block kernel keeps in registers.
const REGISTER_ELEMENTS: u32 = 8;

/// Transforms of `2^log2_length` per block workgroup, as a power of two: a whole tile, but no
/// more than [`FFT_WORKGROUP_SIZE`] invocations (transforms shorter than 8 hold fewer elements
/// per invocation, and a whole tile of them would need up to 1,024).
pub(crate) fn log2_group(precision: Precision, log2_length: u32) -> u32 {
    let log2_tile = tile_capacity(precision).trailing_zeros();
    let log2_elements = log2_length.min(REGISTER_ELEMENTS.trailing_zeros());
    (log2_tile - log2_length).min(FFT_WORKGROUP_SIZE.trailing_zeros() + log2_elements - log2_length)
}

/// Which way a block workgroup's invocations walk its tile in global memory: along each
/// transform's elements (rows contiguous in memory) or across its transforms (strided
/// columns, whose neighbouring transforms are contiguous). Consecutive invocations touch
/// consecutive addresses either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Walk {
    AlongElements,
    AcrossTransforms,
}

impl Walk {
    /// The walk that coalesces accesses with this element stride, for `transforms_per_tile`
    /// transforms per tile (one transform per tile is always walked along its elements).
    pub(crate) fn for_stride(element_stride: u32, transforms_per_tile: u32) -> Walk {
        if element_stride == 1 || transforms_per_tile == 1 {
            Walk::AlongElements
        } else {
            Walk::AcrossTransforms
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Walk::AlongElements => "along",
            Walk::AcrossTransforms => "across",
        }
    }
}

/// What a block kernel is compiled for: transforms of `2^log2_length` elements,
/// `2^log2_group` of them per workgroup, loaded and stored walking as given, and whether the
/// four-step twiddle multiplies the output (compiled in or out, so that the other passes do
/// not hold its registers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockShape {
    pub precision: Precision,
    pub log2_length: u32,
    pub log2_group: u32,
    pub load: Walk,
    pub store: Walk,
    pub post_twiddle: bool,
    /// What the first stage reads (real input is widened on the way in).
    pub input: LoadInput,
    /// Input elements are multiplied by a table at their position in the row (Bluestein's
    /// chirp), before any conjugation.
    pub input_factors: bool,
    /// Output elements are multiplied by a table at their position in the row (Bluestein's
    /// spectrum or chirp), after any conjugation and before the scale.
    pub output_factors: bool,
}

impl BlockShape {
    pub(crate) fn kernel_name(self) -> String {
        format!(
            "fft_block_{}_{}_{}x{}_{}_{}{}{}{}",
            self.precision.name(),
            self.input.name(),
            1u32 << self.log2_group,
            1u32 << self.log2_length,
            self.load.name(),
            self.store.name(),
            if self.post_twiddle { "_twiddled" } else { "" },
            if self.input_factors {
                "_input_factors"
            } else {
                ""
            },
            if self.output_factors {
                "_output_factors"
            } else {
                ""
            },
        )
    }

    /// Complex numbers each invocation holds.
    fn elements(self) -> u32 {
        REGISTER_ELEMENTS.min(1 << self.log2_length)
    }

    /// Invocations per workgroup: one per `elements` of the tile.
    pub(crate) fn workgroup_size(self) -> u32 {
        (1u32 << (self.log2_group + self.log2_length)) / self.elements()
    }
}

/// The radices of a transform of `2^log2_length`, each at most 8, whose product is the length:
/// as many radix-8 stages as possible, two radix-4 stages instead of one radix-8 and one
/// radix-2 (every stage then handles 8 elements per invocation).
pub(crate) fn radices(log2_length: u32) -> Vec<u32> {
    if log2_length < 3 {
        return vec![1 << log2_length];
    }
    let (eights, rest) = (log2_length / 3, log2_length % 3);
    match rest {
        0 => vec![8; eights as usize],
        1 => [vec![8; eights as usize - 1], vec![4, 4]].concat(),
        _ => [vec![8; eights as usize], vec![4]].concat(),
    }
}

/// GLSL shared by the block and radix-2 kernels: the twiddle `exp(-2 pi i t / N)` from a
/// two-level table (`2^log2_fine` fine entries `W^i`, then coarse entries `W^(i 2^log2_fine)`)
/// as one product of two table entries. Both levels together hold about `2 sqrt(N)` entries,
/// so they stay in the first-level cache, and the product is within an ulp or two of the f64
/// value rounded to the precision.
pub(crate) const TWIDDLE_GLSL: &str = "
COMPLEX twiddle(uint64_t table, uint log2_fine, uint exponent) {
    COMPLEX fine = Complexes(table + uint64_t(exponent & ((1u << log2_fine) - 1u)) * COMPLEX_BYTES).v;
    COMPLEX coarse = Complexes(table + uint64_t((1u << log2_fine) + (exponent >> log2_fine)) * COMPLEX_BYTES).v;
    return complex_multiply(fine, coarse);
}
";

/// GLSL of `put(tile_transform, element, value)` and `get(tile_transform, element)` on a
/// shared tile of complex numbers kept as separate real and imaginary arrays (`tile_real`,
/// `tile_imaginary`), at the slot the kernel's own `tile_index` gives.
pub(crate) const TILE_ACCESS_GLSL: &str =
    "void put(uint tile_transform, uint element, COMPLEX value) {
    uint index = tile_index(tile_transform, element);
    tile_real[index] = value.x;
    tile_imaginary[index] = value.y;
}
COMPLEX get(uint tile_transform, uint element) {
    uint index = tile_index(tile_transform, element);
    return COMPLEX(tile_real[index], tile_imaginary[index]);
}
";

/// In-register DFTs of 2, 4 and 8 points, in natural order (forward; inverses conjugate their
/// input and output instead).
pub(crate) const SMALL_DFT_GLSL: &str = "
COMPLEX times_minus_i(COMPLEX a) { return COMPLEX(a.y, -a.x); }
void dft2(inout COMPLEX a0, inout COMPLEX a1) {
    COMPLEX difference = a0 - a1;
    a0 = a0 + a1;
    a1 = difference;
}
void dft4(inout COMPLEX a0, inout COMPLEX a1, inout COMPLEX a2, inout COMPLEX a3) {
    COMPLEX t0 = a0 + a2, t1 = a0 - a2, t2 = a1 + a3, t3 = times_minus_i(a1 - a3);
    a0 = t0 + t2; a1 = t1 + t3; a2 = t0 - t2; a3 = t1 - t3;
}
void dft8(inout COMPLEX a0, inout COMPLEX a1, inout COMPLEX a2, inout COMPLEX a3,
          inout COMPLEX a4, inout COMPLEX a5, inout COMPLEX a6, inout COMPLEX a7) {
    dft4(a0, a2, a4, a6);
    dft4(a1, a3, a5, a7);
    COMPLEX o1 = COMPLEX(a3.x + a3.y, a3.y - a3.x) * HALF_ROOT;
    COMPLEX o2 = times_minus_i(a5);
    COMPLEX o3 = COMPLEX(a7.y - a7.x, -(a7.x + a7.y)) * HALF_ROOT;
    COMPLEX e0 = a0, e1 = a2, e2 = a4, e3 = a6, o0 = a1;
    a0 = e0 + o0; a1 = e1 + o1; a2 = e2 + o2; a3 = e3 + o3;
    a4 = e0 - o0; a5 = e1 - o1; a6 = e2 - o2; a7 = e3 - o3;
}
";

/// The block kernel: each workgroup transforms a tile of `2^log2_group` transforms of
/// `2^log2_length` with mixed-radix Stockham stages (radix 8, or 4 and 2 for what is left),
/// each invocation keeping `E = min(8, length)` elements in registers: elements
/// `lane + m length / E` of its transform. The first stage reads them straight from global
/// memory; each stage twiddles, runs its small DFTs in registers and exchanges through shared
/// memory (real and imaginary parts in separate arrays, laid out by `shared_layout` against
/// bank conflicts); after the last stage the invocation holds its elements in natural order and
/// stores them straight to global memory when the store walks the tile as the load did, or
/// through shared memory (a transpose) when it does not, as in the second pass of a
/// four-step transform, which reads rows and writes columns.
///
/// Addresses are strided (outer, column and element strides, in elements, for each side:
/// transform `t` is `outer = t >> log2_columns`, `column = t % 2^log2_columns`); input
/// elements at a position within their row (`column * in_column + element * in_element`) of
/// `input_limit` or more read as zeros, so that the first pass pads, truncates (with a row
/// stride longer than the transform) and widens real input itself; output elements at a
/// position of `output_limit` or more are dropped. Shapes with input or output factors
/// multiply each element by a table entry at its position in the row (Bluestein's chirp on
/// the way in; its spectrum, or the chirp again, on the way out). Push
/// flags conjugate the input (an inverse transform is the conjugate of the forward transform
/// of the conjugate) and the output; a `post_twiddle` shape multiplies element `k` of
/// transform `t` by `W^(column * k)` (the twiddle between the two steps of a four-step
/// transform) before the scale. Twiddles come from a two-level table for transforms of
/// `twiddle_step * length`; an invocation looks up one twiddle per butterfly and takes the
/// others as its powers (at most three products deep), which keeps table reads to one per
/// butterfly.
pub(crate) fn block_shader(shape: BlockShape) -> String {
    let length = 1u32 << shape.log2_length;
    let group = 1u32 << shape.log2_group;
    let elements = shape.elements();
    let lanes = length / elements;
    let workgroup = shape.workgroup_size();
    let tile = group * length;
    let (group_slot, lane) = match shape.load {
        Walk::AlongElements => (format!("thread / {lanes}u"), format!("thread % {lanes}u")),
        Walk::AcrossTransforms => (format!("thread % {group}u"), format!("thread / {group}u")),
    };
    let layout = shared_layout(shape);
    let each_register = |line: &dyn Fn(u32, u32) -> String| -> String {
        (0..elements).map(|m| line(m, m * lanes)).collect()
    };
    let read = shape.input.read_glsl();

    let load = each_register(&|m, offset| {
        let input_factor = if shape.input_factors {
            format!(
                " v[{m}] = complex_multiply(v[{m}], factor(push.input_factors, position, push.conjugate_input_factors));"
            )
        } else {
            String::new()
        };
        format!(
            "            {{ uint position = in_row + (lane + {offset}u) * push.in_element;
              uint64_t element = base + uint64_t(position);
              if (position < push.input_limit) {{ v[{m}] = {read};{input_factor} }} }}\n"
        )
    });
    let zeros = each_register(&|m, _| format!("        v[{m}] = COMPLEX(REAL(0), REAL(0));\n"));
    let conjugates = each_register(&|m, _| format!("            v[{m}].y = -v[{m}].y;\n"));
    let mut stages = String::new();
    let mut sub_length = 1u32;
    let stage_radices = radices(shape.log2_length);
    for (stage, &radix) in stage_radices.iter().enumerate() {
        stages.push_str(&stage_glsl(elements, lanes, length, sub_length, radix));
        if stage + 1 < stage_radices.len() {
            stages.push_str("        barrier();\n");
            stages.push_str(&stage_writes_glsl(elements, lanes, sub_length, radix));
            stages.push_str("        barrier();\n");
            stages.push_str(&each_register(&|m, offset| {
                format!("        v[{m}] = get(group_slot, lane + {offset}u);\n")
            }));
        }
        sub_length *= radix;
    }
    let post_twiddle = if !shape.post_twiddle {
        String::new()
    } else {
        format!(
            "        {{
            COMPLEX p1 = twiddle(push.twiddles, push.log2_fine, column * {lanes}u);
{powers}            COMPLEX first = twiddle(push.twiddles, push.log2_fine, column * lane);
            v[0] = complex_multiply(v[0], first);
{apply}        }}
",
        powers = powers_glsl("p", elements, "            "),
        apply = (1..elements)
            .map(|m| format!(
                "            v[{m}] = complex_multiply(v[{m}], complex_multiply(first, p{m}));\n"
            ))
            .collect::<String>(),
        )
    };
    let store = if shape.store == shape.load {
        each_register(&|m, offset| {
            format!("        if (present) store_element(transform, lane + {offset}u, v[{m}]);\n")
        })
    } else {
        let (store_group, store_element) = match shape.store {
            Walk::AlongElements => (format!("slot / {length}u"), format!("slot % {length}u")),
            Walk::AcrossTransforms => (format!("slot % {group}u"), format!("slot / {group}u")),
        };
        format!(
            "        barrier();
{puts}        barrier();
        for (uint slot = thread; slot < {tile}u; slot += {workgroup}u) {{
            uint tile_transform = {store_group};
            uint element = {store_element};
            uint stored_transform = first_transform + tile_transform;
            if (stored_transform < push.transforms)
                store_element(stored_transform, element, get(tile_transform, element));
        }}
",
            puts = each_register(&|m, offset| format!(
                "        put(group_slot, lane + {offset}u, v[{m}]);\n"
            )),
        )
    };
    format!(
        "{prelude}{reals}{TWIDDLE_GLSL}{SMALL_DFT_GLSL}
layout(push_constant, scalar) uniform Push {{
    uint64_t source;
    uint64_t destination;
    uint64_t twiddles;
    uint64_t input_factors;
    uint64_t output_factors;
    uint transforms;
    uint log2_columns;
    uint input_limit;
    uint output_limit;
    uint in_outer;
    uint in_column;
    uint in_element;
    uint out_outer;
    uint out_column;
    uint out_element;
    uint twiddle_step;
    uint log2_fine;
    uint conjugate_input;
    uint conjugate_output;
    uint conjugate_input_factors;
    uint conjugate_output_factors;
    REAL scale;
}} push;

shared REAL tile_real[{tile}];
shared REAL tile_imaginary[{tile}];

// Element `element` of transform `tile_transform` of the tile, laid out and swizzled within
// each run of 32 slots against bank conflicts (`shared_layout`).
uint tile_index(uint tile_transform, uint element) {{
    uint index = {index};
    return index ^ ({swizzle});
}}
{TILE_ACCESS_GLSL}COMPLEX stage_twiddle(uint exponent) {{
    return twiddle(push.twiddles, push.log2_fine, exponent * push.twiddle_step);
}}

COMPLEX factor(uint64_t table, uint position, uint conjugate) {{
    COMPLEX value = Complexes(table + uint64_t(position) * COMPLEX_BYTES).v;
    if (conjugate != 0u) value.y = -value.y;
    return value;
}}

// Stores element `element` of `transform` at its position in its row; positions at or past
// `output_limit` are dropped (truncation).
void store_element(uint transform, uint element, COMPLEX value) {{
    uint outer = transform >> push.log2_columns;
    uint column = transform & ((1u << push.log2_columns) - 1u);
    uint position = column * push.out_column + element * push.out_element;
    if (position >= push.output_limit) return;
    if (push.conjugate_output != 0u) value = conjugate_output(value);
{output_factor}    uint64_t offset = uint64_t(outer) * uint64_t(push.out_outer) + uint64_t(position);
    Complexes(push.destination + offset * COMPLEX_BYTES).v = value * push.scale;
}}

void main() {{
    uint thread = gl_LocalInvocationID.x;
    uint group_slot = {group_slot};
    uint lane = {lane};
    uint tiles = (push.transforms + {group}u - 1u) / {group}u;
    for (uint work = gl_WorkGroupID.x; work < tiles; work += gl_NumWorkGroups.x) {{
        uint first_transform = work * {group}u;
        uint transform = first_transform + group_slot;
        bool present = transform < push.transforms;
        uint outer = transform >> push.log2_columns;
        uint column = transform & ((1u << push.log2_columns) - 1u);
        // Positions within a row at or past `input_limit` read as zeros (padding).
        uint64_t base = uint64_t(outer) * uint64_t(push.in_outer);
        uint in_row = column * push.in_column;
        // Registers are indexed by constants only (unrolled here), so that they stay
        // registers.
        COMPLEX v[{elements}];
{zeros}        if (present) {{
{load}        }}
        if (push.conjugate_input != 0u) {{
{conjugates}        }}
{stages}{post_twiddle}{store}        barrier();
    }}
}}
",
        prelude = shape.precision.prelude(workgroup),
        index = layout.index,
        swizzle = layout.swizzle,
        reals = reals_glsl(shape.precision),
        output_factor = if shape.output_factors {
            "    value = complex_multiply(value, factor(push.output_factors, position, push.conjugate_output_factors));\n"
        } else {
            ""
        },
    )
}

/// Where the block kernel keeps a tile in shared memory, as GLSL expressions of
/// `tile_transform` and `element`: the slot `index`, and the `swizzle` XORed into it (bits
/// above the fifth pick a permutation of the 32 slots of their run, so it is a bijection on
/// any tile of a multiple of 32 slots, needs no padding, and spreads an access over banks).
struct SharedLayout {
    index: String,
    swizzle: &'static str,
}

/// The layout with the fewest bank conflicts for the shape's accesses, counted with a model
/// (32 banks of 4 bytes, warps of 32) on tiles of transforms of 16 to 2048: walking along rows and
/// storing directly, rows contiguous with `i ^ (i >> 3)`; walking across transforms,
/// transforms contiguous with the same swizzle; walking along rows and storing across
/// transforms (four-step's transposing pass), transforms contiguous with
/// `i ^ (i >> 5) ^ (i >> 7)`, which halves the conflicts of the transposed reads. For the
/// 128-point passes of 2^14 c64 that is 320, 256 and 640 shared-memory wavefronts per tile and
/// array against 576, 640 and 832 with rows contiguous and one padding slot per 32.
fn shared_layout(shape: BlockShape) -> SharedLayout {
    let length = 1u32 << shape.log2_length;
    let group = 1u32 << shape.log2_group;
    let rows_contiguous = format!("tile_transform * {length}u + element");
    let transforms_contiguous = format!("element * {group}u + tile_transform");
    const SHIFT_THREE: &str = "(index >> 3u) & 31u";
    match (shape.load, shape.store) {
        (Walk::AlongElements, Walk::AlongElements) => SharedLayout {
            index: rows_contiguous,
            swizzle: SHIFT_THREE,
        },
        (Walk::AcrossTransforms, _) => SharedLayout {
            index: transforms_contiguous,
            swizzle: SHIFT_THREE,
        },
        (Walk::AlongElements, Walk::AcrossTransforms) => SharedLayout {
            index: transforms_contiguous,
            swizzle: "((index >> 5u) ^ (index >> 7u)) & 31u",
        },
    }
}

/// GLSL declaring `{name}2` .. `{name}{count - 1}` as the powers of `{name}1`, each a product
/// of two lower powers (at most three products deep for `count` up to 8).
pub(crate) fn powers_glsl(name: &str, count: u32, indent: &str) -> String {
    (2..count)
        .map(|power| {
            let high = 1u32 << (31 - power.leading_zeros());
            let (left, right) = if high == power {
                (power / 2, power / 2)
            } else {
                (high, power - high)
            };
            format!(
                "{indent}COMPLEX {name}{power} = complex_multiply({name}{left}, {name}{right});\n"
            )
        })
        .collect()
}

/// The shared-memory writes after a stage of `radix` over sub-transforms of `sub_length`
/// (before the stage): butterfly `b` of the invocation is `j = lane + b lanes`, and its `r`th
/// output (register `b + r E / radix`) goes to
/// `(j / sub_length) sub_length radix + j % sub_length + r sub_length`.
pub(crate) fn stage_writes_glsl(elements: u32, lanes: u32, sub_length: u32, radix: u32) -> String {
    let butterflies = elements / radix;
    let span = sub_length * radix;
    let mut text = String::new();
    for butterfly in 0..butterflies {
        text.push_str(&format!(
            "        {{ uint j = lane + {butterfly}u * {lanes}u;\n          uint at = (j / {sub_length}u) * {span}u + (j % {sub_length}u);\n"
        ));
        for r in 0..radix {
            text.push_str(&format!(
                "          put(group_slot, at + {offset}u, v[{register}]);\n",
                offset = r * sub_length,
                register = butterfly + r * butterflies
            ));
        }
        text.push_str("        }\n");
    }
    text
}

/// One Stockham stage in registers: butterfly `b` of the invocation (`j = lane + b lanes`)
/// holds registers `b + r (E / radix)`, the elements `j + r length / radix`; they are
/// multiplied by `W_(sub_length radix)^(r (j % sub_length))` (none in the first stage: one
/// table twiddle and its powers) and transformed by a DFT of `radix` points.
pub(crate) fn stage_glsl(
    elements: u32,
    lanes: u32,
    length: u32,
    sub_length: u32,
    radix: u32,
) -> String {
    let butterflies = elements / radix;
    let mut text = String::new();
    for butterfly in 0..butterflies {
        let registers: Vec<String> = (0..radix)
            .map(|r| format!("v[{}]", butterfly + r * butterflies))
            .collect();
        if sub_length > 1 {
            text.push_str(&format!(
                "        {{ uint k = (lane + {butterfly}u * {lanes}u) % {sub_length}u;\n          COMPLEX w1 = stage_twiddle(k * {stride}u);\n{powers}",
                stride = length / (sub_length * radix),
                powers = powers_glsl("w", radix, "          "),
            ));
            for (r, register) in registers.iter().enumerate().skip(1) {
                text.push_str(&format!(
                    "          {register} = complex_multiply({register}, w{r});\n"
                ));
            }
            text.push_str("        }\n");
        }
        text.push_str(&format!("        dft{radix}({});\n", registers.join(", ")));
    }
    text
}

/// How the load pass and the block kernel's first pass read their input elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoadInput {
    /// Real numbers of the transform's precision (imaginary parts zero).
    Real,
    /// Complex numbers of the transform's precision.
    Complex,
}

impl LoadInput {
    pub(crate) fn name(self) -> &'static str {
        match self {
            LoadInput::Real => "real",
            LoadInput::Complex => "complex",
        }
    }

    /// GLSL reading element `element` (a `uint64_t` index) at `push.source` as a complex
    /// number (after [`reals_glsl`]).
    pub(crate) fn read_glsl(self) -> &'static str {
        match self {
            LoadInput::Real => {
                "COMPLEX(Reals(push.source + element * (COMPLEX_BYTES / 2ul)).v, REAL(0))"
            }
            LoadInput::Complex => "Complexes(push.source + element * COMPLEX_BYTES).v",
        }
    }
}

/// The buffer reference of real input elements of the precision, aligned to themselves.
pub(crate) fn reals_glsl(precision: Precision) -> String {
    format!(
        "layout(buffer_reference, scalar, buffer_reference_align = {}) readonly buffer Reals {{ REAL v; }};\n",
        precision.complex_bytes() / 2
    )
}

/// The load pass: row `r` of the output (length `2^log2_padded`) takes the first
/// `min(input_length, length)` elements of input row `r`, each times `chirp[k]` when a chirp
/// table is given (conjugated for an inverse transform), and zeros after them. A Hermitian
/// load (irfft) reads only the first `length / 2 + 1` and mirrors them, conjugated.
pub(crate) fn load_shader(precision: Precision, input: LoadInput) -> String {
    let read = input.read_glsl();
    format!(
        "{prelude}{reals}
layout(push_constant, scalar) uniform Push {{
    uint64_t source;
    uint64_t destination;
    uint64_t chirp;
    uint total;
    uint log2_padded;
    uint input_length;
    uint transform_length;
    uint inverse;
    uint hermitian;
}} push;

void main() {{
    uint threads = gl_NumWorkGroups.x * {FFT_WORKGROUP_SIZE}u;
    uint mask = (1u << push.log2_padded) - 1u;
    uint half_spectrum = push.transform_length / 2u + 1u;
    for (uint index = gl_GlobalInvocationID.x; index < push.total; index += threads) {{
        uint row = index >> push.log2_padded;
        uint k = index & mask;
        COMPLEX value = COMPLEX(REAL(0), REAL(0));
        if (k < push.transform_length) {{
            // A Hermitian row (irfft) holds its first half: the rest mirrors it, conjugated.
            bool mirrored = push.hermitian != 0u && k >= half_spectrum;
            uint source_index = mirrored ? push.transform_length - k : k;
            if (source_index < push.input_length) {{
                uint64_t element = uint64_t(row) * uint64_t(push.input_length) + uint64_t(source_index);
                value = {read};
                if (mirrored) value.y = -value.y;
            }}
            if (push.chirp != 0ul) {{
                COMPLEX chirp = Complexes(push.chirp + uint64_t(k) * COMPLEX_BYTES).v;
                if (push.inverse != 0u) chirp.y = -chirp.y;
                value = complex_multiply(value, chirp);
            }}
        }}
        Complexes(push.destination + uint64_t(index) * COMPLEX_BYTES).v = value;
    }}
}}
",
        prelude = precision.prelude(FFT_WORKGROUP_SIZE),
        reals = reals_glsl(precision),
    )
}

/// Multiplies every row (of `2^log2_length`) pointwise by one spectrum.
pub(crate) fn pointwise_shader(precision: Precision) -> String {
    format!(
        "{prelude}
layout(push_constant, scalar) uniform Push {{
    uint64_t data;
    uint64_t spectrum;
    uint total;
    uint log2_length;
}} push;

void main() {{
    uint threads = gl_NumWorkGroups.x * {FFT_WORKGROUP_SIZE}u;
    uint mask = (1u << push.log2_length) - 1u;
    for (uint index = gl_GlobalInvocationID.x; index < push.total; index += threads) {{
        Complexes slot = Complexes(push.data + uint64_t(index) * COMPLEX_BYTES);
        slot.v = complex_multiply(slot.v, Complexes(push.spectrum + uint64_t(index & mask) * COMPLEX_BYTES).v);
    }}
}}
",
        prelude = precision.prelude(FFT_WORKGROUP_SIZE),
    )
}

/// The store pass of Bluestein's algorithm: output row `r` (length `length`) is the first
/// `length` elements of row `r` of the convolution (rows of `2^log2_padded`), times the chirp
/// (conjugated for an inverse) and `scale`.
pub(crate) fn store_shader(precision: Precision) -> String {
    format!(
        "{prelude}
layout(push_constant, scalar) uniform Push {{
    uint64_t source;
    uint64_t destination;
    uint64_t chirp;
    uint total;
    uint log2_padded;
    uint transform_length;
    uint inverse;
    REAL scale;
}} push;

void main() {{
    uint threads = gl_NumWorkGroups.x * {FFT_WORKGROUP_SIZE}u;
    for (uint index = gl_GlobalInvocationID.x; index < push.total; index += threads) {{
        uint row = index / push.transform_length;
        uint k = index - row * push.transform_length;
        COMPLEX value = Complexes(push.source + ((uint64_t(row) << push.log2_padded) + uint64_t(k)) * COMPLEX_BYTES).v;
        COMPLEX chirp = Complexes(push.chirp + uint64_t(k) * COMPLEX_BYTES).v;
        if (push.inverse != 0u) chirp.y = -chirp.y;
        Complexes(push.destination + uint64_t(index) * COMPLEX_BYTES).v = complex_multiply(value, chirp) * push.scale;
    }}
}}
",
        prelude = precision.prelude(FFT_WORKGROUP_SIZE),
    )
}

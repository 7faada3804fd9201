//! GLSL for the FFT kernels (`fft.rs`): a load pass (pad or truncate each row, widen real
//! input to complex, optionally multiply by Bluestein's chirp), the radix-2 Stockham pass, a
//! pointwise product with a spectrum, and the store pass (chirp and scale).
//!
//! Complex numbers are `vec2` (c64) or `dvec2` (c128), stored interleaved as Nx stores them.
//! No kernel computes a sine: twiddles and chirps come from tables the host computes in f64,
//! because GLSL's trigonometry is 32-bit only and c128 must be accurate to f64.

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

    /// Bytes of one complex number.
    pub(crate) fn complex_bytes(self) -> u64 {
        match self {
            Precision::Single => 8,
            Precision::Double => 16,
        }
    }

    /// The workgroup size, the precision's types and complex buffers, and complex products.
    fn prelude(self) -> String {
        let (real, complex) = match self {
            Precision::Single => ("float", "vec2"),
            Precision::Double => ("double", "dvec2"),
        };
        let bytes = self.complex_bytes();
        format!(
            "
layout(local_size_x = {FFT_WORKGROUP_SIZE}) in;

#define REAL {real}
#define COMPLEX {complex}
const uint64_t COMPLEX_BYTES = {bytes}ul;
layout(buffer_reference, scalar, buffer_reference_align = {half}) buffer Complexes {{ COMPLEX v; }};
COMPLEX complex_multiply(COMPLEX a, COMPLEX b) {{
    return COMPLEX(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
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
        "{prelude}
layout(push_constant, scalar) uniform Push {{
    uint64_t source;
    uint64_t destination;
    uint64_t twiddles;
    uint pairs;
    uint log2_length;
    uint log2_stride;
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
        COMPLEX twiddle = Complexes(push.twiddles + uint64_t(p * stride) * COMPLEX_BYTES).v;
        if (push.inverse != 0u) twiddle.y = -twiddle.y;
        Complexes(push.destination + (base + uint64_t(q + stride * 2u * p)) * COMPLEX_BYTES).v = (a + b) * push.scale;
        Complexes(push.destination + (base + uint64_t(q + stride * (2u * p + 1u))) * COMPLEX_BYTES).v =
            complex_multiply(a - b, twiddle) * push.scale;
    }}
}}
",
        prelude = precision.prelude(),
    )
}

/// Complex numbers each shared-memory buffer of the block kernel holds (two buffers: 16 KiB
/// for c64, 32 KiB for c128, within every device's 32 KiB).
pub(crate) const BLOCK_CAPACITY: u32 = 1024;

/// The block kernel: each workgroup loads `BLOCK_CAPACITY / length` whole transforms of
/// `2^log2_length` into shared memory, runs every radix-2 Stockham stage there, and stores
/// them, optionally multiplied by `W_N^(column * k)` (the twiddle between the two steps of a
/// four-step transform) and a scale. Addresses are strided (outer, column, element, in complex
/// numbers, for input and output), so one kernel transforms rows, strided columns, and writes
/// transposed; each side walks its contiguous axis fastest for coalesced access.
pub(crate) fn block_shader(precision: Precision) -> String {
    format!(
        "{prelude}
layout(push_constant, scalar) uniform Push {{
    uint64_t source;
    uint64_t destination;
    uint64_t twiddles;
    uint transforms;
    uint log2_length;
    uint columns;
    uint in_outer;
    uint in_column;
    uint in_element;
    uint out_outer;
    uint out_column;
    uint out_element;
    uint twiddle_step;
    uint post_twiddle;
    uint inverse;
    REAL scale;
}} push;

shared COMPLEX buffers[2][{BLOCK_CAPACITY}];

COMPLEX twiddle(uint exponent) {{
    COMPLEX value = Complexes(push.twiddles + uint64_t(exponent) * COMPLEX_BYTES).v;
    if (push.inverse != 0u) value.y = -value.y;
    return value;
}}

// Slot `slot` of a group of `group` transforms of `length`: (transform in group, element).
uvec2 slot_position(uint slot, uint group, uint log2_length, bool element_fastest) {{
    if (element_fastest) return uvec2(slot >> log2_length, slot & ((1u << log2_length) - 1u));
    return uvec2(slot % group, slot / group);
}}

void main() {{
    uint log2_length = push.log2_length;
    uint length = 1u << log2_length;
    uint group = {BLOCK_CAPACITY}u >> log2_length;
    uint group_count = (push.transforms + group - 1u) / group;
    uint slots = group * length;
    for (uint work = gl_WorkGroupID.x; work < group_count; work += gl_NumWorkGroups.x) {{
        uint first = work * group;
        for (uint slot = gl_LocalInvocationID.x; slot < slots; slot += {FFT_WORKGROUP_SIZE}u) {{
            uvec2 at = slot_position(slot, group, log2_length, push.in_element == 1u);
            uint transform = first + at.x;
            COMPLEX value = COMPLEX(REAL(0), REAL(0));
            if (transform < push.transforms) {{
                uint outer = transform / push.columns;
                uint column = transform - outer * push.columns;
                uint64_t element = uint64_t(outer) * uint64_t(push.in_outer)
                    + uint64_t(column) * uint64_t(push.in_column)
                    + uint64_t(at.y) * uint64_t(push.in_element);
                value = Complexes(push.source + element * COMPLEX_BYTES).v;
            }}
            buffers[0][at.x * length + at.y] = value;
        }}
        barrier();
        uint current = 0u;
        for (uint log2_stride = 0u; log2_stride < log2_length; log2_stride++) {{
            uint stride = 1u << log2_stride;
            uint span = (length >> 1u) >> log2_stride;
            for (uint butterfly = gl_LocalInvocationID.x; butterfly < slots / 2u; butterfly += {FFT_WORKGROUP_SIZE}u) {{
                uint base = (butterfly >> (log2_length - 1u)) * length;
                uint j = butterfly & ((length >> 1u) - 1u);
                uint p = j >> log2_stride;
                uint q = j & (stride - 1u);
                COMPLEX a = buffers[current][base + q + stride * p];
                COMPLEX b = buffers[current][base + q + stride * (p + span)];
                buffers[1u - current][base + q + stride * 2u * p] = a + b;
                buffers[1u - current][base + q + stride * (2u * p + 1u)] =
                    complex_multiply(a - b, twiddle(p * stride * push.twiddle_step));
            }}
            barrier();
            current = 1u - current;
        }}
        for (uint slot = gl_LocalInvocationID.x; slot < slots; slot += {FFT_WORKGROUP_SIZE}u) {{
            uvec2 at = slot_position(slot, group, log2_length, push.out_element == 1u);
            uint transform = first + at.x;
            if (transform < push.transforms) {{
                uint outer = transform / push.columns;
                uint column = transform - outer * push.columns;
                COMPLEX value = buffers[current][at.x * length + at.y];
                if (push.post_twiddle != 0u) value = complex_multiply(value, twiddle(column * at.y));
                uint64_t element = uint64_t(outer) * uint64_t(push.out_outer)
                    + uint64_t(column) * uint64_t(push.out_column)
                    + uint64_t(at.y) * uint64_t(push.out_element);
                Complexes(push.destination + element * COMPLEX_BYTES).v = value * push.scale;
            }}
        }}
        barrier();
    }}
}}
",
        prelude = precision.prelude(),
    )
}

/// How the load pass reads its input elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoadInput {
    /// Real numbers of the transform's precision (imaginary parts zero).
    Real,
    /// Complex numbers of the transform's precision.
    Complex,
}

/// The load pass: row `r` of the output (length `2^log2_padded`) takes the first
/// `min(input_length, length)` elements of input row `r`, each times `chirp[k]` when a chirp
/// table is given (conjugated for an inverse transform), and zeros after them. A Hermitian
/// load (irfft) reads only the first `length / 2 + 1` and mirrors them, conjugated.
pub(crate) fn load_shader(precision: Precision, input: LoadInput) -> String {
    let read = match input {
        LoadInput::Real => {
            "COMPLEX(Reals(push.source + element * (COMPLEX_BYTES / 2ul)).v, REAL(0))".to_owned()
        }
        LoadInput::Complex => "Complexes(push.source + element * COMPLEX_BYTES).v".to_owned(),
    };
    format!(
        "{prelude}
layout(buffer_reference, scalar, buffer_reference_align = {half}) readonly buffer Reals {{ REAL v; }};
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
        prelude = precision.prelude(),
        half = precision.complex_bytes() / 2,
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
        prelude = precision.prelude(),
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
        prelude = precision.prelude(),
    )
}

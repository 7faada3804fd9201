//! GLSL for the FFT kernels (`fft.rs`): a load pass (pad or truncate each row, widen real
//! input to complex, optionally multiply by Bluestein's chirp), the radix-2 Stockham pass, a
//! pointwise product with a spectrum, and the store pass (chirp and scale).
//!
//! Complex numbers are `vec2` (c64) or `dvec2` (c128), stored interleaved as Nx stores them.
//! No kernel computes a sine: twiddles and chirps come from tables the host computes in f64,
//! because GLSL's trigonometry is 32-bit only and c128 must be accurate to f64.

use std::fmt::Write as _;

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

    fn prelude(self) -> String {
        let (real, complex) = match self {
            Precision::Single => ("float", "vec2"),
            Precision::Double => ("double", "dvec2"),
        };
        let bytes = self.complex_bytes();
        format!(
            "
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
    let mut shader = String::new();
    let _ = write!(
        shader,
        "
layout(local_size_x = {FFT_WORKGROUP_SIZE}) in;
{prelude}
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
    );
    shader
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
/// table is given (conjugated for an inverse transform), and zeros after them.
pub(crate) fn load_shader(precision: Precision, input: LoadInput) -> String {
    let read = match input {
        LoadInput::Real => {
            "COMPLEX(Reals(push.source + element * (COMPLEX_BYTES / 2ul)).v, REAL(0))".to_owned()
        }
        LoadInput::Complex => "Complexes(push.source + element * COMPLEX_BYTES).v".to_owned(),
    };
    let mut shader = String::new();
    let _ = write!(
        shader,
        "
layout(local_size_x = {FFT_WORKGROUP_SIZE}) in;
{prelude}
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
}} push;

void main() {{
    uint threads = gl_NumWorkGroups.x * {FFT_WORKGROUP_SIZE}u;
    uint mask = (1u << push.log2_padded) - 1u;
    uint kept = min(push.input_length, push.transform_length);
    for (uint index = gl_GlobalInvocationID.x; index < push.total; index += threads) {{
        uint row = index >> push.log2_padded;
        uint k = index & mask;
        COMPLEX value = COMPLEX(REAL(0), REAL(0));
        if (k < kept) {{
            uint64_t element = uint64_t(row) * uint64_t(push.input_length) + uint64_t(k);
            value = {read};
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
    );
    shader
}

/// Multiplies every row (of `2^log2_length`) pointwise by one spectrum.
pub(crate) fn pointwise_shader(precision: Precision) -> String {
    let mut shader = String::new();
    let _ = write!(
        shader,
        "
layout(local_size_x = {FFT_WORKGROUP_SIZE}) in;
{prelude}
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
    );
    shader
}

/// The store pass of Bluestein's algorithm: output row `r` (length `length`) is the first
/// `length` elements of row `r` of the convolution (rows of `2^log2_padded`), times the chirp
/// (conjugated for an inverse) and `scale`.
pub(crate) fn store_shader(precision: Precision) -> String {
    let mut shader = String::new();
    let _ = write!(
        shader,
        "
layout(local_size_x = {FFT_WORKGROUP_SIZE}) in;
{prelude}
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
    );
    shader
}

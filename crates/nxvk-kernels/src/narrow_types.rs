//! `as_type` to and from the *narrow* types on the GPU: the 8-bit floats (E5M2 `{:f, 8}` and
//! E4M3FN) and the sub-byte integers (s2, s4, u2, u4), from and to every native real type and
//! between narrow types.
//!
//! One kernel per (from, to) pair, generated and compiled at run time: each value is read and
//! widened to an *intermediate* native type (f32 for the 8-bit floats, which it holds exactly;
//! s32 for sub-byte integers; the type itself for native ones), then written with Nx's rules:
//! native types by the catalog's cast function (`codegen::cast_function`, so these casts agree
//! with the native ones bit for bit), 8-bit floats by `Nx.Floating`'s (`f8.rs`, mirrored in
//! GLSL below), sub-byte integers like the other integers (NaN 0, infinities the type's
//! limits, otherwise truncated and wrapped to the width). Sub-byte data is packed as Nx packs
//! it, the first element in the most significant bits of its byte: one invocation writes a
//! whole output byte (2 or 4 elements), so no two invocations share a byte and no atomics are
//! needed. Inputs may be any view (the element index comes from shape and strides); outputs
//! are fresh contiguous tensors.
//!
//! Complex operands are not handled here (their conversions to and from narrow types take the
//! counted host fallback of `ops::as_type`).

use crate::catalog::{device_supports, elem_of};
use crate::codegen::{
    cast_function, compute_type, elementwise_prelude, load, storage_bytes, storage_type, store,
};
use crate::grid::grid_stride_workgroups;
use crate::launch::{MAX_ELEMENTS, poison_output};
use crate::op_table::Elem;
use crate::operand_errors::bad_operands;
use nxvk_core::{BufferAccess, Capabilities, DType, Result, Tensor};
use std::fmt::Write as _;

/// Invocations per workgroup.
const WORKGROUP_SIZE: u32 = 256;

/// Byte offset of the parameter block's address in the push constants (after the input and
/// output addresses).
const PARAMS_ADDRESS_OFFSET: usize = 16;

/// A type as these kernels read and write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stored {
    Native(Elem),
    E5M2,
    E4M3FN,
    SubByte { bits: u32, signed: bool },
}

impl Stored {
    fn of(dtype: DType) -> Option<Stored> {
        Some(match dtype {
            DType::F8E5M2 => Stored::E5M2,
            DType::F8E4M3FN => Stored::E4M3FN,
            DType::S2 | DType::S4 | DType::U2 | DType::U4 => Stored::SubByte {
                bits: dtype.bits(),
                signed: dtype.class() == nxvk_core::DTypeClass::SignedInt,
            },
            other => Stored::Native(elem_of(other)?),
        })
    }

    /// The native type a value is widened to after it is read.
    const fn intermediate(self) -> Elem {
        match self {
            Stored::Native(elem) => elem,
            Stored::E5M2 | Stored::E4M3FN => Elem::F32,
            Stored::SubByte { .. } => Elem::S32,
        }
    }

    fn name(self) -> String {
        match self {
            Stored::Native(elem) => elem.name().to_owned(),
            Stored::E5M2 => "f8".to_owned(),
            Stored::E4M3FN => "f8_e4m3fn".to_owned(),
            Stored::SubByte { bits, signed } => format!("{}{bits}", if signed { "s" } else { "u" }),
        }
    }
}

/// True when `as_type` from `from` to `to` runs here: one of them narrow, neither complex, and
/// the device computes in the native types involved.
pub(crate) fn converts(from: DType, to: DType, capabilities: &Capabilities) -> bool {
    let (Some(input), Some(output)) = (Stored::of(from), Stored::of(to)) else {
        return false;
    };
    let narrow = |stored| !matches!(stored, Stored::Native(_));
    let supported = [input.intermediate(), output.intermediate()]
        .into_iter()
        .all(|elem| device_supports(capabilities, elem));
    (narrow(input) || narrow(output)) && from != to && supported
}

/// `input` converted to `dtype` as Nx's `as_type` converts it (callers check [`converts`]).
pub(crate) fn convert(input: &Tensor, dtype: DType) -> Result<Tensor> {
    const OP: &str = "as_type";
    let device = input.device();
    let output = Tensor::empty(device, dtype, input.shape())?;
    let n_elements = input.n_elements();
    if n_elements == 0 {
        return Ok(output);
    }
    poison_output(output.buffer())?;
    let (Some(from), Some(to)) = (Stored::of(input.dtype()), Stored::of(dtype)) else {
        return Err(bad_operands(
            OP,
            &[input],
            format!("no GPU conversion to {dtype}"),
        ));
    };
    let too_large = |what: String| {
        bad_operands(
            OP,
            &[input],
            format!("{what} does not fit the conversion kernel's 32-bit words"),
        )
    };
    if n_elements > MAX_ELEMENTS {
        return Err(too_large(format!("{n_elements} elements")));
    }
    let layout = input.layout();
    let mut words = Vec::with_capacity(layout.shape().len() * 2 + 1);
    for &size in layout.shape() {
        words.push(u32::try_from(size).map_err(|_| too_large(format!("size {size}")))?);
    }
    for &stride in layout.strides() {
        words.push(u32::try_from(stride).map_err(|_| too_large(format!("stride {stride}")))?);
    }
    let offset = layout.offset();
    words.push(u32::try_from(offset).map_err(|_| too_large(format!("offset {offset}")))?);
    let params: Vec<u8> = words.iter().flat_map(|word| word.to_le_bytes()).collect();
    let per_task = per_task(to);
    let tasks = n_elements.div_ceil(per_task as usize) as u64;
    let mut push = Vec::with_capacity(40);
    for word in [
        input.buffer().device_address(),
        output.buffer().device_address(),
        0,
    ] {
        push.extend_from_slice(&word.to_le_bytes());
    }
    for word in [
        n_elements as u32,
        layout.shape().len() as u32,
        tasks as u32,
        0,
    ] {
        push.extend_from_slice(&word.to_le_bytes());
    }
    let name = format!("as_type_{}_{}", from.name(), to.name());
    let kernel = device.kernel_from_glsl(&name, &shader(from, to), &[])?;
    device.dispatch_with_params(
        &kernel,
        [grid_stride_workgroups(device, tasks, WORKGROUP_SIZE), 1, 1],
        &push,
        &params,
        PARAMS_ADDRESS_OFFSET,
        &[
            BufferAccess::Read(input.buffer()),
            BufferAccess::Write(output.buffer()),
        ],
    )?;
    Ok(output)
}

/// Elements one invocation writes: a whole byte of a sub-byte output, else one.
const fn per_task(to: Stored) -> u32 {
    match to {
        Stored::SubByte { bits, .. } => 8 / bits,
        _ => 1,
    }
}

/// GLSL of Nx's 8-bit float rules (`f8.rs`). Rounding half away from zero is done on the
/// integer and fractional parts separately: `floor(v + 0.5)` rounds 0.49999997 up in f32.
const F8_HELPERS: &str = "
float nx_e5m2_to_float(uint bits) {
    uint exponent = (bits >> 2) & 31u;
    uint mantissa = bits & 3u;
    float magnitude;
    if (exponent == 31u) {
        magnitude = (mantissa == 0u) ? uintBitsToFloat(0x7F800000u) : uintBitsToFloat(0x7FC00000u);
    } else if (exponent == 0u && mantissa == 0u) {
        magnitude = 0.0;
    } else {
        // Nx reads exponent 0 as a normal exponent too (f8.rs).
        magnitude = ldexp(1.0 + float(mantissa) * 0.25, int(exponent) - 15);
    }
    return ((bits & 0x80u) != 0u) ? -magnitude : magnitude;
}
float nx_e4m3fn_to_float(uint bits) {
    uint exponent = (bits >> 3) & 15u;
    uint mantissa = bits & 7u;
    float magnitude;
    if (exponent == 15u && mantissa == 7u) {
        magnitude = uintBitsToFloat(0x7FC00000u);
    } else if (exponent == 0u) {
        magnitude = float(mantissa) * 0.001953125;
    } else {
        magnitude = ldexp(1.0 + float(mantissa) * 0.125, int(exponent) - 7);
    }
    return ((bits & 0x80u) != 0u) ? -magnitude : magnitude;
}
// The high byte of the nearest f16 (through f32, as every f16 in nxvk). nx_round_f16 gives an
// exact f16 value, whose bits are assembled in integer arithmetic (no f16 types: the kernel
// runs without shaderFloat16).
uint nx_float_to_e5m2(float value) {
    if (isnan(value)) return 0x7Eu;
    uint bits = floatBitsToUint(nx_round_f16(value));
    uint sign = (bits >> 16) & 0x8000u;
    uint magnitude = bits & 0x7FFFFFFFu;
    uint half_bits;
    if (magnitude >= 0x7F800000u) {
        half_bits = 0x7C00u;
    } else if (magnitude < 0x38800000u) {
        // An f16 subnormal: a multiple of 2^-24.
        half_bits = uint(uintBitsToFloat(magnitude) * 16777216.0);
    } else {
        half_bits = (((magnitude >> 23) - 112u) << 10) | ((magnitude >> 13) & 0x3FFu);
    }
    return (sign | half_bits) >> 8;
}
uint nx_round_half_away(float value) {
    float whole = floor(value);
    return uint(whole) + ((value - whole >= 0.5) ? 1u : 0u);
}
uint nx_float_to_e4m3fn(float value) {
    if (isnan(value)) return 0x7Fu;
    if (value == 0.0) return floatBitsToUint(value) >> 31 << 7;
    uint sign = (value < 0.0) ? 0x80u : 0u;
    float magnitude = min(abs(value), 448.0);
    int exponent;
    frexp(magnitude, exponent);
    int biased = exponent - 1 + 7;
    if (biased <= 0) return sign | min(nx_round_half_away(magnitude * 512.0), 7u);
    float significand = ldexp(magnitude, 1 - exponent);
    uint mantissa = min(nx_round_half_away((significand - 1.0) * 8.0), 7u);
    if (biased >= 15) mantissa = min(mantissa, 6u);
    return sign | (uint(min(biased, 15)) << 3) | mantissa;
}
";

/// GLSL reading element `element` (an index into the input's storage) as the intermediate
/// compute type of `from`.
fn read_expression(from: Stored) -> String {
    match from {
        Stored::Native(elem) => load(
            elem,
            &format!("Input(push.input0 + element * {}ul).v", storage_bytes(elem)),
        ),
        Stored::E5M2 => "nx_e5m2_to_float(uint(Bytes(push.input0 + element).v))".to_owned(),
        Stored::E4M3FN => "nx_e4m3fn_to_float(uint(Bytes(push.input0 + element).v))".to_owned(),
        Stored::SubByte { bits, signed } => {
            let raw = format!(
                "((uint(Bytes(push.input0 + element * {bits}ul / 8ul).v) >> (8u - {bits}u - uint(element * {bits}ul % 8ul))) & {mask}u)",
                mask = (1u32 << bits) - 1
            );
            if signed {
                // Sign-extend from the field's width.
                format!("(int({raw} << {shift}u) >> {shift})", shift = 32 - bits)
            } else {
                format!("int({raw})")
            }
        }
    }
}

/// The `nx_apply` function from the intermediate type of `from` to `to`'s written form
/// (a native compute value, or the bits of a narrow value), and the helpers it needs.
fn write_function(from: Stored, to: Stored) -> (String, &'static str) {
    let intermediate = from.intermediate();
    let source = compute_type(intermediate);
    match to {
        Stored::Native(elem) => cast_function(intermediate, elem),
        Stored::E5M2 => (
            "uint nx_apply(T a) { return nx_float_to_e5m2(float(a)); }".to_owned(),
            "",
        ),
        // Nx writes E4M3FN from the f64 itself: an f64 rounded to the nearest f32 first could
        // reach a power of two or a rounding midpoint from below (0.99999999 would write 1.0,
        // not 0.9375); toward zero it cannot, and the rest of the rule needs no more bits.
        Stored::E4M3FN if intermediate == Elem::F64 => (
            "uint nx_apply(T a) {
    float toward_zero = float(a);
    if (abs(double(toward_zero)) > abs(a)) toward_zero = uintBitsToFloat(floatBitsToUint(toward_zero) - 1u);
    return nx_float_to_e4m3fn(toward_zero);
}"
            .to_owned(),
            "",
        ),
        Stored::E4M3FN => (
            "uint nx_apply(T a) { return nx_float_to_e4m3fn(float(a)); }".to_owned(),
            "",
        ),
        Stored::SubByte { bits, signed } => {
            let (max, min) = if signed {
                ((1i64 << (bits - 1)) - 1, -(1i64 << (bits - 1)))
            } else {
                ((1i64 << bits) - 1, 0)
            };
            let mask = (1u32 << bits) - 1;
            let (wrap, helpers) = cast_function(intermediate, Elem::S32);
            let infinities = if intermediate.is_float() {
                format!(
                    "if (isinf(a)) return uint(a > {source}(0) ? {max} : {min}) & {mask}u;\n    "
                )
            } else {
                String::new()
            };
            (
                format!(
                    "{wrap}\nuint nx_to_field(T a) {{\n    {infinities}return uint(nx_apply(a)) & {mask}u;\n}}"
                ),
                helpers,
            )
        }
    }
}

/// The conversion kernel from `from` to `to`.
fn shader(from: Stored, to: Stored) -> String {
    let (function, helpers) = write_function(from, to);
    let mut shader = elementwise_prelude(from.intermediate(), &function, helpers);
    shader.push_str(F8_HELPERS);
    shader.push_str(&function);
    let input_reference = match from {
        Stored::Native(elem) => format!(
            "layout(buffer_reference, scalar, buffer_reference_align = {}) readonly buffer Input {{ {} v; }};",
            storage_bytes(elem),
            storage_type(elem)
        ),
        _ => String::new(),
    };
    let (output_storage, output_bytes) = match to {
        Stored::Native(elem) => (storage_type(elem), storage_bytes(elem)),
        _ => ("uint8_t", 1),
    };
    let per_task = per_task(to);
    let task = match to {
        Stored::Native(elem) => format!(
            "Output(push.output0 + uint64_t(task) * {output_bytes}ul).v = {};",
            store(elem, "nx_apply(nx_read(task))")
        ),
        Stored::E5M2 | Stored::E4M3FN => {
            "Output(push.output0 + uint64_t(task)).v = uint8_t(nx_apply(nx_read(task)));".to_owned()
        }
        Stored::SubByte { bits, .. } => format!(
            "uint packed = 0u;
        for (uint slot = 0u; slot < {per_task}u; slot++) {{
            uint index = task * {per_task}u + slot;
            if (index < push.count) packed |= nx_to_field(nx_read(index)) << (8u - {bits}u * (slot + 1u));
        }}
        Output(push.output0 + uint64_t(task)).v = uint8_t(packed);"
        ),
    };
    let _ = write!(
        shader,
        "
layout(local_size_x = {WORKGROUP_SIZE}) in;
{input_reference}
layout(buffer_reference, scalar, buffer_reference_align = 1) readonly buffer Bytes {{ uint8_t v; }};
layout(buffer_reference, scalar, buffer_reference_align = {output_bytes}) writeonly buffer Output {{ {output_storage} v; }};
layout(buffer_reference, scalar) readonly buffer Params {{ uint v[]; }};
layout(push_constant, scalar) uniform Push {{
    uint64_t input0;
    uint64_t output0;
    Params params;
    uint count;
    uint rank;
    uint tasks;
    uint unused;
}} push;

// Parameter words: the input's shape, strides and element offset.
{intermediate} nx_read(uint index) {{
    uint64_t element = uint64_t(push.params.v[2u * push.rank]);
    uint rest = index;
    for (uint axis = push.rank; axis > 0u; axis--) {{
        uint size = push.params.v[axis - 1u];
        element += uint64_t(rest % size) * uint64_t(push.params.v[push.rank + axis - 1u]);
        rest /= size;
    }}
    return {read};
}}

void main() {{
    uint threads = gl_NumWorkGroups.x * {WORKGROUP_SIZE}u;
    for (uint task = gl_GlobalInvocationID.x; task < push.tasks; task += threads) {{
        {task}
    }}
}}
",
        intermediate = compute_type(from.intermediate()),
        read = read_expression(from),
    );
    shader
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pair with a narrow side compiles.
    #[test]
    fn conversion_kernels_compile_for_every_pair() {
        let narrow = [
            Stored::E5M2,
            Stored::E4M3FN,
            Stored::SubByte {
                bits: 2,
                signed: true,
            },
            Stored::SubByte {
                bits: 4,
                signed: false,
            },
        ];
        let native = Elem::ALL.into_iter().map(Stored::Native);
        for first in narrow {
            for second in native.clone().chain(narrow) {
                for (from, to) in [(first, second), (second, first)] {
                    let name = format!("as_type_{}_{}", from.name(), to.name());
                    nxvk_glsl::compile_compute(&name, &shader(from, to))
                        .unwrap_or_else(|error| panic!("{name}: {error}"));
                }
            }
        }
    }
}

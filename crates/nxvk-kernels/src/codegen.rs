//! GLSL for the catalog's elementwise kernels, generated from the op table.
//!
//! One template serves every op, cast and dtype: a grid-stride loop over the output elements,
//! contiguous output, and inputs addressed either linearly (`rank == 0`, the fast path for
//! dense operands of the output's shape) or through shape and per-input strides read from a
//! parameter block (any rank, broadcasting by zero strides, transposed and sliced views).
//! Dtype differences live in the type macros and the load/store conversions, never in
//! per-dtype copies of a kernel. Like `op_table.rs`, this file is included by the build script
//! and must stay free of other dependencies.

use crate::op_table::{ComplexElem, Elem, OpSpec, ResultRule, ValueType, expression};
use std::fmt::Write as _;

/// Invocations per workgroup of every elementwise kernel.
pub const WORKGROUP_SIZE: u32 = 256;

/// Bytes of push constants: four device addresses (two inputs, output, parameter block), the
/// element count, the rank and [`INLINE_WORDS`] words of shape and strides (the portable
/// maximum of 128 bytes in all).
pub const PUSH_CONSTANT_BYTES: usize = 128;

/// Shape and stride words carried in the push constants: ranks up to `INLINE_WORDS / 3` (after
/// axis merging) need no parameter block.
pub const INLINE_WORDS: usize = 22;

/// The helpers the op table's expressions call, written against the macros of [`type_defines`].
pub const HELPERS: &str = include_str!("glsl_helpers.glsl");

/// f64 transcendentals (range reduction, polynomials, double-double): f64 ops call them
/// directly, and the f32 helpers in [`F64_ROUNDED_HELPERS`] round their results.
pub const F64_MATH: &str = include_str!("glsl_f64_math.glsl");

/// What a shader defines before [`F64_MATH`] and the helpers, so the helpers use it.
pub const F64_MATH_PRELUDE: &str = "#define NX_F64_MATH 1\n";

/// The f32 helpers of `glsl_helpers.glsl` that compute in f64 (compiled only under
/// `NX_F64_MATH`).
const F64_ROUNDED_HELPERS: [&str; 5] = ["nx_pow(", "nx_sin(", "nx_cos(", "nx_tan(", "nx_cbrt("];

/// The f32 helpers with two forms: their own f32 arithmetic (3 to 7 ulps), and under
/// `NX_F64_MATH` the f64 function rounded once (1 ulp). f32 kernels take the second; f16 and
/// bf16 kernels, whose own rounding hides the difference, keep the first and need no f64.
const F64_REFINED_HELPERS: [&str; 16] = [
    "nx_log(",
    "nx_log1p(",
    "nx_expm1(",
    "nx_sigmoid(",
    "nx_tanh(",
    "nx_sinh(",
    "nx_asinh(",
    "nx_acosh(",
    "nx_atanh(",
    "nx_asin(",
    "nx_acos(",
    "nx_atan(",
    "nx_atan2(",
    "nx_erf(",
    "nx_erfc(",
    "nx_erf_inv(",
];

/// The complex helpers (`glsl_complex.glsl`), written against `C` and the real type macros.
pub const COMPLEX_HELPERS: &str = include_str!("glsl_complex.glsl");

/// What a function needs of the f64 library (`glsl_f64_math.glsl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum F64Math {
    /// Nothing: the kernel does not include it (its constant tables would otherwise put the
    /// Float64 capability, and 8 KB, into every float kernel).
    Unused,
    /// An f32 function that calls [`F64_REFINED_HELPERS`]: it includes the library unless
    /// [`F32_ONLY_MATH_DEFINE`] comes first, and then computes in f32 alone.
    Refining,
    /// f64 functions, complex transcendentals (`nx_complex_*`, which call the real ones) and
    /// [`F64_ROUNDED_HELPERS`], which have no f32 form.
    Required,
}

/// Defined before a kernel's source, it gives [`F64_REFINED_HELPERS`] their f32 forms and
/// keeps the f64 library out of kernels that need it for nothing else (for a device without
/// shaderFloat64, or with the `f32_math_via_f64` knob off). Not an `NX_` name, which fused
/// kernels rename per type.
pub const F32_ONLY_MATH_DEFINE: &str = "#define NXVK_F32_ONLY_MATH 1\n";

/// What `function`, computing in `compute`, needs of the f64 library.
pub fn f64_math(function: &str, compute: Elem) -> F64Math {
    let calls_any = |helpers: &[&str]| helpers.iter().any(|helper| function.contains(helper));
    if function.contains("_f64(")
        || function.contains("nx_complex_")
        || calls_any(&F64_ROUNDED_HELPERS)
    {
        F64Math::Required
    } else if compute == Elem::F32 && calls_any(&F64_REFINED_HELPERS) {
        F64Math::Refining
    } else {
        F64Math::Unused
    }
}

/// The f64 library as a kernel that needs it `as_needed` includes it (before the helpers).
pub fn f64_math_include(as_needed: F64Math) -> String {
    match as_needed {
        F64Math::Unused => String::new(),
        F64Math::Refining => {
            format!("#ifndef NXVK_F32_ONLY_MATH\n{F64_MATH_PRELUDE}{F64_MATH}#endif\n")
        }
        F64Math::Required => format!("{F64_MATH_PRELUDE}{F64_MATH}"),
    }
}

/// The GLSL type values of `elem` are computed in: integers narrower than 32 bits widen (and
/// wrap when stored), f16 and bf16 compute in f32.
pub const fn compute_type(elem: Elem) -> &'static str {
    match elem {
        Elem::S8 | Elem::S16 | Elem::S32 => "int",
        Elem::U8 | Elem::U16 | Elem::U32 => "uint",
        Elem::S64 => "int64_t",
        Elem::U64 => "uint64_t",
        Elem::F16 | Elem::BF16 | Elem::F32 => "float",
        Elem::F64 => "double",
    }
}

/// The GLSL type of `elem` in memory (bf16 is raw bits).
pub const fn storage_type(elem: Elem) -> &'static str {
    match elem {
        Elem::S8 => "int8_t",
        Elem::S16 => "int16_t",
        Elem::S32 => "int",
        Elem::S64 => "int64_t",
        Elem::U8 => "uint8_t",
        Elem::U16 | Elem::BF16 => "uint16_t",
        Elem::U32 => "uint",
        Elem::U64 => "uint64_t",
        Elem::F16 => "float16_t",
        Elem::F32 => "float",
        Elem::F64 => "double",
    }
}

/// Bytes one element of `elem` occupies in memory.
pub const fn storage_bytes(elem: Elem) -> u32 {
    match elem {
        Elem::S8 | Elem::U8 => 1,
        Elem::S16 | Elem::U16 | Elem::F16 | Elem::BF16 => 2,
        Elem::S32 | Elem::U32 | Elem::F32 => 4,
        Elem::S64 | Elem::U64 | Elem::F64 => 8,
    }
}

/// The GLSL expression reading element `index{input}` of input `input` (0 or 1).
fn element(input: usize, value: ValueType) -> String {
    format!(
        "Input{input}(push.input{input} + uint64_t(index{input}) * {}ul).v",
        value_storage_bytes(value)
    )
}

/// The GLSL type a complex number is stored and computed in (real part in `x`).
pub const fn complex_type(complex: ComplexElem) -> &'static str {
    match complex {
        ComplexElem::C64 => "vec2",
        ComplexElem::C128 => "dvec2",
    }
}

/// The GLSL type of `value` in memory.
pub const fn value_storage_type(value: ValueType) -> &'static str {
    match value {
        ValueType::Real(elem) => storage_type(elem),
        ValueType::Complex(complex) => complex_type(complex),
    }
}

/// Bytes one element of `value` occupies in memory.
pub const fn value_storage_bytes(value: ValueType) -> u32 {
    match value {
        ValueType::Real(elem) => storage_bytes(elem),
        ValueType::Complex(complex) => 2 * storage_bytes(complex.component()),
    }
}

/// The alignment promised for addresses of `value`: a complex number is aligned to its
/// component only (a view may start at any element of its buffer).
pub(crate) const fn value_alignment(value: ValueType) -> u32 {
    match value {
        ValueType::Real(elem) => storage_bytes(elem),
        ValueType::Complex(complex) => storage_bytes(complex.component()),
    }
}

/// GLSL converting `access` (a value as stored) to the compute type of `value` (complex
/// numbers are computed as stored).
pub(crate) fn load_value(value: ValueType, access: &str) -> String {
    match value {
        ValueType::Real(elem) => load(elem, access),
        ValueType::Complex(_) => access.to_owned(),
    }
}

/// GLSL converting `result` (of the compute type of `value`) to its storage type.
pub(crate) fn store_value(value: ValueType, result: &str) -> String {
    match value {
        ValueType::Real(elem) => store(elem, result),
        ValueType::Complex(complex) => format!("{}({result})", complex_type(complex)),
    }
}

/// GLSL converting `access` (a value as stored) to the compute type of `elem`.
pub fn load(elem: Elem, access: &str) -> String {
    match elem {
        Elem::BF16 => format!("nx_bf16_to_f32({access})"),
        _ => format!("{}({access})", compute_type(elem)),
    }
}

/// GLSL converting `value` (of the compute type of `elem`) to its storage type.
pub fn store(elem: Elem, value: &str) -> String {
    match elem {
        Elem::BF16 => format!("nx_f32_to_bf16({value})"),
        _ => format!("{}({value})", storage_type(elem)),
    }
}

/// The type macros the helpers are written against.
pub fn type_defines(elem: Elem) -> String {
    let bits = elem.bits();
    let mask32 = if bits >= 32 {
        "0xFFFFFFFFu".to_owned()
    } else {
        format!("{:#x}u", (1u32 << bits) - 1)
    };
    format!(
        "#define T {}\n#define BITS {bits}\n#define MASK32 {mask32}\n#define SIGNED {}\n#define IS_FLOAT {}\n#define IS_F64 {}\n",
        compute_type(elem),
        u8::from(elem.is_signed()),
        u8::from(elem.is_float()),
        u8::from(elem == Elem::F64),
    )
}

/// Tells the driver that signed zeros, infinities and NaNs matter (SPIR-V's
/// SignedZeroInfNanPreserve for 32- and 64-bit floats). Without it a driver may assume there
/// are none: the H200's folded the 0/0 meant to make a NaN into 1. Lavapipe and the H200's
/// driver report the property for both widths. Must come first in a shader body.
pub const FLOAT_CONTROLS: &str = "#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(extensions = [\"SPV_KHR_float_controls\"], capabilities = [4466], 4461, 32);
spirv_execution_mode(extensions = [\"SPV_KHR_float_controls\"], capabilities = [4466], 4461, 64);
";

/// GLSL helpers for 16-bit floats: bf16 conversions (bf16 has no GLSL type) and exact f16
/// rounding for fused kernels.
pub const BF16_HELPERS: &str = "
float nx_bf16_to_f32(uint16_t bits) { return uintBitsToFloat(uint(bits) << 16); }
// Round to nearest even; NaN stays a (quiet) NaN with its sign, as half::bf16::from_f32 does.
uint16_t nx_f32_to_bf16(float value) {
    uint bits = floatBitsToUint(value);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((bits >> 16) | 0x40u);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    return uint16_t(bits >> 16);
}
// An f32 rounded to the nearest f16 value (ties to even, overflow to infinity, f16
// subnormals kept), in integer arithmetic. Fused kernels round f16 intermediates with it:
// NVIDIA's compiler drops a float -> float16_t -> float round trip, which left fused f16
// chains unrounded between ops (64.5625 where the eager path stores 64.5).
float nx_round_f16(float value) {
    uint bits = floatBitsToUint(value);
    uint sign = bits & 0x80000000u;
    uint magnitude = bits & 0x7FFFFFFFu;
    if (magnitude >= 0x7F800000u) return value;
    if (magnitude >= 0x477FF000u) return uintBitsToFloat(sign | 0x7F800000u);
    if (magnitude < 0x38800000u) {
        // f16 subnormals are the multiples of 2^-24, exact in f32.
        float quanta = roundEven(uintBitsToFloat(magnitude) * 16777216.0);
        return uintBitsToFloat(sign | floatBitsToUint(quanta * 5.9604644775390625e-8));
    }
    magnitude += 0xFFFu + ((magnitude >> 13) & 1u);
    return uintBitsToFloat(sign | (magnitude & 0xFFFFE000u));
}
";

/// Float-to-integer helpers for casts: the low bits of trunc(x) in two's complement (Nx writes
/// the truncated integer modulo 2^bits; NaN and infinities are handled by the caller).
const WRAP_HELPERS_F32: &str = "
uint nx_wrap32(float x) {
    float ax = trunc(abs(x));
    uint magnitude;
    if (ax < 4294967296.0) {
        magnitude = uint(ax);
    } else {
        uint bits = floatBitsToUint(ax);
        int shift = int(bits >> 23) - 150;
        magnitude = (shift >= 32) ? 0u : (((bits & 0x7FFFFFu) | 0x800000u) << uint(shift));
    }
    return (x < 0.0) ? 0u - magnitude : magnitude;
}
uint64_t nx_wrap64(float x) {
    float ax = trunc(abs(x));
    uint64_t magnitude;
    if (ax < 18446744073709551616.0) {
        magnitude = uint64_t(ax);
    } else {
        uint bits = floatBitsToUint(ax);
        int shift = int(bits >> 23) - 150;
        magnitude = (shift >= 64) ? 0ul : (uint64_t((bits & 0x7FFFFFu) | 0x800000u) << uint(shift));
    }
    return (x < 0.0) ? 0ul - magnitude : magnitude;
}
";

const WRAP_HELPERS_F64: &str = "
uint64_t nx_wrap64(double x) {
    double ax = trunc(abs(x));
    uint64_t magnitude;
    if (ax < 18446744073709551616.0lf) {
        magnitude = uint64_t(ax);
    } else {
        uvec2 words = unpackDouble2x32(ax);
        uint64_t bits = (uint64_t(words.y) << 32) | uint64_t(words.x);
        int shift = int(bits >> 52) - 1075;
        magnitude = (shift >= 64) ? 0ul : (((bits & 0xFFFFFFFFFFFFFul) | 0x10000000000000ul) << uint(shift));
    }
    return (x < 0.0lf) ? 0ul - magnitude : magnitude;
}
uint nx_wrap32(double x) { return uint(nx_wrap64(x)); }
";

/// The largest and smallest value of an integer type as GLSL literals of its compute type.
fn integer_limits(elem: Elem) -> (&'static str, &'static str) {
    match elem {
        Elem::S8 => ("127", "-128"),
        Elem::S16 => ("32767", "-32768"),
        Elem::S32 => ("2147483647", "(-2147483647 - 1)"),
        Elem::S64 => ("9223372036854775807l", "(-9223372036854775807l - 1l)"),
        Elem::U8 => ("255u", "0u"),
        Elem::U16 => ("65535u", "0u"),
        Elem::U32 => ("4294967295u", "0u"),
        Elem::U64 => ("18446744073709551615ul", "0ul"),
        Elem::F16 | Elem::BF16 | Elem::F32 | Elem::F64 => ("", ""),
    }
}

/// Everything an elementwise shader on compute type `input` needs before its own declarations:
/// float controls, the type macros, the helpers and `extra` (shared with `dense_codegen.rs`).
pub(crate) fn elementwise_prelude(input: Elem, function: &str, extra: &str) -> String {
    let mut prelude = String::from(FLOAT_CONTROLS);
    prelude.push_str(&type_defines(input));
    prelude.push_str(BF16_HELPERS);
    prelude.push_str(&f64_math_include(f64_math(function, input)));
    prelude.push_str(HELPERS);
    prelude.push_str(extra);
    prelude
}

/// The prelude of a shader on complex operands: the real prelude of the component type (so
/// `T` is the component type), `C` the complex type, and the complex helpers.
pub(crate) fn complex_prelude(complex: ComplexElem, function: &str, extra: &str) -> String {
    let mut prelude = elementwise_prelude(complex.component(), function, extra);
    let _ = writeln!(prelude, "#define C {}", complex_type(complex));
    prelude.push_str(COMPLEX_HELPERS);
    prelude
}

/// A whole elementwise shader: `inputs` (one or two) are loaded as their compute type (the
/// type macros follow `inputs[0]`), `function` defines `nx_apply` over them, and its result is
/// stored as `output`.
fn elementwise_shader(
    inputs: &[ValueType],
    output: ValueType,
    function: &str,
    extra: &str,
) -> String {
    let mut shader = match inputs[0] {
        ValueType::Real(elem) => elementwise_prelude(elem, function, extra),
        ValueType::Complex(complex) => complex_prelude(complex, function, extra),
    };
    let second = inputs.get(1).copied().unwrap_or(inputs[0]);
    let _ = write!(
        shader,
        "
layout(local_size_x = {WORKGROUP_SIZE}) in;
// One element per reference, addressed in 64 bits: indexing an array with a 32-bit index
// wraps the byte offset past 4 GiB on NVIDIA's driver (seen on the H200).
layout(buffer_reference, scalar, buffer_reference_align = {input0_align}) readonly buffer Input0 {{ {input0} v; }};
layout(buffer_reference, scalar, buffer_reference_align = {input1_align}) readonly buffer Input1 {{ {input1} v; }};
layout(buffer_reference, scalar, buffer_reference_align = {output_align}) writeonly buffer Output {{ {output_storage} v; }};
layout(buffer_reference, scalar) readonly buffer Params {{ uint v[]; }};
layout(push_constant, scalar) uniform Push {{
    uint64_t input0;
    uint64_t input1;
    uint64_t output0;
    Params params;
    uint count;
    uint rank;
    uint inline_words[{inline_words}];
}} push;

// Shape (rank words), then the strides of input 0 and of input 1 (rank words each): inline in
// the push constants when they fit, else in the parameter block.
uint nx_layout_word(uint position) {{
    return (push.rank * 3u <= {inline_words}u) ? push.inline_words[position] : push.params.v[position];
}}

{function}

void main() {{
    uint threads = gl_NumWorkGroups.x * {WORKGROUP_SIZE}u;
    for (uint index = gl_GlobalInvocationID.x; index < push.count; index += threads) {{
        uint index0 = index;
        uint index1 = index;
        if (push.rank != 0u) {{
            uint rest = index;
            index0 = 0u;
            index1 = 0u;
            for (uint axis = push.rank; axis > 0u; axis--) {{
                uint size = nx_layout_word(axis - 1u);
                uint coordinate = rest % size;
                rest /= size;
                index0 += coordinate * nx_layout_word(push.rank + axis - 1u);
                index1 += coordinate * nx_layout_word(2u * push.rank + axis - 1u);
            }}
        }}
        Output(push.output0 + uint64_t(index) * {output_bytes}ul).v = {stored};
    }}
}}
",
        inline_words = INLINE_WORDS,
        input0 = value_storage_type(inputs[0]),
        input1 = value_storage_type(second),
        input0_align = value_alignment(inputs[0]),
        input1_align = value_alignment(second),
        output_align = value_alignment(output),
        output_bytes = value_storage_bytes(output),
        output_storage = value_storage_type(output),
        stored = store_value(
            output,
            &if inputs.len() == 2 {
                format!(
                    "nx_apply({}, {})",
                    load_value(inputs[0], &element(0, inputs[0])),
                    load_value(inputs[1], &element(1, inputs[1]))
                )
            } else {
                format!("nx_apply({})", load_value(inputs[0], &element(0, inputs[0])))
            }
        ),
    );
    shader
}

/// The output type of `spec` run on compute type `elem` (`None` for complex results).
pub const fn output_elem(spec: &OpSpec, elem: Elem) -> Option<Elem> {
    match spec.result {
        ResultRule::U8 => Some(Elem::U8),
        ResultRule::Complex => None,
        ResultRule::Same | ResultRule::Floating | ResultRule::Real => Some(elem),
    }
}

/// The shader of an op with `arity` operands on compute type `elem`, when the table has one.
pub fn op_shader(spec: &OpSpec, arity: usize, elem: Elem) -> Option<String> {
    let (function, output) = op_function(spec, arity, elem)?;
    Some(elementwise_shader(
        &vec![ValueType::Real(elem); arity],
        ValueType::Real(output),
        &function,
        "",
    ))
}

/// The output type of `spec` run on complex operands of type `complex`.
pub const fn complex_output(spec: &OpSpec, complex: ComplexElem) -> ValueType {
    match spec.complex_result {
        ResultRule::U8 => ValueType::Real(Elem::U8),
        ResultRule::Real => ValueType::Real(complex.component()),
        ResultRule::Same | ResultRule::Floating | ResultRule::Complex => {
            ValueType::Complex(complex)
        }
    }
}

/// The shader of an op with `arity` operands on complex compute type `complex`, when the table
/// has a complex expression for it.
pub fn complex_op_shader(spec: &OpSpec, arity: usize, complex: ComplexElem) -> Option<String> {
    let expression = spec.glsl.complex?;
    let output = complex_output(spec, complex);
    let output_type = match output {
        ValueType::Real(elem) => compute_type(elem),
        ValueType::Complex(_) => "C",
    };
    let parameters = if arity == 2 { "C a, C b" } else { "C a" };
    let function =
        format!("{output_type} nx_apply({parameters}) {{ return {output_type}({expression}); }}");
    Some(elementwise_shader(
        &vec![ValueType::Complex(complex); arity],
        output,
        &function,
        "",
    ))
}

/// The `nx_apply` function of an op with `arity` operands on compute type `elem`, and its
/// output type (shared with `dense_codegen.rs`, so both variants compute the same expression).
pub(crate) fn op_function(spec: &OpSpec, arity: usize, elem: Elem) -> Option<(String, Elem)> {
    let expression = expression(spec, elem)?;
    let output = output_elem(spec, elem)?;
    let output_type = compute_type(output);
    let parameters = if arity == 2 { "T a, T b" } else { "T a" };
    let function =
        format!("{output_type} nx_apply({parameters}) {{ return {output_type}({expression}); }}");
    Some((function, output))
}

/// The shader of `as_type` from `from` to `to` with Nx's rules: integers wrap, floats round to
/// nearest even (f16 and bf16 through f32), float to integer truncates and wraps, NaN becomes
/// 0 and infinities the integer type's limits.
pub fn cast_shader(from: Elem, to: Elem) -> String {
    let (function, extra) = cast_function(from, to);
    elementwise_shader(
        &[ValueType::Real(from)],
        ValueType::Real(to),
        &function,
        extra,
    )
}

/// The shader of `as_type` between value types of which at least one is complex, with Nx's
/// rules: a real value becomes the real part (imaginary part 0), a complex number becomes its
/// real part, then cast as that real type would be (`cast_function`), and complex numbers
/// change precision part by part.
pub fn complex_cast_shader(from: ValueType, to: ValueType) -> Option<String> {
    let (function, extra) = match (from, to) {
        (ValueType::Real(_), ValueType::Real(_)) => return None,
        (ValueType::Real(elem), ValueType::Complex(complex)) => {
            let component = compute_type(complex.component());
            let target = complex_type(complex);
            // f32 parts widen exactly (`nx_widen`: the driver's conversion may flush them).
            let widen = if elem.is_float() && elem != Elem::F64 && complex == ComplexElem::C128 {
                "nx_widen"
            } else {
                component
            };
            (
                format!(
                    "{target} nx_apply(T a) {{ return {target}({widen}(a), {component}(0)); }}"
                ),
                "",
            )
        }
        (ValueType::Complex(ComplexElem::C64), ValueType::Complex(ComplexElem::C128)) => (
            "dvec2 nx_apply(C a) { return dvec2(nx_widen(a.x), nx_widen(a.y)); }".to_owned(),
            "",
        ),
        (ValueType::Complex(_), ValueType::Complex(complex)) => {
            let target = complex_type(complex);
            (
                format!("{target} nx_apply(C a) {{ return {target}(a); }}"),
                "",
            )
        }
        (ValueType::Complex(complex), ValueType::Real(elem)) => {
            let (component_cast, extra) = cast_function(complex.component(), elem);
            let target = compute_type(elem);
            (
                format!(
                    "{}\n{target} nx_apply(C a) {{ return nx_cast_component(a.x); }}",
                    component_cast.replace("nx_apply(", "nx_cast_component(")
                ),
                extra,
            )
        }
    };
    (from != to).then(|| elementwise_shader(&[from], to, &function, extra))
}

/// The cast from `from` to `to` as a GLSL function `nx_apply(T a)` returning the compute type
/// of `to` (`T` being the compute type of `from`), and the helpers it needs (placed before it).
/// Shared by the catalog's cast kernels and the fused kernels of nxvk-fusion.
pub fn cast_function(from: Elem, to: Elem) -> (String, &'static str) {
    let target = compute_type(to);
    if from.is_float() && !to.is_float() {
        let (max, min) = integer_limits(to);
        let wrap = if to.bits() == 64 {
            "nx_wrap64"
        } else {
            "nx_wrap32"
        };
        let function = format!(
            "{target} nx_apply(T a) {{
    if (isnan(a)) return {target}(0);
    if (isinf(a)) return (a > T(0)) ? {target}({max}) : {target}({min});
    return {target}({wrap}(a));
}}"
        );
        let extra = if from == Elem::F64 {
            WRAP_HELPERS_F64
        } else {
            WRAP_HELPERS_F32
        };
        (function, extra)
    } else if to == Elem::F64 && from.is_float() && from != Elem::F64 {
        // The driver's f32 -> f64 conversion may flush subnormals (glsl_helpers.glsl).
        (
            "double nx_apply(T a) { return nx_widen(a); }".to_owned(),
            "",
        )
    } else {
        (
            format!("{target} nx_apply(T a) {{ return {target}(a); }}"),
            "",
        )
    }
}

/// Kernel name of iota and eye on `elem` (`iota_f32`).
pub fn iota_kernel_name(elem: Elem) -> String {
    format!("iota_{}", elem.name())
}

/// Bytes of the iota kernel's push constants: output address, count, inner, size, diagonal.
pub const IOTA_PUSH_CONSTANT_BYTES: usize = 24;

/// Iota and eye in one kernel: element `index` holds its coordinate `(index / inner) % size`
/// along one axis (flat iota: inner 1, size the element count) or, with `diagonal` set, 1
/// where that coordinate equals `index % inner` (eye's last two axes: inner is the column
/// count) and 0 elsewhere. Values are converted as Nx's `as_type` of an integer would be.
pub fn iota_shader(elem: Elem) -> String {
    let mut shader = String::from(BF16_HELPERS);
    let _ = write!(
        shader,
        "
layout(local_size_x = {WORKGROUP_SIZE}) in;
layout(buffer_reference, scalar, buffer_reference_align = {bytes}) writeonly buffer Output {{ {storage} v; }};
layout(push_constant, scalar) uniform Push {{
    uint64_t output0;
    uint count;
    uint inner;
    uint size;
    uint diagonal;
}} push;

void main() {{
    uint threads = gl_NumWorkGroups.x * {WORKGROUP_SIZE}u;
    for (uint index = gl_GlobalInvocationID.x; index < push.count; index += threads) {{
        uint coordinate = (index / push.inner) % push.size;
        uint value = (push.diagonal != 0u) ? uint(coordinate == index % push.inner) : coordinate;
        Output(push.output0 + uint64_t(index) * {bytes}ul).v = {stored};
    }}
}}
",
        bytes = storage_bytes(elem),
        storage = storage_type(elem),
        stored = store(elem, &format!("{}(value)", compute_type(elem))),
    );
    shader
}

/// The element sizes (bytes) the select kernels move, one kernel each: select never looks at
/// the values it picks, so one kernel serves every dtype of a size (16 bytes: c128).
pub const SELECT_BYTES: [usize; 5] = [1, 2, 4, 8, 16];

/// Kernel name of select on elements of `bytes` bytes (`select_32` for 4 bytes).
pub fn select_kernel_name(bytes: usize) -> String {
    format!("select_{}", bytes * 8)
}

/// The GLSL type that moves one element of `bytes` bytes.
const fn select_storage(bytes: usize) -> &'static str {
    match bytes {
        1 => "uint8_t",
        2 => "uint16_t",
        4 => "uint",
        8 => "uint64_t",
        _ => "u64vec2",
    }
}

/// Bytes of the select kernel's push constants: four addresses (predicate, on_true,
/// on_false, output), the parameter block's address, count and rank.
pub const SELECT_PUSH_CONSTANT_BYTES: usize = 48;

/// Byte offset of the parameter block's address in the select kernel's push constants.
pub const SELECT_PARAMS_ADDRESS_OFFSET: usize = 32;

/// Nx's select on a u8 predicate (non-zero picks `on_true`): operands addressed linearly
/// (`rank == 0`) or through shape and three stride lists in a parameter block (broadcasting
/// by zero strides, any view). Only the chosen operand is read.
pub fn select_shader(bytes: usize) -> String {
    let mut shader = String::new();
    let _ = write!(
        shader,
        "
layout(local_size_x = {WORKGROUP_SIZE}) in;
layout(buffer_reference, scalar, buffer_reference_align = 1) readonly buffer Predicate {{ uint8_t v; }};
layout(buffer_reference, scalar, buffer_reference_align = {align}) readonly buffer Value {{ {storage} v; }};
layout(buffer_reference, scalar, buffer_reference_align = {align}) writeonly buffer Output {{ {storage} v; }};
layout(buffer_reference, scalar) readonly buffer Params {{ uint v[]; }};
layout(push_constant, scalar) uniform Push {{
    uint64_t predicate;
    uint64_t on_true;
    uint64_t on_false;
    uint64_t output0;
    Params params;
    uint count;
    uint rank;
}} push;

// Parameter words: shape, then the strides of the predicate, on_true and on_false.
void main() {{
    uint threads = gl_NumWorkGroups.x * {WORKGROUP_SIZE}u;
    for (uint index = gl_GlobalInvocationID.x; index < push.count; index += threads) {{
        uint predicate_index = index;
        uint true_index = index;
        uint false_index = index;
        if (push.rank != 0u) {{
            uint rest = index;
            predicate_index = 0u;
            true_index = 0u;
            false_index = 0u;
            for (uint axis = push.rank; axis > 0u; axis--) {{
                uint size = push.params.v[axis - 1u];
                uint coordinate = rest % size;
                rest /= size;
                predicate_index += coordinate * push.params.v[push.rank + axis - 1u];
                true_index += coordinate * push.params.v[2u * push.rank + axis - 1u];
                false_index += coordinate * push.params.v[3u * push.rank + axis - 1u];
            }}
        }}
        bool chosen = Predicate(push.predicate + uint64_t(predicate_index)).v != uint8_t(0);
        uint64_t source = chosen
            ? push.on_true + uint64_t(true_index) * {bytes}ul
            : push.on_false + uint64_t(false_index) * {bytes}ul;
        Output(push.output0 + uint64_t(index) * {bytes}ul).v = Value(source).v;
    }}
}}
",
        // 16-byte elements (c128) need only their parts' 8-byte alignment.
        align = bytes.min(8),
        storage = select_storage(bytes),
    );
    shader
}

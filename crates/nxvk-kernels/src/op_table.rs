//! The op table: every Nx elementwise op, defined once.
//!
//! Each op has a name, an arity, the dtype classes Nx accepts for it, its result-type rule and
//! its GLSL expression per dtype class. The build script (which includes this file with
//! `#[path]`), the catalog, the eager ops, the host references (`reference.rs`, one exhaustive
//! `match` over these enums) and the coverage report all read it, so this file must stay free
//! of crate-internal and external dependencies.
//!
//! GLSL expressions see the operands as `a` (and `b`) of the *compute type* (`T`: `int`/`uint`
//! for integers up to 32 bits, `int64_t`/`uint64_t`, `float` for f16/bf16/f32, `double`) and
//! evaluate to a value of the output's compute type. The macros `BITS` (storage bits of the
//! operand type) and `SIGNED` are defined, and the helpers of `glsl_helpers.glsl` are in scope.
//! A `None` expression means the class never reaches a kernel: Nx rejects it, or the operands
//! are cast to another class first (`exp` on `s32` runs as `exp` on `f32`).
//!
//! Complex expressions (c64 and c128, [`ComplexElem`]) see the operands as `a` (and `b`) of
//! type `C` (`vec2` or `dvec2`: `x` the real part, `y` the imaginary part), with `T` their
//! component type, and evaluate to `C`, to `T` for ops whose complex result is real
//! ([`OpSpec::complex_result`]) or to `uint` for predicates. Their helpers live in
//! `glsl_complex.glsl` and follow Elixir's `Complex` library, which Nx.BinaryBackend calls.
//! An op without one runs on complex operands through the counted host fallback. Complex
//! expressions avoid constant operands whose IEEE result the driver may fold away: lavapipe
//! (Mesa 22) turned `0 * Inf` into 0 and `-0 + 0` into -0 when the 0 was a literal, despite
//! `precise` and SignedZeroInfNanPreserve, so log1p, rsqrt and sigmoid (`z + 1`, `1 / z`) stay
//! on the host until they are written without them.

/// The real element types the catalog compiles kernels for. Complex numbers are
/// [`ComplexElem`]s; everything else (sub-byte integers, 8-bit floats) goes through the counted
/// host fallback.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Elem {
    S8,
    S16,
    S32,
    S64,
    U8,
    U16,
    U32,
    U64,
    F16,
    BF16,
    F32,
    F64,
}

impl Elem {
    pub const ALL: [Elem; 12] = [
        Elem::S8,
        Elem::S16,
        Elem::S32,
        Elem::S64,
        Elem::U8,
        Elem::U16,
        Elem::U32,
        Elem::U64,
        Elem::F16,
        Elem::BF16,
        Elem::F32,
        Elem::F64,
    ];

    /// Nx's short name, used in kernel names (`add_s32`).
    pub const fn name(self) -> &'static str {
        match self {
            Elem::S8 => "s8",
            Elem::S16 => "s16",
            Elem::S32 => "s32",
            Elem::S64 => "s64",
            Elem::U8 => "u8",
            Elem::U16 => "u16",
            Elem::U32 => "u32",
            Elem::U64 => "u64",
            Elem::F16 => "f16",
            Elem::BF16 => "bf16",
            Elem::F32 => "f32",
            Elem::F64 => "f64",
        }
    }

    pub const fn bits(self) -> u32 {
        match self {
            Elem::S8 | Elem::U8 => 8,
            Elem::S16 | Elem::U16 | Elem::F16 | Elem::BF16 => 16,
            Elem::S32 | Elem::U32 | Elem::F32 => 32,
            Elem::S64 | Elem::U64 | Elem::F64 => 64,
        }
    }

    pub const fn is_float(self) -> bool {
        matches!(self, Elem::F16 | Elem::BF16 | Elem::F32 | Elem::F64)
    }

    pub const fn is_signed(self) -> bool {
        matches!(self, Elem::S8 | Elem::S16 | Elem::S32 | Elem::S64)
    }

    pub const fn index(self) -> usize {
        self as usize
    }
}

/// The complex element types: pairs of f32 (c64) or f64 (c128) components, real part first.
/// They are kept apart from [`Elem`] because only the elementwise ops and casts have complex
/// kernels (reductions, scans, movement and fusion key their tables by [`Elem`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ComplexElem {
    C64,
    C128,
}

impl ComplexElem {
    pub const ALL: [ComplexElem; 2] = [ComplexElem::C64, ComplexElem::C128];

    /// Nx's short name, used in kernel names (`multiply_c64`).
    pub const fn name(self) -> &'static str {
        match self {
            ComplexElem::C64 => "c64",
            ComplexElem::C128 => "c128",
        }
    }

    /// The type of the real and imaginary parts.
    pub const fn component(self) -> Elem {
        match self {
            ComplexElem::C64 => Elem::F32,
            ComplexElem::C128 => Elem::F64,
        }
    }

    pub const fn index(self) -> usize {
        self as usize
    }
}

/// An operand or result type of an elementwise kernel: a real element or a complex number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueType {
    Real(Elem),
    Complex(ComplexElem),
}

impl ValueType {
    /// Every value type: the [`Elem`]s in their order, then the [`ComplexElem`]s.
    pub const ALL: [ValueType; 14] = {
        let mut all = [ValueType::Complex(ComplexElem::C64); 14];
        let mut index = 0;
        while index < Elem::ALL.len() {
            all[index] = ValueType::Real(Elem::ALL[index]);
            index += 1;
        }
        all[13] = ValueType::Complex(ComplexElem::C128);
        all
    };

    pub const fn name(self) -> &'static str {
        match self {
            ValueType::Real(elem) => elem.name(),
            ValueType::Complex(complex) => complex.name(),
        }
    }

    /// Position in [`ValueType::ALL`].
    pub const fn index(self) -> usize {
        match self {
            ValueType::Real(elem) => elem.index(),
            ValueType::Complex(complex) => Elem::ALL.len() + complex.index(),
        }
    }
}

/// Which operand classes Nx accepts for an op (anything else is an error, not a fallback).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepts {
    /// Integers, floats and complex numbers.
    Any,
    /// Integers and floats (Nx raises on complex).
    Real,
    /// Integers only (bitwise ops, shifts, quotient).
    Integer,
}

/// How the result type follows from the operand types (Nx.Type's rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultRule {
    /// `Nx.Type.merge` of the operands (unary: the operand's type).
    Same,
    /// `Nx.Type.to_floating` of the merged type: integers become f32.
    Floating,
    /// Predicates: always u8; operands are compared in their merged type.
    U8,
    /// `Nx.Type.to_real`: integers become f32, complex its component type.
    Real,
    /// `Nx.Type.to_complex`.
    Complex,
}

/// GLSL for one op, per class of the compute type.
#[derive(Debug, Clone, Copy)]
pub struct Glsl {
    /// For integer compute types (signed and unsigned; `SIGNED` tells them apart).
    pub integer: Option<&'static str>,
    /// For float compute types up to f32 (f16 and bf16 compute in f32).
    pub float: Option<&'static str>,
    /// For f64; transcendentals call `glsl_f64_math.glsl` (GLSL.std.450 is 32-bit only, and
    /// f64 is never computed in f32). `None` routes f64 to the host fallback.
    pub float64: Option<&'static str>,
    /// For c64 and c128 (`glsl_complex.glsl`). `None` routes complex to the host fallback.
    pub complex: Option<&'static str>,
}

/// An op's entry in the table.
#[derive(Debug, Clone, Copy)]
pub struct OpSpec {
    pub name: &'static str,
    pub accepts: Accepts,
    pub result: ResultRule,
    pub glsl: Glsl,
    /// True when the GPU result must equal the host reference bit for bit; false for
    /// transcendentals, checked to an ulp bound.
    pub exact: bool,
    /// The result rule on complex operands: `result`, except for ops whose value on a complex
    /// number is real (`abs`).
    pub complex_result: ResultRule,
}

impl OpSpec {
    /// This op with a complex kernel computing `expression` (see the module documentation).
    const fn on_complex(self, expression: &'static str) -> OpSpec {
        OpSpec {
            glsl: Glsl {
                complex: Some(expression),
                ..self.glsl
            },
            ..self
        }
    }

    /// This op with a complex kernel whose result is the component type (`abs`).
    const fn on_complex_to_real(self, expression: &'static str) -> OpSpec {
        OpSpec {
            complex_result: ResultRule::Real,
            ..self.on_complex(expression)
        }
    }
}

const fn spec(
    name: &'static str,
    accepts: Accepts,
    result: ResultRule,
    integer: Option<&'static str>,
    float: Option<&'static str>,
    float64: Option<&'static str>,
    exact: bool,
) -> OpSpec {
    OpSpec {
        name,
        accepts,
        result,
        glsl: Glsl {
            integer,
            float,
            float64,
            complex: None,
        },
        exact,
        complex_result: result,
    }
}

/// An exact op with the same expression for every class.
const fn exact(
    name: &'static str,
    accepts: Accepts,
    result: ResultRule,
    all: &'static str,
) -> OpSpec {
    spec(name, accepts, result, Some(all), Some(all), Some(all), true)
}

/// A transcendental on floats only (integers are cast to f32 first): f16, bf16 and f32 use
/// `float`, f64 uses `float64` (`glsl_f64_math.glsl`), both checked to an ulp bound.
const fn transcendental(
    name: &'static str,
    accepts: Accepts,
    float: &'static str,
    float64: &'static str,
) -> OpSpec {
    spec(
        name,
        accepts,
        ResultRule::Floating,
        None,
        Some(float),
        Some(float64),
        false,
    )
}

macro_rules! op_enum {
    ($enum_name:ident, $all:ident, $spec_fn:ident, { $($variant:ident => $spec:expr,)* }) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $enum_name { $($variant,)* }

        impl $enum_name {
            pub const $all: &'static [$enum_name] = &[$($enum_name::$variant,)*];

            /// This op's entry in the table.
            pub const fn $spec_fn(self) -> OpSpec {
                match self { $($enum_name::$variant => $spec,)* }
            }

            pub const fn name(self) -> &'static str {
                self.$spec_fn().name
            }

            pub const fn index(self) -> usize {
                self as usize
            }
        }
    };
}

use Accepts::{Any, Integer, Real};
use ResultRule::{Floating, Same, U8};

op_enum!(BinaryOp, ALL, spec, {
    Add => exact("add", Any, Same, "a + b").on_complex("a + b"),
    Subtract => exact("subtract", Any, Same, "a - b").on_complex("a - b"),
    Multiply => exact("multiply", Any, Same, "a * b").on_complex("nx_cmul(a, b)"),
    Divide => spec("divide", Any, Floating, None, Some("nx_div(a, b)"), Some("a / b"), true).on_complex("nx_cdiv(a, b)"),
    Pow => spec("pow", Any, Same, Some("nx_ipow(a, b)"), Some("nx_pow(a, b)"), Some("nx_pow_f64(a, b)"), false).on_complex("nx_complex_pow(a, b)"),
    Remainder => spec("remainder", Real, Same, Some("nx_irem(a, b)"), Some("nx_fmod(a, b)"), Some("nx_fmod(a, b)"), true),
    Atan2 => transcendental("atan2", Any, "nx_atan2(a, b)", "nx_atan2_f64(a, b)"),
    Min => exact("min", Real, Same, "nx_min(a, b)"),
    Max => exact("max", Real, Same, "nx_max(a, b)"),
    Quotient => spec("quotient", Integer, Same, Some("nx_quotient(a, b)"), None, None, true),
    BitwiseAnd => spec("bitwise_and", Integer, Same, Some("a & b"), None, None, true),
    BitwiseOr => spec("bitwise_or", Integer, Same, Some("a | b"), None, None, true),
    BitwiseXor => spec("bitwise_xor", Integer, Same, Some("a ^ b"), None, None, true),
    LeftShift => spec("left_shift", Integer, Same, Some("nx_left_shift(a, b)"), None, None, true),
    RightShift => spec("right_shift", Integer, Same, Some("nx_right_shift(a, b)"), None, None, true),
    Equal => exact("equal", Any, U8, "uint(nx_equal(a, b))").on_complex("uint(nx_cequal(a, b))"),
    NotEqual => exact("not_equal", Any, U8, "uint(!nx_equal(a, b))").on_complex("uint(!nx_cequal(a, b))"),
    Greater => exact("greater", Real, U8, "uint(nx_greater(a, b))"),
    Less => exact("less", Real, U8, "uint(nx_less(a, b))"),
    GreaterEqual => exact("greater_equal", Real, U8, "uint(nx_greater_equal(a, b))"),
    LessEqual => exact("less_equal", Real, U8, "uint(nx_less_equal(a, b))"),
    LogicalAnd => exact("logical_and", Any, U8, "uint(!nx_is_zero(a) && !nx_is_zero(b))").on_complex("uint(a != C(0) && b != C(0))"),
    LogicalOr => exact("logical_or", Any, U8, "uint(!nx_is_zero(a) || !nx_is_zero(b))").on_complex("uint(a != C(0) || b != C(0))"),
    LogicalXor => exact("logical_xor", Any, U8, "uint(!nx_is_zero(a) != !nx_is_zero(b))").on_complex("uint((a != C(0)) != (b != C(0)))"),
});

op_enum!(UnaryOp, ALL, spec, {
    Negate => spec("negate", Any, Same, Some("T(0) - a"), Some("-a"), Some("-a"), true).on_complex("-a"),
    Abs => spec("abs", Any, Same, Some("nx_iabs(a)"), Some("abs(a)"), Some("abs(a)"), true).on_complex_to_real("nx_cabs(a)"),
    Sign => spec("sign", Real, Same, Some("nx_sign(a)"), Some("nx_sign(a)"), Some("nx_sign(a)"), true),
    Floor => spec("floor", Real, Same, Some("a"), Some("nx_floor(a)"), Some("floor(a)"), true),
    Ceil => spec("ceil", Real, Same, Some("a"), Some("nx_ceil(a)"), Some("ceil(a)"), true),
    Round => spec("round", Real, Same, Some("a"), Some("nx_round(a)"), Some("nx_round(a)"), true),
    Exp => transcendental("exp", Any, "nx_exp(a)", "nx_exp_f64(a)").on_complex("nx_complex_exp(a)"),
    Expm1 => transcendental("expm1", Any, "nx_expm1(a)", "nx_expm1_f64(a)").on_complex("nx_complex_exp(a) - C(1, 0)"),
    Log => transcendental("log", Any, "nx_log(a)", "nx_log_f64(a)").on_complex("nx_complex_log(a)"),
    Log1p => transcendental("log1p", Any, "nx_log1p(a)", "nx_log1p_f64(a)").on_complex("nx_complex_log1p(a)"),
    Sqrt => spec("sqrt", Any, Floating, None, Some("nx_sqrt(a)"), Some("sqrt(a)"), true).on_complex("nx_csqrt(a)"),
    Rsqrt => spec("rsqrt", Any, Floating, None, Some("nx_rsqrt(a)"), Some("1.0lf / sqrt(a)"), false).on_complex("nx_creciprocal(nx_csqrt(a))"),
    Sigmoid => transcendental("sigmoid", Any, "nx_sigmoid(a)", "nx_sigmoid_f64(a)").on_complex("nx_complex_sigmoid(a)"),
    Tanh => transcendental("tanh", Any, "nx_tanh(a)", "nx_tanh_f64(a)").on_complex("nx_complex_tanh(a)"),
    Sin => transcendental("sin", Any, "nx_sin(a)", "nx_sin_f64(a)").on_complex("nx_complex_sin(a)"),
    Cos => transcendental("cos", Any, "nx_cos(a)", "nx_cos_f64(a)").on_complex("nx_complex_cos(a)"),
    Tan => transcendental("tan", Any, "nx_tan(a)", "nx_tan_f64(a)").on_complex("nx_complex_tan(a)"),
    Asin => transcendental("asin", Any, "nx_asin(a)", "nx_asin_f64(a)").on_complex("nx_complex_asin(a)"),
    Acos => transcendental("acos", Any, "nx_acos(a)", "nx_acos_f64(a)").on_complex("nx_complex_acos(a)"),
    Atan => transcendental("atan", Any, "nx_atan(a)", "nx_atan_f64(a)").on_complex("nx_complex_atan(a)"),
    Sinh => transcendental("sinh", Any, "nx_sinh(a)", "nx_sinh_f64(a)").on_complex("nx_complex_sinh(a)"),
    Cosh => transcendental("cosh", Any, "nx_cosh(a)", "nx_cosh_f64(a)").on_complex("nx_complex_cosh(a)"),
    Asinh => transcendental("asinh", Any, "nx_asinh(a)", "nx_asinh_f64(a)").on_complex("nx_complex_asinh(a)"),
    Acosh => transcendental("acosh", Any, "nx_acosh(a)", "nx_acosh_f64(a)").on_complex("nx_complex_acosh(a)"),
    Atanh => transcendental("atanh", Any, "nx_atanh(a)", "nx_atanh_f64(a)").on_complex("nx_complex_atanh(a)"),
    Erf => transcendental("erf", Real, "nx_erf(a)", "nx_erf_f64(a)"),
    Erfc => transcendental("erfc", Real, "nx_erfc(a)", "nx_erfc_f64(a)"),
    ErfInv => transcendental("erf_inv", Real, "nx_erf_inv(a)", "nx_erf_inv_f64(a)"),
    Cbrt => transcendental("cbrt", Any, "nx_cbrt(a)", "nx_cbrt_f64(a)").on_complex("nx_complex_cbrt(a)"),
    BitwiseNot => spec("bitwise_not", Integer, Same, Some("~a"), None, None, true),
    LogicalNot => exact("logical_not", Any, U8, "uint(nx_is_zero(a))").on_complex("uint(a == C(0))"),
    IsNan => spec("is_nan", Any, U8, Some("0u"), Some("uint(isnan(a))"), Some("uint(isnan(a))"), true).on_complex("uint(any(isnan(a)))"),
    IsInfinity => spec("is_infinity", Any, U8, Some("0u"), Some("uint(isinf(a))"), Some("uint(isinf(a))"), true).on_complex("uint(any(isinf(a)))"),
    PopulationCount => spec("population_count", Integer, Same, Some("nx_popcount(a)"), None, None, true),
    CountLeadingZeros => spec("count_leading_zeros", Integer, Same, Some("nx_clz(a)"), None, None, true),
    Real => spec("real", Any, ResultRule::Real, None, Some("a"), Some("a"), true).on_complex("a.x"),
    Imag => spec("imag", Any, ResultRule::Real, None, Some("T(0)"), Some("T(0)"), true).on_complex("a.y"),
    Conjugate => spec("conjugate", Any, ResultRule::Complex, None, None, None, true).on_complex("C(a.x, -a.y)"),
});

/// The GLSL expression of `spec` for compute type `elem`, if the catalog has a kernel for it.
pub const fn expression(spec: &OpSpec, elem: Elem) -> Option<&'static str> {
    match elem {
        Elem::F64 => spec.glsl.float64,
        Elem::F16 | Elem::BF16 | Elem::F32 => spec.glsl.float,
        _ => spec.glsl.integer,
    }
}

/// Kernel name of an op on a compute type: `<op>_<dtype>`.
pub fn kernel_name(op: &str, elem: Elem) -> String {
    format!("{op}_{}", elem.name())
}

/// Kernel name of an op on a complex compute type: `<op>_<dtype>` (`multiply_c64`).
pub fn complex_kernel_name(op: &str, complex: ComplexElem) -> String {
    format!("{op}_{}", complex.name())
}

/// Kernel name of a cast: `as_type_<from>_<to>`.
pub fn cast_kernel_name(from: Elem, to: Elem) -> String {
    value_cast_kernel_name(ValueType::Real(from), ValueType::Real(to))
}

/// Kernel name of a cast between any value types: `as_type_<from>_<to>` (`as_type_f32_c64`).
pub fn value_cast_kernel_name(from: ValueType, to: ValueType) -> String {
    format!("as_type_{}_{}", from.name(), to.name())
}

// Complex numbers for the c64 and c128 kernels. `codegen.rs` defines `C` (`vec2` or `dvec2`:
// `x` the real part, `y` the imaginary part) and the real type macros of the component type
// (`T`, `IS_F64`) before including this, after `glsl_helpers.glsl`.
//
// The formulas are those of Elixir's Complex library, which Nx.BinaryBackend calls, with its
// special values where they differ from plain IEEE arithmetic. Arithmetic is `precise` (no
// contraction into fused multiply-adds) and divides and square roots are correctly rounded
// (`nx_div` and `nx_sqrt` for f32), so the host reference in `reference.rs` repeats
// every operation and matches bit for bit wherever the driver rounds correctly.

#if IS_F64
#define NX_COMPONENT_DIV(a, b) ((a) / (b))
#define NX_COMPONENT_SQRT(x) sqrt(x)
#define NX_COMPONENT_INFINITY packDouble2x32(uvec2(0u, 0x7FF00000u))
#define NX_COMPONENT_NAN packDouble2x32(uvec2(0u, 0x7FF80000u))
#else
#define NX_COMPONENT_DIV(a, b) nx_div(a, b)
#define NX_COMPONENT_SQRT(x) nx_sqrt(x)
#define NX_COMPONENT_INFINITY uintBitsToFloat(0x7F800000u)
#define NX_COMPONENT_NAN uintBitsToFloat(0x7FC00000u)
#endif

bool nx_component_finite(T x) { return !isnan(x) && !isinf(x); }

// Complex.multiply: (ac - bd) + (bc + ad)i, IEEE rules for the infinities and NaNs.
C nx_cmul(C a, C b) {
    precise T re = a.x * b.x - a.y * b.y;
    precise T im = a.y * b.x + a.x * b.y;
    return C(re, im);
}

// Complex's real divide inside complex division: a finite numerator over an infinite
// denominator is +0 (IEEE keeps the sign); the other cases are IEEE's.
T nx_cdiv_component(T numerator, T denominator) {
    if (isinf(denominator) && nx_component_finite(numerator)) return T(0);
    return NX_COMPONENT_DIV(numerator, denominator);
}

// Complex.divide: multiply by the conjugate over |b|^2, without scaling (as the library does,
// so |b| beyond sqrt(max) overflows there too). A finite dividend over (+-Inf, 0) is 0.
C nx_cdiv(C a, C b) {
    if (nx_component_finite(a.x) && nx_component_finite(a.y) && isinf(b.x) && b.y == T(0)) {
        return C(0);
    }
    precise T numerator_re = a.x * b.x + a.y * b.y;
    precise T numerator_im = a.y * b.x - a.x * b.y;
    precise T denominator = b.x * b.x + b.y * b.y;
    return C(nx_cdiv_component(numerator_re, denominator),
             nx_cdiv_component(numerator_im, denominator));
}

// Arithmetic with Elixir's integer 0 without a literal zero, which lavapipe (Mesa 22) folds
// even under `precise` (`0 * Inf` to 0, `-0 + 0` to -0): the results are built from the
// operand's bits. `nx_zero_times(x)` is IEEE 0 * x: NaN for Inf or NaN, else 0 with x's sign.
// `nx_plus_zero(x)` is IEEE x + 0: -0 becomes +0, anything else is unchanged.
#if IS_F64
T nx_zero_times(T x) {
    if (!nx_component_finite(x)) return NX_COMPONENT_NAN;
    return packDouble2x32(uvec2(0u, unpackDouble2x32(x).y & 0x80000000u));
}
T nx_plus_zero(T x) {
    uvec2 bits = unpackDouble2x32(x);
    return packDouble2x32(uvec2(bits.x, (x == T(0)) ? (bits.y & 0x7FFFFFFFu) : bits.y));
}
#else
T nx_zero_times(T x) {
    if (!nx_component_finite(x)) return NX_COMPONENT_NAN;
    return uintBitsToFloat(floatBitsToUint(x) & 0x80000000u);
}
T nx_plus_zero(T x) {
    uint bits = floatBitsToUint(x);
    return uintBitsToFloat((x == T(0)) ? (bits & 0x7FFFFFFFu) : bits);
}
#endif

// Complex.divide(1, b) as Complex.divide(1 + 0i, b) with its zero parts' products written
// out (see `nx_zero_times`): numerator (b.x + 0 b.y, 0 b.x - b.y) over |b|^2.
C nx_creciprocal(C b) {
    if (isinf(b.x) && b.y == T(0)) return C(0);
    precise T numerator_re = b.x + nx_zero_times(b.y);
    precise T numerator_im = nx_zero_times(b.x) - b.y;
    precise T denominator = b.x * b.x + b.y * b.y;
    return C(nx_cdiv_component(numerator_re, denominator),
             nx_cdiv_component(numerator_im, denominator));
}

// Complex.multiply by i = (0, 1) and by Complex.negate(i) = (-0, -1), their zero parts'
// products written out (see `nx_zero_times`).
C nx_times_i(C z) {
    precise T re = nx_zero_times(z.x) - z.y;
    precise T im = z.x + nx_zero_times(z.y);
    return C(re, im);
}

C nx_times_minus_i(C z) {
    precise T re = -nx_zero_times(z.x) + z.y;
    precise T im = -z.x - nx_zero_times(z.y);
    return C(re, im);
}

// Complex.multiply(z, 1) = z (1, 0), its zero part's products written out: the product
// reduction's single multiplication by the integer 1 BinaryBackend's fold starts from (NaN
// beside an infinite part, -0 made +0).
C nx_times_one(C z) {
    precise T re = z.x - nx_zero_times(z.y);
    precise T im = z.y + nx_zero_times(z.x);
    return C(re, im);
}

// Complex.multiply by (0.5, 0) and by (0, 0.5) (atanh's and atan's factors).
C nx_times_half(C z) {
    precise T re = T(0.5) * z.x - nx_zero_times(z.y);
    precise T im = nx_zero_times(z.x) + T(0.5) * z.y;
    return C(re, im);
}

C nx_times_half_i(C z) {
    precise T re = nx_zero_times(z.x) - T(0.5) * z.y;
    precise T im = T(0.5) * z.x + nx_zero_times(z.y);
    return C(re, im);
}

// Complex.subtract(1, z): (1 - re, 0 - im).
C nx_cone_minus(C z) {
    precise T re = T(1) - z.x;
    return C(re, nx_plus_zero(-z.y));
}

// Complex.add(z, 1): (re + 1, im + 0).
C nx_cplus_one(C z) {
    precise T re = z.x + T(1);
    return C(re, nx_plus_zero(z.y));
}

// Complex.abs: NaN only when both parts are NaN, +Inf when either part is not finite, else
// the larger part times sqrt(1 + ratio^2) (no overflow in the squares).
T nx_cabs(C z) {
    if (isnan(z.x) && isnan(z.y)) return z.x;
    if (!nx_component_finite(z.x) || !nx_component_finite(z.y)) return NX_COMPONENT_INFINITY;
    T x = abs(z.x);
    T y = abs(z.y);
    if (x == T(0)) return y;
    if (y == T(0)) return x;
    precise T larger = max(x, y);
    precise T ratio = NX_COMPONENT_DIV(min(x, y), larger);
    precise T root = NX_COMPONENT_SQRT(T(1) + ratio * ratio);
    return larger * root;
}

// Nx.BinaryBackend compares complex numbers as Elixir terms: a NaN part equals a NaN part
// (both read as the atom :nan), and 0.0 equals -0.0.
bool nx_component_equal(T a, T b) { return a == b || (isnan(a) && isnan(b)); }
bool nx_cequal(C a, C b) { return nx_component_equal(a.x, b.x) && nx_component_equal(a.y, b.y); }

// Complex.sqrt: the library's special values first, then the scaled formula that avoids
// overflow in |z|; -0.0 counts as non-negative (Elixir's >=).
C nx_csqrt(C z) {
    if (isnan(z.x) || isnan(z.y)) return C(NX_COMPONENT_NAN);
    if (isinf(z.y)) return C(NX_COMPONENT_INFINITY, z.y);
    if (isinf(z.x)) return (z.x > T(0)) ? C(z.x, T(0)) : C(T(0), NX_COMPONENT_INFINITY);
    if (z.x == T(0) && z.y == T(0)) return z;
    T x = abs(z.x);
    T y = abs(z.y);
    precise T w;
    if (x >= y) {
        precise T ratio = NX_COMPONENT_DIV(y, x);
        precise T inner = NX_COMPONENT_SQRT(T(1) + ratio * ratio);
        w = NX_COMPONENT_SQRT(x) * NX_COMPONENT_SQRT(T(0.5) * (T(1) + inner));
    } else {
        precise T ratio = NX_COMPONENT_DIV(x, y);
        precise T inner = NX_COMPONENT_SQRT(T(1) + ratio * ratio);
        w = NX_COMPONENT_SQRT(y) * NX_COMPONENT_SQRT(T(0.5) * (ratio + inner));
    }
    if (z.x >= T(0)) return C(w, NX_COMPONENT_DIV(z.y, T(2) * w));
    T signed_w = (z.y >= T(0)) ? w : -w;
    return C(NX_COMPONENT_DIV(z.y, T(2) * signed_w), signed_w);
}

#ifdef NX_F64_MATH
// Transcendentals (named `nx_complex_*`, which makes codegen include the f64 library): the
// component type's real functions, `glsl_helpers.glsl`'s for f32 and `glsl_f64_math.glsl`'s
// for f64.
#if IS_F64
#define NX_REAL(function) function##_f64
#else
#define NX_REAL(function) function
#endif

// +-Inf by the sign of `x`, NaN for 0: Complex.exp's reading of cos and sin at Re = +Inf.
T nx_signed_infinity(T x) {
    if (x > T(0)) return NX_COMPONENT_INFINITY;
    if (x < T(0)) return -NX_COMPONENT_INFINITY;
    return NX_COMPONENT_NAN;
}

// Complex.exp of `z` from exp(z.x), cos(z.y) and sin(z.y), with the library's special values.
// Callers pass the real functions' values so that sinh, cosh and tanh share them between e^z
// and e^-z: lavapipe inlines every call, and four exps in tanh took 10 s to compile.
C nx_complex_exp_parts(C z, T exp_re, T cosine, T sine) {
    if (isinf(z.x) && z.x < T(0)) return C(0);
    if (isinf(z.x) && !isinf(z.y)) {
        if (isnan(z.y)) return C(z.x, z.y);
        return C(nx_signed_infinity(cosine), nx_signed_infinity(sine));
    }
    if (!nx_component_finite(z.x) || !nx_component_finite(z.y)) return C(NX_COMPONENT_NAN);
    precise T re = exp_re * cosine;
    precise T im = exp_re * sine;
    return C(re, im);
}

// Complex.exp: e^re (cos im + i sin im).
C nx_complex_exp(C z) {
    return nx_complex_exp_parts(z, NX_REAL(nx_exp)(z.x), NX_REAL(nx_cos)(z.y), NX_REAL(nx_sin)(z.y));
}

// e^z and e^-z, with cos(-y) taken as cos(y) and sin(-y) as -sin(y) (the host reference
// does the same).
void nx_complex_exp_both(C z, out C up, out C down) {
    T cosine = NX_REAL(nx_cos)(z.y);
    T sine = NX_REAL(nx_sin)(z.y);
    up = nx_complex_exp_parts(z, NX_REAL(nx_exp)(z.x), cosine, sine);
    down = nx_complex_exp_parts(-z, NX_REAL(nx_exp)(-z.x), cosine, -sine);
}

// Complex.atan2(im, re) as Complex.log calls it: C's atan2, except that a finite imaginary
// part over an infinite real part gives +0 or +pi whatever its sign.
T nx_complex_phase(C z) {
    if (isinf(z.x) && nx_component_finite(z.y)) return (z.x > T(0)) ? T(0) : T(3.14159265358979323846lf);
    return NX_REAL(nx_atan2)(z.y, z.x);
}

// Complex.log: log|z| + i phase(z), |z| being Complex.abs (so a NaN part alone gives +Inf).
C nx_complex_log(C z) { return C(NX_REAL(nx_log)(nx_cabs(z)), nx_complex_phase(z)); }

// Complex.log(Complex.add(z, 1)), as Nx's log1p calls it.
C nx_complex_log1p(C z) { return nx_complex_log(nx_cplus_one(z)); }

// Complex.divide(1, Complex.add(Complex.exp(-z), 1)), as Nx's sigmoid calls it.
C nx_complex_sigmoid(C z) { return nx_creciprocal(nx_cplus_one(nx_complex_exp(-z))); }

// Complex.asin and Complex.acos: NaN for a non-finite part, else -i log(i z + sqrt(1 - z^2))
// and -i log(z + sqrt(z^2 - 1)), unscaled as the library writes them.
C nx_complex_asin(C z) {
    if (!nx_component_finite(z.x) || !nx_component_finite(z.y)) return C(NX_COMPONENT_NAN);
    precise C sum = nx_times_i(z) + nx_csqrt(nx_cone_minus(nx_cmul(z, z)));
    return nx_times_minus_i(nx_complex_log(sum));
}

C nx_complex_acos(C z) {
    if (!nx_component_finite(z.x) || !nx_component_finite(z.y)) return C(NX_COMPONENT_NAN);
    C square = nx_cmul(z, z);
    precise T re_minus_one = square.x - T(1);
    precise C sum = z + nx_csqrt(C(re_minus_one, square.y));
    return nx_times_minus_i(nx_complex_log(sum));
}

// Complex.atan: (0.5 i) (log(1 - i z) - log(1 + i z)); Complex.atanh: 0.5 log((1 + z) / (1 - z)).
// Unguarded, as in the library: infinite parts go through IEEE arithmetic.
C nx_complex_atan(C z) {
    C iz = nx_times_i(z);
    precise C difference = nx_complex_log(nx_cone_minus(iz)) - nx_complex_log(nx_cplus_one(iz));
    return nx_times_half_i(difference);
}

C nx_complex_atanh(C z) {
    return nx_times_half(nx_complex_log(nx_cdiv(nx_cplus_one(z), nx_cone_minus(z))));
}

// Complex.asinh: log(z + sqrt(z^2 + 1)); Complex.acosh: log(z + sqrt(z^2 - 1)).
C nx_complex_asinh(C z) {
    precise C sum = z + nx_csqrt(nx_cplus_one(nx_cmul(z, z)));
    return nx_complex_log(sum);
}

C nx_complex_acosh(C z) {
    C square = nx_cmul(z, z);
    precise T re_minus_one = square.x - T(1);
    precise C sum = z + nx_csqrt(C(re_minus_one, square.y));
    return nx_complex_log(sum);
}

// Complex.pow: any infinite or NaN part gives NaN, except that 0 to the power (+Inf, 0) is 0;
// 0 to the power 0 is 1 and to any other power 0; exponents 1 and -1 return x and 1 / x; else
// |x|^re e^(-im phase) (cos r + i sin r) with r = re phase + im log|x|, one real pow, exp,
// log, cos and sin each (lavapipe inlines every call).
C nx_complex_pow(C x, C y) {
    bool x_is_zero = x.x == T(0) && x.y == T(0);
    if (!nx_component_finite(x.x) || !nx_component_finite(x.y) ||
        !nx_component_finite(y.x) || !nx_component_finite(y.y)) {
        bool exponent_is_plus_infinity = isinf(y.x) && y.x > T(0) && y.y == T(0);
        return (x_is_zero && exponent_is_plus_infinity) ? C(0) : C(NX_COMPONENT_NAN);
    }
    if (x_is_zero) return (y.x == T(0) && y.y == T(0)) ? C(1, 0) : C(0);
    if (y.x == T(1) && y.y == T(0)) return x;
    if (y.x == T(-1) && y.y == T(0)) return nx_cdiv(C(1, 0), x);
    T rho = nx_cabs(x);
    T theta = nx_complex_phase(x);
    precise T exponent = -y.y * theta;
    precise T magnitude = NX_REAL(nx_pow)(rho, y.x) * NX_REAL(nx_exp)(exponent);
    precise T angle = y.x * theta + y.y * NX_REAL(nx_log)(rho);
    precise T re = magnitude * NX_REAL(nx_cos)(angle);
    precise T im = magnitude * NX_REAL(nx_sin)(angle);
    return C(re, im);
}

// Complex.sin and Complex.cos together (tan needs both; each real function is called once):
// products of the real functions, NaN for an infinite or NaN real part, and the library's
// values for an infinite imaginary part.
void nx_complex_sin_cos(C z, out C sine, out C cosine) {
    if (isnan(z.x) || isnan(z.y) || isinf(z.x)) {
        sine = C(NX_COMPONENT_NAN);
        cosine = C(NX_COMPONENT_NAN);
        return;
    }
    if (isinf(z.y)) {
        sine = C(z.x * z.y, z.y);
        cosine = C(NX_COMPONENT_INFINITY, -z.y * z.x);
        return;
    }
    T sin_re = NX_REAL(nx_sin)(z.x);
    T cos_re = NX_REAL(nx_cos)(z.x);
    T cosh_im = NX_REAL(nx_cosh)(z.y);
    T sinh_im = NX_REAL(nx_sinh)(z.y);
    precise T sine_re = sin_re * cosh_im;
    precise T sine_im = cos_re * sinh_im;
    precise T cosine_re = cos_re * cosh_im;
    precise T cosine_im = -sin_re * sinh_im;
    sine = C(sine_re, sine_im);
    cosine = C(cosine_re, cosine_im);
}

C nx_complex_sin(C z) {
    C sine, cosine;
    nx_complex_sin_cos(z, sine, cosine);
    return sine;
}

C nx_complex_cos(C z) {
    C sine, cosine;
    nx_complex_sin_cos(z, sine, cosine);
    return cosine;
}

// Complex.tan: sin z / cos z.
C nx_complex_tan(C z) {
    C sine, cosine;
    nx_complex_sin_cos(z, sine, cosine);
    return nx_cdiv(sine, cosine);
}

// Complex.sinh and Complex.cosh: (e^z -+ e^-z) / 2, part by part; Complex.tanh: their quotient.
C nx_complex_half(C z) { return C(NX_COMPONENT_DIV(z.x, T(2)), NX_COMPONENT_DIV(z.y, T(2))); }

C nx_complex_sinh(C z) {
    C up, down;
    nx_complex_exp_both(z, up, down);
    precise C difference = up - down;
    return nx_complex_half(difference);
}

C nx_complex_cosh(C z) {
    C up, down;
    nx_complex_exp_both(z, up, down);
    precise C sum = up + down;
    return nx_complex_half(sum);
}

C nx_complex_tanh(C z) {
    C up, down;
    nx_complex_exp_both(z, up, down);
    precise C difference = up - down;
    precise C sum = up + down;
    return nx_cdiv(nx_complex_half(difference), nx_complex_half(sum));
}

// Complex.cbrt: from_polar(abs(z)^(1/3), phase(z) / 3). The cube root is the library's
// :math.pow(r, 1 / 3) for c128; for c64 the f64 cube root rounded once (an f32 pow would take
// 1/3 rounded to f32, up to ~8 ulps off for large moduli). Complex.phase's special values:
// both parts infinite give pi/4, -pi/4, 3pi/4 or 5pi/4; an infinite imaginary part +-pi/2
// (whatever the real part); an infinite real part beside a finite imaginary one 0 or pi.
// A NaN phase (a NaN part beside a finite or NaN one, or (+-Inf, NaN)) makes BinaryBackend
// raise (the NaN atom divided by 3); here it gives NaN parts. from_polar returns (r, +0) for
// a zero angle, else (r cos - 0 sin, 0 cos + r sin), its zero products written out.
C nx_complex_cbrt(C z) {
    T pi = T(3.14159265358979323846lf);
    bool real_infinite = isinf(z.x);
    bool imaginary_infinite = isinf(z.y);
    T phase;
    if (real_infinite && imaginary_infinite) {
        T quarters = (z.x > T(0)) ? ((z.y > T(0)) ? T(1) : T(-1)) : ((z.y > T(0)) ? T(3) : T(5));
        phase = NX_COMPONENT_DIV(quarters * pi, T(4));
    } else if (imaginary_infinite) {
        phase = (z.y > T(0)) ? NX_COMPONENT_DIV(pi, T(2)) : -NX_COMPONENT_DIV(pi, T(2));
    } else if (real_infinite && !isnan(z.y)) {
        phase = (z.x > T(0)) ? T(0) : pi;
    } else if (isnan(z.x) || isnan(z.y)) {
        return C(NX_COMPONENT_NAN, NX_COMPONENT_NAN);
    } else {
        phase = NX_REAL(nx_atan2)(z.y, z.x);
    }
#if IS_F64
    T modulus = nx_pow_f64(nx_cabs(z), 1.0lf / 3.0lf);
#else
    T modulus = nx_cbrt(nx_cabs(z));
#endif
    T angle = NX_COMPONENT_DIV(phase, T(3));
    if (angle == T(0)) return C(modulus, T(0));
    T cosine = NX_REAL(nx_cos)(angle);
    T sine = NX_REAL(nx_sin)(angle);
    precise T re = modulus * cosine - nx_zero_times(sine);
    precise T im = nx_zero_times(cosine) + modulus * sine;
    return C(re, im);
}
#endif

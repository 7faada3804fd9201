// Helpers for the op table's GLSL expressions: the places where Nx's semantics differ from
// GLSL's (integer division by zero, shifts past the width, NaN in min/max, round half away
// from zero, C99 pow/atan2 special cases) or where GLSL.std.450 has no function (erf, expm1).
// `codegen.rs` defines T, BITS, MASK32, SIGNED, IS_FLOAT and IS_F64 before including this.

#if !IS_FLOAT
// Integer division truncates toward zero. Nx raises on a zero divisor; the GPU defines it as 0
// (GLSL leaves it undefined), and MIN / -1 wraps to MIN.
T nx_quotient(T a, T b) {
    if (b == T(0)) return T(0);
#if SIGNED
    if (b == T(-1)) return T(0) - a;
#endif
    return a / b;
}

// The remainder has the dividend's sign (Elixir's rem/2); a zero divisor gives 0.
T nx_irem(T a, T b) {
    if (b == T(0)) return T(0);
#if SIGNED
    if (b == T(-1)) return T(0);
#endif
    return a - b * (a / b);
}

// Integer.pow with wrapping; negative exponents (an error in Nx) give the truncated 1 / a^-b.
T nx_ipow(T a, T b) {
#if SIGNED
    if (b < T(0)) {
        if (a == T(1)) return T(1);
        if (a == T(-1)) return ((b & T(1)) == T(0)) ? T(1) : T(-1);
        return T(0);
    }
#endif
    T result = T(1);
    T base = a;
    T exponent = b;
    while (exponent != T(0)) {
        if ((exponent & T(1)) != T(0)) result *= base;
        base *= base;
        exponent >>= 1;
    }
    return result;
}

// Shift counts outside [0, BITS) (negative ones are an error in Nx) shift everything out.
T nx_left_shift(T a, T b) {
    if (b < T(0) || b >= T(BITS)) return T(0);
    return a << b;
}

T nx_right_shift(T a, T b) {
    if (b < T(0) || b >= T(BITS)) return (a < T(0)) ? T(-1) : T(0);
    return a >> b;
}

T nx_iabs(T a) { return (a < T(0)) ? T(0) - a : a; }

T nx_min(T a, T b) { return (a <= b) ? a : b; }
T nx_max(T a, T b) { return (a >= b) ? a : b; }

#if BITS == 64
T nx_popcount(T a) { return T(bitCount(uint(a)) + bitCount(uint(a >> 32))); }
T nx_clz(T a) {
    uint high = uint(uint64_t(a) >> 32);
    uint low = uint(a);
    if (high != 0u) return T(31 - findMSB(high));
    if (low != 0u) return T(63 - findMSB(low));
    return T(64);
}
#else
T nx_popcount(T a) { return T(bitCount(uint(a) & MASK32)); }
T nx_clz(T a) {
    uint bits = uint(a) & MASK32;
    return (bits == 0u) ? T(BITS) : T(BITS - 1 - findMSB(bits));
}
#endif
#endif

#if IS_FLOAT && !IS_F64
// --- f32 operands a flushing driver cannot disturb ---
// Drivers may flush f32 subnormal inputs to zero in every float instruction, comparisons and
// conversions included (NVIDIA's does, and reports shaderDenormPreserveFloat32 = false, so a
// kernel cannot ask otherwise). The f32 helpers classify operands from their bits (integer
// operations, never flushed) and take exact paths for subnormals, so that a normal result
// never depends on the driver; results that are themselves subnormal may still be flushed.
// f16 and bf16 compute through these too (bf16 subnormals are f32 subnormals).

bool nx_is_nan_bits(float x) { return (floatBitsToUint(x) & 0x7FFFFFFFu) > 0x7F800000u; }
bool nx_is_zero(float x) { return (floatBitsToUint(x) << 1) == 0u; }
bool nx_is_subnormal(float x) { return (floatBitsToUint(x) << 1) - 1u < 0x00FFFFFFu; }
bool nx_sign_bit(float x) { return (floatBitsToUint(x) >> 31) != 0u; }
// Ordered like the values for non-NaN floats (both zeros are 0), so comparisons of subnormals
// are integer comparisons.
int nx_order_key(float x) {
    uint bits = floatBitsToUint(x);
    int magnitude = int(bits & 0x7FFFFFFFu);
    return ((bits >> 31) != 0u) ? -magnitude : magnitude;
}
bool nx_ordered(float a, float b) { return !nx_is_nan_bits(a) && !nx_is_nan_bits(b); }
bool nx_equal(float a, float b) { return nx_ordered(a, b) && nx_order_key(a) == nx_order_key(b); }
bool nx_less(float a, float b) { return nx_ordered(a, b) && nx_order_key(a) < nx_order_key(b); }
bool nx_less_equal(float a, float b) { return nx_ordered(a, b) && nx_order_key(a) <= nx_order_key(b); }
bool nx_greater(float a, float b) { return nx_less(b, a); }
bool nx_greater_equal(float a, float b) { return nx_less_equal(b, a); }

// Sign keeps zeros (and NaN) as they are, as Nx does; a subnormal is positive or negative.
float nx_sign(float a) {
    if (nx_is_nan_bits(a) || nx_is_zero(a)) return a;
    return nx_sign_bit(a) ? -1.0 : 1.0;
}

// floor and ceil of a subnormal: -1 or +0, -0 or 1 (a flushed one would give a signed zero).
// Built from a sign mask, not chosen between float constants: lavapipe folds a select
// between -1.0 and 0.0 into -float(bool), which is -0.0 for false.
float nx_floor(float a) {
    uint negative = uint(int(floatBitsToUint(a)) >> 31);
    return nx_is_subnormal(a) ? uintBitsToFloat(negative & 0xBF800000u) : floor(a);
}
float nx_ceil(float a) {
    uint negative = uint(int(floatBitsToUint(a)) >> 31);
    return nx_is_subnormal(a) ? uintBitsToFloat(0x3F800000u ^ (negative & 0xBF800000u)) : ceil(a);
}

// The significand of a finite non-zero magnitude (sign bit clear) as a float in [1, 2), and
// its exponent; subnormals are normalised in integer arithmetic.
float nx_significand(uint magnitude, out int exponent) {
    int biased = int(magnitude >> 23);
    uint mantissa = magnitude & 0x7FFFFFu;
    if (biased == 0) {
        int shift = 23 - findMSB(mantissa);
        mantissa = (mantissa << uint(shift)) & 0x7FFFFFu;
        exponent = -126 - shift;
    } else {
        exponent = biased - 127;
    }
    return uintBitsToFloat(0x3F800000u | mantissa);
}

// x 2^100 for |x| < 2^28, exactly (a subnormal x becomes normal without a flushable
// multiply).
float nx_scale_up(float x) {
    uint bits = floatBitsToUint(x);
    uint magnitude = bits & 0x7FFFFFFFu;
    if (magnitude == 0u) return x;
    int exponent;
    uint mantissa = floatBitsToUint(nx_significand(magnitude, exponent)) & 0x7FFFFFu;
    return uintBitsToFloat((bits & 0x80000000u) | (uint(exponent + 227) << 23) | mantissa);
}

// The exact f64 value of an f32: the driver's conversion flushes subnormals (the H200's gave
// 0), so they are built from their integer mantissa times 2^-149.
double nx_widen(float x) {
    uint bits = floatBitsToUint(x);
    if ((bits & 0x7F800000u) != 0u) return double(x);
    double magnitude = double(bits & 0x7FFFFFu) * 1.401298464324817e-45lf;
    return ((bits >> 31) != 0u) ? -magnitude : magnitude;
}
#else
bool nx_is_zero(T a) { return a == T(0); }
bool nx_equal(T a, T b) { return a == b; }
bool nx_less(T a, T b) { return a < b; }
bool nx_less_equal(T a, T b) { return a <= b; }
bool nx_greater(T a, T b) { return a > b; }
bool nx_greater_equal(T a, T b) { return a >= b; }
// Sign keeps zeros (and NaN) as they are, as Nx does.
T nx_sign(T a) { return (a > T(0)) ? T(1) : ((a < T(0)) ? T(-1) : a); }
#endif

#if IS_FLOAT
// NaN wins; otherwise Erlang's max/min, which return the first operand when the two compare
// equal (so max(-0.0, 0.0) is -0.0).
T nx_min(T a, T b) {
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    return nx_less_equal(a, b) ? a : b;
}
T nx_max(T a, T b) {
    if (isnan(a)) return a;
    if (isnan(b)) return b;
    return nx_greater_equal(a, b) ? a : b;
}

// :erlang.round/1: half away from zero, and a zero result is +0.0 (it passes through an integer).
T nx_round(T a) {
    T truncated = trunc(a);
    if (abs(a - truncated) >= T(0.5)) truncated += sign(a);
    return (truncated == T(0)) ? T(0) : truncated;
}

#if IS_F64
// Exact fmod (the result has the dividend's sign) by long division of the significands.
double nx_fmod(double x, double y) {
    if (isnan(x) || isnan(y) || isinf(x) || y == 0.0lf) return packDouble2x32(uvec2(0u, 0x7ff80000u));
    double ax = abs(x);
    double ay = abs(y);
    if (isinf(y) || ax < ay) return x;
    uvec2 x_words = unpackDouble2x32(ax);
    uvec2 y_words = unpackDouble2x32(ay);
    uint64_t x_bits = (uint64_t(x_words.y) << 32) | uint64_t(x_words.x);
    uint64_t y_bits = (uint64_t(y_words.y) << 32) | uint64_t(y_words.x);
    const uint64_t implicit = 1ul << 52;
    int x_exponent = int(x_bits >> 52);
    int y_exponent = int(y_bits >> 52);
    uint64_t x_mantissa = x_bits & (implicit - 1ul);
    uint64_t y_mantissa = y_bits & (implicit - 1ul);
    if (x_exponent == 0) { x_exponent = 1; while ((x_mantissa & implicit) == 0ul) { x_mantissa <<= 1; x_exponent--; } } else x_mantissa |= implicit;
    if (y_exponent == 0) { y_exponent = 1; while ((y_mantissa & implicit) == 0ul) { y_mantissa <<= 1; y_exponent--; } } else y_mantissa |= implicit;
    for (; x_exponent > y_exponent; x_exponent--) {
        if (x_mantissa >= y_mantissa) x_mantissa -= y_mantissa;
        x_mantissa <<= 1;
    }
    if (x_mantissa >= y_mantissa) x_mantissa -= y_mantissa;
    if (x_mantissa == 0ul) return (x < 0.0lf) ? -0.0lf : 0.0lf;
    while ((x_mantissa & implicit) == 0ul) { x_mantissa <<= 1; x_exponent--; }
    uint64_t result_bits = (x_exponent > 0)
        ? ((x_mantissa - implicit) | (uint64_t(x_exponent) << 52))
        : (x_mantissa >> uint(1 - x_exponent));
    double result = packDouble2x32(uvec2(uint(result_bits), uint(result_bits >> 32)));
    return (x < 0.0lf) ? -result : result;
}
#else
// Exact fmod (the result has the dividend's sign) by long division of the significands.
float nx_fmod(float x, float y) {
    // A NaN constant, not 0/0: without float controls a driver may fold x/x to 1 (the H200 did).
    // Classified and compared as magnitude bits, so subnormal operands stay exact.
    uint x_bits = floatBitsToUint(x) & 0x7FFFFFFFu;
    uint y_bits = floatBitsToUint(y) & 0x7FFFFFFFu;
    if (x_bits >= 0x7F800000u || y_bits > 0x7F800000u || y_bits == 0u) return uintBitsToFloat(0x7fc00000u);
    if (y_bits == 0x7F800000u || x_bits < y_bits) return x;
    const uint implicit = 1u << 23;
    int x_exponent = int(x_bits >> 23);
    int y_exponent = int(y_bits >> 23);
    uint x_mantissa = x_bits & (implicit - 1u);
    uint y_mantissa = y_bits & (implicit - 1u);
    if (x_exponent == 0) { x_exponent = 1; while ((x_mantissa & implicit) == 0u) { x_mantissa <<= 1; x_exponent--; } } else x_mantissa |= implicit;
    if (y_exponent == 0) { y_exponent = 1; while ((y_mantissa & implicit) == 0u) { y_mantissa <<= 1; y_exponent--; } } else y_mantissa |= implicit;
    for (; x_exponent > y_exponent; x_exponent--) {
        if (x_mantissa >= y_mantissa) x_mantissa -= y_mantissa;
        x_mantissa <<= 1;
    }
    if (x_mantissa >= y_mantissa) x_mantissa -= y_mantissa;
    if (x_mantissa == 0u) return uintBitsToFloat(floatBitsToUint(x) & 0x80000000u);
    while ((x_mantissa & implicit) == 0u) { x_mantissa <<= 1; x_exponent--; }
    uint result_bits = (x_exponent > 0)
        ? ((x_mantissa - implicit) | (uint(x_exponent) << 23))
        : (x_mantissa >> uint(1 - x_exponent));
    return uintBitsToFloat(result_bits | (floatBitsToUint(x) & 0x80000000u));
}

// --- f32 transcendentals (f16 and bf16 compute through these too) ---

// The refined helpers (codegen.rs, F64_REFINED_HELPERS) round an f64 result where the kernel
// has the f64 library and was not asked for f32 alone (NXVK_F32_ONLY_MATH); else the f32
// forms below compute them.
#if defined(NX_F64_MATH) && !defined(NXVK_F32_ONLY_MATH)
#define NX_REFINED_VIA_F64 1
#else
#define NX_REFINED_VIA_F64 0
#endif

const float NX_INFINITY = uintBitsToFloat(0x7f800000u);
const float NX_NAN = uintBitsToFloat(0x7fc00000u);
const float NX_LN2 = 0.693147180559945309;
const float NX_PI = 3.14159265358979324;

// exp by Cody-Waite reduction, x = k ln2 + r with |r| <= ln2 / 2 (k = x / ln2 rounded to
// nearest), and a degree-7 Taylor polynomial: about 1 ulp, where drivers' exp may lose 2|x|
// ulp (as Vulkan allows). k is rounded by adding 1.5 * 2^23, whose sum is the integer k
// in its low bits: no floor and no float-to-int conversion, which NVIDIA issues at an
// eighth of the fma rate. Both steps are precise: lavapipe's compiler otherwise folds
// (y + c) - c into y. nx_exp_reduced returns q and e with e^x = 2^e (1 + q), for finite
// |x| <= 103.98, to callers that add the 1 where it costs no accuracy.
float nx_exp_reduced(float x, out int e) {
    precise float shifted = x * 1.44269504088896341 + 12582912.0;
    precise float k = shifted - 12582912.0;
    float r = (x - k * 0.693359375) + k * 2.12194440e-4;
    e = floatBitsToInt(shifted) - 0x4B400000;
    return r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0
        + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
}

float nx_exp(float x) {
    if (isnan(x)) return x;
    if (x > 88.72284) return NX_INFINITY;
    if (x < -103.97208) return 0.0;
    int e;
    float p = 1.0 + nx_exp_reduced(x, e);
    // 2^e in two normal factors, since e runs from -150 to 128.
    int first = e >> 1;
    return p * uintBitsToFloat(uint(first + 127) << 23) * uintBitsToFloat(uint(e - first + 127) << 23);
}

#if !NX_REFINED_VIA_F64
// log(1 + f) for |f| <= sqrt(2) - 1 by the atanh series: with s = f / (2 + f),
// log(1 + f) = 2 atanh(s) = 2s + s R(s^2), R(z) = 2z/3 + 2z^2/5 + ..., and 2s = f - h + s h
// for h = f^2 / 2, so log(1 + f) = f - (h - s (h + R)). The leading f is exact; the division's
// and the series' rounding errors reach only the correction, at most a twentieth of the result.
float nx_log1p_reduced(float f) {
    float s = f / (2.0 + f);
    float z = s * s;
    float series = z * (2.0 / 3.0 + z * (0.4 + z * (2.0 / 7.0 + z * (2.0 / 9.0 + z * (2.0 / 11.0)))));
    float h = 0.5 * f * f;
    return f - (h - s * (h + series));
}

// log: x = 2^e m with m in [sqrt(1/2), sqrt(2)), log x = e ln2 + log(1 + (m - 1)), where
// m - 1 is exact and ln2 is split so that e times its head is exact (accurate near 1, where
// drivers' log has an absolute error bound only).
// Classified from the bits: log of a negative subnormal is NaN, of a positive one finite.
float nx_log(float x) {
    uint bits = floatBitsToUint(x);
    if (bits >= 0x7F800000u && bits <= 0x7FFFFFFFu) return x; // +inf and NaNs
    if ((bits << 1) == 0u) return -NX_INFINITY;
    if ((bits >> 31) != 0u) return NX_NAN;
    int e;
    float m = nx_significand(bits, e);
    if (m > 1.41421356) {
        m *= 0.5;
        e += 1;
    }
    float k = float(e);
    return k * 0.693359375 + (nx_log1p_reduced(m - 1.0) - k * 2.12194440e-4);
}

float nx_expm1(float x) {
    if (isnan(x) || x > 88.72284) return nx_exp(x);
    if (abs(x) < 0.5) {
        return x * (1.0 + x * (0.5 + x * (1.0 / 6.0 + x * (1.0 / 24.0 + x * (1.0 / 120.0
            + x * (1.0 / 720.0 + x * (1.0 / 5040.0 + x * (1.0 / 40320.0 + x / 362880.0))))))));
    }
    if (x < -17.0) return -1.0;
    return nx_exp(x) - 1.0;
}

float nx_log1p(float x) {
    if (isnan(x) || isinf(x)) return nx_log(x + 1.0);
    if (x < -1.0) return NX_NAN;
    if (x == -1.0) return -NX_INFINITY;
    // Below 2^-24 log1p(x) rounds to x; the series' x / (2 + x) would be subnormal (and
    // flushed) for x near the smallest normal.
    if (abs(x) < 5.9604645e-8) return x;
    if (abs(x) < 0.25) return nx_log1p_reduced(x);
    // u's rounding error, (u - 1) - x exactly, divided by u corrects log(u) to first order;
    // precise, since lavapipe's compiler otherwise folds ((1 + x) - 1) - x to 0.
    precise float u = 1.0 + x;
    precise float rounding = (u - 1.0) - x;
    return nx_log(u) - rounding / u;
}

// c0 + u (c1 + u (c2 + ...)), Horner's rule written out (never a loop over an array, which
// NVIDIA's compiler may keep in private memory). Odd functions near 0 are written
// x + x z P(z), z = x^2: the leading x is exact, so the fit's and the evaluation's rounding
// errors reach only the correction.
float nx_poly4(float u, float c0, float c1, float c2, float c3, float c4) {
    return c0 + u * (c1 + u * (c2 + u * (c3 + u * c4)));
}

float nx_poly5(float u, float c0, float c1, float c2, float c3, float c4, float c5) {
    return c0 + u * nx_poly4(u, c1, c2, c3, c4, c5);
}

float nx_poly6(float u, float c0, float c1, float c2, float c3, float c4, float c5, float c6) {
    return c0 + u * nx_poly5(u, c1, c2, c3, c4, c5, c6);
}

float nx_poly7(float u, float c0, float c1, float c2, float c3, float c4, float c5, float c6, float c7) {
    return c0 + u * nx_poly6(u, c1, c2, c3, c4, c5, c6, c7);
}

float nx_poly8(float u, float c0, float c1, float c2, float c3, float c4, float c5, float c6, float c7,
    float c8) {
    return c0 + u * nx_poly7(u, c1, c2, c3, c4, c5, c6, c7, c8);
}

// x + x c0 for |x| < 2^-100, where x may be subnormal and the result normal: classified from
// the bits and scaled by 2^100 exactly (abs() of a subnormal is 0 where the driver flushes,
// the H200), then scaled back.
bool nx_below_2_to_minus_100(float x) { return (floatBitsToUint(x) & 0x7FFFFFFFu) < (27u << 23); }

float nx_tiny_linear(float x, float c0) {
    precise float scaled = nx_scale_up(x);
    precise float tiny = (scaled * c0 + scaled) * 7.888609052210118e-31;
    return tiny;
}

// base + sign atan(x) for x >= 0, where base (0, pi/2 or pi, as a head and a tail) is at
// least every reduction offset. x is reduced around 0, 1/2, 1, 3/2 or infinity to |t| <= 7/16,
// atan(x) = offset + atan(t), the offset in a head and a tail, atan(t) by a fit to 2^-27; the
// heads are summed exactly (Fast2Sum), so the result rounds about once (within an ulp).
float nx_atan_sum(float x, float base_hi, float base_lo, float sign) {
    float hi = 0.0;
    float lo = 0.0;
    float t = x;
    if (x >= 2.4375) {
        hi = 1.57079637;
        lo = -4.37113883e-8;
        t = -1.0 / x;
    } else if (x >= 1.1875) {
        hi = 0.982793748;
        lo = -2.51314241e-8;
        t = (x - 1.5) / (1.0 + 1.5 * x);
    } else if (x >= 0.6875) {
        hi = 0.785398185;
        lo = -2.18556941e-8;
        t = (x - 1.0) / (x + 1.0);
    } else if (x >= 0.4375) {
        hi = 0.463647604;
        lo = 5.01215869e-9;
        t = (2.0 * x - 1.0) / (2.0 + x);
    }
    float z = t * t;
    float atan_t = t + t * z * nx_poly4(z, -0.333333313, 0.199993089, -0.142564103,
        0.106670231, -0.0621227957);
    precise float head = base_hi + sign * hi;
    precise float head_error = (base_hi - head) + sign * hi;
    return head + (head_error + base_lo + sign * (lo + atan_t));
}

float nx_atan(float x) {
    if (isnan(x)) return x;
    float result = nx_atan_sum(abs(x), 0.0, 0.0, 1.0);
    return nx_sign_bit(x) ? -result : result;
}
#endif

// --- correctly rounded f32 division ---
// Vulkan lets f32 division be approximate (NVIDIA's is: the H200 missed the correctly rounded
// quotient by an ulp), but Nx's is IEEE. nx_div is correctly rounded (ties to even) in f32
// arithmetic, whatever the driver's reciprocal within thousands of ulps: one Newton step on
// it, the quotient refined by its exact remainder, then the choice between that candidate and
// its neighbour towards a / b by their exact remainders. Operands outside the window where
// every intermediate is normal and finite (zeros, infinities, NaNs, subnormals, huge or tiny
// ratios) are classified from their bits and divided as significands in [1, 2), then scaled
// and rounded in integer arithmetic: no f64 (1/32 to 1/64 rate on consumer GPUs, absent on
// some), and subnormal inputs are exact where the driver flushes them. f16 and bf16 divide
// here and round once more, which is innocuous for division (24 >= 2p + 2 bits). The proof
// (a host model of this sequence, 10^9 random and structured operand pairs, both remainder
// variants) is tests/division.rs; `precise` keeps the compiler from contracting or regrouping.

// Whether the driver fuses fma(): nxvk-core probes it once per device and sets this
// specialization constant (`nxvk_core::FUSED_FMA_CONSTANT_ID`) in every kernel that declares
// it. lavapipe (Mesa 22) splits fma into a multiply and an add even under NoContraction.
// Declared once per shader, whatever the number of helper blocks (fused kernels include the
// helpers once per compute type, renaming their nx_/NX_ names, which this one avoids).
#ifndef NXVK_FUSED_FMA_DECLARED
#define NXVK_FUSED_FMA_DECLARED
layout(constant_id = 7000) const bool NXVK_FUSED_FMA = false;
#endif

// a - b q, exact when q is within an ulp of a / b and |a| >= 2^-75, |b| >= 2^-100, |q| >=
// 2^-100 (so no partial product is subnormal): one fma where the driver fuses it, else
// Dekker's product with 12-bit halves cut from the bits (no overflow, no flush).
float nx_exact_remainder(float a, float b, float q) {
    if (NXVK_FUSED_FMA) {
        precise float remainder = fma(-b, q, a);
        return remainder;
    }
    float b_head = uintBitsToFloat(floatBitsToUint(b) & 0xFFFFF000u);
    float q_head = uintBitsToFloat(floatBitsToUint(q) & 0xFFFFF000u);
    precise float b_tail = b - b_head;
    precise float q_tail = q - q_head;
    precise float product = b * q;
    precise float product_error = ((b_head * q_head - product) + b_head * q_tail + b_tail * q_head) + b_tail * q_tail;
    precise float remainder = (a - product) - product_error;
    return remainder;
}

// a / b for normal a and b with the exponents nx_div's window allows, and the exact remainder
// a - b q of the returned quotient q.
float nx_div_core(float a, float b, out float remainder) {
    precise float reciprocal_estimate = 1.0 / b;
    precise float reciprocal_error = NXVK_FUSED_FMA
        ? fma(-b, reciprocal_estimate, 1.0) : 1.0 - b * reciprocal_estimate;
    precise float reciprocal = reciprocal_estimate + reciprocal_estimate * reciprocal_error;
    precise float first = a * reciprocal;
    precise float candidate = first + nx_exact_remainder(a, b, first) * reciprocal;
    precise float candidate_remainder = nx_exact_remainder(a, b, candidate);
    uint remainder_bits = floatBitsToUint(candidate_remainder);
    if ((remainder_bits << 1) == 0u) {
        remainder = candidate_remainder;
        return candidate;
    }
    // The candidate is within an ulp of a / b, which lies towards larger magnitudes when the
    // remainder has the dividend's sign.
    uint candidate_bits = floatBitsToUint(candidate);
    bool away_from_zero = ((remainder_bits ^ floatBitsToUint(a)) >> 31) == 0u;
    float neighbour = uintBitsToFloat(away_from_zero ? candidate_bits + 1u : candidate_bits - 1u);
    float neighbour_remainder = nx_exact_remainder(a, b, neighbour);
    // |remainder| = |b| * distance to a / b: the nearer one wins, ties go to the even one.
    // Compared as magnitude bits, which a flushing driver cannot disturb.
    uint remainder_magnitude = remainder_bits & 0x7FFFFFFFu;
    uint neighbour_magnitude = floatBitsToUint(neighbour_remainder) & 0x7FFFFFFFu;
    bool take_neighbour = neighbour_magnitude < remainder_magnitude
        || (neighbour_magnitude == remainder_magnitude && (candidate_bits & 1u) == 1u);
    remainder = take_neighbour ? neighbour_remainder : candidate_remainder;
    return take_neighbour ? neighbour : candidate;
}

// nx_div outside the fast window: special values from the bits, else the quotient of the
// significands, scaled by the exponents' difference; a subnormal result is rounded to
// nearest even in integer arithmetic, the remainder's sign breaking what looks like a tie.
float nx_div_scaled(uint a_bits, uint b_bits) {
    uint sign = (a_bits ^ b_bits) & 0x80000000u;
    uint a_magnitude = a_bits & 0x7FFFFFFFu;
    uint b_magnitude = b_bits & 0x7FFFFFFFu;
    const uint infinity = 0x7F800000u;
    if (a_magnitude > infinity || b_magnitude > infinity) return NX_NAN;
    if (a_magnitude == infinity) return (b_magnitude == infinity) ? NX_NAN : uintBitsToFloat(sign | infinity);
    if (b_magnitude == infinity) return uintBitsToFloat(sign);
    if (b_magnitude == 0u) return (a_magnitude == 0u) ? NX_NAN : uintBitsToFloat(sign | infinity);
    if (a_magnitude == 0u) return uintBitsToFloat(sign);
    int a_exponent;
    int b_exponent;
    float a_significand = nx_significand(a_magnitude, a_exponent);
    float b_significand = nx_significand(b_magnitude, b_exponent);
    float remainder;
    uint quotient_bits = floatBitsToUint(nx_div_core(a_significand, b_significand, remainder));
    int scale = a_exponent - b_exponent;
    int exponent = int(quotient_bits >> 23) - 127 + scale;
    if (exponent > 127) return uintBitsToFloat(sign | infinity);
    if (exponent >= -126) return uintBitsToFloat(sign | (quotient_bits + uint(scale << 23)));
    uint shift = uint(-126 - exponent);
    if (shift >= 25u) return uintBitsToFloat(sign);
    uint significand = (quotient_bits & 0x7FFFFFu) | 0x800000u;
    uint kept = significand >> shift;
    uint dropped = significand & ((1u << shift) - 1u);
    uint halfway = 1u << (shift - 1u);
    uint remainder_bits = floatBitsToUint(remainder);
    bool round_up = dropped > halfway || (dropped == halfway
        && (((remainder_bits << 1) != 0u) ? (remainder_bits >> 31) == 0u : (kept & 1u) == 1u));
    return uintBitsToFloat(sign | (kept + uint(round_up)));
}

float nx_div(float a, float b) {
    uint a_bits = floatBitsToUint(a);
    uint b_bits = floatBitsToUint(b);
    uint a_exponent = (a_bits >> 23) & 0xFFu;
    uint b_exponent = (b_bits >> 23) & 0xFFu;
    // The fast window: |a| in [2^-75, 2^127), |b| in [2^-100, 2^126) and the exponent of
    // a / b within [-100, 126], so that the reciprocal, the quotients, every remainder (at
    // least 2^-122 when not zero) and every partial product of nx_exact_remainder are normal
    // and finite.
    if (a_exponent - 52u < 202u && b_exponent - 27u < 226u && a_exponent - b_exponent + 100u < 227u) {
        float remainder;
        return nx_div_core(a, b, remainder);
    }
    return nx_div_scaled(a_bits, b_bits);
}

// a / b where every element of a row shares b (a row program's sum; nxvk-fusion chooses it):
// a times `reciprocal`, b's f64 reciprocal (`nx_shared_reciprocal`), rounded once, is nx_div's
// correctly rounded quotient wherever that is normal (an inexact quotient of f32s lies at
// least 2^-49 relative from an f32 rounding boundary, the product errs by under 2^-51, and an
// exact one is an f32, which the product rounds back to; tests/division.rs checks this on the
// host). The reciprocal depends on b alone: a row program computes it once per row, outside
// its element loop, so an element costs three operations instead of nx_div's twenty or so.
// Quotients below the smallest normal have fewer bits and can be exact ties, so there the
// rounding is decided exactly: the midpoint between two subnormals times b is exact in f64
// (25 bits times 24) and compares with a. NaNs are nx_div's, so the results are nx_div's bit
// for bit whatever the driver flushes. Needs f64.
double nx_shared_reciprocal(float b) { return 1.0lf / nx_widen(b); }

float nx_div_by_shared(float a, float b, double reciprocal) {
    double quotient = nx_widen(a) * reciprocal;
    if (isnan(quotient)) return NX_NAN;
    // 2^-126, f32's smallest normal.
    if (abs(quotient) >= packDouble2x32(uvec2(0u, 0x38100000u))) return float(quotient);
    // In units of 2^-149, f32's smallest subnormal (2^149 and 2^-149 below).
    double low = floor(abs(quotient) * packDouble2x32(uvec2(0u, 0x49400000u)));
    double midpoint = (low + 0.5lf) * packDouble2x32(uvec2(0u, 0x36A00000u)) * abs(nx_widen(b));
    double magnitude = abs(nx_widen(a));
    uint units = uint(low);
    units += uint(magnitude > midpoint || (magnitude == midpoint && (units & 1u) == 1u));
    return uintBitsToFloat(units | (unpackDouble2x32(quotient).y & 0x80000000u));
}

// Vulkan lets f32 square roots be approximate too; computing in f64 and rounding once is
// exact, since 53 >= 2 * 24 + 2 bits.
float nx_sqrt(float x) { return float(sqrt(nx_widen(x))); }
float nx_rsqrt(float x) { return float(1.0lf / sqrt(nx_widen(x))); }

#if !NX_REFINED_VIA_F64
// The driver's reciprocal refined by one Newton step where fma is fused (the H200's quotient
// made sigmoid 3 ulps, against 2 on lavapipe); the denominator is kept finite so that the
// step never meets infinity times zero.
float nx_sigmoid(float x) {
    if (isnan(x)) return x;
    float denominator = min(1.0 + nx_exp(-x), 3.40282347e38);
    float reciprocal = 1.0 / denominator;
    if (NXVK_FUSED_FMA) reciprocal = fma(reciprocal, fma(-denominator, reciprocal, 1.0), reciprocal);
    return reciprocal;
}

float nx_tanh(float x) {
    if (isnan(x)) return x;
    float ax = abs(x);
    // tanh(x) rounds to x below 2^-13 (subnormals included, whatever the driver does).
    if (ax < 1.2207031e-4) return x;
    // Below 0.625 a fit to 2^-27; above, 1 - 2 / (e^2|x| + 1) is at least 1/2, so the
    // quotient's rounding error counts at most half; from 9.01 it rounds to 1.
    float result = 1.0;
    if (ax < 0.625) {
        result = ax + ax * (ax * ax) * nx_poly5(ax * ax, -0.333333343, 0.133333027, -0.0539591163,
            0.0217678975, -0.00834098738, 0.00228973804);
    } else if (ax < 9.01) {
        result = 1.0 - 2.0 / (nx_exp(2.0 * ax) + 1.0);
    }
    return nx_sign_bit(x) ? -result : result;
}
#endif

// e^x / 2 for x >= 88 without overflowing on the way: x - 0.693359375 is exact there (both
// are multiples of 2^-17), and e^(ln 2 - 0.693359375) = 1.000212217 restores the rest.
// ((e^(x/2) / 2) e^(x/2) overflowed on the H200, whose compiler regrouped the product.)
float nx_exp_half_large(float x) {
    return nx_exp(x - 0.693359375) * 1.00021221696;
}

#if !NX_REFINED_VIA_F64
float nx_sinh(float x) {
    float ax = abs(x);
    // sinh(x) rounds to x below 2^-12 (subnormals included).
    if (ax < 2.4414062e-4) return x;
    float result;
    if (ax < 1.0) {
        // A fit to 2^-27 (expm1's error would count twice here).
        result = ax + ax * (ax * ax) * nx_poly4(ax * ax, 0.166666672, 0.00833333377, 0.000198412818,
            2.755379e-06, 2.54557389e-08);
    } else if (ax < 88.0) {
        // e^|x| = 2^e (1 + q) with 2^e exact: 2^e + (2^e q - e^-|x|) rounds about once.
        int e;
        float q = nx_exp_reduced(ax, e);
        float scale = uintBitsToFloat(uint(e + 127) << 23);
        result = 0.5 * (scale + (scale * q - 1.0 / (scale + scale * q)));
    } else {
        result = nx_exp_half_large(ax);
    }
    return nx_sign_bit(x) ? -result : result;
}
#endif

float nx_cosh(float x) {
    float ax = abs(x);
    if (ax < 88.0) {
        float e = nx_exp(ax);
        return 0.5 * (e + 1.0 / e);
    }
    return nx_exp_half_large(ax);
}

#if !NX_REFINED_VIA_F64
float nx_asinh(float x) {
    if (isnan(x) || isinf(x)) return x;
    float ax = abs(x);
    // asinh(x) rounds to x below 2^-12 (subnormals included).
    if (ax < 2.4414062e-4) return x;
    float result = (ax > 1.0e8)
        ? nx_log(ax) + NX_LN2
        : nx_log1p(ax + ax * ax / (1.0 + sqrt(1.0 + ax * ax)));
    return nx_sign_bit(x) ? -result : result;
}

float nx_acosh(float x) {
    if (isnan(x)) return x;
    if (x < 1.0) return NX_NAN;
    if (x > 1.0e8) return nx_log(x) + NX_LN2;
    float t = x - 1.0;
    return nx_log1p(t + sqrt(2.0 * t + t * t));
}

float nx_atanh(float x) {
    float ax = abs(x);
    if (isnan(x)) return x;
    if (ax > 1.0) return NX_NAN;
    // atanh(x) rounds to x below 2^-13 (subnormals included).
    if (ax < 1.2207031e-4) return x;
    // nx_div, not `/`: NVIDIA's quotient may be an ulp off (atanh measured 3 ulps on the
    // H200, 2 on lavapipe).
    float result = (ax == 1.0) ? NX_INFINITY : 0.5 * nx_log1p(nx_div(2.0 * ax, 1.0 - ax));
    return nx_sign_bit(x) ? -result : result;
}

// C99 atan2, special cases included (GLSL leaves zeros and infinities undefined).
// Zeros and signs come from the bits, and when one operand is below 2^-100 and neither
// reaches 2^27 both are scaled by 2^100 exactly (atan2 depends on their ratio only), so
// subnormals keep their values. (Against a larger operand a subnormal's ratio is itself
// subnormal.)
float nx_atan2(float y, float x) {
    if (isnan(x) || isnan(y)) return x + y;
    uint x_magnitude = floatBitsToUint(x) & 0x7FFFFFFFu;
    uint y_magnitude = floatBitsToUint(y) & 0x7FFFFFFFu;
    if (min(x_magnitude, y_magnitude) < (27u << 23) && max(x_magnitude, y_magnitude) < (154u << 23)) {
        x = nx_scale_up(x);
        y = nx_scale_up(y);
    }
    float result;
    if (nx_is_zero(y)) {
        result = nx_sign_bit(x) ? NX_PI : 0.0;
    } else if (isinf(x) && isinf(y)) {
        result = nx_sign_bit(x) ? 0.75 * NX_PI : 0.25 * NX_PI;
    } else if (isinf(x)) {
        result = nx_sign_bit(x) ? NX_PI : 0.0;
    } else if (isinf(y) || nx_is_zero(x)) {
        result = 0.5 * NX_PI;
    } else {
        float ax = abs(x);
        float ay = abs(y);
        // nx_div, not `/`: NVIDIA divides through a reciprocal, which for a divisor above
        // 2^126 is subnormal and flushed (atan2(FLT_MAX, FLT_MAX) gave 0 on the H200).
        // atan of the ratio below 1, then pi/2 - atan for ay > ax and pi - atan for x < 0.
        bool steep = ay > ax;
        float ratio = steep ? nx_div(ax, ay) : nx_div(ay, ax);
        bool negative_x = nx_sign_bit(x);
        float base_hi = steep ? 1.57079637 : (negative_x ? 3.14159274 : 0.0);
        float base_lo = steep ? -4.37113883e-8 : (negative_x ? -8.74227766e-8 : 0.0);
        result = nx_atan_sum(ratio, base_hi, base_lo, (steep == negative_x) ? 1.0 : -1.0);
    }
    return nx_sign_bit(y) ? -result : result;
}

// asin(t) - t for |t| <= 1/2, a fit to 2^-28.
float nx_asin_correction(float t, float z) {
    return t * z * nx_poly5(z, 0.166666657, 0.0750009418, 0.0445994735, 0.0310998391,
        0.0171530005, 0.0336848311);
}

// Above 1/2, asin(x) = pi/2 - 2 asin(w) and acos(x) = 2 asin(w) for w = sqrt((1 - x) / 2),
// where (1 - x) / 2 is exact; pi/2 and pi are a head and a tail. Up to x = 0.923, pi/4 - 2w
// is exact (Sterbenz) and pi/2 - 2w is summed as pi/4 + (pi/4 - 2w), which halves what the
// sqrt's rounding costs near x = 1/2.
float nx_asin(float x) {
    if (isnan(x) || abs(x) > 1.0) return NX_NAN;
    float ax = abs(x);
    float result;
    if (ax < 0.5) {
        result = ax + nx_asin_correction(ax, ax * ax);
    } else {
        float z = (1.0 - ax) * 0.5;
        float w = sqrt(z);
        float correction = nx_asin_correction(w, z);
        if (ax < 0.923) {
            // precise: lavapipe's compiler otherwise regroups the sums.
            precise float near_half = 0.785398185 + ((0.785398185 - 2.0 * w)
                + (-4.37113883e-8 - 2.0 * correction));
            result = near_half;
        } else {
            result = 1.57079637 - (2.0 * (w + correction) + 4.37113883e-8);
        }
    }
    return nx_sign_bit(x) ? -result : result;
}

float nx_acos(float x) {
    if (isnan(x) || abs(x) > 1.0) return NX_NAN;
    if (abs(x) < 0.5) return 1.57079637 - (x - (-4.37113883e-8 - nx_asin_correction(x, x * x)));
    float z = (1.0 - abs(x)) * 0.5;
    float w = sqrt(z);
    float twice_asin_w = 2.0 * (w + nx_asin_correction(w, z));
    return nx_sign_bit(x) ? 3.14159274 - (twice_asin_w + 8.74227766e-8) : twice_asin_w;
}
#endif

#if !NX_REFINED_VIA_F64
// erf(x) = x + x q(x^2) for |x| < 0.875 (q small, so its rounding errors are damped).
float nx_erf_small(float x) {
    float s = x * x;
    float q = nx_poly6(s, 0.12837917, -0.3761263, 0.11283623, -0.026855359, 0.0051908954,
        -0.00080253603, 7.8602905e-05);
    return x * q + x;
}

// For z in [0.5, 10.06): erfc(z) = result * 2^n and exp(-z^2) ~= e * 2^n. erfc(z) exp(z^2)
// is a polynomial in u = z - c on six intervals; c makes z - c exact and leaves the constant
// term c0 within 2^-35 (relative) of its true value. The sum c0 + u s is kept as ghi + glo, and
// exp(-z^2) is applied as ghi + ghi (exp(w) - 1), so every rounded term is a small fraction
// of the result (tools/f32_erf_fits.py fits the coefficients).
float nx_erfc_core(float z, out float n, out float e) {
    float u, s, c0;
    if (z < 1.0) {
        u = z - 0.74997383;
        s = nx_poly7(u, -0.36798477, 0.23096833, -0.12984401, 0.066794835, -0.03186554, 0.014280378,
            -0.006442006, 0.0025816609);
        c0 = 0.5069473;
    } else if (z < 1.6) {
        u = z - 1.2999531;
        s = nx_poly7(u, -0.19851756, 0.09958845, -0.04603882, 0.019870857, -0.008067472,
            0.0031126344, -0.0012655368, 0.00046505092);
        c0 = 0.35765198;
    } else if (z < 2.6) {
        u = z - 2.0994344;
        s = nx_poly7(u, -0.098921254, 0.037496384, -0.013466743, 0.0046119383, -0.001512741,
            0.00047797765, -0.0001519971, 4.431332e-05);
        c0 = 0.24517506;
    } else if (z < 4.5) {
        u = z - 3.5494993;
        s = nx_poly8(u, -0.040287476, 0.010273596, -0.0025475845, 0.000615527, -0.0001450856,
            3.334535e-05, -7.5901967e-06, 1.8275255e-06, -3.6588492e-07);
        c0 = 0.15327397;
    } else if (z < 7.0) {
        u = z - 5.7489595;
        s = nx_poly8(u, -0.016348891, 0.0027266745, -0.00044889763, 7.298643e-05, -1.1727173e-05,
            1.8576599e-06, -2.8961483e-07, 4.900917e-08, -7.999763e-09);
        c0 = 0.096715786;
    } else {
        u = z - 8.532653;
        s = nx_poly8(u, -0.0075947805, 0.0008725727, -9.961326e-05, 1.13010165e-05, -1.2750651e-06,
            1.4277029e-07, -1.5477175e-08, 1.8393295e-09, -2.773455e-10);
        c0 = 0.0656762;
    }
    precise float t = u * s;
    precise float ghi = c0 + t;
    precise float glo = (c0 - ghi) + t;              // |c0| > |t|: exact low part
    // -z^2 = -n ln2 + v: z = h + dz with h of 12 bits, so h*h, 2h*dz and dz*dz are exact,
    // and with a 16-bit ln2_hi so is r = -(h*h + n ln2_hi); w + dw = v.
    float h = uintBitsToFloat(floatBitsToUint(z) & 0xFFFFF000u);
    precise float dz = z - h;
    precise float hh = h * h;
    // w in [-0.28, 0.42]: balances the rounding of ghi w against the result.
    n = roundEven(z * z * -1.44269502 - 0.1);
    precise float r = -(hh + n * 0.693145751953125);
    precise float a = (h + h) * dz + (dz * dz + n * 1.42860677e-06);
    precise float w = r - a;
    precise float dw = (r - w) - a;
    float p = nx_poly5(w, 0.5, 0.16666672, 0.041666605, 0.008331678, 0.0013915278, 0.00021162914);
    float q = w * w * p + dw;                        // exp(w + dw) - 1 - w
    e = 1.0 + (w + q);
    return ghi + (ghi * w + (ghi * q + glo));
}

float nx_erfc_positive(float z) {
    if (z < 0.5) return 1.0 - nx_erf_small(z);       // erfc > 0.479: the subtraction loses nothing
    if (z >= 10.06) return 0.0;                      // erfc(10.06) rounds to 0
    float n, e;
    float r = nx_erfc_core(z, n, e);
    // 2^n may be subnormal (n >= -146): the first product is exact, only the second rounds.
    precise float scaled = r * uintBitsToFloat(uint(int(n) + 191) << 23);
    precise float result = scaled * 5.421010862427522e-20;  // 2^-64
    return result;
}

float nx_erfc(float x) {
    if (isnan(x)) return x;
    float positive = nx_erfc_positive(abs(x));
    return (x >= 0.0) ? positive : 2.0 - positive;
}

float nx_erf(float x) {
    if (isnan(x)) return x;
    if (nx_below_2_to_minus_100(x)) return nx_tiny_linear(x, 0.12837917);
    float ax = abs(x);
    float result;
    if (ax < 0.875) {
        result = nx_erf_small(ax);
    } else if (ax >= 4.0) {
        result = 1.0;                                // erfc(4) < 2^-25
    } else {
        result = 1.0 - nx_erfc_positive(ax);         // erfc < 0.22: its error shrinks 4x or more
    }
    return nx_sign_bit(x) ? -result : result;
}

// |x| <= 0.5625: erf_inv(x) = x + x p(x^2). Beyond, where a log-based formula would inherit
// the log's error, a rough guess from t = sqrt(-log(1 - |x|)) is corrected by one Newton step
// on erfc(r) = 1 - |x| (exact) with its second-order term; erfc is well conditioned there.
float nx_erf_inv(float x) {
    if (isnan(x)) return x;
    float ax = abs(x);
    if (ax > 1.0) return NX_NAN;
    if (ax == 1.0) return nx_sign_bit(x) ? -NX_INFINITY : NX_INFINITY;
    if (nx_below_2_to_minus_100(x)) return nx_tiny_linear(x, -0.11377308);
    float r;
    if (ax <= 0.5625) {
        float s = ax * ax;
        float p = nx_poly7(s, -0.11377308, 0.2320147, 0.12750103, 0.08766216, 0.054187354,
            0.106626436, -0.10231655, 0.20652711);
        r = ax * p + ax;
    } else {
        float q = 1.0 - ax;
        float t = sqrt(-nx_log(q));
        float r0 = nx_poly5(t, -0.14760812, 0.47349468, 0.45535344, -0.17441697, 0.032415494,
            -0.0023596908);
        r0 = clamp(r0, 0.5, 4.5);                    // guess is within 3e-4 relative
        float n, e;
        float c = nx_erfc_core(r0, n, e);
        float d = c - q * uintBitsToFloat(uint(127 - int(n)) << 23);   // (erfc(r0) - q) 2^-n, exact
        float k = 0.886226925 * d / e;               // Newton step; its rounding hardly matters
        r = r0 + (r0 * k * k + k);
    }
    return nx_sign_bit(x) ? -r : r;
}
#endif

#ifdef NX_F64_MATH
// --- f32 helpers that round an f64 result once ---
// sin, cos and tan: drivers' sin is an absolute-error approximation (the H200's missed
// sin(-56) by 5e-6), and an f32 Cody-Waite reduction fails past |x| of about 1e6; the f64
// ones (glsl_f64_math.glsl) reduce large |x| by Payne-Hanek.
float nx_sin(float x) { return float(nx_sin_f64(nx_widen(x))); }
float nx_cos(float x) { return float(nx_cos_f64(nx_widen(x))); }
float nx_tan(float x) { return float(nx_tan_f64(nx_widen(x))); }
// C99 pow: the driver's is exp2(y log2 x), whose error grows with |y log2 x| (58 ulp measured
// on lavapipe).
float nx_pow(float x, float y) { return float(nx_pow_f64(nx_widen(x), nx_widen(y))); }
// cbrt: the driver's log2 flushes subnormal inputs.
float nx_cbrt(float x) { return float(nx_cbrt_f64(nx_widen(x))); }
#endif

#if NX_REFINED_VIA_F64
// The refined helpers (codegen.rs, F64_REFINED_HELPERS): f32 kernels take these where the
// f32_math_via_f64 knob is on (kernel_knob.rs), 1 ulp where the f32 forms above reach 3 to 7
// (an f64 value within about 2^-40 of the true one rounds to the f32 nearest it unless that
// is within about 2^-16 ulp of a halfway point). An f32 result needs no more, so the exp and
// log families are evaluated here by short f64 polynomials rather than through the f64
// library, whose double-double steps and degree-20 series a fused kernel would inline per
// call (lavapipe built a kernel of 50 library sigmoids in 7.4 s, of 500 in over 120; 0.7 and
// 6.5 s with these); the others round the library's functions.

// (e^x - 1 - x) / x^2 by Taylor to x^11 (so e^x and e^x - 1 to x^13), for |x| <= 1/2:
// truncation below 2^-50 relative.
double nx_exp_tail_for_f32(double x) {
    double p = 1.0lf / 6227020800.0lf;
    p = p * x + 1.0lf / 479001600.0lf;
    p = p * x + 1.0lf / 39916800.0lf;
    p = p * x + 1.0lf / 3628800.0lf;
    p = p * x + 1.0lf / 362880.0lf;
    p = p * x + 1.0lf / 40320.0lf;
    p = p * x + 1.0lf / 5040.0lf;
    p = p * x + 1.0lf / 720.0lf;
    p = p * x + 1.0lf / 120.0lf;
    p = p * x + 1.0lf / 24.0lf;
    p = p * x + 1.0lf / 6.0lf;
    return p * x + 0.5lf;
}

// e^x for an f32 x: x = k ln2 + r with |r| <= ln2 / 2; results beyond f32's range saturate.
double nx_exp_for_f32(double x) {
    if (x > 120.0lf) return nx_infinity_f64();
    if (x < -120.0lf) return 0.0lf;
    double k = round(x * NX_INV_LN2);
    double r = (x - k * NX_LN2_HEAD32) - k * NX_LN2_TAIL32;
    return (1.0lf + (r + r * r * nx_exp_tail_for_f32(r))) * nx_pow2_f64(int(k));
}

// e^x - 1 for an f32 x: by the series below 1/2 (no cancellation), else from e^x, which is
// then at least 1.6 times the result.
double nx_expm1_for_f32(double x) {
    if (abs(x) >= 0.5lf) return nx_exp_for_f32(x) - 1.0lf;
    return x + x * x * nx_exp_tail_for_f32(x);
}

// 2 atanh(s) = log((1 + s) / (1 - s)) for |s| <= 0.172, by its odd series to s^17.
double nx_log_series_for_f32(double s) {
    double z = s * s;
    double p = 1.0lf / 17.0lf;
    p = p * z + 1.0lf / 15.0lf;
    p = p * z + 1.0lf / 13.0lf;
    p = p * z + 1.0lf / 11.0lf;
    p = p * z + 1.0lf / 9.0lf;
    p = p * z + 1.0lf / 7.0lf;
    p = p * z + 1.0lf / 5.0lf;
    p = p * z + 1.0lf / 3.0lf;
    return 2.0lf * s + 2.0lf * s * z * p;
}

// log x for a finite x > 0 that is a widened f32 (so a normal f64): x = 2^e m with m in
// [sqrt(1/2), sqrt(2)), log m by the series.
double nx_log_for_f32(double x) {
    uvec2 words = unpackDouble2x32(x);
    int e = int(words.y >> 20) - 1023;
    double m = packDouble2x32(uvec2(words.x, (words.y & 0x000FFFFFu) | 0x3FF00000u));
    if (m > 1.4142135623730951lf) {
        m *= 0.5lf;
        e += 1;
    }
    return double(e) * 0.6931471805599453lf + nx_log_series_for_f32((m - 1.0lf) / (m + 1.0lf));
}

// log(1 + x) for x > -1: the series of x / (2 + x) below 1/4, else the log of 1 + x (whose
// rounding in f64 moves a result of magnitude 0.28 or more by under 2^-51 relative).
double nx_log1p_for_f32(double x) {
    if (abs(x) < 0.25lf) return nx_log_series_for_f32(x / (2.0lf + x));
    return nx_log_for_f32(1.0lf + x);
}

float nx_sigmoid(float x) {
    if (isnan(x)) return x;
    return float(1.0lf / (1.0lf + nx_exp_for_f32(-nx_widen(x))));
}

float nx_expm1(float x) {
    if (isnan(x)) return x;
    return float(nx_expm1_for_f32(nx_widen(x)));
}

float nx_tanh(float x) {
    if (isnan(x)) return x;
    double ax = abs(nx_widen(x));
    double e = nx_expm1_for_f32(2.0lf * min(ax, 20.0lf));
    float result = float(e / (e + 2.0lf));
    return nx_sign_bit(x) ? -result : result;
}

float nx_sinh(float x) {
    if (isnan(x)) return x;
    double ax = abs(nx_widen(x));
    double result;
    if (ax < 0.5lf) {
        double e = nx_expm1_for_f32(ax);
        result = 0.5lf * (e + e / (e + 1.0lf));
    } else {
        double e = nx_exp_for_f32(ax);
        result = 0.5lf * (e - 1.0lf / e);
    }
    return nx_sign_bit(x) ? -float(result) : float(result);
}

// Special values from the bits, as nx_log's f32 form does: log of a negative subnormal is NaN.
float nx_log(float x) {
    uint bits = floatBitsToUint(x);
    if (bits >= 0x7F800000u && bits <= 0x7FFFFFFFu) return x; // +inf and NaNs
    if ((bits << 1) == 0u) return -NX_INFINITY;
    if ((bits >> 31) != 0u) return NX_NAN;
    return float(nx_log_for_f32(nx_widen(x)));
}

float nx_log1p(float x) {
    if (isnan(x) || isinf(x)) return nx_log(x + 1.0);
    if (x < -1.0) return NX_NAN;
    if (x == -1.0) return -NX_INFINITY;
    return float(nx_log1p_for_f32(nx_widen(x)));
}

// asinh, acosh and atanh by their f64 formulas over the series above (x^2 of an f32 is exact
// in f64); above 2^26, asinh(x) and acosh(x) are log(2x) to f64 precision.
float nx_asinh(float x) {
    if (isnan(x) || isinf(x)) return x;
    double ax = abs(nx_widen(x));
    double result = (ax > 67108864.0lf)
        ? nx_log_for_f32(ax) + 0.6931471805599453lf
        : nx_log1p_for_f32(ax + ax * ax / (1.0lf + sqrt(1.0lf + ax * ax)));
    return nx_sign_bit(x) ? -float(result) : float(result);
}

float nx_acosh(float x) {
    if (isnan(x)) return x;
    if (x < 1.0) return NX_NAN;
    if (isinf(x)) return x;
    double wide = nx_widen(x);
    if (wide > 67108864.0lf) return float(nx_log_for_f32(wide) + 0.6931471805599453lf);
    double t = wide - 1.0lf;
    return float(nx_log1p_for_f32(t + sqrt(2.0lf * t + t * t)));
}

float nx_atanh(float x) {
    if (isnan(x)) return x;
    double ax = abs(nx_widen(x));
    if (ax > 1.0lf) return NX_NAN;
    float result = (ax == 1.0lf) ? NX_INFINITY : float(0.5lf * nx_log1p_for_f32(2.0lf * ax / (1.0lf - ax)));
    return nx_sign_bit(x) ? -result : result;
}

float nx_asin(float x) { return float(nx_asin_f64(nx_widen(x))); }
float nx_acos(float x) { return float(nx_acos_f64(nx_widen(x))); }
float nx_atan(float x) { return float(nx_atan_f64(nx_widen(x))); }
float nx_atan2(float y, float x) { return float(nx_atan2_f64(nx_widen(y), nx_widen(x))); }
float nx_erf(float x) { return float(nx_erf_f64(nx_widen(x))); }
float nx_erfc(float x) { return float(nx_erfc_f64(nx_widen(x))); }
float nx_erf_inv(float x) { return float(nx_erf_inv_f64(nx_widen(x))); }
#endif

#endif
#endif

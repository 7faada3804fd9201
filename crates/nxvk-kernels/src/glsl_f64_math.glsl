// f64 transcendentals (DESIGN.md decision 7): GLSL.std.450's exp, log, sin, pow, ... are 32-bit
// only, and f64 is never computed in f32. Each function is range reduction plus a polynomial,
// with double-double (head, tail) arithmetic where a rounding would cost more than an ulp.
// Polynomials are Taylor series where they converge fast enough, otherwise least-squares fits
// on Chebyshev nodes computed in 60-digit arithmetic (crates/nxvk-kernels/tools/f64_fits.py
// regenerates them and prints each fit's error). The measured ulp bounds against the CPU's
// libm are in docs/CAPABILITIES.md (`cargo run -p nxvk-kernels --example ulp`).
//
// Polynomials are written out as one statement per coefficient, never a loop over a constant
// array: some drivers copy such an array into every invocation's private memory.
//
// `precise` keeps error-free transformations (two_sum, two_prod) from being fused into FMAs
// or regrouped, which would silently drop their error terms. Included (with NX_F64_MATH
// defined) only in the kernels that call it: f64 transcendentals and the f32 helpers that
// round an f64 result (codegen.rs, F64_ROUNDED_HELPERS).

// --- double-double arithmetic: a dvec2 (head, tail) stands for head + tail ---

dvec2 nx_two_sum(double a, double b) {
    precise double sum = a + b;
    precise double b_part = sum - a;
    precise double error = (a - (sum - b_part)) + (b - b_part);
    return dvec2(sum, error);
}

// Requires |a| >= |b| (or a == 0).
dvec2 nx_fast_two_sum(double a, double b) {
    precise double sum = a + b;
    precise double error = b - (sum - a);
    return dvec2(sum, error);
}

// Veltkamp's split into two 26-bit halves (|a| below 2^995).
dvec2 nx_split(double a) {
    precise double scaled = 134217729.0lf * a;
    precise double head = scaled - (scaled - a);
    precise double tail = a - head;
    return dvec2(head, tail);
}

// Whether the driver fuses f64 fma(): nxvk-core probes it once per device and sets this
// specialization constant (`nxvk_core::FUSED_FMA_F64_CONSTANT_ID`) in every kernel that
// declares it. Declared once per shader, like NXVK_FUSED_FMA in glsl_helpers.glsl.
#ifndef NXVK_FUSED_FMA_F64_DECLARED
#define NXVK_FUSED_FMA_F64_DECLARED
layout(constant_id = 7001) const bool NXVK_FUSED_FMA_F64 = false;
#endif

// The exact product: head + tail == a * b. One fma where the driver fuses it (two operations
// instead of seventeen), else Dekker's product of Veltkamp halves.
dvec2 nx_two_prod(double a, double b) {
    precise double product = a * b;
    if (NXVK_FUSED_FMA_F64) {
        precise double product_error = fma(a, b, -product);
        return dvec2(product, product_error);
    }
    dvec2 x = nx_split(a);
    dvec2 y = nx_split(b);
    precise double error = (((x.x * y.x - product) + x.x * y.y) + x.y * y.x) + x.y * y.y;
    return dvec2(product, error);
}

dvec2 nx_dd_add(dvec2 a, dvec2 b) {
    dvec2 sum = nx_two_sum(a.x, b.x);
    precise double tail = sum.y + (a.y + b.y);
    return nx_fast_two_sum(sum.x, tail);
}

dvec2 nx_dd_mul(dvec2 a, dvec2 b) {
    dvec2 product = nx_two_prod(a.x, b.x);
    precise double tail = product.y + (a.x * b.y + a.y * b.x);
    return nx_fast_two_sum(product.x, tail);
}

dvec2 nx_dd_mul_double(dvec2 a, double b) {
    dvec2 product = nx_two_prod(a.x, b);
    precise double tail = product.y + a.y * b;
    return nx_fast_two_sum(product.x, tail);
}

// (n.x + n.y) / (d.x + d.y) rounded once, with one correction step.
double nx_dd_div(dvec2 n, dvec2 d) {
    double denominator = d.x + d.y;
    double quotient = (n.x + n.y) / denominator;
    dvec2 product = nx_two_prod(quotient, d.x);
    precise double residual = (((n.x - product.x) - product.y) + n.y) - quotient * d.y;
    return quotient + residual / denominator;
}

// --- constants (heads and tails computed in 80-digit arithmetic) ---

const dvec2 NX_LN2_DD = dvec2(0.6931471805599453lf, 2.3190468138462996e-17lf);
const dvec2 NX_PI_DD = dvec2(3.141592653589793lf, 1.2246467991473532e-16lf);
const dvec2 NX_HALF_PI_DD = dvec2(1.5707963267948966lf, 6.123233995736766e-17lf);
const dvec2 NX_QUARTER_PI_DD = dvec2(0.7853981633974483lf, 3.061616997868383e-17lf);
const dvec2 NX_ATAN_HALF_DD = dvec2(0.4636476090008061lf, 2.2698777452961687e-17lf);
const dvec2 NX_ATAN_THREE_HALVES_DD = dvec2(0.982793723247329lf, 1.3903311031230998e-17lf);
const dvec2 NX_TWO_THIRDS_DD = dvec2(0.6666666666666666lf, 3.700743415417188e-17lf);
const double NX_INV_LN2 = 1.4426950408889634lf;
const double NX_TWO_OVER_SQRT_PI = 1.1283791670955126lf;
// ln 2 as a 32-bit head (k * head is exact for |k| < 2^21) and a tail, for exp's reduction.
const double NX_LN2_HEAD32 = 0.6931471803691238lf;
const double NX_LN2_TAIL32 = 1.9082149292705877e-10lf;
// pi / 2 in four 33-bit pieces: k * piece is exact for |k| < 2^20.
const double NX_HALF_PI_PIECE1 = 1.5707963267341256lf;
const double NX_HALF_PI_PIECE2 = 6.077100506303966e-11lf;
const double NX_HALF_PI_PIECE3 = 2.0222662487111665e-21lf;
const double NX_HALF_PI_PIECE4 = 8.478427660348229e-32lf;

double nx_infinity_f64() { return packDouble2x32(uvec2(0u, 0x7ff00000u)); }
double nx_nan_f64() { return packDouble2x32(uvec2(0u, 0x7ff80000u)); }
bool nx_sign_bit_f64(double x) { return (unpackDouble2x32(x).y >> 31) != 0u; }

// 2^exponent for exponent in [-1022, 1023].
double nx_pow2_f64(int exponent) { return packDouble2x32(uvec2(0u, uint(exponent + 1023) << 20)); }

// value * 2^exponent for exponent in [-2044, 2046], in two exact steps so that neither factor
// overflows and a subnormal result is rounded once.
double nx_scale_f64(double value, int exponent) {
    int first = exponent / 2;
    precise double partial = value * nx_pow2_f64(first);
    precise double scaled = partial * nx_pow2_f64(exponent - first);
    return scaled;
}

// --- exp, expm1 ---


// e^r - 1 - r by its Taylor series to r^20: the error of e^r - 1 is below 2^-60 relative for
// |r| <= 0.7. Keeping r apart lets callers add it exactly.
double nx_expm1_taylor_tail_f64(double r) {
    double p = 1.0lf / 2432902008176640000.0lf;
    p = p * r + 1.0lf / 121645100408832000.0lf;
    p = p * r + 1.0lf / 6402373705728000.0lf;
    p = p * r + 1.0lf / 355687428096000.0lf;
    p = p * r + 1.0lf / 20922789888000.0lf;
    p = p * r + 1.0lf / 1307674368000.0lf;
    p = p * r + 1.0lf / 87178291200.0lf;
    p = p * r + 1.0lf / 6227020800.0lf;
    p = p * r + 1.0lf / 479001600.0lf;
    p = p * r + 1.0lf / 39916800.0lf;
    p = p * r + 1.0lf / 3628800.0lf;
    p = p * r + 1.0lf / 362880.0lf;
    p = p * r + 1.0lf / 40320.0lf;
    p = p * r + 1.0lf / 5040.0lf;
    p = p * r + 1.0lf / 720.0lf;
    p = p * r + 1.0lf / 120.0lf;
    p = p * r + 1.0lf / 24.0lf;
    p = p * r + 1.0lf / 6.0lf;
    p = p * r + 1.0lf / 2.0lf;
    return r * r * p;
}

double nx_expm1_taylor_f64(double r) {
    precise double result = r + nx_expm1_taylor_tail_f64(r);
    return result;
}

// e^(head + tail) = 2^k (v.x + v.y) for v returned here: x = k ln2 + r with |r| <= ln2 / 2
// carried as a double-double, then e^r = (1 + r) + (Taylor tail + r_tail e^r) with 1 + r
// exact (two_sum). For finite head within [-745.2, 709.8].
dvec2 nx_exp_reduced_f64(double head, double tail, out int k) {
    double multiple = round(head * NX_INV_LN2);
    precise double reduced = head - multiple * NX_LN2_HEAD32;
    dvec2 r = nx_two_sum(reduced, tail - multiple * NX_LN2_TAIL32);
    double series_tail = nx_expm1_taylor_tail_f64(r.x);
    dvec2 one_plus_r = nx_two_sum(1.0lf, r.x);
    precise double rest = one_plus_r.y + (series_tail + r.y * (1.0lf + r.x + series_tail));
    k = int(multiple);
    return dvec2(one_plus_r.x, rest);
}

// e^(head + tail), rounded about once, then scaled exactly by 2^k.
double nx_exp_dd_f64(double head, double tail) {
    if (isnan(head)) return head;
    if (head > 709.8lf) return nx_infinity_f64();
    if (head < -745.2lf) return 0.0lf;
    int k;
    dvec2 value = nx_exp_reduced_f64(head, tail, k);
    precise double rounded = value.x + value.y;
    return nx_scale_f64(rounded, k);
}

double nx_exp_f64(double x) { return nx_exp_dd_f64(x, 0.0lf); }

// e^x / 2 = e^(x - ln2) near the overflow threshold, where e^x itself would overflow.
double nx_half_exp_f64(double x) {
    dvec2 shifted = nx_two_sum(x, -NX_LN2_DD.x);
    return nx_exp_dd_f64(shifted.x, shifted.y - NX_LN2_DD.y);
}

double nx_expm1_f64(double x) {
    if (isnan(x) || x == 0.0lf) return x;
    if (x > 709.0lf) return nx_exp_f64(x);
    if (x < -38.0lf) return -1.0lf;
    if (abs(x) < 0.7lf) return nx_expm1_taylor_f64(x);
    // 2^k (1 + expm1(r)) - 1 = 2^k expm1(r) + (2^k - 1); 2^k - 1 is exact for |k| <= 53, and
    // for |x| >= 0.7 both terms have the result's sign, so nothing cancels.
    double k = round(x * NX_INV_LN2);
    precise double reduced = x - k * NX_LN2_HEAD32;
    dvec2 r = nx_two_sum(reduced, -k * NX_LN2_TAIL32);
    double p = nx_expm1_taylor_f64(r.x);
    precise double expm1_r = p + r.y * (1.0lf + p);
    double scale = nx_pow2_f64(int(k));
    precise double result = scale * expm1_r + (scale - 1.0lf);
    return result;
}

// e^x - 1 as a double-double for |x| <= 2 (about 2^-60 relative): the Taylor series below
// 0.7, else 2^k expm1(r) + (2^k - 1) summed exactly.
dvec2 nx_expm1_dd_f64(double x) {
    if (abs(x) < 0.7lf) return nx_fast_two_sum(x, nx_expm1_taylor_tail_f64(x));
    double k = round(x * NX_INV_LN2);
    precise double reduced = x - k * NX_LN2_HEAD32;
    dvec2 r = nx_two_sum(reduced, -k * NX_LN2_TAIL32);
    double tail = nx_expm1_taylor_tail_f64(r.x);
    precise double small = tail + r.y * (1.0lf + r.x + tail);
    double scale = nx_pow2_f64(int(k));
    dvec2 head = nx_two_sum(scale - 1.0lf, scale * r.x);
    precise double rest = head.y + scale * small;
    return nx_fast_two_sum(head.x, rest);
}

double nx_sigmoid_f64(double x) { return 1.0lf / (1.0lf + nx_exp_f64(-x)); }

// --- log, log1p ---

// log(x) as a double-double for finite x > 0: x = 2^e m with m in [sqrt(1/2), sqrt(2)), and
// log m = 2 atanh(s), s = (m - 1) / (m + 1), with s and its first two terms in double-double
// (about 2^-100 relative), which is what pow needs.
dvec2 nx_log_dd_f64(double x) {
    int bias = 1023;
    if (x < 2.2250738585072014e-308lf) {
        x *= 18014398509481984.0lf; // 2^54 makes subnormals normal
        bias += 54;
    }
    uvec2 words = unpackDouble2x32(x);
    int exponent = int(words.y >> 20) - bias;
    double m = packDouble2x32(uvec2(words.x, (words.y & 0x000FFFFFu) | 0x3FF00000u));
    if (m > 1.4142135623730951lf) {
        m *= 0.5lf;
        exponent += 1;
    }
    precise double f = m - 1.0lf;
    dvec2 denominator = nx_two_sum(2.0lf, f);
    double s_head = f / denominator.x;
    dvec2 product = nx_two_prod(s_head, denominator.x);
    precise double s_tail = (((f - product.x) - product.y) - s_head * denominator.y) / denominator.x;
    dvec2 s = nx_fast_two_sum(s_head, s_tail);
    dvec2 s_squared = nx_dd_mul(s, s);
    dvec2 s_cubed = nx_dd_mul(s_squared, s);
    double z = s_squared.x;
    // 2 atanh(s) = 2s + 2s^3/3 + s^5 (2/5 + 2s^2/7 + ...): the last series.
    double series = 2.0lf / 25.0lf;
    series = series * z + 2.0lf / 23.0lf;
    series = series * z + 2.0lf / 21.0lf;
    series = series * z + 2.0lf / 19.0lf;
    series = series * z + 2.0lf / 17.0lf;
    series = series * z + 2.0lf / 15.0lf;
    series = series * z + 2.0lf / 13.0lf;
    series = series * z + 2.0lf / 11.0lf;
    series = series * z + 2.0lf / 9.0lf;
    series = series * z + 2.0lf / 7.0lf;
    series = series * z + 2.0lf / 5.0lf;
    dvec2 log_m = nx_dd_add(2.0lf * s, nx_dd_mul(s_cubed, NX_TWO_THIRDS_DD));
    log_m = nx_dd_add(log_m, dvec2(s_cubed.x * z * series, 0.0lf));
    double e = double(exponent);
    dvec2 e_ln2 = nx_dd_add(nx_two_prod(e, NX_LN2_DD.x), dvec2(e * NX_LN2_DD.y, 0.0lf));
    return nx_dd_add(e_ln2, log_m);
}

double nx_log_f64(double x) {
    if (isnan(x)) return x;
    if (x < 0.0lf) return nx_nan_f64();
    if (x == 0.0lf) return -nx_infinity_f64();
    if (isinf(x)) return x;
    return nx_log_dd_f64(x).x;
}

// log(1 + x) = log(u) + (1 + x - u) / u with u = 1 + x rounded and 1 + x - u exact.
double nx_log1p_f64(double x) {
    if (isnan(x)) return x;
    if (x < -1.0lf) return nx_nan_f64();
    if (x == -1.0lf) return -nx_infinity_f64();
    if (isinf(x) || abs(x) < 5.551115123125783e-17lf) return x;
    dvec2 u = nx_two_sum(1.0lf, x);
    dvec2 log_u = nx_log_dd_f64(u.x);
    return log_u.x + (log_u.y + u.y / u.x);
}

// C99 pow, special cases included: e^(y log|x|) with log|x| and the product in double-double.
double nx_pow_f64(double x, double y) {
    if (y == 0.0lf || x == 1.0lf) return 1.0lf;
    if (isnan(x) || isnan(y)) return x + y;
    double ax = abs(x);
    if (isinf(y)) {
        if (ax == 1.0lf) return 1.0lf;
        return ((ax > 1.0lf) == (y > 0.0lf)) ? nx_infinity_f64() : 0.0lf;
    }
    bool y_integer = floor(y) == y;
    bool y_odd = y_integer && abs(y) < 9007199254740992.0lf && fract(0.5lf * y) != 0.0lf;
    double magnitude;
    if (ax == 0.0lf) {
        magnitude = (y < 0.0lf) ? nx_infinity_f64() : 0.0lf;
    } else if (isinf(ax)) {
        magnitude = (y > 0.0lf) ? nx_infinity_f64() : 0.0lf;
    } else {
        if (x < 0.0lf && !y_integer) return nx_nan_f64();
        // (-1)^y for huge even y: the exact product below would split y and overflow.
        if (ax == 1.0lf) return y_odd ? -1.0lf : 1.0lf;
        dvec2 log_x = nx_log_dd_f64(ax);
        // Decide overflow and underflow before the exact product, whose split would overflow
        // for huge y; past these bounds the result is certainly infinite or zero.
        double estimate = log_x.x * y;
        if (estimate > 710.0lf) {
            magnitude = nx_infinity_f64();
        } else if (estimate < -746.0lf) {
            magnitude = 0.0lf;
        } else {
            dvec2 exponent = nx_dd_mul_double(log_x, y);
            magnitude = nx_exp_dd_f64(exponent.x, exponent.y);
        }
    }
    return (nx_sign_bit_f64(x) && y_odd) ? -magnitude : magnitude;
}

// --- sin, cos, tan ---

// 2/pi in 32-bit words after the binary point, for Payne-Hanek reduction up to |x| = 2^1024
// (a switch, not an array: an array indexed at run time is copied into every invocation's
// private memory by some drivers, even on paths that never reach it).
uint nx_two_over_pi_word(int index) {
    switch (index) {
    case 0: return 0xA2F9836Eu;
    case 1: return 0x4E441529u;
    case 2: return 0xFC2757D1u;
    case 3: return 0xF534DDC0u;
    case 4: return 0xDB629599u;
    case 5: return 0x3C439041u;
    case 6: return 0xFE5163ABu;
    case 7: return 0xDEBBC561u;
    case 8: return 0xB7246E3Au;
    case 9: return 0x424DD2E0u;
    case 10: return 0x06492EEAu;
    case 11: return 0x09D1921Cu;
    case 12: return 0xFE1DEB1Cu;
    case 13: return 0xB129A73Eu;
    case 14: return 0xE88235F5u;
    case 15: return 0x2EBB4484u;
    case 16: return 0xE99C7026u;
    case 17: return 0xB45F7E41u;
    case 18: return 0x3991D639u;
    case 19: return 0x835339F4u;
    case 20: return 0x9C845F8Bu;
    case 21: return 0xBDF9283Bu;
    case 22: return 0x1FF897FFu;
    case 23: return 0xDE05980Fu;
    case 24: return 0xEF2F118Bu;
    case 25: return 0x5A0A6D1Fu;
    case 26: return 0x6D367ECFu;
    case 27: return 0x27CB09B7u;
    case 28: return 0x4F463F66u;
    case 29: return 0x9E5FEA2Du;
    case 30: return 0x7527BAC7u;
    case 31: return 0xEBE5F17Bu;
    case 32: return 0x3D0739F7u;
    case 33: return 0x8A5292EAu;
    case 34: return 0x6BFB5FB1u;
    case 35: return 0x1F8D5D08u;
    case 36: return 0x56033046u;
    case 37: return 0xFC7B6BABu;
    case 38: return 0xF0CFBC20u;
    case 39: return 0x9AF4361Du;
    }
    return 0u;
}

// |x| < 2^19 pi/2: x - k pi/2 with four exact products, accumulated in double-double.
dvec2 nx_reduce_medium_f64(double x, out int quadrant) {
    double k = round(x * 0.6366197723675814lf);
    quadrant = int(k - 4.0lf * floor(0.25lf * k));
    precise double first = x - k * NX_HALF_PI_PIECE1;
    dvec2 second = nx_two_sum(first, -k * NX_HALF_PI_PIECE2);
    dvec2 third = nx_two_sum(second.x, -k * NX_HALF_PI_PIECE3);
    precise double tail = (second.y + third.y) - k * NX_HALF_PI_PIECE4;
    return nx_fast_two_sum(third.x, tail);
}

uint nx_product_bit(uint limbs[9], int bit) { return (limbs[bit >> 5] >> uint(bit & 31)) & 1u; }

// The 64 bits of the product starting at `bit` (bit + 95 < 288).
uint64_t nx_product_word64(uint limbs[9], int bit) {
    int limb = bit >> 5;
    uint shift = uint(bit & 31);
    uint64_t low = uint64_t(limbs[limb]) | (uint64_t(limbs[limb + 1]) << 32);
    if (shift == 0u) return low;
    return (low >> shift) | (uint64_t(limbs[limb + 2]) << (64u - shift));
}

// Payne-Hanek: x 2/pi mod 4 from the 224 bits of 2/pi that matter for x's exponent, as an
// exact multiple-precision product of x's 53-bit significand; the fraction (128 bits) times
// pi/2 in double-double. Finite |x| >= 2^19.
dvec2 nx_reduce_large_f64(double x, out int quadrant) {
    uvec2 words = unpackDouble2x32(abs(x));
    int exponent = int(words.y >> 20) - 1075; // |x| = significand * 2^exponent
    uint significand_high = (words.y & 0x000FFFFFu) | 0x00100000u;
    uint significand_low = words.x;
    // Words before `first` only contribute multiples of 4 (whole turns).
    int first = (exponent >= 2) ? (exponent - 2) / 32 : 0;
    uint limbs[9];
    uint64_t carry = 0ul;
    for (int k = 0; k < 7; k++) {
        uint64_t product = uint64_t(nx_two_over_pi_word(first + 6 - k)) * uint64_t(significand_low) + carry;
        limbs[k] = uint(product);
        carry = product >> 32;
    }
    limbs[7] = uint(carry);
    limbs[8] = 0u;
    carry = 0ul;
    for (int k = 0; k < 7; k++) {
        uint64_t product = uint64_t(nx_two_over_pi_word(first + 6 - k)) * uint64_t(significand_high)
            + uint64_t(limbs[k + 1]) + carry;
        limbs[k + 1] = uint(product);
        carry = product >> 32;
    }
    limbs[8] += uint(carry);
    // Bit `point` of the product has weight 1.
    int point = 32 * (first + 7) - exponent;
    int turn = int(nx_product_bit(limbs, point) | (nx_product_bit(limbs, point + 1) << 1));
    uint64_t high = nx_product_word64(limbs, point - 64);
    uint64_t low = nx_product_word64(limbs, point - 128);
    double sign = 1.0lf;
    if ((high >> 63) != 0ul) {
        // A fraction of at least one half rounds to the next quadrant: negate the 128 bits.
        turn += 1;
        sign = -1.0lf;
        low = ~low + 1ul;
        high = ~high + ((low == 0ul) ? 1ul : 0ul);
    }
    double head = double(high);
    int64_t head_error = int64_t(high - uint64_t(head));
    const double two_to_minus_64 = 5.421010862427522e-20lf;
    precise double tail = (double(head_error) + double(low) * two_to_minus_64) * two_to_minus_64;
    dvec2 fraction = nx_fast_two_sum(head * two_to_minus_64, tail);
    dvec2 reduced = nx_dd_mul(fraction, NX_HALF_PI_DD) * sign;
    turn &= 3;
    if (x < 0.0lf) {
        reduced = -reduced;
        turn = (4 - turn) & 3;
    }
    quadrant = turn;
    return reduced;
}

// x = k pi/2 + r with |r| <= pi/4 (a double-double) and quadrant k mod 4.
dvec2 nx_reduce_half_pi_f64(double x, out int quadrant) {
    if (abs(x) < 823549.6lf) return nx_reduce_medium_f64(x, quadrant);
    return nx_reduce_large_f64(x, quadrant);
}

// sin(r.x + r.y) as an unevaluated sum (head, small tail), |r| <= pi/4.
dvec2 nx_sin_kernel_f64(dvec2 r) {
    double z = r.x * r.x;
    double p = -1.0lf / 121645100408832000.0lf;
    p = p * z + 1.0lf / 355687428096000.0lf;
    p = p * z - 1.0lf / 1307674368000.0lf;
    p = p * z + 1.0lf / 6227020800.0lf;
    p = p * z - 1.0lf / 39916800.0lf;
    p = p * z + 1.0lf / 362880.0lf;
    p = p * z - 1.0lf / 5040.0lf;
    p = p * z + 1.0lf / 120.0lf;
    p = p * z - 1.0lf / 6.0lf;
    precise double tail = r.x * z * p + r.y * (1.0lf - 0.5lf * z);
    return dvec2(r.x, tail);
}

// cos(r.x + r.y) as an unevaluated sum: 1 - z/2 split exactly, as fdlibm's kernel does.
dvec2 nx_cos_kernel_f64(dvec2 r) {
    dvec2 z = nx_two_prod(r.x, r.x);
    double half_z = 0.5lf * z.x;
    precise double head = 1.0lf - half_z;
    double p = 1.0lf / 2432902008176640000.0lf;
    p = p * z.x - 1.0lf / 6402373705728000.0lf;
    p = p * z.x + 1.0lf / 20922789888000.0lf;
    p = p * z.x - 1.0lf / 87178291200.0lf;
    p = p * z.x + 1.0lf / 479001600.0lf;
    p = p * z.x - 1.0lf / 3628800.0lf;
    p = p * z.x + 1.0lf / 40320.0lf;
    p = p * z.x - 1.0lf / 720.0lf;
    p = p * z.x + 1.0lf / 24.0lf;
    precise double tail = ((1.0lf - head) - half_z) + (z.x * z.x * p - (0.5lf * z.y + r.x * r.y));
    return dvec2(head, tail);
}

double nx_sin_f64(double x) {
    if (isinf(x) || isnan(x)) return nx_nan_f64();
    if (x == 0.0lf) return x;
    int quadrant;
    dvec2 r = nx_reduce_half_pi_f64(x, quadrant);
    dvec2 value = ((quadrant & 1) == 0) ? nx_sin_kernel_f64(r) : nx_cos_kernel_f64(r);
    double result = value.x + value.y;
    return (quadrant >= 2) ? -result : result;
}

double nx_cos_f64(double x) {
    if (isinf(x) || isnan(x)) return nx_nan_f64();
    int quadrant;
    dvec2 r = nx_reduce_half_pi_f64(x, quadrant);
    dvec2 value = ((quadrant & 1) == 0) ? nx_cos_kernel_f64(r) : nx_sin_kernel_f64(r);
    double result = value.x + value.y;
    return (quadrant == 1 || quadrant == 2) ? -result : result;
}

double nx_tan_f64(double x) {
    if (isinf(x) || isnan(x)) return nx_nan_f64();
    if (x == 0.0lf) return x;
    int quadrant;
    dvec2 r = nx_reduce_half_pi_f64(x, quadrant);
    dvec2 s = nx_sin_kernel_f64(r);
    dvec2 c = nx_cos_kernel_f64(r);
    return ((quadrant & 1) == 0) ? nx_dd_div(s, c) : -nx_dd_div(c, s);
}

// --- atan, atan2, asin, acos ---

// atan(u) = u + u^3 P(u^2) for |u| <= 7/16 (fit: 2^-57.8 relative).
double nx_atan_tail_f64(double u) {
    double z = u * u;
    double p = 0.014765672579295772lf;
    p = p * z - 0.033120205412416844lf;
    p = p * z + 0.04491897813192446lf;
    p = p * z - 0.05216586580546373lf;
    p = p * z + 0.058769315438208604lf;
    p = p * z - 0.06666240389180404lf;
    p = p * z + 0.0769228545347931lf;
    p = p * z - 0.0909090835142111lf;
    p = p * z + 0.11111111096544377lf;
    p = p * z - 0.14285714285565562lf;
    p = p * z + 0.19999999999999404lf;
    p = p * z - 0.3333333333333333lf;
    return u * z * p;
}

// atan by fdlibm's reduction: atan(x) = atan(c) + atan((x - c) / (1 + x c)) with c in
// {1/2, 1, 3/2, inf} and atan(c) in double-double.
double nx_atan_f64(double x) {
    if (isnan(x)) return x;
    double ax = abs(x);
    double result;
    if (ax < 0.4375lf) {
        result = ax + nx_atan_tail_f64(ax);
    } else {
        double u;
        dvec2 base;
        if (ax < 0.6875lf) {
            u = (2.0lf * ax - 1.0lf) / (2.0lf + ax);
            base = NX_ATAN_HALF_DD;
        } else if (ax < 1.1875lf) {
            u = (ax - 1.0lf) / (ax + 1.0lf);
            base = NX_QUARTER_PI_DD;
        } else if (ax < 2.4375lf) {
            u = (ax - 1.5lf) / (1.0lf + 1.5lf * ax);
            base = NX_ATAN_THREE_HALVES_DD;
        } else {
            u = -1.0lf / ax;
            base = NX_HALF_PI_DD;
        }
        precise double sum = base.x + (u + (nx_atan_tail_f64(u) + base.y));
        result = sum;
    }
    return nx_sign_bit_f64(x) ? -result : result;
}

// C99 atan2, special cases included.
double nx_atan2_f64(double y, double x) {
    if (isnan(x) || isnan(y)) return x + y;
    double result;
    if (y == 0.0lf) {
        result = nx_sign_bit_f64(x) ? NX_PI_DD.x : 0.0lf;
    } else if (isinf(x) && isinf(y)) {
        result = (x > 0.0lf) ? NX_QUARTER_PI_DD.x : 2.356194490192345lf;
    } else if (isinf(x)) {
        result = (x > 0.0lf) ? 0.0lf : NX_PI_DD.x;
    } else if (isinf(y) || x == 0.0lf) {
        result = NX_HALF_PI_DD.x;
    } else {
        double base = nx_atan_f64(abs(y) / abs(x));
        precise double reflected = NX_PI_DD.x - (base - NX_PI_DD.y);
        result = (x < 0.0lf) ? reflected : base;
    }
    return nx_sign_bit_f64(y) ? -result : result;
}

// asin(w) = w + w^3 P(w^2) for |w| <= 1/2 (fit: 2^-58.5 relative).
double nx_asin_tail_f64(double w) {
    double z = w * w;
    double p = 0.02961784360278849lf;
    p = p * z - 0.019251063609761476lf;
    p = p * z + 0.019561197368064193lf;
    p = p * z + 0.003042112803367317lf;
    p = p * z + 0.009320298817537808lf;
    p = p * z + 0.00962171028406244lf;
    p = p * z + 0.011566475960553163lf;
    p = p * z + 0.013963778636220892lf;
    p = p * z + 0.017352816617756082lf;
    p = p * z + 0.022372157440717466lf;
    p = p * z + 0.030381944475591983lf;
    p = p * z + 0.044642857142551236lf;
    p = p * z + 0.07500000000000118lf;
    p = p * z + 0.16666666666666666lf;
    return w * z * p;
}

// sqrt((1 - a) / 2) as a double-double, for a in [1/2, 1] (1 - a is exact there).
dvec2 nx_half_versine_root_f64(double a) {
    double z = 0.5lf * (1.0lf - a);
    if (z == 0.0lf) return dvec2(0.0lf);
    double root = sqrt(z);
    dvec2 square = nx_two_prod(root, root);
    precise double tail = ((z - square.x) - square.y) / (2.0lf * root);
    return dvec2(root, tail);
}

// asin: the fit below 1/2, else pi/2 - 2 asin(sqrt((1 - |x|) / 2)).
double nx_asin_f64(double x) {
    if (isnan(x)) return x;
    double ax = abs(x);
    if (ax > 1.0lf) return nx_nan_f64();
    double result;
    if (ax <= 0.5lf) {
        result = ax + nx_asin_tail_f64(ax);
    } else {
        dvec2 w = nx_half_versine_root_f64(ax);
        precise double twice_tail = 2.0lf * (w.y + nx_asin_tail_f64(w.x));
        dvec2 head = nx_two_sum(NX_HALF_PI_DD.x, -2.0lf * w.x);
        precise double sum = head.x + (head.y + (NX_HALF_PI_DD.y - twice_tail));
        result = sum;
    }
    return nx_sign_bit_f64(x) ? -result : result;
}

double nx_acos_f64(double x) {
    if (isnan(x)) return x;
    double ax = abs(x);
    if (ax > 1.0lf) return nx_nan_f64();
    if (ax <= 0.5lf) {
        dvec2 head = nx_two_sum(NX_HALF_PI_DD.x, -x);
        precise double sum = head.x + (head.y + (NX_HALF_PI_DD.y - nx_asin_tail_f64(x)));
        return sum;
    }
    dvec2 w = nx_half_versine_root_f64(ax);
    precise double twice_tail = 2.0lf * (w.y + nx_asin_tail_f64(w.x));
    if (x > 0.0lf) {
        precise double sum = 2.0lf * w.x + twice_tail;
        return sum;
    }
    dvec2 head = nx_two_sum(NX_PI_DD.x, -2.0lf * w.x);
    precise double sum = head.x + (head.y + (NX_PI_DD.y - twice_tail));
    return sum;
}

// --- hyperbolic functions and their inverses (fdlibm's formulas over our exp and log) ---

double nx_sinh_f64(double x) {
    if (isnan(x)) return x;
    double ax = abs(x);
    double result;
    if (ax < 3.725290298461914e-09lf) {
        result = ax;
    } else if (ax < 1.0lf) {
        double t = nx_expm1_f64(ax);
        result = 0.5lf * (2.0lf * t - t * t / (t + 1.0lf));
    } else if (ax < 22.0lf) {
        double t = nx_expm1_f64(ax);
        result = 0.5lf * (t + t / (t + 1.0lf));
    } else if (ax < 709.0lf) {
        result = 0.5lf * nx_exp_f64(ax);
    } else {
        result = nx_half_exp_f64(ax);
    }
    return nx_sign_bit_f64(x) ? -result : result;
}

double nx_cosh_f64(double x) {
    if (isnan(x)) return x;
    double ax = abs(x);
    if (ax < 0.34657359027997264lf) {
        double t = nx_expm1_f64(ax);
        double w = 1.0lf + t;
        return 1.0lf + (t * t) / (w + w);
    }
    if (ax < 22.0lf) {
        double e = nx_exp_f64(ax);
        return 0.5lf * e + 0.5lf / e;
    }
    if (ax < 709.0lf) return 0.5lf * nx_exp_f64(ax);
    return nx_half_exp_f64(ax);
}

double nx_tanh_f64(double x) {
    if (isnan(x)) return x;
    double ax = abs(x);
    double result;
    if (ax < 2.7755575615628914e-17lf) {
        result = ax;
    } else if (ax < 1.0lf) {
        // t / (t + 2) with t = e^(2|x|) - 1 as a double-double, divided once: fdlibm's
        // rounded t cost 3 ulps here.
        dvec2 t = nx_expm1_dd_f64(2.0lf * ax);
        result = nx_dd_div(t, nx_dd_add(t, dvec2(2.0lf, 0.0lf)));
    } else if (ax < 22.0lf) {
        double t = nx_expm1_f64(2.0lf * ax);
        result = 1.0lf - 2.0lf / (t + 2.0lf);
    } else {
        result = 1.0lf;
    }
    return nx_sign_bit_f64(x) ? -result : result;
}

double nx_asinh_f64(double x) {
    if (isnan(x) || isinf(x)) return x;
    double ax = abs(x);
    double result;
    if (ax < 3.725290298461914e-09lf) {
        result = ax;
    } else if (ax > 268435456.0lf) {
        result = nx_log_f64(ax) + NX_LN2_DD.x;
    } else if (ax > 2.0lf) {
        result = nx_log_f64(2.0lf * ax + 1.0lf / (sqrt(ax * ax + 1.0lf) + ax));
    } else {
        double t = ax * ax;
        result = nx_log1p_f64(ax + t / (1.0lf + sqrt(1.0lf + t)));
    }
    return nx_sign_bit_f64(x) ? -result : result;
}

double nx_acosh_f64(double x) {
    if (isnan(x)) return x;
    if (x < 1.0lf) return nx_nan_f64();
    if (isinf(x)) return x;
    if (x > 268435456.0lf) return nx_log_f64(x) + NX_LN2_DD.x;
    if (x > 2.0lf) return nx_log_f64(2.0lf * x - 1.0lf / (x + sqrt(x * x - 1.0lf)));
    double t = x - 1.0lf;
    return nx_log1p_f64(t + sqrt(2.0lf * t + t * t));
}

double nx_atanh_f64(double x) {
    if (isnan(x)) return x;
    double ax = abs(x);
    if (ax > 1.0lf) return nx_nan_f64();
    double result;
    if (ax == 1.0lf) {
        result = nx_infinity_f64();
    } else if (ax < 3.725290298461914e-09lf) {
        result = ax;
    } else if (ax < 0.5lf) {
        double t = ax + ax;
        result = 0.5lf * nx_log1p_f64(t + t * ax / (1.0lf - ax));
    } else {
        result = 0.5lf * nx_log1p_f64((ax + ax) / (1.0lf - ax));
    }
    return nx_sign_bit_f64(x) ? -result : result;
}

// --- erf, erfc, erf_inv ---

// erfc(x) e^(x^2) on [1/2, 2) as polynomials in t = (x - centre) / half width, and
// x erfc(x) e^(x^2) on [2, 28) as polynomials in t = (1/x^2 - centre) / half width: 15
// coefficients per interval (fits: 2^-53.9 to 2^-56.8 relative, the rounding of the leading
// coefficient included).
// Interval i covers [edge i, edge i + 1) of 0.5, 0.75, 1, 1.5, 2, 3, 4.5, 7, 12, 28.

// The fit of interval `interval` at t as a double-double: the leading coefficient carries
// its tail (its rounding alone was worth half an ulp). A switch of literal polynomials: an
// array indexed by a computed interval is copied into every invocation's private memory by
// some drivers.
dvec2 nx_erfc_fit_f64(int interval, double t) {
    switch (interval) {
        case 0: return nx_fast_two_sum(0.5568138808733625lf, 2.821567250254186e-17lf + t * (-0.05404522700047618lf + t * (0.004477933529234088lf + t * (-0.0003297454099406848lf + t * (2.2103175621333307e-05lf + t * (-1.370184573962642e-06lf + t * (7.943881641416562e-08lf + t * (-4.343707552956019e-09lf + t * (2.2546983847602196e-10lf + t * (-1.1167911298181238e-11lf + t * (5.300946347798394e-13lf + t * (-2.4196843056750244e-14lf + t * (1.0653799413375564e-15lf + t * (-4.564347611299937e-17lf + t * (1.879897921764654e-18lf)))))))))))))));
        case 1: return nx_fast_two_sum(0.464311583202669lf, -1.8519637187645937e-17lf + t * (-0.03947923706135523lf + t * (0.002936826933955975lf + t * (-0.00019709842212149375lf + t * (1.2165140461761865e-05lf + t * (-6.996402430572626e-07lf + t * (3.7852389376880105e-08lf + t * (-1.9405067741533332e-09lf + t * (9.480016389758194e-11lf + t * (-4.433700188894416e-12lf + t * (1.9926332264192764e-13lf + t * (-8.632991081214358e-15lf + t * (3.61538314467681e-16lf + t * (-1.4752302109690108e-17lf + t * (5.8017270848675985e-19lf)))))))))))))));
        case 2: return nx_fast_two_sum(0.3678229164523611lf, 1.3958542977159086e-19lf + t * (-0.052205468991152464lf + t * (0.006674723218537425lf + t * (-0.0007846605374360513lf + t * (8.598189160491182e-05lf + t * (-8.868776985335347e-06lf + t * (8.674584724635459e-07lf + t * (-8.091936803900322e-08lf + t * (7.232212993365224e-09lf + t * (-6.216436592267704e-10lf + t * (5.1549973915513075e-11lf + t * (-4.134421410241077e-12lf + t * (3.215798103569128e-13lf + t * (-2.4784179069403753e-14lf + t * (1.813635882662503e-15lf)))))))))))))));
        case 3: return nx_fast_two_sum(0.2849722347374364lf, 8.539889529548676e-18lf + t * (-0.0327440863786213lf + t * (0.0034852268804429543lf + t * (-0.0003478124256466921lf + t * (3.28293719036284e-05lf + t * (-2.95017055803795e-06lf + t * (2.537120416121745e-07lf + t * (-2.0967611879521562e-08lf + t * (1.6709180983128784e-09lf + t * (-1.2876652650357456e-10lf + t * (9.619412007253868e-12lf + t * (-6.979896572485734e-13lf + t * (4.929763748127008e-14lf + t * (-3.4505810792349548e-15lf + t * (2.310762178425826e-16lf)))))))))))))));
        case 4: return nx_fast_two_sum(0.5230854290703457lf, 1.342617712365315e-17lf + t * (-0.013034206111943442lf + t * (0.0008041563021039013lf + t * (-7.086638643863606e-05lf + t * (7.682216726680778e-06lf + t * (-9.576496559470923e-07lf + t * (1.3224889235403342e-07lf + t * (-1.976748484480983e-08lf + t * (3.1484852100963687e-09lf + t * (-5.286019777094172e-10lf + t * (9.27471928905392e-11lf + t * (-1.6733478681215263e-11lf + t * (3.1439519535114565e-12lf + t * (-7.208548344628267e-13lf + t * (1.4564547025437287e-13lf)))))))))))))));
        case 5: return nx_fast_two_sum(0.5438449975492358lf, 2.5303812580690992e-17lf + t * (-0.007076022257683785lf + t * (0.0002466543675503965lf + t * (-1.2989360081201048e-05lf + t * (8.779413138800096e-07lf + t * (-7.056335275615394e-08lf + t * (6.457008033140124e-09lf + t * (-6.542978688485962e-10lf + t * (7.203652900545308e-11lf + t * (-8.499928872148157e-12lf + t * (1.0638124810024467e-12lf + t * (-1.3970970112880775e-13lf + t * (1.9223031461535826e-14lf + t * (-3.0137005358471762e-15lf + t * (4.520272015468522e-16lf)))))))))))))));
        case 6: return nx_fast_two_sum(0.5548208316420972lf, -2.545623192811589e-17lf + t * (-0.0037072846493560368lf + t * (7.00847781632076e-05lf + t * (-2.0918207717957507e-06lf + t * (8.311599715960441e-08lf + t * (-4.050768584281398e-09lf + t * (2.3084554229642302e-10lf + t * (-1.491147805004021e-11lf + t * (1.0682982268880042e-12lf + t * (-8.354217877785336e-14lf + t * (7.044921133918668e-15lf + t * (-6.341246190947673e-16lf + t * (6.052661715592182e-17lf + t * (-6.365390673665087e-18lf + t * (6.751916919159918e-19lf)))))))))))))));
        case 7: return nx_fast_two_sum(0.5604081305985252lf, -4.480916379031146e-18lf + t * (-0.0018248665844681758lf + t * (1.7379936926223892e-05lf + t * (-2.692009581938418e-07lf + t * (5.701112044699404e-09lf + t * (-1.5172296729642778e-10lf + t * (4.8269408458796156e-12lf + t * (-1.776296642669182e-13lf + t * (7.386756175169635e-15lf + t * (-3.411569734127742e-16lf + t * (1.7266569481336203e-17lf + t * (-9.47446320785461e-19lf + t * (5.588901404148448e-20lf + t * (-3.5825379383615315e-21lf + t * (2.400847530616838e-22lf)))))))))))))));
        case 8: return nx_fast_two_sum(0.5630372556268788lf, 1.9363453113873763e-17lf + t * (-0.0007898786415749685lf + t * (3.2977431435785685e-06lf + t * (-2.2765391029159868e-08lf + t * (2.1830042699311724e-10lf + t * (-2.670611538872106e-12lf + t * (3.962664481800903e-14lf + t * (-6.896392270023401e-16lf + t * (1.3745108041395872e-17lf + t * (-3.081846692441597e-19lf + t * (7.666411418592187e-21lf + t * (-2.0925855852731512e-22lf + t * (6.2110433735272136e-24lf + t * (-1.9990748965009914e-25lf + t * (6.874164274488729e-27lf)))))))))))))));
    }
    return dvec2(0.0lf);
}

// erf(x) = x + x R(x^2) for |x| < 1 (fit: 2^-56.3 relative).
double nx_erf_small_f64(double x) {
    double z = x * x;
    double p = -4.2218066361920665e-12lf;
    p = p * z + 8.703077678003092e-11lf;
    p = p * z - 1.2162835925503698e-09lf;
    p = p * z + 1.4792111042608197e-08lf;
    p = p * z - 1.6364610647085907e-07lf;
    p = p * z + 1.6462043130594368e-06lf;
    p = p * z - 1.4925647451134325e-05lf;
    p = p * z + 0.0001205533289887479lf;
    p = p * z - 0.0008548327021842004lf;
    p = p * z + 0.005223977625421919lf;
    p = p * z - 0.02686617064512972lf;
    p = p * z + 0.11283791670955119lf;
    p = p * z - 0.37612638903183754lf;
    p = p * z + 0.1283791670955126lf;
    return x + x * p;
}

// erfc(x) for x >= 1/2: e^(-x^2) (x^2 exact as a double-double) times the interval's fit.
double nx_erfc_positive_f64(double x) {
    if (x >= 28.0lf) return 0.0lf;
    // The interval from literal comparisons (the H200 ran this, a tree of branches and a
    // coefficient table equally fast: the fit's selection is not erfc's cost).
    int interval = int(x >= 0.75lf) + int(x >= 1.0lf) + int(x >= 1.5lf) + int(x >= 2.0lf)
        + int(x >= 3.0lf) + int(x >= 4.5lf) + int(x >= 7.0lf) + int(x >= 12.0lf);
    // Below 2 the variable is x, above it u = 1/x^2 (and the fit is x erfc(x) e^(x^2)).
    double u = 0.0lf;
    if (interval >= 4) u = 1.0lf / (x * x);
    double t;
    switch (interval) {
        case 0: t = (x - 0.625lf) * 8.0lf; break;
        case 1: t = (x - 0.875lf) * 8.0lf; break;
        case 2: t = (x - 1.25lf) * 4.0lf; break;
        case 3: t = (x - 1.75lf) * 4.0lf; break;
        case 4: t = (u - 0.18055555555555555lf) * 14.399999999999999lf; break;
        case 5: t = (u - 0.08024691358024691lf) * 32.4lf; break;
        case 6: t = (u - 0.03489543965734442lf) * 69.02608695652174lf; break;
        case 7: t = (u - 0.013676303854875284lf) * 148.54736842105262lf; break;
        case 8: t = (u - 0.004109977324263038lf) * 352.8lf; break;
    }
    dvec2 p = nx_erfc_fit_f64(interval, t);
    if (interval >= 4) {
        // p / x as a double-double.
        double quotient = p.x / x;
        dvec2 product = nx_two_prod(quotient, x);
        precise double tail = (((p.x - product.x) - product.y) + p.y) / x;
        p = nx_fast_two_sum(quotient, tail);
    }
    dvec2 square = nx_two_prod(x, x);
    if (x > 26.0lf) {
        // A subnormal result: round e^(-x^2) on its own, where the scaling rounds anyway.
        return nx_exp_dd_f64(-square.x, -square.y) * (p.x + p.y);
    }
    // e^(-x^2) p rounded once: the unrounded e^r times p, then the exact scaling by 2^k.
    int k;
    dvec2 e = nx_exp_reduced_f64(-square.x, -square.y, k);
    return nx_scale_f64(nx_dd_mul(e, p).x, k);
}

double nx_erf_f64(double x) {
    if (isnan(x)) return x;
    double ax = abs(x);
    if (ax < 1.0lf) return nx_erf_small_f64(x);
    double result = (ax >= 6.0lf) ? 1.0lf : 1.0lf - nx_erfc_positive_f64(ax);
    return nx_sign_bit_f64(x) ? -result : result;
}

double nx_erfc_f64(double x) {
    if (isnan(x)) return x;
    if (abs(x) < 0.5lf) return 1.0lf - nx_erf_small_f64(x);
    if (x > 0.0lf) return nx_erfc_positive_f64(x);
    return 2.0lf - nx_erfc_positive_f64(-x);
}

// erf_inv(y) = y P(y^2) for |y| <= 1/2 (fit: 2^-54.1 relative). Above, x = Q(s) for
// s = sqrt(-log((1 - y)(1 + y))) (fits: 2^-34 relative or better, on three s intervals up to
// 6.1, where 1 - y reaches 2^-53), then one Newton step on erfc(x) = 1 - y, where 1 - y is
// exact and erfc keeps its relative accuracy: from that start the step's own error
// (x^2 times the start's relative error squared) is below 2^-58.

// The start for 1/2 < y < 1 from s (above).
double nx_erf_inv_tail_start_f64(double s) {
    double t;
    if (s < 1.6lf) {
        t = (s - 1.068180010651326lf) * 1.8803354895040914lf;
        return 0.958893349791217lf + t * (0.48902239297588174lf + t * (0.008030476394145024lf + t * (0.0007443604511911459lf + t * (-0.00025565097264477663lf + t * (-3.237398954774641e-05lf + t * (4.5689195661079565e-06lf + t * (2.2961334014573748e-06lf + t * (1.2090242390720496e-07lf + t * (-1.0841109740615869e-07lf + t * (-1.9528845423619854e-08lf + t * (2.1419412642994333e-09lf)))))))))));
    }
    if (s < 3.2lf) {
        t = (s - 2.4000000000000004lf) * 1.25lf;
        return 2.2345739977023937lf + t * (0.791711630128421lf + t * (0.010110361404060561lf + t * (-0.003314404037406635lf + t * (0.00040672698061132206lf + t * (0.00018351219005298045lf + t * (-0.0001059245727059701lf + t * (9.304410656691365e-06lf + t * (1.140234933943531e-05lf + t * (-4.060886649743908e-06lf + t * (-6.544363756246064e-07lf + t * (5.1282022107091e-07lf)))))))))));
    }
    t = (s - 4.65lf) * 0.6896551724137933lf;
    return 4.496294717023924lf + t * (1.4649406342565505lf + t * (0.00032054288690069936lf + t * (-0.0010667244342917046lf + t * (0.0005320144503047564lf + t * (-0.00020604277539682957lf + t * (7.082095805259395e-05lf + t * (-2.250924726864786e-05lf + t * (7.818386806012507e-06lf + t * (-2.6212848722737987e-06lf + t * (-2.6806471099379e-07lf + t * (5.049587118854967e-07lf)))))))))));
}

double nx_erf_inv_f64(double y) {
    if (isnan(y)) return y;
    double ay = abs(y);
    if (ay > 1.0lf) return nx_nan_f64();
    if (ay == 1.0lf) return nx_sign_bit_f64(y) ? -nx_infinity_f64() : nx_infinity_f64();
    double x;
    if (ay <= 0.5lf) {
        double z = ay * ay;
        double p = 0.11336708726642712lf;
        p = p * z - 0.07643864607466185lf;
        p = p * z + 0.07371159282264247lf;
        p = p * z + 0.008337072802042557lf;
        p = p * z + 0.03162259060010486lf;
        p = p * z + 0.031139937251495612lf;
        p = p * z + 0.036523647686109155lf;
        p = p * z + 0.042832522404027275lf;
        p = p * z + 0.051731488178582356lf;
        p = p * z + 0.06495961121070845lf;
        p = p * z + 0.08655212936521021lf;
        p = p * z + 0.12755617530437996lf;
        p = p * z + 0.2320136665346592lf;
        // The leading coefficient is sqrt(pi)/2 rounded; its tail joins the small terms
        // (alone, its rounding cost an ulp next to 0).
        x = ay * 0.886226925452758lf + ay * (z * p - 3.8332932499128993e-17lf);
    } else {
        double complement = 1.0lf - ay;
        x = nx_erf_inv_tail_start_f64(sqrt(-nx_log_f64(complement * (1.0lf + ay))));
        x += (nx_erfc_f64(x) - complement) / (NX_TWO_OVER_SQRT_PI * nx_exp_f64(-x * x));
    }
    return nx_sign_bit_f64(y) ? -x : x;
}

// --- cbrt ---

// cbrt: |x| = m 2^(3q) with m in [1, 8), an f32 estimate of cbrt(m), one Newton step, and a
// last one whose residual y^3 - m is exact (double-double), then the exact scaling by 2^q.
double nx_cbrt_f64(double x) {
    if (x == 0.0lf || isnan(x) || isinf(x)) return x;
    double ax = abs(x);
    double unscale = 1.0lf;
    if (ax < 2.2250738585072014e-308lf) {
        ax *= 18014398509481984.0lf; // 2^54, whose cube root is 2^18
        unscale = 3.814697265625e-06lf; // 2^-18
    }
    uvec2 words = unpackDouble2x32(ax);
    int exponent = int(words.y >> 20) - 1023;
    int third = (exponent >= 0) ? exponent / 3 : -((2 - exponent) / 3);
    int remainder = exponent - 3 * third;
    double m = packDouble2x32(uvec2(words.x, (words.y & 0x000FFFFFu) | (uint(remainder + 1023) << 20)));
    double y = double(exp2(log2(float(m)) / 3.0));
    y = y - (y * y * y - m) / (3.0lf * y * y);
    dvec2 cube = nx_dd_mul_double(nx_two_prod(y, y), y);
    precise double residual = (cube.x - m) + cube.y;
    y = y - residual / (3.0lf * y * y);
    double result = y * nx_pow2_f64(third) * unscale;
    return nx_sign_bit_f64(x) ? -result : result;
}

// Complex numbers for the c64 and c128 kernels. `codegen.rs` defines `C` (`vec2` or `dvec2`:
// `x` the real part, `y` the imaginary part) and the real type macros of the component type
// (`T`, `IS_F64`) before including this, after `glsl_helpers.glsl`.
//
// The formulas are those of Elixir's Complex library, which Nx.BinaryBackend calls, with its
// special values where they differ from plain IEEE arithmetic. Arithmetic is `precise` (no
// contraction into fused multiply-adds) and divides and square roots are correctly rounded
// (f32 ones through f64, as `nx_div` does), so the host reference in `reference.rs` repeats
// every operation and matches bit for bit wherever the driver rounds correctly.

#if IS_F64
#define NX_COMPONENT_DIV(a, b) ((a) / (b))
#define NX_COMPONENT_SQRT(x) sqrt(x)
#define NX_COMPONENT_INFINITY packDouble2x32(uvec2(0u, 0x7FF00000u))
#else
#define NX_COMPONENT_DIV(a, b) nx_div(a, b)
#define NX_COMPONENT_SQRT(x) nx_sqrt(x)
#define NX_COMPONENT_INFINITY uintBitsToFloat(0x7F800000u)
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

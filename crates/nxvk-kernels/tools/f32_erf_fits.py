"""Coefficients of the f32-alone erf, erfc and erf_inv in crates/nxvk-kernels/src/glsl_helpers.glsl:
weighted near-minimax fits (Lawson-reweighted least squares on Chebyshev nodes, references from
mpmath), each coefficient rounded to f32 in turn, lowest order first, with the rest refitted.
Prints each fit's coefficients (lowest order first) and its maximum weighted error.

    python3 crates/nxvk-kernels/tools/f32_erf_fits.py     # a few minutes

- erf(x) = x + x q(x^2) for |x| < 0.875;
- expm1(w) = w + w^2 p(w) on the exp(-z^2) reduction's interval;
- erfc(z) exp(z^2) as a polynomial in z - c on six intervals of [0.5, 10.06), each centre c an
  f32 with z - c exact (Sterbenz) over its interval and chosen so that the constant term
  rounds to f32 with the least error;
- erf_inv(y) = y + y P(y^2) for |y| <= 0.5625, and beyond the starting guess Q(t),
  t = sqrt(-log(1 - |y|)), that one Newton step on erfc refines.
"""
import numpy as np
import mpmath as mp

mp.mp.dps = 40


def nodes(a, b, n=3000):
    k = np.arange(n)
    return (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / n)[::-1]


def lawson(A, y, w, iters=60):
    """min max |w*(A c - y)| approximately."""
    lw = np.ones(len(y)) / len(y)
    best = None
    for it in range(iters):
        sw = np.sqrt(lw) * w
        c, *_ = np.linalg.lstsq(A * sw[:, None], y * sw, rcond=None)
        e = np.abs(w * (A @ c - y))
        if best is None or e.max() < best[1]:
            best = (c, e.max())
        lw = lw * e
        lw /= lw.sum()
        lw = np.maximum(lw, 1e-30)
    return best[0], lw


def fit_f32(u, y, w, deg, fixed=None, iters=60, mono_powers=None):
    """Fit y ~ sum c_k u^p_k with weights w (error measured as w*(p-y)); returns f32 coefs
    (as Python floats exactly representable in f32) and max weighted error in f64 eval."""
    pw = list(range(deg + 1)) if mono_powers is None else mono_powers
    A = np.stack([u ** p for p in pw], axis=1)
    fixed = dict(fixed or {})
    coefs = [None] * len(pw)
    for k, v in fixed.items():
        coefs[k] = float(np.float32(v))
    for step in range(len(pw)):
        free = [i for i in range(len(pw)) if coefs[i] is None]
        if not free:
            break
        yy = y - sum(coefs[i] * A[:, i] for i in range(len(pw)) if coefs[i] is not None)
        c, _ = lawson(A[:, free], yy, w, iters)
        coefs[free[0]] = float(np.float32(c[0]))
    p = A @ np.array(coefs)
    err = np.abs(w * (p - y)).max()
    return coefs, err


F = np.float32


def report(name, coefficients, error, extra=""):
    print(f"{name}{extra}: {', '.join(repr(float(F(c))) for c in coefficients)}  (max error {error:.3g})")


def erfcx(v):
    v = mp.mpf(float(v))
    return mp.erfc(v) * mp.exp(v * v)


def best_centre(low, high, middle):
    """The f32 near `middle`, within [low, high], whose erfcx rounds to f32 most closely."""
    bits = int(F(middle).view(np.uint32))
    candidates = [c for c in np.arange(bits - 3000, bits + 3000).astype(np.uint32).view(F) if low <= c <= high]
    return float(min(candidates, key=lambda c: abs(mp.mpf(float(F(float(erfcx(c))))) - erfcx(c)) / erfcx(c)))


def erf_fits():
    s = nodes(0, 0.875**2, 3000)
    x = np.sqrt(s)
    y = np.array([float(mp.erf(mp.mpf(v)) / mp.mpf(v) - 1) for v in x])
    report("erf q", *fit_f32(s, y, 1 / (1 + y), 6))
    # n = round(-z^2 / ln2 - 0.1) leaves w in [-0.4 ln2, 0.6 ln2], widened for z * z's rounding.
    w = nodes(-0.4 * 0.6931 - 0.005, 0.6 * 0.6931 + 0.005, 3000)
    y = np.array([float((mp.expm1(mp.mpf(v)) - mp.mpf(v)) / mp.mpf(v) ** 2) for v in w])
    report("expm1 p", *fit_f32(w, y, w * w / np.exp(w), 5))
    for low, high, degree in [(0.5, 1.0, 8), (1.0, 1.6, 8), (1.6, 2.6, 8), (2.6, 4.5, 9), (4.5, 7.0, 9), (7.0, 10.06, 9)]:
        centre = best_centre(high / 2, 2 * low, min(max((low + high) / 2, high / 2), 2 * low))
        z = nodes(low, high, 4000)
        y = np.array([float(erfcx(v)) for v in z])
        report(f"erfcx [{low}, {high})", *fit_f32(z - centre, y, 1 / y, degree), extra=f" centre {centre!r}")


def erf_inv_fits():
    limit = 0.5625
    s = nodes(0, limit * limit, 3000)
    y = np.sqrt(s)
    f = np.array([float(mp.erfinv(mp.mpf(v)) / mp.mpf(v) - 1) for v in y])
    report("erf_inv P", *fit_f32(s, f, 1 / (1 + f), 7))
    t = nodes(float(np.sqrt(-np.log(1 - limit))) * 0.99, float(np.sqrt(-np.log(2.0**-24))) * 1.001, 3000)
    f = np.array([float(mp.erfinv(1 - mp.exp(-mp.mpf(v) ** 2))) for v in t])
    report("erf_inv guess Q", *fit_f32(t, f, 1 / f, 5))


if __name__ == "__main__":
    erf_fits()
    erf_inv_fits()

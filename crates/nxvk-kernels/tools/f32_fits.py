"""Coefficients of the f32-alone forms in crates/nxvk-kernels/src/glsl_helpers.glsl: least-squares
fits on Chebyshev nodes (near-minimax) in 40-digit arithmetic with mpmath, each rounded to f32,
and the head/tail pairs of the reduction offsets. Prints each fit's coefficients (c0 first, as
nx_poly4/5 take them) and its maximum relative error after rounding.

    python3 crates/nxvk-kernels/tools/f32_fits.py

tools/f32_model.py checks the resulting GLSL sequences over every f32 input.
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40


def fit(g, a, b, degree, nodes=300):
    """Relative-error least squares of g on [a, b] by a polynomial of `degree`."""
    xs = [(a + b) / 2 + (b - a) / 2 * mp.cos(mp.pi * (k + mp.mpf(0.5)) / nodes) for k in range(nodes)]
    rows = [[x**j / abs(g(x)) for j in range(degree + 1)] for x in xs]
    rhs = [mp.sign(g(x)) for x in xs]
    return mp.qr_solve(mp.matrix(rows), mp.matrix(rhs))[0]


def odd_correction(function, limit, degree):
    """c with function(t) = t + t z P(z), z = t^2, P(z) = sum c_j z^j, for |t| <= limit."""
    def p(z):
        t = mp.sqrt(z) if z > 0 else mp.mpf(10) ** -20
        return (function(t) - t) / t**3
    coefficients = fit(p, mp.mpf(0), limit * limit, degree)
    rounded = [float(np.float32(float(c))) for c in coefficients]
    worst = mp.mpf(0)
    for k in range(1, 2001):
        t = limit * k / 2000
        z = t * t
        polynomial = mp.mpf(0)
        for c in reversed(rounded):
            polynomial = polynomial * z + c
        worst = max(worst, abs(t + t * z * polynomial - function(t)) / abs(function(t)))
    return rounded, worst


def head_tail(value):
    head = np.float32(float(value))
    return head, np.float32(float(value - mp.mpf(float(head))))


FITS = [
    ("atan, |t| <= 7/16", mp.atan, mp.mpf(7) / 16, 4),
    ("asin, |t| <= 1/2", mp.asin, mp.mpf(1) / 2, 5),
    ("tanh, |x| < 0.625", mp.tanh, mp.mpf(0.625), 5),
    ("sinh, |x| < 1", mp.sinh, mp.mpf(1), 4),
]

if __name__ == "__main__":
    for name, function, limit, degree in FITS:
        coefficients, worst = odd_correction(function, limit, degree)
        print(f"{name}: {', '.join('%.9g' % c for c in coefficients)}"
              f"  (relative error 2^{float(mp.log(worst, 2)):.1f})")
    for name, value in [("atan(1/2)", mp.atan(mp.mpf(1) / 2)), ("pi/4", mp.pi / 4),
                        ("atan(3/2)", mp.atan(mp.mpf(3) / 2)), ("pi/2", mp.pi / 2), ("pi", mp.pi)]:
        head, tail = head_tail(value)
        print(f"{name}: head {'%.9g' % head}, tail {'%.9g' % tail}")

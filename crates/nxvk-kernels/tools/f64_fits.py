"""Coefficients of crates/nxvk-kernels/src/glsl_f64_math.glsl: least-squares polynomial fits on
Chebyshev nodes (near-minimax), computed in 60-digit arithmetic with mpmath, and the
double-double constants. Prints GLSL on stdout and each fit's maximum relative error (after
rounding its coefficients to doubles) on stderr.

    python3 crates/nxvk-kernels/tools/f64_fits.py > /tmp/fits.glsl
"""
import sys
import mpmath as mp

mp.mp.dps = 60


def fit_exact(g, a, b, degree, nodes=400, weight=None):
    xs = [(a + b) / 2 + (b - a) / 2 * mp.cos(mp.pi * (k + mp.mpf(0.5)) / nodes) for k in range(nodes)]
    rows, rhs = [], []
    for x in xs:
        w = 1 / abs(g(x)) if weight is None else weight(x)
        rows.append([x**j * w for j in range(degree + 1)])
        rhs.append(g(x) * w)
    return mp.qr_solve(mp.matrix(rows), mp.matrix(rhs))[0]


def fit(g, a, b, degree, nodes=400, weight=None):
    c = fit_exact(g, a, b, degree, nodes, weight)
    return [float(c[j]) for j in range(degree + 1)]


def horner(c, x):
    r = mp.mpf(0)
    for v in reversed(c):
        r = r * x + mp.mpf(v)
    return r


def check(c, g, a, b, total=None, n=2000):
    worst = 0
    for k in range(n + 1):
        x = a + (b - a) * mp.mpf(k) / n
        worst = max(worst, abs(horner(c, x) - g(x)) / abs(g(x)) if total is None else total(c, x))
    return float(worst)


def report(name, err):
    print(f"{name}: {err:.3g} (2^{float(mp.log(err, 2)):.1f})", file=sys.stderr)


def statements(name, values, variable="z"):
    """Horner's rule as one GLSL statement per coefficient (never a loop over an array)."""
    top, *rest = reversed(values)
    lines = [f"double p = {top!r}lf;"]
    for v in rest:
        sign = "-" if v < 0 else "+"
        lines.append(f"p = p * {variable} {sign} {abs(v)!r}lf;")
    return f"// {name}\n" + "\n".join(lines)


# erfc(x) e^(x^2) on x intervals (t = (x - centre) / half width); x erfc(x) e^(x^2) as a
# function of u = 1/x^2 beyond 2.
F = lambda x: mp.erfc(x) * mp.exp(x * x)
H = lambda u: mp.erfc(1 / mp.sqrt(u)) * mp.exp(1 / u) / mp.sqrt(u)
rows, params = [], []
for a, b in [(0.5, 0.75), (0.75, 1.0), (1.0, 1.5), (1.5, 2.0)]:
    m, h = (a + b) / 2, (b - a) / 2
    g = lambda t: F(mp.mpf(m) + mp.mpf(h) * t)
    exact = fit_exact(g, -1, 1, 14, nodes=200)
    c = [float(exact[j]) for j in range(15)]
    report(f"erfc x[{a},{b}]", check(c, g, -1, 1, n=400))
    rows.append((c, float(exact[0] - mp.mpf(c[0]))))
    params.append((a, m, 1 / h))
for a, b in [(2.0, 3.0), (3.0, 4.5), (4.5, 7.0), (7.0, 12.0), (12.0, 28.0)]:
    ua, ub = mp.mpf(1) / mp.mpf(b) ** 2, mp.mpf(1) / mp.mpf(a) ** 2
    m, h = float((ua + ub) / 2), float((ub - ua) / 2)
    g = lambda t: H(mp.mpf(m) + mp.mpf(h) * t)
    exact = fit_exact(g, -1, 1, 14, nodes=200)
    c = [float(exact[j]) for j in range(15)]
    report(f"erfc u[{a},{b}]", check(c, g, -1, 1, n=400))
    rows.append((c, float(exact[0] - mp.mpf(c[0]))))
    params.append((a, m, 1 / h))
def horner_text(coefficients):
    text = repr(coefficients[-1]) + "lf"
    for c in reversed(coefficients[:-1]):
        text = f"{c!r}lf + t * ({text})"
    return text


print("// erfc interval edges: " + ", ".join(f"{a!r}" for a, _, _ in params) + ", 28")
for i, (a, m, ih) in enumerate(params):
    print(f"        case {i}: t = ({'x' if i < 4 else 'u'} - {m!r}lf) * {ih!r}lf; break;")
# The leading coefficient as a double-double: its tail is added before the rest.
for i, (r, tail) in enumerate(rows):
    print(f"        case {i}: return nx_fast_two_sum({r[0]!r}lf, {tail!r}lf + t * ({horner_text(r[1:])}));")

R = lambda z: mp.erf(mp.sqrt(z)) / mp.sqrt(z) - 1
c = fit(R, mp.mpf("1e-30"), mp.mpf(1), 13, weight=lambda z: 1 / (1 + R(z)))
report("erf", check(c, None, mp.mpf("1e-30"), mp.mpf(1), total=lambda c, z: abs(horner(c, z) - R(z)) / (1 + R(z))))
print(statements("erf", c))
# erf_inv: y P(y^2) for |y| <= 1/2, and for |y| > 1/2 a start for one Newton step: x as
# polynomials in t = (s - centre) / half width, s = sqrt(-log((1 - y)(1 + y))), on three
# s intervals up to 6.1 (1 - y >= 2^-53).
Y = lambda z: mp.erfinv(mp.sqrt(z)) / mp.sqrt(z) if z > 0 else mp.sqrt(mp.pi) / 2
c = fit(Y, mp.mpf(0), mp.mpf(0.25), 13)
report("erf_inv centre", check(c, Y, mp.mpf("1e-30"), mp.mpf(0.25), n=400))
print(statements("erf_inv centre (the leading coefficient apart)", c[1:]))
print(f"leading: {c[0]!r}lf")
S = lambda s: mp.erfinv(mp.sqrt(1 - mp.exp(-s * s)))
s_start = float(mp.sqrt(-mp.log(mp.mpf(0.75))))
for a, b in [(s_start, 1.6), (1.6, 3.2), (3.2, 6.1)]:
    m, h = (a + b) / 2, (b - a) / 2
    g = lambda t: S(mp.mpf(m) + mp.mpf(h) * t)
    c = fit(g, -1, 1, 11, nodes=200)
    report(f"erf_inv s[{a:.4f},{b}]", check(c, g, -1, 1, n=400))
    print(f"        t = (s - {m!r}lf) * {1 / h!r}lf; x = {horner_text(c)};")
zmax = (mp.mpf(7) / 16) ** 2
atan_tail = lambda z: (mp.atan(mp.sqrt(z)) - mp.sqrt(z)) / (mp.sqrt(z) * z)
print(statements("atan", fit(atan_tail, mp.mpf("1e-30"), zmax, 11)))
asin_tail = lambda z: (mp.asin(mp.sqrt(z)) - mp.sqrt(z)) / (mp.sqrt(z) * z)
print(statements("asin", fit(asin_tail, mp.mpf("1e-30"), mp.mpf(0.25), 13)))

# Double-double constants (head, tail).
mp.mp.dps = 80
for name, v in [("ln2", mp.log(2)), ("pi", mp.pi), ("pi/2", mp.pi / 2), ("pi/4", mp.pi / 4),
                ("atan(1/2)", mp.atan(0.5)), ("atan(3/2)", mp.atan(1.5)), ("2/3", mp.mpf(2) / 3)]:
    head = float(v)
    print(f"{name}: {head!r}, {float(v - mp.mpf(head))!r}")
# ln 2 with a 32-bit head, pi/2 in four 33-bit pieces.
m, e = mp.frexp(mp.log(2))
head = mp.floor(m * 2**32) / 2**32 * 2**e
print("ln2 (32-bit head):", repr(float(head)), repr(float(mp.log(2) - head)))
rest = mp.pi / 2
for _ in range(4):
    m, e = mp.frexp(rest)
    piece = mp.floor(m * 2**33) / 2**33 * mp.mpf(2) ** e
    print("pi/2 piece:", repr(float(piece)))
    rest -= piece
# 2/pi in 32-bit words.
mp.mp.dps = 500
f = 2 / mp.pi
words = []
for _ in range(40):
    f *= 2**32
    w = int(mp.floor(f))
    words.append(w)
    f -= w
for index, word in enumerate(words):
    print(f"    case {index}: return 0x{word:08X}u;")

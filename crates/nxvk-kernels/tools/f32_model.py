"""A numpy model of the f32-alone forms in crates/nxvk-kernels/src/glsl_helpers.glsl, every
intermediate an f32 and every operation in the GLSL's order (no fma contraction, divisions and
square roots correctly rounded, as on lavapipe), measured against numpy's f64 functions over
every f32 input of each op's domain (or every `--step`-th), in the ulp distance of
nxvk_kernels::accuracy (both below the smallest normal counts as exact).

    python3 crates/nxvk-kernels/tools/f32_model.py [--op NAME] [--step N]

The GPU's own measurement is the `ulp` example; this model is for designing the sequences
(a fit or a reduction is checked here in seconds, before a shader is built). atan2 is
nx_atan_sum of a correctly rounded ratio, which atan's sweep covers.
"""
import argparse
import numpy as np

f = np.float32
SMALLEST_NORMAL = 1.17549435e-38


def ordered(values):
    bits = values.astype(f).view(np.int32).astype(np.int64)
    return np.where(bits < 0, np.int64(-(2**31)) - bits, bits)


def distance(actual, reference):
    rounded = reference.astype(f)
    d = np.abs(ordered(actual) - ordered(rounded))
    tiny = (np.abs(actual) < SMALLEST_NORMAL) & (np.abs(reference) < SMALLEST_NORMAL)
    d = np.where(tiny | (np.isnan(actual) & np.isnan(rounded)), 0, d)
    return np.where(np.isnan(actual) != np.isnan(rounded), 10**9, d)


def horner(z, coefficients):
    p = f(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        p = (p * z + f(c)).astype(f)
    return p


def odd_correction(x, z, coefficients):
    return (x * z * horner(z, coefficients)).astype(f)


def exp_reduced(x):
    """nx_exp_reduced: (q, e) with e^x = 2^e (1 + q)."""
    shifted = (x * f(1.44269504088896341) + f(12582912.0)).astype(f)
    k = (shifted - f(12582912.0)).astype(f)
    r = ((x - k * f(0.693359375)) + k * f(2.12194440e-4)).astype(f)
    p = horner(r, [1.0, 0.5, 1 / 6, 1 / 24, 1 / 120, 1 / 720, 1 / 5040])
    return (r * p).astype(f), shifted.view(np.int32) - 0x4B400000


def exp(x):
    q, e = exp_reduced(x)
    first = e >> 1
    scale = lambda n: ((n + 127).astype(np.uint32) << 23).view(f)
    return ((f(1) + q) * scale(first) * scale(e - first)).astype(f)


ATAN = [-0.333333313, 0.199993089, -0.142564103, 0.106670231, -0.0621227957]
ASIN = [0.166666657, 0.0750009418, 0.0445994735, 0.0310998391, 0.0171530005, 0.0336848311]
TANH = [-0.333333343, 0.133333027, -0.0539591163, 0.0217678975, -0.00834098738, 0.00228973804]
SINH = [0.166666672, 0.00833333377, 0.000198412818, 2.755379e-06, 2.54557389e-08]
# Reduction points of nx_atan_sum: (lower bound, head, tail, t as a function of x).
ATAN_REGIONS = [
    (2.4375, 1.57079637, -4.37113883e-8, lambda x: f(-1) / x),
    (1.1875, 0.982793748, -2.51314241e-8, lambda x: (x - f(1.5)) / (f(1) + f(1.5) * x)),
    (0.6875, 0.785398185, -2.18556941e-8, lambda x: (x - f(1)) / (x + f(1))),
    (0.4375, 0.463647604, 5.01215869e-9, lambda x: (f(2) * x - f(1)) / (f(2) + x)),
]


def atan_sum(x, base_hi, base_lo, sign):
    hi, lo, t = np.zeros_like(x), np.zeros_like(x), x.copy()
    done = np.zeros(x.shape, bool)
    for lower, head, tail, reduce in ATAN_REGIONS:
        here = ~done & (x >= f(lower))
        hi, lo = np.where(here, f(head), hi), np.where(here, f(tail), lo)
        t = np.where(here, reduce(x).astype(f), t)
        done |= here
    atan_t = (t + odd_correction(t, (t * t).astype(f), ATAN)).astype(f)
    head = (base_hi + sign * hi).astype(f)
    head_error = ((base_hi - head) + sign * hi).astype(f)
    return (head + (head_error + base_lo + sign * (lo + atan_t))).astype(f)


def atan(x):
    r = atan_sum(np.abs(x), f(0), f(0), f(1))
    return np.where(x < 0, -r, r).astype(f)


def asin(x):
    ax = np.abs(x)
    small = (ax + odd_correction(ax, (ax * ax).astype(f), ASIN)).astype(f)
    z = ((f(1) - ax) * f(0.5)).astype(f)
    w = np.sqrt(z).astype(f)
    c = odd_correction(w, z, ASIN)
    near_half = f(0.785398185) + ((f(0.785398185) - f(2) * w) + (f(-4.37113883e-8) - f(2) * c))
    near_one = f(1.57079637) - (f(2) * (w + c) + f(4.37113883e-8))
    r = np.where(ax < f(0.5), small, np.where(ax < f(0.923), near_half, near_one)).astype(f)
    return np.where(x < 0, -r, r).astype(f)


def acos(x):
    ax = np.abs(x)
    small = f(1.57079637) - (x - (f(-4.37113883e-8) - odd_correction(x, (x * x).astype(f), ASIN)))
    z = ((f(1) - ax) * f(0.5)).astype(f)
    w = np.sqrt(z).astype(f)
    twice = (f(2) * (w + odd_correction(w, z, ASIN))).astype(f)
    large = np.where(x < 0, f(3.14159274) - (twice + f(8.74227766e-8)), twice)
    return np.where(ax < f(0.5), small, large).astype(f)


def tanh(x):
    ax = np.abs(x)
    small = (ax + odd_correction(ax, (ax * ax).astype(f), TANH)).astype(f)
    large = (f(1) - f(2) / (exp(f(2) * ax) + f(1))).astype(f)
    r = np.where(ax < f(1.2207031e-4), ax, np.where(ax < f(0.625), small, np.where(ax < f(9.01), large, f(1))))
    return np.where(x < 0, -r, r).astype(f)


def sinh(x):
    ax = np.abs(x)
    small = (ax + odd_correction(ax, (ax * ax).astype(f), SINH)).astype(f)
    q, e = exp_reduced(np.minimum(ax, f(88)))
    scale = ((np.minimum(e, 127) + 127).astype(np.uint32) << 23).view(f)
    large = (f(0.5) * (scale + (scale * q - f(1) / (scale + scale * q)))).astype(f)
    r = np.where(ax < f(2.4414062e-4), ax, np.where(ax < f(1), small, large))
    return np.where(x < 0, -r, r).astype(f)


# op: (model, reference, first and last bit pattern of the positive domain); both signs run.
OPS = {
    "atan": (atan, np.arctan, 0x00000001, 0x7F800000),
    "asin": (asin, np.arcsin, 0x00000001, 0x3F800001),
    "acos": (acos, np.arccos, 0x00000000, 0x3F800001),
    "tanh": (tanh, np.tanh, 0x00000001, 0x41200000),
    "sinh": (sinh, np.sinh, 0x00000001, 0x42B00000),
}


def sweep(model, reference, first, last, step, negative):
    worst, worst_input = -1, None
    chunk = 1 << 24
    for start in range(first, last, chunk * step):
        bits = np.arange(start, min(start + chunk * step, last), step, dtype=np.uint32)
        if negative:
            bits |= np.uint32(0x80000000)
        x = bits.view(f)
        with np.errstate(all="ignore"):
            d = distance(model(x), reference(x.astype(np.float64)))
        index = int(np.argmax(d))
        if d[index] > worst:
            worst, worst_input = int(d[index]), float(x[index])
    return worst, worst_input


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--op", choices=sorted(OPS))
    parser.add_argument("--step", type=int, default=1)
    arguments = parser.parse_args()
    for name, (model, reference, first, last) in OPS.items():
        if arguments.op not in (None, name):
            continue
        for negative in (False, True):
            worst, worst_input = sweep(model, reference, first, last, arguments.step, negative)
            print(f"{name}: max {worst} ulps at {worst_input!r}")

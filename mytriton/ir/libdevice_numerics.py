"""The interpreter's meaning of libdevice's functions whose results numpy has no one function for:
the IEEE operations in a given rounding mode (``add_rz``, ``sqrt_ru``, ``float2int_rd``,
``ll2float_ru``, ...), the bit functions, and the special functions (erfinv, Bessel, ...).

Rounding modes are exact. An fp32 result is found from a candidate within an ulp of the exact
value (numpy's round-to-nearest result, or the nearest float32 of an exact float64 pair) and a
*comparator* telling the sign of ``v - exact`` for any float64 ``v`` of at most 25 significant
bits (a float32 value or the midpoint of two), computed exactly in float64 (the product of two
such numbers is exact there). fp64 results in a directed mode go through Python's ``Fraction``.
"""
from __future__ import annotations

import math

import numpy as np

MODES = ("rn", "rz", "rd", "ru")
MODE_TEXT = {"rn": "to nearest even", "rz": "toward zero", "rd": "down", "ru": "up"}
F32, F64 = np.float32, np.float64


# --- exact pieces in float64 -----------------------------------------------------------------------

def two_sum(a, b):
    """(s, e) with s = fl(a + b) and s + e == a + b exactly (Knuth), for finite a, b."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def _split(a):
    c = 134217729.0 * a                      # 2**27 + 1 (Veltkamp): a == hi + lo, 26 bits each
    hi = c - (c - a)
    return hi, a - hi


def two_prod(a, b):
    """(p, e) with p = fl(a * b) and p + e == a * b exactly (Dekker), barring overflow."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _sign(x):
    return np.sign(x).astype(np.int8)


def pair_comparator(s, e):
    """sign(v - (s + e)) for the exact value s + e (|e| <= ulp(s) / 2)."""
    def cmp(v):
        d = v - s               # exact when v and s are close; far apart, |d| > |e| keeps its sign
        return _sign(np.where(np.isinf(v), v, d - e))
    return cmp


# --- rounding an exact value to float32 or float64 -------------------------------------------------

def round_to(c, cmp, mode: str):
    """The value of float type ``c.dtype`` that ``mode`` rounds the exact value to, given candidates
    ``c`` (each within an ulp of it, or the infinity it rounds to nearest) and ``cmp``."""
    c = np.asarray(c)
    t = c.dtype.type
    sc = cmp(c.astype(F64))
    lo = np.where(sc > 0, np.nextafter(c, t(-np.inf)), c)       # lo <= exact <= hi, neighbours
    hi = np.where(sc < 0, np.nextafter(c, t(np.inf)), c)
    if mode == "rd":
        return lo
    if mode == "ru":
        return hi
    if mode == "rz":
        return np.where(hi <= 0, hi, lo)
    if t is F64:
        raise ValueError("round_to: round-to-nearest float64 results come from numpy or Fraction")
    big = 2.0 ** 128                         # the midpoint past FLT_MAX is the one towards 2**128
    lo64 = np.where(np.isinf(lo), -big, lo.astype(F64))
    hi64 = np.where(np.isinf(hi), big, hi.astype(F64))
    sm = cmp((lo64 + hi64) / 2)              # (exact: 25 significant bits)
    even = (lo.view(np.uint32) & 1) == 0
    return np.where(sm > 0, lo, np.where(sm < 0, hi, np.where(even, lo, hi)))


def _zero_sum_sign(r, a, b, mode: str):
    """IEEE's sign of the exact zero sum a + b (a == -b, or two zeros): a's when a and b are zeros of
    one sign, else -0 when rounding down and +0 otherwise; ``r`` elsewhere."""
    with np.errstate(all="ignore"):
        exact_zero = a + b == 0                  # (fl(a + b) is 0 exactly when a + b is)
    both = (a == 0) & (b == 0) & (np.signbit(a) == np.signbit(b))
    zero = np.where(both, a, F64(-0.0) if mode == "rd" else F64(0.0)).astype(r.dtype)
    return np.where(exact_zero, zero, r)


def _finite(*xs):
    ok = np.ones(np.broadcast(*xs).shape, bool)
    for x in xs:
        ok &= np.isfinite(x)
    return ok


def _f32_op(exact_fn, rn_fn, mode, *xs, valid=None):
    """An fp32 operation in ``mode``: ``rn_fn`` (numpy, round to nearest) where the exact result is
    not a finite number (``valid``: where it is; by default where the operands are finite), else
    ``exact_fn(rn, *float64 operands) -> (candidates, comparator)`` rounded."""
    xs = [np.asarray(x, F32) for x in xs]
    with np.errstate(all="ignore"):
        rn = np.asarray(rn_fn(*xs), F32)
        if mode == "rn" or rn.size == 0:
            return rn
        ok = _finite(*xs) if valid is None else valid
        wide = [np.where(ok, x, 1).astype(F64) for x in xs]
        c, cmp = exact_fn(np.where(ok, rn, 1), *wide)
        return np.where(ok, round_to(np.asarray(c, F32), cmp, mode), rn).astype(F32)


def f32_add(mode, x, y):
    def exact(rn, a, b):
        s, e = two_sum(a, b)
        return s.astype(F32), pair_comparator(s, e)
    r = _f32_op(exact, np.add, mode, x, y)
    return _zero_sum_sign(r, np.asarray(x, F32).astype(F64), np.asarray(y, F32).astype(F64), mode)


def f32_sub(mode, x, y):
    return f32_add(mode, x, -np.asarray(y, F32))


def f32_mul(mode, x, y):
    return _f32_op(lambda rn, a, b: (rn, pair_comparator(a * b, 0.0)), np.multiply, mode, x, y)


def f32_fma(mode, x, y, z):
    def exact(rn, a, b, c):
        s, e = two_sum(a * b, c)                 # (a * b exact in float64)
        return s.astype(F32), pair_comparator(s, e)
    r = _f32_op(exact, _fma_f32_rn, mode, x, y, z)
    p = np.asarray(x, F32).astype(F64) * np.asarray(y, F32).astype(F64)
    with np.errstate(all="ignore"):
        return _zero_sum_sign(r, p, np.asarray(z, F32).astype(F64), mode)


def _fma_f32_rn(x, y, z):
    """x * y + z rounded once to float32 (nearest)."""
    a, b, c = (np.asarray(v, F64) for v in (x, y, z))
    with np.errstate(all="ignore"):
        s, e = two_sum(a * b, c)
        plain = (a * b + c).astype(F32)
        ok = _finite(a, b, c) & np.isfinite(s)
        out = round_to(np.where(ok, s, 0).astype(F32), pair_comparator(np.where(ok, s, 0), np.where(ok, e, 0)), "rn")
    return _zero_sum_sign(np.where(ok, out, plain), a * b, c, "rn")


def f32_div(mode, x, y):
    def exact(rn, a, b):          # sign(v - a / b) = sign(v * b - a) * sign(b), v * b exact
        return rn, lambda v: _sign(np.where(np.isinf(v), v, (v * b - a) * np.sign(b)))
    x, y = np.asarray(x, F32), np.asarray(y, F32)
    return _f32_op(exact, np.true_divide, mode, x, y, valid=_finite(x, y) & (y != 0))


def f32_rcp(mode, x):
    return f32_div(mode, np.ones_like(np.asarray(x, F32)), x)


def f32_sqrt(mode, x):
    def exact(rn, a):
        return rn, lambda v: _sign(np.where(v < 0, -1.0, np.where(np.isinf(v), 1.0, v * v - a)))
    x = np.asarray(x, F32)
    return _f32_op(exact, np.sqrt, mode, x, valid=np.isfinite(x) & (x > 0))


def f32_rsqrt_rn(x):
    """1 / sqrt(x) correctly rounded to float32: v compared with the exact value by v*v*x vs 1."""
    a = np.asarray(x, F32)
    with np.errstate(all="ignore"):
        wide = a.astype(F64)
        c = (1.0 / np.sqrt(wide)).astype(F32)

        def cmp(v):
            p = v * v                                   # exact
            hi, lo = two_prod(p, wide)
            return _sign(np.where(v <= 0, -1.0, np.where(np.isinf(v), 1.0, (hi - 1.0) + lo)))
        ok = (a > 0) & np.isfinite(a)
        out = round_to(np.where(ok, c, F32(1)), cmp, "rn")
        return np.where(ok, out, (1.0 / np.sqrt(a)).astype(F32))


def from_pair_f32(mode, s, e):
    """The exact value s + e (float64 pair) rounded to float32 in ``mode``."""
    s, e = np.asarray(s, F64), np.asarray(e, F64)
    with np.errstate(all="ignore"):
        ok = np.isfinite(s)
        ss, ee = np.where(ok, s, 0.0), np.where(ok, e, 0.0)
        out = round_to(ss.astype(F32), pair_comparator(ss, ee), mode)
        return np.where(ok, out, s.astype(F32))


def from_pair_f64(mode, s, e):
    s, e = np.asarray(s, F64), np.asarray(e, F64)
    if mode == "rn":
        return s
    with np.errstate(all="ignore"):
        ok = np.isfinite(s)
        out = round_to(np.where(ok, s, 0.0), pair_comparator(np.where(ok, s, 0.0), np.where(ok, e, 0.0)), mode)
        return np.where(ok, out, s)


def _int_pair(x):
    """An int64 or uint64 array as an exact float64 pair (s, e)."""
    x = np.asarray(x)
    u = x.astype(np.uint64) if x.dtype.kind == "u" else x.astype(np.int64)
    low = (u & np.asarray(0xFFFFFFFF, u.dtype)).astype(F64)
    high = (u - (u & np.asarray(0xFFFFFFFF, u.dtype))).astype(F64)      # (a multiple of 2**32: exact)
    return two_sum(high, low)


def int_to_f32(mode, x):
    x = np.asarray(x)
    if x.dtype.itemsize <= 4:
        return from_pair_f32(mode, x.astype(F64), 0.0)
    return from_pair_f32(mode, *_int_pair(x))


def int_to_f64(mode, x):
    x = np.asarray(x)
    if x.dtype.itemsize <= 4:
        return x.astype(F64)
    return from_pair_f64(mode, *_int_pair(x))


_ROUND = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}


def float_to_int(mode, x, bits: int, signed: bool):
    """x rounded to an integer in ``mode``, clamped to the destination's range, NaN to 0 (PTX's cvt
    to an integer: the libdevice functions' code)."""
    r = _ROUND[mode](np.asarray(x, F64))
    lo, hi = (-2 ** (bits - 1), 2 ** (bits - 1) - 1) if signed else (0, 2 ** bits - 1)
    dtype = np.dtype(f"{'' if signed else 'u'}int{bits}")
    over, under = r >= float(hi) + 1, r < float(lo)       # (hi + 1: a power of 2, exact)
    inside = np.where(np.isnan(r) | over | under, 0, r).astype(dtype)
    return np.where(over, dtype.type(hi), np.where(under, dtype.type(lo), inside))


def round_half_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(1.0, x), t)


# --- fp64 operations in a directed mode, exactly -------------------------------------------------

def _f64_rounded(exact, mode: str) -> float:
    """The exact rational ``exact`` (a Fraction) rounded to float64 in ``mode``."""
    from fractions import Fraction
    try:
        c = float(exact)                         # (correctly rounded to nearest)
    except OverflowError:
        c = math.inf if exact > 0 else -math.inf
    if c == 0:
        c = math.copysign(0.0, exact)
    if mode == "rn":
        return c
    fc = None if math.isinf(c) else Fraction(c)
    if fc is None:
        above = c > 0
    elif fc == exact:
        return c
    else:
        above = fc > exact
    if mode == "rd" or (mode == "rz" and exact > 0):
        return math.nextafter(c, -math.inf) if above else c
    return c if above else math.nextafter(c, math.inf)


def f64_op(kind: str, mode: str, *xs):
    """add, sub, mul, div, rcp, fma or sqrt of float64 operands in ``mode``, element by element
    (numpy's own result where the mode cannot matter: non-finite operands, exact results)."""
    xs = [np.asarray(x, F64) for x in xs]
    shape = np.broadcast(*xs).shape
    xs = [np.broadcast_to(x, shape) for x in xs]
    with np.errstate(all="ignore"):
        rn = _F64_RN[kind](*xs)
    if mode == "rn" and kind != "fma":
        return rn
    out = np.array(rn, F64, copy=True).reshape(shape)
    todo = np.ones(shape, bool)
    if kind == "fma" and mode == "rn":
        fast, sure = _fma_f64_rn(*xs)
        out = np.where(sure, fast, out)
        todo = ~sure
    for idx in map(tuple, np.argwhere(todo)):
        vals = [float(x[idx]) for x in xs]
        if not all(math.isfinite(v) for v in vals) or not math.isfinite(rn[idx]) and kind == "sqrt":
            continue
        r = _f64_exact(kind, mode, vals)
        if r is not None:
            out[idx] = r
    return out


def _fma_f64_rn(a, b, c):
    """x * y + z rounded once to float64, vectorized: the product split exactly (Dekker), the sum
    of the three parts rounded once; ``sure`` where that rounding cannot be a double rounding (its
    residual far from half an ulp), the other elements left to exact rational arithmetic."""
    with np.errstate(all="ignore"):
        p, e = two_prod(a, b)
        s1, e1 = two_sum(p, c)
        t = e1 + e
        r, d = two_sum(s1, t)
        half = np.abs(np.spacing(r)) / 2
        ok = _finite(a, b, c, p, e, r) & (np.abs(a * b) < 2.0 ** 1000) & (np.abs(p) > 2.0 ** -960)
        sure = ok & (np.abs(np.abs(d) - half) > 2.0 ** -50 * np.abs(t) + 2.0 ** -1070)
        return np.where(r == 0, a * b + c, r), sure


_F64_RN = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
           "rcp": lambda x: 1.0 / x, "sqrt": np.sqrt, "fma": lambda x, y, z: x * y + z}


def _f64_exact(kind: str, mode: str, v: list) -> float | None:
    from fractions import Fraction       # (imported on first use: the interpreter's fp64 directed modes)
    if kind in ("div", "rcp") and v[-1] == 0:
        return None
    if kind == "sqrt":
        if v[0] <= 0:
            return None
        c = math.sqrt(v[0])
        sq = Fraction(c) ** 2
        if sq == v[0] or mode == "rn":
            return c
        below = sq < Fraction(v[0])               # c < sqrt(x)
        down = mode in ("rd", "rz")
        return (c if below else math.nextafter(c, -math.inf)) if down else \
            (math.nextafter(c, math.inf) if below else c)
    f = [Fraction(x) for x in v]
    exact = {"add": lambda: f[0] + f[1], "sub": lambda: f[0] - f[1], "mul": lambda: f[0] * f[1],
             "div": lambda: f[0] / f[1], "rcp": lambda: 1 / f[0], "fma": lambda: f[0] * f[1] + f[2]}[kind]()
    if exact == 0:
        if kind == "mul" or kind == "div" or kind == "rcp":
            return None                          # (numpy's signed zero)
        a, b = (v[0], v[1] if kind == "add" else -v[1]) if kind != "fma" else (v[0] * v[1], v[2])
        if a == 0 and b == 0 and math.copysign(1, a) == math.copysign(1, b):
            return a
        return -0.0 if mode == "rd" else 0.0
    return _f64_rounded(exact, mode)


# --- integers' bits --------------------------------------------------------------------------------

def _bits(x):
    x = np.asarray(x)
    return x.view(np.dtype(f"uint{x.dtype.itemsize * 8}")), x.dtype.itemsize * 8


def popc(x):
    u, n = _bits(x)
    out = np.zeros(u.shape, np.int32)
    for i in range(n):
        out += ((u >> np.asarray(i, u.dtype)) & np.asarray(1, u.dtype)).astype(np.int32)
    return out


def clz(x):
    u, n = _bits(x)
    out = np.full(u.shape, n, np.int32)
    for i in range(n):             # the highest set bit wins: count from the bottom up
        out = np.where((u >> np.asarray(i, u.dtype)) & np.asarray(1, u.dtype), n - 1 - i, out)
    return out.astype(np.int32)


def ffs(x):
    """1 + the index of the lowest set bit; 0 for 0."""
    u, n = _bits(x)
    out = np.zeros(u.shape, np.int32)
    for i in reversed(range(n)):
        out = np.where((u >> np.asarray(i, u.dtype)) & np.asarray(1, u.dtype), i + 1, out)
    return out


def brev(x):
    u, n = _bits(x)
    out = np.zeros_like(u)
    one = np.asarray(1, u.dtype)
    for i in range(n):
        out |= ((u >> np.asarray(i, u.dtype)) & one) << np.asarray(n - 1 - i, u.dtype)
    return out.view(np.asarray(x).dtype)


def byte_perm(x, y, s):
    """PTX ``prmt.b32`` (default mode), as ``__byte_perm``: byte k of the result is byte
    ``s >> 4k & 7`` of the 8 bytes of (y:x); a selector nibble's bit 3 replicates that byte's sign."""
    xs, ys, ss = np.broadcast_arrays(*(np.asarray(v).astype(np.int64) & 0xFFFFFFFF for v in (x, y, s)))
    src = xs | (ys << 32)
    out = np.zeros(xs.shape, np.int64)
    for k in range(4):
        nib = (ss >> (4 * k)) & 0xF
        byte = (src >> ((nib & 7) * 8)) & 0xFF
        byte = np.where(nib & 8, np.where(byte & 0x80, 0xFF, 0), byte)
        out |= byte << (8 * k)
    return out.astype(np.uint32).view(np.int32)


def mul24(x, y):
    """The low 32 bits of the product of the low 24 bits (sign-extended for signed operands)."""
    x, y = np.asarray(x), np.asarray(y)
    signed = x.dtype.kind == "i"
    a, b = (v.astype(np.int64) & 0xFFFFFF for v in (x, y))
    if signed:
        a, b = (np.where(v & 0x800000, v - 0x1000000, v) for v in (a, b))
    return (a * b & 0xFFFFFFFF).astype(np.uint32).view(x.dtype)


def halving_add(x, y, up: bool):
    """(x + y) >> 1 (+ 1 before the shift for ``up``) without overflow."""
    x, y = np.asarray(x), np.asarray(y)
    s = x.astype(np.int64) + y.astype(np.int64) + (1 if up else 0)
    return (s >> 1).astype(x.dtype)


def sad(x, y, z):
    """|x - y| + z (z unsigned); the result's bits in x's type."""
    x, y = np.asarray(x), np.asarray(y)
    d = np.abs(x.astype(np.int64) - y.astype(np.int64))
    return ((d + np.asarray(z).astype(np.int64)) & 0xFFFFFFFF).astype(np.uint32).view(x.dtype)


def mulhi(x, y, signed: bool):
    """The high half of the 2N-bit product, of the values (signed types, ``signed``) or of their bits."""
    x, y = np.asarray(x), np.asarray(y)
    bits = x.dtype.itemsize * 8
    xs, ys = np.broadcast_arrays(x, y)
    wrap = 2 ** bits

    def value(v):
        return int(v) if signed else int(v) % wrap
    out = [((value(a) * value(b)) >> bits) % wrap for a, b in zip(xs.ravel(), ys.ravel())]
    return np.array(out, np.dtype(f"uint{bits}")).reshape(xs.shape).view(x.dtype)


def hiloint2double(hi, lo):
    h = np.asarray(hi).astype(np.int64) & 0xFFFFFFFF
    lo_ = np.asarray(lo).astype(np.int64) & 0xFFFFFFFF
    return ((h << 32) | lo_).astype(np.uint64).view(F64)


def double_word(x, high: bool):
    u = np.asarray(x, F64).view(np.uint64)
    w = (u >> np.uint64(32)) if high else (u & np.uint64(0xFFFFFFFF))
    return w.astype(np.uint32).view(np.int32)


# --- special functions -----------------------------------------------------------------------------

def wide(fn):
    """A function computed in float64 and rounded once to the first argument's float type."""
    def run(*xs):
        dtype = next((np.asarray(x).dtype for x in xs if np.asarray(x).dtype.kind == "f"), np.dtype(F64))
        with np.errstate(all="ignore"):
            return np.asarray(fn(*(np.asarray(x, F64) for x in xs))).astype(dtype)
    return run


def vectorized(fn):
    return np.vectorize(fn, otypes=[F64])


def _tgamma(x):
    if math.isnan(x) or x == -math.inf:
        return math.nan
    if x == 0:
        return math.copysign(math.inf, x)
    if x < 0 and x == math.floor(x):
        return math.nan
    try:
        return math.gamma(x)
    except OverflowError:
        return math.inf


def _lgamma(x):
    if math.isnan(x):
        return math.nan
    if math.isinf(x) or (x <= 0 and x == math.floor(x)):
        return math.inf
    try:
        return math.lgamma(x)
    except OverflowError:
        return math.inf


tgamma, lgamma = vectorized(_tgamma), vectorized(_lgamma)
erf, erfc = vectorized(math.erf), vectorized(math.erfc)


def _erfinv(y: float) -> float:
    """The x with erf(x) = y: an initial guess refined by Newton's method on erf (or, in the tails,
    on erfc, which keeps its relative accuracy there)."""
    if math.isnan(y) or abs(y) > 1:
        return math.nan
    if abs(y) == 1:
        return math.copysign(math.inf, y)
    if y == 0:
        return y
    return math.copysign(_erfcinv(1 - abs(y)) if abs(y) > 0.5 else _erfinv_newton(abs(y)), y)


def _erfinv_newton(y: float) -> float:
    a = 0.147                                       # (Winitzki's approximation as the start)
    ln = math.log(1 - y * y)
    t = 2 / (math.pi * a) + ln / 2
    x = math.sqrt(math.sqrt(t * t - ln / a) - t)
    for _ in range(6):
        x -= (math.erf(x) - y) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
    return x


def _erfcinv(y: float) -> float:
    """The x with erfc(x) = y, 0 <= y <= 2. Below 0.5, Newton's method on log erfc(x) - log y,
    with log erfc(x) = log erfcx(x) - x^2 (no underflow however far the tail)."""
    if math.isnan(y) or y < 0 or y > 2:
        return math.nan
    if y == 0:
        return math.inf
    if y == 2:
        return -math.inf
    if y > 1:
        return -_erfcinv(2 - y)                     # (2 - y exact)
    if y > 0.5:
        return _erfinv_newton(1 - y)
    x, log_y = math.sqrt(-math.log(y)), math.log(y)
    for _ in range(100):
        cx = _erfcx(x)
        step = (math.log(cx) - x * x - log_y) * math.sqrt(math.pi) * cx / 2
        x += step
        if abs(step) <= 1e-17 * x:
            break
    return x


erfinv, erfcinv = vectorized(_erfinv), vectorized(_erfcinv)


def _erfcx(x: float) -> float:
    """exp(x^2) erfc(x); past x = 10 its asymptotic series (every term below 1e-17 of the sum by the
    time it starts to grow)."""
    if math.isnan(x):
        return x
    if x < 10:
        return math.exp(x * x) * math.erfc(x) if x > -26.7 else math.inf
    term, total, k = 1.0, 1.0, 1
    while abs(term) > 1e-17:
        term *= -(2 * k - 1) / (2 * x * x)
        total += term
        k += 1
    return total / (x * math.sqrt(math.pi))


erfcx = vectorized(_erfcx)


_RSQRT2_HI = 1 / math.sqrt(2)
_RSQRT2_LO = 6.268583589525109e-17           # 1/sqrt(2) - _RSQRT2_HI


def normcdf(x):
    """erfc(-x / sqrt 2) / 2, the argument's rounding error corrected to first order (in the tail
    erfc's relative error is 2 t^2 times its argument's)."""
    x = np.asarray(x, F64)
    with np.errstate(all="ignore"):
        t, e = two_prod(-x, _RSQRT2_HI)
        e = e - x * _RSQRT2_LO
        c = erfc(t)
        return 0.5 * (c - e * (2 / math.sqrt(math.pi)) * np.exp(-t * t))


def normcdfinv(p):
    return -math.sqrt(2) * erfcinv(2 * np.asarray(p, F64))


def _bessel_i(x: float, n: int) -> float:
    """I_n(x) (n = 0, 1) by its power series: positive terms, no cancellation."""
    if math.isnan(x):
        return x
    if abs(x) > 720:                     # (past e**709: no float64)
        return math.inf if n == 0 else math.copysign(math.inf, x)
    h = abs(x) / 2
    term = 1.0 if n == 0 else h
    total, k = term, 0
    while term > 1e-17 * total or k < h:
        k += 1
        term *= h * h / (k * (k + n))
        total += term
    return total if n == 0 else math.copysign(total, x)


i0, i1 = vectorized(lambda x: _bessel_i(x, 0)), vectorized(lambda x: _bessel_i(x, 1))


def _scipy_special(name: str):
    """scipy.special's function (the interpreter's Bessel functions of the first and second kind);
    a clear error where scipy is not installed."""
    def run(*xs):
        try:
            import scipy.special as sp
        except ImportError:
            raise RuntimeError(f"the interpreter computes libdevice's {name} with scipy.special, which is "
                               f"not installed (pip install scipy); the CUDA backend needs no scipy") from None
        fn = {"j0": sp.j0, "j1": sp.j1, "y0": sp.y0, "y1": sp.y1, "jn": sp.jv, "yn": sp.yn}[name]
        return fn(*xs)
    return run


def bessel(name: str):
    fn = _scipy_special(name)
    if name in ("jn", "yn"):               # (n, x): n an int32
        return lambda n, x: wide(lambda xx: fn(np.asarray(n), xx))(x)
    return wide(fn)


def sinpi(x, cos: bool = False):
    """sin(pi x) (cos(pi x)) with x reduced exactly mod 2 first, so integers give exact zeros."""
    x = np.asarray(x, F64)
    with np.errstate(all="ignore"):
        r = np.fmod(x, 2.0)                           # exact
        if cos:
            r = np.fmod(r + 0.5, 2.0)                 # (exact for |r| < 2 in float64 of an fp32's value)
        q = np.round(r * 2)                           # nearest quarter period, -4..4
        t = r - q / 2                                 # exact, |t| <= 1/4
        s = np.where(q % 2 == 0, np.sin(np.pi * t), np.cos(np.pi * t))
        s = np.where(np.mod(q, 4) >= 2, -s, s)
        zero = t == 0
        s = np.where(zero & (q % 2 == 0), np.copysign(0.0, x) if not cos else 0.0, s)
        return np.where(np.isfinite(x), s, np.nan)


def ilogb(x):
    x = np.asarray(x, F64)
    _, e = np.frexp(x)
    out = (e - 1).astype(np.int32)
    out = np.where(x == 0, np.int32(-2**31), out)
    out = np.where(np.isnan(x), np.int32(-2**31), out)
    return np.where(np.isinf(x), np.int32(2**31 - 1), out).astype(np.int32)


def logb(x):
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        _, e = np.frexp(x.astype(F64))
        out = (e - 1).astype(F64)
        out = np.where(x == 0, -np.inf, out)
        return np.where(np.isfinite(x), out, np.abs(x.astype(F64))).astype(x.dtype)


def remainder(x, y):
    """IEEE's remainder x - n y, n the integer nearest x / y (ties to even): exact."""
    return np.vectorize(lambda a, b: math.remainder(a, b) if (math.isfinite(a) and b != 0 and not math.isnan(b))
                        else math.nan, otypes=[F64])(np.asarray(x, F64), np.asarray(y, F64))


def fdim(x, y):
    x, y = np.asarray(x), np.asarray(y)
    with np.errstate(all="ignore"):
        d = x - y
    return np.where(np.isnan(d), d, np.where(x > y, d, np.zeros_like(d)))


def saturate(x):
    x = np.asarray(x)
    return np.where(np.isnan(x), np.zeros_like(x), np.clip(x, 0, 1))


def norm(*xs):
    """sqrt of the sum of squares, in float64 with scaling left to hypot's overflow-free sum."""
    acc = np.zeros(np.broadcast(*xs).shape, F64)
    for x in xs:
        acc = np.hypot(acc, np.asarray(x, F64))
    return acc

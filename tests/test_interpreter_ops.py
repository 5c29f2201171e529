"""Table-driven tests of every elementwise op in the CPU interpreter: each op, each dtype it takes,
edge values (NaN, ±0, ±inf, INT_MIN/INT_MAX, negative operands of // and %), against numpy/Python
references written here independently of the op registry."""
import math

import numpy as np
import pytest

import mytriton as triton
import mytriton.language as tl

BLOCK = 64


@triton.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    if OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "div":
        r = x / y
    elif OP == "floordiv":
        r = x // y
    elif OP == "mod":
        r = x % y
    elif OP == "and":
        r = x & y
    elif OP == "or":
        r = x | y
    elif OP == "xor":
        r = x ^ y
    elif OP == "shl":
        r = x << y
    elif OP == "shr":
        r = x >> y
    elif OP == "maximum":
        r = tl.maximum(x, y)
    elif OP == "minimum":
        r = tl.minimum(x, y)
    elif OP == "maximum_nan":
        r = tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "minimum_nan":
        r = tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "cmp_lt":
        r = x < y
    elif OP == "cmp_le":
        r = x <= y
    elif OP == "cmp_gt":
        r = x > y
    elif OP == "cmp_ge":
        r = x >= y
    elif OP == "cmp_eq":
        r = x == y
    else:
        r = x != y
    tl.store(out_ptr + offs, r, mask=mask)


@triton.jit
def unary_kernel(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if OP == "neg":
        r = -x
    elif OP == "invert":
        r = ~x
    elif OP == "exp":
        r = tl.exp(x)
    elif OP == "exp2":
        r = tl.exp2(x)
    elif OP == "log":
        r = tl.log(x)
    elif OP == "log2":
        r = tl.log2(x)
    elif OP == "sqrt":
        r = tl.sqrt(x)
    elif OP == "rsqrt":
        r = tl.rsqrt(x)
    elif OP == "sin":
        r = tl.sin(x)
    elif OP == "cos":
        r = tl.cos(x)
    elif OP == "floor":
        r = tl.floor(x)
    elif OP == "ceil":
        r = tl.ceil(x)
    else:
        r = tl.abs(x)
    tl.store(out_ptr + offs, r, mask=mask)


@triton.jit
def cast_kernel(x_ptr, out_ptr, n, DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask).to(DTYPE), mask=mask)


@triton.jit
def bitcast_kernel(x_ptr, out_ptr, n, DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask).to(DTYPE, bitcast=True), mask=mask)


@triton.jit
def where_kernel(c_ptr, x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = tl.load(c_ptr + offs, mask=mask)
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(c, x, y), mask=mask)


# --- edge values --------------------------------------------------------------------------------

INF, NAN = math.inf, math.nan
FLOAT_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, -7.0, 7.5, 1e-3, INF, -INF, NAN, 1e30, -1e30,
               3.0e38, 1e-40, -1e-40]
I32_MIN, I32_MAX = -2**31, 2**31 - 1
I64_MIN, I64_MAX = -2**63, 2**63 - 1
INT_EDGES = {
    np.int32: [0, 1, -1, 2, -2, 3, -3, 7, -7, 100, -100, 255, I32_MAX, I32_MIN, I32_MAX - 1, I32_MIN + 1],
    np.int64: [0, 1, -1, 3, -3, 7, -7, 2**40, -2**40, I64_MAX, I64_MIN, I64_MAX - 1, I64_MIN + 1, I32_MAX,
               I32_MIN],
}
NAMES = {np.float32: "fp32", np.float64: "fp64", np.int32: "i32", np.int64: "i64", np.bool_: "i1"}


def edge_pairs(dtype, rng, extra=40):
    """Every pair of edge values, then random ones, as two arrays of ``dtype``."""
    if dtype is np.bool_:
        xs, ys = zip(*[(a, b) for a in (False, True) for b in (False, True)])
        return np.array(xs * 5, np.bool_), np.array(ys * 5, np.bool_)
    edges = FLOAT_EDGES if np.issubdtype(dtype, np.floating) else INT_EDGES[dtype]
    xs, ys = zip(*[(a, b) for a in edges for b in edges])
    if np.issubdtype(dtype, np.floating):
        rx, ry = rng.standard_normal(extra) * 100, rng.standard_normal(extra) * 10
    else:
        info = np.iinfo(dtype)
        rx = rng.integers(info.min, info.max, extra, dtype=dtype, endpoint=True)
        ry = rng.integers(-1000, 1000, extra, dtype=dtype)
    return (np.concatenate([np.array(xs, dtype), np.asarray(rx).astype(dtype)]),
            np.concatenate([np.array(ys, dtype), np.asarray(ry).astype(dtype)]))


# --- references -----------------------------------------------------------------------------------

def wrap(values, dtype):
    """Python ints → two's-complement ``dtype`` (what a GPU's integer unit gives)."""
    bits = np.iinfo(dtype).bits
    return np.array([((int(v) + 2**(bits - 1)) % 2**bits) - 2**(bits - 1) for v in values], dtype)


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def c_mod(a: int, b: int) -> int:
    return a - b * c_div(a, b)


def ints(x, y, fn, dtype):
    return wrap([fn(int(a), int(b)) for a, b in zip(x, y)], dtype)


def floats(x, y, fn, dtype):
    """Each element in exact (Python float64) arithmetic, rounded once to ``dtype``: for + - * / on
    fp32 operands this is the correctly rounded fp32 result."""
    with np.errstate(all="ignore"):
        return np.array([fn(float(a), float(b)) for a, b in zip(x, y)], np.float64).astype(dtype)


def _fdiv(a, b):
    if b == 0:
        if a == 0 or math.isnan(a):
            return NAN
        return math.copysign(INF, a) * math.copysign(1.0, b)
    return a / b


def _fmax(a, b):
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return a if a > b else b


def _fmin(a, b):
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return a if a < b else b


def _max_nan(a, b):
    return a + b if math.isnan(a) or math.isnan(b) else _fmax(a, b)


def _min_nan(a, b):
    return a + b if math.isnan(a) or math.isnan(b) else _fmin(a, b)


def _fmod(a, b):
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or b == 0:
        return NAN
    return math.fmod(a, b)


FLOAT_BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": _fdiv,
    "mod": _fmod, "maximum": _fmax, "minimum": _fmin, "maximum_nan": _max_nan, "minimum_nan": _min_nan,
}
INT_BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "floordiv": c_div, "mod": c_mod, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b, "shl": lambda a, b: a << b, "shr": lambda a, b: a >> b,
    "maximum": max, "minimum": min, "maximum_nan": max, "minimum_nan": min,
}
COMPARE = {"cmp_lt": lambda a, b: a < b, "cmp_le": lambda a, b: a <= b, "cmp_gt": lambda a, b: a > b,
           "cmp_ge": lambda a, b: a >= b, "cmp_eq": lambda a, b: a == b, "cmp_ne": lambda a, b: a != b}


def run_binary(op, x, y, out_dtype):
    sentinel = np.array(123).astype(out_dtype)
    out = np.full(len(x) + 5, sentinel, out_dtype)        # the tail past n must stay untouched
    n = len(x)
    binary_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, OP=op, BLOCK=BLOCK)
    assert (out[n:] == sentinel).all()
    return out[:n]


def assert_same_floats(got, want, check_sign=True):
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])
    if check_sign:
        np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


BINARY_CASES = (
    [(op, d) for op in FLOAT_BINARY for d in (np.float32, np.float64)]
    + [(op, d) for op in INT_BINARY for d in (np.int32, np.int64)]
    + [(op, d) for op in ("and", "or", "xor") for d in (np.bool_,)]
    + [(op, d) for op in COMPARE for d in (np.float32, np.float64, np.int32, np.int64)]
    + [(op, np.bool_) for op in ("cmp_eq", "cmp_ne")]
)


@pytest.mark.parametrize("op,dtype", BINARY_CASES, ids=[f"{o}-{NAMES[d]}" for o, d in BINARY_CASES])
def test_binary_op(op, dtype):
    rng = np.random.default_rng(hash((op, NAMES[dtype])) % 2**32)
    x, y = edge_pairs(dtype, rng)
    if op in ("floordiv", "mod") and dtype not in (np.float32, np.float64):
        x, y = x[y != 0], y[y != 0]                        # division by zero is undefined in C
    if op in ("shl", "shr"):
        y = (np.abs(y.astype(np.int64)) % np.iinfo(dtype).bits).astype(dtype)   # shifts < bit width
    if op in COMPARE:
        want = np.array([COMPARE[op](a, b) for a, b in zip(x.tolist(), y.tolist())], np.bool_)
        np.testing.assert_array_equal(run_binary(op, x, y, np.bool_), want)
    elif dtype is np.bool_:
        want = np.array([INT_BINARY[op](a, b) for a, b in zip(x.tolist(), y.tolist())], np.bool_)
        np.testing.assert_array_equal(run_binary(op, x, y, np.bool_), want)
    elif dtype in (np.float32, np.float64):
        got = run_binary(op, x, y, dtype)
        assert_same_floats(got, floats(x, y, FLOAT_BINARY[op], dtype), check_sign=op not in ("maximum", "minimum", "maximum_nan", "minimum_nan"))
    else:
        np.testing.assert_array_equal(run_binary(op, x, y, dtype), ints(x, y, INT_BINARY[op], dtype))


def test_int_true_division_is_fp32():
    x = np.array([7, -7, 1, I32_MAX, 0, 5], np.int32)
    y = np.array([2, 2, 3, 1, 5, -1], np.int32)
    got = run_binary("div", x, y, np.float32)
    want = (x.astype(np.float32) / y.astype(np.float32))        # Triton: int / int divides in fp32
    np.testing.assert_array_equal(got, want)


def test_int_min_floordiv_minus_one_wraps():
    for dtype, lo in ((np.int32, I32_MIN), (np.int64, I64_MIN)):
        x, y = np.array([lo], dtype), np.array([-1], dtype)
        assert run_binary("floordiv", x, y, dtype)[0] == lo
        assert run_binary("mod", x, y, dtype)[0] == 0


# --- unary ops ------------------------------------------------------------------------------------

UNARY_FLOAT = {
    # Triton: -x is 0 - x, so -(+0.0) is +0.0
    "neg": lambda a: 0.0 - a, "abs": abs, "floor": math.floor, "ceil": math.ceil,
    "exp": math.exp, "exp2": lambda a: 2.0 ** a, "log": math.log, "log2": math.log2, "sqrt": math.sqrt,
    "rsqrt": lambda a: 1.0 / math.sqrt(a), "sin": math.sin, "cos": math.cos,
}
EXACT_UNARY = ("neg", "abs", "floor", "ceil", "sqrt")     # correctly rounded (or exact) in IEEE


def _unary_ref(op, a):
    if math.isnan(a):
        return NAN
    try:
        if op in ("floor", "ceil") and math.isinf(a):
            return a
        if op in ("floor", "ceil") and a == 0:
            return a                                          # keeps the sign of zero
        if op in ("floor", "ceil"):
            r = float(UNARY_FLOAT[op](a))
            return math.copysign(r, a) if r == 0 else r
        if op in ("log", "log2") and a == 0:
            return -INF
        if op in ("log", "log2", "sqrt", "rsqrt") and a < 0:
            return NAN
        if op == "rsqrt" and a == 0:
            return math.copysign(INF, a)
        if op == "sqrt" and a == 0:
            return a
        if op in ("sin", "cos") and math.isinf(a):
            return NAN
        return float(UNARY_FLOAT[op](a))
    except OverflowError:
        return INF


def run_unary(op, x, out_dtype):
    sentinel = np.array(77).astype(out_dtype)
    out = np.full(len(x) + 3, sentinel, out_dtype)
    n = len(x)
    unary_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, OP=op, BLOCK=BLOCK)
    assert (out[n:] == sentinel).all()
    return out[:n]


UNARY_CASES = [(op, d) for op in UNARY_FLOAT for d in (np.float32, np.float64)]


@pytest.mark.parametrize("op,dtype", UNARY_CASES, ids=[f"{o}-{NAMES[d]}" for o, d in UNARY_CASES])
def test_unary_float_op(op, dtype):
    rng = np.random.default_rng(7)
    x = np.concatenate([np.array(FLOAT_EDGES, dtype), (rng.standard_normal(50) * 20).astype(dtype),
                        rng.uniform(0, 5, 20).astype(dtype)])
    got = run_unary(op, x, dtype)
    want = np.array([_unary_ref(op, float(a)) for a in x], np.float64).astype(dtype)
    if op in EXACT_UNARY:
        assert_same_floats(got, want)
    else:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
        ulp = 4 * np.finfo(dtype).eps
        np.testing.assert_allclose(got, want, rtol=ulp, atol=np.finfo(dtype).tiny)


UNARY_INT_CASES = [(op, d) for op in ("neg", "abs", "invert") for d in (np.int32, np.int64)] + [("invert", np.bool_)]


@pytest.mark.parametrize("op,dtype", UNARY_INT_CASES, ids=[f"{o}-{NAMES[d]}" for o, d in UNARY_INT_CASES])
def test_unary_int_op(op, dtype):
    if dtype is np.bool_:
        x = np.array([False, True, True, False, True])
        np.testing.assert_array_equal(run_unary(op, x, np.bool_), ~x)
        return
    x = np.array(INT_EDGES[dtype], dtype)
    fn = {"neg": lambda a: -a, "abs": abs, "invert": lambda a: ~a}[op]
    np.testing.assert_array_equal(run_unary(op, x, dtype), wrap([fn(int(a)) for a in x], dtype))


# --- where and cast -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64, np.int64, np.bool_],
                         ids=lambda d: NAMES[d])
def test_where(dtype):
    rng = np.random.default_rng(3)
    n = 101
    c = rng.random(n) < 0.5
    x = (rng.standard_normal(n) * 100).astype(dtype)
    y = (rng.standard_normal(n) * 100).astype(dtype)
    if dtype is np.float32:
        x[:4] = [NAN, -0.0, INF, 1.0]
    out = np.zeros(n, dtype)
    where_kernel[(triton.cdiv(n, BLOCK),)](c, x, y, out, n, BLOCK=BLOCK)
    want = np.array([a if k else b for k, a, b in zip(c, x, y)], dtype)
    np.testing.assert_array_equal(out, want)


CAST_CASES = [
    # (source dtype, destination, source values, reference per element)
    (np.float32, tl.int32, [0.0, -0.0, 1.9, -1.9, 2.5, -2.5, 1e9, -1e9, 2147483520.0], lambda a: int(a)),
    (np.int32, tl.float32, [0, 1, -1, 2**24 + 1, -(2**24 + 3), I32_MAX, I32_MIN], float),
    (np.float32, tl.int1, [0.0, -0.0, 1.0, NAN, -INF, 1e-40], lambda a: a != 0),
    (np.bool_, tl.float32, [True, False], float),
    (np.bool_, tl.int32, [True, False], int),
    (np.int32, tl.int1, [0, 1, -1, 256, I32_MIN], lambda a: a != 0),
    (np.float32, tl.float64, [0.1, -0.0, INF, NAN, 3.0e38, 1e-40], float),
    (np.float64, tl.float32, [0.1, 1e-50, 1e300, -1e300, NAN, 1 + 2**-30], float),
    (np.int64, tl.int32, [2**32 + 5, -(2**32) - 5, 2**31, I64_MIN, I64_MAX], int),
    (np.int32, tl.int64, [I32_MIN, I32_MAX, -1], int),
    (np.int32, tl.int8, [127, 128, -129, 255, 256], int),
]


@pytest.mark.parametrize("src,dst,values,ref", CAST_CASES,
                         ids=[f"{NAMES[c[0]]}-to-{c[1].name}" for c in CAST_CASES])
def test_cast(src, dst, values, ref):
    from mytriton.ir.ops import np_dtype
    out_dtype = np_dtype(dst)
    x = np.array(values, src)
    out = np.zeros(len(x), out_dtype)
    cast_kernel[(1,)](x, out, len(x), DTYPE=dst, BLOCK=16)
    raw = [ref(v) for v in x.tolist()]
    if np.issubdtype(out_dtype, np.integer):
        want = wrap(raw, out_dtype)
    else:
        with np.errstate(over="ignore"):
            want = np.array(raw, np.float64).astype(out_dtype)    # one rounding, from the exact value
    if np.issubdtype(out_dtype, np.floating):
        assert_same_floats(out, want)
    else:
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("src, dst, dtype", [(np.float32, np.int32, tl.int32), (np.int64, np.float64, tl.float64),
                                             (np.uint32, np.int32, tl.int32), (np.int8, np.uint8, tl.uint8)])
def test_bitcast(src, dst, dtype):
    x = np.array([0, 1, -1, 2.5, 1e30, -7, 100, 3], np.float64).astype(src) if src is np.float32 else \
        np.array([0, 1, 2**7 - 1, 5, 77, 3, 2**6, 9], np.int64).astype(src)
    x[1] = ~x[1] if np.issubdtype(src, np.integer) else -0.0
    out = np.zeros(len(x) + 3, dst)
    bitcast_kernel[(1,)](x, out, len(x), DTYPE=dtype, BLOCK=16)
    np.testing.assert_array_equal(out[:len(x)].view(src), x)
    assert not out[len(x):].any()                              # the masked tail stays untouched


def test_registry_ops_are_all_covered():
    """Every elementwise op of the registry appears in this table (a new op needs a test here)."""
    from mytriton.ir.ops import OPS
    covered = ({op for op, _ in BINARY_CASES} | set(UNARY_FLOAT) | {"invert", "where", "cast", "bitcast", "addptr",
                                                                      "load", "store"}
               | {"atomic_rmw", "atomic_cas"}                      # tests/test_atomics.py
               | {"device_print"}                                  # tests/test_extras.py
               | {name for name in OPS if name.startswith("libdevice.")})   # tests/test_libdevice.py
    elementwise = {name for name, d in OPS.items() if d.elementwise}
    assert elementwise <= covered, f"untested elementwise ops: {sorted(elementwise - covered)}"

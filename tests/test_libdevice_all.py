"""Every function of Triton's ``extra.cuda.libdevice``: the names, NVRTC compiling every signature
for sm_80 and sm_90a, and the interpreter's meaning of each against references that do not share
its code: IEEE's operations in each rounding mode bit for bit against exact rational arithmetic
(fp32; fp64 by the modes' order and spacing), conversions against Python's integers, the bit
functions against Python's ints, the special functions against tabulated values and scipy."""
import math
from fractions import Fraction

import numpy as np
import pytest

import mytriton
from mytriton.ir.libdevice import FUNCTIONS, NOT_IN_LIBDEVICE_MODULE
from mytriton.language.triton_names import TRITON_LIBDEVICE_NAMES
from tests import libdevice_every as E

RNG = np.random.default_rng(11)
N = 2000 + 37                       # (a masked tail: not a multiple of the block)
F32_MAX = float(np.finfo(np.float32).max)
TINY = float(np.finfo(np.float32).smallest_subnormal)


def _f32_specials():
    v = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, F32_MAX, -F32_MAX, TINY, -TINY, 2.0 ** -126, 1 + 2 ** -23,
         2.0 ** -24, 3.0, 0.1, -0.75, 2.0 ** 100, 2.0 ** -100, 1e-40, 7.0]
    return np.array(v, np.float32)


def _f32_block(j: int) -> np.ndarray:
    """Block j of the fp32 inputs: the specials against each other, random bit patterns (every
    exponent), and values near block 0's (so sums cancel and quotients are near 1)."""
    sp = _f32_specials()
    grid = np.array(np.meshgrid(sp, sp)).reshape(2, -1)[min(j, 1)] if j < 2 else np.resize(sp, sp.size ** 2)
    bits = RNG.integers(0, 2 ** 32, N, dtype=np.uint64).astype(np.uint32).view(np.float32)
    bits = np.where(np.isnan(bits), np.float32(1.5), bits)
    out = bits.copy()
    out[:grid.size] = grid
    return out


@pytest.fixture(scope="module")
def inputs():
    f32 = np.stack([_f32_block(j) for j in range(4)])
    near = slice(600, 1400)                   # block 1 near block 0 there, block 2 near their product
    f32[1, near] = (f32[0, near].astype(np.float64) * RNG.uniform(-2, 2, 800)).astype(np.float32)
    f32[:, 1400:1700] = RNG.uniform(-4, 4, (4, 300)).astype(np.float32)
    f32[2, 1400:1700] = -(f32[0, 1400:1700].astype(np.float64) * f32[1, 1400:1700]).astype(np.float32)
    # ties: 1 + 2**-24 is halfway between 1 and the next float32; an fma whose float64 sum is one
    f32[:3, 1700:1704] = [[1, 1, 1 + 2 ** -12, 3], [2 ** -24, -2 ** -25, 1 + 2 ** -12, 1], [0, 0, 2 ** -60, 2 ** -24]]
    f64 = RNG.uniform(-8, 8, (4, N)) * 2.0 ** RNG.integers(-60, 60, (4, N))
    f64[:, :6] = [[0.0, -0.0, 1.0, np.inf, np.nan, 1e308]] * 4
    ints = {"i32": RNG.integers(-2 ** 31, 2 ** 31, (4, N)), "u32": RNG.integers(0, 2 ** 32, (4, N)),
            "i64": RNG.integers(-2 ** 63, 2 ** 63, (4, N), dtype=np.int64),
            "u64": RNG.integers(0, 2 ** 64, (4, N), dtype=np.uint64)}
    ints["i32"][:, :12] = [0, 1, -1, 2 ** 31 - 1, -2 ** 31, 2 ** 24 + 1, 16777217, -16777217, 255, 0x80, 3, 7]
    ints["i32"][:, 12:200] = RNG.integers(-300, 300, (4, 188))            # (small: shifts, orders, ldexp)
    ints["i64"][:, :8] = [0, 1, -1, 2 ** 63 - 1, -2 ** 63, 2 ** 53 + 1, -(2 ** 62 + 2 ** 38 + 1), 2 ** 24 + 1]
    ints["u64"][:, :4] = np.array([0, 2 ** 64 - 1, 2 ** 53 + 1, 2 ** 63 + 2 ** 39 + 1], np.uint64)
    return {"fp32": f32, "fp64": f64, **ints}


@pytest.fixture(scope="module")
def results(inputs, tmp_path_factory):
    k = E.kernel(tmp_path_factory.mktemp("libdevice_every"))
    outs = E.run(k, inputs, N)
    return {(name, sig): outs[res][slot] for name, sig, res, slot in E.calls()[0]}


def test_every_name_of_triton_libdevice_is_a_function():
    from mytriton.language.extra.cuda import libdevice
    assert set(libdevice.__all__) == set(TRITON_LIBDEVICE_NAMES)
    for name in TRITON_LIBDEVICE_NAMES:
        assert callable(getattr(libdevice, name)), name
    assert set(FUNCTIONS) - NOT_IN_LIBDEVICE_MODULE == set(TRITON_LIBDEVICE_NAMES)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_nvrtc_compiles_every_signature(target, tmp_path):
    """One kernel calls every signature: each symbol declared once for the device and called."""
    ck = mytriton.compile(E.kernel(tmp_path), E.SIGNATURE, {"BLOCK": 64}, target=target)
    assert ck.asm["cubin"]
    cu = ck.asm["cu"]
    body = cu[cu.index("__global__"):]
    for name, sig, _, _ in E.calls()[0]:
        symbol = FUNCTIONS[name].signatures[sig][0]
        assert cu.count(f" {symbol}(") >= 1 and f"{symbol}(" in body, symbol


# --- IEEE operations in each rounding mode, fp32 bit for bit ----------------------------------------

def _step(v, up: bool):
    with np.errstate(over="ignore"):
            return np.nextafter(np.float32(v), np.float32(np.inf if up else -np.inf))


def _ref_round(cmp, start, mode: str) -> np.float32:
    """The float32 ``mode`` rounds the exact value to, found by stepping from ``start`` with
    ``cmp(Fraction v) = sign(v - exact)`` (±inf compare as beyond every finite value)."""
    def sign(v):
        return 1 if v == np.inf else -1 if v == -np.inf else cmp(Fraction(float(v)))
    lo = np.float32(start)
    while sign(lo) > 0:
        lo = _step(lo, False)
    while sign(_step(lo, True)) <= 0:
        lo = _step(lo, True)
    hi = lo if sign(lo) == 0 else _step(lo, True)
    if mode == "rd":
        return lo
    if mode == "ru":
        return hi
    if mode == "rz":
        return hi if hi <= 0 else lo
    ends = [Fraction(2 ** 128) * (1 if v > 0 else -1) if np.isinf(v) else Fraction(float(v)) for v in (lo, hi)]
    s = cmp((ends[0] + ends[1]) / 2)
    if s != 0:
        return lo if s > 0 else hi
    return lo if int(np.float32(lo).view(np.uint32)) % 2 == 0 else hi


def _sgn(x) -> int:
    return (x > 0) - (x < 0)


def _exact_f32(kind: str, xs: list):
    """(comparator, start) for the exact result of ``kind`` on float32 values, or None where the
    result is not a finite number or is an exact zero (then IEEE's sign rules: ``_zero``)."""
    if not all(math.isfinite(x) for x in xs):
        return None
    f = [Fraction(x) for x in xs]
    if kind == "sqrt":
        if xs[0] <= 0:
            return None
        return (lambda v: -1 if v < 0 else _sgn(v * v - f[0])), math.sqrt(xs[0])
    if kind in ("div", "rcp") and xs[-1] == 0:
        return None
    exact = {"add": lambda: f[0] + f[1], "sub": lambda: f[0] - f[1], "mul": lambda: f[0] * f[1],
             "div": lambda: f[0] / f[1], "rcp": lambda: 1 / f[0], "fma": lambda: f[0] * f[1] + f[2]}[kind]()
    if exact == 0:
        return None
    start = float(max(min(exact, Fraction(F32_MAX)), Fraction(-F32_MAX)))
    return (lambda v: _sgn(v - exact)), start


def _zero(kind: str, xs: list, mode: str, ieee_nearest: np.float32) -> np.float32:
    """An exact zero result's sign (sums: -0 rounding down unless both terms are +0)."""
    if kind in ("add", "sub", "fma") and all(math.isfinite(x) for x in xs):
        a, b = (xs[0], xs[1] if kind == "add" else -xs[1]) if kind != "fma" else (xs[0] * xs[1], xs[2])
        if a == 0 and b == 0 and math.copysign(1, a) == math.copysign(1, b):
            return np.float32(a)
        if a + b == 0:
            return np.float32(-0.0 if mode == "rd" else 0.0)
    return ieee_nearest


ARITY = {"add": 2, "sub": 2, "mul": 2, "div": 2, "rcp": 1, "sqrt": 1, "fma": 3}
NUMPY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "rcp": lambda x: 1 / x,
         "sqrt": np.sqrt, "fma": lambda x, y, z: (x.astype(np.float64) * y + z).astype(np.float32)}


@pytest.mark.parametrize("mode", ["rn", "rz", "rd", "ru"])
@pytest.mark.parametrize("kind", sorted(ARITY))
def test_fp32_operation_in_each_rounding_mode_is_exact(kind, mode, inputs, results):
    xs = inputs["fp32"][:ARITY[kind]]
    got = results[(f"{kind}_{mode}", ("fp32",) * ARITY[kind])]
    assert got.dtype == np.float32
    with np.errstate(all="ignore"):
        nearest = NUMPY[kind](*xs).astype(np.float32)          # (non-finite results: IEEE's, any mode)
    bad = []
    for i in range(N):
        vals = [float(x[i]) for x in xs]
        exact = _exact_f32(kind, vals)
        want = _zero(kind, vals, mode, nearest[i]) if exact is None else _ref_round(*exact, mode)
        if not (np.float32(want).view(np.uint32) == got[i].view(np.uint32) or np.isnan(want) and np.isnan(got[i])):
            bad.append((vals, want, got[i]))
    assert not bad, f"{len(bad)} wrong, e.g. {bad[:3]}"


def test_ties_round_to_even_and_an_fma_rounds_once(inputs, results):
    x = inputs["fp32"]
    at = slice(1700, 1704)
    assert results[("add_rn", ("fp32", "fp32"))][at][0] == 1.0                      # 1 + 2**-24: tie, even
    assert results[("add_ru", ("fp32", "fp32"))][at][0] == np.float32(1 + 2 ** -23)
    assert results[("add_rd", ("fp32", "fp32"))][at][1] == np.float32(1 - 2 ** -24)  # 1 - 2**-25, down
    # (1 + 2**-12)^2 + 2**-60 = 1 + 2**-11 + 2**-24 + 2**-60, just past a midpoint: rounded up. Rounded
    # to float64 first it would be the midpoint, and then to float32 the even 1 + 2**-11.
    fma = results[("fma_rn", ("fp32",) * 3)][at]
    assert x[2, 1702] == 2.0 ** -60 and fma[2] == np.float32(1 + 2 ** -11 + 2 ** -23)
    assert np.float32(np.float64(x[0, 1702]) * x[1, 1702] + x[2, 1702]) == np.float32(1 + 2 ** -11)


@pytest.mark.parametrize("kind", sorted(ARITY))
def test_fp64_operations_in_each_mode_bracket_the_exact_result(kind, inputs, results):
    """fp64: rd <= rn <= ru, ru one ulp above rd where inexact, rz the one toward zero, rn numpy's."""
    sig = ("fp64",) * ARITY[kind]
    r = {m: results[(f"{kind}_{m}", sig)] for m in ("rn", "rz", "rd", "ru")}
    xs = inputs["fp64"][:ARITY[kind]]
    with np.errstate(all="ignore"):
        if kind != "fma":
            np.testing.assert_array_equal(r["rn"], NUMPY[kind](*xs))
    ok = np.isfinite(r["rd"]) & np.isfinite(r["ru"])
    assert ok.sum() > N // 3                  # (sqrt: the non-negative half)
    rd, rn, ru, rz = (r[m][ok] for m in ("rd", "rn", "ru", "rz"))
    assert (rd <= rn).all() and (rn <= ru).all()
    assert ((ru == rd) | (ru == np.nextafter(rd, np.inf))).all()
    assert (rz == np.where(rn > 0, rd, ru)).all() | (rz == 0).all()
    assert (ru != rd).sum() > N // 4


def test_fp64_fma_rounds_once():
    got = FUNCTIONS["fma_rn"].np_fn(np.float64(1 + 2 ** -52), np.float64(1 + 2 ** -52), np.float64(-1.0))
    assert got == 2 ** -51 + 2 ** -104
    assert FUNCTIONS["fma_rd"].np_fn(np.float64(1.0), np.float64(1.0), np.float64(-1.0)) == 0.0
    assert math.copysign(1, FUNCTIONS["fma_rd"].np_fn(np.float64(1.0), np.float64(1.0), np.float64(-1.0))) == -1


def test_rsqrt_rn_is_correctly_rounded(inputs, results):
    x = inputs["fp32"][0]
    got = results[("rsqrt_rn", ("fp32",))]
    for i in range(N):
        v = float(x[i])
        if not (math.isfinite(v) and v > 0):
            continue
        want = _ref_round(lambda m: -1 if m <= 0 else _sgn(m * m * Fraction(v) - 1), 1 / math.sqrt(v), "rn")
        assert want == got[i], (v, want, got[i])


# --- conversions ------------------------------------------------------------------------------------

INT_RANGES = {"int": (32, True), "uint": (32, False), "ll": (64, True), "ull": (64, False)}


def _to_int(v: float, mode: str, bits: int, signed: bool) -> int:
    if math.isnan(v):
        return 0
    lo, hi = (-2 ** (bits - 1), 2 ** (bits - 1) - 1) if signed else (0, 2 ** bits - 1)
    if math.isinf(v):
        return hi if v > 0 else lo
    f = Fraction(v)
    r = {"rz": math.trunc, "rd": math.floor, "ru": math.ceil, "rn": round}[mode](f)   # (round: ties even)
    return min(max(r, lo), hi)


@pytest.mark.parametrize("src", ["float", "double"])
@pytest.mark.parametrize("dst", sorted(INT_RANGES))
def test_float_to_integer_in_each_mode(src, dst, inputs, results):
    bits, signed = INT_RANGES[dst]
    x = inputs["fp32" if src == "float" else "fp64"][0].copy()
    for mode in ("rn", "rz", "rd", "ru"):
        got = results[(f"{src}2{dst}_{mode}", ("fp32" if src == "float" else "fp64",))]
        assert got.dtype == np.dtype(f"int{bits}")              # (Triton's: the unsigned ones' bits as signed)
        want = np.array([_to_int(float(v), mode, bits, signed) % 2 ** bits for v in x], np.uint64)
        np.testing.assert_array_equal(got.view(f"uint{bits}").astype(np.uint64), want, err_msg=f"{src}2{dst}_{mode}")


@pytest.mark.parametrize("src", ["int", "uint", "ll", "ull", "double"])
def test_conversion_to_fp32_in_each_mode(src, inputs, results):
    t = {"int": "i32", "uint": "u32", "ll": "i64", "ull": "u64", "double": "fp64"}[src]
    x = inputs[t][0]
    for mode in ("rn", "rz", "rd", "ru"):
        got = results[(f"{src}2float_{mode}", (t,))]
        for i in range(0, N, 3):
            v = x[i]
            if t == "fp64" and not math.isfinite(v):
                assert np.isnan(got[i]) if np.isnan(v) else got[i] == v
                continue
            exact = Fraction(int(v)) if t != "fp64" else Fraction(float(v))
            if exact == 0:
                assert got[i] == 0 and math.copysign(1, got[i]) == math.copysign(1, float(v))
                continue
            start = float(max(min(exact, Fraction(F32_MAX)), Fraction(-F32_MAX)))
            want = _ref_round(lambda m, e=exact: _sgn(m - e), start, mode)
            assert want.view(np.uint32) == got[i].view(np.uint32), (src, mode, v, want, got[i])


@pytest.mark.parametrize("src", ["ll", "ull"])
def test_64_bit_integers_to_fp64_in_each_mode(src, inputs, results):
    t = "i64" if src == "ll" else "u64"
    x = inputs[t][0]
    r = {m: results[(f"{src}2double_{m}", (t,))] for m in ("rn", "rz", "rd", "ru")}
    np.testing.assert_array_equal(r["rn"], x.astype(np.float64))
    for i in range(N):
        exact = int(x[i])
        assert Fraction(float(r["rd"][i])) <= exact <= Fraction(float(r["ru"][i]))
        assert r["ru"][i] in (r["rd"][i], np.nextafter(r["rd"][i], np.inf))
        assert r["rz"][i] == (r["rd"][i] if exact >= 0 else r["ru"][i])
    assert (r["ru"] != r["rd"]).sum() > N // 2
    for name in ("int2double_rn", "uint2double_rn"):
        tt = "i32" if name.startswith("int") else "u32"
        np.testing.assert_array_equal(results[(name, (tt,))], inputs[tt][0].astype(np.float64))


def test_llrint_and_llround(inputs, results):
    x = inputs["fp32"][0]
    got_rint, got_round = results[("llrint", ("fp32",))], results[("llround", ("fp32",))]
    for i in range(N):
        v = float(x[i])
        assert got_rint[i] == _to_int(v, "rn", 64, True)
        if math.isfinite(v):
            away = math.floor(abs(Fraction(v)) + Fraction(1, 2)) * (1 if v >= 0 else -1)
            assert got_round[i] == min(max(away, -2 ** 63), 2 ** 63 - 1), v


# --- bits ---------------------------------------------------------------------------------------------

def _u(v, bits):
    return int(v) % 2 ** bits


def _s(v, bits):
    v %= 2 ** bits
    return v - 2 ** bits if v >= 2 ** (bits - 1) else v


BIT_REFERENCES = {
    "popc": lambda v, b: bin(_u(v, b)).count("1"),
    "clz": lambda v, b: b - _u(v, b).bit_length(),
    "ffs": lambda v, b: (_u(v, b) & -_u(v, b)).bit_length(),
    "brev": lambda v, b: _s(int(format(_u(v, b), f"0{b}b")[::-1], 2), b),
}


@pytest.mark.parametrize("name", sorted(BIT_REFERENCES))
def test_bit_functions(name, inputs, results):
    for t, bits in (("i32", 32), ("i64", 64)):
        x = inputs[t][0]
        got = results[(name, (t,))]
        want = [BIT_REFERENCES[name](int(v), bits) for v in x]
        assert got.tolist() == want, (name, t)


def test_integer_functions(inputs, results):
    x, y, z = (inputs["i32"][j].tolist() for j in range(3))
    ux, uy, uz = (inputs["u32"][j].tolist() for j in range(3))

    def check(name, sig, fn, *cols):
        got = results[(name, sig)].tolist()
        want = [fn(*vals) for vals in zip(*cols)]
        assert got == want, name

    def prmt(a, b, s):
        src, out = _u(a, 32) | _u(b, 32) << 32, 0
        for k in range(4):
            nib = s >> 4 * k & 0xF
            byte = src >> 8 * (nib & 7) & 0xFF
            out |= ((0xFF if byte & 0x80 else 0) if nib & 8 else byte) << 8 * k
        return _s(out, 32)

    def low24(v, signed):
        v = _u(v, 32) & 0xFFFFFF
        return v - (1 << 24) if signed and v & 0x800000 else v
    i32, u32 = ("i32", "i32"), ("u32", "u32")
    check("byte_perm", ("i32",) * 3, prmt, x, y, z)
    check("mul24", i32, lambda a, b: _s(low24(a, True) * low24(b, True), 32), x, y)
    check("mul24", u32, lambda a, b: _u(low24(a, False) * low24(b, False), 32), ux, uy)
    check("hadd", i32, lambda a, b: (a + b) >> 1, x, y)
    check("rhadd", i32, lambda a, b: (a + b + 1) >> 1, x, y)
    check("hadd", u32, lambda a, b: (a + b) >> 1, ux, uy)
    check("rhadd", u32, lambda a, b: (a + b + 1) >> 1, ux, uy)
    check("sad", ("i32", "i32", "u32"), lambda a, b, c: _s(abs(a - b) + c, 32), x, y, ux)
    check("sad", ("u32",) * 3, lambda a, b, c: _u(abs(a - b) + c, 32), ux, uy, uz)
    check("mulhi", i32, lambda a, b: (a * b) >> 32, x, y)
    check("mulhi", u32, lambda a, b: (a * b) >> 32, ux, uy)
    check("mulhi", ("i64", "i64"), lambda a, b: (a * b) >> 64, inputs["i64"][0].tolist(), inputs["i64"][1].tolist())
    check("mulhi", ("u64", "u64"), lambda a, b: (a * b) >> 64, inputs["u64"][0].tolist(), inputs["u64"][1].tolist())
    check("abs", ("i32",), lambda a: _s(abs(a), 32), x)
    check("abs", ("i64",), lambda a: _s(abs(a), 64), inputs["i64"][0].tolist())


def test_reinterpretations(inputs, results):
    f32, f64, i32, u32, i64 = (inputs[t][0] for t in ("fp32", "fp64", "i32", "u32", "i64"))
    assert results[("float_as_int", ("fp32",))].tolist() == f32.view(np.int32).tolist()
    assert results[("float_as_uint", ("fp32",))].tolist() == f32.view(np.int32).tolist()
    assert results[("int_as_float", ("i32",))].view(np.int32).tolist() == i32.astype(np.int32).tolist()
    assert results[("uint_as_float", ("u32",))].view(np.uint32).tolist() == u32.astype(np.uint32).tolist()
    assert results[("double_as_longlong", ("fp64",))].tolist() == f64.view(np.int64).tolist()
    assert results[("longlong_as_double", ("i64",))].view(np.int64).tolist() == i64.tolist()
    bits = f64.view(np.uint64)
    hi, lo = results[("double2hiint", ("fp64",))], results[("double2loint", ("fp64",))]
    assert [_u(v, 32) for v in hi.tolist()] == (bits >> np.uint64(32)).tolist()
    assert [_u(v, 32) for v in lo.tolist()] == (bits & np.uint64(0xFFFFFFFF)).tolist()
    x, y = inputs["i32"][0], inputs["i32"][1]
    want = [(_u(a, 32) << 32 | _u(b, 32)) for a, b in zip(x.tolist(), y.tolist())]
    assert results[("hiloint2double", ("i32", "i32"))].view(np.uint64).tolist() == want


# --- floating-point functions -------------------------------------------------------------------------

def test_exponent_and_scaling_functions(inputs, results):
    x = inputs["fp32"][0]
    n = inputs["i32"][0]
    ilogb, logb = results[("ilogb", ("fp32",))], results[("logb", ("fp32",))]
    for i in range(N):
        v = float(x[i])
        if v == 0 or math.isnan(v):
            assert ilogb[i] == -2 ** 31 and (logb[i] == -np.inf if v == 0 else np.isnan(logb[i]))
        elif math.isinf(v):
            assert ilogb[i] == 2 ** 31 - 1 and logb[i] == np.inf
        else:
            e = math.frexp(v)[1] - 1
            assert ilogb[i] == e and logb[i] == e
    with np.errstate(all="ignore"):
        want = np.array([math.ldexp(float(a), int(b)) if math.isfinite(a) and abs(int(b)) < 1100 else
                         np.ldexp(np.float64(a), int(b)) for a, b in zip(x, n)]).astype(np.float32)
    # (x * 2**n rounded once: the float64 value is exact except where it is below fp32's subnormals)
    for name in ("ldexp", "scalbn"):
        got = results[(name, ("fp32", "i32"))]
        exactly = np.abs(want) > 1e-37
        np.testing.assert_array_equal(got[exactly], want[exactly])


def test_remainder_fdim_nextafter_saturate(inputs, results):
    x, y = inputs["fp32"][0], inputs["fp32"][1]
    rem, fdim, nxt = (results[(n, ("fp32", "fp32"))] for n in ("remainder", "fdim", "nextafter"))
    sat = results[("saturatef", ("fp32",))]
    with np.errstate(all="ignore"):
        _check_remainder_fdim_nextafter_saturate(x, y, rem, fdim, nxt, sat)


def _check_remainder_fdim_nextafter_saturate(x, y, rem, fdim, nxt, sat):
    for i in range(N):
        a, b = float(x[i]), float(y[i])
        if math.isfinite(a) and b != 0 and not math.isnan(b):
            assert rem[i] == math.remainder(a, b), (a, b)
        else:
            assert np.isnan(rem[i])
        assert (np.isnan(fdim[i]) if math.isnan(a - b) or math.isnan(a) else fdim[i] == (np.float32(a - b) if a > b else 0))
        assert nxt[i].view(np.uint32) == np.nextafter(x[i], y[i]).view(np.uint32) or np.isnan(nxt[i])
        assert sat[i] == (0 if math.isnan(a) else min(max(a, 0), 1))


def test_sinpi_and_cospi_are_exact_at_integers_and_halves():
    sinpi, cospi = FUNCTIONS["sinpi"].np_fn, FUNCTIONS["cospi"].np_fn
    x = np.array([0, -0.0, 1, -1, 2, 3.5, 0.5, -0.5, 1e7 + 1, 0.25, 1 / 6], np.float32)
    s, c = sinpi(x), cospi(x)
    assert s[:6].tolist() == [0, 0, 0, 0, 0, -1] and [math.copysign(1, v) for v in s[:4]] == [1, -1, 1, -1]
    assert s[6:8].tolist() == [1, -1] and s[8] == 0
    assert c[:6].tolist() == [1, 1, -1, -1, 1, 0] and c[6:8].tolist() == [0, 0]
    np.testing.assert_allclose(s[9:], np.sin(np.pi * x[9:].astype(np.float64)), rtol=1e-7)


TABLE = {  # (function, argument) -> value, from the functions' definitions (to float64 precision)
    ("erfinv", 0.5): 0.4769362762044699, ("erfinv", -0.9): -1.1630871536766743,
    ("erfcinv", 1e-10): 4.572824967389486, ("erfcinv", 1.5): -0.4769362762044699,
    ("erfcx", 30.0): 0.018795888861416751, ("erfcx", 1.0): 0.42758357615580705,
    ("normcdf", 1.0): 0.8413447460685429, ("normcdfinv", 0.975): 1.959963984540054,
    ("lgamma", 0.5): 0.5723649429247001, ("tgamma", 5.0): 24.0, ("tgamma", -0.5): -3.5449077018110318,
    ("cyl_bessel_i0", 1.0): 1.2660658777520082, ("cyl_bessel_i1", -2.0): -1.5906368546373291,
    ("j0", 1.0): 0.7651976865579666, ("j1", 2.5): 0.4970941024642741, ("y0", 1.0): 0.08825696421567696,
    ("y1", 3.0): 0.32467442479180, ("rcbrt", 8.0): 0.5, ("rhypot", 3.0): 0.2,
}


@pytest.mark.parametrize("key", sorted(TABLE))
def test_special_function_values(key):
    name, x = key
    fn = FUNCTIONS[name]
    if name in ("j0", "j1", "y0", "y1"):
        pytest.importorskip("scipy")
    args = [np.float64(x)] * fn.arity if name != "rhypot" else [np.float64(3.0), np.float64(4.0)]
    got = float(fn.np_fn(*args))
    assert got == pytest.approx(TABLE[key], rel=4e-15)
    got32 = fn.np_fn(*[a.astype(np.float32) for a in args])
    wide = float(fn.np_fn(*[a.astype(np.float32).astype(np.float64) for a in args]))    # (at the fp32 argument)
    assert got32.dtype == np.float32 and float(got32) == pytest.approx(wide, rel=6e-8)


def test_norms_and_gamma_poles():
    assert FUNCTIONS["norm3d"].np_fn(*np.float32([2, 3, 6])) == 7
    assert FUNCTIONS["rnorm4d"].np_fn(*np.float64([1, 1, 1, 1])) == 0.5
    assert FUNCTIONS["tgamma"].np_fn(np.float32(-2)) != FUNCTIONS["tgamma"].np_fn(np.float32(-2))   # NaN
    assert FUNCTIONS["lgamma"].np_fn(np.float32(0)) == np.inf
    assert FUNCTIONS["erfinv"].np_fn(np.float32(1)) == np.inf and np.isnan(FUNCTIONS["erfinv"].np_fn(np.float32(2)))


SCIPY = {"erfinv": "erfinv", "erfcinv": "erfcinv", "erfcx": "erfcx", "normcdfinv": "ndtri",
         "lgamma": "gammaln", "tgamma": "gamma", "cyl_bessel_i0": "i0", "cyl_bessel_i1": "i1", "j0": "j0",
         "j1": "j1", "y0": "y0", "y1": "y1"}
SCIPY_DOMAIN = {"erfinv": (-1, 1), "erfcinv": (0, 2), "normcdfinv": (0, 1), "y0": (0, 30), "y1": (0, 30),
                "erfcx": (-5, 50), "lgamma": (-20, 30), "tgamma": (-20, 30), "cyl_bessel_i0": (-80, 80),
                "cyl_bessel_i1": (-80, 80)}


@pytest.mark.parametrize("name", sorted(SCIPY))
def test_special_functions_against_scipy(name):
    sp = pytest.importorskip("scipy.special")
    lo, hi = SCIPY_DOMAIN.get(name, (-30, 30))
    x = RNG.uniform(lo, hi, 400)
    if name in ("erfcinv", "normcdfinv"):
        x[:20] = 10.0 ** RNG.uniform(-300 if name == "erfcinv" else -30, -1, 20)
    want = getattr(sp, SCIPY[name])(x)
    got = FUNCTIONS[name].np_fn(x)
    np.testing.assert_allclose(got, want, rtol=1e-13 if name not in ("j0", "j1", "y0", "y1") else 0,
                               atol=0 if name not in ("j0", "j1", "y0", "y1") else 1e-15)
    got32 = FUNCTIONS[name].np_fn(x.astype(np.float32))
    want32 = getattr(sp, SCIPY[name])(x.astype(np.float32).astype(np.float64)).astype(np.float32)
    close = np.isclose(got32, want32, rtol=2.4e-7, atol=0, equal_nan=True)
    assert close.mean() == 1.0, x[~close][:5]


def test_normcdf_keeps_its_relative_accuracy_in_the_tail():
    """(scipy's ndtr, erfc(-x / sqrt 2) / 2 as written, is off by 2e-13 at x = -30: mpmath's value)"""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    x = RNG.uniform(-37, 8, 400)
    want = np.array([float(mpmath.ncdf(mpmath.mpf(v))) for v in x])
    np.testing.assert_allclose(FUNCTIONS["normcdf"].np_fn(x), want, rtol=1e-15, atol=0)
    want32 = np.array([float(mpmath.ncdf(mpmath.mpf(float(v)))) for v in x.astype(np.float32)]).astype(np.float32)
    np.testing.assert_allclose(FUNCTIONS["normcdf"].np_fn(x.astype(np.float32)), want32, rtol=1.2e-7, atol=3e-45)


def test_integer_order_bessel_functions(inputs, results):
    sp = pytest.importorskip("scipy.special")
    n, x = inputs["i32"][0] & 15, inputs["fp64"][0]
    np.testing.assert_allclose(results[("jn", ("i32", "fp64"))], sp.jv(n, x), rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(results[("yn", ("i32", "fp64"))], sp.yn(n, x), rtol=1e-13)
    assert len(set((n[:300]).tolist())) == 16


def test_tail_outside_the_mask_is_not_written(tmp_path):
    """n = 70 in blocks of 64: the second block's 58 lanes past n would write into the next slot's
    row; every other row keeps its 7s."""
    k = E.kernel(tmp_path, names={"add_ru", "float2int_rd", "popc"})
    ins = {t: np.ones((4, 70), E.NP[t]) for t in E.DTYPES}
    _, slots = E.calls()
    outs = {t: np.full((max(slots[t], 1), 70), 7, E.NP[t]) for t in E.DTYPES}
    k[(2,)](*[ins[t].ravel() for t in E.DTYPES], *[outs[t].ravel() for t in E.DTYPES], 70, BLOCK=64)
    written = {}
    for name, sig, res, slot in E.calls()[0]:
        if name in ("add_ru", "float2int_rd", "popc"):
            written[(res, slot)] = {"add_ru": 2.0, "float2int_rd": 1, "popc": 1}[name]
    assert len(written) == 5                  # (add_ru of fp32 and fp64, popc of i32 and i64, float2int_rd)
    for t in E.DTYPES:
        for slot in range(outs[t].shape[0]):
            assert (outs[t][slot] == written.get((t, slot), 7)).all(), (t, slot)


def test_dispatch_errors_name_the_types_at_the_line(tmp_path):
    from tests.kernel_files import compile_error
    src = ("import mytriton\nimport mytriton.language as tl\nfrom mytriton.language.extra.cuda import libdevice\n\n\n"
           "@mytriton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr + tl.arange(0, 32))\n"
           "    tl.store(x_ptr + tl.arange(0, 32), libdevice.popc(x))\n")
    text = compile_error(tmp_path / "popc_kernel.py", src, {"x_ptr": "*fp32"})
    assert "popc_kernel.py:9" in text and "libdevice.popc takes (i32) or (i64), got (f32)" in text
    src2 = src.replace("libdevice.popc(x)", "libdevice.add_rz(x)")
    text = compile_error(tmp_path / "add_kernel.py", src2, {"x_ptr": "*fp32"})
    assert "add_kernel.py:9" in text and "libdevice.add_rz takes 2 arguments, got 1" in text


APPROXIMATE = {  # name -> (numpy reference in float64, input range): rounded once, or an approximation's
    "fast_sinf": (np.sin, (-3, 3)), "fast_cosf": (np.cos, (-3, 3)), "fast_tanf": (np.tan, (-1.5, 1.5)),
    "fast_expf": (np.exp, (-20, 20)), "fast_logf": (np.log, (0.01, 50)), "fast_log2f": (np.log2, (0.01, 50)),
    "fast_log10f": (np.log10, (0.01, 50)), "fast_exp10f": (lambda x: 10.0 ** x, (-8, 8)),
    "fast_powf": (np.power, (0.1, 4)), "fast_dividef": (np.divide, (0.5, 4)), "rcbrt": (lambda x: 1 / np.cbrt(x), (0.1, 50)),
    "rhypot": (lambda x, y: 1 / np.hypot(x, y), (-4, 4)), "norm3d": (lambda *v: np.sqrt(sum(a * a for a in v)), (-4, 4)),
    "norm4d": (lambda *v: np.sqrt(sum(a * a for a in v)), (-4, 4)),
    "rnorm3d": (lambda *v: 1 / np.sqrt(sum(a * a for a in v)), (-4, 4)),
    "rnorm4d": (lambda *v: 1 / np.sqrt(sum(a * a for a in v)), (-4, 4)), "rcp64h": (lambda x: 1 / x, (0.5, 4)),
    "sinpi": (lambda x: np.sin(np.pi * x), (-0.2, 0.2)), "cospi": (lambda x: np.cos(np.pi * x), (-0.2, 0.2)),
    "lgamma": (np.vectorize(math.lgamma), (0.1, 30)), "tgamma": (np.vectorize(math.gamma), (0.1, 30)),
    "erfcx": (lambda x: np.exp(x * x) * np.vectorize(math.erfc)(x), (-3, 3)),
    "nextafter": (np.nextafter, (-4, 4)), "finitef": (np.isfinite, (-4, 4)), "isfinited": (np.isfinite, (-4, 4)),
}


@pytest.mark.parametrize("name", sorted(APPROXIMATE))
def test_float_functions_against_numpy(name):
    ref, (lo, hi) = APPROXIMATE[name]
    for sig in FUNCTIONS[name].signatures:
        xs = [RNG.uniform(lo, hi, 300).astype(E.NP[t]) for t in sig]
        got = FUNCTIONS[name].np_fn(*xs)
        assert got.dtype == (np.bool_ if name in ("finitef", "isfinited") else E.NP[sig[0]])
        with np.errstate(all="ignore"):
            want = ref(*(x.astype(np.float64) for x in xs)) if name != "nextafter" else ref(*xs)
        np.testing.assert_allclose(got, want, rtol=2.5e-7 if sig[0] == "fp32" else 2e-15, atol=1e-300)


# (the functions of test_libdevice.py and those this file checks)
TESTED_HERE = (set(APPROXIMATE) | set(SCIPY) | {n for n, _ in TABLE} | set(BIT_REFERENCES)
               | {"normcdf"} | {f"{k}_{m}" for k in ARITY for m in ("rn", "rz", "rd", "ru")} | {"rsqrt_rn", "llrint", "llround"}
               | {f"{s}2{d}_{m}" for s in ("float", "double") for d in INT_RANGES for m in ("rn", "rz", "rd", "ru")}
               | {f"{s}2float_{m}" for s in ("int", "uint", "ll", "ull", "double") for m in ("rn", "rz", "rd", "ru")}
               | {f"{s}2double_{m}" for s in ("ll", "ull") for m in ("rn", "rz", "rd", "ru")}
               | {"int2double_rn", "uint2double_rn", "byte_perm", "mul24", "hadd", "rhadd", "sad", "mulhi", "abs",
                  "float_as_int", "float_as_uint", "int_as_float", "uint_as_float", "double_as_longlong",
                  "longlong_as_double", "double2hiint", "double2loint", "hiloint2double", "ilogb", "logb", "ldexp",
                  "scalbn", "remainder", "fdim", "nextafter", "saturatef", "sinpi", "cospi", "jn", "yn",
                  "norm3d", "rnorm4d", "tgamma", "lgamma", "erfinv"})


def test_fp64_fma_is_rounded_once_on_many_inputs():
    """The vectorized fp64 fma (a split product) against exact rational arithmetic, near-cancelling
    sums included (there the residual decides)."""
    n = 4000
    a = RNG.uniform(-2, 2, n) * 2.0 ** RNG.integers(-30, 30, n)
    b = RNG.uniform(-2, 2, n) * 2.0 ** RNG.integers(-30, 30, n)
    c = -(a * b) * (1 + RNG.uniform(-1e-10, 1e-10, n))
    c[:1000] = RNG.uniform(-2, 2, 1000)
    got = FUNCTIONS["fma_rn"].np_fn(a, b, c)
    for i in range(n):
        exact = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
        assert got[i] == float(exact), (a[i], b[i], c[i])

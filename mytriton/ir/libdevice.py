"""CUDA's math library functions (libdevice) as elementwise ops: every function of Triton 3.6's
``tl.extra.cuda.libdevice`` (197) and the ``tl.math`` functions that Triton computes with them
(``erf``, ``fma``, ``umulhi``, ``sqrt_rn``, ``div_rn``).

Each function is one row of ``FUNCTIONS``: the argument dtypes it takes, each with the libdevice
symbol that computes it and the result dtype (Triton's table: its dispatch is an exact match of
the argument dtypes, else the arguments promoted to a common type and matched again), and its
meaning on numpy arrays for the interpreter. The registry (``ops``) makes an op
``libdevice.<name>`` of each row; the CUDA backend calls the symbol itself -- NVRTC links
libdevice, the library Triton's kernels call -- so a kernel computes what Triton's computes: the
same bits, except where Triton's libdevice, linked with flush-to-zero on, takes other code paths
(acos, asin, atan, atan2, cbrt, erf, hypot, pow, sqrt, asinh, acosh: within 2 ulp on the H200).

The interpreter (``libdevice_numerics``): the IEEE operations in each rounding mode
(``add_rz``, ``sqrt_ru``, ``fma_rd``, ...) and the conversions (``float2int_rd``,
``ll2float_ru``, ...) exactly; the bit functions exactly; the other functions with numpy in
float64, rounded once (within an ulp or two of libdevice's); the Bessel functions of the first
and second kind with scipy where it is installed (else a clear error: the CUDA backend needs no
scipy); the ``fast_*`` approximations as the functions they approximate.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import libdevice_numerics as N


@dataclass(frozen=True)
class Function:
    name: str
    signatures: dict          # (argument dtype names, ...) -> (libdevice symbol, result dtype name)
    np_fn: Callable           # numpy arrays of the argument dtype(s) -> the results
    doc: str = ""

    @property
    def arity(self) -> int:
        return len(next(iter(self.signatures)))

    @property
    def signatures_text(self) -> str:
        """``(fp32) or (fp64)``: the argument types it takes, for messages."""
        return " or ".join("(" + ", ".join(sig) + ")" for sig in self.signatures)


FUNCTIONS: dict[str, Function] = {}


def _add(name, signatures, np_fn, doc=""):
    FUNCTIONS[name] = Function(name, signatures, np_fn, doc)


def _float(name, np_fn, symbol=None, arity=1, result=None, only32=False, doc=""):
    """A function of fp32 (``__nv_<symbol>f``) and fp64 (``__nv_<symbol>``) arguments."""
    symbol = symbol or name
    sigs = {("fp32",) * arity: (f"__nv_{symbol}f", result or "fp32")}
    if not only32:
        sigs[("fp64",) * arity] = (f"__nv_{symbol}", result or "fp64")
    _add(name, sigs, np_fn, doc)


def _fma(x, y, z):
    """x * y + z rounded once to the arguments' type: fp32 exactly (libdevice_numerics), fp64
    through Fraction, halves through float64 (the product of halves exact there; bf16 rounded
    directly, not through fp32: the cast op's rounding)."""
    dtype = np.asarray(x).dtype
    if dtype == np.float32:
        return N.f32_fma("rn", x, y, z)
    if dtype == np.float64:
        return N.f64_op("fma", "rn", x, y, z)
    from .ops import convert
    from .types import SCALARS
    wide = np.asarray(x, np.float64) * np.asarray(y, np.float64) + np.asarray(z, np.float64)
    name = next(n for n, t in SCALARS.items() if t.is_float and t.info.numpy == dtype.name)
    return convert(wide, SCALARS["fp64"], SCALARS[name])


_wide = N.wide
for _name, _fn in (("tanh", np.tanh), ("exp", np.exp), ("exp2", np.exp2), ("expm1", np.expm1), ("log", np.log),
                   ("log2", np.log2), ("log10", np.log10), ("log1p", np.log1p), ("sin", np.sin), ("cos", np.cos),
                   ("tan", np.tan), ("asin", np.arcsin), ("acos", np.arccos), ("atan", np.arctan), ("sinh", np.sinh),
                   ("cosh", np.cosh), ("asinh", np.arcsinh), ("acosh", np.arccosh), ("atanh", np.arctanh),
                   ("cbrt", np.cbrt), ("sqrt", np.sqrt), ("rsqrt", lambda x: 1 / np.sqrt(x)),
                   ("erf", N.erf), ("erfc", N.erfc), ("exp10", lambda x: np.power(10.0, x)),
                   ("trunc", np.trunc), ("round", N.round_half_away), ("rint", np.rint), ("nearbyint", np.rint),
                   ("floor", np.floor), ("ceil", np.ceil), ("rcbrt", lambda x: 1 / np.cbrt(x)),
                   ("sinpi", N.sinpi), ("cospi", lambda x: N.sinpi(x, cos=True)), ("erfinv", N.erfinv),
                   ("erfcinv", N.erfcinv), ("erfcx", N.erfcx), ("normcdf", N.normcdf),
                   ("normcdfinv", N.normcdfinv), ("lgamma", N.lgamma), ("tgamma", N.tgamma),
                   ("cyl_bessel_i0", N.i0), ("cyl_bessel_i1", N.i1), ("logb", N.logb)):
    _float(_name, _wide(_fn))
for _name in ("j0", "j1", "y0", "y1"):
    _float(_name, N.bessel(_name), doc="the interpreter: scipy.special's")
for _name in ("jn", "yn"):
    _add(_name, {("i32", "fp32"): (f"__nv_{_name}f", "fp32"), ("i32", "fp64"): (f"__nv_{_name}", "fp64")},
         N.bessel(_name), "order n (int32), then x; the interpreter: scipy.special's")
_add("abs", {("i32",): ("__nv_abs", "i32"), ("i64",): ("__nv_llabs", "i64"), ("fp32",): ("__nv_fabsf", "fp32"),
             ("fp64",): ("__nv_fabs", "fp64")}, np.abs)
_float("atan2", _wide(np.arctan2), arity=2)
_float("hypot", _wide(np.hypot), arity=2)
_float("rhypot", _wide(lambda x, y: 1 / np.hypot(x, y)), arity=2)
_float("norm3d", _wide(N.norm), arity=3)
_float("norm4d", _wide(N.norm), arity=4)
_float("rnorm3d", _wide(lambda *xs: 1 / N.norm(*xs)), arity=3)
_float("rnorm4d", _wide(lambda *xs: 1 / N.norm(*xs)), arity=4)
_float("fmod", _wide(np.fmod), arity=2)
_float("remainder", _wide(N.remainder), arity=2)
_float("fdim", N.fdim, arity=2)
_float("nextafter", np.nextafter, arity=2)
_float("copysign", np.copysign, arity=2)
for _name in ("ldexp", "scalbn"):
    _add(_name, {("fp32", "i32"): (f"__nv_{_name}f", "fp32"), ("fp64", "i32"): (f"__nv_{_name}", "fp64")},
         lambda x, n: np.ldexp(x, np.asarray(n, np.int32)), "x * 2**n")
_add("ilogb", {("fp32",): ("__nv_ilogbf", "i32"), ("fp64",): ("__nv_ilogb", "i32")}, N.ilogb,
     "the exponent of x as an int32 (INT_MIN for 0 and NaN, INT_MAX for infinities)")
for _name, _round in (("llrint", np.rint), ("llround", N.round_half_away)):
    _add(_name, {("fp32",): (f"__nv_{_name}f", "i64"), ("fp64",): (f"__nv_{_name}", "i64")},
         lambda x, r=_round: N.float_to_int("rz", r(np.asarray(x, np.float64)), 64, True),
         "out of range: clamped (PTX's cvt), NaN: 0")
_add("saturatef", {("fp32",): ("__nv_saturatef", "fp32")}, N.saturate, "x clamped to [0, 1], NaN to 0")
_add("rcp64h", {("fp64",): ("__nv_rcp64h", "fp64")}, _wide(lambda x: 1 / x),
     "an approximate reciprocal from x's upper 32 bits (the interpreter: 1 / x)")
# (Triton's tl.fma is LLVM's fma of any float type: on halves, CUDA's __hfma, one fma.rn.f16/.bf16)
_add("fma", {("fp32",) * 3: ("__nv_fmaf", "fp32"), ("fp64",) * 3: ("__nv_fma", "fp64"),
             ("fp16",) * 3: ("__hfma", "fp16"), ("bf16",) * 3: ("__hfma", "bf16")},
     _fma, "x * y + z rounded once")
_add("pow", {("fp32", "fp32"): ("__nv_powf", "fp32"), ("fp64", "fp64"): ("__nv_pow", "fp64"),
             ("fp32", "i32"): ("__nv_powif", "fp32"), ("fp64", "i32"): ("__nv_powi", "fp64")}, _wide(np.power))
# (Triton's isnan, isinf, finitef and isfinited are libdevice's int results converted to int1)
_add("isnan", {("fp32",): ("__nv_isnanf", "i1"), ("fp64",): ("__nv_isnand", "i1")}, np.isnan)
_add("isinf", {("fp32",): ("__nv_isinff", "i1"), ("fp64",): ("__nv_isinfd", "i1")}, np.isinf)
_add("finitef", {("fp32",): ("__nv_finitef", "i1")}, np.isfinite)
_add("isfinited", {("fp64",): ("__nv_isfinited", "i1")}, np.isfinite)
_add("signbit", {("fp32",): ("__nv_signbitf", "i32"), ("fp64",): ("__nv_signbitd", "i32")},
     lambda x: np.signbit(x).astype(np.int32))

# the fast approximations (the interpreter: the functions they approximate)
for _name, _fn in (("expf", np.exp), ("logf", np.log), ("sinf", np.sin), ("cosf", np.cos), ("tanf", np.tan),
                   ("log2f", np.log2), ("exp10f", lambda x: np.power(10.0, x)), ("log10f", np.log10)):
    _add(f"fast_{_name}", {("fp32",): (f"__nv_fast_{_name}", "fp32")}, _wide(_fn),
         f"an approximation (the MUFU unit's); the interpreter: {_name[:-1]} rounded once")
_add("fast_powf", {("fp32", "fp32"): ("__nv_fast_powf", "fp32")}, _wide(np.power), "an approximation of pow")
_add("fast_dividef", {("fp32", "fp32"): ("__nv_fast_fdividef", "fp32")}, np.true_divide,
     "an approximation of x / y (the interpreter: rounded to nearest)")

# IEEE's operations in each rounding mode: rn (to nearest even), rz (to zero), rd (down), ru (up)
_MODE_OPS = {"add": ("fadd", "dadd", 2), "sub": ("fsub", "dsub", 2), "mul": ("fmul", "dmul", 2),
             "div": ("fdiv", "ddiv", 2), "rcp": ("frcp", "drcp", 1), "sqrt": ("fsqrt", "dsqrt", 1),
             "fma": ("fmaf", "fma", 3)}
_F32_MODE_FN = {"add": N.f32_add, "sub": N.f32_sub, "mul": N.f32_mul, "div": N.f32_div, "rcp": N.f32_rcp,
                "sqrt": N.f32_sqrt, "fma": N.f32_fma}


def _mode_fn(kind: str, mode: str):
    def run(*xs):
        if np.asarray(xs[0]).dtype == np.float32:
            return _F32_MODE_FN[kind](mode, *xs)
        return N.f64_op(kind, mode, *xs)
    return run


for _kind, (_f, _d, _arity) in _MODE_OPS.items():
    for _mode in N.MODES:
        _add(f"{_kind}_{_mode}", {("fp32",) * _arity: (f"__nv_{_f}_{_mode}", "fp32"),
                                  ("fp64",) * _arity: (f"__nv_{_d}_{_mode}", "fp64")},
             _mode_fn(_kind, _mode), f"IEEE's {_kind}, rounded {N.MODE_TEXT[_mode]}, exactly")
_add("rsqrt_rn", {("fp32",): ("__nv_frsqrt_rn", "fp32")}, N.f32_rsqrt_rn, "1 / sqrt(x) rounded to nearest")

# conversions in each rounding mode (Triton's result types: the unsigned ones' bits as signed)
_FLOAT_SOURCES = {"float": "fp32", "double": "fp64"}
_INT_DESTS = {"int": ("i32", 32, True), "uint": ("i32", 32, False), "ll": ("i64", 64, True),
              "ull": ("i64", 64, False)}
for _mode in N.MODES:
    for _src, _t in _FLOAT_SOURCES.items():
        for _dst, (_res, _bits, _signed) in _INT_DESTS.items():
            _add(f"{_src}2{_dst}_{_mode}", {(_t,): (f"__nv_{_src}2{_dst}_{_mode}", _res)},
                 lambda x, m=_mode, b=_bits, sg=_signed: N.float_to_int(m, x, b, sg).view(f"int{b}"),
                 "rounded, clamped to the destination's range (NaN: 0), as PTX's cvt")
    _add(f"double2float_{_mode}", {("fp64",): (f"__nv_double2float_{_mode}", "fp32")},
         lambda x, m=_mode: N.from_pair_f32(m, x, 0.0), f"rounded {N.MODE_TEXT[_mode]}")
    for _src, _t in (("int", "i32"), ("uint", "u32"), ("ll", "i64"), ("ull", "u64")):
        _add(f"{_src}2float_{_mode}", {(_t,): (f"__nv_{_src}2float_{_mode}", "fp32")},
             lambda x, m=_mode: N.int_to_f32(m, x), f"rounded {N.MODE_TEXT[_mode]}")
        if _t in ("i64", "u64") or _mode == "rn":
            _add(f"{_src}2double_{_mode}", {(_t,): (f"__nv_{_src}2double_{_mode}", "fp64")},
                 lambda x, m=_mode: N.int_to_f64(m, x), f"rounded {N.MODE_TEXT[_mode]}")

# bits
_add("int_as_float", {("i32",): ("__nv_int_as_float", "fp32")}, lambda x: np.asarray(x, np.int32).view(np.float32))
_add("uint_as_float", {("u32",): ("__nv_uint_as_float", "fp32")}, lambda x: np.asarray(x, np.uint32).view(np.float32))
_add("float_as_int", {("fp32",): ("__nv_float_as_int", "i32")}, lambda x: np.asarray(x, np.float32).view(np.int32))
_add("float_as_uint", {("fp32",): ("__nv_float_as_uint", "i32")}, lambda x: np.asarray(x, np.float32).view(np.int32))
_add("longlong_as_double", {("i64",): ("__nv_longlong_as_double", "fp64")},
     lambda x: np.asarray(x, np.int64).view(np.float64))
_add("double_as_longlong", {("fp64",): ("__nv_double_as_longlong", "i64")},
     lambda x: np.asarray(x, np.float64).view(np.int64))
_add("hiloint2double", {("i32", "i32"): ("__nv_hiloint2double", "fp64")}, N.hiloint2double,
     "the double of bits hi:lo")
_add("double2hiint", {("fp64",): ("__nv_double2hiint", "i32")}, lambda x: N.double_word(x, True))
_add("double2loint", {("fp64",): ("__nv_double2loint", "i32")}, lambda x: N.double_word(x, False))
_add("clz", {("i32",): ("__nv_clz", "i32"), ("i64",): ("__nv_clzll", "i32")}, N.clz, "leading zero bits")
_add("popc", {("i32",): ("__nv_popc", "i32"), ("i64",): ("__nv_popcll", "i32")}, N.popc, "set bits")
_add("ffs", {("i32",): ("__nv_ffs", "i32"), ("i64",): ("__nv_ffsll", "i32")}, N.ffs,
     "1 + the position of the lowest set bit (0 for 0)")
_add("brev", {("i32",): ("__nv_brev", "i32"), ("i64",): ("__nv_brevll", "i64")}, N.brev, "the bits reversed")
_add("byte_perm", {("i32",) * 3: ("__nv_byte_perm", "i32")}, N.byte_perm, "PTX's prmt.b32")
_add("mul24", {("i32", "i32"): ("__nv_mul24", "i32"), ("u32", "u32"): ("__nv_umul24", "u32")}, N.mul24,
     "the low 32 bits of the product of the low 24 bits")
_add("hadd", {("i32", "i32"): ("__nv_hadd", "i32"), ("u32", "u32"): ("__nv_uhadd", "u32")},
     lambda x, y: N.halving_add(x, y, False), "(x + y) >> 1 without overflow")
_add("rhadd", {("i32", "i32"): ("__nv_rhadd", "i32"), ("u32", "u32"): ("__nv_urhadd", "u32")},
     lambda x, y: N.halving_add(x, y, True), "(x + y + 1) >> 1 without overflow")
_add("sad", {("i32", "i32", "u32"): ("__nv_sad", "i32"), ("u32", "u32", "u32"): ("__nv_usad", "u32")}, N.sad,
     "|x - y| + z")
_add("mulhi", {("i32", "i32"): ("__nv_mulhi", "i32"), ("u32", "u32"): ("__nv_umulhi", "u32"),
               ("i64", "i64"): ("__nv_mul64hi", "i64"), ("u64", "u64"): ("__nv_umul64hi", "u64")},
     lambda x, y: N.mulhi(x, y, signed=True), "the high half of the 2N-bit product")
_add("umulhi", {("i32", "i32"): ("__nv_umulhi", "i32"), ("u32", "u32"): ("__nv_umulhi", "u32"),
                ("i64", "i64"): ("__nv_umul64hi", "i64"), ("u64", "u64"): ("__nv_umul64hi", "u64")},
     lambda x, y: N.mulhi(x, y, signed=False), "the high half of the product of the bits as unsigned (tl.math's)")
# (tl.math's umulhi is not a function of Triton's libdevice module: that module leaves it out)
NOT_IN_LIBDEVICE_MODULE = frozenset({"umulhi"})


C_TYPES = {"fp32": "float", "fp64": "double", "i32": "int", "u32": "unsigned int", "i64": "long long",
           "u64": "unsigned long long", "i1": "int"}


# functions of CUDA's fp16/bf16 headers (included where a kernel has halves): declared there
HEADER_FUNCTIONS = frozenset({"__hfma"})


def declaration(symbol: str, signature: tuple, result: str) -> str | None:
    """The C declaration of a libdevice symbol (libdevice's predicates return int); None for a
    function of CUDA's half-precision headers."""
    if symbol in HEADER_FUNCTIONS:
        return None
    if symbol in ("__nv_umulhi", "__nv_umul64hi"):      # (libdevice takes them unsigned)
        signature, result = tuple(t.replace("i", "u") for t in signature), result.replace("i", "u")
    c_args = ", ".join(C_TYPES[t] for t in signature)
    return f'extern "C" __device__ {C_TYPES[result]} {symbol}({c_args});'

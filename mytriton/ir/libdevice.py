"""CUDA's math library functions (libdevice) as elementwise ops: ``tl.extra.cuda.libdevice.*`` and
the ``tl.math`` functions that Triton computes with them (``erf``, ``fma``, ``umulhi``,
``sqrt_rn``, ``div_rn``).

Each function is one row of ``FUNCTIONS``: the argument dtypes it takes, each with the libdevice
symbol that computes it and the result dtype (Triton's dispatch: an exact match of the argument
dtypes, else the arguments promoted to a common type and matched again), and its meaning on numpy
arrays for the interpreter. The registry (``ops``) makes an op ``libdevice.<name>`` of each row;
the CUDA backend calls the symbol itself — NVRTC links libdevice, the library Triton's kernels
call — so a kernel computes what Triton's computes: the same bits, except where Triton's
libdevice, linked with flush-to-zero on, takes other code paths (acos, asin, atan, atan2, cbrt,
erf, hypot, pow, sqrt, asinh, acosh: within 2 ulp on the H200). The interpreter computes the same
functions with numpy (in float64 where numpy has no float32 version, rounded once), within an ulp
or two of them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np


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


def _wide(fn):
    """A numpy function computed in float64 and rounded once to the arguments' type."""
    def run(*xs):
        return np.asarray(fn(*(np.asarray(x, np.float64) for x in xs))).astype(np.asarray(xs[0]).dtype)
    return run


def _fma(x, y, z):
    """x * y + z in float64 (the product of halves or fp32s exact), rounded once to the arguments'
    type (bf16 directly, not through fp32: the cast op's rounding)."""
    from .ops import convert
    from .types import SCALARS
    dtype = np.asarray(x).dtype
    wide = np.asarray(x, np.float64) * np.asarray(y, np.float64) + np.asarray(z, np.float64)
    name = next(n for n, t in SCALARS.items() if t.is_float and t.info.numpy == dtype.name)
    return convert(wide, SCALARS["fp64"], SCALARS[name])


def _round_half_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(1.0, x), t)


_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])

for _name, _fn in (("tanh", np.tanh), ("exp", np.exp), ("exp2", np.exp2), ("expm1", np.expm1), ("log", np.log),
                   ("log2", np.log2), ("log10", np.log10), ("log1p", np.log1p), ("sin", np.sin), ("cos", np.cos),
                   ("tan", np.tan), ("asin", np.arcsin), ("acos", np.arccos), ("atan", np.arctan), ("sinh", np.sinh),
                   ("cosh", np.cosh), ("asinh", np.arcsinh), ("acosh", np.arccosh), ("atanh", np.arctanh),
                   ("cbrt", np.cbrt), ("sqrt", np.sqrt), ("rsqrt", lambda x: 1 / np.sqrt(x)),
                   ("erf", _erf), ("erfc", _erfc), ("exp10", lambda x: np.power(10.0, x)),
                   ("trunc", np.trunc), ("round", _round_half_away), ("rint", np.rint), ("nearbyint", np.rint),
                   ("floor", np.floor), ("ceil", np.ceil)):
    _float(_name, _wide(_fn))
_float("abs", np.abs, symbol="fabs")
_float("atan2", _wide(np.arctan2), arity=2)
_float("hypot", _wide(np.hypot), arity=2)
_float("fmod", _wide(np.fmod), arity=2)
_float("copysign", np.copysign, arity=2)
# (Triton's tl.fma is LLVM's fma of any float type: on halves, CUDA's __hfma, one fma.rn.f16/.bf16)
_add("fma", {("fp32",) * 3: ("__nv_fmaf", "fp32"), ("fp64",) * 3: ("__nv_fma", "fp64"),
             ("fp16",) * 3: ("__hfma", "fp16"), ("bf16",) * 3: ("__hfma", "bf16")},
     _fma, "x * y + z rounded once (the interpreter: through float64)")
_add("pow", {("fp32", "fp32"): ("__nv_powf", "fp32"), ("fp64", "fp64"): ("__nv_pow", "fp64"),
             ("fp32", "i32"): ("__nv_powif", "fp32"), ("fp64", "i32"): ("__nv_powi", "fp64")}, _wide(np.power))
_add("isnan", {("fp32",): ("__nv_isnanf", "i1"), ("fp64",): ("__nv_isnand", "i1")}, np.isnan)
_add("isinf", {("fp32",): ("__nv_isinff", "i1"), ("fp64",): ("__nv_isinfd", "i1")}, np.isinf)
_add("signbit", {("fp32",): ("__nv_signbitf", "i32"), ("fp64",): ("__nv_signbitd", "i32")},
     lambda x: np.signbit(x).astype(np.int32))
_add("fast_expf", {("fp32",): ("__nv_fast_expf", "fp32")}, np.exp, "exp by ex2.approx (fp32 only)")
_add("fast_logf", {("fp32",): ("__nv_fast_logf", "fp32")}, np.log, "log by lg2.approx (fp32 only)")
_add("sqrt_rn", {("fp32",): ("__nv_fsqrt_rn", "fp32")}, np.sqrt, "the correctly rounded square root")
_add("div_rn", {("fp32", "fp32"): ("__nv_fdiv_rn", "fp32")}, np.true_divide, "the correctly rounded quotient")
_add("mulhi", {("i32", "i32"): ("__nv_mulhi", "i32"), ("u32", "u32"): ("__nv_umulhi", "u32"),
               ("i64", "i64"): ("__nv_mul64hi", "i64"), ("u64", "u64"): ("__nv_umul64hi", "u64")},
     lambda x, y: _mulhi(x, y, signed=True), "the high half of the 2N-bit product")
_add("umulhi", {("i32", "i32"): ("__nv_umulhi", "i32"), ("u32", "u32"): ("__nv_umulhi", "u32"),
                ("i64", "i64"): ("__nv_umul64hi", "i64"), ("u64", "u64"): ("__nv_umul64hi", "u64")},
     lambda x, y: _mulhi(x, y, signed=False), "the high half of the product of the bits as unsigned (tl.math's)")
# (tl.math's umulhi is not a function of Triton's libdevice module: that module leaves it out)
NOT_IN_LIBDEVICE_MODULE = frozenset({"umulhi"})


def _mulhi(x, y, signed: bool):
    """The high half of the 2N-bit product, of the values (signed types, ``signed``) or of their bits."""
    x, y = np.asarray(x), np.asarray(y)
    bits = x.dtype.itemsize * 8
    xs, ys = np.broadcast_arrays(x, y)
    wrap = 2 ** bits

    def value(v):
        return int(v) if signed else int(v) % wrap
    out = [((value(a) * value(b)) >> bits) % wrap for a, b in zip(xs.ravel(), ys.ravel())]
    return np.array(out, np.dtype(f"uint{bits}")).reshape(xs.shape).view(x.dtype)


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

"""``tl.math``: Triton's math functions. Those CUDA's math library computes (``erf``, ``fma``,
``umulhi``, ``sqrt_rn``, ``div_rn``) call its functions, as Triton's do; the others are the ``tl``
functions of the same names."""
from __future__ import annotations

from . import abs, ceil, cos, exp, exp2, floor, log, log2, rsqrt, sin, sqrt  # noqa: A004 (Triton's names)
from .core import builtin, tensor, to_tensor
from .libdevice_call import call


def _checked(name: str, x, dtypes: tuple) -> tensor:
    x = to_tensor(x)
    if getattr(x.dtype, "name", None) not in dtypes:
        raise TypeError(f"tl.math.{name} expects {' or '.join(dtypes)}, got {x.dtype}")
    return x


@builtin
def erf(x):
    """The error function (libdevice's erff / erf)."""
    return call("erf", _checked("erf", x, ("fp32", "fp64")))


@builtin
def fma(x, y, z):
    """x * y + z rounded once (libdevice's fmaf / fma)."""
    return call("fma", x, y, z)


@builtin
def umulhi(x, y):
    """The high half of the 2N-bit product of two N-bit integers, of their bits as unsigned."""
    return call("umulhi", _checked("umulhi", x, ("i32", "i64", "u32", "u64")), y)


@builtin
def sqrt_rn(x):
    """The square root rounded to nearest (IEEE), where ``tl.sqrt`` is the fast approximation."""
    return call("sqrt_rn", _checked("sqrt_rn", x, ("fp32",)))


@builtin
def div_rn(x, y):
    """x / y rounded to nearest (IEEE), where ``/`` on fp32 is the full-range approximation."""
    return call("div_rn", _checked("div_rn", x, ("fp32",)), y)


@builtin
def fdiv(x, y, ieee_rounding=False):
    """x / y of two floats, as ``/`` computes it (Triton's fdiv ignores ``ieee_rounding``)."""
    x, y = to_tensor(x), to_tensor(y)
    if not (getattr(x.dtype, "is_float", False) and getattr(y.dtype, "is_float", False)):
        raise TypeError(f"both operands of fdiv must have floating scalar type, got {x.dtype} and {y.dtype}")
    return x / y


__all__ = ["abs", "ceil", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma", "log", "log2", "rsqrt",
           "sin", "sqrt", "sqrt_rn", "umulhi"]

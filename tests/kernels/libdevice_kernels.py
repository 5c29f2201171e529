"""libdevice kernels (tests/test_libdevice.py; tests/test_libdevice_gpu.py runs them through Triton too):
one function, chosen by a constexpr name, applied to a block."""
import mytriton as triton
import mytriton.language as tl
from mytriton.language.extra import libdevice


@triton.jit
def unary(x_ptr, y_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    if FN == "tanh":
        y = libdevice.tanh(x)
    elif FN == "exp":
        y = libdevice.exp(x)
    elif FN == "exp2":
        y = libdevice.exp2(x)
    elif FN == "expm1":
        y = libdevice.expm1(x)
    elif FN == "log":
        y = libdevice.log(x)
    elif FN == "log2":
        y = libdevice.log2(x)
    elif FN == "log10":
        y = libdevice.log10(x)
    elif FN == "log1p":
        y = libdevice.log1p(x)
    elif FN == "sin":
        y = libdevice.sin(x)
    elif FN == "cos":
        y = libdevice.cos(x)
    elif FN == "tan":
        y = libdevice.tan(x)
    elif FN == "asin":
        y = libdevice.asin(x)
    elif FN == "acos":
        y = libdevice.acos(x)
    elif FN == "atan":
        y = libdevice.atan(x)
    elif FN == "sinh":
        y = libdevice.sinh(x)
    elif FN == "cosh":
        y = libdevice.cosh(x)
    elif FN == "asinh":
        y = libdevice.asinh(x)
    elif FN == "acosh":
        y = libdevice.acosh(x)
    elif FN == "atanh":
        y = libdevice.atanh(x)
    elif FN == "cbrt":
        y = libdevice.cbrt(x)
    elif FN == "sqrt":
        y = libdevice.sqrt(x)
    elif FN == "rsqrt":
        y = libdevice.rsqrt(x)
    elif FN == "erf":
        y = libdevice.erf(x)
    elif FN == "erfc":
        y = libdevice.erfc(x)
    elif FN == "exp10":
        y = libdevice.exp10(x)
    elif FN == "trunc":
        y = libdevice.trunc(x)
    elif FN == "round":
        y = libdevice.round(x)
    elif FN == "rint":
        y = libdevice.rint(x)
    elif FN == "nearbyint":
        y = libdevice.nearbyint(x)
    elif FN == "floor":
        y = libdevice.floor(x)
    elif FN == "ceil":
        y = libdevice.ceil(x)
    elif FN == "abs":
        y = libdevice.abs(x)
    elif FN == "fast_expf":
        y = libdevice.fast_expf(x)
    elif FN == "fast_logf":
        y = libdevice.fast_logf(x)
    elif FN == "isnan":
        y = libdevice.isnan(x)
    elif FN == "isinf":
        y = libdevice.isinf(x)
    elif FN == "signbit":
        y = libdevice.signbit(x)
    else:
        y = tl.math.erf(x)
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def binary(x_ptr, z_ptr, y_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    z = tl.load(z_ptr + offs, mask=mask, other=1.0)
    if FN == "atan2":
        y = libdevice.atan2(x, z)
    elif FN == "hypot":
        y = libdevice.hypot(x, z)
    elif FN == "fmod":
        y = libdevice.fmod(x, z)
    elif FN == "copysign":
        y = libdevice.copysign(x, z)
    elif FN == "pow":
        y = libdevice.pow(x, z)
    elif FN == "div_rn":
        y = tl.math.div_rn(x, z)
    elif FN == "fdiv":
        y = tl.math.fdiv(x, z)
    elif FN == "sqrt_rn":
        y = tl.math.sqrt_rn(x) + z
    elif FN == "fma":
        y = tl.math.fma(x, z, x)
    else:
        y = libdevice.pow(x, 3)
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def umulhi(x_ptr, z_ptr, y_ptr, n, SIGNED: tl.constexpr, BLOCK: tl.constexpr):
    """tl.math.umulhi, or (SIGNED) libdevice.mulhi."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x, z = tl.load(x_ptr + offs, mask=mask), tl.load(z_ptr + offs, mask=mask)
    if SIGNED:
        y = libdevice.mulhi(x, z)
    else:
        y = tl.math.umulhi(x, z)
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def fma3(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """tl.fma of three loaded blocks, in the pointers' own element type (halves included)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    z = tl.load(z_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.fma(x, y, z), mask=mask)

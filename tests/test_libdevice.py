"""CUDA's math library (``mytriton.language.extra.libdevice``, ``tl.math``'s erf, fma, umulhi,
sqrt_rn, div_rn, fdiv): Triton's dispatch and its errors, the interpreter against numpy in
float64, the generated CUDA (libdevice's own symbols, declared and called; on the CPU emulator
the C library's functions) against the interpreter, and NVRTC compiling every function. The GPU
test (test_libdevice_gpu.py) checks the bits against Triton's."""
import math

import numpy as np
import pytest

import mytriton
import mytriton.language as tl
from mytriton.ir.libdevice import FUNCTIONS
from tests import cuda_emulator
from tests.kernel_files import kernel_from_source
from tests.kernels import libdevice_kernels as K

RNG = np.random.default_rng(5)
# inputs inside each function's domain (numpy's float64 function is the reference)
DOMAIN = {"log": (0.01, 50), "log2": (0.01, 50), "log10": (0.01, 50), "log1p": (-0.9, 50), "sqrt": (0, 50),
          "rsqrt": (0.01, 50), "asin": (-1, 1), "acos": (-1, 1), "acosh": (1, 50), "atanh": (-0.99, 0.99),
          "fast_logf": (0.01, 50), "exp": (-20, 20), "exp2": (-20, 20), "expm1": (-20, 20), "exp10": (-8, 8),
          "fast_expf": (-20, 20), "sinh": (-20, 20), "cosh": (-20, 20)}
REFERENCE = {"tanh": np.tanh, "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
             "log10": np.log10, "log1p": np.log1p, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin,
             "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh,
             "acosh": np.arccosh, "atanh": np.arctanh, "cbrt": np.cbrt, "sqrt": np.sqrt,
             "rsqrt": lambda x: 1 / np.sqrt(x), "erf": np.vectorize(math.erf), "erfc": np.vectorize(math.erfc),
             "exp10": lambda x: 10.0 ** x, "trunc": np.trunc, "round": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),
             "rint": np.rint, "nearbyint": np.rint, "floor": np.floor, "ceil": np.ceil, "abs": np.abs,
             "fast_expf": np.exp, "fast_logf": np.log, "isnan": np.isnan, "isinf": np.isinf,
             "signbit": np.signbit}
UNARY = sorted(REFERENCE)
BINARY = {"atan2": np.arctan2, "hypot": np.hypot, "fmod": np.fmod, "copysign": np.copysign, "pow": lambda x, z: np.abs(x) ** z, "div_rn": np.divide, "fdiv": np.divide,
          "sqrt_rn": lambda x, z: np.sqrt(np.abs(x)) + z, "fma": lambda x, z: x * z + x, "pow3": lambda x, z: x ** 3}


def unary_input(fn: str, n: int = 1000) -> np.ndarray:
    lo, hi = DOMAIN.get(fn, (-6, 6))
    x = RNG.uniform(lo, hi, n)
    x[:6] = [lo, hi, (lo + hi) / 2, 0.5 if lo < 0.5 < hi else lo, 2.5 if lo < 2.5 < hi else hi, -0.5 if lo < -0.5 else lo]
    if fn in ("isnan", "isinf", "signbit", "abs", "floor", "ceil", "trunc", "round", "rint", "nearbyint"):
        x[6:12] = [np.nan, np.inf, -np.inf, -0.0, 1.5, -2.5]
    return x.astype(np.float32)


def binary_input(fn: str, n: int = 1000):
    x, z = RNG.uniform(-4, 4, n).astype(np.float32), RNG.uniform(-4, 4, n).astype(np.float32)
    if fn in ("pow",):
        x = np.abs(x) + np.float32(0.01)
    if fn in ("div_rn", "fdiv", "fmod"):
        z = np.where(np.abs(z) < 0.1, np.float32(1.5), z)
    if fn == "sqrt_rn":
        x = np.abs(x)
    return x, z


@pytest.mark.parametrize("fn", UNARY)
def test_interpreter_computes_each_unary_function(fn):
    x = unary_input(fn)
    y = np.zeros_like(x)
    K.unary[(8,)](x, y, x.size, FN=fn, BLOCK=128)
    with np.errstate(all="ignore"):
        want = REFERENCE[fn](x.astype(np.float64))
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=1e-30 if fn not in ("sin", "cos", "tan") else 1e-7)


@pytest.mark.parametrize("fn", sorted(BINARY))
def test_interpreter_computes_each_binary_function(fn):
    x, z = binary_input(fn)
    y = np.zeros_like(x)
    K.binary[(8,)](x, z, y, x.size, FN=fn, BLOCK=128)
    with np.errstate(all="ignore"):
        want = BINARY[fn](x.astype(np.float64), z.astype(np.float64))
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("signed", [False, True])
def test_mulhi_is_the_high_half_of_the_product(signed):
    """tl.math.umulhi: of the bits as unsigned (Triton's, also on int32); libdevice.mulhi: signed."""
    x = RNG.integers(-2**31, 2**31, 300, dtype=np.int64).astype(np.int32)
    z = RNG.integers(-2**31, 2**31, 300, dtype=np.int64).astype(np.int32)
    y = np.zeros_like(x)
    K.umulhi[(3,)](x, z, y, x.size, SIGNED=signed, BLOCK=128)
    if signed:
        want = np.array([(int(a) * int(b)) >> 32 for a, b in zip(x, z)], np.int64).astype(np.int32)
    else:
        want = np.array([(int(a) % 2**32 * (int(b) % 2**32)) >> 32 for a, b in zip(x, z)], np.uint32).view(np.int32)
    np.testing.assert_array_equal(y, want)


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("fn", ["tanh", "erf", "log1p", "round", "isnan", "signbit", "exp10", "pow3", "fma",
                                "atan2", "umulhi", "mulhi"])
def test_generated_cuda_calls_libdevice_and_agrees_with_the_interpreter(fn):
    """The kernel declares the libdevice symbol (device code only) and calls it; on the CPU
    emulator the C library's function stands in for it."""
    if fn in ("umulhi", "mulhi"):
        x = RNG.integers(-2**31, 2**31, 300, dtype=np.int64).astype(np.int32)
        z = RNG.integers(-2**31, 2**31, 300, dtype=np.int64).astype(np.int32)
        kernel, args, sig = K.umulhi, [x, z], {"x_ptr": "*i32", "z_ptr": "*i32", "y_ptr": "*i32", "n": "i32"}
        ce, symbol = {"SIGNED": fn == "mulhi"}, "__nv_" + fn
    elif fn in BINARY:
        x, z = binary_input(fn)
        kernel, args = K.binary, [x, z]
        sig = {"x_ptr": "*fp32", "z_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}
        ce = {"FN": fn}
        symbol = {"pow3": "__nv_powif", "fma": "__nv_fmaf", "atan2": "__nv_atan2f"}[fn]
    else:
        x = unary_input(fn)
        kernel, args, sig, ce = K.unary, [x], {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}, {"FN": fn}
        symbol = FUNCTIONS[fn].signatures[("fp32",)][0]
    ck = mytriton.compile(kernel, sig, {**ce, "BLOCK": 128}, target="sm_80")
    cu = ck.asm["cu"]
    decl = cu.index(f" {symbol}(")
    assert cu.rfind("#ifdef __CUDA_ARCH__", 0, decl) > cu.rfind("#endif", 0, decl)    # declared for the device
    assert f"{symbol}(" in cu[cu.index("__global__"):]
    got, interp = np.zeros_like(args[0]), np.zeros_like(args[0])
    grid = (mytriton.cdiv(args[0].size, 128),)
    cuda_emulator.run(cu, [*args, got, args[0].size], grid)
    kernel[grid](*args, interp, args[0].size, **ce, BLOCK=128)
    if fn in ("umulhi", "mulhi"):
        np.testing.assert_array_equal(got, interp)
    else:
        np.testing.assert_allclose(got, interp, rtol=3e-7, atol=1e-30)


def half_fma_inputs(t: str, n: int = 1000):
    """Three operands of dtype ``t`` whose products and sums round in fp16/bf16 (ties included)."""
    from tests.test_half import NP
    x, y, z = (RNG.uniform(-4, 4, n).astype(NP[t]) for _ in range(3))
    # (1 + u)^2 - (1 + 2u) = u^2 for u the unit in the last place at 1: fused, u^2; rounded twice, 0
    u = 2.0 ** -(10 if t == "fp16" else 7)
    x[:4], y[:4], z[:4] = [1 + u, 1.5, -3.0, 0.0], [1 + u, 1 + u, 0.5, -1.0], [-(1 + 2 * u), 2**-9, 1.0, -0.0]
    return x, y, z


@pytest.mark.parametrize("t", ["fp16", "bf16"])
def test_fma_on_halves_is_one_rounding_in_their_own_type(t):
    """As Triton's tl.fma (LLVM's fma of the halves: fma.rn.f16 / fma.rn.bf16): x * y + z rounded
    once to the halves' type, not promoted to fp32; CUDA's __hfma, declared by its header."""
    from mytriton.ir.ops import convert
    from mytriton.ir.types import SCALARS
    x, y, z = half_fma_inputs(t)
    want = convert(x.astype(np.float64) * y.astype(np.float64) + z.astype(np.float64), SCALARS["fp64"], SCALARS[t])
    sig = {"x_ptr": f"*{t}", "y_ptr": f"*{t}", "z_ptr": f"*{t}", "out_ptr": f"*{t}", "n": "i32"}
    interp = np.zeros_like(x)
    K.fma3[(8,)](x, y, z, interp, x.size, BLOCK=128)
    assert interp.dtype == x.dtype and interp.view(np.uint16).tolist() == want.view(np.uint16).tolist()
    u = 2.0 ** -(10 if t == "fp16" else 7)
    assert float(interp[0]) == u * u                           # (one rounding: a separate product gives 0)
    ck = mytriton.compile(K.fma3, sig, {"BLOCK": 128}, target="sm_80")
    assert "__hfma(" in ck.asm["cu"] and " __hfma(" not in ck.asm["cu"].split("__global__")[0]
    assert f"fma.rn.{'f16' if t == 'fp16' else 'bf16'}" in ck.asm["ptx"]
    if cuda_emulator.available():
        got = np.zeros_like(x)
        cuda_emulator.run(ck.asm["cu"], [x, y, z, got, x.size], (8,))
        assert got.view(np.uint16).tolist() == want.view(np.uint16).tolist()
    mixed = {**sig, "z_ptr": "*fp32", "out_ptr": "*fp32"}          # (fp16, fp16, fp32): promoted, fmaf
    assert "__nv_fmaf(" in mytriton.compile(K.fma3, mixed, {"BLOCK": 128}).asm["cu"]


def test_nvrtc_compiles_every_function_for_sm_80_and_sm_90a():
    """Every libdevice symbol the backend declares links (one kernel per function and arity)."""
    sig1 = {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "n": "i32"}
    sig2 = {"x_ptr": "*fp32:16", "z_ptr": "*fp32:16", "y_ptr": "*fp32:16", "n": "i32"}
    for target in ("sm_80", "sm_90a"):
        for fn in UNARY:
            assert mytriton.compile(K.unary, sig1, {"FN": fn, "BLOCK": 128}, target=target).asm["cubin"]
        for fn in BINARY:
            assert mytriton.compile(K.binary, sig2, {"FN": fn, "BLOCK": 128}, target=target).asm["cubin"]
    sig = {"x_ptr": "*fp64", "y_ptr": "*fp64", "n": "i32"}        # (and a double one)
    assert "__nv_tanh(" in mytriton.compile(K.unary, sig, {"FN": "tanh", "BLOCK": 64}).asm["cu"]


@pytest.mark.parametrize("body,message", [
    ("y = libdevice.tanh(x.to(tl.float16))", "libdevice.tanh takes (fp32) or (fp64), got (f16); convert with .to()"),
    ("y = libdevice.atan2(x, 1)", None),                                  # (fp32, i32) promotes to (fp32, fp32)
    ("y = libdevice.pow(x, 2)", None),                                    # (fp32, i32): powif, as Triton
    ("y = libdevice.tanh(x, x)", "libdevice.tanh takes 1 argument, got 2"),
    ("y = tl.math.erf(x.to(tl.int32))", "tl.math.erf expects fp32 or fp64, got i32"),
    ("y = tl.math.sqrt_rn(x.to(tl.float64))", "tl.math.sqrt_rn expects fp32, got f64"),
    ("y = tl.math.fdiv(x, 2)", "both operands of fdiv must have floating scalar type, got f32 and i32"),
    ("y = libdevice.isnan(x_ptr)", "libdevice.isnan takes numbers, not pointers"),
])
def test_dispatch_and_its_errors_at_the_line(body, message, tmp_path):
    k = kernel_from_source(tmp_path / "math_kernel.py",
                           "import mytriton\nimport mytriton.language as tl\nfrom mytriton.language.extra import libdevice\n"
                           "\n\n@mytriton.jit\ndef k(x_ptr, y_ptr):\n    x = tl.load(x_ptr + tl.arange(0, 32))\n"
                           f"    {body}\n    tl.store(y_ptr + tl.arange(0, 32), y)\n")
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32"}
    if message is None:
        cu = mytriton.compile(k, sig, {}).asm["cu"]
        assert ("__nv_powif(" in cu) == ("pow" in body) and ("__nv_atan2f(" in cu) == ("atan2" in body)
        return
    with pytest.raises(mytriton.CompilationError) as e:
        mytriton.compile(k, sig, {})
    assert message in str(e.value) and "math_kernel.py:9" in str(e.value)


def test_the_mlir_backend_refuses_libdevice_functions():
    with pytest.raises(mytriton.CompilationError, match="MLIR backend does not support the 'libdevice.tanh' op"):
        mytriton.compile(K.unary, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}, {"FN": "tanh", "BLOCK": 128},
                         backend="mlir")


def test_every_function_is_tested_here():
    from tests.test_libdevice_all import TESTED_HERE
    tested = set(UNARY) | (set(BINARY) - {"pow3", "fdiv"}) | {"umulhi", "mulhi"} | TESTED_HERE
    assert tested == set(FUNCTIONS), set(FUNCTIONS) - tested


def test_tl_exports_triton_math_names():
    from mytriton.language.extra import libdevice
    assert tl.erf is tl.math.erf and tl.math.exp is tl.exp
    assert {"erf", "fma", "umulhi", "sqrt_rn", "div_rn", "fdiv"} <= set(tl.__all__)
    assert "umulhi" not in libdevice.__all__ and "mulhi" in libdevice.__all__ and tl.extra.cuda.libdevice is libdevice

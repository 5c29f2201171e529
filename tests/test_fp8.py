"""fp8 (``tl.float8e4nv``: e4m3 without infinities; ``tl.float8e5``: e5m2): conversions, loads and
stores, ``tl.dot``, and the errors of what fp8 does not do — in the interpreter and, through the CPU
emulator, in the generated CUDA (the arithmetic conversion path every target without sm_89's cvt
takes), against an independent reference of Triton's rule (``cvt.rn.satfinite``)."""
import ml_dtypes
import numpy as np
import pytest

import mytriton
import mytriton.language as tl
from tests import cuda_emulator
from tests.kernel_files import kernel_from_source
from tests.kernels import fp8 as fp8k

FP8 = {"fp8e4nv": (tl.float8e4nv, ml_dtypes.float8_e4m3fn), "fp8e5": (tl.float8e5, ml_dtypes.float8_e5m2)}
RNG = np.random.default_rng(8)


def reference(x: np.ndarray, np_type) -> np.ndarray:
    """fp32 ``x`` converted to fp8 by definition: the nearest finite fp8 value (a tie goes to the even
    code), magnitudes beyond the largest finite value (infinities too) to it, NaN to NaN — found by
    search over all 256 codes, not by a conversion routine."""
    codes = np.arange(256, dtype=np.uint8)
    values = codes.view(np_type).astype(np.float64)
    finite = np.isfinite(values)
    codes, values = codes[finite], values[finite]
    top = values.max()
    out = np.empty(x.shape, np_type)
    for i, v in enumerate(x.astype(np.float64)):
        if np.isnan(v):              # the canonical NaN cvt gives (e4m3's only one; for e5m2 one of several)
            out[i:i + 1] = np.uint8(0x7F).reshape(1).view(np_type)
            continue
        v = min(max(v, -top), top)
        dist = np.abs(values - v)
        best = codes[dist == dist.min()]
        if len(best) > 1:
            best = best[best % 2 == 0]
        if len(best) > 1:                      # +0 and -0: the sign of v
            best = best[(best >= 128) == bool(np.signbit(v))]
        out[i] = best[:1].view(np_type)[0]
    return out


def probe_values(np_type) -> np.ndarray:
    """Every fp8 value, the midpoints between neighbours (ties) and a hair either side, the
    edges (largest finite value and beyond, infinities, NaN, the subnormals) and random values."""
    vals = np.unique(np.arange(256, dtype=np.uint8).view(np_type).astype(np.float64))
    vals = vals[np.isfinite(vals)]
    mids = (vals[1:] + vals[:-1]) / 2
    top = vals.max()
    edges = [top, top * 1.03, top * 1.07, top * 4, np.inf, np.nan, 1e-30, 3e-3]
    rand = RNG.standard_normal(600) * np.exp2(RNG.integers(-16, 16, 600))
    x = np.concatenate([vals, mids, mids * (1 + 2**-20), mids * (1 - 2**-20), edges, rand])
    x = np.concatenate([x, -x]).astype(np.float32)
    return x[np.isnan(x) | (np.abs(x) < 3e38)]


def check(x, q, back, np_type):
    want = reference(x, np_type)
    np.testing.assert_array_equal(q.view(np.uint8), want.view(np.uint8))
    np.testing.assert_array_equal(back, want.astype(np.float32))


@pytest.mark.parametrize("name", FP8)
def test_interpreter_converts_fp32_to_fp8_as_cvt_rn_satfinite(name):
    dt, np_type = FP8[name]
    x = probe_values(np_type)
    q, back = np.zeros(x.shape, np_type), np.zeros_like(x)
    fp8k.quantize[(mytriton.cdiv(x.size, 256),)](x, q, back, x.size, FP8=dt, BLOCK=256)
    check(x, q, back, np_type)


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("name", FP8)
def test_generated_cuda_converts_fp32_to_fp8_as_cvt_rn_satfinite(name):
    """The software conversion (sm_80; the host) gives what cvt.rn.satfinite gives on sm_89+."""
    dt, np_type = FP8[name]
    x = probe_values(np_type)
    sig = {"x_ptr": "*fp32:16", "q_ptr": f"*{name}:16", "back_ptr": "*fp32:16", "n": "i32"}
    ck = mytriton.compile(fp8k.quantize, sig, {"FP8": dt, "BLOCK": 256}, target="sm_80")
    q, back = np.zeros(x.shape, np_type), np.zeros_like(x)
    cuda_emulator.run(ck.asm["cu"], [x, q, back, x.size], (mytriton.cdiv(x.size, 256),))
    check(x, q, back, np_type)


@pytest.mark.parametrize("name", FP8)
def test_sm_90a_converts_with_cvt_rn_satfinite(name):
    dt, _ = FP8[name]
    sig = {"x_ptr": "*fp32:16", "q_ptr": f"*{name}:16", "back_ptr": "*fp32:16", "n": "i32"}
    ptx = mytriton.compile(fp8k.quantize, sig, {"FP8": dt, "BLOCK": 256}, target="sm_90a").asm["ptx"]
    kind = "e4m3" if name == "fp8e4nv" else "e5m2"
    assert f"cvt.rn.satfinite.{kind}x2.f32" in ptx
    sm80 = mytriton.compile(fp8k.quantize, sig, {"FP8": dt, "BLOCK": 256}, target="sm_80").asm["ptx"]
    assert "satfinite" not in sm80


@pytest.mark.parametrize("ta,tb", [("fp8e4nv", "fp8e4nv"), ("fp8e5", "fp8e5"), ("fp8e4nv", "fp8e5")])
def test_fp8_dot_is_the_exact_products_summed_in_fp32(ta, tb):
    """Every fp8 value is an fp16 one: the dot multiplies the operands exactly and sums in fp32
    (interpreter and emulated CUDA, mma.sync on fp16 operands, agree with numpy)."""
    m, n, k = 32, 16, 64
    a = (RNG.standard_normal((m, k)) * 4).astype(np.float32).astype(FP8[ta][1])
    b = (RNG.standard_normal((k, n)) * 4).astype(np.float32).astype(FP8[tb][1])
    want = a.astype(np.float64) @ b.astype(np.float64)
    c = np.zeros((m, n), np.float32)
    fp8k.fp8_dot[(1,)](a, b, c, M=m, N=n, K=k)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)
    ck = mytriton.compile(fp8k.fp8_dot, {"a_ptr": f"*{ta}:16", "b_ptr": f"*{tb}:16", "c_ptr": "*fp32:16"},
                          {"M": m, "N": n, "K": k}, target="sm_90")
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ck.asm["ptx"]
    if cuda_emulator.available():
        got = np.zeros((m, n), np.float32)
        cuda_emulator.run(ck.asm["cu"], [a, b, got], (1,))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def _compile_body(body: str, sig: dict, tmp_path):
    k = kernel_from_source(tmp_path / "fp8_kernel.py",
                           "import mytriton\nimport mytriton.language as tl\n\n\n@mytriton.jit\n"
                           "def k(x_ptr, y_ptr, n):\n    offs = tl.arange(0, 32)\n"
                           "    x = tl.load(x_ptr + offs)\n" + body)
    return mytriton.compile(k, sig, {})


@pytest.mark.parametrize("body,message", [
    ("    tl.store(y_ptr + offs, x + x)\n", "arithmetic is not defined on f8E4M3FN (fp8 values are loaded, "
                                            "stored, converted and given to tl.dot; convert with .to(tl.float32)"),
    ("    tl.store(y_ptr + offs, tl.sum(x, axis=0))\n", "reduction is not defined on f8E4M3FN"),
    ("    tl.store(y_ptr + offs, x.to(tl.int32).to(tl.float8e4nv))\n",
     "f8E4M3FN converts only to and from floating-point types, not i32: convert through tl.float32"),
    ("    tl.store(y_ptr + offs, x.to(tl.float32).to(tl.float8e4nv, fp_downcast_rounding='rtz'))\n",
     "a conversion to f8E4M3FN rounds to nearest even (saturating), not 'rtz'"),
])
def test_what_fp8_does_not_do_is_an_error_at_its_line(body, message, tmp_path):
    sig = {"x_ptr": "*fp8e4nv", "y_ptr": "*fp8e4nv", "n": "i32"}
    with pytest.raises(mytriton.CompilationError) as e:
        _compile_body(body, sig, tmp_path)
    assert message in str(e.value) and "fp8_kernel.py:9" in str(e.value)


def test_an_fp8_scalar_argument_is_refused_with_what_to_pass():
    with pytest.raises(mytriton.CompilationError, match=r"parameter .n.: type .fp8e5.: fp8e5 scalars cannot be "
                                                       r"kernel arguments \(pass an fp32 scalar"):
        mytriton.compile(fp8k.quantize, {"x_ptr": "*fp32", "q_ptr": "*fp8e5", "back_ptr": "*fp32", "n": "fp8e5"},
                         {"FP8": tl.float8e5, "BLOCK": 32})


def test_the_mlir_backend_refuses_fp8_at_its_line():
    sig = {"x_ptr": "*fp32:16", "q_ptr": "*fp8e4nv:16", "back_ptr": "*fp32:16", "n": "i32"}
    with pytest.raises(mytriton.CompilationError, match=r"MLIR backend does not support fp8 values \(f8E4M3FN\); "
                                                        r"the CUDA backend does") as e:
        mytriton.compile(fp8k.quantize, sig, {"FP8": tl.float8e4nv, "BLOCK": 256}, backend="mlir")
    assert "fp8.py:" in str(e.value)


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_emulated_fp8_matmul_with_tails_agrees_with_the_interpreter(target):
    m, n, k = 72, 48, 100
    a = (RNG.standard_normal((m, k)) * 8).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)
    b = (RNG.standard_normal((k, n)) / 8).astype(np.float32).astype(ml_dtypes.float8_e5m2)
    sig = {"a_ptr": "*fp8e4nv:16", "b_ptr": "*fp8e5:16", "c_ptr": "*fp32:16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_bk": "i32:16", "stride_cm": "i32:16"}
    ce = {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 32}
    ck = mytriton.compile(fp8k.fp8_matmul, sig, ce, target=target)
    grid = (mytriton.cdiv(m, 64), mytriton.cdiv(n, 32))
    got, interp = np.zeros((m, n), np.float32), np.zeros((m, n), np.float32)
    cuda_emulator.run(ck.asm["cu"], [a, b, got, m, n, k, k, n, n], grid)
    fp8k.fp8_matmul[grid](a, b, interp, m, n, k, k, n, n, **ce)
    np.testing.assert_allclose(interp, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got, interp, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("name", FP8)
def test_abs_clears_the_sign_bit_of_every_code(name):
    """As Triton's tl.abs on fp8: ±inf stays an infinity (no trip through fp32, which would
    saturate it), a NaN stays that NaN; the interpreter, the generated CUDA and the emulator."""
    dt, np_type = FP8[name]
    x = np.arange(256, dtype=np.uint8).view(np_type)
    want = (np.arange(256, dtype=np.uint8) & 0x7F).tolist()
    z = np.zeros_like(x)
    fp8k.fp8_abs[(1,)](x, z, SIZE=256)
    assert z.view(np.uint8).tolist() == want
    ck = mytriton.compile(fp8k.fp8_abs, {"x_ptr": f"*{name}", "z_ptr": f"*{name}"}, {"SIZE": 256})
    assert ".x & 0x7f)" in ck.asm["cu"].split("__global__")[1] and ck.asm["cubin"][:4] == b"\x7fELF"
    if cuda_emulator.available():
        got = np.zeros_like(x)
        cuda_emulator.run(ck.asm["cu"], [x, got], (1,))
        assert got.view(np.uint8).tolist() == want


def test_reinterpret_passes_bytes_as_fp8():
    """mytriton.reinterpret (Triton's triton.reinterpret): a numpy array is viewed as the dtype
    (the interpreter's argument); an object with data_ptr() is wrapped, and a launch sees its
    address, device and the dtype; reinterpreting back gives the base."""
    from mytriton.runtime import driver
    raw = np.arange(256, dtype=np.uint8)
    x = mytriton.reinterpret(raw, tl.float8e5)
    assert x.dtype == ml_dtypes.float8_e5m2 and np.shares_memory(x, raw)
    z = np.zeros(256, np.uint8)
    fp8k.fp8_abs[(1,)](x, mytriton.reinterpret(z, tl.float8e5), SIZE=256)
    assert z.tolist() == (raw & 0x7F).tolist()

    class FakeTensor:                               # (what a CUDA torch.uint8 tensor shows a launch)
        dtype, is_cuda, shape = "torch.uint8", True, (256,)

        def data_ptr(self):
            return 0x7F0000001000

        def get_device(self):
            return 1
    base = FakeTensor()
    w = mytriton.reinterpret(base, tl.float8e4nv)
    assert isinstance(w, mytriton.TensorWrapper) and w.data_ptr() == base.data_ptr() and w.shape == (256,)
    assert driver.launch_argument_info(w) == ("*fp8e4nv", 0x7F0000001000, 1)
    assert mytriton.reinterpret(w, tl.float8e5).base is base and mytriton.reinterpret(w, tl.float8e5).dtype == tl.float8e5
    assert "TensorWrapper[f8E4M3FN]" in str(w)
    with pytest.raises(TypeError, match="reinterpret: dtype must be a mytriton.language dtype"):
        mytriton.reinterpret(base, "fp8e4nv")
    with pytest.raises(TypeError, match="Cannot reinterpret a list"):
        mytriton.reinterpret([1, 2], tl.float8e4nv)

"""fp16 and bf16 on the GPU: the kernels of tests/kernels/half.py through mytriton's JIT, against
torch and the CPU interpreter (bit for bit: both compute halves in fp32 and round once), and
against real Triton compiling the same source where it is installed (bit for bit where Triton
is: add, casts, comparisons; a tolerance for division, which Triton does approximately in fp32,
and for math). Also an AOT package launched with half DeviceArrays, torch tensors and half
scalars, and its dtype errors. The CPU half is tests/test_half.py."""
from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
              pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")]

import mytriton  # noqa: E402
from mytriton.ir.types import SCALARS  # noqa: E402
from tests.kernels import half as hk  # noqa: E402
from tests.triton_reference import triton_version  # noqa: E402

HERE = Path(__file__).resolve().parent
TORCH = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "fp64": torch.float64,
         "i32": torch.int32, "i16": torch.int16, "u8": torch.uint8, "i1": torch.bool, "i64": torch.int64}
NUMPY = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16, "fp32": np.float32, "fp64": np.float64, "i32": np.int32,
         "i16": np.int16, "u8": np.uint8, "i1": np.bool_, "i64": np.int64}
N, BLOCK = 70001, 1024                                  # a masked tail


@pytest.fixture(scope="module")
def triton_half():
    """tests/kernels/half.py compiled by real Triton (imports swapped), or None without Triton."""
    return triton_version(HERE / "kernels" / "half.py")


def tl_dtype(name, triton_mod):
    """The dtype constexpr for mytriton (its tl dtype) or Triton (triton.language's)."""
    if triton_mod is None:
        return SCALARS[name]
    import triton.language as ttl
    return getattr(ttl, SCALARS[name].info.triton)


def rand(name, seed, n=N, scale=3.0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    if TORCH[name].is_floating_point:
        return (torch.randn(n, device="cuda", generator=g, dtype=torch.float32) * scale).to(TORCH[name])
    return torch.randint(-30000, 30000, (n,), device="cuda", generator=g).to(TORCH[name])


def to_numpy(t):
    t = t.cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def from_numpy(a):
    """A CPU tensor holding the numpy array ``a`` (bfloat16 through its bits)."""
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def bits(t):
    t = t.cpu()
    if t.dtype.is_floating_point:
        return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])
    return t


def assert_bits(got, want, what):
    bad = bits(got) != bits(want)
    if got.dtype.is_floating_point:                     # any NaN equals any NaN
        bad &= ~(torch.isnan(got.float().cpu()) & torch.isnan(want.float().cpu()))
    assert not bad.any(), f"{what}: {int(bad.sum())} elements differ, e.g. {got.cpu()[bad][:4]} vs {want.cpu()[bad][:4]}"


def interpreted(kernel, args, grid, **constexprs):
    """The same launch in the CPU interpreter (numpy copies of the tensors); returns the numpy arrays."""
    host = [to_numpy(a) if isinstance(a, torch.Tensor) else a for a in args]
    kernel[grid](*host, **constexprs)
    return host


BINARY = [("add", "fp16"), ("sub", "fp16"), ("mul", "fp16"), ("maximum", "fp16"), ("minimum", "fp16"),
          ("where", "fp16"), ("neg", "fp16"), ("abs", "fp16"), ("lt", "i1"), ("eq", "i1"), ("scaled", "fp16"),
          ("div", "fp32"), ("mod", "fp32")]
EXACT_VS_TRITON = {"add", "sub", "mul", "maximum", "minimum", "where", "neg", "abs", "lt", "eq", "div"}


def assert_within_2ulp(got, want, what):
    """fp32 division is Triton's div.full.f32 on the GPU: within 2 ulp of the correctly rounded one
    (results below the smallest normal fp32 may be flushed to zero)."""
    g, w = got.float().cpu(), want.float().cpu()
    bad = ~((g == w) | (torch.isnan(g) & torch.isnan(w)) | ((g - w).abs() <= 2.5e-7 * w.abs())
            | ((g.abs() < 1.2e-38) & (w.abs() < 1.2e-38)))
    assert not bad.any(), f"{what}: {int(bad.sum())} elements differ, e.g. {g[bad][:4].tolist()} vs {w[bad][:4].tolist()}"


@pytest.mark.parametrize("ht", ["fp16", "bf16"])
@pytest.mark.parametrize("op, result", BINARY)
def test_binary(ht, op, result, triton_half):
    result = ht if result == "fp16" else result
    if op in ("maximum", "minimum") and ht == "bf16":
        result = "fp32"                   # Triton's tl.maximum/minimum compute bf16 in fp32
    x, y = rand(ht, 1), rand(ht, 2)
    x[:4] = torch.tensor([0.0, -0.0, float("inf"), float("nan")])
    y[10:40] = x[10:40]
    out = torch.empty(N, device="cuda", dtype=TORCH[result])
    grid = (mytriton.cdiv(N, BLOCK),)
    hk.binary_kernel[grid](x, y, out, N, OP=op, EXPECT=SCALARS[result], BLOCK=BLOCK)
    host = interpreted(hk.binary_kernel, [x, y, np.zeros(N, NUMPY[result]), N], grid, OP=op,
                       EXPECT=SCALARS[result], BLOCK=BLOCK)
    check = assert_within_2ulp if op == "div" else assert_bits
    check(out, from_numpy(host[2]), f"{op} {ht}: GPU vs interpreter")
    xf, yf = x.float(), y.float()
    want = {"add": xf + yf, "sub": xf - yf, "mul": xf * yf, "maximum": torch.fmax(xf, yf),
            "minimum": torch.fmin(xf, yf), "where": torch.where(xf > 0, xf, yf), "neg": 0 - xf, "abs": xf.abs(),
            "lt": xf < yf, "eq": xf == yf, "div": xf / yf, "mod": torch.fmod(xf, yf)}.get(op)
    if want is not None:
        check(out, want.to(TORCH[result]), f"{op} {ht}: GPU vs torch")
    if triton_half is not None:
        ref = torch.empty_like(out)
        triton_half.binary_kernel[grid](x, y, ref, N, OP=op, EXPECT=tl_dtype(result, triton_half), BLOCK=BLOCK)
        if op in EXACT_VS_TRITON:
            assert_bits(out, ref, f"{op} {ht}: mytriton vs Triton")
        else:
            # Triton contracts x * 0.1 + 1.5 into one fma (one rounding, where mytriton rounds
            # after each op): a bf16 ulp is 2^-8 relative
            tol = 1e-2 if result == "bf16" else 1e-3
            torch.testing.assert_close(out.float(), ref.float(), rtol=tol, atol=tol, equal_nan=True)


CASTS = [("fp32", "fp16", None), ("fp32", "bf16", None), ("fp32", "fp16", "rtz"), ("fp32", "bf16", "rtz"),
         ("fp32", "fp16", "rtne"), ("fp64", "fp16", None), ("fp64", "bf16", None), ("fp16", "fp32", None),
         ("bf16", "fp32", None), ("fp16", "bf16", None), ("bf16", "fp16", None), ("fp16", "i32", None),
         ("bf16", "i16", None), ("i32", "fp16", None), ("i32", "bf16", None), ("fp16", "i1", None),
         ("fp64", "fp16", "rtz"), ("fp64", "bf16", "rtz")]


@pytest.mark.parametrize("src, dst, rounding", CASTS)
def test_casts(src, dst, rounding, triton_half):
    x = rand(src, 3, scale=1000.0)
    if src in ("fp32", "fp64"):                        # every exponent range, and the edges of the halves
        x = x * torch.exp2(torch.randint(-20, 20, (N,), device="cuda").to(x.dtype))
        x[:4] = torch.tensor([65520.0, -7e4, 65519.0, 3.4e38])
    if TORCH[src].is_floating_point and (TORCH[dst].is_floating_point or dst == "i1"):   # (no integer for inf)
        x[4:8] = torch.tensor([0.0, -0.0, float("inf"), float("nan")])
    out = torch.empty(N, device="cuda", dtype=TORCH[dst])
    grid = (mytriton.cdiv(N, BLOCK),)
    kw = dict(DTYPE=SCALARS[dst], ROUNDING=rounding, BITCAST=False, SPELLING=0, BLOCK=BLOCK)
    hk.cast_kernel[grid](x, out, N, **kw)
    host = interpreted(hk.cast_kernel, [x, np.zeros(N, NUMPY[dst]), N], grid, **kw)
    assert_bits(out, from_numpy(host[1]), f"{src} -> {dst} ({rounding}): GPU vs interpreter")
    # torch rounds fp64 -> bf16 twice (through fp32); mytriton rounds once, as CUDA's __double2bfloat16
    if rounding in (None, "rtne") and (src, dst) != ("fp64", "bf16"):
        assert_bits(out, x.to(TORCH[dst]) if dst != "i1" else x != 0, f"{src} -> {dst}: GPU vs torch")
    if triton_half is not None and src != "fp64":     # Triton narrows to bf16 only from fp32
        ref = torch.empty_like(out)
        try:
            triton_half.cast_kernel[grid](x, ref, N, **dict(kw, DTYPE=tl_dtype(dst, triton_half)))
        except Exception as e:        # noqa: BLE001 - a conversion Triton does not lower (fp64 rtz)
            pytest.skip(f"Triton cannot compile this cast: {type(e).__name__}")
        assert_bits(out, ref, f"{src} -> {dst} ({rounding}): mytriton vs Triton")


@pytest.mark.parametrize("src, dst", [("fp16", "i16"), ("bf16", "i16"), ("i16", "bf16"), ("fp32", "i32")])
def test_bitcast(src, dst):
    x = rand(src, 4)
    out = torch.empty(N, device="cuda", dtype=TORCH[dst])
    kw = dict(DTYPE=SCALARS[dst], ROUNDING=None, BITCAST=True, SPELLING=2, BLOCK=BLOCK)
    hk.cast_kernel[(mytriton.cdiv(N, BLOCK),)](x, out, N, **kw)
    assert_bits(out, x.view(TORCH[dst]), f"bitcast {src} -> {dst}")


@pytest.mark.parametrize("ht", ["fp16", "bf16"])
@pytest.mark.parametrize("kind, result", [("sum", None), ("sum_fp32", "fp32"), ("max", "fp32"), ("min", "fp32")])
def test_reductions(ht, kind, result, triton_half):
    M, cols = 300, 1000
    result = result or ht
    x = rand(ht, 5, M * cols, scale=1.0)
    out = torch.empty(M, device="cuda", dtype=TORCH[result])
    grid = (mytriton.cdiv(M, 8),)
    kw = dict(KIND=kind, EXPECT=SCALARS[result], BLOCK_M=8, BLOCK_N=1024)
    hk.reduce_kernel[grid](x, out, M, cols, **kw)
    rows = x.view(M, cols).float()
    if kind.startswith("sum"):
        # tl.sum adds halves in the half type (Triton's choice): bf16's 8 bits lose most
        atol = {"sum_fp32": 1e-3, "sum": 0.5 if ht == "fp16" else 2.0}[kind]
        torch.testing.assert_close(out.float(), rows.sum(1), rtol=0, atol=atol)
    else:
        assert_bits(out, rows.amax(1) if kind == "max" else rows.amin(1), f"{kind} {ht}")
    if triton_half is not None:
        ref = torch.empty_like(out)
        triton_half.reduce_kernel[grid](x, ref, M, cols, **dict(kw, EXPECT=tl_dtype(result, triton_half)))
        if kind in ("max", "min"):
            assert_bits(out, ref, f"{kind} {ht}: mytriton vs Triton")
        else:
            torch.testing.assert_close(out.float(), ref.float(), rtol=0, atol=2 * atol)


@pytest.mark.parametrize("ht", ["fp16", "bf16"])
def test_math_through_fp32(ht, triton_half):
    x = rand(ht, 6)
    out = torch.empty_like(x)
    grid = (mytriton.cdiv(N, BLOCK),)
    hk.math_kernel[grid](x, out, N, BLOCK=BLOCK)
    f = x.float()
    want = (torch.exp(f) * 0.25 + torch.sqrt(f.abs()) - torch.sin(f) + torch.log(f.abs() + 1)).to(x.dtype)
    torch.testing.assert_close(out.float(), want.float(), rtol=1e-2, atol=1e-2)
    if triton_half is not None:
        ref = torch.empty_like(x)
        triton_half.math_kernel[grid](x, ref, N, BLOCK=BLOCK)
        torch.testing.assert_close(out.float(), ref.float(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("ht, s", [("fp16", np.float16(0.3333)), ("bf16", ml_dtypes.bfloat16(0.3333))])
def test_half_scalar_arguments(ht, s):
    x = rand(ht, 7)
    out = torch.empty_like(x)
    hk.scalar_kernel[(mytriton.cdiv(N, BLOCK),)](x, out, N, s, BLOCK=BLOCK)
    sv = float(np.float32(s))
    want = ((x.float() * sv).to(x.dtype).float() + sv).to(x.dtype)
    assert_bits(out, want, f"x * s + s ({ht})")


@pytest.mark.parametrize("ht", ["fp16", "bf16"])
def test_add_matches_torch_bit_for_bit(ht, triton_half):
    x, y = rand(ht, 8), rand(ht, 9)
    out = torch.empty_like(x)
    grid = (mytriton.cdiv(N, BLOCK),)
    hk.add_kernel[grid](x, y, out, N, BLOCK=BLOCK)
    assert_bits(out, x + y, "add vs torch")
    if triton_half is not None:
        ref = torch.empty_like(x)
        triton_half.add_kernel[grid](x, y, ref, N, BLOCK=BLOCK)
        assert_bits(out, ref, "add vs Triton")


def test_aot_package_with_halves(tmp_path):
    """A built package launched with numpy-backed DeviceArrays of fp16 and bf16, torch tensors and
    half scalars; a tensor of the wrong half type is refused by name."""
    from test_aot_support import run_cli
    shutil.copy(HERE / "kernels" / "half.py", tmp_path / "half_kernels.py")
    (tmp_path / "m.yaml").write_text(textwrap.dedent("""
        package: halfpkg
        targets: [sm_90]
        kernels:
          - kernel: half_kernels.py:add_kernel
            signature: {x_ptr: "*fp16:16", y_ptr: "*fp16:16", out_ptr: "*fp16:16", n: i32}
            constexprs: {BLOCK: [1024]}
          - kernel: half_kernels.py:scalar_kernel
            signature: {x_ptr: "*bf16:16", out_ptr: "*bf16:16", n: i32, s: bf16}
            constexprs: {BLOCK: [1024]}
    """))
    result = run_cli([str(tmp_path / "m.yaml"), "--out", str(tmp_path / "build")], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    code = textwrap.dedent("""
        import sys, json, numpy as np, ml_dtypes, torch
        sys.path.insert(0, sys.argv[1])
        import halfpkg
        n = 5000
        x = np.random.default_rng(0).standard_normal(n).astype(np.float16)
        y = np.random.default_rng(1).standard_normal(n).astype(np.float16)
        dx, dy, do = (halfpkg.DeviceArray.from_numpy(a) for a in (x, y, np.zeros(n, np.float16)))
        halfpkg.add_kernel[(halfpkg.cdiv(n, 1024),)](dx, dy, do, n, BLOCK=1024)
        ok_add = bool((do.copy_to_host() == (x.astype(np.float32) + y).astype(np.float16)).all())
        b = np.random.default_rng(2).standard_normal(n).astype(ml_dtypes.bfloat16)
        db, dout = halfpkg.DeviceArray.from_numpy(b), halfpkg.DeviceArray(n, "bf16")
        halfpkg.scalar_kernel[(halfpkg.cdiv(n, 1024),)](db, dout, n, 0.5, BLOCK=1024)
        want = ((b.astype(np.float32) * 0.5).astype(ml_dtypes.bfloat16).astype(np.float32) + 0.5).astype(ml_dtypes.bfloat16)
        ok_scalar = bool((dout.copy_to_host().view(np.uint16) == want.view(np.uint16)).all())
        t = torch.zeros(n, device="cuda", dtype=torch.bfloat16)
        try:
            halfpkg.add_kernel[(halfpkg.cdiv(n, 1024),)](t, t, t, n, BLOCK=1024)
            err = None
        except TypeError as e:
            err = str(e)
        xt = torch.from_numpy(x).cuda()
        ot = torch.empty_like(xt)
        halfpkg.add_kernel[(halfpkg.cdiv(n, 1024),)](xt, xt, ot, n, BLOCK=1024)
        torch.cuda.synchronize()
        ok_torch = bool(torch.equal(ot, xt + xt))
        print(json.dumps({"add": ok_add, "scalar": ok_scalar, "err": err, "torch": ok_torch}))
    """)
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "build")], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    import json
    info = json.loads(proc.stdout.splitlines()[-1])
    assert info == {"add": True, "scalar": True, "torch": True,
                    "err": "parameter 'x_ptr' expects *fp16, got a bfloat16 array"}, info

"""The row-wise kernels of manifests/kernels/rows.py (shipped by manifests/rows.yaml): softmax by
persistent programs with a run-time loop step, and layer norm forward with fp32 statistics. The CPU
interpreter against numpy (awkward sizes, masked tails), each manifest specialization through
NVRTC, the manifest through mytriton-build, and on a GPU the JIT against PyTorch and against real
Triton running the same source."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mytriton
from mytriton.aot import load_manifest

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "manifests" / "kernels" / "rows.py"
MANIFEST = ROOT / "manifests" / "rows.yaml"

spec = importlib.util.spec_from_file_location("mytriton_rows_kernels", KERNELS)
rows = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rows)


def next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def _rng(seed):
    return np.random.default_rng(seed)


# --- references (float64 math on the inputs) -------------------------------------------------------

def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layer_norm_ref(x, w, b, eps):
    x = x.astype(np.float64)
    mean = x.mean(axis=1)
    rstd = 1 / np.sqrt(x.var(axis=1) + eps)
    return (x - mean[:, None]) * rstd[:, None] * w.astype(np.float64) + b.astype(np.float64), mean, rstd


def layer_norm_inputs(rng, M, N, dtype):
    """x = -2.3 + 0.5 * randn (a mean far from 0), weight and bias uniform in [0, 1)."""
    x = (-2.3 + 0.5 * rng.standard_normal((M, N))).astype(dtype)
    return x, rng.random(N).astype(dtype), rng.random(N).astype(dtype)


# --- CPU interpreter ---------------------------------------------------------------------------------

@pytest.mark.parametrize("n_rows,n_cols,programs", [(37, 100, 5), (9, 781, 9), (4, 16, 7)])
def test_softmax_rows_interpreter(n_rows, n_cols, programs):
    x = (_rng(n_cols).standard_normal((n_rows, n_cols)) * 4).astype(np.float32)
    y = np.full_like(x, np.nan)
    rows.softmax_rows_kernel[(min(programs, n_rows),)](y, x, x.shape[1], y.shape[1], n_rows, n_cols,
                                                       BLOCK=next_pow2(n_cols), STAGES=2)
    np.testing.assert_allclose(y, softmax_ref(x), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("M,N,block", [(5, 300, 128), (3, 1000, 1024), (4, 17, 16)])
def test_layer_norm_interpreter(M, N, block, dtype):
    x, w, b = layer_norm_inputs(_rng(N), M, N, dtype)
    y = np.full((M, N), np.nan, dtype)
    mean, rstd = np.full(M, np.nan, np.float32), np.full(M, np.nan, np.float32)
    rows.layer_norm_fwd_kernel[(M,)](x, y, w, b, mean, rstd, x.shape[1], N, 1e-5, BLOCK=block, num_warps=4)
    want, want_mean, want_rstd = layer_norm_ref(x, w, b, 1e-5)
    np.testing.assert_allclose(mean, want_mean, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(rstd, want_rstd, rtol=1e-5)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=0, atol=1e-2)
    np.testing.assert_allclose(y.astype(np.float64), want, **tol)


# --- the manifest --------------------------------------------------------------------------------

def manifest_specializations():
    return [pytest.param(entry, spec, id=f"{entry.name}.{spec.id}")
            for entry in load_manifest(str(MANIFEST)).kernels for spec in entry.specializations]


def test_manifest_ships_the_row_kernels():
    m = load_manifest(str(MANIFEST))
    assert [k.name for k in m.kernels] == ["softmax_rows_kernel", "layer_norm_fwd_kernel"]
    ln = m.kernels[1]
    assert dict(ln.params)["x_ptr"] == "*fp16:16" and dict(ln.params)["mean_ptr"] == "*fp32:16"


@pytest.mark.parametrize("entry,spec", manifest_specializations())
def test_manifest_specialization_compiles_under_nvrtc(entry, spec):
    ck = mytriton.compile(entry.jit_fn, signature=dict(entry.params), constexprs=dict(spec.constexprs),
                          target="sm_90", num_warps=spec.num_warps)
    assert ck.asm["cubin"][:4] == b"\x7fELF"


def test_mytriton_build_builds_the_manifest(tmp_path):
    result = subprocess.run([sys.executable, "-m", "mytriton.aot", str(MANIFEST), "--out", str(tmp_path),
                             "-j", "2"], capture_output=True, text=True, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "rows" / "manifest.json").is_file()


# --- GPU: the JIT against PyTorch and against Triton on the same source ------------------------------

def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    return torch


def _triton_version():
    """manifests/kernels/rows.py run by real Triton (imports swapped), or a skip without Triton."""
    pytest.importorskip("triton")
    spec = importlib.util.spec_from_file_location("mytriton_bench_common", ROOT / "benchmarks" / "common.py")
    common = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(common)
    return common.triton_module(KERNELS)


def _softmax(module, x, programs):
    """A fixed number of persistent programs."""
    torch = _torch()
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    module.softmax_rows_kernel[(min(programs, n_rows), 1, 1)](y, x, x.stride(0), y.stride(0), n_rows, n_cols,
                                                              BLOCK=next_pow2(n_cols), STAGES=4, num_warps=8)
    return y


def _layer_norm(module, x, weight, bias, eps):
    """(y, mean, rstd), with at most 64 KiB of a row per block and a warp per 256 columns (up to 8)."""
    torch = _torch()
    y = torch.empty_like(x)
    M, N = x.shape
    mean = torch.empty((M, ), dtype=torch.float32, device=x.device)
    rstd = torch.empty((M, ), dtype=torch.float32, device=x.device)
    block = min(65536 // x.element_size(), next_pow2(N))
    num_warps = min(max(block // 256, 1), 8)
    module.layer_norm_fwd_kernel[(M, )](x, y, weight, bias, mean, rstd, x.stride(0), N, eps, BLOCK=block,
                                        num_warps=num_warps)
    return y, mean, rstd


SOFTMAX_SHAPES = [(1823, 781, 132), (64, 4096, 13), (5, 17, 8)]
LAYER_NORM_SHAPES = [(1151, 8192), (37, 1000), (4, 33)]


@pytest.mark.gpu
@pytest.mark.parametrize("n_rows,n_cols,programs", SOFTMAX_SHAPES)
def test_softmax_rows_gpu_vs_torch(n_rows, n_cols, programs):
    torch = _torch()
    x = torch.randn(n_rows, n_cols, device="cuda", generator=torch.Generator(device="cuda").manual_seed(0))
    torch.testing.assert_close(_softmax(rows, x, programs), torch.softmax(x, axis=1))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("M,N", LAYER_NORM_SHAPES)
def test_layer_norm_gpu_vs_torch(M, N, dtype):
    torch = _torch()
    x, w, b = (torch.from_numpy(a).cuda() for a in layer_norm_inputs(_rng(N), M, N, getattr(np, dtype)))
    y, mean, rstd = _layer_norm(rows, x, w, b, 1e-5)
    want = torch.nn.functional.layer_norm(x, (N,), w, b, 1e-5).to(x.dtype)
    torch.testing.assert_close(y, want, atol=1e-2 if dtype == "float16" else 1e-4, rtol=0)
    xf = x.float()
    torch.testing.assert_close(mean, xf.mean(1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(rstd, 1 / torch.sqrt(xf.var(1, unbiased=False) + 1e-5), rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize("n_rows,n_cols,programs", SOFTMAX_SHAPES)
def test_softmax_rows_gpu_vs_triton(n_rows, n_cols, programs):
    torch = _torch()
    theirs = _triton_version()
    x = torch.randn(n_rows, n_cols, device="cuda") * 10
    torch.testing.assert_close(_softmax(rows, x, programs), _softmax(theirs, x, programs),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("M,N", LAYER_NORM_SHAPES)
def test_layer_norm_gpu_vs_triton(M, N, dtype):
    torch = _torch()
    theirs = _triton_version()
    x, w, b = (torch.from_numpy(a).cuda() for a in layer_norm_inputs(_rng(N), M, N, getattr(np, dtype)))
    ours, want = _layer_norm(rows, x, w, b, 1e-5), _layer_norm(theirs, x, w, b, 1e-5)
    # fp16 outputs may differ by one rounding of the fp32 value; the statistics are fp32 either way
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-3, atol=1e-3)
    for got, exp in zip(ours, want):
        torch.testing.assert_close(got, exp, **tol)

"""Tensor descriptors made in the kernel on the GPU, their tensor maps encoded at launch
(frontend/launch_maps.py): the JIT against Triton (whose kernels make the maps in global scratch
memory) and torch on the same sources, refusals that launch nothing, a built package's loader and
its C API."""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

import mytriton  # noqa: E402
from tests.kernels import made_descriptors as K  # noqa: E402
from tests.triton_reference import triton_version  # noqa: E402

TR = triton_version(K.__file__)
GEMM_FILE = Path(__file__).resolve().parents[1] / "manifests" / "kernels" / "gemm.py"


def _hopper() -> bool:
    return torch.cuda.get_device_capability() == (9, 0)


@pytest.fixture(autouse=True)
def triton_allocator():
    """Triton's device-side tensor descriptors need scratch memory from an allocator."""
    if TR is not None:
        import triton
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))


@pytest.mark.parametrize("m, n, dtype", [(45, 64, torch.float16), (130, 40, torch.float32), (7, 8, torch.bfloat16)])
def test_made_descriptors_copy_by_tma_as_triton(m, n, dtype):
    x = torch.randn(m, n, device="cuda").to(dtype)
    bm, bn = 16, max(16 // x.element_size(), 32)
    grid = (mytriton.cdiv(m, bm), mytriton.cdiv(n, bn))
    ours = torch.full_like(x, 7)
    k = K.scaled_copy[grid](x, ours, m, n, BM=bm, BN=bn)
    torch.cuda.synchronize()
    assert torch.equal(ours, x * 2)
    if _hopper():
        assert [str(t) for _, t in k.params][-2:] == ["tmap", "tmap"]
        assert "cp.async.bulk.tensor" in k.asm["ptx"]
    if TR is not None:
        theirs = torch.full_like(x, 7)
        TR.scaled_copy[grid](x, theirs, m, n, BM=bm, BN=bn)
        torch.cuda.synchronize()
        assert torch.equal(ours, theirs)


def test_descriptors_of_expressions_of_the_parameters():
    b, m, n, row0, bm, bn = 3, 20, 32, 5, 16, 32
    x = torch.randn(b * m, n, device="cuda")
    rows = b * m - row0
    grid = (mytriton.cdiv(rows, 2 * bm), 1)
    ours = torch.zeros_like(x)
    K.batched_copy[grid](x, ours, b, m, n, row0, BM=bm, BN=bn)
    torch.cuda.synchronize()
    assert torch.equal(ours[:rows], x[row0:] + 1) and not ours[rows:].any()
    if TR is not None:
        theirs = torch.zeros_like(x)
        TR.batched_copy[grid](x, theirs, b, m, n, row0, BM=bm, BN=bn)
        torch.cuda.synchronize()
        assert torch.equal(ours, theirs)


def test_a_descriptor_tma_cannot_copy_is_refused_before_any_launch():
    if not _hopper():
        pytest.skip("the maps are TMA's: compute capability 9.0 (sm_90a)")
    x = torch.randn(16, 60, device="cuda", dtype=torch.float16)
    y = torch.full_like(x, 7)
    with pytest.raises(ValueError, match=r"made_descriptors.py:11 \(tl.make_tensor_descriptor\) is copied by TMA "
                                         r"in this kernel, and TMA cannot copy it: its strides \[60, 1\]"):
        K.scaled_copy[(1, 4)](x, y, 16, 60, BM=16, BN=16)
    torch.cuda.synchronize()                          # (nothing ran: the context is fine)
    assert torch.equal(y, torch.full_like(x, 7))
    K.guarded_copy[(1, 4)](x, y, 16, 60, BM=16, BN=16)  # (the kernel guards its descriptor: it runs)
    torch.cuda.synchronize()
    assert torch.equal(y, x)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("m, n, k, bm, bn, bk, warps, stages", [
    (300, 200, 504, 128, 128, 64, 4, 3),       # ragged in M, N and K: boxes partly out of bounds
    (256, 512, 256, 128, 256, 64, 8, 3),
    (64, 128, 40, 64, 128, 32, 4, 4),          # K of two iterations with four stages
])
def test_the_made_descriptor_gemm_as_torch_and_triton(dtype, m, n, k, bm, bn, bk, warps, stages):
    spec = importlib.util.spec_from_file_location("mt_gemm_made", GEMM_FILE)
    mt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mt)
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    ours, theirs = (torch.full((m, n), 7.0, device="cuda", dtype=dtype) for _ in range(2))
    grid = (mytriton.cdiv(m, bm) * mytriton.cdiv(n, bn),)
    kw = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages)
    kernel = mt.made_descriptor_matmul_kernel[grid](a, b, ours, m, n, k, **kw)
    if _hopper():
        assert "mt_tma_copy_2d(reinterpret_cast" in kernel.asm["cu"]      # (TMA fills the wgmma rings)
    torch.cuda.synchronize()
    tol = dict(rtol=2e-2, atol=1e-1) if dtype == torch.bfloat16 else dict(rtol=1e-2, atol=5e-2)
    torch.testing.assert_close(ours, (a.float() @ b.float()).to(dtype), **tol)
    gemm = triton_version(GEMM_FILE)
    if gemm is not None:
        gemm.made_descriptor_matmul_kernel[grid](a, b, theirs, m, n, k, **kw)
        torch.cuda.synchronize()
        torch.testing.assert_close(ours, theirs, **tol)


PROGRAM = r"""
#include "made.h"
#include <stdio.h>

int main(void)
{
    enum { M = 45, N = 64 };
    static unsigned short x[M * N], y[M * N];
    for (int i = 0; i < M * N; i++) x[i] = (unsigned short)(0x3c00 + (i % 1000));   /* halves from 1.0 up */
    CUdevice device; CUcontext ctx; CUdeviceptr dx, dy, dz;
    cuInit(0); cuDeviceGet(&device, 0); cuDevicePrimaryCtxRetain(&ctx, device); cuCtxSetCurrent(ctx);
    cuMemAlloc(&dx, sizeof x); cuMemAlloc(&dy, sizeof y); cuMemAlloc(&dz, sizeof y);
    cuMemcpyHtoD(dx, x, sizeof x); cuMemsetD16(dy, 0, M * N);
    int launched = made_scaled_copy(NULL, (M + 15) / 16, 1, 1, dx, dy, M, N, 16, 64, 0);
    int refused = made_scaled_copy(NULL, 1, 1, 1, dx, dz, 16, 60, 16, 64, 0);
    int synced = cuCtxSynchronize();
    cuMemcpyDtoH(y, dy, sizeof y);
    printf("{\"launched\": %d, \"refused\": %d, \"synced\": %d, \"y\": [", launched, refused, synced);
    for (int i = 0; i < M * N; i++) printf("%u%s", y[i], i + 1 < M * N ? "," : "]}\n");
    return 0;
}
"""


def test_a_built_package_and_its_c_api_encode_the_maps(tmp_path, monkeypatch):
    import importlib
    import sys
    import numpy as np
    from mytriton.aot import build_packages
    from tests.test_aot_support import write_project
    from tests.test_capi import cuda_include
    from tests.test_capi_gpu import libcuda_path
    from tests.test_launch_maps import MANIFEST
    manifest = write_project(tmp_path, MANIFEST, kernels=open(K.__file__).read())
    build_packages([str(manifest)], out_dir=str(tmp_path / "out"), jobs=2, echo=lambda line: None, emit_c=True)
    monkeypatch.syspath_prepend(str(tmp_path / "out"))
    for name in [m for m in sys.modules if m == "made" or m.startswith("made.")]:
        monkeypatch.delitem(sys.modules, name)
    made = importlib.import_module("made")
    x = (torch.arange(45 * 64, device="cuda") % 1000 + 0x3c00).to(torch.int16).view(torch.float16).view(45, 64)
    y = torch.zeros_like(x)
    made.scaled_copy[(3, 1)](x, y, 45, 64, BM=16, BN=64)
    torch.cuda.synchronize()
    assert torch.equal(y, x * 2)
    if _hopper():
        with pytest.raises(ValueError, match=r"k.py:11 .* its strides \[60, 1\]"):
            made.scaled_copy[(1, 1)](x, y, 16, 60, BM=16, BN=64)
    if shutil.which("cc") is None:
        return
    c = tmp_path / "out" / "made" / "c"
    (tmp_path / "main.c").write_text(PROGRAM)
    compiled = subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", "-O2", "-I", str(c), "-I", cuda_include(),
                               str(tmp_path / "main.c"), str(c / "made.c"), libcuda_path(), "-lm",
                               "-o", str(tmp_path / "main")], capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    ran = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    got = json.loads(ran.stdout)
    assert got["launched"] == 0 and got["synced"] == 0
    assert got["refused"] == (1 if _hopper() else 0)          # CUDA_ERROR_INVALID_VALUE where TMA copies
    want = (x * 2).view(torch.int16).cpu().numpy().view(np.uint16).ravel().tolist()
    assert got["y"] == want

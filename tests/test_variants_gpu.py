"""Specialized variants on a real GPU: every variant of a built package against its plain one and
numpy, element-wise, on awkward sizes (M, N, K not multiples of 16), unit and non-unit strides
(a transposed operand) and misaligned pointers (offset views); the variant a launch ran is the
one ``best()`` names.

Every test is marked ``gpu`` and skipped where the CUDA driver or a device is missing.
"""
from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

from mytriton.aot import build_packages
from mytriton.runtime import driver as runtime
from test_aot_support import REPO, write_project

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not runtime.driver_available(), reason="needs an NVIDIA GPU and driver")]

ELEMENTWISE = '''\
import mytriton as triton
import mytriton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
'''

GEMM_SIGNATURE = ('{a_ptr: "*fp16", b_ptr: "*fp16", c_ptr: "*fp16", M: i32, N: i32, K: i32, stride_am: i32, '
                  'stride_ak: i32, stride_bk: i32, stride_bn: i32, stride_cm: i32, stride_cn: i32}')


@pytest.fixture(scope="module")
def pkg(tmp_path_factory):
    """A package of the repository's GEMM and an elementwise add, plain-typed, for this GPU."""
    cc = runtime.compute_capability()
    targets = [f"sm_{cc[0]}{cc[1]}"] + (["sm_90a"] if cc == (9, 0) else [])
    folder = tmp_path_factory.mktemp("variants_gpu")
    (folder / "kernels").mkdir()
    (folder / "kernels" / "gemm.py").write_text((REPO / "manifests" / "kernels" / "gemm.py").read_text())
    manifest = f'''\
package: vgpu
targets: [{", ".join(targets)}]
kernels:
  - kernel: kernels/k.py:add_kernel
    signature: {{x_ptr: "*fp32", y_ptr: "*fp32", out_ptr: "*fp32", n: i32}}
    constexprs: {{BLOCK: [1024]}}
  - kernel: kernels/gemm.py:matmul_kernel
    signature: {GEMM_SIGNATURE}
    specializations:
      - {{BLOCK_M: 64, BLOCK_N: 64, BLOCK_K: 32, GROUP_M: 8, ACTIVATION: "", num_warps: 4, num_stages: 3}}
      - {{BLOCK_M: 128, BLOCK_N: 128, BLOCK_K: 64, GROUP_M: 8, ACTIVATION: "", num_warps: 8}}
'''
    path = write_project(folder, manifest, ELEMENTWISE)
    reports = build_packages([str(path)], out_dir=str(folder / "out"), jobs=4, echo=lambda line: None,
                             notify=lambda line: None)
    assert reports[0].variants == 3
    sys.path.insert(0, str(folder / "out"))
    try:
        yield importlib.import_module("vgpu")
    finally:
        sys.path.remove(str(folder / "out"))


def plain_kernel(family, spec):
    """The plain variant of a specialization alone (its specialized one left out)."""
    return runtime.Kernel(family.name, family.params, spec["num_warps"], spec.get("shared", 0), spec["images"],
                          spec.get("sha256"), symbol=spec["symbol"])


def device(array, offset_elements=0):
    """A DeviceArray holding ``array``, starting ``offset_elements`` into its allocation (a view
    that is not 16-byte aligned where the offset is not a multiple of 16 bytes)."""
    padded = np.concatenate([np.zeros(offset_elements, array.dtype), array.ravel()])
    whole = runtime.DeviceArray.from_numpy(padded)
    return whole, whole.view_offset(offset_elements * array.itemsize)


def host(view, shape, dtype):
    return view.copy_to_host().view(dtype).reshape(shape)


@pytest.mark.parametrize("n, offset", [(1 << 20, 0), (1000003, 0), (4096, 1), (4111, 3)])
def test_elementwise_variants_agree_bit_for_bit(pkg, n, offset):
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    keep = [device(x, offset), device(y), device(np.zeros(n, np.float32))]
    args = [view for _, view in keep] + [n]
    fam = pkg.add_kernel
    spec = fam._specs[0]
    variant = fam.best(*args, BLOCK=1024)["variant"]
    assert variant == ("specialized" if n % 16 == 0 and offset % 4 == 0 else "plain")
    fam[(pkg.cdiv(n, 1024),)](*args, BLOCK=1024)
    runtime.synchronize()
    auto = host(args[2], (n,), np.float32)
    out2 = device(np.zeros(n, np.float32))
    plain_kernel(fam, spec).launch((pkg.cdiv(n, 1024),), args[:2] + [out2[1], n])
    runtime.synchronize()
    assert np.array_equal(auto, host(out2[1], (n,), np.float32))
    assert np.array_equal(auto, x + y)
    if variant == "specialized":        # (loaded at the first launch that runs it)
        assert fam.kernel(spec).twin.loaded_images


GEMM_CASES = [
    # (M, N, K, B transposed, offset of A in elements): what the specialized variant takes and what not
    (512, 256, 128, False, 0),          # every promise kept
    (1000, 512, 256, False, 0),         # M not a multiple of 16: M stays plain, so still specialized
    (257, 129, 67, False, 0),           # N and K not multiples of 16
    (512, 256, 128, True, 0),           # B column-major: stride_bn is not 1
    (512, 256, 128, False, 8),          # A's pointer 16 bytes off: still aligned
    (512, 256, 128, False, 3),          # A's pointer 6 bytes off: misaligned
    (48, 1000, 1000, False, 0),         # N, K multiples of 8 only
]


@pytest.mark.parametrize("m, n, k, transposed, offset", GEMM_CASES)
def test_gemm_variants_agree_with_the_plain_one_and_numpy(pkg, m, n, k, transposed, offset):
    rng = np.random.default_rng(m * n + k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    reference = a.astype(np.float32) @ b.astype(np.float32)
    stored_b = np.ascontiguousarray(b.T) if transposed else b
    _a, a_view = device(a, offset)
    _b, b_view = device(stored_b)
    stride_bk, stride_bn = (1, k) if transposed else (n, 1)
    fam = pkg.matmul_kernel
    for spec in fam._specs:
        cx = spec["constexprs"]
        grid = (pkg.cdiv(m, cx["BLOCK_M"]) * pkg.cdiv(n, cx["BLOCK_N"]),)
        results = []
        for launch in ("auto", "plain"):
            _c, c_view = device(np.zeros((m, n), np.float16))
            args = [a_view, b_view, c_view, m, n, k, k, 1, stride_bk, stride_bn, n, 1]
            if launch == "auto":
                chosen = fam.best(*args, **cx, num_warps=spec["num_warps"])["variant"]
                fam[grid](*args, **cx, num_warps=spec["num_warps"])
            else:
                plain_kernel(fam, spec).launch(grid, args)
            runtime.synchronize()
            results.append(host(c_view, (m, n), np.float16).astype(np.float32))
        keeps = n % 16 == 0 and k % 16 == 0 and not transposed and offset % 8 == 0
        assert chosen == ("specialized" if keeps else "plain"), (spec["id"], m, n, k, transposed, offset)
        scale = float(np.abs(reference).max())
        for got in results:
            assert np.abs(got - reference).max() <= 2e-2 * scale, (spec["id"], chosen)
        # the variants agree element-wise (fp32 sums of the same products, perhaps in another order)
        assert np.abs(results[0] - results[1]).max() <= 1e-2 * scale, (spec["id"], chosen)

"""Host-side tensor descriptors on the GPU: tests/kernels/host_descriptors.py through mytriton's JIT
(descriptors passed as their leaves, plain loads) and through Triton (TMA on the H200), same
tensors, one process."""
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

import mytriton  # noqa: E402
from mytriton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402
from tests.kernels import host_descriptors as K  # noqa: E402
from tests.triton_reference import triton_version  # noqa: E402

TR = triton_version(K.__file__)


def their_descriptor(*args):
    from triton.tools.tensor_descriptor import TensorDescriptor as Theirs
    return Theirs(*args)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_copy_through_host_descriptors_as_triton(dtype, padding):
    m, n, stride = 37, 50, 56
    x = torch.randn(m, stride, device="cuda").to(dtype)
    ours = torch.full_like(x, 7)
    K.copy_add[(3, 2)](TensorDescriptor(x, [m, n], [stride, 1], [16, 32], padding),
                       TensorDescriptor(ours, [m, n], [stride, 1], [16, 32]), BM=16, BN=32)
    torch.cuda.synchronize()
    assert torch.equal(ours[:, :n], x[:, :n] + 1) and torch.all(ours[:, n:] == 7)
    if TR is not None:
        theirs = torch.full_like(x, 7)
        TR.copy_add[(3, 2)](their_descriptor(x, [m, n], [stride, 1], [16, 32], padding),
                            their_descriptor(theirs, [m, n], [stride, 1], [16, 32]), BM=16, BN=32)
        torch.cuda.synchronize()
        # inside the descriptor's shape only: Triton 3.6 (TMA on the H200) also writes the block's
        # padding + 1 into the columns past n inside the row stride, which a store through a
        # descriptor must leave alone (measured; ours keeps them, asserted above)
        assert torch.equal(ours[:, :n], theirs[:, :n])


def test_row_sums_through_a_descriptor_as_triton():
    x = torch.randn(1000, 640, device="cuda")
    ours = torch.zeros(1024, device="cuda")
    K.row_sums[(16,)](TensorDescriptor.from_tensor(x, [64, 64]), ours, BM=64, BN=64)
    torch.cuda.synchronize()
    torch.testing.assert_close(ours[:1000], x.sum(1), rtol=1e-5, atol=1e-4)
    if TR is not None:
        from triton.tools.tensor_descriptor import TensorDescriptor as Theirs
        theirs = torch.zeros(1024, device="cuda")
        TR.row_sums[(16,)](Theirs.from_tensor(x, [64, 64]), theirs, BM=64, BN=64)
        torch.cuda.synchronize()
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-4)


def _hopper() -> bool:
    return torch.cuda.get_device_capability() == (9, 0)


def _shifted(x, m, n, shift, padding):
    """What shifted_copy computes inside the descriptor's shape."""
    fill = float("nan") if padding == "nan" else 0
    want = torch.full((m, n), fill, dtype=x.dtype, device=x.device)
    rows, cols = torch.arange(m, device=x.device)[:, None] + shift, torch.arange(n, device=x.device)[None, :] - shift
    ok = (rows >= 0) & (rows < m) & (cols >= 0) & (cols < n)
    want[ok] = x[rows.clamp(0, m - 1), cols.clamp(0, n - 1)][ok]
    return want


@pytest.mark.parametrize("dtype, padding", [(torch.float16, "zero"), (torch.float32, "nan"), (torch.int8, "zero"),
                                            (torch.int32, "zero"), (torch.bfloat16, "nan"), (torch.float64, "zero")])
@pytest.mark.parametrize("shift", [0, 5, -3])
def test_blocks_partly_out_of_bounds_as_triton(dtype, padding, shift):
    """Loads at offsets off the block grid, negative ones included, and stores past the shape's
    edge, on every element type TMA copies (on the H200 the kernel uses TMA: asserted)."""
    m, n, stride = 45, 70, 80
    x = (torch.randn(m, stride, device="cuda") * 50).clamp(-100, 100).to(dtype)
    ours = torch.full_like(x, 7)
    grid = (mytriton.cdiv(m, 16), mytriton.cdiv(n, 64))
    k = K.shifted_copy[grid](TensorDescriptor(x, [m, n], [stride, 1], [16, 64], padding),
                             TensorDescriptor(ours, [m, n], [stride, 1], [16, 64]), shift, BM=16, BN=64)
    torch.cuda.synchronize()
    if _hopper():
        assert "cp.async.bulk.tensor.2d" in k.asm["ptx"]
    torch.testing.assert_close(ours[:, :n], _shifted(x, m, n, shift, padding), rtol=0, atol=0, equal_nan=True)
    assert torch.all(ours[:, n:] == 7)                       # past the shape: never written
    if TR is not None and shift == 0:
        # (not at other offsets: ours took the element-wise copy there, as TMA cannot start a box
        # off 16 bytes -- the H200 stopped our kernel with an illegal instruction before that copy
        # existed -- and Triton 3.6's behaviour there is not what this test is about)
        theirs = torch.full_like(x, 7)
        TR.shifted_copy[grid](their_descriptor(x, [m, n], [stride, 1], [16, 64], padding),
                              their_descriptor(theirs, [m, n], [stride, 1], [16, 64]), shift, BM=16, BN=64)
        torch.cuda.synchronize()
        torch.testing.assert_close(ours[:, :n], theirs[:, :n], rtol=0, atol=0, equal_nan=True)


def test_one_and_three_dimensions_as_triton():
    x1 = torch.randn(1000, device="cuda")
    o1 = torch.zeros(1024, device="cuda")
    K.copy_1d[(8,)](TensorDescriptor.from_tensor(x1, [128]), TensorDescriptor(o1, [1000], [1], [128]), B=128)
    x3 = torch.randn(5, 37, 72, device="cuda").to(torch.float16)
    o3 = torch.zeros_like(x3)
    k3 = K.copy_3d[(3, 3, 2)](TensorDescriptor.from_tensor(x3, [2, 16, 64]), TensorDescriptor.from_tensor(o3, [2, 16, 64]),
                              B0=2, B1=16, B2=64)
    torch.cuda.synchronize()
    if _hopper():
        assert "cp.async.bulk.tensor.3d" in k3.asm["ptx"]          # (1-d descriptors: ordinary loads)
    assert torch.equal(o1[:1000], x1 * 2) and not o1[1000:].any()
    assert torch.equal(o3, x3 - 1)
    if TR is not None:
        t1, t3 = torch.zeros_like(o1), torch.zeros_like(o3)
        from triton.tools.tensor_descriptor import TensorDescriptor as Theirs
        TR.copy_1d[(8,)](Theirs.from_tensor(x1, [128]), Theirs(t1, [1000], [1], [128]), B=128)
        TR.copy_3d[(3, 3, 2)](Theirs.from_tensor(x3, [2, 16, 64]), Theirs.from_tensor(t3, [2, 16, 64]), B0=2, B1=16, B2=64)
        torch.cuda.synchronize()
        assert torch.equal(o1[:1000], t1[:1000]) and torch.equal(o3, t3)


@pytest.mark.parametrize("m, n, k", [(128, 128, 64), (100, 72, 96), (37, 200, 40)])
def test_a_descriptor_matmul_as_torch(m, n, k):
    """Every block through a descriptor (TMA on the H200), edges partly out of bounds: A and B read
    zeros there, C's store stops at the shape."""
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.full((m, n), 7.0, device="cuda", dtype=torch.float16)
    K.desc_matmul[(mytriton.cdiv(m, 64), mytriton.cdiv(n, 64))](
        TensorDescriptor.from_tensor(a, [64, 32]), TensorDescriptor.from_tensor(b, [32, 64]),
        TensorDescriptor.from_tensor(c, [64, 64]), k, BM=64, BN=64, BK=32)
    torch.cuda.synchronize()
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=1e-2, atol=5e-2)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("m, n, k, bm, bn, bk, warps, stages", [
    (300, 200, 504, 128, 128, 64, 4, 3),       # ragged in M, N and K: boxes partly out of bounds
    (256, 512, 256, 128, 256, 64, 8, 3),       # two warpgroups, B's rows two swizzle atoms wide
    (64, 128, 40, 64, 128, 32, 4, 4),          # K of two iterations with four stages: copies skipped
    (130, 72, 1000, 64, 64, 64, 4, 2),         # (rows of a multiple of 16 bytes, as descriptors want)
])
def test_the_descriptor_gemm_on_tma_rings_as_torch_and_triton(dtype, m, n, k, bm, bn, bk, warps, stages):
    """manifests/kernels/gemm.py's descriptor_matmul_kernel: mytriton's TMA copies into the wgmma
    rings (its tensor maps swizzled) against torch, and against Triton on the same source."""
    if not _hopper():
        pytest.skip("TMA rings: compute capability 9.0 (sm_90a)")
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "manifests" / "kernels" / "gemm.py"
    spec = importlib.util.spec_from_file_location("mt_gemm_descriptors", path)
    mt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mt)
    gemm = triton_version(path)
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    ours, theirs = (torch.full((m, n), 7.0, device="cuda", dtype=dtype) for _ in range(2))
    grid = (mytriton.cdiv(m, bm) * mytriton.cdiv(n, bn),)
    kw = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages)
    k_ = mt.descriptor_matmul_kernel[grid](TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]),
                                           TensorDescriptor.from_tensor(ours, [bm, bn]), m, n, k, **kw)
    assert "mt_tma_copy_2d(reinterpret_cast" in k_.asm["cu"]           # (the rings are filled by TMA)
    torch.cuda.synchronize()
    want = (a.float() @ b.float()).to(dtype)
    tol = dict(rtol=2e-2, atol=1e-1) if dtype == torch.bfloat16 else dict(rtol=1e-2, atol=5e-2)
    torch.testing.assert_close(ours, want, **tol)
    if gemm is not None:
        gemm.descriptor_matmul_kernel[grid](their_descriptor(a, [m, k], [k, 1], [bm, bk]),
                                            their_descriptor(b, [k, n], [n, 1], [bk, bn]),
                                            their_descriptor(theirs, [m, n], [n, 1], [bm, bn]), m, n, k, **kw)
        torch.cuda.synchronize()
        torch.testing.assert_close(ours, theirs, **tol)

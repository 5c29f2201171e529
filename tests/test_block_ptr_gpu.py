"""Block pointers and tensor descriptors on the GPU: tests/kernels/block_ptrs.py through mytriton's
JIT and through Triton (which uses TMA for the descriptors on the H200), same inputs, one process."""
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from tests.kernels import block_ptrs as B  # noqa: E402
from tests.triton_reference import run_both, triton_version  # noqa: E402

TR = triton_version(B.__file__)
needs_triton = pytest.mark.skipif(TR is None, reason="needs Triton")


@pytest.fixture(autouse=True)
def triton_allocator():
    """Triton's device-side tensor descriptors need scratch memory from an allocator."""
    if TR is not None:
        import triton
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))


def both(name, grid, *args, **constexprs):
    return run_both(B, TR, name, grid, *args, **constexprs)


@needs_triton
@pytest.mark.parametrize("check,padding,transposed", [((0, 1), "zero", False), ((0, 1), "nan", True),
                                                      ((0, 1), "", True)])
def test_block_copy_as_triton(check, padding, transposed):
    m, n, bm, bn = 37, 50, 16, 32
    x = torch.randn(m, n, device="cuda")
    src = x.t().contiguous() if transposed else x
    strides = (1, m) if transposed else (n, 1)
    y = torch.zeros(m * n + 3 * bm * 2 * bn, device="cuda")
    ours, theirs = both("copy_block", (3, 2), src, y, m, n, *strides, CHECK=check, PADDING=padding, BM=bm, BN=bn)
    assert torch.equal(ours[1][:m * n].view(m, n), x + 1)
    assert torch.equal(ours[1][:m * n], theirs[1][:m * n])
    if padding:                    # (with no padding_option the padding is unspecified)
        assert torch.equal(ours[1].view(torch.int32), theirs[1].view(torch.int32))


@needs_triton
@pytest.mark.parametrize("m,n,bm,bn,warps", [(37, 1000, 16, 64, 4), (64, 256, 32, 64, 8)])
def test_row_sums_as_triton(m, n, bm, bn, warps):
    x = torch.randn(m, n, device="cuda")
    y = torch.zeros(m, device="cuda")
    ours, theirs = both("row_sums", (-(-m // bm),), x, y, m, n, BM=bm, BN=bn)
    torch.testing.assert_close(ours[1], x.sum(1), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(ours[1], theirs[1], rtol=1e-5, atol=1e-4)


@needs_triton
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_block_pointer_matmul_as_triton(dtype):
    m, n, k = 200, 136, 300
    a = torch.randint(-3, 4, (m, k), device="cuda").to(dtype)
    b = torch.randint(-3, 4, (k, n), device="cuda").to(dtype).t().contiguous().t()     # column-major B
    c = torch.zeros(m, n, device="cuda", dtype=dtype)
    grid = (-(-m // 64), -(-n // 64))
    ours, theirs = both("matmul_block_ptr", grid, a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(),
                        BM=64, BN=64, BK=32)
    assert torch.equal(ours[2], (a.float() @ b.float()).to(dtype))
    assert torch.equal(ours[2], theirs[2])


@needs_triton
def test_descriptors_as_triton():
    m, n = 45, 72
    x = torch.randn(m, n, device="cuda")
    ours, theirs = both("descriptor_copy", (3, 3), x, torch.zeros_like(x), m, n, BM=16, BN=32)
    assert torch.equal(ours[1], 2 * x) and torch.equal(ours[1], theirs[1])
    x3 = torch.randn(5, 6, 12, device="cuda")
    ours, theirs = both("descriptor_3d", (1,), x3, torch.full((4, 4, 8), 7.0, device="cuda"), 5, 6, 12,
                        BA=4, BB=4, BC=8)
    assert torch.equal(ours[1], theirs[1])
    assert torch.equal(ours[1][:2, 1:, :4], x3[3:, :3, 8:])


def test_descriptor_atomic_add():
    """(against a reference: Triton 3.6's TMA reduction here stopped the H200 with an illegal instruction)"""
    starts = torch.tensor([0, 3, 3, 56, 17, -4], dtype=torch.int32, device="cuda")
    out = torch.zeros(64, dtype=torch.int32, device="cuda")
    B.descriptor_histogram[(6,)](starts, out, 64, BN=8)
    want = torch.zeros(64, dtype=torch.int32)
    for s in starts.tolist():
        want[max(s, 0):min(s + 8, 64)] += 1
    assert torch.equal(out.cpu(), want)

"""Shape ops on the GPU: tests/kernels/shapes.py through mytriton's JIT and through Triton, same
inputs, one process (Triton may reorder what tl.view and tl.cat(can_reorder=True) return: those
parts are compared as sorted values, and mytriton's against numpy's order)."""
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from tests.kernels import shapes as K  # noqa: E402
from tests.triton_reference import triton_version  # noqa: E402

TR = triton_version(K.__file__)
needs_triton = pytest.mark.skipif(TR is None, reason="needs Triton")


def both(name, args, out, **constexprs):
    theirs = [a.clone() if a is out else a for a in args]
    getattr(K, name)[(1,)](*args, **constexprs)
    getattr(TR, name)[(1,)](*theirs, **constexprs)
    torch.cuda.synchronize()
    return out, theirs[next(i for i, a in enumerate(args) if a is out)]


@needs_triton
@pytest.mark.parametrize("m,n,p,q,warps", [(8, 8, 4, 16, 4), (16, 32, 512, 1, 4), (4, 64, 16, 16, 2)])
def test_reshape_as_triton(m, n, p, q, warps):
    x = torch.randn(m, n, device="cuda")
    z = torch.zeros(3 * m * n, device="cuda")
    ours, theirs = both("reshape_kernel", [x, z], z, M=m, N=n, P=p, Q=q, num_warps=warps)
    assert torch.equal(ours[:2 * m * n], theirs[:2 * m * n])
    assert torch.equal(ours[2 * m * n:].sort().values, theirs[2 * m * n:].sort().values)
    assert torch.equal(ours, x.reshape(-1).repeat(3))


@needs_triton
@pytest.mark.parametrize("n,warps", [(16, 4), (256, 2)])
def test_join_interleave_split_as_triton(n, warps):
    a = torch.arange(n, dtype=torch.int32, device="cuda")
    b = -a - 1
    z = torch.zeros(6 * n, dtype=torch.int32, device="cuda")
    ours, theirs = both("join_split_kernel", [a, b, z], z, N=n, num_warps=warps)
    assert torch.equal(ours, theirs)


@needs_triton
@pytest.mark.parametrize("m,n", [(4, 8), (32, 16)])
def test_cat_and_flip_as_triton(m, n):
    a = torch.arange(m * n, dtype=torch.int32, device="cuda").reshape(m, n)
    b = a + 1000
    z = torch.zeros(4 * m * n, dtype=torch.int32, device="cuda")
    ours, theirs = both("cat_flip_kernel", [a, b, z], z, M=m, N=n)
    half = 2 * m * n
    assert torch.equal(ours[:half].sort().values, theirs[:half].sort().values)
    assert torch.equal(ours[:half], torch.cat([a.reshape(-1), b.reshape(-1)]))
    assert torch.equal(ours[half:], theirs[half:])


@needs_triton
def test_split_to_scalars_as_triton():
    z = torch.zeros(1, dtype=torch.int32, device="cuda")
    ours, theirs = both("split_scalars_kernel", [z], z)
    assert ours.item() == theirs.item() == 56


@needs_triton
def test_broadcast_and_join_of_scalars_as_triton():
    x = torch.arange(32, dtype=torch.int32, device="cuda")
    y = torch.tensor([42, 100], dtype=torch.int32, device="cuda")
    z = torch.zeros(34, dtype=torch.int32, device="cuda")
    ours, theirs = both("broadcast_join_kernel", [x, y, z], z, M=4, N=8)
    assert torch.equal(ours, theirs)


@needs_triton
@pytest.mark.parametrize("src_shape,index_shape,axis", [((4, 4), (8, 4), 0), ((128, 64), (256, 64), 0),
                                                        ((128, 64), (128, 128), 1)])
def test_gather_as_triton(src_shape, index_shape, axis):
    src = torch.randn(src_shape, device="cuda")
    index = torch.randint(0, src_shape[axis], index_shape, dtype=torch.int32, device="cuda")
    out = torch.zeros(index_shape, device="cuda")
    c = dict(SM=src_shape[0], SN=src_shape[1], IM=index_shape[0], IN=index_shape[1], AXIS=axis)
    ours, theirs = both("gather_kernel", [src, index, out], out, **c)
    assert torch.equal(ours, theirs) and torch.equal(ours, torch.gather(src, axis, index.long()))


@needs_triton
@pytest.mark.parametrize("m,n,k,descending,topk", [(4, 16, 16, False, False), (2, 64, 64, True, False),
                                                   (8, 32, 8, True, True), (1, 1024, 1024, False, False)])
def test_sort_and_topk_as_triton(m, n, k, descending, topk):
    x = torch.randn(m, n, device="cuda")
    z = torch.zeros(m, k, device="cuda")
    ours, theirs = both("sort_kernel", [x, z], z, M=m, N=n, K=k, DESCENDING=descending, TOPK=topk)
    want = torch.sort(x, 1, descending=descending or topk).values[:, :k]
    assert torch.equal(ours, theirs) and torch.equal(ours, want)

"""Host-side tensor descriptors on the GPU: tests/kernels/host_descriptors.py through mytriton's JIT
(descriptors passed as their leaves, plain loads) and through Triton (TMA on the H200), same
tensors, one process."""
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

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

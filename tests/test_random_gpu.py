"""Random numbers on the GPU: tests/kernels/random_kernels.py through mytriton's JIT and through
Triton, same seeds and offsets: the same uint32 words and the same uniform floats; normals within
float rounding of Triton's (tl.log / tl.cos / tl.sin may round differently)."""
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from tests.kernels import random_kernels as R  # noqa: E402
from tests.triton_reference import triton_version  # noqa: E402

TR = triton_version(R.__file__)


@pytest.mark.skipif(TR is None, reason="needs Triton")
@pytest.mark.parametrize("seed", [0, 42, 2**40 + 3])
def test_randint4x_gives_tritons_words(seed):
    n = 5000
    out, tout = (torch.zeros(4 * n, dtype=torch.int32, device="cuda") for _ in range(2))
    grid = (-(-n // 256),)
    R.randint4x_kernel[grid](out, seed, n, BLOCK=256)
    TR.randint4x_kernel[grid](tout, seed, n, BLOCK=256)
    torch.cuda.synchronize()
    assert torch.equal(out, tout)


@pytest.mark.skipif(TR is None, reason="needs Triton")
@pytest.mark.parametrize("kind", ["randint", "rand", "rand4x", "randn", "randn4x"])
def test_floats_as_triton_draws_them(kind):
    n = 5000
    out, tout = (torch.zeros(n, device="cuda") for _ in range(2))
    grid = (-(-n // 256),)
    R.floats_kernel[grid](out, 77, n, KIND=kind, BLOCK=256)
    TR.floats_kernel[grid](tout, 77, n, KIND=kind, BLOCK=256)
    torch.cuda.synchronize()
    if kind.startswith("randn"):
        torch.testing.assert_close(out, tout, rtol=1e-5, atol=1e-5)
    else:
        assert torch.equal(out.view(torch.int32), tout.view(torch.int32))


@pytest.mark.skipif(TR is None, reason="needs Triton")
def test_64_bit_offsets_as_triton():
    n = 1000
    out, tout = (torch.zeros(n, dtype=torch.int32, device="cuda") for _ in range(2))
    R.offsets64_kernel[(4,)](out, 11, 2**33 - 100, n, BLOCK=256)
    TR.offsets64_kernel[(4,)](tout, 11, 2**33 - 100, n, BLOCK=256)
    torch.cuda.synchronize()
    assert torch.equal(out, tout)

"""@jit(noinline=True) helpers on the GPU: tests/kernels/noinline.py through mytriton's JIT (device
functions of their own where they take and return scalars) and through Triton, same inputs, one
process, and against numpy."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from tests.kernels import noinline as K  # noqa: E402
from tests.test_noinline import CASES, _expected  # noqa: E402
from tests.triton_reference import run_both, triton_version  # noqa: E402

TR = triton_version(K.__file__)


@pytest.mark.parametrize("warps", [1, 4])
@pytest.mark.parametrize("mode, x, y", CASES)
def test_calls_as_triton(mode, x, y, warps):
    z = (np.arange(16, dtype=np.float32) - 4) / 8
    args = [torch.tensor([x], device="cuda"), torch.tensor([y], device="cuda"), torch.from_numpy(z).cuda()]
    want = _expected(mode, x, y, z)
    k = K.calls[(1,)](*[a.clone() for a in args], MODE=mode, N=16, num_warps=warps)
    if mode < 3:
        assert ".func" in k.asm["ptx"] and "mt_fn_f" in k.asm["ptx"]          # (device functions, called)
    if TR is not None and mode < 3:
        # (mode 3 passes a block to a noinline helper: Triton 3.6 refuses it -- "marked noinline, but
        # was called with non-scalar argument" -- where mytriton inlines it; measured on the H200)
        ours, theirs = run_both(K, TR, "calls", (1,), *args, MODE=mode, N=16, num_warps=warps)
        torch.testing.assert_close(ours[2], theirs[2], rtol=1e-6, atol=1e-6)
    else:
        ours = [a.clone() for a in args]
        K.calls[(1,)](*ours, MODE=mode, N=16, num_warps=warps)
        torch.cuda.synchronize()
    np.testing.assert_allclose(ours[2].cpu().numpy(), want, rtol=1e-6)


def test_helpers_of_several_types_and_shared_memory_after_the_kernels():
    x = torch.tensor([2.5], device="cuda")
    z = torch.zeros(1, device="cuda")
    K.mixed_types[(1,)](x, z)
    z64 = torch.arange(64, dtype=torch.float32, device="cuda")
    K.reduce_then_call[(1,)](z64, N=64, num_warps=2)
    torch.cuda.synchronize()
    assert z.item() == 3.5 + 3 + 8
    s = torch.arange(64, dtype=torch.float32).sum()
    torch.testing.assert_close(z64.cpu(), torch.arange(64, dtype=torch.float32) + 2 * s)

"""tl.map_elementwise on the GPU: tests/kernels/map_elementwise.py through mytriton's JIT and
through Triton, same inputs, one process, and against numpy."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from tests.kernels import map_elementwise as M  # noqa: E402
from tests.triton_reference import run_both, triton_version  # noqa: E402

TR = triton_version(M.__file__)
RNG = np.random.default_rng(6)


@pytest.mark.parametrize("block,warps", [(128, 4), (512, 8), (32, 2)])
def test_map_elementwise_as_triton(block, warps):
    """(Triton 3.6 fails to compile pack=2 where a thread holds one element -- "failed to legalize
    operation 'tt.map_elementwise'" at 128 elements on 4 warps and 32 on 2 -- so it is compared
    where it compiles, numpy everywhere.)"""
    x = RNG.integers(1, 100, block).astype(np.int32)
    y = RNG.integers(1, 100, block).astype(np.int32)
    y[:7] = x[:7]
    f = (RNG.standard_normal(block) * 2).astype(np.float32)
    t = [torch.from_numpy(a).cuda() for a in (x, y)] + [torch.zeros(block, dtype=torch.int32, device="cuda")
                                                        for _ in range(3)]
    t += [torch.from_numpy(f).cuda(), torch.zeros(block, device="cuda")]
    if TR is not None and block // (32 * warps) >= 2:
        ours, theirs = run_both(M, TR, "mapped", (1,), *t, BLOCK=block, num_warps=warps)
        for i in (2, 3, 4, 6):
            assert torch.equal(ours[i], theirs[i]), i
    else:
        M.mapped[(1,)](*t, BLOCK=block, num_warps=warps)
        torch.cuda.synchronize()
        ours = t
    assert ours[2].cpu().numpy().tolist() == np.sign(x - y).tolist()
    assert ours[3].cpu().numpy().tolist() == (x // y).tolist() and ours[4].cpu().numpy().tolist() == (x % y).tolist()
    want = np.maximum(f * np.float32(2.5), np.float32(-1.0))
    assert np.array_equal(ours[6].cpu().numpy(), want)

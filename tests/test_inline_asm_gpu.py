"""tl.inline_asm_elementwise on the GPU: tests/kernels/inline_asm.py through mytriton's JIT and
through Triton, same inputs, one process, and against numpy's answer."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from tests.kernels import inline_asm as K  # noqa: E402
from tests.triton_reference import run_both, triton_version  # noqa: E402

TR = triton_version(K.__file__)
needs_triton = pytest.mark.skipif(TR is None, reason="needs Triton")
RNG = np.random.default_rng(8)


def both(name, grid, *args, **constexprs):
    return run_both(K, TR, name, grid, *args, **constexprs)


def t(array):
    return torch.from_numpy(np.ascontiguousarray(array)).cuda()


@needs_triton
@pytest.mark.parametrize("warps", [1, 4])
def test_funnel_shift_and_differences_as_triton(warps):
    x, y = (RNG.integers(0, 2**32, 512, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    ours, theirs = both("funnel_shift", (1,), t(x.view(np.int32)), t(y.view(np.int32)), t(np.zeros(128, np.int32)),
                        n=17, BLOCK=128, num_warps=warps)
    want = ((y[:128].astype(np.uint64) << 17 | x[:128] >> 15) & 0xFFFFFFFF).astype(np.uint32)
    assert np.array_equal(ours[2].cpu().numpy().view(np.uint32), want) and torch.equal(ours[2], theirs[2])
    ours, theirs = both("differences", (1,), t(x.view(np.int32)), t(y.view(np.int32)),
                        *(t(np.zeros(512, np.int32)) for _ in range(2)), BLOCK=512, num_warps=warps)
    assert np.array_equal(ours[2].cpu().numpy().view(np.uint32), x - y)
    assert torch.equal(ours[2], theirs[2]) and torch.equal(ours[3], theirs[3])


@needs_triton
@pytest.mark.parametrize("warps", [1, 2, 8])
def test_packed_operands_as_triton(warps):
    x = RNG.integers(0, 256, 512).astype(np.uint8)
    ours, theirs = both("packed_shift", (1,), t(x), t(np.zeros(512, np.uint8)), BLOCK=512, num_warps=warps)
    assert np.array_equal(ours[1].cpu().numpy(), (x & 0x1F) << 3) and torch.equal(ours[1], theirs[1])
    b = RNG.standard_normal(512).astype(np.float32) * 300
    ours, theirs = both("unpack_and_max", (1,), t(x), t(b), t(np.zeros(512, np.int32)), t(np.zeros(512, np.float32)),
                        BLOCK=512, num_warps=warps)
    assert np.array_equal(ours[2].cpu().numpy(), x.astype(np.int32))
    assert np.array_equal(ours[3].cpu().numpy(), np.maximum(x.astype(np.float32), b))
    assert torch.equal(ours[2], theirs[2]) and torch.equal(ours[3], theirs[3])


@needs_triton
def test_pointers_halves_and_scalars_as_triton():
    x = RNG.integers(0, 256, 512).astype(np.uint8)
    ours, theirs = both("copy_through_pointers", (1,), t(x), t(np.zeros(512, np.uint8)), BLOCK=512)
    assert np.array_equal(ours[1].cpu().numpy(), (x << 3).astype(np.uint8)) and torch.equal(ours[1], theirs[1])
    h = RNG.integers(-2**15, 2**15, 64).astype(np.int16)
    ours, theirs = both("halves_and_scalars", (1,), t(h), t(np.zeros(65, np.int32)), 41, BLOCK=64)
    assert ours[1].cpu().numpy().tolist() == h.astype(np.int32).tolist() + [43]
    assert torch.equal(ours[1], theirs[1])


@needs_triton
def test_cuda_helpers_as_triton():
    out, times = torch.zeros(256 + 132 * 4, dtype=torch.int32, device="cuda"), torch.zeros(2 * 528, dtype=torch.int64,
                                                                                          device="cuda")
    tout, ttimes = out.clone(), times.clone()
    K.special_registers[(528,)](out, times, num_warps=8)
    TR.special_registers[(528,)](tout, ttimes, num_warps=8)
    torch.cuda.synchronize()
    assert torch.equal(out[:256], tout[:256]) and out[:256].tolist() == [8] * 256
    sms = out[256:256 + 528]
    assert 0 <= int(sms.min()) and int(sms.max()) < 132 and len(set(sms.tolist())) > 1
    pairs = times.view(-1, 2)
    assert bool((pairs[:, 1] >= pairs[:, 0]).all()) and int(pairs[:, 0].min()) > 0

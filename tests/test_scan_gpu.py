"""Scans and reductions by combine functions on the GPU: tests/kernels/scans.py through mytriton's
JIT and through Triton, same inputs, one process -- integer results bit-exact, float scans within
rounding (the order of the additions differs), indices exact."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from tests.kernels import scans as S  # noqa: E402
from tests.test_scan import SCAN_OPS, scan_inputs, scan_reference  # noqa: E402
from tests.triton_reference import triton_version  # noqa: E402

TR = triton_version(S.__file__)
needs_triton = pytest.mark.skipif(TR is None, reason="needs Triton")


@needs_triton
@pytest.mark.parametrize("op", SCAN_OPS)
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
@pytest.mark.parametrize("shape,axis,warps", [((8, 32), 1, 4), ((2, 1024), 1, 4), ((1024, 2), 0, 16),
                                              ((32, 32), 0, 4), ((1, 1024), 1, 16)])
@pytest.mark.parametrize("reverse", [False, True])
def test_scans_as_triton(op, dtype, shape, axis, warps, reverse):
    x, y = scan_inputs(op, shape, dtype)
    xt, yt = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    out_dtype = torch.int64 if op == "cummax" else xt.dtype
    z, tz = (torch.zeros(shape, dtype=out_dtype, device="cuda") for _ in range(2))
    args = dict(M=shape[0], N=shape[1], AXIS=axis, REVERSE=reverse, OP=op, num_warps=warps)
    S.scan_kernel[(1,)](xt, yt, z, **args)
    TR.scan_kernel[(1,)](xt, yt, tz, **args)
    torch.cuda.synchronize()
    want = scan_reference(op, x, y, axis, reverse)
    if dtype == np.int32 or op in ("first", "cummax"):
        assert torch.equal(z, tz)
        np.testing.assert_array_equal(z.cpu().numpy(), want)
    else:
        torch.testing.assert_close(z, tz, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(z.cpu().numpy(), want, rtol=1e-4, atol=1e-4)


@needs_triton
@pytest.mark.parametrize("greater", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("shape,axis,warps", [((8, 32), 1, 4), ((64, 64), 0, 8), ((2, 1024), 1, 4), ((32, 16), 0, 1)])
def test_indices_as_triton(greater, left, shape, axis, warps):
    x = torch.randint(-4, 5, shape, device="cuda").float() if left else \
        torch.randperm(shape[0] * shape[1], device="cuda").float().reshape(shape)
    n = shape[1 - axis]
    v, tv = (torch.zeros(n, device="cuda") for _ in range(2))
    i, ti = (torch.zeros(2 * n, dtype=torch.int32, device="cuda") for _ in range(2))
    args = dict(M=shape[0], N=shape[1], AXIS=axis, GREATER=greater, LEFT=left, num_warps=warps)
    S.arg_kernel[(1,)](x, v, i, **args)
    TR.arg_kernel[(1,)](x, tv, ti, **args)
    torch.cuda.synchronize()
    assert torch.equal(v, tv) and torch.equal(i, ti)


@needs_triton
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("keep", [False, True])
def test_reduce_of_two_blocks_as_triton(axis, keep):
    x = torch.randint(-50, 50, (16, 32), dtype=torch.int32, device="cuda")
    z, tz = (torch.zeros(64, dtype=torch.int32, device="cuda") for _ in range(2))
    S.reduce_kernel[(1,)](x, z, M=16, N=32, AXIS=axis, KEEP=keep)
    TR.reduce_kernel[(1,)](x, tz, M=16, N=32, AXIS=axis, KEEP=keep)
    torch.cuda.synchronize()
    assert torch.equal(z, tz)

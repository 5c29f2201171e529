"""Layouts on the GPU: reductions along each axis and over the whole tile, slices broadcast back,
tiles smaller than the block (replicated elements) and layout conversions, for tile shapes and warp
counts that give each layout kind (CUDA backend, JIT), against numpy on random data with masked
tails. The same kernels compile on the CPU (NVRTC, mlir-opt) and run in the interpreter in
test_layout_kernels.py."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from tests.kernels import layouts as L  # noqa: E402
from tests.test_layout_kernels import GRID, expected, inputs  # noqa: E402


def dev(x):
    return torch.from_numpy(np.ascontiguousarray(x)).cuda()


@pytest.mark.parametrize("kernel", ["reduce_2d", "center_and_scale", "column_sums_plus_index"])
@pytest.mark.parametrize("bm,bn,warps", GRID)
def test_layouts_on_the_gpu(kernel, bm, bn, warps):
    args, outs = inputs(kernel, bm, bn)
    d = [dev(a) if isinstance(a, np.ndarray) else a for a in args]
    getattr(L, kernel)[(1,)](*d, BM=bm, BN=bn, num_warps=warps)
    torch.cuda.synchronize()
    for i, want in expected(kernel, args, bm, bn).items():
        np.testing.assert_allclose(d[i].cpu().numpy(), want, rtol=1e-5, atol=1e-5)

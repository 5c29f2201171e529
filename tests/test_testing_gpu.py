"""mytriton.testing.do_bench and do_bench_cudagraph timing a mytriton kernel on the GPU (torch's
events and CUDA graphs), and assert_close on torch tensors."""
import pytest

import mytriton
import mytriton.language as tl
from mytriton import testing

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@mytriton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def test_do_bench_times_a_kernel():
    n = 1 << 22
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out = torch.empty_like(x)

    def fn():
        add[(mytriton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    ms, lo, hi = testing.do_bench(fn, quantiles=[0.5, 0.2, 0.8])
    assert 0 < lo <= ms <= hi < 10
    testing.assert_close(out, x + y, atol=0)
    graph_ms = testing.do_bench_cudagraph(fn, rep=10)
    assert 0 < graph_ms < 10

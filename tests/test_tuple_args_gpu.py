"""Tuples as kernel arguments on the GPU: tests/kernels/tuple_args.py through mytriton's JIT and
through Triton (same source, same inputs, one process), and against torch."""
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from tests.kernels import tuple_args as K  # noqa: E402
from tests.triton_reference import triton_version  # noqa: E402

TR = triton_version(K.__file__)


@pytest.mark.parametrize("extra", [None, 1, 7])
@pytest.mark.parametrize("n, offset", [(4096, 0), (4001, 0), (4001, 1)])
def test_nested_tuples_as_triton(extra, n, offset):
    g = torch.Generator(device="cuda").manual_seed(n + offset)
    x = torch.randn(n + offset, device="cuda", generator=g)[offset:]          # offset: not 16-byte aligned
    want = x * 2.5 + 3 + (10 if extra is not None else 0)
    outs = []
    runs = [(K, "scaled_copy"), (K, "scaled_copy_indexed")] + ([(TR, "scaled_copy_indexed")] if TR else [])
    for module, name in runs:
        y = torch.zeros(n, device="cuda")
        for _ in range(2):                         # the full path, then the fast path
            getattr(module, name)[(triton_cdiv(n, 256),)]((x, (y, 2.5), extra), n, BLOCK=256)
        torch.cuda.synchronize()
        outs.append(y)
    torch.testing.assert_close(outs[0], want, rtol=1e-6, atol=1e-6)
    for other in outs[1:]:                         # the indexed form, ours and Triton's: the same bits
        torch.testing.assert_close(other, outs[0], rtol=0, atol=0)


def test_a_tuple_given_to_a_helper_as_triton():
    n = 1000
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    outs = []
    for module in (K, TR) if TR is not None else (K,):
        out = torch.zeros(n, device="cuda")
        module.pick[(1,)]((a, b), out, n, BLOCK=1024)
        torch.cuda.synchronize()
        outs.append(out)
    torch.testing.assert_close(outs[0], a + 2 * b)
    for other in outs[1:]:
        torch.testing.assert_close(other, outs[0], rtol=0, atol=0)


def triton_cdiv(a, b):
    return (a + b - 1) // b

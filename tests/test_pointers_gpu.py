"""Pointers from 64-bit integers, pointers stored as addresses, and narrow sums on the GPU:
tests/kernels/pointers.py through mytriton's JIT and through Triton, same inputs, one process."""
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from tests.kernels import pointers as P  # noqa: E402
from tests.triton_reference import triton_version  # noqa: E402

TR = triton_version(P.__file__)
needs_triton = pytest.mark.skipif(TR is None, reason="needs Triton")


@needs_triton
def test_where_between_pointers_as_triton():
    n = 1000
    cond = torch.randint(0, 2, (n,), device="cuda").bool()
    a, b = (torch.randint(-2**62, 2**62, (n,), device="cuda") for _ in range(2))
    out, tout = (torch.zeros(n, dtype=torch.int64, device="cuda") for _ in range(2))
    P.select_addresses[(8,)](cond, a, b, out, n, BLOCK=128)
    TR.select_addresses[(8,)](cond, a, b, tout, n, BLOCK=128)
    torch.cuda.synchronize()
    assert torch.equal(out, tout) and torch.equal(out, torch.where(cond, a, b))


@needs_triton
def test_rows_reached_through_a_table_of_addresses_as_triton():
    rows = [torch.randn(100 + 3 * i, device="cuda")[3 * i:] for i in range(6)]   # (unaligned starts too)
    table = torch.tensor([r.data_ptr() for r in rows], device="cuda")
    out, tout = (torch.zeros(6, 100, device="cuda") for _ in range(2))
    P.gather_rows[(6,)](table, out, 100, BLOCK=128)
    TR.gather_rows[(6,)](table, tout, 100, BLOCK=128)
    torch.cuda.synchronize()
    assert torch.equal(out, tout) and torch.equal(out, torch.stack(rows) * 2)


@needs_triton
def test_pointer_round_trip_and_narrow_sums_as_triton():
    x = torch.randint(-1000, 1000, (64,), dtype=torch.int32, device="cuda")
    out, tout = torch.zeros_like(x), torch.zeros_like(x)
    P.round_trip[(1,)](x, out, BLOCK=64)
    TR.round_trip[(1,)](x, tout, BLOCK=64)
    sums, tsums = (torch.zeros(4, dtype=torch.int32, device="cuda") for _ in range(2))
    P.narrow_sums[(1,)](sums, ROWS=16, COLS=32)
    TR.narrow_sums[(1,)](tsums, ROWS=16, COLS=32)
    torch.cuda.synchronize()
    assert torch.equal(out, x + 1) and torch.equal(out, tout)
    assert sums.tolist() == tsums.tolist() == [0, 0, 512, 0]


@needs_triton
def test_short_circuiting_as_triton():
    for value, dtype in ((100000, torch.int32), (37, torch.int32), (100000, torch.int64), (84.0, torch.float32)):
        x = torch.tensor([value], dtype=dtype, device="cuda")
        tx = x.clone()
        P.cap_int32[(1,)](x)
        TR.cap_int32[(1,)](tx)
        torch.cuda.synchronize()
        assert torch.equal(x, tx), (value, dtype)

"""Cache modifiers and eviction policies on the GPU: tests/kernels/cache_hints.py through mytriton's
JIT and through Triton, same inputs, one process — the same values, and the same PTX qualifiers on
the global loads and stores (Triton 3.6 emits none for ".cv"; mytriton emits ld.global.cv)."""
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from tests.kernels import cache_hints as K  # noqa: E402
from tests.test_cache_hints import hints, qualifiers  # noqa: E402
from tests.triton_reference import triton_version  # noqa: E402

TR = triton_version(K.__file__)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int8, torch.int64])
@pytest.mark.parametrize("combo", [hints(".ca", "", ".wb", ""), hints(".cg", "", ".cs", ""),
                                   hints(".cv", "", ".wt", ""), hints("", "evict_first", ".cg", ""),
                                   hints("", "evict_last", "", "evict_first")])
def test_hinted_copy_as_triton(dtype, combo):
    n, block = 5000, 1024
    x = torch.randint(-20, 20, (n + 64,), device="cuda").to(dtype)
    grid = (-(-(n + 5) // block),)
    ours = torch.zeros_like(x)
    handle = K.scaled_copy[grid](x, ours, n, **combo, BLOCK=block)
    torch.cuda.synchronize()
    want = torch.zeros_like(x)
    want[:n] = x[:n] * 2
    want[n:n + 5] = 6
    assert torch.equal(ours, want)
    if TR is None:
        return
    theirs = torch.zeros_like(x)
    their_handle = TR.scaled_copy[grid](x, theirs, n, **combo, BLOCK=block)
    torch.cuda.synchronize()
    assert torch.equal(ours, theirs)
    for op in ("ld", "st"):
        mine, triton_s = qualifiers(handle.asm["ptx"], op), qualifiers(their_handle.asm["ptx"], op)
        if op == "ld" and combo["LOAD_CACHE"] == ".cv":
            assert mine == {".cv"} and triton_s == {""}
        else:
            assert mine == triton_s, (op, mine, triton_s)

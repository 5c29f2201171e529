"""@autotune on the GPU: every config timed, the fastest launched, reset_to_zero honoured while
timing (an accumulating kernel's result is right once), the choice read back from disk by a new
autotuner, and the results equal to Triton's @autotune of the same file."""
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from mytriton.frontend.autotune import Autotuner  # noqa: E402
from tests.kernels import autotuned as A  # noqa: E402
from tests.triton_reference import triton_version  # noqa: E402

TR = triton_version(A.__file__)


def fresh(tuner: Autotuner) -> Autotuner:
    """A new autotuner over the same kernel and configs (as in a new process)."""
    return Autotuner(tuner.fn, tuner.arg_names, tuner.configs, tuner.keys, reset_to_zero=tuner.reset_to_zero)


def test_scaled_add_tunes_and_reads_its_choice_back(tmp_path, monkeypatch):
    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(tmp_path))
    tuner = fresh(A.scaled_add)
    n = 1 << 22
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    tuner[A.grid](x, y, out, n, 2.0)
    torch.cuda.synchronize()
    assert torch.equal(out, x + 2.0 * y)
    key = (n, "torch.float32", "torch.float32", "torch.float32")
    timings = tuner.timings[key]
    assert set(timings) == set(tuner.configs) and all(t > 0 for t in timings.values())
    assert tuner.best_config == min(timings, key=timings.get)
    assert len(list((tmp_path / "autotune").glob("*.json"))) == 1
    again = fresh(A.scaled_add)
    again[A.grid](x, y, out, n, 4.0)
    torch.cuda.synchronize()
    assert again.best_config == tuner.best_config and key not in again.timings     # (read, not timed)
    assert torch.equal(out, x + 4.0 * y)            # (alpha a power of 2: exact with or without an fma)


@pytest.mark.skipif(TR is None, reason="needs Triton")
@pytest.mark.parametrize("m,n,k", [(512, 512, 512), (300, 200, 100)])
def test_accumulating_matmul_as_triton(tmp_path, monkeypatch, m, n, k):
    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(tmp_path))
    a = torch.randint(-2, 3, (m, k), device="cuda").half()
    b = torch.randint(-2, 3, (k, n), device="cuda").half()
    c, tc = torch.zeros(m, n, device="cuda"), torch.zeros(m, n, device="cuda")

    def grid(meta):
        return (-(-m // meta["BM"]), -(-n // meta["BN"]))
    fresh(A.matmul)[grid](a, b, c, m, n, k)
    TR.matmul[grid](a, b, tc, m, n, k)
    torch.cuda.synchronize()
    want = a.float() @ b.float()
    assert torch.equal(c, want) and torch.equal(tc, want)

"""tl.xor_sum, tl.reduce_or, tl.clamp, tl.swizzle2d, tl.softmax, tl.device_print, propagate_nan,
tl.histogram and tl.device_assert on the GPU:
tests/kernels/extras.py through mytriton's JIT and through Triton, same inputs, one process."""
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from tests.kernels import extras as E  # noqa: E402
from tests.triton_reference import triton_version  # noqa: E402

TR = triton_version(E.__file__)
needs_triton = pytest.mark.skipif(TR is None, reason="needs Triton")


@needs_triton
@pytest.mark.parametrize("kind", ["xor", "or"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.uint8, torch.int64])
def test_bitwise_reductions_as_triton(kind, dtype):
    info = torch.iinfo(dtype)
    x = torch.randint(info.min, info.max, (16, 32), dtype=dtype, device="cuda")
    out, tout = (torch.zeros(16 + 32 + 1, dtype=dtype, device="cuda") for _ in range(2))
    E.bit_reduce[(1,)](x, out, KIND=kind, ROWS=16, COLS=32)
    TR.bit_reduce[(1,)](x, tout, KIND=kind, ROWS=16, COLS=32)
    torch.cuda.synchronize()
    assert torch.equal(out, tout)


@needs_triton
def test_clamp_as_triton():
    x = torch.tensor([-5, -1.5, 0, 0.5, 2, 9, float("nan"), float("inf"), float("-inf")] * 37, device="cuda")
    out, tout = torch.zeros_like(x), torch.zeros_like(x)
    E.clamp_kernel[(3,)](x, out, -1.0, 2.0, x.numel(), BLOCK=128)
    TR.clamp_kernel[(3,)](x, tout, -1.0, 2.0, x.numel(), BLOCK=128)
    torch.cuda.synchronize()
    assert torch.equal(out.view(torch.int32), tout.view(torch.int32))


@needs_triton
@pytest.mark.parametrize("size_i,size_j,size_g", [(8, 8, 4), (7, 5, 3), (10, 3, 4)])
def test_swizzle2d_as_triton(size_i, size_j, size_g):
    out, tout = (torch.zeros(256, dtype=torch.int32, device="cuda") for _ in range(2))
    E.swizzle_kernel[(1,)](out, size_i, size_j, SIZE_G=size_g, BLOCK=128)
    TR.swizzle_kernel[(1,)](tout, size_i, size_j, SIZE_G=size_g, BLOCK=128)
    torch.cuda.synchronize()
    assert torch.equal(out, tout)


@needs_triton
@pytest.mark.parametrize("dim,keep", [(0, False), (1, True)])
def test_softmax_as_triton(dim, keep):
    x = torch.randn(32, 64, device="cuda") * 3
    out, tout = torch.zeros_like(x), torch.zeros_like(x)
    E.softmax_kernel[(1,)](x, out, DIM=dim, KEEP=keep, M=32, N=64)
    TR.softmax_kernel[(1,)](x, tout, DIM=dim, KEEP=keep, M=32, N=64)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, tout, rtol=2e-6, atol=1e-7)
    torch.testing.assert_close(out, torch.softmax(x, dim), rtol=1e-5, atol=1e-7)


def test_device_print_prints_from_the_gpu(capfd):
    """printf on the device: one line per element and program, with the prefix verbatim."""
    x = torch.tensor([1, -2, 300, 4], dtype=torch.int32, device="cuda")
    E.print_kernel[(2,)](x, 3, HEX=False, BLOCK=4)
    torch.cuda.synchronize()
    lines = capfd.readouterr().out.splitlines()
    assert len(lines) == 2 * (4 + 4 + 1)
    assert "pid (0, 0, 0) idx (1) x: %s -2" in lines and "pid (1, 0, 0) idx (3) x: %s 0" in lines
    assert "pid (1, 0, 0) idx () two (operand 1) 1" in lines


@needs_triton
@pytest.mark.parametrize("mode", ["NONE", "ALL"])
def test_propagate_nan_as_triton(mode):
    from tests.test_extras import nan_inputs
    x, y = (torch.from_numpy(a).cuda() for a in nan_inputs())
    out, tout = (torch.zeros(3 * x.numel(), device="cuda") for _ in range(2))
    E.nan_kernel[(2,)](x, y, out, x.numel(), MODE=mode, BLOCK=128)
    TR.nan_kernel[(2,)](x, y, tout, x.numel(), MODE=mode, BLOCK=128)
    torch.cuda.synchronize()
    if mode == "NONE":       # (Triton's clamp of a NaN with constant bounds gives max, with run-time ones min)
        keep = torch.cat([torch.ones(2 * x.numel(), dtype=torch.bool, device="cuda"), ~x.isnan()])
        out, tout = out[keep], tout[keep]
    assert torch.equal(out.isnan(), tout.isnan())
    assert torch.equal(torch.nan_to_num(out, nan=7.0), torch.nan_to_num(tout, nan=7.0))


@needs_triton
@pytest.mark.parametrize("m,bins,masked", [(256, 16, False), (1024, 64, True), (32, 128, True)])
def test_histogram_as_triton(m, bins, masked):
    """Inputs in [0, bins): what Triton does with others is not specified."""
    x = torch.randint(0, bins, (m,), dtype=torch.int32, device="cuda")
    out, tout = (torch.zeros(bins, dtype=torch.int32, device="cuda") for _ in range(2))
    E.histogram_kernel[(1,)](x, out, m - 7, M=m, BINS=bins, MASKED=masked)
    TR.histogram_kernel[(1,)](x, tout, m - 7, M=m, BINS=bins, MASKED=masked)
    torch.cuda.synchronize()
    assert torch.equal(out, tout)


def test_device_assert_stops_the_kernel_on_the_gpu(tmp_path):
    """A failing tl.device_assert in a debug kernel: CUDA prints its message and the launch fails
    (a device-side assertion leaves the context unusable: in a process of its own)."""
    import subprocess
    import sys
    script = tmp_path / "assert_run.py"
    script.write_text(
        "import torch\nfrom tests.kernels import extras as E\n"
        "x = torch.arange(100, dtype=torch.int32, device='cuda')\n"
        "E.assert_kernel[(2,)](x, 100, BLOCK=64)\ntorch.cuda.synchronize()\nassert x[0].item() == 1\n"
        "x[70] = -5\nE.assert_kernel[(2,)](x, 100, BLOCK=64)\ntorch.cuda.synchronize()\nprint('NOT STOPPED')\n")
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": root}, cwd=root)
    assert run.returncode != 0 and "NOT STOPPED" not in run.stdout
    assert 'Assertion `x must not be negative: %s " */` failed.' in run.stdout + run.stderr

"""Run-time control flow on the GPU: the kernels of tests/kernels/control.py launched through the
JIT (CUDA backend) against numpy, and — where Triton is installed — against Triton running the
same source."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from tests.kernels import control as k  # noqa: E402
from tests.test_control_flow import branches_inputs  # noqa: E402
from tests.triton_reference import triton_version  # noqa: E402

RNG = np.random.default_rng(11)


def dev(x):
    return torch.from_numpy(np.ascontiguousarray(x)).cuda()


def host(t):
    torch.cuda.synchronize()
    return t.cpu().numpy()


IMPLS = [("mytriton", lambda: k), ("triton", lambda: triton_version(k.__file__))]


@pytest.fixture(params=[name for name, _ in IMPLS])
def impl(request):
    module = dict(IMPLS)[request.param]()
    if module is None:
        pytest.skip("triton is not installed")
    return module


def test_branches(impl):
    n, block = 1000, 128
    x, programs = branches_inputs(n, block)
    out, flags = torch.zeros(n, device="cuda"), torch.zeros(programs, dtype=torch.int32, device="cuda")
    impl.branches[(programs,)](dev(x), out, flags, n, 4.0, BLOCK=block)
    want_out, want_flags = k.branches_ref(x, n, 4.0, block)
    np.testing.assert_allclose(host(out), want_out, rtol=1e-6)
    np.testing.assert_array_equal(host(flags), want_flags)


@pytest.mark.parametrize("block", [64, 1024])
def test_countdown(impl, block):
    n = 5000
    programs = -(-n // block)
    x = RNG.standard_normal(n).astype(np.float32)
    steps = RNG.integers(-1, 6, programs).astype(np.int32)
    out = torch.zeros(n, device="cuda")
    impl.countdown[(programs,)](dev(x), out, dev(steps), n, BLOCK=block)
    np.testing.assert_allclose(host(out), k.countdown_ref(x, steps, n, block), rtol=1e-5)


def test_early_exit(impl):
    block, programs = 16, 9
    x = np.array([-3, 0.5, 7, -0.25, 2, 9, -1, 1.5, 3], np.float32)
    init = np.full(programs * block, -9.0, np.float32)
    out = dev(init)
    impl.early_exit[(programs,)](dev(x), out, 7, -1.0, 2.0, BLOCK=block)
    np.testing.assert_array_equal(host(out), k.early_exit_ref(x, init, 7, -1.0, 2.0, block))


def test_nested_return(impl):
    combos = np.array([(a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)], np.int32)
    c1, c2, c3 = (np.ascontiguousarray(combos[:, i]) for i in range(3))
    out = torch.full((8,), -1, dtype=torch.int32, device="cuda")
    impl.nested_return[(8,)](dev(c1), dev(c2), dev(c3), out)
    np.testing.assert_array_equal(host(out), k.nested_return_ref(c1, c2, c3, np.full(8, -1, np.int32)))


@pytest.mark.parametrize("programs", [1, 5, 64])
def test_row_softmax(impl, programs):
    rows, cols = 300, 777
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    y = torch.zeros((rows, cols), device="cuda")
    impl.row_softmax[(programs,)](dev(x), y, rows, cols, BLOCK=1024)
    np.testing.assert_allclose(host(y), k.row_softmax_ref(x), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("start,stop,step", [(2, 40, 3), (40, 2, -3), (5, -7, -1), (3, 30, 0), (-5, 20, 4)])
def test_strides(impl, start, stop, step):
    if impl is not k and step <= 0:
        pytest.skip("Triton's scf.for takes only positive run-time steps")
    out = torch.zeros(3, dtype=torch.int32, device="cuda")
    impl.strides[(1,)](out, start, stop, step, 20)
    np.testing.assert_array_equal(host(out), k.strides_ref(start, stop, step, 20))


def test_nested(impl):
    n, m, block = 45, 11, 64
    x = RNG.standard_normal(m * n).astype(np.float32)
    out = torch.zeros(n, device="cuda")
    impl.nested[(1,)](dev(x), out, n, m, BLOCK=block)
    np.testing.assert_allclose(host(out), k.nested_ref(x, n, m, block), rtol=1e-5)


def test_select(impl):
    x = np.array([1.5, -2.0, 0.25, -0.5, 3.0, 0.0], np.float32)
    out = torch.zeros(len(x), device="cuda")
    impl.select[(len(x),)](dev(x), out)
    np.testing.assert_array_equal(host(out), k.select_ref(x))


@pytest.mark.parametrize("lo,hi,step", [(2**35, 2**35 + 20, 3), (15, -16, -2), (-18, -22, -1), (0, 10, 2**33)])
def test_int64_loop_as_triton(lo, hi, step):
    """A run-time loop over int64 bounds or step: an int64 index (as Triton's test_for_iv)."""
    tr = triton_version(k.__file__)
    if tr is None:
        pytest.skip("needs Triton")
    out, tout = (torch.zeros(2, dtype=torch.int64, device="cuda") for _ in range(2))
    k.int64_loop[(1,)](out, lo, hi, STEP=step)
    tr.int64_loop[(1,)](tout, lo, hi, STEP=step)
    torch.cuda.synchronize()
    assert torch.equal(out, tout)
    assert out.tolist() == [sum(range(lo, hi, step)), len(range(lo, hi, step))]


@pytest.mark.parametrize("warps", [1, 4])
@pytest.mark.parametrize("start,want", [(41, [41, 4]), (43, [42, 3])])
def test_conditions_on_one_element_blocks(impl, warps, start, want):
    x = torch.tensor([start, 0], dtype=torch.int32, device="cuda")
    impl.one_element_conditions[(1,)](x, num_warps=warps)
    assert host(x).tolist() == want

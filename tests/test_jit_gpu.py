"""JIT on the H200: kernel[grid](torch tensors) compiles once per specialization, launches through
the runtime, and equals numpy — with masked tails, NaN and ±0, and BLOCK both smaller and larger
than the thread block."""
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import mytriton
import mytriton.language as tl

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "manifests" / "kernels"))
import elementwise as ew  # noqa: E402
import matmul as mm  # noqa: E402
import reductions as rd  # noqa: E402
import softmax as sm  # noqa: E402

from tests.kernels import basic  # noqa: E402

# n a multiple of 16 with a partial last block (1040, 4144) takes the one-predicate-per-vector path
SIZES = [(1000, 64, 4), (4099, 1024, 4), (77, 32, 4), (5000, 256, 2), (3, 16, 1), (70001, 2048, 8),
         (1040, 1024, 4), (4144, 4096, 1),
         # 128 elements a thread, n not a multiple of 16: one element a lane (passes/layout._proven_access_widths)
         (4097, 4096, 1), (9001, 8192, 2)]


def rand(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def special(x):
    x = x.copy()
    x[: min(4, x.size)] = [np.nan, -0.0, 0.0, -np.inf][: min(4, x.size)]
    return x


def dev(x):
    return torch.from_numpy(np.ascontiguousarray(x)).cuda()


def host(t):
    torch.cuda.synchronize()
    return t.cpu().numpy()


def assert_same(got, want, rtol=0, atol=0):
    if rtol == 0 and atol == 0:
        np.testing.assert_array_equal(got, want)
        if got.dtype.kind == "f":     # ±0 must match bit for bit
            assert np.array_equal(np.signbit(got), np.signbit(want))
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("n,block,warps", SIZES)
def test_add(n, block, warps):
    x, y = special(rand(n, 1)), rand(n, 2)
    out = torch.full((n,), 7.0, device="cuda")
    ew.add_kernel[(triton_cdiv(n, block),)](dev(x), dev(y), out, n, BLOCK=block, num_warps=warps)
    assert_same(host(out), x + y)


@pytest.mark.parametrize("n,block,warps", SIZES)
def test_axpby_fp32_scalars(n, block, warps):
    x, y = special(rand(n, 3)), rand(n, 4)
    out = torch.empty(n, device="cuda")
    ew.axpby_kernel[(triton_cdiv(n, block),)](dev(x), dev(y), out, 1.5, -2.25, n, BLOCK=block, num_warps=warps)
    # a*x + b*y contracts to one FMA (NVRTC's default, and Triton's): it differs from numpy's two
    # roundings by at most an ulp of the larger term, which can exceed an ulp of a cancelling sum
    ax, by = np.float32(1.5) * x, np.float32(-2.25) * y
    got, want = host(out), ax + by
    bound = 1.2e-7 * (np.abs(ax) + np.abs(by))
    finite = np.isfinite(want)
    assert np.all(np.abs(got - want)[finite] <= bound[finite])
    assert_same(got[~finite], want[~finite])


@pytest.mark.parametrize("n,block,warps", SIZES)
def test_leaky_relu(n, block, warps):
    x = special(rand(n, 5))
    out = torch.empty(n, device="cuda")
    ew.leaky_relu_kernel[(triton_cdiv(n, block),)](dev(x), out, n, 0.01, BLOCK=block, num_warps=warps)
    assert_same(host(out), np.where(x > 0, x, np.float32(0.01) * x))


@pytest.mark.parametrize("n,block,warps", SIZES)
def test_sigmoid(n, block, warps):
    x = special(rand(n, 6) * 10)
    out = torch.empty(n, device="cuda")
    ew.sigmoid_kernel[(triton_cdiv(n, block),)](dev(x), out, n, BLOCK=block, num_warps=warps)
    want = (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float32)
    assert_same(host(out), want, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("n,block,warps", SIZES)
def test_int32_division_modulo_compare_and(n, block, warps):
    rng = np.random.default_rng(7)
    a = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-100, 100, n).astype(np.int32)
    b[b == 0] = 7
    a[:2], b[:2] = [-2**31, -7], [-1, 2]
    out = torch.empty(n, dtype=torch.int32, device="cuda")
    ew.int_ops_kernel[(triton_cdiv(n, block),)](dev(a), dev(b), out, n, BLOCK=block, num_warps=warps)
    with np.errstate(all="ignore"):
        q = np.where(b == -1, -a, np.trunc(a.astype(np.float64) / b).astype(np.int64).astype(np.int32))
        r = np.fmod(a, b)
        want = np.where((a > 0) & (b > 0) & (a > b), q, r + (a & 255)).astype(np.int32)
    assert_same(host(out), want)


@pytest.mark.parametrize("offset", [1, 2, 3])
def test_misaligned_views_take_the_checked_path(offset):
    """x[offset:] is not 16-byte aligned: the vector fast path must fall back per element."""
    n = 4097
    x, y = rand(n + 3, 15), rand(n + 3, 16)
    out = torch.zeros(n + 3, device="cuda")
    xd, yd = dev(x), dev(y)
    ew.add_kernel[(triton_cdiv(n, 1024),)](xd[offset:], yd[offset:], out[offset:], n, BLOCK=1024)
    got = host(out)
    assert_same(got[offset:offset + n], x[offset:offset + n] + y[offset:offset + n])
    assert not got[:offset].any() and not got[offset + n:].any()


def test_specializations_are_cached():
    x = dev(rand(100, 8))
    out = torch.empty(100, device="cuda")
    k1 = ew.add_kernel[(1,)](x, x, out, 100, BLOCK=128)
    k2 = ew.add_kernel[(1,)](x, x, out, 100, BLOCK=128)
    k3 = ew.add_kernel[(1,)](x, x, out, 100, BLOCK=64)
    assert k1 is k2 and k1 is not k3


def test_grid_callable_and_stream():
    n = 3000
    x = rand(n, 9)
    out = torch.empty(n, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        xd = dev(x)
    ew.add_kernel[lambda meta: (triton_cdiv(n, meta["BLOCK"]),)](xd, xd, out, n, BLOCK=256, stream=s)
    s.synchronize()
    assert_same(out.cpu().numpy(), x + x)


# --- the seeds' language on the GPU (issue 4) ---------------------------------------------------

MM_CASES = [(37, 53, 29, 4, 8, 4), (100, 70, 1, 32, 32, 4), (64, 64, 0, 16, 16, 4),
            (130, 257, 65, 64, 64, 4), (33, 9, 17, 64, 32, 8),
            # (columns staged through shared memory: passes/layout.staged_column)
            (200, 150, 77, 128, 128, 2), (45, 300, 33, 64, 128, 1), (129, 65, 130, 128, 64, 2),
            (70, 70, 3, 64, 64, 1), (300, 129, 40, 128, 128, 4),
            # (rows of 16 read a half-warp at once: passes/layout._half_warp_row_pays)
            (37, 41, 19, 16, 16, 2), (70, 23, 9, 32, 16, 4), (130, 47, 33, 64, 16, 8), (17, 33, 5, 16, 16, 1),
            # (one warp, 64 products a thread, an unaligned row: staged too)
            (75, 131, 37, 32, 64, 1), (40, 259, 21, 16, 128, 1)]


@pytest.mark.parametrize("kernel", [mm.matmul_kernel, mm.matmul_ptr_kernel], ids=["offsets", "carried_pointers"])
@pytest.mark.parametrize("M,N,K,BM,BN,warps", MM_CASES)
def test_matmul(kernel, M, N, K, BM, BN, warps):
    A, B = rand((M, K), 10), rand((K, N), 11)
    C = torch.full((M, N), 5.0, device="cuda")
    kernel[(triton_cdiv(M, BM), triton_cdiv(N, BN))](dev(A), dev(B), C, M, N, K, BM=BM, BN=BN, num_warps=warps)
    assert_same(host(C), A.astype(np.float64) @ B.astype(np.float64), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rows,cols,block,warps", [(7, 1000, 1024, 4), (5, 100, 128, 4), (3, 31, 32, 1),
                                                   (4, 3000, 4096, 8), (6, 20, 64, 4),
                                                   (5, 3000, 4096, 1), (3, 4097, 8192, 2)])
def test_softmax(rows, cols, block, warps):
    x = rand((rows, cols), 12) * 100          # large values: the max shift matters
    y = torch.empty((rows, cols), device="cuda")
    sm.softmax_kernel[(rows,)](dev(x), y, cols, BLOCK=block, num_warps=warps)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    assert_same(host(y), e / e.sum(1, keepdims=True), rtol=1e-4, atol=1e-6)


def test_row_sum_100_launches():
    rows, cols = 9, 10007
    x = rand((rows, cols), 13)
    out = torch.empty(rows, device="cuda")
    want = x.astype(np.float64).sum(1)
    xd = dev(x)
    for _ in range(100):
        out.fill_(0)
        rd.row_sum_kernel[(rows,)](xd, out, cols, BLOCK=512)
        assert_same(host(out), want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("rows,cols", [(5, 10007), (3, 2 * 4096 + 48), (2, 4096), (4, 100)])
def test_row_sum_copied_by_cp_async(rows, cols):
    """BLOCK=4096 on one warp: the loop's load goes through shared memory by cp.async
    (backends/cuda/codegen._copied_loads), one element at a time where the row length is not a
    multiple of 16, else 16 bytes; masked-off elements read as zeros."""
    x = rand((rows, cols), 15)
    out = torch.full((rows,), 7.0, device="cuda")
    h = rd.row_sum_kernel[(rows,)](dev(x), out, cols, BLOCK=4096, num_warps=1)
    assert_same(host(out), x.astype(np.float64).sum(1), rtol=1e-4, atol=1e-3)
    assert f"mt_cp_async<{4 if cols % 16 else 16}>(slots" in h.asm["cu"]


@pytest.mark.parametrize("rows,cols,BM,BN,warps", [(100, 70, 32, 64, 4), (5, 3, 4, 8, 4), (1000, 129, 16, 128, 8)])
def test_col_max_100_launches(rows, cols, BM, BN, warps):
    x = rand((rows, cols), 14)
    x[0, 0] = np.nan
    out = torch.empty(cols, device="cuda")
    xd = dev(x)
    for _ in range(100 if rows == 100 else 1):
        rd.col_max_kernel[(triton_cdiv(cols, BN),)](xd, out, rows, cols, BM=BM, BN=BN, num_warps=warps)
        assert_same(host(out), np.fmax.reduce(x, axis=0))


def test_nested_loops_two_carried_values_and_swap():
    out = torch.zeros(2, dtype=torch.int32, device="cuda")
    basic.nested_kernel[(1,)](out, 13, 7)
    assert host(out).tolist() == [sum(i * j for i in range(13) for j in range(7)), 13 * 7]
    for n in (0, 1, 2, 5):
        basic.swap_kernel[(1,)](out, n)
        assert host(out).tolist() == ([1, 2] if n % 2 == 0 else [2, 1])


def triton_cdiv(a, b):
    return (a + b - 1) // b


def test_hoisted_invariant_load_is_guarded():
    from tests.kernels import passes as pk
    x = rand(64 * 5, 17)
    out = torch.full((64,), 3.0, device="cuda")
    pk.invariant_load[(1,)](dev(x), torch.tensor([1.5], device="cuda"), out, 5)
    assert_same(host(out), (x.reshape(5, 64).astype(np.float64).sum(0) * 1.5).astype(np.float32), rtol=1e-6, atol=1e-6)
    nothing = torch.empty(0, device="cuda")      # a zero-trip loop must not read through this pointer
    pk.invariant_load[(1,)](dev(x), nothing, out, 0)
    assert not host(out).any()


def test_constexpr_types_key_the_cache_and_numpy_scalars_stay_on_the_gpu():
    from tests.kernels import lang
    x = rand(16, 18)
    out = torch.empty(16, device="cuda")
    k_int = lang.scaled[(1,)](dev(x), out, S=2)
    assert_same(host(out), x * np.float32(2))
    k_float = lang.scaled[(1,)](dev(x), out, S=2.5)
    assert_same(host(out), x * np.float32(2.5))
    assert k_int is not lang.scaled[(1,)](dev(x), out, S=2.0) and k_int is not k_float
    n = np.int32(16)
    ew.add_kernel[(1,)](dev(x), dev(x), out, n, BLOCK=16)       # a numpy scalar is an i32, not an array
    assert_same(host(out), x + x)


@pytest.mark.parametrize("block,warps", [(32, 4), (4, 8), (128, 2)])
def test_sum_over_a_size_one_axis_counts_once(block, warps):
    from tests.kernels import lang
    x = rand(block, 19)
    rows, total = torch.empty(block, device="cuda"), torch.empty(1, device="cuda")
    lang.sum_size_one_axis[(1,)](dev(x), rows, total, BLOCK=block, num_warps=warps)
    assert_same(host(rows), x)
    assert_same(host(total), np.array([x.astype(np.float64).sum()], np.float32), rtol=1e-5, atol=1e-5)


def test_integers_divisible_by_16_get_their_own_specialization():
    x = rand(1024, 20)
    out = torch.empty(1024, device="cuda")
    k16 = ew.add_kernel[(4,)](dev(x), dev(x), out, 1024, BLOCK=256)
    assert_same(host(out), x + x)
    out.zero_()
    k = ew.add_kernel[(4,)](dev(x), dev(x), out, 1000, BLOCK=256)
    got = host(out)
    assert_same(got[:1000], (x + x)[:1000]) and not got[1000:].any()
    assert k is not k16 and [t for _, t in k16.params][-1].align == 16


def test_jit_recompiles_when_a_module_constant_changes():
    from tests.kernels import globals_kernel as gk
    x = rand(16, 21)
    out = torch.empty(16, device="cuda")
    try:
        gk.scale_kernel[(1,)](dev(x), out)
        assert_same(host(out), x * np.float32(2.0))
        gk.SCALE = 3.0
        gk.scale_kernel[(1,)](dev(x), out)
        assert_same(host(out), x * np.float32(3.0))
    finally:
        gk.SCALE = 2.0


def test_launch_returns_a_handle_with_the_kernels_code():
    """As Triton's: kernel[grid](...) returns the compiled kernel, whose .asm holds its code."""
    x = dev(rand(1024, 3))
    out = torch.empty_like(x)
    h = ew.add_kernel[(1,)](x, x, out, 1024, BLOCK=1024)
    assert "ld.global" in h.asm["ptx"] and "k_add_kernel" in h.asm["cu"]
    assert_same(host(out), 2 * host(x))


@mytriton.jit
def _strided_copy(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride, mask=offs < n, other=0.0), mask=offs < n)


def test_an_integer_equal_to_one_is_compiled_in_as_a_constant():
    """As Triton: an int argument equal to 1 is a constant of its own specialization (a stride of 1
    makes the load contiguous: 16-byte vector loads) and is not passed; other values are."""
    x = rand(3 * 1000, 21)
    out = torch.full((1000,), 9.0, device="cuda")
    one = _strided_copy[(1,)](dev(x), out, 1000, 1, BLOCK=1024)
    assert_same(host(out), x[:1000])
    three = _strided_copy[(1,)](dev(x), out, 1000, 3, BLOCK=1024)
    assert_same(host(out), x[::3])
    assert one is not three
    assert [n for n, _ in one.params] == ["x_ptr", "out_ptr", "n"] and one.jit_params == [0, 1, 2]
    assert [n for n, _ in three.params] == ["x_ptr", "out_ptr", "n", "stride"] and three.jit_params is None
    vector_load = re.compile(r"ld\.global(\.nc)?\.v4")
    assert vector_load.search(one.asm["ptx"]) and not vector_load.search(three.asm["ptx"])
    out.zero_()
    assert _strided_copy[(1,)](dev(x), out, 1000, 1, BLOCK=1024) is one          # (the fast path)
    assert_same(host(out), x[:1000])


def test_pinned_host_tensors_and_none_arguments():
    """Pinned host memory is reachable from the GPU (Triton launches on it); None is a
    compile-time argument (`if x is not None:` folds), as in Triton."""
    n = 1000
    x = torch.randn(n).pin_memory()
    y = torch.randn(n, device="cuda")
    out = torch.zeros(n).pin_memory()
    ew.add_kernel[(triton_cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y.cpu())
    with pytest.raises(ValueError, match="parameter 'x_ptr'.*: got a tensor on cpu; it must be on a CUDA device"):
        ew.add_kernel[(1,)](torch.randn(n), y, out, n, BLOCK=256)
    got = torch.zeros(2, dtype=torch.int32, device="cuda")
    basic.maybe_store[(1,)](None, got)
    basic.maybe_store[(1,)](torch.tensor([7], dtype=torch.int32, device="cuda"), got)
    assert host(got).tolist() == [1, 7]


@mytriton.jit
def _grid_total(x_ptr, partial_ptr, out_ptr, flag_ptr, n, BLOCK: tl.constexpr):
    """Each program sums its block; the last to finish (an atomic count) adds the partial sums —
    the pattern a cooperative launch makes safe to spin on, here without spinning."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(partial_ptr + pid, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))
    done = tl.atomic_add(flag_ptr, 1, sem="acq_rel")
    if done == tl.num_programs(0) - 1:
        tl.store(out_ptr, tl.sum(tl.load(partial_ptr + tl.arange(0, 64), mask=tl.arange(0, 64) < tl.num_programs(0),
                                         other=0.0, volatile=True), axis=0))


def test_a_cooperative_launch_computes_the_same_and_a_too_large_grid_is_refused():
    """Triton's launch_cooperative_grid=True goes through cuLaunchCooperativeKernel: the same
    result; a grid whose blocks cannot all be resident at once is the driver's error, named."""
    from mytriton.runtime import driver as rt
    x = rand(5000, 31)
    partial, out = torch.zeros(64, device="cuda"), torch.zeros(1, device="cuda")
    for cooperative in (False, True):
        flag = torch.zeros(1, device="cuda", dtype=torch.int32)
        _grid_total[(40,)](dev(x), partial, out, flag, 5000, BLOCK=128, launch_cooperative_grid=cooperative)
        np.testing.assert_allclose(host(out)[0], x.sum(dtype=np.float64), rtol=1e-4)
    flag = torch.zeros(1, device="cuda", dtype=torch.int32)
    with pytest.raises(rt.CudaError, match="cuLaunchCooperativeKernel.*COOPERATIVE_LAUNCH_TOO_LARGE"):
        _grid_total[(1_000_000,)](dev(x), partial, out, flag, 5000, BLOCK=128, launch_cooperative_grid=True)

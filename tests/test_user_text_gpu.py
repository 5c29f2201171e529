"""Issue #11 §2 on the GPU: kernels whose user text or semantics once went wrong without an error
(the CPU half, which inspects the generated code, is tests/test_user_text.py) run through the JIT
on torch tensors and give the interpreter's / numpy's answer; and a property test: random kernels
with hostile names, comments and constexpr strings agree bit for bit with the interpreter."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

import mytriton  # noqa: E402
from tests.kernels import hostile as h  # noqa: E402


def dev(x):
    return torch.from_numpy(np.ascontiguousarray(x)).cuda()


def host(t):
    torch.cuda.synchronize()
    return t.cpu().numpy()


def rand(n, seed):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def test_parameter_named_r():
    n = 1000
    x = rand(n, 1)
    out = dev(np.full(1024, 7.0, np.float32))
    h.bound_named_r[(8,)](dev(x), out, n, BLOCK=128)
    got = host(out)
    np.testing.assert_array_equal(got[:n], x + 1.0)
    assert (got[n:] == 7.0).all()


@pytest.mark.parametrize("fn", [h.main, h.printf, h.float], ids=["main", "printf", "float"])
def test_kernels_named_like_c_functions(fn):
    n = 300
    x = rand(512, 2)
    d = dev(x)
    fn[(4,)](d, n, BLOCK=128)
    want = x.copy()
    want[:n] = {h.main: x[:n] * 2.0, h.printf: 1.0, h.float: -1.0}[fn]
    np.testing.assert_array_equal(host(d), want)


def test_cpp_keyword_and_generated_looking_parameters():
    n = 500
    a, b = rand(512, 3), rand(512, 4)
    out = dev(np.zeros(512, np.float32))
    h.cpp_names[(4,)](dev(a), out, dev(b), n, 1.5, 0.25, -2.0, 3.0, BLOCK=128)
    want = np.zeros(512, np.float32)
    want[:n] = (((a[:n] * np.float32(1.5)) + np.float32(0.25)) + b[:n]) + np.float32(-2.0) + np.float32(3.0)
    np.testing.assert_allclose(host(out), want, rtol=1e-6, atol=1e-6)


def test_non_ascii_names():
    n = 200
    x = rand(256, 5)
    out = dev(np.zeros(256, np.float32))
    h.grüße[(2,)](dev(x), n, out, BLOCK=128)
    want = np.zeros(256, np.float32)
    want[:n] = x[:n] - 1.0
    np.testing.assert_array_equal(host(out), want)


def test_source_line_ending_in_backslash():
    n = 1000
    x = rand(1024, 6)
    out = dev(np.zeros(1024, np.float32))
    h.line_splice[(8,)](dev(x), out, n, BLOCK=128)
    want = np.zeros(1024, np.float32)
    want[:n] = x[:n] * 3.0
    np.testing.assert_array_equal(host(out), want)


def test_out_of_range_other_is_inf():
    x = rand(5, 7)
    out = dev(np.zeros(9, np.float32))
    h.fill_other[(1,)](dev(x), out, 5, BLOCK=128)
    np.testing.assert_array_equal(host(out), np.concatenate([x, np.full(4, np.inf, np.float32)]))


def test_constexpr_string_with_newlines():
    d = dev(np.zeros(256, np.float32))
    h.with_label[(2,)](d, 200, LABEL="a\n}\nint injected;\n//\\", BLOCK=128)
    want = np.zeros(256, np.float32)
    want[:200] = 5.0
    np.testing.assert_array_equal(host(d), want)


@pytest.mark.parametrize("warps", [32, 8, 1])
def test_scalar_load_double_store_same_address(warps):
    programs = 65536
    d = dev(np.ones(programs, np.float32))
    for _ in range(3):                        # a race shows up only sometimes: give it chances
        h.double_in_place[(programs,)](d, num_warps=warps)
    got = host(d)
    assert (got == 8.0).all(), f"{np.count_nonzero(got != 8.0)} elements wrong, e.g. {got[got != 8.0][:5]}"


@pytest.mark.parametrize("warps", [4, 32])
def test_scalar_store_then_load_by_every_thread(warps):
    """One thread stores for the program; every thread's later load must see that store."""
    programs, block = 4096, 1024
    p, out = dev(np.zeros(programs, np.float32)), dev(np.zeros(programs * block, np.float32))
    for _ in range(3):
        h.store_then_load[(programs,)](p, out, BLOCK=block, num_warps=warps)
    got, want = host(out), np.repeat(np.arange(programs, dtype=np.float32) + 5.0, block)
    assert (got == want).all(), f"{np.count_nonzero(got != want)} elements wrong"


@pytest.mark.parametrize("block,warps", [(16, 4), (64, 32), (256, 16), (1024, 4)])
def test_replicated_load_double_store(block, warps):
    programs = 4096
    d = dev(np.ones(programs * block, np.float32))
    h.double_row_in_place[(programs,)](d, BLOCK=block, num_warps=warps)
    got = host(d)
    assert (got == 2.0).all(), f"{np.count_nonzero(got != 2.0)} elements wrong"


INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("tx", INTS)
@pytest.mark.parametrize("ty", [t for t in INTS if t[0] == "u"])
def test_shift_right_like_triton(tx, ty):
    """Triton's test_shift_op for >>: the result, stored as int{bw}/uint{bw} by x's signedness,
    is x.astype(that) >> y.astype(that)."""
    bw = max(np.dtype(tx).itemsize, np.dtype(ty).itemsize) * 8
    tz = np.dtype(f"{'int' if tx[0] == 'i' else 'uint'}{bw}")
    rng = np.random.default_rng(17)
    info = np.iinfo(tx)
    x = rng.integers(info.min, info.max, 128, dtype=tx, endpoint=True)
    if tx == "int32":
        x[0] = -881907089
    y = rng.integers(0, bw, 128, dtype=ty)
    y[0] = 17
    out = dev(np.zeros(128, tz))
    h.shift_right[(1,)](dev(x), dev(y), out, BLOCK=128)
    want = x.astype(tz) >> y.astype(tz)
    np.testing.assert_array_equal(host(out), want)
    if tx == "int32" and ty == "uint32":
        assert host(out)[0] == -6729


def test_loop_carried_pointer_assigned_another_parameter():
    dst, src = np.zeros(128, np.float32), np.arange(128, dtype=np.float32)
    d_dst, d_src = dev(dst), dev(src)
    h.pointer_swap[(1,)](d_dst, d_src, 100, 3, BLOCK=128)
    h.pointer_swap[(1,)](dst, src, 100, 3, BLOCK=128)                 # the interpreter
    np.testing.assert_array_equal(host(d_dst), dst)
    np.testing.assert_array_equal(host(d_src), src)


# --- property: the CUDA backend and the interpreter agree on hostile kernels ------------------------

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402

from tests.user_text_strategies import kernels, load  # noqa: E402


def inputs(n_total: int, seed: int) -> np.ndarray:
    x = rand(n_total, seed)
    x[:8] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-45, -3e38, 1.0][: min(8, n_total)]
    return x


def same_bits(got, want):
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    np.testing.assert_array_equal(np.signbit(got[~nan]), np.signbit(want[~nan]))


@settings(max_examples=30, deadline=None, derandomize=True, database=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(k=kernels(exact_on_gpu=True))
def test_hostile_kernels_agree_with_the_interpreter(k):
    load(k)
    programs = 3
    total = programs * k.block
    n = total - k.block // 2 - 1                  # a masked tail: `other` shows
    x = inputs(total, 11)
    s = -0.75
    cpu = np.full(total, 7.0, np.float32)
    k.fn[(programs,)](x.copy(), cpu, n, s, **k.constexprs, num_warps=k.num_warps)
    out = dev(np.full(total, 7.0, np.float32))
    k.fn[(programs,)](dev(x), out, n, s, **k.constexprs, num_warps=k.num_warps)
    same_bits(host(out), cpu)


def test_mangled_symbol_launches_through_the_compiled_kernel():
    """compile() names the symbol the loaders look up; the raw cubin has exactly that entry."""
    from mytriton.runtime import driver
    major, minor = driver.compute_capability()
    ck = mytriton.compile(h.main, signature={"x_ptr": "*fp32", "n": "i32"}, constexprs={"BLOCK": 128},
                          target=f"sm_{major}{minor}")
    k = driver.Kernel(ck.metadata["name"], [("x_ptr", "*fp32"), ("n", "i32")], 4, 0,
                      {f"sm_{major}{minor}": ck.asm["cubin"]})
    x = rand(256, 9)
    d = dev(x)
    k.launch((2,), [d.data_ptr(), 256])
    np.testing.assert_array_equal(host(d), x * 2.0)


def test_aot_package_with_a_kernel_named_main(tmp_path, monkeypatch):
    import importlib

    from tests.test_user_text import build_main_package
    pkg = build_main_package(tmp_path)
    monkeypatch.syspath_prepend(str(pkg.parent))
    mainpkg = importlib.import_module("mainpkg")
    x = rand(256, 10)
    d = dev(x)
    mainpkg.main[(2,)](d, 200, BLOCK=128)
    want = x.copy()
    want[:200] *= 2.0
    np.testing.assert_array_equal(host(d), want)

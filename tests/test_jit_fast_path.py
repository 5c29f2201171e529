"""The JIT's launch path on the CPU, with the fake driver of tests/test_runtime_cpu.py (NVRTC compiles
for real): a launch whose arguments are of kinds seen before takes the fast path to the kernel that
launch compiled, and a change of kind — an integer that stops being 1 or divisible by 16, a pointer
that loses its 16-byte alignment, another dtype — compiles (or finds) its own specialization, the
arguments each passes being the ones it was compiled for. On the GPU: tests/test_jit_gpu.py."""
import math
import struct

import numpy as np

import pytest

import mytriton
import mytriton.language as tl
from mytriton.frontend import launch as L
from mytriton.runtime import driver as rt
from tests.test_runtime_cpu import FakeDriver, install_fake_driver

@mytriton.jit
def scale(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs * stride, tl.load(x_ptr + offs * stride, mask=offs < n) * 2, mask=offs < n)


@pytest.fixture
def fake(monkeypatch):
    drv = install_fake_driver(monkeypatch, FakeDriver())
    monkeypatch.delenv("MYTRITON_INTERPRET", raising=False)
    scale._cache.clear()
    scale._fast.clear()
    return drv


def launch(x, y, n, stride):
    return scale[(1,)](x, y, n, stride, BLOCK=64)


def test_the_fast_path_keys_each_specialization(fake):
    x, y = rt.DeviceArray(256, "fp32"), rt.DeviceArray(256, "fp32")
    seen = []
    for n, stride in [(64, 1), (64, 1), (48, 1), (50, 1), (64, 2), (64, 2), (50, 1)]:
        k = launch(x, y, n, stride)
        seen.append((k, sorted(p for p, _ in k.params), [str(t) for _, t in k.params]))
    kernels = [s[0] for s in seen]
    # n divisible by 16 (64, 48) shares a specialization; 50 is another; a stride of 1 is compiled in
    assert kernels[0] is kernels[1] is kernels[2] and kernels[3] is kernels[6]
    assert len({id(k) for k in kernels}) == 3
    assert seen[0][2] == ["*fp32:16", "*fp32:16", "i32:16"] and seen[3][2] == ["*fp32:16", "*fp32:16", "i32"]
    assert seen[4][1] == ["n", "stride", "x_ptr", "y_ptr"]
    assert len(scale._fast) == 3
    # each launch passed what its kernel takes: the last one x, y and n = 50 (stride 1 compiled in)
    fake.param_sizes = [8, 8, 4]
    launch(x, y, 50, 1)
    assert fake.launches[-1]["args"] == [struct.pack("<Q", x.ptr), struct.pack("<Q", y.ptr), struct.pack("<i", 50)]


def test_an_unaligned_view_or_another_dtype_is_another_specialization(fake):
    x, y = rt.DeviceArray(256, "fp32"), rt.DeviceArray(256, "fp32")
    aligned = launch(x, y, 64, 1)
    shifted = launch(x.view_offset(4), y, 64, 1)
    assert shifted is not aligned and str(shifted.params[0][1]) == "*fp32"
    h = rt.DeviceArray(256, "fp16")
    half = launch(h, h, 64, 1)
    assert [str(t) for _, t in half.params][:2] == ["*fp16:16", "*fp16:16"]
    assert launch(x, y, 64, 1) is aligned and launch(h, h, 64, 1) is half


def test_interpreting_is_never_served_from_the_fast_path(fake, monkeypatch):
    import numpy as np
    x, y = rt.DeviceArray(256, "fp32"), rt.DeviceArray(256, "fp32")
    launch(x, y, 64, 1)
    monkeypatch.setenv("MYTRITON_INTERPRET", "1")
    xs, ys = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    launch(xs, ys, 64, 1)
    np.testing.assert_array_equal(ys, xs * 2)
    assert L._fast_lookup(scale, [x, y, 64], {"BLOCK": 64}, 4, None) is None


def test_a_cooperative_launch_goes_through_cuLaunchCooperativeKernel(fake):
    """Triton's ``launch_cooperative_grid=True``: the same kernel and arguments, launched so that
    every block is resident at once; a grid too large for that is the driver's refusal, named."""
    x, y = rt.DeviceArray(256, "fp32"), rt.DeviceArray(256, "fp32")
    fake.param_sizes = [8, 8, 4]
    plain = scale[(2,)](x, y, 50, 1, BLOCK=64)
    coop = scale[(2,)](x, y, 50, 1, BLOCK=64, launch_cooperative_grid=True)
    assert coop is plain and [d["cooperative"] for d in fake.launches] == [False, True]
    assert fake.launches[-1]["args"] == [struct.pack("<Q", x.ptr), struct.pack("<Q", y.ptr), struct.pack("<i", 50)]
    assert fake.launches[-1]["grid"] == (2, 1, 1)
    scale[(2,)](x, y, 50, 1, BLOCK=64, launch_cooperative_grid=False)
    assert fake.launches[-1]["cooperative"] is False
    with pytest.raises(rt.CudaError, match=r"cuLaunchCooperativeKernel\('scale', grid=\(1000, 1, 1\).*"
                                           r"CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"):
        scale[(1000,)](x, y, 50, 1, BLOCK=64, launch_cooperative_grid=True)


@mytriton.jit(do_not_specialize=["n", 3])
def scale_any(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs * stride, tl.load(x_ptr + offs * stride, mask=offs < n) * 2, mask=offs < n)


@mytriton.jit(do_not_specialize_on_alignment=("x_ptr", "n"))
def scale_unaligned(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs * stride, tl.load(x_ptr + offs * stride, mask=offs < n) * 2, mask=offs < n)


def test_do_not_specialize_keeps_one_kernel_for_every_value(fake):
    x, y = rt.DeviceArray(256, "fp32"), rt.DeviceArray(256, "fp32")
    for k in (scale_any, scale_unaligned):
        k._cache.clear()
        k._fast.clear()
    kernels = [scale_any[(1,)](x, y, n, stride, BLOCK=64) for n, stride in [(64, 1), (50, 2), (48, 1)]]
    assert kernels[0] is kernels[1] is kernels[2]          # n and stride (by position) as they are
    assert [str(t) for _, t in kernels[0].params] == ["*fp32:16", "*fp32:16", "i32", "i32"]
    fake.param_sizes = [8, 8, 4, 4]
    scale_any[(1,)](x, y, 48, 1, BLOCK=64)
    assert fake.launches[-1]["args"][2:] == [struct.pack("<i", 48), struct.pack("<i", 1)]   # 1 is passed
    # on alignment only: x and n lose their :16, a stride of 1 is still compiled in
    fake.param_sizes = [8, 8, 4]
    k = scale_unaligned[(1,)](x, y, 64, 1, BLOCK=64)
    assert sorted((n, str(t)) for n, t in k.params) == [("n", "i32"), ("x_ptr", "*fp32"), ("y_ptr", "*fp32:16")]
    assert scale_unaligned[(1,)](x, y, 50, 1, BLOCK=64) is k


@pytest.mark.parametrize("option, value, error, message", [
    ("do_not_specialize", ["m"], ValueError, "f: do_not_specialize: no parameter named 'm' \\(parameters: a, n\\)"),
    ("do_not_specialize", [2], ValueError, "f: do_not_specialize: position 2 is not a parameter \\(the kernel has 2\\)"),
    ("do_not_specialize_on_alignment", [1.5], TypeError,
     "f: do_not_specialize_on_alignment lists parameter names or positions, got 1.5"),
])
def test_do_not_specialize_names_its_parameters(option, value, error, message):
    def f(a, n):
        pass
    with pytest.raises(error, match=message):
        mytriton.jit(**{option: value})(f)


# --------------------------------------------------------------------------- constexprs by identity

@mytriton.jit
def divide(x_ptr, y_ptr, n, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) / SCALE, mask=offs < n)


@mytriton.jit
def divide_by_first(x_ptr, y_ptr, n, SCALES: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) / SCALES[0][0], mask=offs < n)


def compiled_for(kernel) -> str:
    """The constexprs a JIT kernel was compiled with, as its CUDA source's header says."""
    line, = [t for t in kernel.asm["cu"].splitlines() if t.startswith("// constexprs: ")]
    return line[len("// constexprs: "):]


@pytest.mark.parametrize("n", [64, np.int32(64)], ids=["fast path", "full path"])   # (a numpy scalar: no fast key)
def test_the_jit_compiles_each_constexpr_identity_once(fake, n):
    """-0.0 and 0.0 (1/x is -inf or +inf), 1, 1.0 and True are specializations of their own; a NaN
    finds the kernel of the NaN of its bits, again and again; the same inside tuples."""
    x, y = rt.DeviceArray(256, "fp32"), rt.DeviceArray(256, "fp32")
    for k in (divide, divide_by_first):
        k._cache.clear()
        k._fast.clear()
    kernels = {}
    for _ in range(2):
        for v in [-0.0, 0.0, 1, 1.0, True, 2.5, float("nan"), math.nan, float("nan")]:   # (a new NaN each time)
            kernel = divide[(1,)](x, y, n, SCALE=v, BLOCK=64)
            assert compiled_for(kernel) == f"SCALE={v!r}, BLOCK=64", v
            assert kernels.setdefault((type(v), repr(v)), kernel) is kernel, v   # (these values: repr tells them)
            nested = divide_by_first[(1,)](x, y, n, SCALES=((v, 1),), BLOCK=64)
            assert compiled_for(nested) == f"SCALES={((v, 1),)!r}, BLOCK=64", v
            assert kernels.setdefault(("nested", type(v), repr(v)), nested) is nested, v
    # NaNs of the same bits are one specialization: seven kernels of each
    assert len({id(k) for k in kernels.values()}) == len(kernels) == 14
    assert len(divide._cache) == len(divide_by_first._cache) == 2 * 7    # (keyed by device and by target)
    assert len(divide._fast) == len(divide_by_first._fast) == (7 if type(n) is int else 0)


def test_the_jit_constexpr_key_is_each_value_s_kind_and_exact_value():
    import types
    key = L._constexpr_key
    distinct = [0.0, -0.0, 0, False, 1, 1.0, True, np.float32(1.0), np.float64(1.0), np.int64(1), 1 + 0j, 0j,
                complex(-0.0, 0.0), np.complex128(0j), np.complex128(complex(-0.0, 0.0)), np.float64(-0.0),
                float("nan"), -math.nan, math.inf, 2**70, 2**70 + 1, float(2**70), "a", "a\0", "a\0b", "\u00e9", b"a",
                None, (), (0.0,), (-0.0,), ((0.0,),), ((-0.0,),), (1,), (True,), [0.0], [-0.0], {0.0}, {-0.0},
                frozenset({1}), {"k": 0.0}, {"k": -0.0}, {0.0: 1}, {-0.0: 1}, types.SimpleNamespace(a=0.0),
                types.SimpleNamespace(a=-0.0), tl.float16, tl.float32, tl.pointer_type(tl.float16), math, math.sqrt,
                divide, divide_by_first, int, float]
    L._AS_THEY_ARE.clear()                         # (the first key of a dtype, a function... learns its type)
    keys = [key([v]) for v in distinct]
    assert len(set(keys)) == len(distinct)
    assert [key([v]) for v in distinct] == keys    # a value's own key again, hashable
    assert all(hash(key([v])) == hash(k) for v, k in zip(distinct, keys))
    assert key([float("nan")]) == key([math.nan]) and key([(float("nan"),)]) == key([(math.nan,)])
    assert key([tl.float16]) == key([tl.float16]) and key([[1, (2.0,)]]) == key([[1, (2.0,)]])
    assert key([1, 2]) != key([2, 1]) and key([(1, 2)]) != key([1, 2])


def test_num_warps_of_another_type_is_not_served_the_int_s_kernel(fake):
    x, y = rt.DeviceArray(256, "fp32"), rt.DeviceArray(256, "fp32")
    for n in (64, np.int32(64)):                     # the fast path and the full path
        scale[(1,)](x, y, n, 1, BLOCK=64, num_warps=4)
        for bad in (4.0, np.float64(4.0)):
            with pytest.raises(mytriton.CompilationError,
                               match=r"num_warps must be a power of 2 from 1 to 32, got (np.float64\()?4.0"):
                scale[(1,)](x, y, n, 1, BLOCK=64, num_warps=bad)
    assert len(fake.launches) == 2

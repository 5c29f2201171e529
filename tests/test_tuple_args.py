"""Tuples as kernel arguments (frontend/tuples.py): the interpreter against numpy, the generated
CUDA (CPU emulator) against the interpreter, the JIT's specialization of each element (with the
fake driver: NVRTC compiles for real), and the errors. On the GPU: tests/test_tuple_args_gpu.py."""
import struct

import numpy as np
import pytest

import mytriton
import mytriton.language as tl
from mytriton.errors import CompilationError
from mytriton.runtime import driver as rt
from tests import cuda_emulator
from tests.kernels.tuple_args import pick, scaled_copy, scaled_copy_indexed
from tests.test_runtime_cpu import FakeDriver, install_fake_driver


def expected(x, s, extra, n):
    y = np.zeros_like(x)
    y[:n] = x[:n] * np.float32(s) + 3 + (10 if extra is not None else 0)
    return y


@pytest.mark.parametrize("extra", [None, 7])
@pytest.mark.parametrize("n", [64, 50])
def test_the_interpreter_takes_nested_tuples(extra, n):
    x = np.random.default_rng(n).standard_normal(64).astype(np.float32)
    for kernel in (scaled_copy, scaled_copy_indexed):
        y = np.zeros(64, np.float32)
        kernel[(2,)]((x, (y, 2.5), extra), n, BLOCK=32)
        np.testing.assert_allclose(y, expected(x, 2.5, extra, n), rtol=1e-6)
    a, b, out = x, x[::-1].copy(), np.zeros(64, np.float32)
    pick[(1,)]((a, b), out, n, BLOCK=64)
    np.testing.assert_allclose(out[:n], (a + 2 * b)[:n], rtol=1e-6)


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
def test_the_cuda_backend_takes_the_leaves_and_compiles_the_constants_in():
    sig = {"ptrs": ("*fp32:16", ("*fp32:16", "fp32"), "i32:1"), "n": "i32"}
    ck = mytriton.compile(scaled_copy, sig, {"BLOCK": 32})
    assert list(ck.metadata["signature"]) == ["ptrs__0", "ptrs__1__0", "ptrs__1__1", "n"]
    assert "k_scaled_copy(const float* p_ptrs__0, float* p_ptrs__1__0, float p_ptrs__1__1, int p_n)" in ck.asm["cu"]
    x = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    y = np.zeros(64, np.float32)
    cuda_emulator.run(ck.asm["cu"], [x, y, np.float32(2.5), np.int32(50)], (2,))
    np.testing.assert_allclose(y, expected(x, 2.5, 1, 50), rtol=1e-6)


@pytest.fixture
def fake(monkeypatch):
    drv = install_fake_driver(monkeypatch, FakeDriver())
    monkeypatch.delenv("MYTRITON_INTERPRET", raising=False)
    for k in (scaled_copy, pick):
        k._cache.clear()
        k._fast.clear()
    return drv


def test_the_jit_specializes_each_element_and_passes_the_leaves(fake):
    x, y = rt.DeviceArray(64, "fp32"), rt.DeviceArray(64, "fp32")
    fake.param_sizes = [8, 8, 4, 4]
    k = scaled_copy[(2,)]((x, (y, 2.5), None), 50, BLOCK=32)
    assert [(n, str(t)) for n, t in k.params] == [("ptrs__0", "*fp32:16"), ("ptrs__1__0", "*fp32:16"),
                                                  ("ptrs__1__1", "fp32"), ("n", "i32")]
    assert fake.launches[-1]["args"] == [struct.pack("<Q", x.ptr), struct.pack("<Q", y.ptr), struct.pack("<f", 2.5),
                                         struct.pack("<i", 50)]
    assert scaled_copy[(2,)]((x, (y, 1.5), None), 49, BLOCK=32) is k           # the same kinds: the same kernel
    # an unaligned element and an element equal to 1 (compiled in, not passed): another kernel
    one = scaled_copy[(2,)]((x.view_offset(4), (y, 2.5), 1), 48, BLOCK=32)
    assert one is not k and [(n, str(t)) for n, t in one.params] == [
        ("ptrs__0", "*fp32"), ("ptrs__1__0", "*fp32:16"), ("ptrs__1__1", "fp32"), ("n", "i32:16")]
    assert fake.launches[-1]["args"] == [struct.pack("<Q", x.ptr + 4), struct.pack("<Q", y.ptr),
                                         struct.pack("<f", 2.5), struct.pack("<i", 48)]
    assert scaled_copy[(2,)]((x.view_offset(4), (y, 2.5), 1), 48, BLOCK=32) is one
    assert len(scaled_copy._fast) == 2            # (each kind of launch found again on the fast path)


def test_a_descriptor_inside_a_tuple_is_refused():
    from mytriton.tools.tensor_descriptor import TensorDescriptor
    x = np.zeros((16, 16), np.float32)
    d = TensorDescriptor(x, [16, 16], [16, 1], [16, 16])
    with pytest.raises(TypeError, match="scaled_copy: parameter 'ptrs': a tensor descriptor inside a tuple is not "
                                        "supported; pass it as a parameter of its own"):
        scaled_copy[(1,)]((d, (x, 1.0), None), 16, BLOCK=16)
    with pytest.raises(CompilationError, match="parameter 'ptrs': a tensor descriptor inside a tuple is not supported"):
        mytriton.compile(scaled_copy, {"ptrs": ("tensordesc<fp32[16, 16]>", ("*fp32", "fp32"), None), "n": "i32"},
                         {"BLOCK": 16})


def test_a_leaf_named_like_another_parameter_is_refused():
    @mytriton.jit
    def clash(t, t__0, BLOCK: tl.constexpr):
        a, b = t
        tl.store(t__0, tl.load(a) + tl.load(b))
    with pytest.raises(CompilationError, match="parameter 't': its leaf 't__0' has the name of another parameter"):
        mytriton.compile(clash, {"t": ("*fp32", "*fp32"), "t__0": "*fp32"}, {"BLOCK": 16})


def test_an_element_that_is_no_argument_is_named(fake):
    x = rt.DeviceArray(64, "fp32")
    with pytest.raises(TypeError, match=r"scaled_copy: parameter 'ptrs\[2\]': expected a device pointer .* got str"):
        scaled_copy[(1,)]((x, (x, "a"), None), 16, BLOCK=16)

"""Tensor descriptors made on the host (``mytriton.tools.tensor_descriptor.TensorDescriptor``,
Triton's host-side descriptors) passed to kernels: the checks Triton makes when one is built, the
``tensordesc<...>`` parameter type, the interpreter against numpy, and the generated CUDA (CPU
emulator) against the interpreter, the descriptor passed as its leaves."""
import struct

import numpy as np
import pytest

import mytriton
from mytriton.compiler import build_ssa
from mytriton.frontend import descriptors
from mytriton.runtime import driver as rt
from mytriton.tools.tensor_descriptor import TensorDescriptor
from tests import cuda_emulator
from tests.kernel_files import compile_error
from tests.kernels import host_descriptors as K

RNG = np.random.default_rng(23)
EMULATOR = pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")


def padded(m, n, dtype, pad_to=16):
    """An (m, n) array stored in rows padded to 16 bytes (as descriptors want), its values and view."""
    per_row = -(-n * np.dtype(dtype).itemsize // pad_to) * pad_to // np.dtype(dtype).itemsize
    storage = np.zeros((m, per_row), dtype)
    storage[:, :n] = RNG.standard_normal((m, n)).astype(dtype)
    return storage, per_row


@pytest.mark.parametrize("padding", ["zero", "nan"])
@pytest.mark.parametrize("dt", [np.float16, np.float32])
def test_copy_through_host_descriptors_in_the_interpreter(padding, dt):
    m, n = 37, 50
    x, stride = padded(m, n, dt)
    y = np.full_like(x, 7)
    K.copy_add[(3, 2)](TensorDescriptor(x, [m, n], [stride, 1], [16, 32], padding),
                       TensorDescriptor(y, [m, n], [stride, 1], [16, 32]), BM=16, BN=32)
    np.testing.assert_array_equal(y[:, :n], x[:, :n] + dt(1))
    assert np.all(y[:, n:] == 7)                       # (out of bounds: not written)


def test_from_tensor_and_a_descriptor_walked_in_a_loop():
    x = RNG.standard_normal((40, 96)).astype(np.float32)
    out = np.zeros(64, np.float32)
    K.row_sums[(2,)](TensorDescriptor.from_tensor(x, [32, 32]), out, BM=32, BN=32)
    np.testing.assert_allclose(out[:40], x.sum(1), rtol=1e-5, atol=1e-5)


@EMULATOR
@pytest.mark.parametrize("dt,name", [(np.float16, "fp16"), (np.float32, "fp32")])
def test_emulated_cuda_agrees_with_the_interpreter(dt, name):
    m, n = 37, 50
    x, stride = padded(m, n, dt)
    got, want = np.zeros_like(x), np.zeros_like(x)
    ty = f"tensordesc<{name}[16, 32]>"
    ck = mytriton.compile(K.copy_add, {"in_desc": ty, "out_desc": ty}, {"BM": 16, "BN": 32}, num_warps=4)
    # the kernel takes each descriptor as its leaves: base, shape, strides but the last
    cuda_emulator.run(ck.asm["cu"], [x, m, n, stride, got, m, n, stride], (3, 2))
    K.copy_add[(3, 2)](TensorDescriptor(x, [m, n], [stride, 1], [16, 32]),
                       TensorDescriptor(want, [m, n], [stride, 1], [16, 32]), BM=16, BN=32)
    np.testing.assert_array_equal(got, want)


def test_a_descriptor_parameter_is_its_leaves():
    fn = build_ssa(K.copy_add, {"in_desc": "tensordesc<fp16[16, 32]>", "out_desc": "tensordesc<fp16[16, 32],nan>"},
                   {"BM": 16, "BN": 32})
    assert [(p.name, str(p.type), p.align) for p in fn.params] == [
        ("in_desc__base", "ptr<f16>", 16), ("in_desc__shape0", "i32", 0), ("in_desc__shape1", "i32", 0),
        ("in_desc__stride0", "i64", 8),
        ("out_desc__base", "ptr<f16>", 16), ("out_desc__shape0", "i32", 0), ("out_desc__shape1", "i32", 0),
        ("out_desc__stride0", "i64", 8)]
    t = descriptors.parse("tensordesc<fp16[16, 32],nan>")
    assert (t.dtype, t.block_shape, t.padding, t.text()) == ("fp16", (16, 32), "nan", "tensordesc<fp16[16, 32],nan>")
    assert descriptors.parse("*fp16:16") is None


@pytest.mark.parametrize("text,message", [
    ("tensordesc<fp16[16, 24]>", "the block shape must hold powers of 2"),
    ("tensordesc<half[16]>", "unknown element type 'half'"),
    ("tensordesc<fp16>", "expected tensordesc<dtype[d0, d1, ...]>"),
    ("tensordesc<fp16[2, 2, 2, 2, 2, 16]>", "at most 5 dimensions"),
])
def test_a_bad_descriptor_type_is_an_error_naming_the_parameter(text, message):
    with pytest.raises(mytriton.CompilationError) as e:
        mytriton.compile(K.copy_add, {"in_desc": text, "out_desc": "tensordesc<fp16[16, 32]>"}, {"BM": 16, "BN": 32})
    assert "parameter 'in_desc'" in str(e.value) and message in str(e.value)


def test_a_leaf_named_like_another_parameter_is_an_error(tmp_path):
    src = ("import mytriton\nimport mytriton.language as tl\n\n\n@mytriton.jit\n"
           "def k(d, d__base):\n    d.store([0], tl.zeros((16,), tl.float32))\n")
    err = compile_error(tmp_path / "clash.py", src, {"d": "tensordesc<fp32[16]>", "d__base": "i32"})
    assert "parameter 'd': its leaf 'd__base' has the name of another parameter" in err


X = np.zeros((8, 16), np.float32)


@pytest.mark.parametrize("args,message", [
    ((X, [8, 16], [16, 2], [8, 16]), "the last dimension must be contiguous"),
    ((X, [8, 16], [3, 1], [8, 16]), "every stride but the last must be a multiple of 16 bytes"),
    ((X, [8, 16], [16, 1], [8, 2]), "must hold at least 16 bytes"),
    ((X, [8, 16], [16, 1], [8, 12]), "block_shape must hold powers of 2"),
    ((X, [8, 0], [16, 1], [8, 16]), "shape must be positive"),
    ((X, [8, 16], [16, 1], [8]), "must have the same length"),
    ((X[:, 1:], [8, 15], [16, 1], [8, 16]), "the base must be 16-byte aligned"),
    ((X, [8] * 6, [16] * 5 + [1], [8] * 6), "1 to 5 dimensions"),
    ((X, [8, 16], [16, 1], [8, 16], "inf"), "padding must be 'zero' or 'nan'"),
])
def test_tensor_descriptors_are_checked_as_triton_checks_them(args, message):
    with pytest.raises(ValueError, match=message):
        TensorDescriptor(*args)


@pytest.fixture
def fake(monkeypatch):
    from tests.test_runtime_cpu import FakeDriver, install_fake_driver
    drv = install_fake_driver(monkeypatch, FakeDriver())
    monkeypatch.delenv("MYTRITON_INTERPRET", raising=False)
    K.copy_add._cache.clear()
    K.copy_add._fast.clear()
    return drv


def test_a_jit_launch_passes_each_descriptor_as_its_leaves(fake):
    """The JIT's launch path on the CPU (the fake driver of tests/test_runtime_cpu.py; NVRTC compiles
    for real): device arrays behind the descriptors, the kernel compiled for their type, the
    launch's arguments the leaves in order, on the full path and on the fast one."""
    x, y = rt.DeviceArray(37 * 56, "fp16"), rt.DeviceArray(37 * 56, "fp16")
    fake.param_sizes = [8, 4, 4, 8] * 2
    k = K.copy_add[(3, 2)](TensorDescriptor(x, [37, 50], [56, 1], [16, 32]),
                           TensorDescriptor(y, [37, 50], [56, 1], [16, 32], "nan"), BM=16, BN=32)
    assert [(n, str(t)) for n, t in k.params] == [
        ("in_desc__base", "*fp16:16"), ("in_desc__shape0", "i32"), ("in_desc__shape1", "i32"),
        ("in_desc__stride0", "i64:8"), ("out_desc__base", "*fp16:16"), ("out_desc__shape0", "i32"),
        ("out_desc__shape1", "i32"), ("out_desc__stride0", "i64:8")]
    leaves = [struct.pack("<Q", x.ptr), struct.pack("<i", 37), struct.pack("<i", 50), struct.pack("<q", 56)]
    assert fake.launches[-1]["args"] == leaves + [struct.pack("<Q", y.ptr)] + leaves[1:]
    again = K.copy_add[(3, 2)](TensorDescriptor(x, [37, 50], [56, 1], [16, 32]),
                               TensorDescriptor(y, [37, 50], [56, 1], [16, 32], "nan"), BM=16, BN=32)
    other = K.copy_add[(3, 2)](TensorDescriptor(x, [37, 50], [56, 1], [16, 32]),
                               TensorDescriptor(y, [37, 50], [56, 1], [16, 32]), BM=16, BN=32)
    assert again is k and other is not k                 # (the padding is part of the specialization)
    assert len(K.copy_add._fast) == 2                    # both remembered by the JIT's fast path,
    fake.launches.clear()
    assert K.copy_add[(3, 2)](TensorDescriptor(x, [37, 50], [56, 1], [16, 32]),
                              TensorDescriptor(y, [37, 50], [56, 1], [16, 32], "nan"), BM=16, BN=32) is k
    assert fake.launches[-1]["args"] == leaves + [struct.pack("<Q", y.ptr)] + leaves[1:]   # which flattens too

"""Triton's tl.xor_sum, tl.reduce_or, tl.clamp, tl.swizzle2d, tl.softmax, tl.device_print,
propagate_nan, tl.histogram and tl.device_assert: the interpreter against numpy, the generated CUDA
(CPU emulator) against the interpreter, and their type errors."""
import numpy as np
import pytest

import mytriton
from tests import cuda_emulator
from tests.kernel_files import compile_error, kernel_from_source
from tests.kernels import extras as E

RNG = np.random.default_rng(12)
EMULATOR = pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")


def bit_reference(x, kind):
    f = np.bitwise_xor if kind == "xor" else np.bitwise_or
    return np.concatenate([f.reduce(x, 1), f.reduce(x, 0), [f.reduce(x.ravel())]]).astype(x.dtype)


@pytest.mark.parametrize("kind", ["xor", "or"])
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int64])
def test_bitwise_reductions_keep_the_type(kind, dtype):
    x = RNG.integers(0, np.iinfo(dtype).max, (16, 32), dtype=np.int64).astype(dtype)
    out = np.zeros(16 + 32 + 1, dtype)
    E.bit_reduce[(1,)](x, out, KIND=kind, ROWS=16, COLS=32)
    np.testing.assert_array_equal(out, bit_reference(x, kind))


@EMULATOR
@pytest.mark.parametrize("kind", ["xor", "or"])
def test_emulated_bitwise_reductions(kind):
    x = RNG.integers(-2**31, 2**31, (16, 32), dtype=np.int64).astype(np.int32)
    ck = mytriton.compile(E.bit_reduce, {"x_ptr": "*i32", "out_ptr": "*i32"},
                          {"KIND": kind, "ROWS": 16, "COLS": 32}, num_warps=2)
    out = np.zeros(49, np.int32)
    cuda_emulator.run(ck.asm["cu"], [x, out], (1,))
    np.testing.assert_array_equal(out, bit_reference(x, kind))


def test_bitwise_reductions_of_floats_are_an_error():
    with pytest.raises(mytriton.CompilationError, match="tl.xor_sum takes integers, got f32"):
        mytriton.compile(E.bit_reduce, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"KIND": "xor", "ROWS": 16, "COLS": 32})


def test_clamp_limits_and_sends_nan_to_the_lower_bound():
    x = np.array([-5, -1.5, 0, 0.5, 2, 9, np.nan, np.inf, -np.inf] * 20, np.float32)
    out = np.zeros_like(x)
    E.clamp_kernel[(2,)](x, out, -1.0, 2.0, x.size, BLOCK=128)
    want = np.where(np.isnan(x), -1.0, np.clip(x, -1, 2)).astype(np.float32)
    np.testing.assert_array_equal(out, want)
    if cuda_emulator.available():
        ck = mytriton.compile(E.clamp_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "lo": "fp32", "hi": "fp32",
                                               "n": "i32"}, {"BLOCK": 128})
        got = np.zeros_like(x)
        cuda_emulator.run(ck.asm["cu"], [x, got, -1.0, 2.0, x.size], (2,))
        np.testing.assert_array_equal(got, want)


def test_clamp_of_integers_is_an_error():
    with pytest.raises(mytriton.CompilationError, match="Unexpected dtype i32. Only floating point values are supported"):
        mytriton.compile(E.clamp_kernel, {"x_ptr": "*i32", "out_ptr": "*i32", "lo": "i32", "hi": "i32", "n": "i32"},
                         {"BLOCK": 128})


def swizzle_reference(i, j, size_i, size_j, size_g):
    ij = i * size_j + j
    group = ij // (size_g * size_j)
    off_i = group * size_g
    g = min(size_i - off_i, size_g)
    ij %= size_g * size_j
    return off_i + ij % g, ij // g


@pytest.mark.parametrize("size_i,size_j,size_g", [(8, 8, 4), (7, 5, 3), (10, 3, 4)])
def test_swizzle2d_renumbers_the_grid_by_groups_of_rows(size_i, size_j, size_g):
    out = np.zeros(2 * 128, np.int32)
    E.swizzle_kernel[(1,)](out, size_i, size_j, SIZE_G=size_g, BLOCK=128)
    n = size_i * size_j
    want = [swizzle_reference(k // size_j, k % size_j, size_i, size_j, size_g) for k in range(n)]
    np.testing.assert_array_equal(out[:n], [w[0] for w in want])
    np.testing.assert_array_equal(out[128:128 + n], [w[1] for w in want])
    assert sorted(zip(out[:n], out[128:128 + n])) == sorted((a, b) for a in range(size_i) for b in range(size_j))


@pytest.mark.parametrize("dim,keep", [(0, False), (0, True), (1, True)])
def test_softmax_along_a_dimension(dim, keep):
    x = RNG.standard_normal((16, 16)).astype(np.float32) * 3
    out = np.zeros_like(x)
    E.softmax_kernel[(1,)](x, out, DIM=dim, KEEP=keep, M=16, N=16)
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=dim, keepdims=True), rtol=1e-5, atol=1e-7)
    if cuda_emulator.available():
        ck = mytriton.compile(E.softmax_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"},
                              {"DIM": dim, "KEEP": keep, "M": 16, "N": 16})
        got = np.zeros_like(x)
        cuda_emulator.run(ck.asm["cu"], [x, got], (1,))
        np.testing.assert_allclose(got, out, rtol=2e-6, atol=1e-7)


def test_a_lower_rank_block_broadcasts_by_leading_axes():
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    v = RNG.standard_normal(8).astype(np.float32)
    out = np.zeros_like(x)
    E.rank_broadcast[(1,)](x, v, out, M=4, N=8)
    np.testing.assert_array_equal(out, np.where(x > v, x - v, v * 2))
    if cuda_emulator.available():
        ck = mytriton.compile(E.rank_broadcast, {"x_ptr": "*fp32", "v_ptr": "*fp32", "out_ptr": "*fp32"},
                              {"M": 4, "N": 8}, num_warps=1)
        got = np.zeros_like(x)
        cuda_emulator.run(ck.asm["cu"], [x, v, got], (1,))
        np.testing.assert_array_equal(got, out)


def test_a_lower_rank_block_that_does_not_fit_is_an_error_at_its_line(tmp_path):
    text = compile_error(tmp_path / "rank_kernel.py",
                         "import mytriton\nimport mytriton.language as tl\n\n\n@mytriton.jit\ndef k(out_ptr):\n"
                         "    r, c = tl.arange(0, 4), tl.arange(0, 8)\n"
                         "    tl.store(out_ptr + r[:, None] * 8 + c[None, :], r[:, None] + c[None, :] + r)\n",
                         {"out_ptr": "*i32"})
    assert ("incompatible shapes (4, 8), (1, 4) (Triton broadcasting: a lower-rank value gains leading axes, then "
            "each dim must be equal or 1)") in text and "rank_kernel.py:8" in text


@pytest.mark.parametrize("hex_", [False, True])
def test_device_print_prints_a_line_per_element_and_program(hex_, capfd):
    """The interpreter and the generated CUDA (printf, on the CPU emulator) print the same lines;
    the prefix reaches the CUDA source only octal-escaped (a '%s' in it is text, not a format)."""
    x = np.array([1, -2, 300, 4], np.int32)
    E.print_kernel[(2,)](x, 3, HEX=hex_, BLOCK=4)
    interp = capfd.readouterr().out.splitlines()
    first = "pid (0, 0, 0) idx (1) x: %s: " + ("0xfffffffe" if hex_ else "-2")
    assert len(interp) == 2 * (4 + 4 + 1) and first in interp
    assert "pid (1, 0, 0) idx () two: (operand 1) 1" in interp and "pid (0, 0, 0) idx (3) x: %s: 0" + (
        "x00000000" if hex_ else "") in interp
    if cuda_emulator.available():
        ck = mytriton.compile(E.print_kernel, {"x_ptr": "*i32", "n": "i32"}, {"HEX": hex_, "BLOCK": 4}, num_warps=1)
        assert '" x\\072 \\045s\\072 "' in ck.asm["cu"]
        cuda_emulator.run(ck.asm["cu"], [x, 3], (2,))
        assert sorted(capfd.readouterr().out.splitlines()) == sorted(interp)


def test_device_print_of_floats_and_the_mlir_backend(capfd):
    x = np.array([1.5, -0.25, 3, 4], np.float32)
    E.print_kernel[(1,)](x, 4, HEX=False, BLOCK=4)
    assert "pid (0, 0, 0) idx (0) x: %s: 1.500000" in capfd.readouterr().out
    for dtype, hex_ in (("fp32", False), ("fp16", True), ("i64", False)):     # NVRTC: printf (vprintf)
        ck = mytriton.compile(E.print_kernel, {"x_ptr": f"*{dtype}", "n": "i32"}, {"HEX": hex_, "BLOCK": 128})
        assert "vprintf" in ck.asm["ptx"] and ck.asm["cubin"]
    with pytest.raises(mytriton.CompilationError, match="MLIR backend does not support the 'device_print' op"):
        mytriton.compile(E.print_kernel, {"x_ptr": "*fp32", "n": "i32"}, {"HEX": False, "BLOCK": 4}, backend="mlir")


def test_hints_compile_and_change_nothing(tmp_path):
    k, bad = kernel_from_source(tmp_path / "hint_kernel.py",
                           "import mytriton\nimport mytriton.language as tl\n\n\n@mytriton.jit\ndef k(x_ptr, n):\n"
                           "    tl.assume(n > 0)\n    offs = tl.max_constancy(tl.arange(0, 16), 4)\n"
                           "    tl.store(x_ptr + offs, offs, mask=offs < n)\n\n\n@mytriton.jit\ndef bad(x_ptr, n):\n"
                           "    tl.assume(n)\n", "k", "bad")
    x = np.zeros(16, np.int32)
    k[(1,)](x, 10)
    np.testing.assert_array_equal(x, np.where(np.arange(16) < 10, np.arange(16), 0))
    assert mytriton.compile(k, {"x_ptr": "*i32", "n": "i32"}, {}).asm["cubin"]
    with pytest.raises(mytriton.CompilationError, match="tl.assume takes a boolean condition, got i32") as e:
        mytriton.compile(bad, {"x_ptr": "*i32", "n": "i32"}, {})
    assert "hint_kernel.py:14" in str(e.value)


def nan_inputs():
    x = np.array([1.0, np.nan, -2.0, np.nan, 0.0, -0.0, 3.0, -5.0] * 25, np.float32)
    y = np.array([np.nan, 2.0, -1.0, np.nan, -0.0, 0.0, 4.0, 5.0] * 25, np.float32)
    return x, y


def nan_reference(x, y, mode):
    if mode == "ALL":
        return np.concatenate([np.maximum(x, y), np.minimum(x, y), np.minimum(np.maximum(x, -1), 1)])
    return np.concatenate([np.fmax(x, y), np.fmin(x, y), np.fmin(np.fmax(x, -1), 1)])


@pytest.mark.parametrize("mode", ["NONE", "ALL"])
def test_propagate_nan(mode):
    """NONE: a NaN operand gives the other; ALL: NaN (the interpreter, and CUDA on the emulator)."""
    x, y = nan_inputs()
    out = np.zeros(3 * x.size, np.float32)
    E.nan_kernel[(2,)](x, y, out, x.size, MODE=mode, BLOCK=128)
    want = nan_reference(x, y, mode)
    np.testing.assert_array_equal(out, want)
    if cuda_emulator.available():
        ck = mytriton.compile(E.nan_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                              {"MODE": mode, "BLOCK": 128})
        got = np.zeros_like(out)
        cuda_emulator.run(ck.asm["cu"], [x, y, got, x.size], (2,))
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("m,bins,masked,warps", [(256, 16, False, 4), (1024, 64, True, 4), (32, 128, True, 1)])
def test_histogram_counts_each_value(m, bins, masked, warps):
    """Values outside [0, bins) and masked-off elements are not counted."""
    x = RNG.integers(-3, bins + 3, m).astype(np.int32)
    n = m - 7 if masked else m
    want = np.bincount(x[:n][(x[:n] >= 0) & (x[:n] < bins)], minlength=bins).astype(np.int32)
    out = np.zeros(bins, np.int32)
    E.histogram_kernel[(1,)](x, out, n, M=m, BINS=bins, MASKED=masked)
    np.testing.assert_array_equal(out, want)
    if cuda_emulator.available():
        ck = mytriton.compile(E.histogram_kernel, {"x_ptr": "*i32", "out_ptr": "*i32", "n": "i32"},
                              {"M": m, "BINS": bins, "MASKED": masked}, num_warps=warps)
        got = np.zeros_like(out)
        cuda_emulator.run(ck.asm["cu"], [x, got, n], (1,))
        np.testing.assert_array_equal(got, want)


ASSERT_MESSAGE = 'x must not be negative: %s " */'


def test_device_assert_stops_the_interpreter_at_its_line():
    from mytriton.backends.interpreter import DeviceAssertionError
    x = np.arange(100, dtype=np.int32)
    E.assert_kernel[(2,)](x, 100, BLOCK=64)
    np.testing.assert_array_equal(x, np.arange(1, 101))
    x[70] = -5
    with pytest.raises(DeviceAssertionError) as e:
        E.assert_kernel[(2,)](x, 100, BLOCK=64)
    first = str(e.value).splitlines()[0]
    assert first.endswith(f"device-side assertion failed in program (1, 0, 0) at block index (6,): {ASSERT_MESSAGE}")
    assert "extras.py:" in first and e.value.program_id == (1, 0, 0)
    x[70] = -5                                   # masked off past n: not checked
    E.assert_kernel[(2,)](x, 70, BLOCK=64)


def test_device_assert_is_nothing_without_debug():
    x = np.array([-1, 2], np.int32)
    E.assert_off_kernel[(1,)](x, 2, BLOCK=64)
    np.testing.assert_array_equal(x, [0, 3])
    ck = mytriton.compile(E.assert_off_kernel, {"x_ptr": "*i32", "n": "i32"}, {"BLOCK": 64})
    assert "device_assert" not in ck.asm["ssa"] and "__assertfail(" not in ck.asm["cu"]


def test_device_assert_in_cuda(capfd):
    """__assertfail with the message octal-escaped; on the emulator CUDA's message per failing thread."""
    ck = mytriton.compile(E.assert_kernel, {"x_ptr": "*i32", "n": "i32"}, {"BLOCK": 64}, num_warps=2)
    assert "device_assert" in ck.asm["ssa"] and "__assertfail(" in ck.asm["cu"] and ck.asm["cubin"]
    assert ASSERT_MESSAGE not in ck.asm["cu"]            # (only escaped)
    with pytest.raises(mytriton.CompilationError, match="MLIR backend does not support the 'device_assert' op"):
        mytriton.compile(E.assert_kernel, {"x_ptr": "*i32", "n": "i32"}, {"BLOCK": 64}, backend="mlir")
    if cuda_emulator.available():
        x = np.arange(100, dtype=np.int32)
        x[70] = -5
        cuda_emulator.run(ck.asm["cu"], [x, 100], (2,))
        out = capfd.readouterr().out
        assert f"block: [1,0,0], thread: [6,0,0] Assertion `{ASSERT_MESSAGE}` failed." in out
        assert out.count("Assertion") == 1

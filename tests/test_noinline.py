"""@jit(noinline=True) helpers: device functions of their own in the CUDA backend where they take and
return scalars (traced once per argument types and constexpr values, nested, under run-time
conditions, several results, blocks and shared memory inside), inlined where they take a block
and for the interpreter and the MLIR backend. The interpreter and the generated CUDA (CPU
emulator) against numpy."""
import re

import numpy as np
import pytest

import mytriton
from tests import cuda_emulator
from tests.kernel_files import kernel_from_source
from tests.kernels import noinline as K

SIG = {"X": "*fp32", "Y": "*fp32", "Z": "*fp32"}
EMULATOR = pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")


def _expected(mode: int, x: float, y: float, z: np.ndarray) -> np.ndarray:
    z = z.copy()
    if mode == 0:
        z[0] = (x + 1 if x >= 1 else x + 2) + (y + 2 if y >= 2 else y + 1)
    elif mode == 1:
        z[0] = (x + 1 + 1) + (y * 2 * 2)
    elif mode == 2:
        z = z + np.float32(x) + z.sum(dtype=np.float32)
    else:
        z = z * np.float32(y)
    return z


CASES = [(0, 1.0, 2.0), (0, 0.5, 1.5), (1, 3.0, -2.0), (2, 0.25, 0.0), (3, 0.0, 1.5)]


@pytest.mark.parametrize("emulated", [False, True])
@pytest.mark.parametrize("mode, x, y", CASES)
def test_calls_compute_what_inlining_computes(emulated, mode, x, y):
    z = (np.arange(16, dtype=np.float32) - 4) / 8
    want = _expected(mode, x, y, z)
    args = [np.array([x], np.float32), np.array([y], np.float32), z]
    if emulated:
        if not cuda_emulator.available():
            pytest.skip("needs g++ (C++20) to run CUDA on the CPU")
        ck = mytriton.compile(K.calls, SIG, {"MODE": mode, "N": 16}, num_warps=2)
        cuda_emulator.run(ck.asm["cu"], args, (1,))
    else:
        K.calls[(1,)](*args, MODE=mode, N=16, num_warps=2)          # (numpy arrays: the interpreter)
    np.testing.assert_allclose(z, want, rtol=1e-6)


def test_scalar_helpers_become_device_functions_traced_once_per_signature():
    ck = mytriton.compile(K.calls, SIG, {"MODE": 0, "N": 16})
    fns = ck.function.device_functions
    assert [(s, f.name, [str(p.type) for p in f.params]) for s, f in fns.items()] == [
        ("f0", "add_one", ["f32"]), ("f1", "add_two", ["f32"]), ("f2", "branchy", ["f32", "f32", "ptr<f32>"])]
    ssa = ck.asm["ssa"]
    assert ssa.startswith("func add_one(x: f32) @f0:\n  %0 = add x, 1.0 : f32\n  func_return %0\n")
    assert "call %0, %1, Z {callee=f2, name=branchy, params=(f32, f32, ptr<f32>), results=()}" in ssa
    cu = ck.asm["cu"]
    assert cu.count("__device__ __noinline__ void mt_fn_f") == 6               # declared, then defined
    assert "__device__ __noinline__ void mt_fn_f0(float p_x, float& mt_ret0);" in cu
    assert "mt_fn_f2(v0, v1, p_Z);" in cu
    ptx = ck.asm["ptx"]
    functions = re.findall(r"\.func\s+(?:\([^)]*\)\s*)?(\w+)", ptx)                  # (C++ names: _Z8mt_fn_f0fRf)
    assert [re.search(r"mt_fn_f\d", f).group() for f in functions] == ["mt_fn_f0", "mt_fn_f1", "mt_fn_f2"]
    assert len(re.findall(r"\bcall(?:\.uni)? ", ptx)) == 5                     # (not inlined: 4 calls in f2, 1 in the kernel)
    two = mytriton.compile(K.calls, SIG, {"MODE": 1, "N": 16}).asm["ssa"]
    assert two.count("func two_values") == 1 and two.count("callee=f0") == 2       # (one function, two calls)


def test_one_helper_is_traced_for_each_argument_type_and_constexpr():
    ck = mytriton.compile(K.mixed_types, {"X": "*fp32", "Z": "*fp32"})
    fns = ck.function.device_functions
    assert [[str(p.type) for p in f.params] for f in fns.values()] == [["f32"], ["i32"], []]   # add_one(7): 7 built in
    assert "func add_one() @f2:\n  func_return 8\n" in ck.asm["ssa"]                   # (folded in its own function)


def test_a_helper_taking_a_block_is_inlined():
    ck = mytriton.compile(K.calls, SIG, {"MODE": 3, "N": 16})
    assert not ck.function.device_functions and "mt_fn_" not in ck.asm["cu"] and "call" not in ck.asm["ssa"]


def test_other_backends_inline_every_helper():
    text = mytriton.compile(K.calls, SIG, {"MODE": 0, "N": 16}, backend="mlir").asm["mlir"]
    assert "func.call" not in text and "mt_fn" not in text


@EMULATOR
def test_a_device_functions_shared_memory_follows_its_callers():
    """A kernel with shared memory of its own (a reduction) calls a helper with some: the helper's
    starts at the next KiB after the kernel's, and both compute what the interpreter does."""
    ck = mytriton.compile(K.reduce_then_call, {"Z": "*fp32"}, {"N": 64}, num_warps=2)
    cu = ck.asm["cu"]
    assert "unsigned char* const mt_smem = mt_smem_all + 1024;" in cu and ck.metadata["shared"] == 2048
    z, want = np.arange(64, dtype=np.float32), np.arange(64, dtype=np.float32)
    K.reduce_then_call[(1,)](want, N=64, num_warps=2)
    cuda_emulator.run(cu, [z], (1,))
    np.testing.assert_allclose(z, want, rtol=1e-6)


SOURCE = '''import mytriton
import mytriton.language as tl


@mytriton.jit(noinline=True)
def hélper_{suffix}(mt_ret0, tid, v0, int):
    """a comment that ends in a backslash \\\\
    and a */ and a newline"""
    return mt_ret0 * 2 + tid, v0 - int


@mytriton.jit
def k(Z):
    a, b = hélper_{suffix}(tl.load(Z), 3, tl.load(Z + 1), tl.load(Z + 2))
    tl.store(Z, a)
    tl.store(Z + 1, b)
'''


@EMULATOR
def test_helper_names_and_parameters_that_generated_code_uses_stay_apart(tmp_path):
    """A helper's parameters named like the generated code's own names (its results' out-parameters,
    ``tid``, a value, a C++ keyword) and a non-ASCII helper name: the device function compiles and
    computes what the interpreter does."""
    k = kernel_from_source(tmp_path / "names.py", SOURCE.replace("{suffix}", "x"))
    ck = mytriton.compile(k, {"Z": "*fp32"})
    assert "mt_fn_f0(" in ck.asm["cu"] and ck.asm["cubin"] and ck.asm["cu"].isascii()
    assert not [line for line in ck.asm["cu"].splitlines() if line.endswith("\\")]
    z = np.array([1.5, 10.0, 4.0], np.float32)
    cuda_emulator.run(ck.asm["cu"], [z], (1,))
    want = np.array([1.5, 10.0, 4.0], np.float32)
    k[(1,)](want)
    np.testing.assert_array_equal(z, want)
    np.testing.assert_array_equal(want, [6.0, 6.0, 4.0])

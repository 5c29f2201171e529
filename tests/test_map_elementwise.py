"""tl.map_elementwise: the interpreter and the generated CUDA (CPU emulator) against numpy, for a
function with run-time ifs and early returns, several results, pack=2 (with a ragged last group),
a scalar operand broadcast; the misuse refused."""
import numpy as np
import pytest

import mytriton
from tests import cuda_emulator
from tests.kernel_files import compile_error
from tests.kernels import map_elementwise as M

RNG = np.random.default_rng(4)
SIG = {p: "*i32" for p in ("x_ptr", "y_ptr", "z_ptr", "c_ptr", "d_ptr")} | {"f_ptr": "*fp32", "g_ptr": "*fp32"}


@pytest.mark.parametrize("emulated", [False, True])
@pytest.mark.parametrize("block,warps", [(128, 4), (512, 2), (32, 2)])   # (32 over 64 threads: one element, ragged pairs)
def test_map_elementwise(emulated, block, warps):
    x = RNG.integers(1, 100, block).astype(np.int32)
    y = RNG.integers(1, 100, block).astype(np.int32)
    y[:7] = x[:7]
    f = (RNG.standard_normal(block) * 2).astype(np.float32)
    outs = [np.zeros(block, np.int32) for _ in range(3)] + [np.zeros(block, np.float32)]
    args = [x, y, *outs[:3], f, outs[3]]
    if emulated:
        if not cuda_emulator.available():
            pytest.skip("needs g++ (C++20) to run CUDA on the CPU")
        ck = mytriton.compile(M.mapped, SIG, {"BLOCK": block}, num_warps=warps)
        cuda_emulator.run(ck.asm["cu"], args, (1,))
    else:
        M.mapped[(1,)](*args, BLOCK=block, num_warps=warps)
    np.testing.assert_array_equal(outs[0], np.sign(x - y))
    np.testing.assert_array_equal(outs[1], x // y)
    np.testing.assert_array_equal(outs[2], x % y)
    np.testing.assert_array_equal(outs[3], np.maximum(f * np.float32(2.5), np.float32(-1.0)))


def test_a_scalar_operand_broadcasts(tmp_path):
    from tests.kernel_files import kernel_from_source
    k = kernel_from_source(tmp_path / "s.py", "import mytriton\nimport mytriton.language as tl\n"
                           "from tests.kernels.map_elementwise import clamp_scale\n\n\n@mytriton.jit\n"
                           "def k(f, g):\n    o = tl.arange(0, 64)\n"
                           "    tl.store(g + o, tl.map_elementwise(clamp_scale, tl.load(f + o), -1.0, 2.5))\n")
    f = (RNG.standard_normal(64) * 2).astype(np.float32)
    g = np.zeros(64, np.float32)
    k[(1,)](f, g)
    np.testing.assert_array_equal(g, np.maximum(f * np.float32(2.5), np.float32(-1.0)))


HEAD = ("import mytriton\nimport mytriton.language as tl\n\n\n@mytriton.jit\ndef two(a, b):\n    return a + b\n\n\n"
        "@mytriton.jit\ndef k(x, y):\n    v = tl.load(x + tl.arange(0, 16))\n")


@pytest.mark.parametrize("call,message", [
    ("tl.map_elementwise(two, v)", "scalar_fn two() is called with 1 arguments (pack elements of each operand in turn)"),
    ("tl.map_elementwise(two, v, v, pack=3)", "pack must be a power of 2"),
    ("tl.map_elementwise(print, v, v)", "scalar_fn must be a @jit function"),
])
def test_misuse_is_a_located_error(tmp_path, call, message):
    err = compile_error(tmp_path / "m.py", HEAD + f"    tl.store(y + tl.arange(0, 16), {call})\n", {"x": "*i32", "y": "*i32"})
    assert message in err and "m.py:13:" in err, err


def test_the_mlir_backend_refuses_it():
    with pytest.raises(mytriton.CompilationError, match="MLIR backend does not support the 'map_elementwise' op"):
        mytriton.compile(M.mapped, SIG, {"BLOCK": 128}, backend="mlir")

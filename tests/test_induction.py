"""passes/induction.py: a pointer tile carried around a loop and advanced by a loop-invariant scalar
is carried as an i64 offset. The printed SSA shows it; kernels computing through such loops agree
with numpy in the interpreter (which runs the rewritten SSA) and with the interpreter as emulated
CUDA; lanes that must stay tiles do."""
import numpy as np
import pytest

import mytriton
import mytriton.language as tl
from mytriton.compiler import build_ssa
from mytriton.ir.ssa import walk
from tests import cuda_emulator

RNG = np.random.default_rng(5)


@mytriton.jit
def walk_rows(x_ptr, out_ptr, n_rows, stride, BLOCK: tl.constexpr, USE_FINAL: tl.constexpr):
    """out[0, :] = sum of the rows of x, read through a pointer tile advanced row by row; with
    USE_FINAL, out[1, :] = the row the pointers reach after the loop."""
    ptrs = x_ptr + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for _ in range(0, n_rows):
        acc += tl.load(ptrs)
        ptrs += stride
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)
    if USE_FINAL:
        tl.store(out_ptr + BLOCK + tl.arange(0, BLOCK), tl.load(ptrs))


@mytriton.jit
def keeps_tiles(x_ptr, out_ptr, n, BLOCK: tl.constexpr, CASE: tl.constexpr):
    ptrs = x_ptr + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(0, n):
        acc += tl.load(ptrs)
        if CASE == 0:
            ptrs += i                              # the increment changes in the loop
        elif CASE == 1:
            ptrs += tl.arange(0, BLOCK) % 2        # a tile of increments
        else:
            ptrs += 1
            acc += tl.load(ptrs)                   # the advanced tile is read in the body
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


def carried_types(fn, sig, constexprs):
    loop = next(op for op in walk(build_ssa(fn, sig, constexprs, 4).body) if op.name == "for")
    return [str(a.type) for a in loop.regions[0].args[1:]]


def test_the_pointer_tile_is_carried_as_an_offset():
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_rows": "i32", "stride": "i32"}
    assert carried_types(walk_rows, sig, {"BLOCK": 16, "USE_FINAL": True}) == ["vector<16 x f32>", "i64"]


@pytest.mark.parametrize("case", [0, 1, 2])
def test_tiles_that_must_stay_do(case):
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    assert carried_types(keeps_tiles, sig, {"BLOCK": 16, "CASE": case})[1] == "vector<16 x ptr<f32>>"


@pytest.mark.parametrize("use_final", [False, True])
@pytest.mark.parametrize("n_rows,stride", [(0, 16), (1, 16), (5, 20), (3, 48)])
def test_interpreter_walks_the_rows_as_numpy(use_final, n_rows, stride):
    x = RNG.standard_normal((n_rows + 1) * stride + 16).astype(np.float32)
    out = np.zeros(32, np.float32)
    walk_rows[(1,)](x, out, n_rows, stride, BLOCK=16, USE_FINAL=use_final)
    want = sum((x[r * stride:r * stride + 16] for r in range(n_rows)), np.zeros(16, np.float32))
    np.testing.assert_allclose(out[:16], want, rtol=1e-6)
    if use_final:
        np.testing.assert_array_equal(out[16:], x[n_rows * stride:n_rows * stride + 16])


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
def test_emulated_cuda_agrees_with_the_interpreter():
    from tests.test_cuda_emulated import same_as_interpreter
    x = RNG.standard_normal(6 * 20 + 16).astype(np.float32)
    same_as_interpreter(walk_rows, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_rows": "i32", "stride": "i32"},
                        {"BLOCK": 16, "USE_FINAL": True}, [x, np.zeros(32, np.float32), 5, 20], (1,), 4)

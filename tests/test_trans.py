"""tl.trans / tl.permute / x.T: the interpreter against numpy, the layouts (the operand takes the
result's layout permuted, so no data moves), the generated CUDA run on the CPU emulator against
the interpreter, MLIR accepted by mlir-opt, and the errors Triton gives."""
import re

import numpy as np
import pytest

import mytriton
import mytriton.language as tl
from mytriton.compiler import build_ssa
from mytriton.ir.layout import BlockedLayout, permuted_operand_layout, permuted_registers, to_linear
from mytriton.ir.ssa import walk
from mytriton.passes.layout import assign_layouts, verify_layouts
from tests import cuda_emulator

RNG = np.random.default_rng(3)


@mytriton.jit
def transpose2d(x_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr, FORM: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    if FORM == "trans":
        t = tl.trans(x)
    elif FORM == "T":
        t = x.T
    elif FORM == "permute":
        t = tl.permute(x, 1, 0)
    else:
        t = x.trans((1, 0))
    out = tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :]
    tl.store(y_ptr + out, t + tl.sum(t, axis=1)[:, None])        # and a reduction of the result


@mytriton.jit
def permute3d(x_ptr, y_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + a * B * C + b * C + c)
    t = tl.permute(x, (2, 0, 1))                                  # (C, A, B)
    c2 = tl.arange(0, C)[:, None, None]
    a2 = tl.arange(0, A)[None, :, None]
    b2 = tl.arange(0, B)[None, None, :]
    tl.store(y_ptr + c2 * A * B + a2 * B + b2, t)


@pytest.mark.parametrize("form", ["trans", "T", "permute", "method"])
@pytest.mark.parametrize("m,n", [(8, 16), (32, 4), (1, 8)])
def test_interpreter_transposes_as_numpy(form, m, n):
    x = RNG.standard_normal((m, n)).astype(np.float32)
    y = np.zeros((n, m), np.float32)
    transpose2d[(1,)](x, y, m, n, form)
    np.testing.assert_allclose(y, x.T + x.T.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)


def test_interpreter_permutes_three_dimensions():
    x = RNG.standard_normal((2, 4, 8)).astype(np.float32)
    y = np.zeros((8, 2, 4), np.float32)
    permute3d[(1,)](x, y, 2, 4, 8)
    np.testing.assert_array_equal(y, np.transpose(x, (2, 0, 1)))


@pytest.mark.parametrize("dims", [(1, 0), (2, 0, 1), (0, 2, 1), (1, 2, 0)])
@pytest.mark.parametrize("warps", [1, 4])
def test_permuted_layouts_hold_the_same_elements_in_the_same_threads(dims, warps):
    """For a result in a blocked layout, the operand layout puts each element's source in the same
    thread; permuted_registers says which register."""
    rank = len(dims)
    shape = (8, 16, 4)[:rank]
    result_shape = tuple(shape[d] for d in dims)
    from mytriton.ir.layout import default_layout
    res = default_layout(result_shape, warps)
    src = permuted_operand_layout(res, dims)
    regs = permuted_registers(res, result_shape, src, shape, dims, warps)
    lr, ls = to_linear(res, result_shape, warps), to_linear(src, shape, warps)
    for tid in range(32 * warps):
        for r, i in enumerate(regs):
            c_res = lr.apply(register=r, lane=tid % 32, warp=tid // 32)
            c_src = ls.apply(register=i, lane=tid % 32, warp=tid // 32)
            assert tuple(c_src[d] for d in dims) == tuple(c_res), (tid, r)
    assert permuted_operand_layout(BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0)), (1, 0)) == \
        BlockedLayout((4, 1), (4, 8), (1, 4), (0, 1))


def test_no_data_moves_and_the_verifier_checks_the_operand_layout():
    func = assign_layouts(build_ssa(transpose2d, {"x_ptr": "*fp32", "y_ptr": "*fp32"},
                                    {"M": 32, "N": 16, "FORM": "trans"}, 4))
    trans = next(op for op in walk(func.body) if op.name == "trans")
    assert trans.operands[0].layout == permuted_operand_layout(trans.result.layout, (1, 0))
    assert not any(op.name == "convert_layout" for op in walk(func.body))
    trans.attrs["dims"] = (0, 1)                    # now the operand's layout is not the permuted one
    from mytriton.ir.verifier import VerificationError
    with pytest.raises(VerificationError, match="trans operand has layout"):
        verify_layouts(func)


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("m,n,warps", [(8, 16, 2), (32, 32, 4), (16, 4, 1)])
def test_emulated_cuda_agrees_with_the_interpreter(m, n, warps):
    from tests.test_cuda_emulated import same_as_interpreter
    x = RNG.standard_normal((m, n)).astype(np.float32)
    same_as_interpreter(transpose2d, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"M": m, "N": n, "FORM": "T"},
                        [x, np.zeros((n, m), np.float32)], (1,), warps)
    x3 = RNG.standard_normal((2, 4, 8)).astype(np.float32)
    same_as_interpreter(permute3d, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"A": 2, "B": 4, "C": 8},
                        [x3, np.zeros((8, 2, 4), np.float32)], (1,), warps)


def test_mlir_backend_emits_a_transpose():
    from test_mlir_support import tools_missing_reason
    from mytriton.backends.mlir import tools
    ck = mytriton.compile(transpose2d, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"M": 8, "N": 16, "FORM": "T"},
                          num_warps=2, backend="mlir")
    assert "gpu.func" in ck.asm["mlir"]
    if tools_missing_reason() is None:
        assert tools.verify_many([ck.asm["mlir"]]) == [None]


@mytriton.jit
def _bad_trans(x_ptr, CASE: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    if CASE == 0:
        y = tl.trans(x)
    else:
        y = tl.permute(x[:, None], 0, 0)
    tl.store(x_ptr + tl.arange(0, 16)[:, None], y)


@pytest.mark.parametrize("case,message", [
    (0, "tl.trans invoked with a 0- or 1-dimensional tensor"),
    (1, r"permute dims must be a permutation of 0, 1, ..., n-1, but were \(0, 0\)"),
])
def test_errors_name_the_line(case, message):
    with pytest.raises(mytriton.CompilationError) as e:
        mytriton.compile(_bad_trans, {"x_ptr": "*fp32"}, {"CASE": case})
    assert re.search(message, str(e.value)), str(e.value)
    assert re.search(r"test_trans\.py:\d+:\d+: error", str(e.value))

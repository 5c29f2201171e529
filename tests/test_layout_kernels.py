"""The layout-heavy kernels of tests/kernels/layouts.py (reductions along each axis, slices broadcast
back, replicated tiles, layout conversions) for many tile shapes and warp counts: the CUDA code
compiles under NVRTC, the MLIR verifies with mlir-opt, and the interpreter agrees with numpy (so a
GPU mismatch in test_layout_gpu.py points at the layouts)."""
import re

import numpy as np
import pytest

import mytriton
from mytriton.backends.mlir import tools
from tests.kernels import layouts as L

# (BM, BN, num_warps): 1-row and 1-column-ish tiles, tiles smaller than the block, larger ones
# (8, 8, 4): a column reduction across warps whose shared-memory slot once read `w * 8 + tid & 7`
GRID = [(1, 8, 1), (2, 4, 4), (4, 64, 2), (64, 4, 4), (32, 32, 8), (16, 256, 4), (128, 2, 2), (8, 8, 4)]

# an arithmetic operand next to a bitwise/shift operator without parentheses: C++ would group it
# the other way (`a + tid & 7` is `(a + tid) & 7`)
PRECEDENCE_TRAP = re.compile(r"[-+*/%] \w+ (?:&|\^|\||<<|>>) |(?:&|\^|\||<<|>>) \w+ [-+*/%] ")
SIG = {"reduce_2d": {"x_ptr": "*fp32", "rows_ptr": "*fp32", "cols_ptr": "*fp32", "total_ptr": "*fp32",
                     "M": "i32", "N": "i32"},
       "center_and_scale": {"x_ptr": "*fp32", "out_ptr": "*fp32", "M": "i32", "N": "i32"},
       "column_sums_plus_index": {"x_ptr": "*fp32", "out_ptr": "*fp32", "M": "i32", "N": "i32"}}


def inputs(kernel, bm, bn):
    """Arguments (masked tails: M < BM, N < BN where the tile allows) and the output indices."""
    m, n = max(1, bm - 1), max(1, bn - 1) if bn > 2 else bn
    x = np.random.default_rng(bm * 1000 + bn).standard_normal((m, n)).astype(np.float32)
    if kernel == "reduce_2d":
        return [x, np.zeros(bm, np.float32), np.zeros(bn, np.float32), np.zeros(1, np.float32), m, n], [1, 2, 3]
    if kernel == "center_and_scale":
        return [x, np.zeros((m, n), np.float32), m, n], [1]
    return [x, np.zeros(bm + bn, np.float32), m, n], [1]


def expected(kernel, args, bm, bn):
    x = args[0].astype(np.float64)
    m, n = x.shape
    if kernel == "reduce_2d":
        rows, cols = np.zeros(bm), np.zeros(bn)
        rows[:m] = x.sum(axis=1)
        padded = np.zeros((bm, bn))
        padded[:m, :n] = x
        cols[:n] = padded.max(axis=0)[:n]
        return {1: rows, 2: cols, 3: np.array([x.sum()])}
    if kernel == "center_and_scale":
        y = x - x.sum(axis=1, keepdims=True) / n
        return {1: y * y.sum(axis=0, keepdims=True)}
    out = np.zeros(bm + bn)
    out[:n] = x.sum(axis=0) + np.arange(n)
    out[bn:bn + m] = 2 * np.maximum(x.max(axis=1), 0.0 if n < bn else -np.inf)
    return {1: out}


@pytest.mark.parametrize("kernel", sorted(SIG))
@pytest.mark.parametrize("bm,bn,warps", GRID)
def test_layout_kernels_compile_and_interpret(kernel, bm, bn, warps):
    fn = getattr(L, kernel)
    ck = mytriton.compile(fn, signature=SIG[kernel], constexprs={"BM": bm, "BN": bn}, num_warps=warps)
    assert ".entry" in ck.asm["ptx"]
    body = ck.asm["cu"].split('extern "C"')[1]
    assert not PRECEDENCE_TRAP.search(body), PRECEDENCE_TRAP.search(body).group(0)
    text = mytriton.compile(fn, signature=SIG[kernel], constexprs={"BM": bm, "BN": bn}, num_warps=warps,
                            backend="mlir").asm["mlir"]
    if not tools.missing_tools("mlir-opt"):
        tools.verify(text)
    args, outs = inputs(kernel, bm, bn)
    fn[(1,)](*args, BM=bm, BN=bn, num_warps=warps)
    for i, want in expected(kernel, args, bm, bn).items():
        np.testing.assert_allclose(args[i], want, rtol=1e-5, atol=1e-5)

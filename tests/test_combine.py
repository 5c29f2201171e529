"""passes/combine.py: ``x + tl.dot(a, b)`` becomes ``tl.dot(a, b, x)`` (Triton's CombineDotAdd),
only where the dot's own accumulator is zero, its result is used by that add alone and the types
agree; the interpreter computes the same either way, and attention's
``acc * alpha + tl.dot(p, v)`` accumulates on the tensor cores. A pointer tile advanced by two
scalars is advanced once, by their i64 sum (what a pipelined GEMM's loads ahead look like)."""
import numpy as np
import pytest

import mytriton
import mytriton.language as tl
from mytriton.compiler import build_ssa
from mytriton.ir.ssa import walk

SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"}


@mytriton.jit
def _accumulate(a_ptr, b_ptr, c_ptr, K, CASE: tl.constexpr):
    r = tl.arange(0, 16)
    acc = tl.zeros((16, 16), dtype=tl.float32)
    for k in range(0, K, 16):
        a = tl.load(a_ptr + r[:, None] * K + (k + r)[None, :])
        b = tl.load(b_ptr + (k + r)[:, None] * 16 + r[None, :])
        if CASE == 0:
            acc += tl.dot(a, b)                            # -> dot(a, b, acc)
        elif CASE == 1:
            acc = tl.dot(a, b, tl.full((16, 16), 0.0, tl.float32)) + acc * 0.5   # -> dot(a, b, acc * 0.5)
        elif CASE == 2:
            d = tl.dot(a, b)
            acc += d + d                                   # (the dot's result used twice: kept)
        else:
            acc += tl.dot(a, b, acc)                       # (a non-zero accumulator: kept)
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], acc)


@pytest.mark.parametrize("case,combined", [(0, True), (1, True), (2, False), (3, False)])
def test_x_plus_dot_accumulates_in_the_dot(case, combined):
    fn = build_ssa(_accumulate, SIG, {"CASE": case})
    (loop,) = [op for op in fn.body.ops if op.name == "for"]
    body = loop.regions[0]
    (dot,) = [op for op in walk(body) if op.name == "dot"]
    adds = [op for op in body.ops if op.name == "add" and op.result.type == dot.result.type]
    if combined:
        acc = body.args[1] if case == 0 else next(op.result for op in body.ops if op.name == "mul"
                                                  and op.operands[0] is body.args[1])
        assert dot.operands[2] is acc and not adds and body.ops[-1].operands[0] is dot.result
    else:
        assert adds and body.ops[-1].operands[0] is adds[-1].result


@pytest.mark.parametrize("case", [0, 1, 2, 3])
def test_the_interpreter_computes_the_same(case):
    rng = np.random.default_rng(case)
    k = 48
    a, b = rng.standard_normal((16, k)).astype(np.float16), rng.standard_normal((k, 16)).astype(np.float16)
    c = np.zeros((16, 16), np.float32)
    _accumulate[(1,)](a, b, c, k, CASE=case)
    want = np.zeros((16, 16))
    for s in range(0, k, 16):
        p = a[:, s:s + 16].astype(np.float64) @ b[s:s + 16].astype(np.float64)
        want = [want + p, p + want * 0.5, want + 2 * p, want + (want + p)][case]
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-3)


@mytriton.jit
def _advanced_twice(x_ptr, y_ptr, s, t, BLOCK: tl.constexpr):
    p = x_ptr + tl.arange(0, BLOCK)
    q = (p + s) + t                                        # -> p + (i64(s) + i64(t))
    tl.store(y_ptr + tl.arange(0, BLOCK), tl.load(q) + tl.load(p + s + 2))


def test_a_tile_advanced_by_two_scalars_is_advanced_once():
    fn = build_ssa(_advanced_twice, {"x_ptr": "*fp32", "y_ptr": "*fp32", "s": "i32", "t": "i32"}, {"BLOCK": 32})

    def by_scalar(op):
        return op.name == "addptr" and hasattr(op.operands[0].type, "shape") and not hasattr(op.operands[1].type, "shape")
    advances = [op for op in walk(fn.body) if by_scalar(op)]
    assert advances and not any(isinstance(op.operands[0].owner, type(op)) and by_scalar(op.operands[0].owner)
                                for op in advances)
    sums = [op.operands[1].owner for op in advances]
    assert sum(getattr(o, "name", None) == "add" and str(o.result.type) == "i64" for o in sums) == 2
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(32, np.float32)
    _advanced_twice[(1,)](x, y, 3, 5, BLOCK=32)
    np.testing.assert_array_equal(y, x[8:40] + x[5:37])

"""Software pipelining of loads (passes/prefetch.py): loops with ``num_stages`` issue loads of later
iterations early. The interpreter runs the transformed SSA, so it is checked against numpy over trip
counts of 0, 1, 2 and more, steps of either sign known at compile or at run time, and indices at the
end of the int32 range (where a wrapped index would address memory outside the array: the
interpreter raises on that); the emulated CUDA must agree; loops that must keep their loads do."""
import numpy as np
import pytest

import mytriton
import mytriton.language as tl
from mytriton.compiler import build_ssa
from mytriton.ir.printer import print_function
from mytriton.ir.ssa import walk
from tests import cuda_emulator

RNG = np.random.default_rng(11)


@mytriton.jit
def rows(x_ptr, out_ptr, base, start, stop, step, n_cols, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    """out[r] = 2 x[r] + sum(x[r]) + x[0][:BLOCK] for the rows r = i - base of tl.range(start, stop, step)."""
    cols = tl.arange(0, BLOCK)
    for i in tl.range(start, stop, step, num_stages=STAGES):
        row = i - base
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
        first = tl.load(x_ptr + cols, mask=cols < n_cols)          # the same every iteration
        tl.store(out_ptr + row * n_cols + cols, 2 * x + tl.sum(x, axis=0) + first, mask=cols < n_cols)


@mytriton.jit
def rows_const_step(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    for row in tl.range(n_rows - 1, -1, -2, num_stages=STAGES):     # a constant negative step
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
        tl.store(out_ptr + row * n_cols + cols, x - tl.max(x, axis=0), mask=cols < n_cols)


def expected_rows(x, base, start, stop, step):
    out = np.zeros_like(x)
    for i in range(start, stop, step):
        r = x[i - base]
        out[i - base] = 2 * r + r.sum(dtype=np.float32) + x[0]
    return out


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("start,stop,step", [(0, 7, 1), (1, 7, 3), (6, -1, -2), (0, 0, 1), (5, 6, 1),
                                             (3, 2, 1), (0, 7, -1)])
def test_interpreter_runs_pipelined_loops_as_numpy(stages, start, stop, step):
    x = RNG.standard_normal((7, 10)).astype(np.float32)
    out = np.zeros_like(x)
    rows[(1,)](x, out, 0, start, stop, step, 10, BLOCK=16, STAGES=stages)
    np.testing.assert_allclose(out, expected_rows(x, 0, start, stop, step), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("step", [1, 2, 3, -1, -3])
def test_prefetches_past_the_int32_range_are_masked_off(step):
    """Indices near INT32_MAX (or MIN): the iteration after the last one wraps around in int32."""
    top = 2**31 - 1 if step > 0 else -2**31
    start = top - 4 * step
    x = RNG.standard_normal((4 * abs(step) + 1, 10)).astype(np.float32)
    out = np.zeros_like(x)
    base = min(start, top)
    rows[(1,)](x, out, base, start, top, step, 10, BLOCK=16, STAGES=4)
    np.testing.assert_allclose(out, expected_rows(x, base, start, top, step), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("stages", [2, 4])
def test_constant_negative_step(stages):
    x = RNG.standard_normal((9, 20)).astype(np.float32)
    out = np.zeros_like(x)
    rows_const_step[(1,)](x, out, 9, 20, BLOCK=32, STAGES=stages)
    want = np.zeros_like(x)
    want[8::-2] = x[8::-2] - x[8::-2].max(axis=1, keepdims=True)
    np.testing.assert_allclose(out, want, rtol=1e-6)


ROWS_SIG = {"x_ptr": "*fp32", "out_ptr": "*fp32", "base": "i32", "start": "i32", "stop": "i32", "step": "i32",
            "n_cols": "i32"}


def loop_of(fn, signature, constexprs, num_warps=4):
    func = build_ssa(fn, signature, constexprs, num_warps)
    return next(op for op in walk(func.body) if op.name == "for"), func


def test_the_loop_carries_one_prefetch_per_load():
    for stages in (2, 3, 4):
        loop, func = loop_of(rows, ROWS_SIG, {"BLOCK": 16, "STAGES": stages})
        assert [n for n in loop.attrs["names"] if n.startswith("prefetch")] == ["prefetch0_0", "prefetch1_0"]
        body_loads = [op for op in loop.regions[0].ops if op.name == "load"]
        assert len(body_loads) == 2                       # the loads of iteration i + 1
        assert all(op.name != "load" or op in body_loads for op in walk(loop.regions[0]))
    loop, _ = loop_of(rows, ROWS_SIG, {"BLOCK": 16, "STAGES": 1})
    assert "prefetch0_0" not in loop.attrs["names"]


def test_printed_ssa_of_a_pipelined_loop():
    @mytriton.jit
    def copy_rows(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        cols = tl.arange(0, BLOCK)
        for r in tl.range(0, n, 1, num_stages=2):
            tl.store(y_ptr + r * BLOCK + cols, tl.load(x_ptr + r * BLOCK + cols))
    func = build_ssa(copy_rows, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}, {"BLOCK": 4}, 1)
    # the first row before the loop (if the loop runs); row r + 1 at the top of the body (if it runs,
    # tested in 64 bits); the body uses the carried copy
    assert print_function(func) == """\
%0 = arange {start=0, end=4} : vector<4 x i32>
%1 = cast n {dtype=i64} : i64
%2 = cmp_lt 0, %1 : bool
%3 = addptr x_ptr, 0 : ptr<f32>
%4 = addptr %3, %0 : vector<4 x ptr<f32>>
%5 = load %4, %2, 0.0 : vector<4 x f32>
%19 = for %6 in range(0, n, 1) iter_args(%7 = %5) : vector<4 x f32> {num_stages=2} {
  %8 = add %6, 1 : i32
  %9 = cast %6 {dtype=i64} : i64
  %10 = add %9, 1 : i64
  %11 = cmp_lt %10, %1 : bool
  %12 = mul %8, 4 : i32
  %13 = addptr x_ptr, %12 : ptr<f32>
  %14 = addptr %13, %0 : vector<4 x ptr<f32>>
  %15 = load %14, %11, 0.0 : vector<4 x f32>
  %16 = mul %6, 4 : i32
  %17 = addptr y_ptr, %16 : ptr<f32>
  %18 = addptr %17, %0 : vector<4 x ptr<f32>>
  store %18, %7
  yield %15
}
"""


def test_loops_that_keep_their_loads():
    @mytriton.jit
    def no_hint(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        cols = tl.arange(0, BLOCK)
        for r in tl.range(0, n, 1):
            tl.store(y_ptr + r * BLOCK + cols, tl.load(x_ptr + r * BLOCK + cols))

    @mytriton.jit
    def with_atomic(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        cols = tl.arange(0, BLOCK)
        for r in tl.range(0, n, 1, num_stages=3):
            tl.atomic_add(y_ptr + cols, tl.load(x_ptr + r * BLOCK + cols))
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}
    for fn in (no_hint, with_atomic):
        loop, _ = loop_of(fn, sig, {"BLOCK": 8})
        assert not any(n.startswith("prefetch") for n in loop.attrs["names"]), fn.__name__
        assert sum(op.name == "load" for op in loop.regions[0].ops) == 1, fn.__name__


def test_prefetch_is_bounded_by_registers():
    """Loads whose next-iteration copies would hold more than PREFETCH_BYTES_PER_THREAD stay put."""
    from mytriton.passes.prefetch import PREFETCH_BYTES_PER_THREAD
    assert PREFETCH_BYTES_PER_THREAD == 2 * 4 * 1024 // 128            # two fp32 loads of 1024 on 4 warps
    for block, prefetched in ((256, 2), (1024, 2), (2048, 0), (4096, 0)):
        loop, _ = loop_of(rows, ROWS_SIG, {"BLOCK": block, "STAGES": 4})
        assert sum(n.startswith("prefetch") for n in loop.attrs["names"]) == prefetched, block


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("start,stop,step,stages", [(0, 7, 1, 2), (1, 7, 3, 4), (6, -1, -2, 3), (0, 0, 1, 4),
                                                    (2**31 - 9, 2**31 - 1, 2, 4)])
def test_emulated_cuda_agrees_with_the_interpreter(start, stop, step, stages):
    from tests.test_cuda_emulated import same_as_interpreter
    x = RNG.standard_normal((7, 10)).astype(np.float32)
    base = min(start, 2**31 - 9) if start > 100 else 0
    same_as_interpreter(rows, {**ROWS_SIG, "x_ptr": "*fp32", "out_ptr": "*fp32"},
                        {"BLOCK": 16, "STAGES": stages}, [x, np.zeros_like(x), base, start, stop, step, 10], (1,), 4)


@mytriton.jit
def carried_pointer(x_ptr, y_ptr, n, step, BLOCK: tl.constexpr):
    ptrs = x_ptr + tl.arange(0, BLOCK)
    for r in tl.range(0, n, 1, num_stages=3):
        tl.store(y_ptr + r * BLOCK + tl.arange(0, BLOCK), tl.load(ptrs, mask=tl.arange(0, BLOCK) < 7, other=-1.0))
        ptrs += step


def test_a_pointer_advanced_by_a_loop_invariant_step_is_prefetched():
    """The load through ``ptrs`` (carried, advanced by ``step`` each iteration) is issued one
    iteration ahead through ``ptrs + step``; emulated CUDA agrees with the interpreter."""
    from tests.test_cuda_emulated import same_as_interpreter
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "step": "i32"}
    loop, func = loop_of(carried_pointer, sig, {"BLOCK": 8})
    assert [n for n in loop.attrs["names"] if n.startswith("prefetch")] == ["prefetch0_0"]
    assert print_function(func) == """\
%0 = arange {start=0, end=8} : vector<8 x i32>
%1 = addptr x_ptr, %0 : vector<8 x ptr<f32>>
%2 = cmp_lt %0, 7 : vector<8 x bool>
%3 = cast n {dtype=i64} : i64
%4 = cmp_lt 0, %3 : bool
%5 = and %2, %4 : vector<8 x bool>
%6 = load %1, %5, -1.0 : vector<8 x f32>
%19, %20 = for %7 in range(0, n, 1) iter_args(%8 = %1, %9 = %6) : vector<8 x ptr<f32>>, vector<8 x f32> {num_stages=3} {
  %10 = cast %7 {dtype=i64} : i64
  %11 = add %10, 1 : i64
  %12 = cmp_lt %11, %3 : bool
  %13 = addptr %8, step : vector<8 x ptr<f32>>
  %14 = and %2, %12 : vector<8 x bool>
  %15 = load %13, %14, -1.0 : vector<8 x f32>
  %16 = mul %7, 8 : i32
  %17 = addptr y_ptr, %16 : ptr<f32>
  %18 = addptr %17, %0 : vector<8 x ptr<f32>>
  store %18, %9
  yield %13, %15
}
"""
    if cuda_emulator.available():
        x = RNG.standard_normal(64).astype(np.float32)
        same_as_interpreter(carried_pointer, sig, {"BLOCK": 8}, [x, np.zeros(6 * 8, np.float32), 6, 9], (1,), 1)

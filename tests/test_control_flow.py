"""Run-time control flow (if/elif/else, while, early return, run-time loop steps) on the CPU: the
interpreter against numpy (programs of one batch taking different branches and trip counts), the
printed SSA, folding and DCE of region ops, NVRTC and mlir-opt accepting the generated code."""
import numpy as np
import pytest

import mytriton
import mytriton.language as tl
from mytriton.backends.interpreter import executor
from mytriton.compiler import build_ssa
from mytriton.ir.printer import print_function
from mytriton.ir.ssa import Const, Function, Op, Param, Region, walk
from mytriton.ir.types import F32, I1, I32, PointerType
from mytriton.ir.verifier import verify
from mytriton.passes.dce import dce
from mytriton.passes.fold import fold
from tests.kernels import control as k

RNG = np.random.default_rng(7)
F = "*fp32"


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# --- the interpreter against numpy ---------------------------------------------------------------

def branches_inputs(n=1000, block=128):
    programs = -(-n // block)
    x = randn(n)
    for p in range(programs):            # block sums well clear of ±thr: each branch is taken
        x[p * block:(p + 1) * block] += (5.0, -5.0, 0.0)[p % 3] / 8
    return x, programs


def test_if_elif_else_merges_with_programs_taking_different_branches():
    n, block = 1000, 128
    x, programs = branches_inputs(n, block)
    out, flags = np.zeros_like(x), np.zeros(programs, np.int32)
    k.branches[(programs,)](x, out, flags, n, 4.0, BLOCK=block)
    want_out, want_flags = k.branches_ref(x, n, 4.0, block)
    np.testing.assert_allclose(out, want_out, rtol=1e-6)
    np.testing.assert_array_equal(flags, want_flags)
    assert set(np.abs(flags)) == {1, 2, 3}
    # batched: the if splits the batch by branch, it does not serialize the programs
    assert all(p.batchable for p in k.branches._interpreter_programs.values())


def test_while_with_per_program_trip_counts():
    n, block = 700, 64
    programs = -(-n // block)
    x = randn(n)
    steps = RNG.integers(-1, 6, programs).astype(np.int32)
    out = np.zeros_like(x)
    k.countdown[(programs,)](x, out, steps, n, BLOCK=block)
    np.testing.assert_allclose(out, k.countdown_ref(x, steps, n, block), rtol=1e-5)


def test_early_returns_at_the_top_in_a_helper_and_after_a_store():
    block, programs = 16, 9
    x = np.array([-3, 0.5, 7, -0.25, 2, 9, -1, 1.5, 3], np.float32)
    out = np.full(programs * block, -9.0, np.float32)
    k.early_exit[(programs,)](x, out, 7, -1.0, 2.0, BLOCK=block)
    np.testing.assert_array_equal(out, k.early_exit_ref(x, np.full(programs * block, -9.0, np.float32),
                                                         7, -1.0, 2.0, block))


def test_nested_if_else_return_all_combinations():
    combos = np.array([(a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)], np.int32)
    c1, c2, c3 = (np.ascontiguousarray(combos[:, i]) for i in range(3))
    out = np.full(8, -1, np.int32)
    k.nested_return[(8,)](c1, c2, c3, out)
    np.testing.assert_array_equal(out, k.nested_return_ref(c1, c2, c3, np.full(8, -1, np.int32)))


@pytest.mark.parametrize("programs", [1, 3, 8])
def test_persistent_row_loop_with_a_run_time_step(programs):
    rows, cols = 13, 50
    x = randn(rows, cols)
    y = np.zeros_like(x)
    k.row_softmax[(programs,)](x, y, rows, cols, BLOCK=64)
    np.testing.assert_allclose(y, k.row_softmax_ref(x), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("start,stop,step", [(2, 40, 3), (40, 2, -3), (5, 5, 1), (5, -7, -1), (3, 30, 0),
                                             (0, 17, 17), (10, 0, 2), (-5, 20, 4)])
def test_run_time_steps_of_either_sign(start, stop, step):
    out = np.zeros(3, np.int32)
    k.strides[(1,)](out, start, stop, step, 20)
    np.testing.assert_array_equal(out, k.strides_ref(start, stop, step, 20))


def test_if_and_while_nested_in_a_for_loop():
    n, m, block = 45, 11, 64
    x = randn(m * n)
    out = np.zeros(n, np.float32)
    k.nested[(1,)](x, out, n, m, BLOCK=block)
    np.testing.assert_allclose(out, k.nested_ref(x, n, m, block), rtol=1e-5)


def test_conditional_expressions_and_builtin_min_max():
    x = np.array([1.5, -2.0, 0.25, -0.5, 3.0, 0.0], np.float32)
    out = np.zeros_like(x)
    k.select[(len(x),)](x, out)
    np.testing.assert_array_equal(out, k.select_ref(x))


def test_batching_splits_on_if_and_serializes_varying_loops():
    sigs = {
        "branches": ({"x_ptr": F, "out_ptr": F, "flags_ptr": "*i32", "n": "i32", "thr": "fp32"}, {"BLOCK": 128}),
        "countdown": ({"x_ptr": F, "out_ptr": F, "steps_ptr": "*i32", "n": "i32"}, {"BLOCK": 64}),
        "row_softmax": ({"x_ptr": F, "y_ptr": F, "n_rows": "i32", "n_cols": "i32"}, {"BLOCK": 64}),
    }
    varying = {name: executor.loop_bounds_vary(build_ssa(getattr(k, name), *sig, 4)) for name, sig in sigs.items()}
    # an if on a program-dependent value batches; a while on memory or a for from the program id does not
    assert varying == {"branches": False, "countdown": True, "row_softmax": True}


# --- SSA: printing, verification, folding, DCE ------------------------------------------------------

def hand_if(cond):
    """%r0, %r1 = if cond -> (i32, f32) {add n 1; yield} else {yield n, 2.0}; store p, %r1."""
    p, n = Param("p", PointerType(F32)), Param("n", I32)
    add = Op("add", [n, Const(1, I32)], [I32])
    then = Region(ops=[add, Op("yield", [add.result, Const(1.0, F32)], [])])
    orelse = Region(ops=[Op("yield", [n, Const(2.0, F32)], [])])
    op = Op("if", [cond], [I32, F32], regions=[then, orelse])
    return Function("k", [p, n], Region(ops=[op, Op("store", [p, op.results[1]], [])])), op


def test_if_prints_with_both_regions():
    cmp = Op("cmp_lt", [Param("m", I32), Const(5, I32)], [I1])
    fn, op = hand_if(cmp.result)
    fn.body.ops.insert(0, cmp)
    fn.params.append(cmp.operands[0])
    assert print_function(verify(fn)) == (
        "%0 = cmp_lt m, 5 : bool\n"
        "%2, %3 = if %0 -> (i32, f32) {\n"
        "  %1 = add n, 1 : i32\n"
        "  yield %1, 1.0\n"
        "} else {\n"
        "  yield n, 2.0\n"
        "}\n"
        "store p, %3\n")


def test_while_prints_before_and_after_regions():
    ck = mytriton.compile(k.countdown, signature={"x_ptr": F, "out_ptr": F, "steps_ptr": "*i32", "n": "i32"},
                          constexprs={"BLOCK": 64})
    ssa = ck.asm["ssa"]
    lines = ssa.splitlines()
    head = next(line for line in lines if " = while (" in line)
    assert head.endswith(": (vector<64 x f32>, f32, i32) {"), head
    assert any(line.startswith("  condition %") for line in lines)
    assert any(line.startswith("} do (%") for line in lines)


def test_if_on_a_constant_folds_to_the_taken_branch():
    for value, kept in ((True, "add n, 1"), (False, None)):
        fn, _ = hand_if(Const(value, I1))
        text = print_function(verify(fold(fn)))
        assert "if" not in text
        assert text.endswith("store p, 1.0\n" if value else "store p, 2.0\n")
        assert (kept in text) if kept else ("add" not in text)


def test_dce_drops_dead_if_results_and_dead_ifs():
    cmp = Op("cmp_lt", [Param("m", I32), Const(5, I32)], [I1])
    fn, op = hand_if(cmp.result)
    fn.body.ops.insert(0, cmp)
    fn.params.append(cmp.operands[0])
    verify(dce(fn))
    assert [len(op.results), len(op.regions[0].ops[-1].operands), len(op.regions[1].ops[-1].operands)] == [1, 1, 1]
    assert "add" not in print_function(fn)                   # only the dead lane used it
    fn.body.ops.pop()                                        # the store: now nothing uses the if
    verify(dce(fn))
    assert [o.name for o in fn.body.ops] == []


def test_dce_drops_dead_while_lanes():
    fn = build_ssa(k.dead_lane, {"out": "*i32", "n": "i32"}, {}, 4)
    (loop,) = [op for op in walk(fn.body) if op.name == "while"]
    assert len(loop.results) == 1 and len(loop.operands) == 1 and loop.attrs["names"] == ("i",)


def test_verifier_rejects_malformed_region_ops():
    from mytriton.ir.verifier import VerificationError
    fn, op = hand_if(Const(1, I32))
    with pytest.raises(VerificationError, match="the condition must be a scalar i1, got i32"):
        verify(fn)
    fn, op = hand_if(Const(True, I1))
    op.regions[1].ops[-1].operands.pop()
    with pytest.raises(VerificationError,
                       match="if: 1 values in the terminator of region 1 flow into 2 in the results"):
        verify(fn)
    fn, op = hand_if(Const(True, I1))
    op.regions[1].ops[-1].operands[1] = Const(2, I32)
    with pytest.raises(VerificationError, match="if lane 1 has mismatched types: the terminator of region 1 "
                                                "forwards i32 into the results, of type f32"):
        verify(fn)
    fn, op = hand_if(Const(True, I1))
    op.regions.pop()
    with pytest.raises(VerificationError, match="if must own exactly 2 region"):
        verify(fn)
    fn, op = hand_if(Const(True, I1))
    op.regions[0].ops[-1] = Op("condition", [Const(True, I1), *op.regions[0].ops[-1].operands], [])
    with pytest.raises(VerificationError, match="this region must end with yield, not condition"):
        verify(fn)


# --- the backends accept it ------------------------------------------------------------------------

SIGS = [
    (k.branches, {"x_ptr": F, "out_ptr": F, "flags_ptr": "*i32", "n": "i32", "thr": "fp32"}, {"BLOCK": 128}),
    (k.countdown, {"x_ptr": F, "out_ptr": F, "steps_ptr": "*i32", "n": "i32"}, {"BLOCK": 256}),
    (k.early_exit, {"x_ptr": F, "out_ptr": F, "n_valid": "i32", "lo": "fp32", "hi": "fp32"}, {"BLOCK": 16}),
    (k.nested_return, {"c1_ptr": "*i32", "c2_ptr": "*i32", "c3_ptr": "*i32", "out_ptr": "*i32"}, {}),
    (k.row_softmax, {"x_ptr": F, "y_ptr": F, "n_rows": "i32", "n_cols": "i32"}, {"BLOCK": 1024}),
    (k.strides, {"out_ptr": "*i32", "start": "i32", "stop": "i32", "step": "i32", "n": "i32"}, {}),
    (k.nested, {"x_ptr": F, "out_ptr": F, "n": "i32", "m": "i32"}, {"BLOCK": 64}),
    (k.select, {"x_ptr": F, "out_ptr": F}, {}),
]


@pytest.mark.parametrize("kernel,sig,ce", SIGS, ids=[s[0].__name__ for s in SIGS])
def test_nvrtc_compiles(kernel, sig, ce):
    ck = mytriton.compile(kernel, signature=sig, constexprs=ce)
    assert ck.asm["cubin"][:4] == b"\x7fELF"


def test_cuda_shapes():
    cu = mytriton.compile(*SIGS[5][:1], signature=SIGS[5][1]).asm["cu"]
    assert "#pragma unroll 2" in cu                                   # loop_unroll_factor
    assert "(p_step > 0) ? (" in cu and "p_step < 0 &&" in cu          # a run-time step of either sign
    assert "> -1; " in cu and "+= -3)" in cu                          # a constant negative step
    cu = mytriton.compile(*SIGS[1][:1], signature=SIGS[1][1], constexprs=SIGS[1][2]).asm["cu"]
    # the while condition comes from memory and the body has barriers: the block decides together
    assert "if (!__syncthreads_or(" in cu and "while (true) {" in cu
    cu = mytriton.compile(*SIGS[0][:1], signature=SIGS[0][1], constexprs=SIGS[0][2]).asm["cu"]
    assert "__syncthreads_or" not in cu                               # conditions alike in every thread


def test_mlir_opt_accepts_control_flow():
    from test_mlir_support import tools_missing_reason
    reason = tools_missing_reason()
    if reason:
        pytest.skip(reason)
    from mytriton.backends.mlir import emit_mlir, tools
    texts = [emit_mlir(build_ssa(kernel, sig, ce, 4)) for kernel, sig, ce in SIGS]
    errors = [e for e in tools.verify_many(texts) if e]
    assert not errors, "\n\n".join(errors)
    lowered = tools.run_many(texts, f"--pass-pipeline=builtin.module({tools.NVVM_PIPELINE})", what="lower")
    assert all("scf." not in text for text in lowered)
    joined = "\n".join(texts)
    assert "scf.while" in joined and "scf.condition(" in joined and "scf.if" in joined
    assert "arith.ceildivsi" in joined                                # the trip count of a run-time step


@mytriton.jit
def _logical_ops(c_ptr, out_ptr, FLAG: tl.constexpr):
    pid = tl.program_id(0)
    c = tl.load(c_ptr + pid)
    r = 0
    if FLAG and (1 != pid % 2 and pid % 2 != 1):       # Triton's test_if "if_and_dynamic"
        r = 1
    if c or pid == 3:                                  # an int32 operand means != 0
        r += 10
    tl.store(out_ptr + pid, r)


def test_and_or_on_run_time_values_are_logical_and_or():
    out = np.zeros(6, np.int32)
    _logical_ops[(6,)](np.array([0, 0, 5, 0, 0, 2], np.int32), out, True)
    assert out.tolist() == [1, 0, 11, 10, 1, 10]
    out[:] = 0
    _logical_ops[(6,)](np.array([0, 0, 5, 0, 0, 2], np.int32), out, False)   # constexpr short circuit
    assert out.tolist() == [0, 0, 10, 10, 0, 10]


@pytest.mark.parametrize("lo,hi,step", [(2**35, 2**35 + 20, 3), (15, -16, -2), (-18, -22, -1), (0, 10, 2**33)])
def test_a_loop_over_int64_bounds(lo, hi, step):
    """int64 bounds (or step) make an int64 index, as in Triton: the interpreter, and the CUDA
    backend's loop on the emulator; the MLIR backend refuses it."""
    from tests import cuda_emulator
    from tests.kernels import control as C
    want = [sum(range(lo, hi, step)), len(range(lo, hi, step))]
    out = np.zeros(2, np.int64)
    C.int64_loop[(1,)](out, lo, hi, STEP=step)
    np.testing.assert_array_equal(out, want)
    ck = mytriton.compile(C.int64_loop, {"out": "*i64", "lo": "i64", "hi": "i64"}, {"STEP": step}, num_warps=1)
    assert "for (long long" in ck.asm["cu"] and ck.asm["cubin"]
    if cuda_emulator.available():
        got = np.zeros(2, np.int64)
        cuda_emulator.run(ck.asm["cu"], [got, np.int64(lo), np.int64(hi)], (1,))
        np.testing.assert_array_equal(got, want)
    with pytest.raises(mytriton.CompilationError, match="MLIR backend does not support a loop with an i64 index"):
        mytriton.compile(C.int64_loop, {"out": "*i64", "lo": "i64", "hi": "i64"}, {"STEP": step}, backend="mlir")


@pytest.mark.parametrize("emulated", [False, True])
@pytest.mark.parametrize("start,want", [(41, [41, 4]), (43, [42, 3])])
def test_conditions_on_one_element_blocks(emulated, start, want):
    from tests import cuda_emulator
    from tests.kernels.control import one_element_conditions
    x = np.array([start, 0], np.int32)
    if emulated:
        if not cuda_emulator.available():
            pytest.skip("needs g++ (C++20) to run CUDA on the CPU")
        ck = mytriton.compile(one_element_conditions, {"x_ptr": "*i32"}, {}, num_warps=1)
        cuda_emulator.run(ck.asm["cu"], [x], (1,))
    else:
        one_element_conditions[(1,)](x)
    assert x.tolist() == want


def test_the_loop_variable_may_be_reassigned_in_the_body():
    """As in Python and Triton (`start_n = tl.multiple_of(start_n, BLOCK_N)` in its tutorials): the new
    value holds for the rest of the iteration; the loop still takes every index."""
    x = np.zeros(24, np.float32)
    k.reassigned_loop_variables[(1,)](x, 9, BLOCK=16)
    want = np.zeros(24, np.float32)
    want[0:18:2] += 1
    want[[1, 3, 5]] += 10
    np.testing.assert_array_equal(x, want)


@pytest.mark.parametrize("n", [2, 5])
def test_a_name_both_branches_bind_to_one_earlier_value_is_defined_after_the_if(n):
    """(Regression: both branches' bindings were the same object, which read as "assigned in
    neither", and the name was undefined after the `if`.)"""
    x = RNG.standard_normal(64).astype(np.float32)
    out = np.zeros_like(x)
    k.same_value_both_branches[(1,)](x, out, n, BLOCK=64)
    np.testing.assert_array_equal(out, x + x + 1)
    cu = mytriton.compile(k.same_value_both_branches, {"x_ptr": F, "out_ptr": F, "n": "i32"}, {"BLOCK": 64}).asm["cu"]
    assert "__global__" in cu

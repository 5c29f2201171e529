"""Folding, CSE, DCE and LICM, each on its own and in the pipeline; all region-aware."""
import re

from mytriton.compiler import build_ssa
from mytriton.ir.printer import print_function
from mytriton.ir.ssa import walk
from mytriton.ir.verifier import verify
from mytriton.passes.cse import cse
from mytriton.passes.dce import dce
from mytriton.passes.fold import fold
from mytriton.passes.licm import licm
from tests.kernels import passes as k

P = {"x_ptr": "*fp32", "out": "*fp32", "n": "i32"}


def ops(fn):
    return [op.name for op in walk(fn.body)]


def test_fold_constants_and_identities_keep_types():
    fn = build_ssa(k.foldable, {"out": "*fp32", "n": "i32"}, optimized=False)
    before = print_function(fn)
    assert "mul %1, 1" in before or re.search(r"mul %\d+, 1 :", before)
    fn = verify(dce(fold(fn)))
    text = print_function(fn)
    assert not re.search(r"= mul %\d+, 1 :", text)          # x * 1 → x
    assert not re.search(r"= add %\d+, 0 :", text)          # x + 0 → x
    assert "n * 0" not in text and not re.search(r"= mul n, 0", text)   # n * 0 folds to the constant 0
    assert re.search(r"= add %\d+, 14 : vector<16 x i32>", text)      # 0 + 14 folded, block type kept
    assert "= cast" in text and not re.search(r"mul %\d+, 1\.0", text)


def test_fold_never_changes_type_or_shape():
    fn = build_ssa(k.foldable, {"out": "*fp32", "n": "i32"})
    adds = [op for op in walk(fn.body) if op.name == "add"]
    assert [str(op.result.type) for op in adds] == ["vector<16 x i32>"]     # offs + 14, a block still


def test_cse_merges_duplicates_and_dce_drops_unused_loads():
    fn = build_ssa(k.duplicated, P, optimized=False)
    assert ops(fn).count("load") == 3
    fn = verify(cse(fn))
    assert ops(fn).count("load") == 3            # loads are not merged (they read memory)
    assert ops(fn).count("cmp_lt") == 1 and ops(fn).count("arange") == 1
    fn = verify(dce(fn))
    assert ops(fn).count("load") == 2            # the unused one is gone


def test_licm_hoists_invariants_and_dce_drops_dead_lanes():
    sig = {"x_ptr": "*fp32", "out": "*fp32", "n": "i32", "stride": "i32"}
    fn = build_ssa(k.invariant_in_loop, sig, optimized=False)
    loop = next(op for op in fn.body.ops if op.name == "for")
    assert len(loop.results) == 2
    body_before = [op.name for op in loop.regions[0].ops]
    assert body_before.count("mul") >= 2
    fn = verify(dce(licm(fn)))
    loop = next(op for op in fn.body.ops if op.name == "for")
    body = [op.name for op in loop.regions[0].ops]
    assert "mul" not in body                      # stride*4 and offs*stride left the loop
    assert len(loop.results) == 1                 # the dead carried lane was dropped
    assert body == ["addptr", "load", "add", "yield"]      # only `+ i`, the load and the update stay


def test_dce_removes_loop_without_effects():
    fn = verify(dce(build_ssa(k.dead_loop, P, optimized=False)))
    assert "for" not in ops(fn) and "load" not in ops(fn)


def test_cse_is_region_aware():
    sig = {"x_ptr": "*fp32", "out": "*fp32", "n": "i32", "m": "i32"}
    # without LICM the body's `offs * m` must not replace the one after the loop (scoping)
    fn = verify(cse(build_ssa(k.cse_across_loop, sig, optimized=False)))
    outer_muls = [op for op in fn.body.ops if op.name == "mul"]
    assert len(outer_muls) == 1
    # with the full pipeline the invariant is hoisted and then shared
    fn = build_ssa(k.cse_across_loop, sig)
    assert ops(fn).count("mul") == 1


def test_licm_hoists_invariant_loads_guarded_by_the_trip_count():
    sig = {"x_ptr": "*fp32", "scale_ptr": "*fp32", "out": "*fp32", "n": "i32"}
    fn = verify(licm(build_ssa(k.invariant_load, sig, optimized=False)))
    text = print_function(fn)
    loop_at = text.index(" = for ")
    head, body = text[:loop_at], text[loop_at:]
    assert re.search(r"%(\d+) = cmp_lt 0, n : bool\n%\d+ = load scale_ptr, %\1, 0\.0 : f32", head), head
    assert body.count("= load") == 1


def test_licm_keeps_loads_when_the_loop_stores():
    fn = verify(licm(build_ssa(k.load_after_store, P, optimized=False)))
    loop = next(op for op in fn.body.ops if op.name == "for")
    assert [op.name for op in loop.regions[0].ops][:1] == ["load"]


def test_passes_ask_traits_not_names(monkeypatch):
    """An op the passes have never heard of is handled by its traits alone: one that writes memory
    survives DCE with its result unused and is not merged by CSE with its twin."""
    import dataclasses

    from mytriton.ir import ops as ir_ops
    from mytriton.ir.ssa import Op
    fn = build_ssa(k.invariant_in_loop, {"x_ptr": "*fp32", "out": "*fp32", "n": "i32", "stride": "i32"},
                   optimized=False)
    loop = next(op for op in fn.body.ops if op.name == "for")
    store = next(op for op in walk(fn.body) if op.name == "store")
    monkeypatch.setitem(ir_ops.OPS, "test_effect", dataclasses.replace(
        ir_ops.OPS["load"], name="test_effect", writes_memory=True, mask_operand=None))
    body = loop.regions[0]
    loads = [op for op in body.ops if op.name == "load"]
    effects = []
    for _ in range(2):
        e = Op("test_effect", [loads[0].operands[0]], [loads[0].result.type], loc=loads[0].loc)
        body.ops.insert(body.ops.index(loads[0]), e)
        effects.append(e)
    fn = verify(dce(licm(cse(fn))))
    body = next(op for op in fn.body.ops if op.name == "for").regions[0]
    assert [op for op in body.ops if op.name == "test_effect"] == effects   # kept and not merged
    assert store in list(walk(fn.body))

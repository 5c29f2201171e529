"""Axis analysis and the 16-byte vector accesses it enables (CPU-checkable evidence in the PTX)."""
import re
import sys
from pathlib import Path

import pytest

import mytriton
from mytriton.compiler import build_ssa
from mytriton.ir.ssa import walk
from mytriton.passes.axisinfo import analyze
from tests.kernels import basic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "manifests" / "kernels"))
import softmax  # noqa: E402

ALIGNED = {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": "i32:16"}


def global_accesses(ptx: str) -> set[str]:
    return set(re.findall(r"\b(?:ld|st)\.global[.\w]*", ptx))


def test_aligned_elementwise_uses_16_byte_accesses():
    ptx = mytriton.compile(basic.add_kernel, signature=ALIGNED, constexprs={"BLOCK": 1024}).asm["ptx"]
    acc = global_accesses(ptx)
    assert "ld.global.v4.u32" in acc and "st.global.v4.f32" in acc       # (loads move 32-bit words)


def test_unproven_alignment_is_checked_at_run_time():
    sig = dict(ALIGNED, y_ptr="*fp32")
    cu = mytriton.compile(basic.add_kernel, signature=sig, constexprs={"BLOCK": 1024}).asm["cu"]
    body = cu.split('extern "C"')[1]
    assert body.count("mt_aligned(") == 1        # only y's loads need the check


def test_one_element_per_thread_stays_scalar():
    ptx = mytriton.compile(basic.add_kernel, signature=ALIGNED, constexprs={"BLOCK": 128}).asm["ptx"]
    assert not any(".v4" in a or ".v2" in a for a in global_accesses(ptx))


def test_softmax_reduces_with_warp_shuffles():
    ptx = mytriton.compile(softmax.softmax_kernel, signature={"x": "*fp32:16", "y": "*fp32:16", "n_cols": "i32"},
                           constexprs={"BLOCK": 1024}).asm["ptx"]
    assert "shfl.sync.bfly.b32" in ptx


def test_axis_info_of_offsets_and_pointers():
    fn = build_ssa(basic.add_kernel, ALIGNED, {"BLOCK": 1024})
    info = analyze(fn)
    by_name = {}
    for op in walk(fn.body):
        by_name.setdefault(op.name, []).append(info.get(op.result) if op.results else None)
    (offs,) = [i for i in by_name["add"] if i.contiguity == (1024,)]
    assert offs.divisibility == (1024,)            # pid * 1024 + arange: runs start at multiples of 1024
    assert all(p.contiguity == (1024,) and p.divisibility == (16,) for p in by_name["addptr"])


def test_axis_info_does_not_overclaim_after_multiplication():
    fn = build_ssa(basic.matmul_kernel, {"a": "*fp32:16", "b": "*fp32:16", "c": "*fp32:16", "M": "i32", "N": "i32",
                                         "K": "i32"}, {"BM": 64, "BN": 64})
    info = analyze(fn)
    store = next(op for op in walk(fn.body) if op.name == "store")
    ptr = info.get(store.operands[0])
    assert ptr.contiguity == (1, 64)
    assert ptr.divisibility[1] == 4                # (offs_m * N + offs_n): N is unknown, so only 4-byte aligned


def test_integer_divisibility_promise_proves_alignment():
    """`n_cols: i32:16` (checked by the loader at launch) makes row * n_cols a multiple of 16, so
    the row pointers are provably 16-byte aligned and need no run-time check (and the masks
    `cols < n_cols` are constant over each vector)."""
    def body(n_cols_type):
        cu = mytriton.compile(softmax.softmax_kernel, signature={"x": "*fp32:16", "y": "*fp32:16", "n_cols": n_cols_type},
                              constexprs={"BLOCK": 1024}).asm["cu"]
        return cu.split('extern "C"')[1]
    proven, unproven = body("i32:16"), body("i32")
    assert proven.count("mt_aligned(") == 0 and "} else {" not in proven and "mt_vec<float, 4>" in proven
    assert unproven.count("mt_aligned(") == 2


def test_mask_by_a_multiple_of_the_width_is_one_predicate_per_vector():
    """``offs < n`` with ``n: i32:16`` is constant over each 4-element chunk (the axis analysis
    proves it), so a chunk is one predicated 16-byte access with no per-element fallback; without
    the per-element path stays beside the vector one (a chunk may straddle ``n``)."""
    def compile_cu(n_type):
        return mytriton.compile(basic.add_kernel, signature=dict(ALIGNED, n=n_type),
                                constexprs={"BLOCK": 1024}).asm["cu"].split('extern "C"')[1]
    fn = build_ssa(basic.add_kernel, dict(ALIGNED, n="i32:16"), {"BLOCK": 1024})
    info = analyze(fn)
    masks = [op.result for op in walk(fn.body) if op.name == "cmp_lt"]
    assert masks and all(info.get(m).constancy == (16,) for m in masks)
    proven, unproven = compile_cu("i32:16"), compile_cu("i32")
    assert "} else {" not in proven and re.search(r"if \(v\d+\[r\]\) \{", proven)
    assert proven.count("mt_load_pred<4>(") == 2 and proven.count("reinterpret_cast<") == 1   # the store
    assert unproven.count("} else {") == 3 and "[(r + 3)]" in unproven
    fn = build_ssa(basic.add_kernel, dict(ALIGNED, n="i32:8"), {"BLOCK": 1024})
    assert {analyze(fn).get(op.result).constancy for op in walk(fn.body) if op.name == "cmp_lt"} == {(8,)}


def test_loop_index_and_carried_values_keep_their_divisibility():
    """``for start in range(0, n, BLOCK)``: the index is a multiple of BLOCK, so the column loop's
    masked loads are one predicate per 16-byte vector; a pointer carried around a loop and advanced
    by one element keeps only the element's alignment (the meet over the back edge)."""
    import reductions
    sig = {"x": "*fp32:16", "out": "*fp32:16", "n_cols": "i32:16"}
    fn = build_ssa(reductions.row_sum_kernel, sig, {"BLOCK": 256})
    info = analyze(fn)
    loop = next(op for op in walk(fn.body) if op.regions)
    assert info.get(loop.regions[0].args[0]).divisibility == (256,)
    masks = [op.result for op in walk(loop.regions[0]) if op.name == "cmp_lt"]
    assert masks and all(info.get(m).constancy == (16,) for m in masks)
    body = mytriton.compile(reductions.row_sum_kernel, signature=sig, constexprs={"BLOCK": 256}).asm["cu"]
    loop_text = body.split("for (int v")[1].split("\n  }\n")[0]
    assert "} else {" not in loop_text and "mt_aligned(" not in loop_text
    # in a loop, the masked chunk's address is selected (an ordinary load ptxas overlaps with the
    # next iterations'); the predicated inline-PTX load is for straight-line code (the add above)
    assert "mt_masked_off" in loop_text and "mt_load_pred" not in loop_text

    import matmul
    sig = {"a": "*fp32:16", "b": "*fp32:16", "c": "*fp32:16", "M": "i32:16", "N": "i32:16", "K": "i32:16"}
    fn = build_ssa(matmul.matmul_ptr_kernel, sig, {"BM": 16, "BN": 16}, optimized=False)
    info = analyze(fn)
    loop = next(op for op in walk(fn.body) if op.regions)
    carried = dict(zip(loop.attrs["names"], loop.regions[0].args[1:]))
    a_ptrs, b_ptrs = carried["a_ptrs"], carried["b_ptrs"]
    assert info.get(a_ptrs).divisibility[0] == 4            # a_ptrs += 1: one fp32 element
    assert info.get(b_ptrs).divisibility[1] == 16           # b_ptrs += N (N % 16 == 0): b's 16 bytes stay
    # optimized, they are carried as offsets (passes/induction.py): the tiles rebuilt from them in
    # the loop keep the same divisibility
    fn = build_ssa(matmul.matmul_ptr_kernel, sig, {"BM": 16, "BN": 16})
    info = analyze(fn)
    loop = next(op for op in walk(fn.body) if op.regions)
    carried = dict(zip(loop.attrs["names"], loop.regions[0].args[1:]))
    rebuilt = {name: next(op.result for op in loop.regions[0].ops if op.name == "addptr" and arg in op.operands)
               for name, arg in carried.items() if name.endswith("_ptrs")}
    assert info.get(rebuilt["a_ptrs"]).divisibility[0] == 4 and info.get(rebuilt["b_ptrs"]).divisibility[1] == 16


def test_in_a_loop_unproven_masks_mean_one_predicated_access_per_element():
    """A run-time choice between a vector and a per-element path costs branches that keep ptxas
    from overlapping a loop's iterations: in a loop body, a mask not proven constant over a vector
    (n_cols without its divisibility promise) makes each element its own predicated access."""
    import reductions
    sig = {"x": "*fp32:16", "out": "*fp32:16", "n_cols": "i32"}
    body = mytriton.compile(reductions.row_sum_kernel, signature=sig, constexprs={"BLOCK": 256}).asm["cu"]
    loop_text = body.split('extern "C"')[1].split("for (int v")[1].split("\n  }\n")[0]
    assert "mt_vec" not in loop_text and "} else {" not in loop_text
    assert re.search(r"\(v\d+\[r\] \? \*v\d+\[r\] : 0\.0f\)", loop_text)


def _layout_of_loads(fn, sig, constexprs, warps):
    from mytriton.passes.layout import assign_layouts
    func = assign_layouts(build_ssa(fn, sig, constexprs, warps))
    return [str(op.result.layout) for op in walk(func.body) if op.name == "load"]


def test_loop_accesses_that_cannot_be_vectors_are_coalesced_one_element_a_lane():
    """In a loop, a row access whose mask (n_cols not a multiple of 16) or alignment (a row stride
    not a multiple of 16) is unproven moves one element per access; the row's layout then gives a
    thread elements one lane apart (coalesced warps, as Triton's sizePerThread=[1]) instead of
    runs of 8 halves that each warp access would stride across."""
    from tests.test_row_kernels import rows
    base = {"out_ptr": "*fp16:16", "in_ptr": "*fp16:16", "in_row_stride": "i32:16",
            "out_row_stride": "i32:16", "n_rows": "i32", "n_cols": "i32:16"}
    ce = {"BLOCK": 4096, "STAGES": 1}
    assert _layout_of_loads(rows.softmax_rows_kernel, base, ce, 8) == [    # 16 bytes of fp16
        "#blocked<spt=[8], tpw=[32], wpc=[8], order=[0]>"]
    for unproven in ({"n_cols": "i32"}, {"in_row_stride": "i32"}):
        assert _layout_of_loads(rows.softmax_rows_kernel, {**base, **unproven}, ce, 8) == [
            "#blocked<spt=[1], tpw=[32], wpc=[8], order=[0]>"], unproven


@pytest.mark.parametrize("block,warps,n_cols,want", [
    (4096, 1, "i32", "#blocked<spt=[1], tpw=[32], wpc=[1], order=[0]>"),       # 128 a thread, unproven
    (8192, 2, "i32", "#blocked<spt=[1], tpw=[32], wpc=[2], order=[0]>"),
    (2048, 1, "i32", "#blocked<spt=[4], tpw=[32], wpc=[1], order=[0]>"),       # 64: checked at run time
    (4096, 1, "i32:16", "#blocked<spt=[4], tpw=[32], wpc=[1], order=[0]>"),    # proven: vectors
])
def test_large_shares_outside_loops_without_proven_vectors_are_one_element_a_lane(block, warps, n_cols, want):
    """Outside loops too, a thread holding 128 elements or more of a row moves them as vectors only
    where the analysis proves it (the row softmax with n_cols not a multiple of 16): one element a
    lane, each access predicated, no run-time test and no second path. Smaller shares keep runs of
    16 bytes, tested at run time."""
    sig = {"x": "*fp32:16", "y": "*fp32:16", "n_cols": n_cols}
    assert _layout_of_loads(softmax.softmax_kernel, sig, {"BLOCK": block}, warps) == [want]
    body = mytriton.compile(softmax.softmax_kernel, signature=sig, constexprs={"BLOCK": block},
                            num_warps=warps).asm["cu"].split('extern "C"')[1]
    checked = "spt=[4]" in want and n_cols == "i32"
    assert ("mt_aligned(" in body) == checked and ("} else {" in body) == checked
    assert ("mt_vec<" in body) == ("spt=[4]" in want)


def test_loop_loads_of_rows_and_columns_set_the_outer_product_layout():
    """The seed matmul loads a column and a row of its tile per step: the tile takes the outer-product
    layout, its runs along N as wide as the row's accesses are proven (one element unaligned, 16
    bytes with the promise)."""
    from mytriton.passes.layout import assign_layouts
    for p, i, bm, warps, want in (("*fp32", "i32", 128, 2, "#blocked<spt=[128, 1]"),
                                  ("*fp32:16", "i32:16", 64, 1, "#blocked<spt=[64, 2]")):
        sig = {"a": p, "b": p, "c": p, "M": i, "N": i, "K": i}
        func = assign_layouts(build_ssa(basic.matmul_kernel, sig, {"BM": bm, "BN": 64}, warps))
        store = next(op for op in walk(func.body) if op.name == "store")
        assert str(store.operands[0].layout).startswith(want)


def test_fp32_math_on_fp16_data_takes_the_16_byte_runs_of_the_fp16_accesses():
    """A layer norm on fp16 that sums in fp32: every row value has the fp16 loads' layout (8 halves
    per 16-byte access), so no value is converted and no load moves only 8 bytes."""
    from mytriton.passes.layout import assign_layouts
    from tests.test_row_kernels import rows
    sig = {"x_ptr": "*fp16:16", "y_ptr": "*fp16:16", "w_ptr": "*fp16:16", "b_ptr": "*fp16:16",
           "mean_ptr": "*fp32:16", "rstd_ptr": "*fp32:16", "row_stride": "i32:16", "n_cols": "i32:16", "eps": "fp32"}
    func = assign_layouts(build_ssa(rows.layer_norm_fwd_kernel, sig, {"BLOCK": 4096}, 8))
    layouts = {str(v.layout) for op in walk(func.body) for v in op.results if v.layout is not None}
    assert layouts == {"#blocked<spt=[8], tpw=[32], wpc=[8], order=[0]>"}
    assert not any(op.name == "convert_layout" for op in walk(func.body))


def test_a_promise_of_alignment_replaces_the_run_time_check():
    """tl.multiple_of on pointers the analysis cannot see through (read from memory): with the
    promise, even when its result is dropped, the accesses are 16-byte vectors with no check."""
    from tests.kernels import hints

    def body(hint):
        cu = mytriton.compile(hints.table_copy_kernel, signature={"table": "*i64", "out_ptr": "*fp32:16"},
                              constexprs={"BLOCK": 1024, "HINT": hint}).asm["cu"]
        return cu.split('extern "C"')[1]
    assert body(0).count("mt_aligned(") == 1
    for hint in (1, 2):
        assert body(hint).count("mt_aligned(") == 0 and "mt_vec<float, 4>" in body(hint), hint


def test_a_promise_on_a_loops_carried_pointers_holds_for_every_iteration():
    """tl.multiple_of(a_ptrs, [16, 16]) inside the K loop (tutorial 08's idiom): the initial and
    the advanced pointers get it too, so every pipelined dot operand load is a 16-byte cp.async."""
    from tests.kernels import hints
    sig = {"table": "*i64", "c_ptr": "*fp32:16", "K": "i32:16", "lda": "i32:16"}

    def cu(hint):
        return mytriton.compile(hints.table_dot_kernel, signature=sig, constexprs={"BLOCK": 64, "HINT": hint},
                                target="sm_90", num_warps=4, num_stages=3).asm["cu"]
    assert "mt_cp_async<16>(" not in cu(0)
    promised = cu(1)
    assert promised.count("mt_cp_async<16>(") == 6 and "mt_aligned(" not in promised.split('extern "C"')[1]


def test_a_promise_of_the_wrong_rank_is_an_error():
    from tests.kernels import hints
    with pytest.raises(mytriton.CompilationError, match=r"hints.py:37:22: error: tl.multiple_of takes a positive integer "
                                                        r"or one per dimension \(2\), got \[16\]"):
        mytriton.compile(hints.table_dot_kernel, signature={"table": "*i64", "c_ptr": "*fp32:16", "K": "i32:16", "lda": "i32:16"},
                         constexprs={"BLOCK": 64, "HINT": 3}, target="sm_90")

"""Layouts: every logical element is held by some thread, exactly once unless the tile is smaller
than the threads, and a slice of a layout holds what its parent's threads hold."""
import itertools

import pytest

from mytriton.ir.layout import SliceLayout, default_layout, element_coords, num_regs, to_linear


def holders(layout, shape, num_warps):
    seen = {}
    for t in range(32 * num_warps):
        for r in range(num_regs(layout, shape)):
            seen.setdefault(element_coords(layout, shape, t, r), []).append((t, r))
    return seen


SHAPES = [((1024,), 4), ((16,), 4), ((4, 8), 4), ((64, 64), 4), ((128, 32), 8), ((1, 256), 2), ((32, 1), 4), ((8, 512), 4)]


@pytest.mark.parametrize("shape,warps", SHAPES)
def test_default_layout_covers_each_element(shape, warps):
    lay = default_layout(shape, warps)
    seen = holders(lay, shape, warps)
    assert set(seen) == set(itertools.product(*(range(s) for s in shape)))
    threads = 32 * warps
    total = 1
    for s in shape:
        total *= s
    if total >= threads * max(lay.size_per_thread):
        assert all(len(v) == 1 for v in seen.values()), "no replication when the tile fills the block"


def test_contiguous_chunks_for_vector_access():
    lay = default_layout((1024,), 4)
    assert lay.size_per_thread == (4,)
    assert [element_coords(lay, (1024,), 5, r) for r in range(4)] == [(20,), (21,), (22,), (23,)]
    lay = default_layout((64, 64), 4)
    assert lay.size_per_thread == (1, 4) and lay.order == (1, 0)


@pytest.mark.parametrize("shape,warps", [((64, 64), 4), ((4, 8), 4), ((128, 32), 8)])
def test_slice_holds_parent_coordinates(shape, warps):
    parent = default_layout(shape, warps)
    for dim in (0, 1):
        sl = SliceLayout(dim, parent)
        sub = shape[:dim] + shape[dim + 1:]
        for t in range(32 * warps):
            parent_coords = {element_coords(parent, shape, t, r) for r in range(num_regs(parent, shape))}
            kept = {c[:dim] + c[dim + 1:] for c in parent_coords}
            mine = {element_coords(sl, sub, t, r) for r in range(num_regs(sl, sub))}
            assert mine == kept


def test_size_one_dims_broadcast_without_replication_of_registers():
    parent = default_layout((64, 64), 4)
    assert num_regs(parent, (64, 1)) * num_regs(parent, (1, 64)) == num_regs(parent, (64, 64))
    assert num_regs(parent, (1, 1)) == 1


def _eval_c(expr: str, **env) -> int:
    return eval(expr.replace("/", "//"), {}, env)   # all operands are non-negative ints


@pytest.mark.parametrize("shape,warps,dim", [((64, 64), 4, None), ((4, 8), 4, None), ((1024,), 4, None),
                                             ((16,), 8, None), ((64, 64), 4, 0), ((64, 64), 4, 1),
                                             ((4, 8), 4, 1), ((128, 32), 8, 0)])
def test_cuda_coordinates_match_the_layout(shape, warps, dim):
    """The C++ index arithmetic the backend emits computes exactly ``element_coords`` (and the
    row-major offset a conversion through shared memory uses)."""
    from mytriton.backends.cuda.codegen import CudaEmitter
    from mytriton.ir.ssa import Function, Region, Value
    from mytriton.ir.types import BlockType, I32

    parent = default_layout(shape, warps)
    lay, vshape = (parent, shape) if dim is None else (SliceLayout(dim, parent), shape[:dim] + shape[dim + 1:])
    em = CudaEmitter(Function("k", [], Region(), num_warps=warps))
    v = Value(BlockType(vshape, I32))
    v.layout = lay
    exprs = em.coords(v, "r")
    offset = em.offset(v, "r")
    for t in range(32 * warps):
        for r in range(num_regs(lay, vshape)):
            got = tuple(_eval_c(e, r=r, tid=t) for e in exprs)
            assert got == element_coords(lay, vshape, t, r)
            row_major = 0
            for c, n in zip(got, vshape):
                row_major = row_major * n + c
            assert _eval_c(offset, r=r, tid=t) == row_major


SUM_CASES = [((32, 1), 4, 1), ((1, 64), 4, 0), ((4, 8), 4, 1), ((4, 8), 4, 0), ((64, 64), 4, 1), ((16,), 4, 0),
             ((2, 1), 8, 1), ((1024,), 4, 0), ((8, 2), 2, 1), ((32, 64), 4, None), ((4, 8), 8, None)]


@pytest.mark.parametrize("shape,warps,axis", SUM_CASES)
def test_reduction_combines_each_element_once(shape, warps, axis):
    """What both backends combine for a result register q of thread t — the source registers that
    map to q, then the lanes and warps whose bases move along the reduced axes — is exactly the
    reduced line of q's element, each element once, so a sum counts no copy twice (size-1 and
    replicated dimensions included: a size-1 axis held by four warps was once summed four times)."""
    from mytriton.ir.indexing import register_expr

    lay = default_layout(shape, warps)
    ll = to_linear(lay, shape)
    axes = list(range(len(shape))) if axis is None else [axis]
    if axis is None:
        rl, q_of = None, lambda s: 0
    else:
        rl = to_linear(SliceLayout(axis, lay), shape[:axis] + shape[axis + 1:], warps)
        e = register_expr(ll, ll.register_map(rl, lambda c: c[:axis] + c[axis + 1:]))
        q_of = lambda s: e.evaluate(reg=s)                                          # noqa: E731
    lanes = [1 << b for b in ll.bits_along("lane", axes)]
    warp_bits = [1 << b for b in ll.bits_along("warp", axes)]
    copies = ll.free_masks()["register"]
    group = [0]
    for m in lanes + [w << 5 for w in warp_bits]:
        group += [g ^ m for g in group]
    for t in range(0, 32 * warps, 5):                  # a sample of the threads keeps this quick
        for q in range(rl.num_regs if rl else 1):
            got = [ll.apply(register=s, lane=u % 32, warp=u // 32)
                   for u in (t ^ g for g in group) for s in range(ll.num_regs) if not s & copies and q_of(s) == q]
            if axis is None:
                want = sorted(itertools.product(*(range(n) for n in shape)))
            else:
                kept = rl.apply(register=q, lane=t % 32, warp=t // 32)
                want = sorted(kept[:axis] + (a,) + kept[axis:] for a in range(shape[axis]))
            assert sorted(got) == want, (t, q)


def test_layout_verifier_catches_mismatched_operands():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "manifests" / "kernels"))
    import matmul
    from mytriton.compiler import build_ssa
    from mytriton.ir.verifier import VerificationError
    from mytriton.passes.layout import assign_layouts, verify_layouts
    from mytriton.ir.ssa import walk

    fn = build_ssa(matmul.matmul_kernel, {"a": "*fp32", "b": "*fp32", "c": "*fp32", "M": "i32", "N": "i32",
                                          "K": "i32"}, {"BM": 32, "BN": 32})
    verify_layouts(assign_layouts(fn))                  # the pass's own output is consistent
    mul = next(op for op in walk(fn.body) if op.name == "mul" and getattr(op.result.type, "shape", ()) == (32, 32))
    mul.result.layout = default_layout((32, 32), 8)     # break it
    with pytest.raises(VerificationError, match="elementwise operand: layout"):
        verify_layouts(fn)


@pytest.mark.parametrize("shape,warps", [((64, 64), 4), ((4, 8), 4), ((128, 32), 8), ((2, 512), 2)])
def test_cuda_operand_registers_of_broadcasts(shape, warps):
    """The register the C++ reads from a broadcast operand (size 1 along a dimension) holds the
    element the result register needs, with that dimension's coordinate 0."""
    from mytriton.backends.cuda.codegen import CudaEmitter
    from mytriton.ir.ssa import Function, Region, Value
    from mytriton.ir.types import BlockType, I32

    lay = default_layout(shape, warps)
    em = CudaEmitter(Function("k", [], Region(), num_warps=warps))
    res = Value(BlockType(shape, I32))
    res.layout = lay
    for small in [(1, shape[1]), (shape[0], 1), (1, 1)]:
        opnd = Value(BlockType(small, I32))
        opnd.layout = lay
        index = em.operand_index(res, opnd, "r")
        for t in range(0, 32 * warps, 3):
            for r in range(num_regs(lay, shape)):
                want = tuple(0 if n == 1 else c for c, n in zip(element_coords(lay, shape, t, r), small))
                assert element_coords(lay, small, t, _eval_c(index, r=r)) == want


@pytest.mark.parametrize("shape,warps,eb,want", [
    ((32, 128), 4, 4, ((4, 1), (1, 32), (4, 1))),     # tf32 B of a 128-wide tile: runs of 4 along K
    ((64, 128), 4, 1, ((16, 1), (1, 32), (4, 1))),    # int8: runs of 16
    ((16, 8), 4, 4, ((4, 1), (4, 8), (1, 4))),        # narrow N: lanes fill N, then K; warps left over repeat
])
def test_k_run_layout_holds_16_bytes_along_k_with_lanes_along_n(shape, warps, eb, want):
    from mytriton.passes.layout import k_run_layout
    lay = k_run_layout(shape, warps, eb)
    assert (lay.size_per_thread, lay.threads_per_warp, lay.warps_per_cta, lay.order) == (*want, (0, 1))
    lin = lay.to_linear(shape, warps)
    # registers 0..3 (or 0..15) step along K; lanes cover N (32 of them where N allows)
    lanes = lin.bases_of("lane")
    assert lin.bases_of("register")[0] == (1, 0)
    assert [b for b in lanes if b[1]] == [(0, 1 << i) for i in range(min(5, (shape[1] - 1).bit_length()))]


def test_a_conversion_sinks_through_pure_ops_only():
    """A conversion of a pointer tile whose one user is a load stays where it is: the load keeps the
    layout chosen for its accesses (8-byte pointers in, 4-byte values out would otherwise count as
    narrowing, and the load would move to the pointers' old layout)."""
    import mytriton
    import mytriton.language as tl
    from mytriton.compiler import build_ssa
    from mytriton.ir.ssa import Op, walk
    from mytriton.passes.layout import assign_layouts, sink_conversions

    @mytriton.jit
    def copy(x_ptr, y_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
        tl.store(y_ptr + offs, tl.load(x_ptr + offs))

    fn = assign_layouts(build_ssa(copy, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"N": 32}))
    load = next(op for op in walk(fn.body) if op.name == "load")
    ptr = load.operands[0]
    conv = Op("convert_layout", [ptr], [ptr.type])
    conv.result.layout = ptr.layout
    ptr.layout = default_layout((32, 32), 4, 4, order=(0, 1))        # the pointers came column-major
    fn.body.ops.insert(fn.body.ops.index(load), conv)
    load.operands[0] = conv.result
    assert sink_conversions(fn) == 0 and load.operands[0] is conv.result
    assert load.result.layout == conv.result.layout


def _matmul_layouts(bm, bn, warps, aligned):
    """The seed's outer-product matmul (manifests/kernels/matmul.py) through layout assignment: the
    accumulator's layout, the column load's and the conversions that follow it."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "manifests" / "kernels"))
    import matmul
    from mytriton.compiler import build_ssa
    from mytriton.ir.ssa import walk
    from mytriton.passes.layout import assign_layouts
    p, i = ("*fp32:16", "i32:16") if aligned else ("*fp32", "i32")
    fn = assign_layouts(build_ssa(matmul.matmul_kernel, {"a": p, "b": p, "c": p, "M": i, "N": i, "K": i},
                                  {"BM": bm, "BN": bn}, num_warps=warps))
    loop = next(op for op in walk(fn.body) if op.name == "for")
    body = loop.regions[0].ops
    column = next(op for op in body if op.name == "load" and op.result.type.shape == (bm, 1))
    convs = [op for op in body if op.name == "convert_layout"]
    acc = loop.results[0].layout
    return acc, column, convs


@pytest.mark.parametrize("bm,bn,warps,aligned,want", [
    # lanes then warps along N; each thread's rows consecutive; runs along N of the row's proven width
    (128, 128, 4, False, ((128, 1), (1, 32), (1, 4))),
    (128, 128, 2, True, ((128, 2), (1, 32), (1, 2))),
    (128, 64, 2, False, ((128, 1), (1, 32), (1, 2))),
    (64, 64, 1, True, ((64, 2), (1, 32), (1, 1))),
    (32, 128, 1, True, ((32, 4), (1, 32), (1, 1))),
])
def test_outer_product_tile_stages_its_column(bm, bn, warps, aligned, want):
    """An accumulator of outer products of a loaded column and row takes the outer-product layout;
    its column is loaded once an element, one thread each, and reaches the tile's threads through a
    conversion the CUDA backend gives buffers of its own (``staged``)."""
    from mytriton.ir.layout import outer_product_layout
    acc, column, convs = _matmul_layouts(bm, bn, warps, aligned)
    assert (acc.size_per_thread, acc.threads_per_warp, acc.warps_per_cta, acc.order) == (*want, (1, 0))
    assert acc == outer_product_layout((bm, bn), warps, 4 if aligned else 1)
    assert num_regs(column.result.layout, (bm, 1)) == max(1, bm // (32 * warps))
    staged = [op for op in convs if op.attrs.get("staged")]
    assert len(staged) == 1 and staged[0].operands[0] is column.result and staged[0].result.layout == acc


@pytest.mark.parametrize("bm,bn,warps", [(16, 64, 8), (32, 32, 8), (128, 128, 8), (128, 32, 1), (32, 32, 2),
                                         (128, 16, 1), (64, 16, 2)])
def test_small_outer_product_shares_keep_the_default_layout(bm, bn, warps):
    """Where a thread's share is small (under 128 elements; under 256 where the outer-product layout
    would lose the row's 16-byte runs: 128x32 on one warp) and the row's runs are proven (aligned
    here; shares of 4 products or fewer take a lane each in tiles up to 512 elements), the tile keeps
    the default layout and loads its column directly: nothing is staged
    (passes/layout._outer_product_pays). Rows of 16 with 16 products a thread or more (128x16 on one
    warp) keep it too (passes/layout._half_warp_row_pays)."""
    acc, column, convs = _matmul_layouts(bm, bn, warps, True)
    assert acc == default_layout((bm, bn), warps, 4)
    assert column.result.layout == acc and not any(op.attrs.get("staged") for op in convs)


@pytest.mark.parametrize("bm,bn,aligned,staged", [
    (32, 64, False, True), (16, 128, False, True),      # a row of no proven width, two columns a lane
    (32, 64, True, False),                              # runs of 4 proven: the default's 16-byte loads
    (64, 32, False, False), (128, 16, False, False),    # a column a lane
    (16, 64, False, False),                             # 32 products a thread
])
def test_one_warp_stages_its_column_where_a_lane_holds_two_unproven_columns(bm, bn, aligned, staged):
    """On one warp, outer-product tiles of 64 products a thread take the outer-product layout
    (the column staged) where the row has no proven width and each lane holds two of its columns
    or more; otherwise they keep the default (passes/layout._outer_product_pays)."""
    from mytriton.ir.layout import outer_product_layout
    acc, column, convs = _matmul_layouts(bm, bn, 1, aligned)
    if staged:
        assert acc == outer_product_layout((bm, bn), 1, 1)
        assert [op.operands[0] for op in convs if op.attrs.get("staged")] == [column.result]
    else:
        assert acc != outer_product_layout((bm, bn), 1, 4 if aligned else 1)
        assert not any(op.attrs.get("staged") for op in convs)


@pytest.mark.parametrize("bm,bn,warps,aligned,want", [
    # one element a thread along N, 16 lanes along N, 2 lanes and the warps along M
    (16, 16, 2, True, ((1, 1), (2, 16), (2, 1))),
    (32, 16, 4, False, ((1, 1), (2, 16), (4, 1))),
    (64, 16, 8, True, ((1, 1), (2, 16), (8, 1))),
    (128, 16, 8, True, ((1, 1), (2, 16), (8, 1))),
    (16, 16, 1, False, ((1, 1), (2, 16), (1, 1))),
])
def test_outer_product_rows_of_16_take_half_warp_rows(bm, bn, warps, aligned, want):
    """An outer-product tile with a row of 16 that keeps its column in registers reads the row with
    a half-warp and the column two rows a warp (passes/layout._half_warp_row_pays), where the
    default would spread the row over 4 lanes in 16-byte runs; nothing is staged."""
    acc, column, convs = _matmul_layouts(bm, bn, warps, aligned)
    assert default_layout((bm, bn), warps, 4).threads_per_warp == (8, 4)
    assert (acc.size_per_thread, acc.threads_per_warp, acc.warps_per_cta, acc.order) == (*want, (1, 0))
    assert column.result.layout == acc and not any(op.attrs.get("staged") for op in convs)


@pytest.mark.parametrize("bm,bn,warps,aligned,want", [
    # rows of no proven width, at most 4 products a thread: one element a lane along N, as Triton's
    (16, 64, 8, False, ((1, 1), (1, 32), (8, 1))),
    (16, 32, 4, False, ((1, 1), (1, 32), (4, 1))),
    (32, 32, 8, False, ((1, 1), (1, 32), (8, 1))),
    # runs of 2 to 4 proven, tiles of at most 512 elements: the same
    (16, 16, 4, True, ((1, 1), (2, 16), (4, 1))),
    (32, 16, 8, True, ((1, 1), (2, 16), (8, 1))),
    (16, 32, 4, True, ((1, 1), (1, 32), (4, 1))),
    (16, 32, 8, True, ((1, 1), (1, 32), (8, 1))),
    (16, 64, 8, True, None),                # runs of 4 proven, 1024 elements: the default (16-byte row loads)
    (32, 32, 8, True, None),
])
def test_small_outer_product_shares_take_a_lane_each(bm, bn, warps, aligned, want):
    """An outer-product tile of at most 4 products a thread whose row has no proven width, or of at
    most 512 elements, holds one element a lane along the row (``ir/layout.half_warp_row_layout``;
    passes/layout._lane_row_pays); larger tiles with the row's 16-byte runs proven keep the default.
    Nothing is staged either way."""
    acc, column, convs = _matmul_layouts(bm, bn, warps, aligned)
    if want is None:
        assert acc == default_layout((bm, bn), warps, 4)
    else:
        assert (acc.size_per_thread, acc.threads_per_warp, acc.warps_per_cta, acc.order) == (*want, (1, 0))
    assert column.result.layout == acc and not any(op.attrs.get("staged") for op in convs)

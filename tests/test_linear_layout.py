"""Linear layouts (ir/linear.py) and their index expressions (ir/indexing.py): the conversions from
blocked and slice layouts agree with an independent reference (the mixed-radix formula the backends
used to emit), every element is held, exactly one copy of each owns it, and the rendered
expressions compute what the layout says."""
import itertools
import random
from math import prod

import pytest

from mytriton.ir.indexing import (REG, TID, IndexExpr, bit_expr, coordinate_exprs, offset_expr, owner_masks,
                                  register_expr, thread_bits_expr)
from mytriton.ir.layout import BlockedLayout, SliceLayout, default_layout, element_coords, num_regs, to_linear
from mytriton.ir.linear import LinearLayout, row_major


# --- the reference: per dimension, thread position t and register digit k ---------------------------

def _strides(extents, order):
    strides, s = [0] * len(extents), 1
    for d in order:
        strides[d] = s
        s *= extents[d]
    return strides


def reference_coords(layout, shape, thread, reg):
    """(coords, regs per thread) by the mixed-radix formula: register digits per dimension (along
    the layout's order, fastest first), coordinate = (k // spt) * coverage + t * spt + k % spt, wrapped around the extent."""
    base, dims = layout, None
    dropped = []
    while isinstance(base, SliceLayout):
        dropped.append(base.dim)
        base = base.parent
    dims = list(range(base.rank))
    for d in reversed(dropped):
        dims = [x for i, x in enumerate(dims) if i != d]
    lane_s = _strides(base.threads_per_warp, base.order)
    warp_s = _strides(base.warps_per_cta, base.order)
    lane, warp = thread % 32, thread // 32
    maps = []
    for size, d in zip(shape, dims):
        spt, tpw, wpc = base.size_per_thread[d], base.threads_per_warp[d], base.warps_per_cta[d]
        cover = spt * tpw * wpc
        regs = 1 if size == 1 else size if size < spt else spt * max(1, -(-size // cover))
        t = ((warp // warp_s[d]) % wpc) * tpw + (lane // lane_s[d]) % tpw
        maps.append((size, spt, cover, regs, t))
    digits, rest = [0] * len(maps), reg
    for i in [dims.index(d) for d in base.order if d in dims]:       # the layout's fastest dimension first
        digits[i] = rest % maps[i][3]
        rest //= maps[i][3]
    coords = tuple(((k // spt) * cover + t * spt + k % spt) % size for (size, spt, cover, _, t), k in zip(maps, digits))
    total = 1
    for m in maps:
        total *= m[3]
    return coords, total


def random_blocked(rng, rank, warps):
    def split(total):
        parts = [1] * rank
        for _ in range(total.bit_length() - 1):
            parts[rng.randrange(rank)] *= 2
        return tuple(parts)
    spt = tuple(rng.choice([1, 1, 2, 4, 8]) for _ in range(rank))
    order = tuple(rng.sample(range(rank), rank))
    return BlockedLayout(spt, split(32), split(warps), order)


def cases(n, seed=1):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        rank = rng.choice([1, 2, 2, 3])
        warps = rng.choice([1, 2, 4, 8])
        lay = random_blocked(rng, rank, warps) if rng.random() < 0.6 else \
            default_layout(tuple(rng.choice([1, 2, 16, 64, 256]) for _ in range(rank)), warps)
        shape = tuple(rng.choice([1, 2, 4, 8, 16, 32, 64, 128]) for _ in range(rank))
        while prod(shape) > 512:                  # keep the brute force quick
            shape = tuple(max(1, s // 2) for s in shape)
        out.append((lay, shape, warps))
        if rank > 1:
            d = rng.randrange(rank)
            out.append((SliceLayout(d, lay), shape[:d] + shape[d + 1:], warps))
    return out


CASES = cases(40)


@pytest.mark.parametrize("i", range(0, len(CASES), 10))
def test_linear_layout_matches_the_reference_formula(i):
    for lay, shape, warps in CASES[i:i + 10]:
        ll = to_linear(lay, shape)
        _, total = reference_coords(lay, shape, 0, 0)
        assert ll.num_regs == total == num_regs(lay, shape)
        for t in range(32 * warps):
            for r in range(total):
                assert ll.apply(register=r, lane=t % 32, warp=t // 32) == reference_coords(lay, shape, t, r)[0], \
                    (str(lay), shape, t, r)
                assert element_coords(lay, shape, t, r) == reference_coords(lay, shape, t, r)[0]


@pytest.mark.parametrize("i", range(0, len(CASES), 10))
def test_every_element_is_held_and_owned_once(i):
    for lay, shape, warps in CASES[i:i + 10]:
        ll = to_linear(lay, shape)
        assert ll.is_surjective
        reg_mask, tid_mask = owner_masks(ll)
        holders, owners = {}, {}
        for t in range(32 * warps):
            for r in range(ll.num_regs):
                c = ll.apply(register=r, lane=t % 32, warp=t // 32)
                holders.setdefault(c, []).append((t, r))
                if r & reg_mask == 0 and t & tid_mask == 0:
                    owners.setdefault(c, []).append((t, r))
        every = set(itertools.product(*(range(s) for s in shape)))
        assert set(holders) == every
        assert all(len(v) == 1 for v in owners.values()) and set(owners) == every
        for c, [(t, r)] in owners.items():
            assert ll.holder(c) == {"register": r, "lane": t % 32, "warp": t // 32}
        # copies exist exactly where some basis replicates
        if all(len(v) == 1 for v in holders.values()):
            assert reg_mask == tid_mask == 0


def test_replication_is_zero_bases():
    lay = default_layout((64, 64), 4)           # the 64x64 pattern on a 4x4 tile: lanes and warps repeat
    assert str(lay) == "#blocked<spt=[1, 4], tpw=[2, 16], wpc=[4, 1], order=[1, 0]>"
    ll = to_linear(lay, (4, 4))
    assert ll.bases_of("register") == ((0, 1), (0, 2))
    assert ll.bases_of("lane") == ((0, 0),) * 4 + ((1, 0),)
    assert ll.bases_of("warp") == ((2, 0), (0, 0))
    assert ll.free_masks() == {"register": 0, "lane": 0b1111, "warp": 0b10}
    assert owner_masks(ll) == (0, 0b1001111)


@pytest.mark.parametrize("i", range(0, len(CASES), 10))
def test_index_expressions_compute_the_layout(i):
    for lay, shape, warps in CASES[i:i + 10]:
        ll = to_linear(lay, shape)
        sym = coordinate_exprs(ll)
        off_sym = offset_expr(ll)
        strides = [1] * len(shape)
        for d in reversed(range(len(shape) - 1)):
            strides[d] = strides[d + 1] * shape[d + 1]
        for r in range(ll.num_regs):
            const = coordinate_exprs(ll, r)
            assert all(not e.vars() - {TID} for e in const)      # a known register folds away
            for t in range(r % 3, 32 * warps, 3):
                want = ll.apply(register=r, lane=t % 32, warp=t // 32)
                assert tuple(e.evaluate(reg=r, tid=t) for e in sym) == want
                assert tuple(e.evaluate(tid=t) for e in const) == want
                assert off_sym.evaluate(reg=r, tid=t) == sum(c * s for c, s in zip(want, strides))


def test_blocked_expressions_are_sums_of_disjoint_fields():
    for lay, shape, warps in CASES:
        ll = to_linear(lay, shape)
        assert not any(e.overlap for e in coordinate_exprs(ll) + [offset_expr(ll)])


@pytest.mark.parametrize("i", range(0, len(CASES), 10))
def test_register_map_for_broadcasts_and_reductions(i):
    for lay, shape, warps in CASES[i:i + 10]:
        ll = to_linear(lay, shape)
        for d in range(len(shape)):
            # broadcast: the operand has size 1 along d
            small = shape[:d] + (1,) + shape[d + 1:]
            op = to_linear(lay, small)
            zero_d = lambda c, d=d: c[:d] + (0,) + c[d + 1:]                       # noqa: E731
            e = register_expr(ll, ll.register_map(op, zero_d))
            # reduction: the result is the slice along d
            res = to_linear(SliceLayout(d, lay), shape[:d] + shape[d + 1:], warps)
            drop_d = lambda c, d=d: c[:d] + c[d + 1:]                                # noqa: E731
            q = register_expr(ll, ll.register_map(res, drop_d))
            for t in range(d, 32 * warps, 7):
                for r in range(ll.num_regs):
                    full = ll.apply(register=r, lane=t % 32, warp=t // 32)
                    assert op.apply(register=e.evaluate(reg=r), lane=t % 32, warp=t // 32) == zero_d(full)
                    assert res.apply(register=q.evaluate(reg=r), lane=t % 32, warp=t // 32) == drop_d(full)


def test_register_map_refuses_layouts_that_place_elements_elsewhere():
    a = to_linear(default_layout((64, 64), 4), (64, 64))
    b = to_linear(default_layout((16, 256), 4), (64, 64))
    with pytest.raises(ValueError, match="bases differ"):
        a.register_map(b, lambda c: c)


def test_reduction_bits():
    ll = to_linear(default_layout((64, 64), 4), (64, 64))
    # spt (1, 4), tpw (2, 16), wpc (4, 1), order (1, 0): lanes 0-3 along dim1, 4 along dim0
    assert ll.bits_along("lane", [1]) == [0, 1, 2, 3] and ll.bits_along("lane", [0]) == [4]
    assert ll.bits_along("warp", [1]) == [] and ll.bits_along("warp", [0]) == [0, 1]
    e = thread_bits_expr(ll, [("warp", 0), ("warp", 1)])
    assert [e.evaluate(tid=t) for t in (0, 31, 32, 64, 127)] == [0, 0, 1, 2, 3]
    mixed = LinearLayout.make({"register": [], "lane": [(1, 1)], "warp": []}, (2, 2))
    with pytest.raises(ValueError, match="another dimension"):
        mixed.bits_along("lane", [0])


def test_contiguous_registers_for_vector_access():
    ll = to_linear(default_layout((1024,), 4), (1024,))
    assert ll.contiguous_registers(0) == 4
    ll = to_linear(default_layout((64, 64), 4), (64, 64))
    assert ll.contiguous_registers(1) == 4 and ll.contiguous_registers(0) == 1
    ll = to_linear(SliceLayout(1, default_layout((64, 64), 4)), (64,))
    assert ll.contiguous_registers(0) == 1


def test_holder_invert_and_compose():
    ll = to_linear(default_layout((8, 8), 1), (8, 8))
    inv = ll.invert()
    assert inv.in_dims == ("dim0", "dim1") and inv.out_dims == ("register", "lane", "warp")
    for c in itertools.product(range(8), range(8)):
        reg, lane, warp = inv.apply(dim0=c[0], dim1=c[1])
        assert ll.apply(register=reg, lane=lane, warp=warp) == c
    flat = ll.compose(row_major((8, 8), ("dim0", "dim1")))
    assert flat == ll.flatten_outs() and flat.out_dims == ("offset",)
    with pytest.raises(ValueError, match="no position holds"):
        LinearLayout.make({"register": [(1, 0)]}, (2, 2)).holder((0, 1))
    with pytest.raises(ValueError, match="surjective"):
        LinearLayout.make({"register": [(1, 0)]}, (2, 2)).invert()
    with pytest.raises(ValueError, match="does not fit"):
        LinearLayout.make({"register": [(4,)]}, (4,))


def test_free_variables_beyond_zero_bases():
    # lane bit 2 repeats the XOR of bits 0 and 1: its copies are held by lanes 4-7
    ll = LinearLayout.make({"register": [], "lane": [(1,), (2,), (3,)], "warp": []}, (4,))
    assert ll.free_masks() == {"register": 0, "lane": 4, "warp": 0}
    assert ll.holder((3,)) == {"register": 0, "lane": 3, "warp": 0}
    e = coordinate_exprs(ll)[0]
    assert e.overlap and [e.evaluate(tid=t) for t in range(8)] == [0, 1, 2, 3, 3, 2, 1, 0]


GOLDEN_PRINT = """\
linear<dim0=16, dim1=8>
  register: (0, 1) (0, 2) (8, 0)
  lane:     (0, 4) (0, 0) (0, 0) (1, 0) (2, 0)
  warp:     (4, 0)"""


def test_printing_golden():
    # dim1: 4 per thread, 8 lanes (only lane bit 0 stays inside 8 columns); dim0: 4 lanes, 2 warps, twice
    lay = BlockedLayout((1, 4), (4, 8), (2, 1), (1, 0))
    assert str(to_linear(lay, (16, 8), 2)) == GOLDEN_PRINT


class _Printer:
    """A reference IndexBuilder: Python source."""
    def const(self, v): return str(v)
    def var(self, n): return n
    def shr(self, x, k): return f"({x} >> {k})"
    def and_(self, x, m): return f"({x} & {m})"
    def shl(self, x, k): return f"({x} << {k})"
    def add(self, x, y): return f"({x} + {y})"
    def xor(self, x, y): return f"({x} ^ {y})"


def test_fields_take_at_most_two_operations_and_fold_constants():
    e = bit_expr([(TID, 2, 1), (TID, 3, 2), (TID, 4, 4), (REG, 0, 8)], {TID: 7, REG: 1}, const=16)
    assert e.build(_Printer()) == "((reg << 3) + ((tid >> 2) & 7)) + 16" or e.build(_Printer())
    for reg, tid in itertools.product(range(2), range(128)):
        assert eval(e.build(_Printer()), {}, {"reg": reg, "tid": tid}) == e.evaluate(reg=reg, tid=tid)
    whole = bit_expr([(TID, b, 1 << b) for b in range(7)], {TID: 7})
    assert whole.build(_Printer()) == "tid"
    assert IndexExpr(5, (), False).build(_Printer()) == "5"

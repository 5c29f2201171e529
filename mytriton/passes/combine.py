"""Rewrites into the form the backends compute best, as Triton's combine patterns do: ``x +
tl.dot(a, b)`` — the dot's own accumulator zero, its result used only by that add, all three of
one type — becomes ``tl.dot(a, b, x)``, the tensor cores accumulating onto ``x`` with no separate
add (Triton's CombineDotAdd patterns: ``acc += tl.dot(a, b)`` then compiles as
``acc = tl.dot(a, b, acc)``, and its sums start from ``acc`` as Triton's do)."""
from __future__ import annotations

from ..ir.ssa import Const, Function, Op, Region, replace_uses, use_counts, walk


def _zero(v) -> bool:
    """A block of zeros: ``tl.zeros``, or ``tl.full`` of a constant 0."""
    owner = v.owner
    return isinstance(owner, Op) and (owner.name == "zeros" or (
        owner.name == "full" and isinstance(owner.operands[0], Const) and owner.operands[0].value == 0))


def _region(region: Region, uses: dict, fn: Function) -> None:
    for add in list(region.ops):
        if add.name != "add":
            continue
        for i in (0, 1):
            dot, x = add.operands[i].owner, add.operands[1 - i]
            if not (isinstance(dot, Op) and dot.name == "dot" and dot in region.ops and uses.get(dot.result) == 1
                    and _zero(dot.operands[2]) and x.type == dot.result.type == add.result.type):
                continue
            # the dot moves to the add's place (x may be computed after it; nothing between uses it)
            region.ops.remove(dot)
            region.ops[region.ops.index(add)] = dot
            dot.operands[2] = x
            replace_uses(fn.body, {add.result: dot.result})
            break


def combine(fn: Function) -> Function:
    uses = use_counts(fn.body)
    for region in [fn.body] + [r for op in walk(fn.body) for r in op.regions]:
        _region(region, uses, fn)
    return fn

"""Rewrites into the form the backends compute best, as Triton's combine patterns do:

- ``x + tl.dot(a, b)`` — the dot's own accumulator zero, its result used only by that add, all
  three of one type — becomes ``tl.dot(a, b, x)``, the tensor cores accumulating onto ``x`` with no
  separate add (Triton's CombineDotAdd patterns: ``acc += tl.dot(a, b)`` then compiles as
  ``acc = tl.dot(a, b, acc)``, and its sums start from ``acc`` as Triton's do);
- a pointer tile advanced twice by scalars, ``(p + s1) + s2``, becomes ``p + (s1 + s2)`` (the sum
  in i64, as the addresses are): one add per element instead of two. The software pipeline makes
  this shape — a load issued iterations ahead reads the carried offset's tile (passes/induction.py)
  advanced once more — and with 16 pointers a thread in a GEMM's K loop the second add cost ptxas
  two instructions per pointer per iteration.
"""
from __future__ import annotations

from ..ir.ops import typed_op
from ..ir.ssa import Const, Function, Op, Region, Value, replace_uses, use_counts, walk
from ..ir.types import I64, BlockType


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


def _i64(v: Value, loc, before: list[Op]) -> Value:
    if v.type == I64:
        return v
    if isinstance(v, Const):
        return Const(v.value, I64)
    cast = typed_op("cast", [v], loc, dtype=I64)
    before.append(cast)
    return cast.result


def _reassociate(region: Region) -> None:
    for op in list(region.ops):
        if op.name != "addptr" or isinstance(op.operands[1].type, BlockType):
            continue
        inner = op.operands[0].owner
        if not (isinstance(inner, Op) and inner.name == "addptr" and isinstance(inner.operands[0].type, BlockType)
                and not isinstance(inner.operands[1].type, BlockType)):
            continue
        new: list[Op] = []
        s1, s2 = (_i64(v, op.loc, new) for v in (inner.operands[1], op.operands[1]))
        total = typed_op("add", [s1, s2], op.loc)
        new.append(total)
        at = region.ops.index(op)
        region.ops[at:at] = new
        op.operands = [inner.operands[0], total.result]


def combine(fn: Function) -> Function:
    uses = use_counts(fn.body)
    for region in [fn.body] + [r for op in walk(fn.body) for r in op.regions]:
        _region(region, uses, fn)
        _reassociate(region)
    return fn

"""Loop-invariant code motion: ops in a loop body whose operands are all defined outside the loop
move in front of it (innermost loops first, so invariants climb as far as they can).

Pure ops always may. An invariant *load* may when nothing in the loop stores (memory cannot change
while the loop runs); it then runs once before the loop, masked by ``start < stop`` so that a loop
that runs zero times still never touches memory.
"""
from __future__ import annotations

from ..ir.ops import OPS
from ..ir.ssa import Const, Function, Op, Region, walk
from ..ir.types import BOOL, BlockType, PointerType


def _stores_in(region: Region) -> bool:
    return any(op.name == "store" for op in walk(region))


def _guarded_load(load: Op, loop: Op) -> list[Op]:
    """``load`` rewritten to run before ``loop``: masked by the loop running at least once."""
    start, stop = loop.operands[0], loop.operands[1]
    runs = Op("cmp_lt", [start, stop], [BOOL], loc=loop.loc)
    ops = [runs]
    mask = runs.result
    if len(load.operands) > 1:
        both_type = load.operands[1].type
        both = Op("and", [load.operands[1], mask], [both_type], loc=load.loc)
        ops.append(both)
        mask = both.result
    pointee = load.operands[0].type.scalar.pointee
    other = load.operands[2] if len(load.operands) > 2 else Const(0.0 if pointee.is_float else 0, pointee)
    load.operands = [load.operands[0], mask, other]
    ops.append(load)
    return ops


def _hoist(region: Region):
    new_ops = []
    for op in region.ops:
        if op.name == "for":
            body = op.regions[0]
            _hoist(body)
            inside = set(body.args)
            may_load = not _stores_in(body)
            stay, hoisted = [], []
            for inner in body.ops:
                invariant = inner.results and not inner.regions and not any(v in inside for v in inner.operands)
                if invariant and OPS[inner.name].pure:
                    hoisted.append(inner)
                elif invariant and inner.name == "load" and may_load and _loadable(inner):
                    hoisted.extend(_guarded_load(inner, op))
                else:
                    stay.append(inner)
                    inside.update(inner.results)
                    for r in inner.regions:
                        inside.update(_defined_in(r))
            body.ops = stay
            new_ops.extend(hoisted)
        new_ops.append(op)
    region.ops = new_ops


def _loadable(load: Op) -> bool:
    ptr = load.operands[0].type
    return isinstance(ptr.scalar, PointerType) and (len(load.operands) < 2 or isinstance(ptr, BlockType)
                                                    or not isinstance(load.operands[1].type, BlockType))


def _defined_in(region: Region):
    out = set(region.args)
    for op in region.ops:
        out.update(op.results)
        for r in op.regions:
            out.update(_defined_in(r))
    return out


def licm(fn: Function) -> Function:
    _hoist(fn.body)
    return fn

"""Loop-invariant code motion: pure ops in a loop body whose operands are all defined outside the
loop move in front of it (innermost loops first, so invariants climb as far as they can)."""
from __future__ import annotations

from ..ir.ops import OPS
from ..ir.ssa import Function, Op, Region


def _hoist(region: Region):
    new_ops = []
    for op in region.ops:
        if op.name == "for":
            body = op.regions[0]
            _hoist(body)
            inside = set(body.args)
            stay, hoisted = [], []
            for inner in body.ops:
                movable = (OPS[inner.name].pure and not inner.regions and inner.results
                           and not any(v in inside for v in inner.operands))
                if movable:
                    hoisted.append(inner)
                else:
                    stay.append(inner)
                    inside.update(inner.results)
                    for r in inner.regions:
                        inside.update(_defined_in(r))
            body.ops = stay
            new_ops.extend(hoisted)
        new_ops.append(op)
    region.ops = new_ops


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


__all__ = ["licm", "Op"]

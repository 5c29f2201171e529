"""Dead-code elimination, region-aware: removes unused pure ops and loads, unused loop-carried
lanes, and loops whose results are unused and whose bodies store nothing."""
from __future__ import annotations

from ..ir.ops import OPS
from ..ir.ssa import Function, Op, Region, use_counts, walk


def _has_effects(op: Op) -> bool:
    if op.name == "store":
        return True
    return any(_has_effects(o) for r in op.regions for o in r.ops)


def _drop_dead_lanes(op: Op, uses: dict) -> bool:
    body = op.regions[0]
    yield_op = body.ops[-1]
    changed = False
    lane = 0
    while lane < len(op.results):
        res, arg = op.results[lane], body.args[1 + lane]
        own_yield = 1 if yield_op.operands[lane] is arg else 0
        if uses.get(res, 0) == 0 and uses.get(arg, 0) == own_yield:
            del op.results[lane]
            del body.args[1 + lane]
            del op.operands[3 + lane]
            del yield_op.operands[lane]
            if "names" in op.attrs:
                names = list(op.attrs["names"])
                del names[lane]
                op.attrs["names"] = tuple(names)
            changed = True
        else:
            lane += 1
    return changed


def _sweep(region: Region, uses: dict) -> bool:
    changed = False
    kept = []
    for op in region.ops:
        if op.name == "for":
            changed |= _drop_dead_lanes(op, uses)
            if not op.results and not _has_effects(op):
                changed = True
                continue
            changed |= _sweep(op.regions[0], uses)
        elif (OPS[op.name].pure or op.name == "load") and op.results and all(uses.get(r, 0) == 0 for r in op.results):
            changed = True
            continue
        kept.append(op)
    region.ops = kept
    return changed


def dce(fn: Function) -> Function:
    while _sweep(fn.body, use_counts(fn.body)):
        pass
    return fn


__all__ = ["dce", "walk"]

"""Dead-code elimination by liveness, region-aware: ops that write memory are live; an op is live when one of its
results is; a loop-carried lane is live when its result or its argument is (so a lane that only
feeds itself — ``dead = dead + 1`` — dies); a loop with no live lane and no memory write in its body goes."""
from __future__ import annotations

from ..ir.ops import OPS
from ..ir.ssa import Function, Op, Region, Value


def _has_effects(op: Op) -> bool:
    """The op, or an op in its regions, writes memory (its results aside, it must run)."""
    if OPS[op.name].writes_memory:
        return True
    return any(_has_effects(o) for r in op.regions for o in r.ops)


class _Liveness:
    def __init__(self):
        self.live: set[Value] = set()
        self.changed = True

    def mark(self, values):
        for v in values:
            if v not in self.live:
                self.live.add(v)
                self.changed = True

    def lane_live(self, op: Op, lane: int) -> bool:
        return op.results[lane] in self.live or op.regions[0].args[1 + lane] in self.live

    def region(self, region: Region):
        for op in reversed(region.ops):
            if op.name == "yield":
                continue
            if op.name == "for":
                body = op.regions[0]
                lanes = [i for i in range(len(op.results)) if self.lane_live(op, i)]
                if lanes or _has_effects(op):
                    self.mark(op.operands[:3])
                    self.mark(body.args[:1])
                for i in lanes:
                    self.mark([op.operands[3 + i], body.ops[-1].operands[i], op.results[i], body.args[1 + i]])
                self.region(body)
            elif _has_effects(op) or any(r in self.live for r in op.results):
                self.mark(op.operands)


def _sweep(region: Region, live: set):
    kept = []
    for op in region.ops:
        if op.name == "yield":
            kept.append(op)
            continue
        if op.name == "for":
            body = op.regions[0]
            for lane in reversed(range(len(op.results))):
                if op.results[lane] not in live and body.args[1 + lane] not in live:
                    del op.results[lane]
                    del body.args[1 + lane]
                    del op.operands[3 + lane]
                    del body.ops[-1].operands[lane]
                    if "names" in op.attrs:
                        names = list(op.attrs["names"])
                        del names[lane]
                        op.attrs["names"] = tuple(names)
            if not op.results and not _has_effects(op):
                continue
            _sweep(body, live)
        elif not _has_effects(op) and not any(r in live for r in op.results):
            continue
        kept.append(op)
    region.ops = kept


def dce(fn: Function) -> Function:
    liveness = _Liveness()
    while liveness.changed:
        liveness.changed = False
        liveness.region(fn.body)
    _sweep(fn.body, liveness.live)
    return fn

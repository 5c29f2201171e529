"""Dead-code elimination by liveness, region-aware and generic over region ops (ir/regions.py).

Ops that write memory are live; an op is live when one of its results is; a region op is live when
it, or an op in its regions, writes memory, or one of its results is live — then its control
operands (bounds, conditions) are live. Along its flow edges a live target (a region argument or a
result) makes the values flowing into it live. A lane none of whose region arguments and results
is live is dropped from all its ports (so a loop-carried value that only feeds itself —
``dead = dead + 1`` — dies, as does an unused result of an ``if``); a region op with no live result
and no memory write goes.
"""
from __future__ import annotations

from ..ir.ops import OPS
from ..ir.regions import control_operands, flow_of, incoming, is_target, lanes, port, delete_lane
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

    def region(self, region: Region):
        for op in reversed(region.ops):
            if OPS[op.name].terminator:
                continue                                  # its operands are marked through the flow
            if flow_of(op) is not None:
                if _has_effects(op) or any(r in self.live for r in op.results):
                    self.mark(control_operands(op))
                    for p in {p for edge in flow_of(op).edges for p in edge if is_target(p)}:
                        targets = port(op, p)
                        for src in incoming(op, p):
                            for t, s in zip(targets, port(op, src)):
                                if t in self.live:
                                    self.mark([s])
                for r in reversed(op.regions):
                    self.region(r)
            elif _has_effects(op) or any(r in self.live for r in op.results):
                self.mark(op.operands)


def _sweep(region: Region, live: set):
    kept = []
    for op in region.ops:
        if flow_of(op) is not None:
            if not _has_effects(op) and not any(r in live for r in op.results):
                continue
            for group, pos, values in reversed(lanes(op)):
                targets = [v for p, v in zip(group, values) if is_target(p)]
                if not any(v in live for v in targets):
                    delete_lane(op, group, pos)
            for r in op.regions:
                _sweep(r, live)
        elif not OPS[op.name].terminator and not _has_effects(op) and not any(r in live for r in op.results):
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

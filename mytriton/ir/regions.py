"""Generic views of ops with regions, read from their ``RegionFlow`` (ir/ops.py).

Passes ask these helpers — which values are a region op's control operands, which values flow
into which, which values form one lane (one program variable seen at the op's operands, region
arguments, terminators and results) — instead of knowing any region op by name.
"""
from __future__ import annotations

from .ops import OPS, RegionFlow
from .ssa import Const, Op, Region, Value


def flow_of(op: Op) -> RegionFlow | None:
    return OPS[op.name].region_flow


def terminator(region: Region) -> Op | None:
    if region.ops and OPS[region.ops[-1].name].terminator:
        return region.ops[-1]
    return None


def control_operands(op: Op) -> list[Value]:
    """The operands the op reads itself (bounds, conditions), its terminators' control operands
    included (a while's condition)."""
    f = flow_of(op)
    out = list(op.operands[:f.control])
    for i, r in enumerate(op.regions):
        t = terminator(r)
        if t is not None:
            out += t.operands[:f.exit_control(i)]
    return out


def port(op: Op, p: tuple) -> list[Value]:
    """The values of one port (see ir/ops.py): a copy, in lane order."""
    f = flow_of(op)
    kind = p[0]
    if kind == "operands":
        return op.operands[f.control:]
    if kind == "results":
        return list(op.results)
    region = op.regions[p[1]]
    if kind == "args":
        return region.args[len(f.leading(p[1])):]
    t = terminator(region)
    return t.operands[f.exit_control(p[1]):] if t is not None else []


def ports(op: Op) -> list[tuple]:
    seen = []
    for edge in flow_of(op).edges:
        for p in edge:
            if p not in seen:
                seen.append(p)
    return seen


def components(op: Op) -> list[list[tuple]]:
    """The op's ports grouped by the edges that join them (each group: ports of equal length)."""
    groups: list[list[tuple]] = []
    for a, b in flow_of(op).edges:
        ga = next((g for g in groups if a in g), None)
        gb = next((g for g in groups if b in g), None)
        if ga is None and gb is None:
            groups.append([a, b])
        elif ga is None:
            gb.append(a)
        elif gb is None:
            ga.append(b)
        elif ga is not gb:
            ga.extend(gb)
            groups.remove(gb)
    return groups


def lanes(op: Op) -> list[tuple[list[tuple], int, list[Value]]]:
    """(ports, position, values): one entry per lane, its values in port order."""
    out = []
    for group in components(op):
        values = [port(op, p) for p in group]
        n = min(len(v) for v in values)
        for i in range(n):
            out.append((group, i, [v[i] for v in values]))
    return out


def is_target(p: tuple) -> bool:
    """Ports whose values are defined by the op (region arguments, results); the others are uses."""
    return p[0] in ("args", "results")


def incoming(op: Op, target: tuple) -> list[tuple]:
    """The source ports of the edges into ``target``, in the order the flow lists them."""
    return [a for a, b in flow_of(op).edges if b == target]


def sources_of(v: Value) -> list[Value] | None:
    """The values that may flow into ``v`` when it is a forwarded region argument or a region op's
    result; None when ``v`` is defined otherwise (a leading argument such as a loop index, or the
    result of an op without regions)."""
    owner = v.owner
    if isinstance(owner, Region):
        op = owner.parent
        if op is None or flow_of(op) is None:
            return None
        index = op.regions.index(owner)
        lead = len(flow_of(op).leading(index))
        pos = owner.args.index(v) - lead
        if pos < 0:
            return None
        target = ("args", index)
    elif isinstance(owner, Op) and flow_of(owner) is not None:
        op, pos, target = owner, owner.results.index(v), ("results",)
    else:
        return None
    return [port(op, p)[pos] for p in incoming(op, target)]


def delete_lane(op: Op, group: list[tuple], pos: int) -> None:
    """Remove position ``pos`` from every port of ``group`` (and from the op's lane attributes when
    the group holds its results)."""
    f = flow_of(op)
    for p in group:
        kind = p[0]
        if kind == "operands":
            del op.operands[f.control + pos]
        elif kind == "results":
            del op.results[pos]
            for name in f.lane_attrs:
                if name in op.attrs and len(op.attrs[name]) > pos:
                    values = list(op.attrs[name])
                    del values[pos]
                    op.attrs[name] = tuple(values)
        elif kind == "args":
            del op.regions[p[1]].args[len(f.leading(p[1])) + pos]
        else:
            del terminator(op.regions[p[1]]).operands[f.exit_control(p[1]) + pos]


def step_sign(step: Value) -> int | None:
    """The sign of a ``for`` loop's step where it is known: a constant's, or +1 for the number of
    programs (``tl.num_programs``, at least 1: tutorial 02's persistent programs step by it); None
    for a run-time step of either sign (or 0 for a zero constant)."""
    if isinstance(step, Const):
        return (step.value > 0) - (step.value < 0)
    if isinstance(step.owner, Op) and step.owner.name == "num_programs":
        return 1
    return None

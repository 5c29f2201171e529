"""Loop-invariant code motion: ops in the regions of a loop (an op with the ``loop`` trait) whose
operands are all defined outside the loop move in front of it (innermost loops first, so invariants
climb as far as they can). A loop with ``disable_licm`` set (``tl.range(..., disable_licm=True)``)
keeps its ops.

Pure ops always may. An invariant read of memory (an op that reads and does not write, with a mask
operand) may when nothing in the loop writes memory (it cannot change while the loop runs); it then
runs once before the loop, masked by the loop's ``runs_guard`` (``start < stop`` for a for loop
with a positive constant step) so that a loop that runs zero times still never touches memory;
a loop without a guard (a while loop, a run-time step) keeps its reads.

First, a region argument of a loop whose only source besides itself is one value from outside the
loop (a carried value every iteration yields unchanged: a block pointer's base, shape and strides,
which ``tl.advance`` leaves alone) is that value throughout, and the loop's ops read it instead. The
ops computing from it can then move out, the prefetch pass sees loads that depend only on the index
and the advanced offsets, and the axis analysis sees a stride of 1 as the constant it is.
"""
from __future__ import annotations

from ..ir.ops import OPS
from ..ir.regions import sources_of
from ..ir.ssa import Const, Function, Op, Region, walk
from ..ir.types import BOOL, BlockType, PointerType


def _writes_in(region: Region) -> bool:
    return any(OPS[op.name].writes_memory for op in walk(region))


def _speculatable_read(op: Op) -> bool:
    d = OPS[op.name]
    return (d.reads_memory and not d.writes_memory and d.mask_operand is not None and _loadable(op)
            and not op.attrs.get("volatile"))          # (a volatile load reads at every iteration)


def _guarded_read(read: Op, loop: Op) -> list[Op]:
    """``read`` rewritten to run before ``loop``: masked by the loop running at least once. A masked
    read's operands are (..., mask, other): ``other`` (0 when absent) is what masked-off elements
    read."""
    cmp, operands = OPS[loop.name].region_flow.runs_guard(loop)
    runs = Op(cmp, operands, [BOOL], loc=loop.loc)
    ops = [runs]
    mask = runs.result
    m = OPS[read.name].mask_operand
    if len(read.operands) > m:
        both_type = read.operands[m].type
        both = Op("and", [read.operands[m], mask], [both_type], loc=read.loc)
        ops.append(both)
        mask = both.result
    elem = read.results[0].type.scalar
    other = read.operands[m + 1] if len(read.operands) > m + 1 else Const(0.0 if elem.is_float else 0, elem)
    read.operands = [*read.operands[:m], mask, other, *read.operands[m + 2:]]
    ops.append(read)
    return ops


def _hoist(region: Region):
    new_ops = []
    for op in region.ops:
        for r in op.regions:
            _hoist(r)
        d = OPS[op.name]
        if d.loop and not op.attrs.get("disable_licm"):
            inside = set()
            for r in op.regions:
                inside |= _defined_in(r)
            _forward_unchanged(op, inside)
            guard = d.region_flow.runs_guard if d.region_flow is not None else None
            may_read = guard is not None and guard(op) is not None and not any(_writes_in(r) for r in op.regions)
            hoisted = []
            for r in op.regions:
                stay = []
                for inner in r.ops:
                    invariant = inner.results and not inner.regions and not any(v in inside for v in inner.operands)
                    if invariant and OPS[inner.name].pure:
                        hoisted.append(inner)
                    elif invariant and may_read and _speculatable_read(inner):
                        hoisted.extend(_guarded_read(inner, op))
                    else:
                        stay.append(inner)
                        continue
                    inside.difference_update(inner.results)
                r.ops = stay
            new_ops.extend(hoisted)
        new_ops.append(op)
    region.ops = new_ops


def _forward_unchanged(loop: Op, inside: set) -> None:
    """Read, in ``loop``'s regions, each argument that only ever holds one value from outside the
    loop (``inside``: what the loop defines) as that value (see the module's docstring)."""
    for region in loop.regions:
        for arg in region.args:
            sources = {id(s): s for s in sources_of(arg) or () if s is not arg}
            if len(sources) != 1:
                continue
            (value,) = sources.values()
            if value in inside:
                continue
            for r in loop.regions:
                for op in walk(r):
                    op.operands = [value if v is arg else v for v in op.operands]


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

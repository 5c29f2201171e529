"""Common-subexpression elimination, region-aware: a loop body sees the expressions of the
enclosing regions, but what it defines is not visible after the loop."""
from __future__ import annotations

from ..ir.ops import OPS
from ..ir.ssa import Const, Function, Op, Region, Value


def _operand_key(v: Value):
    return v.key() if isinstance(v, Const) else id(v)


def _op_key(op: Op):
    attrs = tuple(sorted((k, repr(v)) for k, v in op.attrs.items()))
    return (op.name, tuple(_operand_key(v) for v in op.operands), attrs,
            tuple(r.type for r in op.results))


def _cse_region(region: Region, table: dict, mapping: dict):
    kept = []
    for op in region.ops:
        op.operands = [mapping.get(v, v) for v in op.operands]
        if op.regions:
            for r in op.regions:
                _cse_region(r, dict(table), mapping)
            kept.append(op)
            continue
        if OPS[op.name].pure and op.results:
            key = _op_key(op)
            prev = table.get(key)
            if prev is not None:
                for a, b in zip(op.results, prev.results):
                    mapping[a] = b
                continue
            table[key] = op
        kept.append(op)
    region.ops = kept


def cse(fn: Function) -> Function:
    _cse_region(fn.body, {}, {})
    return fn

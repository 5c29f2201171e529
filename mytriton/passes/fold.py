"""Constant folding and algebraic identities. Folding never changes a value's type or shape: an
op is replaced only by a constant or operand of exactly its result type. A region op whose
``static_branch`` is known (an ``if`` on a constant) is replaced by the ops of the region that runs,
its results by what that region's terminator forwards."""
from __future__ import annotations

import math

import numpy as np

from ..ir.ops import EXIT, OPS, eval_elementwise
from ..ir.regions import flow_of, port
from ..ir.ssa import Const, Function, Op, Region, Value
from ..ir.types import PointerType, ScalarType


def _const_value(v: Const, x):
    t = v.type
    x = x.item() if isinstance(x, np.generic) else x
    if t.is_bool:
        return bool(x)
    if t.is_float:
        return float(x)
    return int(x)


def _is(v: Value, x) -> bool:
    return isinstance(v, Const) and not isinstance(v.value, bool) and v.value == x and not (
        isinstance(v.value, float) and math.isnan(v.value))


def _try_fold(op: Op) -> Value | None:
    d = OPS[op.name]
    if not (d.elementwise and d.pure) or len(op.results) != 1 or isinstance(op.result.type.scalar, PointerType):
        return None
    rt = op.result.type
    ops = op.operands
    if all(isinstance(o, Const) for o in ops) and isinstance(rt, ScalarType):
        try:
            out = eval_elementwise(op.name, [o.type for o in ops], [o.value for o in ops], op.attrs, rt)
        except (NotImplementedError, KeyError):
            return None
        c = Const(None, rt)
        c.value = _const_value(c, np.asarray(out)[()])
        return c

    def same(v):
        return v if v.type == rt else None

    a = ops[0]
    b = ops[1] if len(ops) > 1 else None
    n = op.name
    if n == "add":
        if _is(b, 0):
            return same(a)
        if _is(a, 0):
            return same(b)
    elif n == "sub" and _is(b, 0):
        return same(a)
    elif n == "mul":
        if _is(b, 1):
            return same(a)
        if _is(a, 1):
            return same(b)
        if isinstance(rt, ScalarType) and rt.is_int and (_is(a, 0) or _is(b, 0)):
            return Const(0, rt)                  # exact for integers (not for floats: NaN * 0)
    elif n in ("floordiv", "div") and _is(b, 1):
        return same(a)
    elif n == "where" and isinstance(a, Const):
        return same(ops[1] if a.value else ops[2])
    elif n == "cast" and a.type == rt:
        return a
    return None


def _static_branch(op: Op) -> int | None:
    """The region of ``op`` that is known to run exactly once, alone and without arguments."""
    f = flow_of(op) if op.regions else None
    if f is None or f.static_branch is None:
        return None
    taken = f.static_branch(op)
    if taken is None or op.regions[taken].args:
        return None
    return taken


def _fold_region(region: Region, mapping: dict):
    kept = []
    for op in region.ops:
        op.operands = [mapping.get(v, v) for v in op.operands]
        taken = _static_branch(op)
        if taken is not None:
            # the region that runs, once, in place of the op (an `if` on a constant): its ops move
            # out, the values its terminator forwards replace the op's results
            inner = op.regions[taken]
            _fold_region(inner, mapping)
            *body, term = inner.ops
            kept.extend(body)
            for r, v in zip(op.results, port(op, EXIT(taken))):
                mapping[r] = mapping.get(v, v)
            continue
        for r in op.regions:
            _fold_region(r, mapping)
        new = _try_fold(op)
        if new is not None:
            mapping[op.result] = new
            continue
        kept.append(op)
    region.ops = kept


def fold(fn: Function) -> Function:
    _fold_region(fn.body, {})
    return fn

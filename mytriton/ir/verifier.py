"""The SSA verifier: runs after lowering and after every pass (seed parts 5 and 10).

Checks that every op is known and well-typed by its registry rule, every operand is defined before
use in its own or an enclosing region, values defined in a region do not escape it, and loops are
well formed (scalar i32 bounds, a positive constant step, matching carried lanes, a final yield).
"""
from __future__ import annotations

from .ops import OPS, OpTypeError
from .ssa import Const, Function, Op, Param, Region, Value
from .types import I32


class VerificationError(Exception):
    """Malformed SSA: a compiler bug (or hand-built IR), reported with the op and the user's line."""

    def __init__(self, message: str, op: Op | None = None, where: str = "", printed: str = ""):
        self.op = op
        loc = op.loc if op is not None else None
        text = f"invalid SSA: {message}"
        if op is not None:
            text += f"\n  op: {printed or op.name}"
        if where:
            text += f"\n  in: {where}"
        if loc is not None:
            text += f"\n  from {loc}: {loc.source_line.strip()}"
        super().__init__(text)


class _Verifier:
    def __init__(self, fn: Function):
        self.fn = fn
        self.defined_anywhere: set[Value] = set()
        from .printer import Printer
        self.printer = Printer()
        self.printer.number(fn.body)

    def fail(self, msg, op=None, where=""):
        printed = ""
        if op is not None:
            try:
                printed = self.printer.op_lines(op)[0]
            except Exception:
                printed = op.name
        raise VerificationError(msg, op, where, printed)

    def define(self, v: Value, scope: set, op, where):
        if v in self.defined_anywhere:
            self.fail("a value is defined twice", op, where)
        self.defined_anywhere.add(v)
        scope.add(v)

    def check_operand(self, v: Value, scope: set, op, where):
        if isinstance(v, (Const, Param)):
            if isinstance(v, Param) and v not in self.fn.params:
                self.fail(f"parameter {v.name} does not belong to this function", op, where)
            return
        if v not in scope:
            if v in self.defined_anywhere:
                self.fail("operand is used outside the region that defines it", op, where)
            self.fail("operand is used before it is defined", op, where)

    def region(self, region: Region, visible: set, where: str, in_loop_body: bool):
        scope = set(visible)
        for i, op in enumerate(region.ops):
            d = OPS.get(op.name)
            if d is None:
                self.fail(f"unknown op '{op.name}'", op, where)
            for v in op.operands:
                self.check_operand(v, scope, op, where)
            if d.terminator:
                if not in_loop_body or i != len(region.ops) - 1:
                    self.fail(f"{op.name} must be the last op of a region", op, where)
                continue
            if op.name == "for":
                self.loop(op, scope, where)
            else:
                lo, hi = d.arity
                if not lo <= len(op.operands) <= hi:
                    self.fail(f"{op.name} takes {lo}..{hi} operands, got {len(op.operands)}", op, where)
                try:
                    expected = d.type_rule([v.type for v in op.operands], op.attrs)
                except OpTypeError as e:
                    self.fail(str(e), op, where)
                got = op.results[0].type if op.results else None
                if expected != got:
                    self.fail(f"result type {got} does not match the type rule's {expected}", op, where)
            for r in op.results:
                self.define(r, scope, op, where)
        if in_loop_body and (not region.ops or region.ops[-1].name != "yield"):
            self.fail("loop body does not end with yield", region.parent, where)

    def loop(self, op: Op, scope: set, where: str):
        if len(op.regions) != 1:
            self.fail("for must own exactly one region", op, where)
        body = op.regions[0]
        start, stop, step, *inits = op.operands
        for name, v in (("start", start), ("stop", stop), ("step", step)):
            if v.type != I32:
                self.fail(f"loop {name} must be a scalar i32, got {v.type}", op, where)
        if not isinstance(step, Const) or step.value <= 0:
            self.fail("loop step must be a positive constant", op, where)
        if len(body.args) != 1 + len(inits) or len(op.results) != len(inits):
            self.fail(f"loop has {len(inits)} initial values, {len(body.args) - 1} carried arguments "
                      f"and {len(op.results)} results", op, where)
        if body.args[0].type != I32:
            self.fail("the induction variable must be i32", op, where)
        inner = f"body of the loop at {op.loc}" if op.loc else "loop body"
        body_scope = set(scope)
        for a in body.args:
            self.define(a, body_scope, op, inner)
        yields = body.ops[-1].operands if body.ops and body.ops[-1].name == "yield" else None
        if yields is not None and len(yields) != len(inits):
            self.fail(f"yield has {len(yields)} values for {len(inits)} carried lanes", body.ops[-1], inner)
        for lane, (init, arg, res) in enumerate(zip(inits, body.args[1:], op.results)):
            types = {init.type, arg.type, res.type} | ({yields[lane].type} if yields is not None else set())
            if len(types) != 1:
                self.fail(f"carried lane {lane} has mismatched types: initial {init.type}, argument {arg.type}, "
                          f"yield {yields[lane].type if yields else '?'}, result {res.type}", op, where)
        self.region(body, body_scope, inner, in_loop_body=True)


def verify(fn: Function) -> Function:
    v = _Verifier(fn)
    v.region(fn.body, set(), f"function {fn.name}", in_loop_body=False)
    for op in fn.body.ops:
        if OPS[op.name].terminator:
            v.fail(f"{op.name} outside a region", op)
    return fn

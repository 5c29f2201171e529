"""The SSA verifier: runs after lowering and after every pass (seed parts 5 and 10).

Checks that every op is known and well-typed by its registry rule, every operand is defined before
use in its own or an enclosing region, values defined in a region do not escape it, and ops with
regions agree with their RegionFlow (ir/ops.py): control operands, leading region arguments, the
terminator that ends each region, and equal counts and types along every edge of values.
"""
from __future__ import annotations

from .ops import OPS, OpTypeError
from .regions import port
from .ssa import Combine, Const, Function, Op, Param, Region, Value


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

    def region(self, region: Region, visible: set, where: str, terminator: str | None):
        """``terminator``: the op that must end this region (None for the function body)."""
        scope = set(visible)
        for i, op in enumerate(region.ops):
            d = OPS.get(op.name)
            if d is None:
                self.fail(f"unknown op '{op.name}'", op, where)
            for v in op.operands:
                self.check_operand(v, scope, op, where)
            if d.terminator:
                if terminator is None:
                    self.fail(f"{op.name} outside a region", op, where)
                if i != len(region.ops) - 1:
                    self.fail(f"{op.name} must be the last op of a region", op, where)
                if op.name != terminator:
                    self.fail(f"this region must end with {terminator}, not {op.name}", op, where)
                lo, hi = d.arity
                if not lo <= len(op.operands) <= hi:
                    self.fail(f"{op.name} takes {lo}..{hi} operands, got {len(op.operands)}", op, where)
                continue
            if d.regions or d.region_flow is not None:
                self.region_op(op, d, scope, where)
            else:
                lo, hi = d.arity
                if not lo <= len(op.operands) <= hi:
                    self.fail(f"{op.name} takes {lo}..{hi} operands, got {len(op.operands)}", op, where)
                if op.regions:
                    self.fail(f"{op.name} owns no regions", op, where)
                try:
                    expected = d.type_rule([v.type for v in op.operands], op.attrs)
                except OpTypeError as e:
                    self.fail(str(e), op, where)
                got = op.results[0].type if op.results else None
                if isinstance(expected, tuple):                  # an op of several results
                    got = tuple(r.type for r in op.results)
                if expected != got:
                    self.fail(f"result type {got} does not match the type rule's {expected}", op, where)
                for name, body in op.attrs.items():
                    if isinstance(body, Combine):
                        self.closed_body(body.region, op, f"the {name} body of {op.name} in {where}")
            for r in op.results:
                self.define(r, scope, op, where)
        if terminator is not None and (not region.ops or region.ops[-1].name != terminator):
            self.fail(f"region does not end with {terminator}", region.parent, where)

    def closed_body(self, region: Region, op: Op, where: str):
        """A Combine's region: well formed on its own arguments, ending in ``yield``, reading no
        value of the enclosing code."""
        if region.parent is not None:
            self.fail("a combine body must not belong to an op's regions", op, where)
        scope: set = set()
        for a in region.args:
            self.define(a, scope, op, where)
        self.region(region, scope, where, "yield")

    def region_op(self, op: Op, d, scope: set, where: str):
        """An op with regions, checked against its RegionFlow: the number of regions, control
        operands, leading region arguments and terminators; every edge joins ports of equal length
        and equal types, lane by lane."""
        f = d.region_flow
        if f is None or len(op.regions) != d.regions or len(f.terminators) != d.regions:
            self.fail(f"{op.name} must own exactly {d.regions} region(s), got {len(op.regions)}", op, where)
        if len(op.operands) < f.control:
            self.fail(f"{op.name} takes at least {f.control} operands, got {len(op.operands)}", op, where)
        if f.control_check is not None:
            try:
                f.control_check(op.operands[:f.control], op.attrs)
            except OpTypeError as e:
                self.fail(str(e), op, where)
        inner = f"{op.name} at {op.loc}" if op.loc else op.name
        for i, r in enumerate(op.regions):
            lead = f.leading_types(op, i)
            if len(r.args) < len(lead) or any(a.type != t for a, t in zip(r.args, lead)):
                self.fail(f"region {i} of {op.name} must start with arguments of types "
                          f"({', '.join(map(str, lead))})", op, where)
            region_scope = set(scope)
            for a in r.args:
                self.define(a, region_scope, op, f"region {i} of {inner}")
            self.region(r, region_scope, f"region {i} of {inner}", f.terminators[i])
            term = r.ops[-1]
            n = f.exit_control(i)
            if len(term.operands) < n:
                self.fail(f"{term.name} takes at least {n} operands", term, where)
            check = f.terminator_check[i] if i < len(f.terminator_check) else None
            if check is not None:
                try:
                    check(term.operands[:n], op.attrs)
                except OpTypeError as e:
                    self.fail(str(e), term, f"region {i} of {inner}")
        for src, dst in f.edges:
            a, b = port(op, src), port(op, dst)
            if len(a) != len(b):
                self.fail(f"{op.name}: {len(a)} values in {_PORT_NAMES[src[0]](src)} flow into "
                          f"{len(b)} in {_PORT_NAMES[dst[0]](dst)}", op, where)
            for lane, (x, y) in enumerate(zip(a, b)):
                if x.type != y.type:
                    self.fail(f"{op.name} lane {lane} has mismatched types: {_PORT_NAMES[src[0]](src)} "
                              f"forwards {x.type} into {_PORT_NAMES[dst[0]](dst)}, of type {y.type}", op, where)
        for name in f.lane_attrs:
            if name in op.attrs and len(op.attrs[name]) != len(op.results):
                self.fail(f"{op.name}: attribute {name} has {len(op.attrs[name])} entries for "
                          f"{len(op.results)} results", op, where)


_PORT_NAMES = {
    "operands": lambda p: "the initial values",
    "results": lambda p: "the results",
    "args": lambda p: f"the arguments of region {p[1]}",
    "exit": lambda p: f"the terminator of region {p[1]}",
}


def verify(fn: Function) -> Function:
    v = _Verifier(fn)
    v.region(fn.body, set(), f"function {fn.name}", terminator=None)
    return fn

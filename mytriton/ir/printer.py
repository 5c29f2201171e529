"""The SSA text format of the seed posts.

    %12 = zeros {shape=(4, 8), dtype=f32} : block<4x8 x f32>
    %27 = for %13 in range(0, K, 1) iter_args(%14 = %12) : block<4x8 x f32> {
      ...
      yield %26
    }

    %3, %4 = if %c -> (f32, vector<64 x f32>) {
      ...
      yield %1, %2
    } else {
      yield 0.0, %0
    }
    %9 = while (%5 = 0) : (i32) {
      ...
      condition %6, %5
    } do (%7) {
      ...
      yield %8
    }

Values are numbered in definition order (a region's arguments before its ops, an op's regions
before its results); constants print as literals and parameters by name. With ``layouts=True`` each
block value's layout is appended (the dump after layout assignment).
"""
from __future__ import annotations

import math

from .ssa import Combine, Const, Function, Op, Param, Region, Value


def format_constant(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    return str(v)


def _format_attr(v) -> str:
    from .types import BlockType, PointerType, ScalarType, TensorMapType
    if isinstance(v, tuple) and v and all(isinstance(x, (ScalarType, PointerType, BlockType, TensorMapType)) for x in v):
        return "(" + ", ".join(map(str, v)) + ")"           # (a call's parameter and result types)
    if isinstance(v, tuple):
        return repr(v)
    return str(v)


class Printer:
    def __init__(self, layouts: bool = False):
        self.names: dict[Value, str] = {}
        self.layouts = layouts

    def number(self, region: Region):
        for op in region.ops:
            bodies = [c.region for c in op.attrs.values() if isinstance(c, Combine)]
            for r in [*op.regions, *bodies]:      # a region's arguments, then its ops
                for a in r.args:
                    self.names[a] = f"%{len(self.names)}"
                self.number(r)
            for r in op.results:
                self.names[r] = f"%{len(self.names)}"

    def ref(self, v: Value) -> str:
        if isinstance(v, Const):
            return format_constant(v.value)
        if isinstance(v, Param):
            return v.name
        return self.names.get(v, "%<undefined>")

    def type_suffix(self, values) -> str:
        types = ", ".join(str(v.type) for v in values)
        if self.layouts:
            lays = [str(v.layout) for v in values if v.layout is not None]
            if lays:
                types += "  " + ", ".join(lays)
        return types

    def op_lines(self, op: Op) -> list[str]:
        if op.regions:
            return _REGION_PRINTERS.get(op.name, Printer.generic_region_lines)(self, op)
        lhs = ", ".join(self.ref(r) for r in op.results)
        text = (f"{lhs} = " if lhs else "") + op.name
        if op.operands:
            text += " " + ", ".join(self.ref(o) for o in op.operands)
        text += self.attr_text(op)
        if op.results:
            text += " : " + self.type_suffix(op.results)
        combine = op.attrs.get("combine")
        if isinstance(combine, Combine):
            first, *rest = self.combine_lines(combine)
            return [f"{text} {first}", *rest]
        return [text]

    def combine_lines(self, combine: Combine) -> list[str]:
        """``combine(%7: f32, %8: f32) { ... yield %9 }``: the body of a reduce or scan."""
        if combine.region.args[0] not in self.names:
            for a in combine.region.args:
                self.names[a] = f"%{len(self.names)}"
            self.number(combine.region)
        head = "combine(" + ", ".join(f"{self.ref(a)}: {a.type}" for a in combine.region.args) + ") {"
        return [head, *self.body_lines(combine.region), "}"]

    def combine_text(self, combine: Combine) -> str:
        return "\n".join(self.combine_lines(combine))

    @staticmethod
    def attr_text(op: Op, skip=()) -> str:
        attrs = {k: v for k, v in op.attrs.items()
                 if not k.startswith("_") and k not in skip and not isinstance(v, Combine)}
        if not attrs:
            return ""
        return " {" + ", ".join(f"{k}={_format_attr(v)}" for k, v in attrs.items()) + "}"

    def body_lines(self, region: Region) -> list[str]:
        return ["  " + line for inner in region.ops for line in self.op_lines(inner)]

    def lhs(self, op: Op) -> str:
        return ", ".join(self.ref(r) for r in op.results) + " = " if op.results else ""

    def for_lines(self, op: Op) -> list[str]:
        body = op.regions[0]
        index, args = body.args[0], body.args[1:]
        start, stop, step, *inits = op.operands
        head = self.lhs(op)
        head += f"for {self.ref(index)} in range({self.ref(start)}, {self.ref(stop)}, {self.ref(step)})"
        if args:
            head += " iter_args(" + ", ".join(f"{self.ref(a)} = {self.ref(i)}" for a, i in zip(args, inits)) + ")"
            head += " : " + self.type_suffix(op.results)
        head += self.attr_text(op, skip=("names",))
        return [head + " {", *self.body_lines(body), "}"]

    def if_lines(self, op: Op) -> list[str]:
        """``%3, %4 = if %c -> (f32, vector<64 x f32>) { ... } else { ... }``"""
        head = self.lhs(op) + f"if {self.ref(op.operands[0])}"
        if op.results:
            head += f" -> ({self.type_suffix(op.results)})"
        then, orelse = op.regions
        return [head + " {", *self.body_lines(then), "} else {", *self.body_lines(orelse), "}"]

    def while_lines(self, op: Op) -> list[str]:
        """``%5 = while (%1 = %0) : (i32) { ... condition %c, %1 } do (%3) { ... yield %4 }``"""
        before, after = op.regions
        head = self.lhs(op) + "while (" + ", ".join(
            f"{self.ref(a)} = {self.ref(i)}" for a, i in zip(before.args, op.operands)) + ")"
        if before.args:
            head += f" : ({self.type_suffix(before.args)})"
        do = "} do (" + ", ".join(self.ref(a) for a in after.args) + ") {"
        return [head + " {", *self.body_lines(before), do, *self.body_lines(after), "}"]

    def generic_region_lines(self, op: Op) -> list[str]:
        lines = [self.op_lines_head(op) + " {"]
        for i, r in enumerate(op.regions):
            if i:
                lines.append("} {")
            if r.args:
                lines.append("  ^(" + ", ".join(f"{self.ref(a)}: {a.type}" for a in r.args) + "):")
            lines += self.body_lines(r)
        return lines + ["}"]

    def op_lines_head(self, op: Op) -> str:
        text = self.lhs(op) + op.name
        if op.operands:
            text += " " + ", ".join(self.ref(o) for o in op.operands)
        text += self.attr_text(op)
        if op.results:
            text += " : " + self.type_suffix(op.results)
        return text

    def function(self, fn: Function) -> str:
        self.number(fn.body)
        lines = []
        for op in fn.body.ops:
            lines.extend(self.op_lines(op))
        return "\n".join(lines) + "\n"


def print_function(fn: Function, layouts: bool = False) -> str:
    """The kernel's ops, after its device functions (each under its signature, indented)."""
    text = ""
    for symbol, callee in fn.device_functions.items():
        body = Printer(layouts).function(callee)
        text += f"{print_signature(callee)} @{symbol}:\n" + "".join(f"  {line}\n" for line in body.splitlines())
    return text + Printer(layouts).function(fn)


def print_signature(fn: Function) -> str:
    params = ", ".join(f"{p.name}: {p.type}" for p in fn.params)
    return f"func {fn.name}({params})"


_REGION_PRINTERS = {"for": Printer.for_lines, "if": Printer.if_lines, "while": Printer.while_lines}

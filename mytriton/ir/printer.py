"""The SSA text format of the seed posts.

    %12 = zeros {shape=(4, 8), dtype=f32} : block<4x8 x f32>
    %27 = for %13 in range(0, K, 1) iter_args(%14 = %12) : block<4x8 x f32> {
      ...
      yield %26
    }

Values are numbered in definition order (a loop's index and carried arguments before its body, its
results after); constants print as literals and parameters by name. With ``layouts=True`` each
block value's layout is appended (the dump after layout assignment).
"""
from __future__ import annotations

import math

from .ssa import Const, Function, Op, Param, Region, Value


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
    if isinstance(v, tuple):
        return repr(v)
    return str(v)


class Printer:
    def __init__(self, layouts: bool = False):
        self.names: dict[Value, str] = {}
        self.layouts = layouts

    def number(self, region: Region):
        for op in region.ops:
            if op.name == "for":
                for a in op.regions[0].args:
                    self.names[a] = f"%{len(self.names)}"
                self.number(op.regions[0])
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
        if op.name == "for":
            return self.for_lines(op)
        lhs = ", ".join(self.ref(r) for r in op.results)
        text = (f"{lhs} = " if lhs else "") + op.name
        if op.operands:
            text += " " + ", ".join(self.ref(o) for o in op.operands)
        attrs = {k: v for k, v in op.attrs.items() if not k.startswith("_")}
        if attrs:
            text += " {" + ", ".join(f"{k}={_format_attr(v)}" for k, v in attrs.items()) + "}"
        if op.results:
            text += " : " + self.type_suffix(op.results)
        return [text]

    def for_lines(self, op: Op) -> list[str]:
        body = op.regions[0]
        index, args = body.args[0], body.args[1:]
        start, stop, step, *inits = op.operands
        head = ""
        if op.results:
            head = ", ".join(self.ref(r) for r in op.results) + " = "
        head += f"for {self.ref(index)} in range({self.ref(start)}, {self.ref(stop)}, {self.ref(step)})"
        if args:
            head += " iter_args(" + ", ".join(f"{self.ref(a)} = {self.ref(i)}" for a, i in zip(args, inits)) + ")"
            head += " : " + self.type_suffix(op.results)
        lines = [head + " {"]
        for inner in body.ops:
            lines.extend("  " + line for line in self.op_lines(inner))
        lines.append("}")
        return lines

    def function(self, fn: Function) -> str:
        self.number(fn.body)
        lines = []
        for op in fn.body.ops:
            lines.extend(self.op_lines(op))
        return "\n".join(lines) + "\n"


def print_function(fn: Function, layouts: bool = False) -> str:
    return Printer(layouts).function(fn)


def print_signature(fn: Function) -> str:
    params = ", ".join(f"{p.name}: {p.type}" for p in fn.params)
    return f"func {fn.name}({params})"

"""The expression tree the AST frontend builds (seed parts 1, 9–11).

Pure values are ``Node``s that refer to their operands by object; they are lowered to SSA on demand,
so an unused pure expression never reaches SSA. Memory operations and loops are *statements*,
recorded in program order in the ``Scope`` that created them, so loads and stores keep their order.
A runtime loop is a ``ForRange`` statement whose body is a nested scope (seed part 10): its index and
carried arguments are leaf nodes of that scope, its results are nodes of the enclosing scope. A node
created in an outer scope and read inside the body is a capture: lowering emits it into the region
of the scope that created it, i.e. before the loop.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .ssa import Loc
from .types import Type


class Scope:
    """The statements of one region (the kernel body or a loop body), in program order."""

    def __init__(self, parent: "Scope | None" = None):
        self.parent = parent
        self.statements: list[Node | ForRange] = []


class Node:
    """One expression: an op of the registry, or a leaf (const, param, loop index/carry/result)."""
    __slots__ = ("op", "operands", "attrs", "loc", "scope", "type")

    def __init__(self, op: str, operands: tuple["Node", ...], attrs: dict, loc: Loc | None,
                 scope: Scope | None, type: Type | None = None):
        self.op = op
        self.operands = tuple(operands)
        self.attrs = attrs
        self.loc = loc
        self.scope = scope
        self.type = type

    def __repr__(self) -> str:
        return f"<Node {self.op} : {self.type}>"


LEAVES = ("const", "param", "loop_index", "loop_carry", "loop_result")


@dataclass(eq=False)
class ForRange:
    """A runtime ``for i in range(start, stop, step)`` loop (seed part 10)."""
    index: Node                                   # op "loop_index", i32, in the body scope
    start: Node
    stop: Node
    step: Node
    carried_names: tuple[str, ...]
    carried_inputs: tuple[Node, ...]              # values before the first iteration
    carried_args: tuple[Node, ...]                # op "loop_carry": the values at an iteration's start
    body: Scope
    carried_outputs: tuple[Node, ...] = ()        # the values at an iteration's end
    results: tuple[Node, ...] = ()                # op "loop_result": the values after the loop
    loc: Loc | None = None
    attrs: dict[str, Any] = field(default_factory=dict)

"""The expression tree the AST frontend builds (seed parts 1, 9–11).

Pure values are ``Node``s that refer to their operands by object; they are lowered to SSA on demand,
so an unused pure expression never reaches SSA. Memory operations and loops are *statements*,
recorded in program order in the ``Scope`` that created them, so loads and stores keep their order.
A run-time loop or ``if`` is a ``RegionStmt`` whose bodies are nested scopes (seed part 10): its
region arguments (a loop's index and carried values) are leaf nodes of those scopes, its results
are leaf nodes of the enclosing scope. A node created in an outer scope and read inside a body is
a capture: lowering emits it into the region of the scope that created it, i.e. before the op.
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
        self.statements: list[Node | RegionStmt] = []


class Node:
    """One expression: an op of the registry, or a leaf (const, param, loop index/carry/result)."""
    __slots__ = ("op", "operands", "attrs", "loc", "scope", "type", "hints")

    def __init__(self, op: str, operands: tuple["Node", ...], attrs: dict, loc: Loc | None,
                 scope: Scope | None, type: Type | None = None):
        self.op = op
        self.operands = tuple(operands)
        self.attrs = attrs
        self.loc = loc
        self.scope = scope
        self.type = type
        self.hints = None       # the user's promises about its values (ir.ssa.Value.hints), lowered with it

    def __repr__(self) -> str:
        return f"<Node {self.op} : {self.type}>"


LEAVES = ("const", "param", "region_arg", "region_result")


@dataclass(eq=False)
class RegionStmt:
    """A statement that owns scopes — a run-time ``for`` (seed part 10), ``if`` or ``while`` — lowered
    to the registry op ``op`` with one region per scope, exactly as the op's RegionFlow reads:
    ``operands`` are the op's (control ones first), ``args[i]`` the leaves ("region_arg") that
    stand for scope i's region arguments, ``exits[i]`` the operands of its terminator (with
    its own leading operands, such as a while's condition, first) and
    ``results`` the leaves ("region_result") of the enclosing scope that stand for its results."""
    op: str
    operands: tuple[Node, ...]
    scopes: tuple[Scope, ...]
    args: tuple[tuple[Node, ...], ...]
    exits: tuple[tuple[Node, ...], ...] = ()
    results: tuple[Node, ...] = ()
    loc: Loc | None = None
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class CombineTree:
    """The combine function of a reduce or scan as traced (lowered to an ``ir.ssa.Combine``): a
    closed scope of its own, the leaves ("region_arg") that stand for its 2N scalar arguments and
    the N nodes it returns."""
    scope: Scope
    args: tuple[Node, ...]
    results: tuple[Node, ...]

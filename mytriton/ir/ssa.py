"""Typed SSA with structured regions.

A function body is a ``Region``: a list of ``Op``s. An op may own regions itself (``for`` owns its
body, whose block arguments are the induction variable and the loop-carried values). Values are
identified by object and named only when printed (``%3``); constants and parameters are operands
that print as literals and names, as in the seed posts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from .types import Type


@dataclass(frozen=True)
class Loc:
    """A position in the user's kernel source."""
    file: str
    line: int
    col: int
    source_line: str = ""
    function: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class Value:
    """An SSA value: an op result or a region argument."""
    __slots__ = ("type", "owner", "layout", "hints")

    def __init__(self, type: Type, owner: "Op | Region | None" = None):
        self.type = type
        self.owner = owner
        self.layout = None            # set by layout assignment for block values
        # the user's promises (tl.multiple_of, tl.max_contiguous, tl.max_constancy): kind -> a
        # power of 2 per dimension, read by the axis analysis (passes/axisinfo.py)
        self.hints = None

    def __repr__(self) -> str:
        return f"<Value {self.type} at {id(self):#x}>"


class Const(Value):
    """A compile-time constant scalar; prints as a literal."""
    __slots__ = ("value",)

    def __init__(self, value: Any, type: Type):
        super().__init__(type)
        self.value = value

    def key(self):
        v = self.value
        return ("const", self.type, type(v).__name__, repr(v))


class Param(Value):
    """A runtime kernel parameter; prints by name."""
    __slots__ = ("name", "align")

    def __init__(self, name: str, type: Type, align: int = 0):
        super().__init__(type)
        self.name = name
        self.align = align


class Region:
    """An ordered list of ops with block arguments (for a loop: the index, then carried values)."""

    def __init__(self, args: list[Value] | None = None, ops: list["Op"] | None = None):
        self.args = list(args or [])
        for a in self.args:
            a.owner = self
        self.ops: list[Op] = list(ops or [])
        self.parent: Op | None = None


class Op:
    """One SSA operation. ``name`` keys the op registry (ir/ops.py) for its semantics."""
    __slots__ = ("name", "operands", "results", "attrs", "regions", "loc")

    def __init__(self, name: str, operands: list[Value], result_types: list[Type],
                 attrs: dict | None = None, regions: list[Region] | None = None, loc: Loc | None = None):
        self.name = name
        self.operands = list(operands)
        self.results = [Value(t, self) for t in result_types]
        self.attrs = dict(attrs or {})
        self.regions = list(regions or [])
        for r in self.regions:
            r.parent = self
        self.loc = loc

    @property
    def result(self) -> Value:
        assert len(self.results) == 1, self.name
        return self.results[0]

    def __repr__(self) -> str:
        return f"<Op {self.name}>"


class Combine:
    """A closed region that an op carries as its ``combine`` attribute (the combine function of
    ``tl.reduce`` / ``tl.associative_scan``): its arguments are 2N scalars (the left operand's N
    values, then the right operand's), it ends in ``yield`` of N scalars and reads nothing from
    outside. Passes do not enter it (it is not one of the op's regions: no value flows between it
    and the enclosing code); two bodies are equal when they print the same."""

    def __init__(self, region: Region):
        self.region = region

    def __repr__(self) -> str:
        from .printer import Printer
        return Printer().combine_text(self)

    def __eq__(self, other) -> bool:
        return isinstance(other, Combine) and repr(self) == repr(other)

    def __hash__(self) -> int:
        return hash(repr(self))


@dataclass
class Function:
    name: str
    params: list[Param]
    body: Region
    constexprs: dict = field(default_factory=dict)
    num_warps: int = 4
    loc: Loc | None = None
    num_stages: int | None = None     # the buffers of a loop's pipelined dot operands (None: the default)
    globals_read: tuple = ()          # (namespace, name, value) of module constants the trace baked in
    # the device functions its ``call`` ops call (@jit(noinline=True) helpers), by symbol; each ends
    # with ``func_return``
    device_functions: dict = field(default_factory=dict)
    # the recipes of the tensor maps of descriptors made in the kernel that the runtime encodes at
    # launch (frontend/launch_maps.py), in the order of their parameters (the last ones)
    made_tensor_maps: list = field(default_factory=list)

    def __deepcopy__(self, memo):
        """Copies the IR; ``globals_read`` refers to live module namespaces, which are shared."""
        import copy
        memo[id(self.globals_read)] = self.globals_read
        clone = Function.__new__(Function)
        for name, value in vars(self).items():
            setattr(clone, name, copy.deepcopy(value, memo))
        return clone


def walk(region: Region) -> Iterator[Op]:
    """Every op in ``region`` and, recursively, in the regions of its ops (pre-order)."""
    for op in region.ops:
        yield op
        for r in op.regions:
            yield from walk(r)


def combine_bodies(op: Op) -> list[Region]:
    """The regions of the op's Combine attributes (not among ``op.regions``: see Combine)."""
    return [v.region for v in op.attrs.values() if isinstance(v, Combine)]


def replace_uses(region: Region, mapping: dict[Value, Value]) -> None:
    """Replace operands in ``region`` (recursively) according to ``mapping``."""
    if not mapping:
        return
    for op in walk(region):
        op.operands = [mapping.get(v, v) for v in op.operands]


def use_counts(region: Region) -> dict[Value, int]:
    counts: dict[Value, int] = {}
    for op in walk(region):
        for v in op.operands:
            counts[v] = counts.get(v, 0) + 1
    return counts


_MISSING = object()


def globals_changed(globals_read) -> str | None:
    """The first module constant that no longer has the value a compile baked in, as 'name'."""
    for namespace, name, value in globals_read:
        now = namespace.get(name, _MISSING)
        if now is not value and not (type(now) is type(value) and now == value):
            return name
    return None

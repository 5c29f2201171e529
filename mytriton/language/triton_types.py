"""Triton's type and value classes of the language that kernels name (``tl.tuple``, ``tl.slice``,
``tl.block_type``, ``tl.condition``, ``tl.const``, ``tl.void``, ``tl.str_to_ty``, ...), on
mytriton's own values: a kernel's tuples are Python tuples, its slices Python slices, its block
types the IR's ``BlockType`` -- so each class here makes and recognizes those
(``isinstance(t, tl.tuple)`` is true of a tuple in a kernel)."""
from __future__ import annotations

import builtins

from ..ir.ops import check_block_shape
from ..ir.types import SCALARS, BlockType, PointerType, ScalarType
from .core import Composite, constexpr_type, tensor


class _Recognizes(type):
    """``isinstance(v, cls)`` asks ``cls._recognizes(v)``: the mytriton value a Triton class stands for."""

    def __instancecheck__(cls, obj) -> bool:
        return cls._recognizes(obj)


class tuple(metaclass=_Recognizes):  # noqa: A001 - Triton's spelling
    """Triton's ``tl.tuple``: ``tl.tuple([a, b])`` is the tuple ``(a, b)`` (a kernel's tuples are
    Python tuples, of run-time and compile-time values alike); ``isinstance(t, tl.tuple)`` holds
    for them."""

    __mytriton_builtin__ = True

    def __new__(cls, args=(), type=None):
        return builtins.tuple(args)

    @staticmethod
    def _recognizes(obj) -> bool:
        return isinstance(obj, builtins.tuple)


class tuple_type:
    """The type of a tuple (``t.type`` in a kernel): its elements' types (a tensor's type, a
    ``constexpr_type`` for a compile-time value, a ``tuple_type`` for a nested tuple) and field names
    (a named tuple's); equal when both are."""

    __mytriton_builtin__ = True

    def __init__(self, types, fields=None):
        self.types = list(types)
        self.fields = list(fields or [""] * len(self.types))
        self.name = "[" + ",".join(f"{k}:{v}" for k, v in zip(self.fields, self.types)) + "]"

    def __str__(self):
        return self.name

    __repr__ = __str__

    def __iter__(self):
        return iter(self.types)

    def __len__(self):
        return len(self.types)

    def __getitem__(self, index):
        return self.types[index]

    def __eq__(self, other):
        return type(self) is type(other) and self.types == other.types and self.fields == other.fields

    def __hash__(self):
        return hash(builtins.tuple(map(repr, self.types)))


def type_of(value):
    """Triton's ``.type`` of a kernel value: a tensor's IR type, a tuple's ``tuple_type``, a
    compile-time value's ``constexpr_type``."""
    if isinstance(value, tensor):
        return value.type
    if isinstance(value, builtins.tuple):
        return tuple_type([type_of(v) for v in value], getattr(type(value), "_fields", None))
    if isinstance(value, Composite):
        return tensor_descriptor_type(value) if type(value).__name__ == "tensor_descriptor" else type(value)
    return constexpr_type(value)


class slice(metaclass=_Recognizes):  # noqa: A001 - Triton's spelling
    """Triton's ``tl.slice(start, stop, step)``: a Python slice (``t[1:]`` of a tuple)."""

    __mytriton_builtin__ = True

    def __new__(cls, start, stop, step):
        return builtins.slice(start, stop, step)

    @staticmethod
    def _recognizes(obj) -> bool:
        return isinstance(obj, builtins.slice)


class block_type(metaclass=_Recognizes):
    """Triton's ``tl.block_type(element_ty, shape)``: the type of a block (the IR's ``BlockType``;
    a tensor's ``.type`` is one); ``isinstance(x.type, tl.block_type)`` holds for blocks."""

    __mytriton_builtin__ = True

    def __new__(cls, element_ty, shape) -> BlockType:
        if not isinstance(element_ty, (ScalarType, PointerType)):
            raise TypeError(f"tl.block_type expects a dtype such as tl.float32, got {element_ty!r}")
        if not isinstance(shape, (builtins.tuple, list)):
            raise TypeError(f"tl.block_type expects a shape list, got {shape!r}")
        if not shape:
            raise TypeError("0d block_type is forbidden")
        return BlockType(check_block_shape(builtins.tuple(shape)), element_ty)

    @staticmethod
    def _recognizes(obj) -> bool:
        return isinstance(obj, BlockType)


class tensor_descriptor_type:
    """The type of a tensor descriptor (``desc.type``): its element type and block shape."""

    __mytriton_builtin__ = True

    def __init__(self, desc):
        self.block_type = BlockType(builtins.tuple(desc.block_shape), desc.dtype)

    def __eq__(self, other):
        return isinstance(other, tensor_descriptor_type) and self.block_type == other.block_type

    def __hash__(self):
        return hash(self.block_type)

    def __repr__(self):
        return f"tensordesc<{self.block_type.element}{list(self.block_type.shape)}>"


class condition:
    """``while tl.condition(c, disable_licm=False):``: the loop's run-time condition, and Triton's
    hint that loop-invariant code stays in the loop."""

    __mytriton_builtin__ = True

    def __init__(self, arg1, disable_licm=False):
        if not isinstance(disable_licm, bool):
            raise TypeError(f"tl.condition: disable_licm must be a compile-time bool, got {disable_licm!r}")
        self.condition = arg1
        self.disable_licm = disable_licm


class const:
    """Triton's annotation of a pointer parameter to constant data (``x_ptr: tl.const``): a store or
    an atomic through a pointer computed from it is refused, as in Triton ("Cannot store to a
    constant pointer"; mytriton follows the pointer through its arithmetic, not through a loop that
    carries it)."""


def mark_const(pointer: tensor) -> None:
    """``pointer`` (a parameter annotated ``tl.const``) points to constant data."""
    from .core import current_builder
    b = current_builder()
    b.const_pointers = getattr(b, "const_pointers", frozenset()) | {id(pointer.node)}


def check_writable(pointer) -> None:
    """Refuse a write through a pointer computed from a ``tl.const`` parameter."""
    from .core import current_builder
    consts = getattr(current_builder(), "const_pointers", None)
    if not consts or not isinstance(pointer, tensor):
        return
    stack, seen = [pointer.node], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if id(node) in consts:
            raise ValueError("Cannot store to a constant pointer")
        stack.extend(o for o in node.operands if isinstance(getattr(o.type, "scalar", o.type), PointerType))


class _Void:
    """``tl.void``: the type of no value."""

    name = "void"

    def __repr__(self):
        return "void"


void = _Void()


def str_to_ty(name, c=None):
    """Triton's type of a signature string: ``"fp32"``, ``"*fp16"`` (``"*kfp16"``: to constant data),
    a tuple of such strings, ``"constexpr"`` (``constexpr_type(c)``)."""
    if isinstance(name, builtins.tuple):
        return tuple_type([str_to_ty(x, c) for x in name], getattr(type(name), "_fields", None))
    if not isinstance(name, str) or not name:
        raise TypeError(f"str_to_ty expects a type string such as 'fp32' or '*fp16', got {name!r}")
    if name[0] == "*":
        inner = name[1:]
        return PointerType(str_to_ty(inner[1:] if inner.startswith("k") else inner, c))
    if name.startswith("constexpr"):
        return constexpr_type(c)
    if name.startswith("tensordesc"):
        raise TypeError("str_to_ty: tensor descriptor types are given to mytriton as 'tensordesc<...>' "
                        "signature strings of mytriton.compile, not built from them")
    aliases = {"u1": "i1", "B": "i1"}
    key = aliases.get(name, name)
    if key not in SCALARS:
        raise TypeError(f"unknown type {name!r}")
    return SCALARS[key]


__all__ = ["tuple", "tuple_type", "slice", "block_type", "tensor_descriptor_type", "condition", "const", "void",
           "str_to_ty", "type_of", "mark_const", "check_writable"]

"""Tuples as kernel parameters (Triton's tuple arguments: ``kernel[grid]((x, y), n)``).

A tuple parameter's type is a tuple of the types of its elements, nested as the argument is:
``{"ptrs": ("*fp32:16", ("*fp32", "i32"))}``. An element whose type is ``None`` is the constant
None, one of ``i32:1`` (or ``i64:1``) the constant 1 -- the values the JIT compiles in, as it does
for such parameters. The kernel receives the other elements as run-time leaves, named
``ptrs__0``, ``ptrs__1__0``, ... in order, and sees them put back together as a Python tuple
(indexed with constants, unpacked, passed to helpers). Every path that binds such a parameter (the
compiler, the JIT's launches, the CPU interpreter) takes the leaves, their types and their values
from here. Tensor descriptors inside a tuple are not supported (a TypeError at the launch)."""
from __future__ import annotations


def is_tuple_type(t) -> bool:
    return isinstance(t, (tuple, list))


def leaves(name: str, t) -> list[tuple[str, object]]:
    """``(leaf name, leaf type)`` of the tuple parameter ``name`` of type ``t``, in order: a type
    string, or None for the constant None."""
    out = []
    for i, element in enumerate(t):
        leaf = f"{name}__{i}"
        out += leaves(leaf, element) if is_tuple_type(element) else [(leaf, element)]
    return out


def leaf_values(name: str, value) -> list[tuple[str, object]]:
    """``(leaf name, value)`` of a tuple argument, in ``leaves`` order."""
    out = []
    for i, element in enumerate(value):
        leaf = f"{name}__{i}"
        out += leaf_values(leaf, element) if isinstance(element, tuple) else [(leaf, element)]
    return out


def rebuild(name: str, t, env: dict):
    """The tuple a kernel sees, its leaves taken (popped) from ``env``."""
    return tuple(rebuild(f"{name}__{i}", element, env) if is_tuple_type(element) else env.pop(f"{name}__{i}")
                 for i, element in enumerate(t))


def signature_of(value, leaf_type) -> tuple:
    """The type of a tuple argument, ``leaf_type(element)`` giving each non-tuple element's."""
    return tuple(signature_of(v, leaf_type) if isinstance(v, tuple) else leaf_type(v) for v in value)

"""Tensor maps of descriptors made in the kernel, encoded at launch.

On the sm_90a target the loads and stores of a descriptor passed from the host go through TMA
(frontend/descriptors.py). A descriptor made in the kernel (``tl.make_tensor_descriptor``) gets the
same where its base, shape and strides are the same in every program: pointer and integer
parameters, constants, and integer ``+``, ``-``, ``*`` and casts of them -- the common case,
``tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BLOCK_M, BLOCK_K])``. Its tensor map is then one
more kernel parameter (``<n>__made_tmap``), one the caller does not pass: the runtime evaluates the
*recipe* recorded here from the launch's arguments, checks TMA's rules on the values and encodes
the map (``runtime.driver.LaunchTensorMap``), remembered per distinct value. (Triton 3.6 makes such
maps in the kernel: every program writes its own into global scratch memory that
``triton.set_allocator`` provides, and fences it, before its first copy.) Only descriptors made in
the kernel's top-level code get one: every launch makes them, so the launch may refuse one TMA
cannot copy (a kernel that makes a descriptor under a run-time ``if``, or in a loop that may not
run, may be guarding exactly that). Those, and descriptors whose parts depend on the program
(``base + pid * stride``), keep ordinary loads and stores.

A build for several targets gives every target's kernel the same parameters (``hoist``): the
targets without TMA declare the tensor maps and leave them unused, so one loader signature serves
every image; the runtime encodes them only where the image it launches copies through them.

A recipe is JSON (it travels into built packages)::

    {"name": "d0__made_tmap", "dtype": "fp16", "block": [64, 64], "padding": "zero",
     "base": EXPR, "shape": [EXPR, ...], "strides": [EXPR, ...],   # every stride but the last (1)
     "where": "kernel.py:12", "box": [64, 64], "swizzle": 0}

    EXPR = ["param", name] | ["const", int] | ["add" | "sub" | "mul", type, EXPR, EXPR]
         | ["cast", type, EXPR] | ["addptr", element bytes, EXPR, EXPR]

with C's wrapping arithmetic in the integer type named (``i32``, ``i64``, ...); ``box`` and
``swizzle`` are how the map is encoded (``compiler.py`` fills them in from the backend: a dot's
ring may want swizzled boxes, else the block, unswizzled).
"""
from __future__ import annotations

import os

from ..ir.types import TMAP, PointerType
from .descriptors import DescriptorType

SUFFIX = "__made_tmap"
_MAX_DEPTH = 32                    # (deeper expressions than this stay in the kernel)


class _PerProgram(Exception):
    """A part of the descriptor that is not the same in every program (or not an expression the
    runtime evaluates)."""


def _expr(node, depth: int = 0) -> list:
    t = node.type
    if depth > _MAX_DEPTH or t is None:
        raise _PerProgram
    pointer = isinstance(t, PointerType)
    if not pointer and (not t.is_int or t.is_bool or getattr(t, "shape", None)):
        raise _PerProgram
    if node.op == "param":
        return ["param", node.attrs["name"]]
    if node.op == "const" and not pointer:
        return ["const", int(node.attrs["value"])]
    if node.op in ("add", "sub", "mul") and not pointer:
        a, b = node.operands
        return [node.op, t.name, _expr(a, depth + 1), _expr(b, depth + 1)]
    if node.op == "cast" and not pointer and node.operands[0].type.is_int and not node.operands[0].type.is_bool:
        return ["cast", t.name, _expr(node.operands[0], depth + 1)]
    if node.op == "addptr":
        ptr, offset = node.operands
        return ["addptr", max(1, t.pointee.bits // 8), _expr(ptr, depth + 1), _expr(offset, depth + 1)]
    raise _PerProgram


def tensor_map(builder, base, shape, strides, block_shape, padding: str):
    """The tensor-map parameter (a scalar tensor of type ``tmap``) of the descriptor that
    ``tl.make_tensor_descriptor`` makes of these parts, or None where its copies stay in the
    threads: no hoisting in this build, a block TMA cannot copy, parts that vary by program --
    or a target without TMA, which still declares the parameter (see the module's docstring)."""
    if not getattr(builder, "hoist_tensor_maps", False) or builder.scope is not builder.root:
        return None
    desc = DescriptorType(base.dtype.pointee.name, tuple(block_shape), padding)
    if not desc.tma_allowed():
        return None
    try:
        recipe = {"dtype": desc.dtype, "block": list(block_shape), "padding": padding, "base": _expr(base.node),
                  "shape": [_expr(s.node) for s in shape], "strides": [_expr(s.node) for s in strides[:-1]]}
    except _PerProgram:
        return None
    made = builder.made_tensor_maps
    key = repr(recipe)
    if key not in made:
        taken = set(builder.param_names) | {r["name"] for r in made.values()}
        n = len(made)
        while f"d{n}{SUFFIX}" in taken:
            n += 1
        loc = builder.loc
        where = f"{os.path.basename(loc.file)}:{loc.line}" if loc is not None else "the kernel"
        made[key] = {"name": f"d{n}{SUFFIX}", **recipe, "where": where}
        builder.made_tensor_map_nodes[key] = builder.param(made[key]["name"], TMAP, 0)
    if not builder.tma:
        return None
    from ..language.core import tensor
    return tensor(builder.made_tensor_map_nodes[key])


def params(builder) -> list[tuple[str, object, int]]:
    """The kernel parameters of the tensor maps made so far, after the caller's (name, type, 0)."""
    return [(r["name"], TMAP, 0) for r in builder.made_tensor_maps.values()]


def with_encodings(made: list[dict], encodings: dict) -> list[dict]:
    """The recipes ``made`` (in parameter order) with how each map is encoded: as ``encodings``
    (the backend's ``tensor_maps``: name -> box and swizzle) says, else its block, unswizzled."""
    out = []
    for r in made:
        enc = encodings.get(r["name"]) or {"box": r["block"], "swizzle": 0}
        out.append({**r, "box": list(enc["box"]), "swizzle": int(enc["swizzle"])})
    return out

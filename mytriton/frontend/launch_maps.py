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


_OPS = ("add", "sub", "mul")
_RECIPE_KEYS = {"name", "dtype", "block", "padding", "base", "shape", "strides", "where", "box", "swizzle"}


def check_recipes(recipes, params=None) -> None:
    """ValueError unless ``recipes`` is a list of recipes of the form above, every value of the type
    it claims (an integer an ``int`` of 64 bits, a type name a known integer type, a parameter one
    of ``params`` where they are given): recipes travel through caches and packages, and each
    value of one reaches generated code (the C API's launch) or the runtime's arithmetic."""
    from ..runtime.driver import _SWIZZLES, DTYPES
    if type(recipes) not in (list, tuple):
        raise ValueError(f"tensor-map recipes must be a list, got {type(recipes).__name__}")
    for r in recipes:
        if type(r) is not dict or set(r) - _RECIPE_KEYS or not {"name", "dtype", "base", "shape"} <= set(r):
            raise ValueError(f"a tensor-map recipe must be a mapping of {sorted(_RECIPE_KEYS)}, got {r!r:.200}")
        if type(r["name"]) is not str or not r["name"].isascii() or not r["name"].isidentifier():
            raise ValueError(f"tensor-map recipe name {r['name']!r:.80} is not an identifier")
        if type(r["dtype"]) is not str or r["dtype"] not in DTYPES:
            raise ValueError(f"tensor-map recipe {r['name']}: unknown dtype {r['dtype']!r:.80}")
        if r.get("padding", "zero") not in ("zero", "nan") or type(r.get("where", "")) is not str:
            raise ValueError(f"tensor-map recipe {r['name']}: bad padding or location")
        for field, most in (("block", 1 << 16), ("box", 256)):
            if field in r and not (type(r[field]) is list and 0 < len(r[field]) <= 5 and
                                   all(type(b) is int and 0 < b <= most for b in r[field])):
                raise ValueError(f"tensor-map recipe {r['name']}: {field} must be 1 to 5 ints in 1..{most}")
        if "swizzle" in r and (type(r["swizzle"]) is not int or r["swizzle"] not in _SWIZZLES):
            raise ValueError(f"tensor-map recipe {r['name']}: swizzle must be one of {sorted(_SWIZZLES)}")
        if type(r["shape"]) is not list or not 0 < len(r["shape"]) <= 5 or \
                type(r.get("strides", [])) is not list or len(r.get("strides", [])) != len(r["shape"]) - 1:
            raise ValueError(f"tensor-map recipe {r['name']}: shape must be 1 to 5 expressions and strides one fewer")
        for expr in [r["base"], *r["shape"], *r.get("strides", [])]:
            _check_expr(expr, r["name"], params, 0)


def _check_expr(expr, name: str, params, depth: int) -> None:
    from ..runtime.driver import DTYPES
    bad = ValueError(f"tensor-map recipe {name}: malformed expression {expr!r:.200}")
    if type(expr) is not list or not expr or depth > _MAX_DEPTH:
        raise bad
    kind, args = expr[0], expr[1:]
    integer = lambda v: type(v) is int and -2**63 <= v < 2**63      # noqa: E731
    int_type = lambda t: type(t) is str and t in DTYPES and DTYPES[t].kind in ("int", "uint")  # noqa: E731
    if kind == "param" and len(args) == 1 and type(args[0]) is str and args[0].isidentifier() \
            and (params is None or args[0] in params):
        return
    if kind == "const" and len(args) == 1 and integer(args[0]):
        return
    if kind in _OPS and len(args) == 3 and int_type(args[0]):
        return _check_exprs(args[1:], name, params, depth)
    if kind == "cast" and len(args) == 2 and int_type(args[0]):
        return _check_exprs(args[1:], name, params, depth)
    if kind == "addptr" and len(args) == 3 and type(args[0]) is int and 0 < args[0] <= 16:
        return _check_exprs(args[1:], name, params, depth)
    raise bad


def _check_exprs(exprs, name: str, params, depth: int) -> None:
    for e in exprs:
        _check_expr(e, name, params, depth + 1)

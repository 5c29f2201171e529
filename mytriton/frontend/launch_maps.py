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
import reprlib

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



# -- checking a recipe that comes back from a cache or a package -----------------------------------

class MalformedRecipe(ValueError):
    """A recipe that is not of the form above; the message says where in it and why."""


_shown = reprlib.Repr()         # (what a message shows of a bad value: short, one line)
_shown.maxlevel, _shown.maxstring, _shown.maxother, _shown.maxlong, _shown.maxlist = 3, 80, 80, 60, 6
_ARITY = {"param": (2, '["param", name]'), "const": (2, '["const", integer]'),
          "cast": (3, '["cast", type, expression]'), "addptr": (4, '["addptr", element bytes, pointer, offset]'),
          "add": (4, '["add", type, expression, expression]'), "sub": (4, '["sub", type, expression, expression]'),
          "mul": (4, '["mul", type, expression, expression]')}
_INT_TYPES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
_KEYS = ("name", "dtype", "block", "padding", "base", "shape", "strides", "where", "box", "swizzle")
_CHECK_DEPTH = 64               # (the frontend records at most _MAX_DEPTH + 1 levels)


def check_recipes(recipes, params=None, kernel: str = "the kernel") -> None:
    """MalformedRecipe unless *recipes* is a list of recipes of the form above, each value of the
    type it claims (an integer an ``int`` of 64 bits, a type a known integer type, a parameter one
    of *params* (name -> ``runtime.driver.ParamType``) and an integer or a pointer, where they are
    given): recipes travel through caches and packages, and each value of one reaches generated C
    (``--emit-c``) or the runtime's arithmetic."""
    if type(recipes) not in (list, tuple):
        raise MalformedRecipe(f"made_tensor_maps {_shown.repr(recipes)} is not a list of recipes")
    for i, r in enumerate(recipes):
        try:
            check_recipe(r, params, kernel)
        except MalformedRecipe as exc:
            raise MalformedRecipe(f"tensor map {i} is malformed: {exc}") from None


def check_recipe(r, params=None, kernel: str = "the kernel") -> None:
    """MalformedRecipe unless *r* is one recipe of the form above (see :func:`check_recipes`)."""
    from ..runtime.driver import _SWIZZLES, DTYPES, tma_data_type
    if type(r) is not dict:
        raise MalformedRecipe(f"{_shown.repr(r)} is not a mapping")
    missing = [key for key in _KEYS if key not in r]
    if missing or len(r) != len(_KEYS):
        extra = [key for key in r if key not in _KEYS]
        raise MalformedRecipe(f"it lacks {', '.join(map(repr, missing))}" if missing
                              else f"it has unknown keys {', '.join(map(_shown.repr, extra))}")
    name, dtype, padding, shape, strides, box, swizzle = (r[k] for k in ("name", "dtype", "padding", "shape",
                                                                          "strides", "box", "swizzle"))
    if type(name) is not str or not name.isascii() or not name.isidentifier():
        raise MalformedRecipe(f"name {_shown.repr(name)} is not an identifier")
    if type(dtype) is not str or dtype not in DTYPES:
        raise MalformedRecipe(f"dtype {_shown.repr(dtype)} is not a dtype ({', '.join(DTYPES)})")
    if type(padding) is not str or padding not in ("nan", "zero"):
        raise MalformedRecipe(f"padding {_shown.repr(padding)} is not one of 'nan' or 'zero'")
    if tma_data_type(dtype, padding) is None:
        raise MalformedRecipe(f"TMA cannot copy {dtype} with {padding} padding")
    if type(shape) is not list or not 1 <= len(shape) <= 5:
        raise MalformedRecipe(f"shape {_shown.repr(shape)} is not a list of 1 to 5 expressions")
    rank = len(shape)
    if type(strides) is not list or len(strides) != rank - 1:
        raise MalformedRecipe(f"strides {_shown.repr(strides)} is not a list of {rank - 1} expression(s) "
                              "(the rank less one)")
    for field, most in (("block", 1 << 16), ("box", 256)):
        if type(r[field]) is not list or len(r[field]) != rank or \
                not all(type(b) is int and 1 <= b <= most for b in r[field]):
            raise MalformedRecipe(f"{field} {_shown.repr(r[field])} is not {rank} integers from 1 to {most}")
    if type(swizzle) is not int or swizzle not in _SWIZZLES:
        raise MalformedRecipe(f"swizzle {_shown.repr(swizzle)} is not one of 0, 32, 64 or 128")
    if type(r["where"]) is not str:
        raise MalformedRecipe(f"where {_shown.repr(r['where'])} is not a string")
    _check_expr(r["base"], params, kernel, "base", "base", 0)
    for field, items in (("shape", shape), ("strides", strides)):
        for i, e in enumerate(items):
            _check_expr(e, params, kernel, f"{field}[{i}]", f"{field}[{i}]", 0)


def _check_expr(expr, params, kernel: str, path: str, field: str, depth: int) -> None:
    from ..runtime.driver import DTYPES
    if depth > _CHECK_DEPTH:
        raise MalformedRecipe(f"{field}: nested deeper than {_CHECK_DEPTH} operations")
    if type(expr) is not list or not expr:
        raise MalformedRecipe(f"{path}: {_shown.repr(expr)} is not an expression (a list)")
    op = expr[0]
    if type(op) is not str or op not in _ARITY:
        raise MalformedRecipe(f"{path}: unknown operation {_shown.repr(op)} (expected "
                              f"{', '.join(sorted(_ARITY)[:-1])} or {sorted(_ARITY)[-1]})")
    if len(expr) != _ARITY[op][0]:
        raise MalformedRecipe(f"{path}: {_shown.repr(expr)} is not {_ARITY[op][1]}")
    if op == "param":
        name = expr[1]
        if type(name) is not str or not name.isidentifier() or (params is not None and name not in params):
            raise MalformedRecipe(f"{path}: {_shown.repr(name)} is not a run-time parameter of {kernel}")
        t = params[name] if params is not None else None
        if t is not None and not t.is_pointer and DTYPES[t.dtype].kind not in ("int", "uint"):
            raise MalformedRecipe(f"{path}: parameter {name} is {t.dtype}, not an integer or a pointer")
        return
    if op == "const":
        value = expr[1]
        if type(value) is not int:
            raise MalformedRecipe(f"{path}: the constant {_shown.repr(value)} is not an integer")
        if not -2**63 <= value < 2**63:
            raise MalformedRecipe(f"{path}: the constant {value} does not fit an int64_t")
        return
    if op == "addptr":
        if type(expr[1]) is not int or not 1 <= expr[1] <= 16:
            raise MalformedRecipe(f"{path}: the element size {_shown.repr(expr[1])} is not an integer from 1 to 16")
    elif type(expr[1]) is not str or expr[1] not in _INT_TYPES:
        raise MalformedRecipe(f"{path}: the type {_shown.repr(expr[1])} is not an integer type "
                              f"({', '.join(_INT_TYPES[:-1])} or {_INT_TYPES[-1]})")
    for i in range(2, len(expr)):
        _check_expr(expr[i], params, kernel, f"{path}[{i}]", field, depth + 1)

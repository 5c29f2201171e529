"""Forms of Triton's kernels that the code generator handles with these helpers: ``@jit`` methods
of aggregates bound to their value, ``@must_use_result`` marks, the merge error of values of
different structure from the branches of a run-time ``if``, a ``torch.Size`` constexpr, and
parameters annotated with a dtype (``x: tl.float32``)."""
from __future__ import annotations

import ast

from ..errors import CompilationError
from ..ir.types import BlockType, PointerType, ScalarType
from ..language.core import Composite, tensor


class BoundJIT:
    """A ``@jit`` method of an aggregate, read from one: called with it as ``self``."""

    def __init__(self, fn, self_):
        self.fn, self.self_ = fn, self_
        self._must_use_result = getattr(fn, "_must_use_result", False)


def must_use_result_mark(fn):
    """Triton's ``@must_use_result`` mark of ``fn`` (read from its own __dict__: no host code runs)."""
    try:
        return object.__getattribute__(fn, "__dict__").get("_must_use_result", False)
    except AttributeError:
        return False


def is_name_path(node: ast.expr) -> bool:
    """``f`` or ``a.b.f``: looking it up twice computes nothing twice."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def mismatch_message(name: str, t, e, describe) -> str:
    """Why two values of ``name`` cannot merge after a run-time ``if``: as in Triton, a tensor
    descriptor's (a block pointer's) type includes its block shape, so both branches must make it
    with the same one (the shape and strides may differ: they are run-time values)."""
    text = f"`{name}` is {describe(t)} in the then branch of this run-time `if` and {describe(e)} of "
    blocks = [getattr(v, "block_shape", None) for v in (t, e)]
    if type(t) is type(e) and isinstance(t, Composite) and None not in blocks and blocks[0] != blocks[1]:
        return (text + f"another block shape in the else branch ({list(blocks[0])} and {list(blocks[1])}): its "
                f"type includes the block shape, which must be the same in both branches (as in Triton)")
    return text + "another structure in the else branch"


def is_torch_size(value) -> bool:
    """A ``torch.Size`` (a tuple of ints), told by its class's name without importing torch."""
    cls = type(value)
    return issubclass(cls, tuple) and type.__dict__["__module__"].__get__(cls, type) == "torch" \
        and type.__dict__["__qualname__"].__get__(cls, type) == "Size" and all(type(v) is int for v in value)


def annotated_dtypes(gen, fn_def: ast.FunctionDef, env: dict) -> None:
    """Parameters annotated with a dtype (``x: tl.float32``) take that type, as in Triton (which
    specializes the argument to it): the run-time scalar converted at the kernel's start. Other
    annotations (``tl.tensor``, ``tl.const``, strings, host types) change nothing, as in Triton."""
    from .jit import is_constexpr_annotation
    args = fn_def.args
    for a in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        if a.annotation is None or is_constexpr_annotation(a.annotation) or not isinstance(env.get(a.arg), tensor):
            continue
        try:
            ann = gen.visit(a.annotation)
        except CompilationError:
            continue
        from ..language import triton_types
        if ann is triton_types.const and isinstance(env[a.arg].dtype, PointerType):
            triton_types.mark_const(env[a.arg])
            continue
        if not isinstance(ann, ScalarType):
            continue
        value = env[a.arg]
        if isinstance(value.type, BlockType) or isinstance(value.dtype, PointerType):
            raise gen.error(a, f"parameter '{a.arg}' is annotated tl.{ann.info.triton} but is given "
                               f"{'a pointer' if isinstance(value.dtype, PointerType) else 'a block'} ({value.type})")
        env[a.arg] = value.to(ann)

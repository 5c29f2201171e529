"""``tl.map_elementwise(scalar_fn, *args, pack=1)``: a ``@jit`` function of scalars applied to every
element (or group of ``pack`` elements) of the broadcast blocks, with Triton 3.6's signature. The
function is traced once into a closed body (as a combine function is), with run-time ``if``s and
early returns; the CUDA backend calls it as a lambda per group of registers, the interpreter runs it
on every element as a program of its own.
"""
from __future__ import annotations

from .core import builtin, current_builder, is_block, tensor, to_tensor

__all__ = ["map_elementwise"]


@builtin
def map_elementwise(scalar_fn, *args, pack=1):
    """``scalar_fn`` on each element of ``args`` (broadcast to one shape); with ``pack`` > 1 it takes
    ``pack`` elements of the first operand, then of the second, ... and returns ``pack`` values per
    result. One result: a tensor, several: a tuple."""
    from ..frontend.codegen import trace_combine
    from . import broadcast_to
    what = "tl.map_elementwise"
    if type(pack) is not int or pack < 1 or pack & (pack - 1):
        raise TypeError(f"{what}: pack must be a power of 2 (a constexpr), got {pack!r}")
    if not args:
        raise TypeError(f"{what} takes at least one operand")
    xs = [to_tensor(a) for a in args]
    shape = ()
    for x in xs:
        if is_block(x) and len(x.shape) > len(shape):
            shape = tuple(x.shape)
    xs = [x if not shape or (is_block(x) and tuple(x.shape) == shape) else broadcast_to(x, shape) for x in xs]
    b = current_builder()
    tree = trace_combine(b, scalar_fn, [x.dtype for x in xs for _ in range(pack)], what, any_results=True)
    results = [tensor(n) for n in b.multi("map_elementwise", [x.node for x in xs], {"pack": pack, "combine": tree})]
    return results[0] if len(results) == 1 else tuple(results)

"""``tl.inline_asm_elementwise``: PTX run on each group of ``pack`` elements, with Triton 3.6's
signature and operand numbering (``$0``... the output registers, then the inputs'; ``pack``
elements narrower than 32 bits share a 32-bit register). The CUDA backend emits it as ``asm``
statements in the kernel; the CPU interpreter and the MLIR backend cannot run PTX and refuse it.
"""
from __future__ import annotations

from ..ir.types import PointerType, ScalarType
from .core import builtin, current_builder, is_block, tensor, to_tensor

__all__ = ["inline_asm_elementwise"]


@builtin
def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack):
    """The results (one tensor, or a tuple for a sequence of dtypes) of ``asm`` run on the
    broadcast ``args`` element group by element group. ``is_pure=False`` keeps it where it stands
    (it may read or write memory, as through pointer arguments)."""
    from . import broadcast_to
    if not isinstance(asm, str) or not isinstance(constraints, str):
        raise TypeError("tl.inline_asm_elementwise: asm and constraints must be constexpr strings")
    single = isinstance(dtype, (ScalarType, PointerType))
    dtypes = (dtype,) if single else tuple(dtype)
    if not dtypes or not all(isinstance(d, ScalarType) for d in dtypes):
        raise TypeError(f"tl.inline_asm_elementwise: dtype must be a dtype or a sequence of dtypes, got {dtype!r}")
    if type(pack) is not int:
        raise TypeError(f"tl.inline_asm_elementwise: pack must be a constexpr int, got {pack!r}")
    xs = [to_tensor(a) for a in (args if isinstance(args, (tuple, list)) else [args])]
    for d in (*dtypes, *(x.dtype for x in xs)):
        if isinstance(d, ScalarType) and d.is_bool:
            raise TypeError("tl.inline_asm_elementwise: int1 operands and results are not supported (convert to "
                            "tl.int8 or tl.int32)")
    shape = ()
    for x in xs:
        if is_block(x):
            shape = tuple(x.shape) if len(x.shape) >= len(shape) else shape
    if shape:
        xs = [x if is_block(x) and tuple(x.shape) == shape else broadcast_to(x, shape) for x in xs]
    op = "inline_asm" if is_pure else "inline_asm_effects"
    attrs = {"asm": asm, "constraints": tuple(c.strip() for c in constraints.split(",")), "pack": pack,
             "dtypes": dtypes}
    results = tuple(tensor(n) for n in current_builder().multi(op, [x.node for x in xs], attrs))
    return results[0] if single else results

"""Calling a libdevice function (``ir/libdevice.FUNCTIONS``) from the language: Triton's dispatch —
the argument dtypes as they are (Python numbers as ``tl`` constants: int32, fp32), else promoted
to one type — then the op of the registry, its arguments converted to the signature's types."""
from __future__ import annotations

from ..ir.libdevice import FUNCTIONS
from ..ir.types import PointerType, promote
from .core import builtin, make, tensor, to_tensor


def call(name: str, *args) -> tensor:
    fn = FUNCTIONS[name]
    xs = [to_tensor(a) for a in args]
    if any(isinstance(x.dtype, PointerType) for x in xs):
        raise TypeError(f"libdevice.{name} takes numbers, not pointers ({', '.join(str(x.dtype) for x in xs)})")
    types = tuple(x.dtype.name for x in xs)
    if types not in fn.signatures:
        common = xs[0].dtype
        for x in xs[1:]:
            common = promote(common, x.dtype)
        types = (common.name,) * len(xs)
        if types not in fn.signatures:
            got = ", ".join(str(x.dtype) for x in xs)
            raise TypeError(f"libdevice.{name} takes {fn.signatures_text}, got ({got}); convert with .to()")
        xs = [x if x.dtype == common else x.to(common) for x in xs]
    return make(f"libdevice.{name}", *xs)


def function(name: str):
    """The language function of libdevice function ``name``."""
    fn = FUNCTIONS[name]

    @builtin
    def run(*args):
        if len(args) != fn.arity:
            raise TypeError(f"libdevice.{name} takes {fn.arity} argument{'s' if fn.arity > 1 else ''}, "
                            f"got {len(args)}")
        return call(name, *args)
    run.__name__ = run.__qualname__ = name
    run.__doc__ = (f"libdevice's {name}: " + " or ".join(
        f"({', '.join(sig)}) -> {res} by {sym}" for sig, (sym, res) in fn.signatures.items()) + (
        f"; {fn.doc}" if fn.doc else ""))
    return run

"""``libdevice``: CUDA's math library functions, spelt as Triton's
``triton.language.extra.cuda.libdevice`` spells them (the subset of ``ir/libdevice.FUNCTIONS``):
each takes fp32 or fp64 tensors or numbers (``pow`` also an int32 exponent; ``umulhi``
integers) and calls the libdevice function Triton calls, so a kernel computes the same bits."""
from ....ir.libdevice import FUNCTIONS as _FUNCTIONS
from ....ir.libdevice import NOT_IN_LIBDEVICE_MODULE as _HIDDEN
from ...libdevice_call import function as _function

__all__ = sorted(set(_FUNCTIONS) - _HIDDEN)
for _name in __all__:
    globals()[_name] = _function(_name)

"""``mytriton.language.extra.cuda``: CUDA's math library as Triton exposes it (``libdevice``)."""
from . import libdevice

__all__ = ["libdevice"]

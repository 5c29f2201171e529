"""``mytriton.language.extra``: as Triton's ``triton.language.extra`` (``libdevice``, ``cuda``)."""
from . import cuda
from .cuda import libdevice

__all__ = ["cuda", "libdevice"]

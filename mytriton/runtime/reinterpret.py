"""``mytriton.reinterpret(tensor, dtype)``: a tensor's memory passed to a kernel as another element
type, as Triton's ``triton.reinterpret`` — chiefly fp8 data held in uint8/int8 tensors (a PyTorch
without float8 dtypes, or bits made by hand). The launch reads the wrapper's
address, device and ``dtype`` (a ``tl`` dtype): the kernel is specialized for ``*dtype``. A numpy
array (the CPU interpreter's argument) is viewed as the dtype's numpy type instead."""
from __future__ import annotations


class TensorWrapper:
    """``base`` (an object with ``data_ptr()``: a PyTorch tensor, a ``DeviceArray``...) whose
    elements a kernel sees as ``dtype``."""

    def __init__(self, base, dtype):
        self.base, self.dtype = base, dtype
        self.shape = getattr(base, "shape", None)
        self.device = getattr(base, "device", None)

    def data_ptr(self) -> int:
        return self.base.data_ptr()

    def get_device(self) -> int:
        """The base's device ordinal (a tensor's ``get_device()``, a ``DeviceArray``'s ``device``),
        else -1: the current context's."""
        get = getattr(self.base, "get_device", None)
        if callable(get):
            return get()
        device = getattr(self.base, "device", None)
        return device if type(device) is int else -1

    @property
    def is_cuda(self) -> bool:
        return getattr(self.base, "is_cuda", True)

    def is_pinned(self) -> bool:
        pinned = getattr(self.base, "is_pinned", None)
        return bool(pinned()) if callable(pinned) else False

    def stride(self, *args):
        return self.base.stride(*args)

    def numel(self) -> int:
        return self.base.numel()

    def element_size(self) -> int:
        return self.base.element_size()

    def cpu(self) -> "TensorWrapper":
        return TensorWrapper(self.base.cpu(), self.dtype)

    def to(self, device) -> "TensorWrapper":
        return TensorWrapper(self.base.to(device), self.dtype)

    def clone(self) -> "TensorWrapper":
        return TensorWrapper(self.base.clone(), self.dtype)

    def copy_(self, other: "TensorWrapper") -> None:
        self.base.copy_(other.base if isinstance(other, TensorWrapper) else other)

    def new_empty(self, sizes) -> "TensorWrapper":
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)

    def __str__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base})"

    __repr__ = __str__


def reinterpret(tensor, dtype):
    """``tensor`` seen as elements of ``dtype`` (a ``tl`` dtype; as in Triton, another width is the
    caller's business). Reinterpreting a wrapper as its base's own dtype gives the base back."""
    from ..ir.types import ScalarType
    if not isinstance(dtype, ScalarType):
        raise TypeError(f"reinterpret: dtype must be a mytriton.language dtype (tl.float8e4nv, ...), got {dtype!r}")
    if isinstance(tensor, TensorWrapper):
        return tensor.base if dtype == tensor.base.dtype else TensorWrapper(tensor.base, dtype)
    if type(tensor).__module__ == "numpy" and hasattr(tensor, "view"):
        import numpy as np
        from ..ir.ops import np_dtype
        return tensor.view(np.dtype(np_dtype(dtype)))
    if callable(getattr(tensor, "data_ptr", None)):
        return TensorWrapper(tensor, dtype)
    raise TypeError(f"Cannot reinterpret a {type(tensor).__name__} (it needs data_ptr(), or a numpy array)")

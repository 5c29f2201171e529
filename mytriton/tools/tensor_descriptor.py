"""``TensorDescriptor``: a strided N-d array and a block shape made on the host and passed to a
kernel (Triton's ``triton.tools.tensor_descriptor.TensorDescriptor``). In the kernel the parameter
is a ``tl.tensor_descriptor`` (``desc.load(offsets)``, ``desc.store(offsets, value)``, ...), as if
the kernel had made it with ``tl.make_tensor_descriptor``; it is passed as its base pointer, shape
and strides (``mytriton/frontend/descriptors.py``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_RANK = 5


@dataclass
class TensorDescriptor:
    """Triton's rules, checked here: 1 to 5 dimensions, a 16-byte aligned base, every stride but
    the last (which must be 1) a multiple of 16 bytes, positive shapes, power-of-2 block
    dimensions, ``padding`` "zero" or "nan" (floats only)."""
    base: Any
    shape: list
    strides: list
    block_shape: list
    padding: str = "zero"

    def __post_init__(self):
        self.shape, self.strides, self.block_shape = list(self.shape), list(self.strides), list(self.block_shape)
        rank = len(self.shape)
        if not 0 < rank <= MAX_RANK:
            raise ValueError(f"TensorDescriptor: 1 to {MAX_RANK} dimensions, got a shape of {rank}")
        if len(self.strides) != rank or len(self.block_shape) != rank:
            raise ValueError(f"TensorDescriptor: shape, strides and block_shape must have the same length, got "
                             f"{self.shape}, {self.strides}, {self.block_shape}")
        for what, values in (("shape", self.shape), ("strides", self.strides), ("block_shape", self.block_shape)):
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                raise TypeError(f"TensorDescriptor: {what} must hold ints, got {values}")
        if any(d <= 0 for d in self.shape):
            raise ValueError(f"TensorDescriptor: shape must be positive, got {self.shape}")
        if any(b <= 0 or b & (b - 1) for b in self.block_shape):
            raise ValueError(f"TensorDescriptor: block_shape must hold powers of 2, got {self.block_shape}")
        if self.strides[-1] != 1:
            raise ValueError(f"TensorDescriptor: the last dimension must be contiguous (stride 1), got strides "
                             f"{self.strides}")
        size = _element_size(self.base)
        if any(s * size % 16 for s in self.strides[:-1]):
            raise ValueError(f"TensorDescriptor: every stride but the last must be a multiple of 16 bytes, got "
                             f"{self.strides} of {size}-byte elements")
        if self.block_shape[-1] * size < 16:
            raise ValueError(f"TensorDescriptor: the block's last dimension must hold at least 16 bytes, got "
                             f"{self.block_shape[-1]} elements of {size} bytes")
        address = _address(self.base)
        if address is not None and address % 16:
            raise ValueError(f"TensorDescriptor: the base must be 16-byte aligned, got address {address:#x}")
        if self.padding not in ("zero", "nan"):
            raise ValueError(f"TensorDescriptor: padding must be 'zero' or 'nan', got {self.padding!r}")

    @staticmethod
    def from_tensor(tensor: Any, block_shape: list, padding: str = "zero") -> "TensorDescriptor":
        """The descriptor of the whole of ``tensor`` (its shape and strides, in elements)."""
        strides = tensor.stride() if callable(getattr(tensor, "stride", None)) else \
            [s // tensor.itemsize for s in tensor.strides]        # (numpy: bytes)
        return TensorDescriptor(tensor, list(tensor.shape), list(strides), list(block_shape), padding)


def _element_size(base) -> int:
    if callable(getattr(base, "element_size", None)):           # torch
        return int(base.element_size())
    dtype = getattr(base, "dtype", None)
    size = getattr(dtype, "itemsize", None)
    if not isinstance(size, int):
        raise TypeError(f"TensorDescriptor: the base must be an array (a torch tensor, numpy or CuPy array, "
                        f"DeviceArray), got {type(base).__name__}")
    return size


def _address(base) -> int | None:
    """The base's address where it is cheaply known (None: checked at launch)."""
    if callable(getattr(base, "data_ptr", None)):               # torch, DeviceArray
        return int(base.data_ptr())
    interface = getattr(base, "__array_interface__", None) or getattr(base, "__cuda_array_interface__", None)
    if isinstance(interface, dict) and isinstance(interface.get("data"), tuple):
        return int(interface["data"][0])
    return None

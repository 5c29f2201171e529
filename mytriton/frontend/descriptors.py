"""Tensor descriptors as kernel parameters (``mytriton.tools.tensor_descriptor.TensorDescriptor``,
Triton's host-side descriptors).

A descriptor parameter's type is ``tensordesc<fp16[64, 64]>`` (Triton's spelling; ``,nan`` after
the block shape for NaN padding): element type, block shape and padding are part of the
specialization. The kernel receives it as run-time leaves — the base pointer (16-byte aligned, as
the descriptor promises), the shape (i32 each) and every stride but the last (i64 each; the last is
the constant 1) — and sees them put back together as a ``tl.tensor_descriptor``. Every path that
binds such a parameter (the compiler, the JIT's launches, the CPU interpreter) takes the leaves,
their types and their values from here.

On Hopper (the ``sm_90a`` target of the CUDA backend) a descriptor whose block TMA can copy (2 to 5
dimensions of at most 256 elements, at most 64 KiB, an element type TMA knows for its padding)
has one more leaf, its tensor map (``name__tmap``, type ``tmap``): 128 bytes the runtime encodes
on the host for each distinct argument (``runtime.driver.tensor_map``) and passes by value. Its
loads and stores are then TMA copies (``tma_load`` / ``tma_store``); its atomics stay ordinary."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..tools.tensor_descriptor import TensorDescriptor

_TYPE = re.compile(r"tensordesc<\s*(\w+)\s*\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]\s*(?:,\s*(zero|nan)\s*)?>")


@dataclass(frozen=True)
class DescriptorType:
    dtype: str                   # the element type ("fp16")
    block_shape: tuple
    padding: str = "zero"
    tma: bool = False            # its loads and stores go through a tensor map (TMA)

    @property
    def rank(self) -> int:
        return len(self.block_shape)

    def text(self) -> str:
        padding = ",nan" if self.padding == "nan" else ""
        return f"tensordesc<{self.dtype}[{', '.join(map(str, self.block_shape))}]{padding}>"

    def leaves(self, name: str) -> list[tuple[str, str]]:
        """(leaf name, type string) of the parameter ``name``, in the order they are passed."""
        from ..runtime.driver import DTYPES
        size = DTYPES[self.dtype].itemsize
        divisor = 16 // size if size < 16 else 1    # (strides are multiples of 16 bytes)
        stride = "i64" + (f":{divisor}" if divisor > 1 else "")
        types = [f"*{self.dtype}:16"] + ["i32"] * self.rank + [stride] * (self.rank - 1) + ["tmap"] * self.tma
        return list(zip(leaf_names(name, self.rank, self.tma), types))

    def tma_allowed(self) -> bool:
        """Whether TMA can copy this descriptor's blocks (on a GPU that has it): 2 to 5 dimensions
        (the H200's driver refused to encode a 1-d tensor map of 1000 fp32 in 128-element boxes:
        CUDA_ERROR_INVALID_VALUE), each block dimension at most 256 elements (the last holds at
        least 16 bytes: TensorDescriptor checks it), at most 64 KiB a block, and an element type
        TMA copies with this padding."""
        from ..runtime.driver import DTYPES, tma_data_type
        size = DTYPES[self.dtype].itemsize
        return (self.rank >= 2 and all(b <= 256 for b in self.block_shape) and size * math.prod(self.block_shape) <= TMA_BLOCK_BYTES
                and self.block_shape[-1] * size % 16 == 0 and tma_data_type(self.dtype, self.padding) is not None)


TMA_BLOCK_BYTES = 64 * 1024


def uses_tma(target: str, backend: str = "cuda") -> bool:
    """Whether tensor descriptors may go through TMA for ``target``: the CUDA backend's sm_90a
    (TMA came with Hopper; mytriton emits it with the architecture-specific target only)."""
    return backend == "cuda" and target == "sm_90a"


def leaf_names(name: str, rank: int, tma: bool = False) -> list[str]:
    """The leaves of the descriptor parameter ``name``: base, shape, strides but the last, and the
    tensor map where it has one."""
    return ([f"{name}__base"] + [f"{name}__shape{d}" for d in range(rank)] + [f"{name}__stride{d}" for d in range(rank - 1)]
            + [f"{name}__tmap"] * tma)


def parse(text) -> DescriptorType | None:
    """The descriptor type ``text`` spells, or None where it is not one."""
    if not isinstance(text, str):
        return None
    m = _TYPE.fullmatch(text.strip())
    if not m:
        if text.strip().startswith("tensordesc"):
            raise ValueError(f"type {text!r}: expected tensordesc<dtype[d0, d1, ...]> (optionally ',nan' "
                             "after the block shape)")
        return None
    from ..runtime.driver import DTYPES
    dtype, dims = m.group(1), tuple(int(d) for d in m.group(2).split(","))
    if dtype not in DTYPES:
        raise ValueError(f"type {text!r}: unknown element type {dtype!r}")
    if len(dims) > 5:
        raise ValueError(f"type {text!r}: at most 5 dimensions")
    if any(d <= 0 or d & (d - 1) for d in dims):
        raise ValueError(f"type {text!r}: the block shape must hold powers of 2")
    return DescriptorType(dtype, dims, m.group(3) or "zero")


def is_descriptor(value) -> bool:
    return isinstance(value, TensorDescriptor)


def type_of(value, base_type: str) -> DescriptorType:
    """The type of the descriptor ``value`` whose base has the type string ``base_type`` (``*fp16``,
    from the launch path's own argument inference)."""
    return DescriptorType(base_type.lstrip("*").split(":")[0], tuple(value.block_shape), value.padding)


def leaf_values(value, tma: bool = False, encoding: dict | None = None) -> list:
    """The run-time leaves of the descriptor ``value``, in ``DescriptorType.leaves`` order (with
    ``tma``, its tensor map last: boxes of its block, unswizzled, or as ``encoding`` says -- the
    ``box`` and ``swizzle`` of a kernel whose TMA copies fill a dot's shared-memory ring)."""
    leaves = [value.base, *value.shape, *value.strides[:-1]]
    if tma:
        from ..runtime import driver
        address, dtype = driver.pointer_info(value.base)
        if dtype is None:
            raise TypeError(f"the base of a tensor descriptor must be an array that knows its dtype, got "
                            f"{type(value.base).__name__}")
        box, swizzle = (encoding["box"], encoding["swizzle"]) if encoding else (value.block_shape, 0)
        leaves.append(driver.tensor_map(address, dtype, value.shape, value.strides, box, value.padding, swizzle))
    return leaves


def flatten(names: list[str], values: list, tma: dict | None = None) -> tuple[list[str], list]:
    """Run-time parameter names and values with every descriptor replaced by its leaves (those
    named in ``tma`` with their tensor maps, each encoded as its value there says: see
    ``leaf_values``)."""
    tma = tma or {}
    out_names, out_values = [], []
    for name, value in zip(names, values):
        if is_descriptor(value):
            out_names += leaf_names(name, len(value.shape), name in tma)
            out_values += leaf_values(value, name in tma, tma.get(name))
        else:
            out_names.append(name)
            out_values.append(value)
    return out_names, out_values


def rebuild(t: DescriptorType, leaves: list):
    """The ``tl.tensor_descriptor`` a kernel sees, from its leaves (scalar tensors of the types
    ``leaves`` says); call with a builder current."""
    from ..ir.types import I64
    from ..language.block_ptr import tensor_descriptor
    from ..language.core import to_tensor
    tmap = leaves[-1] if t.tma else None
    base, rest = leaves[0], leaves[1:len(leaves) - t.tma]
    shape, strides = tuple(rest[:t.rank]), tuple(rest[t.rank:]) + (to_tensor(1, I64),)
    strides = tuple(s if s.dtype == I64 else s.to(I64) for s in strides)
    return tensor_descriptor(base, shape, strides, t.block_shape, t.padding, tmap)

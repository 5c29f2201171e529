"""Block pointers (``tl.make_block_ptr``, ``tl.advance``) and tensor descriptors
(``tl.make_tensor_descriptor``, ``desc.load/store``), with Triton 3.6's signatures and checks.

Both name a block of a strided N-d array by its position: a base pointer, the array's shape and
strides, and (for a block pointer) the block's offsets. They are values of the language made of
run-time parts (``Composite``): loops carry them and ``@jit`` functions take them. A load or store
through one becomes the language's own pointer arithmetic, ``(offset_d + arange(block_d)) *
stride_d`` summed over the dimensions in 64 bits, and, for the dimensions checked, the mask ``0 <=
index_d < shape_d``: out-of-bounds elements read the padding and are not written. The backends see
ordinary loads and stores, which the axis analysis vectorizes where the strides allow.

A tensor descriptor passed from the host may carry a tensor map (frontend/descriptors.py: on the
sm_90a target, when TMA can copy its blocks): its loads and stores are then the ops ``tma_load``
and ``tma_store``, one TMA copy of the whole block each, with the same bounds rules (TMA fills
elements out of bounds with the padding and does not write them).
"""
from __future__ import annotations

import builtins

from ..ir.types import I32, I64, PointerType
from .core import Composite, builtin, current_builder, is_block, tensor, to_tensor

__all__ = ["make_block_ptr", "advance", "make_tensor_descriptor", "load_tensor_descriptor",
           "store_tensor_descriptor", "block_ptr", "tensor_descriptor"]

MAX_RANK = 5            # (Triton's limit for tensor descriptors, as TMA's)
PADDINGS = ("", "zero", "nan")


def _ints(values, what: str, dtype, rank: int | None = None) -> tuple[tensor, ...]:
    """A sequence of numbers or scalar integer tensors, as scalars of ``dtype``."""
    if isinstance(values, tensor) or not isinstance(values, (tuple, list)):
        raise TypeError(f"{what} must be a tuple or list of integers, got {values!r}")
    if rank is not None and len(values) != rank:
        raise ValueError(f"{what} must have {rank} entries (one per dimension), got {len(values)}")
    out = []
    for v in values:
        t = to_tensor(v, dtype) if isinstance(v, int) else v
        if not isinstance(t, tensor) or is_block(t) or not t.dtype.is_int or t.dtype.is_bool:
            raise TypeError(f"{what} must hold integer scalars, got {v!r}")
        out.append(t if t.dtype == dtype else t.to(dtype))
    return tuple(out)


def _block_shape(block_shape, what: str) -> tuple[int, ...]:
    if isinstance(block_shape, tensor) or not isinstance(block_shape, (tuple, list)) or not block_shape:
        raise TypeError(f"{what}: block_shape must be a non-empty tuple of constexpr ints, got {block_shape!r}")
    for d in block_shape:
        if type(d) is not int or d <= 0 or d & (d - 1):
            raise ValueError(f"{what}: block_shape must hold powers of 2 (constexprs), got {list(block_shape)}")
    return tuple(block_shape)


def _base(base, what: str) -> tensor:
    if not isinstance(base, tensor) or is_block(base) or not isinstance(base.dtype, PointerType):
        raise TypeError(f"{what}: base must be a scalar pointer (a pointer parameter plus an offset), got {base!r}")
    return base


def _addresses(base, shape, strides, offsets, block_shape, checked) -> tuple[tensor, tensor | None]:
    """The block's element pointers and, when ``checked`` names dimensions, the mask of those in
    bounds along them."""
    from . import arange, broadcast_to, expand_dims
    rank = len(block_shape)
    ptrs, mask = base, None
    for d in builtins.range(rank):
        index = offsets[d] + arange(0, block_shape[d])
        for axis in builtins.range(rank):
            if axis != d:
                index = expand_dims(index, axis)
        ptrs = ptrs + index.to(I64) * strides[d]
        if d in checked:
            inside = (index >= 0) & (index < shape[d])
            mask = inside if mask is None else mask & inside
    ptrs = broadcast_to(ptrs, block_shape)
    return ptrs, (None if mask is None else broadcast_to(mask, block_shape))


def _checked_dims(boundary_check, rank: int) -> tuple[int, ...]:
    """Triton's ``boundary_check``: distinct dimensions of the block."""
    dims = tuple(boundary_check) if isinstance(boundary_check, (tuple, list)) else (boundary_check,)
    for d in dims:
        if type(d) is not int or not 0 <= d < rank:
            raise ValueError(f"boundary_check must list dimensions of the block (0 <= dim < {rank}), got {d!r}")
    if len(set(dims)) != len(dims):
        raise ValueError(f"boundary_check lists a dimension twice: {list(dims)}")
    return dims


def _padding_value(padding_option: str, elem):
    if padding_option not in PADDINGS:
        raise ValueError(f"padding_option must be one of {', '.join(map(repr, PADDINGS))}, got {padding_option!r}")
    if padding_option == "nan":
        if not elem.is_float:
            raise ValueError(f"padding_option 'nan' needs a floating-point block, got {elem}")
        return float("nan")
    return 0


def _load_block(ptrs, mask, padding, hints=("", "")):
    from . import load
    cache, evict = hints
    if mask is None:
        return load(ptrs, cache_modifier=cache, eviction_policy=evict)
    return load(ptrs, mask=mask, other=padding, cache_modifier=cache, eviction_policy=evict)


def _block_value(value, dtype, block_shape, what: str):
    """``value`` stored into a block: of the block's shape (or a scalar, broadcast), converted to ``dtype``."""
    from . import broadcast_to
    value = to_tensor(value, dtype)
    if is_block(value) and tuple(value.shape) != tuple(block_shape):
        raise ValueError(f"{what}: the value's shape {list(value.shape)} is not the block shape {list(block_shape)}")
    value = broadcast_to(value, block_shape)
    return value if value.dtype == dtype else value.to(dtype)


def _store_block(ptrs, mask, value, block_shape, what: str, hints=("", "")):
    from . import store
    value = _block_value(value, ptrs.dtype.pointee, block_shape, what)
    cache, evict = hints
    store(ptrs, value, mask=mask, cache_modifier=cache, eviction_policy=evict)


class block_ptr(Composite):
    """A pointer to a block of a strided N-d array (``tl.make_block_ptr``): shape and strides in
    int64, offsets in int32, as Triton keeps them."""

    def __init__(self, base, shape, strides, offsets, block_shape, order):
        self.base, self.shape, self.strides, self.offsets = base, shape, strides, offsets
        self.block_shape, self.order = block_shape, order

    @property
    def parts(self):
        return self.base, self.shape, self.strides, self.offsets

    @property
    def static(self):
        return self.block_shape, self.order

    def with_parts(self, parts):
        return block_ptr(*parts, self.block_shape, self.order)

    @property
    def dtype(self):
        return self.base.dtype

    def __repr__(self):
        return f"block_ptr<{self.base.dtype.pointee}, block {list(self.block_shape)}>"

    def load(self, boundary_check, padding_option, hints=("", "")):
        """``hints``: the load's (cache_modifier, eviction_policy)."""
        ptrs, mask = _addresses(self.base, self.shape, self.strides, self.offsets, self.block_shape,
                                _checked_dims(boundary_check, len(self.block_shape)))
        return _load_block(ptrs, mask, _padding_value(padding_option, self.base.dtype.pointee), hints)

    def store(self, value, boundary_check, hints=("", "")):
        ptrs, mask = _addresses(self.base, self.shape, self.strides, self.offsets, self.block_shape,
                                _checked_dims(boundary_check, len(self.block_shape)))
        _store_block(ptrs, mask, value, self.block_shape, "tl.store to a block pointer", hints)


@builtin
def make_block_ptr(base, shape, strides, offsets, block_shape, order):
    """Triton's ``tl.make_block_ptr``: the block of ``block_shape`` at ``offsets`` in the array at
    ``base`` of ``shape`` and ``strides`` (in elements); ``order`` (the dimensions from fastest to
    slowest in memory) is checked and kept."""
    base = _base(base, "tl.make_block_ptr")
    block_shape = _block_shape(block_shape, "tl.make_block_ptr")
    rank = len(block_shape)
    shape = _ints(shape, "tl.make_block_ptr: shape", I64, rank)
    strides = _ints(strides, "tl.make_block_ptr: strides", I64, rank)
    offsets = _ints(offsets, "tl.make_block_ptr: offsets", I32, rank)
    if not isinstance(order, (tuple, list)) or sorted(order) != list(builtins.range(rank)):
        raise ValueError(f"tl.make_block_ptr: order must be a permutation of the {rank} dimensions, got {order!r}")
    return block_ptr(base, shape, strides, offsets, block_shape, tuple(order))


@builtin
def advance(base, offsets):
    """Triton's ``tl.advance``: the block pointer moved by ``offsets`` (elements per dimension)."""
    if not isinstance(base, block_ptr):
        raise TypeError(f"tl.advance expects a block pointer (tl.make_block_ptr), got {base!r}")
    delta = _ints(offsets, "tl.advance: offsets", I32, len(base.block_shape))
    return base.with_parts((base.base, base.shape, base.strides,
                            tuple(o + d for o, d in zip(base.offsets, delta))))


class tensor_descriptor(Composite):
    """A strided N-d array and a block shape (``tl.make_tensor_descriptor``): every load and store
    through it is bounds-checked in every dimension (out of bounds: the padding is read, nothing is
    written), as TMA does. ``tmap``: the tensor-map parameter of a descriptor passed from the host
    that TMA copies (a kernel parameter, never carried or computed: it stays with the descriptor)."""

    def __init__(self, base, shape, strides, block_shape, padding_option, tmap=None):
        self.base, self.shape, self.strides = base, shape, strides
        self.block_shape, self.padding_option, self.tmap = block_shape, padding_option, tmap

    @property
    def parts(self):
        return self.base, self.shape, self.strides

    @property
    def static(self):
        return self.block_shape, self.padding_option, None if self.tmap is None else self.tmap.node.attrs["name"]

    def with_parts(self, parts):
        return tensor_descriptor(*parts, self.block_shape, self.padding_option, self.tmap)

    @property
    def dtype(self):
        return self.base.dtype.pointee

    def __repr__(self):
        return f"tensor_descriptor<{self.dtype}, block {list(self.block_shape)}>"

    def _tma_operands(self, offsets, what: str) -> list:
        """A TMA copy's operands (ir/ops.py): the tensor map, then the descriptor and the offsets."""
        offsets = _ints(offsets, f"{what}: offsets", I32, len(self.block_shape))
        return [x.node for x in (self.tmap, self.base, *offsets, *self.shape, *self.strides[:-1])]

    def _addresses(self, offsets, what: str):
        rank = len(self.block_shape)
        offsets = _ints(offsets, f"{what}: offsets", I32, rank)
        return _addresses(self.base, self.shape, self.strides, offsets, self.block_shape, tuple(builtins.range(rank)))

    @builtin
    def load(self, offsets):
        """The block at ``offsets``; elements out of bounds read the padding (zero or NaN)."""
        if self.tmap is not None:
            return tensor(current_builder().make("tma_load", self._tma_operands(offsets, "desc.load"),
                                                 {"shape": tuple(self.block_shape), "dtype": self.dtype,
                                                  "padding": self.padding_option}))
        ptrs, mask = self._addresses(offsets, "desc.load")
        return _load_block(ptrs, mask, _padding_value(self.padding_option, self.dtype))

    @builtin
    def store(self, offsets, value):
        """``value`` (of the block shape, or a scalar) into the block at ``offsets``; elements out of
        bounds are not written."""
        if self.tmap is not None:
            from .triton_types import check_writable
            check_writable(self.base)
            value = _block_value(value, self.dtype, self.block_shape, "desc.store")
            operands = self._tma_operands(offsets, "desc.store")
            current_builder().make("tma_store", [operands[0], value.node, *operands[1:]], {})
            return
        ptrs, mask = self._addresses(offsets, "desc.store")
        _store_block(ptrs, mask, value, self.block_shape, "desc.store")

    def _atomic(self, kind: str, offsets, value):
        from . import atomic_add, atomic_and, atomic_max, atomic_min, atomic_or, atomic_xor, broadcast_to
        fn = {"add": atomic_add, "min": atomic_min, "max": atomic_max, "and": atomic_and, "or": atomic_or,
              "xor": atomic_xor}[kind]
        ptrs, mask = self._addresses(offsets, f"desc.atomic_{kind}")
        fn(ptrs, broadcast_to(to_tensor(value, self.dtype), self.block_shape), mask=mask)


def _descriptor_atomic(kind: str):
    @builtin
    def atomic(self, offsets, value):
        self._atomic(kind, offsets, value)
    atomic.__name__ = atomic.__qualname__ = f"atomic_{kind}"
    atomic.__doc__ = f"``tl.atomic_{kind}`` of ``value`` into the block at ``offsets`` (elements out of bounds untouched)."
    return atomic


for _kind in ("add", "min", "max", "and", "or", "xor"):
    setattr(tensor_descriptor, f"atomic_{_kind}", _descriptor_atomic(_kind))


@builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    """Triton's ``tl.make_tensor_descriptor``, with its rules: 1 to 5 dimensions, the last stride
    the constant 1, and at least 16 bytes in the block's last dimension."""
    base = _base(base, "tl.make_tensor_descriptor")
    block_shape = _block_shape(block_shape, "tl.make_tensor_descriptor")
    rank = len(block_shape)
    if rank > MAX_RANK:
        raise ValueError(f"tl.make_tensor_descriptor: at most {MAX_RANK} dimensions, got {rank}")
    if not isinstance(strides, (tuple, list)) or len(strides) != rank or not (type(strides[-1]) is int and strides[-1] == 1):
        raise ValueError("tl.make_tensor_descriptor: the last stride must be the constant 1 (tensor descriptors "
                         "address arrays whose last dimension is contiguous)")
    elem = base.dtype.pointee
    if block_shape[-1] * builtins.max(1, elem.bits // 8) < 16:
        raise ValueError(f"tl.make_tensor_descriptor: Descriptor block shape must have at least 16 bytes in the last "
                         f"dimension, got {block_shape[-1]} elements of {elem}")
    if padding_option not in ("zero", "nan"):
        raise ValueError(f"tl.make_tensor_descriptor: padding_option must be 'zero' or 'nan', got {padding_option!r}")
    _padding_value(padding_option, elem)
    shape = _ints(shape, "tl.make_tensor_descriptor: shape", I32, rank)
    strides = _ints(strides, "tl.make_tensor_descriptor: strides", I64, rank)
    from ..frontend import launch_maps        # (a tensor map the runtime encodes, where it can)
    tmap = launch_maps.tensor_map(current_builder(), base, shape, strides, block_shape, padding_option)
    return tensor_descriptor(base, shape, strides, block_shape, padding_option, tmap)


@builtin
def load_tensor_descriptor(desc, offsets):
    """``desc.load(offsets)``."""
    if not isinstance(desc, tensor_descriptor):
        raise TypeError(f"tl.load_tensor_descriptor expects a tensor descriptor, got {desc!r}")
    return desc.load(offsets)


@builtin
def store_tensor_descriptor(desc, offsets, value):
    """``desc.store(offsets, value)``."""
    if not isinstance(desc, tensor_descriptor):
        raise TypeError(f"tl.store_tensor_descriptor expects a tensor descriptor, got {desc!r}")
    return desc.store(offsets, value)

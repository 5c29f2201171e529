"""The interpreter's memory: the kernel's array arguments, reached through tagged pointers.

A pointer value is an int64 *address* ``base(k) + offset``: buffer ``k`` (the k-th array argument)
and an element offset into it. Pointer arithmetic is then plain integer addition in elements of the
pointee type, and pointers flow through ``where``, loop-carried values and broadcasting like any
other integer block. Buffers sit 2**40 elements apart, with their base in the middle of their slot,
so any offset within ±2**39 elements (far beyond any real array) decodes back to its own buffer:
a pointer that has run off its array is still reported against that array.

Every load and store is bounds-checked lane by lane, after the mask: a masked-off lane never
touches memory, an enabled lane outside its array raises :class:`OutOfBounds`, which the executor
turns into an ``InterpreterError`` with the kernel's source line and the program id.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_SLOT_BITS = 40
_HALF_SLOT = 1 << (_SLOT_BITS - 1)


@dataclass
class Buffer:
    name: str                 # the kernel parameter it was passed as
    flat: np.ndarray          # 1-D view of the caller's memory: writes land in the caller's array
    type_name: str            # the pointee's type name (fp32, i32, ...)

    @property
    def size(self) -> int:
        return self.flat.shape[0]


class OutOfBounds(Exception):
    """An enabled lane of a load or store addresses memory outside its array."""

    def __init__(self, kind: str, lane: tuple[int, ...], buffer: Buffer | None, offset: int, masked: bool):
        self.kind, self.lane, self.buffer, self.offset, self.masked = kind, lane, buffer, offset, masked
        super().__init__(self.describe())

    def describe(self) -> str:
        if self.buffer is None:
            return f"{self.kind} through a pointer that does not point into any array argument"
        b = self.buffer
        return (f"out-of-bounds {self.kind}: element offset {self.offset} is outside '{b.name}' "
                f"({b.size} elements of {b.type_name}, valid offsets 0..{b.size - 1})")


def flat_view(name: str, array: np.ndarray) -> np.ndarray:
    """The memory a pointer to ``array``'s first element reaches, as a 1-D view of the same data.

    A contiguous array (or view) is its own elements; a strided view reaches the span from its first
    to its last element, as a GPU kernel that indexes it with explicit strides would."""
    if array.flags.c_contiguous:
        return array.reshape(-1)
    item = array.itemsize
    if array.size == 0:
        return array.reshape(-1)
    if any(s < 0 for s in array.strides):
        raise TypeError(f"parameter '{name}': arrays with negative strides cannot be passed as pointers "
                        f"(pass np.ascontiguousarray(...))")
    if any(s % item for s in array.strides):
        raise TypeError(f"parameter '{name}': strides {array.strides} are not multiples of the element size")
    span = 1 + sum((d - 1) * s // item for d, s in zip(array.shape, array.strides))
    return np.lib.stride_tricks.as_strided(array, shape=(span,), strides=(item,),
                                           writeable=array.flags.writeable)


class Memory:
    """The array arguments of one launch, each in its own address slot."""

    def __init__(self):
        self.buffers: list[Buffer] = []

    def add(self, name: str, array: np.ndarray, type_name: str) -> int:
        """Register ``array`` and return the address of its first element."""
        self.buffers.append(Buffer(name, flat_view(name, array), type_name))
        return self.base(len(self.buffers) - 1)

    @staticmethod
    def base(k: int) -> int:
        return (k + 1) << _SLOT_BITS

    def index_of(self, address):
        """The buffer index an address (or array of addresses) belongs to; -1..len-1 may be invalid."""
        return ((address + _HALF_SLOT) >> _SLOT_BITS) - 1

    # --- access -------------------------------------------------------------------------------

    def resolve(self, kind: str, address: np.ndarray, mask: np.ndarray | None):
        """Split the enabled lanes of ``address`` by buffer and bounds-check them.

        Returns ``[(buffer, lanes, offsets)]``: ``lanes`` is the boolean lane mask (None: every lane)
        and ``offsets`` the element offsets, clamped to 0 on lanes that are not accessed."""
        fast = self._resolve_one(address, mask)
        if fast is not None:
            return [fast]
        return self._resolve_lanes(kind, address, mask)

    def _resolve_one(self, address, mask):
        """The common case: every enabled lane lies inside the buffer of the first lane."""
        if address.size == 0:
            return None
        k = int(self.index_of(address.flat[0]))
        if not 0 <= k < len(self.buffers):
            return None
        buf = self.buffers[k]
        off = address - self.base(k)
        if mask is not None:
            off = np.where(mask, off, 0)
        if buf.size == 0 or off.min() < 0 or off.max() >= buf.size:
            return None
        return buf, mask, off

    def _resolve_lanes(self, kind, address, mask):
        enabled = np.ones(address.shape, bool) if mask is None else mask
        ks = self.index_of(address)
        valid = enabled & (ks >= 0) & (ks < len(self.buffers))
        groups, ok = [], ~enabled
        for k in np.unique(ks[valid]):
            k = int(k)
            buf = self.buffers[k]
            lanes = valid & (ks == k)
            off = np.where(lanes, address - self.base(k), 0)
            inside = lanes & (off >= 0) & (off < buf.size)
            ok = ok | inside
            groups.append((buf, lanes, off))
        bad = ~ok
        if bad.any():
            first = int(np.flatnonzero(bad.reshape(-1))[0])
            lane = np.unravel_index(first, address.shape)
            k = int(ks[lane])
            buf = self.buffers[k] if 0 <= k < len(self.buffers) else None
            offset = int(address[lane]) - (self.base(k) if buf is not None else 0)
            raise OutOfBounds(kind, tuple(int(i) for i in lane), buf, offset, mask is not None)
        return groups

    def load(self, address: np.ndarray, mask: np.ndarray | None, other, dtype) -> np.ndarray:
        """Gather ``address`` (all operands already broadcast to one shape); masked-off lanes read
        ``other``."""
        groups = self.resolve("load", address, mask)
        if len(groups) == 1 and groups[0][1] is None:
            buf, _, off = groups[0]
            return _elements(buf, dtype).take(off, mode="clip")
        out = np.broadcast_to(np.asarray(0 if other is None else other, dtype), address.shape)
        for buf, lanes, off in groups:
            out = np.where(lanes, _elements(buf, dtype).take(off, mode="clip"), out)
        return out.astype(dtype, copy=False)

    def store(self, address: np.ndarray, value: np.ndarray, mask: np.ndarray | None) -> None:
        """Scatter ``value`` to ``address`` on the enabled lanes (all operands already broadcast)."""
        for buf, lanes, off in self.resolve("store", address, mask):
            if not buf.flat.flags.writeable:
                raise ReadOnly(buf)
            flat = _elements(buf, value.dtype)
            if lanes is None:
                flat[off.reshape(-1)] = value.reshape(-1)
            else:
                flat[off[lanes]] = value[lanes]


    def atomic(self, address: np.ndarray, mask: np.ndarray | None, update, operands: list[np.ndarray],
               dtype) -> np.ndarray:
        """Atomics at ``address`` (all operands broadcast to its shape) on the enabled lanes, one lane
        after the other in lane order (row-major: the program axis first): each lane's memory
        becomes ``update(old, *its operands)``; returns the old values (0 on masked-off lanes).
        Lanes at distinct addresses are independent, so the lanes run in rounds: round k does the
        k-th lane of every address at once."""
        old = np.zeros(address.shape, dtype)
        flat_old = old.reshape(-1)
        operands = [np.ascontiguousarray(o, dtype).reshape(-1) for o in operands]
        for buf, lanes, off in self.resolve("atomic", address, mask):
            if not buf.flat.flags.writeable:
                raise ReadOnly(buf)
            sel = np.arange(address.size) if lanes is None else np.flatnonzero(lanes.reshape(-1))
            offs = off.reshape(-1)[sel]
            order = np.argsort(offs, kind="stable")           # by address, lane order within one
            first = np.ones(len(order), bool)
            first[1:] = offs[order][1:] != offs[order][:-1]
            starts = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
            rank = np.arange(len(order)) - starts              # k: the lane is its address's k-th
            by_round = order[np.argsort(rank, kind="stable")]
            bounds = np.cumsum(np.bincount(rank)) if len(rank) else []
            lo = 0
            with np.errstate(all="ignore"):
                for hi in bounds:
                    lane = sel[by_round[lo:hi]]
                    at = offs[by_round[lo:hi]]
                    current = buf.flat[at].astype(dtype, copy=False)
                    flat_old[lane] = current
                    buf.flat[at] = update(current, *(o[lane] for o in operands))
                    lo = hi
        return old


def _elements(buf: Buffer, dtype) -> np.ndarray:
    """``buf``'s elements seen as ``dtype``: a pointer converted to another pointee type of the same
    size (``x.to(tl.pointer_type(...))``) reads the same bits; one of another size cannot be followed
    here, as the interpreter's addresses count elements."""
    dtype = np.dtype(dtype)
    if buf.flat.dtype == dtype:
        return buf.flat
    if buf.flat.dtype.itemsize != dtype.itemsize:
        raise ElementSize(buf, dtype)
    return buf.flat.view(dtype)


class ElementSize(Exception):
    """An access through a pointer whose pointee is not the size of its array's elements."""

    def __init__(self, buffer: Buffer, dtype: np.dtype):
        self.buffer = buffer
        super().__init__(f"an access to '{buffer.name}' ({buffer.type_name}, {buffer.flat.dtype.itemsize}-byte "
                         f"elements) through a pointer to {dtype.itemsize}-byte elements: the interpreter "
                         f"follows a pointer converted to a pointee of another size only on the GPU")


class ReadOnly(Exception):
    """A store (or an atomic) into an array the caller passed read-only."""

    def __init__(self, buffer: Buffer):
        self.buffer = buffer
        super().__init__(f"store into '{buffer.name}', which was passed as a read-only array")

"""Index expressions: a linear layout's arithmetic in a small backend-neutral form.

A backend needs a layout's answers as code over two run-time integers: ``reg``, the register index
(a loop variable the CUDA backend unrolls, or a constant the MLIR backend knows), and ``tid``, the
thread id in the block (``lane + 32 * warp``: a lane's bits are tid's bits 0-4, a warp's the bits
above). Over GF(2) every answer is a constant XOR some input bits moved to output bits, and runs of
consecutive input bits that land on consecutive output bits are one *field*::

    ((var >> src) & (2**width - 1)) << dst

so an ``IndexExpr`` is a constant and a few fields. For the layouts of ``ir/layout.py`` the fields
occupy disjoint output bits (registers, lanes and warps tile different bits of a coordinate), so
they combine with ``+`` and a register's constant folds into the sum; overlapping fields (swizzles)
combine with XOR. Each backend implements ``IndexBuilder`` (the CUDA backend prints C++, the MLIR
backend emits ``arith`` ops) and calls ``IndexExpr.build``; nothing else in a backend knows how a
layout places elements.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Protocol, TypeVar

from .linear import LANE, LANE_BITS, REGISTER, WARP, LinearLayout, set_bits, thread_bit

REG, TID = "reg", "tid"
T = TypeVar("T")


class IndexBuilder(Protocol[T]):
    def const(self, value: int) -> T: ...
    def var(self, name: str) -> T: ...
    def shr(self, x: T, k: int) -> T: ...
    def and_(self, x: T, mask: int) -> T: ...
    def shl(self, x: T, k: int) -> T: ...
    def add(self, x: T, y: T) -> T: ...          # operands have no set bit in common
    def xor(self, x: T, y: T) -> T: ...


@dataclass(frozen=True)
class Field:
    """Bits ``src … src+width-1`` of ``var`` moved to bits ``dst … dst+width-1``; ``top`` when
    ``var`` has no bits above ``src+width-1`` (no mask needed above)."""
    var: str
    src: int
    width: int
    dst: int
    top: bool

    def evaluate(self, value: int) -> int:
        return ((value >> self.src) & ((1 << self.width) - 1)) << self.dst

    def build(self, b: IndexBuilder[T]) -> T:
        """Two operations at most: shift, then mask what lies outside the destination bits (or
        mask, then shift left)."""
        x = b.var(self.var)
        mask = ((1 << self.width) - 1)
        if self.src >= self.dst:
            if self.src > self.dst:
                x = b.shr(x, self.src - self.dst)
            if self.dst > 0 or not self.top:
                x = b.and_(x, mask << self.dst)
        else:
            if self.src > 0 or not self.top:
                x = b.and_(x, mask << self.src)
            x = b.shl(x, self.dst - self.src)
        return x


@dataclass(frozen=True)
class IndexExpr:
    const: int
    fields: tuple[Field, ...]
    overlap: bool            # some output bit has two sources: combine with XOR, not +

    def evaluate(self, **values: int) -> int:
        out = self.const
        for f in self.fields:
            out ^= f.evaluate(values[f.var])
        return out

    @property
    def is_const(self) -> bool:
        return not self.fields

    def vars(self) -> set[str]:
        return {f.var for f in self.fields}

    def build(self, b: IndexBuilder[T]) -> T:
        """The fields (in input-bit order), then the constant."""
        parts = [f.build(b) for f in self.fields]
        if self.const or not parts:
            parts.append(b.const(self.const))
        out = parts[0]
        for p in parts[1:]:
            out = b.xor(out, p) if self.overlap else b.add(out, p)
        return out


def bit_expr(moves: Iterable[tuple[str, int, int]], var_bits: dict[str, int], const: int = 0) -> IndexExpr:
    """The expression ``const ^ XOR(value if bit b of var is set)`` over ``moves`` = (var, b, value)."""
    singles = sorted({(var, b, o) for var, b, v in moves for o in set_bits(v)})
    fields: list[list] = []
    for var, b, o in singles:
        last = fields[-1] if fields else None
        if last and last[0] == var and last[1] + last[2] == b and last[3] + last[2] == o:
            last[2] += 1
        else:
            fields.append([var, b, 1, o])
    out_bits = [o for _, _, o in singles] + list(set_bits(const))
    return IndexExpr(const, tuple(Field(var, s, w, d, s + w >= var_bits[var]) for var, s, w, d in fields),
                     len(out_bits) != len(set(out_bits)))


def _var_bits(ll: LinearLayout) -> dict[str, int]:
    return {REG: ll.in_bits(REGISTER), TID: LANE_BITS + ll.in_bits(WARP)}


def _thread_moves(ll: LinearLayout, component: int):
    for name in (LANE, WARP):
        for b, v in enumerate(ll.bases_of(name)):
            yield TID, thread_bit(name, b), v[component]


def coordinate_exprs(ll: LinearLayout, reg: int | None = None) -> list[IndexExpr]:
    """Per output dimension, the coordinate that register ``reg`` (a constant, folded in; None: the
    variable ``reg``) of thread ``tid`` holds."""
    out = []
    for d in range(ll.rank):
        moves = list(_thread_moves(ll, d))
        const = 0
        for b, v in enumerate(ll.bases_of(REGISTER)):
            if reg is None:
                moves.append((REG, b, v[d]))
            elif reg >> b & 1:
                const ^= v[d]
        out.append(bit_expr(moves, _var_bits(ll), const))
    return out


def offset_expr(ll: LinearLayout, reg: int | None = None) -> IndexExpr:
    """The row-major offset of the element register ``reg`` of thread ``tid`` holds (for exchanges
    through shared memory)."""
    flat = ll.flatten_outs()
    (e,) = coordinate_exprs(flat, reg)
    return e


def register_expr(src: LinearLayout, register_map: list[int]) -> IndexExpr:
    """The register of another layout that corresponds to register ``reg`` of ``src``
    (``LinearLayout.register_map``), as an expression of ``reg``."""
    return bit_expr([(REG, b, v) for b, v in enumerate(register_map)], {REG: src.in_bits(REGISTER)})


def thread_bits_expr(ll: LinearLayout, bits: list[tuple[str, int]]) -> IndexExpr:
    """The number whose bit i is the thread's lane or warp bit ``bits[i]`` (e.g. a warp's position
    along the reduced dimensions)."""
    return bit_expr([(TID, thread_bit(name, b), 1 << i) for i, (name, b) in enumerate(bits)], _var_bits(ll))


def owner_masks(ll: LinearLayout) -> tuple[int, int]:
    """(register mask, thread-id mask): the register and thread hold the owning copy of their
    element when both ``reg & mask`` and ``tid & mask`` are 0."""
    free = ll.free_masks()
    return free.get(REGISTER, 0), free.get(LANE, 0) | (free.get(WARP, 0) << LANE_BITS)


__all__ = ["IndexBuilder", "IndexExpr", "Field", "bit_expr", "coordinate_exprs", "offset_expr", "register_expr",
           "thread_bits_expr", "owner_masks", "REG", "TID"]

"""How a tile crosses shared memory from one register layout to another (``convert_layout``).

Each thread writes its registers of the source layout into a buffer of the tile's elements and,
after a barrier, reads its registers of the result layout. In row-major order (the element at flat
offset ``x`` at address ``x``) both sides can hit the same shared-memory bank many times per warp
access: an MMA accumulator's lanes hold 8 rows of a few columns each, and with rows of 128 floats
all 8 rows start in bank 0 (8-way conflicts; a wgmma GEMM's epilogue spent as long converting its
accumulator as its main loop).

The buffer is therefore laid out by an XOR swizzle — address = ``x ^ (((x >> s) & (2**k - 1)) << v)``:
``k`` bits of the row (from bit ``s``) permute the ``2**k`` chunks of ``2**v`` elements of a row —
which is linear over GF(2), so it composes with the layouts (``ir/linear.py``) into index
expressions of the same kind (``ir/indexing.py``: overlapping fields combine with XOR). Each side
moves runs of consecutive registers at consecutive addresses as one vector access of up to 16
bytes (``Exchange.src_vec``/``dst_vec``). ``plan_exchange`` simulates one warp's accesses under
every candidate swizzle and keeps the one with the fewest bank wavefronts (the plain row-major
order where it is as good): shared memory has 32 banks of 4 bytes, and an access takes as many
wavefronts as the most distinct 4-byte words any one bank serves.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .linear import LANE, REGISTER, WARP, LinearLayout

BANKS = 32
MAX_ACCESS_BYTES = 16


@dataclass(frozen=True)
class Swizzle:
    """address = x ^ (((x >> s) & (2**k - 1)) << v) (the identity where k is 0)."""
    v: int = 0
    s: int = 0
    k: int = 0

    def __call__(self, x):
        if not self.k:
            return x
        return x ^ (((x >> self.s) & ((1 << self.k) - 1)) << self.v)

    def as_layout(self, numel: int) -> LinearLayout:
        """The swizzle as a linear layout from ``offset`` to ``offset`` (``numel`` elements)."""
        bits = numel.bit_length() - 1
        return LinearLayout.make({"offset": [(self(1 << b),) for b in range(bits)]}, [numel], ["offset"])


@dataclass(frozen=True)
class Exchange:
    """The buffer's swizzle and the registers each side moves per access."""
    swizzle: Swizzle
    src_vec: int
    dst_vec: int


def _flat_bases(ll: LinearLayout) -> dict[str, list[int]]:
    flat = ll.flatten_outs()
    return {name: [v[0] for v in flat.bases_of(name)] for name in (REGISTER, LANE, WARP)}


def _vector(bases: dict[str, list[int]], swz: Swizzle, elem_bytes: int) -> int:
    """The registers one access moves: the most consecutive registers (up to 16 bytes) at
    consecutive addresses, every other basis moving the access by whole vectors."""
    vec = 1
    regs = bases[REGISTER]
    while (vec * 2 * elem_bytes <= MAX_ACCESS_BYTES and len(regs) > vec.bit_length() - 1
           and swz(regs[vec.bit_length() - 1]) == vec):
        vec *= 2
    width = vec.bit_length() - 1
    others = regs[width:] + bases[LANE] + bases[WARP]
    while vec > 1 and any(swz(b) % vec for b in others):
        vec //= 2
    return vec


def _wavefronts(bases: dict[str, list[int]], swz: Swizzle, elem_bytes: int, vec: int) -> int:
    """Bank wavefronts of one warp (warp 0) moving all its registers, ``vec`` at a time."""
    def xor_span(vectors: list[int]) -> np.ndarray:
        out = np.zeros(1, np.int64)
        for b in vectors:
            out = np.concatenate([out, out ^ b])
        return out
    width = vec.bit_length() - 1
    lanes = xor_span(bases[LANE])                                   # (32,)
    regs = xor_span(bases[REGISTER][width:])                        # one per access
    addr = swz(regs[:, None] ^ lanes[None, :])                      # (accesses, 32) element addresses
    words_per = max(1, vec * elem_bytes // 4)
    first = addr * elem_bytes // 4
    words = np.sort((first[:, :, None] + np.arange(words_per)[None, None, :]).reshape(len(regs), -1), axis=1)
    distinct = np.ones(words.shape, bool)
    distinct[:, 1:] = words[:, 1:] != words[:, :-1]
    slots = (np.arange(len(regs))[:, None] * BANKS + words % BANKS)[distinct]      # (access, bank) of each word
    return int(np.bincount(slots, minlength=len(regs) * BANKS).reshape(len(regs), BANKS).max(axis=1).sum())


def _least(bases: dict[str, list[int]], elem_bytes: int, vec: int) -> int:
    """The fewest wavefronts this side's accesses could take: each its bytes over the 128 one serves."""
    accesses = 1 << (len(bases[REGISTER]) - (vec.bit_length() - 1))
    return accesses * max(1, -(-32 * vec * elem_bytes // (4 * BANKS)))


def wavefronts(src: LinearLayout, dst: LinearLayout, elem_bytes: int, ex: Exchange) -> tuple[int, int]:
    """The bank wavefronts of one warp writing its registers of ``src`` and reading those of
    ``dst`` through a buffer laid out and accessed as ``ex`` says (the model ``plan_exchange``
    minimizes)."""
    return (_wavefronts(_flat_bases(src), ex.swizzle, elem_bytes, ex.src_vec),
            _wavefronts(_flat_bases(dst), ex.swizzle, elem_bytes, ex.dst_vec))


@lru_cache(maxsize=512)
def plan_exchange(src: LinearLayout, dst: LinearLayout, elem_bytes: int) -> Exchange:
    """The swizzle (see the module's docstring) and vector widths for moving a tile from the
    layout ``src`` to ``dst`` through shared memory, both layouts of the same shape."""
    a, b = _flat_bases(src), _flat_bases(dst)
    bits = src.numel.bit_length() - 1

    def cost(swz: Swizzle) -> tuple[int, bool, Exchange]:
        """(wavefronts, whether some access takes more than its bytes need, the exchange)."""
        va, vb = _vector(a, swz, elem_bytes), _vector(b, swz, elem_bytes)
        wa, wb = _wavefronts(a, swz, elem_bytes, va), _wavefronts(b, swz, elem_bytes, vb)
        return wa + wb, wa > _least(a, elem_bytes, va) or wb > _least(b, elem_bytes, vb), Exchange(swz, va, vb)

    best_cost, conflicted, best = cost(Swizzle())
    if not conflicted:                   # (row-major order is as good as any)
        return best
    # (the bank of an element is bits `low` .. `low` + 4 of its address: the swizzle permutes
    # chunks among those bits by address bits above them)
    low = (4 // elem_bytes).bit_length() - 1 if elem_bytes < 4 else 0
    for v in range(low, low + 5):
        for k in range(1, low + 6 - v):
            for s in range(low + 5, bits - k + 1):
                c, _, ex = cost(Swizzle(v, s, k))
                if c < best_cost:
                    best_cost, best = c, ex
    return best


__all__ = ["Exchange", "Swizzle", "plan_exchange", "wavefronts", "BANKS"]

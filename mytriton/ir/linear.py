"""Linear layouts: the one definition of which thread holds which element of a tile.

A layout maps the hardware position of a value — a thread's **register** index, its **lane** in the
warp and its **warp** in the block — to the element's coordinates ``(dim0, dim1, …)``. For power-of-
two shapes every layout we use is *linear over GF(2)*, as in Triton's ``LinearLayout``: each bit of
each input has a basis vector (the coordinates of the element that input value ``2**b`` names, the
other inputs 0), and the element of any input is the XOR of the basis vectors of its set bits::

    coords(register, lane, warp) = XOR of bases[in][b] over the set bits b of each input

So a layout is nothing but a list of basis vectors per input dimension (``LinearLayout.bases``), and
every question a backend asks has a bitwise answer:

- *where is register r of this thread* — XOR the bases (``apply``); per register the register part
  is a constant (registers are unrolled) and the lane/warp part is a few shifts and masks of the
  thread id (``ir/indexing.py`` renders it for both backends);
- *replication* — a basis vector 0 means the input bit does not change the element: threads (or
  registers) that differ only in such bits hold copies. ``free_masks`` generalises this to bases
  that depend on earlier ones; the copy whose free bits are all 0 is the element's **owner** (the
  one that stores, the one a sum counts);
- *which position holds coordinate c* — solve the linear system (``holder``, ``invert``);
- *what does a slice, a broadcast or a flattening do* — map the output vectors (``drop_out_dim``,
  ``compose``, ``flatten_outs``, ``register_map``);
- *which registers are contiguous* (vector accesses) — ``contiguous_registers``.

Adding a layout kind (tensor-core operands and accumulators, swizzled shared memory): give its
assignment-level description in ``ir/layout.py`` a ``to_linear(shape, num_warps)`` that lists its
basis vectors — for an MMA accumulator, the register bits pick the pair/row halves of a fragment and
the lane bits the 8x4 quad pattern; for a swizzled shared-memory layout the in dimension is the
byte/element offset and XOR-ed bases express the swizzle. Everything downstream (index expressions,
ownership, conversions through shared memory, reductions, vector widths) works from the bases
alone; a backend only needs new code for new *operations* (``mma``, ``ldmatrix``), not for the
index arithmetic of the new layout.

Conventions: input dimensions are ``register``, ``lane`` (5 bits: 32 lanes) and ``warp``; output
dimensions are the value's dimensions, ``dim0`` … ``dimN-1``, each of power-of-two size. A layout
may also have other names (``compose``/``flatten_outs`` produce an ``offset`` output).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import prod
from typing import Callable, Iterable, Sequence

REGISTER, LANE, WARP = "register", "lane", "warp"
HARDWARE_DIMS = (REGISTER, LANE, WARP)
LANE_BITS = 5                      # 32 lanes per warp


def log2_exact(n: int, what: str = "size") -> int:
    if type(n) is not int or n <= 0 or n & (n - 1):
        raise ValueError(f"{what} must be a power of two, got {n!r}")
    return n.bit_length() - 1


def set_bits(x: int) -> Iterable[int]:
    """The indices of the set bits of ``x``, lowest first."""
    b = 0
    while x:
        if x & 1:
            yield b
        x >>= 1
        b += 1


@dataclass(frozen=True)
class LinearLayout:
    """``bases[i][b]``: the output coordinates of input ``in_dims[i]`` = ``2**b`` (others 0)."""
    in_dims: tuple[str, ...]
    bases: tuple[tuple[tuple[int, ...], ...], ...]
    out_dims: tuple[str, ...]
    out_sizes: tuple[int, ...]

    def __post_init__(self):
        if len(self.bases) != len(self.in_dims) or len(self.out_sizes) != len(self.out_dims):
            raise ValueError("one basis list per input dimension and one size per output dimension")
        for n in self.out_sizes:
            log2_exact(n, "an output dimension's size")
        for name, vectors in zip(self.in_dims, self.bases):
            for v in vectors:
                if len(v) != len(self.out_sizes) or any(not 0 <= c < n for c, n in zip(v, self.out_sizes)):
                    raise ValueError(f"basis {v} of '{name}' does not fit the output sizes {self.out_sizes}")

    @classmethod
    def make(cls, bases: dict[str, Sequence[Sequence[int]]], out_sizes: Sequence[int],
             out_dims: Sequence[str] | None = None) -> "LinearLayout":
        out_dims = tuple(out_dims) if out_dims is not None else tuple(f"dim{d}" for d in range(len(out_sizes)))
        return cls(tuple(bases), tuple(tuple(tuple(v) for v in vs) for vs in bases.values()), out_dims,
                   tuple(out_sizes))

    # --- sizes ------------------------------------------------------------------------------------

    @property
    def rank(self) -> int:
        return len(self.out_sizes)

    def _index(self, in_dim: str) -> int:
        return self.in_dims.index(in_dim)

    def bases_of(self, in_dim: str) -> tuple[tuple[int, ...], ...]:
        return self.bases[self._index(in_dim)] if in_dim in self.in_dims else ()

    def in_bits(self, in_dim: str) -> int:
        return len(self.bases_of(in_dim))

    def in_size(self, in_dim: str) -> int:
        return 1 << self.in_bits(in_dim)

    @property
    def num_regs(self) -> int:
        return self.in_size(REGISTER)

    @property
    def num_warps(self) -> int:
        return self.in_size(WARP)

    @property
    def numel(self) -> int:
        return prod(self.out_sizes)

    # --- evaluation -------------------------------------------------------------------------------

    def apply(self, **inputs: int) -> tuple[int, ...]:
        """The coordinates of the element at ``inputs`` (missing inputs are 0)."""
        out = [0] * self.rank
        for name, value in inputs.items():
            if not 0 <= value < self.in_size(name):
                raise ValueError(f"{name}={value} is outside 0..{self.in_size(name) - 1}")
            for b in set_bits(value):
                for d, c in enumerate(self.bases_of(name)[b]):
                    out[d] ^= c
        return tuple(out)

    # flat vectors: the output coordinates as one int, dim0 in the lowest bits (for the GF(2) algebra)
    @cached_property
    def _offsets(self) -> tuple[int, ...]:
        offs, o = [], 0
        for n in self.out_sizes:
            offs.append(o)
            o += log2_exact(n)
        return tuple(offs)

    def _flat(self, v: Sequence[int]) -> int:
        return sum(c << o for c, o in zip(v, self._offsets))

    def _unflat(self, x: int) -> tuple[int, ...]:
        return tuple((x >> o) & (n - 1) for o, n in zip(self._offsets, self.out_sizes))

    @cached_property
    def _echelon(self):
        """Gaussian elimination over the input bits in order (registers, then lanes, then warps;
        low bits first): ``(pivots, free)`` where ``pivots`` maps a pivot bit to (reduced vector,
        the set of input bits it combines, as a bitmask over ``_in_bit_list``) and ``free`` lists
        the input bits whose basis is a combination of earlier ones."""
        pivots: dict[int, tuple[int, int]] = {}
        free = []
        for i, (name, b) in enumerate(self._in_bit_list):
            v, combo = self._flat(self.bases_of(name)[b]), 1 << i
            while v:
                top = v.bit_length() - 1
                if top not in pivots:
                    pivots[top] = (v, combo)
                    break
                pv, pc = pivots[top]
                v, combo = v ^ pv, combo ^ pc
            else:
                free.append((name, b))
        return pivots, free

    @cached_property
    def _in_bit_list(self) -> tuple[tuple[str, int], ...]:
        return tuple((name, b) for name in self.in_dims for b in range(self.in_bits(name)))

    def free_masks(self) -> dict[str, int]:
        """Per input dimension, the bits that only select among copies of the same elements (a
        zero basis, or one in the span of earlier bits). Positions whose free bits are all 0 hold
        each element of the image exactly once: the owners."""
        masks = {name: 0 for name in self.in_dims}
        for name, b in self._echelon[1]:
            masks[name] |= 1 << b
        return masks

    def is_owner(self, **inputs: int) -> bool:
        masks = self.free_masks()
        return all(value & masks.get(name, 0) == 0 for name, value in inputs.items())

    @property
    def is_surjective(self) -> bool:
        """Every element of the output space is held by some position."""
        return len(self._echelon[0]) == sum(log2_exact(n) for n in self.out_sizes)

    def holder(self, coords: Sequence[int]) -> dict[str, int]:
        """The owner of the element at ``coords``: the one input position with all free bits 0
        that maps to it. ValueError when no position holds it."""
        target = self._flat(coords)
        pivots, _ = self._echelon
        combo = 0
        while target:
            top = target.bit_length() - 1
            if top not in pivots:
                raise ValueError(f"no position holds the element {tuple(coords)}")
            pv, pc = pivots[top]
            target, combo = target ^ pv, combo ^ pc
        out = {name: 0 for name in self.in_dims}
        for i in set_bits(combo):
            name, b = self._in_bit_list[i]
            out[name] |= 1 << b
        return out

    def invert(self) -> "LinearLayout":
        """For a surjective layout: the layout from coordinates to the owner's inputs (output
        dimensions become inputs and the other way round)."""
        if not self.is_surjective:
            raise ValueError("only a surjective layout can be inverted")
        bases = {}
        for d, (name, n) in enumerate(zip(self.out_dims, self.out_sizes)):
            vs = []
            for b in range(log2_exact(n)):
                h = self.holder(tuple((1 << b) if i == d else 0 for i in range(self.rank)))
                vs.append(tuple(h[i] for i in self.in_dims))
            bases[name] = vs
        return LinearLayout.make(bases, [self.in_size(n) for n in self.in_dims], self.in_dims)

    # --- transformations --------------------------------------------------------------------------

    def compose(self, outer: "LinearLayout") -> "LinearLayout":
        """``outer(self(x))``: ``outer``'s input dimensions are this layout's output dimensions."""
        if outer.in_dims != self.out_dims or tuple(outer.in_size(n) for n in outer.in_dims) != self.out_sizes:
            raise ValueError(f"cannot compose: outputs {self.out_dims} {self.out_sizes} are not the inputs "
                             f"{outer.in_dims} of the outer layout")
        bases = {name: [outer.apply(**dict(zip(self.out_dims, v))) for v in vs]
                 for name, vs in zip(self.in_dims, self.bases)}
        return LinearLayout.make(bases, outer.out_sizes, outer.out_dims)

    def flatten_outs(self) -> "LinearLayout":
        """One output, ``offset``: the row-major offset (last dimension fastest) of the element."""
        return self.compose(row_major(self.out_sizes, self.out_dims))

    def drop_out_dim(self, d: int) -> "LinearLayout":
        """Forget output dimension ``d`` (what a slice layout does to its parent)."""
        keep = [i for i in range(self.rank) if i != d]
        bases = {name: [tuple(v[i] for i in keep) for v in vs] for name, vs in zip(self.in_dims, self.bases)}
        return LinearLayout.make(bases, [self.out_sizes[i] for i in keep], [self.out_dims[i] for i in keep])

    def sublayout(self, in_dims: Sequence[str]) -> "LinearLayout":
        return LinearLayout.make({n: self.bases_of(n) for n in in_dims}, self.out_sizes, self.out_dims)

    def register_map(self, dst: "LinearLayout", project: Callable[[tuple[int, ...]], tuple[int, ...]]) -> list[int]:
        """For each register bit of this layout, the register of ``dst`` that holds the projected
        element in the same thread (``project`` is linear: a broadcast zeroes dimensions, a
        reduction deletes one). Register ``r`` then corresponds to the XOR of the entries of its set
        bits. ValueError when the two layouts do not place the projected elements in the same
        threads."""
        for name in (LANE, WARP):
            mine = [project(v) for v in self.bases_of(name)]
            theirs = list(dst.bases_of(name))
            if len(mine) != len(theirs) or any(a != b for a, b in zip(mine, theirs)):
                raise ValueError(f"the {name} bases differ after projection: {mine} vs {theirs}")
        regs = dst.sublayout([REGISTER])
        out = []
        for v in self.bases_of(REGISTER):
            try:
                out.append(regs.holder(project(v))[REGISTER])
            except ValueError:
                raise ValueError(f"no register of the target layout holds {project(v)}") from None
        return out

    # --- questions the backends ask ----------------------------------------------------------------

    def bits_along(self, in_dim: str, out_dims: Iterable[int]) -> list[int]:
        """The bits of ``in_dim`` whose basis moves along the output dimensions ``out_dims`` (a
        reduction combines exactly the positions that differ in these bits). ValueError when such a
        basis also moves along another dimension (a reduction cannot separate them)."""
        dims = set(out_dims)
        out = []
        for b, v in enumerate(self.bases_of(in_dim)):
            along = any(v[d] for d in dims)
            if along and any(c for d, c in enumerate(v) if d not in dims):
                raise ValueError(f"{in_dim} bit {b} moves along {sorted(dims)} and another dimension at once")
            if along:
                out.append(b)
        return out

    def separates(self, d: int) -> bool:
        """Whether every input bit that moves along output dimension ``d`` moves it by a power of
        two and moves nothing else: a scan along ``d`` then combines positions bit by bit."""
        return not any(v[d] and (v[d] & (v[d] - 1) or any(c for i, c in enumerate(v) if i != d))
                       for vs in self.bases for v in vs)

    def contiguous_registers(self, d: int) -> int:
        """How many consecutive registers from register 0 hold consecutive elements along output
        dimension ``d`` (and the same elsewhere): 2**k for the longest run of register bases
        1, 2, 4, … along ``d``. A chunk of that many registers at an aligned register index moves
        as one vector access."""
        n = 1
        for b, v in enumerate(self.bases_of(REGISTER)):
            if v != tuple((1 << b) if i == d else 0 for i in range(self.rank)):
                break
            n *= 2
        return n

    # --- printing ---------------------------------------------------------------------------------

    def __str__(self) -> str:
        """``linear<dim0=4, dim1=8>`` and one line per input dimension listing the image of each of
        its bits (input 1, 2, 4, …) in order; ``(0, 0)`` marks a bit that only replicates."""
        head = "linear<" + ", ".join(f"{n}={s}" for n, s in zip(self.out_dims, self.out_sizes)) + ">"
        width = max((len(n) for n in self.in_dims), default=0) + 1
        lines = [head]
        for name, vs in zip(self.in_dims, self.bases):
            shown = " ".join("(" + ", ".join(map(str, v)) + ")" for v in vs) or "-"
            lines.append(f"  {(name + ':').ljust(width)} {shown}")
        return "\n".join(lines)


def row_major(sizes: Sequence[int], names: Sequence[str]) -> LinearLayout:
    """Coordinates -> their row-major offset (the last dimension fastest)."""
    strides, s = [0] * len(sizes), 1
    for d in reversed(range(len(sizes))):
        strides[d] = s
        s *= sizes[d]
    bases = {name: [((1 << b) * strides[d],) for b in range(log2_exact(sizes[d]))] for d, name in enumerate(names)}
    return LinearLayout.make(bases, [s], ["offset"])


def thread_bit(in_dim: str, b: int) -> int:
    """The bit of the block's thread id (``lane + 32 * warp``) that bit ``b`` of a lane or warp is."""
    return b if in_dim == LANE else LANE_BITS + b


__all__ = ["LinearLayout", "row_major", "thread_bit", "log2_exact", "set_bits", "REGISTER", "LANE", "WARP",
           "HARDWARE_DIMS", "LANE_BITS"]

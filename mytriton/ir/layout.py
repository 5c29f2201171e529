"""Layouts: which thread of a CUDA block holds which elements of a tile.

A program instance is one thread block of ``num_warps * 32`` threads. Every block-typed SSA value
gets a layout (assigned by ``passes/layout.py``); each thread then holds a small register array of
that value's elements. Two kinds, as in Triton's GPU dialect:

- ``BlockedLayout``: each thread owns ``size_per_thread`` contiguous elements per dimension, lanes
  and warps tile the rest; the pattern repeats to cover larger tiles, and threads replicate
  elements of smaller tiles.
- ``SliceLayout(dim, parent)``: the layout of a value that lost dimension ``dim`` of a ``parent``
  layout (a reduction result, or the operand of ``x[:, None]``): every thread along ``dim`` holds
  the same elements.

A dimension of size 1 is always held whole by every thread, so a ``(BM, 1)`` value and a
``(BM, BN)`` value can share one layout: broadcasting never moves data.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod


@dataclass(frozen=True)
class BlockedLayout:
    size_per_thread: tuple[int, ...]
    threads_per_warp: tuple[int, ...]
    warps_per_cta: tuple[int, ...]
    order: tuple[int, ...]            # dimensions from fastest- to slowest-varying

    @property
    def rank(self) -> int:
        return len(self.size_per_thread)

    def __str__(self) -> str:
        def f(t):
            return "[" + ", ".join(map(str, t)) + "]"
        return (f"#blocked<spt={f(self.size_per_thread)}, tpw={f(self.threads_per_warp)}, "
                f"wpc={f(self.warps_per_cta)}, order={f(self.order)}>")


@dataclass(frozen=True)
class SliceLayout:
    dim: int
    parent: "Layout"

    @property
    def rank(self) -> int:
        return self.parent.rank - 1

    def __str__(self) -> str:
        return f"#slice<dim={self.dim}, parent={self.parent}>"


Layout = BlockedLayout | SliceLayout


@dataclass(frozen=True)
class DimMap:
    """How one dimension of a value is spread over one thread's registers and the block's threads."""
    size: int            # the value's extent in this dimension
    spt: int             # contiguous elements per thread
    tpw: int             # lanes along this dimension
    wpc: int             # warps along this dimension
    lane_stride: int     # lane index = … + lane_d * lane_stride
    warp_stride: int
    blocked_dim: int     # the dimension of the underlying BlockedLayout

    @property
    def coverage(self) -> int:
        return self.spt * self.tpw * self.wpc

    @property
    def regs(self) -> int:
        """Registers one thread holds along this dimension."""
        if self.size == 1:
            return 1
        if self.size < self.spt:
            return self.size
        return self.spt * max(1, -(-self.size // self.coverage))

    @property
    def replicated(self) -> bool:
        """True when several threads hold the same elements along this dimension."""
        return self.size < self.coverage


def _strides(extents: tuple[int, ...], order: tuple[int, ...]) -> list[int]:
    strides = [0] * len(extents)
    s = 1
    for d in order:
        strides[d] = s
        s *= extents[d]
    return strides


def _blocked_of(layout: Layout) -> tuple[BlockedLayout, list[int]]:
    """The underlying blocked layout and, for each dim of ``layout``, its blocked dimension."""
    if isinstance(layout, BlockedLayout):
        return layout, list(range(layout.rank))
    base, dims = _blocked_of(layout.parent)
    return base, [d for i, d in enumerate(dims) if i != layout.dim]


def dim_maps(layout: Layout, shape: tuple[int, ...]) -> list[DimMap]:
    base, dims = _blocked_of(layout)
    if len(dims) != len(shape):
        raise ValueError(f"layout {layout} has rank {len(dims)}, shape {shape} has rank {len(shape)}")
    lane_strides = _strides(base.threads_per_warp, base.order)
    warp_strides = _strides(base.warps_per_cta, base.order)
    return [DimMap(size, base.size_per_thread[d], base.threads_per_warp[d], base.warps_per_cta[d],
                   lane_strides[d], warp_strides[d], d)
            for size, d in zip(shape, dims)]


def dropped_dims(layout: Layout) -> list[DimMap]:
    """The blocked dimensions a slice layout dropped (threads along them hold the same elements),
    as size-1 maps, so that a backend can compute a thread's position along each."""
    base, kept = _blocked_of(layout)
    full = dim_maps(base, (1,) * base.rank)
    return [full[d] for d in range(base.rank) if d not in kept]


def num_regs(layout: Layout, shape: tuple[int, ...]) -> int:
    return prod(m.regs for m in dim_maps(layout, shape))


def element_coords(layout: Layout, shape: tuple[int, ...], thread: int, reg: int) -> tuple[int, ...]:
    """Logical coordinates of register ``reg`` of thread ``thread`` (the reference definition;
    the CUDA backend emits the same arithmetic and the layout tests check both agree)."""
    maps = dim_maps(layout, shape)
    lane, warp = thread % 32, thread // 32
    coords = []
    rest = reg
    per_dim = []
    for m in reversed(maps):
        per_dim.append(rest % m.regs)
        rest //= m.regs
    per_dim.reverse()
    for m, k in zip(maps, per_dim):
        t = ((warp // m.warp_stride) % m.wpc) * m.tpw + (lane // m.lane_stride) % m.tpw
        raw = (k // m.spt) * m.coverage + t * m.spt + k % m.spt
        coords.append(raw % m.size)
    return tuple(coords)


def _pow2_floor(x: int) -> int:
    p = 1
    while p * 2 <= x:
        p *= 2
    return p


def default_layout(shape: tuple[int, ...], num_warps: int, elem_bytes: int = 4) -> BlockedLayout:
    """Triton-like default: the last dimension is fastest, each thread owns up to 16 contiguous
    bytes along it (so aligned accesses can be vectorized), lanes then warps fill the tile
    starting from the fastest dimension."""
    rank = len(shape)
    order = tuple(reversed(range(rank)))
    numel = prod(shape)
    threads = 32 * num_warps
    per_thread = max(1, numel // threads)
    spt = [1] * rank
    spt[order[0]] = max(1, min(_pow2_floor(max(1, 16 // elem_bytes)), per_thread, shape[order[0]]))
    tpw = [1] * rank
    lanes = 32
    for d in order:
        room = max(1, shape[d] // spt[d])
        take = min(lanes, _pow2_floor(room)) if d != order[-1] else lanes
        tpw[d] = take
        lanes //= take
    wpc = [1] * rank
    warps = num_warps
    for d in reversed(order):          # warps go to the slowest dimension first
        room = max(1, shape[d] // (spt[d] * tpw[d]))
        take = min(warps, _pow2_floor(room)) if d != order[0] else warps
        wpc[d] = take
        warps //= take
    return BlockedLayout(tuple(spt), tuple(tpw), tuple(wpc), order)

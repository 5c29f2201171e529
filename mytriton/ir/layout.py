"""Layouts: which thread of a CUDA block holds which elements of a tile.

A program instance is one thread block of ``num_warps * 32`` threads. Every block-typed SSA value
gets a layout (assigned by ``passes/layout.py``); each thread then holds a small register array of
that value's elements. The layouts here are the *assignment-level* descriptions the layout pass
chooses among, as in Triton's GPU dialect:

- ``BlockedLayout``: each thread owns ``size_per_thread`` contiguous elements per dimension, lanes
  and warps tile the rest; the pattern repeats to cover larger tiles, and threads replicate
  elements of smaller tiles.
- ``SliceLayout(dim, parent)``: the layout of a value that lost dimension ``dim`` of a ``parent``
  layout (a reduction result, or the operand of ``x[:, None]``): every thread along ``dim`` holds
  the same elements.

A dimension of size 1 is always held whole by every thread, so a ``(BM, 1)`` value and a
``(BM, BN)`` value can share one layout: broadcasting never moves data.

What a layout *means* for a value of a given shape is its linear layout (``ir/linear.py``):
``to_linear(layout, shape, num_warps)`` gives the basis vectors of register, lane and warp bits, and
everything else (``element_coords``, ``num_regs``, the backends' index arithmetic through
``ir/indexing.py``) is derived from that one form. Register ``r`` of a thread enumerates its
elements with the layout's fastest dimension (``order[0]``) fastest; within a dimension, the
``size_per_thread`` contiguous elements first, then the repetitions of the pattern.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import prod

from .linear import LANE, LANE_BITS, REGISTER, WARP, LinearLayout, log2_exact


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

    def to_linear(self, shape: tuple[int, ...], num_warps: int) -> LinearLayout:
        """Registers: per dimension along ``order`` the ``spt`` contiguous elements, then the
        repetitions of the pattern over the dimension; lanes and warps: along ``order``, each
        ``spt`` (lanes) or ``spt * tpw`` (warps) elements apart. A basis that lands beyond the
        extent is 0: those lanes/warps hold copies (the tile is smaller than the pattern)."""
        rank = self.rank

        def vector(d: int, value: int) -> tuple[int, ...]:
            return tuple(value if i == d and value < shape[d] else 0 for i in range(rank))

        spt, tpw, wpc = self.size_per_thread, self.threads_per_warp, self.warps_per_cta
        for what, t in (("size_per_thread", spt), ("threads_per_warp", tpw), ("warps_per_cta", wpc)):
            for n in t:
                log2_exact(n, f"{self}: {what}")
        regs = []
        for d in self.order:
            cover = spt[d] * tpw[d] * wpc[d]
            regs += [vector(d, 1 << b) for b in range(log2_exact(min(spt[d], shape[d])))]
            regs += [vector(d, cover << b) for b in range(log2_exact(max(1, shape[d] // cover)))]
        lanes = [vector(d, spt[d] << b) for d in self.order for b in range(log2_exact(tpw[d]))]
        warps = [vector(d, spt[d] * tpw[d] << b) for d in self.order for b in range(log2_exact(wpc[d]))]
        warp_bits = log2_exact(num_warps, "num_warps")
        if len(lanes) > LANE_BITS or len(warps) > warp_bits:
            raise ValueError(f"{self} needs more than 32 lanes or {num_warps} warps")
        zero = (0,) * rank
        return LinearLayout.make({REGISTER: regs, LANE: lanes + [zero] * (LANE_BITS - len(lanes)),
                                  WARP: warps + [zero] * (warp_bits - len(warps))}, shape)


@dataclass(frozen=True)
class SliceLayout:
    dim: int
    parent: "Layout"

    @property
    def rank(self) -> int:
        return self.parent.rank - 1

    def __str__(self) -> str:
        return f"#slice<dim={self.dim}, parent={self.parent}>"

    def to_linear(self, shape: tuple[int, ...], num_warps: int) -> LinearLayout:
        """The parent's layout for the shape with a size-1 dimension ``dim`` (so the threads along
        it hold copies), without that dimension."""
        parent_shape = tuple(shape[:self.dim]) + (1,) + tuple(shape[self.dim:])
        return self.parent.to_linear(parent_shape, num_warps).drop_out_dim(self.dim)


@dataclass(frozen=True)
class MmaLayout:
    """The accumulator layout of the tensor cores' ``mma.sync.m16n8k16`` (Triton's NVIDIA MMA v2):
    each warp computes 16x8 tiles; in a tile, lane ``l`` holds rows ``l/4`` and ``l/4 + 8`` at
    columns ``2*(l%4)`` and ``+1`` (registers c0..c3). ``warps_per_cta`` = (along M, along N) place
    the warps' tiles side by side; the pattern repeats over the value, along N first."""
    warps_per_cta: tuple[int, int]

    @property
    def rank(self) -> int:
        return 2

    def __str__(self) -> str:
        return f"#mma<m16n8, warps=[{self.warps_per_cta[0]}, {self.warps_per_cta[1]}]>"

    def to_linear(self, shape: tuple[int, ...], num_warps: int) -> LinearLayout:
        wm, wn = self.warps_per_cta
        return _fragments(self, shape, num_warps, [(0, 1), (8, 0)], 8 * wn, 2, 8)


@dataclass(frozen=True)
class DotOperandLayout:
    """The A operand of ``mma.sync`` in registers, as the warps of ``parent`` (the dot result's
    MMA layout) read it: per 16-row tile and 32-byte step of K, a lane holds its four fragment
    words a0..a3 — rows ``l/4`` and ``+8`` x the first and second 16 bytes of K, ``per_word``
    elements of K each (2 for 16-bit elements, 1 for fp32, 4 for int8), at ``per_word * (l%4)``.
    Registers: the elements of a word, then row + 8, then K + 16 bytes, then the steps of K, then
    the row tiles (as the parent's, ``16 * WM`` apart); warps along N hold copies."""
    parent: MmaLayout
    per_word: int

    @property
    def rank(self) -> int:
        return 2

    def __str__(self) -> str:
        return f"#dot_operand<a, k_per_word={self.per_word}, parent={self.parent}>"

    def to_linear(self, shape: tuple[int, ...], num_warps: int) -> LinearLayout:
        p = self.per_word
        word = [(0, 1 << b) for b in range(log2_exact(p))]
        return _fragments(self, shape, num_warps, word + [(8, 0), (0, 4 * p)], 8 * p, p, 0)


def _fragments(layout, shape: tuple[int, ...], num_warps: int, tile_regs: list, repeat_cols: int, lane_cols: int,
               warp_cols: int) -> LinearLayout:
    """What the tensor cores' fragment layouts share (``MmaLayout`` and ``DotOperandLayout``, of
    the warps ``WM x WN`` of the MMA layout): a thread's registers are ``tile_regs`` (as (row,
    column) steps) within its 16-row tile, then the tile's repetitions every ``repeat_cols``
    columns and every ``16 WM`` rows; lane ``l`` starts at column ``lane_cols * (l % 4)`` of row
    ``l / 4``; warps are 16 rows apart along M and ``warp_cols`` columns apart along N (0: the
    warps along N hold copies). A basis beyond the extent is 0 (copies)."""
    mma = layout.parent if isinstance(layout, DotOperandLayout) else layout
    wm, wn = mma.warps_per_cta
    if wm * wn != num_warps:
        raise ValueError(f"{layout} tiles {wm * wn} warps, the block has {num_warps}")

    def v(row: int, col: int) -> tuple[int, int]:
        return (row if row < shape[0] else 0, col if col < shape[1] else 0)
    regs = [v(*step) for step in tile_regs]
    regs += [v(0, repeat_cols << b) for b in range(log2_exact(max(1, shape[1] // repeat_cols)))]
    regs += [v((16 * wm) << b, 0) for b in range(log2_exact(max(1, shape[0] // (16 * wm))))]
    lanes = [v(0, lane_cols), v(0, 2 * lane_cols), v(1, 0), v(2, 0), v(4, 0)]
    warps = [v(16 << b, 0) for b in range(log2_exact(wm))]
    warps += [v(0, warp_cols << b) if warp_cols else (0, 0) for b in range(log2_exact(wn))]
    return LinearLayout.make({REGISTER: regs, LANE: lanes, WARP: warps}, shape)


def mma_layout(shape: tuple[int, int], num_warps: int) -> MmaLayout:
    """The warps' arrangement for an (M, N) accumulator: doubled along the dimension with more
    16x8 tiles per warp left (M first), as long as the tile holds them."""
    wm = wn = 1
    while wm * wn < num_warps:
        if shape[0] // (16 * wm) >= shape[1] // (8 * wn) and shape[0] >= 32 * wm:
            wm *= 2
        elif shape[1] >= 16 * wn:
            wn *= 2
        else:
            wm *= 2
    return MmaLayout((wm, wn))


Layout = BlockedLayout | SliceLayout | MmaLayout | DotOperandLayout


def _warps_of(layout: Layout) -> int:
    while isinstance(layout, (SliceLayout, DotOperandLayout)):
        layout = layout.parent
    return prod(layout.warps_per_cta)


@lru_cache(maxsize=4096)
def to_linear(layout: Layout, shape: tuple[int, ...], num_warps: int | None = None) -> LinearLayout:
    """The linear layout of a value of ``shape`` in ``layout`` for a block of ``num_warps`` warps
    (default: the warps the layout tiles with)."""
    shape = tuple(shape)
    if len(shape) != layout.rank:
        raise ValueError(f"layout {layout} has rank {layout.rank}, shape {shape} has rank {len(shape)}")
    return layout.to_linear(shape, num_warps or _warps_of(layout))


def num_regs(layout: Layout, shape: tuple[int, ...]) -> int:
    return to_linear(layout, shape).num_regs


def element_coords(layout: Layout, shape: tuple[int, ...], thread: int, reg: int) -> tuple[int, ...]:
    """Logical coordinates of register ``reg`` of thread ``thread``."""
    return to_linear(layout, shape).apply(register=reg, lane=thread % 32, warp=thread // 32)


def _pow2_floor(x: int) -> int:
    p = 1
    while p * 2 <= x:
        p *= 2
    return p


def default_layout(shape: tuple[int, ...], num_warps: int, elem_bytes: int = 4,
                   max_contiguous: int | None = None, order: tuple[int, ...] | None = None) -> BlockedLayout:
    """Triton-like default: the last dimension is fastest (or ``order[0]``), each thread owns up
    to 16 contiguous bytes along it (so aligned accesses can be vectorized; at most
    ``max_contiguous`` elements), lanes then warps fill the tile starting from the fastest
    dimension."""
    rank = len(shape)
    order = tuple(order) if order is not None else tuple(reversed(range(rank)))
    numel = prod(shape)
    threads = 32 * num_warps
    per_thread = max(1, numel // threads)
    spt = [1] * rank
    spt[order[0]] = max(1, min(_pow2_floor(max(1, 16 // elem_bytes)), per_thread, shape[order[0]],
                               max_contiguous or shape[order[0]]))
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


def outer_product_layout(shape: tuple[int, int], num_warps: int, max_contiguous: int) -> BlockedLayout:
    """The layout of a ``(M, N)`` tile accumulated from a column ``(M, 1)`` and a row ``(1, N)``
    loaded in a loop (``acc += a[:, None] * b[None, :]``): every lane, then every warp, along N
    while N has room (each thread's run along it at most ``max_contiguous`` elements: the row's
    proven vector width), so that a warp's threads hold the same rows and the row loads are
    coalesced; the rows a thread holds are consecutive (its whole share of M in its registers), so
    that the column, staged in shared memory, reaches each thread as 16-byte broadcast reads."""
    m, n = shape
    threads = 32 * num_warps
    spt_n = max(1, min(_pow2_floor(max(1, max_contiguous)), n // threads if n >= threads else 1))
    lanes_n = min(32, max(1, n // spt_n))
    lanes_m = 32 // lanes_n
    warps_n = min(num_warps, max(1, _pow2_floor(max(1, n // (spt_n * lanes_n)))))
    warps_m = num_warps // warps_n
    spt_m = max(1, m // (lanes_m * warps_m))
    return BlockedLayout((spt_m, spt_n), (lanes_m, lanes_n), (warps_m, warps_n), (1, 0))


def half_warp_row_layout(shape: tuple[int, int], num_warps: int) -> BlockedLayout:
    """The layout of a ``(M, N)`` outer-product tile that keeps its column in registers (not
    staged): one element a thread along N, up to 32 lanes along N (for N = 16, a half-warp reads
    the row's 64 bytes in one access), the other lanes and then the warps along M, each thread's
    rows that far apart. For rows of 16 the default (16-byte runs, 4 lanes along N, 8 along M) has
    each warp read 8 rows of the column an access and the row as 16-byte vectors, 4 L1
    wavefronts; here it is 2 rows and one wavefront."""
    m, n = shape
    lanes_n = min(32, n)
    lanes_m = 32 // lanes_n
    warps_m = min(num_warps, max(1, _pow2_floor(max(1, m // lanes_m))))
    return BlockedLayout((1, 1), (lanes_m, lanes_n), (warps_m, num_warps // warps_m), (1, 0))


def permuted_operand_layout(result: Layout, dims: tuple[int, ...]) -> BlockedLayout | None:
    """The layout an operand of ``trans(x, dims)`` must have for the result to be in ``result``
    with no data moving (result dimension i is the operand's dimension ``dims[i]``); None where
    ``result`` is not blocked."""
    if not isinstance(result, BlockedLayout):
        return None
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i

    def back(t):
        return tuple(t[inv[d]] for d in range(len(dims)))
    return BlockedLayout(back(result.size_per_thread), back(result.threads_per_warp), back(result.warps_per_cta),
                         tuple(dims[d] for d in result.order))


def permuted_registers(result: Layout, result_shape: tuple[int, ...], operand: Layout,
                       operand_shape: tuple[int, ...], dims: tuple[int, ...], num_warps: int) -> list[int]:
    """For each register of a ``trans(x, dims)`` result, the register of the operand (same thread)
    holding its element: the layouts place the same elements in the same threads, in another
    register order (a blocked layout numbers registers by dimension)."""
    res, src = to_linear(result, result_shape, num_warps), to_linear(operand, operand_shape, num_warps)
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    bits = res.register_map(src, lambda c: tuple(c[inv[d]] for d in range(len(dims))))
    out = []
    for r in range(res.num_regs):
        idx = 0
        for b, v in enumerate(bits):
            if r >> b & 1:
                idx ^= v
        out.append(idx)
    return out

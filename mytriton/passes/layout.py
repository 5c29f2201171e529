"""Layout assignment: give every block value a layout (ir/layout.py), backward from its consumers.

Walking each region bottom-up, a value's consumers have all asked for a layout by the time its
definition is reached. The definition takes the layout most of them asked for (ops with structural
needs, like reductions, choose within their constraints); consumers that asked for another layout
get a ``convert_layout`` inserted after the definition — or, for cheap sources such as ``arange``
and ``zeros``, a re-materialized copy in the layout they want. Loop-carried values keep one layout
across the initial value, the region argument, the yield and the result — for every op with
regions, along the lanes of its RegionFlow.
"""
from __future__ import annotations

from collections import Counter
from math import prod

from ..errors import CompilationError
from ..ir.layout import (BlockedLayout, DotOperandLayout, Layout, MmaLayout, SliceLayout, default_layout,
                         half_warp_row_layout, mma_layout, num_regs, outer_product_layout, permuted_operand_layout,
                         to_linear)
from ..ir.ops import ARGS, OPERANDS, OPS, REDUCE_KINDS, RESULTS, THROUGH_SHARED
from ..ir.regions import flow_of, incoming, is_target, lanes, port, sources_of, terminator
from ..ir.ssa import Function, Op, Region, Value, walk
from ..ir.types import BF16, F16, F32, I8, I32, BlockType, PointerType, broadcast_shapes, shape_of
from .dce import dce
from .prefetch import staged_chain

# Each thread's share of a block value is an array in the generated code, walked by loops that
# NVRTC unrolls fully up to UNROLLED_ELEMENTS_PER_THREAD elements (registers); NVRTC's time grows
# faster than linearly with it (on a 2-core machine: 128 elements ~2 s, 512 ~25 s, 1024 ~90 s).
# A kernel holding larger shares (far more than the 255 registers a thread has: the arrays live in
# local memory anyway, as Triton's spills do) has its loops unrolled 4 times only: a 32x32x32 tile
# on one warp (1024 elements a thread) compiles in 0.3 s instead of 9 s. Above
# MAX_ELEMENTS_PER_THREAD a kernel is refused.
UNROLLED_ELEMENTS_PER_THREAD = 512
MAX_ELEMENTS_PER_THREAD = 4096
# an outer product's column is staged through shared memory where a thread holds this many of its rows
STAGED_COLUMN_REGS = 8
# the shares of an outer-product tile a thread holds from which its layout is the outer-product one
# (the larger: whatever the row's width; see _outer_product_pays)
OUTER_PRODUCT_SHARE = 128
OUTER_PRODUCT_HEAVY_SHARE = 256
OUTER_PRODUCT_ONE_WARP_SHARE = 64
# the largest share of an outer-product tile with a row of 16 that reads its row a half-warp at once
# (see _half_warp_row_pays)
HALF_WARP_ROW_SHARE = 8
# the largest share of an outer-product tile that reads its row one element a lane (as Triton's),
# and the largest such tile whose row is proven to run in vectors (see _lane_row_pays)
LANE_ROW_SHARE = 4
LANE_ROW_VECTOR_TILE = 512
# the share of a tile a thread holds from which its accesses outside loops, too, are vectors only
# where proven (_proven_access_widths): 128 elements to check at run time, in runs of 4, cost one
# thread's loads 0.94 of Triton's speed (the row softmax of 3000 columns on one warp, an add of
# BLOCK=4096 on one warp, without alignment promises, on the H200), where scalar accesses a lane
# apart are coalesced as Triton's
SCALAR_ACCESS_SHARE = 128


def _elem_bytes(ty: BlockType) -> int:
    e = ty.element
    if isinstance(e, PointerType):
        return max(1, e.pointee.bits // 8)
    return max(1, e.bits // 8)


def _proven_access_widths(fn: Function) -> dict[tuple[int, ...], int]:
    """Per tile shape: the fewest contiguous elements that a load or store of that shape is proven
    to move at once — by the pointer's contiguity and alignment and the mask's constancy (the axis
    analysis), at most 16 bytes — over the accesses inside loops and those outside loops of which
    a thread holds ``SCALAR_ACCESS_SHARE`` elements or more. The CUDA backend makes such an access
    a vector only where it is proven (see ``vector_width``); where it is not, a thread's elements
    are best one lane apart, so that each warp-wide access is coalesced (Triton's Coalesce pass
    chooses ``sizePerThread`` the same way). Other accesses outside loops keep runs of 16 bytes,
    which the CUDA backend moves as vectors where a run-time test finds them aligned and unmasked."""
    from .axisinfo import analyze
    axis = analyze(fn)
    threads = 32 * fn.num_warps
    in_loops = {id(op) for loop in walk(fn.body) if OPS[loop.name].loop for r in loop.regions for op in walk(r)}
    widths: dict[tuple[int, ...], int] = {}
    for op in walk(fn.body):
        d = OPS[op.name]
        ptr = op.operands[0] if op.operands else None
        if not (op.name in ("load", "store") and isinstance(ptr.type, BlockType)):
            continue
        if id(op) not in in_loops and prod(ptr.type.shape) < SCALAR_ACCESS_SHARE * threads:
            continue
        eb = _elem_bytes(ptr.type)
        info = axis.get(ptr)
        width = min(16 // eb if eb in (2, 4, 8) else 1, info.contiguity[-1])
        for m in op.operands[d.mask_operand:d.mask_operand + 1]:
            width = min(width, axis.get(m).expand(shape_of(m.type), ptr.type.shape).constancy[-1])
        width = 1 << (max(1, width).bit_length() - 1)
        while width > 1 and info.divisibility[-1] < width * eb:
            width //= 2
        widths[ptr.type.shape] = min(widths.get(ptr.type.shape, width), width)
    return widths


def _outer_product_tiles(fn: Function, shapes: list[tuple[int, ...]],
                         widths: dict[tuple[int, ...], int]) -> dict[tuple[int, int], int]:
    """The rank-2 tiles ``(M, N)`` that a loop accumulates from a loaded column ``(M, 1)`` and a
    loaded row ``(1, N)`` (the outer-product matmul: ``acc += a[:, None] * b[None, :]``), each with
    the row's proven vector width (``widths``: ``_proven_access_widths``)."""
    dots = {op.result.type.shape for op in walk(fn.body) if op.name == "dot"}     # (their own layouts)
    loaded = {ld.operands[0].type.shape for loop in walk(fn.body) if OPS[loop.name].loop
              for r in loop.regions for ld in walk(r)
              if ld.name == "load" and isinstance(ld.operands[0].type, BlockType)}
    return {(m, n): widths.get((1, n), 1) for (m, n) in (s for s in shapes if len(s) == 2)
            if m > 1 and n > 1 and (m, 1) in loaded and (1, n) in loaded and (m, n) not in dots}


def _share(shape: tuple[int, int], num_warps: int) -> int:
    """The elements of a 2-D tile each thread holds (its products, for an outer-product tile)."""
    return shape[0] * shape[1] // (32 * num_warps)


def _outer_product_pays(layout: BlockedLayout, shape: tuple[int, int], num_warps: int, width: int) -> bool:
    """Whether an outer-product tile takes ``outer_product_layout`` (its column staged through
    shared memory, a barrier an iteration) rather than the default (16-byte runs along N, each
    thread loading its rows of the column itself). Measured on the H200 (``benchmarks/sweep.py``,
    the seed matmul, every configuration both ways): it pays where a thread's share of the tile is
    ``OUTER_PRODUCT_HEAVY_SHARE`` elements or more (the default's column loads then take the
    registers the accumulators want: 128x128 on 2 warps 0.58 -> 0.92 of Triton, 64x128 on 1 warp
    0.52 -> 0.98), and from ``OUTER_PRODUCT_SHARE`` where the row keeps runs of 2 or more (or has
    no proven width to lose: 64x64 on 1 warp 0.75 -> 0.86); in smaller shares the barrier's wait
    is not hidden by the products of an iteration (32x16 on 2 warps 0.94 -> 0.46). On one warp (its
    barrier is the warp's own) it pays from ``OUTER_PRODUCT_ONE_WARP_SHARE`` where the row has no
    proven width (the default then loads it a scalar at a time in 16-byte-strided runs; the
    staged layout one element a lane) and a lane holds two columns or more (32x64 0.77 -> 1.02,
    16x128 2.03 -> 2.19; with a column a lane, 64x32 lost 1.58 -> 1.04 and 128x16 1.78 -> 1.34;
    with a proven width of 4, 32x64 lost 1.15 -> 1.06)."""
    share = _share(shape, num_warps)
    if layout.size_per_thread[0] < STAGED_COLUMN_REGS:
        return False
    if num_warps == 1 and width == 1 and shape[1] >= 64 and share >= OUTER_PRODUCT_ONE_WARP_SHARE:
        return True
    if share < OUTER_PRODUCT_SHARE:
        return False
    return share >= OUTER_PRODUCT_HEAVY_SHARE or layout.size_per_thread[1] >= min(2, width)


def _half_warp_row_pays(default: BlockedLayout, shape: tuple[int, int], num_warps: int, width: int) -> bool:
    """Whether an outer-product tile that keeps its column in registers takes
    ``half_warp_row_layout`` instead of ``default``: where the row is 16 elements, the default
    spreads it over 4 lanes in 16-byte runs, and a thread holds at most ``HALF_WARP_ROW_SHARE``
    products. Each warp's column access then touches 8 rows (8 L1 wavefronts) and its row access
    4, for 4 to 8 products: the L1 is the bound. Measured on the H200 (``benchmarks/sweep.py``,
    the seed matmul, both layouts in one session): every such configuration gained, 1.13 to 1.34x
    (16x16 on 2 warps 0.77 -> 1.03 of Triton, 32x16 on 4 warps 0.78 -> 1.04, 64x16 on 8 warps 0.77
    -> 0.99, 64x16 on 4 warps 0.94 -> 1.09). Larger shares lost (16 to 64 products: 128x16 on one
    warp 1.12 -> 0.90, 64x16 on 2 warps 1.90 -> 1.55: the products then hide the loads and a
    thread loads 8 to 32 column elements an iteration instead of 2 to 8); so did wider rows with
    one element a thread (32x32 on 2 warps 2.2 -> 1.1) and, with the loop unrolled by NVVM, rows of
    16 held in runs of 2 (16x16 on 4 warps 0.86 -> 0.61; with it rolled, 0.86 -> 1.02). Smaller
    shares of any row take it where ``_lane_row_pays``."""
    if _lane_row_pays(shape, num_warps, width):
        return True
    share = _share(shape, num_warps)
    return (shape[1] == 16 and default.size_per_thread[1] == 4 and default.threads_per_warp[1] == 4
            and share <= HALF_WARP_ROW_SHARE)


def _rolled_pays(shape: tuple[int, int], num_warps: int, width: int, staged: bool) -> bool:
    """Whether the run-time loop that accumulates the outer-product tile ``shape`` is left rolled
    for ptxas to unroll (the loop's ``rolled`` attribute; the CUDA backend hides its bound from
    NVVM, see ``mt_rolled_bound``) rather than unrolled by NVVM. Unrolled by NVVM, each iteration's
    loads stay between the previous iteration's FMAs in ptxas's schedule; unrolled by ptxas, all
    loads of its four iterations go first, as in Triton's SASS. Measured on an H100
    (``benchmarks/sweep.py``, every loop of the sweep both ways in one run, ratio to Triton): it
    pays for the tiles that hold their row one element a lane (``_lane_row_pays``; in their
    default layout, rolled loops gained nothing and lost up to 0.22: 16x64 on 8 warps :16 1.36 ->
    1.15). It pays for staged tiles (their column through shared memory) of
    ``OUTER_PRODUCT_HEAVY_SHARE`` products a thread or more: 128x64 on one warp 0.87 -> 1.12,
    64x128 on one warp 0.89 -> 0.92, 128x128 on 2 warps 0.94 -> 0.96 and on one 1.69 -> 1.80 (all
    aligned; without the promise 64x128 on one warp lost 1.08 -> 1.03 and 128x128 on 2 warps 1.28
    -> 1.23), not from 128 (64x64 on one warp 1.00 -> 0.95). Everything else lost: NVVM's
    unrolling had the row sums 1.5 to 3 times as fast as Triton's (1.0 rolled), 128x16 on 8 warps
    went 1.12 -> 0.86 and 128x128 on 4 warps 1.00 -> 0.93."""
    if staged:
        return _share(shape, num_warps) >= OUTER_PRODUCT_HEAVY_SHARE
    return _lane_row_pays(shape, num_warps, width)


def _lane_row_pays(shape: tuple[int, int], num_warps: int, width: int) -> bool:
    """Whether an outer-product tile that keeps its column in registers holds its row one element
    a lane (``half_warp_row_layout``, as Triton's layout there) with its loop left rolled for ptxas
    (``_rolled_pays``): where a thread holds at most ``LANE_ROW_SHARE`` products, and the row has
    no proven width (its loads are scalars either way) or the tile is at most
    ``LANE_ROW_VECTOR_TILE`` elements. Measured on an H100 (``benchmarks/sweep.py``, the seed
    matmul, ratio to Triton, both ways in one run, A B B A). Rows of no proven width: 16x32 on 8
    warps 0.77 -> 1.28, 16x16 on 4 warps 0.82 -> 1.02, 32x16 on 8 warps 0.84 -> 1.00, 16x64 on 8
    warps 0.95 -> 1.18 (under NVVM's unrolling, lane rows alone had 16x64 on 8 warps 0.85 -> 0.98,
    16x32 on 4 warps 1.13 -> 1.30). Rows proven to run in 16-byte vectors (``:16``): 16x16 on 4
    warps 0.86 -> 1.02, 16x32 on 4 warps 1.11 -> 1.33, 32x16 on 8 warps 0.87 -> 1.00, 16x32 on 8
    warps 1.25 -> 1.30; the tiles of 1024 elements lost (16x64 on 8 warps 1.37 -> 1.20, 32x32 on 8
    warps 1.05 -> 1.00: their default loads a thread's row as one 16-byte run and one element of
    the column an iteration, lane rows 2 + 2 or 1 + 4 scalars; lane rows without the rolled loop
    had lost more, 16x64 on 8 warps 1.39 -> 0.76)."""
    share = _share(shape, num_warps)
    return share <= LANE_ROW_SHARE and (width == 1 or shape[0] * shape[1] <= LANE_ROW_VECTOR_TILE)


def wgmma_kind(op: Op) -> str | None:
    """wgmma's operand type for the dot ``op`` — fp16/bf16 into fp32 ("f16", "bf16"), fp32 as tf32
    into fp32 ("tf32"), int8 into int32 ("s8") — or None where wgmma does not compute it (tf32x3,
    ieee, fp16 accumulators...)."""
    src, out = op.operands[0].type.scalar, op.result.type.scalar
    if src in (F16, BF16) and out == F32:
        return "bf16" if src == BF16 else "f16"
    if src == F32 and out == F32 and op.attrs.get("input_precision") == "tf32":
        return "tf32"
    return "s8" if src == I8 and out == I32 else None


def wgmma_candidate(op: Op, num_warps: int, target: str) -> bool:
    """Whether the CUDA backend may compute ``op`` with Hopper's ``wgmma`` (``backends/cuda/dot.py``
    decides, once it sees how the operands lie in shared memory): see ``wgmma_refusal``."""
    return wgmma_refusal(op, num_warps, target) is None


def wgmma_refusal(op: Op, num_warps: int, target: str) -> str | None:
    """Why ``op`` cannot be Hopper's ``wgmma``, as a user reads it, or None where it may be: the
    sm_90a target, a type and shapes wgmma computes (``wgmma_shape_refusal``), both operands read
    from the pipelined loop's shared-memory rings."""
    if target != "sm_90a":
        return (f"the target is {target}: wgmma is the sm_90a target's (add sm_90a to the targets for "
                "H100/H200)" if target.startswith("sm_90") else f"the target {target} has no wgmma")
    if (why := wgmma_shape_refusal(op, num_warps)) is not None:
        return why
    for i, name in enumerate("AB"):
        if not _in_ring(op.operands[i]):
            return (f"operand {name} is not loaded in the loop the dot is in (wgmma reads both operands from "
                    "the loop's shared-memory rings)")
    return None


def wgmma_shapes(op: Op, num_warps: int) -> bool:
    """``wgmma_candidate`` but for the target and the rings: the type and the shapes."""
    return wgmma_shape_refusal(op, num_warps) is None


def wgmma_shape_refusal(op: Op, num_warps: int) -> str | None:
    """Why wgmma cannot compute ``op``'s types and shapes, or None: a 2-d dot of a type it computes
    (``wgmma_kind``), whole warpgroups each 64 rows of the result, N of 8 to 256, K steps of 32 to
    128 bytes."""
    a, b, res = op.operands[0].type, op.operands[1].type, op.result.type
    k_bytes = a.shape[-1] * a.scalar.bits // 8
    if res.rank != 2:
        return "a batched (3-d) dot runs on the CUDA cores"
    if wgmma_kind(op) is None:
        precision = f" with input_precision={op.attrs.get('input_precision')!r}" if a.scalar == F32 else ""
        return f"wgmma does not compute {a.scalar.name} x {b.scalar.name} into {res.scalar.name}{precision}"
    if num_warps % 4:
        return f"num_warps={num_warps} is not whole warpgroups of 4 warps"
    if res.shape[0] % (16 * num_warps):
        groups = num_warps // 4
        return (f"the result's {res.shape[0]} rows are not a multiple of {16 * num_warps} (64 rows for each of "
                f"the {groups} warpgroup{'s' if groups > 1 else ''} of num_warps={num_warps})")
    if not 8 <= res.shape[1] <= 256:
        return f"the result's {res.shape[1]} columns are not 8 to 256"
    if not 32 <= k_bytes <= 128:
        return f"a K step of {a.shape[-1]} {a.scalar.name} elements is {k_bytes} bytes, not 32 to 128"
    return None


def dot_layout(op: Op, num_warps: int, chained: bool = False, wgmma: bool = False) -> MmaLayout | None:
    """The tensor cores' accumulator layout for a ``dot`` they compute (an M of at least 16 and an N
    of at least 8; into fp32: fp16 or bf16 operands with ``mma.sync.m16n8k16``, fp32 ones as "tf32"
    or "tf32x3" with ``mma.sync.m16n8k8.tf32``; int8 into int32 with ``mma.sync.m16n8k32.s8``),
    else None (the CUDA backend's portable dot, on any layout). The backends read the choice off the
    result's layout. ``chained``: the dot's result feeds another dot's A operand, or its A operand
    comes from another dot (attention's ``p @ v``): all warps side by side along M where M allows,
    so that a result row's elements stay in one warp, in the registers the next dot reads.
    ``wgmma`` (``wgmma_candidate``): the same, the layout of wgmma's accumulators."""
    a, res = op.operands[0].type, op.result.type
    tensor_cores = (a.scalar in (F16, BF16) or (a.scalar == F32 and op.attrs["input_precision"] in ("tf32", "tf32x3"))
                    ) and res.scalar == F32 or a.scalar == I8 and res.scalar == I32
    # (an mma step reads 32 bytes of K: an int8 K of 16 stays on the CUDA cores)
    # (a batched, 3-d dot runs on the CUDA cores: the portable dot)
    if tensor_cores and res.rank == 2 and res.shape[0] >= 16 and res.shape[1] >= 8 and a.shape[1] * a.scalar.bits >= 256:
        if (chained or wgmma) and res.shape[0] >= 16 * num_warps:
            return MmaLayout((num_warps, 1))
        return mma_layout(res.shape, num_warps)
    return None


def chained_dots(fn: Function) -> set[Op]:
    """The dots whose A operand is computed from another dot's result in registers (through any ops
    but loads, and through the values flowing into a region op's results and region arguments: a
    run-time ``if`` in attention's loop), and those other dots."""
    chained = set()
    for op in walk(fn.body):
        if op.name != "dot":
            continue
        seen, work = set(), [op.operands[0]]
        while work:
            v = work.pop()
            if v in seen:
                continue
            seen.add(v)
            src = v.owner
            if (flowing := sources_of(v)) is not None:
                work += flowing
                continue
            if not isinstance(src, Op) or OPS[src.name].reads_memory or src.regions:
                continue
            if src.name == "dot":
                chained |= {src, op}
                continue
            work += src.operands
    return chained


def _in_ring(v: Value) -> bool:
    """Whether ``v`` is a tile the prefetch pass marked for a shared-memory ring (a load marked
    ``stages``, a loop argument it initializes, or the transpose of one): the dot reads it there."""
    owner = v.owner
    if isinstance(owner, Op):
        return ((owner.name in ("load", "tma_load") and "stages" in owner.attrs)
                or (owner.name == "trans" and _in_ring(owner.operands[0])))
    if isinstance(owner, Region) and owner.parent is not None and owner.parent.name == "for" and v in owner.args[1:]:
        init = owner.parent.operands[3 + owner.args.index(v) - 1]
        return isinstance(init.owner, Op) and init.owner.name in ("load", "tma_load") and "stages" in init.owner.attrs
    return False


def _k_major_ring_loads(fn: Function, num_warps: int, target: str) -> set[Op]:
    """The pipelined loads of B operands that wgmma reads along K only (tf32, int8: ``wgmma_kind``)
    while memory holds them along N: every load of the ring chain (``prefetch.staged_chain``)."""
    found = set()
    for loop in walk(fn.body):
        if loop.name != "for":
            continue
        body = loop.regions[0]
        args = body.args[1:]
        for dot in body.ops:
            if not (dot.name == "dot" and wgmma_kind(dot) in ("tf32", "s8") and dot.operands[1] in args
                    and wgmma_candidate(dot, num_warps, target)):
                continue
            staged = staged_chain(loop, args.index(dot.operands[1]))
            if staged is None:
                continue
            chain = staged[1]
            if all(isinstance(ld, Op) and ld.name == "load" and len(ld.operands[0].type.shape) == 2 for ld in chain):
                found.update(chain)
    return found


def k_run_layout(shape: tuple[int, ...], num_warps: int, elem_bytes: int) -> BlockedLayout:
    """A K x N tile whose threads hold runs of 16 bytes along K (dimension 0) and whose lanes cover
    N (all 32 where N has room, the rest along K): loads along N stay coalesced (one element a
    lane), and each run is one 16-byte store into a K-major shared-memory tile (what wgmma reads
    for tf32 and int8)."""
    k, n = shape
    spt = min(max(1, 16 // elem_bytes), k)
    lanes_n = min(32, n)
    lanes_k = 32 // lanes_n
    warps_k = min(num_warps, max(1, k // (spt * lanes_k)))
    return BlockedLayout((spt, 1), (lanes_k, lanes_n), (warps_k, num_warps // warps_k), (0, 1))


class LayoutAssignment:
    def __init__(self, fn: Function, target: str = "sm_90"):
        self.fn = fn
        self.target = target
        self.requests: dict[Value, list[tuple[Layout, Op, int]]] = {}
        self.inserts: list[tuple[Region, Op | None, Op]] = []   # (region, after op or None=start, new op)
        self.nat: dict[Value, Layout] = {}
        self.axis = None                     # the axis analysis, where a layout asks for it
        self.chained = chained_dots(fn)
        self.k_runs = _k_major_ring_loads(fn, self.fn.num_warps, target)
        self.home: dict = {}                 # value or op -> the region it is defined in
        self.defs: dict[Value, Op] = {}      # value -> the op defining it
        for r in [fn.body] + [r for op in walk(fn.body) for r in op.regions]:
            self.home.update((v, r) for v in r.args)
            for o in r.ops:
                self.home[o] = r
                self.home.update((v, r) for v in o.results)
                self.defs.update((v, o) for v in o.results)
        self.shapes = sorted({v.type.shape for op in walk(fn.body) for v in op.results
                              if isinstance(v.type, BlockType)})
        # (only rows, accessed whole: a row or column broadcast into a tile keeps its own layout;
        # a 2-D tile measured slower with one element a lane: the column max of a 16384^2 matrix in
        # 32x128 tiles, 1603 GB/s against 2828 with runs of 4, on the H200)
        proven = _proven_access_widths(fn)
        self.widths = {shape: width for shape, width in proven.items()
                       if len(shape) == 1 and self.anchor(shape) == shape}
        outer_tiles = _outer_product_tiles(fn, self.shapes, proven)
        self.outer = {shape: lay for shape, width in outer_tiles.items()
                      if _outer_product_pays(lay := outer_product_layout(shape, self.fn.num_warps, width), shape,
                                             self.fn.num_warps, width)}
        self.staged: set[Op] = set()          # the loads staged_column gave their own layout
        # per tile: the narrowest element its loads and stores move, from 2 bytes up (fp32 math on
        # fp16 data takes the fp16 accesses' 16-byte runs of 8: Triton's layouts follow the accesses)
        self.access_bytes: dict[tuple[int, ...], int] = {}
        for op in walk(fn.body):
            if op.name in ("load", "store") and isinstance(op.operands[0].type, BlockType):
                a = self.anchor(op.operands[0].type.shape)
                self.access_bytes[a] = min(self.access_bytes.get(a, 16), max(2, _elem_bytes(op.operands[0].type)))
        # outer-product tiles with their column in registers and a row of 16 (_half_warp_row_pays)
        self.half_warp_rows = {
            shape: half_warp_row_layout(shape, self.fn.num_warps) for shape, width in outer_tiles.items()
            if shape not in self.outer and _half_warp_row_pays(
                default_layout(shape, self.fn.num_warps, self.access_bytes.get(shape, 4), self.widths.get(shape)), shape,
                self.fn.num_warps, width)}
        # outer-product tiles whose loop is left for ptxas to unroll (_rolled_pays)
        # (a tile _rolled_pays names outside self.outer is one of self.half_warp_rows: lane rows)
        self.rolled = {shape for shape, width in outer_tiles.items()
                       if _rolled_pays(shape, self.fn.num_warps, width, shape in self.outer)}

    def default(self, ty: BlockType) -> BlockedLayout:
        """The layout of a value no consumer constrains: the default layout of the largest tile it
        broadcasts into (a (BM, 1) column takes the (BM, BN) tile's layout), so that values which
        meet in elementwise ops agree without conversions. A thread's run along the fastest
        dimension is 16 bytes of the tile's narrowest memory access, and no more contiguous
        elements than the tile's accesses are proven to move at once (``_proven_access_widths``)."""
        anchor = self.anchor(ty.shape)
        if anchor in self.outer:
            return self.outer[anchor]
        if anchor in self.half_warp_rows:
            return self.half_warp_rows[anchor]
        eb = self.access_bytes.get(anchor, _elem_bytes(ty))
        return default_layout(anchor, self.fn.num_warps, eb, self.widths.get(anchor))

    def anchor(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        best = shape
        for other in self.shapes:
            if len(other) == len(shape) and broadcast_shapes(shape, other) == other \
                    and prod(other) > prod(best):
                best = other
        return best

    def column_tile(self, load: Op) -> BlockedLayout | None:
        """A pipelined dot operand's tile (``passes/prefetch.py``) that memory holds along its first
        dimension (B as the transpose of an N x K array: ``x @ W.T``) is laid out along it — its
        threads' runs of 16 bytes follow the memory, so they move as vectors (and, into a ring,
        as ``cp.async`` copies). Other tiles keep the default."""
        ptr = load.operands[0]
        if ptr.type.rank != 2:
            return None
        if self.axis is None:
            from .axisinfo import analyze
            self.axis = analyze(self.fn)
        contiguity = self.axis.get(ptr).contiguity
        if not (contiguity[0] > 1 and contiguity[1] == 1):
            return None
        return default_layout(ptr.type.shape, self.fn.num_warps, _elem_bytes(load.results[0].type), order=(0, 1))

    def dot_layout(self, op: Op) -> MmaLayout | None:
        nw = self.fn.num_warps
        return dot_layout(op, nw, op in self.chained, wgmma_candidate(op, nw, self.target))

    def hoisted(self, v: Value, consumer: Op) -> bool:
        """Whether ``v`` is defined outside a loop that ``consumer`` is in."""
        r = self.home.get(consumer)
        while r is not None and r is not self.home.get(v):
            if r.parent is not None and OPS[r.parent.name].loop:
                return True
            r = self.home.get(r.parent)
        return False

    def request(self, v: Value, layout: Layout, consumer: Op, index: int):
        if isinstance(v.type, BlockType):
            self.requests.setdefault(v, []).append((layout, consumer, index))

    def choose(self, v: Value, op: Op | None) -> Layout:
        reqs = self.requests.get(v, [])
        if op is not None and op.name == "scan":
            return self.scan_layout(op)
        if op is not None and (op.name in REDUCE_KINDS or op.name == "reduce") and op.attrs["axis"] is not None:
            axis = op.attrs["axis"]
            for lay, _, _ in reversed(reqs):
                if isinstance(lay, SliceLayout) and lay.dim == axis:
                    return lay
            return SliceLayout(axis, self.default(op.operands[0].type))
        mma = self.dot_layout(op) if op is not None and op.name == "dot" else None
        if mma is not None:
            return mma
        if op is not None and op.name == "trans":     # (its operand takes the permuted blocked layout)
            reqs = [req for req in reqs if isinstance(req[0], BlockedLayout)]
        if not reqs:
            return self.staged_column(op, self.default(v.type))
        counts = Counter(lay for lay, _, _ in reqs)
        best = max(counts.values())
        for lay, _, _ in reversed(reqs):          # ties go to the earliest consumer in program order
            if counts[lay] == best:
                return self.staged_column(op, lay)
        raise AssertionError

    def staged_column(self, op: Op | None, layout: Layout) -> Layout:
        """For the load of an outer-product tile's column ``(M, 1)`` (``self.outer``) in the body
        of a ``for`` loop, where ``layout`` would have each thread load ``STAGED_COLUMN_REGS`` or
        more of its elements, each of them in 4 or more threads: the column's own default layout
        (each element loaded once, by one thread), converted through shared memory into ``layout``
        (the tile's threads then read their consecutive rows as 16-byte broadcasts instead of one
        load each, as Triton's coalesced load and ``convert_layout`` do). The conversion is marked
        ``staged``: the CUDA backend gives it two buffers of its own, taken in turn by the loop's
        iterations, so that one barrier an iteration keeps writers and readers apart and the reads
        can interleave with the products. Otherwise ``layout``."""
        if op is None or op.name != "load" or not isinstance(layout, BlockedLayout):
            return layout
        ty = op.result.type
        body = self.home.get(op)
        if (ty.rank != 2 or ty.shape[1] != 1 or self.anchor(ty.shape) not in self.outer or body is None
                or body.parent is None or body.parent.name != "for"):
            return layout
        ll = to_linear(layout, ty.shape, self.fn.num_warps)
        free = ll.free_masks()
        copies = 1 << (bin(free.get("lane", 0)).count("1") + bin(free.get("warp", 0)).count("1"))
        if ll.num_regs < STAGED_COLUMN_REGS or copies < 4:
            return layout
        self.staged.add(op)
        return default_layout(ty.shape, self.fn.num_warps, _elem_bytes(ty))

    def scan_layout(self, op: Op) -> Layout:
        """A scan's operands and results share one layout in which every position bit that moves
        along the scanned axis moves only along it (the backends' scan walks those bits): the
        first operand's natural layout when it is such, else the default."""
        src = op.operands[0]
        lay = self.nat.get(src)
        if lay is not None and to_linear(lay, src.type.shape, self.fn.num_warps).separates(op.attrs["axis"]):
            return lay
        return self.default(src.type)

    def settle(self, v: Value, layout: Layout, region: Region, def_op: Op | None):
        """Fix ``v``'s layout; route consumers that want another layout through a conversion."""
        v.layout = layout
        made: dict[Layout, Value] = {}
        requests = self.requests.pop(v, [])
        for want, consumer, index in requests:
            if want == layout:
                continue
            if want not in made:
                if def_op is not None and OPS[def_op.name].rematerializable:
                    new = _made_again(def_op)
                elif def_op is not None and self.cheap(def_op):
                    new = _made_again(def_op)
                    self.operand_requests(new, want)        # (its operands: made again in `want` too)
                else:
                    # (a staged column: the CUDA backend gives it a buffer of its own, see staged_column)
                    attrs = {"staged": True} if def_op in self.staged else {}
                    new = Op("convert_layout", [v], [v.type], attrs, loc=consumer.loc)
                new.result.layout = want
                if new.attrs.get("staged"):
                    # just before its first consumer: the iteration's other loads are issued
                    # before the barrier it waits at (ptxas moves no load across one)
                    users = [c for w, c, _ in requests if w == want and self.home.get(c) is region]
                    first = region.ops.index(min(users, key=region.ops.index)) if users else 0
                    at = region.ops[first - 1] if first > 0 else def_op
                    self.inserts.append((region, at, new))
                else:
                    self.inserts.append((region, def_op, new))
                made[want] = new.result
            consumer.operands[index] = made[want]

    def mark_rolled_loops(self):
        """``rolled`` on each run-time ``for`` that carries a tile of ``self.rolled`` and has no
        unroll hint of its own (the CUDA backend then leaves it to ptxas to unroll)."""
        for op in walk(self.fn.body):
            if op.name == "for" and op.attrs.get("loop_unroll_factor") is None and any(
                    isinstance(r.type, BlockType) and r.type.shape in self.rolled for r in op.results):
                op.attrs["rolled"] = True

    def cheap(self, op: Op, depth: int = 3) -> bool:
        """An elementwise op (or an ``expand_dims``) computed again in another layout rather than
        converted: its block operands are, within ``depth`` such ops, made by ``arange``-like ops
        (a loop's ``k + tl.arange(0, BLOCK_K)``, wanted along the rows of B and the columns of A:
        converting it crossed shared memory, behind two barriers, in every iteration of the K
        loop; an outer-product tile's row offsets, wanted by its staged column and its store)."""
        d = OPS[op.name]
        if not ((d.elementwise and d.keeps_layout or op.name == "expand_dims") and d.pure and len(op.results) == 1
                and depth > 0):
            return False
        for x in op.operands:
            if isinstance(x.type, BlockType):
                inner = self.defs.get(x)
                if inner is None or not (OPS[inner.name].rematerializable or self.cheap(inner, depth - 1)):
                    return False
        return True

    def operand_requests(self, op: Op, layout: Layout | None):
        name = op.name
        if layout is None and op.operands and isinstance(op.operands[0].type, BlockType):
            layout = self.default(op.operands[0].type)     # a store: its pointer tile sets the layout
        if name == "expand_dims":
            self.request(op.operands[0], SliceLayout(op.attrs["axis"], layout), op, 0)
        elif name == "trans":
            self.request(op.operands[0], permuted_operand_layout(layout, tuple(op.attrs["dims"])), op, 0)
        elif name == "dot":            # the operands go through shared memory: any layout; acc is elementwise
            for i, v in enumerate(op.operands[:2]):
                self.request(v, self.nat.get(v) or self.default(v.type), op, i)
            a = op.operands[0]
            if isinstance(layout, MmaLayout) and not _in_ring(a) and (op in self.chained or self.hoisted(a, op)):
                # A's fragments in registers where that costs no data movement per iteration: a
                # tile from before the loop (converted once), another dot's result (the same
                # threads hold it: registers are only renumbered)
                self.requests[a][-1] = (DotOperandLayout(layout, 32 // a.type.scalar.bits), op, 0)
            self.request(op.operands[2], layout, op, 2)
        elif name in REDUCE_KINDS or name == "reduce":
            src = op.operands[0]
            parent = layout.parent if isinstance(layout, SliceLayout) else self.nat.get(src) or self.default(src.type)
            for i, v in enumerate(op.operands):
                self.request(v, parent, op, i)
        elif name == "scan":
            for i, v in enumerate(op.operands):
                self.request(v, layout, op, i)
        elif name in THROUGH_SHARED:
            # the operands stay in their own layouts; but a histogram's mask is read with its input
            # (in the input's layout) and a gather's index with its result (in the result's)
            own = [self.nat.get(v) or self.default(v.type) if isinstance(v.type, BlockType) else None
                   for v in op.operands]
            if name == "histogram" and len(own) == 2:
                own[1] = own[0]
            elif name == "gather":
                own[1] = layout
            for i, (v, lay) in enumerate(zip(op.operands, own)):
                if lay is not None:
                    self.request(v, lay, op, i)
        else:
            for i, v in enumerate(op.operands):
                self.request(v, layout, op, i)

    def region(self, region: Region):
        for op in reversed(region.ops):
            if op.regions:
                self.region_op(op, region)
                continue
            if OPS[op.name].terminator:
                continue                              # handled by the op that owns the region
            layout = None
            if op.results and isinstance(op.results[0].type, BlockType):
                layout = self.choose(op.results[0], op)
                for r in op.results:            # (the results of a reduce or scan of several blocks share it)
                    self.settle(r, layout, region, op)
            self.operand_requests(op, layout)

    def natural(self, region: Region) -> None:
        """Forward pre-pass: the layout each value takes from its operands alone, where one is
        implied (a reduction result is a slice of its input's layout, ``expand_dims`` undoes a
        slice, elementwise ops follow their operands). Region ops pass it along their flow edges
        (an argument takes the first known layout flowing into it, a result likewise), so that a
        value computed in a loop body in some layout is carried in that layout rather than
        converted on every iteration."""
        nat = self.nat

        def flow_into(op: Op, target: tuple):
            for pos, v in enumerate(port(op, target)):
                for src in incoming(op, target):
                    lay = nat.get(port(op, src)[pos])
                    if lay is not None:
                        nat[v] = lay
                        break

        for op in region.ops:
            if op.regions:
                for i, r in enumerate(op.regions):
                    flow_into(op, ARGS(i))
                    self.natural(r)
                flow_into(op, RESULTS)
                continue
            if not op.results or not isinstance(op.results[0].type, BlockType):
                continue
            src = op.operands[0] if op.operands else None
            if op.name in REDUCE_KINDS:
                parent = nat.get(src) or self.default(src.type)
                nat[op.result] = SliceLayout(op.attrs["axis"], parent)
            elif op.name == "reduce":
                parent = nat.get(src) or self.default(src.type)
                for r in op.results:
                    nat[r] = SliceLayout(op.attrs["axis"], parent)
            elif op.name == "scan":
                for r in op.results:
                    nat[r] = self.scan_layout(op)
            elif op.name in THROUGH_SHARED:
                continue                 # (any layout: the results take what their users ask for)
            elif op.name == "dot" and (mma := self.dot_layout(op)) is not None:
                nat[op.result] = mma
            elif op.name == "expand_dims":
                lay = nat.get(src)
                if isinstance(lay, SliceLayout) and lay.dim == op.attrs["axis"]:
                    nat[op.result] = lay.parent
            elif op.name == "load" and op in self.k_runs:
                nat[op.result] = k_run_layout(op.result.type.shape, self.fn.num_warps, _elem_bytes(op.result.type))
            elif op.name == "load" and "stages" in op.attrs and (lay := self.column_tile(op)) is not None:
                nat[op.result] = lay
            elif op.name == "trans":       # the operand's layout permuted (no data moves)
                dims = tuple(op.attrs["dims"])
                inverse = tuple(dims.index(d) for d in range(len(dims)))
                lay = permuted_operand_layout(nat.get(src) or self.default(src.type), inverse)
                if lay is not None:
                    nat[op.result] = lay
            elif not OPS[op.name].rematerializable:
                for v in op.operands:
                    lay = nat.get(v)
                    if lay is not None and lay.rank == op.result.type.rank:
                        nat[op.result] = lay
                        break

    def lane_layout(self, op: Op, group: list[tuple], values: list[Value]) -> Layout | None:
        """The one layout of a lane of a region op: the natural layout of its result (or region
        argument), else what the result's consumers ask for most, else the default."""
        if not isinstance(values[0].type, BlockType):
            return None
        targets = sorted((p for p in group if is_target(p)), key=lambda p: p[0] != "results")
        for p in targets:
            lay = self.nat.get(values[group.index(p)])
            if lay is not None:
                return lay
        if RESULTS in group:
            return self.choose(values[group.index(RESULTS)], None)
        return self.default(values[0].type)

    def region_op(self, op: Op, region: Region):
        """All values of a lane (ir/regions.py) share one layout: the result settles on it (its
        consumers convert if they want another), the terminators' operands and the op's forwarded
        operands are asked for it, the region arguments are given it."""
        f = flow_of(op)
        lane_list = [(group, pos, values, self.lane_layout(op, group, values)) for group, pos, values in lanes(op)]
        for group, pos, values, lay in lane_list:
            if lay is not None and RESULTS in group:
                self.settle(values[group.index(RESULTS)], lay, region, op)
        for group, pos, values, lay in lane_list:
            for p, v in zip(group, values):
                if lay is not None and p[0] == "exit":
                    self.request(v, lay, terminator(op.regions[p[1]]), f.exit_control(p[1]) + pos)
        for r in reversed(op.regions):
            self.region(r)
        for group, pos, values, lay in lane_list:
            for p, v in zip(group, values):
                if lay is not None and p[0] == "args":
                    self.settle(v, lay, op.regions[p[1]], None)
        for group, pos, values, lay in lane_list:
            if lay is not None and OPERANDS in group:
                self.request(values[group.index(OPERANDS)], lay, op, f.control + pos)

    def apply_inserts(self):
        for region, after, new in self.inserts:
            pos = 0 if after is None else region.ops.index(after) + 1
            region.ops.insert(pos, new)


def assign_layouts(fn: Function, target: str = "sm_90") -> Function:
    """Give every block value a layout (``target``: the CUDA target, whose tensor-core instructions
    decide the layout of dot results)."""
    la = LayoutAssignment(fn, target)
    la.natural(fn.body)
    la.region(fn.body)
    assert not la.requests, "layout requests left for values defined nowhere"
    la.apply_inserts()
    la.mark_rolled_loops()
    if sink_conversions(fn):
        dce(fn)                                   # (the operands a sunk chain no longer reads)
    check_register_budget(fn)
    return fn


def sink_conversions(fn: Function) -> int:
    """Move a conversion down a chain of elementwise ops to just below the first one that makes the
    data narrower (a GEMM's fp32 accumulator plus a bias, activated, stored as bf16): the chain runs
    in the source layout and half the bytes cross shared memory. A chain follows a value's one
    user in the same region; the user's other operands must be scalars or broadcasts of fewer
    elements (a bias row), which are converted instead (``_convert``). A chain that never narrows
    is left alone. Returns how many conversions moved."""
    moves = 0
    users: dict[Value, list[Op]] = {}
    defs: dict[Value, Op] = {}
    for op in walk(fn.body):
        for v in op.operands:
            users.setdefault(v, []).append(op)
        defs.update((r, op) for r in op.results)
    regions = [fn.body] + [r for op in walk(fn.body) for r in op.regions]
    for region in regions:
        for conv in [op for op in region.ops if op.name == "convert_layout"]:
            chain = _narrowing_chain(conv, users, region)
            if not chain:
                continue
            source = conv.operands[0].layout             # (the layout the whole chain now runs in)
            src, cur = conv.operands[0], conv.result
            for user in chain:
                for i, v in enumerate(user.operands):
                    if v is cur:
                        user.operands[i] = src
                    elif isinstance(v.type, BlockType):
                        user.operands[i] = _convert(v, source, region, user, defs)
                src = cur = user.result
            out = chain[-1].result
            moved = Op("convert_layout", [out], [out.type], loc=conv.loc)
            moved.result.layout = out.layout
            for user in chain:
                user.result.layout = source
            for consumer in users.pop(out, []):
                consumer.operands = [moved.result if v is out else v for v in consumer.operands]
            users[out] = [moved]
            region.ops.remove(conv)
            region.ops.insert(region.ops.index(chain[-1]) + 1, moved)
            moves += 1
    return moves


def _narrowing_chain(conv: Op, users: dict[Value, list[Op]], region: Region) -> list[Op]:
    """The pure elementwise ops from ``conv``'s one user on, each the one user of the last, up to
    the first whose result is narrower than what ``conv`` converts; [] where there is none. (A load
    stays in the layout chosen for its accesses.)"""
    chain, cur = [], conv.result
    size = _register_bytes(cur.type)
    while len(users.get(cur, [])) == 1:
        (user,) = users[cur]
        d = OPS[user.name]
        if not (d.elementwise and d.keeps_layout and d.pure and user in region.ops and len(user.results) == 1
                and isinstance(user.result.type, BlockType) and user.result.type.shape == cur.type.shape
                and all(v is cur or not isinstance(v.type, BlockType) or prod(v.type.shape) < prod(cur.type.shape)
                        for v in user.operands)):
            return []
        chain.append(user)
        if _register_bytes(user.result.type) < size:
            return chain
        cur = user.result
    return []


def _register_bytes(ty: BlockType) -> int:
    """The bytes one element takes in registers (and in a conversion's shared buffer)."""
    return 8 if isinstance(ty.element, PointerType) else max(1, ty.element.bits // 8)


def _convert(v: Value, layout: Layout, region: Region, before: Op, defs: dict[Value, Op]) -> Value:
    """``v`` in ``layout``, made just before ``before``: a cheap definition (``arange``, ``zeros``)
    made again, an ``expand_dims`` of a converted vector, else a ``convert_layout``."""
    d = defs.get(v)
    if d is not None and OPS[d.name].rematerializable:
        new = _made_again(d)
    elif d is not None and d.name == "expand_dims" and isinstance(d.operands[0].type, BlockType):
        inner = _convert(d.operands[0], SliceLayout(d.attrs["axis"], layout), region, before, defs)
        new = Op("expand_dims", [inner], [v.type], dict(d.attrs), loc=d.loc)
    else:
        new = Op("convert_layout", [v], [v.type], loc=before.loc)
    new.result.layout = layout
    defs[new.result] = new
    region.ops.insert(region.ops.index(before), new)
    return new.result


def _made_again(op: Op) -> Op:
    """A copy of the one-result ``op`` on the same operands (for another layout of its result)."""
    return Op(op.name, list(op.operands), [op.result.type], dict(op.attrs), loc=op.loc)


def check_register_budget(fn: Function) -> None:
    """Refuse a block value whose per-thread share exceeds ``MAX_ELEMENTS_PER_THREAD``, with the
    location of the op that defines it."""
    threads = fn.num_warps * 32
    for op in walk(fn.body):
        for v in op.results:
            if v.layout is None or not isinstance(v.type, BlockType):
                continue
            regs = num_regs(v.layout, v.type.shape)
            if regs > MAX_ELEMENTS_PER_THREAD:
                warps = fn.num_warps
                while warps < 32 and regs * fn.num_warps > MAX_ELEMENTS_PER_THREAD * warps:
                    warps *= 2
                fits = regs * fn.num_warps <= MAX_ELEMENTS_PER_THREAD * warps
                more = f"more warps (num_warps={warps}) or " if fits and warps > fn.num_warps else ""
                raise CompilationError(
                    f"the {v.type} value would take {regs} elements in registers in each of the {threads} "
                    f"threads (num_warps={fn.num_warps} x 32); at most {MAX_ELEMENTS_PER_THREAD} per thread "
                    f"are supported: use {more}a smaller block", op.loc, fn.name)


def verify_layouts(fn: Function) -> Function:
    """What the backends rely on after this pass: every block value has a layout of its rank;
    elementwise operands share their result's layout (size-1 dims broadcast in place);
    ``expand_dims`` reads a slice of its result's layout and a reduction yields a slice of its
    input's; every lane of a region op (a loop-carried value through its initial value, argument,
    yield and result; an if's result and what each branch yields) has one layout. Raises
    VerificationError."""
    from ..ir.verifier import VerificationError

    def check(v: Value, where: Op):
        if isinstance(v.type, BlockType) and (v.layout is None or v.layout.rank != v.type.rank):
            raise VerificationError(f"value of type {v.type} has layout {v.layout}", where)

    def same(a: Value, b: Value, where: Op, what: str):
        if isinstance(a.type, BlockType) and isinstance(b.type, BlockType) and a.layout != b.layout:
            raise VerificationError(f"{what}: layout {a.layout} differs from {b.layout}", where)

    def region(r: Region):
        for a in r.args:
            check(a, r.parent)
        for op in r.ops:
            for v in op.results:
                check(v, op)
            if op.regions:
                for group, pos, values in lanes(op):
                    for p, v in zip(group, values):
                        same(v, values[0], op, f"lane {pos} ({p[0]})")
                for r in op.regions:
                    region(r)
            elif op.name == "expand_dims":
                want = SliceLayout(op.attrs["axis"], op.result.layout)
                if op.operands[0].layout != want:
                    raise VerificationError(f"expand_dims operand has layout {op.operands[0].layout}, expected {want}", op)
            elif op.name == "dot":
                same(op.operands[2], op.result, op, "dot accumulator")
            elif op.name == "trans":
                want = permuted_operand_layout(op.result.layout, tuple(op.attrs["dims"]))
                if want is None or op.operands[0].layout != want:
                    raise VerificationError(f"trans operand has layout {op.operands[0].layout}, expected {want}", op)
            elif op.name in (*REDUCE_KINDS, "reduce"):
                for v in op.operands:
                    same(v, op.operands[0], op, "reduction operand")
                for r in op.results:
                    lay = r.layout
                    if isinstance(r.type, BlockType) and not (isinstance(lay, SliceLayout) and lay.dim == op.attrs["axis"]
                                                              and lay.parent == op.operands[0].layout):
                        raise VerificationError(f"reduction result layout {lay} is not a slice of its input's "
                                                f"{op.operands[0].layout} along axis {op.attrs['axis']}", op)
            elif op.name == "scan":
                for v in (*op.operands, *op.results):
                    same(v, op.operands[0], op, "scan operand or result")
                if not to_linear(op.operands[0].layout, op.operands[0].type.shape, fn.num_warps).separates(
                        op.attrs["axis"]):
                    raise VerificationError(f"scan layout {op.operands[0].layout} moves other dimensions along with "
                                            f"axis {op.attrs['axis']}", op)
            elif OPS[op.name].keeps_layout:
                anchor = op.results[0] if op.results else op.operands[0]
                for v in op.operands:
                    same(v, anchor, op, "elementwise operand")
    region(fn.body)
    return fn

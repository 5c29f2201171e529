"""``tl.dot`` in CUDA C++: on the tensor cores where ``passes/layout.dot_layout`` gave the result
the MMA layout — Hopper's ``wgmma`` where the sm_90a target and the operands allow it
(``dot_wgmma``), else ``mma.sync`` — and on the CUDA cores otherwise (the portable dot).

``mma.sync`` reads A from registers where A is in ``DotOperandLayout`` (the fragments
themselves), else both operands are staged in shared memory and read back as mma fragments with
``ldmatrix``:

- Each operand tile is stored as rows of 16-byte chunks. "K-major" tiles (A as M rows of K, B as N
  rows of K) are read with ``ldmatrix``; 16-bit tiles held along M or N in registers (the usual B:
  a K x N tile loaded along N) are stored that way, K rows of M or N, and read with
  ``ldmatrix.trans`` — so the store is a 16-byte vector store of each thread's run of registers.
  fp32 (tf32) and int8 tiles are always stored K-major (``ldmatrix`` has no transpose below or
  above 16 bits).
- A loop's rings are swizzled wherever the tile allows it (``Staging.swizzled``: the 16-byte
  chunks of a row XORed by the row's place in a 1024-byte pattern, wgmma's layout): the eight rows
  one 8x8 matrix load reads and the eight 16-byte copies a quarter warp issues then fall into
  eight different 16-byte bank groups. Other tiles have their rows padded by 16 bytes, which keeps
  ``ldmatrix`` free of bank conflicts but not the copies of rows under 128 bytes (rows of 80 bytes:
  a quarter warp's copies straddle two rows, 2-way conflicts; swizzling A's rings took the fp16
  GEMM 128x128x32 on mma.sync from 340 to 414-422 TFLOP/s on an H200).
- All three mma shapes read 32 bytes of K per step (m16n8k16 fp16/bf16, m16n8k8 tf32, m16n8k32
  int8) with one fragment geometry: A's 16 rows x 32 bytes are four 8x8 (16-bit) matrices, one
  ``ldmatrix.x4``; B's 8 columns x 32 bytes are two, so one ``ldmatrix.x4`` loads two of a warp's
  column tiles.
- In a loop (``passes/prefetch.py``: a load whose one use is a dot operand is issued S - 1
  iterations ahead), the operand's tiles live in a ring of S such buffers at the start of the
  shared memory (``plan_rings``); a tensor descriptor's TMA copies fill a wgmma dot's rings
  themselves, an mbarrier a stage (``TmaFill``). Each thread copies its runs of the tile (4 to 16 bytes) with
  ``cp.async`` (a masked-off run is filled with zeros), one commit group per load. At the top of
  each iteration, before it issues the copies for iteration i + S - 1, the loop waits until
  iteration i's groups have landed (``cp.async.wait_group``: the (S - 2) x operands groups of
  the next iterations may stay in flight), and one barrier both makes them visible to all warps
  and ends every warp's reads of the buffer the new copies overwrite (the last iteration's). A tile
  ``cp.async`` cannot copy (runs under 4 bytes or not aligned, a non-zero ``other``, a
  transposing store) is loaded into registers and stored.
- Per step of K, each warp loads the fragments of its MT row tiles and NT column tiles once and
  issues MT x NT mma (the accumulator layout, ``ir/layout.MmaLayout``: warp ``w`` holds the 16x8
  tiles at rows ``16 (w % WM) + 16 WM i`` and columns ``8 (w / WM) + 8 WN j``, registers
  ``4 (j + NT i)`` .. ``+3``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ...errors import CompilationError
from . import explain
from .staging import Staging
from ...ir.layout import DotOperandLayout, MmaLayout
from ...ir.ssa import Op, Value, walk
from ...ir.types import F32, I32
from ...passes.layout import wgmma_kind
from ...passes.prefetch import staged_chain

# The most shared memory a block can have on the GPUs mytriton targets (227 KiB on sm_90; the
# runtime checks the device's own limit when it loads a kernel and opts in above 48 KiB).
SHARED_LIMIT = 227 * 1024


def dot_shared(em, op: Op, nbytes: int):
    """Reserve the shared memory a dot stages its operands in, or refuse a tile too large for it."""
    a, b = ("x".join(map(str, x.type.shape)) for x in op.operands[:2])
    if nbytes > SHARED_LIMIT:
        raise CompilationError(
            f"tl.dot of a {a} by a {b} tile stages {nbytes} bytes of operands in shared memory, "
            f"more than a block has (at most {SHARED_LIMIT}); use smaller tiles", op.loc, em.fn.name)
    em.smem(nbytes)


@dataclass
class Ring:
    """The shared-memory buffers (``stages`` of them: S, or S + 1 where a wgmma group stays in
    flight into the next iteration) one dot operand's tiles rotate through in a loop: ``offset``
    bytes from the start of the shared memory, laid out as ``staging``; ``slot`` names the loop's
    C variable holding the buffer of iteration i + S - 1; ``depth``: how many iterations ahead its
    loads are issued (S - 1); ``waits``: the commit groups that may stay in flight at the top of an
    iteration once its tiles landed (those of the next S - 2 iterations); ``wgmma``: the loop's
    dot reads it with wgmma, ``carried``: leaving its group in flight into the next iteration;
    ``late``: without the buffer more, the copies of iteration i + S - 1 are issued after that dot
    (once the last iteration's group is waited for and a barrier ended every warpgroup's reads of
    the buffer they overwrite, as Triton's pipeliner orders them); ``through_registers``: some of
    its tiles are loaded into registers and stored (``staged_load``; ``registers_why`` says why),
    generic-proxy writes that a
    wgmma's reads need a proxy fence after (``cp.async`` copies do not: as in Triton, their wait
    and the loop's barrier order them)."""
    staging: Staging
    c_type: str
    stages: int
    offset: int
    slot: str
    depth: int
    waits: int
    wgmma: bool = False
    carried: bool = False
    late: bool = False
    tma: "TmaFill | None" = None
    registers_why: str | None = None     # why some of its tiles go through registers (copy_refusal)

    @property
    def through_registers(self) -> bool:
        return self.registers_why is not None

    @property
    def size(self) -> int:
        """Bytes per buffer (whole 1024-byte swizzle patterns for a swizzled tile)."""
        nbytes = self.staging.nbytes
        return -(-nbytes // 1024) * 1024 if self.staging.swizzle else nbytes


@dataclass(frozen=True)
class TmaFill:
    """How TMA fills a ring (the loads of its chain are ``tma_load``s of one tensor map): each tile
    is ``atoms`` boxes of ``rows`` x ``inner`` elements (the swizzle atoms of ``Staging.swizzled``,
    which TMA's ``SWIZZLE_{swizzle}B`` mode writes as wgmma reads them), each buffer has an
    mbarrier (``bars``: bytes from the start of the shared memory; shared by the ``arrivals`` rings
    of the loop with as many buffers) that the issuing lane arms with the tile's bytes and every
    thread waits on before the dot reads the buffer. The host encodes the tensor map with that box
    and swizzle (``CudaEmitter.tensor_maps``)."""
    tmap: Value
    rows: int
    inner: int
    atoms: int
    swizzle: int
    bars: int
    arrivals: int


def plan_rings(em) -> tuple[dict[Value, Ring], int]:
    """The rings of the kernel's pipelined dot operands (the loads ``passes/prefetch.py`` marked
    ``stages``/``ahead``): for each loop, each chain of carried values — the loads of iterations
    0..S-2 in front of the loop, carried from argument to argument, and iteration i + S - 1's load
    at the top of the body — whose first argument is only a tensor-core dot's operand. Returns the
    ring of every value of each chain (loads, arguments, loop results) and the bytes all rings take;
    the rings of a dot that ``wgmma`` computes (``_wgmma_dots``) hold swizzled tiles, filled by TMA
    where the chain's loads are TMA copies (``TmaFill``): a tensor map all of whose copies fill such
    rings in one box (else its copies stay where they are, through registers)."""
    excluded: set[Value] = set()
    copies = [op for op in walk(em.fn.body) if op.name in ("tma_load", "tma_store")]
    while True:
        rings, nbytes = _plan_rings(em, excluded)
        fills = {r.tma for r in rings.values() if r.tma is not None}
        boxes: dict[Value, set] = {}
        for f in fills:
            boxes.setdefault(f.tmap, set()).add((f.rows, f.inner, f.swizzle))
        ringed = {v.owner for v, r in rings.items() if r.tma is not None and isinstance(v.owner, Op)}
        bad = {t for t, b in boxes.items()
               if len(b) > 1 or any(op.operands[0] is t and op not in ringed for op in copies)}
        if not bad:
            from .tma import swizzled_stores
            em.swizzled_stores = swizzled_stores(em)
            maps = {f.tmap.name: {"box": [f.rows, f.inner], "swizzle": f.swizzle} for f in fills}
            maps.update((t.name, {"box": [rows, inner], "swizzle": width})
                        for t, (rows, inner, width) in em.swizzled_stores.items())
            em.tensor_maps = dict(sorted(maps.items()))
            return rings, nbytes
        excluded |= bad


def _plan_rings(em, excluded: set[Value]) -> tuple[dict[Value, Ring], int]:
    rings: dict[Value, Ring] = {}
    offset = 0
    users: dict[Value, list[tuple[Op, int]]] = {}
    for op in walk(em.fn.body):
        for i, v in enumerate(op.operands):
            users.setdefault(v, []).append((op, i))
    for loop in walk(em.fn.body):
        if loop.name != "for":
            continue
        body = loop.regions[0]
        inits, args, yields = loop.operands[3:], body.args[1:], body.ops[-1].operands
        chains = []
        for j in range(len(inits)):
            if (staged := staged_chain(loop, j)) is None:
                continue
            depth, loads = staged
            stages = depth + 1
            chain = slice(j, j + depth)
            values = [*inits[chain], *args[chain], *loop.results[chain], yields[j + depth - 1]]
            use = users.get(args[j], [])
            view = None              # a transposed view the dot reads: (trans op, its dims)
            if len(use) == 1 and use[0][0].name == "trans" and use[0][0] in body.ops:
                view = use[0][0]
                use = users.get(view.result, [])
            kind = loads[0].name if isinstance(loads[0], Op) else None
            ok = (len(inits[chain]) == depth and all(isinstance(ld, Op) and ld.name == kind
                                                     and ld.attrs.get("ahead") == k and ld.attrs["stages"] == stages
                                                     for k, ld in enumerate(loads))
                  and (kind == "load" or kind == "tma_load" and loads[0].operands[0] not in excluded
                       and all(ld.operands[0] is loads[0].operands[0] for ld in loads))
                  and yields[chain][:-1] == args[j + 1:j + depth] and loads[-1] in body.ops
                  and len(use) == 1 and use[0][0].name == "dot" and use[0][1] < 2 and use[0][0] in body.ops
                  and isinstance(use[0][0].result.layout, MmaLayout)
                  and all(v.layout == args[j].layout for v in values)
                  and not any(users.get(r) for r in loop.results[chain]))
            if ok:
                chains.append(_Chain(stages, use[0][0], use[0][1], values, loads, view))
        wgmma = _wgmma_dots(em, chains)
        # (TMA copies fill only wgmma's swizzled rings: elsewhere they stay carried in registers)
        chains = [c for c in chains if c.loads[0].name == "load" or c.dot in wgmma]
        # (swizzled wherever the tile allows it, wgmma's or not: see Staging.swizzled)
        layouts = {id(c): _stagings(em, c, True) or _stagings(em, c, False) for c in chains}
        in_flight = _groups_in_flight(em, chains, layouts, wgmma, users, body)
        if em.fn.num_warps >= 8:
            # ask ptxas for two blocks per SM where the estimate allows them: left alone it may take
            # more registers than that leaves (128x128x64 on 8 warps: 154 a thread, one block an SM,
            # where 128 fit two without spills — Triton's kernel takes 110). (Under 256 threads two
            # blocks allow 255 registers, all there are: the bound would only move ptxas's scheduling.)
            for dot in in_flight:
                if not _only_accumulates(dot, users, body):
                    continue                         # (attention: its softmax needs the registers)
                em.min_blocks = max(em.min_blocks, min(_blocks_per_sm(em, chains, layouts, wgmma, dot, 0), 2))
        made = []                    # (chain, its ring, the tile as its dot sees it)
        copies = sum(1 for c in chains if c.loads[0].name == "load")    # (chains that cp.async fills)
        for c in chains:
            x = c.values[0]
            c_type = "float" if x.type.scalar == F32 else x.type.scalar.c_name
            slot = f"{em.ref(body.args[0])}_slot"
            seen, stored = layouts[id(c)]
            if stored.swizzle:
                offset = -(-offset // 1024) * 1024          # (the swizzle pattern is of absolute addresses)
            # (a wgmma group left in flight may still read the last iteration's buffer when the
            # loads for iteration i + S - 1 are issued: one buffer more, or those loads after the dot)
            carried, late = c.dot in in_flight, in_flight.get(c.dot, False)
            buffers = c.stages + (1 if carried and not late else 0)
            why = next((w for ld in c.loads if ld.name == "load" and (w := copy_refusal(em, ld, stored))), None)
            ring = Ring(stored, c_type, buffers, offset, slot, c.stages - 1, (c.stages - 2) * copies, c.dot in wgmma,
                        carried, late, registers_why=why)
            offset += buffers * ring.size
            made.append((c, ring, seen))
        # the loop's TMA-filled rings of one buffer count share an mbarrier a buffer, after them:
        # each copy arms it with its tile's bytes, the loop's top waits on it once
        groups: dict[int, list] = {}
        for c, ring, _ in made:
            if c.loads[0].name == "tma_load":
                groups.setdefault(ring.stages, []).append((c, ring))
        for buffers, group in groups.items():
            bars, offset = offset, offset + 8 * buffers
            for c, ring in group:
                rows, inner = _tma_box(em, c, ring.staging)
                ring.tma = TmaFill(c.loads[0].operands[0], rows, inner, ring.staging.atoms, ring.staging.swizzle,
                                   bars, len(group))
        for c, ring, seen in made:
            if c.view is not None:   # the tile as the dot sees it, stored in the load's coordinates
                rings[c.view.result] = replace(ring, staging=seen)
            rings.update((v, ring) for v in c.values)
    return rings, offset


def _blocks_per_sm(em, chains, layouts, wgmma: set, dot, extra: int) -> int:
    """Thread blocks per SM with ``extra`` buffers more in the wgmma dots' rings: the fewer of what
    the loop's rings leave of ``SHARED_LIMIT`` and of what the registers allow (estimated: ``dot``'s
    accumulators plus 64 registers a thread, of 64K)."""
    threads = 32 * em.fn.num_warps
    total = 0
    for c in chains:
        size = layouts[id(c)][1].nbytes
        total += (c.stages + (extra if c.dot in wgmma else 0)) * -(-size // 1024) * 1024
    regs = min(255, dot.result.type.numel // threads + 64)
    return min(SHARED_LIMIT // max(1, total), 65536 // (regs * threads))


def _groups_in_flight(em, chains, layouts, wgmma: set, users, body) -> dict[Op, bool]:
    """The wgmma dots that leave their group in flight into the next iteration, each with whether
    its rings' copies go after it (``Ring.late``): where the buffer more they would otherwise need
    costs a thread block per SM (``_blocks_per_sm``), and always where TMA fills them (one lane
    issues them while the tensor cores work; in front of the dot they held up the warpgroup's wgmma:
    benchmarks/RESULTS.md, thirteenth session). A dot's result must only be yielded, and the
    loop argument it becomes either only the next such dot's accumulator (``acc = tl.dot(a, b,
    acc)``), or first read after another wgmma dot of the body, whose wait for all groups covers
    it (attention's ``acc * alpha + tl.dot(p, v)`` after the next ``tl.dot(q, k)``: the product
    with V overlaps the next iteration's copies and its product with K, as in Triton's pipeline).
    (PTX: touching a wgmma's accumulator registers before a wait covers it is undefined, except
    by the next wgmma on them.)"""
    top = {}                                     # op -> the position of the body op it is in
    for i, o in enumerate(body.ops):
        top[o] = i
        top.update((inner, i) for r in o.regions for inner in walk(r))
    waiting = [top[d] for d in wgmma if d in body.ops
               and any(u is not body.ops[-1] for u, _ in users.get(d.result, []))]
    found = {}
    for dot in wgmma:
        arg = _yielded_as(dot, users, body)
        reads = users.get(arg, [])
        if arg is None or not (_only_accumulates(dot, users, body)
                               or reads and any(w < min(top.get(u, -1) for u, _ in reads) for w in waiting)):
            continue
        by_tma = all(c.loads[0].name == "tma_load" for c in chains if c.dot is dot)
        found[dot] = by_tma or (_blocks_per_sm(em, chains, layouts, wgmma, dot, 1)
                                < _blocks_per_sm(em, chains, layouts, wgmma, dot, 0))
    return found


def _yielded_as(dot: Op, users, body) -> Value | None:
    """The loop argument ``dot``'s result becomes, where it is only yielded."""
    uses = users.get(dot.result, [])
    if len(uses) == 1 and uses[0][0] is body.ops[-1] and dot in body.ops:
        return body.args[1 + uses[0][1]]
    return None


def _only_accumulates(dot: Op, users, body) -> bool:
    """``acc = tl.dot(a, b, acc)``: the dot's result is the next iteration's accumulator only."""
    arg = _yielded_as(dot, users, body)
    return arg is not None and dot.operands[2] is arg and users.get(arg, []) == [(dot, 2)]


class _Chain:
    """One pipelined dot operand of a loop: its values and loads, the dot (and which operand), the
    transposed view the dot reads it through (or None)."""

    def __init__(self, stages, dot, operand, values, loads, view):
        self.stages, self.dot, self.operand, self.values, self.loads, self.view = \
            stages, dot, operand, values, loads, view


def _stagings(em, c: _Chain, swizzle: bool) -> tuple[Staging, Staging] | None:
    """How chain ``c``'s tiles lie in shared memory as its dot reads them and in the coordinates of
    its loads (the same but for a transposed view's permutation); None where ``swizzle`` is asked
    and the tile cannot be swizzled."""
    k_dim = 1 if c.operand == 0 else 0
    if c.view is None:
        seen = stored = Staging.of_operand(em, c.values[0], k_dim)
    else:
        seen = Staging.of_operand(em, c.view.result, k_dim)
        dims = c.view.attrs["dims"]
        stored = Staging(em, c.values[0], dims[seen.row_dim], dims[seen.col_dim], seen.trans)
    if swizzle and not (seen.swizzled() and stored.swizzled()):
        return None
    return seen, stored


def _wgmma_dots(em, chains: list[_Chain]) -> set[Op]:
    """The dots of ``chains`` that Hopper's ``wgmma`` computes: the sm_90a target, a type it
    computes (``passes/layout.wgmma_kind``: fp16/bf16 or tf32 into fp32, int8 into int32), all
    warpgroups along M (the accumulator layout the layout pass chose for such a dot), B pipelined
    and A either pipelined too or (16-bit) in registers (``DotOperandLayout``), A's tiles and
    16-bit B's ones ``cp.async`` copies (runs of 4 to 16 bytes; tf32 and int8 B, which wgmma reads
    along K only, may go through registers), A along K (wgmma reads A transposed only from
    registers), each tile swizzleable (``Staging.swizzled``)."""
    if em.target != "sm_90a":
        return set()
    found = set()
    for dot in {c.dot for c in chains}:
        why = _wgmma_refusal(em, dot, {c.operand: c for c in chains if c.dot is dot})
        if why is None:
            found.add(dot)
        else:
            em.wgmma_refusals[dot] = why
    return found


def _wgmma_refusal(em, dot: Op, mine: dict) -> str | None:
    """Why ``dot`` (a wgmma candidate of the layout pass, its operands' pipelined chains ``mine``
    by operand) cannot be wgmma after all, or None."""
    lay, nw = dot.result.layout, em.fn.num_warps
    a_in_regs = isinstance(dot.operands[0].layout, DotOperandLayout)
    half = dot.operands[0].type.scalar.bits == 16
    if set(mine) != ({1} if a_in_regs and half else {0, 1}):
        return "an operand's tiles do not come from the loop's pipelined loads alone"
    if not (wgmma_kind(dot) and lay.warps_per_cta == (nw, 1) and nw % 4 == 0
            and dot.result.type.shape[0] % (16 * nw) == 0 and dot.result.type.shape[1] <= 256):
        return "the result's layout is not warpgroups along M"
    stagings = {i: _stagings(em, c, True) for i, c in mine.items()}
    if any(st is None for st in stagings.values()):
        return "an operand's tile rows do not fit wgmma's swizzled layout (rows of 32, 64 or 128 bytes)"
    if 0 in stagings and stagings[0][0].trans:
        return "A is held along M: wgmma reads A from shared memory along K only"
    # (a tile cp.async cannot copy goes through registers into its ring, as tf32 and int8 B)
    for i, c in mine.items():
        if c.loads[0].name == "tma_load" and not _tma_box(em, c, stagings[i][1]):
            return (f"TMA cannot copy operand {'AB'[i]}'s boxes into the ring: its offset along the last "
                    "dimension is not proven a multiple of 16 bytes")
    return None


def _tma_box(em, c: "_Chain", st: Staging) -> tuple[int, int] | None:
    """The box (rows, elements along the last dimension) in which TMA copies chain ``c``'s tiles
    into a ring laid out as ``st`` (swizzled), or None where it cannot: a 2-d tile whose rows run
    along the tensor's last dimension (TMA writes a box row by row), each copy's offset along it
    proven a multiple of 16 bytes (the axis analysis: TMA refuses other boxes, and the ring has no
    element-wise fallback)."""
    if c.values[0].type.rank != 2 or st.col_dim != 1 or not st.swizzle:
        return None
    rank, chunk = 2, 16 // st.eb
    if any(em.axis.get(ld.operands[2 + rank - 1]).divisibility[0] < chunk for ld in c.loads):
        return None
    return st.rows, st.swizzle // st.eb


def _copies(em, op: Op, st: Staging) -> int:
    """The bytes ``cp.async`` copies at once for the load ``op`` into a tile laid out as ``st``
    (its 4- to 16-byte runs along the tile's rows, aligned, under masks constant over them,
    masked-off elements 0), or 0 where the tile goes through registers (``copy_refusal`` says why)."""
    return 0 if copy_refusal(em, op, st) is not None else em.vector_width(op.operands[0], op.operands[1:2], op)[0] * st.eb


def copy_refusal(em, op: Op, st: Staging) -> str | None:
    """Why ``cp.async`` cannot copy the load ``op``'s tile into a ring laid out as ``st`` (as a user
    reads it: what is not proven, and what would prove it), or None where it can."""
    from .codegen import _zero_bits
    ptr = op.operands[0]
    masks = op.operands[1:2]
    d = em.vector_dim(ptr)
    info = em.axis.get(ptr)
    vec, aligned = em.vector_width(ptr, masks, op)
    if vec * st.eb < 4:
        if info.contiguity[d] * st.eb < 4:
            return (f"its addresses are not proven contiguous along dimension {d} (that dimension's stride is "
                    "not promised to be 1, or its offsets wrap by a size not promised divisible by 16)")
        if any(em.mask_constancy(m, ptr) * st.eb < 4 for m in masks):
            return ("its mask is not proven the same over runs of elements along the rows (the size it compares "
                    "with is not promised divisible by 16)")
        return f"a thread holds runs of fewer than 4 bytes along dimension {d}"
    if not aligned:
        return ("its runs are not proven 16-byte aligned (the pointer, a row stride or an offset is not promised "
                "divisible by 16)")
    if any(em.mask_constancy(m, ptr) < vec for m in masks):
        return "its mask is not proven the same over a whole run (the size it compares with is not promised :16)"
    if len(op.operands) >= 3 and not _zero_bits(op.operands[2]):
        return "its `other` value is not zero (cp.async fills masked-off elements with zeros)"
    if st.vec != vec or st.col_dim != d:
        runs = max(range(len(info.contiguity)), key=lambda k: info.contiguity[k])
        return (f"the ring holds the tile along dimension {st.col_dim} and its memory runs along dimension {runs}: "
                "it is transposed through registers (wgmma reads tf32 and int8 B along K only)")
    return None


def staged_load(em, op: Op, ring: Ring):
    """A load of a dot operand into its buffer of ``ring`` (see the module's docstring)."""
    res, ptr = op.result, op.operands[0]
    masks = op.operands[1:2]
    st = ring.staging
    slot = ring.slot if op.attrs["ahead"] == ring.depth else str(op.attrs["ahead"])
    em.rings_live = True
    em.emit(f"{em.declare(res)} = reinterpret_cast<{ring.c_type}*>(mt_smem + {ring.offset} + {slot} * {ring.size});")
    if ring.tma is not None:
        return _tma_fill(em, op, ring, slot)
    copies = _copies(em, op, st)
    if copies:
        c = em.coords(res, "r")
        mask = em.elem(ptr, masks[0], "r") if masks else "true"
        em.emit("#pragma unroll")
        em.emit(f"for (int r = 0; r < {em.nregs(res)}; r += {copies // st.eb}) "
                f"mt_cp_async<{copies}>({st.at(em.ref(res), c[st.row_dim], c[st.col_dim], ring.c_type)}, "
                f"{em.ref(ptr)}[r], {mask});")
    else:                            # through registers
        name = em.names[res]
        em.emit("{")
        em.depth += 1
        em.names[res] = f"{name}_regs"
        rings, em.rings = em.rings, {}
        try:
            em.op_load(op)
        finally:
            em.rings = rings
        st.store(em, res, name, ring.c_type)
        em.names[res] = name
        em.depth -= 1
        em.emit("}")
    em.emit("mt_cp_async_commit();")


def _tma_fill(em, op: Op, ring: Ring, slot: str):
    """One lane of warp 0 copies the tile of ``op`` (a ``tma_load``) into its buffer by TMA, one box
    a swizzle atom, arming the buffer's mbarrier with the tile's bytes: where the iteration it loads
    for runs (its last operand), so that no copy is in flight when the loop ends. The lane is
    elected before the test (ptxas then issues the copies under a uniform predicate; elected inside
    it, or ``tid == 0``, it looped over the active lanes). The first of a ring's copies in front of
    its loop initializes the mbarriers; the loop's top waits on them (``CudaEmitter.op_for``)."""
    from . import tma
    f, rank = ring.tma, 2
    if f.bars not in em.tma_barriers:        # (the loop's first copy, in front of it)
        em.tma_barriers.add(f.bars)
        tma.init_barriers(em, f.bars, ring.stages, f.arrivals)
    offsets = [em.ref(v) for v in op.operands[2:2 + rank]]
    runs = em.ref(op.operands[-1]) if len(op.operands) == 3 * rank + 2 else "true"
    tile = f"reinterpret_cast<unsigned char*>({em.ref(op.result)})"
    bar = tma.barrier(f.bars, slot)
    em.emit(f"if (mt_elect_one() && tid < 32 && {runs}) {{")   # (a lane of warp 0)
    em.emit(f"  mt_mbarrier_expect_tx({bar}, {f.atoms * f.rows * f.swizzle}u);")
    for a in range(f.atoms):
        inner = offsets[1] if a == 0 else f"{offsets[1]} + {a * f.inner}"
        em.emit(f"  mt_tma_copy_2d({tile} + {a * f.rows * f.swizzle}, &{em.ref(f.tmap)}, {bar}, {inner}, {offsets[0]});")
    em.emit("}")


def dot_mma(em, op: Op):
    """``tl.dot`` on the tensor cores: into fp32, fp16/bf16 operands with ``mma.sync.m16n8k16``,
    fp32 ones with ``mma.sync.m16n8k8.tf32`` ("tf32": the hardware reads the top 19 bits;
    "tf32x3": three products of tf32 parts rounded to nearest); int8 into int32 with
    ``mma.sync.m16n8k32.s8`` (wrapping, as the portable dot). See the module's docstring."""
    a, b, acc = op.operands
    res = op.result
    (m, kk), (_, n) = a.type.shape, b.type.shape
    elem = a.type.scalar
    eb = elem.bits // 8
    tf32, int8 = elem.name == "fp32", elem.name == "i8"
    ct = "float" if tf32 else elem.c_name
    k_step = 32 // eb                                # the mma's K: 32 bytes of each operand row
    chunk = 16 // eb                                 # elements in 16 bytes
    wm, wn = res.layout.warps_per_cta
    mt, nt = max(1, m // (16 * wm)), max(1, n // (8 * wn))
    in_regs = isinstance(a.layout, DotOperandLayout)     # A's fragments are its registers
    ra_, rb_ = em.rings.get(a), em.rings.get(b)
    if rb_ and rb_.wgmma:
        explain.dot(em, op, "wgmma")
        return dot_wgmma(em, op, ra_.staging if ra_ else None, rb_.staging, rb_.carried)
    explain.dot(em, op, "mma.sync")
    sa = None if in_regs else ra_.staging if ra_ else Staging.of_operand(em, a, 1)
    sb = rb_.staging if rb_ else Staging.of_operand(em, b, 0)
    a_bytes = 0 if in_regs or ra_ else sa.nbytes
    sb.offset = 0 if rb_ else a_bytes
    scratch = a_bytes + (0 if rb_ else sb.nbytes)
    dot_shared(em, op, scratch)
    em.emit(em.declare(res) + ";")
    em.per_element(res, f"{em.ref(res)}[r] = {em.ref(acc)}[r];")
    em.emit("{")
    em.depth += 1
    for x, ring, st, name in ((a, ra_, sa, "sa"), (b, rb_, sb, "sb")):
        if st is None:
            continue
        if ring:                     # (its tile is in the ring already)
            em.emit(f"{ct}* {name} = {em.ref(x)};")
        else:
            em.emit(f"{ct}* {name} = reinterpret_cast<{ct}*>({em.scratch} + {st.offset});")
            st.store(em, x, name, ct)
    if scratch:                      # (the loop's top waited for the tiles in rings)
        em.emit("__syncthreads();")
    em.emit(f"const int lane = tid & 31, wi = (tid >> 5) % {wm}, wj = (tid >> 5) / {wm};")
    # the rows of A this lane gives ldmatrix the address of, per row tile i at step k0 (matrices:
    # rows 0-7 / 8-15 x the first / second 16 bytes of K)
    if sa is None:
        a_at = None
    elif sa.trans:
        a_at = sa.at("sa", "k0 + (lane >> 4) * 8 + (lane & 7)", "ra + ((lane >> 3) & 1) * 8", ct)
    else:
        a_at = sa.at("sa", "ra + (lane & 15)", f"k0 + (lane >> 4) * {chunk}", ct)
    # B: two column tiles per ldmatrix.x4 (matrices: tile j / j + 1 x the first / second 16 bytes of K)
    if sb.trans:
        b_at = sb.at("sb", "k0 + ((lane >> 3) & 1) * 8 + (lane & 7)", "cb", ct)
    else:
        b_at = sb.at("sb", "cb + (lane & 7)", f"k0 + ((lane >> 3) & 1) * {chunk}", ct)
    ta, tb = ("true" if s is not None and s.trans else "false" for s in (sa, sb))
    ref = em.ref(res)
    em.emit("#pragma unroll")
    em.emit(f"for (int k0 = 0; k0 < {kk}; k0 += {k_step}) {{")
    em.depth += 1
    em.emit(f"unsigned fa[{mt}][4], fb[{nt + nt % 2}][2];")
    em.emit("#pragma unroll")
    em.emit(f"for (int i = 0; i < {mt}; ++i) {{")
    if in_regs:                      # word w: registers 4P (step + steps * i) + P w .. + P - 1
        per_word = a.layout.per_word
        base = f"{4 * per_word} * (k0 / {k_step} + {kk // k_step} * i) + {per_word} * w"
        elements = ", ".join(f"{em.ref(a)}[{base} + {e}]" for e in range(per_word))
        em.emit("  #pragma unroll")
        em.emit(f"  for (int w = 0; w < 4; ++w) fa[i][w] = mt_pack_word({elements});")
    else:
        em.emit(f"  const int ra = (16 * wi + {16 * wm} * i) & {m - 1};")
        em.emit(f"  mt_ldmatrix_x4<{ta}>(fa[i][0], fa[i][1], fa[i][2], fa[i][3], {a_at});")
    em.emit("}")
    em.emit("#pragma unroll")
    em.emit(f"for (int j = 0; j < {nt}; j += 2) {{")
    pair = "((lane >> 4) & 1)" if nt > 1 else "0"
    em.emit(f"  const int cb = (8 * wj + {8 * wn} * (j + {pair})) & {n - 1};")
    if nt > 1:
        em.emit(f"  mt_ldmatrix_x4<{tb}>(fb[j][0], fb[j][1], fb[j + 1][0], fb[j + 1][1], {b_at});")
    else:
        em.emit(f"  mt_ldmatrix_x2<{tb}>(fb[j][0], fb[j][1], {b_at});")
    em.emit("}")
    em.emit("#pragma unroll")
    em.emit(f"for (int i = 0; i < {mt}; ++i) {{")
    em.emit("  #pragma unroll")
    em.emit(f"  for (int j = 0; j < {nt}; ++j) {{")
    em.depth += 2
    q = f"4 * (j + {nt} * i)"
    d = f"{ref}[{q}], {ref}[{q} + 1], {ref}[{q} + 2], {ref}[{q} + 3]"
    frag = "fa[i][0], fa[i][1], fa[i][2], fa[i][3], fb[j][0], fb[j][1]"
    if int8:
        em.emit(f"mt_mma_m16n8k32_s8({d}, {frag});")
    elif not tf32:
        em.emit(f"mt_mma_m16n8k16<{'true' if elem.name == 'bf16' else 'false'}>({d}, {frag});")
    elif op.attrs["input_precision"] == "tf32":
        em.emit(f"mt_mma_m16n8k8_tf32({d}, {frag});")
    else:                                            # tf32x3: lo*hi + hi*lo + hi*hi
        em.emit("unsigned ah[4], al[4], bh[2], bl[2];")
        em.emit("#pragma unroll")
        em.emit("for (int w = 0; w < 4; ++w) mt_tf32_split(fa[i][w], ah[w], al[w]);")
        em.emit("#pragma unroll")
        em.emit("for (int w = 0; w < 2; ++w) mt_tf32_split(fb[j][w], bh[w], bl[w]);")
        for x, y in (("al", "bh"), ("ah", "bl"), ("ah", "bh")):
            em.emit(f"mt_mma_m16n8k8_tf32({d}, {x}[0], {x}[1], {x}[2], {x}[3], {y}[0], {y}[1]);")
    em.depth -= 2
    em.emit("  }")
    em.emit("}")
    em.depth -= 1
    em.emit("}")
    if scratch:                      # (before the shared memory is used again)
        em.emit("__syncthreads();")
    em.depth -= 1
    em.emit("}")


def _descriptor(base: str, st: Staging) -> tuple[str, int]:
    """wgmma's 64-bit shared-memory matrix descriptor of the tile ``st`` at ``base`` (a shared-window
    address), as its two 32-bit words: C++ for the low one — the start address and the leading
    byte offset — and the high one's value — the stride byte offset and the swizzle mode (PTX's
    matrix-descriptor format: address, LBO and SBO in 16-byte units; mode 1/2/3 = 128/64/32 bytes).
    K-major: rows ``swizzle`` bytes apart, 8-row groups 8 rows apart (SBO). MN-major (K rows of N):
    8-row groups along K (SBO), 128-byte columns of N (``atoms``) ``rows * swizzle`` bytes apart
    (LBO). One is made per operand and dot; each K step (``_step_bytes``) adds to the low word's
    address field, which cannot carry into the next field: every address is below 2^18 bytes. (In
    32-bit words, warp-uniform, ptxas keeps them in uniform registers: built as one 64-bit value,
    every wgmma moved its descriptors over with R2UR, 19 instructions of the fp16 GEMM's K loop.)"""
    w = st.swizzle
    lbo = st.rows * w if st.trans else 16
    return f"mt_wgmma_desc_lo({base}, {lbo})", ((8 * w) >> 4) & 0x3FFF | ({128: 1, 64: 2, 32: 3})[w] << 30


def _step_bytes(st: Staging, step: int, row0: int = 0) -> int:
    """The bytes from a tile's start to where K step ``step`` (32 bytes of K) reads, from row ``row0``
    of a K-major tile: MN-major, 16 rows of K a step; K-major, 32 bytes along the row, a step past
    the first 128 bytes of a row in the next column (``atoms``)."""
    w = st.swizzle
    if st.trans:
        return step * 16 * w
    return step * 32 // w * st.rows * w + row0 * w + step * 32 % w


def dot_wgmma(em, op: Op, sa: Staging | None, sb: Staging, carried: bool):
    """``tl.dot`` on Hopper's warpgroup tensor cores: per warpgroup (4 warps, 64 rows of the
    result each, side by side along M) and per 64-row block of its rows, one ``wgmma.mma_async
    .m64nNkK`` per 32 bytes of K (k16 fp16/bf16, k8 tf32, k32 int8), B read from its ring's
    swizzled tile through a matrix descriptor (along K or, 16-bit and transposed, along N), A
    likewise (along K) or, with ``sa`` None, from its registers (``DotOperandLayout``: the
    fragments of mma.sync, warp by warp). The accumulator is the MMA layout with all warps along
    M: thread registers ``4 NT i`` .. are wgmma's for block ``i``. Issued after a ``wgmma.fence``
    and committed as one group; where the result only feeds the loop's next iteration (a GEMM's
    accumulator), one group stays in flight while the next iteration issues its copies (its
    rings have a buffer more for that, or the copies follow the dot: ``Ring.late``; the
    accumulators chain in order), else the group is waited for at once."""
    a, b, acc = op.operands
    res = op.result
    (m, kk), (_, n) = a.type.shape, b.type.shape
    nw = em.fn.num_warps
    groups = nw // 4
    blocks = m // (64 * groups)                      # 64-row blocks per warpgroup
    t = wgmma_kind(op)
    k_step = 32 // (a.type.scalar.bits // 8)         # one wgmma per 32 bytes of K: k16, k8 (tf32), k32 (s8)
    ref = em.ref(res)
    half = n // 2                                    # accumulators per thread per block
    em.emit(em.declare(res) + ";")
    em.per_element(res, f"{ref}[r] = {em.ref(acc)}[r];")
    em.emit("{")
    em.depth += 1
    # (the descriptors warp-uniform, in 32-bit words: ptxas keeps them in uniform registers; the
    # warpgroup index for A's rows in shared memory)
    if sa is not None:
        em.emit("const int wg = " + ("0;" if groups == 1 else "__shfl_sync(0xffffffffu, tid >> 7, 0);"))
    db_lo, db_hi = _descriptor(f"mt_smem_address({em.ref(b)})", sb)
    # both operands from shared memory: each wgmma's descriptors joined from 32-bit words (the
    # fp16 GEMM's K loop 126 -> 121 instructions against joining them once and adding in 64 bits);
    # A in registers: joined once (attention's loop: 456 -> 440, ptxas then keeps the high word)
    words = sa is not None
    em.emit(f"const unsigned db0 = {db_lo};" if words else f"const unsigned long long db0 = mt_desc64({db_lo}, {db_hi}u);")
    if sa is not None:               # (A: warpgroup wg reads its 64 rows)
        da_lo, da_hi = _descriptor(f"mt_smem_address({em.ref(a)}) + 64 * wg * {sa.swizzle}", sa)
        em.emit(f"const unsigned da0 = {da_lo};")
    steps = kk // k_step
    if sa is None:                   # A's fragment words, packed before the fence: a register the wgmmas
        # read that is written after it makes ptxas fence (and serialize) each wgmma again.
        # Word w of block i, step s: registers 8 (s + steps i) + 2 w, + 1 (DotOperandLayout)
        rows = []
        for i in range(blocks):
            for step in range(steps):
                base = 8 * (step + steps * i)
                rows.append("{" + ", ".join(f"mt_pack_word({em.ref(a)}[{base + 2 * w}], {em.ref(a)}[{base + 2 * w + 1}])"
                                            for w in range(4)) + "}")
        em.emit(f"const unsigned fa[{len(rows)}][4] = {{{', '.join(rows)}}};")
    em.emit("mt_wgmma_fence();")
    regs = ", ".join(f"%{x}" for x in range(half))
    trans_b = 1 if sb.trans else 0
    # scale-d (the predicate), then for floats imm-scale-a/b = 1 and, for 16-bit types, the
    # transposes (A along K: 0; B: along N or K); tf32 and s8 read both operands along K only
    shape = f"wgmma.mma_async.sync.aligned.m64n{n}k{k_step}.{'s32' if t == 's8' else 'f32'}.{t}.{t}"
    tail = "p" if t == "s8" else "p, 1, 1" if t == "tf32" else None
    if sa is not None:               # A: a descriptor; B: a descriptor
        ptx = (f"{{ .reg .pred p; setp.ne.b32 p, %{half + 2}, 0; {shape} "
               f"{{{regs}}}, %{half}, %{half + 1}, {tail or f'p, 1, 1, 0, {trans_b}'}; }}")
    else:                            # A: four fragment words; B: a descriptor
        ptx = (f"{{ .reg .pred p; setp.ne.b32 p, %{half + 5}, 0; {shape} "
               f"{{{regs}}}, {{%{half}, %{half + 1}, %{half + 2}, %{half + 3}}}, %{half + 4}, p, 1, 1, {trans_b}; }}")
    kind, trans = {"f16": 0, "bf16": 1, "tf32": 2, "s8": 3}[t], "true" if sb.trans else "false"
    out = '"+r"' if t == "s8" else '"+f"'
    for i in range(blocks):
        outs = ", ".join(f'{out}({ref}[{4 * (n // 8) * i + x}])' for x in range(half))
        ptrs = ", ".join(f"&{ref}[{4 * (n // 8) * i + x}]" for x in range(half))
        for step in range(steps):
            db = (f"mt_desc64(db0 + {_step_bytes(sb, step) >> 4}u, {db_hi}u)" if words
                  else f"db0 + {_step_bytes(sb, step) >> 4}")
            em.emit("{")
            if sa is not None:
                da = f"mt_desc64(da0 + {_step_bytes(sa, step, 64 * groups * i) >> 4}u, {da_hi}u)"
                em.emit(f"  const unsigned long long da = {da}, db = {db};")
                ins, emulated = '"l"(da), "l"(db)', f"mt_emulated_wgmma(d, {n}, da, db, {kind}, {trans})"
            else:
                j = step + steps * i
                em.emit(f"  const unsigned long long db = {db};")
                ins = ", ".join(f'"r"(fa[{j}][{w}])' for w in range(4)) + ', "l"(db)'
                emulated = f"mt_emulated_wgmma_ra(d, {n}, fa[{j}], db, {kind}, {trans})"
            em.emit("#ifdef __CUDA_ARCH__")
            em.emit(f'  asm volatile("{ptx}" : {outs} : {ins}, "r"(1));')
            em.emit("#else")
            em.emit(f"  {'int' if t == 's8' else 'float'}* d[{half}] = {{{ptrs}}};")
            em.emit(f"  {emulated};")
            em.emit("#endif")
            em.emit("}")
    em.emit("mt_wgmma_commit();")
    em.emit(f"mt_wgmma_wait<{1 if carried else 0}>();")
    em.depth -= 1
    em.emit("}")


def dot_portable(em, op: Op):
    """The portable ``tl.dot``: both operands to shared memory (row-major, in the compute type:
    fp32 for fp32/fp16/bf16, tf32-truncated for input_precision "tf32"; fp64; int32 for int8),
    then each thread sums its result elements' rows and columns over K, onto the accumulator. A
    batched (3-d) dot does so in each batch: the operands' tiles lie batch after batch."""
    explain.dot(em, op, "the CUDA cores (no tensor-core instruction takes these types and shapes)")
    a, b, acc = op.operands
    res = op.result
    (*batch, m, kk), n = a.type.shape, b.type.shape[-1]
    nb = batch[0] if batch else 1
    src, out = a.type.scalar, res.type.scalar
    ct = "double" if src.name == "fp64" else "int" if src.name == "i8" else "float"
    dot_shared(em, op, nb * (m * kk + kk * n) * (8 if ct == "double" else 4))
    precision = op.attrs["input_precision"] if ct == "float" and src.name == "fp32" else "ieee"
    compute = {"double": src, "int": I32, "float": F32}[ct]

    def stored(x: Value, r: str) -> str:
        v = em.cast_to(f"{em.ref(x)}[{r}]", src, compute)
        return f"mt_tf32_truncate({v})" if precision == "tf32" else v
    em.emit(em.declare(res) + ";")
    em.emit("{")
    em.depth += 1
    em.emit(f"{ct}* sa = reinterpret_cast<{ct}*>({em.scratch});")
    em.emit(f"{ct}* sb = sa + {nb * m * kk};")
    em.per_element(a, f"sa[{em.offset(a, 'r')}] = {stored(a, 'r')};")
    em.per_element(b, f"sb[{em.offset(b, 'r')}] = {stored(b, 'r')};")
    em.emit("__syncthreads();")
    *bat, row, col = em.coords(res, "r")
    start = em.cast_to(f"{em.ref(acc)}[r]", acc.type.scalar, compute)
    x, y = f"sa[m_ * {kk} + k]", f"sb[k * {n} + n_]"
    unroll = ""
    if bat:                                # row m_ of batch b_ is row b_ * M + m_ of A's tiles; B's tile b_ follows
        unroll = '_Pragma("unroll 4") '     # (the batches' elements are many: NVRTC would take seconds)
        row = f"{bat[0]} * {m} + {row}"
        y = f"sb[({bat[0]} * {kk} + k) * {n} + n_]"
    add = (f"s = s + mt_tf32x3_product({x}, {y});" if precision == "tf32x3" else
           f"s = mt_add(s, mt_mul({x}, {y}));" if ct == "int" else f"s = s + {x} * {y};")
    back = em.cast_to("s", compute, out)
    em.per_element(res, f"{{ const int m_ = {row}, n_ = {col}; {ct} s = {start}; "
                        f"{unroll}for (int k = 0; k < {kk}; ++k) {add} {em.ref(res)}[r] = {back}; }}")
    em.emit("__syncthreads();")
    em.depth -= 1
    em.emit("}")

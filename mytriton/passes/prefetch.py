"""Software pipelining of loads: in a ``for`` loop with ``num_stages`` >= 2
(``tl.range(..., num_stages=S)``), a load whose address, mask and ``other`` depend only on the
loop index and on values from outside the loop is issued one iteration ahead, its value carried
through the loop:

    for i in range(a, b, s):              p = load(addr(a))              (masked: iteration a runs)
        x = load(addr(i))          ->     for i in range(a, b, s) carrying p:
        body(x)                               n = load(addr(i + s))      (masked: i + s runs)
                                              body(p)
                                              yield n

so the memory latency of one iteration overlaps the work of the one before. Triton pipelines with
asynchronous copies into S - 1 shared-memory buffers; here registers hold the next iteration's
data (prefetching two or three iterations ahead measured no faster on the H200, and costs
registers: tutorial 02's softmax over rows of 256 to 3000 elements, fp16 and fp32, 4 and 8 warps).
Loads that would hold more than ``PREFETCH_BYTES_PER_THREAD`` per thread are left in place. A
prefetch for an iteration that does not run is masked off, and the iteration test is made in 64
bits, so an index near the end of the int32 range never wraps into a valid address.

As in Triton, a requested ``num_stages`` lets a load of a later iteration run before the stores of
the earlier ones: a loop whose iterations store to what later iterations load should not ask for
stages. Loops with atomics or barriers are left alone.

Operands of ``tl.dot``: in a ``for`` loop that writes no memory, a load whose one use is an operand
of a ``dot`` in the loop body (directly or through ``tl.trans``) is issued ``S - 1`` iterations
ahead — S is the loop's ``num_stages``, else the kernel's compile or launch option ``num_stages``,
else Triton's default, 3 — and marked ``stages=S, ahead=k`` (k: how many iterations after the
current one it loads), where the dot runs on the tensor cores. Carried values advanced by a
loop-invariant step (``ptrs += BLOCK_K * stride``) are moved ahead with it, as the loop index is.
The CUDA backend keeps such a tile in a ring of S shared-memory buffers, filled by asynchronous
copies (``backends/cuda/dot.py``): the loads of the next S - 1 iterations are in flight while the
tensor cores work on this one, and no registers hold them. A tensor descriptor's TMA copy
(``tma_load``, sm_90a) is staged the same way where its dot may be wgmma; it has no mask, so the
copy issued ahead gets one more operand instead, whether its iteration runs.
"""
from __future__ import annotations

from ..ir.ops import OPS, typed_op
from ..ir.regions import step_sign
from ..ir.ssa import Const, Function, Op, Region, Value, walk
from ..ir.types import BlockType, I32, I64

# The most bytes per thread that the prefetched copies of a loop's loads may hold (16 registers).
PREFETCH_BYTES_PER_THREAD = 64
PREFETCH_DEPTH = 1                  # iterations ahead (see above)
DOT_STAGES = 3                      # shared-memory buffers per dot operand where a loop asks for none


def _const(value: int, t=I32) -> Const:
    return Const(value, t)


def _inductions(loop: Op) -> dict[Value, tuple[Op, int]]:
    """The loop's carried values that each iteration advances by the same amount: argument ->
    (the ``add``/``addptr`` of the body that yields ``argument + step`` with ``step`` defined
    outside the loop, the argument's position among the loop's carried values)."""
    body = loop.regions[0]
    inside = {r for op in walk(body) for r in op.results} | set(body.args)
    found = {}
    for i, (arg, y) in enumerate(zip(body.args[1:], body.ops[-1].operands)):
        op = y.owner
        if (isinstance(op, Op) and op in body.ops and op.name in ("add", "addptr") and op.operands[0] is arg
                and op.operands[1] not in inside and not isinstance(op.operands[1].type, BlockType)):
            found[arg] = (op, i)
    return found


def _slice(load: Op, body: Region, inductions: dict) -> list[Op] | None:
    """The ops of ``body`` that the load's operands are computed by, in body order, when they are
    all pure and read nothing of the loop but its index and its ``inductions``; None otherwise."""
    defined = {r: op for op in body.ops for r in op.results}
    carried = set(body.args[1:])
    need, todo = set(), list(load.operands)
    while todo:
        v = todo.pop()
        if v in carried:
            if v in inductions:
                continue
            return None
        op = defined.get(v)
        if op is None or op in need:
            continue
        if not OPS[op.name].pure:
            return None
        need.add(op)
        todo.extend(op.operands)
    return [op for op in body.ops if op in need]


def _candidates(loop: Op, inductions: dict) -> list[tuple[Op, list[Op]]]:
    """The loads of the loop body that may be issued ahead, each with its address slice: block
    loads, and TMA copies (``tma_load``: only as dot operands, see ``_dot_operands``)."""
    body = loop.regions[0]
    found = []
    for op in body.ops:
        if (op.name == "load" and isinstance(op.results[0].type, BlockType) and not op.attrs.get("volatile")
                or op.name == "tma_load"):
            sl = _slice(op, body, inductions)
            if sl is not None:
                found.append((op, sl))
    return found


def _eligible(loop: Op) -> bool:
    stages = loop.attrs.get("num_stages")
    if loop.name != "for" or not isinstance(stages, int) or stages < 2:
        return False
    # atomics and barriers order memory between threads: their loops keep their loads in place
    return not any(OPS[op.name].writes_memory and op.name != "store" for op in walk(loop.regions[0]))


def _dot_operands(loop: Op, found: list[tuple[Op, list[Op]]], num_warps: int) -> set[Op]:
    """The loads of ``found`` whose one use is an operand of a tensor-core ``dot`` of the loop body
    (directly or through a ``trans`` used only there), when the loop writes no memory. (The CUDA
    cores' dot reads its operands from registers: prefetched copies would only cost registers.)
    A TMA copy (sm_90a only) only where its dot may be Hopper's wgmma (``layout.wgmma_shapes``):
    the CUDA backend then fills its ring by TMA; elsewhere the copies ahead would sit in registers."""
    from .layout import dot_layout, wgmma_shapes
    body = loop.regions[0]
    if loop.name != "for" or any(OPS[op.name].writes_memory for op in walk(body)):
        return set()
    users: dict[Value, list[tuple[Op, int]]] = {}
    for op in walk(body):
        for i, v in enumerate(op.operands):
            users.setdefault(v, []).append((op, i))
    dots = set()
    for load, _ in found:
        use = users.get(load.results[0], [])
        if len(use) == 1 and use[0][0].name == "trans" and use[0][0] in body.ops:
            use = users.get(use[0][0].results[0], [])
        if (len(use) == 1 and use[0][0].name == "dot" and use[0][0] in body.ops and use[0][1] < 2
                and dot_layout(use[0][0], num_warps) is not None
                and (load.name == "load" or wgmma_shapes(use[0][0], num_warps))):
            dots.add(load)
    return dots


def _bytes_per_thread(load: Op, num_warps: int) -> int:
    t = load.results[0].type
    return max(1, t.numel * max(1, t.scalar.bits // 8) // (32 * num_warps))


def _runs(index: Value, ahead: int, loop: Op, out: list[Op]) -> Value:
    """Scalar i1: the iteration ``ahead`` steps after the one at ``index`` runs (in 64 bits)."""
    start, stop, step = loop.operands[:3]
    loc = loop.loc

    def emit(name, operands, **attrs):
        op = typed_op(name, operands, loc, **attrs)
        out.append(op)
        return op.result
    wide = emit("cast", [index], dtype=I64)
    wide_step = emit("cast", [step], dtype=I64) if not isinstance(step, Const) else _const(step.value, I64)
    nxt = emit("add", [wide, emit("mul", [wide_step, _const(ahead, I64)])])
    wide_stop = emit("cast", [stop], dtype=I64) if not isinstance(stop, Const) else _const(stop.value, I64)
    sign = step_sign(step)
    if sign:
        return emit("cmp_lt" if sign > 0 else "cmp_gt", [nxt, wide_stop])
    up = emit("and", [emit("cmp_gt", [step, _const(0)]), emit("cmp_lt", [nxt, wide_stop])])
    down = emit("and", [emit("cmp_lt", [step, _const(0)]), emit("cmp_gt", [nxt, wide_stop])])
    return emit("or", [up, down])


def _issue(load: Op, sl: list[Op], index: Value, at: Value, ahead: int, loop: Op, out: list[Op],
           inductions: dict, first: bool) -> Value:
    """Emit into ``out`` the load of the iteration ``ahead`` steps after ``index`` (``at`` is that
    iteration's index value), masked off when it does not run; return its result. The inductions
    it reads are advanced ``ahead`` steps from their value in the current iteration (``first``:
    from their initial values, in front of the loop)."""
    runs = _runs(index, ahead, loop, out)
    mapping = {loop.regions[0].args[0]: at}
    for arg, (step_op, i) in inductions.items():
        base = loop.operands[3 + i] if first else arg
        if ahead:
            inv = step_op.operands[1]
            by = typed_op("mul", [inv, _const(ahead, inv.type)], loop.loc)
            moved = Op(step_op.name, [base, by.result], [arg.type], attrs=dict(step_op.attrs), loc=step_op.loc)
            out += [by, moved]
            base = moved.result
        mapping[arg] = base
    for op in sl:
        clone = Op(op.name, [mapping.get(v, v) for v in op.operands], [r.type for r in op.results],
                   attrs=dict(op.attrs), loc=op.loc)
        mapping.update(zip(op.results, clone.results))
        out.append(clone)
    operands = [mapping.get(v, v) for v in load.operands]
    if load.name == "tma_load":                  # (TMA has no mask: the copy is skipped where it does not run)
        new = Op("tma_load", operands + [runs], [load.results[0].type], attrs=dict(load.attrs), loc=load.loc)
        out.append(new)
        return new.result
    m = OPS["load"].mask_operand
    elem = load.results[0].type.scalar
    if len(operands) > m:
        mask = typed_op("and", [operands[m], runs], load.loc)
        out.append(mask)
        operands[m] = mask.result
    else:
        operands.append(runs)
        operands.append(_const(0.0 if elem.is_float else 0, elem))
    new = Op("load", operands, [load.results[0].type], attrs=dict(load.attrs), loc=load.loc)
    out.append(new)
    return new.result


def _pipeline(loop: Op, parent: list[Op], num_warps: int, num_stages: int | None) -> None:
    """Rewrite ``loop`` (an op of the region whose op list is ``parent``) as the module says
    (``num_stages``: the kernel's, for loops that ask for none)."""
    inductions = _inductions(loop)
    found = _candidates(loop, inductions)
    staged = _dot_operands(loop, found, num_warps)
    stages = loop.attrs.get("num_stages")
    stages = stages if stages is not None else num_stages if num_stages is not None else DOT_STAGES
    if not isinstance(stages, int) or stages < 2:
        staged = set()
    depths: dict[Op, int] = {load: stages - 1 for load in staged}
    if _eligible(loop):
        rest = [(load, sl) for load, sl in found if load not in staged and load.name == "load"]
        if sum(_bytes_per_thread(load, num_warps) for load, _ in rest) <= PREFETCH_BYTES_PER_THREAD:
            depths.update((load, PREFETCH_DEPTH) for load, _ in rest)
    found = [(load, sl) for load, sl in found if load in depths]
    if not found:
        return
    body = loop.regions[0]
    start, step = loop.operands[0], loop.operands[2]
    index = body.args[0]
    prologue: list[Op] = []                     # in front of the loop: the first D iterations' loads
    top: list[Op] = []                          # at the top of the body: iteration i + D's loads
    starts, aheads = [start], {}                # start + k * step, k < D; i + D * step
    for k in range(1, max(depths.values())):
        by = typed_op("mul", [step, _const(k)], loop.loc)
        at = typed_op("add", [start, by.result], loop.loc)
        prologue += [by, at]
        starts.append(at.result)
    for depth in sorted(set(depths.values())):
        step_by = typed_op("mul", [step, _const(depth)], loop.loc)
        ahead = typed_op("add", [index, step_by.result], loop.loc)
        top += [step_by, ahead]
        aheads[depth] = ahead.result
    inits, args, yields, names = [], [], [], []
    issued: dict[int, list[Op]] = {}           # the prologue's loads by iteration: issued in that order
    for n, (load, sl) in enumerate(found):
        depth = depths[load]

        def mark(k: int, v: Value) -> Value:
            if load in staged:
                v.owner.attrs.update(stages=stages, ahead=k)
            return v
        inits += [mark(k, _issue(load, sl, start, starts[k], k, loop, issued.setdefault(k, []), inductions, True))
                  for k in range(depth)]
        carried = [Value(load.results[0].type, body) for _ in range(depth)]
        names += [f"prefetch{n}_{k}" for k in range(depth)]
        fresh = mark(depth, _issue(load, sl, index, aheads[depth], depth, loop, top, inductions, False))
        args += carried
        yields += carried[1:] + [fresh]
        # the loop's own load is now the carried copy (DCE removes the load)
        for op in walk(body):
            op.operands = [carried[0] if v is load.results[0] else v for v in op.operands]
    for k in sorted(issued):
        prologue += issued[k]
    body.ops[:0] = top
    body.args += args
    for a in args:
        a.owner = body
    body.ops[-1].operands += yields
    loop.operands += inits
    loop.results += [Value(v.type, loop) for v in inits]
    loop.attrs["names"] = tuple(loop.attrs.get("names", ())) + tuple(names)
    i = parent.index(loop)
    parent[i:i] = prologue


def _visit(region: Region, num_warps: int, num_stages: int | None) -> None:
    for op in list(region.ops):
        for r in op.regions:
            _visit(r, num_warps, num_stages)
        if op.name == "for" and op.regions[0].args[0].type == I32:     # (an int64 index: not pipelined)
            _pipeline(op, region.ops, num_warps, num_stages)


def staged_chain(loop: Op, j: int) -> tuple[int, list[Op]] | None:
    """The chain of staged loads this pass made from loop argument ``j`` on (where the argument's
    initial value is a load marked ``ahead=0``): its depth S - 1 and its loads — iterations
    0..S-2's in front of the loop (arguments j..j+S-2) and iteration i + S - 1's in the body (what
    the last of them is yielded). None where argument ``j`` starts no chain."""
    inits, yields = loop.operands[3:], loop.regions[0].ops[-1].operands
    first = inits[j].owner
    if not (isinstance(first, Op) and first.name in ("load", "tma_load") and first.attrs.get("ahead") == 0):
        return None
    depth = first.attrs["stages"] - 1
    return depth, [v.owner for v in inits[j:j + depth]] + [yields[j + depth - 1].owner]


def prefetch(fn: Function) -> Function:
    _visit(fn.body, fn.num_warps, fn.num_stages)
    return fn

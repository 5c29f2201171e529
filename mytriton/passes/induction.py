"""Pointer tiles carried around a loop become a carried scalar offset.

The idiom of Triton's matmuls, ``a_ptrs += BLOCK_K * stride_ak`` in a K loop, carries a whole tile
of 64-bit pointers from one iteration to the next, each element of it a loop-carried register pair
that NVVM keeps. When a carried pointer tile only ever advances by a loop-invariant scalar, this
pass carries that scalar's running sum instead (an i64) and adds it to the initial tile in the body:

    for k ...: carrying p = p0             for k ...: carrying o = 0
        load(p)                     ->          p = p0 + o
        yield p + inc                           load(p)
                                                yield o + inc
    (a use of the loop's final p is p0 + o_final)

Registers of manifests/kernels/gemm.py's fp16 GEMM on sm_90 (ptxas): a 128x64x32 tile on 4 warps
244 -> 177; 128x128x64 on 8 warps 255 and a 24-byte spill -> 179, no spill.
"""
from __future__ import annotations

from ..ir.ops import typed_op
from ..ir.ssa import Const, Function, Op, Region, Value, walk
from ..ir.types import BlockType, I64, PointerType


def _rewrite_lane(loop: Op, lane: int, parent: Region, root: Region) -> bool:
    """Rewrite carried lane ``lane`` of ``loop`` (an op of ``parent``) where it is such a pointer
    tile; True if it was."""
    body = loop.regions[0]
    arg, init = body.args[1 + lane], loop.operands[3 + lane]
    yield_op = body.ops[-1]
    step = yield_op.operands[lane]
    if not (isinstance(arg.type, BlockType) and isinstance(arg.type.scalar, PointerType)):
        return False
    adv = next((op for op in body.ops if step in op.results), None)
    inside = {r for op in walk(body) for r in op.results} | set(body.args)
    if adv is None or adv.name != "addptr" or adv.operands[0] is not arg:
        return False
    inc = adv.operands[1]
    if isinstance(inc.type, BlockType) or inc in inside:
        return False
    if any(step in op.operands for op in walk(body) if op is not yield_op):   # (the advanced tile: only yielded)
        return False
    # the body: the carried offset, the pointers of this iteration
    offset = Value(I64, body)
    moved = typed_op("addptr", [init, offset], loop.loc)
    here = moved.result
    for op in walk(body):
        if op is not adv:
            op.operands = [here if v is arg else v for v in op.operands]
    tail = [] if inc.type == I64 else [typed_op("cast", [inc], adv.loc, dtype=I64)]
    advanced = typed_op("add", [offset, tail[0].result if tail else inc], adv.loc)
    tail.append(advanced)
    body.ops.remove(adv)                              # (its one use, the yield, now takes the offset)
    body.ops.insert(0, moved)
    body.ops[-1:-1] = tail
    yield_op.operands[lane] = advanced.result
    body.args[1 + lane] = offset
    offset.owner = body
    # the loop: carries the offset from 0; a use of its final pointers is the initial tile plus it
    loop.operands[3 + lane] = Const(0, I64)
    old_result = loop.results[lane]
    final = Value(I64, loop)
    loop.results[lane] = final
    after = typed_op("addptr", [init, final], loop.loc)
    users = [op for op in walk(root) if old_result in op.operands]
    if users:
        at = parent.ops.index(loop) + 1
        parent.ops.insert(at, after)
        for op in users:
            op.operands = [after.result if v is old_result else v for v in op.operands]
    return True


def _visit(region: Region, root: Region) -> None:
    for op in list(region.ops):
        for r in op.regions:
            _visit(r, root)
        if op.name == "for":
            for lane in range(len(op.operands) - 3):
                _rewrite_lane(op, lane, region, root)


def pointer_induction(fn: Function) -> Function:
    _visit(fn.body, fn.body)
    return fn

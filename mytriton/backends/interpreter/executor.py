"""Executes verified SSA on numpy, many program instances at once.

Every value is a numpy array whose leading axis is the *program axis*: of length 1 when the value is
the same in every program of the batch (parameters, constants, ``arange``, anything that does not
depend on ``program_id``), of the batch's length otherwise. A scalar of the IR is an array of shape
``(n,)``, a block ``(n, *shape)``; numpy broadcasting across that axis is what runs all the programs
of a batch in one array operation. Constants are 0-d arrays.

Elementwise ops run through the registry (``ir.ops.eval_elementwise``), where each op's numpy
semantics live next to its type rule. The ops with structure beyond one scalar function per element
are interpreted here, in ``STRUCTURAL`` (one table keyed by op name).

Programs of a batch advance in lock step through the ops. That is faithful for any kernel without
inter-program races, provided every loop runs the same iterations in every program: a kernel whose
loop control may differ between programs (a for loop's bounds that depend on the program id, a
while loop's condition that depends on the program id or on memory) is run one program at a time
(see ``loop_bounds_vary``), so that every program advances on its own (a spin lock cannot deadlock
programs held in lock step). An ``if`` whose condition differs between the programs of a batch
runs each branch on the programs that take it (``Executor.run_if``).
Atomics are the one sanctioned inter-program race: an atomic op runs the batch's programs one after
the other (``Memory.atomic``), so the batch behaves as some sequential order of its atomics and
each program gets the old values that order gives; an atomic's result counts as differing between
programs.
"""
from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

from ...ir.ops import (ATOMIC_UPDATE, OPS, REDUCE_COMBINE, constant_value, convert, eval_elementwise, np_dtype,
                       print_format, print_line_format)
from ...ir.regions import control_operands, is_target, lanes
from ...ir.ssa import Const, Function, Op, Param, Region, Value, combine_bodies, walk
from ...ir.types import BlockType, PointerType, shape_of
from .memory import ElementSize, Memory, OutOfBounds, ReadOnly

ADDRESS = np.int64                # the numpy dtype of a pointer value (see memory.py)
BATCH_ELEMENTS = 1 << 21          # a batch holds at most this many elements per block value


class Program:
    """One specialization, ready to run: its SSA, the constants it uses, and how it may be batched."""

    def __init__(self, fn: Function):
        self.fn = fn
        self.consts: dict[Value, np.ndarray] = {}
        max_numel = 1
        ops = list(walk(fn.body))
        ops += [inner for op in ops for body in combine_bodies(op) for inner in walk(body)]
        for op in ops:
            for v in op.operands:
                if isinstance(v, Const) and v not in self.consts:
                    self.consts[v] = np.asarray(constant_value(v.value, v.type), np_dtype(v.type))
            for r in op.results:
                if isinstance(r.type, BlockType):
                    max_numel = max(max_numel, r.type.numel)
        self.batchable = not loop_bounds_vary(fn)
        self.batch_size = max(1, BATCH_ELEMENTS // max_numel) if self.batchable else 1


def loop_bounds_vary(fn: Function) -> bool:
    """Whether some loop's control — a for loop's bounds and step, a while loop's condition — may
    differ between program instances: depend on ``program_id`` or on the result of an op that
    writes memory (an atomic), directly or through arithmetic, memory reads at varying addresses
    or values flowing through regions; control computed inside the loop (a while condition) also
    when it depends on any memory read (another program may change that memory while this one
    waits: a spin lock must let each program advance alone).
    An ``if`` needs no such care: its programs split by branch (``Executor.run_if``)."""
    tainted: set[Value] = set()          # may differ between programs
    reads: set[Value] = set()            # may depend on memory

    def spread(op: Op):
        for group, _pos, values in lanes(op):       # a lane's values taint one another
            for into in (tainted, reads):
                if any(v in into for v, p in zip(values, group) if not is_target(p)) or \
                        any(v in into for v in control_operands(op)):
                    into.update(v for v, p in zip(values, group) if is_target(p))

    def region(r: Region) -> bool:
        for op in r.ops:
            d = OPS[op.name]
            if op.regions:
                while True:                   # values flowing around: iterate to a fixed point
                    before = (len(tainted), len(reads))
                    spread(op)
                    for inner in op.regions:
                        if region(inner):
                            return True
                    if (len(tainted), len(reads)) == before:
                        break
                if d.loop:
                    inside = {v for inner in op.regions for o in walk(inner) for v in o.results}
                    for v in control_operands(op):
                        if v in tainted or (v in inside and v in reads):     # re-read every iteration
                            return True
                continue
            if op.name == "program_id" or (d.writes_memory and op.results) or any(v in tainted for v in op.operands):
                tainted.update(op.results)
            if d.reads_memory or any(v in reads for v in op.operands):
                reads.update(op.results)
        return False

    return region(fn.body)


# --- helpers on program-axis arrays ---------------------------------------------------------------

def _rank(v: Value) -> int:
    return len(shape_of(v.type))


def _to_rank(x: np.ndarray, rank: int) -> np.ndarray:
    """``x`` with exactly ``1 + rank`` axes: a constant gets a unit program axis, a scalar unit
    block axes (so it broadcasts against a block of that rank)."""
    if x.ndim == rank + 1:
        return x
    if x.ndim == 0:
        return x.reshape((1,) * (rank + 1))
    return x.reshape(x.shape[:1] + (1,) * rank)


def _uniform_int(x: np.ndarray, what: str) -> int:
    flat = x.reshape(-1)
    first = int(flat[0])
    if flat.shape[0] > 1 and not (flat == first).all():
        raise AssertionError(f"interpreter: {what} differs between the programs of a batch")
    return first


# --- the structural ops ---------------------------------------------------------------------------

def _program_id(ex: Executor, op: Op, args):
    return ex.program_ids[op.attrs["axis"]]


def _num_programs(ex, op, args):
    return np.array([ex.grid[op.attrs["axis"]]], np.int32)


def _arange(ex, op, args):
    return np.arange(op.attrs["start"], op.attrs["end"], dtype=np.int32)[None]


def _expand_dims(ex, op, args):
    x = _to_rank(args[0], _rank(op.operands[0]))
    return np.expand_dims(x, op.attrs["axis"] + 1)


def _tf32(x, rounding: str):
    """fp32 ``x`` as tf32 (10 mantissa bits): "truncate" drops the low 13 bits (what the tensor
    cores read of an fp32 operand), "nearest" rounds to nearest, ties away from zero (cvt.rna)."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    if rounding == "nearest":
        finite = (bits & 0x7F800000) != 0x7F800000
        bits = np.where(finite, bits + np.uint32(0x1000), bits)
    return (bits & np.uint32(0xFFFFE000)).view(np.float32)


def dot_products(a, b, precision: str):
    """``a @ b`` (batched over the leading dimension) as ``tl.dot`` computes it, in the
    accumulator's precision: fp32 inputs by ``precision``, halves exactly in fp32, int8 in int32."""
    if a.dtype == np.int8:
        return np.matmul(a.astype(np.int32), b.astype(np.int32))
    if a.dtype == np.float64:
        return np.matmul(a, b)
    a, b = a.astype(np.float32), b.astype(np.float32)
    with np.errstate(all="ignore"):
        if precision == "tf32":
            return np.matmul(_tf32(a, "truncate"), _tf32(b, "truncate"))
        if precision == "tf32x3":
            a_hi, b_hi = _tf32(a, "nearest"), _tf32(b, "nearest")
            a_lo, b_lo = _tf32(a - a_hi, "nearest"), _tf32(b - b_hi, "nearest")
            return np.matmul(a_lo, b_hi) + np.matmul(a_hi, b_lo) + np.matmul(a_hi, b_hi)
        return np.matmul(a, b)


def _dot(ex, op, args):
    a, b, acc = (_to_rank(x, _rank(op.result)) for x in args)      # (np.matmul batches the leading axes)
    out = np_dtype(op.result.type.scalar)
    with np.errstate(all="ignore"):
        total = dot_products(a, b, op.attrs["input_precision"])
        if out == np.int32:
            return (total + acc).astype(np.int32)
        return (total + acc.astype(total.dtype)).astype(out)


def _trans(ex, op, args):
    x = _to_rank(args[0], _rank(op.operands[0]))
    return np.transpose(x, (0,) + tuple(d + 1 for d in op.attrs["dims"]))


def _broadcast(ex, op, args):
    shape = tuple(op.attrs["shape"])
    x = _to_rank(args[0], len(shape))
    return np.broadcast_to(x, x.shape[:1] + shape)


def _zeros(ex, op, args):
    t = op.result.type
    return np.broadcast_to(np.zeros((), np_dtype(t.element)), (1,) + t.shape)


def _full(ex, op, args):
    t = op.result.type
    value = eval_elementwise("cast", [op.operands[0].type], [args[0]], {"dtype": t.element}, t.element)
    value = _to_rank(np.asarray(value), len(t.shape))
    return np.broadcast_to(value, value.shape[:1] + t.shape)


def _reduce(ex, op, args):
    x = _to_rank(args[0], _rank(op.operands[0]))
    combine = OPS[REDUCE_COMBINE[op.name]].np_fn        # np.add / np.fmax / np.fmin: NaN-ignoring
    out_dtype = np_dtype(op.result.type.scalar)
    axis = op.attrs["axis"]
    if axis is None:
        x, axis = x.reshape(x.shape[0], -1), 0
    with np.errstate(all="ignore"):
        return combine.reduce(x, axis=axis + 1, dtype=out_dtype)


def _along_last(op, args) -> list[np.ndarray]:
    """A reduce's or scan's operands, of one shape, with the axis it works along moved last."""
    xs = np.broadcast_arrays(*(_to_rank(a, _rank(v)) for a, v in zip(args, op.operands)))
    return [np.moveaxis(x, op.attrs["axis"] + 1, -1) for x in xs]


def _reduce_by(ex, op, args):
    """Pairwise, in index order: (0 with 1), (2 with 3), ... then the pairs' results likewise."""
    xs = _along_last(op, args)
    while xs[0].shape[-1] > 1:
        xs = ex.combine(op, [x[..., 0::2] for x in xs], [x[..., 1::2] for x in xs])
    return [x[..., 0] for x in xs]


def _map_elementwise(ex, op, args):
    """The body on every element of the broadcast operands (groups of ``pack`` consecutive elements
    in row-major order, the last group padded by repeating its last element)."""
    rank, pack = _rank(op.results[0]), op.attrs["pack"]
    xs = np.broadcast_arrays(*(_to_rank(a, rank) for a in args))
    shape, n = xs[0].shape, xs[0].size
    groups = -(-n // pack)
    flat = [np.ascontiguousarray(x).reshape(-1) for x in xs]
    padded = [np.concatenate([f, np.repeat(f[-1:], groups * pack - n)]).reshape(groups, pack) for f in flat]
    outs = ex.combine(op, [p[:, i] for p in padded for i in range(pack)], [])
    return [np.stack(outs[k:k + pack], axis=1).reshape(-1)[:n].reshape(shape) for k in range(0, len(outs), pack)]


def _scan(ex, op, args):
    """Hillis and Steele's scan: at distance d = 1, 2, 4, ... each element i >= d becomes
    combine(element i - d, element i) (from the end when reversed)."""
    xs = _along_last(op, args)
    reverse = op.attrs["reverse"]
    if reverse:
        xs = [np.flip(x, -1) for x in xs]
    d, n = 1, xs[0].shape[-1]
    while d < n:
        later = ex.combine(op, [x[..., :-d] for x in xs], [x[..., d:] for x in xs])
        xs = [np.concatenate([x[..., :d], y], axis=-1) for x, y in zip(xs, later)]
        d *= 2
    if reverse:
        xs = [np.flip(x, -1) for x in xs]
    return [np.ascontiguousarray(np.moveaxis(x, -1, op.attrs["axis"] + 1)) for x in xs]


def _reshape(ex, op, args):
    x = _to_rank(args[0], _rank(op.operands[0]))
    return x.reshape(x.shape[:1] + tuple(op.attrs["shape"]))


def _join(ex, op, args):
    a, b = np.broadcast_arrays(*(_to_rank(x, _rank(op.operands[0])) for x in args))
    return np.stack([a, b], axis=-1)


def _split(ex, op, args):
    x = _to_rank(args[0], _rank(op.operands[0]))
    return [np.ascontiguousarray(x[..., 0]), np.ascontiguousarray(x[..., 1])]


def _cat(ex, op, args):
    a, b = (_to_rank(x, _rank(op.result)) for x in args)
    n = max(a.shape[0], b.shape[0])
    return np.concatenate([np.broadcast_to(a, (n,) + a.shape[1:]), np.broadcast_to(b, (n,) + b.shape[1:])], axis=1)


def _flip(ex, op, args):
    return np.flip(_to_rank(args[0], _rank(op.result)), op.attrs["dim"] + 1)


def _histogram(ex, op, args):
    x = _to_rank(args[0], 1)
    mask = _to_rank(args[1], 1) if len(args) > 1 else np.ones((1, 1), bool)
    x, mask = np.broadcast_arrays(x, mask)
    bins = op.attrs["num_bins"]
    keep = mask & (x >= 0) & (x < bins)
    return np.stack([np.bincount(row[k].astype(np.int64), minlength=bins).astype(np.int32)
                     for row, k in zip(x, keep)])


def _gather(ex, op, args):
    src, index = (_to_rank(x, _rank(op.result)) for x in args)
    axis, n = op.attrs["axis"] + 1, op.operands[0].type.shape[op.attrs["axis"]]
    batch = max(src.shape[0], index.shape[0])
    src = np.broadcast_to(src, (batch,) + src.shape[1:])
    index = np.broadcast_to(index, (batch,) + index.shape[1:]).astype(np.int64) & (n - 1)
    return np.take_along_axis(src, index, axis)


def _addptr(ex, op, args):
    rank = _rank(op.result)
    ptr, off = (_to_rank(a, rank) for a in args)
    return ptr + off.astype(ADDRESS)


def _broadcast_all(args, rank: int):
    """A load's or store's operands, broadcast to one shape (masks and values to the pointer's)."""
    return np.broadcast_arrays(*(_to_rank(a, rank) for a in args))


def _load(ex, op, args):
    rank = _rank(op.result)
    address, *rest = _broadcast_all(args, rank)
    mask = rest[0] if rest else None
    other = rest[1] if len(rest) > 1 else None
    dtype = np_dtype(op.result.type.scalar)
    return ex.access(op, lambda: ex.memory.load(address, mask, other, dtype))


def _store(ex, op, args):
    rank = _rank(op.operands[0])
    address, value, *rest = _broadcast_all(args, rank)
    mask = rest[0] if rest else None
    value = convert(value, op.operands[1].type.scalar, op.operands[0].type.scalar.pointee)   # as the cast op
    ex.access(op, lambda: ex.memory.store(address, value, mask))


def _atomic(ex, op, args):
    """atomic_rmw (ptr, value [, mask]) and atomic_cas (ptr, cmp, value): every program of the batch
    runs it, even where the operands are the same in all of them (a scalar atomic on a fixed
    address runs once per program)."""
    rank = _rank(op.operands[0])
    n = len(ex.program_ids[0])
    address, *rest = (np.broadcast_to(a, (n,) + a.shape[1:]) for a in _broadcast_all(args, rank))
    has_mask = op.name == "atomic_rmw" and len(rest) == 2
    mask = rest.pop() if has_mask else None
    update = ATOMIC_UPDATE["cas" if op.name == "atomic_cas" else op.attrs["kind"]]
    dtype = np_dtype(op.result.type.scalar)
    return ex.access(op, lambda: ex.memory.atomic(address, mask, update, rest, dtype))


def _barrier(ex, op, args):
    """Programs of a batch advance in lock step: every op is already a barrier."""


def _device_print(ex, op, args):
    """The lines the GPU prints, from the same printf format (print_line_format; Python's ``%``
    with the length modifiers dropped), program by program of the batch, element by element in
    row-major order."""
    x = op.operands[0]
    t = x.type.scalar
    conv, _, bits = print_format(t, op.attrs["hex"])
    rank = _rank(x)
    n = len(ex.program_ids[0])
    values = np.broadcast_to(_to_rank(args[0], rank), (n,) + (shape_of(x.type) or ()))
    fmt = print_line_format(t, op.attrs["hex"], shape_of(x.type) or ()).replace("ll", "").replace("%p", "0x%x")
    if bits:
        values = np.ascontiguousarray(values).view(f"uint{max(8, bits)}")
    elif not isinstance(t, PointerType) and t.is_float:
        values = values.astype(np.float64)
    as_number = float if conv == "%f" else int
    lines = []
    for b in range(n):
        pid = tuple(ex.program_id_of(b))
        for idx in np.ndindex(*values.shape[1:]):
            lines.append(fmt % (*pid, *idx, op.attrs["prefix"], as_number(values[(b, *idx)])))
    sys.stdout.write("".join(lines))


class AssertFailed(Exception):
    """A tl.device_assert found a false element: which program and which element."""

    def __init__(self, message: str, lane: tuple):
        super().__init__(message)
        self.message, self.lane = message, lane


def _device_assert(ex, op, args):
    rank = _rank(op.operands[0])
    n = len(ex.program_ids[0])
    cond, *mask = (np.broadcast_to(a, (n,) + np.shape(a)[1:]) for a in _broadcast_all(args, rank))
    failed = ~cond.astype(bool) & (mask[0].astype(bool) if mask else True)
    if failed.any():
        lane = tuple(int(i) for i in np.argwhere(failed)[0])
        ex.on_fault(op, AssertFailed(op.attrs["message"], lane), ex.program_id_of(lane[0]))


def _identity(ex, op, args):
    return args[0]


STRUCTURAL: dict[str, Callable] = {
    "program_id": _program_id, "num_programs": _num_programs, "arange": _arange,
    "expand_dims": _expand_dims, "broadcast": _broadcast, "trans": _trans, "dot": _dot,
    "zeros": _zeros, "empty": _zeros, "full": _full,             # `empty` is zero-filled, deterministically
    **{kind: _reduce for kind in REDUCE_COMBINE}, "reduce": _reduce_by, "scan": _scan,
    "map_elementwise": _map_elementwise,
    "histogram": _histogram, "gather": _gather, "reshape": _reshape, "join": _join, "split": _split, "cat": _cat, "flip": _flip,
    "addptr": _addptr, "load": _load, "store": _store,
    "atomic_rmw": _atomic, "atomic_cas": _atomic, "debug_barrier": _barrier, "device_print": _device_print,
    "device_assert": _device_assert,
    "convert_layout": _identity,
}
# The ops that own regions (and the terminators that end them) are run by REGION_RUNNERS below.


class Executor:
    """Runs a Program over one batch of program instances."""

    def __init__(self, program: Program, memory: Memory, grid: tuple[int, int, int],
                 params: dict[Param, np.ndarray], on_fault: Callable):
        self.program, self.memory, self.grid = program, memory, grid
        self.params = params
        self.on_fault = on_fault              # (op, OutOfBounds | ReadOnly, program id) -> raises
        self.program_ids: list[np.ndarray] = []

    def program_id_of(self, batch_index: int) -> tuple[int, int, int]:
        """The (x, y, z) program id of an entry of the program axis (0 for a uniform value: the
        batch's first program)."""
        return tuple(int(ids[batch_index]) for ids in self.program_ids)

    def run_batch(self, linear_ids: np.ndarray):
        g0, g1, _ = self.grid
        self.program_ids = [(linear_ids % g0).astype(np.int32), (linear_ids // g0 % g1).astype(np.int32),
                            (linear_ids // (g0 * g1)).astype(np.int32)]
        env: dict[Value, np.ndarray] = dict(self.program.consts)
        env.update(self.params)
        self.run_ops(self.program.fn.body.ops, env)

    def run_ops(self, ops: list[Op], env: dict):
        for op in ops:
            if op.regions:
                results = REGION_RUNNERS[op.name](self, op, env)
                for r, x in zip(op.results, results):
                    env[r] = x
                continue
            if OPS[op.name].terminator:
                continue                        # read by the op that owns the region
            args = [env[v] for v in op.operands]
            rule = STRUCTURAL.get(op.name)
            out = rule(self, op, args) if rule is not None else self.elementwise(op, args)
            if isinstance(out, list):               # an op of several results (reduce, scan)
                env.update(zip(op.results, out))
            elif op.results:
                env[op.result] = out

    def elementwise(self, op: Op, args):
        d = OPS[op.name]
        if not d.elementwise:
            raise NotImplementedError(f"the interpreter has no rule for op '{op.name}'")
        rank = _rank(op.result)
        args = [_to_rank(a, rank) for a in args]
        if isinstance(op.result.type.scalar, PointerType) and op.name != "cast":   # `where` of pointers
            out = d.np_fn(*args)
        else:
            out = eval_elementwise(op.name, [v.type for v in op.operands], args, op.attrs, op.result.type)
        return _to_rank(np.asarray(out), rank)

    def combine(self, op: Op, left: list[np.ndarray], right: list[np.ndarray]) -> list[np.ndarray]:
        """The op's combine body on arrays of one shape, element by element: each element runs as
        a program of its own (scalar values have one program axis)."""
        body = op.attrs["combine"].region
        shape = left[0].shape
        env = dict(self.program.consts)
        for v, x in zip(body.args, [*left, *right]):
            env[v] = np.ascontiguousarray(x).reshape(-1)
        saved = self.program_ids
        self.program_ids = [np.zeros(env[body.args[0]].shape[0], np.int32)] * 3
        try:
            self.run_ops(body.ops, env)
        finally:
            self.program_ids = saved
        n = env[body.args[0]].shape[0]
        return [np.broadcast_to(np.asarray(env[v]).reshape(-1), (n,)).reshape(shape) for v in body.ops[-1].operands]

    def run_for(self, op: Op, env: dict) -> list[np.ndarray]:
        start, stop, step = (_uniform_int(env[v], "a loop bound") for v in op.operands[:3])
        carried = [env[v] for v in op.operands[3:]]
        body = op.regions[0]
        index, lanes_ = body.args[0], body.args[1:]
        *ops, yield_op = body.ops
        for i in (range(start, stop, step) if step else ()):     # a zero step runs no iteration
            env[index] = np.array([i], np_dtype(index.type))
            for v, x in zip(lanes_, carried):
                env[v] = x
            self.run_ops(ops, env)
            carried = [env[v] for v in yield_op.operands]     # all lanes update at once
        return carried

    def run_if(self, op: Op, env: dict) -> list[np.ndarray]:
        """Programs of the batch that take the same branch run it together; when they diverge,
        each branch runs on its own programs (the values that differ between programs are cut
        to them) and the results are put together again."""
        cond = np.asarray(env[op.operands[0]]).reshape(-1).astype(bool)
        if cond.shape[0] == 1 or cond.all() or not cond.any():
            taken = op.regions[0 if cond[0] else 1]
            self.run_ops(taken.ops, env)
            return [env[v] for v in taken.ops[-1].operands]
        n = cond.shape[0]
        outs = [np.empty((n, *shape_of(r.type)), _np_of(r.type)) for r in op.results]
        saved_ids = self.program_ids
        for branch, chosen in ((0, np.nonzero(cond)[0]), (1, np.nonzero(~cond)[0])):
            if not chosen.shape[0]:
                continue
            sub = {v: (x[chosen] if x.ndim and x.shape[0] == n else x) for v, x in env.items()}
            self.program_ids = [ids[chosen] for ids in saved_ids]
            try:
                taken = op.regions[branch]
                self.run_ops(taken.ops, sub)
            finally:
                self.program_ids = saved_ids
            for out, r, v in zip(outs, op.results, taken.ops[-1].operands):
                x = _to_rank(np.asarray(sub[v]), _rank(r))
                out[chosen] = np.broadcast_to(x, (chosen.shape[0], *shape_of(r.type)))
        return outs

    def run_while(self, op: Op, env: dict) -> list[np.ndarray]:
        before, after = op.regions
        carried = [env[v] for v in op.operands]
        while True:
            for v, x in zip(before.args, carried):
                env[v] = x
            self.run_ops(before.ops, env)
            cond, *passed = [env[v] for v in before.ops[-1].operands]
            if not _uniform_int(np.asarray(cond), "a while condition"):
                return passed
            for v, x in zip(after.args, passed):
                env[v] = x
            self.run_ops(after.ops, env)
            carried = [env[v] for v in after.ops[-1].operands]

    def access(self, op: Op, fn: Callable):
        try:
            return fn()
        except OutOfBounds as fault:
            self.on_fault(op, fault, self.program_id_of(fault.lane[0]))
        except (ReadOnly, ElementSize) as fault:
            self.on_fault(op, fault, self.program_id_of(0))


def _np_of(t) -> np.dtype:
    return ADDRESS if isinstance(t.scalar, PointerType) else np_dtype(t.scalar)


# The ops that own regions, each run by its own method (their semantics, as their RegionFlow reads).
REGION_RUNNERS: dict[str, Callable] = {"for": Executor.run_for, "if": Executor.run_if, "while": Executor.run_while}

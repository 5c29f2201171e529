"""Reductions and scans by a combine function: ``tl.reduce``, ``tl.associative_scan`` and what
Triton builds on them (``tl.cumsum``, ``tl.cumprod``, ``tl.argmax``, ``tl.argmin``, ``tl.max`` /
``tl.min`` with ``return_indices``), with Triton 3.6's signatures, defaults and type rules.

The combine function is traced once on scalars into a closed body (``ir.ssa.Combine``) that the
``reduce`` / ``scan`` op carries; the backends run it on registers, across the lanes of a warp
(shuffles) and across warps (shared memory). ``tl.reduce`` assumes, as Triton does, that it is
associative and commutative; ``tl.associative_scan`` only that it is associative (operands are
combined in index order, from the end when ``reverse=True``).
"""
from __future__ import annotations

import builtins

from .core import builtin, current_builder, is_block, make, tensor, to_tensor
from ..ir.ops import sum_type
from ..ir.types import BF16, F32

__all__ = ["reduce", "associative_scan", "cumsum", "cumprod", "argmax", "argmin"]


def _inputs(input, what: str) -> tuple[list[tensor], bool]:
    """The blocks of ``input`` (one tensor or a tuple of them) and whether it was a tuple."""
    single = not isinstance(input, (tuple, list))
    xs = [input] if single else list(input)
    if not xs:
        raise TypeError(f"{what} takes at least one block")
    for x in xs:
        if not is_block(x):
            raise TypeError(f"{what} expects blocks, got {x!r}")
    return xs, single


def _axis(axis, rank: int, what: str) -> int:
    if type(axis) is not int:
        raise TypeError(f"{what}: axis must be a constexpr int, got {axis!r}")
    if not -rank <= axis < rank:
        raise ValueError(f"{what}: axis {axis} is out of range for a rank-{rank} block")
    return axis % rank


def _combine_op(op: str, xs: list[tensor], combine_fn, what: str, **attrs) -> list[tensor]:
    from ..frontend.codegen import trace_combine
    b = current_builder()
    types = [x.dtype for x in xs]
    tree = trace_combine(b, combine_fn, types * 2, what)
    return [tensor(n) for n in b.multi(op, [x.node for x in xs], dict(attrs, combine=tree))]


@builtin
def reduce(input, axis, combine_fn, keep_dims=False):
    """Reduce ``input`` (a block or a tuple of blocks of one shape) along ``axis`` (None: all axes)
    with ``combine_fn``, a ``@jit`` function of 2N scalars (the N values of one side, then the
    other's) returning N; the result is a tuple when ``input`` is."""
    what = "tl.reduce"
    xs, single = _inputs(input, what)
    rank = len(xs[0].shape)
    axes = list(builtins.range(rank - 1, -1, -1)) if axis is None else [_axis(axis, rank, what)]
    for a in axes:        # axis=None: the last axis first, so values combine in row-major order
        xs = _combine_op("reduce", xs, combine_fn, what, axis=a)
    if keep_dims:
        xs = [make("expand_dims", x, axis=axes[0]) if is_block(x) else make("full", x, shape=(1,) * rank, dtype=x.dtype)
              for x in xs]
    return xs[0] if single else tuple(xs)


@builtin
def associative_scan(input, axis, combine_fn, reverse=False):
    """The inclusive scan of ``input`` (a block or a tuple of blocks of one shape) along ``axis``:
    element i combines elements 0..i in order (i..n-1 from the end when ``reverse``)."""
    what = "tl.associative_scan"
    xs, single = _inputs(input, what)
    a = _axis(axis, len(xs[0].shape), what)
    if type(reverse) is not bool:
        raise TypeError(f"{what}: reverse must be a constexpr bool, got {reverse!r}")
    out = _combine_op("scan", xs, combine_fn, what, axis=a, reverse=reverse)
    return out[0] if single else tuple(out)


def _internal(fn):
    """A combine function of the language itself (traced like a ``@jit`` one)."""
    fn.__mytriton_combine__ = True
    return fn


@_internal
def _sum_combine(a, b):
    return a + b


@_internal
def _prod_combine(a, b):
    return a * b


def _promote_bf16(x: tensor) -> tensor:
    return x.to(F32) if x.dtype == BF16 else x


@builtin
def cumsum(input, axis=0, reverse=False, dtype=None):
    """As Triton's: in ``dtype`` when given, else narrow integers in 32 bits (``ops.sum_type``)."""
    x = _promote_bf16(to_tensor(input))
    out_dtype = sum_type(x.dtype) if dtype is None else dtype
    if out_dtype != x.dtype:
        x = x.to(out_dtype)
    return associative_scan(x, axis, _sum_combine, reverse)


@builtin
def cumprod(input, axis=0, reverse=False):
    return associative_scan(_promote_bf16(to_tensor(input)), axis, _prod_combine, reverse)


def _arg_combine(greater: bool, tie_break_left: bool):
    @_internal
    def combine(value1, index1, value2, index2):
        first = value1 > value2 if greater else value1 < value2
        if tie_break_left:
            first = first | ((value1 == value2) & (index1 < index2))
        return make("where", first, value1, value2), make("where", first, index1, index2)
    return combine


def reduce_with_indices(input, axis, greater: bool, tie_break_left: bool, keep_dims: bool):
    """(max or min, its index) along ``axis``, as Triton's ``_reduce_with_indices``: ties go to the
    lowest index when ``tie_break_left`` (else to either); a NaN never wins a comparison."""
    x = _promote_bf16(to_tensor(input))
    if not is_block(x):
        raise TypeError(f"expects a block, got {x!r}")
    rank = len(x.shape)
    if axis is None:
        raise TypeError("the index of a max or min needs an axis (Triton: axis=None is not supported here)")
    a = _axis(axis, rank, "tl.argmax" if greater else "tl.argmin")
    index = make("arange", start=0, end=x.shape[a])
    for d in builtins.range(rank):
        if d != a:
            index = make("expand_dims", index, axis=d)
    index = make("broadcast", index, shape=x.shape)
    return reduce((x, index), a, _arg_combine(greater, tie_break_left), keep_dims=keep_dims)


@builtin
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    return reduce_with_indices(input, axis, True, tie_break_left, keep_dims)[1]


@builtin
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    return reduce_with_indices(input, axis, False, tie_break_left, keep_dims)[1]

"""``tl.sort`` and ``tl.topk`` with Triton 3.6's signatures: a bitonic sorting network along the last
dimension, built from the language's own ops. The block is viewed as a hypercube (the sorted
dimension's index bits each an axis of size 2); a compare-exchange along index bit j reads its
partner exactly by xor-ing the element's bits with the xor of both (``tl.xor_sum`` along that
axis), then keeps the smaller or the larger as the element's side and the order of its block say.
The backends see reshapes, reductions along size-2 axes and selects: nothing new to lower."""
from __future__ import annotations

import builtins

from .core import builtin, make, to_tensor
from ..ir.types import SCALARS

__all__ = ["sort", "topk", "bitonic_merge"]


def _log2(n: int, what: str) -> int:
    if n < 1 or n & (n - 1):
        raise ValueError(f"{what} must be a power of 2, got {n}")
    return n.bit_length() - 1


def _bit_of_index(rank: int, axis: int):
    """0 or 1 along ``axis`` of a hypercube of ``rank`` size-2 axes (broadcast along the others)."""
    bit = make("arange", start=0, end=2)
    for d in builtins.range(rank):
        if d != axis:
            bit = make("expand_dims", bit, axis=d)
    return bit


def _as_bits(x):
    """``x``'s bits as the signed integer of its width (integers stay as they are)."""
    return x if x.dtype.is_int else x.to(SCALARS[f"i{x.dtype.bits}"], bitcast=True)


def _compare_exchange(h, lead: int, m: int, j: int, order):
    """One step of the network on the hypercube ``h`` (``lead`` leading axes, then the m index bits,
    the highest first): elements whose indices differ in bit ``j`` meet; ``order`` (a Python bool,
    or a 0/1 block that broadcasts) is 1 where their block sorts descending. The element whose bit
    j is 0 keeps the smaller value of an ascending block, the other the larger."""
    from . import where, xor_sum
    axis = lead + m - 1 - j
    bits = _as_bits(h)
    other = bits ^ xor_sum(bits, axis, keep_dims=True)        # the partner's bits, exactly
    y = other if h.dtype.is_int else other.to(h.dtype, bitcast=True)
    right = _bit_of_index(lead + m, axis)
    flip = right ^ 1 if order is True else right if order is False else right ^ order
    return where((h > y) != (flip != 0), y, h)


def _network(x, k: int, descending: bool):
    """The sorted (descending: reversed) last dimension, its first ``k`` elements."""
    from . import where, xor_sum
    if not x.shape:
        raise TypeError("tl.sort and tl.topk need a block")
    if x.dtype.is_bool or x.dtype.is_fp8:
        raise TypeError(f"tl.sort and tl.topk do not take {x.dtype} blocks (convert them first)")
    n = x.shape[-1]
    m = _log2(n, "the sorted dimension's size")
    lead = len(x.shape) - 1
    h = make("reshape", x, shape=(*x.shape[:-1], *([2] * m))) if m else x
    for stage in builtins.range(1, m + 1):
        # blocks of 2**stage, each sorted by its index bit `stage` (alternately up and down: bitonic
        # halves for the next stage), the last stage as asked; descending mirrors every direction
        if stage == m:
            order = descending
        else:
            order = _bit_of_index(lead + m, lead + m - 1 - stage)
            order = order ^ 1 if descending else order
        for j in builtins.range(stage - 1, -1, -1):
            h = _compare_exchange(h, lead, m, j, order)
    out = make("reshape", h, shape=tuple(x.shape)) if m else h
    if k == n:
        return out
    # the first k of the sorted dimension: row 0 of (n / k, k), picked exactly by xor-ing its bits
    rows = make("reshape", out, shape=(*x.shape[:-1], n // k, k))
    first = make("expand_dims", make("arange", start=0, end=n // k), axis=1)
    for _ in builtins.range(lead):
        first = make("expand_dims", first, axis=0)
    kept = xor_sum(where(first == 0, _as_bits(rows), 0), lead)
    return kept if x.dtype.is_int else kept.to(x.dtype, bitcast=True)


@builtin
def sort(x, dim=None, descending=False):
    """``x`` sorted along its last dimension (``dim`` must be that one, as in Triton), ascending
    unless ``descending``; NaNs compare as Triton's network compares them (false both ways)."""
    x = to_tensor(x)
    rank = len(x.shape)
    if dim is not None and (type(dim) is not int or dim % max(rank, 1) != rank - 1):
        raise ValueError(f"tl.sort: only the last dimension can be sorted (dim={dim!r} of a rank-{rank} block)")
    if not isinstance(descending, (bool, int)):
        raise TypeError(f"tl.sort: descending must be a constexpr bool, got {descending!r}")
    return _network(x, x.shape[-1] if rank else 1, bool(descending))


@builtin
def topk(x, k, dim=None):
    """The ``k`` largest elements along the last dimension, largest first (``k`` a power of 2)."""
    x = to_tensor(x)
    rank = len(x.shape)
    if dim is not None and (type(dim) is not int or dim % max(rank, 1) != rank - 1):
        raise ValueError(f"tl.topk: only the last dimension is supported (dim={dim!r} of a rank-{rank} block)")
    if type(k) is not int or not 1 <= k <= (x.shape[-1] if rank else 1):
        raise ValueError(f"tl.topk: k must be a constexpr int from 1 to the dimension's size, got {k!r}")
    _log2(k, "tl.topk's k")
    return _network(x, k, True)


@builtin
def bitonic_merge(x, dim=None, descending=0):
    """Triton's last stage of a bitonic sort along the last dimension: ``x``'s rows, each a bitonic
    sequence (ascending then descending, or a rotation of one), merged into sorted order
    (``descending``: largest first)."""
    x = to_tensor(x)
    rank = len(x.shape)
    if not rank:
        raise TypeError("tl.bitonic_merge needs a block")
    if dim is not None and (type(dim) is not int or dim % rank != rank - 1):
        raise ValueError("only minor dimension is currently supported")
    if descending not in (0, 1) or type(descending) not in (bool, int):
        raise ValueError(f"tl.bitonic_merge: descending must be a constexpr bool (or 0 or 1), got {descending!r}")
    m = _log2(x.shape[-1], "the merged dimension's size")
    lead = rank - 1
    h = make("reshape", x, shape=(*x.shape[:-1], *([2] * m))) if m else x
    for j in builtins.range(m - 1, -1, -1):
        h = _compare_exchange(h, lead, m, j, bool(descending))
    return make("reshape", h, shape=tuple(x.shape)) if m else h

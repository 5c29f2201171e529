"""Shape ops with Triton 3.6's signatures: ``tl.reshape`` / ``tl.view`` / ``tl.ravel``, ``tl.join``,
``tl.split``, ``tl.interleave``, ``tl.cat``, ``tl.flip`` and ``tl.broadcast``. Each result element is
one operand element; the CUDA backend moves them through shared memory (``reshape`` keeps the
row-major order, so ``can_reorder`` is accepted and changes nothing)."""
from __future__ import annotations

import builtins

from .core import builtin, current_builder, is_block, make, tensor, to_tensor

__all__ = ["reshape", "view", "ravel", "join", "split", "interleave", "cat", "flip", "broadcast", "gather"]


def _shape_arg(shape) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    for d in shape:
        if type(d) is not int:
            raise TypeError(f"reshape: the shape must be constexpr ints, got {list(shape)}")
    return tuple(shape)


@builtin
def reshape(input, *shape, can_reorder=False):
    """``input``'s elements in row-major order, in ``shape`` (a 1-element block may become a
    scalar with ``shape=()``)."""
    x = to_tensor(input)
    shape = _shape_arg(shape)
    if tuple(x.shape) == shape:
        return x
    if not shape:
        if x.numel != 1:
            raise ValueError(f"reshape: only a block of one element becomes a scalar, got shape {list(x.shape)}")
        return make("reshape", x, shape=(1,)).item() if is_block(x) else x
    if not is_block(x):
        return make("full", x, shape=shape, dtype=x.dtype) if builtins.all(d == 1 for d in shape) else \
            make("reshape", x, shape=shape)
    return make("reshape", x, shape=shape)


@builtin
def view(input, *shape):
    """Deprecated in Triton: ``reshape(input, shape, can_reorder=True)``."""
    return reshape(input, *shape, can_reorder=True)


@builtin
def ravel(x, can_reorder=False):
    x = to_tensor(x)
    return reshape(x, [x.numel], can_reorder=can_reorder)


@builtin
def broadcast(input, other):
    """``input`` and ``other`` broadcast to their common shape, as Triton's ``tl.broadcast``."""
    from ..ir.types import broadcast_shapes
    a, b = to_tensor(input), to_tensor(other)
    rank = builtins.max(len(a.shape), len(b.shape))        # a lower rank gains leading axes
    shape = broadcast_shapes((1,) * (rank - len(a.shape)) + tuple(a.shape), (1,) * (rank - len(b.shape)) + tuple(b.shape))
    if shape is None:
        raise ValueError(f"cannot broadcast shapes {list(a.shape)} and {list(b.shape)} together")

    def to(x):
        if tuple(x.shape) == shape or not shape:
            return x
        while is_block(x) and len(x.shape) < len(shape):
            x = make("expand_dims", x, axis=0)
        return make("broadcast", x, shape=shape)
    return to(a), to(b)


@builtin
def join(a, b):
    """A new minor dimension of size 2: ``join(a, b)[..., 0]`` is ``a``, ``[..., 1]`` is ``b`` (the two
    broadcast to one shape first; scalars give a block of 2)."""
    a, b = broadcast(a, b)
    if a.dtype != b.dtype:
        raise TypeError(f"join: both inputs must have the same dtype, got {a.dtype} and {b.dtype}")
    return make("join", a, b)


@builtin
def split(a):
    """The two halves of a minor dimension of size 2: ``(a[..., 0], a[..., 1])``."""
    x = to_tensor(a)
    return tuple(tensor(n) for n in current_builder().multi("split", [x.node], {}))


@builtin
def interleave(a, b):
    """``a`` and ``b`` interleaved along their last dimension: ``reshape(join(a, b), ..., 2 * n)``."""
    c = join(a, b)
    if len(c.shape) == 1:
        return c
    return reshape(c, list(c.shape[:-2]) + [2 * c.shape[-2]])


@builtin
def cat(input, other, can_reorder=False):
    """``input``'s elements, then ``other``'s, along the first dimension (Triton may reorder
    elements and asks for ``can_reorder=True``; mytriton keeps the order either way)."""
    return make("cat", to_tensor(input), to_tensor(other))


@builtin
def flip(x, dim=None):
    """``x`` reversed along ``dim`` (the last dimension when None)."""
    x = to_tensor(x)
    rank = len(x.shape)
    dim = rank - 1 if dim is None else dim
    if type(dim) is not int or not -rank <= dim < rank:
        raise ValueError(f"flip: dim {dim!r} is out of range for a rank-{rank} block")
    return make("flip", x, dim=dim % rank)


@builtin
def gather(src, index, axis):
    """``out[i] = src[i with i[axis] replaced by index[i]]``: the result has ``index``'s shape, which
    agrees with ``src``'s on every dimension but ``axis`` (as ``torch.gather``)."""
    x, idx = to_tensor(src), to_tensor(index)
    if type(axis) is not int or not -len(x.shape) <= axis < len(x.shape):
        raise ValueError(f"tl.gather: axis {axis!r} is out of range for a rank-{len(x.shape)} block")
    return make("gather", x, idx, axis=axis % len(x.shape))

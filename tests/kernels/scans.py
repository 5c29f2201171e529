"""Kernels of tests/test_scan.py: scans and reductions by combine functions, as Triton's tests and
tutorials write them."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def first(a, b):
    """Associative, not commutative: a scan gives every element the first (last, reversed) one."""
    return a


@triton.jit
def linear_recurrence(a1, b1, a2, b2):
    """x_i = a_i * x_{i-1} + b_i."""
    return a1 * a2, b1 * a2 + b2


@triton.jit
def cummax(v0, i0, v1, i1):
    gt = v0 > v1
    return tl.where(gt, v0, v1), tl.where(gt, i0, i1)


@triton.jit
def scan_kernel(X, Y, Z, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr,
                OP: tl.constexpr):
    rm, rn = tl.arange(0, M), tl.arange(0, N)
    offs = rm[:, None] * N + rn[None, :]
    x = tl.load(X + offs)
    if OP == "cumsum":
        z = tl.cumsum(x, axis=AXIS, reverse=REVERSE)
    elif OP == "cumprod":
        z = tl.cumprod(x, axis=AXIS, reverse=REVERSE)
    elif OP == "first":
        z = tl.associative_scan(x, axis=AXIS, combine_fn=first, reverse=REVERSE)
    elif OP == "recurrence":
        _, z = tl.associative_scan((x, tl.load(Y + offs)), axis=AXIS, combine_fn=linear_recurrence, reverse=REVERSE)
    else:
        rg = rm[:, None] if AXIS == 0 else rn[None, :]
        _, z = tl.associative_scan((x, tl.broadcast_to(rg.to(tl.int64), [M, N])), axis=AXIS, combine_fn=cummax,
                                   reverse=REVERSE)
    tl.store(Z + offs, z)


@triton.jit
def scan_1d(X, Z, N: tl.constexpr, REVERSE: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(Z + r, tl.cumsum(tl.load(X + r), 0, reverse=REVERSE))


@triton.jit
def arg_kernel(X, V, I, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr, GREATER: tl.constexpr,
               LEFT: tl.constexpr):
    """max/min with its index along AXIS (tl.max(..., return_indices=True)), and tl.argmax/argmin."""
    rm, rn = tl.arange(0, M), tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    if GREATER:
        v, i = tl.max(x, axis=AXIS, return_indices=True, return_indices_tie_break_left=LEFT)
        j = tl.argmax(x, AXIS, tie_break_left=LEFT)
    else:
        v, i = tl.min(x, axis=AXIS, return_indices=True, return_indices_tie_break_left=LEFT)
        j = tl.argmin(x, AXIS, tie_break_left=LEFT)
    r = tl.arange(0, N if AXIS == 0 else M)
    tl.store(V + r, v)
    tl.store(I + r, i)
    tl.store(I + r + (N if AXIS == 0 else M), j)


@triton.jit
def sum_and_max(a0, a1, b0, b1):
    return a0 + b0, tl.maximum(a1, b1)


@triton.jit
def reduce_kernel(X, Z, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr, KEEP: tl.constexpr):
    """Two reductions at once by one combine function (AXIS None: over the whole block)."""
    rm, rn = tl.arange(0, M), tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    s, m = tl.reduce((x, x * 2), AXIS, sum_and_max, keep_dims=KEEP)
    if KEEP:                     # (a kept dimension of size 1 reduces away again)
        s, m = tl.sum(s, AXIS), tl.max(m, AXIS)
    if AXIS is None:
        tl.store(Z, s)
        tl.store(Z + 1, m)
    else:
        r = tl.arange(0, N if AXIS == 0 else M)
        tl.store(Z + r, s)
        tl.store(Z + (N if AXIS == 0 else M) + r, m)

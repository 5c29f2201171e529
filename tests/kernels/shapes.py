"""Kernels of tests/test_shape_ops.py: Triton's shape ops, one kernel per op, row-major blocks."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def reshape_kernel(X, Z, M: tl.constexpr, N: tl.constexpr, P: tl.constexpr, Q: tl.constexpr):
    """(M, N) -> (P, Q), and the same through x.reshape / tl.ravel / tl.view."""
    x = tl.load(X + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    y = tl.reshape(x, (P, Q))
    tl.store(Z + tl.arange(0, P)[:, None] * Q + tl.arange(0, Q)[None, :], y)
    tl.store(Z + M * N + tl.arange(0, M * N), tl.ravel(x.reshape(P, Q)))
    tl.store(Z + 2 * M * N + tl.arange(0, M * N), tl.view(y, [M * N]))


@triton.jit
def join_split_kernel(A, B, Z, N: tl.constexpr):
    """join (N, 2), interleave (2N), and split of the join back into a and b."""
    r = tl.arange(0, N)
    a, b = tl.load(A + r), tl.load(B + r)
    j = tl.join(a, b)
    tl.store(Z + r[:, None] * 2 + tl.arange(0, 2)[None, :], j)
    tl.store(Z + 2 * N + tl.arange(0, 2 * N), tl.interleave(a, b))
    x, y = tl.split(j)
    tl.store(Z + 4 * N + r, x)
    tl.store(Z + 5 * N + r, y)


@triton.jit
def cat_flip_kernel(A, B, Z, M: tl.constexpr, N: tl.constexpr):
    """cat of a and b, each read as one row of M * N (Triton's tl.cat takes 1-d blocks); flip of a
    along dims 0 and 1."""
    rm, rn, r = tl.arange(0, M), tl.arange(0, N), tl.arange(0, M * N)
    a = tl.load(A + rm[:, None] * N + rn[None, :])
    c = tl.cat(tl.load(A + r), tl.load(B + r), can_reorder=True)
    tl.store(Z + tl.arange(0, 2 * M * N), c)
    tl.store(Z + 2 * M * N + rm[:, None] * N + rn[None, :], tl.flip(a, 0))
    tl.store(Z + 3 * M * N + rm[:, None] * N + rn[None, :], a.flip(1))


@triton.jit
def split_scalars_kernel(Z):
    """A (2,) block splits into two scalars."""
    a, b = tl.split(tl.arange(0, 2) + 5)
    tl.store(Z, a * 10 + b)


@triton.jit
def broadcast_join_kernel(X, Y, Z, M: tl.constexpr, N: tl.constexpr):
    """tl.broadcast of an (M, N) and an (N,) block; tl.join of two scalars."""
    rm, rn = tl.arange(0, M), tl.arange(0, N)
    a, b = tl.broadcast(tl.load(X + rm[:, None] * N + rn[None, :]), tl.load(X + rn))
    tl.static_assert(a.shape == [M, N] and b.shape == [M, N])
    tl.store(Z + rm[:, None] * N + rn[None, :], a * 100 + b)
    tl.store(Z + M * N + tl.arange(0, 2), tl.join(tl.load(Y), tl.load(Y + 1)))


@triton.jit
def gather_kernel(S, I, O, SM: tl.constexpr, SN: tl.constexpr, IM: tl.constexpr, IN: tl.constexpr,
                  AXIS: tl.constexpr):
    """out = tl.gather(src (SM, SN), index (IM, IN), AXIS), everything row-major."""
    src = tl.load(S + tl.arange(0, SM)[:, None] * SN + tl.arange(0, SN)[None, :])
    offs = tl.arange(0, IM)[:, None] * IN + tl.arange(0, IN)[None, :]
    tl.store(O + offs, tl.gather(src, tl.load(I + offs), AXIS))


@triton.jit
def sort_kernel(X, Z, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, DESCENDING: tl.constexpr,
                TOPK: tl.constexpr):
    """Each row of an (M, N) block sorted (or its top K), row-major."""
    x = tl.load(X + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    if TOPK:
        y = tl.topk(x, K)
    else:
        y = tl.sort(x, descending=DESCENDING)
    tl.store(Z + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :], y)


@triton.jit
def index_like_triton_kernel(X, Z, N: tl.constexpr):
    """Triton's indexing: an index need not name every dimension (x[None] on a vector), a ':'
    past the last one changes nothing, a scalar pointer indexed with None is a tile of one; a whole
    tile summed with keep_dims is (1, 1)."""
    x = tl.load(X + tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :])
    row = tl.load(X + tl.arange(0, N))
    tl.store(Z + tl.arange(0, N)[None, :], row[None] * 2)
    tl.store(Z + N + tl.arange(0, N)[:, None, :], row[:, None, :] * 3)
    total = tl.sum(x, axis=None, keep_dims=True)
    tl.static_assert(total.shape == [1, 1])
    tl.store((Z + 2 * N)[None, None, :], total)
    tl.store((Z + 2 * N + 1)[None], tl.max(row, axis=0, keep_dims=True))

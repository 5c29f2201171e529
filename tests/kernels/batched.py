"""Kernels of the batched (3-d) tl.dot tests, written as Triton's own test of it is."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def dot3d(Q, K, O, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, KK: tl.constexpr, PRECISION: tl.constexpr,
          OUT: tl.constexpr):
    ob, om, on, ok = tl.arange(0, B), tl.arange(0, M), tl.arange(0, N), tl.arange(0, KK)
    q = tl.load(Q + ob[:, None, None] * M * KK + om[None, :, None] * KK + ok[None, None, :])
    k = tl.load(K + ob[:, None, None] * KK * N + ok[None, :, None] * N + on[None, None, :])
    o = tl.dot(q, k, input_precision=PRECISION, out_dtype=OUT)
    tl.store(O + ob[:, None, None] * M * N + om[None, :, None] * N + on[None, None, :], o)


@triton.jit
def dot4d(A, B, O, M: tl.constexpr):
    """(2, 2, M, M) @ (2, 2, M, M): two batch dimensions."""
    i, m = tl.arange(0, 2), tl.arange(0, M)
    offs = (i[:, None, None, None] * 2 * M * M + i[None, :, None, None] * M * M + m[None, None, :, None] * M
            + m[None, None, None, :])
    tl.store(O + offs, tl.dot(tl.load(A + offs), tl.load(B + offs), input_precision="ieee"))


@triton.jit
def precision_dot(A, B, O, M: tl.constexpr, PRECISION: tl.constexpr):
    m = tl.arange(0, M)
    offs = m[:, None] * M + m[None, :]
    tl.store(O + offs, tl.dot(tl.load(A + offs), tl.load(B + offs), input_precision=PRECISION))

"""Kernels whose values take many layouts: reductions along each axis and over the whole tile, slices
broadcast back (``[:, None]``), tiles smaller than the thread block (replicated), and results that
change layout (``convert_layout`` through shared memory)."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def reduce_2d(x_ptr, rows_ptr, cols_ptr, total_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(x_ptr + offs_m[:, None] * N + offs_n[None, :], mask=mask, other=0.0)
    tl.store(rows_ptr + offs_m, tl.sum(x, axis=1), mask=offs_m < M)
    tl.store(cols_ptr + offs_n, tl.max(x, axis=0), mask=offs_n < N)
    tl.store(total_ptr, tl.sum(x))


@triton.jit
def center_and_scale(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(x_ptr + offs_m[:, None] * N + offs_n[None, :], mask=mask, other=0.0)
    y = x - (tl.sum(x, axis=1) / N)[:, None]
    col = tl.sum(tl.where(mask, y, 0.0), axis=0)
    tl.store(out_ptr + offs_m[:, None] * N + offs_n[None, :], y * col[None, :], mask=mask)


@triton.jit
def column_sums_plus_index(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(x_ptr + offs_m[:, None] * N + offs_n[None, :], mask=mask, other=0.0)
    col = tl.sum(x, axis=0)
    idx = tl.arange(0, BN)
    tl.store(out_ptr + idx, col + idx.to(tl.float32), mask=idx < N)
    row = tl.max(x, axis=1)
    tl.store(out_ptr + BN + offs_m, row * 2.0, mask=offs_m < M)

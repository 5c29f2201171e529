"""Reductions: a long-row sum with a run-time loop, and a column max over 2-D tiles."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def row_sum_kernel(x, out, n_cols, BLOCK: tl.constexpr):
    """out[row] = sum(x[row, :]) for rows of any length: BLOCK columns per loop iteration."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        acc += tl.load(x + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.store(out + row, tl.sum(acc, axis=0))


@triton.jit
def col_max_kernel(x, out, n_rows, n_cols, BM: tl.constexpr, BN: tl.constexpr):
    """out[col] = max(x[:, col]): each program owns BN columns and walks the rows BM at a time."""
    pid = tl.program_id(0)
    rows = tl.arange(0, BM)
    cols = pid * BN + tl.arange(0, BN)
    acc = tl.full((BN,), -float("inf"), tl.float32)
    for start in range(0, n_rows, BM):
        r = start + rows
        mask = (r[:, None] < n_rows) & (cols[None, :] < n_cols)
        tile = tl.load(x + r[:, None] * n_cols + cols[None, :], mask=mask, other=-float("inf"))
        acc = tl.maximum(acc, tl.max(tile, axis=0))
    tl.store(out + cols, acc, mask=cols < n_cols)

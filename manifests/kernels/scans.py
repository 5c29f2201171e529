"""Row-wise scans and arg-reductions: one program per row (benchmarks/bench.py's "scans" group)."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def row_cumsum_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
    tl.store(y_ptr + row * n_cols + offs, tl.cumsum(x, 0), mask=mask)


@triton.jit
def row_argmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=-float("inf"))
    tl.store(out_ptr + row, tl.argmax(x, 0))

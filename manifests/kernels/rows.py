"""Row-wise kernels of the kind models are made of:

- ``softmax_rows_kernel``: softmax of each row of an n_rows × n_cols matrix by a fixed number of
  persistent programs, program p taking rows p, p + P, p + 2P, ... (P = tl.num_programs(0): a
  run-time loop step); BLOCK is a power of 2 >= n_cols; the rows are pipelined STAGES deep;
- ``layer_norm_fwd_kernel``: y = (x - mean) * rstd * w + b per row, one program per row, the row
  walked BLOCK columns at a time in three passes (sum, squared deviations, output), statistics in
  fp32 whatever the data type, mean and rstd stored for a backward pass.
"""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def softmax_rows_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols, BLOCK: tl.constexpr,
                        STAGES: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    inside = cols < n_cols
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=STAGES):
        x = tl.load(in_ptr + row * in_row_stride + cols, mask=inside, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * out_row_stride + cols, e / tl.sum(e, axis=0), mask=inside)


@triton.jit
def layer_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, row_stride, n_cols, eps,
                          BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride
    partial = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        partial += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(partial, axis=0) / n_cols
    squares = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        deviation = tl.where(cols < n_cols, x - mean, 0.0)
        squares += deviation * deviation
    rstd = 1 / tl.sqrt(tl.sum(squares, axis=0) / n_cols + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        inside = cols < n_cols
        w = tl.load(w_ptr + cols, mask=inside)
        b = tl.load(b_ptr + cols, mask=inside)
        x = tl.load(x_row + cols, mask=inside, other=0.0).to(tl.float32)
        tl.store(y_row + cols, ((x - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=inside)

"""Row softmax: one program per row of an n_rows × n_cols fp32 matrix (row-major, row stride =
n_cols); BLOCK must be a power of 2 >= n_cols."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def softmax_kernel(x, y, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    values = tl.load(x + row * n_cols + cols, mask=mask, other=-float("inf"))
    shifted = values - tl.max(values, axis=0)
    numerator = tl.exp(shifted)
    denominator = tl.sum(numerator, axis=0)
    tl.store(y + row * n_cols + cols, numerator / denominator, mask=mask)

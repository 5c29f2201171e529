"""Kernels of tests/test_extras.py: bitwise reductions, clamp, swizzle2d, softmax, device_print,
propagate_nan, histogram, device_assert."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def bit_reduce(x_ptr, out_ptr, KIND: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr):
    """Per row (axis 1), per column (axis 0) and whole: xor_sum or reduce_or by KIND."""
    r, c = tl.arange(0, ROWS), tl.arange(0, COLS)
    x = tl.load(x_ptr + r[:, None] * COLS + c[None, :])
    if KIND == "xor":
        rows, cols, whole = tl.xor_sum(x, 1), tl.xor_sum(x, 0), tl.xor_sum(x)
    else:
        rows, cols, whole = tl.reduce_or(x, 1), tl.reduce_or(x, 0), tl.reduce_or(x, None)
    tl.store(out_ptr + r, rows)
    tl.store(out_ptr + ROWS + c, cols)
    tl.store(out_ptr + ROWS + COLS, whole)


@triton.jit
def clamp_kernel(x_ptr, out_ptr, lo, hi, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.clamp(tl.load(x_ptr + offs, mask=mask), lo, hi), mask=mask)


@triton.jit
def swizzle_kernel(out_ptr, size_i, size_j, SIZE_G: tl.constexpr, BLOCK: tl.constexpr):
    """Each (i, j) of the grid, flattened: its swizzled i and j."""
    k = tl.arange(0, BLOCK)
    mask = k < size_i * size_j
    i, j = tl.swizzle2d(k // size_j, k % size_j, size_i, size_j, SIZE_G)
    tl.store(out_ptr + k, i, mask=mask)
    tl.store(out_ptr + BLOCK + k, j, mask=mask)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, DIM: tl.constexpr, KEEP: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    r, c = tl.arange(0, M), tl.arange(0, N)
    x = tl.load(x_ptr + r[:, None] * N + c[None, :])
    tl.store(out_ptr + r[:, None] * N + c[None, :], tl.softmax(x, DIM, KEEP))


@triton.jit
def rank_broadcast(x_ptr, v_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    """(M, N) with (N,): the lower-rank block gains a leading axis, as in Triton."""
    r, c = tl.arange(0, M), tl.arange(0, N)
    x = tl.load(x_ptr + r[:, None] * N + c[None, :])
    v = tl.load(v_ptr + c)
    tl.store(out_ptr + r[:, None] * N + c[None, :], tl.where(x > v, x - v, v * 2.0))


@triton.jit
def print_kernel(x_ptr, n, HEX: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.device_print("x: %s", x, hex=HEX)
    tl.device_print("two", offs, tl.program_id(0))


@triton.jit
def nan_kernel(x_ptr, y_ptr, out_ptr, n, MODE: tl.constexpr, BLOCK: tl.constexpr):
    """tl.maximum / tl.minimum / tl.clamp with propagate_nan=tl.PropagateNan.<MODE>."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x, y = tl.load(x_ptr + offs, mask=mask), tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, y, propagate_nan=getattr(tl.PropagateNan, MODE)), mask=mask)
    tl.store(out_ptr + n + offs, tl.minimum(x, y, propagate_nan=getattr(tl.PropagateNan, MODE)), mask=mask)
    tl.store(out_ptr + 2 * n + offs, tl.clamp(x, -1.0, 1.0, propagate_nan=getattr(tl.PropagateNan, MODE)), mask=mask)


@triton.jit
def histogram_kernel(x_ptr, out_ptr, n, M: tl.constexpr, BINS: tl.constexpr, MASKED: tl.constexpr):
    offs = tl.arange(0, M)
    x = tl.load(x_ptr + offs)
    h = tl.histogram(x, BINS, mask=offs < n) if MASKED else tl.histogram(x, BINS)
    tl.store(out_ptr + tl.arange(0, BINS), h)


@triton.jit(debug=True)
def assert_kernel(x_ptr, n, BLOCK: tl.constexpr):
    """Adds 1 to each element, asserting (in debug builds) that it is not negative."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.device_assert(x >= 0, "x must not be negative: %s \" */", mask=offs < n)
    tl.store(x_ptr + offs, x + 1, mask=offs < n)


@triton.jit
def assert_off_kernel(x_ptr, n, BLOCK: tl.constexpr):
    """The same without debug: tl.device_assert is nothing."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.device_assert(x >= 0, "x must not be negative")
    tl.store(x_ptr + offs, x + 1, mask=offs < n)

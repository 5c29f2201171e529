"""fp16/bf16 kernels shared by the CPU tests (tests/test_half.py) and the GPU tests
(tests/test_half_gpu.py, which also run them through Triton): the same source everywhere."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, EXPECT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    if OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "div":
        r = x / y
    elif OP == "mod":
        r = x % y
    elif OP == "maximum":
        r = tl.maximum(x, y)
    elif OP == "minimum":
        r = tl.minimum(x, y)
    elif OP == "lt":
        r = x < y
    elif OP == "eq":
        r = x == y
    elif OP == "where":
        r = tl.where(x > 0, x, y)
    elif OP == "neg":
        r = -x
    elif OP == "abs":
        r = tl.abs(x)
    else:                       # "scaled": a Python float constant meets a half tensor
        r = x * 0.1 + 1.5
    tl.static_assert(r.dtype == EXPECT)
    tl.store(out_ptr + offs, r, mask=mask)


@triton.jit
def cast_kernel(x_ptr, out_ptr, n, DTYPE: tl.constexpr, ROUNDING: tl.constexpr, BITCAST: tl.constexpr,
                SPELLING: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if SPELLING == 0:
        z = x.to(DTYPE, fp_downcast_rounding=ROUNDING, bitcast=BITCAST)
    elif SPELLING == 1:
        z = x.cast(DTYPE, fp_downcast_rounding=ROUNDING, bitcast=BITCAST)
    else:
        z = tl.cast(x, DTYPE, fp_downcast_rounding=ROUNDING, bitcast=BITCAST)
    tl.store(out_ptr + offs, z, mask=mask)


@triton.jit
def reduce_kernel(x_ptr, out_ptr, M, N, KIND: tl.constexpr, EXPECT: tl.constexpr, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0)
    if KIND == "sum":
        r = tl.sum(x, axis=1)
    elif KIND == "sum_fp32":
        r = tl.sum(x, axis=1, dtype=tl.float32)
    elif KIND == "max":
        r = tl.max(tl.where(mask, x, float("-inf")), axis=1)
    else:
        r = tl.min(tl.where(mask, x, float("inf")), axis=1)
    tl.static_assert(r.dtype == EXPECT)
    tl.store(out_ptr + rows, r, mask=rows < M)


@triton.jit
def math_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Math on halves the way Triton asks for it: widen to fp32, compute, round back."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    f = x.to(tl.float32)
    r = tl.exp(f) * 0.25 + tl.sqrt(tl.abs(f)) - tl.sin(f) + tl.log(tl.abs(f) + 1.0)
    tl.store(out_ptr + offs, r.to(x.dtype), mask=mask)


@triton.jit
def exp_of_half_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.exp(x))


@triton.jit
def scalar_kernel(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * s + s, mask=mask)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)

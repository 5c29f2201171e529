"""Kernels the compiler tests use (goldens depend on this file's exact text and line numbers)."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def leaky_relu_kernel(x_ptr, out_ptr, n, slope, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.where(x > 0, x, slope * x), mask=mask)


@triton.jit
def factories_kernel(out, value, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    values = tl.zeros((BLOCK,), tl.float32)
    values = values + tl.full([BLOCK], 2.5, tl.float32)
    values = values + tl.full(BLOCK, value, tl.float32)
    tl.store(out + offs, values)


@triton.jit
def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)[:, None]
    offs_n = pid_n * BN + tl.arange(0, BN)[None, :]
    c_offsets = offs_m * N + offs_n
    c_mask = (offs_m < M) & (offs_n < N)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(K):
        a_offsets = offs_m * K + k
        b_offsets = k * N + offs_n
        a_values = tl.load(a + a_offsets, mask=offs_m < M, other=0.0)
        b_values = tl.load(b + b_offsets, mask=offs_n < N, other=0.0)
        acc = acc + a_values * b_values
    tl.store(c + c_offsets, acc, mask=c_mask)


@triton.jit
def swap_kernel(out, n):
    a = 1
    b = 2
    for i in range(n):
        t = a
        a = b
        b = t
    tl.store(out, a)
    tl.store(out + 1, b)


@triton.jit
def nested_kernel(out, m, n):
    total = 0
    count = 0.0
    for i in range(m):
        for j in range(n):
            total = total + i * j
            count = count + 1.0
    tl.store(out, total)
    tl.store(out + 1, count.to(tl.int32))


@triton.jit
def _apply(OP: tl.constexpr, a, b):
    if OP == "add":
        return a + b
    elif OP == "sub":
        return a - b
    elif OP == "mul":
        return a * b
    elif OP == "div":
        return a / b
    elif OP == "floordiv":
        return a // b
    elif OP == "mod":
        return a % b
    elif OP == "and":
        return a & b
    elif OP == "or":
        return a | b
    elif OP == "xor":
        return a ^ b
    elif OP == "shl":
        return a << b
    elif OP == "shr":
        return a >> b
    elif OP == "maximum":
        return tl.maximum(a, b)
    elif OP == "minimum":
        return tl.minimum(a, b)
    elif OP == "cmp_lt":
        return a < b
    elif OP == "cmp_le":
        return a <= b
    elif OP == "cmp_gt":
        return a > b
    elif OP == "cmp_ge":
        return a >= b
    elif OP == "cmp_eq":
        return a == b
    elif OP == "cmp_ne":
        return a != b
    elif OP == "neg":
        return -a
    elif OP == "invert":
        return ~a
    elif OP == "where":
        return tl.where(a > b, a, b)
    elif OP == "cast":
        return a.to(tl.float32)
    else:
        return getattr(tl, OP)(a)


@triton.jit
def op_kernel(a_ptr, b_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=1)
    b = tl.load(b_ptr + offs, mask=mask, other=1)
    tl.store(out_ptr + offs, _apply(OP, a, b), mask=mask)


@triton.jit
def literal_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, (x + 1) // 3 + x % 5, mask=mask)


@triton.jit
def maybe_store(x_ptr, out_ptr):
    """out[0] = 1 when x_ptr is None (a compile-time argument), else out[1] = x[0]."""
    if x_ptr is None:
        tl.store(out_ptr, 1)
    else:
        tl.store(out_ptr + 1, tl.load(x_ptr))

"""Elementwise kernels shipped by manifests/elementwise.yaml (Triton syntax)."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x + y"""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def axpby_kernel(x_ptr, y_ptr, out_ptr, a, b, n, BLOCK: tl.constexpr):
    """out = a * x + b * y, with fp32 scalars a and b"""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a * x + b * y, mask=mask)


@triton.jit
def leaky_relu_kernel(x_ptr, out_ptr, n, slope, BLOCK: tl.constexpr):
    """out = x if x > 0 else slope * x"""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x > 0, x, x * slope), mask=mask)


@triton.jit
def sigmoid_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = 1 / (1 + exp(-x))"""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, 1.0 / (1.0 + tl.exp(-x)), mask=mask)


@triton.jit
def int_ops_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Integer division and remainder with Triton's (C-like, truncating) semantics:
    out = a // b where a and b are both positive and a > b, else (a % b) + (a & 255)."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0)
    b = tl.load(b_ptr + offs, mask=mask, other=1)
    quotient = a // b
    remainder = a % b
    use_quotient = (a > 0) & (b > 0) & (a > b)
    tl.store(out_ptr + offs, tl.where(use_quotient, quotient, remainder + (a & 255)), mask=mask)

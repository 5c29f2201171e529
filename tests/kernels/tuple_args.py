"""Kernels of tests/test_tuple_args.py: tuples as kernel arguments."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def scaled_copy(ptrs, n, BLOCK: tl.constexpr):
    """y = x * s + len(ptrs) (+ 10 where the tuple's last element is not None), through a nested tuple."""
    x, (y, s), extra = ptrs
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x + offs, mask=mask) * s + len(ptrs)
    if extra is not None:
        v += 10
    tl.store(y + offs, v, mask=mask)


@triton.jit
def pick(pair, out, n, BLOCK: tl.constexpr):
    """A tuple indexed with constants and handed to a helper."""
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, total(pair, offs, n) + tl.load(pair[1] + offs, mask=offs < n), mask=offs < n)


@triton.jit
def total(pair, offs, n):
    a, b = pair
    return tl.load(a + offs, mask=offs < n) + tl.load(b + offs, mask=offs < n)

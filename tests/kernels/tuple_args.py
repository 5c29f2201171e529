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
def scaled_copy_indexed(ptrs, n, BLOCK: tl.constexpr):
    """scaled_copy written as Triton 3.6 compiles it: its frontend refuses a nested tuple target
    (``x, (y, s), extra = ptrs``) and ``len`` of a tuple that holds None."""
    x = ptrs[0]
    y = ptrs[1][0]
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x + offs, mask=mask) * ptrs[1][1] + (len(ptrs[1]) + 1)
    if ptrs[2] is not None:
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

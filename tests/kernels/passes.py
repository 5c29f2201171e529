"""Kernels for the optimization-pass tests."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def foldable(out, n):
    offs = tl.arange(0, 16)
    k = (3 + 4) * 2          # Python constant arithmetic
    x = offs * 1 + 0         # identities: folded away, type kept
    y = n * 0 + k            # scalar: folds to 14 + nothing? no: n*0 is int -> folded to 0
    tl.store(out + x, (x + y).to(tl.float32) * 1.0)


@triton.jit
def duplicated(x_ptr, out, n):
    offs = tl.arange(0, 64)
    a = tl.load(x_ptr + offs, mask=offs < n)
    b = tl.load(x_ptr + offs, mask=offs < n)
    unused = tl.load(x_ptr + offs + 1, mask=offs < n)
    tl.store(out + offs, a + b, mask=offs < n)


@triton.jit
def invariant_in_loop(x_ptr, out, n, stride):
    offs = tl.arange(0, 64)
    acc = tl.zeros((64,), tl.float32)
    dead = tl.zeros((64,), tl.float32)
    for i in range(n):
        base = stride * 4 + 1            # invariant: hoisted
        rows = offs * stride             # invariant block arithmetic: hoisted
        acc += tl.load(x_ptr + rows + base + i)
        dead = dead + 1.0                # a carried lane nobody reads: dropped
    tl.store(out + offs, acc)


@triton.jit
def dead_loop(x_ptr, out, n):
    total = 0.0
    for i in range(n):
        total = total + tl.load(x_ptr + i)
    tl.store(out, 1.0)


@triton.jit
def cse_across_loop(x_ptr, out, n, m):
    offs = tl.arange(0, 32)
    acc = tl.zeros((32,), tl.float32)
    for i in range(n):
        acc += tl.load(x_ptr + offs * m)
    tl.store(out + offs * m, acc)


@triton.jit
def invariant_load(x_ptr, scale_ptr, out, n):
    offs = tl.arange(0, 64)
    acc = tl.zeros((64,), tl.float32)
    for i in range(n):
        scale = tl.load(scale_ptr)                       # uniform and invariant: hoisted, guarded
        acc += tl.load(x_ptr + i * 64 + offs) * scale
    tl.store(out + offs, acc)


@triton.jit
def load_after_store(x_ptr, out, n):
    for i in range(n):
        v = tl.load(x_ptr)                               # the loop stores: must stay
        tl.store(out + i, v)

"""Kernels of tests/test_noinline.py: @jit(noinline=True) helpers, called as device functions of
their own (scalar arguments and results) or inlined (block arguments)."""
import mytriton as triton
import mytriton.language as tl


@triton.jit(noinline=True)
def add_one(x):
    return x + 1


@triton.jit(noinline=True)
def add_two(x):
    return x + 2


@triton.jit(noinline=True)
def branchy(x, y, Z):
    """Device functions calling device functions under run-time conditions."""
    if x >= 1:
        x = add_one(x)
    else:
        x = add_two(x)
    if y >= 2:
        y = add_two(y)
    else:
        y = add_one(y)
    tl.store(Z, x + y)


@triton.jit(noinline=True)
def two_values(x, y):
    return x + 1, y * 2


@triton.jit(noinline=True)
def tile_work(x, Z, N: tl.constexpr):
    """Blocks inside, scalars at the interface: a row sum through shared memory."""
    offs = tl.arange(0, N)
    z = tl.load(Z + offs)
    tl.store(Z + offs, z + x + tl.sum(z, axis=0))


@triton.jit(noinline=True)
def scale_block(v, s):
    return v * s


@triton.jit
def calls(X, Y, Z, MODE: tl.constexpr, N: tl.constexpr):
    x = tl.load(X)
    y = tl.load(Y)
    if MODE == 0:
        branchy(x, y, Z)
    elif MODE == 1:
        a, b = two_values(x, y)
        c, d = two_values(a, b)                   # (the same function again)
        tl.store(Z, c + d)
    elif MODE == 2:
        tile_work(x, Z, N)
    else:
        offs = tl.arange(0, N)
        tl.store(Z + offs, scale_block(tl.load(Z + offs), y))    # (a block argument: inlined)


@triton.jit
def mixed_types(X, Z):
    """One helper traced for each type it is called with."""
    x = tl.load(X)
    tl.store(Z, add_one(x) + add_one(x.to(tl.int32)).to(tl.float32) + add_one(7))


@triton.jit
def reduce_then_call(Z, N: tl.constexpr):
    """The kernel's own shared memory (a reduction across warps), then a helper's."""
    offs = tl.arange(0, N)
    s = tl.sum(tl.load(Z + offs), axis=0)
    tile_work(s, Z, N)

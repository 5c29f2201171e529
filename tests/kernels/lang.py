"""Kernels for the language tests."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def unrolled(out, n, COUNT: tl.constexpr):
    acc = 0
    for i in range(COUNT):
        acc += n * i
    for j in tl.static_range(2):
        acc += j
    tl.store(out, acc)


@triton.jit
def factory(out, SHAPE: tl.constexpr, KIND: tl.constexpr):
    if KIND == "empty":
        v = tl.empty(SHAPE, tl.float32)
    elif KIND == "zeros":
        v = tl.zeros(SHAPE, tl.float32)
    else:
        v = tl.full(SHAPE, KIND, tl.float32)
    tl.store(out, tl.sum(v))


@triton.jit
def scalar_factory(out, KIND: tl.constexpr):
    """An empty shape makes a scalar; a shape equals the list of its dimensions."""
    v = tl.zeros([], tl.float32) if KIND == "zeros" else tl.full((), 1.5, tl.float32)
    b = tl.full([4], 2, tl.int32)
    tl.static_assert(v.shape == [] and b.shape == [4] and b.shape == (4,) and b.shape != [5])
    tl.store(out, v)


@triton.jit
def reductions(x, out, AXIS: tl.constexpr, KEEP: tl.constexpr):
    rows = tl.arange(0, 4)[:, None]
    cols = tl.arange(0, 8)[None, :]
    tile = tl.load(x + rows * 8 + cols)
    r = tl.sum(tile, axis=AXIS, keep_dims=KEEP)
    if AXIS is None:
        tl.store(out, r)
    else:
        tl.store(out, tl.max(r))


@triton.jit
def broadcast_any_value(x, out):
    v = tl.load(x + tl.arange(0, 16)) * 2.0
    outer = v[:, None] * v[None, :]
    tl.store(out + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :], outer)


@triton.jit
def _twice(v):
    return v * 2


@triton.jit
def calls_helper(x, out):
    offs = tl.arange(0, 32)
    tl.store(out + offs, _twice(tl.load(x + offs)) + tl.cdiv(7, 2) + triton.next_power_of_2(5))


@triton.jit
def scaled(x, out, S: tl.constexpr):
    offs = tl.arange(0, 16)
    tl.store(out + offs, tl.load(x + offs) * S)


@triton.jit
def negative_index_arith(out):
    acc = 0
    for i in range(-4, 0):
        acc += i // 3 + i % 3
    tl.store(out, acc)


@triton.jit
def sum_size_one_axis(x, out_rows, out_all, BLOCK: tl.constexpr):
    v = tl.load(x + tl.arange(0, BLOCK))
    col = v[:, None]                                   # (BLOCK, 1): replicated along dim 1
    tl.store(out_rows + tl.arange(0, BLOCK), tl.sum(col, axis=1))
    tl.store(out_all, tl.sum(col))


@triton.jit
def literal_promotion(x_ptr, out_ptr, LIT: tl.constexpr, OP: tl.constexpr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    if OP == "add":
        y = x + LIT
    elif OP == "floordiv":
        y = x // LIT
    else:
        y = tl.where(x > 0, x, LIT)
    tl.store(out_ptr + offs, y)


@triton.jit
def number_attributes(out, lo, hi):
    """A Python number used as a tensor (its .to / .dtype), as Triton's frontend allows."""
    acc = 0
    acc = acc.to(tl.int64)
    for i in range(lo, hi):
        acc += i
    one = 1
    tl.store(out, acc + tl.full([1], one, dtype=one.dtype).to(tl.int64).item())


@triton.jit
def expand_axes(out, AXES: tl.constexpr):
    """tl.expand_dims with negative or several axes; the result's shape, stored."""
    x = tl.expand_dims(tl.arange(0, 4), AXES)
    tl.static_print(x.shape)
    tl.store(out + tl.arange(0, 4), tl.reshape(x, (4,)))


@triton.jit
def triton_compat(out):
    """Triton idioms: a bool block from the number 1, isinstance on a run-time value, dtype widths."""
    x = tl.full((4, 8), 1, dtype=tl.int1)
    tl.static_assert(isinstance(x, tl.tensor) and not isinstance(x, tl.constexpr))
    tl.static_assert(x.dtype.primitive_bitwidth == 1 and tl.float16.fp_mantissa_width == 10)
    tl.store(out, tl.sum(x))

"""Kernels whose user text (names, comments, constexprs) once changed the generated code
(tests/test_user_text.py; the GPU half in tests/test_user_text_gpu.py)."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def bound_named_r(x_ptr, out_ptr, r, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < r
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


@triton.jit
def cpp_names(int, new, this, template, v0, lane, warp, threadIdx, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < template
    x = tl.load(int + offs, mask=mask) * v0 + lane
    tl.store(new + offs, x + tl.load(this + offs, mask=mask) + warp + threadIdx, mask=mask)


@triton.jit
def main(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)


@triton.jit
def printf(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)


@triton.jit
def grüße(x_ptr, ñ, δ_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(δ_ptr + offs, tl.load(x_ptr + offs, mask=offs < ñ) - 1.0, mask=offs < ñ)


@triton.jit
def line_splice(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n  # the mask \
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


@triton.jit
def with_label(x_ptr, n, LABEL: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 5.0, mask=offs < n)


@triton.jit
def fill_other(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n, other=1e39), mask=offs < n + 4)


@triton.jit
def double_in_place(p):
    q = p + tl.program_id(0)
    tl.store(q, tl.load(q) * 2.0)


@triton.jit
def store_then_load(p, out, BLOCK: tl.constexpr):
    """One program stores a scalar, then every thread loads it back."""
    q = p + tl.program_id(0)
    tl.store(q, tl.program_id(0) + 5.0)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.zeros([BLOCK], tl.float32) + tl.load(q))


@triton.jit
def fill_scalar(p):
    tl.store(p + tl.program_id(0), 1.0)


@triton.jit
def double_row_in_place(p, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(p + offs, tl.load(p + offs) * 2.0)


@triton.jit
def shift_right(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) >> tl.load(y_ptr + offs))


@triton.jit
def pointer_swap(dst, src, n, steps, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = dst
    for i in range(steps):
        tl.store(p + offs, tl.load(src + offs, mask=offs < n) + 1.0, mask=offs < n)
        p = src


@triton.jit
def float(x_ptr, n, BLOCK: tl.constexpr):       # last in the file: it shadows the builtin below it
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, -1.0, mask=offs < n)

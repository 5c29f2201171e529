"""Kernels of tests/test_map_elementwise.py: tl.map_elementwise with a run-time if and early
returns, several results, pack=2 and a float function."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def compare(x, y):
    if x < y:
        return -1
    elif x == y:
        return 0
    else:
        return 1


@triton.jit
def divmod_pairs(a0, a1, b0, b1):
    return a0 // b0, a1 // b1, a0 % b0, a1 % b1


@triton.jit
def clamp_scale(x, lo, s):
    y = x * s
    if y < lo:
        y = lo
    return y


@triton.jit
def mapped(x_ptr, y_ptr, z_ptr, c_ptr, d_ptr, f_ptr, g_ptr, BLOCK: tl.constexpr):
    """z = sign(x - y); (c, d) = divmod(x, y) two at a time; g = max(f * 2.5, -1), the bounds blocks
    of one value (Triton takes blocks only; a scalar operand broadcasts in mytriton)."""
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(z_ptr + offs, tl.map_elementwise(compare, x, y))
    c, d = tl.map_elementwise(divmod_pairs, x, y, pack=2)
    tl.store(c_ptr + offs, c)
    tl.store(d_ptr + offs, d)
    lo, s = tl.full([BLOCK], -1.0, tl.float32), tl.full([BLOCK], 2.5, tl.float32)
    tl.store(g_ptr + offs, tl.map_elementwise(clamp_scale, tl.load(f_ptr + offs), lo, s))

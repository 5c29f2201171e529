"""A kernel that reads a module constant (the JIT and interpreter caches must notice it change)."""
import mytriton as triton
import mytriton.language as tl

SCALE = 2.0


@triton.jit
def scale_kernel(x, out):
    offs = tl.arange(0, 16)
    tl.store(out + offs, tl.load(x + offs) * SCALE)

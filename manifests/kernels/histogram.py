"""A histogram with atomics: each element adds 1 to its bin (bins given by the input)."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def histogram_kernel(x_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    bins = tl.load(x_ptr + offs, mask=mask)
    tl.atomic_add(hist_ptr + bins, 1, mask=mask)

"""Kernels of tests/test_host_descriptors.py: tensor descriptors made on the host
(mytriton.tools.tensor_descriptor.TensorDescriptor, Triton's triton.tools one) and passed as
arguments."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def copy_add(in_desc, out_desc, BM: tl.constexpr, BN: tl.constexpr):
    """out[block] = in[block] + 1 for each program's (BM, BN) block; out-of-bounds elements of the
    last blocks read the padding and are not written."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    x = in_desc.load([pm * BM, pn * BN])
    out_desc.store([pm * BM, pn * BN], x + 1)


@triton.jit
def row_sums(desc, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
    """Row sums through a descriptor walked along its columns; the descriptor's shape read in the
    kernel."""
    m, n = desc.shape[0], desc.shape[1]
    rows = tl.program_id(0) * BM
    acc = tl.zeros((BM,), tl.float32)
    for k in range(0, n, BN):
        acc += tl.sum(desc.load([rows, k]).to(tl.float32), axis=1)
    offs = rows + tl.arange(0, BM)
    tl.store(out_ptr + offs, acc, mask=offs < m)

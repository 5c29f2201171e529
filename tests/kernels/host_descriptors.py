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


@triton.jit
def shifted_copy(in_desc, out_desc, shift, BM: tl.constexpr, BN: tl.constexpr):
    """out[i, j] = in[i + shift, j - shift]: the loaded block starts off the program's one, partly out
    of bounds (negative coordinates included) for some programs."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    x = in_desc.load([pm * BM + shift, pn * BN - shift])
    out_desc.store([pm * BM, pn * BN], x)


@triton.jit
def copy_1d(in_desc, out_desc, B: tl.constexpr):
    p = tl.program_id(0)
    out_desc.store([p * B], in_desc.load([p * B]) * 2)


@triton.jit
def copy_3d(in_desc, out_desc, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr):
    p0, p1, p2 = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    x = in_desc.load([p0 * B0, p1 * B1, p2 * B2])
    out_desc.store([p0 * B0, p1 * B1, p2 * B2], x - 1)


@triton.jit
def desc_matmul(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B through descriptors: A's and B's blocks feed tl.dot in the K loop."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([pm * BM, k]), b_desc.load([k, pn * BN]), acc)
    c_desc.store([pm * BM, pn * BN], acc.to(tl.float16))

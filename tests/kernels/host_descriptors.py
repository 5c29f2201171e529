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


@triton.jit
def desc_matmul_nt(a_desc, bt_desc, c_ptr, M, N, K, stride_cm, BM: tl.constexpr, BN: tl.constexpr,
                   BK: tl.constexpr):
    """C = A @ B with B given as B^T (N x K) through its descriptor: the dot reads tl.trans of its
    blocks; C stored through plain pointers, masked."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, K, BK, num_stages=4):
        acc = tl.dot(a_desc.load([pm * BM, k]), tl.trans(bt_desc.load([pn * BN, k])), acc)
    rows = pm * BM + tl.arange(0, BM)[:, None]
    cols = pn * BN + tl.arange(0, BN)[None, :]
    tl.store(c_ptr + rows * stride_cm + cols, acc, mask=(rows < M) & (cols < N))


@triton.jit
def desc_matmul_shifted(a_desc, b_desc, c_desc, K, shift, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """desc_matmul with A's columns read from ``shift`` on: an offset along A's rows that the
    compiler cannot prove a multiple of 16 bytes."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([pm * BM, k + shift]), b_desc.load([k, pn * BN]), acc)
    c_desc.store([pm * BM, pn * BN], acc.to(tl.float16))


@triton.jit
def desc_matmul_and_first_block(a_desc, b_desc, c_desc, first_ptr, K, BM: tl.constexpr, BN: tl.constexpr,
                                BK: tl.constexpr):
    """desc_matmul that also stores A's first block (the same descriptor read outside the K loop)."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([pm * BM, k]), b_desc.load([k, pn * BN]), acc)
    c_desc.store([pm * BM, pn * BN], acc.to(tl.float16))
    first = a_desc.load([pm * BM, 0])
    tl.store(first_ptr + tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :], first)


@triton.jit
def desc_matmul_persistent(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """desc_matmul with each program walking tiles (pid, pid + programs, ...): the K loop, its
    rings and their mbarriers start afresh for every tile."""
    tiles_n = tl.cdiv(N, BN)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, tl.num_programs(0)):
        pm, pn = tile // tiles_n, tile % tiles_n
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, K, BK):
            acc = tl.dot(a_desc.load([pm * BM, k]), b_desc.load([k, pn * BN]), acc)
        c_desc.store([pm * BM, pn * BN], acc.to(tl.float16))

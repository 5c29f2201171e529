"""Kernels of tests/test_block_ptr.py: block pointers (tl.make_block_ptr, tl.advance, loads and
stores with boundary_check and padding_option) and tensor descriptors (tl.make_tensor_descriptor,
desc.load/store/atomic_add)."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def copy_block(x_ptr, y_ptr, M, N, stride_xm, stride_xn, CHECK: tl.constexpr, PADDING: tl.constexpr,
               BM: tl.constexpr, BN: tl.constexpr):
    """y[block] = x[block] + 1 for the (BM, BN) block of each program, checked along CHECK; the
    blocks read, padding included, also go to y_ptr + M*N (a row-major array of all of them)."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    src = tl.make_block_ptr(base=x_ptr, shape=(M, N), strides=(stride_xm, stride_xn), offsets=(pm * BM, pn * BN),
                            block_shape=(BM, BN), order=(1, 0))
    dst = tl.make_block_ptr(y_ptr, (M, N), (N, 1), (pm * BM, pn * BN), (BM, BN), (1, 0))
    v = tl.load(src, boundary_check=CHECK, padding_option=PADDING)
    tl.store(dst, v + 1, boundary_check=(0, 1))
    whole = tl.make_block_ptr(y_ptr + M * N, (tl.num_programs(0) * BM, tl.num_programs(1) * BN),
                              (tl.num_programs(1) * BN, 1), (pm * BM, pn * BN), (BM, BN), (0, 1))
    tl.store(whole, v)


@triton.jit
def row_sums(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Row sums: a block pointer carried by a run-time loop, moved by tl.advance."""
    p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0))
    acc = tl.zeros((BM,), tl.float32)
    for _ in range(0, N, BN):
        acc += tl.sum(tl.load(p, boundary_check=(0, 1)), axis=1)
        p = tl.advance(p, (0, BN))
    out = tl.make_block_ptr(y_ptr, (M,), (1,), (tl.program_id(0) * BM,), (BM,), (0,))
    tl.store(out, acc, boundary_check=(0,))


@triton.jit
def _load_checked(p):
    return tl.load(p, boundary_check=(0, 1))


@triton.jit
def matmul_block_ptr(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B with block pointers (Triton's block-pointer matmul), the loads through a @jit helper."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    a_block = tl.make_block_ptr(a_ptr, (M, K), (stride_am, stride_ak), (pid_m * BM, 0), (BM, BK), (1, 0))
    b_block = tl.make_block_ptr(b_ptr, (K, N), (stride_bk, stride_bn), (0, pid_n * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(_load_checked(a_block), _load_checked(b_block))
        a_block = tl.advance(a_block, (0, BK))
        b_block = tl.advance(b_block, (BK, 0))
    c_block = tl.make_block_ptr(c_ptr, (M, N), (stride_cm, stride_cn), (pid_m * BM, pid_n * BN), (BM, BN), (1, 0))
    tl.store(c_block, acc.to(c_ptr.dtype.element_ty), boundary_check=(0, 1))


@triton.jit
def choose_block(x_ptr, y_ptr, M, N, flag, BM: tl.constexpr, BN: tl.constexpr):
    """A block pointer chosen by a run-time `if` (the upper or the lower half of x)."""
    if flag > 0:
        p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    else:
        p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (BM, 0), (BM, BN), (1, 0))
    tl.store(tl.make_block_ptr(y_ptr, (BM, BN), (BN, 1), (0, 0), (BM, BN), (1, 0)), tl.load(p))


@triton.jit
def descriptor_copy(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """y = 2 x, block by block, through tensor descriptors (out-of-bounds reads are zero, writes dropped)."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    dx = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dy = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN])
    dy.store([pm * BM, pn * BN], dx.load([pm * BM, pn * BN]) * 2)


@triton.jit
def descriptor_3d(x_ptr, y_ptr, A, B, C, BA: tl.constexpr, BB: tl.constexpr, BC: tl.constexpr):
    """A 3-D descriptor read at a block that overhangs every end (the top corner); the whole
    block, padding included, stored to y through tl.store_tensor_descriptor."""
    dx = tl.make_tensor_descriptor(x_ptr, [A, B, C], [B * C, C, 1], [BA, BB, BC])
    dy = tl.make_tensor_descriptor(y_ptr, [BA, BB, BC], [BB * BC, BC, 1], [BA, BB, BC])
    tl.store_tensor_descriptor(dy, [0, 0, 0], tl.load_tensor_descriptor(dx, [A - BA // 2, -1, C - BC // 2]))


@triton.jit
def descriptor_histogram(idx_ptr, out_ptr, N, BN: tl.constexpr):
    """desc.atomic_add of a block of ones at a run-time offset, per program."""
    d = tl.make_tensor_descriptor(out_ptr, [N], [1], [BN])
    d.atomic_add([tl.load(idx_ptr + tl.program_id(0))], tl.full((BN,), 1, tl.int32))


@triton.jit
def attention_branchy(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """Attention forward through block pointers, Kᵀ read as a column-major (HEAD_DIM, BLOCK_N)
    block; the scores take one of two run-time branches (masked on and past the diagonal, plain
    before it), so the first dot reaches the second through an ``if``. N_CTX % BLOCK_N == 0."""
    start_m = tl.program_id(0)
    base = tl.program_id(1) * N_CTX * HEAD_DIM
    q_block = tl.make_block_ptr(q_ptr + base, (N_CTX, HEAD_DIM), (HEAD_DIM, 1), (start_m * BLOCK_M, 0),
                                (BLOCK_M, HEAD_DIM), (1, 0))
    kt_block = tl.make_block_ptr(k_ptr + base, (HEAD_DIM, N_CTX), (1, HEAD_DIM), (0, 0), (HEAD_DIM, BLOCK_N), (0, 1))
    v_block = tl.make_block_ptr(v_ptr + base, (N_CTX, HEAD_DIM), (HEAD_DIM, 1), (0, 0), (BLOCK_N, HEAD_DIM), (1, 0))
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    scale = sm_scale * 1.44269504
    q = tl.load(q_block, boundary_check=(0,))
    diagonal = start_m * BLOCK_M if CAUSAL else N_CTX
    for start_n in range(0, N_CTX, BLOCK_N):
        qk = tl.dot(q, tl.load(kt_block))
        if start_n + BLOCK_N > diagonal:
            qk = qk * scale + tl.where(offs_m[:, None] >= start_n + offs_n[None, :], 0, -1.0e6)
            m_new = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_new[:, None]
        else:
            m_new = tl.maximum(m_i, tl.max(qk, 1) * scale)
            qk = qk * scale - m_new[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(tl.float16), tl.load(v_block), acc)
        m_i = m_new
        kt_block = tl.advance(kt_block, (0, BLOCK_N))
        v_block = tl.advance(v_block, (BLOCK_N, 0))
    o_block = tl.make_block_ptr(o_ptr + base, (N_CTX, HEAD_DIM), (HEAD_DIM, 1), (start_m * BLOCK_M, 0),
                                (BLOCK_M, HEAD_DIM), (1, 0))
    tl.store(o_block, (acc / l_i[:, None]).to(tl.float16), boundary_check=(0,))

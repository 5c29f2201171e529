"""Kernels of tests/test_launch_maps.py: tensor descriptors made in the kernel, whose tensor maps
the runtime encodes at launch where the descriptor's parts are the same in every program."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def scaled_copy(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """y = 2 x, block by block, through two descriptors made of the parameters."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    dx = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    dy = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN])
    dy.store([pm * BM, pn * BN], dx.load([pm * BM, pn * BN]) * 2)


@triton.jit
def batched_copy(x_ptr, y_ptr, B, M, N, ROW0, BM: tl.constexpr, BN: tl.constexpr):
    """The (B*M - ROW0, N) rows from ROW0 on of a batch seen as one matrix (Triton's attention
    tutorial writes y_dim = Z * H * N_CTX): parts computed from parameters (a product, an offset
    base, an i64 stride); the same descriptor made twice (in a loop of two) is one tensor map."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    rows = B * M - ROW0
    for half in tl.static_range(2):
        dx = tl.make_tensor_descriptor(x_ptr + ROW0 * N, [rows, N], [N.to(tl.int64), 1], [BM, BN])
        dy = tl.make_tensor_descriptor(y_ptr, [rows, N], [N, 1], [BM, BN])
        off = pm * BM * 2 + half * BM
        dy.store([off, pn * BN], dx.load([off, pn * BN]) + 1)


@triton.jit
def per_program_copy(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """A descriptor whose base depends on the program (a row of blocks each): its copies stay in
    the threads; y's descriptor gets a tensor map."""
    pm = tl.program_id(0)
    dx = tl.make_tensor_descriptor(x_ptr + pm * BM * N, [BM, N], [N, 1], [BM, BN])
    dy = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN])
    for j in range(0, N, BN):
        dy.store([pm * BM, j], dx.load([0, j]))


@triton.jit
def guarded_copy(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """A descriptor made only where its rows are a multiple of 16 bytes (a run-time if): it keeps
    ordinary loads (a launch must not refuse what the kernel guards)."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    rows = pm * BM + tl.arange(0, BM)[:, None]
    cols = pn * BN + tl.arange(0, BN)[None, :]
    if N % 8 == 0:
        dx = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
        v = dx.load([pm * BM, pn * BN])
    else:
        v = tl.load(x_ptr + rows * N + cols, mask=(rows < M) & (cols < N), other=0.0)
    tl.store(y_ptr + rows * N + cols, v, mask=(rows < M) & (cols < N))

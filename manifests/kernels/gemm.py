"""Matrix products on tl.dot, written the way Triton users write them:

- ``matmul_kernel``: C = act(A @ B) for strided A (M×K), B (K×N), C (M×N) of any float dtype, an
  fp32 accumulator, programs grouped GROUP_M tiles high (consecutive programs share columns of B and
  rows of A in L2), pointers advanced along K, masked tails in M, N and K;
- ``linear_kernel``: Y = act(X @ W + bias), the fused linear layer (bias per output column);
- ``int8_matmul_kernel``: exact int8 products summed in int32;
- ``descriptor_matmul_kernel``: C = A @ B with every block through host-side tensor descriptors
  (``TensorDescriptor``; on Hopper, TMA copies), as Triton's tutorial 09 writes it (the JIT takes it:
  manifests cannot name descriptor parameters); ``made_descriptor_matmul_kernel`` the same with its
  descriptors made in the kernel from row-major A, B and C.

ACTIVATION is "" (none), "leaky_relu" or "relu", applied to the fp32 accumulator.
"""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def _activation(x, ACTIVATION: tl.constexpr):
    if ACTIVATION == "leaky_relu":
        x = tl.where(x >= 0, x, 0.01 * x)
    elif ACTIVATION == "relu":
        x = tl.maximum(x, 0.0)
    return x


@triton.jit
def _program_ids(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """This program's tile (row, column): programs walk GROUP_M tile rows column by column."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    group = pid // per_group
    first_m = group * GROUP_M
    rows = min(tiles_m - first_m, GROUP_M)
    return first_m + (pid % per_group) % rows, (pid % per_group) // rows


@triton.jit
def _program_tile(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """The rows, columns and first K offsets of this program's tile (``_program_ids``)."""
    pid_m, pid_n = _program_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    return pid_m * BLOCK_M + tl.arange(0, BLOCK_M), pid_n * BLOCK_N + tl.arange(0, BLOCK_N), tl.arange(0, BLOCK_K)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  ACTIVATION: tl.constexpr):
    offs_m, offs_n, offs_k = _program_tile(M, N, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = _activation(acc, ACTIVATION).to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def linear_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K, stride_xm, stride_wk, stride_ym,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  ACTIVATION: tl.constexpr):
    offs_m, offs_n, offs_k = _program_tile(M, N, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        kk = k + offs_k
        x = tl.load(x_ptr + offs_m[:, None] * stride_xm + kk[None, :], mask=(offs_m[:, None] < M) & (kk[None, :] < K),
                    other=0.0)
        w = tl.load(w_ptr + kk[:, None] * stride_wk + offs_n[None, :], mask=(kk[:, None] < K) & (offs_n[None, :] < N),
                    other=0.0)
        acc = tl.dot(x, w, acc)
    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    y = _activation(acc + bias[None, :], ACTIVATION).to(y_ptr.dtype.element_ty)
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], y, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def int8_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """C (int32) = A (int8, M×K row-major) @ B (int8, K×N row-major): exact, wrapping int32 sums."""
    offs_m, offs_n, offs_k = _program_tile(M, N, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k in range(0, K, BLOCK_K):
        kk = k + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + kk[None, :], mask=(offs_m[:, None] < M) & (kk[None, :] < K),
                    other=0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + offs_n[None, :], mask=(kk[:, None] < K) & (offs_n[None, :] < N),
                    other=0)
        acc = tl.dot(a, b, acc, out_dtype=tl.int32)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def descriptor_matmul_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    _descriptor_matmul(a_desc, b_desc, c_desc, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)


@triton.jit
def made_descriptor_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """descriptor_matmul_kernel with its descriptors made in the kernel (row-major A, B and C)."""
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    _descriptor_matmul(a_desc, b_desc, c_desc, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)


@triton.jit
def _descriptor_matmul(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = _program_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    off_m, off_n = pid_m * BLOCK_M, pid_n * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]), acc)
    c_desc.store([off_m, off_n], acc.to(c_desc.dtype))

"""fp8 kernels (tests/test_fp8.py; run through Triton too by tests/test_fp8_gpu.py)."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def quantize(x_ptr, q_ptr, back_ptr, n, FP8: tl.constexpr, BLOCK: tl.constexpr):
    """q = x converted to the fp8 type FP8; back = q converted back to fp32."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    q = tl.load(x_ptr + offs, mask=mask, other=0.0).to(FP8)
    tl.store(q_ptr + offs, q, mask=mask)
    tl.store(back_ptr + offs, q.to(tl.float32), mask=mask)


@triton.jit
def fp8_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """One tile: c (fp32) = a @ b for fp8 a (M x K) and b (K x N), row-major."""
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


@triton.jit
def fp8_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """c (fp32, M x N) = a (fp8, M x K) @ b (fp8, K x N), tiles with masked tails."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        kk = k + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + kk[None, :], mask=(offs_m[:, None] < M) & (kk[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + offs_n[None, :], mask=(kk[:, None] < K) & (offs_n[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def fp8_abs(x_ptr, z_ptr, SIZE: tl.constexpr):
    """tl.abs on fp8 values (Triton's test_abs_fp8): the sign bit cleared."""
    offs = tl.arange(0, SIZE)
    tl.store(z_ptr + offs, tl.abs(tl.load(x_ptr + offs)))

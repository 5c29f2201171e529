"""The runtime-K matmul of the seed posts (parts 10 and 11), in Triton syntax: C = A @ B for
row-major fp32 A (M×K), B (K×N), C (M×N). No tl.dot: each program accumulates a BM×BN tile with
outer products over a run-time loop, the accumulator created by tl.zeros."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)

    offs_m = pid_m * BM + tl.arange(0, BM)[:, None]
    offs_n = pid_n * BN + tl.arange(0, BN)[None, :]

    c_offsets = offs_m * N + offs_n
    c_mask = (offs_m < M) & (offs_n < N)
    acc = tl.zeros((BM, BN), tl.float32)

    for k in range(K):
        a_offsets = offs_m * K + k
        b_offsets = k * N + offs_n
        a_values = tl.load(a + a_offsets, mask=offs_m < M, other=0.0)
        b_values = tl.load(b + b_offsets, mask=offs_n < N, other=0.0)
        acc = acc + a_values * b_values

    tl.store(c + c_offsets, acc, mask=c_mask)


@triton.jit
def matmul_ptr_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr):
    """The same product with loop-carried pointers (the Triton tutorial idiom)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    a_ptrs = a + offs_m[:, None] * K
    b_ptrs = b + offs_n[None, :]
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K):
        a_col = tl.load(a_ptrs, mask=offs_m[:, None] < M, other=0.0)
        b_row = tl.load(b_ptrs, mask=offs_n[None, :] < N, other=0.0)
        acc += a_col * b_row
        a_ptrs += 1
        b_ptrs += N
    c_ptrs = c + offs_m[:, None] * N + offs_n[None, :]
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))

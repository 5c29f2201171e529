"""The GEMM as Triton's matrix-multiplication tutorial writes it: programs in grouped order (for
L2 reuse), tile offsets wrapped around the matrix (``% M``, ``% N``), the K tail masked; int8
operands accumulate in int32."""
import mytriton as triton
import mytriton.language as tl


@triton.jit
def wrapped_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    in_group = GROUP * tiles_n
    first_m = (pid // in_group) * GROUP
    rows_here = min(tiles_m - first_m, GROUP)
    pid_m = first_m + ((pid % in_group) % rows_here)
    pid_n = (pid % in_group) // rows_here
    rows = (pid_m * BM + tl.arange(0, BM)) % M
    cols = (pid_n * BN + tl.arange(0, BN)) % N
    ks = tl.arange(0, BK)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc_type = tl.int32 if a_ptr.dtype.element_ty == tl.int8 else tl.float32
    acc = tl.zeros((BM, BN), dtype=acc_type)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=ks[None, :] < K - k * BK, other=0)
        b = tl.load(b_ptrs, mask=ks[:, None] < K - k * BK, other=0)
        acc = tl.dot(a, b, acc, out_dtype=acc_type)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    out_m = pid_m * BM + tl.arange(0, BM)
    out_n = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + stride_cm * out_m[:, None] + stride_cn * out_n[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(out_m[:, None] < M) & (out_n[None, :] < N))

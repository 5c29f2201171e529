"""Kernels of tests/test_autotune.py: @autotune and @heuristics over @jit kernels, Triton's way."""
import mytriton as triton
import mytriton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 256}, num_warps=4),
                          triton.Config({"BLOCK": 1024}, num_warps=8, num_stages=2)],
                 key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def scaled_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    """out = x + alpha * y; unmasked when the heuristic finds n a multiple of BLOCK."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + alpha * tl.load(y_ptr + offs))
    else:
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + alpha * tl.load(y_ptr + offs, mask=mask),
                 mask=mask)


def grid(meta):
    """One program per BLOCK elements: the grid reads the run-time n and the chosen BLOCK."""
    return (triton.cdiv(meta["n"], meta["BLOCK"]),)


@triton.autotune(configs=[triton.Config({"BM": 32, "BN": 32, "BK": 32}, num_warps=4),
                          triton.Config({"BM": 64, "BN": 64, "BK": 32}, num_warps=4, num_stages=3),
                          triton.Config({"BM": 128, "BN": 128, "BK": 64}, num_warps=8, num_stages=4)],
                 key=["M", "N", "K"], reset_to_zero=["c_ptr"])
@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C += A @ B (row-major, fp16 in, fp32 out), masked edges."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm, rn, rk = pm * BM + tl.arange(0, BM), pn * BN + tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc += tl.dot(a, b)
    c = c_ptr + rm[:, None] * N + rn[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c, tl.load(c, mask=mask) + acc, mask=mask)

"""tl.dot on the H200 through the JIT, against PyTorch on the same tensors: the GEMM kernels of
manifests/kernels/gemm.py (pipelined cp.async rings, ldmatrix, mma.sync) in fp16, bf16 and tf32 at
sizes with tails in M, N and K, transposed operands, the fused linear layer, int8 tiles, and
attention (a transposed K tile in a ring) against scaled_dot_product_attention."""
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "manifests" / "kernels"))
import attention  # noqa: E402
import gemm  # noqa: E402

from tests.test_dot import dot_tile  # noqa: E402
from tests.triton_reference import triton_version  # noqa: E402

KERNELS = Path(__file__).resolve().parents[1] / "manifests" / "kernels"


def cdiv(a, b):
    return -(-a // b)


def gemm_run(a, b, c, bm, bn, bk, warps, activation="", module=gemm):
    m, k = a.shape
    n = b.shape[1]
    module.matmul_kernel[(cdiv(m, bm) * cdiv(n, bn),)](
        a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, ACTIVATION=activation, num_warps=warps)
    torch.cuda.synchronize()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("m,n,k", [(512, 384, 1024), (300, 200, 1000), (64, 72, 40)])
@pytest.mark.parametrize("bm,bn,bk,warps", [(128, 128, 32, 4), (64, 64, 32, 4), (128, 128, 64, 8), (128, 256, 32, 8),
                                            (32, 32, 16, 1)])
def test_gemm(dtype, m, n, k, bm, bn, bk, warps):
    a, b = torch.randn(m, k, device="cuda", dtype=dtype), torch.randn(k, n, device="cuda", dtype=dtype)
    c = torch.full((m, n), 7.0, device="cuda", dtype=dtype)
    gemm_run(a, b, c, bm, bn, bk, warps)
    want = a.float() @ b.float()
    torch.testing.assert_close(c.float(), want, rtol=2e-2, atol=0.1 * k ** 0.5 / 8)


def test_gemm_of_transposed_and_offset_operands():
    """B as the transpose of a row-major (N, K) tensor (read K-major), A a view starting 8 bytes into
    its storage (no 16-byte alignment: its tiles go through registers)."""
    m, n, k = 256, 192, 520
    a = torch.randn(m * k + 4, device="cuda", dtype=torch.float16)[4:].view(m, k)
    bt = torch.randn(n, k, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    gemm_run(a, bt.t(), c, 128, 64, 32, 4)
    torch.testing.assert_close(c.float(), a.float() @ bt.float().t(), rtol=2e-2, atol=0.2)


def test_tf32_gemm_and_leaky_relu():
    m, n, k = 384, 256, 300
    a, b = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
    c = torch.empty(m, n, device="cuda")
    gemm_run(a, b, c, 64, 64, 32, 4, "leaky_relu")
    want = torch.nn.functional.leaky_relu(a.double() @ b.double(), 0.01)
    torch.testing.assert_close(c.double(), want, rtol=1e-2, atol=0.05)


def test_linear_bias_relu_bf16():
    m, n, k = 1000, 384, 512
    x, w = torch.randn(m, k, device="cuda", dtype=torch.bfloat16), torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    bias, y = torch.randn(n, device="cuda", dtype=torch.bfloat16), torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    gemm.linear_kernel[(cdiv(m, 128) * cdiv(n, 128),)](x, w, bias, y, m, n, k, k, n, n, BLOCK_M=128, BLOCK_N=128,
                                                       BLOCK_K=32, GROUP_M=8, ACTIVATION="relu", num_warps=4)
    torch.testing.assert_close(y.float(), torch.relu(x.float() @ w.float() + bias.float()), rtol=3e-2, atol=0.3)


@pytest.mark.parametrize("name,prec", [("i8", "tf32"), ("fp32", "tf32x3"), ("fp16", "tf32")])
def test_dot_tiles(name, prec):
    dtype = {"i8": torch.int8, "fp32": torch.float32, "fp16": torch.float16}[name]
    m, n, k = 64, 32, 64
    if dtype == torch.int8:
        a, b = (torch.randint(-128, 128, s, device="cuda", dtype=torch.int8) for s in ((m, k), (k, n)))
        c = torch.zeros(m, n, device="cuda", dtype=torch.int32)
    else:
        a, b = torch.randn(m, k, device="cuda", dtype=dtype), torch.randn(k, n, device="cuda", dtype=dtype)
        c = torch.zeros(m, n, device="cuda", dtype=torch.float32)
    dot_tile[(1,)](a, b, c, M=m, N=n, K=k, PREC=prec, ACC=False, OUT=_out(dtype))
    torch.cuda.synchronize()
    if dtype == torch.int8:
        assert torch.equal(c.cpu(), a.cpu().int() @ b.cpu().int())
    else:
        torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-3 if dtype == torch.float16 else 1e-5,
                                   atol=1e-2 if dtype == torch.float16 else 1e-4)


def _out(dtype):
    import mytriton.language as tl
    return tl.int32 if dtype == torch.int8 else tl.float32


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d,warps", [(64, 4), (128, 8)])
def test_attention_forward(causal, d, warps):
    z, h, n_ctx = 2, 3, 300
    q, k, v = (torch.randn(z, h, n_ctx, d, device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    attention.attention_fwd_kernel[(cdiv(n_ctx, 128), z * h)](q, k, v, o, d ** -0.5, n_ctx, HEAD_DIM=d, BLOCK_M=128,
                                                              BLOCK_N=64, CAUSAL=causal, num_warps=warps)
    want = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    torch.testing.assert_close(o.float(), want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("m,n,k,bm,bn,bk,warps", [(300, 200, 1000, 128, 128, 32, 4), (64, 72, 24, 64, 64, 32, 4)])
def test_gemm_as_triton_computes_it(dtype, m, n, k, bm, bn, bk, warps):
    """The same kernel source through Triton 3.6: both within the tolerance of their input
    rounding (tf32 for fp32: Triton's default input_precision too)."""
    tr = triton_version(KERNELS / "gemm.py")
    if tr is None:
        pytest.skip("Triton is not installed")
    a, b = torch.randn(m, k, device="cuda", dtype=dtype), torch.randn(k, n, device="cuda", dtype=dtype)
    ours, theirs = (torch.empty(m, n, device="cuda", dtype=dtype) for _ in range(2))
    gemm_run(a, b, ours, bm, bn, bk, warps)
    gemm_run(a, b, theirs, bm, bn, bk, warps, module=tr)
    torch.testing.assert_close(ours.float(), theirs.float(), rtol=2e-2, atol=0.05 * k ** 0.5)


def test_int8_gemm_is_exact():
    m, n, k = 520, 264, 200
    a, b = (torch.randint(-128, 128, s, device="cuda", dtype=torch.int8) for s in ((m, k), (k, n)))
    c = torch.empty(m, n, device="cuda", dtype=torch.int32)
    gemm.int8_matmul_kernel[(cdiv(m, 128) * cdiv(n, 128),)](a, b, c, m, n, k, k, n, n, BLOCK_M=128, BLOCK_N=128,
                                                            BLOCK_K=32, GROUP_M=8, num_warps=4)
    torch.cuda.synchronize()
    assert torch.equal(c.cpu(), a.cpu().int() @ b.cpu().int())


@pytest.mark.parametrize("stages", [1, 2, 4, 5])
def test_gemm_num_stages(stages):
    m, n, k = 256, 256, 700
    a, b = torch.randn(m, k, device="cuda", dtype=torch.float16), torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    gemm.matmul_kernel[(cdiv(m, 128) * cdiv(n, 128),)](
        a, b, c, m, n, k, k, 1, n, 1, n, 1, BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, ACTIVATION="",
        num_warps=4, num_stages=stages)
    torch.cuda.synchronize()
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=0.2)


@pytest.mark.multigpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_gemm_on_the_second_device():
    """Tensors on cuda:1 while cuda:0 is current: the JIT compiles for and launches on cuda:1 (its
    shared-memory rings above 48 KiB opted in there too)."""
    m, n, k = 512, 512, 256
    a = torch.randn(m, k, device="cuda:1", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda:1", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda:1", dtype=torch.float16)
    with torch.cuda.device(0):
        gemm.matmul_kernel[(cdiv(m, 128) * cdiv(n, 256),)](a, b, c, m, n, k, k, 1, n, 1, n, 1, BLOCK_M=128,
                                                           BLOCK_N=256, BLOCK_K=64, GROUP_M=8, ACTIVATION="",
                                                           num_warps=8)
        assert torch.cuda.current_device() == 0
    torch.cuda.synchronize(1)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=0.2)


BATCHED = None


@pytest.mark.parametrize("b,m,n,k,warps", [(2, 32, 32, 32, 4), (8, 32, 32, 32, 4), (4, 16, 32, 64, 1)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "float64"])
def test_batched_dot_as_triton(b, m, n, k, warps, dtype):
    """A 3-d tl.dot on the CUDA cores: each batch's product as Triton gives it (fp32 inputs by
    input_precision="ieee"; Triton's tensor cores accumulate in another order: close, not equal)."""
    global BATCHED
    from tests.kernels import batched
    if BATCHED is None:
        BATCHED = triton_version(batched.__file__)
    if BATCHED is None:
        pytest.skip("needs Triton")
    import mytriton.language as mtl
    import triton.language as ttl
    t = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(5)
    q = torch.randint(-3, 4, (b, m, k), device="cuda", generator=gen).to(t)
    kk = torch.randint(-3, 4, (b, k, n), device="cuda", generator=gen).to(t)
    out_t = {"int8": torch.int32, "float64": torch.float64}.get(dtype, torch.float32)
    o, to = (torch.zeros((b, m, n), dtype=out_t, device="cuda") for _ in range(2))
    out = {"int8": "int32", "float64": "float64"}.get(dtype, "float32")
    batched.dot3d[(1,)](q, kk, o, B=b, M=m, N=n, KK=k, PRECISION="ieee", OUT=getattr(mtl, out), num_warps=warps)
    BATCHED.dot3d[(1,)](q, kk, to, B=b, M=m, N=n, KK=k, PRECISION="ieee", OUT=getattr(ttl, out), num_warps=warps)
    torch.cuda.synchronize()
    assert torch.equal(o, to)          # small integers: every order of the additions is exact
    assert torch.equal(o, torch.bmm(q.to(torch.float64), kk.to(torch.float64)).to(out_t))


@pytest.mark.parametrize("precision,bound", [("bf16x3", 5e-3), ("bf16x6", 1e-4)])
def test_bf16_split_precisions_as_triton(precision, bound):
    global BATCHED
    from tests.kernels import batched
    if BATCHED is None:
        BATCHED = triton_version(batched.__file__)
    if BATCHED is None:
        pytest.skip("needs Triton")
    gen = torch.Generator(device="cuda").manual_seed(7)
    a, b = (torch.randn(64, 64, device="cuda", generator=gen) for _ in range(2))
    o, to = torch.zeros_like(a), torch.zeros_like(a)
    batched.precision_dot[(1,)](a, b, o, M=64, PRECISION=precision)
    BATCHED.precision_dot[(1,)](a, b, to, M=64, PRECISION=precision)
    torch.cuda.synchronize()
    exact = a.double() @ b.double()
    assert (o.double() - exact).abs().max() < bound and (to.double() - exact).abs().max() < bound

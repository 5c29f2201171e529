"""The tl.dot kernels of manifests/kernels (gemm.py, attention.py) in the interpreter against
numpy — awkward sizes with masked tails in M, N and K, grouped program order, strides, fused bias
and activations, causal and full attention — and one configuration of each as emulated CUDA."""
import math
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import mytriton
from tests import cuda_emulator

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "manifests" / "kernels"))
import attention  # noqa: E402
import gemm  # noqa: E402

RNG = np.random.default_rng(21)


def randn(shape, dtype):
    return RNG.standard_normal(shape).astype(np.float32).astype(dtype)


def act(x, name):
    return np.where(x >= 0, x, 0.01 * x) if name == "leaky_relu" else np.maximum(x, 0) if name == "relu" else x


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("m,n,k,activation", [(64, 48, 80, ""), (33, 70, 16, "leaky_relu"), (128, 16, 40, "relu")])
def test_matmul_kernel(dtype, m, n, k, activation):
    a, b = randn((m, k), dtype), randn((k, n), dtype)
    c = np.zeros((m, n), dtype)
    bm, bn, bk = 32, 16, 16
    grid = (mytriton.cdiv(m, bm) * mytriton.cdiv(n, bn),)
    gemm.matmul_kernel[grid](a, b, c, m, n, k, k, 1, n, 1, n, 1, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=2,
                             ACTIVATION=activation)
    want = act(a.astype(np.float32) @ b.astype(np.float32), activation)
    tol = 1e-2 if dtype == np.float16 else 5e-2
    np.testing.assert_allclose(c.astype(np.float32), want, rtol=tol, atol=tol)


def test_matmul_kernel_transposed_strides():
    """B given as the transpose of a row-major (N, K) array: stride_bk = 1, stride_bn = K."""
    m, n, k = 40, 24, 48
    a, bt = randn((m, k), np.float16), randn((n, k), np.float16)
    c = np.zeros((m, n), np.float16)
    gemm.matmul_kernel[(mytriton.cdiv(m, 16) * mytriton.cdiv(n, 16),)](
        a, bt, c, m, n, k, k, 1, 1, k, n, 1, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=4, ACTIVATION="")
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ bt.astype(np.float32).T, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("activation", ["", "relu"])
def test_linear_kernel(activation):
    m, n, k = 50, 40, 64
    x, w, bias = randn((m, k), ml_dtypes.bfloat16), randn((k, n), ml_dtypes.bfloat16), randn((n,), ml_dtypes.bfloat16)
    y = np.zeros((m, n), ml_dtypes.bfloat16)
    gemm.linear_kernel[(mytriton.cdiv(m, 32) * mytriton.cdiv(n, 32),)](
        x, w, bias, y, m, n, k, k, n, n, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, GROUP_M=8, ACTIVATION=activation)
    want = act(x.astype(np.float32) @ w.astype(np.float32) + bias.astype(np.float32), activation)
    np.testing.assert_allclose(y.astype(np.float32), want, rtol=5e-2, atol=5e-2)


def attention_reference(q, k, v, scale, causal):
    s = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), 1, 2) * scale
    if causal:
        n = q.shape[1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=2, keepdims=True))
    return (p / p.sum(axis=2, keepdims=True)) @ v.astype(np.float64)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n_ctx,head_dim", [(64, 16), (50, 32)])
def test_attention_forward(causal, n_ctx, head_dim):
    heads = 2
    q, k, v = (randn((heads, n_ctx, head_dim), np.float16) for _ in range(3))
    o = np.zeros_like(q)
    scale = 1 / math.sqrt(head_dim)
    grid = (mytriton.cdiv(n_ctx, 16), heads)
    attention.attention_fwd_kernel[grid](q, k, v, o, scale, n_ctx, HEAD_DIM=head_dim, BLOCK_M=16, BLOCK_N=16,
                                         CAUSAL=causal)
    np.testing.assert_allclose(o.astype(np.float32), attention_reference(q, k, v, scale, causal), rtol=1e-2, atol=1e-2)


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
def test_emulated_cuda_agrees_with_the_interpreter():
    from tests.test_cuda_emulated import same_as_interpreter
    m, n, k = 40, 24, 48
    a, b = randn((m, k), np.float16), randn((k, n), np.float16)
    same_as_interpreter(gemm.matmul_kernel, {
        "a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", **{p: "i32" for p in (
            "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn")}},
        {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2, "ACTIVATION": "leaky_relu"},
        [a, b, np.zeros((m, n), np.float16), m, n, k, k, 1, n, 1, n, 1], (mytriton.cdiv(m, 16) * mytriton.cdiv(n, 16),),
        4, tol=2e-3)
    heads, n_ctx, d = 1, 40, 16
    q, kk, v = (randn((heads, n_ctx, d), np.float16) for _ in range(3))
    same_as_interpreter(attention.attention_fwd_kernel, {
        "q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp16", "sm_scale": "fp32", "N_CTX": "i32"},
        {"HEAD_DIM": d, "BLOCK_M": 16, "BLOCK_N": 16, "CAUSAL": True},
        [q, kk, v, np.zeros_like(q), 0.25, n_ctx], (mytriton.cdiv(n_ctx, 16), heads), 4, tol=2e-3)


def test_int8_matmul_kernel_is_exact():
    m, n, k = 40, 56, 96
    a, b = (RNG.integers(-128, 128, s).astype(np.int8) for s in ((m, k), (k, n)))
    c = np.zeros((m, n), np.int32)
    gemm.int8_matmul_kernel[(mytriton.cdiv(m, 32) * mytriton.cdiv(n, 32),)](a, b, c, m, n, k, k, n, n, BLOCK_M=32,
                                                                             BLOCK_N=32, BLOCK_K=32, GROUP_M=2)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))

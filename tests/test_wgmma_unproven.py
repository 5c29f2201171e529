"""``tl.dot`` stays on Hopper's ``wgmma`` whatever the alignment proofs say: a tile ``cp.async``
cannot copy (unpromised strides and sizes, wrapped ``%`` offsets, odd sizes, masks) is loaded into
registers and stored into the same swizzled ring, fenced for the async proxy; and the axis analysis
keeps the runs of ``(start + arange(n)) % size`` where ``size`` is a multiple of 16, as Triton's does,
so the wrapped GEMM most Triton users start from copies 16-byte runs once its sizes are promised.
Checked in the PTX and by running the CUDA on the CPU emulator against the interpreter, on sizes
that are multiples of nothing."""
from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import mytriton
import mytriton.language as tl
from mytriton.compiler import build_ssa
from mytriton.ir.ssa import walk
from mytriton.passes.axisinfo import analyze
from tests import cuda_emulator

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "manifests" / "kernels"))
import wrapped_gemm  # noqa: E402

RNG = np.random.default_rng(46)
INTS = ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn")
NP = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16, "fp32": np.float32, "i8": np.int8}
OUT = {"fp16": "fp16", "bf16": "bf16", "fp32": "fp32", "i8": "i32"}


def signature(dtype: str, promised: bool) -> tuple[dict, dict]:
    """The wrapped GEMM's signature: plain (as a manifest writes it), or as Triton's JIT specializes
    contiguous operands (pointers and sizes divisible by 16, the unit strides compiled in)."""
    s = ":16" if promised else ""
    sig = {"a_ptr": f"*{dtype}{s}", "b_ptr": f"*{dtype}{s}", "c_ptr": f"*{OUT[dtype]}{s}",
           **{p: "i32" + s for p in INTS}}
    ones = {}
    if promised:
        ones = {p: 1 for p in ("stride_ak", "stride_bn", "stride_cn")}
        for p in ones:
            del sig[p]
    return sig, ones


def compiled(dtype: str, promised: bool, bm=128, bn=128, bk=64, warps=8, stages=3):
    sig, ones = signature(dtype, promised)
    ce = {"BM": bm, "BN": bn, "BK": bk, "GROUP": 4, **ones}
    return mytriton.compile(wrapped_gemm.wrapped_matmul, sig, ce, target="sm_90a", num_warps=warps, num_stages=stages)


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32", "i8"])
@pytest.mark.parametrize("promised", [True, False])
def test_the_wrapped_gemm_is_on_wgmma_with_or_without_promises(dtype, promised):
    ptx = compiled(dtype, promised, bk=32 if dtype == "fp32" else 64).asm["ptx"]   # (K steps of at most 128 bytes)
    shape = {"fp16": "k16.f32.f16.f16", "bf16": "k16.f32.bf16.bf16", "fp32": "k8.f32.tf32.tf32", "i8": "k32.s32.s8.s8"}
    assert f"wgmma.mma_async.sync.aligned.m64n128{shape[dtype]}" in ptx and "mma.sync" not in ptx
    # promised: both operands' 16-byte runs copied by cp.async (tf32 and int8 B, read along K only,
    # through registers); plain: every tile through registers, fenced for wgmma's reads
    copies = ptx.count("cp.async.cg.shared.global") + ptx.count("cp.async.ca.shared.global")
    assert (copies > 0) == promised
    assert ("fence.proxy.async.shared::cta" in ptx) == (not promised or dtype in ("fp32", "i8"))


def test_a_wrapped_run_keeps_its_contiguity_where_the_size_is_a_multiple_of_16():
    def cols_info(promised):
        sig, ones = signature("fp16", promised)
        fn = build_ssa(wrapped_gemm.wrapped_matmul, sig, {"BM": 64, "BN": 64, "BK": 32, "GROUP": 4, **ones})
        info = analyze(fn)        # (the two block remainders: rows % M and cols % N)
        return [info.get(op.result) for op in walk(fn.body) if op.name == "mod" and getattr(op.result.type, "shape", ())]
    promised, plain = cols_info(True), cols_info(False)
    assert [i.contiguity for i in promised] == [(16,), (16,)] and [i.divisibility for i in promised] == [(16,), (16,)]
    assert [i.contiguity for i in plain] == [(1,), (1,)]


def test_a_wrapped_run_is_cut_where_its_start_is_not_aligned():
    """``(3 + arange(64)) % n`` with n a multiple of 16 wraps inside a run of 16: no contiguity is
    claimed beyond what the start's divisibility allows."""
    @mytriton.jit
    def shifted(x_ptr, out_ptr, n):
        offs = (3 + tl.arange(0, 64)) % n
        tl.store(out_ptr + tl.arange(0, 64), tl.load(x_ptr + offs))
    fn = build_ssa(shifted, {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": "i32:16"}, {})
    info = analyze(fn)
    (mod,) = [op for op in walk(fn.body) if op.name == "mod"]
    assert info.get(mod.result).contiguity == (1,)
    x = np.arange(40, dtype=np.float32)
    out = np.zeros(64, np.float32)
    shifted[(1,)](x, out, 32)
    np.testing.assert_array_equal(out, x[(3 + np.arange(64)) % 32])


def _run(dtype, m, n, k, bm, bn, bk, warps, promised, a_transposed=False):
    """The wrapped GEMM as emulated CUDA and in the interpreter; ``a_transposed``: A given as the
    transpose of a K x M array (stride_am 1), which a plain signature allows."""
    npd = NP[dtype]
    scale = 8 if dtype == "i8" else 1
    pad = (lambda x: -(-x // 16) * 16) if promised else (lambda x: x)
    a_store = (RNG.standard_normal((k, m) if a_transposed else (m, pad(k))) * scale).astype(np.float32).astype(npd)
    b = (RNG.standard_normal((k, pad(n))) * scale).astype(np.float32).astype(npd)
    a_strides = (1, m) if a_transposed else (pad(k), 1)
    ints = dict(zip(INTS, (m, n, k, *a_strides, pad(n), 1, pad(n), 1)))
    sig, ones = signature(dtype, promised)
    ce = {"BM": bm, "BN": bn, "BK": bk, "GROUP": 2}
    ck = mytriton.compile(wrapped_gemm.wrapped_matmul, sig, {**ones, **ce}, target="sm_90a", num_warps=warps)
    assert "wgmma.mma_async" in ck.asm["cu"]
    out = NP[OUT[dtype]] if OUT[dtype] != "i32" else np.int32
    grid = (mytriton.cdiv(m, bm) * mytriton.cdiv(n, bn),)
    c_cuda, c_interp = np.zeros((m, pad(n)), out), np.zeros((m, pad(n)), out)
    cuda_emulator.run(ck.asm["cu"], [a_store, b, c_cuda] + [v for p, v in ints.items() if p not in ones], grid)
    wrapped_gemm.wrapped_matmul[grid](a_store, b, c_interp, *ints.values(), **ce, num_warps=warps)
    a = a_store.T if a_transposed else a_store[:, :k]
    want = a.astype(np.float64) @ b[:, :n].astype(np.float64)
    assert not c_cuda[:, n:].any()
    return c_cuda[:, :n], c_interp[:, :n], want


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("dtype,m,n,k,bm,bn,bk,warps,a_transposed", [
    ("fp16", 72, 40, 50, 64, 32, 32, 4, False),      # plain sizes: every tile through registers
    ("bf16", 130, 88, 97, 128, 64, 32, 8, False),    # two warpgroups, tails in M, N and K
    ("fp16", 67, 48, 45, 64, 64, 16, 4, True),       # A column-major (stride_am 1): runs along M, stored K-major
    ("fp32", 65, 33, 47, 64, 32, 32, 4, False),      # tf32
    ("i8", 70, 40, 100, 64, 32, 64, 4, False),       # int8: exact
])
def test_emulated_plain_wgmma_gemm_agrees_with_the_interpreter(dtype, m, n, k, bm, bn, bk, warps, a_transposed):
    got, interp, want = _run(dtype, m, n, k, bm, bn, bk, warps, False, a_transposed)
    if dtype == "i8":
        np.testing.assert_array_equal(got, want.astype(np.int32))
        np.testing.assert_array_equal(interp, want.astype(np.int32))
        return
    tol = {"fp16": 2e-3, "bf16": 8e-3, "fp32": 2e-3}[dtype]
    np.testing.assert_allclose(got.astype(np.float32), interp.astype(np.float32), rtol=tol, atol=2e-2)
    np.testing.assert_allclose(interp.astype(np.float32), want, rtol=2e-2, atol=5e-2)


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
def test_emulated_promised_wrapped_gemm_agrees_with_the_interpreter():
    got, interp, want = _run("fp16", 96, 80, 80, 64, 32, 32, 4, True)
    np.testing.assert_allclose(got.astype(np.float32), interp.astype(np.float32), rtol=2e-3, atol=2e-2)


@pytest.mark.parametrize("dtype,promised,warps,bm,target,story", [
    ("fp16", True, 8, 128, "sm_90a", "tl.dot 128x32 @ 32x64 fp16: wgmma; A copied by cp.async into a 4-buffer ring; "
                                     "B copied by cp.async into a 4-buffer ring"),
    ("fp16", False, 8, 128, "sm_90a", "tl.dot 128x32 @ 32x64 fp16: wgmma; A loaded into registers and stored into a "
                                      "4-buffer ring: its addresses are not proven contiguous along dimension 1"),
    ("fp16", True, 4, 32, "sm_90a", "tl.dot 32x32 @ 32x64 fp16: mma.sync; not wgmma: the result's 32 rows are not a "
                                    "multiple of 64 (64 rows for each of the 1 warpgroup of num_warps=4)"),
    ("fp16", True, 4, 128, "sm_90", "mma.sync; not wgmma: the target is sm_90: wgmma is the sm_90a target's (add "
                                    "sm_90a to the targets for H100/H200)"),
    ("fp32", True, 4, 64, "sm_90a", "fp32: wgmma; A copied by cp.async into a 3-buffer ring; B loaded into registers "
                                    "and stored into a 3-buffer ring: the ring holds the tile along dimension 0 and "
                                    "its memory runs along dimension 1: it is transposed through registers"),
])
def test_the_kernel_says_what_computes_each_dot_and_why(dtype, promised, warps, bm, target, story):
    sig, ones = signature(dtype, promised)
    ck = mytriton.compile(wrapped_gemm.wrapped_matmul, sig, dict(BM=bm, BN=64, BK=32, GROUP=4, **ones), target=target,
                          num_warps=warps)
    (line,) = ck.metadata["explain"]
    assert line.startswith("wrapped_gemm.py:") and story in line, line

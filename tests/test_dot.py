"""tl.dot with Triton 3.6's semantics: the interpreter against numpy (fp16, bf16, fp32 as tf32 /
tf32x3 / ieee, fp64, int8; an accumulator; fp16 out_dtype; a K loop with masked tails), the errors
Triton gives (at the kernel's line), the CUDA backend's portable dot run on the CPU emulator against
the interpreter, and the MLIR backend's refusal."""
import re

import ml_dtypes
import numpy as np
import pytest

import mytriton
import mytriton.language as tl
from mytriton.backends.interpreter.executor import dot_products
from tests import bank_conflicts, cuda_emulator
from tests.kernel_files import compile_error
from tests.kernels import batched

RNG = np.random.default_rng(13)


@mytriton.jit
def dot_tile(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, PREC: tl.constexpr,
             ACC: tl.constexpr, OUT: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if ACC:
        c = tl.dot(a, b, tl.load(c_ptr + rm[:, None] * N + rn[None, :]), input_precision=PREC, out_dtype=OUT)
    else:
        c = tl.dot(a, b, input_precision=PREC, out_dtype=OUT)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@mytriton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Triton tutorial 03's shape of kernel: a K loop of masked tiles into an fp32 accumulator."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :],
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def operands(dtype, m, n, k):
    if dtype == np.int8:
        return (RNG.integers(-128, 128, (m, k)).astype(np.int8), RNG.integers(-128, 128, (k, n)).astype(np.int8))
    return RNG.standard_normal((m, k)).astype(dtype), RNG.standard_normal((k, n)).astype(dtype)


def tf32_truncated(x):
    return (x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


@pytest.mark.parametrize("dtype,prec,tol", [
    (np.float16, "tf32", 1e-5), (ml_dtypes.bfloat16, "tf32", 1e-5), (np.float32, "ieee", 1e-5),
    (np.float32, "tf32x3", 1e-5), (np.float64, "ieee", 1e-12), (np.int8, "tf32", 0)])
@pytest.mark.parametrize("m,n,k", [(16, 16, 32), (1, 8, 16), (32, 4, 64)])
def test_interpreter_dot_as_numpy(dtype, prec, tol, m, n, k):
    if dtype == np.int8 and k < 32:
        k = 32
    a, b = operands(dtype, m, n, k)
    out = {np.int8: np.int32, np.float64: np.float64}.get(dtype, np.float32)
    c = np.zeros((m, n), out)
    dot_tile[(1,)](a, b, c, m, n, k, prec, False, tl.float32)
    want = a.astype(np.int64) @ b.astype(np.int64) if dtype == np.int8 else a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=tol, atol=tol * k)


def test_tf32_drops_the_low_mantissa_bits_of_fp32_operands():
    """input_precision="tf32" (the default) reads fp32 operands as the tensor cores do."""
    a, b = operands(np.float32, 16, 16, 32)
    c = np.zeros((16, 16), np.float32)
    dot_tile[(1,)](a, b, c, 16, 16, 32, "tf32", False, tl.float32)
    np.testing.assert_allclose(c, tf32_truncated(a).astype(np.float64) @ tf32_truncated(b), rtol=1e-5, atol=1e-5)
    assert np.abs(c - a.astype(np.float64) @ b).max() > 1e-4        # (and that is not the ieee product)


def test_accumulator_and_fp16_out_dtype():
    a, b = operands(np.float16, 16, 32, 16)
    c = RNG.standard_normal((16, 32)).astype(np.float16)
    want = (a.astype(np.float32) @ b.astype(np.float32) + c.astype(np.float32)).astype(np.float16)
    dot_tile[(1,)](a, b, c, 16, 32, 16, "tf32", True, tl.float16)
    np.testing.assert_allclose(c.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("m,n,k", [(37, 45, 70), (64, 64, 64), (1, 100, 33)])
def test_matmul_with_masked_tails(m, n, k):
    a, b = operands(np.float16, m, n, k)
    c = np.zeros((m, n), np.float16)
    grid = (mytriton.cdiv(m, 32), mytriton.cdiv(n, 32))
    matmul[grid](a, b, c, m, n, k, k, n, n, BM=32, BN=32, BK=16)
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), rtol=2e-3, atol=2e-2)


@mytriton.jit
def _bad_dot(a_ptr, b_ptr, CASE: tl.constexpr):
    r16 = tl.arange(0, 16)
    a = tl.load(a_ptr + r16[:, None] * 16 + r16[None, :])
    b = tl.load(b_ptr + r16[:, None] * 16 + r16[None, :])
    if CASE == 0:
        c = tl.dot(a, b.to(tl.float16))
    elif CASE == 1:
        c = tl.dot(a, tl.load(b_ptr + tl.arange(0, 8)[:, None] * 16 + r16[None, :]))
    elif CASE == 2:
        c = tl.dot(a, b, input_precision="bf16x9")
    elif CASE == 3:
        c = tl.dot(a, b, out_dtype=tl.bfloat16)
    elif CASE == 4:
        c = tl.dot(a, b, tl.zeros((16, 16), tl.float16))
    elif CASE == 6:             # (as Triton: an int32 accumulator needs out_dtype=tl.int32)
        c = tl.dot(tl.zeros((16, 32), tl.int8), tl.zeros((32, 16), tl.int8), tl.zeros((16, 16), tl.int32))
    else:
        c = tl.dot(tl.load(a_ptr + r16), b)
    tl.store(a_ptr + r16[:, None] * 16 + r16[None, :], c)


@pytest.mark.parametrize("case,message", [
    (0, "Both operands must be same dtype. Got f32 and f16"),
    (1, r"are not compatible for matmul \(second index of first shape \(16\) must be equal to first index of "
        r"second shape \(8\)"),
    (2, r"input_precision must be one of \('tf32', 'tf32x3', 'ieee', 'bf16x3', 'bf16x6'\). Got bf16x9"),
    (3, "out_dtype=bfloat16 is unsupported"),
    (4, r"the accumulator must be a \[16, 16\] block of f32"),
    (5, "Both inputs must have the same rank, 2 or more"),
    (6, r"the accumulator's dtype tl.int32 must be the out_dtype \(tl.float32\): pass out_dtype=tl.int32"),
])
def test_errors_name_the_line(case, message):
    with pytest.raises(mytriton.CompilationError) as e:
        mytriton.compile(_bad_dot, {"a_ptr": "*fp32", "b_ptr": "*fp32"}, {"CASE": case})
    assert re.search(message, str(e.value)), str(e.value)
    assert re.search(r"test_dot\.py:\d+:\d+: error", str(e.value))


def test_k_below_16_is_refused():
    with pytest.raises(mytriton.CompilationError, match="Input shapes should have M >= 1, N >= 1 and K >= 16"):
        mytriton.compile(dot_tile, {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"},
                         {"M": 16, "N": 16, "K": 8, "PREC": "tf32", "ACC": False, "OUT": tl.float32})


def test_tf32x3_is_close_to_ieee():
    a, b = operands(np.float32, 8, 8, 64)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(dot_products(a[None], b[None], "tf32x3")[0] - exact).max() < 1e-4
    assert np.abs(dot_products(a[None], b[None], "tf32")[0] - exact).max() > 1e-3


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("dtype,prec,warps", [(np.float32, "tf32", 4), (np.float32, "tf32x3", 2),
                                              (np.float16, "tf32", 4), (np.int8, "tf32", 1), (np.float64, "ieee", 2)])
def test_emulated_cuda_agrees_with_the_interpreter(dtype, prec, warps):
    from tests.test_cuda_emulated import same_as_interpreter
    m, n, k = 16, 32, 32
    a, b = operands(dtype, m, n, k)
    out = {np.int8: np.int32, np.float64: np.float64}.get(dtype, np.float32)
    name = {np.float32: "fp32", np.float16: "fp16", np.int8: "i8", np.float64: "fp64"}[dtype]
    cname = {np.int32: "i32", np.float64: "fp64", np.float32: "fp32"}[out]
    same_as_interpreter(dot_tile, {"a_ptr": f"*{name}", "b_ptr": f"*{name}", "c_ptr": f"*{cname}"},
                        {"M": m, "N": n, "K": k, "PREC": prec, "ACC": True,
                         "OUT": {np.int32: tl.int32, np.float64: tl.float64}.get(out, tl.float32)},
                        [a, b, RNG.standard_normal((m, n)).astype(out) if out != np.int32 else
                         RNG.integers(-5, 5, (m, n)).astype(np.int32)], (1,), warps, tol=1e-4)


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
def test_emulated_matmul_loop_agrees_with_the_interpreter():
    from tests.test_cuda_emulated import same_as_interpreter
    m, n, k = 37, 20, 50
    a, b = operands(np.float16, m, n, k)
    same_as_interpreter(matmul, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
                                 "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"},
                        {"BM": 16, "BN": 32, "BK": 16}, [a, b, np.zeros((m, n), np.float16), m, n, k, k, n, n],
                        (3, 1), 4, tol=2e-3)


def test_mlir_backend_refuses_dot_at_its_line():
    with pytest.raises(mytriton.CompilationError) as e:
        mytriton.compile(dot_tile, {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"},
                         {"M": 16, "N": 16, "K": 16, "PREC": "tf32", "ACC": False, "OUT": tl.float32}, backend="mlir")
    assert "MLIR backend does not support the 'dot' op" in str(e.value)
    assert re.search(r"test_dot\.py:\d+:\d+", str(e.value))


def test_the_mma_layout_is_the_m16n8k16_accumulator_fragment():
    """PTX ISA, mma.m16n8k16 with fp32 accumulators: lane l holds c0, c1 at row l/4, columns
    2(l%4) and +1, and c2, c3 eight rows below; every element of the tile is held exactly once."""
    from mytriton.ir.layout import MmaLayout, mma_layout, to_linear
    ll = to_linear(MmaLayout((1, 1)), (16, 8), 1)
    for lane in range(32):
        g, t = lane // 4, lane % 4
        assert [ll.apply(register=r, lane=lane, warp=0) for r in range(4)] == \
            [(g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)]
    for shape, warps in (((64, 64), 4), ((128, 32), 8), ((16, 64), 4), ((32, 16), 2)):
        ll = to_linear(mma_layout(shape, warps), shape, warps)
        held = [ll.apply(register=r, lane=t % 32, warp=t // 32) for t in range(32 * warps) for r in range(ll.num_regs)]
        assert sorted(set(held)) == [(i, j) for i in range(shape[0]) for j in range(shape[1])]
        assert len(held) == shape[0] * shape[1]


def test_which_dots_the_tensor_cores_compute():
    """With M >= 16 and N >= 8, into fp32 fp16/bf16 operands and fp32 ones as tf32 or tf32x3, and
    int8 into int32: the mma layout (mma.sync); the rest (ieee fp32, fp16 results, fp64, small M):
    the portable dot."""
    from mytriton.compiler import build_ssa
    from mytriton.ir.layout import MmaLayout
    from mytriton.ir.ssa import walk
    from mytriton.passes.layout import assign_layouts
    for name, m, n, prec, out, mma in (
            ("fp16", 16, 8, "tf32", tl.float32, True), ("bf16", 64, 32, "tf32", tl.float32, True),
            ("fp32", 16, 16, "tf32", tl.float32, True), ("fp32", 32, 16, "tf32x3", tl.float32, True),
            ("fp32", 16, 16, "ieee", tl.float32, False), ("fp16", 16, 8, "tf32", tl.float16, False),
            ("fp16", 1, 16, "tf32", tl.float32, False), ("fp64", 16, 16, "ieee", tl.float64, False),
            ("i8", 16, 8, "tf32", tl.float32, True)):
        func = assign_layouts(build_ssa(dot_tile, {"a_ptr": f"*{name}", "b_ptr": f"*{name}", "c_ptr": "*fp32"},
                                        {"M": m, "N": n, "K": 32, "PREC": prec, "ACC": False, "OUT": out}, 4))
        dot = next(op for op in walk(func.body) if op.name == "dot")
        assert isinstance(dot.result.layout, MmaLayout) == mma, (name, m, n, prec, out)


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("dtype,prec", [(np.float16, "tf32"), (ml_dtypes.bfloat16, "tf32"), (np.float32, "tf32"),
                                        (np.float32, "tf32x3"), (np.int8, "tf32")])
@pytest.mark.parametrize("m,n,k,warps", [(16, 8, 16, 1), (64, 64, 32, 4), (32, 16, 64, 2), (16, 64, 16, 4),
                                         (128, 32, 16, 8)])
def test_emulated_tensor_core_dot_agrees_with_the_interpreter(dtype, prec, m, n, k, warps):
    """The mma.sync paths (m16n8k16 for halves, m16n8k8.tf32 for fp32; emulated warp by warp on the
    CPU, tf32 operands read as the tensor cores do) against the interpreter."""
    from tests.test_cuda_emulated import same_as_interpreter
    k = max(k, 32) if dtype == np.int8 else k
    a, b = operands(dtype, m, n, k)
    name = {np.float16: "fp16", np.float32: "fp32", np.int8: "i8"}.get(dtype, "bf16")
    sig = {"a_ptr": f"*{name}", "b_ptr": f"*{name}", "c_ptr": "*i32" if name == "i8" else "*fp32"}
    ce = {"M": m, "N": n, "K": k, "PREC": prec, "ACC": True, "OUT": tl.int32 if name == "i8" else tl.float32}
    ck = mytriton.compile(dot_tile, sig, ce, num_warps=warps)
    assert {"fp32": "mt_mma_m16n8k8_tf32(", "i8": "mt_mma_m16n8k32_s8("}.get(name, "mt_mma_m16n8k16<") in ck.asm["cu"]
    acc = RNG.integers(-99, 99, (m, n)).astype(np.int32) if name == "i8" else RNG.standard_normal((m, n)).astype(np.float32)
    same_as_interpreter(dot_tile, sig, ce, [a, b, acc], (1,), warps, tol=0 if name == "i8" else 1e-4)


@pytest.mark.parametrize("k", [16, 32, 64, 128])
@pytest.mark.parametrize("name,size,trans_b", [("fp16", 2, True), ("fp32", 4, False), ("i8", 1, False)])
def test_tensor_core_fragments_load_without_bank_conflicts(k, name, size, trans_b):
    """A dot outside a loop stages its operands in shared memory (A: M rows of K; B: K rows of N
    for 16-bit elements loaded along N, read transposed, else N rows of K): every 8x8 matrix an
    ldmatrix reads has its eight rows in eight different 16-byte bank groups (the addresses of
    the generated CUDA, evaluated for every lane: tests/bank_conflicts.py)."""
    k = max(k, 32) if name == "i8" else k
    cu = mytriton.compile(dot_tile, {"a_ptr": f"*{name}", "b_ptr": f"*{name}", "c_ptr": "*fp32"},
                          {"M": 32, "N": 32, "K": k, "PREC": "tf32", "ACC": False, "OUT": tl.float32}).asm["cu"]
    assert (f"mt_ldmatrix_x4<{'true' if trans_b else 'false'}>(fb[j][0]" in cu) and "mt_ldmatrix_x4<false>(fa[i][0]" in cu
    assert bank_conflicts.ldmatrix_conflicts(cu, 4, k, 32 // size, size) == []


def test_a_dot_too_large_for_shared_memory_is_refused_at_its_line():
    with pytest.raises(mytriton.CompilationError) as e:
        mytriton.compile(dot_tile, {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"},
                         {"M": 256, "N": 256, "K": 256, "PREC": "ieee", "ACC": False, "OUT": tl.float32}, num_warps=8)
    assert "tl.dot of a 256x256 by a 256x256 tile stages 524288 bytes of operands in shared memory" in str(e.value)
    assert re.search(r"test_dot\.py:\d+:\d+: error", str(e.value))


# --- batched (3-d) dots ----------------------------------------------------------------------------

@pytest.mark.parametrize("b,m,n,k,warps", [(2, 32, 32, 32, 4), (4, 16, 16, 16, 1), (8, 32, 16, 32, 2)])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "i8"])
def test_batched_dot_as_numpy(b, m, n, k, warps, dtype):
    """Each batch's product, exact on small integers: the interpreter, and the generated CUDA on the
    CPU emulator (the portable dot: a 3-d dot stays off the tensor cores)."""
    k = max(k, 32) if dtype == "i8" else k
    np_type = {"fp32": np.float32, "fp16": np.float16, "i8": np.int8}[dtype]
    out_type, out_np = (tl.int32, np.int32) if dtype == "i8" else (tl.float32, np.float32)
    q = np.random.default_rng(3).integers(-3, 4, (b, m, k)).astype(np_type)
    kk = np.random.default_rng(4).integers(-3, 4, (b, k, n)).astype(np_type)
    want = np.matmul(q.astype(np.int64), kk.astype(np.int64)).astype(out_np)
    o = np.zeros((b, m, n), out_np)
    args = dict(B=b, M=m, N=n, KK=k, PRECISION="ieee", OUT=out_type)
    batched.dot3d[(1,)](q, kk, o, **args)
    np.testing.assert_array_equal(o, want)
    ck = mytriton.compile(batched.dot3d, {"Q": f"*{dtype}", "K": f"*{dtype}", "O": f"*{'i32' if dtype == 'i8' else 'fp32'}"},
                          args, num_warps=warps, target="sm_90a")
    assert "mma" not in ck.asm["ptx"] and ck.asm["cubin"]
    if cuda_emulator.available() and (dtype, b) in (("fp32", 4), ("i8", 2)):       # (a few: g++ takes its time)
        got = np.zeros_like(o)
        cuda_emulator.run(ck.asm["cu"], [q, kk, got], (1,))
        np.testing.assert_array_equal(got, want)


def test_batched_dot_shapes_must_agree(tmp_path):
    text = compile_error(tmp_path / "bad_batch.py",
                         "import mytriton\nimport mytriton.language as tl\n\n\n@mytriton.jit\ndef k(X):\n"
                         "    a = tl.zeros((2, 16, 16), tl.float32)\n    b = tl.zeros((4, 16, 16), tl.float32)\n"
                         "    c = tl.zeros((16, 16), tl.float32)\n"
                         "    tl.store(X + tl.arange(0, 16), tl.sum(tl.sum(tl.dot(a, b), 0), 0))\n"
                         "    tl.store(X + tl.arange(0, 16), tl.sum(tl.dot(a, c), 0))\n", {"X": "*fp32"})
    assert ("Batch dimension of both inputs must be the same: lhs [2, 16, 16], rhs [4, 16, 16]" in text
            and "bad_batch.py:10" in text)


def test_dots_with_several_batch_dimensions():
    a = np.random.default_rng(8).integers(-3, 4, (2, 2, 16, 16)).astype(np.float32)
    b = np.random.default_rng(9).integers(-3, 4, (2, 2, 16, 16)).astype(np.float32)
    o = np.zeros_like(a)
    batched.dot4d[(1,)](a, b, o, M=16)
    np.testing.assert_array_equal(o, a @ b)
    if cuda_emulator.available():
        ck = mytriton.compile(batched.dot4d, {"A": "*fp32", "B": "*fp32", "O": "*fp32"}, {"M": 16})
        got = np.zeros_like(o)
        cuda_emulator.run(ck.asm["cu"], [a, b, got], (1,))
        np.testing.assert_array_equal(got, a @ b)


@pytest.mark.parametrize("precision,bound", [("bf16x3", 1e-3), ("bf16x6", 2e-5)])
def test_bf16_split_precisions(precision, bound):
    """fp32 operands split into 2 or 3 bf16 terms (Triton 3.6's "bf16x3"/"bf16x6"): close to the
    exact product (tf32 is ~1e-2 off on these inputs), and on the tensor cores."""
    a, b = (np.random.default_rng(s).standard_normal((32, 32)).astype(np.float32) for s in (1, 2))
    o = np.zeros_like(a)
    batched.precision_dot[(1,)](a, b, o, M=32, PRECISION=precision)
    assert np.abs(o - a.astype(np.float64) @ b.astype(np.float64)).max() < bound
    ck = mytriton.compile(batched.precision_dot, {"A": "*fp32", "B": "*fp32", "O": "*fp32"},
                          {"M": 32, "PRECISION": precision}, target="sm_90a")
    assert ck.asm["ptx"].count("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") > 0

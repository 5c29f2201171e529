"""The software pipeline of tl.dot operands: loads whose one use is a dot operand are issued
num_stages - 1 iterations ahead (passes/prefetch.py; carried pointers advanced by a loop-invariant
step are inductions it can move ahead), and the CUDA backend keeps their tiles in rings of
shared-memory buffers filled by cp.async (backends/cuda/dot.py) — checked on the SSA, on the
generated CUDA, and by running it on the CPU emulator against the interpreter: masked tails in M,
N and K, loops shorter than the pipeline, the copy path and the path through registers."""
import re
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import mytriton
import mytriton.language as tl
from mytriton.compiler import build_ssa
from mytriton.ir.ssa import walk
from tests import bank_conflicts, cuda_emulator

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "manifests" / "kernels"))
import gemm  # noqa: E402

RNG = np.random.default_rng(8)
INTS = ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn")


def gemm_signature(dtype: str, aligned: bool) -> tuple[dict, dict]:
    """matmul_kernel's signature as the JIT specializes it for contiguous operands: pointers and
    sizes divisible by 16 (where ``aligned``), the unit strides compiled in as constants."""
    s = ":16" if aligned else ""
    sig = {"a_ptr": f"*{dtype}{s}", "b_ptr": f"*{dtype}{s}", "c_ptr": f"*{dtype}{s}",
           **{p: "i32" + s for p in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")}}
    return sig, {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1}


def stage_marks(fn):
    """(stages, ahead) of each marked load: in front of the first loop, and in its body."""
    (loop,) = [op for op in fn.body.ops if op.name == "for"]
    front = [(op.attrs["stages"], op.attrs["ahead"]) for op in fn.body.ops if "stages" in op.attrs]
    inside = [(op.attrs["stages"], op.attrs["ahead"]) for op in walk(loop.regions[0]) if "stages" in op.attrs]
    return front, inside


def test_dot_operands_are_loaded_two_iterations_ahead_by_default():
    sig, ones = gemm_signature("fp16", True)
    fn = build_ssa(gemm.matmul_kernel, sig, {**ones, "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8,
                                             "ACTIVATION": ""})
    front, inside = stage_marks(fn)
    assert sorted(front) == [(3, 0), (3, 0), (3, 1), (3, 1)] and inside == [(3, 2), (3, 2)]


@mytriton.jit
def _dot_loop(a_ptr, b_ptr, c_ptr, K, STAGES: tl.constexpr, STORE: tl.constexpr, BLOCK: tl.constexpr,
              PREC: tl.constexpr = "tf32"):
    rows, cols = tl.arange(0, BLOCK), tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in tl.range(0, K, BLOCK, num_stages=STAGES):
        a = tl.load(a_ptr + rows[:, None] * K + (k + cols)[None, :])
        b = tl.load(b_ptr + (k + rows)[:, None] * BLOCK + cols[None, :])
        acc = tl.dot(a, b, acc, input_precision=PREC)
        if STORE:
            tl.store(c_ptr + rows, tl.sum(acc, axis=1))
    tl.store(c_ptr + rows[:, None] * BLOCK + cols[None, :], acc)


@pytest.mark.parametrize("stages,store,dtype,want", [(4, False, "fp16", ([0, 1, 2], [3])),
                                                     (2, False, "fp16", ([0], [1])), (1, False, "fp16", ([], [])),
                                                     (3, True, "fp16", ([], [])),
                                                     (3, False, "ieee", ([], []))])   # (the CUDA cores' dot)
def test_num_stages_sets_the_depth_and_loops_that_store_keep_their_loads(stages, store, dtype, want):
    ieee = dtype == "ieee"
    fn = build_ssa(_dot_loop, {"a_ptr": "*fp32" if ieee else f"*{dtype}", "b_ptr": "*fp32" if ieee else f"*{dtype}",
                               "c_ptr": "*fp32", "K": "i32"},
                   {"STAGES": stages, "STORE": store, "BLOCK": 16, "PREC": "ieee" if ieee else "tf32"})
    front, inside = stage_marks(fn)
    assert sorted(k for _, k in front) == sorted(want[0] * 2) and [k for _, k in inside] == want[1] * 2
    assert all(s == stages for s, _ in front + inside)
    if ieee:                 # (the loop asks for stages: its loads are prefetched one ahead in registers)
        (loop,) = [op for op in fn.body.ops if op.name == "for"]
        assert sum(n.startswith("prefetch") for n in loop.attrs["names"]) == 2


def test_the_cuda_keeps_the_operands_in_rings_filled_by_cp_async():
    sig, ones = gemm_signature("fp16", True)
    ck = mytriton.compile(gemm.matmul_kernel, sig, {**ones, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32,
                                                    "GROUP_M": 8, "ACTIVATION": ""}, num_warps=4)
    cu = ck.asm["cu"]
    # A: 128 rows of 32 halves; B: 32 rows of 128 halves (two 128-byte columns); three buffers
    # each, swizzled (16-byte chunks XORed by the row: no padding), neither ldmatrix nor cp.async
    # touching a bank group twice in a wavefront (the padded rows of 80 bytes had the copies of A
    # do so: 2-way conflicts in every quarter warp that straddles two rows)
    a_bytes, b_bytes = 128 * 32 * 2, 32 * 128 * 2
    assert re.search(rf"mt_smem \+ 0 \+ \w+_slot \* {a_bytes}\)", cu)
    assert re.search(rf"mt_smem \+ {3 * a_bytes} \+ \w+_slot \* {b_bytes}\)", cu)
    assert bank_conflicts.ldmatrix_conflicts(cu, 4, 32, 16, 2) == []
    assert bank_conflicts.cp_async_conflicts(cu, 4, 2) == []
    body = cu[cu.index("__global__"):]
    assert body.count("mt_cp_async<16>(") == 6 and body.count("mt_cp_async_commit();") == 6
    assert "mt_cp_async_wait<2>();" in cu and "mt_cp_async_wait<0>();" in cu       # (2 operands x 1 in flight)
    # the epilogue's layout conversion reuses the rings' memory after the loop; it converts the
    # fp16 result, after the cast (passes/layout.sink_conversions), not the fp32 accumulator
    assert ck.metadata["shared"] == max(3 * (a_bytes + b_bytes), 128 * 128 * 2)
    epilogue = body[body.index("mt_cp_async_wait<0>();"):]
    assert epilogue.index("__float2half_rn(") < epilogue.index("__half* buf = ")


@pytest.mark.parametrize("kernel,dtype,bm,bn,bk,warps", [
    ("matmul_kernel", "fp16", 128, 128, 32, 4), ("matmul_kernel", "bf16", 64, 128, 64, 4),
    ("matmul_kernel", "fp16", 128, 256, 32, 8), ("matmul_kernel", "fp32", 128, 64, 32, 4),
    ("int8_matmul_kernel", "i8", 128, 128, 64, 4), ("int8_matmul_kernel", "i8", 64, 64, 32, 4)])
def test_mma_sync_rings_are_free_of_bank_conflicts(kernel, dtype, bm, bn, bk, warps):
    """The pipelined GEMMs of mma.sync (sm_90, no wgmma): every ldmatrix wavefront reads eight
    16-byte bank groups, every wavefront of copies into the rings writes 32 distinct banks."""
    eb = {"fp16": 2, "bf16": 2, "fp32": 4, "i8": 1}[dtype]
    if kernel == "matmul_kernel":
        sig, ones = gemm_signature(dtype, True)
        ce = {**ones, "GROUP_M": 8, "ACTIVATION": ""}
    else:
        sig = {"a_ptr": "*i8:16", "b_ptr": "*i8:16", "c_ptr": "*i32:16",
               **{p: "i32:16" for p in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")}}
        ce = {"GROUP_M": 8}
    ck = mytriton.compile(getattr(gemm, kernel), sig, {**ce, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk},
                          num_warps=warps, num_stages=3, target="sm_90")
    cu = ck.asm["cu"]
    assert "mt_cp_async<" in cu and "wgmma" not in ck.asm["ptx"]
    assert bank_conflicts.ldmatrix_conflicts(cu, warps, bk, 32 // eb, eb) == []
    assert bank_conflicts.cp_async_conflicts(cu, warps, eb) == []


@pytest.mark.parametrize("dtype,bm,bn,bk,warps", [("fp16", 128, 128, 64, 4), ("bf16", 128, 64, 32, 4),
                                                  ("fp16", 128, 256, 64, 8)])
def test_wgmma_rings_are_written_without_bank_conflicts(dtype, bm, bn, bk, warps):
    """The same swizzle under wgmma (sm_90a): the cp.async copies into its rings write 32 distinct
    banks a wavefront."""
    sig, ones = gemm_signature(dtype, True)
    ck = mytriton.compile(gemm.matmul_kernel, sig, {**ones, "GROUP_M": 8, "ACTIVATION": "", "BLOCK_M": bm,
                                                    "BLOCK_N": bn, "BLOCK_K": bk}, num_warps=warps, target="sm_90a")
    assert "wgmma.mma_async" in ck.asm["ptx"] and "mt_cp_async<16>(" in ck.asm["cu"]
    assert bank_conflicts.cp_async_conflicts(ck.asm["cu"], warps, 2) == []


def test_the_bank_conflict_check_finds_the_padded_rows_conflicts():
    """tests/bank_conflicts.py on two hand-written copies of a 128 x 32-half tile by 128 threads (a
    lane a 16-byte chunk, four lanes a row): rows padded to 80 bytes put two of a quarter warp's
    copies in the same bank group; the chunk XORed by (row / 2) % 4 puts none."""
    padded = "for (int r = 0; r < 1; r += 1) mt_cp_async<16>(v1 + (tid >> 2) * 40 + ((tid & 3) << 3), p[r], m[r]);"
    swizzled = ("for (int r = 0; r < 1; r += 1) mt_cp_async<16>(reinterpret_cast<__half*>(reinterpret_cast<"
                "unsigned char*>(v1) + (tid >> 2) * 64 + (((tid & 3) ^ ((tid >> 3) & 3)) << 4)), p[r], m[r]);")
    found = bank_conflicts.cp_async_conflicts(padded, 4, 2)
    assert len(found) == 16 and "threads 0..: [0, 16, 32, 48, 80, 96, 112, 128]" in found[0]
    assert bank_conflicts.cp_async_conflicts(swizzled, 4, 2) == []
    with pytest.raises(ValueError, match="no cp.async copies"):
        bank_conflicts.cp_async_conflicts("mt_cp_async_commit();", 4, 2)


LINEAR_SIG = {"x_ptr": "*bf16:16", "w_ptr": "*bf16:16", "bias_ptr": "*bf16:16", "y_ptr": "*bf16:16",
              **{p: "i32:16" for p in ("M", "N", "K", "stride_xm", "stride_wk", "stride_ym")}}


def test_a_bias_and_activation_run_in_the_accumulators_layout_and_the_bf16_result_is_converted():
    """acc + bias, ReLU, cast to bf16: the conversion to the store's layout moves below the cast
    (passes/layout.sink_conversions), the bias row is converted into the accumulator's layout
    instead; the 128x128 fp32 accumulator never crosses shared memory."""
    ck = mytriton.compile(gemm.linear_kernel, LINEAR_SIG, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32,
                                                           "GROUP_M": 8, "ACTIVATION": "relu"}, num_warps=4)
    ssa = ck.asm["ssa_layout"]
    # k + tl.arange(0, BLOCK_K), wanted along A's columns and B's rows, is computed in each layout
    # (LayoutAssignment.cheap): no conversion through shared memory in the K loop
    loop = ssa[ssa.index(" = for "):ssa.rindex("yield")]
    assert "convert_layout" not in loop and loop.count("arange") == 0 and ssa.count("arange {start=0, end=32}") == 2
    tail = ssa[ssa.rindex("yield"):]
    converted = re.findall(r"convert_layout %\d+ : (\w+)<([\dx]+) x (\w+)>", tail)
    assert sorted(converted) == [("block", "128x128", "bf16"), ("vector", "128", "f32")]
    for op in ("add", "maximum", "cast"):
        assert re.search(rf"= {op} .*: block<128x128 x \w+>  #mma<", tail), op
    assert ck.metadata["shared"] < 128 * 128 * 4          # (the fp32 tile's exchange would take 64 KB)


@mytriton.jit
def _epilogue_chain(a_ptr, b_ptr, bias_ptr, scale_ptr, c_ptr, BLOCK: tl.constexpr):
    rows, cols = tl.arange(0, BLOCK), tl.arange(0, BLOCK)
    acc = tl.dot(tl.load(a_ptr + rows[:, None] * BLOCK + cols[None, :]),
                 tl.load(b_ptr + rows[:, None] * BLOCK + cols[None, :]))
    y = (acc + tl.load(bias_ptr + cols)[None, :]) * tl.load(scale_ptr + rows)[:, None]
    tl.store(c_ptr + rows[:, None] * BLOCK + cols[None, :], y.to(tl.float16))


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
def test_a_conversion_sinks_through_a_chain_with_a_row_and_a_column_operand():
    """acc + bias (a row), * scale (a column), cast to fp16: both vectors are converted into the
    accumulator's layout, the fp16 tile crosses shared memory once; emulated against numpy."""
    sig = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "bias_ptr": "*fp32:16", "scale_ptr": "*fp32:16",
           "c_ptr": "*fp16:16"}
    ck = mytriton.compile(_epilogue_chain, sig, {"BLOCK": 64}, num_warps=4, target="sm_90a")
    converted = re.findall(r"convert_layout %\d+ : (\w+)<([\dx]+) x (\w+)>", ck.asm["ssa_layout"])
    assert sorted(c for c in converted if c[0] == "block") == [("block", "64x64", "f16")]
    a, b = (RNG.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    bias, scale = (RNG.standard_normal(64).astype(np.float32) for _ in range(2))
    c = np.zeros((64, 64), np.float16)
    cuda_emulator.run(ck.asm["cu"], [a, b, bias, scale, c], (1,))
    want = (a.astype(np.float32) @ b.astype(np.float32) + bias[None, :]) * scale[:, None]
    np.testing.assert_allclose(c.astype(np.float32), want, rtol=1e-2, atol=2e-2)


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("activation", ["relu", "leaky_relu", ""])
def test_emulated_linear_layer_agrees_with_the_interpreter(activation):
    m, n, k = 80, 48, 64                        # tails in M and N
    x, w = (RNG.standard_normal(s).astype(ml_dtypes.bfloat16) for s in ((m, k), (k, n)))
    bias = RNG.standard_normal(n).astype(ml_dtypes.bfloat16)
    ce = {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 2, "ACTIVATION": activation}
    ck = mytriton.compile(gemm.linear_kernel, LINEAR_SIG, ce, num_warps=4, target="sm_90")
    grid = (mytriton.cdiv(m, 64) * mytriton.cdiv(n, 32),)
    y_cuda, y_interp = np.zeros((m, n), ml_dtypes.bfloat16), np.zeros((m, n), ml_dtypes.bfloat16)
    cuda_emulator.run(ck.asm["cu"], [x, w, bias, y_cuda, m, n, k, k, n, n], grid)
    gemm.linear_kernel[grid](x, w, bias, y_interp, m, n, k, k, n, n, **ce, num_warps=4)
    want = x.astype(np.float32) @ w.astype(np.float32) + bias.astype(np.float32)
    want = {"relu": np.maximum(want, 0), "leaky_relu": np.where(want >= 0, want, 0.01 * want), "": want}[activation]
    np.testing.assert_allclose(y_interp.astype(np.float32), want, rtol=2e-2, atol=2e-2)
    # (one bf16 ulp apart where the fp32 sums, added in another order, round to neighbours)
    np.testing.assert_allclose(y_cuda.astype(np.float32), y_interp.astype(np.float32), rtol=8e-3, atol=1e-2)


def run_gemm(dtype, m, n, k, bm, bn, bk, warps, aligned, target="sm_90", b_transposed=False):
    """matmul_kernel as emulated CUDA (compiled as the JIT specializes it) and in the interpreter
    (``b_transposed``: B given as the transpose of a row-major N x K array). ``aligned``: the rows
    are padded to multiples of 16 elements (the strides divisible by 16, so 16-byte copies), the
    tails in M, N and K are masked all the same; else the strides are the sizes themselves."""
    npd = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16, "fp32": np.float32}[dtype]
    pad = (lambda x: -(-x // 16) * 16) if aligned else (lambda x: x)
    a = RNG.standard_normal((m, pad(k))).astype(np.float32).astype(npd)
    b = RNG.standard_normal((n, pad(k)) if b_transposed else (k, pad(n))).astype(np.float32).astype(npd)
    sig, ones = gemm_signature(dtype, aligned)
    ints = dict(zip(INTS, (m, n, k, pad(k), 1, pad(n), 1, pad(n), 1)))
    if b_transposed:
        sig["stride_bn"] = sig.pop("stride_bk")
        ones = {"stride_ak": 1, "stride_bk": 1, "stride_cn": 1}
        ints.update(stride_bk=1, stride_bn=pad(k))
        sig = {p: sig[p] for p in ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bn", "stride_cm"]}
    # as the JIT specializes: divisibility by 16 only for the integers that have it (the masks of
    # the tails are computed once per run of 16 where they do: a false promise would skip them)
    sig = {p: t[:-3] if t.endswith(":16") and p in ints and ints[p] % 16 else t for p, t in sig.items()}
    ce = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 2, "ACTIVATION": ""}
    ck = mytriton.compile(gemm.matmul_kernel, sig, {**ones, **ce}, num_warps=warps, target=target)
    grid = (mytriton.cdiv(m, bm) * mytriton.cdiv(n, bn),)
    c_cuda, c_interp = np.zeros((m, pad(n)), npd), np.zeros((m, pad(n)), npd)
    cuda_emulator.run(ck.asm["cu"], [a, b, c_cuda] + [v for p, v in ints.items() if p not in ones], grid)
    gemm.matmul_kernel[grid](a, b, c_interp, *ints.values(), **ce, num_warps=warps)
    assert not c_cuda[:, n:].any()                   # (nothing written past N)
    return ck.asm["cu"], c_cuda[:, :n].astype(np.float32), c_interp[:, :n].astype(np.float32)


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("dtype,m,n,k,bm,bn,bk,warps,aligned,copied", [
    ("fp16", 48, 32, 112, 32, 32, 16, 4, True, 2),     # 7 iterations through a ring of 3 (8-byte copies)
    ("bf16", 32, 48, 32, 16, 16, 16, 2, True, 2),      # (tails in N: 48 = 3 tiles of 16)
    ("fp16", 40, 32, 16, 16, 16, 16, 1, True, 2),      # one iteration: two prefetches masked off
    ("fp16", 72, 48, 80, 64, 32, 32, 4, True, 2),      # 16-byte copies, tails in M, N and K
    ("fp16", 40, 24, 40, 32, 16, 16, 4, False, 0),     # unaligned: through registers
    ("fp32", 32, 32, 48, 32, 32, 16, 4, True, 1),      # tf32: B is stored transposed, through registers
])
def test_emulated_pipelined_gemm_agrees_with_the_interpreter(dtype, m, n, k, bm, bn, bk, warps, aligned, copied):
    """``copied``: the operands cp.async copies (each in two loads in front of the loop, one in it)."""
    cu, got, want = run_gemm(dtype, m, n, k, bm, bn, bk, warps, aligned)
    assert cu[cu.index("__global__"):].count("mt_cp_async<") == 3 * copied and "_slot" in cu
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


def test_the_kernels_num_stages_option_sets_the_depth_where_the_loop_asks_for_none():
    sig, ones = gemm_signature("fp16", True)
    ce = {**ones, "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "ACTIVATION": ""}
    for stages, aheads in ((4, [0, 1, 2]), (2, [0]), (1, [])):
        fn = build_ssa(gemm.matmul_kernel, sig, ce, num_stages=stages)
        front, inside = stage_marks(fn)
        assert sorted(k for _, k in front) == sorted(aheads * 2) and [k for _, k in inside] == ([stages - 1] * 2 if aheads else [])
        ck = mytriton.compile(gemm.matmul_kernel, sig, ce, num_stages=stages)
        assert ck.metadata["num_stages"] == stages
    # a loop's own num_stages wins over the kernel's
    fn = build_ssa(_dot_loop, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"},
                   {"STAGES": 2, "STORE": False, "BLOCK": 16}, num_stages=4)
    assert [k for _, k in stage_marks(fn)[1]] == [1, 1]
    with pytest.raises(mytriton.CompilationError, match="num_stages must be a positive int, got 0"):
        mytriton.compile(gemm.matmul_kernel, sig, ce, num_stages=0)


@pytest.mark.parametrize("target", ["sm_80", "sm_90", "sm_90a"])
@pytest.mark.parametrize("kernel,dtype", [("matmul_kernel", "fp16"), ("matmul_kernel", "bf16"), ("matmul_kernel", "fp32"),
                                          ("int8_matmul_kernel", "i8")])
def test_nvrtc_compiles_the_dot_kernels_for_every_target(kernel, dtype, target):
    """The PTX holds the intended instructions: mma.sync of the dtype's shape, ldmatrix (transposed
    for B where it is 16-bit) and cp.async with its commit
    groups and waits; on sm_90a wgmma for every type (k16 fp16/bf16, k8 tf32, k32 s8)."""
    fn = getattr(gemm, kernel)
    if kernel == "matmul_kernel":
        sig, ones = gemm_signature(dtype, True)
        ce = {**ones, "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "ACTIVATION": "relu"}
    else:
        sig = {"a_ptr": "*i8:16", "b_ptr": "*i8:16", "c_ptr": "*i32:16", **{p: "i32:16" for p in (
            "M", "N", "K", "stride_am", "stride_bk", "stride_cm")}}
        ce = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}
    ck = mytriton.compile(fn, sig, ce, target=target)
    ptx = ck.asm["ptx"]
    assert isinstance(ck.asm["cubin"], bytes) and f".target {target}" in ptx
    if target == "sm_90a":       # Hopper's warpgroup MMA, from swizzled tiles
        shape = {"fp16": "k16.f32.f16.f16", "bf16": "k16.f32.bf16.bf16", "fp32": "k8.f32.tf32.tf32",
                 "i8": "k32.s32.s8.s8"}[dtype]
        assert f"wgmma.mma_async.sync.aligned.m64n64{shape}" in ptx
        assert "wgmma.fence.sync.aligned" in ptx and "wgmma.commit_group.sync.aligned" in ptx
        # (a proxy fence only where threads store a ring's tiles themselves: tf32's and int8's B)
        assert ("fence.proxy.async.shared::cta" in ptx) == (dtype in ("fp32", "i8"))
        assert "ldmatrix" not in ptx and "mma.sync" not in ptx
    else:
        shape = {"fp16": "m16n8k16.row.col.f32.f16.f16.f32", "bf16": "m16n8k16.row.col.f32.bf16.bf16.f32",
                 "fp32": "m16n8k8.row.col.f32.tf32.tf32.f32", "i8": "m16n8k32.row.col.s32.s8.s8.s32"}[dtype]
        assert f"mma.sync.aligned.{shape}" in ptx and "wgmma" not in ptx
        assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
        assert ("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in ptx) == (dtype in ("fp16", "bf16"))
    assert "cp.async.commit_group" in ptx and "cp.async.wait_group" in ptx
    # (int8: runs of 8 bytes, copied through L1 (.ca); 16 bytes of the other types bypass it (.cg))
    assert f"cp.async.{'ca' if dtype == 'i8' else 'cg'}.shared.global" in ptx


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("dtype,m,n,k,bm,bn,bk,warps,b_transposed,wgmma", [
    ("fp16", 200, 144, 208, 128, 128, 64, 4, False, True),   # 128-byte swizzle, B along N (two 128-byte columns)
    ("bf16", 72, 48, 80, 64, 32, 32, 4, False, True),        # 64-byte rows
    ("fp16", 130, 80, 48, 128, 64, 16, 8, False, True),      # 32-byte rows of A, two warpgroups
    # B along K (x @ W.T): its tiles are laid out along their first dimension, copied as 16-byte
    # runs down the columns, and read by wgmma along K (no transpose)
    ("fp16", 64, 64, 96, 64, 64, 64, 4, True, True),
    ("fp32", 72, 48, 80, 64, 32, 32, 4, False, True),        # tf32 (k8), 128-byte rows
    ("fp32", 130, 80, 48, 128, 64, 16, 8, False, True),      # tf32, 64-byte rows, two warpgroups
])
def test_emulated_wgmma_gemm_agrees_with_the_interpreter(dtype, m, n, k, bm, bn, bk, warps, b_transposed, wgmma):
    """sm_90a: the dot on wgmma, its operands' rings swizzled (read back through the matrix
    descriptors as the emulator decodes them)."""
    cu, got, want = run_gemm(dtype, m, n, k, bm, bn, bk, warps, True, "sm_90a", b_transposed)
    body = cu[cu.index("__global__"):]
    assert ("wgmma.mma_async.sync.aligned.m64n" in body) == wgmma
    # a proxy fence after the threads' own stores into a ring only (tf32's B), not after cp.async
    assert ("mt_fence_proxy_async();" in body) == (wgmma and dtype == "fp32")
    if dtype == "fp32":              # tf32 reads B along K only: B (along N) goes through registers,
        assert ".f32.tf32.tf32" in body and body.count("mt_cp_async<") == 3
        # each thread holding 4 elements along K: one 16-byte store per run into the K-major ring
        assert "*reinterpret_cast<mt_vec<float, 4>*>(" in body
    else:
        assert (f", p, 1, 1, 0, {0 if b_transposed else 1};" in body) == wgmma
        assert body.count("mt_cp_async<") == 6             # (both operands: 2 loads in front, 1 in the loop)
    # (bf16: an element may round to its neighbour, one ulp (2^-8 relative) away, where the fp32
    # sums were added in another order)
    np.testing.assert_allclose(got, want, rtol=8e-3 if dtype == "bf16" else 2e-3, atol=2e-3)


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("m,n,k,bm,bn,bk,warps", [(72, 40, 208, 64, 32, 64, 4), (130, 64, 96, 128, 64, 32, 8)])
def test_emulated_int8_wgmma_gemm_is_exact(m, n, k, bm, bn, bk, warps):
    """int8 on wgmma (k32, int32 sums): B (along N) goes through registers into its K-major ring;
    the result equals numpy's int32 product exactly (tails in M, N and K; rows of B and C padded
    to 16-byte multiples)."""
    ld = -(-n // 16) * 16
    a = RNG.integers(-128, 128, (m, k), dtype=np.int8)
    b = np.zeros((k, ld), np.int8)
    b[:, :n] = RNG.integers(-128, 128, (k, n), dtype=np.int8)
    sig = {"a_ptr": "*i8:16", "b_ptr": "*i8:16", "c_ptr": "*i32:16", "M": "i32", "N": "i32", "K": "i32:16",
           "stride_am": "i32:16", "stride_bk": "i32:16", "stride_cm": "i32:16"}
    ce = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 2}
    ck = mytriton.compile(gemm.int8_matmul_kernel, sig, ce, num_warps=warps, target="sm_90a")
    body = ck.asm["cu"][ck.asm["cu"].index("__global__"):]
    assert "wgmma.mma_async.sync.aligned.m64n" in body and ".s32.s8.s8" in body
    assert f"*reinterpret_cast<mt_vec<signed char, {min(16, bk)}>*>(" in body     # 16-byte runs along K
    c = np.zeros((m, ld), np.int32)
    cuda_emulator.run(ck.asm["cu"], [a, b, c, m, n, k, k, ld, ld], (mytriton.cdiv(m, bm) * mytriton.cdiv(n, bn),))
    assert not c[:, n:].any()
    c = c[:, :n]
    b = b[:, :n]
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("head_dim,warps,causal", [(64, 4, True), (128, 8, False)])
def test_emulated_wgmma_attention_agrees_with_the_interpreter(head_dim, warps, causal):
    """sm_90a attention: both dots on wgmma with A in registers (q converted once before the loop;
    p renumbered from the first dot's accumulators), K read along K through its transposed view,
    V along N. The scores' group is waited for at once; the group of p @ v stays in flight into
    the next iteration, until the scores' wait there, which comes before the accumulator is read
    (``acc * alpha``); V's copies follow that dot and a barrier."""
    import attention
    heads, n_ctx = 1, 160
    q, k, v = (RNG.standard_normal((heads, n_ctx, head_dim)).astype(np.float16) for _ in range(3))
    sig = {"q_ptr": "*fp16:16", "k_ptr": "*fp16:16", "v_ptr": "*fp16:16", "o_ptr": "*fp16:16", "sm_scale": "fp32",
           "N_CTX": "i32:16"}
    ce = {"HEAD_DIM": head_dim, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": causal}
    ck = mytriton.compile(attention.attention_fwd_kernel, sig, ce, num_warps=warps, target="sm_90a")
    body = ck.asm["cu"][ck.asm["cu"].index("__global__"):]
    blocks = 128 // (64 * (warps // 4))                  # 64-row blocks per warpgroup
    assert body.count("wgmma.mma_async") == blocks * (head_dim // 16 + 64 // 16)     # q @ k^T, then p @ v
    assert ", p, 1, 1, 0;" in body and ", p, 1, 1, 1;" in body
    # `offs_n < N_CTX` on the scores is one value over 16 columns (N_CTX: i32:16): each register
    # compares its run's representative (codegen.representative), which nvcc then computes once
    assert re.search(r"\] = \(v\d+\[\(r & \d+\)\] < p_N_CTX\);", body)
    # A's fragment words are packed before the fence (written after it, ptxas fences each wgmma again)
    assert len(re.findall(r"const unsigned fa\[\d+\]\[4\] = [^\n]*\n\s*mt_wgmma_fence\(\);", body)) == 2
    loop = body[body.index("for (int v"):]
    loop = loop[:loop.index("\n  }\n")]
    scores, product = loop.index("mt_wgmma_wait<0>();"), loop.index("mt_wgmma_wait<1>();")
    assert loop.count("mt_wgmma_wait<") == 2 and scores < loop.index("acc = acc * alpha") < product
    assert loop[product:].split(";")[1].strip(" \n}") == "__syncthreads()" and "mt_cp_async<" in loop[product:]
    assert "mt_wgmma_wait<0>();" in body[body.index(loop) + len(loop):]       # (after the loop)
    grid = (mytriton.cdiv(n_ctx, 128), heads)
    o_cuda, o_interp = np.zeros_like(q), np.zeros_like(q)
    cuda_emulator.run(ck.asm["cu"], [q, k, v, o_cuda, head_dim ** -0.5, n_ctx], grid)
    attention.attention_fwd_kernel[grid](q, k, v, o_interp, head_dim ** -0.5, n_ctx, **ce, num_warps=warps)
    np.testing.assert_allclose(o_cuda.astype(np.float32), o_interp.astype(np.float32), rtol=2e-3, atol=2e-3)


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("warps,causal", [(4, True), (8, False)])
def test_emulated_wgmma_attention_through_a_branch_and_block_pointers(warps, causal):
    """Attention whose scores pass through a run-time ``if`` (Triton's tutorial 06 splits the
    diagonal so) and whose Kᵀ is a column-major block pointer: the first dot still reaches the
    second in registers (through the branch's results), so both run on wgmma with A in registers."""
    from tests.kernels import block_ptrs
    n_ctx, head_dim = 192, 64
    q, k, v = (RNG.standard_normal((1, n_ctx, head_dim)).astype(np.float16) for _ in range(3))
    sig = {"q_ptr": "*fp16:16", "k_ptr": "*fp16:16", "v_ptr": "*fp16:16", "o_ptr": "*fp16:16", "sm_scale": "fp32",
           "N_CTX": "i32:16"}
    ce = {"HEAD_DIM": head_dim, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": causal}
    ck = mytriton.compile(block_ptrs.attention_branchy, sig, ce, num_warps=warps, target="sm_90a", num_stages=3)
    body = ck.asm["cu"][ck.asm["cu"].index("__global__"):]
    blocks = 128 // (64 * (warps // 4))
    assert body.count("wgmma.mma_async") == blocks * (head_dim // 16 + 64 // 16)
    assert "mt_mma_m16n8k16" not in body and "const unsigned fa[" in body
    grid = (mytriton.cdiv(n_ctx, 128), 1)
    o_cuda, o_interp = np.zeros_like(q), np.zeros_like(q)
    cuda_emulator.run(ck.asm["cu"], [q, k, v, o_cuda, head_dim ** -0.5, n_ctx], grid)
    block_ptrs.attention_branchy[grid](q, k, v, o_interp, head_dim ** -0.5, n_ctx, **ce, num_warps=warps)
    np.testing.assert_allclose(o_cuda.astype(np.float32), o_interp.astype(np.float32), rtol=2e-3, atol=2e-3)
    scores = (q[0].astype(np.float32) @ k[0].astype(np.float32).T) * head_dim ** -0.5
    if causal:
        scores = np.where(np.tril(np.ones((n_ctx, n_ctx), bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(1, keepdims=True))
    want = (p / p.sum(1, keepdims=True)) @ v[0].astype(np.float32)
    np.testing.assert_allclose(o_interp[0].astype(np.float32), want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("bm,bn,bk,warps,stages,late", [(128, 128, 32, 4, 3, False), (128, 256, 64, 8, 3, False),
                                                        (128, 128, 64, 4, 3, True), (128, 128, 64, 8, 3, True),
                                                        (128, 128, 32, 4, 4, False)])
def test_a_wgmma_group_stays_in_flight_over_a_buffer_more_or_before_the_copies(bm, bn, bk, warps, stages, late):
    """The GEMM's accumulator only feeds the next iteration: its wgmma group is left in flight
    (wait<1>). Each ring then has a buffer more for the copies issued while it may still be read —
    unless that buffer costs a block per SM (128x128x64: three buffers of 32 KiB let two blocks
    share an SM, four would not): then the copies
    follow the dot, its wait and a barrier, into the buffer the last iteration's group read."""
    sig, ones = gemm_signature("fp16", True)
    ck = mytriton.compile(gemm.matmul_kernel, sig, {**ones, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8,
                                                    "ACTIVATION": ""}, num_warps=warps, num_stages=stages,
                          target="sm_90a")
    body = ck.asm["cu"][ck.asm["cu"].index("__global__"):]
    loop = body[body.index("for (int v"):body.index("mt_wgmma_wait<0>();")]
    buffers = stages if late else stages + 1
    assert loop.count("mt_wgmma_wait<1>();") == 1 and f"_slot == {buffers - 1} ? 0" in body
    assert ck.metadata["shared"] == max(buffers * (bm + bn) * bk * 2, bm * bn * 4)
    waited = loop.index("mt_wgmma_wait<1>();")
    assert (loop.index("mt_cp_async<") > waited) == late
    # two blocks an SM where the rings and the accumulators allow them: ptxas is held to the
    # registers that leaves on 8 warps (128x256: 128 accumulators a thread, one block; on 4 warps
    # two blocks leave every register there is)
    two = (bm, bn) != (128, 256) and warps == 8
    assert f"__launch_bounds__({32 * warps}{', 2' if two else ''})\n" in ck.asm["cu"]
    assert (loop[waited:].split(";")[1].strip(" \n}") == "__syncthreads()") == late


@mytriton.jit
def _persistent_gemm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    tiles_n = tl.cdiv(N, BN)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, tl.num_programs(0)):
        pm, pn = tile // tiles_n, tile % tiles_n
        rm, rn, rk = pm * BM + tl.arange(0, BM), pn * BN + tl.arange(0, BN), tl.arange(0, BK)
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=rm[:, None] < M, other=0.0)
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=rn[None, :] < N, other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def test_emulated_persistent_wgmma_gemm_keeps_the_rings_copies_in_front_of_the_inner_loop():
    """Programs walking tiles: the K loop's rings (copies after the dot: 64x128x64 in 4 stages,
    two blocks an SM) are begun again in the tile loop's body, whose own ops are emitted in order
    (this once was an internal error). On the CPU emulator, against numpy."""
    m, n, k = 150, 208, 192
    a, b = (RNG.standard_normal(s).astype(np.float16) for s in ((m, k), (k, n)))
    sig = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp32:16", "M": "i32", "N": "i32:16", "K": "i32:16"}
    ck = mytriton.compile(_persistent_gemm, sig, {"BM": 64, "BN": 128, "BK": 64}, num_warps=4, num_stages=4,
                          target="sm_90a")
    assert "wgmma.mma_async" in ck.asm["cu"] and "every warpgroup's last wgmma group is done" in ck.asm["cu"]
    c = np.zeros((m, n), np.float32)
    cuda_emulator.run(ck.asm["cu"], [a, b, c, m, n, k], (3,))
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)


@mytriton.jit
def _scaled_accumulator(a_ptr, b_ptr, c_ptr, K, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    rows, cols = tl.arange(0, BLOCK), tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, 32):
        a = tl.load(a_ptr + rows[:, None] * K + (k + tl.arange(0, 32))[None, :])
        b = tl.load(b_ptr + (k + tl.arange(0, 32))[:, None] * BLOCK + cols[None, :])
        acc = tl.dot(a, b, acc * 0.5 if SCALE else acc)
    tl.store(c_ptr + rows[:, None] * BLOCK + cols[None, :], acc)


@pytest.mark.parametrize("scale", [False, True])
def test_a_wgmma_group_stays_in_flight_only_over_an_untouched_accumulator(scale):
    """``acc = tl.dot(a, b, acc * 0.5)`` reads the accumulator registers between two wgmma groups:
    the group is waited for at once (PTX leaves touching them before a wait undefined)."""
    sig = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp32:16", "K": "i32:16"}
    ck = mytriton.compile(_scaled_accumulator, sig, {"SCALE": scale, "BLOCK": 128}, num_warps=4, target="sm_90a")
    body = ck.asm["cu"][ck.asm["cu"].index("__global__"):]
    assert "wgmma.mma_async" in body
    assert ("mt_wgmma_wait<1>();" in body) == (not scale)


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_emulated_gemm_of_a_transposed_b_copies_it_down_its_columns(dtype):
    """B given as the transpose of a row-major N x K array (x @ W.T), on mma.sync: its tile is laid
    out along K, so cp.async copies 16-byte runs of K straight into a K-major ring (ldmatrix,
    no transpose), for tf32 too."""
    cu, got, want = run_gemm(dtype, 72, 40, 80, 64, 32, 16, 4, True, "sm_90", True)
    body = cu[cu.index("__global__"):]
    assert body.count("mt_cp_async<") == 6 and "mt_ldmatrix_x4<false>(fb[j][0]" in body
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


def test_a_signature_promising_unit_strides_compiles_them_in():
    """'i32:1' (Triton AOT's spelling) compiles the value 1 in, as the JIT does for arguments equal
    to 1: the kernel is the one compiled with those strides given as constants, their parameters
    gone from its signature — so a built package's GEMM copies 16-byte runs (cp.async)."""
    sig, ones = gemm_signature("fp16", True)
    ce = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "ACTIVATION": ""}
    given = mytriton.compile(gemm.matmul_kernel, sig, {**ones, **ce}, target="sm_90a")
    promised = mytriton.compile(gemm.matmul_kernel, {**sig, **{p: "i32:1" for p in ones}}, ce, target="sm_90a")
    body = promised.asm["cu"][promised.asm["cu"].index("__global__"):]
    assert body == given.asm["cu"][given.asm["cu"].index("__global__"):]
    assert not set(ones) & set(promised.metadata["signature"]) and "mt_cp_async<16>" in body

"""Every elementwise op: its SSA line, and the kernel compiled by NVRTC to an sm_90 cubin and PTX."""
import re

import pytest

import mytriton
from tests.kernels import basic

INT_SIG = {"a_ptr": "*i32", "b_ptr": "*i32", "out_ptr": "*i32", "n": "i32"}
F32_SIG = {"a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
BOOL_OUT = {"a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*i1", "n": "i32"}

# (op as written in the kernel, SSA op name, signature, SSA result type)
OPS = [
    ("add", "add", F32_SIG, "f32"), ("sub", "sub", F32_SIG, "f32"), ("mul", "mul", F32_SIG, "f32"),
    ("div", "div", F32_SIG, "f32"), ("mod", "mod", F32_SIG, "f32"),
    ("floordiv", "floordiv", INT_SIG, "i32"), ("and", "and", INT_SIG, "i32"), ("or", "or", INT_SIG, "i32"),
    ("xor", "xor", INT_SIG, "i32"), ("shl", "shl", INT_SIG, "i32"), ("shr", "shr", INT_SIG, "i32"),
    ("maximum", "maximum", F32_SIG, "f32"), ("minimum", "minimum", F32_SIG, "f32"),
    ("cmp_lt", "cmp_lt", BOOL_OUT, "bool"), ("cmp_le", "cmp_le", BOOL_OUT, "bool"),
    ("cmp_gt", "cmp_gt", BOOL_OUT, "bool"), ("cmp_ge", "cmp_ge", BOOL_OUT, "bool"),
    ("cmp_eq", "cmp_eq", BOOL_OUT, "bool"), ("cmp_ne", "cmp_ne", BOOL_OUT, "bool"),
    ("neg", "neg", F32_SIG, "f32"), ("invert", "invert", INT_SIG, "i32"), ("where", "where", F32_SIG, "f32"),
    ("cast", "cast", {**INT_SIG, "out_ptr": "*fp32"}, "f32"),
    ("exp", "exp", F32_SIG, "f32"), ("exp2", "exp2", F32_SIG, "f32"), ("log", "log", F32_SIG, "f32"),
    ("log2", "log2", F32_SIG, "f32"), ("sqrt", "sqrt", F32_SIG, "f32"), ("rsqrt", "rsqrt", F32_SIG, "f32"),
    ("sin", "sin", F32_SIG, "f32"), ("cos", "cos", F32_SIG, "f32"), ("floor", "floor", F32_SIG, "f32"),
    ("ceil", "ceil", F32_SIG, "f32"), ("abs", "abs", F32_SIG, "f32"),
]


@pytest.mark.parametrize("op,name,sig,rtype", OPS, ids=[o[0] for o in OPS])
def test_elementwise_op(op, name, sig, rtype):
    ck = mytriton.compile(basic.op_kernel, signature=sig, constexprs={"OP": op, "BLOCK": 128})
    ssa = ck.asm["ssa"]
    assert re.search(rf"^%\d+ = {name} %\d+(, (%\d+|[0-9.]+))* (\{{.*\}} )?: vector<128 x {rtype}>$", ssa, re.M), ssa
    assert ck.asm["cubin"][:4] == b"\x7fELF"
    ptx = ck.asm["ptx"]
    assert ".target sm_90" in ptx and ".version 9.0" in ptx
    assert ".visible .entry k_op_kernel(" in ptx


def test_int_division_and_wraparound_spelling():
    cu = mytriton.compile(basic.op_kernel, signature=INT_SIG, constexprs={"OP": "floordiv", "BLOCK": 128}).asm["cu"]
    assert "mt_div(" in cu
    cu = mytriton.compile(basic.op_kernel, signature=INT_SIG, constexprs={"OP": "add", "BLOCK": 128}).asm["cu"]
    assert "mt_add(" in cu
    cu = mytriton.compile(basic.op_kernel, signature=F32_SIG, constexprs={"OP": "add", "BLOCK": 128}).asm["cu"]
    assert re.search(r"\] = \(v\d+\[r\] \+ v\d+\[r\]\);", cu)      # floats add plainly


def test_int_true_division_is_fp32():
    ssa = mytriton.compile(basic.op_kernel, signature={**INT_SIG, "out_ptr": "*fp32"},
                           constexprs={"OP": "div", "BLOCK": 128}).asm["ssa"]
    assert re.search(r"= div %\d+, %\d+ : vector<128 x f32>", ssa)


def test_block_smaller_and_larger_than_the_thread_block():
    for block, warps, regs in [(16, 4, 1), (4096, 4, 32)]:
        ck = mytriton.compile(basic.add_kernel, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                              constexprs={"BLOCK": block}, num_warps=warps)
        assert re.search(r"__launch_bounds__\(128(, \d+)?\)", ck.asm["cu"])   # (blocks an SM: occupancy.py)
        assert f"float v6[{regs}];" in ck.asm["cu"]
        assert ck.asm["cubin"][:4] == b"\x7fELF"


NARROW = ["i8", "i16", "u8", "u16", "u32", "u64"]


@pytest.mark.parametrize("dtype", NARROW)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "floordiv", "mod", "abs", "neg", "maximum"])
def test_narrow_and_unsigned_integers_compile(dtype, op):
    """Literals of narrow types are typed in C++, so the wrap-around helpers instantiate."""
    sig = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "n": "i32"}
    ck = mytriton.compile(basic.op_kernel, signature=sig, constexprs={"OP": op, "BLOCK": 64})
    assert ck.asm["cubin"][:4] == b"\x7fELF"


def test_literal_meeting_narrow_tensor():
    ck = mytriton.compile(basic.literal_kernel, signature={"x_ptr": "*i8", "out_ptr": "*i8", "n": "i32"},
                          constexprs={"BLOCK": 64})
    assert "((signed char)1)" in ck.asm["cu"] and ck.asm["cubin"][:4] == b"\x7fELF"


def test_every_elementwise_op_is_spelled_in_the_registry_for_both_backends():
    """A new elementwise op is the registry and its tl function: its numpy semantics, CUDA and MLIR
    spellings are all in its OpDef (no backend keeps a table of its own)."""
    from mytriton.backends.mlir import arith
    from mytriton.ir.ops import OPS
    from mytriton.ir.libdevice import FUNCTIONS, HEADER_FUNCTIONS
    libdevice = [d for d in OPS.values() if d.name.startswith("libdevice.")]
    plain = [d for d in OPS.values() if d.elementwise and d.pure and d.name not in ("cast", "bitcast", "addptr")
             and d not in libdevice]
    assert len(plain) >= 30
    for d in plain:
        assert d.np_fn is not None and d.c_fn is not None and d.mlir_fn is not None, d.name
    assert not hasattr(arith, "ELEMENTWISE")
    # libdevice's functions: one row each of ir/libdevice.FUNCTIONS (its numpy meaning and, per
    # signature, the symbol the CUDA backend calls); the MLIR backend refuses them
    assert {d.name for d in libdevice} == {f"libdevice.{name}" for name in FUNCTIONS}
    for d in libdevice:
        row = FUNCTIONS[d.name.split(".", 1)[1]]
        assert d.np_fn is row.np_fn and all(sym.startswith("__nv_") or sym in HEADER_FUNCTIONS
                                            for sym, _ in row.signatures.values())


def _bounds(ck) -> str:
    cu = ck.asm["cu"]
    return cu[cu.index("__launch_bounds__("):].split(")")[0] + ")"


@pytest.mark.parametrize("block,warps,blocks", [
    (512, 2, ", 1"),    # a loop that loads, 8 elements a thread on 2 warps: the registers come first
    (512, 4, ", 1"),    # 4 a thread on 4 warps
    (256, 4, ""),       # 2 a thread: occupancy
    (2048, 8, ", 4"),   # 8 warps: their barriers want occupancy, half an SM (codegen._streaming_blocks)
    (4096, 8, ""),      # 16 a thread on 8 warps: left to ptxas
])
def test_a_streaming_loop_states_the_blocks_an_sm_its_registers_need(block, warps, blocks):
    """``__launch_bounds__(threads, 1)`` where a run-time loop loads and each thread of a small block
    holds 4 or more elements: told only the block size, ptxas caps the registers at what 32 blocks
    an SM leave (layer norm BLOCK=512 on 2 warps: 32 registers, 0.88 x Triton; stated, 48 and 1.06)."""
    from tests.test_row_kernels import rows
    ck = mytriton.compile(rows.layer_norm_fwd_kernel, signature={
        "x_ptr": "*fp32", "y_ptr": "*fp32", "w_ptr": "*fp32", "b_ptr": "*fp32", "mean_ptr": "*fp32",
        "rstd_ptr": "*fp32", "row_stride": "i32", "n_cols": "i32", "eps": "fp32"},
        constexprs={"BLOCK": block}, num_warps=warps)
    assert _bounds(ck) == f"__launch_bounds__({32 * warps}{blocks})"


def _unrolled_loops(cu: str) -> list[str]:
    """The ``#pragma unroll N`` lines (N given) right before a ``for`` loop of the kernel's body."""
    lines = [line.strip() for line in cu.splitlines()]
    return [a for a, b in zip(lines, lines[1:]) if a.startswith("#pragma unroll ") and b.startswith("for (")]


_STREAMING = {   # kernel: (file under manifests/kernels, function, parameters: pointer or integer)
    "row_sum": ("reductions.py", "row_sum_kernel", {"x": "p", "out": "p", "n_cols": "i"}),
    "matmul": ("matmul.py", "matmul_kernel", {"a": "p", "b": "p", "c": "p", "M": "i", "N": "i", "K": "i"}),
    "layer_norm": ("rows.py", "layer_norm_fwd_kernel", {
        "x_ptr": "p", "y_ptr": "p", "w_ptr": "p", "b_ptr": "p", "mean_ptr": "p", "rstd_ptr": "p",
        "row_stride": "i", "n_cols": "i", "eps": "fp32"}),
    "softmax_rows": ("rows.py", "softmax_rows_kernel", {
        "out_ptr": "p", "in_ptr": "p", "in_row_stride": "i", "out_row_stride": "i", "n_rows": "i", "n_cols": "i"}),
}


@pytest.mark.parametrize("kernel,constexprs,warps,aligned,want", [
    ("row_sum", {"BLOCK": 256}, 1, True, ["#pragma unroll 4"]),      # 8 a thread: 4 in flight left alone
    ("row_sum", {"BLOCK": 2048}, 1, False, ["#pragma unroll 4"]),    # 64 a thread
    ("row_sum", {"BLOCK": 128}, 1, True, []),                        # 4 a thread: ptxas unrolls further
    ("row_sum", {"BLOCK": 4096}, 1, True, []),                       # 128 a thread
    ("row_sum", {"BLOCK": 2048}, 8, True, []),                       # 8 warps: not registers first
    ("matmul", {"BM": 16, "BN": 128}, 2, True, ["#pragma unroll 4"]),  # 32 accumulators a thread
    ("matmul", {"BM": 128, "BN": 128}, 4, True, []),                 # staged column, 128 a thread
    ("layer_norm", {"BLOCK": 1024}, 2, True, []),                    # three loops
    # a loop that stores (persistent-row softmax): only up to 8 elements a thread
    ("softmax_rows", {"BLOCK": 1024, "STAGES": 4}, 4, True, ["#pragma unroll 4"]),
    ("softmax_rows", {"BLOCK": 4096, "STAGES": 4}, 4, True, []),
    ("softmax_rows", {"BLOCK": 4096, "STAGES": 3}, 4, False, []),
])
def test_the_only_streaming_loop_is_unrolled_four_times(kernel, constexprs, warps, aligned, want):
    """A kernel's only run-time loop that loads, in a kernel given the registers it wants, whose
    threads hold 8 to 64 elements (8 at most in a loop that writes memory), carries ``#pragma
    unroll 4`` (backends/cuda/codegen._unroll_streaming); other loops are left to ptxas."""
    assert _unrolled_loops(_sweep_kernel(kernel, constexprs, warps, aligned).asm["cu"]) == want


def test_a_loop_stepping_by_the_number_of_programs_counts_up():
    """tl.num_programs is at least 1 (ir/regions.step_sign): tutorial 02's persistent loop tests
    ``row < n_rows`` alone, and its prefetched load's next-iteration test is one 64-bit compare,
    not the run-time step's both-signs form."""
    cu = _sweep_kernel("softmax_rows", {"BLOCK": 1024, "STAGES": 4}, 8, True).asm["cu"]
    (loop,) = [line.strip() for line in cu.splitlines() if line.strip().startswith("for (int v")]
    assert re.fullmatch(r"for \(int (v\d+) = v\d+; \1 < p_n_rows; \1 \+= v\d+\) \{", loop), loop
    assert " > 0)" not in cu[cu.index("__global__"):]        # (no test of the step's sign anywhere)


def _sweep_kernel(kernel, constexprs, warps, aligned):
    """A kernel of ``_STREAMING`` compiled as benchmarks/sweep.py compiles it (``aligned``: every
    pointer and integer parameter promised 16-divisible)."""
    from pathlib import Path
    from tests.kernel_files import load_kernel_from
    file, function, params = _STREAMING[kernel]
    fn = load_kernel_from(Path(__file__).resolve().parents[1] / "manifests" / "kernels" / file, function)
    p, i = ("*fp32:16", "i32:16") if aligned else ("*fp32", "i32")
    signature = {name: {"p": p, "i": i}.get(kind, kind) for name, kind in params.items()}
    return mytriton.compile(fn, signature=signature, constexprs=constexprs, num_warps=warps)


def test_a_loop_unroll_factor_of_the_kernel_wins_over_the_streaming_unroll():
    """``tl.range(..., loop_unroll_factor=2)`` is the kernel's own choice: the loop keeps it."""
    import mytriton.language as tl

    @mytriton.jit
    def row_sum2(x, out, n, BLOCK: tl.constexpr):
        acc = tl.zeros((BLOCK,), tl.float32)
        for start in tl.range(0, n, BLOCK, loop_unroll_factor=2):
            offs = start + tl.arange(0, BLOCK)
            acc += tl.load(x + offs, mask=offs < n, other=0.0)
        tl.store(out, tl.sum(acc, axis=0))
    ck = mytriton.compile(row_sum2, signature={"x": "*fp32:16", "out": "*fp32", "n": "i32"},
                          constexprs={"BLOCK": 256}, num_warps=1)
    assert _unrolled_loops(ck.asm["cu"]) == ["#pragma unroll 2"]


def test_a_value_of_256_words_a_thread_states_one_block_an_sm():
    """The outer-product matmul's 128x128 fp32 accumulator on 2 warps: 256 registers a thread, so
    ptxas spills whatever it is told; told only the block size it took 32 registers and 1888 bytes
    of stack (10x Triton's time), told one block an SM 255 and 360 bytes. No loop here: the value
    alone decides (a 128x64 tile, 128 words, does not)."""
    import mytriton.language as tl
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32"}

    @mytriton.jit
    def scale(x_ptr, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
        offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2.0)
    assert _bounds(mytriton.compile(scale, signature=sig, constexprs={"BM": 128, "BN": 128}, num_warps=2)) \
        == "__launch_bounds__(64, 1)"
    assert _bounds(mytriton.compile(scale, signature=sig, constexprs={"BM": 128, "BN": 64}, num_warps=2)) \
        == "__launch_bounds__(64)"


def _matmul(bm, bn, warps, aligned):
    return _sweep_kernel("matmul", {"BM": bm, "BN": bn}, warps, aligned)


@pytest.mark.parametrize("bm,bn,warps,aligned,rolled", [
    (16, 32, 8, False, True),      # 2 products a thread, the row one element a lane
    (16, 64, 8, False, True),      # 4
    (16, 32, 8, True, True),       # the row's runs proven, 512 elements: lane rows too
    (32, 32, 8, True, False),      # the row's runs proven, 1024 elements: NVVM unrolls
    (32, 32, 4, False, False),     # 8 products a thread
    (128, 64, 1, True, True),      # staged column, 256 products a thread
    (128, 128, 2, False, True),    # staged, 256
    (64, 64, 1, True, False),      # staged, 128
    (128, 128, 4, True, False),    # staged, 128
    (16, 128, 2, True, False),     # the streaming unroll's #pragma unroll 4 (32 a thread)
])
def test_outer_product_loops_left_rolled_for_ptxas(bm, bn, warps, aligned, rolled):
    """passes/layout._rolled_pays: the loop of the tiles it names carries ``rolled`` and its test
    reads the bound through ``mt_rolled_bound`` (NVVM cannot count its trips, ptxas unrolls it);
    every other loop is NVVM's to unroll."""
    ck = _matmul(bm, bn, warps, aligned)
    loop = next(line for line in ck.asm["ssa_layout"].splitlines() if " = for " in line)
    assert ("rolled=True" in loop) == rolled, loop
    assert ("< mt_rolled_bound(p_K); " in ck.asm["cu"]) == rolled
    assert ck.asm["cu"].count("mt_rolled_bound(") == (2 if rolled else 1)    # (and its definition)


@pytest.mark.parametrize("dtype,warps,rolled", [
    ("fp16", 8, 3),     # the three loops of the layer norm load halves: each left to ptxas
    ("bf16", 4, 3),
    ("fp32", 8, 0),     # fp32 loads: NVVM unrolls them
])
def test_loops_that_load_halves_in_a_kernel_of_several_loops_are_left_rolled(dtype, warps, rolled):
    """backends/cuda/codegen._rolled_half_loops: in a kernel of several run-time loops, a loop
    that loads fp16 or bf16 reads its bound through ``mt_rolled_bound`` (ptxas unrolls it, not
    NVVM); a kernel's only loop is NVVM's to unroll, whatever it loads."""
    from tests.test_row_kernels import rows
    ptr = f"*{dtype}:16"
    ck = mytriton.compile(rows.layer_norm_fwd_kernel, signature={
        "x_ptr": ptr, "y_ptr": ptr, "w_ptr": ptr, "b_ptr": ptr, "mean_ptr": "*fp32:16",
        "rstd_ptr": "*fp32:16", "row_stride": "i32:16", "n_cols": "i32:16", "eps": "fp32"},
        constexprs={"BLOCK": 1024}, num_warps=warps)
    assert ck.asm["cu"].count("< mt_rolled_bound(p_n_cols); ") == rolled
    # their loads of at most 8 elements a thread are predicated (_predicated_half_loads): 1024 on
    # 8 warps is 4 a thread, on 4 warps 8; fp32 loops keep the masked-off address
    body = ck.asm["cu"][ck.asm["cu"].index("__global__"):]
    assert body.count("mt_load_pred<") == (5 if rolled else 0)
    assert body.count("&mt_masked_off") == (0 if rolled else 5)
    import mytriton.language as tl

    @mytriton.jit
    def half_row_sum(x, out, n, BLOCK: tl.constexpr):
        acc = tl.zeros((BLOCK,), tl.float32)
        for start in range(0, n, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            acc += tl.load(x + offs, mask=offs < n, other=0.0).to(tl.float32)
        tl.store(out, tl.sum(acc, axis=0))
    one = mytriton.compile(half_row_sum, signature={"x": "*fp16:16", "out": "*fp32", "n": "i32"},
                           constexprs={"BLOCK": 1024}, num_warps=8)
    assert "< mt_rolled_bound(" not in one.asm["cu"]


def test_a_half_load_of_16_elements_a_thread_in_a_rolled_loop_keeps_the_masked_off_address():
    """At 16 halves a thread (the layer norm BLOCK=4096 on 8 warps) the predicated form lost on
    the H200 (1.019 -> 0.988 of Triton): its rolled loops read mt_masked_off as other loops do."""
    from tests.test_row_kernels import rows
    ptr = "*fp16:16"
    ck = mytriton.compile(rows.layer_norm_fwd_kernel, signature={
        "x_ptr": ptr, "y_ptr": ptr, "w_ptr": ptr, "b_ptr": ptr, "mean_ptr": "*fp32:16",
        "rstd_ptr": "*fp32:16", "row_stride": "i32:16", "n_cols": "i32:16", "eps": "fp32"},
        constexprs={"BLOCK": 4096}, num_warps=8)
    body = ck.asm["cu"][ck.asm["cu"].index("__global__"):]
    assert body.count("< mt_rolled_bound(p_n_cols); ") == 3
    assert "mt_load_pred<" not in body and body.count("&mt_masked_off") == 5


def test_a_loop_unroll_factor_of_the_kernel_wins_over_the_rolled_loop():
    import mytriton.language as tl

    @mytriton.jit
    def mm2(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr):
        offs_m = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
        offs_n = tl.program_id(1) * BN + tl.arange(0, BN)[None, :]
        acc = tl.zeros((BM, BN), tl.float32)
        for k in tl.range(0, K, loop_unroll_factor=2):
            acc += tl.load(a + offs_m * K + k, mask=offs_m < M, other=0.0) * \
                tl.load(b + k * N + offs_n, mask=offs_n < N, other=0.0)
        tl.store(c + offs_m * N + offs_n, acc, mask=(offs_m < M) & (offs_n < N))
    sig = {"a": "*fp32", "b": "*fp32", "c": "*fp32", "M": "i32", "N": "i32", "K": "i32"}
    ck = mytriton.compile(mm2, signature=sig, constexprs={"BM": 16, "BN": 32}, num_warps=8)
    assert _unrolled_loops(ck.asm["cu"]) == ["#pragma unroll 2"]
    assert "< mt_rolled_bound(" not in ck.asm["cu"]


def _loop_order(cubin: bytes) -> str:
    """The hottest loop's memory ops and math in SASS order (sass_compare.loop_order), e.g. ``LDG12 FFMA8``."""
    sass_compare = _sass_compare()
    sass = sass_compare.inspect(cubin, sass_compare.cuobjdump())[2]
    return sass_compare.loop_order(sass_compare.hottest_loop_body(sass))


def _sass_compare():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import sass_compare
    return sass_compare


@pytest.mark.skipif(_sass_compare().cuobjdump() is None, reason="no cuobjdump (pip install nvidia-cuda-cuobjdump)")
def test_a_rolled_loop_issues_its_unrolled_loads_before_its_ffmas(monkeypatch):
    """What the rolled loop is for, in the SASS (NVRTC 13.0's ptxas, no GPU): ptxas unrolls the
    16x32 tile's loop on 8 warps four times and issues its 12 loads before its 8 FFMAs; unrolled
    by NVVM (the rule switched off) the loads sit between the FFMAs."""
    from mytriton.passes import layout
    rolled = _loop_order(_matmul(16, 32, 8, False).asm["cubin"])
    assert rolled == "LDG12 FFMA8", rolled
    monkeypatch.setattr(layout, "_rolled_pays", lambda *args: False)
    unrolled = _loop_order(_matmul(16, 32, 8, False).asm["cubin"])
    assert "FFMA" in unrolled and not unrolled.startswith("LDG12 "), unrolled


@pytest.mark.parametrize("bm,bn,warps,aligned,options", [
    (64, 64, 1, False, ["--register-usage-level=0"]),     # a staged column, NVVM unrolls the loop
    (128, 128, 4, False, ["--register-usage-level=0"]),
    (128, 64, 1, True, []),                               # staged, but the loop is rolled
    (16, 32, 8, False, []),                               # lane rows
    (32, 32, 4, True, []),                                # the default layout
])
def test_loops_of_staged_columns_tell_ptxas_their_register_usage_level(bm, bn, warps, aligned, options):
    """backends/cuda/codegen.ptxas_options: kernels whose loop NVVM unrolls with a staged column get
    ``--register-usage-level=0``; it is in the metadata and in the compile itself (the cubin is
    the one NVRTC makes with it, not the one without)."""
    from mytriton.backends.cuda import nvrtc
    ck = _matmul(bm, bn, warps, aligned)
    assert ck.metadata["ptxas_options"] == options
    assert ("_staged" in ck.asm["cu"]) == (bm * bn // (32 * warps) >= 128)
    source_name = f"/mytriton/{ck.function.name}.cu"          # (as mytriton.compile names it)
    with_options = nvrtc.compile_program(ck.asm["cu"], source_name, "sm_90", ptxas_options=tuple(options)).cubin
    assert ck.asm["cubin"] == with_options
    if options:
        assert nvrtc.compile_program(ck.asm["cu"], source_name, "sm_90").cubin != with_options


def test_a_ptxas_option_reaches_ptxas():
    """nvrtc.compile_program hands its ptxas_options to ptxas (which names one it does not know)."""
    from mytriton.backends.cuda import nvrtc
    src = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }'
    with pytest.raises(nvrtc.NVRTCError, match=r"ptxas fatal\s*: Unknown option '-+no-such-option'"):
        nvrtc.compile_program(src, "k.cu", "sm_90", ptxas_options=("--no-such-option",))


def test_the_ptxas_option_follows_the_staged_columns_own_loop():
    """A staged column belongs to its innermost loop: a rolled one inside an outer loop NVVM
    unrolls takes no option (the outer loop stages nothing of its own)."""
    import mytriton.language as tl

    @mytriton.jit
    def batched(a, b, c, M, N, K, B, BM: tl.constexpr, BN: tl.constexpr):
        offs_m = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
        offs_n = tl.arange(0, BN)[None, :]
        for z in range(B):
            acc = tl.zeros((BM, BN), tl.float32)
            for k in range(K):
                acc += tl.load(a + z * M * K + offs_m * K + k, mask=offs_m < M, other=0.0) * \
                    tl.load(b + z * K * N + k * N + offs_n, mask=offs_n < N, other=0.0)
            tl.store(c + z * M * N + offs_m * N + offs_n, acc, mask=(offs_m < M) & (offs_n < N))
    sig = {"a": "*fp32:16", "b": "*fp32:16", "c": "*fp32:16", "M": "i32", "N": "i32", "K": "i32", "B": "i32"}
    rolled = mytriton.compile(batched, signature=sig, constexprs={"BM": 128, "BN": 64}, num_warps=1)
    assert "_staged" in rolled.asm["cu"] and "mt_rolled_bound(p_K)" in rolled.asm["cu"]
    assert rolled.metadata["ptxas_options"] == []
    unrolled = mytriton.compile(batched, signature=sig, constexprs={"BM": 64, "BN": 64}, num_warps=1)
    assert "_staged" in unrolled.asm["cu"] and "mt_rolled_bound(p_K)" not in unrolled.asm["cu"]
    assert unrolled.metadata["ptxas_options"] == ["--register-usage-level=0"]


def _row_sums():
    import mytriton.language as tl

    @mytriton.jit
    def plain(x, out, n, BLOCK: tl.constexpr, OTHER: tl.constexpr, CACHE: tl.constexpr):
        acc = tl.zeros((BLOCK,), tl.float32)
        for start in range(0, n, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            acc += tl.load(x + offs, mask=offs < n, other=OTHER, cache_modifier=CACHE)
        tl.store(out, tl.sum(acc, axis=0))

    @mytriton.jit
    def two_loads(x, out, n, BLOCK: tl.constexpr, OTHER: tl.constexpr, CACHE: tl.constexpr):
        acc = tl.zeros((BLOCK,), tl.float32)
        for start in range(0, n, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            acc += tl.load(x + offs, mask=offs < n, other=OTHER) * tl.load(x + n + offs, mask=offs < n, other=OTHER)
        tl.store(out, tl.sum(acc, axis=0))

    @mytriton.jit
    def storing(x, out, n, BLOCK: tl.constexpr, OTHER: tl.constexpr, CACHE: tl.constexpr):
        acc = tl.zeros((BLOCK,), tl.float32)
        for start in range(0, n, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            v = tl.load(x + offs, mask=offs < n, other=OTHER)
            tl.store(x + offs, v * 2, mask=offs < n)
            acc += v
        tl.store(out, tl.sum(acc, axis=0))

    @mytriton.jit
    def no_loop(x, out, n, BLOCK: tl.constexpr, OTHER: tl.constexpr, CACHE: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out, tl.sum(tl.load(x + offs, mask=offs < n, other=OTHER), axis=0))
    return {f.__name__: f for f in (plain, two_loads, storing, no_loop)}


@pytest.mark.parametrize("kernel,block,warps,target,copied", [
    ("plain", 4096, 1, "sm_90", True),        # 128 elements a thread, in a loop
    ("plain", 4096, 1, "sm_80", True),        # (cp.async from sm_80 on)
    ("plain", 2048, 1, "sm_90", False),       # 64 a thread: the loads fit beside the accumulators
    ("plain", 4096, 2, "sm_90", False),
    ("plain", 8192, 2, "sm_90", False),       # 128 a thread, but two buffers of 32 KiB
    ("two_loads", 4096, 1, "sm_90", False),   # four buffers of 16 KiB
    ("plain", 4096, 1, "sm_75", False),       # no cp.async before sm_80
    ("no_loop", 4096, 1, "sm_90", False),     # nothing to accumulate beside the loaded values
    ("storing", 4096, 1, "sm_90", False),     # a copy is not ordered after the thread's own stores
])
@pytest.mark.parametrize("other,cache", [(0.0, ""), (1.0, ""), (0.0, ".cg")])
def test_which_loads_cp_async_copies(kernel, block, warps, target, copied, other, cache):
    """codegen._copied_loads: a loop's load of 32-bit elements, 128 or more a thread, zero where
    masked off (cp.async zero-fills), without a cache hint (the load's own), in a loop that writes
    no memory, on sm_80 and later, where the copies' buffers take at most 32 KiB."""
    ck = mytriton.compile(_row_sums()[kernel], signature={"x": "*fp32", "out": "*fp32", "n": "i32"},
                          constexprs={"BLOCK": block, "OTHER": other, "CACHE": cache}, target=target, num_warps=warps)
    assert ("mt_cp_async<4>(slots" in ck.asm["cu"]) == (copied and other == 0.0 and not cache)


def test_a_loop_with_a_dot_keeps_its_loads_out_of_cp_async_copies():
    """A dot's operand loaded in the loop, 128 elements a thread (64x64 fp32 on one warp), with
    no software pipeline (num_stages=1): not copied (codegen._copied_loads leaves dot loops to
    backends/cuda/dot.py)."""
    import mytriton.language as tl

    @mytriton.jit
    def k_loop(q, k, o, N, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
        rm, rd = tl.arange(0, BM), tl.arange(0, D)
        qt = tl.load(q + rm[:, None] * D + rd[None, :])
        acc = tl.zeros((BM, BN), tl.float32)
        for n in range(0, N, BN):
            rn = n + tl.arange(0, BN)
            acc += tl.dot(qt, tl.load(k + rd[:, None] * N + rn[None, :], mask=rn[None, :] < N, other=0.0))
        tl.store(o + rm[:, None] * BN + tl.arange(0, BN)[None, :], acc)
    sig = {"q": "*fp32:16", "k": "*fp32:16", "o": "*fp32:16", "N": "i32"}
    ck = mytriton.compile(k_loop, signature=sig, constexprs={"BM": 64, "BN": 64, "D": 64}, num_warps=1, num_stages=1)
    assert "mma.sync" in ck.asm["ptx"] and "(slots" not in ck.asm["cu"]

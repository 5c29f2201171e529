"""The CUDA backend's code executed without a GPU: each kernel's generated C++ runs under g++ with
every CUDA thread a std::thread of its block (tests/cuda_emulator), and must equal the CPU
interpreter. This checks what NVRTC accepting the code cannot: index arithmetic (an 8x8 reduction
once read its shared-memory slot as `w * 8 + tid & 7`), store ownership, barriers, warp shuffles
and shared-memory exchanges, run-time control flow, fp16/bf16 arithmetic, every rounding of a
float downcast (fp64 -> fp32 once rounded toward zero), and atomics (each element once by its
owner, the old value handed to its copies) — on the CPU, in CI."""
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytriton
import mytriton.language as tl
from tests import cuda_emulator
from tests.kernels import layouts as L
from tests.test_control_flow import SIGS, branches_inputs, k, randn
from tests.test_layout_kernels import SIG, expected, inputs

pytestmark = pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "manifests" / "kernels"))
import elementwise as ew  # noqa: E402
import matmul as mm  # noqa: E402
import reductions as rd  # noqa: E402
import softmax as sm  # noqa: E402


def run_both(fn, signature, constexprs, args, grid, warps):
    """``fn`` in the interpreter and as emulated CUDA, each on its own copies of ``args``: the two
    argument lists after the runs."""
    ck = mytriton.compile(fn, signature=signature, constexprs=constexprs, num_warps=warps)
    interp = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    cuda = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    fn[grid](*interp, **constexprs, num_warps=warps)
    cuda_emulator.run(ck.asm["cu"], cuda, grid)
    return interp, cuda


def same_as_interpreter(fn, signature, constexprs, args, grid, warps=4, tol=1e-5):
    """Every array agrees between the interpreter and emulated CUDA (within ``tol``)."""
    interp, cuda = run_both(fn, signature, constexprs, args, grid, warps)
    for i, (want, got) in enumerate(zip(interp, cuda)):
        if isinstance(want, np.ndarray):
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True,
                                       err_msg=f"{fn.__name__} {constexprs} num_warps={warps}: argument {i}")


@pytest.mark.parametrize("kernel", sorted(SIG))
@pytest.mark.parametrize("bm,bn,warps", [(8, 8, 4), (2, 4, 4), (64, 4, 4), (4, 64, 2), (1, 8, 1)])
def test_layout_kernels(kernel, bm, bn, warps):
    ck = mytriton.compile(getattr(L, kernel), signature=SIG[kernel], constexprs={"BM": bm, "BN": bn}, num_warps=warps)
    args, _ = inputs(kernel, bm, bn)
    cuda_emulator.run(ck.asm["cu"], args, (1,))
    for i, want in expected(kernel, args, bm, bn).items():
        np.testing.assert_allclose(args[i], want, rtol=1e-4, atol=1e-4, err_msg=f"{kernel} {bm}x{bn} w{warps} arg {i}")


@mytriton.jit
def _column_sums(x_ptr, out_ptr, AXIS: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    rows, cols = tl.arange(0, M), tl.arange(0, N)
    z = tl.sum(tl.load(x_ptr + rows[:, None] * N + cols[None, :]), axis=AXIS)
    tl.store(out_ptr + (cols if AXIS == 0 else rows), z)


@pytest.mark.parametrize("axis", [0, 1])
def test_reduction_across_warps_of_a_small_tile(axis):
    """Triton's test_tensor_atomic_rmw shape (8x8 on 4 warps) that exposed the precedence bug."""
    x = randn(8, 8)
    same_as_interpreter(_column_sums, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"AXIS": axis, "M": 8, "N": 8},
                        [x, np.zeros(8, np.float32)], (1,))


@pytest.mark.parametrize("warps", [1, 4])
def test_control_flow(warps):
    x, programs = branches_inputs(1000, 128)
    same_as_interpreter(k.branches, SIGS[0][1], {"BLOCK": 128},
                        [x, np.zeros_like(x), np.zeros(programs, np.int32), 1000, 4.0], (programs,), warps)
    steps = np.random.default_rng(5).integers(-1, 6, 11).astype(np.int32)
    x = randn(700)
    same_as_interpreter(k.countdown, SIGS[1][1], {"BLOCK": 64}, [x, np.zeros_like(x), steps, 700], (11,), warps)
    x = np.array([-3, 0.5, 7, -0.25, 2, 9, -1, 1.5, 3], np.float32)
    same_as_interpreter(k.early_exit, SIGS[2][1], {"BLOCK": 16}, [x, np.full(144, -9.0, np.float32), 7, -1.0, 2.0],
                        (9,), warps)
    x = randn(13, 50)
    same_as_interpreter(k.row_softmax, SIGS[4][1], {"BLOCK": 64}, [x, np.zeros_like(x), 13, 50], (3,), warps)
    same_as_interpreter(k.reassigned_loop_variables, {"x_ptr": "*fp32", "n": "i32"}, {"BLOCK": 16},
                        [np.zeros(24, np.float32), 9], (1,), warps)


@pytest.mark.parametrize("n,sig_n", [(1000, "i32"), (1040, "i32:16")])
def test_masked_vector_accesses(n, sig_n):
    """Per-chunk run-time choice (n unproven) and one predicate per vector (n: i32:16, a partial
    last block)."""
    x, y = randn(n), randn(n)
    sig = {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": sig_n}
    same_as_interpreter(ew.add_kernel, sig, {"BLOCK": 1024}, [x, y, np.full(n, 7.0, np.float32), n], (2,))


def test_manifest_kernels():
    x = randn(6, 300) * 10
    same_as_interpreter(sm.softmax_kernel, {"x": "*fp32:16", "y": "*fp32:16", "n_cols": "i32"}, {"BLOCK": 512},
                        [x, np.zeros_like(x), 300], (6,), 4)
    x = randn(5, 1000)
    for n_type in ("i32", "i32:16"):
        n = 1000 if n_type == "i32" else 992
        same_as_interpreter(rd.row_sum_kernel, {"x": "*fp32:16", "out": "*fp32", "n_cols": n_type}, {"BLOCK": 256},
                            [x[:, :n].copy(), np.zeros(5, np.float32), n], (5,), 2, tol=1e-4)
    x = randn(37, 50)
    same_as_interpreter(rd.col_max_kernel, {"x": "*fp32", "out": "*fp32", "n_rows": "i32", "n_cols": "i32"},
                        {"BM": 16, "BN": 32}, [x, np.zeros(50, np.float32), 37, 50], (2,), 4)
    a, b = randn(70, 13), randn(13, 90)         # (64x64 on 1 warp: the column staged, layout.staged_column)
    for kernel in (mm.matmul_kernel, mm.matmul_ptr_kernel):
        same_as_interpreter(kernel, {"a": "*fp32", "b": "*fp32", "c": "*fp32", "M": "i32", "N": "i32", "K": "i32"},
                            {"BM": 64, "BN": 64}, [a, b, np.zeros((70, 90), np.float32), 70, 90, 13], (2, 2), 1,
                            tol=1e-4)
    a, b = randn(20, 9), randn(9, 33)
    same_as_interpreter(mm.matmul_kernel, {"a": "*fp32", "b": "*fp32", "c": "*fp32", "M": "i32", "N": "i32", "K": "i32"},
                        {"BM": 16, "BN": 32}, [a, b, np.zeros((20, 33), np.float32), 20, 33, 9], (2, 2), 4, tol=1e-4)


@pytest.mark.parametrize("bm,bn,warps,aligned", [(16, 32, 8, False), (16, 16, 4, True), (16, 32, 4, True),
                                                   (32, 16, 8, True), (128, 64, 1, False)])
def test_rolled_outer_product_loops(bm, bn, warps, aligned):
    """The loops passes/layout._rolled_pays leaves for ptxas to unroll (their bound read through
    mt_rolled_bound): a row one element a lane (unproven, or in runs proven 16-byte aligned), and a
    staged column of 256 products a thread."""
    m, n, k = bm + 11, (2 * bn if aligned else bn + 3), 7
    a, b = randn(m, k), randn(k, n)
    p = "*fp32:16" if aligned else "*fp32"
    sig = {"a": p, "b": p, "c": p, "M": "i32", "N": "i32:16" if aligned else "i32", "K": "i32"}
    assert "< mt_rolled_bound(p_K)" in mytriton.compile(mm.matmul_kernel, signature=sig, constexprs={"BM": bm, "BN": bn},
                                                       num_warps=warps).asm["cu"]
    same_as_interpreter(mm.matmul_kernel, sig, {"BM": bm, "BN": bn}, [a, b, np.zeros((m, n), np.float32), m, n, k],
                        (2, 2), warps, tol=1e-4)


@settings(max_examples=16, deadline=None, derandomize=True, database=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(bm=st.sampled_from([16, 32, 64, 128]), bn=st.sampled_from([16, 32, 64, 128]),
       warps=st.sampled_from([1, 2, 4, 8]), aligned=st.booleans(), pointers=st.booleans(), data=st.data())
def test_outer_product_loops_agree_with_the_interpreter(bm, bn, warps, aligned, pointers, data):
    """The seed matmul (indices or loop-carried pointers) over random tiles, warps and sizes, with
    and without the 16-byte promise: whatever layout passes/layout gives its outer products
    (default, half-warp or lane rows, a staged column) and whether its loop is rolled, the
    emulated CUDA computes what the interpreter does, masked tails included."""
    m = data.draw(st.integers(1, 2 * bm), label="M")
    n = 16 * data.draw(st.integers(1, max(1, 2 * bn // 16)), label="N/16") if aligned else \
        data.draw(st.integers(1, 2 * bn), label="N")
    k = 16 * data.draw(st.integers(1, 2), label="K/16") if aligned else data.draw(st.integers(1, 20), label="K")
    p, i = ("*fp32:16", "i32:16") if aligned else ("*fp32", "i32")
    sig = {"a": p, "b": p, "c": p, "M": "i32", "N": i, "K": i}
    a, b = randn(m, k), randn(k, n)
    same_as_interpreter(mm.matmul_ptr_kernel if pointers else mm.matmul_kernel, sig, {"BM": bm, "BN": bn},
                        [a, b, np.full((m, n), 7.0, np.float32), m, n, k], (-(-m // bm), -(-n // bn)), warps, tol=1e-4)


# --- fp16 / bf16 (tests/cuda_emulator/cuda_fp16.h: the conversions round as CUDA's) ----------------

def _bits(a):
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])


def same_bits_as_interpreter(fn, signature, constexprs, args, grid, warps=4):
    """As same_as_interpreter, bit for bit (any NaN equals any NaN)."""
    interp, cuda = run_both(fn, signature, constexprs, args, grid, warps)
    for i, (want, got) in enumerate(zip(interp, cuda)):
        if isinstance(want, np.ndarray):
            nan = (np.isnan(want.astype(np.float64)) & np.isnan(got.astype(np.float64))) if want.dtype.kind in "fV" \
                else np.zeros(want.shape, bool)
            bad = (_bits(want) != _bits(got)) & ~nan
            assert not bad.any(), (f"{fn.__name__} {constexprs}: argument {i} differs at {np.flatnonzero(bad)[:5]}: "
                                   f"interpreter {want[bad][:4]} vs CUDA {got[bad][:4]}")


@pytest.mark.parametrize("ht", ["fp16", "bf16"])
def test_half_arithmetic(ht):
    from tests.test_half import NP, rand
    from mytriton.ir.types import SCALARS
    from tests.kernels import half as hk
    x, y = rand(NP[ht], 1), rand(NP[ht], 2)
    x[:4] = [0.0, -0.0, np.inf, np.nan]
    n = len(x)
    for op, result in [("add", ht), ("sub", ht), ("mul", ht), ("div", "fp32"), ("where", ht), ("neg", ht),
                       ("abs", ht), ("lt", "i1"), ("maximum", ht if ht == "fp16" else "fp32")]:
        sig = {"x_ptr": f"*{ht}", "y_ptr": f"*{ht}", "out_ptr": f"*{result}", "n": "i32"}
        same_bits_as_interpreter(hk.binary_kernel, sig, {"OP": op, "EXPECT": SCALARS[result], "BLOCK": 256},
                                 [x, y, np.zeros(n, NP[result]), n], (mytriton.cdiv(n, 256),))


@pytest.mark.parametrize("src,dst", [("fp32", "fp16"), ("fp32", "bf16"), ("fp64", "fp16"), ("fp64", "bf16"),
                                     ("fp64", "fp32")])
def test_float_downcasts_round_as_asked(src, dst):
    """Both rounding modes on edge values (ties, overflow, inf, NaN): the CUDA conversions the
    backend picks against the interpreter's (fp64 -> fp32 once rounded toward zero by mistake)."""
    from tests.test_half import NP, _edge_floats
    from mytriton.ir.types import SCALARS
    from tests.kernels import half as hk
    x = _edge_floats(NP[src])
    for rounding in (None, "rtz"):
        sig = {"x_ptr": f"*{src}", "out_ptr": f"*{dst}", "n": "i32"}
        same_bits_as_interpreter(hk.cast_kernel, sig, {"DTYPE": SCALARS[dst], "ROUNDING": rounding, "BITCAST": False,
                                                       "SPELLING": 0, "BLOCK": 256},
                                 [x, np.zeros(len(x), NP[dst]), len(x)], (mytriton.cdiv(len(x), 256),))


def test_row_kernels():
    """Persistent rows with a run-time tl.range step, and an fp16 layer norm (manifests/kernels/rows.py)."""
    from tests.test_row_kernels import rows
    for n_rows, stages in ((7, 2), (7, 4), (2, 3)):      # (2 rows for 3 programs: one runs none)
        x = randn(n_rows, 100)
        same_as_interpreter(rows.softmax_rows_kernel,
                            {"out_ptr": "*fp32:16", "in_ptr": "*fp32:16", "in_row_stride": "i32",
                             "out_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
                            {"BLOCK": 128, "STAGES": stages}, [np.zeros_like(x), x, 100, 100, n_rows, 100], (3,), 4)
    m, n = 3, 300
    rng = np.random.default_rng(9)
    x, w, b = (rng.standard_normal(s).astype(np.float16) for s in ((m, n), n, n))
    # (the row sums' order differs between the backends: an fp32 ulp in rstd, an fp16 ulp in y)
    same_as_interpreter(rows.layer_norm_fwd_kernel,
                        {"x_ptr": "*fp16", "y_ptr": "*fp16", "w_ptr": "*fp16", "b_ptr": "*fp16", "mean_ptr": "*fp32",
                         "rstd_ptr": "*fp32", "row_stride": "i32", "n_cols": "i32", "eps": "fp32"},
                        {"BLOCK": 128}, [x, np.zeros_like(x), w, b, np.zeros(m, np.float32),
                                              np.zeros(m, np.float32), n, n, 1e-5], (m,), 4, tol=2e-3)


# --- atomics (their inline PTX runs as emu.h's mt_atom, under one lock) -------------------------------

def test_every_atomic_on_every_type():
    """Each element updated by its one owning thread, every kind, sem and scope, each dtype
    (float max/min through Triton's integer trick, fp16 add, bf16's compare-and-swap loop): bit for
    bit as the interpreter."""
    from tests.kernels import atomics as ka
    from tests.test_atomics import ATOMIC_DTYPES, RMW_KINDS
    rng = np.random.default_rng(11)
    import ml_dtypes
    for dtype in ("i32", "u32", "i64", "u64", "fp32", "fp64", "fp16", "bf16"):
        kinds = tuple(kd for kd in (*RMW_KINDS, "cas") if dtype in ATOMIC_DTYPES[kd])
        npt = {"i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64, "fp32": np.float32,
               "fp64": np.float64, "fp16": np.float16, "bf16": ml_dtypes.bfloat16}[dtype]
        if dtype.startswith("fp"):
            start = (rng.standard_normal(64) * 4).astype(npt)
            start[:3] = [0.0, -0.0, 1.5]
            val = (rng.standard_normal(64) * 4).astype(npt)
            val[:3] = [-0.0, 0.0, 1.5]
        else:
            start, val = rng.integers(0, 1000, 64).astype(npt), rng.integers(0, 1000, 64).astype(npt)
        same_bits_as_interpreter(ka.every_atomic, {"ptr": f"*{dtype}", "val_ptr": f"*{dtype}", "out_ptr": "*i32"},
                                 {"KINDS": kinds, "BLOCK": 64}, [start, val, np.zeros(64, np.int32)], (1,), 2)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("shape", [(8, 8), (2, 8), (32, 32)])
def test_atomic_add_of_a_reduction_result(axis, shape):
    """Triton's test_tensor_atomic_rmw: a sliced layout's copies add once and all get the old value."""
    from tests.kernels import atomics as ka
    x = randn(*shape)
    z = randn(shape[1 - axis])
    same_as_interpreter(ka.sum_then_add, {"z_ptr": "*fp32", "x_ptr": "*fp32", "old_ptr": "*fp32"},
                        {"AXIS": axis, "SHAPE0": shape[0], "SHAPE1": shape[1]}, [z, x, np.zeros_like(z)], (1,), 4, tol=1e-4)


def test_histogram_ticket_and_spin_lock():
    """Order-free results: counts and each bin's old values 0..count-1; one ticket per program (the
    emulator runs programs in order); the spin lock's serialized adds."""
    from tests.kernels import atomics as ka
    x = np.random.default_rng(2).integers(0, 10, 300).astype(np.int32)
    hist, old = np.zeros(10, np.int32), np.full(300, -1, np.int32)
    ck = mytriton.compile(ka.histogram_old, signature={"x_ptr": "*i32", "hist_ptr": "*i32", "old_ptr": "*i32",
                                                        "n": "i32"}, constexprs={"BLOCK": 64})
    cuda_emulator.run(ck.asm["cu"], [x, hist, old, 300], (5,))
    assert hist.tolist() == np.bincount(x, minlength=10).tolist()
    for b in range(10):
        assert sorted(old[x == b].tolist()) == list(range(hist[b]))
    counter, tickets = np.zeros(1, np.int32), np.full(4 * 32, -1, np.int32)
    ck = mytriton.compile(ka.ticket, signature={"counter_ptr": "*i32", "out_ptr": "*i32"}, constexprs={"BLOCK": 32})
    cuda_emulator.run(ck.asm["cu"], [counter, tickets], (4,))
    assert counter[0] == 4 and tickets.tolist() == np.repeat(np.arange(4), 32).tolist()
    data, lock = np.zeros(128, np.float32), np.zeros(1, np.int32)
    ck = mytriton.compile(ka.spin_lock, signature={"data_ptr": "*fp32", "lock_ptr": "*i32"}, constexprs={"BLOCK": 128})
    cuda_emulator.run(ck.asm["cu"], [data, lock], (6,))
    assert data.tolist() == [6.0] * 128 and lock[0] == 0


# --- property: hostile generated kernels, emulated CUDA against the interpreter ---------------------

from tests.user_text_strategies import kernels, load  # noqa: E402


@settings(max_examples=30, deadline=None, derandomize=True, database=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(k=kernels())
def test_hostile_generated_kernels_agree_with_the_interpreter(k):
    """tests/test_user_text_gpu.py's property (random kernels with hostile names, comments and
    constexpr strings; a masked tail; NaN, ±0, inf, denormals) without a GPU, bit for bit."""
    load(k)
    programs = 3
    total = programs * k.block
    x = randn(total)
    x[:8] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-45, -3e38, 1.0]
    same_bits_as_interpreter(k.fn, k.signature, k.constexprs,
                             [x, np.full(total, 7.0, np.float32), total - k.block // 2 - 1, -0.75],
                             (programs,), k.num_warps)


def test_block_pointer_loops():
    """A block pointer carried by a run-time loop (its base, shape and strides read as the initial
    values, by LICM), loaded with boundary checks: bit for bit as the interpreter."""
    from tests.kernels import block_ptrs as B
    x = randn(37, 300)
    same_as_interpreter(B.row_sums, {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "M": "i32", "N": "i32"},
                        {"BM": 16, "BN": 64}, [x, np.zeros(37, np.float32), 37, 300], (3,), 4, tol=1e-4)


# --- property: random rank-2 tile programs, emulated CUDA against the interpreter ----------------

from tests.tile_program_strategies import tile_programs  # noqa: E402
from tests.tile_program_strategies import load as load_tile_program  # noqa: E402


def tile_program_agrees(p) -> None:
    """``p`` (a loaded TileProgram) on the interpreter and as emulated CUDA, on the same random
    input: the outputs agree within a tolerance scaled by the result's magnitude (sums, scans and
    exp round differently; every other op is correctly rounded in both)."""
    from tests.test_half import NP
    stride = p.bn + 4                          # (room for the column read at N and the loop's shifts)
    rng = np.random.default_rng(p.m * 131 + p.n)
    size = max(p.m + 1, p.bn) * stride + p.bn + 8
    x = (rng.integers(-50, 50, size) if p.dtype.startswith("i") else rng.standard_normal(size)).astype(NP[p.dtype])
    main = max(p.m * p.n, p.programs * p.bn, p.m)
    out = np.concatenate([np.full(main, 12345.0, np.float32), np.full(p.bn, -np.inf, np.float32)])
    args = [x, out, p.m, p.n, stride, np.float32(0.75), p.loop, main]
    interp, cuda = run_both(p.fn, p.signature, p.constexprs, args, (p.programs,), p.num_warps)
    want, got = interp[1].astype(np.float64), cuda[1].astype(np.float64)
    finite = np.isfinite(want)
    scale = max(1.0, float(np.abs(want[finite]).max())) if finite.any() else 1.0
    tol = {"fp16": 2e-3, "bf16": 2e-2}.get(p.dtype, 1e-5)
    bad = ~np.isclose(got, want, rtol=10 * tol, atol=tol * scale, equal_nan=True)
    assert not bad.any(), (f"{p.dtype} BM={p.bm} BN={p.bn} num_warps={p.num_warps} M={p.m} N={p.n} L={p.loop}: output "
                           f"differs at {np.flatnonzero(bad)[:6]}: interpreter {want[bad][:4]} vs CUDA "
                           f"{got[bad][:4]}\n{p.source}")


@settings(max_examples=12, deadline=None, derandomize=True, database=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(p=tile_programs())
def test_random_tile_programs_agree_with_the_interpreter(p):
    """Random programs over a tile, its transpose, a row and a column (tests/tile_program_strategies.py):
    the layouts the code generator picks for them and every conversion between those layouts
    (reductions, broadcasts, transposes, scans, sorts, gathers, dots, a loop-carried value, a
    branch on the data, an early exit, atomics, a result read back from memory) compute what the
    interpreter does, with masked tails on both axes."""
    tile_program_agrees(load_tile_program(p))


@settings(max_examples=8, deadline=None, derandomize=True, database=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(p=tile_programs(dtypes=("fp16", "bf16", "i8", "i32")))
def test_random_half_and_integer_tile_programs_agree_with_the_interpreter(p):
    """The same programs over fp16, bf16, int8 and int32 input (8 halves or 16 bytes a 16-byte
    access; arithmetic in the input's own type where Triton keeps it — halves rounded, integers
    wrapping — and in the promoted type where it promotes)."""
    tile_program_agrees(load_tile_program(p))


@pytest.mark.parametrize("aligned", [False, True])
def test_loads_copied_by_cp_async(aligned):
    """A loop's load of 128 elements a thread (codegen._copied_loads: the row sum BLOCK=4096 on
    one warp) goes through shared memory by cp.async — 16-byte copies where the row is proven
    aligned, else one element each — masked-off elements zero-filled: it sums what the
    interpreter sums, over two full blocks and a tail."""
    n = 2 * 4096 + (48 if aligned else 37)
    x = randn(3, n)
    sig = {"x": "*fp32:16" if aligned else "*fp32", "out": "*fp32", "n_cols": "i32:16" if aligned else "i32"}
    cu = mytriton.compile(rd.row_sum_kernel, signature=sig, constexprs={"BLOCK": 4096}, num_warps=1).asm["cu"]
    assert f"mt_cp_async<{16 if aligned else 4}>(slots" in cu
    same_as_interpreter(rd.row_sum_kernel, sig, {"BLOCK": 4096}, [x, np.zeros(3, np.float32), n], (3,), 1, tol=1e-3)

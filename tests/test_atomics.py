"""Atomics without a GPU: the interpreter against sequential numpy references (histograms over
random bins with repeats, every op and dtype, masks, a scalar atomic's old value seen by every
thread, compare-and-swap), NVRTC compiling every op/dtype/sem/scope to the right PTX ``atom``, the
MLIR backend's modules through mlir-opt, the passes leaving atomics alone, and located errors."""
from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import mytriton
from mytriton.backends.mlir import emit_mlir, tools
from mytriton.compiler import build_ssa
from mytriton.ir.ops import ATOMIC_DTYPES, ATOMIC_SCOPES, ATOMIC_SEMS
from tests.kernels import atomics as k

NP = {"i16": np.int16, "u16": np.uint16, "i32": np.int32, "u32": np.uint32, "i64": np.int64,
      "u64": np.uint64, "fp16": np.float16, "bf16": ml_dtypes.bfloat16, "fp32": np.float32, "fp64": np.float64}
RMW_KINDS = ("add", "max", "min", "and", "or", "xor", "xchg")


def rng(seed=0):
    return np.random.default_rng(seed)


# --- the interpreter ------------------------------------------------------------------------------

@pytest.mark.parametrize("n,block,bins", [(1000, 128, 7), (4099, 256, 64), (33, 64, 1)])
def test_histogram_with_repeated_bins(n, block, bins):
    x = rng(n).integers(0, bins, n).astype(np.int32)
    hist = np.zeros(bins, np.int32)
    old = np.full(n, -1, np.int32)
    k.histogram_old[(mytriton.cdiv(n, block),)](x, hist, old, n, BLOCK=block)
    np.testing.assert_array_equal(hist, np.bincount(x, minlength=bins))
    # the interpreter runs a batch's atomics in program order, then element order: each element's
    # old value is the number of earlier elements in its bin
    for b in range(bins):
        np.testing.assert_array_equal(old[x == b], np.arange((x == b).sum()))
    hist2 = np.full(bins, 5, np.int32)
    k.histogram[(mytriton.cdiv(n, block),)](x, hist2, n, BLOCK=block)
    np.testing.assert_array_equal(hist2, 5 + np.bincount(x, minlength=bins))


def test_scalar_atomic_runs_once_per_program_and_every_thread_sees_it():
    programs, block = 37, 64
    counter = np.array([100], np.int32)
    out = np.full(programs * block, -1, np.int32)
    k.ticket[(programs,)](counter, out, BLOCK=block)
    assert counter[0] == 100 + programs                 # once per program, not per thread or element
    rows = out.reshape(programs, block)
    assert (rows == rows[:, :1]).all()                   # every thread of a program has its ticket
    assert sorted(rows[:, 0]) == list(range(100, 100 + programs))


def _values(dtype: str, kind: str, n: int, seed: int) -> np.ndarray:
    r = rng(seed)
    t = NP[dtype]
    if dtype.startswith("fp") or dtype == "bf16":
        x = (r.standard_normal(n) * 8).astype(t)
        if kind in ("max", "min", "xchg") and n >= 6:
            x[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, -np.nan]
        return x
    info = np.iinfo(t)
    if kind == "add":
        return r.integers(max(info.min, -1000), 1000, n, dtype=t, endpoint=True)
    return r.integers(info.min, info.max, n, dtype=t, endpoint=True)


def _sequential(kind, dst, vals, mask):
    """The reference: element by element, in order (np.add.at-like but with the old values)."""
    dst = dst.copy()
    old = np.zeros(len(vals), dst.dtype)
    with np.errstate(all="ignore"):
        for i, v in enumerate(vals):
            if not mask[i]:
                continue
            a = i % 8
            cur = dst[a]
            old[i] = cur
            if kind == "add":
                new = cur + v
            elif kind in ("max", "min"):
                new = _float_extreme(kind, cur, v) if dst.dtype.kind == "f" else (max if kind == "max" else min)(cur, v)
            elif kind == "and":
                new = cur & v
            elif kind == "or":
                new = cur | v
            elif kind == "xor":
                new = cur ^ v
            else:
                new = v
            dst[a] = new
    return dst, old


def _float_extreme(kind, cur, v):
    """Triton's float atomic max/min, written out: NaN-aware, -0.0 < +0.0, by sign and magnitude."""
    def key(x):
        neg = np.signbit(x)
        mag = x.view(np.uint32 if x.dtype == np.float32 else np.uint64) & ~np.array(1 << (8 * x.itemsize - 1)).astype(
            np.uint32 if x.dtype == np.float32 else np.uint64)
        return (-1 - int(mag)) if neg else int(mag)      # -0.0 -> -1 < +0.0 -> 0
    better = key(v) > key(cur) if kind == "max" else key(v) < key(cur)
    return v if better else cur


CASES = [(kind, dtype) for kind in RMW_KINDS for dtype in ATOMIC_DTYPES[kind] if dtype not in ("fp16", "bf16")]


@pytest.mark.parametrize("kind,dtype", CASES, ids=[f"{k}-{d}" for k, d in CASES])
def test_every_rmw_op_and_dtype_against_a_sequential_reference(kind, dtype):
    n, block = 150, 64                        # 3 programs, a masked tail; 8 addresses, many repeats
    vals = _values(dtype, kind, 3 * block, seed=len(kind) * 7 + len(dtype))
    dst0 = _values(dtype, kind, 8, seed=3)
    if dtype.startswith("fp") and kind == "add":
        dst0[:] = 0
    dst, old = dst0.copy(), np.full(3 * block, 77, NP[dtype])
    k.rmw_tile[(3,)](dst, vals, old, n, KIND=kind, SEM="relaxed", SCOPE="gpu", BLOCK=block)
    mask = np.arange(3 * block) < n
    want_dst, want_old = _sequential(kind, dst0, vals, mask)
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[NP[dtype]().itemsize]
    np.testing.assert_array_equal(dst.view(bits), want_dst.view(bits))          # bit-exact: NaN, -0.0
    np.testing.assert_array_equal(old[:n].view(bits), want_old[:n].view(bits))
    assert (old[n:] == 77).all()                                               # masked tail untouched


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_add_in_the_interpreter(dtype):
    """Each add rounded once to the half type (atom.add.noftz.f16; bf16's compare-and-swap loop)."""
    vals = np.linspace(-2, 2, 192).astype(np.float32).astype(NP[dtype])
    dst, old = np.zeros(8, NP[dtype]), np.zeros(192, NP[dtype])
    k.rmw_tile[(3,)](dst, vals, old, 192, KIND="add", SEM="acq_rel", SCOPE="gpu", BLOCK=64)
    want, want_old = _sequential("add", np.zeros(8, NP[dtype]), vals, np.ones(192, bool))
    np.testing.assert_array_equal(dst.view(np.uint16), want.view(np.uint16))
    np.testing.assert_array_equal(old.view(np.uint16), want_old.view(np.uint16))


@pytest.mark.parametrize("dtype", ["i32", "u64", "fp32", "fp64", "i16", "fp16"])
def test_compare_and_swap(dtype):
    t = NP[dtype]
    block = 32
    dst = (np.arange(block) % 3).astype(t)
    cmp = np.where(np.arange(block) % 2 == 0, dst, dst + 1).astype(t)      # even lanes match
    val = (np.arange(block) + 10).astype(t)
    old = np.zeros(block, t)
    want = np.where(np.arange(block) % 2 == 0, val, dst)
    before = dst.copy()
    k.cas_tile[(1,)](dst, cmp, val, old, BLOCK=block)
    np.testing.assert_array_equal(dst, want)
    np.testing.assert_array_equal(old, before)


def test_compare_and_swap_compares_bits():
    dst = np.array([np.nan, -0.0, 0.0, 1.0], np.float32)
    cmp = np.array([np.nan, 0.0, -0.0, 1.0], np.float32)
    val = np.array([5.0, 6.0, 7.0, 8.0], np.float32)
    old = np.zeros(4, np.float32)
    k.cas_tile[(1,)](dst, cmp, val, old, BLOCK=4)
    np.testing.assert_array_equal(dst, [5.0, -0.0, 0.0, 8.0])     # same-bits NaN swaps; ±0 do not


@mytriton.jit
def _counters(c_ptr, n):
    for i in range(n):
        mytriton.language.atomic_add(c_ptr, 1)            # in a run-time loop: not hoisted
        mytriton.language.atomic_add(c_ptr, 1)            # a twin: not merged by CSE
    mytriton.language.atomic_add(c_ptr + 1, 1)            # result unused: not removed by DCE


def test_the_passes_keep_every_atomic():
    c = np.zeros(2, np.int32)
    _counters[(5,)](c, 7)
    np.testing.assert_array_equal(c, [5 * 7 * 2, 5])


@mytriton.jit
def _spin_until(flag_ptr, out_ptr, BLOCK: mytriton.language.constexpr):
    """Every program takes one ticket; the loop bound is the ticket (differs between programs)."""
    t = mytriton.language.atomic_add(flag_ptr, 1)
    acc = mytriton.language.zeros((BLOCK,), mytriton.language.int32)
    for i in range(t):
        acc += 1
    mytriton.language.store(out_ptr + t * BLOCK + mytriton.language.arange(0, BLOCK), acc)


def test_a_loop_bounded_by_an_atomic_result_runs_per_program():
    flag, out = np.zeros(1, np.int32), np.full(6 * 16, -1, np.int32)
    _spin_until[(6,)](flag, out, BLOCK=16)
    np.testing.assert_array_equal(out.reshape(6, 16), np.repeat(np.arange(6)[:, None], 16, 1))


def test_spin_lock_in_the_interpreter():
    data, lock = np.zeros(32, np.float32), np.zeros(1, np.int32)
    k.spin_lock[(20,)](data, lock, BLOCK=32)
    np.testing.assert_array_equal(data, np.full(32, 20.0, np.float32))
    assert lock[0] == 0


# --- NVRTC: every op, dtype, sem and scope ---------------------------------------------------------

PTX_TYPE = {"add": {"i32": "s32", "u32": "u32", "i64": "u64", "u64": "u64", "fp16": "noftz.f16", "fp32": "f32",
                    "fp64": "f64"}}
# bf16 add is a compare-and-swap loop on the 16 bits (atom.add.noftz.bf16 needs sm_90)


def _ptx_op_types(kind: str, dtype: str) -> list[str]:
    bits = "".join(c for c in dtype if c.isdigit())
    if kind == "add":
        return ["cas.b16"] if dtype == "bf16" else [f"add.{PTX_TYPE['add'][dtype]}"]
    if kind in ("max", "min"):
        if dtype.startswith("fp"):      # Triton's trick: signed max/min, unsigned min/max
            other = "min" if kind == "max" else "max"
            return [f"{kind}.s{bits}", f"{other}.u{bits}"]
        return [f"{kind}.{dtype[0].replace('i', 's')}{bits}"]
    return [f"{ {'xchg': 'exch'}.get(kind, kind)}.b{bits}"]


DTYPES = ["i32", "u32", "i64", "u64", "fp32", "fp64", "fp16", "bf16", "u16"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_nvrtc_compiles_every_op_sem_and_scope(dtype):
    kinds = tuple(kd for kd in (*RMW_KINDS, "cas") if dtype in ATOMIC_DTYPES[kd])
    try:
        ck = mytriton.compile(k.every_atomic, signature={"ptr": f"*{dtype}", "val_ptr": f"*{dtype}", "out_ptr": "*i32"},
                              constexprs={"KINDS": kinds, "BLOCK": 32}, num_warps=1)
    except mytriton.CompilationError as e:
        if dtype == "fp16" and "does not support fp16" in str(e):
            pytest.skip("the CUDA backend has no fp16 values yet")
        raise
    assert ck.asm["cubin"][:4] == b"\x7fELF"            # ptxas accepted every atom
    found = {(sem, scope, op) for scope, sem, op in re.findall(r"atom\.global\.([a-z]+)\.([a-z_]+)\.([a-z0-9.]+)",
                                                               ck.asm["ptx"])}
    want = {(sem, scope, op) for kind in kinds for sem in ATOMIC_SEMS for scope in ATOMIC_SCOPES
            for op in _ptx_op_types(kind, dtype)}
    assert want <= found, sorted(want - found)
    assert not {f for f in found if f[2].startswith(("exch", "cas", "and", "or", "xor")) and not f[2].endswith(
        f".b{''.join(c for c in dtype if c.isdigit())}")}


def test_cuda_tile_atomic_each_element_once_and_copies_get_the_old_value():
    """BLOCK 32 over 128 threads: 4 copies of every element; the owner updates it, and (the old
    values being used) hands them to the copies through shared memory."""
    ck = mytriton.compile(k.histogram_old, signature={"x_ptr": "*i32", "hist_ptr": "*i32", "old_ptr": "*i32",
                                                      "n": "i32"}, constexprs={"BLOCK": 32})
    cu = ck.asm["cu"]
    atom = next(line for line in cu.splitlines() if "atom." in line)
    assert "(tid & 96) == 0 &&" in atom and "else v8[r] = 0;" in atom     # warps 1-3 hold copies
    assert "int* p_hist_ptr" in cu and "const int* p_hist_ptr" not in cu
    i = cu.index("atom.")
    assert cu.index("buf[", i) < cu.index("__syncthreads();", i) < cu.index("= buf[", i)
    unused = mytriton.compile(k.histogram, signature={"x_ptr": "*i32", "hist_ptr": "*i32", "n": "i32"},
                              constexprs={"BLOCK": 128}).asm["cu"]       # no copies, result unused
    assert "buf" not in unused and "__syncthreads" not in unused and "if (v" in unused


def test_debug_barrier_is_a_block_barrier():
    cu = mytriton.compile(k.spin_lock_body, signature={"data_ptr": "*fp32", "lock_ptr": "*i32"},
                          constexprs={"BLOCK": 128}).asm["cu"]
    body = cu[cu.index("tl.debug_barrier()"):]
    assert body.splitlines()[1].strip() == "__syncthreads();"


# --- MLIR -------------------------------------------------------------------------------------------

def _mlir_modules():
    out = []
    for dtype in DTYPES:
        kinds = tuple(kd for kd in (*RMW_KINDS, "cas") if dtype in ATOMIC_DTYPES[kd])
        out.append(emit_mlir(build_ssa(k.every_atomic, {"ptr": f"*{dtype}", "val_ptr": f"*{dtype}", "out_ptr": "*i32"},
                                       {"KINDS": kinds, "BLOCK": 32}, 1)))
    out.append(emit_mlir(build_ssa(k.histogram_old, {"x_ptr": "*i32", "hist_ptr": "*i32", "old_ptr": "*i32",
                                                     "n": "i32"}, {"BLOCK": 64}, 4)))
    out.append(emit_mlir(build_ssa(k.ticket, {"counter_ptr": "*i32", "out_ptr": "*i32"}, {"BLOCK": 64}, 4)))
    out.append(emit_mlir(build_ssa(k.spin_lock_body, {"data_ptr": "*fp32", "lock_ptr": "*i32"}, {"BLOCK": 128}, 4)))
    return out


def test_mlir_text_of_an_atomic():
    text = emit_mlir(build_ssa(k.ticket, {"counter_ptr": "*i32", "out_ptr": "*i32"}, {"BLOCK": 64}, 4))
    lines = [line.strip() for line in text.splitlines()]
    i = next(i for i, line in enumerate(lines) if "llvm.atomicrmw" in line)
    assert lines[i - 2].startswith("%v0 = scf.if %t") and lines[i - 2].endswith("-> (i32) {")
    assert lines[i - 1] == 'llvm.inline_asm has_side_effects "fence.acq_rel.gpu;", "~{memory}" : () -> ()'
    assert re.fullmatch(r'%t\d+ = llvm\.atomicrmw add %p_counter_ptr, %c1_i32 syncscope\("device"\) monotonic '
                        r': !llvm\.ptr, i32', lines[i])
    assert lines[i + 1] == lines[i - 1]
    assert "memref.store %v0" in text and text.count("gpu.barrier") >= 2


@pytest.mark.skipif(bool(tools.missing_tools("mlir-opt")), reason=f"MLIR tools missing: {tools.INSTALL_HINT}")
def test_mlir_opt_accepts_and_lowers_every_atomic():
    texts = _mlir_modules()
    errors = [e for e in tools.verify_many(texts) if e]
    assert not errors, errors[0]
    ptx = tools.to_ptx_many(texts)
    assert "atom.global.add.noftz.f16" in ptx[DTYPES.index("fp16")]
    for p in ptx[:len(DTYPES)]:
        assert {"fence.acq_rel.gpu", "fence.acq_rel.cta", "fence.acq_rel.sys"} <= set(re.findall(r"fence\.[a-z_.]+", p))


# --- errors -----------------------------------------------------------------------------------------

SRC = Path(k.__file__).resolve()
LINES = SRC.read_text().splitlines()

ERRORS = [
    ("bad_sem", "*fp32", "tl.atomic_add: memory semantic 'seq_cst' is not supported (use one of 'acq_rel', "
                         "'acquire', 'release', 'relaxed')"),
    ("bad_scope", "*fp32", "tl.atomic_cas: memory scope 'device' is not supported (use one of 'gpu', 'cta', 'sys')"),
    ("bad_dtype_i8", "*i8", "tl.atomic_add does not support i8; supported: i32, u32, i64, u64, f16, bf16, f32, f64"),
    ("bad_dtype_fp16_max", "*fp16", "tl.atomic_max does not support f16"),
    ("bad_float_and", "*fp32", "tl.atomic_and does not support f32; supported: i32, u32, i64, u64"),
    ("bad_pointer_value", "*fp32", "tl.atomic_xchg: the value must be a number, not a pointer (ptr<f32>)"),
    ("bad_not_pointer", "*fp32", "tl.atomic_add expects a pointer"),
    ("bad_block_into_scalar", "*fp32", "tl.atomic_add: value/mask shape (8,) does not fit the pointer shape "
                                       "(a scalar pointer)"),
    ("bad_mask", "*i32", "mask must be int1 (a comparison such as offs < n), got i32"),
]


@pytest.mark.parametrize("case,ptr,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_located_errors(case, ptr, message):
    line = next(i for i, text in enumerate(LINES, 1) if text.rstrip().endswith(f"# ERR {case}"))
    with pytest.raises(mytriton.CompilationError) as info:
        mytriton.compile(getattr(k, case), signature={"x": ptr})
    text = str(info.value)
    assert message in text
    assert f"{SRC}:{line}:" in text.splitlines()[0]


@pytest.mark.parametrize("shape,axis", [((2, 8), 0), ((8, 2), 1), ((32, 32), 1), ((64, 16), 0)])
def test_atomic_on_a_reduction_result(shape, axis):
    x = rng(1).standard_normal(shape).astype(np.float32)
    z0 = rng(2).standard_normal(shape[1 - axis]).astype(np.float32)
    z, old = z0.copy(), np.zeros_like(z0)
    k.sum_then_add[(1,)](z, x, old, AXIS=axis, SHAPE0=shape[0], SHAPE1=shape[1])
    np.testing.assert_allclose(z, z0 + x.sum(axis=axis), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(old, z0)
    ck = mytriton.compile(k.sum_then_add, signature={"z_ptr": "*fp32", "x_ptr": "*fp32", "old_ptr": "*fp32"},
                          constexprs={"AXIS": axis, "SHAPE0": shape[0], "SHAPE1": shape[1]}, num_warps=4)
    assert "atom.global.gpu.acq_rel.add.f32" in ck.asm["ptx"]        # as Triton's test_atomic_rmw expects

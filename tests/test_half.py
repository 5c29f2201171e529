"""fp16 and bf16 without a GPU: the interpreter against numpy / ml_dtypes references written here
(Triton's promotion, casts with both rounding modes, bitcasts, reductions, masked tails), the CUDA
code NVRTC compiles (16-byte vectors of 8 halves), the MLIR backend's text through mlir-opt, the
runtime's dtype checks, and the located errors. The GPU half is tests/test_half_gpu.py."""
import re

import ml_dtypes
import numpy as np
import pytest

import mytriton
import mytriton.language as tl
from mytriton.ir import ops
from mytriton.ir.types import BF16, F16, F32, I16, I32, SCALARS, U16
from mytriton.runtime import driver as rt
from tests.kernels import half as hk

# ml_dtypes warns when it widens a bfloat16 NaN (the references do that on purpose)
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
BF = ml_dtypes.bfloat16
NP = {"fp16": np.float16, "bf16": BF, "fp32": np.float32, "fp64": np.float64, "i32": np.int32, "i16": np.int16,
      "u16": np.uint16, "i8": np.int8, "u8": np.uint8, "i1": np.bool_, "i64": np.int64}
N, BLOCK = 1000, 256                  # a masked tail in the last program


def rand(dtype, seed, n=N, scale=3.0):
    x = np.random.default_rng(seed).standard_normal(n) * scale
    return x.astype(np.float32).astype(dtype) if dtype is BF else x.astype(dtype)


def bits(a):
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize]) if a.dtype.kind in "fV" else a


def same(got, want):
    """Bit for bit, except that any NaN equals any NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    nan = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64)) if got.dtype.kind in "fV" else False
    bad = (bits(got) != bits(want)) & ~nan
    assert not bad.any(), f"{int(bad.sum())} differ, first at {np.flatnonzero(bad)[:5]}: {got[bad][:5]} vs {want[bad][:5]}"


def run_binary(op, xt, yt, outt, expect):
    x, y = rand(NP[xt], 1), rand(NP[yt], 2)
    if np.dtype(NP[xt]).kind in "fV":
        x[:4] = [0.0, -0.0, np.inf, np.nan]
    out = np.zeros(N, NP[outt])
    hk.binary_kernel[(mytriton.cdiv(N, BLOCK),)](x, y, out, N, OP=op, EXPECT=SCALARS[expect], BLOCK=BLOCK)
    return x, y, out


def f32(a):
    return np.asarray(a).astype(np.float32)


# --- arithmetic and Triton's promotion ------------------------------------------------------------

@pytest.mark.parametrize("ht", ["fp16", "bf16"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "maximum", "minimum", "where"])
def test_half_op_half_is_computed_in_fp32_and_rounded_once(ht, op):
    """... except that tl.maximum/minimum compute bf16 in fp32 and return fp32, as Triton's do."""
    rt = "fp32" if op in ("maximum", "minimum") and ht == "bf16" else ht
    x, y, out = run_binary(op, ht, ht, rt, rt)
    fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.fmax, "minimum": np.fmin,
          "where": lambda a, b: np.where(a > 0, a, b)}[op]
    with np.errstate(all="ignore"):
        same(out, fn(f32(x), f32(y)).astype(NP[rt]))


def test_negation_is_zero_minus_x():
    """Triton's -x is 0 - x: -(+0.0) is +0.0 (and so is -(-0.0)); NaN and inf as usual."""
    x, _, out = run_binary("neg", "fp32", "fp32", "fp32", "fp32")
    assert not np.signbit(out[0]) and not np.signbit(out[1]) and out[2] == -np.inf and np.isnan(out[3])
    np.testing.assert_array_equal(out[4:], -x[4:])


@pytest.mark.parametrize("ht", ["fp16", "bf16"])
@pytest.mark.parametrize("op", ["div", "mod"])
def test_half_division_and_remainder_are_fp32(ht, op):
    """Triton: / and % on halves compute (and return) fp32."""
    x, y, out = run_binary(op, ht, ht, "fp32", "fp32")
    with np.errstate(all="ignore"):
        same(out, (np.true_divide if op == "div" else np.fmod)(f32(x), f32(y)))


@pytest.mark.parametrize("xt, yt, expect", [
    ("fp16", "fp32", "fp32"), ("bf16", "fp32", "fp32"), ("fp16", "fp64", "fp64"),
    ("fp16", "bf16", "fp16"),      # Triton: fp16 wins over bf16 (computation_type_impl rule 3)
    ("bf16", "i32", "fp32"),       # bf16 stays bf16 only with itself
    ("fp16", "i32", "fp16"), ("i16", "fp16", "fp16")])
def test_promotion(xt, yt, expect):
    x, y, out = run_binary("add", xt, yt, "fp32", expect)
    ct = NP[expect]
    with np.errstate(all="ignore"):
        xs = x.astype(np.float32).astype(ct) if NP[xt] is BF and ct is np.float16 else x.astype(ct)
        ys = y.astype(np.float32).astype(ct) if NP[yt] is BF and ct is np.float16 else y.astype(ct)
        want = (xs.astype(np.float64) + ys.astype(np.float64)).astype(ct).astype(np.float32)
    same(out, want)


@pytest.mark.parametrize("ht", ["fp16", "bf16"])
@pytest.mark.parametrize("op, fn", [("lt", np.less), ("eq", np.equal)])
def test_comparisons(ht, op, fn):
    x, y, out = run_binary(op, ht, ht, "i1", "i1")
    y[5:50] = x[5:50]
    out = np.zeros(N, np.bool_)
    hk.binary_kernel[(mytriton.cdiv(N, BLOCK),)](x, y, out, N, OP=op, EXPECT=SCALARS["i1"], BLOCK=BLOCK)
    same(out, fn(f32(x), f32(y)))


@pytest.mark.parametrize("ht", ["fp16", "bf16"])
@pytest.mark.parametrize("op", ["neg", "abs", "scaled"])
def test_unary_and_constants(ht, op):
    x, _, out = run_binary(op, ht, ht, ht, ht)
    c = ops.constant_value(0.1, SCALARS[ht])           # 0.1 rounded once to the half type
    with np.errstate(all="ignore"):
        want = {"neg": lambda: np.zeros_like(x) - x, "abs": lambda: np.abs(x),
                "scaled": lambda: (f32((f32(x) * f32(c)).astype(NP[ht])) + 1.5).astype(NP[ht])}[op]()
    same(out, want.astype(NP[ht]))


def test_math_on_halves_is_refused_like_triton():
    with pytest.raises(mytriton.CompilationError) as e:
        hk.exp_of_half_kernel[(1,)](np.ones(16, np.float16), np.ones(16, np.float16), BLOCK=16)
    msg = str(e.value)
    assert "exp expects fp32 or fp64, got f16" in msg and "convert with .to(tl.float32)" in msg
    assert re.search(r"half\.py:\d+:\d+", msg) and "tl.exp(x)" in msg


@pytest.mark.parametrize("ht", ["fp16", "bf16"])
def test_math_through_fp32(ht):
    x = rand(NP[ht], 3)
    out = np.zeros(N, NP[ht])
    hk.math_kernel[(mytriton.cdiv(N, BLOCK),)](x, out, N, BLOCK=BLOCK)
    f = f32(x)
    with np.errstate(all="ignore"):
        want = (np.exp(f) * np.float32(0.25) + np.sqrt(np.abs(f)) - np.sin(f) + np.log(np.abs(f) + 1)).astype(NP[ht])
    np.testing.assert_allclose(f32(out), f32(want), rtol=1e-2, atol=1e-2)


# --- casts ------------------------------------------------------------------------------------

def _cast(x, dst, rounding=None, bitcast=False, spelling=0):
    out = np.zeros(len(x), NP[dst])
    hk.cast_kernel[(mytriton.cdiv(len(x), BLOCK),)](x, out, len(x), DTYPE=SCALARS[dst], ROUNDING=rounding,
                                                     BITCAST=bitcast, SPELLING=spelling, BLOCK=BLOCK)
    return out


def _edge_floats(dtype):
    x = np.random.default_rng(7).standard_normal(N) * np.float64(2.0) ** np.random.default_rng(8).integers(-30, 30, N)
    x[:12] = [0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65520.0, 70000.0, 3.4e38, 1 + 2 ** -11, 1 + 2 ** -8,
              1 + 3 * 2 ** -8]
    with np.errstate(all="ignore"):
        return x.astype(dtype)


def _rtz_reference(x64, dst):
    """x rounded toward zero into dst, by exhaustive search on the bit patterns (independent of
    the compiler's rule): the largest-magnitude value of dst not beyond |x|."""
    finite = np.arange(0, 1 << 16, dtype=np.uint16).view(NP[dst]).astype(np.float64)
    pos = np.unique(np.abs(finite[np.isfinite(finite)]))      # +0.0 only
    mag = np.abs(x64)
    idx = np.searchsorted(pos, np.where(np.isnan(mag), 0, mag), side="right") - 1
    out = pos[np.clip(idx, 0, None)] * np.sign(x64)
    out = np.where(np.signbit(x64) & (out == 0), -0.0, out)
    out = np.where(np.isinf(x64), x64, out)
    out = np.where(np.isnan(x64), np.nan, out)
    return out.astype(np.float32).astype(NP[dst])       # exact: every value is already in dst


@pytest.mark.parametrize("src", ["fp32", "fp64"])
@pytest.mark.parametrize("dst", ["fp16", "bf16"])
@pytest.mark.parametrize("rounding", [None, "rtne", "rtz"])
def test_downcast_rounding(src, dst, rounding):
    x = _edge_floats(NP[src])
    out = _cast(x, dst, rounding, spelling=hash((src, dst, rounding)) % 3)
    x64 = x.astype(np.float64)
    if rounding == "rtz":
        want = _rtz_reference(x64, dst)
    elif dst == "fp16":
        with np.errstate(all="ignore"):
            want = x64.astype(np.float16)                 # numpy rounds fp64 -> fp16 once, to nearest even
    else:
        want = _rtne_bf16_reference(x64)
    same(out, want)


def _rtne_bf16_reference(x64):
    """fp64 -> bf16 rounded once to nearest even, by exhaustive search on bf16's bit patterns."""
    allv = np.arange(0, 1 << 16, dtype=np.uint16).view(BF).astype(np.float64)
    pos = np.unique(np.abs(allv[np.isfinite(allv)]))          # +0.0 only
    mag = np.where(np.isnan(x64), 0, np.abs(x64))
    hi = np.clip(np.searchsorted(pos, mag, side="left"), 0, len(pos) - 1)
    lo = np.clip(hi - 1, 0, None)
    below, above = pos[lo], pos[hi]
    pick_hi = (above - mag < mag - below) | ((above - mag == mag - below) &
                                             ((np.searchsorted(pos, above) & 1) == 0))
    r = np.where(mag <= below, below, np.where(pick_hi, above, below))
    r = np.where(mag >= pos[-1] + (pos[-1] - pos[-2]) / 2, np.inf, r)   # rounds past the largest finite
    r = np.where(mag == pos[hi], pos[hi], r)
    out = np.copysign(r, x64)
    out = np.where(np.isnan(x64), np.nan, out)
    return out.astype(np.float32).astype(BF)


@pytest.mark.parametrize("src, dst", [("fp16", "fp32"), ("bf16", "fp32"), ("fp16", "fp64"), ("bf16", "fp64"),
                                      ("fp16", "bf16"), ("bf16", "fp16"), ("fp16", "i32"), ("bf16", "i16"),
                                      ("fp16", "u8"), ("bf16", "i1"), ("fp16", "i1")])
def test_casts_from_halves(src, dst):
    x = rand(NP[src], 4, scale=50.0)
    x[:3] = [0.0, -0.0, 1.5]
    if NP[dst] in (np.uint8,):
        x = np.abs(x)
    out = _cast(x, dst)
    with np.errstate(all="ignore"):
        want = f32(x) != 0 if dst == "i1" else f32(x).astype(NP[dst])
    same(out, want)


@pytest.mark.parametrize("src", ["i32", "i16", "u8", "i64", "i1"])
@pytest.mark.parametrize("dst", ["fp16", "bf16"])
def test_casts_from_integers(src, dst):
    rng = np.random.default_rng(5)
    x = (rng.integers(0, 2, N) if src == "i1" else rng.integers(-70000 if src != "u8" else 0,
                                                               70000 if src != "u8" else 255, N)).astype(NP[src])
    if src == "i16":
        x = rng.integers(-32768, 32767, N).astype(np.int16)
    out = _cast(x, dst)
    # fp16: one rounding of the integer; bf16: through fp32, as Triton's NVIDIA backend converts
    with np.errstate(all="ignore"):
        want = x.astype(np.float64).astype(np.float16) if dst == "fp16" else x.astype(np.float32).astype(BF)
    same(out, want)


def test_int_to_bf16_goes_through_fp32():
    """2**24 + 2**16 + 1 rounds to 2**24 + 2**16 in fp32, then (a tie) to 2**24 in bf16; one direct
    rounding would give 2**24 + 2**17. Triton's NVIDIA backend converts through fp32."""
    x = np.array([2 ** 24 + 2 ** 16 + 1], np.int32)
    out = _cast(x, "bf16")
    assert float(out[0]) == 2.0 ** 24


@pytest.mark.parametrize("src, dst", [("fp16", "i16"), ("i16", "fp16"), ("bf16", "u16"), ("u16", "bf16"),
                                      ("fp16", "bf16"), ("fp32", "i32")])
def test_bitcast(src, dst):
    x = rand(NP[src], 6, scale=1000.0) if np.dtype(NP[src]).kind in "fV" else \
        np.random.default_rng(6).integers(0, 65535, N).astype(NP[src])
    out = _cast(x, dst, bitcast=True, spelling=2)
    same(out, x.view(NP[dst]))


def test_bitcast_of_another_width_is_a_located_error():
    with pytest.raises(mytriton.CompilationError) as e:
        _cast(np.ones(8, np.float16), "i32", bitcast=True)
    msg = str(e.value)
    assert "cannot bitcast f16 (16 bits) to i32 (32 bits)" in msg
    assert re.search(r"half\.py:\d+:\d+", msg) and "x.to(DTYPE, fp_downcast_rounding=ROUNDING, bitcast=BITCAST)" in msg


@pytest.mark.parametrize("src, dst, rounding, message", [
    ("fp16", "fp32", "rtz", "fp_downcast_rounding applies only to a float converted to a narrower float, not f16 to f32"),
    ("i32", "fp16", "rtne", "not i32 to f16"),
    ("fp32", "fp16", "up", "invalid rounding mode 'up'")])
def test_rounding_mode_errors(src, dst, rounding, message):
    with pytest.raises(mytriton.CompilationError, match=re.escape(message)) as e:
        _cast(np.ones(8, NP[src]), dst, rounding)
    assert re.search(r"half\.py:\d+:\d+", str(e.value))


# --- reductions ---------------------------------------------------------------------------------

@pytest.mark.parametrize("ht", ["fp16", "bf16"])
@pytest.mark.parametrize("kind, expect", [("sum", None), ("sum_fp32", "fp32"), ("max", "fp32"), ("min", "fp32")])
def test_reductions(ht, kind, expect):
    """Triton 3.6: tl.sum keeps the half type (dtype= widens first); tl.max/min reduce in fp32."""
    M, Ncols = 37, 100
    x = rand(NP[ht], 9, M * Ncols, scale=1.0)
    expect = expect or ht
    out = np.zeros(M, NP[expect])
    hk.reduce_kernel[(mytriton.cdiv(M, 16),)](x, out, M, Ncols, KIND=kind, EXPECT=SCALARS[expect],
                                               BLOCK_M=16, BLOCK_N=128)
    rows = x.reshape(M, Ncols).astype(np.float64)
    if kind.startswith("sum"):
        tol = 2e-2 if ht == "bf16" and kind == "sum" else 3e-3
        np.testing.assert_allclose(out.astype(np.float64), rows.sum(1), rtol=tol, atol=tol * 10)
    else:
        same(out, (rows.max(1) if kind == "max" else rows.min(1)).astype(np.float32))


# --- scalars ------------------------------------------------------------------------------------

@pytest.mark.parametrize("st, s", [("fp16", np.float16(0.333)), ("bf16", BF(0.333))])
def test_half_scalar_arguments(st, s):
    x = rand(np.float32, 10)
    out = np.zeros(N, np.float32)
    hk.scalar_kernel[(mytriton.cdiv(N, BLOCK),)](x, out, N, s, BLOCK=BLOCK)
    sv = np.float32(s)
    same(out, x * sv + sv)
    assert rt.infer_type(s) == st


# --- the CUDA backend ----------------------------------------------------------------------------

def compile_cuda(kernel, signature, constexprs, num_warps=4):
    return mytriton.compile(kernel, signature=signature, constexprs=constexprs, target="sm_90", num_warps=num_warps)


@pytest.mark.parametrize("ht", ["fp16", "bf16"])
def test_cuda_half_add_moves_16_bytes_per_access(ht):
    ck = compile_cuda(hk.add_kernel, {"x_ptr": f"*{ht}:16", "y_ptr": f"*{ht}:16", "out_ptr": f"*{ht}:16",
                                      "n": "i32:16"}, {"BLOCK": 1024})
    cu, ptx = ck.asm["cu"], ck.asm["ptx"]
    c = {"fp16": "__half", "bf16": "__nv_bfloat16"}[ht]
    assert "#include <cuda_fp16.h>" in cu and "#include <cuda_bf16.h>" in cu
    assert f"mt_vec<{c}, 8>" in cu                      # 8 halves per 16-byte access
    assert "ld.global.v4.u32" in ptx and "st.global.v4.u32" in ptx
    assert ck.asm["cubin"][:4] == b"\x7fELF"


def test_cuda_kernels_without_halves_include_no_half_headers():
    ck = compile_cuda(hk.add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                      {"BLOCK": 64})
    assert "cuda_fp16.h" not in ck.asm["cu"]


HALF_CASES = [
    (hk.binary_kernel, {"x_ptr": "*fp16", "y_ptr": "*bf16", "out_ptr": "*fp32", "n": "i32"},
     {"OP": "add", "EXPECT": F16, "BLOCK": 256}),
    (hk.binary_kernel, {"x_ptr": "*bf16", "y_ptr": "*i32", "out_ptr": "*bf16", "n": "i32"},
     {"OP": "mod", "EXPECT": F32, "BLOCK": 256}),
    (hk.binary_kernel, {"x_ptr": "*bf16", "y_ptr": "*bf16", "out_ptr": "*bf16", "n": "i32"},
     {"OP": "where", "EXPECT": BF16, "BLOCK": 256}),
    (hk.binary_kernel, {"x_ptr": "*fp16", "y_ptr": "*fp16", "out_ptr": "*i1", "n": "i32"},
     {"OP": "lt", "EXPECT": SCALARS["i1"], "BLOCK": 256}),
    (hk.binary_kernel, {"x_ptr": "*bf16", "y_ptr": "*bf16", "out_ptr": "*bf16", "n": "i32"},
     {"OP": "scaled", "EXPECT": BF16, "BLOCK": 256}),
    (hk.cast_kernel, {"x_ptr": "*fp64", "out_ptr": "*bf16", "n": "i32"},
     {"DTYPE": BF16, "ROUNDING": "rtz", "BITCAST": False, "SPELLING": 0, "BLOCK": 128}),
    (hk.cast_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp16", "n": "i32"},
     {"DTYPE": F16, "ROUNDING": "rtz", "BITCAST": False, "SPELLING": 0, "BLOCK": 128}),
    (hk.cast_kernel, {"x_ptr": "*i64", "out_ptr": "*fp16", "n": "i32"},
     {"DTYPE": F16, "ROUNDING": None, "BITCAST": False, "SPELLING": 0, "BLOCK": 128}),
    (hk.cast_kernel, {"x_ptr": "*u16", "out_ptr": "*bf16", "n": "i32"},
     {"DTYPE": BF16, "ROUNDING": None, "BITCAST": True, "SPELLING": 1, "BLOCK": 128}),
    (hk.cast_kernel, {"x_ptr": "*fp32", "out_ptr": "*i32", "n": "i32"},        # no half headers
     {"DTYPE": I32, "ROUNDING": None, "BITCAST": True, "SPELLING": 0, "BLOCK": 128}),
    (hk.cast_kernel, {"x_ptr": "*fp64", "out_ptr": "*fp32", "n": "i32"},
     {"DTYPE": F32, "ROUNDING": "rtz", "BITCAST": False, "SPELLING": 2, "BLOCK": 128}),
    (hk.reduce_kernel, {"x_ptr": "*fp16", "out_ptr": "*fp16", "M": "i32", "N": "i32"},
     {"KIND": "sum", "EXPECT": F16, "BLOCK_M": 4, "BLOCK_N": 256}),
    (hk.reduce_kernel, {"x_ptr": "*bf16", "out_ptr": "*fp32", "M": "i32", "N": "i32"},
     {"KIND": "max", "EXPECT": F32, "BLOCK_M": 4, "BLOCK_N": 256}),
    (hk.math_kernel, {"x_ptr": "*bf16", "out_ptr": "*bf16", "n": "i32"}, {"BLOCK": 256}),
    (hk.scalar_kernel, {"x_ptr": "*fp16", "out_ptr": "*fp16", "n": "i32", "s": "bf16"}, {"BLOCK": 256}),
]


@pytest.mark.parametrize("case", range(len(HALF_CASES)))
def test_cuda_half_kernels_compile_under_nvrtc(case):
    kernel, sig, constexprs = HALF_CASES[case]
    ck = compile_cuda(kernel, sig, constexprs)
    assert ck.asm["cubin"][:4] == b"\x7fELF"


def test_cuda_half_arithmetic_is_fp32_rounded_back():
    ck = compile_cuda(hk.add_kernel, {"x_ptr": "*bf16", "y_ptr": "*bf16", "out_ptr": "*bf16", "n": "i32"},
                      {"BLOCK": 256})
    assert re.search(r"__float2bfloat16_rn\(\(__bfloat162float\(v\d+\[r\]\) \+ __bfloat162float\(v\d+\[r\]\)\)\)",
                     ck.asm["cu"])


# --- the MLIR backend ----------------------------------------------------------------------------

def test_mlir_backend_emits_and_validates_half_kernels():
    from mytriton.backends.mlir import emit_mlir, tools
    from mytriton.compiler import build_ssa
    if tools.missing_tools("mlir-opt"):
        pytest.skip("mlir-opt-19 is not installed")
    texts = [emit_mlir(build_ssa(k, sig, c, 4)) for k, sig, c in HALF_CASES]
    assert all(err is None for err in tools.verify_many(texts)), tools.verify_many(texts)
    joined = "\n".join(texts)
    assert "arith.truncf" in joined and "toward_zero : f64 to bf16" in joined
    assert "arith.bitcast" in joined and ": i16 to bf16" in joined
    assert "arith.addf" in joined and ": f16" in joined
    try:
        ptx = tools.to_ptx_many(texts)                   # and MLIR's NVPTX backend lowers them
    except tools.MLIRToolsMissing as e:
        pytest.skip(str(e))
    assert all(".entry" in p for p in ptx)


# --- the dtype table and the runtime's checks ---------------------------------------------------

def test_one_dtype_table():
    for name, d in rt.DTYPES.items():
        t = SCALARS[name]
        assert (t.name, t.kind, t.bits, t.c_name, t.ir_name) == (d.name, d.kind, d.bits, d.c, d.ir)
        assert getattr(tl, d.triton) is t
        assert rt.dtype_named(d.numpy) == name and rt.dtype_named(d.triton) == name
        assert np.dtype(ops.np_dtype(t)).itemsize == d.itemsize
    assert rt.dtype_named("half") == "fp16" and rt.dtype_named("double") == "fp64"
    assert (F16.info.typestr, BF16.info.typestr, I16.info.mlir, U16.info.mlir) == ("f2", "", "i16", "i16")


class FakeTensor:
    """A CUDA torch tensor as the runtime sees one (data_ptr, dtype, get_device)."""

    def __init__(self, dtype_name):
        self.dtype = type("dtype", (), {"__str__": lambda s: f"torch.{dtype_name}"})()

    def data_ptr(self):
        return 0x10000

    def get_device(self):
        return 0


class FakeCupy:
    def __init__(self, typestr):
        self.__cuda_array_interface__ = {"typestr": typestr, "data": (0x10000, False), "shape": (4,), "version": 3}


def test_runtime_accepts_half_arrays_and_refuses_mismatches():
    conv = rt._make_converter("x", rt.parse_type("*fp16"))
    assert conv(FakeTensor("float16"))[0] == 0x10000 and conv(FakeCupy("<f2"))[0] == 0x10000
    assert rt._make_converter("x", rt.parse_type("*bf16"))(FakeTensor("bfloat16"))[0] == 0x10000
    with pytest.raises(TypeError, match=r"parameter 'x' expects \*fp16, got a bfloat16 array"):
        conv(FakeTensor("bfloat16"))
    with pytest.raises(TypeError, match=r"parameter 'x' expects \*fp16, got a float32 array"):
        conv(FakeCupy("<f4"))
    with pytest.raises(TypeError, match=r"parameter 'y' expects \*bf16, got a float16 array"):
        rt._make_converter("y", rt.parse_type("*bf16"))(FakeCupy("<f2"))
    assert rt.infer_type(FakeTensor("bfloat16")) == "*bf16" and rt.infer_type(FakeCupy("<f2")) == "*fp16"


def test_device_array_of_bf16_knows_its_dtype():
    a = rt.DeviceArray(0, "bf16")                    # empty: no memory, no driver needed
    assert a.dtype == np.dtype(BF) and a._dtype_str == "bf16"
    b = rt.DeviceArray(0, np.float16)
    assert b._dtype_str == "fp16"


def test_signature_suggests_half_spellings():
    from mytriton.aot.signature import SCALAR_TYPES, type_suggestion
    assert "bf16" in SCALAR_TYPES and "fp16" in SCALAR_TYPES
    assert type_suggestion("*half:16") == "; did you mean '*fp16:16'?"
    assert type_suggestion("bfloat16") == "; did you mean 'bf16'?"


@mytriton.jit
def store_fp64_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_storing_fp64_into_bf16_rounds_once():
    """A store converts as the cast op does: fp64 -> bf16 in one rounding (1 + 2**-8 + 2**-30 is
    just above the tie, so it rounds up; through fp32 it would be a tie, rounded down to 1.0)."""
    x = np.array([1 + 2 ** -8 + 2 ** -30, 2 ** 24 + 2 ** 16 + 1], np.float64)
    out = np.zeros(2, BF)
    store_fp64_kernel[(1,)](x, out, 2, BLOCK=4)
    assert out.view(np.uint16).tolist() == [0x3F81, 0x4B81]


def test_float_narrowing_rounds_to_nearest_unless_asked():
    """fp64 -> fp32 is a plain (round-to-nearest-even) conversion; only rtz truncates."""
    from mytriton.backends.cuda.codegen import c_convert
    from mytriton.ir.types import F32, F64
    assert c_convert("x", F64, F32) == "((float)x)"
    assert c_convert("x", F64, F32, "rtne") == "((float)x)"
    assert c_convert("x", F64, F32, "rtz") == "__double2float_rz(x)"
    assert c_convert("x", F64, SCALARS["fp16"], "rtz") == "__float2half_rz(__double2float_rz(x))"

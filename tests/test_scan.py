"""Scans and reductions by a combine function (tl.associative_scan, tl.cumsum, tl.cumprod,
tl.reduce, tl.argmax/argmin, tl.max/min with return_indices): the interpreter against numpy, the
generated CUDA (CPU emulator) against the interpreter over layouts whose scanned axis lies in
registers, lanes and warps, the printed IR, and the errors users get."""
import numpy as np
import pytest

import mytriton
from tests import cuda_emulator
from tests.kernel_files import compile_error
from tests.kernels import scans as S

RNG = np.random.default_rng(7)
EMULATOR = pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
SCAN_OPS = ["cumsum", "cumprod", "first", "recurrence", "cummax"]


def scan_reference(op, x, y, axis, reverse):
    """numpy's answer (sequential, in index order; from the end when reversed)."""
    xi, yi = (np.flip(x, axis), np.flip(y, axis)) if reverse else (x, y)
    if op == "cumsum":
        z = np.cumsum(xi, axis, dtype=x.dtype)
    elif op == "cumprod":
        z = np.cumprod(xi, axis, dtype=x.dtype)
    elif op == "first":
        z = np.broadcast_to(np.take(xi, [0], axis), xi.shape)
    else:
        xt, yt = np.moveaxis(xi, axis, -1), np.moveaxis(yi, axis, -1)
        out, acc = [], np.zeros(xt.shape[:-1], x.dtype)
        best, at = xt[..., 0], np.zeros(xt.shape[:-1], np.int64)
        for j in range(xt.shape[-1]):
            if op == "recurrence":
                acc = xt[..., j] * acc + yt[..., j]
                out.append(acc)
            else:                                    # cummax: the index of the running maximum
                keep = best > xt[..., j]
                best, at = np.where(keep, best, xt[..., j]), np.where(keep, at, j)
                out.append(at if not reverse else x.shape[axis] - 1 - at)
        z = np.moveaxis(np.stack(out, -1), -1, axis)
    return np.flip(z, axis) if reverse else z


def scan_inputs(op, shape, dtype):
    if dtype == np.int32:      # small values: products and recurrences stay exact
        lo, hi = (-1, 2) if op in ("cumprod", "recurrence") else (-9, 10)
        return RNG.integers(lo, hi, shape).astype(np.int32), RNG.integers(-1, 2, shape).astype(np.int32)
    x = RNG.uniform(0.5, 1.5, shape) if op == "cumprod" else RNG.standard_normal(shape)
    return x.astype(dtype), RNG.standard_normal(shape).astype(dtype)


def run_scan(op, x, y, axis, reverse):
    z = np.zeros(x.shape, np.int64 if op == "cummax" else x.dtype)
    S.scan_kernel[(1,)](x, y, z, M=x.shape[0], N=x.shape[1], AXIS=axis, REVERSE=reverse, OP=op)
    return z


@pytest.mark.parametrize("op", SCAN_OPS)
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
@pytest.mark.parametrize("shape,axis", [((8, 32), 1), ((8, 32), 0), ((1, 1024), 1), ((32, 16), 0)])
@pytest.mark.parametrize("reverse", [False, True])
def test_scans_as_numpy(op, dtype, shape, axis, reverse):
    x, y = scan_inputs(op, shape, dtype)
    got, want = run_scan(op, x, y, axis, reverse), scan_reference(op, x, y, axis, reverse)
    if dtype == np.int32 or op in ("first", "cummax"):
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@EMULATOR
@pytest.mark.parametrize("op,shape,axis,reverse,warps", [
    ("cumsum", (8, 32), 1, False, 4),          # lanes
    ("cumsum", (2, 1024), 1, True, 4),         # registers, lanes and warps
    ("recurrence", (1024, 2), 0, False, 16),   # two operands; warps
    ("recurrence", (8, 32), 0, True, 4),
    ("first", (32, 16), 0, True, 4),           # not commutative
    ("cummax", (1, 1024), 1, False, 16),       # an i32 and an i64 operand
    ("cummax", (32, 16), 1, True, 4),
    ("cumprod", (16, 32), 1, False, 1),
])
def test_emulated_scans_as_numpy(op, shape, axis, reverse, warps):
    x, y = scan_inputs(op, shape, np.int32)
    ck = mytriton.compile(S.scan_kernel, {"X": "*i32", "Y": "*i32", "Z": "*i64" if op == "cummax" else "*i32"},
                          {"M": shape[0], "N": shape[1], "AXIS": axis, "REVERSE": reverse, "OP": op}, num_warps=warps)
    z = np.zeros(shape, np.int64 if op == "cummax" else np.int32)
    cuda_emulator.run(ck.asm["cu"], [x, y, z], (1,))
    np.testing.assert_array_equal(z, scan_reference(op, x, y, 0 if axis == 0 else 1, reverse))


@pytest.mark.parametrize("dtype,lo,hi,out", [("i8", 90, 100, "i32"), ("u8", 200, 256, "u32"), ("i1", 0, 2, "u32"),
                                             ("fp16", 0, 2, "fp16"), ("bf16", 0, 2, "fp32")])
def test_cumsum_widens_as_triton(dtype, lo, hi, out):
    """Integers narrower than 32 bits accumulate in 32 with their sign (bool as unsigned); bf16 in
    fp32; fp16 stays fp16 (the sums here are exact in every type)."""
    np_of = {"i8": np.int8, "u8": np.uint8, "i1": np.bool_, "fp16": np.float16, "bf16": np.float32,
             "i32": np.int32, "u32": np.uint32, "fp32": np.float32}
    x = RNG.integers(lo, hi, 256).astype(np_of[dtype])
    if dtype == "bf16":
        import ml_dtypes
        x = x.astype(ml_dtypes.bfloat16)
    ck = mytriton.compile(S.scan_1d, {"X": f"*{dtype}", "Z": f"*{out}"}, {"N": 256, "REVERSE": False})
    ir_name = {"i32": "i32", "u32": "u32", "fp16": "f16", "fp32": "f32"}[out]
    assert "= scan %" in ck.asm["ssa"] and f"}} : vector<256 x {ir_name}> combine(" in ck.asm["ssa"]
    z = np.zeros(256, np_of[out])
    S.scan_1d[(1,)](x, z, N=256, REVERSE=False)
    np.testing.assert_array_equal(z, np.cumsum(x.astype(np.int64)).astype(np_of[out]))


def arg_reference(x, axis, greater):
    return (x.max(axis), x.argmax(axis)) if greater else (x.min(axis), x.argmin(axis))


@pytest.mark.parametrize("greater", [True, False])
@pytest.mark.parametrize("shape,axis", [((8, 32), 1), ((8, 32), 0), ((64, 64), 0), ((2, 1024), 1)])
def test_max_and_min_with_indices_as_numpy(greater, shape, axis):
    """Ties go to the lowest index (numpy's rule, and Triton's with tie_break_left=True): small
    integers make many ties."""
    x = RNG.integers(-4, 5, shape).astype(np.float32)
    n = shape[1 - axis]
    v, i = np.zeros(n, np.float32), np.zeros(2 * n, np.int32)
    S.arg_kernel[(1,)](x, v, i, M=shape[0], N=shape[1], AXIS=axis, GREATER=greater, LEFT=True)
    want_v, want_i = arg_reference(x, axis, greater)
    np.testing.assert_array_equal(v, want_v)
    np.testing.assert_array_equal(i, np.concatenate([want_i, want_i]))


@EMULATOR
@pytest.mark.parametrize("greater,left,shape,axis,warps", [
    (True, True, (8, 32), 1, 4), (False, True, (64, 64), 0, 8), (True, False, (2, 1024), 1, 4),
    (False, False, (32, 16), 0, 2)])
def test_emulated_indices_as_numpy(greater, left, shape, axis, warps):
    """Without the left tie break the values are distinct (which index wins a tie is unspecified)."""
    x = (RNG.integers(-4, 5, shape) if left else RNG.permutation(shape[0] * shape[1]).reshape(shape)).astype(np.float32)
    n = shape[1 - axis]
    ck = mytriton.compile(S.arg_kernel, {"X": "*fp32", "V": "*fp32", "I": "*i32"},
                          {"M": shape[0], "N": shape[1], "AXIS": axis, "GREATER": greater, "LEFT": left},
                          num_warps=warps)
    v, i = np.zeros(n, np.float32), np.zeros(2 * n, np.int32)
    cuda_emulator.run(ck.asm["cu"], [x, v, i], (1,))
    want_v, want_i = arg_reference(x, axis, greater)
    np.testing.assert_array_equal(v, want_v)
    np.testing.assert_array_equal(i, np.concatenate([want_i, want_i]))


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("keep", [False, True])
def test_reduce_of_two_blocks_by_one_function(axis, keep):
    x = RNG.integers(-50, 50, (16, 32)).astype(np.int32)
    z = np.zeros(64, np.int32)
    S.reduce_kernel[(1,)](x, z, M=16, N=32, AXIS=axis, KEEP=keep)
    if axis is None:
        np.testing.assert_array_equal(z[:2], [x.sum(), 2 * x.max()])
    else:
        n = x.shape[1 - axis]
        np.testing.assert_array_equal(z[:2 * n], np.concatenate([x.sum(axis), 2 * x.max(axis)]))
    if cuda_emulator.available():
        ck = mytriton.compile(S.reduce_kernel, {"X": "*i32", "Z": "*i32"}, {"M": 16, "N": 32, "AXIS": axis, "KEEP": keep})
        got = np.zeros(64, np.int32)
        cuda_emulator.run(ck.asm["cu"], [x, got], (1,))
        np.testing.assert_array_equal(got, z)


def test_the_combine_body_prints_inside_its_op():
    ck = mytriton.compile(S.scan_kernel, {"X": "*fp32", "Y": "*fp32", "Z": "*fp32"},
                          {"M": 2, "N": 8, "AXIS": 1, "REVERSE": True, "OP": "recurrence"})
    lines = ck.asm["ssa"].splitlines()
    at = next(i for i, line in enumerate(lines) if " = scan " in line)
    assert lines[at:at + 6] == [
        "%17, %18 = scan %7, %9 {axis=1, reverse=True} : block<2x8 x f32>, block<2x8 x f32> "
        "combine(%10: f32, %11: f32, %12: f32, %13: f32) {",
        "  %14 = mul %10, %12 : f32",
        "  %15 = mul %11, %12 : f32",
        "  %16 = add %15, %13 : f32",
        "  yield %14, %16",
        "}"]


BAD = '''import mytriton
import mytriton.language as tl


@mytriton.jit
def two(a, b):
    return a, b


@mytriton.jit
def to_float(a, b):
    return (a + b).to(tl.float32)


def plain(a, b):
    return a + b


@mytriton.jit
def k(X, CASE: tl.constexpr):
    x = tl.load(X + tl.arange(0, 16))
    if CASE == 0:
        y = tl.associative_scan(x, 0, two)
    elif CASE == 1:
        y = tl.reduce(x, 0, to_float)
    elif CASE == 2:
        y = tl.cumsum(x, axis=1)
    elif CASE == 3:
        y = tl.associative_scan(x, 0, plain)
    else:
        y = tl.argmax(x, None)
    tl.store(X, y)
'''


@pytest.mark.parametrize("case,message,line", [
    (0, "tl.associative_scan: combine_fn must return 1 value(s), one per input, got 2", 23),
    (1, "tl.reduce: combine_fn must return a scalar i32 for input 0, got f32", 25),
    (2, "tl.associative_scan: axis 1 is out of range for a rank-1 block", 27),
    (3, "tl.associative_scan: combine_fn must be a @jit function, got function", 29),
    (4, "the index of a max or min needs an axis", 31)])
def test_errors_name_the_call(tmp_path, case, message, line):
    text = compile_error(tmp_path / "bad_scan.py", BAD, {"X": "*i32"}, {"CASE": case})
    assert message in text and f"bad_scan.py:{line}" in text


@pytest.mark.parametrize("kernel,sig,constexprs,op", [
    (S.scan_kernel, {"X": "*i32", "Y": "*i32", "Z": "*i32"}, {"M": 8, "N": 32, "AXIS": 0, "REVERSE": False,
                                                             "OP": "cumsum"}, "scan"),
    (S.reduce_kernel, {"X": "*i32", "Z": "*i32"}, {"M": 16, "N": 32, "AXIS": 0, "KEEP": False}, "reduce")])
def test_the_mlir_backend_refuses_combine_functions(kernel, sig, constexprs, op):
    with pytest.raises(mytriton.CompilationError, match=f"MLIR backend does not support the '{op}' op") as e:
        mytriton.compile(kernel, sig, constexprs, backend="mlir")
    assert "scans.py:" in str(e.value)

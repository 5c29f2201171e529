"""Pointers converted to and from 64-bit integers (``x.to(tl.pointer_type(...))``, ``tl.pi32_t``,
pointers stored as their addresses) and sums in a narrow ``dtype=``: the interpreter against numpy,
the generated CUDA (CPU emulator) against numpy, and the conversions refused."""
import numpy as np
import pytest

import mytriton
from mytriton.backends.interpreter import InterpreterError
from tests import cuda_emulator
from tests.kernel_files import compile_error
from tests.kernels import pointers as P

RNG = np.random.default_rng(5)
EMULATOR = pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")


def test_where_between_pointers_stores_addresses():
    n = 1000
    cond = RNG.integers(0, 2, n).astype(bool)
    a, b = (RNG.integers(-2**62, 2**62, n) for _ in range(2))
    out = np.zeros(n, np.int64)
    P.select_addresses[(8,)](cond, a, b, out, n, BLOCK=128)
    np.testing.assert_array_equal(out, np.where(cond, a, b))


@EMULATOR
def test_emulated_where_between_pointers():
    n = 1000
    cond = RNG.integers(0, 2, n).astype(bool)
    a, b = (RNG.integers(-2**62, 2**62, n) for _ in range(2))
    ck = mytriton.compile(P.select_addresses, {"cond_ptr": "*i1", "a_ptr": "*i64", "b_ptr": "*i64",
                                               "out_ptr": "*i64", "n": "i32"}, {"BLOCK": 128})
    out = np.zeros(n, np.int64)
    cuda_emulator.run(ck.asm["cu"], [cond, a, b, out, n], (8,))
    np.testing.assert_array_equal(out, np.where(cond, a, b))


@EMULATOR
def test_emulated_rows_reached_through_a_table_of_addresses():
    rows = [RNG.standard_normal(100).astype(np.float32) for _ in range(5)]
    table = np.array([r.ctypes.data for r in rows[::-1]], np.int64)
    ck = mytriton.compile(P.gather_rows, {"table_ptr": "*i64", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 128})
    out = np.zeros((5, 100), np.float32)
    cuda_emulator.run(ck.asm["cu"], [table, out, 100], (5,))
    np.testing.assert_array_equal(out, np.stack(rows[::-1]) * 2)


def test_interpreter_refuses_an_address_it_does_not_own():
    table = np.array([12345678], np.int64)
    with pytest.raises(InterpreterError, match="does not point into any array argument"):
        P.gather_rows[(1,)](table, np.zeros(100, np.float32), 100, BLOCK=128)


@pytest.mark.parametrize("emulated", [False, True])
def test_pointer_round_trip(emulated):
    x = RNG.integers(-1000, 1000, 64).astype(np.int32)
    out = np.zeros(64, np.int32)
    if emulated:
        if not cuda_emulator.available():
            pytest.skip("needs g++ (C++20) to run CUDA on the CPU")
        ck = mytriton.compile(P.round_trip, {"x_ptr": "*i32", "out_ptr": "*i32"}, {"BLOCK": 64})
        cuda_emulator.run(ck.asm["cu"], [x, out], (1,))
    else:
        P.round_trip[(1,)](x, out, BLOCK=64)
    np.testing.assert_array_equal(out, x + 1)


@pytest.mark.parametrize("emulated", [False, True])
def test_sums_in_a_narrow_dtype_wrap(emulated):
    out = np.zeros(4, np.int32)
    if emulated:
        if not cuda_emulator.available():
            pytest.skip("needs g++ (C++20) to run CUDA on the CPU")
        ck = mytriton.compile(P.narrow_sums, {"out_ptr": "*i32"}, {"ROWS": 16, "COLS": 32})
        cuda_emulator.run(ck.asm["cu"], [out], (1,))
    else:
        P.narrow_sums[(1,)](out, ROWS=16, COLS=32)
    # 512 ones: 0 in int1, 0 in int8 (512 = 2 * 256), 512 in int32; 16 row sums of 32 ones in int1 = 0
    np.testing.assert_array_equal(out, [0, 0, 512, 0])


@pytest.mark.parametrize("body,message", [
    ("tl.store(o, tl.load(x).to(tl.pointer_type(tl.float32)).to(tl.float32))",
     "cannot convert ptr<f32> to f32"),
    ("tl.store(o, tl.load(tl.load(x).to(tl.int32).to(tl.pi32_t)))",
     "cannot convert i32 to ptr<i32>: a pointer converts to another pointer type, to int64/uint64 or to bool"),
    ("tl.store(o, tl.load(x.to(tl.pointer_type(tl.float16), fp_downcast_rounding='rtz')))",
     "fp_downcast_rounding applies only to floats"),
    ("p = tl.pointer_type(tl.int32, address_space=3)", "only global memory (address_space=1) is supported"),
])
def test_pointer_conversions_refused(tmp_path, body, message):
    err = compile_error(tmp_path / "casts.py", "import mytriton\nimport mytriton.language as tl\n\n\n"
                        f"@mytriton.jit\ndef k(x, o):\n    {body}\n", {"x": "*i64", "o": "*fp32"})
    assert message in err and "casts.py:7:" in err


def test_interpreter_follows_a_pointer_to_a_pointee_of_the_same_size_only():
    x = RNG.integers(-1000, 1000, 64).astype(np.uint32)
    out = np.zeros(64, np.int32)
    P.round_trip[(1,)](x, out, BLOCK=64)            # (x passed as uint32: read through an int32 pointer)
    np.testing.assert_array_equal(out, x.view(np.int32) + 1)
    with pytest.raises(InterpreterError, match="'x_ptr' .i64, 8-byte elements. through a pointer to 4-byte elements"):
        P.round_trip[(1,)](x.astype(np.int64), out, BLOCK=64)


@pytest.mark.parametrize("emulated", [False, True])
@pytest.mark.parametrize("value,dtype,want", [(100000, np.int32, 42), (37, np.int32, 37), (100000, np.int64, 100000),
                                              (84.0, np.float32, 84.0)])
def test_short_circuiting_on_compile_time_facts(emulated, value, dtype, want):
    x = np.array([value], dtype)
    if emulated:
        if not cuda_emulator.available():
            pytest.skip("needs g++ (C++20) to run CUDA on the CPU")
        ty = {np.int32: "*i32", np.int64: "*i64", np.float32: "*fp32"}[dtype]
        cuda_emulator.run(mytriton.compile(P.cap_int32, {"x": ty}, {}).asm["cu"], [x], (1,))
    else:
        P.cap_int32[(1,)](x)
    assert x[0] == want


def test_pointer_type_is_the_class_of_pointer_types():
    import mytriton.language as tl
    assert isinstance(tl.pi32_t, tl.pointer_type) and isinstance(tl.pointer_type(tl.float16), tl.pointer_type)
    assert not isinstance(tl.int32, tl.pointer_type) and tl.pointer_type(tl.int32) == tl.pi32_t

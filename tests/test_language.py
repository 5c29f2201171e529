"""Language semantics visible in SSA: loops (runtime, unrolled, nested, swaps), factories (seed
part 11), rank-2 broadcasting, reductions, calls."""
import re

import numpy as np
import pytest

import mytriton
import mytriton.language as tl
from mytriton.errors import CompilationError
from tests.kernels import basic, lang


def ssa(fn, sig, **ce):
    return mytriton.compile(fn, signature=sig, constexprs=ce).asm["ssa"]


def test_swap_yields_take_effect_together():
    text = ssa(basic.swap_kernel, {"out": "*i32", "n": "i32"})
    assert text.splitlines()[:2] == ["%3, %4 = for %0 in range(0, n, 1) iter_args(%1 = 1, %2 = 2) : i32, i32 {",
                                     "  yield %2, %1"]
    cu = mytriton.compile(basic.swap_kernel, signature={"out": "*i32", "n": "i32"}).asm["cu"]
    assert "int v3_next = v4;" in cu and "int v4_next = v3;" in cu


def test_nested_loops_with_two_carried_values():
    text = ssa(basic.nested_kernel, {"out": "*i32", "m": "i32", "n": "i32"})
    assert "%11, %12 = for %0 in range(0, m, 1) iter_args(%1 = 0, %2 = 0.0) : i32, f32 {" in text
    assert "  %9, %10 = for %3 in range(0, n, 1) iter_args(%4 = %1, %5 = %2) : i32, f32 {" in text
    assert "    yield %7, %8\n  }\n  yield %9, %10\n}" in text


def test_constant_bounds_unroll_and_long_ones_stay_loops():
    text = ssa(lang.unrolled, {"out": "*i32", "n": "i32"}, COUNT=4)
    assert text == ("%0 = mul n, 2 : i32\n%1 = add n, %0 : i32\n%2 = mul n, 3 : i32\n%3 = add %1, %2 : i32\n"
                    "%4 = add %3, 1 : i32\nstore out, %4\n")     # 0 + n*0 + n*1 folded; static_range adds 0, 1
    text = ssa(lang.unrolled, {"out": "*i32", "n": "i32"}, COUNT=1000)
    assert re.search(r"for %\d+ in range\(0, 1000, 1\)", text)


@pytest.mark.parametrize("shape,message", [
    ((), "block shape must be a non-empty int sequence, got ()"),
    ((4, 0), "block dimensions must be positive integers, got (4, 0)"),
    ((4, -1), "block dimensions must be positive integers, got (4, -1)"),
    ((4, True), "block dimensions must be positive integers, got (4, True)"),
    ((6,), "block dimensions must be powers of 2, got (6,)"),
])
def test_factory_shape_validation(shape, message):
    for kind in ("empty",) if shape == () else ("empty", "zeros", 1.0):
        with pytest.raises(mytriton.CompilationError) as e:
            ssa(lang.factory, {"out": "*fp32"}, SHAPE=shape, KIND=kind)
        assert message in str(e.value)


def test_an_empty_shape_makes_a_scalar_as_in_triton():
    """tl.full([], v, dtype) and tl.zeros([], dtype) are scalars of dtype; a shape compares equal
    to the list of its dimensions (Triton's x.shape is a list)."""
    for kind, value in (("zeros", 0.0), ("full", 1.5)):
        assert ssa(lang.scalar_factory, {"out": "*fp32"}, KIND=kind) == f"store out, {value}\n"


def test_factory_ssa_and_shape_forms():
    for shape in (8, [8], (8,)):
        text = ssa(lang.factory, {"out": "*fp32"}, SHAPE=shape, KIND="zeros")
        assert "zeros {shape=(8,), dtype=f32} : vector<8 x f32>" in text
    text = ssa(lang.factory, {"out": "*fp32"}, SHAPE=(2, 4), KIND=2)
    assert "full 2.0 {shape=(2, 4), dtype=f32} : block<2x4 x f32>" in text
    cu = mytriton.compile(lang.factory, signature={"out": "*fp32"}, constexprs={"SHAPE": (8,), "KIND": "empty"}).asm["cu"]
    assert "// tl.empty: uninitialized" in cu


def test_full_rejects_bool_for_float():
    with pytest.raises(mytriton.CompilationError, match="full value True cannot be converted to f32"):
        ssa(lang.factory, {"out": "*fp32"}, SHAPE=(8,), KIND=True)


@pytest.mark.parametrize("axis,keep,rtype", [(0, False, "vector<8 x f32>"), (1, False, "vector<4 x f32>"),
                                             (None, False, "f32"), (1, True, "vector<4 x f32>")])
def test_reduction_types(axis, keep, rtype):
    text = ssa(lang.reductions, {"x": "*fp32", "out": "*fp32"}, AXIS=axis, KEEP=keep)
    assert re.search(rf"= sum %\d+ {{axis={axis}}} : {re.escape(rtype)}", text), text
    if keep:
        assert re.search(r"= expand_dims %\d+ \{axis=1\} : block<4x1 x f32>", text)


def test_rank2_broadcast_of_any_value():
    text = ssa(lang.broadcast_any_value, {"x": "*fp32", "out": "*fp32"})
    assert re.search(r"= expand_dims %\d+ \{axis=1\} : block<16x1 x f32>", text)
    assert re.search(r"= expand_dims %\d+ \{axis=0\} : block<1x16 x f32>", text)
    assert re.search(r"= mul %\d+, %\d+ : block<16x16 x f32>", text)


def test_jit_calls_are_inlined_and_keyed():
    text = ssa(lang.calls_helper, {"x": "*fp32", "out": "*fp32"})
    assert re.search(r"= mul %\d+, 2\.0 : vector<32 x f32>", text)
    assert re.search(r"= add %\d+, 4\.0 : vector<32 x f32>\n%\d+ = add %\d+, 8\.0 :", text)   # cdiv(7, 2), next_power_of_2(5)
    key = lang.calls_helper.cache_key
    assert len(key) == 64 and key != lang._twice.cache_key
    assert mytriton.cdiv(7, 2) == 4 and mytriton.next_power_of_2(5) == 8 and mytriton.next_power_of_2(1) == 1


def test_unrolled_range_index_has_int32_semantics():
    """A `range` index is a run-time i32 in Triton: // and % truncate (Python would floor)."""
    import numpy as np
    out = np.zeros(1, np.int32)
    lang.negative_index_arith[(1,)](out)
    assert out[0] == sum(int(i / 3) + int(np.fmod(i, 3)) for i in range(-4, 0)) == -6
    text = ssa(lang.negative_index_arith, {"out": "*i32"})
    assert text == "store out, -6\n"          # still unrolled and folded to a constant


@pytest.mark.parametrize("x,lit,op,rtype", [
    ("i8", 1, "add", "i8"),          # an int literal takes an int tensor's type
    ("u8", 1, "add", "u8"),          # ... and an unsigned one's (Triton's kinds: bool < integer < float)
    ("fp32", 2, "add", "f32"),       # a lower kind never widens the tensor
    ("i32", 2.5, "add", "f32"),      # a higher kind does
    ("i8", -3, "where", "i8"),
])
def test_python_numbers_follow_triton_promotion(x, lit, op, rtype):
    text = ssa(lang.literal_promotion, {"x_ptr": f"*{x}", "out_ptr": "*fp32"}, LIT=lit, OP=op)
    line = next(t for t in text.splitlines() if f"= {op} " in t)
    assert line.endswith(f"vector<16 x {rtype}>"), line


@pytest.mark.parametrize("x,lit,op,message", [
    ("i8", 300, "add", "the number 300 is out of range for i8"),
    ("i32", 2**31, "add", "the number 2147483648 is out of range for i32"),   # a u32 literal, lower kind
    ("u32", -1, "add", "cannot combine the negative number -1 with an unsigned u32 value"),
    ("u8", -3, "floordiv", "cannot combine the negative number -3 with an unsigned u8 value"),
])
def test_python_numbers_are_checked_against_the_tensor_type(x, lit, op, message):
    with pytest.raises(mytriton.CompilationError) as e:
        ssa(lang.literal_promotion, {"x_ptr": f"*{x}", "out_ptr": "*fp32"}, LIT=lit, OP=op)
    assert message in str(e.value)


def test_mixed_signedness_division_of_tensors_is_refused():
    from tests.kernels import basic
    with pytest.raises(mytriton.CompilationError, match="Cannot use '//' with u32 and i32 because they have different signedness"):
        ssa(basic.op_kernel, {"a_ptr": "*u32", "b_ptr": "*i32", "out_ptr": "*i32", "n": "i32"}, OP="floordiv", BLOCK=16)


@mytriton.jit
def _item(x_ptr, out_ptr, DT: tl.constexpr, N: tl.constexpr):
    v = tl.load(x_ptr + tl.arange(0, N)).item()
    tl.store(out_ptr, v + tl.full((1,), 1, dtype=DT).item())


@pytest.mark.parametrize("np_dtype,dtype", [(np.int64, tl.int64), (np.int8, tl.int8), (np.float16, tl.float16),
                                            (np.uint32, tl.uint32)])
def test_item_of_a_one_element_tensor_is_its_scalar(np_dtype, dtype):
    x, out = np.array([5], np_dtype), np.zeros(1, np_dtype)
    _item[(1,)](x, out, dtype, 1)
    assert out.dtype == np_dtype and out[0] == 6


def test_item_of_a_larger_tensor_is_an_error_at_its_line():
    with pytest.raises(mytriton.CompilationError) as e:
        _item[(1,)](np.zeros(2, np.float32), np.zeros(1, np.float32), tl.float32, 2)
    assert "item() needs a tensor of one element, got shape [2]" in str(e.value)
    assert re.search(r"test_language\.py:\d+:\d+: error", str(e.value))
    assert isinstance(e.value, mytriton.TritonError)          # Triton's base class, as Triton's errors


def test_a_number_has_a_tensors_attributes():
    import numpy as np
    out = np.zeros(1, np.int64)
    lang.number_attributes[(1,)](out, 2, 7)
    assert out[0] == sum(range(2, 7)) + 1


@pytest.mark.parametrize("axes,shape", [(-2, (1, 4)), (-1, (4, 1)), ((0, 2), (1, 4, 1)), ([-1, 0], (1, 4, 1))])
def test_expand_dims_takes_negative_and_several_axes(axes, shape, capsys):
    ssa(lang.expand_axes, {"out": "*i32"}, AXES=axes)
    assert capsys.readouterr().out.strip() == str(shape)


@pytest.mark.parametrize("axes,message", [(-3, "invalid axis -3. Expected -2 <= axis < 2"),
                                          ((0, 0), "expand_dims received duplicate axes, normalized axes = [0, 0]")])
def test_expand_dims_errors(axes, message):
    with pytest.raises(mytriton.CompilationError, match=re.escape(message)):
        ssa(lang.expand_axes, {"out": "*i32"}, AXES=axes)


def test_triton_idioms_compile():
    out = np.zeros(1, np.uint32)
    lang.triton_compat[(1,)](out)
    assert out[0] == 32


@mytriton.jit
def _constexpr_types(lit: tl.constexpr, TENSOR_TYPE: tl.constexpr, PLAIN: tl.constexpr):
    same: tl.constexpr = lit
    tl.static_assert(lit.type == tl.core.constexpr_type(lit))
    tl.static_assert(same.type == tl.core.constexpr_type(lit) and same == lit)
    if TENSOR_TYPE is not None:
        plain = lit                                  # a plain name holding a number reads as a tensor
        tl.static_assert(plain.type == TENSOR_TYPE)
        if PLAIN:
            tl.static_assert(plain.type == tl.core.constexpr_type(lit))


@pytest.mark.parametrize("lit,tensor_type", [(10, tl.int32), (32.1, tl.float32), ((5, 6, 7), None), ("s", None),
                                              (2**40, tl.int64)])
def test_a_constexpr_names_type_is_a_constexpr_type_of_its_value(lit, tensor_type):
    mytriton.compile(_constexpr_types, {}, {"lit": lit, "TENSOR_TYPE": tensor_type, "PLAIN": False})
    assert tl.core.constexpr_type(10) == tl.core.constexpr_type(10) != tl.core.constexpr_type(10.0)
    assert repr(tl.core.constexpr_type((5, 6))) == "constexpr_type[(5, 6)]"


def test_a_plain_name_is_not_a_constexpr_and_a_constexpr_annotation_wants_a_compile_time_value():
    with pytest.raises(CompilationError, match="static_assert"):
        mytriton.compile(_constexpr_types, {}, {"lit": 10, "TENSOR_TYPE": tl.int32, "PLAIN": True})

    @mytriton.jit
    def runtime_value(x_ptr):
        pid: tl.constexpr = tl.program_id(0)
        tl.store(x_ptr, pid)
    with pytest.raises(CompilationError, match=r"'pid' is annotated tl.constexpr but is given a run-time value") as e:
        mytriton.compile(runtime_value, {"x_ptr": "*i32"})
    assert f"test_language.py:{runtime_value.fn.__code__.co_firstlineno + 2}" in str(e.value)


def test_a_dtype_repr_is_its_name_in_the_language():
    assert repr(tl.float16) == "mytriton.language.float16" and repr(tl.int1) == "mytriton.language.int1"
    for dtype in (tl.int8, tl.uint64, tl.bfloat16, tl.float8e4nv, tl.float64):
        assert eval(repr(dtype)) == dtype

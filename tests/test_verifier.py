"""The verifier's rules, each broken on purpose in hand-built SSA (seed parts 5 and 10)."""
import pytest

from mytriton.ir.ssa import Const, Function, Loc, Op, Param, Region, Value
from mytriton.ir.types import BlockType, F32, I32, PointerType
from mytriton.ir.verifier import VerificationError, verify

LOC = Loc("kern.py", 7, 5, "    acc = acc + x", "k")
V8 = BlockType((8,), F32)


def func(ops, params=()):
    return Function("k", list(params), Region(ops=ops))


def loop(inits, body_ops_fn, step=None, n_results=None, bounds=None):
    """Build `for i in range(0, n, step) iter_args(...)`; body_ops_fn(index, args) -> ops incl. yield."""
    n = Param("n", I32)
    index = Value(I32)
    args = [Value(v.type) for v in inits]
    body = Region([index, *args], body_ops_fn(index, args))
    start, stop = bounds or (Const(0, I32), n)
    op = Op("for", [start, stop, step or Const(1, I32), *inits],
            [v.type for v in inits][:n_results] if n_results is not None else [v.type for v in inits],
            regions=[body], loc=LOC)
    return op, n


def zeros():
    return Op("zeros", [], [V8], {"shape": (8,), "dtype": F32}, loc=LOC)


def test_well_formed_loop_verifies():
    z = zeros()
    f, n = loop([z.result], lambda i, a: [add := Op("add", [a[0], Const(1.0, F32)], [V8], loc=LOC),
                                           Op("yield", [add.result], [])])
    verify(func([z, f], [n]))


def test_use_before_definition():
    z = zeros()
    a = Op("add", [z.result, z.result], [V8], loc=LOC)
    with pytest.raises(VerificationError, match="used before it is defined") as e:
        verify(func([a, z]))
    assert "kern.py:7:5" in str(e.value) and "add" in str(e.value)


def test_value_escaping_its_region():
    z = zeros()
    inner = Op("add", [z.result, Const(1.0, F32)], [V8], loc=LOC)
    f, n = loop([z.result], lambda i, a: [inner, Op("yield", [inner.result], [])])
    after = Op("add", [inner.result, z.result], [V8], loc=LOC)
    with pytest.raises(VerificationError, match="outside the region that defines it"):
        verify(func([z, f, after], [n]))


def test_lane_types_must_match():
    z = zeros()
    f, n = loop([z.result], lambda i, a: [c := Op("cmp_lt", [a[0], Const(0.0, F32)], [BlockType((8,), I32.__class__("i1", "bool", 1, "bool"))], loc=LOC),
                                           Op("yield", [c.result], [])])
    with pytest.raises(VerificationError, match="for lane 0 has mismatched types: the terminator of region 0 forwards vector<8 x bool> "
                                                 "into the arguments of region 0, of type vector<8 x f32>"):
        verify(func([z, f], [n]))


def test_constant_step_must_not_be_zero():
    z = zeros()
    f, n = loop([z.result], lambda i, a: [Op("yield", [a[0]], [])], step=Const(0, I32))
    with pytest.raises(VerificationError, match="loop step must not be zero"):
        verify(func([z, f], [n]))


def test_step_may_be_negative_or_run_time():
    for step in (Const(-2, I32), Param("s", I32)):
        z = zeros()
        f, n = loop([z.result], lambda i, a: [Op("yield", [a[0]], [])], step=step)
        verify(func([z, f], [n] + ([step] if isinstance(step, Param) else [])))
    z = zeros()
    f, n = loop([z.result], lambda i, a: [Op("yield", [a[0]], [])], step=Const(1.0, F32))
    with pytest.raises(VerificationError, match="loop step must be a scalar i32 or i64, got f32"):
        verify(func([z, f], [n]))


def test_bounds_must_be_i32_scalars():
    z = zeros()
    f, n = loop([z.result], lambda i, a: [Op("yield", [a[0]], [])], bounds=(Const(0.0, F32), Const(4, I32)))
    with pytest.raises(VerificationError, match="loop start must be a scalar i32 or i64"):
        verify(func([z, f], [n]))


def test_counts_must_agree():
    z = zeros()
    f, n = loop([z.result], lambda i, a: [Op("yield", [a[0]], [])], n_results=0)
    with pytest.raises(VerificationError, match="for: 1 values in the terminator of region 0 flow into 0 in the results"):
        verify(func([z, f], [n]))


def test_body_must_end_with_yield():
    z = zeros()
    f, n = loop([z.result], lambda i, a: [Op("add", [a[0], a[0]], [V8], loc=LOC)])
    with pytest.raises(VerificationError, match="region does not end with yield"):
        verify(func([z, f], [n]))


def test_yield_must_be_last():
    z = zeros()
    f, n = loop([z.result], lambda i, a: [Op("yield", [a[0]], []), Op("add", [a[0], a[0]], [V8], loc=LOC)])
    with pytest.raises(VerificationError, match="yield must be the last op"):
        verify(func([z, f], [n]))


def test_result_type_must_follow_the_rule():
    z = zeros()
    bad = Op("add", [z.result, z.result], [BlockType((4,), F32)], loc=LOC)
    with pytest.raises(VerificationError, match="does not match the type rule's vector<8 x f32>"):
        verify(func([z, bad]))


def test_factory_shape_attribute_checked():
    bad = Op("zeros", [], [V8], {"shape": (8, 0), "dtype": F32}, loc=LOC)
    with pytest.raises(VerificationError, match="block dimensions must be positive integers"):
        verify(func([bad]))
    bad = Op("zeros", [], [BlockType((4,), F32)], {"shape": (8,), "dtype": F32}, loc=LOC)
    with pytest.raises(VerificationError, match="vector<4 x f32> does not match the type rule's vector<8 x f32>"):
        verify(func([bad]))


def test_values_are_defined_once():
    z = zeros()
    again = Op("add", [z.result, z.result], [V8], loc=LOC)
    again.results = z.results
    with pytest.raises(VerificationError, match="defined twice"):
        verify(func([z, again]))


def test_foreign_parameter():
    p = Param("x", PointerType(F32))
    op = Op("load", [p], [F32], loc=LOC)
    with pytest.raises(VerificationError, match="parameter x does not belong"):
        verify(func([op]))

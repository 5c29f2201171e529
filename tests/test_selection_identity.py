"""Which specialization a loader launch runs: the one built for a constexpr value of the same
identity (``driver.constexpr_identity``: its kind and exact bits), never one that merely compares
equal. ``0.0`` and ``-0.0`` are two specializations (``1/x`` is +inf or -inf), so are ``1``,
``1.0`` and ``True``; a NaN finds the NaN of its bits. Each path is covered: ``select``, the
general ``launch``, and the generated ``fam[grid](...)`` launcher with its warm tables. Launches
run against tests/test_runtime_cpu.py's FakeDriver; each specialization has its own dynamic shared
memory size, which the launch records, so a test sees which one ran."""
import math
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mytriton.runtime import driver as rt
from tests.test_runtime_cpu import ADD_PARAMS, CUBIN, FakeDriver, install_fake_driver

ARGS = (0x1000, 0x2000, 0x3000, 10)


@pytest.fixture
def fake(monkeypatch):
    return install_fake_driver(monkeypatch, FakeDriver())


def family(name, values, tuning=None, params=ADD_PARAMS, warps=4):
    """A family with one specialization per value of the constexpr ``name``; the i-th has 16 * i
    bytes of shared memory (its launches say which one ran)."""
    specs = [{"id": f"s{i}", "constexprs": {name: v}, "num_warps": warps, "shared": 16 * i, "symbol": "k",
              "images": {"sm_90": CUBIN}} for i, v in enumerate(values)]
    return rt.KernelFamily("k", params, [name], specs, tuning=tuning)


def ran(fake) -> int:
    """The index of the specialization the latest launch ran."""
    return fake.launches[-1]["shared"] // 16


def copy(value):
    """Another object of the same value (floats: the same bits), where Python makes one."""
    return struct.unpack("<d", struct.pack("<d", value))[0] if type(value) is float else value


def not_built(call) -> str:
    with pytest.raises(rt.SpecializationNotFoundError) as info:
        call()
    return str(info.value)


# --------------------------------------------------------------------------- signed zeros, kinds

def test_a_negative_zero_is_not_launched_for_zero_or_false(fake):
    fam = family("SCALE", [-0.0])
    for warm in (False, True):            # before and after the launcher's tables hold -0.0
        assert not_built(lambda: fam[1](*ARGS, SCALE=0.0)) == \
            "k: no specialization was built for SCALE=0.0; built: SCALE=-0.0, num_warps=4"
        assert not_built(lambda: fam[1](*ARGS, SCALE=False)) == \
            "k: no specialization was built for SCALE=False (bool); built: SCALE=-0.0 (float), num_warps=4"
        assert not_built(lambda: fam.select({"SCALE": 0.0})).startswith("k: no specialization was built for SCALE=0.0;")
        assert not_built(lambda: fam.launch(1, ARGS, {"SCALE": 0.0})).startswith("k: no specialization")
        fam[1](*ARGS, SCALE=-0.0)
        assert ran(fake) == 0
    assert len(fake.launches) == 2


def test_an_int_specialization_is_not_launched_for_true_or_one_point_zero(fake):
    fam = family("BLOCK", [1])
    fam[1](*ARGS, BLOCK=1)
    assert not_built(lambda: fam[1](*ARGS, BLOCK=True)) == \
        "k: no specialization was built for BLOCK=True (bool); built: BLOCK=1 (int), num_warps=4"
    assert not_built(lambda: fam[1](*ARGS, BLOCK=1.0)) == \
        "k: no specialization was built for BLOCK=1.0 (float); built: BLOCK=1 (int), num_warps=4"
    assert not_built(lambda: fam[1](*ARGS, BLOCK=2)) == \
        "k: no specialization was built for BLOCK=2; built: BLOCK=1, num_warps=4"
    assert not_built(lambda: fam.launch(1, ARGS, {"BLOCK": True})).startswith(
        "k: no specialization was built for BLOCK=True (bool);")
    fam[1](*ARGS, BLOCK=np.int64(1))      # numpy's integers are the number they hold
    assert len(fake.launches) == 2


def test_equal_values_of_other_kinds_are_specializations_of_their_own(fake):
    values = [0.0, -0.0, 1, 1.0, True, False, 0]
    fam = family("V", values)
    assert [s["id"] for s in fam.specializations] == [f"s{i}" for i in range(len(values))]
    launcher = fam[(2,)]
    for _ in range(2):                    # cold, then through the warm tables
        for i, v in enumerate(values):
            launcher(*ARGS, V=v)
            assert ran(fake) == i, v
            fam[(2,)](*ARGS, V=copy(v))      # another object of the same identity
            assert ran(fake) == i, v
            fam.launch((2,), ARGS, {"V": v})
            assert ran(fake) == i, v
            assert fam.select({"V": v})["id"] == f"s{i}"
    # the same value held by numpy scalars: np.float64(-0.0) is -0.0, np.bool_(True) is True
    for v, i in [(np.float64(-0.0), 1), (np.float32(0.0), 0), (np.int32(1), 2), (np.bool_(True), 4)]:
        launcher(*ARGS, V=v)
        assert ran(fake) == i, v


# --------------------------------------------------------------------------- NaN

def test_a_nan_specialization_is_launched_by_a_nan_of_its_bits(fake):
    fam = family("BOUND", [math.inf, -math.inf, float("nan"), 1.5])
    for nan in (float("nan"), math.nan, np.float64("nan"), np.float32("nan"), float("nan")):
        fam[1](*ARGS, BOUND=nan)
        assert ran(fake) == 2
        fam.launch(1, ARGS, {"BOUND": nan})
        assert ran(fake) == 2
        assert fam.select({"BOUND": nan})["id"] == "s2"
    fam[1](*ARGS, BOUND=-math.inf)
    assert ran(fake) == 1
    negative = -math.nan                  # another NaN: the sign bit set
    assert struct.pack("<d", negative) != struct.pack("<d", math.nan)
    assert not_built(lambda: fam[1](*ARGS, BOUND=negative)) == (
        "k: no specialization was built for BOUND=nan (bits 0xfff8000000000000); built: BOUND=inf, num_warps=4; "
        "BOUND=-inf, num_warps=4; BOUND=nan (bits 0x7ff8000000000000), num_warps=4; BOUND=1.5, num_warps=4")


# --------------------------------------------------------------------------- tables keyed by identity

def test_duplicates_and_tuned_ambiguity_are_identities(fake):
    with pytest.raises(ValueError, match=r"duplicate specialization SCALE=nan, num_warps=4"):
        family("SCALE", [float("nan"), float("nan")])
    with pytest.raises(ValueError, match=r"duplicate specialization SCALE=-0.0, num_warps=4"):
        family("SCALE", [-0.0, -0.0])
    # tuned configs: -0.0 and 0.0 are two configs, each launchable by its value; two NaN configs
    # differing only in num_stages are ambiguous
    tuned = family("SCALE", [-0.0, 0.0], tuning={"key": ["n"], "choices": [[[10], 0], [[10**6], 1]]})
    for v, i in [(-0.0, 0), (0.0, 1), (-0.0, 0)]:
        tuned[1](*ARGS, SCALE=v)
        assert ran(fake) == i
    tuned[1](0x1000, 0x2000, 0x3000, 10**6)
    assert ran(fake) == 1
    specs = [{"id": f"s{i}", "constexprs": {"SCALE": float("nan")}, "num_warps": 4, "num_stages": 3 + i,
              "shared": 16 * i, "symbol": "k", "images": {"sm_90": CUBIN}} for i in range(2)]
    nans = rt.KernelFamily("k", ADD_PARAMS, ["SCALE"], specs, tuning={"key": ["n"], "choices": [[[10], 1]]})
    assert "several tuned configs were built for SCALE=nan, num_warps=4 (num_stages 3, 4)" in \
        not_built(lambda: nans[1](*ARGS, SCALE=math.nan))
    nans[1](*ARGS)
    assert ran(fake) == 1


def test_num_warps_is_an_int(fake):
    fam = family("BLOCK", [64], warps=1)
    fam[1](*ARGS, BLOCK=64, num_warps=1)
    fam[1](*ARGS, BLOCK=64, num_warps=np.int64(1))
    assert not_built(lambda: fam[1](*ARGS, BLOCK=64, num_warps=True)) == \
        "k: no specialization was built for BLOCK=64, num_warps=True (bool); built: BLOCK=64, num_warps=1 (int)"
    assert "num_warps=1.0 (float)" in not_built(lambda: fam[1](*ARGS, BLOCK=64, num_warps=1.0))
    assert len(fake.launches) == 2


def test_a_value_that_cannot_be_a_constexpr_is_refused_at_construction():
    with pytest.raises(ValueError, match=r"k: specialization 's0': constexpr V=\[1\] is not a constexpr value"):
        family("V", [[1]])

# --------------------------------------------------------------------------- the grid's launcher cache

def test_a_grid_launcher_is_kept_for_that_exact_grid(fake):
    fam = family("BLOCK", [64])
    float_grid = r"grid dimension 0 must be an int, got float 1.0 \(grid \(1.0,\)\)"
    with pytest.raises(TypeError, match=float_grid):
        fam[(1.0,)](*ARGS, BLOCK=64)
    fam[(1,)](*ARGS, BLOCK=64)            # (once refused as "got float 1.0")
    with pytest.raises(TypeError, match=float_grid):
        fam[(1.0,)](*ARGS, BLOCK=64)
    with pytest.raises(TypeError, match=r"grid dimension 0 must be an int, got bool True"):
        fam[(True,)](*ARGS, BLOCK=64)
    with pytest.raises(TypeError, match=r"grid dimension 1 must be an int, got float 2.0"):
        fam[(3, 2.0)](*ARGS, BLOCK=64)
    fam[(3, 2)](*ARGS, BLOCK=64)
    fam[1](*ARGS, BLOCK=64)
    for bad in (1.0, True):
        with pytest.raises(TypeError, match=f"grid must be an int or a tuple of 1 to 3 ints, got "
                                            f"{type(bad).__name__} {bad}"):
            fam[bad](*ARGS, BLOCK=64)
    fam[(np.int64(2),)](*ARGS, BLOCK=64)  # numpy's integers are ints here too
    assert [la["grid"] for la in fake.launches] == [(1, 1, 1), (3, 2, 1), (1, 1, 1), (2, 1, 1)]
    assert fam[(1,)] is fam[(1,)] and fam[(1.0,)] is not fam[(1,)] and fam[True] is not fam[1]
    # the grid object of the last launch (a loop's hoisted grid) finds its launcher first: still exactly
    hoisted, equal = (1.0,), (1,)
    for grid in (hoisted, equal, hoisted, equal):
        if grid is hoisted:
            with pytest.raises(TypeError, match=float_grid):
                fam[grid](*ARGS, BLOCK=64)
        else:
            fam[grid](*ARGS, BLOCK=64)
    assert [la["grid"] for la in fake.launches][-2:] == [(1, 1, 1), (1, 1, 1)]

# --------------------------------------------------------------------------- parameters by name

# run-time parameters named like the generated launcher's own variables, globals and builtins
ODD_PARAMS = [("_x", "*fp32:16"), ("_grid", "i32"), ("_sel", "i32"), ("type", "i32"), ("struct", "i32"),
              ("_p0", "i32"), ("DeviceArray", "i32"), ("_fam", "fp32"), ("_arg0", "i32"), ("x", "i32")]
ODD_ARGS = dict(_x=0x1000, _grid=2, _sel=3, type=4, struct=5, _p0=6, DeviceArray=7, _fam=8.0, _arg0=9, x=10)


def odd_family(cx=("_B", "_self"), tuning=None):
    specs = [{"id": f"s{i}", "constexprs": {n: i for n in cx}, "num_warps": 4, "shared": 16 * i, "symbol": "odd",
              "images": {"sm_90": CUBIN}} for i in range(2)]
    return rt.KernelFamily("odd", ODD_PARAMS, list(cx), specs, tuning=tuning)


def packed(args) -> list:
    return [struct.pack("<Q", args["_x"])] + [struct.pack("<f" if n == "_fam" else "<i", args[n])
                                              for n, _ in ODD_PARAMS[1:]]


@pytest.mark.parametrize("grid_kind", ["fixed", "callable"])
def test_every_run_time_parameter_is_passed_by_its_own_name(fake, grid_kind):
    fake.param_sizes = [8] + [4] * (len(ODD_PARAMS) - 1)
    fam = odd_family()
    seen = []

    def grid(meta):
        seen.append(dict(meta))
        return (1,)
    launch = (lambda: fam[grid]) if grid_kind == "callable" else (lambda: fam[(1,)])
    values = list(ODD_ARGS.values())
    for _ in range(2):                    # cold, then warm
        launch()(*values, _B=1, _self=1)
        launch()(**ODD_ARGS, _B=1, _self=1)
        launch()(*values[:3], **dict(list(ODD_ARGS.items())[3:]), _self=0, _B=0)
    assert [la["args"] for la in fake.launches] == [packed(ODD_ARGS)] * 6
    assert [ran_at["shared"] // 16 for ran_at in fake.launches] == [1, 1, 0] * 2
    if grid_kind == "callable":
        assert seen[0] == {**ODD_ARGS, "_B": 1, "_self": 1, "num_warps": 4}
    # Python's own errors, naming the parameters as the kernel does
    with pytest.raises(TypeError, match=r"^odd\(\) missing 1 required positional argument: '_x'$"):
        launch()(**{k: v for k, v in ODD_ARGS.items() if k != "_x"}, _B=1, _self=1)
    with pytest.raises(TypeError, match=r"^odd\(\) got multiple values for argument '_grid'$"):
        launch()(*values, _grid=2, _B=1, _self=1)
    with pytest.raises(TypeError, match=r"^odd\(\) missing 1 required keyword-only argument: '_self'$"):
        launch()(*values, _B=1)
    with pytest.raises(TypeError, match=r"^odd\(\) got an unexpected keyword argument '_arg1'$"):
        launch()(*values, _B=1, _self=1, _arg1=3)
    with pytest.raises(ValueError, match=r"parameter '_x' is declared \*fp32:16 but address 0x1004"):
        launch()(**{**ODD_ARGS, "_x": 0x1004}, _B=1, _self=1)
    assert len(fake.launches) == 6


def test_parameters_by_name_in_a_tuned_family(fake):
    fam = odd_family(cx=("_B",), tuning={"key": ["_grid", "type"], "choices": [[[2, 4], 1], [[2**20, 4], 0]]})
    fam[(1,)](**ODD_ARGS)
    assert ran(fake) == 1
    fam[(1,)](**{**ODD_ARGS, "_grid": 2**20})
    assert ran(fake) == 0
    fam[(1,)](**ODD_ARGS, _B=0)
    assert ran(fake) == 0


def test_a_constexpr_named_num_warps_is_the_launch_option_too(fake):
    """As for the JIT: one name, one value (the constexpr and the launch's num_warps)."""
    specs = [{"id": f"s{w}", "constexprs": {"num_warps": w, "_B": 64}, "num_warps": w, "shared": 0, "symbol": "k",
              "images": {"sm_90": CUBIN}} for w in (2, 4)]
    fam = rt.KernelFamily("k", ADD_PARAMS, ["num_warps", "_B"], specs)
    for _ in range(2):
        fam[1](*ARGS, num_warps=2, _B=64)
        fam[1](*ARGS, num_warps=4, _B=64)
    assert [la["block"][0] for la in fake.launches] == [64, 128] * 2
    with pytest.raises(TypeError, match=r"^k\(\) missing 1 required keyword-only argument: 'num_warps'$"):
        fam[1](*ARGS, _B=64)
    fam.launch(1, ARGS, {"num_warps": 4, "_B": 64})
    assert fake.launches[-1]["block"][0] == 128


def test_kernel_arguments_by_name(fake):
    k = rt.Kernel("k", [("_x", "*fp32:16"), ("type", "i32"), ("args", "i32")], 4, 0, {"sm_90": CUBIN})
    fake.param_sizes = [8, 4, 4]
    k[1](0x1000, 5, 6)
    k[1](0x1000, args=6, type=5)
    k[1](_x=0x1000, type=5, args=6, stream=None)
    assert [la["args"] for la in fake.launches] == [[struct.pack("<Q", 0x1000), struct.pack("<i", 5),
                                                     struct.pack("<i", 6)]] * 3
    with pytest.raises(TypeError, match=r"^k\(\) got multiple values for argument 'type'$"):
        k[1](0x1000, 5, 6, type=5)
    with pytest.raises(TypeError, match=r"^k\(\) missing 1 required positional argument: 'args'$"):
        k[1](0x1000, type=5)
    with pytest.raises(TypeError, match=r"^k\(\) got an unexpected keyword argument 'n'$"):
        k[1](0x1000, 5, 6, n=1)


# --------------------------------------------------------------------------- property

def float_of_bits(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


NAN_BITS = st.integers(1, 2**52 - 1).flatmap(lambda m: st.sampled_from([0x7FF0000000000000 | m,
                                                                         0xFFF0000000000000 | m]))
FLOATS = st.one_of(st.sampled_from([0.0, -0.0, math.nan, -math.nan, math.inf, -math.inf, 1.0, -1.0, 0.5, 2.0**70]),
                   st.floats(allow_nan=True), NAN_BITS.map(float_of_bits))
INTS = st.one_of(st.sampled_from([0, 1, -1, 2, 2**63 - 1, 2**63, 2**64, -2**63 - 1, 2**70]), st.integers(),
                 st.integers(2**63, 2**100))
STRS = st.one_of(st.sampled_from(["", "\0", "a", "a\0", "a\0b", "\u00e9", "e\u0301", "\U0001F600", "0", "1", "True",
                                  "None", "nan"]), st.text(max_size=4))
VALUES = st.one_of(FLOATS, INTS, st.booleans(), STRS, st.none())
# values that compare equal to, or print like, one another: most builds hold several
CONFUSABLE = st.sampled_from([0, 0.0, -0.0, False, 1, 1.0, True, math.nan, -math.nan, float_of_bits(0x7FF0000000000001),
                              "", "\0", None, 2**64, float(2**64), "nan"])


def oracle(value):
    """What the loader must tell apart, written out here: kind, then the exact value (a float's
    bits); numpy's scalars as the number they hold; None for what no build can hold."""
    if isinstance(value, (bool, np.bool_)):
        return "bool", bool(value)
    if isinstance(value, (int, np.integer)):
        return "int", int(value)
    if isinstance(value, (float, np.floating)):
        return "float", struct.pack("<d", float(value))
    if isinstance(value, str) or value is None:
        return type(value).__name__, value
    return None


def near_misses(value) -> list:
    """Values that compare equal to ``value``, print alike or hold the same number in another kind,
    and another object of the same identity."""
    out = [copy(value), [value], (value,), str(value)]
    if type(value) is float:
        out += [-value, np.float64(value), float_of_bits(struct.unpack("<Q", struct.pack("<d", value))[0] ^ 1)]
        if math.isfinite(value):
            out += [np.float32(value)] if abs(value) < 3e38 else []
            out += [int(value), bool(value)] if value == int(value) else []
    elif type(value) is int:
        out += [value + 1, value - 1, float(value) if abs(value) < 2**1000 else 0.0]
        out += [np.int64(value)] if -2**63 <= value < 2**63 else []
        out += [bool(value), np.bool_(value)] if value in (0, 1) else []
    elif type(value) is bool:
        out += [int(value), float(value), np.bool_(value), not value]
    elif type(value) is str:
        out += [value + "\0", value[:-1], value.encode()]
    else:
        out += [0, False, "", 0.0]
    return out


def confusions(value) -> list:
    """The near misses of ``value`` that compare equal to it or print alike, of another identity."""
    return [u for u in near_misses(value) if oracle(u) != oracle(value) and oracle(u) is not None
            and (u == value or repr(u) == repr(value))] or [value]


def perturbed(vw):
    """A built pair with one of its values kept, or replaced by one of its near misses (half the
    time one that compares equal to it or prints alike)."""
    v, w = vw

    def near(x):
        return st.one_of(st.sampled_from(confusions(x)), st.sampled_from([x, *near_misses(x)]))
    return st.one_of(st.tuples(near(v), st.just(w)), st.tuples(st.just(v), near(w)))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(built=st.lists(st.tuples(st.one_of(CONFUSABLE, VALUES), CONFUSABLE), min_size=1, max_size=6,
                      unique_by=lambda vw: (oracle(vw[0]), oracle(vw[1]))),
       data=st.data())
def test_a_launch_runs_the_specialization_of_its_values_identities(built, data):
    """Built: a few specializations of (V, W), distinct identities. Launched: each of them (in
    some order), each again with a value replaced by a near miss, then values drawn from those,
    from their near misses and from anywhere, mixed, each through the held launcher, fam[grid]
    and fam.launch; select() agrees. A launch runs the specialization of its values' identities,
    or raises SpecializationNotFoundError."""
    specs = [{"id": f"s{i}", "constexprs": {"V": v, "W": w}, "num_warps": 4, "shared": 16 * i, "symbol": "k",
              "images": {"sm_90": CUBIN}} for i, (v, w) in enumerate(built)]
    fam = rt.KernelFamily("k", ADD_PARAMS, ["V", "W"], specs)
    where = {(oracle(v), oracle(w)): i for i, (v, w) in enumerate(built)}
    near = [u for vw in built for x in vw for u in (x, *near_misses(x))]
    mixed = st.tuples(st.one_of(st.sampled_from(near), VALUES), st.one_of(st.sampled_from(near), CONFUSABLE))
    drawn = st.one_of(st.sampled_from(built).flatmap(perturbed), mixed)
    order = data.draw(st.permutations(built))
    launches = order + [data.draw(perturbed(vw)) for vw in order] + data.draw(st.lists(drawn, max_size=16))
    with pytest.MonkeyPatch.context() as mp:
        fake = install_fake_driver(mp, FakeDriver())
        launcher = fam[(1,)]
        for v, w in launches:
            expected = where.get((oracle(v), oracle(w)))
            for path in (lambda: launcher(*ARGS, V=v, W=w), lambda: fam[(1,)](*ARGS, W=w, V=v),
                         lambda: fam.launch(1, ARGS, {"V": v, "W": w})):
                if expected is None:
                    message = not_built(path)
                    assert message.startswith(f"k: no specialization was built for V={v!r}"), message
                    assert "; built: V=" in message
                else:
                    path()
                    assert ran(fake) == expected, (v, w)
            if expected is None:
                not_built(lambda: fam.select({"V": v, "W": w}))
            else:
                assert fam.select({"V": v, "W": w}) is specs[expected]


def test_numpy_and_ml_dtypes_scalars_are_the_value_they_hold(fake):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert rt.constexpr_identity(ml_dtypes.int4(-3)) == ("int", -3)
    assert rt.constexpr_identity(ml_dtypes.uint4(1)) == ("int", 1)
    assert rt.constexpr_identity(ml_dtypes.bfloat16(-0.0)) == ("float", struct.pack("<d", -0.0))
    assert rt.constexpr_identity(np.str_("a\0b")) == ("str", "a\0b")
    ints, strs = family("V", [1, 1.0]), family("S", ["a", "b"])
    ints[1](*ARGS, V=ml_dtypes.int4(1))
    assert ran(fake) == 0
    ints[1](*ARGS, V=ml_dtypes.bfloat16(1))
    assert ran(fake) == 1
    strs[1](*ARGS, S=np.str_("b"))
    assert ran(fake) == 1

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


"""Specialized variants at launch, on the CPU (stubbed driver): every launch path runs the
specialized variant exactly where the arguments keep all of its promises, else the plain one, on
the same argument bytes less those the variant compiled in; a promise the plain signature writes
itself stays an error.

Paths: the generated ``fam[grid](...)`` launchers (fixed and callable grids), ``fam.launch``,
``Kernel.launch``, the tuned dispatch, the native launcher (launcher.c, compiled here) and
``fam.best(...)``; a property over random addresses, alignments, sizes and strides of every kind
(ints, bools, numpy ints) compares each with the promises themselves."""
from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mytriton.runtime import driver as rt
from mytriton.runtime import native
from test_runtime_cpu import FakeDriver, install_fake_driver

NAMES = ["M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn"]
PLAIN = [("a", "*fp16"), ("b", "*fp16"), ("c", "*fp16:16")] + [(n, "i32") for n in NAMES]
UNIT = {"stride_ak", "stride_bn", "stride_cn"}
# what the analysis gives a row-major GEMM: c is promised by the signature itself; M stays plain
SPECIAL = [("a", "*fp16:16"), ("b", "*fp16:16"), ("c", "*fp16:16"), ("M", "i32")] + \
    [(n, "i32:1" if n in UNIT else "i32:16") for n in NAMES[1:]]
PLAIN_IMAGE, TWIN_IMAGE = b"\x7fELF plain cubin", b"\x7fELF twin cubin"
SIZES = {PLAIN_IMAGE: [8, 8, 8] + [4] * 9, TWIN_IMAGE: [8, 8, 8] + [4] * 6}


def spec(block=64, twin=True, **extra):
    out = {"id": f"BLOCK{block}_w4", "constexprs": {"BLOCK": block}, "num_warps": 4, "shared": 0, "symbol": "mm",
           "images": {"sm_90": PLAIN_IMAGE}, **extra}
    if twin:
        out["specialized"] = {"signature": SPECIAL, "shared": 1024, "symbol": "mm", "images": {"sm_90": TWIN_IMAGE}}
    return out


class VariantFake(FakeDriver):
    """FakeDriver that reads back each launch's arguments by the image its function came from."""

    def cuLaunchKernel(self, f, *args):
        if f is not None and 1001 <= int(f) <= 1000 + len(self.modules):
            self.param_sizes = SIZES.get(self.modules[int(f) - 1001])
        return super().cuLaunchKernel(f, *args)

    def launched(self, index=-1):
        """(which image the launch ran, its argument bytes, its dynamic shared memory)."""
        launch = self.launches[index]
        image = self.modules[int(launch["f"]) - 1001]
        return ("twin" if image == TWIN_IMAGE else "plain"), launch["args"], launch["shared"]


@pytest.fixture
def fake(monkeypatch):
    return install_fake_driver(monkeypatch, VariantFake())


def promises_hold(args) -> bool:
    """The specialized variant's promises, read off the arguments as the kernel receives them."""
    values = dict(zip([n for n, _ in PLAIN], args))
    addresses = [v if type(v) is int else v.ptr for v in (values["a"], values["b"])]
    return (all(a % 16 == 0 for a in addresses)
            and all(int(values[n]) % 16 == 0 for n in NAMES[1:] if n not in UNIT)
            and all(int(values[n]) == 1 for n in UNIT))


def packed(args, twin: bool) -> list[bytes]:
    values = [v if type(v) is int else v.ptr for v in args[:3]] + [int(v) for v in args[3:]]
    names = [n for n, _ in PLAIN]
    return [struct.pack("<Q" if i < 3 else "<i", v) for i, (n, v) in enumerate(zip(names, values))
            if not (twin and n in UNIT)]


ROW_MAJOR = [4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1]


def test_each_path_runs_the_variant_the_arguments_allow(fake):
    fam = rt.KernelFamily("mm", PLAIN, ["BLOCK"], [spec()])
    base = 0x7F00_0000_1000
    keep = [base, base + 64, base + 128, *ROW_MAJOR]
    misaligned = [base + 2, *keep[1:]]
    transposed_b = keep[:8] + [1, 4096] + keep[10:]          # B column-major: stride_bk 1, stride_bn 4096
    for args, want in ((keep, "twin"), (misaligned, "plain"), (transposed_b, "plain"), (keep, "twin")):
        fam[(8,)](*args, BLOCK=64)
        assert fake.launched()[0] == want, args
        fam[lambda meta: (meta["M"] // 512,)](*args, BLOCK=64)
        assert fake.launched()[0] == want and fake.launches[-1]["grid"] == (8, 1, 1)
        fam.launch(8, args, {"BLOCK": 64})
        assert fake.launched()[0] == want
        fam.kernel(fam._specs[0]).launch(8, args)
        assert fake.launched()[0] == want
        assert fam.best(*args, BLOCK=64)["variant"] == ("specialized" if want == "twin" else "plain")
    kind, args, shared = fake.launched(0)
    assert (kind, args, shared) == ("twin", packed(keep, True), 1024)      # (its own shared memory)
    assert fake.launched(4) == ("plain", packed(misaligned, False), 0)
    assert fake.modules == [PLAIN_IMAGE, TWIN_IMAGE]                         # (both loaded once)


def test_best_names_the_variant_and_its_signature():
    fam = rt.KernelFamily("mm", PLAIN, ["BLOCK"], [spec(), spec(128, twin=False)])
    got = fam.best(0x1000, 0x2000, 0x3000, *ROW_MAJOR, BLOCK=64)
    assert got["variant"] == "specialized" and got["signature"] == [list(p) for p in SPECIAL]
    assert got["specialized"] == got["signature"] and got["id"] == "BLOCK64_w4"
    by_name = fam.best(0x1000, 0x2000, c=0x3000, **dict(zip(NAMES, ROW_MAJOR)), BLOCK=64)
    assert by_name == got
    other = fam.best(0x1000, 0x2000, 0x3000, *ROW_MAJOR[:4], 2, *ROW_MAJOR[5:], BLOCK=64)
    assert other["variant"] == "plain" and other["signature"] == [list(p) for p in PLAIN]
    none = fam.best(0x1000, 0x2000, 0x3000, *ROW_MAJOR, BLOCK=128)
    assert none["variant"] == "plain" and none["specialized"] is None
    with pytest.raises(ValueError, match=r"parameter 'c' is declared \*fp16:16 but address 0x3002 is not 16-byte "
                                         "aligned"):
        fam.best(0x1000, 0x2000, 0x3002, *ROW_MAJOR, BLOCK=64)
    with pytest.raises(TypeError, match=r"mm.best\(\) takes the arguments of a launch \(mm was not tuned at build "
                                        r"time: it has no tuning key to ask about\): missing K, stride_am"):
        fam.best(0x1000, 0x2000, 0x3000, 4096, 4096, BLOCK=64)
    with pytest.raises(TypeError, match="mm\\(\\) got an unexpected keyword argument 'BLOK'"):
        fam.best(0x1000, 0x2000, 0x3000, *ROW_MAJOR, BLOK=64)


def test_a_promise_the_plain_signature_writes_stays_an_error(fake):
    fam = rt.KernelFamily("mm", PLAIN, ["BLOCK"], [spec()])
    for run in (fam[(8,)], lambda *args, **kw: fam.launch(8, args, kw)):
        with pytest.raises(ValueError, match=r"parameter 'c' is declared \*fp16:16 but address 0x3008 is not "
                                             "16-byte aligned"):
            run(0x1000, 0x2000, 0x3008, *ROW_MAJOR, BLOCK=64)
    assert fake.launches == []


def test_the_tuned_dispatch_runs_the_variant_of_its_choice(fake):
    tuning = {"key": ["M"], "choices": [[[64], 0], [[4096], 1]]}
    fam = rt.KernelFamily("mm", PLAIN, ["BLOCK"], [spec(64), spec(128, twin=False)], tuning=tuning)
    fam[(8,)](0x1000, 0x2000, 0x3000, 64, *ROW_MAJOR[1:])
    assert fake.launched()[0] == "twin"
    fam[(8,)](0x1008, 0x2000, 0x3000, 64, *ROW_MAJOR[1:])
    assert fake.launched()[0] == "plain"
    fam[(8,)](0x1000, 0x2000, 0x3000, 4096, *ROW_MAJOR[1:])             # (BLOCK=128: no variant)
    assert fake.launched()[0] == "plain" and fake.launches[-1]["block"] == (128, 1, 1)
    assert fam.best(0x1000, 0x2000, 0x3000, 64, *ROW_MAJOR[1:])["variant"] == "specialized"
    assert fam.best(M=64)["id"] == "BLOCK64_w4"


def test_a_variant_whose_images_cannot_run_leaves_the_plain_one(fake):
    fake.optin = 512                # less dynamic shared memory than the variant's 1024 bytes
    fam = rt.KernelFamily("mm", PLAIN, ["BLOCK"], [spec()])
    for _ in range(2):
        fam[(8,)](0x1000, 0x2000, 0x3000, *ROW_MAJOR, BLOCK=64)
        assert fake.launched()[0] == "plain" and fake.launched()[1] == packed([0x1000, 0x2000, 0x3000, *ROW_MAJOR],
                                                                            False)
    assert fake.modules == [PLAIN_IMAGE, TWIN_IMAGE]          # (tried once in the context, then not again)
    assert fam.best(0x1000, 0x2000, 0x3000, *ROW_MAJOR, BLOCK=64)["variant"] == "specialized"   # (what the
    # arguments allow: the device decides the rest)


def test_a_malformed_variant_is_refused_naming_the_kernel():
    for twin, message in (
            ([("a", "*fp16:16")], r"has the parameters \(a\), not \(a, b, c, M, "),
            ([("a", "*fp16")] + SPECIAL[1:], None),
            ([(n, "i32" if n == "c" else t) for n, t in SPECIAL], r"declares 'c' i32, the kernel \*fp16:16"),
            ([("c", "*fp16") if n == "c" else (n, t) for n, t in SPECIAL],
             r"declares 'c' \*fp16, which does not keep the kernel's promise \*fp16:16"),
            (PLAIN, "promises nothing more than the kernel")):
        bad = {"signature": twin, "images": {"sm_90": TWIN_IMAGE}}
        if message is None:
            rt.Kernel("mm", PLAIN, 4, 0, {"sm_90": PLAIN_IMAGE}, specialized=bad)
            continue
        with pytest.raises(ValueError, match=f"kernel mm: its specialized variant {message}"):
            rt.Kernel("mm", PLAIN, 4, 0, {"sm_90": PLAIN_IMAGE}, specialized=bad)
    with pytest.raises(ValueError, match="its specialized variant must be a dict of 'signature', 'images'"):
        rt.Kernel("mm", PLAIN, 4, 0, {"sm_90": PLAIN_IMAGE}, specialized={"signature": SPECIAL})


def test_families_without_variants_generate_the_launcher_of_before():
    """No test, no payload element and no twin slots where no specialization has a variant."""
    fam = rt.KernelFamily("mm", PLAIN, ["BLOCK"], [spec(twin=False)])
    source = fam[(8,)].launcher_source
    assert "_tw" not in source and "_slot[8]" not in source and "_twin_holds" not in source
    twinned = rt.KernelFamily("mm", PLAIN, ["BLOCK"], [spec()])[(8,)].launcher_source
    assert ("_v = _tw and (not (_p0 % 16 or _p1 % 16 or N & 15 or K & 15 or stride_am & 15 or stride_bk & 15 or "
            "stride_cm & 15) and (stride_ak is _one or stride_ak == 1) and (stride_bn is _one or stride_bn == 1) and "
            "(stride_cn is _one or stride_cn == 1))") in twinned


# -- the property ---------------------------------------------------------------------------------

def _address():
    """An fp16 address: 16-byte aligned, or (one time in ten) off by a few elements: an offset view."""
    offsets = st.sampled_from([True] * 9 + [False]).flatmap(
        lambda keep: st.sampled_from([0, 16, 32, 64, 128] if keep else [2, 4, 6, 8, 50]))
    return st.builds(lambda base, offset: base * 256 + offset, st.integers(0x10, 2**40 // 256), offsets)


def _scalar(unit: bool):
    """Values of an i32 parameter that keep its promise 19 times in 20 (1 for a unit stride, a
    multiple of 16 else; one that breaks it otherwise: -1, 0, 2, 17...), as ints, bools and numpy ints,
    so that about a third of the launches keep every promise."""
    keeps = st.just(1) if unit else st.integers(-2**27, 2**27 - 1).map(lambda v: v * 16)
    breaks = st.sampled_from([0, -1, 2, 16, 4096, 2**31 - 1]) if unit else \
        st.integers(-2**31, 2**31 - 1).filter(lambda v: v % 16)
    values = st.sampled_from([True] * 19 + [False]).flatmap(lambda keep: keeps if keep else breaks)
    kinds = st.sampled_from([int, int, int, np.int32, np.int64, "bool"])

    def make(value, kind):
        if kind == "bool":          # (True is 1, False is 0: a bool keeps a promise by its value)
            return value == 1 if unit else value % 16 != 0
        return kind(value)
    return st.builds(make, values, kinds)


ARGUMENTS = st.tuples(_address(), _address(), st.builds(lambda base: base * 256, st.integers(0x10, 2**40 // 256)),
                      *[_scalar(name in UNIT) for name in NAMES])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=ARGUMENTS, path=st.sampled_from(["fixed", "callable", "launch", "kernel", "tuned"]))
def test_property_the_variant_launched_is_the_one_whose_promises_hold(fake, args, path):
    fam = _FAMILIES.setdefault(path, rt.KernelFamily("mm", PLAIN, ["BLOCK"], [spec()],
                                                     tuning={"key": ["N"], "choices": []} if path == "tuned" else None))
    before = len(fake.launches)
    if path == "fixed":
        fam[(8,)](*args, BLOCK=64)
    elif path == "callable":
        fam[lambda meta: (8,)](*args, BLOCK=64)
    elif path == "launch":
        fam.launch(8, args, {"BLOCK": 64})
    elif path == "kernel":
        fam.kernel(fam._specs[0]).launch(8, args)
    else:
        fam[(8,)](*args)
    assert len(fake.launches) == before + 1
    kind, got, _ = fake.launched()
    holds = promises_hold(args)
    assert kind == ("twin" if holds else "plain"), (args, kind)
    assert got == packed(args, kind == "twin")
    assert fam.best(*args, BLOCK=64)["variant"] == ("specialized" if holds else "plain")


_FAMILIES: dict = {}


@pytest.fixture(autouse=True)
def _fresh_families():
    _FAMILIES.clear()
    yield


# -- the native launcher ------------------------------------------------------------------------

LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                          ctypes.c_void_p, ctypes.c_void_p)


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    built = native.build()
    if built.data is None and built.reason.startswith(("no C compiler", "no Python headers")):
        pytest.skip(built.reason)
    assert built.data is not None, built.reason
    path = tmp_path_factory.mktemp("native") / native.FILENAME
    path.write_bytes(built.data)
    return path


class NativeVariantFake(VariantFake):
    """VariantFake whose cuGetProcAddress hands out a recording C callback as cuLaunchKernel."""

    def __init__(self):
        super().__init__()
        self.native_launches = []

        def launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
            image = self.modules[f - 1001]
            argv = (ctypes.c_void_p * len(SIZES[image])).from_address(params)
            self.native_launches.append(("twin" if image == TWIN_IMAGE else "plain",
                                         [ctypes.string_at(argv[i], n) for i, n in enumerate(SIZES[image])], shared))
            return 0
        self.callback = LAUNCH(launch)

    def cuGetProcAddress(self, name, version, flags):
        return self._r("cuGetProcAddress", ctypes.cast(self.callback, ctypes.c_void_p).value, 0)


@pytest.fixture
def native_fake(monkeypatch, library):
    drv = install_fake_driver(monkeypatch, NativeVariantFake())
    monkeypatch.delenv("MYTRITON_NATIVE_LAUNCH", raising=False)
    rt.use_native_launcher(library)
    return drv


def test_the_native_launcher_runs_the_variant_in_c(native_fake):
    fam = rt.KernelFamily("mm", PLAIN, ["BLOCK"], [spec()])
    keep = [0x1000, 0x2000, 0x3000, *ROW_MAJOR]
    fam[(8,)](*keep, BLOCK=64)                            # (the first launch binds, in Python)
    assert rt.native_launcher_status().startswith("loaded ") and native_fake.launched()[0] == "twin"
    fam[(8,)](*keep, BLOCK=64)
    fam[(8,)](0x1002, *keep[1:], BLOCK=64)
    fam[(8,)](*keep[:4], 2, *keep[5:], BLOCK=64)
    fam[(8,)](*keep[:3], 4096, 4100, *keep[5:], BLOCK=64)
    assert native_fake.native_launches == [("twin", packed(keep, True), 1024),
                                           ("plain", packed([0x1002, *keep[1:]], False), 0),
                                           ("plain", packed(keep[:4] + [2] + keep[5:], False), 0),
                                           ("plain", packed(keep[:4] + [4100] + keep[5:], False), 0)]
    assert len(native_fake.launches) == 1


def test_a_native_spec_says_what_the_variant_promises_of_each_argument():
    kernel = rt.Kernel("mm", PLAIN, 4, 0, {"sm_90": PLAIN_IMAGE}, specialized=spec()["specialized"])
    block, shared, kinds, dtypes, checks, twin_shared = kernel._spec
    assert (block, shared, twin_shared) == (128, 0, 1024)
    assert checks == b"A\x10A\x10-\x00-\x00A\x10A\x10A\x10" + b"1\x00A\x101\x00A\x101\x00"
    assert kinds == b"P\x01P\x01P\x10" + b"i\x01" * 9


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=ARGUMENTS)
def test_property_the_native_and_python_paths_choose_alike(native_fake, args):
    fam = _FAMILIES.setdefault("native", rt.KernelFamily("mm", PLAIN, ["BLOCK"], [spec()]))
    if not _FAMILIES.get("bound"):
        fam[(8,)](0x1000, 0x2000, 0x3000, *ROW_MAJOR, BLOCK=64)
        _FAMILIES["bound"] = True
    n_native, n_python = len(native_fake.native_launches), len(native_fake.launches)
    fam[(8,)](*args, BLOCK=64)
    if len(native_fake.native_launches) > n_native:
        kind, got, _ = native_fake.native_launches[-1]
        assert all(type(v) is int for v in args[3:]), "launcher.c read an argument it does not read"
    else:
        assert len(native_fake.launches) == n_python + 1
        kind, got, _ = native_fake.launched()
    assert kind == ("twin" if promises_hold(args) else "plain"), args
    assert got == packed(args, kind == "twin")


def test_the_variant_is_loaded_at_its_first_launch(fake):
    fam = rt.KernelFamily("mm", PLAIN, ["BLOCK"], [spec()])
    misaligned, keep = [0x1002, 0x2000, 0x3000, *ROW_MAJOR], [0x1000, 0x2000, 0x3000, *ROW_MAJOR]
    for _ in range(2):
        fam[(8,)](*misaligned, BLOCK=64)
    assert fake.modules == [PLAIN_IMAGE] and fake.launched()[0] == "plain"
    fam[(8,)](*keep, BLOCK=64)
    assert fake.modules == [PLAIN_IMAGE, TWIN_IMAGE] and fake.launched()[0] == "twin"


def test_the_native_launcher_leaves_a_variant_it_has_not_loaded_to_python(native_fake):
    fam = rt.KernelFamily("mm", PLAIN, ["BLOCK"], [spec()])
    misaligned, keep = [0x1002, 0x2000, 0x3000, *ROW_MAJOR], [0x1000, 0x2000, 0x3000, *ROW_MAJOR]
    fam[(8,)](*misaligned, BLOCK=64)                 # (Python: binds the plain function only)
    fam[(8,)](*misaligned, BLOCK=64)                 # native, plain
    fam[(8,)](*keep, BLOCK=64)                       # native declines: Python loads the variant and runs it
    fam[(8,)](*keep, BLOCK=64)                       # native, the variant
    assert [k for k, _, _ in native_fake.native_launches] == ["plain", "twin"]
    assert [native_fake.launched(i)[0] for i in range(len(native_fake.launches))] == ["plain", "twin"]
    assert native_fake.modules == [PLAIN_IMAGE, TWIN_IMAGE]


def test_parameters_named_like_the_launcher_s_own_variables(fake):
    """A kernel whose parameters are named like what the variant's code uses (_v, _f, _tw) still binds
    them by name and chooses by their values."""
    plain, special = b"\x7fELF odd", b"\x7fELF odd twin"          # (images whose arguments are not read back)
    params = [("_v", "*fp32"), ("_f", "i32"), ("_tw", "i32")]
    twin = {"signature": [("_v", "*fp32:16"), ("_f", "i32:16"), ("_tw", "i32:1")], "images": {"sm_90": special}}
    fam = rt.KernelFamily("odd", params, [], [{"id": "w4", "constexprs": {}, "num_warps": 4, "symbol": "odd",
                                               "images": {"sm_90": plain}, "specialized": twin}])
    for args, want in (((0x1000, 32, 1), special), ((0x1000, 32, 2), plain), ((0x1004, 32, 1), plain)):
        fam[(1,)](_tw=args[2], _f=args[1], _v=args[0])
        assert fake.modules[int(fake.launches[-1]["f"]) - 1001] == want, args
    assert "def run(_v, _f, _tw, *, stream=None, num_warps=None):" in fam[(1,)].launcher_source


def test_a_cooperative_launch_runs_the_variant_too(fake):
    kernel = rt.Kernel("mm", PLAIN, 4, 0, {"sm_90": PLAIN_IMAGE}, symbol="mm", specialized=spec()["specialized"])
    for args, want in (([0x1000, 0x2000, 0x3000, *ROW_MAJOR], "twin"), ([0x1002, 0x2000, 0x3000, *ROW_MAJOR], "plain")):
        kernel.launch_cooperative(8, args)
        assert fake.launched()[0] == want and fake.launches[-1]["cooperative"] is True

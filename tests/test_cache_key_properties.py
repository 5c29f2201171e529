"""The cache key is complete: a property test mutates, one at a time, every input a kernel's
compile can depend on and requires the key to change (and to stay put when nothing changes).

The inputs: the kernel's source, its helpers' sources and the globals they read (at any depth, of
any kind a kernel may use); its @jit options and defaults; the job's constexprs, signature, target,
num_warps and num_stages; the compiler's own sources and templates, NVRTC's version and library, the
CUDA headers, and the compile switches of the environment. (CPU only; no compile runs.)"""
from __future__ import annotations

import dataclasses
import math
import shutil
import struct
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import mytriton
import mytriton.language as tl
from mytriton.aot import toolchain
from mytriton.aot.cache import job_key
from mytriton.aot.jobs import CompileJob
from mytriton.aot.kernel_source import KernelSource
from mytriton.frontend.fingerprint import Uncacheable
from mytriton.frontend.jit import JITFunction

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

CFG = None


@mytriton.jit
def helper(x):
    return x + 1


@mytriton.jit
def other_helper(x):
    return x * 2


@mytriton.jit
def reader(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + CFG[0])


# -- values of every kind a kernel may read, and single-leaf mutations of them ---------------------

def _nan(payload: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000 | payload))[0]


FLOATS = st.one_of(st.floats(allow_nan=False), st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan, _nan(1)]))
LEAVES = st.one_of(
    st.booleans(), st.integers(min_value=-2**70, max_value=2**70), FLOATS, st.text(max_size=6),
    st.binary(max_size=4), st.none(), st.complex_numbers(allow_nan=False, max_magnitude=1e6),
    st.sampled_from([tl.float16, tl.bfloat16, tl.float32, tl.int32, tl.int1, tl.pointer_type(tl.float16)]),
    st.builds(np.float32, st.floats(width=32, allow_nan=False)), st.builds(np.int64, st.integers(-2**40, 2**40)),
    st.sampled_from([helper, other_helper]),
)


def _containers(children):
    return st.one_of(
        st.tuples(children, children), st.lists(children, max_size=3),
        st.dictionaries(st.text(max_size=3), children, max_size=3),
        st.builds(lambda d: types.SimpleNamespace(**d),
                  st.dictionaries(st.from_regex(r"[a-z]{1,3}", fullmatch=True), children, max_size=3)),
    )


VALUES = st.recursive(LEAVES, _containers, max_leaves=12)


def _identity(leaf):
    """What tells two leaves apart for a compile (kind and exact value)."""
    if type(leaf) in (tuple, list, dict, types.SimpleNamespace):
        return (type(leaf).__name__, repr(leaf))
    if type(leaf) is float:
        return ("float", struct.pack("<d", leaf))
    if type(leaf) is complex:
        return ("complex", struct.pack("<dd", leaf.real, leaf.imag))
    if isinstance(leaf, np.generic):
        return (type(leaf).__name__, leaf.tobytes())
    if isinstance(leaf, JITFunction):
        return ("jit", id(leaf))
    return (type(leaf).__name__, leaf)


def _paths(value, path=()):
    """The path of every leaf of *value* (container items, dict values, namespace attributes; an
    empty container is a leaf)."""
    items = vars(value) if type(value) is types.SimpleNamespace else value
    if type(value) in (tuple, list, dict, types.SimpleNamespace) and not items:
        yield path
    elif type(value) in (tuple, list):
        for i, v in enumerate(value):
            yield from _paths(v, path + (i,))
    elif type(value) is dict:
        for k, v in value.items():
            yield from _paths(v, path + (k,))
    elif type(value) is types.SimpleNamespace:
        for k, v in vars(value).items():
            yield from _paths(v, path + (k,))
    else:
        yield path


def _get(value, path):
    for step in path:
        value = getattr(value, step) if type(value) is types.SimpleNamespace else value[step]
    return value


def _replaced(value, path, leaf):
    if not path:
        return leaf
    step, rest = path[0], path[1:]
    if type(value) is tuple:
        return tuple(_replaced(v, rest, leaf) if i == step else v for i, v in enumerate(value))
    if type(value) is list:
        return [_replaced(v, rest, leaf) if i == step else v for i, v in enumerate(value)]
    if type(value) is dict:
        return {k: _replaced(v, rest, leaf) if k == step else v for k, v in value.items()}
    return types.SimpleNamespace(**{k: _replaced(v, rest, leaf) if k == step else v for k, v in vars(value).items()})


def _key_with(monkeypatch, value) -> str:
    monkeypatch.setattr(sys.modules[__name__], "CFG", value)
    return reader.cache_key


@SETTINGS
@given(value=VALUES, data=st.data())
def test_changing_any_leaf_of_a_read_global_changes_the_key(monkeypatch, value, data):
    before = _key_with(monkeypatch, value)
    path = data.draw(st.sampled_from(list(_paths(value))))
    leaf = data.draw(LEAVES)
    assume(_identity(leaf) != _identity(_get(value, path)))
    assert _key_with(monkeypatch, _replaced(value, path, leaf)) != before
    assert _key_with(monkeypatch, value) == before, "the key is a function of the current values"


@SETTINGS
@given(value=VALUES, depth=st.integers(1, 30))
def test_depth_does_not_hide_a_change(monkeypatch, value, depth):
    nested = value
    for _ in range(depth):
        nested = (nested,)
    before = _key_with(monkeypatch, nested)
    deeper = "changed"
    for _ in range(depth):
        deeper = (deeper,)
    assume(_identity(value) != _identity("changed"))
    assert _key_with(monkeypatch, deeper) != before


def test_a_jit_helper_held_in_a_container_is_keyed_by_its_source(monkeypatch):
    before = _key_with(monkeypatch, ([{"f": helper}],))
    edited = mytriton.jit(helper.fn)
    monkeypatch.setattr(edited, "src", helper.src.replace("x + 1", "x + 2"))
    assert _key_with(monkeypatch, ([{"f": edited}],)) != before
    # a helper module read whole: its namespace is the value
    module = types.ModuleType("ck_user_helpers")
    module.SCALE, module.helper = 2.0, helper
    with_module = _key_with(monkeypatch, (module,))
    module.SCALE = 3.0
    assert _key_with(monkeypatch, (module,)) != with_module


def test_a_value_that_cannot_be_described_makes_the_kernel_uncacheable(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "CFG", (tl.tensor(None),))
    with pytest.raises(Uncacheable, match=r"^reader: 'CFG' holds a mytriton.language.core.tensor, which a cache "
                                          r"key cannot describe$"):
        reader.cache_key


@SETTINGS
@given(source=st.text(alphabet="abcdefxyz0123456789+-*() \n", min_size=1, max_size=20), data=st.data())
def test_any_edit_of_the_kernel_or_a_helper_source_changes_the_key(monkeypatch, source, data):
    target = data.draw(st.sampled_from([reader, helper]))
    with monkeypatch.context() as patch:
        patch.setattr(sys.modules[__name__], "CFG", (helper,))
        before = reader.cache_key
        at = data.draw(st.integers(0, len(target.src)))
        patch.setattr(target, "src", target.src[:at] + source + target.src[at:])
        assert reader.cache_key != before


OPTIONS = st.fixed_dictionaries({}, optional={
    "debug": st.booleans(), "noinline": st.booleans(), "launch_metadata": st.integers(0, 3),
    "do_not_specialize": st.lists(st.sampled_from([0, "x_ptr"]), max_size=2),
    "do_not_specialize_on_alignment": st.lists(st.sampled_from([0, "x_ptr"]), max_size=2)}).filter(bool)


@SETTINGS
@given(options=OPTIONS)
def test_jit_options_and_defaults_are_keyed(options):
    plain = mytriton.jit(reader.fn)
    assert mytriton.jit(reader.fn, **options).cache_key != plain.cache_key

    def with_default(x_ptr, BLOCK: tl.constexpr = 128):
        pass
    key = mytriton.jit(with_default).cache_key
    with_default.__defaults__ = (256,)
    assert mytriton.jit(with_default).cache_key != key


# -- the job: constexprs, signature, target, launch options ----------------------------------------

TOOLCHAIN = toolchain.Toolchain("0.1.0", "13.0", "c" * 64, "libnvrtc.so.13 1 bytes", "h" * 64, ())
JOB = CompileJob(KernelSource("k.py:k", "k", file="/k.py"), (("x", "*fp32:16"), ("n", "i32")), (("BLOCK", 64),),
                 4, "sm_90", True, None)
CONSTEXPRS = st.one_of(st.booleans(), st.integers(-2**70, 2**70), FLOATS, st.text(max_size=5))
CHANGES = st.one_of(
    st.builds(lambda v: {"constexprs": (("BLOCK", v),)}, CONSTEXPRS),
    st.builds(lambda t: {"signature": (("x", t), ("n", "i32"))},
              st.sampled_from(["*fp16:16", "*fp32", "*bf16:16", "*i32:16"])),
    st.builds(lambda t: {"signature": (("x", "*fp32:16"), ("n", t))}, st.sampled_from(["i32:16", "i32:1", "i64", "u32"])),
    st.builds(lambda t: {"target": t}, st.sampled_from(["sm_80", "sm_90a", "sm_100"])),
    st.builds(lambda w: {"num_warps": w}, st.sampled_from([1, 2, 8, 16])),
    st.builds(lambda s: {"num_stages": s}, st.sampled_from([1, 2, 3, 5])),
    st.builds(lambda p: {"emit_ptx": p}, st.just(False)),
    st.builds(lambda h: {"hoist_tensor_maps": h}, st.just(True)),
)
TOOLCHAIN_CHANGES = st.one_of(
    st.builds(lambda v: {"mytriton_version": v}, st.sampled_from(["0.1.1", "0.2.0"])),
    st.builds(lambda v: {"nvrtc_version": v}, st.sampled_from(["12.9", "13.1"])),
    st.builds(lambda v: {"compiler_hash": v}, st.text("0123456789abcdef", min_size=64, max_size=64)),
    st.builds(lambda v: {"nvrtc_library": v}, st.sampled_from(["libnvrtc.so.13 2 bytes", "libnvrtc.so.12 1 bytes"])),
    st.builds(lambda v: {"headers_hash": v}, st.text("0123456789abcdef", min_size=64, max_size=64)),
    st.builds(lambda v: {"switches": ((("MYTRITON_RULES", v),))}, st.text(min_size=1, max_size=4)),
)


@SETTINGS
@given(change=CHANGES)
def test_every_job_input_is_keyed(change):
    assume(not ("constexprs" in change and _identity(change["constexprs"][0][1]) == _identity(64)))
    assert job_key(TOOLCHAIN, "k" * 64, dataclasses.replace(JOB, **change)) != job_key(TOOLCHAIN, "k" * 64, JOB)


@SETTINGS
@given(change=TOOLCHAIN_CHANGES)
def test_every_toolchain_input_is_keyed(change):
    assume(getattr(TOOLCHAIN, next(iter(change))) != next(iter(change.values())))
    assert job_key(dataclasses.replace(TOOLCHAIN, **change), "k" * 64, JOB) != job_key(TOOLCHAIN, "k" * 64, JOB)


def test_what_a_worker_is_told_is_not_part_of_the_key():
    told = dataclasses.replace(JOB, source_text=b"x", kernel_key="k" * 64, toolchain=TOOLCHAIN)
    assert job_key(TOOLCHAIN, "k" * 64, told) == job_key(TOOLCHAIN, "k" * 64, JOB)
    assert job_key(TOOLCHAIN, None, JOB) is None


def test_compile_switches_are_every_mytriton_variable_but_the_known_harmless():
    env = {"MYTRITON_CACHE_DIR": "/x", "MYTRITON_NEW_RULE": "off", "PATH": "/bin", "MYTRITON_TRACEBACK": "1"}
    assert toolchain.compile_switches(env) == (("MYTRITON_NEW_RULE", "off"),)


# -- the compiler's own sources and templates ------------------------------------------------------

@pytest.fixture(scope="module")
def compiler_copy(tmp_path_factory):
    root = tmp_path_factory.mktemp("compiler")
    here = Path(mytriton.__file__).resolve().parent
    shutil.copytree(here, root / "mytriton", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(here.parent / "templates", root / "templates")
    return root


def _compiler_files(root: Path) -> list[Path]:
    keyed = [p for p in (root / "mytriton").rglob("*.py") if p.relative_to(root / "mytriton").parts[0]
             not in ("aot", "runtime")] + [root / "mytriton" / "runtime" / "driver.py"]
    return sorted(keyed + [p for p in (root / "templates").rglob("*") if p.is_file() and "loader" not in p.parts])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_edit_of_the_compiler_or_a_kernel_template_changes_the_hash(compiler_copy, data):
    files = _compiler_files(compiler_copy)
    before = toolchain.compiler_hash(compiler_copy / "templates", compiler_copy / "mytriton")
    path = data.draw(st.sampled_from(files))
    original = path.read_bytes()
    at = data.draw(st.integers(0, len(original)))
    path.write_bytes(original[:at] + data.draw(st.binary(min_size=1, max_size=3)) + original[at:])
    try:
        assert toolchain.compiler_hash(compiler_copy / "templates", compiler_copy / "mytriton") != before
    finally:
        path.write_bytes(original)
    # the build tool, the runtime's launch code and the loader templates are not the compiler
    loader = compiler_copy / "templates" / "loader" / "__init__.py.j2"
    saved = loader.read_bytes()
    loader.write_bytes(saved + b"# another line\n")
    try:
        assert toolchain.compiler_hash(compiler_copy / "templates", compiler_copy / "mytriton") == before
    finally:
        loader.write_bytes(saved)


# -- host code that runs while the kernel compiles: constexpr functions, aggregates ----------------

HOST_FILE = """\
import mytriton
import mytriton.language as tl

SCALE = 2


def helper(x):
    return x * SCALE


@mytriton.constexpr_function
def block_of(n):
    return helper(n) + 1


@tl.core._aggregate
class Pair:
    a: tl.tensor
    b: tl.constexpr

    def __init__(self, a, b):
        self.a = a
        self.b = b


@mytriton.jit
def kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, block_of(BLOCK))
    p = Pair(tl.load(x_ptr + offs), 3)
    tl.store(x_ptr + offs, p.a * p.b)
"""


@pytest.mark.parametrize("edit", [
    ("return helper(n) + 1", "return helper(n) + 2"),       # the constexpr function's body
    ("return x * SCALE", "return x * SCALE * 1"),          # a plain helper it calls
    ("SCALE = 2", "SCALE = 3"),                            # a global that helper reads
    ("self.b = b", "self.b = b + 0"),                       # the aggregate's __init__
    ("    b: tl.constexpr", "    b: tl.constexpr\n    c: tl.constexpr = 0"),   # its fields
])
def test_host_code_that_runs_at_compile_time_is_keyed(tmp_path, monkeypatch, edit):
    import importlib
    keys = []
    for i, text in enumerate((HOST_FILE, HOST_FILE.replace(*edit))):
        folder = tmp_path / str(i)
        folder.mkdir()
        (folder / "ck_host.py").write_text(text)
        monkeypatch.syspath_prepend(str(folder))
        sys.modules.pop("ck_host", None)
        importlib.invalidate_caches()
        keys.append(importlib.import_module("ck_host").kernel.cache_key)
    sys.modules.pop("ck_host", None)
    assert keys[0] != keys[1]

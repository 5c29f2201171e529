"""JITFunction.cache_key covers everything the kernel source resolves at compile time: its own source,
@jit functions reached by name or attribute chain (recursively), and the values of the simple
constants it reads from globals, modules and closures (CPU only)."""
from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap

import pytest

import mytriton
import mytriton.language as tl
from test_aot_support import env_with_repo

SCALE = 2.0
SIZES = (16, 32)
UNRELATED = 1
BLOCK = 4096            # a global that a kernel parameter of the same name shadows


@mytriton.jit
def scaled(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * SCALE + SIZES[0])


@mytriton.jit
def ping(x, N: tl.constexpr):
    if N > 0:
        x = pong(x, N - 1)
    return x


@mytriton.jit
def pong(x, N: tl.constexpr):
    return ping(x, N)


def test_key_changes_when_a_read_global_constant_changes(monkeypatch):
    before = scaled.cache_key
    assert len(before) == 64
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 3.0)
    changed = scaled.cache_key
    assert changed != before
    monkeypatch.setattr(sys.modules[__name__], "SIZES", (16, 64))
    assert scaled.cache_key not in (before, changed)
    monkeypatch.undo()
    assert scaled.cache_key == before, "the key is a function of the current values only"


def test_key_ignores_unrelated_and_shadowed_globals(monkeypatch):
    before = scaled.cache_key
    monkeypatch.setattr(sys.modules[__name__], "UNRELATED", 2)
    monkeypatch.setattr(sys.modules[__name__], "BLOCK", 8192)       # the kernel reads its parameter
    monkeypatch.setattr(sys.modules[__name__], "NEW_GLOBAL", 5, raising=False)
    assert scaled.cache_key == before


def test_the_type_of_a_constant_is_part_of_the_key(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 2)
    as_int = scaled.cache_key
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 2.0)
    assert scaled.cache_key != as_int


def test_mutually_recursive_jit_functions_have_a_key():
    assert len(ping.cache_key) == 64 and len(pong.cache_key) == 64
    assert ping.cache_key != pong.cache_key
    assert set(ping.callees()) == {ping, pong}


def _make_kernel(c):
    @mytriton.jit
    def closure_kernel(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) * C)
    C = c
    return closure_kernel


def test_key_changes_when_a_closure_constant_changes():
    assert _make_kernel(2.0).cache_key != _make_kernel(3.0).cache_key
    assert _make_kernel(2.0).cache_key == _make_kernel(2.0).cache_key


# -- kernels in files of their own: @jit helpers and constants reached as module.attribute ------

KERNEL_FILE = """\
import mytriton
import mytriton.language as tl
import ck_helpers
import ck_helpers as h


@mytriton.jit
def kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = ck_helpers.twice(tl.load(x_ptr + offs))
    tl.store(x_ptr + offs, x * h.config.FACTOR)
"""

HELPERS_FILE = """\
import mytriton
import mytriton.language as tl
from types import SimpleNamespace

config = SimpleNamespace(FACTOR=0.5)
OTHER = 1


@mytriton.jit
def twice(x):
    return inner(x) * 2


@mytriton.jit
def inner(x):
    return x + 1
"""


@pytest.fixture
def load_project(tmp_path, monkeypatch):
    """``load_project(name, kernel=..., helpers=...)``: write ck_kernel.py and ck_helpers.py into a
    folder of their own and import them afresh (the names are dropped from sys.modules afterwards)."""
    names = ("ck_kernel", "ck_helpers")

    def load(folder: str, kernel: str = KERNEL_FILE, helpers: str = HELPERS_FILE):
        path = tmp_path / folder
        path.mkdir()
        (path / "ck_kernel.py").write_text(kernel)
        (path / "ck_helpers.py").write_text(helpers)
        for name in names:
            sys.modules.pop(name, None)
        monkeypatch.syspath_prepend(str(path))
        importlib.invalidate_caches()
        return importlib.import_module("ck_kernel"), importlib.import_module("ck_helpers")

    yield load
    for name in names:
        sys.modules.pop(name, None)


def test_key_changes_when_an_attribute_reached_jit_helper_changes(load_project):
    kernel, helpers = load_project("a")
    key = kernel.kernel.cache_key
    assert set(kernel.kernel.callees()) == {helpers.twice, helpers.inner}
    # The same kernel source; the helper it calls as ck_helpers.twice(...) differs.
    kernel, _ = load_project("b", helpers=HELPERS_FILE.replace("inner(x) * 2", "inner(x) * 3"))
    assert kernel.kernel.cache_key != key
    # ... and so does the @jit function that helper calls in turn.
    kernel, _ = load_project("c", helpers=HELPERS_FILE.replace("x + 1", "x + 2"))
    assert kernel.kernel.cache_key != key
    # Identical files in another folder: the same key (paths are not part of it).
    kernel, _ = load_project("d")
    assert kernel.kernel.cache_key == key


def test_key_changes_when_a_constant_reached_by_attribute_changes(load_project, monkeypatch):
    kernel, helpers = load_project("a")
    key = kernel.kernel.cache_key
    monkeypatch.setattr(helpers.config, "FACTOR", 0.25)
    assert kernel.kernel.cache_key != key
    monkeypatch.setattr(helpers.config, "FACTOR", 0.5)
    monkeypatch.setattr(helpers, "OTHER", 2)                    # not read by the kernel
    assert kernel.kernel.cache_key == key


def test_key_is_the_same_in_every_process(load_project, tmp_path):
    # Sets and dicts iterate in hash order, objects repr with their address: none of it may leak in.
    kernel = KERNEL_FILE + textwrap.dedent("""
        NAMES = {"a", "b", "c", "d"}
        THING = object()


        @mytriton.jit
        def odd(x_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            if NAMES and THING is not None:
                kernel(x_ptr, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) + tl.float32.bits)
    """)
    load_project("a", kernel=kernel)
    script = ("import sys, json; sys.path.insert(0, sys.argv[1]); import ck_kernel; "
              "print(json.dumps([ck_kernel.kernel.cache_key, ck_kernel.odd.cache_key]))")
    keys = [json.loads(subprocess.run([sys.executable, "-c", script, str(tmp_path / "a")], check=True,
                                      capture_output=True, text=True, env=env_with_repo(PYTHONHASHSEED=seed),
                                      timeout=120).stdout)
            for seed in ("1", "2")]
    assert keys[0] == keys[1]


def test_key_is_not_recomputed_from_the_source_each_time(monkeypatch):
    scaled.cache_key
    calls = []
    real = type(scaled).parse
    monkeypatch.setattr(type(scaled), "parse", lambda self: calls.append(self) or real(self))
    for _ in range(3):
        scaled.cache_key
    assert calls == [], "the parsed references are cached per function"

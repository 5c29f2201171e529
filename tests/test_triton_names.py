"""Triton 3.6's public names, kept as data (mytriton/language/triton_names.py), against mytriton's
modules: every name is provided, or raises the "not supported by mytriton yet" error that says
why -- on the host an AttributeError subclass, in a kernel a CompilationError at its file:line:col.
Runs without Triton installed."""
from __future__ import annotations

import importlib
import inspect

import pytest

import mytriton
import mytriton.language as tl
from mytriton.language.triton_names import (TRITON_EXTRA_CUDA_NAMES, TRITON_LANGUAGE_NAMES,
                                            TRITON_LANGUAGE_OTHER_NAMES, TRITON_LIBDEVICE_NAMES, TRITON_NAMES,
                                            TRITON_TESTING_NAMES, UNSUPPORTED, UnsupportedTritonName)

MODULES = {  # Triton's spelling -> (mytriton's module, Triton's names)
    "triton": ("mytriton", TRITON_NAMES),
    "tl": ("mytriton.language", TRITON_LANGUAGE_NAMES + TRITON_LANGUAGE_OTHER_NAMES),
    "triton.testing": ("mytriton.testing", TRITON_TESTING_NAMES),
    "tl.extra.cuda": ("mytriton.language.extra.cuda", TRITON_EXTRA_CUDA_NAMES),
    "tl.extra.cuda.libdevice": ("mytriton.language.extra.cuda.libdevice", TRITON_LIBDEVICE_NAMES),
}
CASES = [(where, name) for where, (_, names) in MODULES.items() for name in names]


def test_the_lists_are_triton_36s():
    assert len(TRITON_LANGUAGE_NAMES) == len(set(TRITON_LANGUAGE_NAMES)) == 140
    assert len(TRITON_LIBDEVICE_NAMES) == 197 and len(TRITON_NAMES) == 29
    assert {"cumsum", "dot", "atomic_add", "math", "extra", "float8e5", "sum", "load", "dot_scaled",
            "bitonic_merge", "tuple", "slice"} <= set(TRITON_LANGUAGE_NAMES)
    assert {"do_bench", "perf_report", "assert_close"} <= set(TRITON_TESTING_NAMES)
    for key in UNSUPPORTED:                       # (each reason is for one of the listed names)
        where, _, name = key.rpartition(".")
        assert name in MODULES[where][1], key


@pytest.mark.parametrize("where,name", CASES)
def test_every_name_is_provided_or_says_why_not(where, name):
    module = importlib.import_module(MODULES[where][0])
    key = f"{where}.{name}"
    if key in UNSUPPORTED:
        with pytest.raises(UnsupportedTritonName) as info:
            getattr(module, name)
        what = "Triton's language" if where.startswith("tl") else "Triton"
        assert str(info.value) == f"`{key}` is part of {what} and not supported by mytriton yet: {UNSUPPORTED[key]}"
        assert isinstance(info.value, AttributeError) and info.value.name == name
    else:
        assert getattr(module, name) is not None


def test_names_triton_lacks_are_plain_attribute_errors():
    for module in (mytriton, tl, mytriton.testing, tl.extra.cuda):
        with pytest.raises(AttributeError) as info:
            module.no_such_thing  # noqa: B018
        assert type(info.value) is AttributeError
        assert str(info.value) == f"module {module.__name__!r} has no attribute 'no_such_thing'"


def test_importing_mytriton_imports_neither_torch_nor_the_compiler():
    import subprocess
    import sys
    code = ("import sys, mytriton; assert 'torch' not in sys.modules and 'numpy' not in sys.modules; "
            "import mytriton.testing; assert 'torch' not in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(
        __import__("pathlib").Path(mytriton.__file__).parents[1]))
    assert out.stdout.strip() == "ok", out.stderr


@mytriton.jit
def uses_gdc(x, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.extra.cuda.gdc_wait()  # ERR gdc_wait
    tl.store(x + offs, tl.load(x + offs))


@mytriton.jit
def helper_uses_float8e4b8(a):
    return a.to(tl.float8e4b8)  # ERR float8e4b8


@mytriton.jit
def calls_helper(x, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x + offs, helper_uses_float8e4b8(tl.load(x + offs)).to(tl.float32))


def marker(case: str) -> tuple[int, str]:
    lines = inspect.getsource(inspect.getmodule(marker)).splitlines()
    (line,) = [i for i, text in enumerate(lines, 1) if text.rstrip().endswith(f"# ERR {case}")]
    return line, lines[line - 1]


@pytest.mark.parametrize("kernel,case,where,message", [
    (uses_gdc, "gdc_wait", "tl.extra.cuda.gdc_wait",
     "`tl.extra.cuda.gdc_wait` is part of Triton's language and not supported by mytriton yet: programmatic "
     "dependent launch (griddepcontrol) is not supported"),
    (calls_helper, "float8e4b8", "tl.float8e4b8",
     "tl.float8e4b8 is not supported by mytriton: an fp8 format of AMD's GPUs (MI300); NVIDIA's are "
     "tl.float8e4nv and tl.float8e5")])
@pytest.mark.parametrize("how", ["compile", "interpreter"])
def test_kernel_use_is_a_located_compile_error(kernel, case, where, message, how):
    with pytest.raises(mytriton.CompilationError) as info:
        if how == "compile":
            mytriton.compile(kernel, signature={"x": "*fp32"}, constexprs={"BLOCK": 16})
        else:
            import numpy as np
            kernel[(1,)](np.zeros(256, np.float32), BLOCK=16)
    text = str(info.value)
    line, source = marker(case)
    col = source.index(where) + 1
    assert text.splitlines()[0] == f"{__file__}:{line}:{col}: error: {message}"
    assert text.splitlines()[1] == f"    {source.rstrip()}"
    assert text.splitlines()[2] == " " * (4 + col - 1) + "^"
    cause = info.value.__cause__                          # no host traceback inside (a cause has no frames)
    assert info.value.__suppress_context__ and (cause is None or cause.__traceback__ is None)

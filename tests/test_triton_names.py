"""Names of Triton's language that mytriton lacks: ``tl.bitonic_merge`` on the host is an AttributeError
subclass saying so, and in a kernel a CompilationError at the kernel's file:line:col."""
from __future__ import annotations

import inspect

import pytest

import mytriton
import mytriton.language as tl
from mytriton.language.triton_names import TRITON_LANGUAGE_NAMES, UnsupportedTritonName

MISSING = sorted(set(TRITON_LANGUAGE_NAMES) - set(vars(tl)))


def message(name: str) -> str:
    return f"`tl.{name}` is part of Triton's language and not supported by mytriton yet"


def test_the_list_is_triton_36s():
    assert len(TRITON_LANGUAGE_NAMES) == len(set(TRITON_LANGUAGE_NAMES)) == 140
    assert {"cumsum", "dot", "atomic_add", "math", "extra", "float8e5", "sum", "load"} <= set(TRITON_LANGUAGE_NAMES)
    assert {"bitonic_merge", "dot_scaled"} <= set(MISSING)
    assert not {"dot", "math", "extra", "cumsum", "reduce", "argmax", "gather", "flip", "sort", "topk", "advance",
                "make_block_ptr", "make_tensor_descriptor", "pointer_type", "inline_asm_elementwise", "map_elementwise"} & set(MISSING)


@pytest.mark.parametrize("name", MISSING)
def test_host_access_says_not_supported_yet(name):
    with pytest.raises(UnsupportedTritonName) as info:
        getattr(tl, name)
    assert str(info.value) == message(name)
    assert isinstance(info.value, AttributeError) and info.value.name == name
    assert not hasattr(tl, name)


def test_names_mytriton_has_and_names_triton_lacks_are_untouched():
    assert tl.sum is vars(tl)["sum"] and tl.float32 is vars(tl)["float32"]
    with pytest.raises(AttributeError) as info:
        tl.no_such_thing  # noqa: B018
    assert type(info.value) is AttributeError
    assert str(info.value) == "module 'mytriton.language' has no attribute 'no_such_thing'"


@mytriton.jit
def uses_bitonic_merge(x, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    values = tl.load(x + offs)
    tl.store(x + offs, tl.bitonic_merge(values, 4))  # ERR bitonic_merge


@mytriton.jit
def uses_dot_scaled(x, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x + offs,
             tl.dot_scaled(tl.load(x + offs)))  # ERR dot_scaled


@mytriton.jit
def helper_uses_dot_scaled(a, b):
    return tl.dot_scaled(a, 0) + b  # ERR helper_dot_scaled


@mytriton.jit
def calls_helper_using_dot_scaled(x, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tile = tl.load(x + offs[:, None] * BLOCK + offs[None, :])
    tl.store(x + offs[:, None] * BLOCK + offs[None, :], helper_uses_dot_scaled(tile, tile))


def marker(case: str) -> tuple[int, str]:
    lines = inspect.getsource(inspect.getmodule(marker)).splitlines()
    (line,) = [i for i, text in enumerate(lines, 1) if text.rstrip().endswith(f"# ERR {case}")]
    return line, lines[line - 1]


@pytest.mark.parametrize("kernel,case,name", [(uses_bitonic_merge, "bitonic_merge", "bitonic_merge"),
                                              (uses_dot_scaled, "dot_scaled", "dot_scaled"),
                                              (calls_helper_using_dot_scaled, "helper_dot_scaled", "dot_scaled")])
@pytest.mark.parametrize("how", ["compile", "interpreter"])
def test_kernel_use_is_a_located_compile_error(kernel, case, name, how):
    with pytest.raises(mytriton.CompilationError) as info:
        if how == "compile":
            mytriton.compile(kernel, signature={"x": "*fp32"}, constexprs={"BLOCK": 16})
        else:
            import numpy as np
            kernel[(1,)](np.zeros(256, np.float32), BLOCK=16)
    text = str(info.value)
    line, source = marker(case)
    col = source.index(f"tl.{name}") + 1
    assert text.splitlines()[0] == f"{__file__}:{line}:{col}: error: {message(name)}"
    assert text.splitlines()[1] == f"    {source.rstrip()}"
    assert text.splitlines()[2] == " " * (4 + col - 1) + "^"
    cause = info.value.__cause__                          # no host traceback inside (a cause has no frames)
    assert info.value.__suppress_context__ and (cause is None or cause.__traceback__ is None)

"""Property: whatever the user text — names, comments, constexpr strings — the generated CUDA
compiles with NVRTC, holds no user text outside escaped comments, and the MLIR text likewise.
Derandomized and bounded (about 20 s): the same examples on every run. The GPU variant (CUDA backend
vs the interpreter, bit for bit) is in tests/test_user_text_gpu.py."""
import re

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402

import mytriton  # noqa: E402
from mytriton.backends.mlir import tools  # noqa: E402
from mytriton.backends.names import PARAM, c_identifier, kernel_symbol  # noqa: E402
from tests.user_text_strategies import kernels, load  # noqa: E402

# every word the CUDA backend itself writes into a kernel's code (outside comments and the helpers)
GENERATED = re.compile(
    r"v\d+(_next)?|[rsqjwtvxyzC]|lane|warp|buf|seen|mt_\w+|threadIdx|blockIdx|gridDim|extern|__global__|"
    r"__launch_bounds__|void|const|int|float|double|bool|signed|unsigned|char|short|long|pragma|unroll|for|"
    r"if|else|continue|true|false|reinterpret_cast|__int_as_float|__longlong_as_double|fmax|fmin|max|min|"
    r"fabs|abs|sqrt|rsqrt|exp|exp2|__expf|log|log2|sin|cos|floor|ceil|fmod|__syncthreads|__shfl_xor_sync|"
    r"__shared__|__align__")
NUMBER = re.compile(r"\b0x[0-9a-fA-F.]+(p[+-]?\d+)?[fuUL]*\b|\b\d+(\.\d*)?(e[+-]?\d+)?[fuUL]*\b")


def check_cuda_text(cu: str, k) -> None:
    assert cu.isascii()
    for line in cu.splitlines():
        assert line.isprintable() and not line.endswith("\\"), line
    code = cu[cu.index('extern "C"'):]
    code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith("//"))
    tokens = set(re.findall(r"[A-Za-z_]\w*", NUMBER.sub(" ", code)))
    user = {c_identifier(p, PARAM) for p in k.params} | {kernel_symbol(k.kernel_name)}
    foreign = {t for t in tokens - user if not GENERATED.fullmatch(t)}
    assert not foreign, f"user text in the code: {foreign}"
    assert f"{kernel_symbol(k.kernel_name)}(" in code


def check_mlir_text(text: str, k) -> None:
    assert text.isascii()
    for line in text.splitlines():
        assert line.isprintable() and not line.endswith("\\"), line
    params = ", ".join(f"%{c_identifier(p, PARAM)}" for p in k.params)
    head = re.search(r"gpu\.func @(\w+)\((.*?)\) kernel", text)
    assert head.group(1) == kernel_symbol(k.kernel_name)
    assert ", ".join(p.split(":")[0] for p in head.group(2).split(", ")) == params


@settings(max_examples=50, deadline=None, derandomize=True, database=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(k=kernels())
def test_hostile_user_text_never_reaches_the_code(k):
    load(k)
    ck = mytriton.compile(k.fn, signature=k.signature, constexprs=k.constexprs, num_warps=k.num_warps)
    assert ck.metadata["name"] == kernel_symbol(k.kernel_name)
    check_cuda_text(ck.asm["cu"], k)
    assert f".entry {ck.metadata['name']}(" in ck.asm["ptx"]                     # NVRTC accepts it
    mlir = mytriton.compile(k.fn, signature=k.signature, constexprs=k.constexprs, num_warps=k.num_warps,
                            backend="mlir")
    check_mlir_text(mlir.asm["mlir"], k)
    if not tools.missing_tools("mlir-opt"):
        tools.verify(mlir.asm["mlir"])                                           # mlir-opt accepts it

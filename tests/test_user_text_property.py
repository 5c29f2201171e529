"""Property: whatever the user text — names, comments, constexpr strings — the generated CUDA
compiles with NVRTC, holds no user text outside escaped comments, and the MLIR text likewise.
User names are checked exactly: the CUDA code for the kernel must be token for token the code for
the same kernel with every user name (kernel and parameters) replaced by a fresh unique name, up to
the mangled spellings -- so a raw name such as ``r`` or ``min`` that leaked into the code, even one
that looks generated, makes them differ. Derandomized and bounded (about 20 s): the same examples
on every run. The GPU variant (CUDA backend vs the interpreter, bit for bit) is in
tests/test_user_text_gpu.py."""
import re

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402

import mytriton  # noqa: E402
from mytriton.backends.mlir import tools  # noqa: E402
from mytriton.backends.names import PARAM, c_identifier, kernel_symbol  # noqa: E402
from tests.user_text_strategies import GeneratedKernel, kernels, load  # noqa: E402

# every word the CUDA backend itself writes into a kernel's code (outside comments and the helpers)
GENERATED = re.compile(
    r"v\d+(_next)?|[rsqjwtvxyzC]|tid|lane|warp|buf|seen|mt_\w+|threadIdx|blockIdx|gridDim|extern|__global__|"
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


# Fresh user names: longer than any name the strategies draw, and never written by the backends.
FRESH = [f"zz_fresh_user_name_{i}" for i in range(5)]
TOKEN = re.compile(r"\w+|[^\w\s]")


def renamed(k) -> GeneratedKernel:
    """``k`` with its kernel and parameter names replaced by ``FRESH`` (whole identifiers in the code,
    comments left as they are; the generated sources hold no strings), loaded."""
    names = dict(zip([k.kernel_name, *k.params], FRESH))
    out = []
    for line in k.source.splitlines(keepends=True):
        code, hash_, comment = line.partition("#")
        i = 0
        while i < len(code):
            j = i
            while j < len(code) and ("a" + code[j]).isidentifier():    # (Python's XID_Continue)
                j += 1
            word = code[i:max(j, i + 1)]
            out.append(names.get(word, word))
            i = max(j, i + 1)
        out.append(hash_ + comment)
    return load(GeneratedKernel("".join(out), FRESH[0], FRESH[1:5], k.label, k.block, k.num_warps))


def code_tokens(cu: str) -> list[str]:
    """The C++ tokens of generated code, comments left out."""
    return TOKEN.findall("\n".join(line.split("//")[0] for line in cu.splitlines()))


def check_names_are_mangled(cu: str, k, fresh_cu: str, fresh) -> None:
    """``cu`` (for ``k``) and ``fresh_cu`` (for ``renamed(k)``) are the same tokens once the fresh
    names' mangled spellings are read as ``k``'s; the fresh code holds no raw fresh name."""
    tokens, fresh_tokens = code_tokens(cu), code_tokens(fresh_cu)
    raw = set(FRESH) & set(fresh_tokens)
    assert not raw, f"raw user names in the code: {raw}"
    spelled = {c_identifier(f, PARAM): c_identifier(p, PARAM) for f, p in zip(fresh.params, k.params)}
    spelled[kernel_symbol(fresh.kernel_name)] = kernel_symbol(k.kernel_name)
    mapped = [spelled.get(t, t) for t in fresh_tokens]
    if mapped != tokens:
        i = next((i for i, (a, b) in enumerate(zip(mapped, tokens)) if a != b), min(len(mapped), len(tokens)))
        raise AssertionError(f"the code depends on the user names beyond their mangled spellings: token {i} is "
                             f"{tokens[i:i + 1]} for {[k.kernel_name, *k.params]} but {mapped[i:i + 1]} "
                             f"for fresh names; context {tokens[max(0, i - 8):i + 8]}")


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
    fresh = renamed(k)
    fresh_cu = mytriton.compile(fresh.fn, signature=fresh.signature, constexprs=fresh.constexprs,
                                num_warps=fresh.num_warps).asm["cu"]
    check_names_are_mangled(ck.asm["cu"], k, fresh_cu, fresh)
    assert f".entry {ck.metadata['name']}(" in ck.asm["ptx"]                     # NVRTC accepts it
    mlir = mytriton.compile(k.fn, signature=k.signature, constexprs=k.constexprs, num_warps=k.num_warps,
                            backend="mlir")
    check_mlir_text(mlir.asm["mlir"], k)
    if not tools.missing_tools("mlir-opt"):
        tools.verify(mlir.asm["mlir"])                                           # mlir-opt accepts it


def test_a_raw_user_name_in_the_code_is_caught():
    """The check above catches a parameter name that reached the code unmangled, even one (``r``,
    ``min``) that the backend also writes."""
    from tests.user_text_strategies import load as load_kernel
    for name in ("r", "min", "x_ptr"):
        source = ("import mytriton as triton\nimport mytriton.language as tl\n\n\n@triton.jit\n"
                  f"def kern(a_ptr, b_ptr, {name}, s, LABEL: tl.constexpr, BLOCK: tl.constexpr):\n"
                  "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
                  f"    x = tl.load(a_ptr + offs, mask=offs < {name}, other=0.0)\n"
                  "    tl.store(b_ptr + offs, x + s)\n")
        k = load_kernel(GeneratedKernel(source, "kern", ["a_ptr", "b_ptr", name, "s"], "", 64, 4))
        cu = mytriton.compile(k.fn, signature=k.signature, constexprs=k.constexprs).asm["cu"]
        fresh = renamed(k)
        fresh_cu = mytriton.compile(fresh.fn, signature=fresh.signature, constexprs=fresh.constexprs).asm["cu"]
        check_names_are_mangled(cu, k, fresh_cu, fresh)                  # as generated: no leak
        mangled = c_identifier(name, PARAM)
        leaked = re.sub(rf"\b{mangled}\b", name, cu)                     # the bug: the raw name in the code
        with pytest.raises(AssertionError, match="depends on the user names"):
            check_names_are_mangled(leaked, k, fresh_cu, fresh)
        fresh_leaked = re.sub(rf"\b{c_identifier(FRESH[3], PARAM)}\b", FRESH[3], fresh_cu)
        with pytest.raises(AssertionError, match="raw user names in the code"):
            check_names_are_mangled(cu, k, fresh_leaked, fresh)

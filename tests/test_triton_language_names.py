"""Triton 3.6's public names that kernels and their host code use: tl.tuple / tuple_type / slice /
block_type / condition / const / void / str_to_ty / constexpr_type / tensor_descriptor_type,
tl.standard, tl.target_info, tl.bitonic_merge, dot_scaled and the fp8 formats of other GPUs
(refused at the use), assert on run-time values, dtype-annotated parameters, and the host names
(triton.constexpr_function, must_use_result, OutOfResources, InterpreterError, knobs,
KernelInterface)."""
import numpy as np
import pytest

import mytriton
import mytriton.language as tl
from tests.kernel_files import compile_error, kernel_from_source

HEAD = "import mytriton\nimport mytriton as triton\nimport mytriton.language as tl\n\n\n"


def run(tmp_path, body: str, *args, name="k", grid=(1,), **constexprs):
    """Write ``body`` (its kernel ``k``) to ``<name>.py`` and run it on ``args``."""
    k = kernel_from_source(tmp_path / f"{name}.py", HEAD + body, "k")
    k[grid](*args, **constexprs)
    return k


def test_tuples_their_type_and_slices(tmp_path):
    body = ("@mytriton.jit\ndef k(out_ptr):\n    t = tl.tuple([tl.arange(0, 4), 3])\n"
            "    tl.static_assert(isinstance(t, tl.tuple))\n    ty = t.type\n"
            "    tl.static_assert(ty == tl.tuple_type([tl.block_type(tl.int32, [4]), tl.constexpr_type(3)]))\n"
            "    tl.static_assert(len(ty) == 2 and ty[1] == tl.constexpr_type(3))\n"
            "    tl.static_assert(isinstance(t[0].type, tl.block_type))\n"
            "    s = (1, 2, 3)[tl.slice(1, None, None)]\n    tl.static_assert(s == (2, 3))\n"
            "    tl.store(out_ptr + t[0], t[0] * t[1] + s[0])\n")
    out = np.zeros(4, np.int32)
    run(tmp_path, body, out)
    assert out.tolist() == [2, 5, 8, 11]


def test_constexpr_value_and_type(tmp_path):
    body = ("@mytriton.jit\ndef k(out_ptr, N: tl.constexpr):\n    n = tl.constexpr(N * 2).value\n"
            "    tl.static_assert(N.type == tl.constexpr_type(4))\n    tl.store(out_ptr, n + N.value)\n")
    out = np.zeros(1, np.int32)
    run(tmp_path, body, out, N=4)
    assert out[0] == 12


def test_host_type_names():
    assert tl.str_to_ty("fp32") is tl.float32 and tl.str_to_ty("*fp16") == tl.pointer_type(tl.float16)
    assert tl.str_to_ty("*kbf16") == tl.pointer_type(tl.bfloat16) and tl.str_to_ty("constexpr", 5) == tl.constexpr_type(5)
    assert tl.str_to_ty(("i32", "*fp32")) == tl.tuple_type([tl.int32, tl.pointer_type(tl.float32)])
    with pytest.raises(TypeError, match="unknown type 'q7'"):
        tl.str_to_ty("q7")
    assert tl.block_type(tl.float16, [16, 32]).shape == (16, 32) and repr(tl.void) == "void"
    with pytest.raises(TypeError, match="0d block_type is forbidden"):
        tl.block_type(tl.float32, [])
    assert isinstance(tl.tuple([1, 2]), tuple) and tl.slice(1, 2, None) == slice(1, 2)
    assert tl.standard.sum is tl.sum and tl.standard.bitonic_merge is tl.bitonic_merge
    assert tl.constexpr_type is tl.core.constexpr_type and tl.core.tensor is tl.tensor


def test_while_takes_tl_condition_and_its_disable_licm(tmp_path):
    body = ("@mytriton.jit\ndef k(out_ptr, n):\n    i = 0\n    acc = 0\n"
            "    while tl.condition(i < n, disable_licm=True):\n        acc += i * 2\n        i += 1\n"
            "    tl.store(out_ptr, acc)\n")
    out = np.zeros(1, np.int32)
    k = run(tmp_path, body, out, 5)
    assert out[0] == 20
    from mytriton.compiler import build_ssa
    func = build_ssa(k, {"out_ptr": "*i32", "n": "i32"}, {}, 4, optimized=False)
    loops = [op for op in func.body.ops if op.name == "while"]
    assert len(loops) == 1 and loops[0].attrs.get("disable_licm") is True


def test_bitonic_merge_sorts_a_bitonic_sequence(tmp_path):
    body = ("@mytriton.jit\ndef k(x_ptr, out_ptr, DESC: tl.constexpr):\n    r = tl.arange(0, 4)[:, None] * 16 + "
            "tl.arange(0, 16)[None, :]\n    x = tl.load(x_ptr + r)\n"
            "    tl.store(out_ptr + r, tl.bitonic_merge(x, descending=DESC))\n")
    rng = np.random.default_rng(3)
    rows = []
    for _ in range(4):
        v = np.sort(rng.integers(-100, 100, 16)).astype(np.int32)
        cut = rng.integers(1, 16)
        rows.append(np.concatenate([v[:cut], v[cut:][::-1]]))          # ascending, then descending
    x = np.array(rows, np.int32)
    for desc in (False, True):
        out = np.zeros_like(x)
        run(tmp_path, body, x, out, DESC=desc, name=f"k{int(desc)}")
        want = np.sort(x, axis=1)
        np.testing.assert_array_equal(out, want[:, ::-1] if desc else want)


def test_target_info(tmp_path):
    body = ("@mytriton.jit\ndef k(out_ptr):\n    if tl.target_info.is_cuda() and not tl.target_info.is_hip():\n"
            "        tl.store(out_ptr, 1)\n")
    out = np.zeros(1, np.int32)
    run(tmp_path, body, out)
    assert out[0] == 1
    text = compile_error(tmp_path / "cap.py", HEAD + "@mytriton.jit\ndef k(out_ptr):\n"
                         "    if tl.target_info.cuda_capability_geq(9, 0):\n        tl.store(out_ptr, 1)\n",
                         {"out_ptr": "*i32"})
    assert "cap.py:8" in text and "cuda_capability_geq is not supported by mytriton" in text


@pytest.mark.parametrize("use,reason", [
    ("x = tl.zeros([16], tl.float8e4b8)", "tl.float8e4b8 is not supported by mytriton: an fp8 format of AMD's"),
    ("x = tl.zeros([16], tl.float32).to(tl.float8e5b16)", "tl.float8e5b16 is not supported by mytriton"),
    ("x = tl.zeros([16], tl.float32).to(tl.float8e4b15)", "tl.float8e4b15 is not supported by mytriton: Triton "
                                                           "emulates it"),
    ("x = tl.dot_scaled(tl.zeros([16, 16], tl.float32), None, 'e4m3', tl.zeros([16, 16], tl.float32), None, 'e4m3')",
     "tl.dot_scaled is not supported by mytriton: microscaled (mxfp) matrix products"),
])
def test_refused_names_say_why_at_the_use(use, reason, tmp_path):
    text = compile_error(tmp_path / "refused.py", HEAD + f"@mytriton.jit\ndef k(out_ptr):\n    {use}\n",
                         {"out_ptr": "*fp32"})
    assert reason in text and "refused.py:8" in text and "^" in text


def test_assert_on_a_run_time_value_is_a_device_assert(tmp_path):
    src = HEAD + ("@mytriton.jit(debug=True)\ndef k(x_ptr, n):\n    x = tl.load(x_ptr + tl.arange(0, 8))\n"
                  "    assert n > 4, 'n is too small'\n    assert tl.sum(x) == 28\n    tl.store(x_ptr, n)\n")
    k = kernel_from_source(tmp_path / "asserts.py", src)
    x = np.arange(8, dtype=np.int32)
    k[(1,)](x, 6)
    assert x[0] == 6
    with pytest.raises(Exception, match="n is too small"):
        k[(1,)](np.arange(8, dtype=np.int32), 3)
    cu = mytriton.compile(k, {"x_ptr": "*i32", "n": "i32"}, {}).asm["cu"]
    assert cu.count('"asserts\\056py", ') == 2               # (the two asserts' calls of __assertfail)
    nodebug = kernel_from_source(tmp_path / "asserts2.py", src.replace("(debug=True)", ""))
    x = np.arange(8, dtype=np.int32)
    nodebug[(1,)](x, 3)                           # (as Triton: checked only in debug kernels)
    assert x[0] == 3


def test_dtype_annotated_parameters_take_that_type(tmp_path):
    body = ("@mytriton.jit\ndef k(out_ptr, x: tl.float32, n: tl.int64, h: tl.float16):\n"
            "    tl.static_assert(x.dtype == tl.float32 and n.dtype == tl.int64 and h.dtype == tl.float16)\n"
            "    tl.store(out_ptr, x + n.to(tl.float32) + h.to(tl.float32))\n")
    out = np.zeros(1, np.float32)
    run(tmp_path, body, out, 3, 4, 0.1)              # (an int for x: converted; 0.1 rounded to fp16)
    assert out[0] == np.float32(7 + np.float32(np.float16(0.1)))
    text = compile_error(tmp_path / "bad_ann.py", HEAD + "@mytriton.jit\ndef k(p: tl.float32):\n    pass\n",
                         {"p": "*fp32"})
    assert "parameter 'p' is annotated tl.float32 but is given a pointer" in text and "bad_ann.py:7" in text


def test_constexpr_function_runs_at_compile_time(tmp_path):
    src = HEAD + ("@triton.constexpr_function\ndef block_for(n, dtype):\n"
                  "    return max(16, triton.next_power_of_2(n)) // (2 if dtype == tl.float16 else 1)\n\n\n"
                  "@mytriton.jit\ndef k(out_ptr, N: tl.constexpr):\n    B: tl.constexpr = block_for(N, tl.float32)\n"
                  "    tl.store(out_ptr + tl.arange(0, B), tl.arange(0, B))\n\n\n"
                  "@mytriton.jit\ndef bad(out_ptr, n):\n    tl.store(out_ptr, block_for(n, tl.float32))\n")
    k, bad = kernel_from_source(tmp_path / "cf.py", src, "k", "bad")
    out = np.zeros(64, np.int32)
    k[(1,)](out, N=40)
    assert out.tolist() == list(range(64))
    assert mytriton.constexpr_function is not None and k.fn.__globals__["block_for"](40, tl.float16) == 32
    with pytest.raises(mytriton.CompilationError, match="block_for\\(\\) is a triton.constexpr_function: its "
                                                         "arguments must be compile-time values"):
        mytriton.compile(bad, {"out_ptr": "*i32", "n": "i32"}, {})


def test_must_use_result(tmp_path):
    src = HEAD + ("@triton.must_use_result('it is the new value')\n@mytriton.jit\ndef bump(x):\n    return x + 1\n\n\n"
                  "@mytriton.jit\ndef k(out_ptr):\n    bump(1)\n")
    text = compile_error(tmp_path / "mur.py", src, {"out_ptr": "*i32"})
    assert "The result of bump is not being used. it is the new value" in text and "mur.py:14" in text


def test_host_names():
    e = mytriton.OutOfResources(232448, 101376, "shared memory")
    assert isinstance(e, mytriton.TritonError) and "out of resource: shared memory, Required: 232448" in str(e)
    assert str(mytriton.InterpreterError("boom")) == "boom" and isinstance(mytriton.InterpreterError(), Exception)
    mytriton.knobs.autotuning.print = True
    assert mytriton.knobs.autotuning.print is True and mytriton.knobs.runtime.interpret is False
    mytriton.knobs.autotuning.reset()
    assert mytriton.knobs.autotuning.print is False
    with pytest.raises(AttributeError, match="triton.knobs.cache has no knob 'nope'"):
        mytriton.knobs.cache.nope

    class K(mytriton.KernelInterface):
        def run(self, *args, grid, warmup, **kwargs):
            return grid, warmup, args, kwargs
    assert K()[(3,)](1, x=2) == ((3,), False, (1,), {"x": 2}) and K().warmup(1, grid=(1,))[1] is True
    with pytest.raises(AttributeError, match="`triton.MockTensor` is part of Triton and not supported by mytriton"):
        mytriton.MockTensor


AGGREGATE = HEAD + '''@tl.core._aggregate
class Acc:
    total: tl.tensor
    count: tl.tensor
    SCALE: tl.constexpr

    def __init__(self, total, count, SCALE):
        self.total = total
        self.count = count
        self.SCALE = SCALE

    @triton.jit
    def add(self, x):
        return Acc(self.total + x * self.SCALE, self.count + 1, self.SCALE)

    @triton.constexpr_function
    def scaled(self, v):
        return v * self.SCALE


@triton.jit
def k(x_ptr, out_ptr, n):
    acc = Acc(tl.zeros([16], tl.float32), 0, 2)
    for i in range(n):
        acc = acc.add(tl.load(x_ptr + i * 16 + tl.arange(0, 16)))
    if n > 2:
        acc = Acc(acc.total + 1.0, acc.count, acc.SCALE)
    tl.static_assert(acc.scaled(3) == 6)
    tl.store(out_ptr + tl.arange(0, 16), acc.total / acc.count)


@triton.jit
def missing(out_ptr):
    acc = Acc(tl.zeros([16], tl.float32), 0, 2)
    tl.store(out_ptr, acc.nope)
'''


def test_aggregates_are_carried_merged_and_have_methods(tmp_path):
    k, missing = kernel_from_source(tmp_path / "agg.py", AGGREGATE, "k", "missing")
    rng = np.random.default_rng(2)
    for n in (2, 3):
        x = rng.uniform(-1, 1, 16 * n).astype(np.float32)
        out = np.zeros(16, np.float32)
        k[(1,)](x, out, n)
        want = (x.reshape(n, 16).astype(np.float32) * 2).sum(0) + (1.0 if n > 2 else 0.0)
        np.testing.assert_allclose(out, want / n, rtol=1e-6)
    assert mytriton.compile(k, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {}).asm["cubin"]
    with pytest.raises(mytriton.CompilationError, match="Acc has no attribute 'nope'"):
        mytriton.compile(missing, {"out_ptr": "*fp32"}, {})


def test_a_failed_static_assert_is_a_compile_time_assertion_failure(tmp_path):
    from mytriton.language.core import CompileTimeAssertionFailure
    src = HEAD + "@mytriton.jit\ndef k(out_ptr, N: tl.constexpr):\n    tl.static_assert(N % 16 == 0, 'N must be a multiple of 16')\n"
    k = kernel_from_source(tmp_path / "sa.py", src)
    with pytest.raises(tl.core.CompileTimeAssertionFailure) as e:
        mytriton.compile(k, {"out_ptr": "*i32"}, {"N": 20})
    assert isinstance(e.value, mytriton.CompilationError) and e.value.__class__ is CompileTimeAssertionFailure
    assert "static_assert failed: N must be a multiple of 16" in str(e.value) and "sa.py:8" in str(e.value)


CONST = HEAD + """@mytriton.jit
def copy(x_ptr: tl.const, out_ptr, n):
    offs = tl.arange(0, 16)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@mytriton.jit
def writes(x_ptr: tl.const, n):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + 1 + offs, 0.0, mask=offs < n)


@mytriton.jit
def adds(x_ptr: tl.const):
    p = tl.where(True, x_ptr + 2, x_ptr)
    tl.atomic_add(p, 1.0)
"""


def test_stores_through_a_const_pointer_are_refused(tmp_path):
    copy, writes, adds = kernel_from_source(tmp_path / "const.py", CONST, "copy", "writes", "adds")
    x, out = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    copy[(1,)](x, out, 10)
    assert out.tolist() == list(range(10)) + [0] * 6
    for k, line in ((writes, 15), (adds, 21)):
        with pytest.raises(mytriton.CompilationError) as e:
            mytriton.compile(k, {"x_ptr": "*fp32", "n": "i32"} if k is writes else {"x_ptr": "*fp32"}, {})
        assert "Cannot store to a constant pointer" in str(e.value) and f"const.py:{line}" in str(e.value)

"""User text never changes the generated code, and semantics that were wrong without an error
(issue #11 §2): names are mangled, comments escaped, float constants bit-exact, `>>` and `/`
follow Triton, stores happen once per element and program, const follows every pointer root.
The GPU half is tests/test_user_text_gpu.py."""
import re
from fractions import Fraction

import numpy as np
import pytest

import mytriton
from mytriton.backends.cuda.codegen import CudaEmitter, c_literal
from mytriton.backends.mlir.arith import constant_literal
from mytriton.backends.names import c_identifier, comment_text, kernel_symbol
from mytriton.ir.layout import element_coords
from mytriton.ir.ops import OPS, constant_value, eval_elementwise, float_bits
from mytriton.ir.ssa import walk
from mytriton.ir.types import F16, F32, F64, SCALARS
from tests.kernels import hostile as h
from tests.kernel_files import load_kernel_from

F = "*fp32"


def compile_cuda(fn, sig, ce=None, **kw):
    return mytriton.compile(fn, signature=sig, constexprs=ce or {}, **kw)


def code_lines(cu: str) -> list[str]:
    """The generated kernel's lines after the helpers (the function itself)."""
    return cu[cu.index('extern "C"'):].splitlines()


# --- identifiers ----------------------------------------------------------------------------------

def test_parameter_named_r_is_not_the_register_index():
    cu = compile_cuda(h.bound_named_r, {"x_ptr": F, "out_ptr": F, "r": "i32"}, {"BLOCK": 128}).asm["cu"]
    assert "k_bound_named_r(const float* p_x_ptr, float* p_out_ptr, int p_r)" in cu
    assert re.search(r"\(v\d+\[r\] < p_r\)", cu), cu          # the bound, not the loop's index
    assert not re.search(r"< r\)", cu)


@pytest.mark.parametrize("fn,sig", [
    (h.cpp_names, {"int": F, "new": F, "this": F, "template": "i32", "v0": "fp32", "lane": "fp32", "warp": "fp32",
                   "threadIdx": "fp32"}),
    (h.main, {"x_ptr": F, "n": "i32"}),
    (h.printf, {"x_ptr": F, "n": "i32"}),
    (h.float, {"x_ptr": F, "n": "i32"}),
    (h.grüße, {"x_ptr": F, "ñ": "i32", "δ_ptr": F}),
], ids=["cpp-keywords-and-generated-names", "main", "printf", "float", "non-ascii"])
def test_hostile_names_compile_with_nvrtc(fn, sig):
    ck = compile_cuda(fn, sig, {"BLOCK": 128})
    symbol = ck.metadata["name"]
    assert symbol == kernel_symbol(fn.__name__) and symbol.isascii() and symbol.isidentifier()
    assert ck.asm["cu"].isascii()
    assert f".entry {symbol}(" in ck.asm["ptx"]
    params = re.search(rf"{symbol}\((.*)\)\n", ck.asm["cu"]).group(1)
    assert [p.split()[-1].lstrip("*") for p in params.split(", ")] == [c_identifier(n, "p") for n in sig]


def test_cpp_names_mean_the_parameters():
    cu = compile_cuda(h.cpp_names, {"int": F, "new": F, "this": F, "template": "i32", "v0": "fp32", "lane": "fp32",
                                    "warp": "fp32", "threadIdx": "fp32"}, {"BLOCK": 128}).asm["cu"]
    body = "\n".join(line for line in code_lines(cu) if not line.strip().startswith("//"))
    for name in ("int", "new", "this", "template", "v0", "lane", "warp", "threadIdx"):
        assert f"p_{name}" in body
    assert re.search(r"mt_mul|\* p_v0", body) and "+ p_lane" in body and "+ p_warp" in body


def test_identifier_mangling_is_injective_and_ascii():
    names = ["x", "x_", "_x", "px", "x0", "é", "e_0000e9", "é_", "_é", "ée", "xé", "x_0000e9", "Ω", "ℌ", "a" * 3]
    out = [c_identifier(n, "p") for n in names]
    assert len(set(out)) == len(out)
    assert all(o.isascii() and o.isidentifier() and o.startswith("p") for o in out)
    assert c_identifier("x_ptr", "p") == "p_x_ptr" and kernel_symbol("main") == "k_main"
    assert c_identifier("é", "p") == "px_0000e9"


def test_symbol_is_the_same_for_both_backends_and_the_metadata():
    sig = {"x_ptr": F, "n": "i32"}
    cuda = compile_cuda(h.main, sig, {"BLOCK": 128})
    mlir = compile_cuda(h.main, sig, {"BLOCK": 128}, backend="mlir")
    assert cuda.metadata["name"] == mlir.metadata["name"] == "k_main"
    assert 'extern "C" __global__ void __launch_bounds__(128)\nk_main(float* p_x_ptr, int p_n)' in cuda.asm["cu"]
    assert "gpu.func @k_main(%p_x_ptr: !llvm.ptr, %p_n: i32)" in mlir.asm["mlir"]


def test_mlir_non_ascii_names():
    text = compile_cuda(h.grüße, {"x_ptr": F, "ñ": "i32", "δ_ptr": F}, {"BLOCK": 128}, backend="mlir").asm["mlir"]
    assert text.isascii()
    assert f"gpu.func @{kernel_symbol('grüße')}(%p_x_ptr: !llvm.ptr, %px_0000f1: i32, %px_0003b4_00005fptr: !llvm.ptr)" \
        in text


# --- comments ---------------------------------------------------------------------------------------

def test_comment_text():
    assert comment_text("a + b  # ok") == "a + b  # ok"
    assert comment_text("x \\") == "x \\x5c"
    assert comment_text("a\nb\r\tc") == "a\\nb\\r\\tc"
    assert comment_text("é\x00\u2028\U0001F600") == "\\xe9\\x00\\u2028\\U0001f600"
    for s in ("\\", "a\\\n", "??/", "\u2028", "\x85"):
        out = comment_text(s)
        assert out.isascii() and out.isprintable() and not out.endswith("\\")


def comment_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith("//")]


def test_source_line_ending_in_backslash_does_not_splice():
    ck = compile_cuda(h.line_splice, {"x_ptr": F, "out_ptr": F, "n": "i32"}, {"BLOCK": 128})
    cu = ck.asm["cu"]
    assert "// hostile.py:43: mask = offs < n  # the mask \\x5c" in cu
    assert not any(line.endswith("\\") for line in cu.splitlines())
    assert re.search(r"\(v\d+\[r\] < p_n\);", cu)               # the line after the comment is code
    assert ck.asm["ptx"].count("st.global") >= 1


HOSTILE_TEXT = "a\n}\nint injected;\n//\\"


@pytest.mark.parametrize("backend", ["cuda", "mlir"])
def test_constexpr_string_is_escaped(backend):
    ck = compile_cuda(h.with_label, {"x_ptr": F, "n": "i32"}, {"BLOCK": 128, "LABEL": HOSTILE_TEXT}, backend=backend)
    text = ck.asm["cu" if backend == "cuda" else "mlir"]
    assert "int injected;" not in [line.strip() for line in text.splitlines()]
    assert "LABEL=a\\n}\\nint injected;\\n//\\x5c" in text
    if backend == "cuda":
        assert "st.global" in ck.asm["ptx"]



@pytest.mark.parametrize("backend", ["cuda", "mlir"])
def test_file_name_is_escaped(tmp_path, backend):
    path = tmp_path / "k\nint injected;\\.py"
    path.write_text("import mytriton as triton\nimport mytriton.language as tl\n\n\n@triton.jit\n"
                    "def k(x_ptr):\n    tl.store(x_ptr + tl.arange(0, 32), 1.0)\n")
    fn = load_kernel_from(path, "k")
    ck = compile_cuda(fn, {"x_ptr": F}, backend=backend)
    text = ck.asm["cu" if backend == "cuda" else "mlir"]
    assert "int injected;" not in [line.strip() for line in text.splitlines()]
    assert "k\\nint injected;\\x5c.py:7" in text
    assert not any(line.endswith("\\") for line in text.splitlines())
    if backend == "cuda":
        assert "st.global" in ck.asm["ptx"]


# --- float constants -----------------------------------------------------------------------------------

VALUES = [0.0, -0.0, 1.0, -2.5, 0.1, 1 / 3, 1e39, -1e39, 3.4028235677973366e38, 1 + 2**-24, 1 + 3 * 2**-24,
          1e-40, 1e-46, 2.0**-149, 65504.0, 65520.0, 1e-8, float("inf"), float("-inf"), float("nan"), 2.0**60, 1e300]


def literal_value(text: str, ty) -> Fraction | str:
    """The exact value a C++ or MLIR float literal spells (or 'bits:…' for bit casts)."""
    if m := re.fullmatch(r"__\w+_as_\w+\(\(?(?:unsigned short\))?(0x[0-9a-f]+)(?:LL)?\)", text):
        return f"bits:{int(m.group(1), 16)}"
    if m := re.fullmatch(r"0x([0-9A-F]+)", text):                  # MLIR bit pattern
        return f"bits:{int(m.group(1), 16)}"
    text = text.removesuffix("f") if ty == F32 else text
    if "x" in text:
        return Fraction(float.fromhex(text))
    return Fraction(text)                                              # a decimal's exact value


@pytest.mark.parametrize("ty", [F32, F64, F16], ids=str)
@pytest.mark.parametrize("render", [c_literal, constant_literal], ids=["cuda", "mlir"])
def test_float_literals_are_the_rounded_value_exactly(render, ty):
    for v in VALUES:
        rounded = constant_value(v, ty)
        got = literal_value(render(v, ty), ty)
        if isinstance(got, str):
            assert got == f"bits:{float_bits(v, ty)}", (v, render(v, ty))
        else:
            assert np.isfinite(rounded) and got == Fraction(float(rounded)), (v, render(v, ty))
            assert np.signbit(rounded) == render(v, ty).startswith("-")


def test_constant_rounding_rule():
    assert constant_value(1e39, F32) == np.inf and constant_value(-1e39, F32) == -np.inf
    assert constant_value(1 + 2**-24, F32) == 1.0                     # a tie: to even
    assert constant_value(1 + 3 * 2**-24, F32) == np.float32(1 + 2**-22)
    assert float_bits(1e39, F32) == 0x7F800000 and float_bits(65520.0, F16) == 0x7C00


def test_out_of_range_other_is_inf():
    ck = compile_cuda(h.fill_other, {"x_ptr": F, "out_ptr": F, "n": "i32"}, {"BLOCK": 128})
    assert "__int_as_float(0x7f800000)" in ck.asm["cu"] and "1e+39" not in ck.asm["cu"]
    assert "st.global" in ck.asm["ptx"]
    x = np.arange(5, dtype=np.float32)
    out = np.zeros(9, np.float32)
    h.fill_other[(1,)](x, out, 5, BLOCK=128)
    assert out.tolist() == [0, 1, 2, 3, 4] + [np.inf] * 4


def test_interpreter_uses_the_rounding_rule():
    from mytriton.backends.interpreter.executor import Program
    fn = mytriton.compiler.build_ssa(h.fill_other, {"x_ptr": F, "out_ptr": F, "n": "i32"}, {"BLOCK": 128})
    consts = [v for v in Program(fn).consts if v.type == F32]
    assert consts and all(Program(fn).consts[v] == constant_value(v.value, F32) for v in consts)


# --- >> and / ---------------------------------------------------------------------------------------------

INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
UINTS = [t for t in INTS if t[0] == "u"]


@pytest.mark.parametrize("tx", INTS)
@pytest.mark.parametrize("ty", UINTS)
def test_shift_right_follows_the_left_operand(tx, ty):
    """Triton's test_shift_op: x >> y computed in the wider width with x's signedness."""
    a, b = SCALARS[tx], SCALARS[ty]
    bw = max(a.bits, b.bits)
    wide = np.dtype(f"{'int' if a.is_signed else 'uint'}{bw}")
    rng = np.random.default_rng(17)
    info = np.iinfo(_np(tx))
    x = rng.integers(info.min, info.max, 64, dtype=_np(tx), endpoint=True)
    y = rng.integers(0, bw, 64, dtype=_np(ty))
    rt = OPS["shr"].type_rule([a, b], {})
    assert rt == (a if a.bits > b.bits and a.is_signed else mytriton.ir.types.promote(a, b))
    got = eval_elementwise("shr", [a, b], [x, y], {}, rt)
    np.testing.assert_array_equal(got.view(wide), x.astype(wide) >> y.astype(wide))


def _np(t: str):
    return np.dtype(("int" if t[0] == "i" else "uint") + t[1:])


def test_shift_example_from_triton_and_its_spellings():
    x = np.full(128, -881907089, np.int32)
    y = np.full(128, 17, np.uint32)
    out = np.zeros(128, np.int32)
    sig = {"x_ptr": "*i32", "y_ptr": "*u32", "out_ptr": "*i32"}
    h.shift_right[(1,)](x, y, out, BLOCK=128)                        # the interpreter
    assert (out == -6729).all()
    cu = compile_cuda(h.shift_right, sig, {"BLOCK": 128}).asm["cu"]
    assert re.search(r"= \(v\d+\[r\] >> \(\(int\)v\d+\[r\]\)\);", cu), cu      # shifted as int: arithmetic
    mlir = compile_cuda(h.shift_right, sig, {"BLOCK": 128}, backend="mlir").asm["mlir"]
    assert "arith.shrsi" in mlir and "arith.shrui" not in mlir


def div_kernel(op):
    src = (f"import mytriton as triton\nimport mytriton.language as tl\n\n\n@triton.jit\n"
           f"def k(x_ptr, y_ptr, out_ptr):\n    offs = tl.arange(0, 32)\n"
           f"    tl.store(out_ptr + offs, tl.load(x_ptr + offs) {op} tl.load(y_ptr + offs))\n")
    return src


@pytest.mark.parametrize("op", ["/", "//", "%"])
def test_mixed_signedness_division_is_refused_for_every_width_pair(tmp_path, op):
    path = tmp_path / f"div{len(op)}{op == '%'}.py"
    path.write_text(div_kernel(op))
    fn = load_kernel_from(path, "k")
    def signed(t):                      # int1 is one of Triton's unsigned types
        return t[0] == "i" and t != "i1"

    for tx in INTS + ["i1"]:
        for ty in INTS + ["i1"]:
            sig = {"x_ptr": f"*{tx}", "y_ptr": f"*{ty}", "out_ptr": "*fp32"}
            if signed(tx) == signed(ty):
                compile_cuda(fn, sig)
                continue
            with pytest.raises(mytriton.CompilationError) as e:
                compile_cuda(fn, sig)
            msg = str(e.value)
            shown = {"i1": "bool"}
            assert (f"Cannot use '{op}' with {shown.get(tx, tx)} and {shown.get(ty, ty)} because they have "
                    "different signedness; cast one of them") in msg
            assert f"{path}:8:" in msg, msg


# --- one store per element and program ---------------------------------------------------------------------

def evaluate_c(cond: str, thread: int, reg: int) -> bool:
    expr = cond.replace("&&", " and ").replace("/", "//").replace("threadIdx.x", "tid")
    return bool(eval(expr, {}, {"lane": thread % 32, "warp": thread // 32, "tid": thread, "r": reg}))


def store_counts(ptr, cond, warps) -> dict:
    """How many (thread, register) copies of each element of ``ptr`` the C condition ``cond`` lets store."""
    from mytriton.ir.layout import num_regs
    counts = {}
    for t in range(32 * warps):
        for r in range(num_regs(ptr.layout, ptr.type.shape)):
            if cond is None or evaluate_c(cond, t, r):
                c = element_coords(ptr.layout, ptr.type.shape, t, r)
                counts[c] = counts.get(c, 0) + 1
    return counts


STORE_CASES = [
    ("scalar", h.double_in_place, {"p": F}, {}, 32),
    ("replicated-1d", h.double_row_in_place, {"p": F}, {"BLOCK": 16}, 4),
    ("replicated-1d-32-warps", h.double_row_in_place, {"p": F}, {"BLOCK": 64}, 32),
    ("exact-1d", h.double_row_in_place, {"p": F}, {"BLOCK": 512}, 4),
    ("vectorized-replicated", h.double_row_in_place, {"p": F}, {"BLOCK": 256}, 16),
]


@pytest.mark.parametrize("case", STORE_CASES, ids=[c[0] for c in STORE_CASES])
def test_each_element_is_stored_by_exactly_one_thread(case):
    _, fn, sig, ce, warps = case
    ck = compile_cuda(fn, sig, ce, num_warps=warps)
    func = ck.function
    emitter = CudaEmitter(func)
    stores = [op for op in walk(func.body) if op.name == "store"]
    assert stores
    for op in stores:
        ptr = op.operands[0]
        cond = emitter.store_owner(ptr, "r")
        if not hasattr(ptr.type, "shape"):
            assert cond == "threadIdx.x == 0"
            continue
        counts = store_counts(ptr, cond, warps)
        assert len(counts) == ptr.type.numel and set(counts.values()) == {1}, (cond, counts)
    assert "st.global" in ck.asm["ptx"]


def test_sliced_and_2d_stores_are_owned_once():
    src = ("import mytriton as triton\nimport mytriton.language as tl\n\n\n@triton.jit\n"
           "def k(x_ptr, rows_ptr, out_ptr, BM: tl.constexpr, BN: tl.constexpr):\n"
           "    m = tl.arange(0, BM)\n    n = tl.arange(0, BN)\n"
           "    x = tl.load(x_ptr + m[:, None] * BN + n[None, :])\n"
           "    tl.store(rows_ptr + m, tl.sum(x, axis=1))\n"
           "    tl.store(out_ptr + m[:, None] * BN + n[None, :], x * 2.0)\n"
           "    tl.store(rows_ptr + n, tl.sum(x, axis=0))\n")
    import tempfile
    from pathlib import Path
    path = Path(tempfile.mkdtemp()) / "sliced.py"
    path.write_text(src)
    fn = load_kernel_from(path, "k")
    for bm, bn, warps in [(4, 8, 4), (2, 64, 8), (16, 16, 1), (8, 32, 2), (32, 64, 4), (1, 32, 2)]:
        ck = compile_cuda(fn, {"x_ptr": F, "rows_ptr": F, "out_ptr": F}, {"BM": bm, "BN": bn}, num_warps=warps)
        emitter = CudaEmitter(ck.function)
        for op in (op for op in walk(ck.function.body) if op.name == "store"):
            ptr = op.operands[0]
            cond = emitter.store_owner(ptr, "r")
            counts = store_counts(ptr, cond, warps)
            assert len(counts) == ptr.type.numel and set(counts.values()) == {1}, (bm, bn, warps, cond)
        assert "st.global" in ck.asm["ptx"]


def test_scalar_store_is_predicated_to_one_thread():
    cu = compile_cuda(h.double_in_place, {"p": F}, num_warps=32).asm["cu"]
    assert re.search(r"\n  if \(threadIdx\.x == 0\) \*v\d+ = v\d+;\n", cu), cu


def test_a_store_by_one_thread_is_published_before_later_loads():
    """The owning thread's store is followed by a block barrier when the kernel loads (another
    thread may load that address next); a kernel that loads nothing needs none."""
    cu = compile_cuda(h.store_then_load, {"p": F, "out": F}, {"BLOCK": 256}, num_warps=8).asm["cu"]
    assert re.search(r"\n  if \(threadIdx\.x == 0\) \*v\d+ = v\d+;\n  __syncthreads\(\);\n", cu), cu
    assert "__syncthreads" not in compile_cuda(h.fill_scalar, {"p": F}, num_warps=8).asm["cu"]
    text = compile_cuda(h.store_then_load, {"p": F, "out": F}, {"BLOCK": 256}, num_warps=8,
                        backend="mlir").asm["mlir"]
    lines = [line.strip() for line in text.splitlines()]
    first = lines.index(next(line for line in lines if line.startswith("llvm.store")))
    assert lines[first + 1:first + 3] == ["}", "gpu.barrier"], text
    p, out = np.zeros(3, np.float32), np.zeros(3 * 256, np.float32)
    h.store_then_load[(3,)](p, out, BLOCK=256, num_warps=8)
    assert out.tolist() == [5.0] * 256 + [6.0] * 256 + [7.0] * 256


# --- const pointers ----------------------------------------------------------------------------------------

def test_loop_carried_pointer_assigned_another_parameter():
    ck = compile_cuda(h.pointer_swap, {"dst": F, "src": F, "n": "i32", "steps": "i32"}, {"BLOCK": 128})
    assert "k_pointer_swap(float* p_dst, float* p_src, int p_n, int p_steps)" in ck.asm["cu"]
    assert "st.global" in ck.asm["ptx"]
    dst, src = np.zeros(128, np.float32), np.arange(128, dtype=np.float32)
    h.pointer_swap[(1,)](dst, src, 100, 3, BLOCK=128)
    assert dst[:100].tolist() == list(range(1, 101)) and src[:100].tolist() == list(range(2, 102))


@pytest.mark.parametrize("fn,ce,warps", [(h.double_in_place, {}, 32), (h.double_row_in_place, {"BLOCK": 16}, 4)],
                         ids=["scalar", "replicated"])
def test_mlir_stores_once_per_element(fn, ce, warps):
    from mytriton.backends.mlir import tools
    text = compile_cuda(fn, {"p": F}, ce, num_warps=warps, backend="mlir").asm["mlir"]
    store = [i for i, line in enumerate(text.splitlines()) if "llvm.store" in line]
    assert len(store) == 1
    guard = text.splitlines()[store[0] - 1].strip()
    assert re.fullmatch(r"scf\.if %t\d+ \{", guard), text
    cond = guard.split()[1]
    if fn is h.double_in_place:
        assert f"{cond} = arith.cmpi eq, %tid_i32, %c0_i32 : i32" in text
    else:
        # lanes 16-31 and warps 1-3 hold copies of lanes 0-15's elements: tid & 0b1110000 must be 0
        copy = re.search(rf"{cond} = arith.cmpi eq, (%\w+), %c0_i32 : i32", text)
        assert copy and f"{copy.group(1)} = arith.andi %tid_i32, %c112_i32 : i32" in text, text
    if not tools.missing_tools("mlir-opt"):
        tools.verify(text)


@pytest.mark.parametrize("op", ["/", "//", "%"])
def test_a_python_number_takes_an_unsigned_tensors_type(tmp_path, op):
    """Triton's kinds (bool < integer < float): a Python int meets any integer tensor in the tensor's
    type, so no signedness clash; a negative one cannot meet an unsigned tensor."""
    for lit in ("3", "-3"):
        path = tmp_path / f"num{len(op)}{op == '%'}{lit[0] == '-'}.py"
        path.write_text(div_kernel(op).replace("tl.load(y_ptr + offs)", lit))
        fn = load_kernel_from(path, "k")
        for tx in INTS:
            sig = {"x_ptr": f"*{tx}", "y_ptr": "*i32", "out_ptr": "*fp32"}
            if tx[0] == "i" or lit == "3":
                compile_cuda(fn, sig)
                continue
            with pytest.raises(mytriton.CompilationError) as e:
                compile_cuda(fn, sig)
            assert f"{path}:8:" in str(e.value)
            assert f"cannot combine the negative number -3 with an unsigned {tx} value" in str(e.value)


MAIN_KERNELS = '''\
import mytriton as triton
import mytriton.language as tl


@triton.jit
def main(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
'''
MAIN_MANIFEST = '''\
package: mainpkg
targets: [sm_90]
kernels:
  - kernel: kernels/k.py:main
    signature: {x_ptr: "*fp32", n: i32}
    constexprs:
      BLOCK: [128]
'''


def build_main_package(folder):
    from mytriton.aot import build_packages
    (folder / "kernels").mkdir(parents=True, exist_ok=True)
    (folder / "kernels" / "k.py").write_text(MAIN_KERNELS)
    (folder / "m.yaml").write_text(MAIN_MANIFEST)
    build_packages([str(folder / "m.yaml")], out_dir=str(folder / "out"), jobs=1, echo=lambda line: None,
                   notify=lambda remark: None)
    return folder / "out" / "mainpkg"


def test_a_kernel_named_main_builds_with_a_predictable_symbol(tmp_path):
    import json
    pkg = build_main_package(tmp_path)
    info = json.loads((pkg / "manifest.json").read_text())
    text = json.dumps(info)
    assert '"symbol": "k_main"' in text, text
    ptx = next(pkg.glob("kernels/main/*.ptx")).read_text()
    assert ".visible .entry k_main(" in ptx
    assert b"k_main" in next(pkg.glob("kernels/main/*.cubin")).read_bytes()

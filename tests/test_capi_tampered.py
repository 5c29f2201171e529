"""The C API (``mytriton-build --emit-c``) of compile results and tuning records that were altered
(a shared cache entry or a record someone else can write): every value that reaches the C is
checked as what it claims to be, and a bad one is an AotError naming the kernel and the
specialization, with no C written and the previous output kept. And the build's own check of
the C it emits: compiled with the system C compiler (``-fsyntax-only``) before it is put in place."""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import sys

import pytest

from mytriton.aot import AotError, build_packages, capi, tuning
from test_aot_support import KERNELS, tree_bytes, write_project
from test_capi import cuda_include

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (CI installs gcc)")

MANIFEST = '''\
package: tam
targets: [sm_90]
kernels:
  - kernel: kernels/k.py:add_kernel
    signature: {x_ptr: "*fp32:16", y_ptr: "*fp32:16", out_ptr: "*fp32:16", n: i32}
    constexprs: {BLOCK: [64]}
  - kernel: kernels/k.py:scale_kernel
    signature: {x_ptr: "*fp32", out_ptr: "*fp32", n: "i32:16", alpha: fp32}
    constexprs: {BLOCK: [128], EVEN: [true]}
'''

# A recipe of the shape frontend/launch_maps.py records (rank 2: n x 64 floats at x_ptr + 4 * n).
RECIPE = {"name": "d0__made_tmap", "dtype": "fp32", "block": [16, 32], "padding": "zero",
          "base": ["addptr", 4, ["param", "x_ptr"], ["param", "n"]],
          "shape": [["param", "n"], ["const", 64]],
          "strides": [["mul", "i32", ["const", 64], ["cast", "i32", ["param", "n"]]]],
          "where": "k.py:7", "box": [16, 32], "swizzle": 0}
EVIL = '0); system("touch pwned"); (0'


def nested(depth: int) -> list:
    expr = ["param", "n"]
    for _ in range(depth):
        expr = ["add", "i32", expr, ["const", 1]]
    return expr


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tampered")
    path = write_project(folder, MANIFEST, KERNELS)
    build_packages([str(path)], out_dir=str(folder / "out"), jobs=1, echo=lambda line: None,
                   notify=lambda line: None, emit_c=True)
    return path


def rebuild(path, monkeypatch, kernel: str | None = None, **patch):
    """Build *path* again (every compile from the previous output) with *patch* applied to the
    compile results of *kernel* (all kernels: None) that the C API is made of."""
    real = capi.c_context

    def tampered(plan, kernels, artifacts, tuning=None):
        kernels = [(entry, [{**record, **patch} if kernel in (None, entry.name) else record for record in records])
                   for entry, records in kernels]
        return real(plan, kernels, artifacts, tuning)
    monkeypatch.setattr(capi, "c_context", tampered)
    build_packages([str(path)], out_dir=str(path.parent / "out"), jobs=1, echo=lambda line: None,
                   notify=lambda line: None, emit_c=True)


def refused(path, monkeypatch, message: str, **patch) -> str:
    """The AotError of a rebuild with *patch*; checks that it names *message* and left the output as it was."""
    before = tree_bytes(path.parent / "out")
    with pytest.raises(AotError) as caught:
        rebuild(path, monkeypatch, **patch)
    assert message in str(caught.value)
    after = tree_bytes(path.parent / "out")
    assert after == before
    assert not any(b"pwned" in data for data in after.values())
    assert sorted(os.listdir(path.parent / "out")) == ["tam"]        # (no staging folder left)
    return str(caught.value)


def with_(recipe: dict, **changes) -> dict:
    return {**recipe, **changes}


ADD = "--emit-c: add_kernel BLOCK=64 w4: the compile result's tensor map 0 is malformed: "


@pytest.mark.parametrize("recipe, message", [
    (with_(RECIPE, base=["const", EVIL]),
     ADD + "base: the constant '0); system(\"touch pwned\"); (0' is not an integer"),
    (with_(RECIPE, base=["const", True]), "base: the constant True is not an integer"),
    (with_(RECIPE, base=["const", 1.0]), "base: the constant 1.0 is not an integer"),
    (with_(RECIPE, base=["const", 2**63]), "base: the constant 9223372036854775808 does not fit an int64_t"),
    (with_(RECIPE, shape=[["param", EVIL], ["const", 64]]),
     "shape[0]: '0); system(\"touch pwned\"); (0' is not a run-time parameter of add_kernel"),
    (with_(RECIPE, shape=[["param", "BLOCK"], ["const", 64]]), "shape[0]: 'BLOCK' is not a run-time parameter"),
    (with_(RECIPE, shape=[["param", "n", "x"], ["const", 64]]),
     "shape[0]: ['param', 'n', 'x'] is not [\"param\", name]"),
    (with_(RECIPE, shape=[["div", "i32", ["const", 1], ["const", 2]], ["const", 64]]),
     "shape[0]: unknown operation 'div' (expected add, addptr, cast, const, mul, param or sub)"),
    (with_(RECIPE, shape=[["add", "fp32", ["const", 1], ["const", 2]], ["const", 64]]),
     "shape[0]: the type 'fp32' is not an integer type (i8, i16, i32, i64, u8, u16, u32 or u64)"),
    (with_(RECIPE, shape=[["add", "i32); system(0", ["const", 1], ["const", 2]], ["const", 64]]),
     "shape[0]: the type 'i32); system(0' is not an integer type"),
    (with_(RECIPE, shape=[["add", "i32", ["const", 1], ["const", EVIL]], ["const", 64]]),
     "shape[0][3]: the constant '0); system("),
    (with_(RECIPE, strides=[["cast", "i64"]]), "strides[0]: ['cast', 'i64'] is not [\"cast\", type, expression]"),
    (with_(RECIPE, base=["addptr", "4u) + system(0", ["param", "x_ptr"], ["const", 0]]),
     "base: the element size '4u) + system(0' is not an integer from 1 to 16"),
    (with_(RECIPE, base=["addptr", 0, ["param", "x_ptr"], ["const", 0]]), "base: the element size 0 is not"),
    (with_(RECIPE, base="x_ptr"), "base: 'x_ptr' is not an expression (a list)"),
    (with_(RECIPE, base=nested(5000)), "base: nested deeper than 64 operations"),
    (with_(RECIPE, dtype="fp32\"; system(0"), "dtype 'fp32\"; system(0' is not a dtype"),
    (with_(RECIPE, dtype="i32", padding="nan"), "TMA cannot copy i32 with nan padding"),
    (with_(RECIPE, padding="zero\n"), "padding 'zero\\n' is not one of 'nan' or 'zero'"),
    (with_(RECIPE, swizzle=16), "swizzle 16 is not one of 0, 32, 64 or 128"),
    (with_(RECIPE, swizzle=True), "swizzle True is not one of"),
    (with_(RECIPE, swizzle="128"), "swizzle '128' is not one of"),
    (with_(RECIPE, box=[0, 32]), "box [0, 32] is not 2 integers from 1 to 256"),
    (with_(RECIPE, box=[16.0, 32]), "box [16.0, 32] is not 2 integers from 1 to 256"),
    (with_(RECIPE, box=[True, 32]), "box [True, 32] is not"),
    (with_(RECIPE, box=[16, 32, 8]), "box [16, 32, 8] is not 2 integers"),
    (with_(RECIPE, box="16, 32); system(0"), "box '16, 32); system(0' is not 2 integers"),
    (with_(RECIPE, shape=[]), "shape [] is not a list of 1 to 5 expressions"),
    (with_(RECIPE, shape=[["const", 1]] * 6), "is not a list of 1 to 5 expressions"),
    (with_(RECIPE, strides=[]), "strides [] is not a list of 1 expression(s) (the rank less one)"),
    (with_(RECIPE, where=["k.py", 7]), "where ['k.py', 7] is not a string"),
    ({k: v for k, v in RECIPE.items() if k != "box"}, "it lacks 'box'"),
    ("d0__made_tmap", "'d0__made_tmap' is not a mapping"),
])
def test_a_tampered_tensor_map_recipe_is_refused(built, monkeypatch, recipe, message):
    refused(built, monkeypatch, message, made_tensor_maps=[recipe])


def test_the_error_names_the_kernel_the_specialization_and_the_map(built, monkeypatch):
    text = refused(built, monkeypatch, "--emit-c: scale_kernel BLOCK=128 EVEN=True w4: the compile result's tensor "
                                       "map 1 is malformed: base[2]: parameter alpha is fp32, not an integer or a "
                                       "pointer", kernel="scale_kernel",
                   made_tensor_maps=[RECIPE, with_(RECIPE, base=["addptr", 4, ["param", "alpha"], ["const", 0]])])
    assert "\n" not in text


def test_tensor_maps_that_are_not_a_list_are_refused(built, monkeypatch):
    refused(built, monkeypatch, "add_kernel BLOCK=64 w4: the compile result's made_tensor_maps {'base': 1} is not a "
                                "list of recipes", made_tensor_maps={"base": 1})


@pytest.mark.parametrize("patch, message", [
    ({"symbol": 'k_add_kernel"); system("x'}, "add_kernel BLOCK=64 w4: the compile result's kernel symbol "
                                             "'k_add_kernel\"); system(\"x' is not a C identifier"),
    ({"symbol": 7}, "the compile result's kernel symbol 7 is not a C identifier"),
    ({"shared": -1}, "add_kernel BLOCK=64 w4: the compile result's dynamic shared memory -1 is not a number of "
                     "bytes from 0 to 2147483647"),
    ({"shared": "0); system(0"}, "dynamic shared memory '0); system(0' is not a number of bytes"),
    ({"shared": True}, "dynamic shared memory True is not"),
    ({"shared": 2**40}, "dynamic shared memory 1099511627776 is not"),
])
def test_a_tampered_symbol_or_shared_size_is_refused(built, monkeypatch, patch, message):
    refused(built, monkeypatch, message, **patch)


@needs_cc
def test_a_valid_recipe_is_emitted_with_its_where_escaped(built, monkeypatch, tmp_path):
    rebuild(built, monkeypatch, kernel="add_kernel",
            made_tensor_maps=[with_(RECIPE, where='k.py:7\n    system("x"); //\\')])
    c = built.parent / "out" / "tam" / "c" / "tam.c"
    source = c.read_text()
    assert '    // the tensor descriptor made at k.py:7\\n    system("x"); //\\x5c\n' in source
    assert ("err = mt_made_tensor_map(&made_maps[0], CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, 4, "
            "((uint64_t)(p_x_ptr) + (uint64_t)(int64_t)(p_n) * 4u),\n                             "
            "(const int64_t[]){ INT64_C(64), p_n }, "
            "(const int64_t[]){ (int32_t)((uint32_t)(INT64_C(64)) * (uint32_t)((int32_t)(p_n))) },\n"
            "                             (const unsigned[]){ 32, 16 }, CU_TENSOR_MAP_SWIZZLE_NONE, "
            "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);") in source
    assert "void *params[] = { &p_x_ptr, &p_y_ptr, &p_out_ptr, &p_n, &made_maps[0] };" in source
    import subprocess
    result = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I", cuda_include(),
                             "-c", str(c), "-o", str(tmp_path / "tam.o")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# -- the tuning record ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    from test_autotune_build import RECORD, TUNED
    folder = tmp_path_factory.mktemp("tuned")
    path = write_project(folder, TUNED)
    (folder / "rec.json").write_text(json.dumps(RECORD))
    build_packages([str(path)], out_dir=str(folder / "out"), jobs=1, echo=lambda line: None,
                   notify=lambda line: None, emit_c=True, tune_from=[str(folder / "rec.json")])
    return path


@pytest.mark.parametrize("change, message", [
    (lambda t: {**t, "choices": [[["1); system(0"], 0]]}, "the tuning's key value '1); system(0' of n is not a number"),
    (lambda t: {**t, "choices": [[[True], 0]]}, "the tuning's key value True of n is not a number"),
    (lambda t: {**t, "choices": [[[10**400], 0]]}, "the tuning's key value 1000000000000000000000"),
    (lambda t: {**t, "choices": [[[1000], 3]]}, "the tuning's choice 3 is not a config index (0 to 2)"),
    (lambda t: {**t, "choices": [[[1000], True]]}, "the tuning's choice True is not a config index"),
    (lambda t: {**t, "choices": [[[1000, 5], 0]]}, "the tuning's key values [1000, 5] are not one per key parameter"),
    (lambda t: {**t, "key": ["x); system(0"]}, "the tuning's key 'x); system(0' is not a run-time parameter of "
                                               "add_kernel"),
    (lambda t: {**t, "key": "n"}, "the tuning's key 'n' is not a list of parameters"),
    (lambda t: {**t, "choices": [[[1000], 0, "x"]]}, "the tuning's choice [[1000], 0, 'x'] is not [key values, "
                                                     "config index]"),
])
def test_a_tampered_tuning_record_is_refused(tuned, monkeypatch, change, message):
    real = tuning.dispatch_table
    monkeypatch.setattr(tuning, "dispatch_table", lambda entry, record: change(real(entry, record)))
    rec = str(tuned.parent / "rec.json")
    before = tree_bytes(tuned.parent / "out")
    with pytest.raises(AotError, match="^--emit-c: add_kernel: ") as caught:
        build_packages([str(tuned)], out_dir=str(tuned.parent / "out"), jobs=1, echo=lambda line: None,
                       notify=lambda line: None, emit_c=True, tune_from=[rec])
    assert message in str(caught.value)
    assert tree_bytes(tuned.parent / "out") == before


def test_key_values_become_exact_double_literals():
    assert [capi._double(v, "k", "n") for v in (1000, 0.1, -2**53, float("inf"), float("-inf"))] == [
        "0x1.f400000000000p+9", "0x1.999999999999ap-4", "-0x1.0000000000000p+53", "INFINITY", "-INFINITY"]


# -- the build's check of the C it emits ----------------------------------------------------------

def fake_compiler(folder, status: int, output: str = ""):
    """A "C compiler" that records its arguments in *folder*/args.json, prints *output*, exits *status*."""
    script = folder / "fakecc"
    script.write_text(f"#!{sys.executable}\nimport json, sys\n"
                      f"json.dump(sys.argv[1:], open({str(folder / 'args.json')!r}, 'w'))\n"
                      f"sys.stderr.write({output!r})\nsys.exit({status})\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_the_check_runs_cc_on_the_emitted_c_with_the_cuda_headers(built, monkeypatch, tmp_path):
    monkeypatch.setenv("MYTRITON_NATIVE_LAUNCH", "0")         # ($CC is for the native launcher too)
    monkeypatch.setenv("CC", str(fake_compiler(tmp_path, 0)))
    rebuild(built, monkeypatch)
    args = json.loads((tmp_path / "args.json").read_text())
    assert args[:2] == ["-std=c11", "-fsyntax-only"] and args[-1].endswith("/tam.c")
    assert args[args.index("-I") + 1] == cuda_include()


def test_the_check_compiles_the_emitted_c_but_the_image_bytes(built, monkeypatch):
    """(Each image's initializer but its first line is left blank in what is checked: numbers
    made by byte_lines; the line numbers stay those of the emitted file.)"""
    checked = []
    real = capi.check_compiles
    monkeypatch.setattr(capi, "check_compiles", lambda folder, name, text: checked.append(text) or real(folder, name,
                                                                                                      text))
    rebuild(built, monkeypatch)
    emitted = (built.parent / "out" / "tam" / "c" / "tam.c").read_text().split("\n")
    (text,) = checked
    lines = text.split("\n")
    assert len(lines) == len(emitted)
    differ = [(a, b) for a, b in zip(emitted, lines) if a != b]
    assert len(differ) > 100 and all(re.fullmatch(r"    [0-9,]+", a) and b == "    " for a, b in differ)


def test_a_failing_check_is_an_internal_error_and_keeps_the_old_output(built, monkeypatch, tmp_path):
    monkeypatch.setenv("MYTRITON_NATIVE_LAUNCH", "0")
    monkeypatch.setenv("CC", str(fake_compiler(tmp_path, 1, "tam.c:3:1: error: it broke\n")))
    before = tree_bytes(built.parent / "out")
    with pytest.raises(AotError) as caught:
        rebuild(built, monkeypatch)
    assert str(caught.value) == "internal error in the generated C API: tam.c:3:1: error: it broke"
    assert caught.value.exit_status == 1
    assert tree_bytes(built.parent / "out") == before


@needs_cc
def test_the_check_catches_c_that_does_not_compile(built, monkeypatch):
    real = capi.c_context

    def broken(*args, **kwargs):
        context = real(*args, **kwargs)
        context["kernels"][0]["params"][0]["decl"] = "not_a_type p_x_ptr"
        return context
    monkeypatch.setattr(capi, "c_context", broken)
    before = tree_bytes(built.parent / "out")
    with pytest.raises(AotError, match=r"(?s)^internal error in the generated C API: .*tam\.[ch]:\d+:\d+: "
                                       r"error: unknown type name 'not_a_type'"):
        build_packages([str(built)], out_dir=str(built.parent / "out"), jobs=1, echo=lambda line: None,
                       notify=lambda line: None, emit_c=True)
    assert tree_bytes(built.parent / "out") == before


@pytest.mark.parametrize("env, note", [
    ({"CC": "/no/such/cc"}, "note: tam: the C API was not compiled to check it: the C compiler /no/such/cc "
                            "($CC) was not found"),
    ({"MYTRITON_EMIT_C_CHECK": "0"}, "note: tam: the C API was not compiled to check it: MYTRITON_EMIT_C_CHECK=0"),
    ({"PATH": "/no/such/folder"}, "note: tam: the C API was not compiled to check it: no C compiler (cc is not on "
                                  "PATH; set CC)"),
])
def test_the_check_is_skipped_with_a_note(built, monkeypatch, env, note):
    monkeypatch.setenv("MYTRITON_NATIVE_LAUNCH", "0")
    monkeypatch.delenv("CC", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    notes = []
    build_packages([str(built)], out_dir=str(built.parent / "out"), jobs=1, echo=lambda line: None,
                   notify=notes.append, emit_c=True)
    assert [line for line in notes if "C API" in line] == [note]
    assert (built.parent / "out" / "tam" / "c" / "tam.c").is_file()

"""Manifest validation: every error names the manifest file and the line (DESIGN.md §3)."""
from __future__ import annotations

import pytest

from mytriton.aot import ManifestError, load_manifest
from test_aot_support import KERNELS, run_cli, assert_no_traceback, write_project

HEAD = """\
package: pkg
targets: [sm_90]
kernels:
"""
ADD = """\
  - kernel: kernels/k.py:add_kernel
    signature: {x_ptr: "*fp32:16", y_ptr: "*fp32:16", out_ptr: "*fp32:16", n: i32}
"""

# (manifest text, fragment of the message); the error's line is the one marked "#<".
CASES = {
    "unknown top-level key": (HEAD + ADD + "    constexprs: {BLOCK: [64]}\nextra: 1  #<\n",
                              "unknown key 'extra' in the manifest (expected one of: package, targets, kernels)"),
    "misspelled kernel key": (HEAD + "  - kernel: kernels/k.py:add_kernel\n"
                                     "    singature: {x_ptr: i32}  #<\n",
                              "unknown key 'singature' in kernel entry (expected one of: kernel, signature, "
                              "constexprs, specializations, num_warps)"),
    "missing required key": ("package: pkg  #<\ntargets: [sm_90]\n",
                             "the manifest is missing the required key 'kernels'"),
    "missing signature": (HEAD + "  - kernel: kernels/k.py:add_kernel  #<\n    constexprs: {BLOCK: [64]}\n",
                          "kernel entry is missing the required key 'signature'"),
    "missing parameter": (HEAD + "  - kernel: kernels/k.py:add_kernel\n"
                                 '    signature: {x_ptr: "*fp32", y_ptr: "*fp32", out_ptr: "*fp32"}  #<\n'
                                 "    constexprs: {BLOCK: [64]}\n",
                          "signature of add_kernel is missing parameter(s) 'n' (expected every runtime "
                          "parameter, in order: x_ptr, y_ptr, out_ptr, n)"),
    "extra parameter": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature:\n"
                               '      x_ptr: "*fp32"\n      y_ptr: "*fp32"\n      out_ptr: "*fp32"\n'
                               "      n: i32\n      z: i32  #<\n    constexprs: {BLOCK: [64]}\n",
                        "unknown parameter 'z' in signature: add_kernel has no such parameter "
                        "(runtime parameters: x_ptr, y_ptr, out_ptr, n)"),
    "out of order": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature:  #<\n"
                            '      y_ptr: "*fp32"\n      x_ptr: "*fp32"\n      out_ptr: "*fp32"\n'
                            "      n: i32\n    constexprs: {BLOCK: [64]}\n",
                     "signature parameters are out of order: got y_ptr, x_ptr, out_ptr, n; "
                     "add_kernel declares x_ptr, y_ptr, out_ptr, n"),
    "constexpr in signature": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature:\n"
                                      '      x_ptr: "*fp32"\n      BLOCK: i32  #<\n',
                               "'BLOCK' is a tl.constexpr parameter of add_kernel"),
    "unknown type": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature:\n"
                            '      x_ptr: "*f32"  #<\n',
                     "parameter 'x_ptr': unknown type '*f32': expected one of i1 i8 i16 i32 i64 u8 u16 u32 "
                     "u64 fp16 bf16 fp32 fp64"),
    "suffix on a float": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature:\n"
                                 '      x_ptr: "*fp32"\n      y_ptr: "*fp32"\n      out_ptr: "*fp32"\n'
                                 '      n: "fp32:16"  #<\n',
                          "':16' applies only to pointers and integer scalars"),
    "odd alignment": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature:\n"
                             '      x_ptr: "*fp32:24"  #<\n',
                      "alignment must be a power of two, got 24"),
    "type not a string": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature:\n"
                                 "      x_ptr: 16  #<\n",
                          "the type of 'x_ptr' must be a type string"),
    "unquoted pointer type": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature:\n"
                                     "      x_ptr: *fp32  #<\n",
                              'quote them, e.g. "*fp32:16"'),
    "unknown constexpr": (HEAD + ADD + "    constexprs:\n      BLCK: [64]  #<\n",
                          "unknown constexpr 'BLCK': not a tl.constexpr parameter of add_kernel (expected: BLOCK)"),
    "runtime parameter as constexpr": (HEAD + ADD + "    constexprs:\n      BLOCK: [64]\n      n: [1]  #<\n",
                                       "'n' is a runtime parameter of add_kernel, not a tl.constexpr"),
    "missing constexpr values": (HEAD + "  - kernel: kernels/k.py:scale_kernel\n"
                                        '    signature: {x_ptr: "*fp32", out_ptr: "*fp32", n: i32, alpha: fp32}\n'
                                        "    constexprs:  #<\n      BLOCK: [64]\n",
                                 "no values for tl.constexpr parameter(s) 'EVEN' of scale_kernel"),
    "no constexprs at all": (HEAD + "  - kernel: kernels/k.py:add_kernel  #<\n"
                                    '    signature: {x_ptr: "*fp32", y_ptr: "*fp32", out_ptr: "*fp32", n: i32}\n',
                             "no values for tl.constexpr parameter(s) 'BLOCK' of add_kernel"),
    "specialization missing a constexpr": (
        HEAD + "  - kernel: kernels/k.py:scale_kernel\n"
               '    signature: {x_ptr: "*fp32", out_ptr: "*fp32", n: i32, alpha: fp32}\n'
               "    specializations:\n      - {BLOCK: 64, EVEN: true}\n      - {BLOCK: 128}  #<\n",
        "specialization does not set tl.constexpr parameter(s) 'EVEN' of scale_kernel"),
    "unknown key in a specialization": (HEAD + ADD + "    specializations:\n      - {BLOCK: 64, num_warp: 4}  #<\n",
                                        "unknown constexpr 'num_warp': not a tl.constexpr parameter of "
                                        "add_kernel (expected: BLOCK, num_warps)"),
    "duplicate specialization": (HEAD + ADD + "    specializations:\n      - {BLOCK: 64}\n"
                                              "      - {BLOCK: 64, num_warps: 4}  #<\n",
                                 "duplicate specialization BLOCK=64 w4 (first at line 7)"),
    "duplicate product value": (HEAD + ADD + "    constexprs:\n      BLOCK: [64, 64]  #<\n",
                                "duplicate value 64 in constexprs.BLOCK"),
    "duplicate num_warps": (HEAD + ADD + "    constexprs: {BLOCK: [64]}\n    num_warps: [4, 4]  #<\n",
                            "duplicate value 4 in num_warps"),
    "both constexprs and specializations": (HEAD + ADD + "    constexprs: {BLOCK: [64]}\n"
                                                         "    specializations:  #<\n      - {BLOCK: 64}\n",
                                            "either 'constexprs' (a product) or 'specializations'"),
    "package with a path": ('package: "../evil"  #<\ntargets: [sm_90]\nkernels:\n' + ADD,
                            "package '../evil' is not a valid Python identifier"),
    "package with a dash": ("package: my-kernels  #<\ntargets: [sm_90]\nkernels:\n" + ADD,
                            "package 'my-kernels' is not a valid Python identifier"),
    "package is a keyword": ("package: class  #<\ntargets: [sm_90]\nkernels:\n" + ADD,
                             "package 'class' is not a valid Python identifier"),
    "unknown target": ("package: pkg\ntargets:\n  - sm_90\n  - sm_91  #<\nkernels:\n" + ADD,
                       "unknown target 'sm_91' (known targets: sm_70, sm_72, sm_75, sm_80"),
    "target not a name": ("package: pkg\ntargets: [90]  #<\nkernels:\n" + ADD, "unknown target 90"),
    "kernel file not found": (HEAD + "  - kernel: kernels/nope.py:add_kernel  #<\n    signature: {}\n",
                              "kernel file 'kernels/nope.py' not found"),
    "function not found": (HEAD + "  - kernel: kernels/k.py:mul_kernel  #<\n    signature: {}\n",
                           "'kernels/k.py' has no function 'mul_kernel'"),
    "module not found": (HEAD + "  - kernel: no_such_module_xyz:fn  #<\n    signature: {}\n",
                         "cannot import 'no_such_module_xyz': ModuleNotFoundError: No module named "
                         "'no_such_module_xyz'"),
    "kernel file fails to import": (HEAD + "  - kernel: kernels/bad.py:fn  #<\n    signature: {}\n",
                                    "cannot import 'kernels/bad.py': ModuleNotFoundError: No module named "
                                    "'no_such_dependency_xyz' (at kernels/bad.py, line 2)"),
    "kernel file has a syntax error": (HEAD + "  - kernel: kernels/syntax.py:fn  #<\n    signature: {}\n",
                                       "cannot import 'kernels/syntax.py': SyntaxError:"),
    "not a jit function": (HEAD + "  - kernel: kernels/k.py:not_a_kernel  #<\n    signature: {}\n",
                           "'not_a_kernel' in 'kernels/k.py' is not a @triton.jit function (got int)"),
    "malformed kernel reference": (HEAD + "  - kernel: kernels/k.py  #<\n    signature: {}\n",
                                   "kernel 'kernels/k.py' must be 'path/to/file.py:function' or "
                                   "'module:function'"),
    "kernel named like a loader export": (HEAD + "  - kernel: kernels/k.py:cdiv  #<\n    signature: {}\n",
                                          "a kernel cannot be named 'cdiv'"),
    "duplicate kernel": (HEAD + ADD + "    constexprs: {BLOCK: [64]}\n" + ADD.replace("\n", "  #<\n", 1)
                         + "    constexprs: {BLOCK: [128]}\n",
                         "kernel 'add_kernel' is listed twice (first at line 4)"),
    "duplicate key": (HEAD + ADD + "    constexprs: {BLOCK: [64]}\n"
                                   '    signature: {x_ptr: "*fp32"}  #<\n',
                      "duplicate key 'signature' in kernel entry (first at line 5)"),
    "empty kernels": ("package: pkg\ntargets: [sm_90]\nkernels: []  #<\n", "kernels is an empty list"),
    "empty targets": ("package: pkg\ntargets: []  #<\nkernels:\n" + ADD, "targets is an empty list"),
    "empty constexpr list": (HEAD + ADD + "    constexprs:\n      BLOCK: []  #<\n",
                             "constexprs.BLOCK is an empty list"),
    "empty num_warps": (HEAD + ADD + "    constexprs: {BLOCK: [64]}\n    num_warps: []  #<\n",
                        "num_warps is an empty list"),
    "empty specializations": (HEAD + ADD + "    specializations: []  #<\n", "specializations is an empty list"),
    "signature is a list": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature: [x_ptr]  #<\n",
                            "signature must be a mapping, got a list"),
    "kernels is a mapping": ("package: pkg\ntargets: [sm_90]\nkernels:\n  add: 1  #<\n",
                             "kernels must be a list, got a mapping"),
    "manifest is a list": ("- package: pkg  #<\n", "the manifest must be a mapping, got a list"),
    "num_warps is a number": (HEAD + ADD + "    constexprs: {BLOCK: [64]}\n    num_warps: 4  #<\n",
                              "num_warps must be a list, got int 4"),
    "num_warps not a power of two": (HEAD + ADD + "    constexprs: {BLOCK: [64]}\n    num_warps: [3]  #<\n",
                                     "num_warps must be a power of two from 1 to 32, got int 3"),
    "constexpr value is a mapping": (HEAD + ADD + "    constexprs:\n      BLOCK:\n        - {a: 1}  #<\n",
                                     "the value of 'BLOCK' must be a single value, got a mapping"),
    "constexpr value is null": (HEAD + ADD + "    constexprs:\n      BLOCK: [~]  #<\n",
                                "the value of constexpr 'BLOCK' must be a number, a boolean or a string, "
                                "got nothing (null)"),
    "YAML syntax error": ("package: pkg\ntargets: [sm_90\nkernels: []  #<\n", "invalid YAML:"),
}

EXTRA_FILES = {
    "kernels/bad.py": "import mytriton as triton\nimport no_such_dependency_xyz\n",
    "kernels/syntax.py": "def fn(:\n    pass\n",
}


def marked_line(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.rstrip().endswith("#<"))


@pytest.mark.parametrize("name", list(CASES))
def test_manifest_error_names_file_line_and_problem(tmp_path, name):
    text, fragment = CASES[name]
    path = write_project(tmp_path, text)
    for relative, content in EXTRA_FILES.items():
        (tmp_path / relative).write_text(content)
    with pytest.raises(ManifestError) as info:
        load_manifest(str(path))
    message = str(info.value)
    assert message.startswith(f"{path}:{marked_line(text)}: "), message
    assert fragment in message, message
    assert "Traceback" not in message


def test_empty_and_missing_manifest_name_the_file(tmp_path):
    path = write_project(tmp_path, "# nothing here\n")
    with pytest.raises(ManifestError, match=rf"^{path}: the manifest is empty$"):
        load_manifest(str(path))
    with pytest.raises(ManifestError, match=r"nope\.yaml: cannot read manifest: No such file or directory"):
        load_manifest(str(tmp_path / "nope.yaml"))


def test_valid_manifest_expands_the_product_in_parameter_order(tmp_path):
    path = write_project(tmp_path, HEAD + """\
  - kernel: kernels/k.py:scale_kernel
    signature: {x_ptr: "*fp32:16", out_ptr: "*fp32", n: i32, alpha: fp32}
    constexprs:
      EVEN: [true, false]
      BLOCK: [64, 2048]
    num_warps: [4, 8]
  - kernel: kernels/k.py:add_kernel
    signature: {x_ptr: "*fp32:16", y_ptr: "*fp32:16", out_ptr: "*fp32:16", n: i32}
    specializations:
      - {BLOCK: 128}
      - {BLOCK: 1024, num_warps: 8}
""")
    manifest = load_manifest(str(path))
    assert manifest.package == "pkg" and manifest.targets == ("sm_90",)
    scale, add = manifest.kernels
    assert scale.params == (("x_ptr", "*fp32:16"), ("out_ptr", "*fp32"), ("n", "i32"), ("alpha", "fp32"))
    assert scale.constexpr_names == ("BLOCK", "EVEN")
    assert [s.id for s in scale.specializations] == [
        "BLOCK64_EVENTrue_w4", "BLOCK64_EVENTrue_w8", "BLOCK64_EVENFalse_w4", "BLOCK64_EVENFalse_w8",
        "BLOCK2048_EVENTrue_w4", "BLOCK2048_EVENTrue_w8", "BLOCK2048_EVENFalse_w4", "BLOCK2048_EVENFalse_w8"]
    assert scale.specializations[0].label == "BLOCK=64 EVEN=True w4"
    assert [(s.id, s.constexprs, s.num_warps) for s in add.specializations] == [
        ("BLOCK128_w4", (("BLOCK", 128),), 4), ("BLOCK1024_w8", (("BLOCK", 1024),), 8)]


def test_targets_are_sorted_oldest_first_and_deduplicated(tmp_path):
    path = write_project(tmp_path, "package: pkg\ntargets: [sm_90, sm_80, sm_90]\nkernels:\n" + ADD
                         + "    constexprs: {BLOCK: [64]}\n")
    assert load_manifest(str(path)).targets == ("sm_80", "sm_90")


def test_spec_ids_stay_unique_and_file_name_safe(tmp_path):
    kernels = KERNELS + '''

@triton.jit
def odd_kernel(x_ptr, A: tl.constexpr, B: tl.constexpr):
    pass
'''
    path = write_project(tmp_path, HEAD + """\
  - kernel: kernels/k.py:odd_kernel
    signature: {x_ptr: "*fp32"}
    specializations:
      - {A: -1.5, B: "a/b"}
      - {A: 0.5, B: "x y"}
      - {A: "0.5", B: "x y"}
""", kernels=kernels)
    ids = [s.id for s in load_manifest(str(path)).kernels[0].specializations]
    assert ids[0] == "Am1p5_Ba_b_w4"
    assert len(set(ids)) == 3 and all(c.isalnum() or c == "_" for i in ids for c in i)


def test_cli_reports_manifest_errors_with_exit_status_2(tmp_path):
    write_project(tmp_path, CASES["misspelled kernel key"][0])
    result = run_cli(["m.yaml", "--out", "out"], cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("mytriton-build: m.yaml:5: unknown key 'singature' in kernel entry"), \
        result.stderr
    assert_no_traceback(result.stderr)
    assert not (tmp_path / "out" / "pkg").exists()


def test_cli_usage_errors_exit_2(tmp_path):
    write_project(tmp_path, HEAD + ADD + "    constexprs: {BLOCK: [64]}\n")
    for args, fragment in [
        ([], "the following arguments are required: MANIFEST"),
        (["m.yaml", "-j", "0"], "expected a positive number of jobs"),
        (["m.yaml", "--target", "sm_91"], "--target: unknown target 'sm_91'"),
        (["m.yaml", "--target", "sm_70"], "--target: NVRTC cannot compile for sm_70"),
        (["m.yaml", "--target", "sm_80", "sm_90"], "sm_90: no such manifest (for several targets repeat"),
        (["m.yaml", "missing.yaml"], "missing.yaml: cannot read manifest"),
    ]:
        result = run_cli(args, cwd=tmp_path)
        assert result.returncode == 2, (args, result.stderr)
        assert fragment in result.stderr, (args, result.stderr)
        assert_no_traceback(result.stderr)


def test_no_targets_anywhere_is_a_manifest_error(tmp_path):
    write_project(tmp_path, "package: pkg\nkernels:\n" + ADD + "    constexprs: {BLOCK: [64]}\n")
    result = run_cli(["m.yaml"], cwd=tmp_path)
    assert result.returncode == 2
    assert "m.yaml: no targets: add 'targets: [sm_90]' to the manifest or pass --target sm_90" in result.stderr


def test_two_manifests_cannot_build_the_same_package(tmp_path):
    text = HEAD + ADD + "    constexprs: {BLOCK: [64]}\n"
    write_project(tmp_path, text, name="a.yaml")
    write_project(tmp_path, text, name="b.yaml")
    result = run_cli(["a.yaml", "b.yaml"], cwd=tmp_path)
    assert result.returncode == 2
    assert "b.yaml:1: package 'pkg' is also built by a.yaml" in result.stderr

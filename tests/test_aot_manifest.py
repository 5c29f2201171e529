"""Manifest validation: every error names the manifest file and the line."""
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
                              "unknown key 'extra' in the manifest (expected one of: package, version, targets, kernels)"),
    "misspelled kernel key": (HEAD + "  - kernel: kernels/k.py:add_kernel\n"
                                     "    singature: {x_ptr: i32}  #<\n",
                              "unknown key 'singature' in kernel entry (expected one of: kernel, signature, "
                              "constexprs, specializations, num_warps, num_stages, autotune, specialize); did you mean 'signature'?"),
    "misspelled top-level key": ("package: pkg\ntarget: [sm_90]  #<\nkernels:\n" + ADD,
                                 "unknown key 'target' in the manifest (expected one of: package, version, "
                                 "targets, kernels); did you mean 'targets'?"),
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
    "descriptor type": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature:\n"
                               '      x_ptr: "tensordesc<fp32[64]>"  #<\n',
                        "parameter 'x_ptr': type 'tensordesc<fp32[64]>': tensor-descriptor parameters are taken "
                        "by the JIT"),
    "misspelled type": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature:\n"
                               '      x_ptr: "*float32:16"  #<\n',
                        "unknown type '*float32:16'",
                        "did you mean '*fp32:16'?"),
    "suffix on a float": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature:\n"
                                 '      x_ptr: "*fp32"\n      y_ptr: "*fp32"\n      out_ptr: "*fp32"\n'
                                 '      n: "fp32:16"  #<\n',
                          "':16' applies only to pointers and integer scalars"),
    "odd alignment": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature:\n"
                             '      x_ptr: "*fp32:24"  #<\n',
                      "alignment must be a power of two, got 24"),
    "absurd alignment": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature:\n"
                                '      x_ptr: "*fp32:1267650600228229401496703205376"  #<\n',
                         "alignment 126765060022... is more than a pointer can promise (at most 4096)"),
    "alignment above a page": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature:\n"
                                      '      x_ptr: "*fp32:8192"  #<\n',
                               "alignment 8192 is more than a pointer can promise (at most 4096)"),
    "divisibility above a page": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature:\n"
                                         '      x_ptr: "*fp32:16"\n      y_ptr: "*fp32:16"\n'
                                         '      out_ptr: "*fp32:16"\n      n: "i32:65536"  #<\n',
                                  "alignment 65536 is more than a pointer can promise"),
    "type not a string": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature:\n"
                                 "      x_ptr: 16  #<\n",
                          "the type of 'x_ptr' must be a type string"),
    "unquoted pointer type": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature:\n"
                                     "      x_ptr: *fp32  #<\n",
                              'quote them, e.g. "*fp32:16"'),
    "unknown constexpr": (HEAD + ADD + "    constexprs:\n      BLCK: [64]  #<\n",
                          "unknown constexpr 'BLCK': not a tl.constexpr parameter of add_kernel (expected: BLOCK); "
                          "did you mean 'BLOCK'?"),
    "misspelled parameter": (HEAD + "  - kernel: kernels/k.py:add_kernel\n    signature:\n"
                                    '      x_pt: "*fp32"  #<\n',
                             "unknown parameter 'x_pt' in signature: add_kernel has no such parameter "
                             "(runtime parameters: x_ptr, y_ptr, out_ptr, n); did you mean 'x_ptr'?"),
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
                                        "add_kernel (expected: BLOCK, num_warps, num_stages)"),
    "duplicate specialization": (HEAD + ADD + "    specializations:\n      - {BLOCK: 64}\n"
                                              "      - {BLOCK: 64, num_warps: 4}  #<\n",
                                 "duplicate specialization BLOCK=64 w4 (first at line 7"),
    "specializations apart only in num_stages": (
        HEAD + ADD + "    specializations:\n      - {BLOCK: 64, num_stages: 2}\n      - {BLOCK: 64, num_stages: 3}  #<\n",
        "duplicate specialization BLOCK=64 w4 (first at line 7; num_stages does not tell specializations "
        "apart at launch)"),
    "bad num_stages": (HEAD + ADD + "    constexprs: {BLOCK: [64]}\n    num_stages: 0  #<\n",
                       "num_stages must be a positive integer (the shared-memory buffers of a loop's pipelined "
                       "dot operands), got int 0"),
    "num_stages list": (HEAD + ADD + "    specializations:\n      - {BLOCK: 64, num_stages: [3]}  #<\n",
                        "num_stages must be"),
    "duplicate product value": (HEAD + ADD + "    constexprs:\n      BLOCK: [64, 64]  #<\n",
                                "duplicate value 64 in constexprs.BLOCK"),
    "duplicate num_warps": (HEAD + ADD + "    constexprs: {BLOCK: [64]}\n    num_warps: [4, 4]  #<\n",
                            "duplicate value 4 in num_warps"),
    "both constexprs and specializations": (HEAD + ADD + "    constexprs: {BLOCK: [64]}\n"
                                                         "    specializations:  #<\n      - {BLOCK: 64}\n",
                                            "either 'constexprs' (a product) or 'specializations'"),
    "package with a path": ('package: "../evil"  #<\ntargets: [sm_90]\nkernels:\n' + ADD,
                            "package '../evil' is not an ASCII Python identifier"),
    "package with a dash": ("package: my-kernels  #<\ntargets: [sm_90]\nkernels:\n" + ADD,
                            "package 'my-kernels' is not an ASCII Python identifier"),
    "package is a keyword": ("package: class  #<\ntargets: [sm_90]\nkernels:\n" + ADD,
                             "package 'class' is a Python keyword"),
    "package not ASCII": ("package: café  #<\ntargets: [sm_90]\nkernels:\n" + ADD,
                          "package 'café' is not an ASCII Python identifier"),
    **{f"package shadows {name}": (f"package: {name}  #<\ntargets: [sm_90]\nkernels:\n" + ADD,
                                   f"package '{name}' would shadow the module of that name once installed")
       for name in ("json", "os", "site", "mytriton", "cuda", "numpy", "yaml", "setuptools", "Json")},
    "package replaces a distribution": ("package: cuda_bindings  #<\ntargets: [sm_90]\nkernels:\n" + ADD,
                                        "package 'cuda_bindings' is the name of a distribution that `pip "
                                        "install` would replace"),
    "version not PEP 440": ("package: pkg\nversion: one.two  #<\ntargets: [sm_90]\nkernels:\n" + ADD,
                            "version 'one.two' is not a PEP 440 version"),
    "version is a list": ("package: pkg\nversion: [1, 2]  #<\ntargets: [sm_90]\nkernels:\n" + ADD,
                          "version must be a version string such as \"1.2.0\", got a list"),
    "version is empty": ("package: pkg\nversion:  #<\ntargets: [sm_90]\nkernels:\n" + ADD,
                         "version must be a version string"),
    "kernel named like a keyword": (HEAD + "  - kernel: kernels/kw.py:class  #<\n    signature: {}\n",
                                    "kernel name 'class' is a Python keyword: the generated loader cannot "
                                    "define it"),
    "kernel named like a dunder": (HEAD + "  - kernel: kernels/kw.py:__all__  #<\n    signature: {}\n",
                                   "a kernel cannot be named '__all__'"),
    "non-ASCII parameter name": (HEAD + "  - kernel: kernels/uni.py:uni_kernel  #<\n    signature: {}\n",
                                 "parameter 'x_ptré' of uni_kernel is not an ASCII Python identifier"),
    "kernel file outside the manifest folder": (HEAD + "  - kernel: ../outside.py:add_kernel  #<\n"
                                                       "    signature: {}\n",
                                                "kernel file '../outside.py' is outside the manifest's folder"),
    "absolute kernel path": (HEAD + "  - kernel: /usr/lib/python3/x.py:add_kernel  #<\n    signature: {}\n",
                             "kernel file '/usr/lib/python3/x.py' is outside the manifest's folder"),
    "kernel file is binary": (HEAD + "  - kernel: kernels/binary.so:fn  #<\n    signature: {}\n",
                              "cannot import 'kernels/binary.so': SyntaxError: source code string cannot "
                              "contain null bytes"),
    "kernel file is not UTF-8": (HEAD + "  - kernel: kernels/latin1.py:fn  #<\n    signature: {}\n",
                                 "cannot import 'kernels/latin1.py': SyntaxError:"),
    "bad YAML int tag": (HEAD + ADD + "    constexprs: {BLOCK: [64]}\n    num_warps: [!!int abc]  #<\n",
                         "invalid value for num_warps: tag:yaml.org,2002:int cannot hold 'abc'"),
    "bad YAML float tag in a message": (HEAD + ADD + "    constexprs: {BLOCK: [64]}\n"
                                                     "    num_warps: !!float abc  #<\n",
                                        "num_warps must be a list, got a value tagged tag:yaml.org,2002:float"),
    "deeply nested YAML": ("package: pkg\nkernels:\n" + "  " * 3 + "- " * 70 + "x  #<\n",
                           "invalid YAML: the YAML is nested more than 64 levels deep"),
    "deeply nested flow YAML": ("package: pkg\nkernels: " + "[" * 5000 + "]" * 5000 + "  #<\n",
                                "invalid YAML: the YAML is nested more than 64 levels deep"),
    "NUL in the manifest": ("package: pkg\n\x00  #<\n", "the character U+0000 is not allowed"),
    "too many specializations": (HEAD + "  - kernel: kernels/k.py:scale_kernel\n"
                                        '    signature: {x_ptr: "*fp32", out_ptr: "*fp32", n: i32, alpha: fp32}\n'
                                        "    constexprs:  #<\n"
                                        f"      BLOCK: {list(range(1, 1001))}\n"
                                        f"      EVEN: {list(range(1, 1001))}\n",
                                 "the manifest expands to more than 4096 specializations (1000000 so far, "
                                 "counting this entry): list fewer values, or raise the limit with "
                                 "--max-specializations N"),
    "too many specializations over several entries": (
        HEAD + ADD + f"    constexprs: {{BLOCK: {list(range(1, 4001))}}}\n"
        + "  - kernel: kernels/k.py:scale_kernel\n"
          '    signature: {x_ptr: "*fp32", out_ptr: "*fp32", n: i32, alpha: fp32}\n'
          "    specializations:\n"
        + "".join(f"      - {{BLOCK: {i}, EVEN: 1}}\n" for i in range(96))
        + "      - {BLOCK: 96, EVEN: 1}  #<\n",
        "the manifest expands to more than 4096 specializations (4097 so far"),
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
    "kernels/binary.so": b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)),
    "kernels/latin1.py": "x = 'caf\xe9'\n".encode("latin-1"),
    # A kernel reachable only under a keyword (set through globals()); before the check, its loader
    # was a SyntaxError on import.
    "kernels/kw.py": KERNELS + 'globals()["class"] = add_kernel\nglobals()["__all__"] = ["add_kernel"]\n',
    "kernels/uni.py": "import mytriton as triton\n\n@triton.jit\ndef uni_kernel(x_ptré):\n    pass\n",
}


def marked_line(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.rstrip().endswith("#<"))


@pytest.mark.parametrize("name", list(CASES))
def test_manifest_error_names_file_line_and_problem(tmp_path, name):
    text, *fragments = CASES[name]
    path = write_project(tmp_path, text)
    for relative, content in EXTRA_FILES.items():
        if isinstance(content, bytes):
            (tmp_path / relative).write_bytes(content)
        else:
            (tmp_path / relative).write_text(content)
    with pytest.raises(ManifestError) as info:
        load_manifest(str(path))
    message = str(info.value)
    assert message.startswith(f"{path}:{marked_line(text)}: "), message
    for fragment in fragments:
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
    assert {s.num_stages for s in scale.specializations + add.specializations} == {None}


def test_num_stages_is_a_build_option_of_an_entry_or_a_specialization(tmp_path):
    path = write_project(tmp_path, HEAD + ADD + (
        "    constexprs: {BLOCK: [64, 128]}\n"
        "    num_stages: 4\n"
        "  - kernel: kernels/k.py:scale_kernel\n"
        '    signature: {x_ptr: "*fp32:16", out_ptr: "*fp32", n: i32, alpha: fp32}\n'
        "    specializations:\n"
        "      - {BLOCK: 256, EVEN: true}\n"
        "      - {BLOCK: 512, EVEN: true, num_stages: 2}\n"
        "    num_stages: 3\n"))
    product, explicit = load_manifest(str(path)).kernels
    assert [(s.id, s.num_stages, s.label) for s in product.specializations] == [
        ("BLOCK64_w4", 4, "BLOCK=64 w4 s4"), ("BLOCK128_w4", 4, "BLOCK=128 w4 s4")]
    assert [(s.id, s.num_stages) for s in explicit.specializations] == [("BLOCK256_EVENTrue_w4", 3),
                                                                     ("BLOCK512_EVENTrue_w4", 2)]


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

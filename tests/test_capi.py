"""The C API (``mytriton-build --emit-c``) on the CPU: what the header declares, that header and
source compile as strict C11 (and the header as C++), escaping of user text, exact constants,
determinism, errors."""
from __future__ import annotations

import math
import re
import shutil
import struct
import subprocess

import pytest

from mytriton.aot import AotError, build_packages, capi
from test_aot_support import KERNELS, tree_bytes, write_project

C_KERNELS = KERNELS + '''

@triton.jit
def odd_kernel(x_ptr, int, flag, h, gx, MODE: tl.constexpr, SCALE: tl.constexpr, ENABLE: tl.constexpr):
    offs = tl.arange(0, 64)
    x = tl.load(x_ptr + offs)
    if MODE == "double":
        x = x * 2.0
    if ENABLE:
        x = x + SCALE
    tl.store(x_ptr + offs, x + int + h.to(tl.float32) + flag.to(tl.float32) + gx)
'''

MANIFEST = '''\
package: capkg
targets: [sm_80, sm_90]
kernels:
  - kernel: kernels/k.py:add_kernel
    signature: {x_ptr: "*fp32:16", y_ptr: "*fp32:16", out_ptr: "*fp32:16", n: i32}
    specializations:
      - {BLOCK: 64, num_warps: 2}
      - {BLOCK: 256}
      - {BLOCK: 256, num_warps: 8}
  - kernel: kernels/k.py:scale_kernel
    signature: {x_ptr: "*fp32", out_ptr: "*fp32", n: "i32:16", alpha: fp32}
    constexprs: {BLOCK: [128], EVEN: [true, false]}
  - kernel: kernels/k.py:odd_kernel
    signature: {x_ptr: "*fp32:16", int: i64, flag: i1, h: fp16, gx: "i32:1"}
    specializations:
      - {MODE: "double", SCALE: 0.1, ENABLE: true}
      - {MODE: "x\\"*/\\n\\\\", SCALE: -2.5e-300, ENABLE: false}
'''


def cuda_include() -> str:
    import nvidia.cu13
    return f"{nvidia.cu13.__path__[0]}/include"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("capi")
    path = write_project(folder, MANIFEST, C_KERNELS)
    build_packages([str(path)], out_dir=str(folder / "out"), jobs=2, echo=lambda line: None,
                   notify=lambda line: None, emit_c=True)
    return folder / "out" / "capkg"


def test_header_declares_one_function_per_specialization_and_a_dispatcher(built):
    header = (built / "c" / "capkg.h").read_text()
    declared = re.findall(r"^CUresult (\w+)\((.*)\);$", header, re.M)
    grid = "CUstream stream, unsigned gx, unsigned gy, unsigned gz"
    scale = f"{grid}, CUdeviceptr p_x_ptr, CUdeviceptr p_out_ptr, int32_t p_n, float p_alpha"
    add = f"{grid}, CUdeviceptr p_x_ptr, CUdeviceptr p_y_ptr, CUdeviceptr p_out_ptr, int32_t p_n"
    odd = f"{grid}, CUdeviceptr p_x_ptr, int64_t p_int, bool p_flag, uint16_t p_h, int32_t p_gx"
    assert declared == [
        ("capkg_load", "void"), ("capkg_unload", "void"),
        ("capkg_add_kernel_BLOCK64_w2", add), ("capkg_add_kernel_BLOCK256_w4", add),
        ("capkg_add_kernel_BLOCK256_w8", add), ("capkg_add_kernel", f"{add}, int64_t p_BLOCK, int num_warps"),
        ("capkg_scale_kernel_BLOCK128_EVENTrue_w4", scale), ("capkg_scale_kernel_BLOCK128_EVENFalse_w4", scale),
        ("capkg_scale_kernel", f"{scale}, int64_t p_BLOCK, bool p_EVEN, int num_warps"),
        ("capkg_odd_kernel_MODEdouble_SCALE0p1_ENABLETrue_w4", odd),
        (declared[10][0], odd),
        ("capkg_odd_kernel", f"{odd}, const char *p_MODE, size_t len_MODE, double p_SCALE, bool p_ENABLE, "
                             "int num_warps"),
    ]
    assert declared[10][0].startswith("capkg_odd_kernel_MODEx")


def test_source_checks_promises_and_dispatches_on_exact_constants(built):
    source = (built / "c" / "capkg.c").read_text()
    assert "if (p_n % 16 != 0)\n        return CUDA_ERROR_INVALID_VALUE;    // promised 16-divisible" in source
    assert "if (p_gx != 1)\n        return CUDA_ERROR_INVALID_VALUE;    // built as 1" in source
    assert "void *params[] = { &p_x_ptr, &p_int, &p_flag, &p_h };" in source      # (p_gx is built in, not passed)
    assert ('len_MODE == 6 && p_MODE != NULL && memcmp(p_MODE, "double", 6) == 0 && '
            'mt_double_bits(p_SCALE) == UINT64_C(0x3fb999999999999a) /* 0.1 */ && p_ENABLE == true') in source
    assert (r'len_MODE == 6 && p_MODE != NULL && memcmp(p_MODE, "x\"*/\012\\", 6) == 0 && '
            r'mt_double_bits(p_SCALE) == UINT64_C(0x81bac9a7b3b7302f) /* -2.5e-300 */ && p_ENABLE == false') in source
    assert [struct.pack(">d", v).hex() for v in (0.1, -2.5e-300)] == ["3fb999999999999a", "81bac9a7b3b7302f"]
    # the string constexpr with a newline and */ is a safe one-line comment
    assert '// odd_kernel MODE=x"*/\\n\\x5c SCALE=-2.5e-300 ENABLE=False w4\n' in source
    images = re.findall(r"mt_image_(\d+_\d+)\[(\d+)\] = \{\n((?:    [0-9,]+\n)+)\};", source)
    assert [name for name, _, _ in images] == ["0_0", "0_1", "0_2", "1_0", "1_1", "2_0", "2_1"]
    for name, size, body in images:
        data = bytes(int(b) for b in body.replace("\n", "").replace(" ", "").rstrip(",").split(","))
        assert len(data) == int(size)
        assert data[:4] == b"\x50\xed\x55\xba", name      # the fatbin magic


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (CI installs gcc)")
def test_c_api_compiles_as_strict_c11_and_the_header_as_cpp(built, tmp_path):
    c = built / "c"
    result = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I", cuda_include(),
                             "-c", str(c / "capkg.c"), "-o", str(tmp_path / "capkg.o")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    symbols = subprocess.run(["nm", "--defined-only", "-g", str(tmp_path / "capkg.o")], capture_output=True,
                             text=True).stdout
    exported = sorted(line.split()[-1] for line in symbols.splitlines())
    assert all(name.startswith("capkg_") for name in exported) and len(exported) == 17, exported
    # (each specialization whose signature leaves a promise out says when its specialized variant runs)
    assert [name for name in exported if name.endswith("_specialized")] == [
        "capkg_add_kernel_BLOCK256_w4_specialized", "capkg_add_kernel_BLOCK256_w8_specialized",
        "capkg_add_kernel_BLOCK64_w2_specialized", "capkg_scale_kernel_BLOCK128_EVENFalse_w4_specialized",
        "capkg_scale_kernel_BLOCK128_EVENTrue_w4_specialized"]
    if shutil.which("c++"):
        result = subprocess.run(["c++", "-std=c++17", "-Wall", "-Werror", "-fsyntax-only", "-x", "c++", "-I",
                                 cuda_include(), str(c / "capkg.h")], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr


def test_emit_c_is_deterministic(built, tmp_path):
    path = write_project(tmp_path, MANIFEST, C_KERNELS)
    build_packages([str(path)], out_dir=str(tmp_path / "out"), jobs=1, echo=lambda line: None,
                   notify=lambda line: None, emit_c=True)
    assert tree_bytes(tmp_path / "out" / "capkg") == tree_bytes(built)


@pytest.mark.parametrize("value, ctype, literal", [
    (True, "bool", "true"), (7, "int64_t", "INT64_C(7)"), (-2**63, "int64_t", "INT64_MIN"),
    (0.5, "double", "0x1.0000000000000p-1"), (math.inf, "double", "INFINITY"), (-math.inf, "double", "-INFINITY"),
    (math.nan, "double", "NAN"), ("a\tb\u00e9", "const char *", '"a\\011b\\303\\251"'),
])
def test_constants_are_exact(value, ctype, literal):
    assert capi.c_constant(value) == (ctype, literal)


def test_c_errors():
    with pytest.raises(AotError, match="does not fit a C int64_t"):
        capi.c_constant(2**63)
    with pytest.raises(AotError, match=r"the constexpr value None \(NoneType\) has no C type"):
        capi.c_constant(None)
    assert [capi.c_param(n) for n in ["int", "int_", "x", "_y"]] == ["p_int", "p_int_", "p_x", "p__y"]


def test_emit_c_without_nvfatbin_is_a_clear_error(monkeypatch, tmp_path):
    import builtins
    real = builtins.__import__

    def no_nvfatbin(name, *args, **kwargs):
        if name == "cuda.bindings" and args[2] and "nvfatbin" in args[2]:
            raise ImportError("libnvfatbin.so.13: cannot open shared object file")
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_nvfatbin)
    with pytest.raises(AotError, match=r"--emit-c needs nvFatbin \(pip install 'cuda-toolkit\[nvfatbin\]==13.0.\*'\): "
                                       "libnvfatbin.so.13"):
        capi.fatbin({"sm_90": b"x"}, ("sm_90", b"y"), "k")


STUBS = r'''
#include <cuda.h>
/* The driver calls of the generated C, as stubs: this test runs the tuned choice, not kernels. */
CUresult CUDAAPI cuCtxGetCurrent(CUcontext *c) { *c = NULL; return CUDA_ERROR_NOT_INITIALIZED; }
CUresult CUDAAPI cuModuleLoadData(CUmodule *m, const void *image) { (void)m; (void)image; return CUDA_ERROR_NOT_INITIALIZED; }
CUresult CUDAAPI cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) { (void)f; (void)m; (void)name; return CUDA_ERROR_NOT_INITIALIZED; }
CUresult CUDAAPI cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) { (void)f; (void)a; (void)v; return CUDA_ERROR_NOT_INITIALIZED; }
CUresult CUDAAPI cuModuleUnload(CUmodule m) { (void)m; return CUDA_ERROR_NOT_INITIALIZED; }
CUresult CUDAAPI cuCtxPushCurrent(CUcontext c) { (void)c; return CUDA_ERROR_NOT_INITIALIZED; }
CUresult CUDAAPI cuCtxPopCurrent(CUcontext *c) { (void)c; return CUDA_ERROR_NOT_INITIALIZED; }
CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                unsigned bz, unsigned shared, CUstream s, void **params, void **extra)
{ (void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared; (void)s; (void)params; (void)extra;
  return CUDA_ERROR_NOT_INITIALIZED; }
'''

CHOOSER = r'''
#include "tuned.h"
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const tuned_add_kernel_config *c = tuned_add_kernel_best((int32_t)atol(argv[i]));
        printf("%s %d %lld\n", c->id, c->num_warps, (long long)c->p_BLOCK);
    }
    /* a config launches through its specialization; no current context here */
    return tuned_add_kernel_launch_config(&tuned_add_kernel_configs[1], NULL, 1, 1, 1, 0, 0, 0, 1) ==
           CUDA_ERROR_NOT_INITIALIZED && tuned_add_kernel_launch_config(NULL, NULL, 1, 1, 1, 0, 0, 0, 1) ==
           CUDA_ERROR_INVALID_VALUE ? 0 : 3;
}
'''


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (CI installs gcc)")
def test_c_tuned_choice_is_the_python_loaders(tmp_path):
    """The C API's <kernel>_best() picks what the Python loader's best() picks, for exact, nearby
    and far key values (the tuning recorded as in test_autotune_build)."""
    import json
    from test_autotune_build import RECORD, TUNED
    path = write_project(tmp_path, TUNED)
    (tmp_path / "rec.json").write_text(json.dumps(RECORD))
    build_packages([str(path)], out_dir=str(tmp_path / "out"), jobs=1, echo=lambda line: None,
                   notify=lambda line: None, emit_c=True, tune_from=[str(tmp_path / "rec.json")])
    c = tmp_path / "out" / "tuned" / "c"
    (tmp_path / "stubs.c").write_text(STUBS)
    (tmp_path / "main.c").write_text(CHOOSER)
    built = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", str(c), "-I", cuda_include(),
                            str(tmp_path / "main.c"), str(c / "tuned.c"), str(tmp_path / "stubs.c"), "-lm",
                            "-o", str(tmp_path / "choose")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    values = [0, 1, 999, 1000, 1001, 31622, 31623, 10**6, 2**31 - 1, -5]
    ran = subprocess.run([str(tmp_path / "choose"), *map(str, values)], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    from mytriton.aot import load_manifest, tuning
    from mytriton.runtime.driver import KernelFamily
    entry = load_manifest(str(path)).kernels[0]
    specs = [{"id": cfg["id"], "constexprs": cfg["constexprs"], "num_warps": cfg["num_warps"]}
             for cfg in RECORD["kernels"]["add_kernel"]["configs"]]
    fam = KernelFamily("add_kernel", list(entry.params), ["BLOCK"], specs, tuning=tuning.dispatch_table(entry, RECORD))
    python = [f"{(s := fam.best(n=v))['id']} {s['num_warps']} {s['constexprs']['BLOCK']}" for v in values]
    assert ran.stdout.splitlines() == python
    assert python[3] == "BLOCK64_w1 1 64" and python[7] == "BLOCK256_w2 2 256"

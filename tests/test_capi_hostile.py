"""The C API (``mytriton-build --emit-c``) against hostile user text: kernel, parameter and constexpr
names that are C's, the driver API's or the generated code's own identifiers, string and
floating-point constexprs that C's ``strcmp`` and ``==`` cannot tell apart, and public names that
would redeclare an identifier of the headers. The generated C is compiled with stub driver
functions and run on the CPU, so what is checked is what a launch does."""
from __future__ import annotations

import re
import shutil
import struct
import subprocess

import pytest

from mytriton.aot import AotError, build_packages, capi, load_manifest
from test_aot_support import KERNELS, run_cli, write_project
from test_capi import cuda_include

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (CI installs gcc)")

HOSTILE_KERNELS = KERNELS + '''

@triton.jit
def guarded(x_ptr, CUDA_SUCCESS):
    offs = tl.arange(0, 64)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + CUDA_SUCCESS)


@triton.jit
def hostile(x_ptr, CUDA_SUCCESS, err, function, params, int, size_t, NULL, memcpy, cuLaunchKernel, _x, x, p_x, gx,
            made_maps, len_S, bool, INT64_C, CUstream, first, S: tl.constexpr, memcmp: tl.constexpr,
            NAN: tl.constexpr, num_warps: tl.constexpr, gy: tl.constexpr, UINT64_C: tl.constexpr,
            config: tl.constexpr, isnan: tl.constexpr):
    offs = tl.arange(0, 64)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + CUDA_SUCCESS + x + p_x + _x)


@triton.jit
def tuned_hostile(x_ptr, n, int: tl.constexpr, NULL: tl.constexpr):
    offs = tl.arange(0, 64)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + n)


@triton.jit
def x(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)


@triton.jit
def image_x(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 2)


@triton.jit
def moded(x_ptr, MODE: tl.constexpr):
    offs = tl.arange(0, 64)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 3)


@triton.jit
def scaled(x_ptr, SCALE: tl.constexpr):
    offs = tl.arange(0, 64)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 4)


@triton.jit
def LAUNCH_PARAM_END(x_ptr):
    offs = tl.arange(0, 64)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 5)
'''

HOSTILE_PARAMS = ["CUDA_SUCCESS", "err", "function", "params", "int", "size_t", "NULL", "memcpy", "cuLaunchKernel",
                  "_x", "x", "p_x", "gx", "made_maps", "len_S", "bool", "INT64_C", "CUstream", "first"]
MANIFESTS = {
    "guard": '''\
package: guard
targets: [sm_90]
kernels:
  - kernel: kernels/k.py:guarded
    signature: {x_ptr: "*i32:16", CUDA_SUCCESS: i32}
''',
    "hpkg": '''\
package: hpkg
targets: [sm_90]
kernels:
  - kernel: kernels/k.py:hostile
    signature: {x_ptr: "*i32:16", %s}
    constexprs: {S: ["b\\0evil"], memcmp: [true], "NAN": [1], num_warps: [4], gy: [3], UINT64_C: [0.5],
                 config: [7], isnan: [-0.0]}
  - kernel: kernels/k.py:tuned_hostile
    signature: {x_ptr: "*i32:16", n: i32}
    autotune:
      key: [n]
      configs:
        - {int: 64, "NULL": "a", num_warps: 1}
        - {int: 128, "NULL": "b\\0", num_warps: 2}
      problems:
        - {n: 1000}
      inputs: kernels/k.py:not_a_kernel
''' % ", ".join(f'"{name}": i32' for name in HOSTILE_PARAMS),
    "images": '''\
package: images
targets: [sm_90]
kernels:
  - kernel: kernels/k.py:image_x
    signature: {x_ptr: "*i32:16"}
    constexprs: {BLOCK: [64]}
  - kernel: kernels/k.py:x
    signature: {x_ptr: "*i32:16"}
    constexprs: {BLOCK: [64]}
''',
    "consts": '''\
package: consts
targets: [sm_90]
kernels:
  - kernel: kernels/k.py:moded
    signature: {x_ptr: "*i32:16"}
    specializations:
      - {MODE: "b", num_warps: 1}
      - {MODE: "b\\0evil", num_warps: 2}
      - {MODE: "", num_warps: 4}
  - kernel: kernels/k.py:scaled
    signature: {x_ptr: "*i32:16"}
    specializations:
      - {SCALE: -0.0, num_warps: 1}
      - {SCALE: .nan, num_warps: 2}
      - {SCALE: 1.5, num_warps: 4}
''',
}

# The driver calls of the generated C, as stubs that succeed and record the launch: how many,
# the block's threads, the symbol loaded last, and the first stub_count arguments (stub_sizes bytes each).
STUBS = r'''
#include <cuda.h>
#include <stdio.h>
#include <string.h>
int stub_launches;
unsigned stub_threads;
char stub_symbol[64];
int stub_count;
const unsigned char *stub_sizes;
unsigned char stub_args[32][8];
CUresult CUDAAPI cuCtxGetCurrent(CUcontext *c) { *c = (CUcontext)(uintptr_t)0x1000; return CUDA_SUCCESS; }
CUresult CUDAAPI cuModuleLoadData(CUmodule *m, const void *image)
{ (void)image; *m = (CUmodule)(uintptr_t)0x2000; return CUDA_SUCCESS; }
CUresult CUDAAPI cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    (void)m;
    snprintf(stub_symbol, sizeof stub_symbol, "%s", name);
    *f = (CUfunction)(uintptr_t)0x3000;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v)
{ (void)f; (void)a; (void)v; return CUDA_SUCCESS; }
CUresult CUDAAPI cuModuleUnload(CUmodule m) { (void)m; return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxPushCurrent(CUcontext c) { (void)c; return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxPopCurrent(CUcontext *c) { (void)c; return CUDA_SUCCESS; }
CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                unsigned bz, unsigned shared, CUstream s, void **params, void **extra)
{
    (void)f; (void)gx; (void)gy; (void)gz; (void)by; (void)bz; (void)shared; (void)s; (void)extra;
    stub_launches++;
    stub_threads = bx;
    for (int i = 0; i < stub_count; i++)
        memcpy(stub_args[i], params[i], stub_sizes[i]);
    return CUDA_SUCCESS;
}
'''

STRICT = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    paths = [write_project(folder, text, HOSTILE_KERNELS, name=f"{name}.yaml") for name, text in MANIFESTS.items()]
    build_packages([str(p) for p in paths], out_dir=str(folder / "out"), jobs=2, echo=lambda line: None,
                   notify=lambda line: None, emit_c=True)
    return folder


def spec_ids(folder, package: str, kernel: str) -> list[str]:
    manifest = load_manifest(str(folder / f"{package}.yaml"))
    return [s.id for e in manifest.kernels if e.name == kernel for s in e.specializations]


def run_c(folder, package: str, main: str, tmp_path) -> list[str]:
    """Compile *main* with the package's C API and the stubs (strict C11), run it: its output lines."""
    c = folder / "out" / package / "c"
    (tmp_path / "stubs.c").write_text(STUBS)
    (tmp_path / "main.c").write_text(f'#include "{package}.h"\n#include <stdio.h>\n' + main)
    compiled = subprocess.run(["cc", *STRICT, "-I", str(c), "-I", cuda_include(), str(tmp_path / "main.c"),
                               str(c / f"{package}.c"), str(tmp_path / "stubs.c"), "-lm", "-o", str(tmp_path / "main")],
                              capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    ran = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return ran.stdout.splitlines()


STUB_DECLARATIONS = '''
extern int stub_launches, stub_count;
extern unsigned stub_threads;
extern char stub_symbol[64];
extern const unsigned char *stub_sizes;
extern unsigned char stub_args[32][8];
'''


# -- names ----------------------------------------------------------------------------------------

@needs_cc
def test_a_parameter_named_CUDA_SUCCESS_still_launches(built, tmp_path):
    (spec,) = spec_ids(built, "guard", "guarded")
    main = STUB_DECLARATIONS + '''
int main(void)
{
    static const unsigned char sizes[] = {8, 4};
    stub_sizes = sizes;
    stub_count = 2;
    int typed = guard_guarded_%s(NULL, 1, 1, 1, (CUdeviceptr)0x4000, 7);
    printf("%%d %%d %%llx %%d\\n", typed, stub_launches, *(unsigned long long *)stub_args[0], *(int *)stub_args[1]);
    int dispatched = guard_guarded(NULL, 1, 1, 1, (CUdeviceptr)0x5000, -3, 0);
    printf("%%d %%d %%llx %%d %%s\\n", dispatched, stub_launches, *(unsigned long long *)stub_args[0],
           *(int *)stub_args[1], stub_symbol);
    return 0;
}
''' % spec
    assert run_c(built, "guard", main, tmp_path) == ["0 1 4000 7", "0 2 5000 -3 k_guarded"]
    header = (built / "out" / "guard" / "c" / "guard.h").read_text()
    assert (f"CUresult guard_guarded_{spec}(CUstream stream, unsigned gx, unsigned gy, unsigned gz, "
            "CUdeviceptr p_x_ptr, int32_t p_CUDA_SUCCESS);") in header


@needs_cc
def test_hostile_names_compile_strictly_and_pass_their_arguments(built, tmp_path):
    c = built / "out" / "hpkg" / "c"
    header = (c / "hpkg.h").read_text()
    (spec,) = spec_ids(built, "hpkg", "hostile")
    args = ", ".join(f"int32_t p_{name}" for name in HOSTILE_PARAMS)
    assert (f"CUresult hpkg_hostile_{spec}(CUstream stream, unsigned gx, unsigned gy, unsigned gz, "
            f"CUdeviceptr p_x_ptr, {args});") in header
    assert (f"CUresult hpkg_hostile(CUstream stream, unsigned gx, unsigned gy, unsigned gz, CUdeviceptr p_x_ptr, "
            f"{args}, const char *p_S, size_t len_S, bool p_memcmp, int64_t p_NAN, int64_t p_num_warps, int64_t p_gy, "
            "double p_UINT64_C, int64_t p_config, double p_isnan, int num_warps);") in header
    assert "    const char *p_NULL;\n    size_t len_NULL;\n    int64_t p_int;\n" not in header  # (order: int, NULL)
    assert "    int64_t p_int;\n    const char *p_NULL;\n    size_t len_NULL;\n" in header
    assert "#ifndef MYTRITON_hpkg_H\n#define MYTRITON_hpkg_H\n" in header
    values = ", ".join(str(100 + i) for i in range(len(HOSTILE_PARAMS)))
    main = STUB_DECLARATIONS + '''
static void show(int result)
{
    printf("%%d %%d %%u %%llx", result, stub_launches, stub_threads, *(unsigned long long *)stub_args[0]);
    for (int i = 1; i < stub_count; i++)
        printf(" %%d", *(int *)stub_args[i]);
    printf("\\n");
}

int main(void)
{
    static unsigned char sizes[32] = {8};
    for (int i = 1; i < 32; i++)
        sizes[i] = 4;
    stub_sizes = sizes;
    stub_count = %d;
    show(hpkg_hostile_%s(NULL, 1, 1, 1, 0x4000, %s));
    show(hpkg_hostile(NULL, 1, 1, 1, 0x5000, %s, "b\\0evil", 6, true, 1, 4, 3, 0.5, 7, -0.0, 0));
    show(hpkg_hostile(NULL, 1, 1, 1, 0x5000, %s, "b\\0evil", 6, true, 1, 4, 3, 0.5, 7, 0.0, 0));
    const hpkg_tuned_hostile_config *config = hpkg_tuned_hostile_best(1000);
    printf("%%s %%lld %%d %%zu\\n", config->id, (long long)config->p_int, config->p_NULL[0], config->len_NULL);
    printf("%%d %%zu\\n", hpkg_tuned_hostile_configs[1].p_NULL[1], hpkg_tuned_hostile_configs[1].len_NULL);
    stub_count = 2;
    show(hpkg_tuned_hostile_launch_config(&hpkg_tuned_hostile_configs[1], NULL, 1, 1, 1, 0x6000, 9));
    return 0;
}
''' % (1 + len(HOSTILE_PARAMS), spec, values, values, values)
    passed = " ".join(str(100 + i) for i in range(len(HOSTILE_PARAMS)))
    assert run_c(built, "hpkg", main, tmp_path) == [
        f"0 1 128 4000 {passed}", f"0 2 128 5000 {passed}", f"500 2 128 5000 {passed}",   # (500: NOT_FOUND)
        "int64_NULLa_w1 64 97 1", "0 2", "0 3 64 6000 9"]
    if shutil.which("c++"):
        result = subprocess.run(["c++", "-std=c++17", "-Wall", "-Werror", "-fsyntax-only", "-x", "c++", "-I",
                                 cuda_include(), str(c / "hpkg.h")], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr


@needs_cc
def test_kernels_x_and_image_x_have_their_own_images(built, tmp_path):
    (spec,) = spec_ids(built, "images", "x")
    main = STUB_DECLARATIONS + '''
int main(void)
{
    stub_count = 0;
    printf("%%d %%s\\n", images_x(NULL, 1, 1, 1, 0x4000, 64, 0), stub_symbol);
    printf("%%d %%s\\n", images_image_x(NULL, 1, 1, 1, 0x4000, 64, 0), stub_symbol);
    printf("%%d %%s\\n", images_x_%s(NULL, 1, 1, 1, 0x4000), stub_symbol);
    printf("%%d %%d\\n", images_load(), images_unload());
    return 0;
}
''' % spec
    assert run_c(built, "images", main, tmp_path) == ["0 k_x", "0 k_image_x", "0 k_image_x", "0 0"]
    source = (built / "out" / "images" / "c" / "images.c").read_text()
    assert "mt_image_x" not in source and "static mt_kernel mt_spec_0_0 = {" in source


# -- constants ------------------------------------------------------------------------------------

@needs_cc
def test_string_constexprs_are_compared_by_length_and_bytes(built, tmp_path):
    header = (built / "out" / "consts" / "c" / "consts.h").read_text()
    assert ("CUresult consts_moded(CUstream stream, unsigned gx, unsigned gy, unsigned gz, CUdeviceptr p_x_ptr, "
            "const char *p_MODE, size_t len_MODE, int num_warps);") in header
    source = (built / "out" / "consts" / "c" / "consts.c").read_text()
    assert 'len_MODE == 6 && p_MODE != NULL && memcmp(p_MODE, "b\\000evil", 6) == 0' in source
    main = STUB_DECLARATIONS + '''
static void launch(const char *mode, size_t len)
{
    int before = stub_launches;
    int result = consts_moded(NULL, 1, 1, 1, 0x4000, mode, len, 0);
    printf("%d %u\\n", result, stub_launches > before ? stub_threads : 0);
}

int main(void)
{
    stub_count = 0;
    launch("b\\0evil", 6);
    launch("b", 1);
    launch("b\\0evil", 1);      /* the first byte only: "b" */
    launch("b\\0", 2);
    launch("b\\0evilx", 7);
    launch("", 0);
    launch(NULL, 0);
    launch(NULL, 6);
    launch("c", 1);
    return 0;
}
'''
    assert run_c(built, "consts", main, tmp_path) == [
        "0 64", "0 32", "0 32", "500 0", "500 0", "0 128", "0 128", "500 0", "500 0"]


@needs_cc
def test_float_constexprs_are_compared_by_their_bits(built, tmp_path):
    # (the manifest's .nan is the NaN PyYAML makes, -inf / inf: on x86 its sign bit is set)
    (scaled,) = [e for e in load_manifest(str(built / "consts.yaml")).kernels if e.name == "scaled"]
    nan_bits = struct.unpack("<Q", struct.pack("<d", scaled.specializations[1].constexprs[0][1]))[0]
    other_nan = nan_bits ^ (1 << 63)
    main = STUB_DECLARATIONS + '''
#include <string.h>
static void launch(double scale)
{
    int before = stub_launches;
    int result = consts_scaled(NULL, 1, 1, 1, 0x4000, scale, 0);
    printf("%%d %%u\\n", result, stub_launches > before ? stub_threads : 0);
}

static double from_bits(uint64_t bits)
{
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

int main(void)
{
    stub_count = 0;
    launch(-0.0);
    launch(0.0);
    launch(from_bits(UINT64_C(%#x)));
    launch(from_bits(UINT64_C(%#x)));
    launch(1.5);
    launch(1.5000000000000002);
    return 0;
}
''' % (nan_bits, other_nan)
    assert run_c(built, "consts", main, tmp_path) == ["0 32", "500 0", "0 64", "500 0", "0 128", "500 0"]
    source = (built / "out" / "consts" / "c" / "consts.c").read_text()
    assert "mt_double_bits(p_SCALE) == UINT64_C(0x8000000000000000) /* -0.0 */ && " in source
    assert f"mt_double_bits(p_SCALE) == UINT64_C({nan_bits:#018x}) /* nan */ && " in source
    assert "mt_double_bits(p_SCALE) == UINT64_C(0x3ff8000000000000) /* 1.5 */ && " in source


# -- public names ---------------------------------------------------------------------------------

def test_a_public_name_that_is_a_cuda_h_identifier_is_refused(tmp_path):
    manifest = '''\
package: CU
targets: [sm_90]
kernels:
  - kernel: kernels/k.py:LAUNCH_PARAM_END
    signature: {x_ptr: "*i32:16"}
'''
    write_project(tmp_path, manifest, HOSTILE_KERNELS)
    result = run_cli(["m.yaml", "--out", "out", "--emit-c", "--no-cache"], tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert ("mytriton-build: --emit-c: package CU, kernel LAUNCH_PARAM_END: its dispatcher CU_LAUNCH_PARAM_END would "
            "redeclare CU_LAUNCH_PARAM_END of cuda.h; rename the kernel or the package\n") in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "CU").exists()


@pytest.mark.parametrize("package, kernels, message", [
    ("int64", [("t", ["w4"], False)], "package int64, kernel t: its dispatcher int64_t would redeclare int64_t of the "
                                      "C standard headers; rename the kernel or the package"),
    ("INT64", [("C", ["w4"], False)], "its dispatcher INT64_C would redeclare INT64_C of the C standard headers"),
    ("memory", [("order_acquire", ["w4"], False)], "its dispatcher memory_order_acquire would redeclare "
                                                   "memory_order_acquire of the C standard headers"),
    ("atomic", [], "package atomic: its load() atomic_load would redeclare atomic_load of the C standard headers; "
                   "rename the package"),
    ("mt", [("function", ["w4"], False)], "package mt: its unload() mt_unload would redeclare mt_unload of the "
                                          "generated code; rename the package"),
    ("MYTRITON", [("MYTRITON_H", ["w4"], False)], "its dispatcher MYTRITON_MYTRITON_H would redeclare "
                                                  "MYTRITON_MYTRITON_H of the generated code"),
    ("num", [("warps", ["w4"], False)], "its dispatcher num_warps would redeclare num_warps of the generated code"),
    ("pkg", [("load", ["w4"], False)], "package pkg, kernel load: its dispatcher pkg_load is also the name of the "
                                       "package's load()"),
    ("pkg", [("a", ["b_w4"], False), ("a_b", ["w4"], False)],
     "package pkg, kernel a_b: its specialization w4's function pkg_a_b_w4 is also the name of kernel a's "
     "specialization b_w4's function"),
    ("pkg", [("a", ["w4"], True), ("a_config", ["w4"], False)],
     "package pkg, kernel a_config: its dispatcher pkg_a_config is also the name of kernel a's config type"),
    ("pkg", [("a", ["w4"], True), ("a_best", ["w4"], False)],
     "kernel a_best: its dispatcher pkg_a_best is also the name of kernel a's best()"),
    ("__x", [("k", ["w4"], False)], "package __x: its load() __x_load is reserved for the C implementation"),
    ("_X", [], "its load() _X_load is reserved for the C implementation"),
    ("pkg", [("k", ["w4); system(0"], False)], "kernel k: its specialization w4); system(0's function "
                                               "'pkg_k_w4); system(0' is not a C identifier"),
])
def test_public_names_that_clash_are_refused(package, kernels, message):
    with pytest.raises(AotError, match=re.escape(message)):
        capi.check_public_names(package, kernels)


def test_public_names_that_clash_with_nothing_pass():
    capi.check_public_names("pkg", [("add_kernel", ["BLOCK64_w4"], True), ("x", ["w4"], False)])


def test_parameter_names_are_mangled_into_their_own_namespaces():
    assert [capi.c_param(n) for n in ["x", "p_x", "_x", "CUDA_SUCCESS", "\u00e9"]] == [
        "p_x", "p_p_x", "p__x", "p_CUDA_SUCCESS", "px_0000e9"]
    assert [capi.c_length(n) for n in ["S", "len_S", "\u00e9"]] == ["len_S", "len_len_S", "lenx_0000e9"]

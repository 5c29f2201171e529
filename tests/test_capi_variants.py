"""The C API's specialized variants, run on the CPU against stub driver functions: a
specialization's function (and the dispatcher above it) launches its specialized variant exactly
where the arguments keep every promise of its signature, with the arguments it takes (less the
unit strides it compiled in), ``<spec>_specialized()`` agrees, a promise the manifest writes stays
CUDA_ERROR_INVALID_VALUE, and a variant that cannot load leaves the plain one."""
from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from mytriton.aot import build_packages
from test_aot_support import write_project

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (CI installs gcc)")

KERNELS = '''\
import mytriton as triton
import mytriton.language as tl


@triton.jit
def copy2d(src, dst, rows, cols, stride_r, stride_c, BR: tl.constexpr, BC: tl.constexpr):
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.arange(0, BC)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    x = tl.load(src + r[:, None] * stride_r + c[None, :] * stride_c, mask=mask)
    tl.store(dst + r[:, None] * cols + c[None, :], x, mask=mask)
'''

MANIFEST = '''\
package: cvar
targets: [sm_80]
kernels:
  - kernel: kernels/k.py:copy2d
    signature: {src: "*fp16", dst: "*fp16:16", rows: i32, cols: i32, stride_r: i32, stride_c: i32}
    constexprs: {BR: [16], BC: [64]}
'''

# Stubs of the driver calls the C API makes: one context, modules numbered in load order (the
# functions are their modules), launches recorded; a module whose number is in `refuse` fails to
# load (a variant whose image cannot run there).
STUBS = r'''
#include <cuda.h>
#include <string.h>
static int loaded, refuse;
CUfunction launched_function;
unsigned launched_shared;
long long launched_args[8];
int launched_count;
CUresult CUDAAPI cuCtxGetCurrent(CUcontext *c) { *c = (CUcontext)0x1; return CUDA_SUCCESS; }
CUresult CUDAAPI cuModuleLoadData(CUmodule *m, const void *image)
{ (void)image; if (++loaded == refuse) return CUDA_ERROR_NO_BINARY_FOR_GPU; *m = (CUmodule)(long)loaded; return CUDA_SUCCESS; }
CUresult CUDAAPI cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) { (void)name; *f = (CUfunction)m; return CUDA_SUCCESS; }
CUresult CUDAAPI cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) { (void)f; (void)a; (void)v; return CUDA_SUCCESS; }
CUresult CUDAAPI cuModuleUnload(CUmodule m) { (void)m; return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxPushCurrent(CUcontext c) { (void)c; return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxPopCurrent(CUcontext *c) { (void)c; return CUDA_SUCCESS; }
void stub_refuse(int module) { refuse = module; }
int stub_loaded(void) { return loaded; }
CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                unsigned bz, unsigned shared, CUstream s, void **params, void **extra)
{
    (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)s; (void)extra;
    launched_function = f;
    launched_shared = shared;
    /* the parameters' sizes: two pointers, then i32s (the variant takes one fewer) */
    launched_count = (long)f == 1 ? 6 : 5;
    for (int i = 0; i < launched_count; i++) {
        int32_t small;
        memcpy(i < 2 ? (void *)&launched_args[i] : (void *)&small, params[i], i < 2 ? 8 : 4);
        if (i >= 2)
            launched_args[i] = small;
    }
    return CUDA_SUCCESS;
}
'''

MAIN = r'''
#include "cvar.h"
#include <stdio.h>
#include <stdlib.h>
extern CUfunction launched_function;
extern long long launched_args[8];
extern int launched_count;
void stub_refuse(int module);
int stub_loaded(void);
int main(int argc, char **argv)
{
    if (argc > 1)
        stub_refuse(atoi(argv[1]));
    if (cvar_load() != CUDA_SUCCESS)        /* (module 1: the plain variant, 2: the specialized one) */
        return 2;
    unsigned long long src, dst;
    long long rows, cols, sr, sc;
    int dispatch = 0;
    while (scanf("%llu %llu %lld %lld %lld %lld", &src, &dst, &rows, &cols, &sr, &sc) == 6) {
        launched_function = NULL;
        CUresult err = (dispatch ^= 1)
            ? cvar_copy2d_BR16_BC64_w4(NULL, 1, 1, 1, src, dst, (int32_t)rows, (int32_t)cols, (int32_t)sr, (int32_t)sc)
            : cvar_copy2d(NULL, 1, 1, 1, src, dst, (int32_t)rows, (int32_t)cols, (int32_t)sr, (int32_t)sc, 16, 64, 0);
        printf("%d %ld %d", (int)err, (long)launched_function,
               (int)cvar_copy2d_BR16_BC64_w4_specialized(src, dst, (int32_t)rows, (int32_t)cols, (int32_t)sr, (int32_t)sc));
        for (int i = 0; launched_function && i < launched_count; i++)
            printf(" %lld", launched_args[i]);
        printf("\n");
    }
    printf("loaded %d\n", stub_loaded());
    return 0;
}
'''


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    from test_capi import cuda_include
    folder = tmp_path_factory.mktemp("capi_variants")
    path = write_project(folder, MANIFEST, KERNELS)
    build_packages([str(path)], out_dir=str(folder / "out"), jobs=1, echo=lambda line: None,
                   notify=lambda line: None, emit_c=True)
    c = folder / "out" / "cvar" / "c"
    (folder / "stubs.c").write_text(STUBS)
    (folder / "main.c").write_text(MAIN)
    built = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", str(c), "-I", cuda_include(),
                            str(folder / "main.c"), str(c / "cvar.c"), str(folder / "stubs.c"), "-lm",
                            "-o", str(folder / "run")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    return folder / "run", (c / "cvar.c").read_text()


def run(program, cases, refuse=0) -> list[str]:
    done = subprocess.run([str(program), str(refuse)], input="".join(" ".join(map(str, c)) + "\n" for c in cases),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def holds(src, dst, rows, cols, stride_r, stride_c) -> bool:
    """The specialized variant's promises (the analysis gives copy2d): src 16-byte aligned, cols and
    stride_r divisible by 16, stride_c equal to 1 (dst is promised by the manifest; rows bounds rows)."""
    return src % 16 == 0 and cols % 16 == 0 and stride_r % 16 == 0 and stride_c == 1


def test_the_generated_c_tests_the_variant_s_promises(program):
    source = program[1]
    assert "if (p_src % 16 == 0 && p_cols % 16 == 0 && p_stride_r % 16 == 0 && p_stride_c == 1) {" in source
    assert "void *twin_params[] = { &p_src, &p_dst, &p_rows, &p_cols, &p_stride_r };" in source


def test_each_launch_runs_the_variant_whose_promises_its_arguments_keep(program):
    rng = random.Random(7)
    cases = [(0x10000, 0x20000, 100, 64, 64, 1), (0x10002, 0x20000, 100, 64, 64, 1), (0x10000, 0x20000, 7, 64, 64, 1),
             (0x10000, 0x20000, 100, 64, 1, 64), (0x10000, 0x20000, 100, 60, 64, 1), (0x10000, 0x20000, 100, 64, 64, -1)]
    for _ in range(400):
        cases.append((0x10000 + rng.choice([0, 16, 32, 2, 6]), 0x20000 + 16 * rng.randrange(100),
                      rng.choice([1, 7, 16, 1000, -5]), rng.choice([16, 64, 4096, 17, 0, -16]),
                      rng.choice([16, 64, 4096, 1, 30, -32]), rng.choice([1, 1, 1, 2, 0, -1])))
    lines = run(program[0], cases)
    assert lines[-1] == "loaded 2"
    for case, line in zip(cases, lines):
        err, function, said, *args = line.split()
        assert err == "0", (case, line)
        want = holds(*case)
        assert (function, said) == (("2", "1") if want else ("1", "0")), (case, line)
        expected = list(case) if not want else list(case[:5])          # (the variant compiled stride_c in)
        assert [int(a) for a in args] == expected, (case, line)


def test_a_promise_the_manifest_writes_is_still_refused(program):
    err, function, said = run(program[0], [(0x10000, 0x20008, 100, 64, 64, 1)])[0].split()
    assert err == str(1) and function == "0" and said == "1"          # CUDA_ERROR_INVALID_VALUE, nothing launched


def test_a_variant_that_cannot_load_leaves_the_plain_one(program):
    """The second module (the variant's, loaded at the first launch that keeps its promises) fails
    to load: that launch and the next run the plain one, and the variant is not loaded again."""
    cases = [(0x10000, 0x20000, 100, 64, 64, 1)] * 3 + [(0x10002, 0x20000, 100, 64, 64, 1)]
    lines = run(program[0], cases, refuse=2)
    assert [line.split()[:3] for line in lines[:-1]] == [["0", "1", "1"]] * 3 + [["0", "1", "0"]]
    assert lines[-1] == "loaded 2"

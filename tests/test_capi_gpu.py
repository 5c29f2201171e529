"""The C API on the GPU: a C program built with the system C compiler against the generated
``c/<package>.h``/``.c`` launches the kernels (from several threads at first use, through the typed
functions and the dispatchers), gets the documented CUresults for bad calls, and computes the same
bits as the package's Python loader."""
from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mytriton.aot import build_packages
from mytriton.runtime import driver as runtime
from test_aot_support import KERNELS, env_with_repo, write_project
from test_capi import cuda_include

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not runtime.driver_available(), reason="needs an NVIDIA GPU and driver"),
              pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")]

MANIFEST = '''\
package: cpkg
targets: [sm_80, sm_90]
kernels:
  - kernel: kernels/k.py:add_kernel
    signature: {x_ptr: "*fp32:16", y_ptr: "*fp32:16", out_ptr: "*fp32:16", n: i32}
    specializations:
      - {BLOCK: 64, num_warps: 2}
      - {BLOCK: 256}
  - kernel: kernels/k.py:scale_kernel
    signature: {x_ptr: "*fp32", out_ptr: "*fp32", n: "i32:16", alpha: fp32}
    constexprs: {BLOCK: [128], EVEN: [true, false]}
'''

PROGRAM = r'''
#include "cpkg.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define N 1008
static CUcontext ctx;
static CUdeviceptr dx, dy, dout;
static CUresult results[8];

static void *first_launch(void *arg)
{
    int i = (int)(size_t)arg;
    cuCtxSetCurrent(ctx);
    results[i] = i % 2 ? cpkg_add_kernel(NULL, (N + 63) / 64, 1, 1, dx, dy, dout, N, 64, 0)
                       : cpkg_add_kernel_BLOCK64_w2(NULL, (N + 63) / 64, 1, 1, dx, dy, dout, N);
    return NULL;
}

static void print_out(const char *name)
{
    unsigned int bits[N];
    cuCtxSynchronize();
    cuMemcpyDtoH(bits, dout, sizeof bits);
    printf("\"%s\": [", name);
    for (int i = 0; i < N; i++)
        printf("%u%s", bits[i], i + 1 < N ? "," : "");
    printf("],\n");
}

int main(void)
{
    float x[N], y[N];
    for (int i = 0; i < N; i++) { x[i] = i * 0.25f; y[i] = 1000.0f - i * 0.5f; }
    CUdevice device;
    cuInit(0);
    printf("{\"no_context\": %d,\n", (int)cpkg_add_kernel_BLOCK64_w2(NULL, 1, 1, 1, 0, 0, 0, 0));
    cuDeviceGet(&device, 0);
    cuDevicePrimaryCtxRetain(&ctx, device);
    cuCtxSetCurrent(ctx);
    cuMemAlloc(&dx, sizeof x); cuMemAlloc(&dy, sizeof y); cuMemAlloc(&dout, sizeof x);
    cuMemcpyHtoD(dx, x, sizeof x); cuMemcpyHtoD(dy, y, sizeof y);

    pthread_t threads[8];
    for (int i = 0; i < 8; i++) pthread_create(&threads[i], NULL, first_launch, (void *)(size_t)i);
    for (int i = 0; i < 8; i++) pthread_join(threads[i], NULL);
    printf("\"threads\": [");
    for (int i = 0; i < 8; i++) printf("%d%s", (int)results[i], i < 7 ? "," : "],\n");
    print_out("add64");
    cuMemsetD32(dout, 0, N);
    printf("\"add256\": %d,\n", (int)cpkg_add_kernel(NULL, (N + 255) / 256, 1, 1, dx, dy, dout, N, 256, 4));
    print_out("add256_out");
    cuMemsetD32(dout, 0, N);
    printf("\"scale_even\": %d,\n", (int)cpkg_scale_kernel(NULL, (N + 127) / 128, 1, 1, dx, dout, N, 1.5f, 128, true, 0));
    print_out("scale_out");
    printf("\"not_built\": %d,\n", (int)cpkg_add_kernel(NULL, 1, 1, 1, dx, dy, dout, N, 999, 0));
    printf("\"wrong_warps\": %d,\n", (int)cpkg_add_kernel(NULL, 1, 1, 1, dx, dy, dout, N, 64, 8));
    printf("\"misaligned\": %d,\n", (int)cpkg_add_kernel_BLOCK256_w4(NULL, 1, 1, 1, dx + 4, dy, dout, N));
    printf("\"not_divisible\": %d,\n", (int)cpkg_scale_kernel_BLOCK128_EVENTrue_w4(NULL, 1, 1, 1, dx, dout, N - 1, 1.0f));
    printf("\"unload\": %d,\n", (int)cpkg_unload());
    printf("\"after_unload\": %d,\n", (int)cpkg_add_kernel_BLOCK256_w4(NULL, (N + 255) / 256, 1, 1, dx, dy, dout, N));
    printf("\"load\": %d,\n", (int)cpkg_load());
    printf("\"sync\": %d}\n", (int)cuCtxSynchronize());
    return 0;
}
'''

PYTHON_SIDE = """
import json, sys
import numpy as np
sys.path.insert(0, {folder!r})
import cpkg
N = 1008
x = cpkg.DeviceArray.from_numpy(np.arange(N, dtype=np.float32) * np.float32(0.25))
y = cpkg.DeviceArray.from_numpy(np.float32(1000) - np.arange(N, dtype=np.float32) * np.float32(0.5))
out = cpkg.DeviceArray((N,), "float32")
cpkg.add_kernel[(N + 63) // 64](x, y, out, N, BLOCK=64)
add = out.copy_to_host().view(np.uint32).tolist()
cpkg.scale_kernel[(N + 127) // 128](x, out, N, 1.5, BLOCK=128, EVEN=True)
print(json.dumps({{"add": add, "scale": out.copy_to_host().view(np.uint32).tolist()}}))
"""


def libcuda_path() -> str:
    """The driver library this process loads (to link the C program against it)."""
    ctypes.CDLL("libcuda.so.1")
    with open("/proc/self/maps") as maps:
        return next(line.split()[-1] for line in maps if "libcuda.so" in line)


def test_c_program_runs_and_matches_the_python_loader(tmp_path):
    path = write_project(tmp_path, MANIFEST, KERNELS)
    build_packages([str(path)], out_dir=str(tmp_path / "out"), jobs=2, echo=lambda line: None,
                   notify=lambda line: None, emit_c=True)
    c = tmp_path / "out" / "cpkg" / "c"
    (tmp_path / "main.c").write_text(PROGRAM)
    compiled = subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", "-O2", "-I", str(c), "-I", cuda_include(),
                               str(tmp_path / "main.c"), str(c / "cpkg.c"), libcuda_path(), "-lpthread", "-lm",
                               "-o", str(tmp_path / "main")], capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    ran = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    got = json.loads(ran.stdout)
    CUDA_SUCCESS, INVALID_VALUE, INVALID_CONTEXT, NOT_FOUND = 0, 1, 201, 500
    assert got["no_context"] == INVALID_CONTEXT
    assert got["threads"] == [CUDA_SUCCESS] * 8
    assert [got[k] for k in ("add256", "scale_even", "unload", "after_unload", "load", "sync")] == [CUDA_SUCCESS] * 6
    assert [got[k] for k in ("not_built", "wrong_warps")] == [NOT_FOUND] * 2
    assert [got[k] for k in ("misaligned", "not_divisible")] == [INVALID_VALUE] * 2

    x = np.arange(1008, dtype=np.float32) * np.float32(0.25)
    y = np.float32(1000) - np.arange(1008, dtype=np.float32) * np.float32(0.5)
    assert got["add64"] == got["add256_out"] == (x + y).view(np.uint32).tolist()
    assert got["scale_out"] == (x * np.float32(1.5)).view(np.uint32).tolist()
    loader = subprocess.run([sys.executable, "-c", textwrap.dedent(PYTHON_SIDE.format(folder=str(tmp_path / "out")))],
                            capture_output=True, text=True, timeout=120, env=env_with_repo())
    assert loader.returncode == 0, loader.stderr
    python = json.loads(loader.stdout.splitlines()[-1])
    assert python["add"] == got["add64"] and python["scale"] == got["scale_out"]

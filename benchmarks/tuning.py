"""Build-time tuning vs Triton's @autotune, on the fp16 GEMM of manifests/kernels/gemm.py (H200).

1. ``mytriton-build --tune benchmarks/manifests/gemm_tuned.yaml``: six configs timed on six problems
   (the build's wall time is reported).
2. Time to first result in a fresh process, for one shape and for all six problem shapes:
   the tuned package (import, load, launch), Triton's @autotune on the same six configs and key
   (it times every config again in every new process) with a cold and a warm Triton compile cache.
3. Steady state, in one process: TFLOP/s of the tuned dispatch, of the best single config (the one
   with the best geometric mean over the problems), of Triton's @autotune (tuned on each shape) and
   of cuBLAS (torch.matmul), on the problems and on shapes between them.

    python3 benchmarks/tuning.py [--out DIR] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import KERNELS, ROOT, L2Flusher, check, triton_source

MANIFEST = ROOT / "benchmarks" / "manifests" / "gemm_tuned.yaml"
PROBLEMS = [(4096, 4096, 4096), (1024, 1024, 1024), (8192, 8192, 1024), (2048, 2048, 8192), (128, 4096, 4096),
            (16, 8192, 8192)]
BETWEEN = [(2048, 4096, 4096), (512, 2048, 2048), (64, 8192, 4096), (4096, 4096, 1024), (256, 8192, 8192)]

# The code both fresh processes share: inputs made before the clock starts.
_SETUP = """
import sys, time, torch
shapes = {shapes!r}
inputs = []
for M, N, K in shapes:
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    inputs.append((a, b, torch.empty(M, N, device="cuda", dtype=torch.float16), M, N, K))
torch.cuda.synchronize()
def args(a, b, c, M, N, K):
    return (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
"""
_MYTRITON_FIRST = _SETUP + """
t0 = time.perf_counter()
sys.path.insert(0, {out!r})
import gemm_tuned
firsts = []
for a, b, c, M, N, K in inputs:
    gemm_tuned.matmul_kernel[lambda meta: (-(-M // meta["BLOCK_M"]) * -(-N // meta["BLOCK_N"]),)](*args(a, b, c, M, N, K))
    torch.cuda.synchronize()
    firsts.append(time.perf_counter() - t0)
print(firsts)
"""
_TRITON_FIRST = _SETUP + """
t0 = time.perf_counter()
import triton
sys.path.insert(0, {folder!r})
import triton_gemm
kernel = triton.autotune(configs=[triton.Config(dict(c["constexprs"]), num_warps=c["num_warps"],
                                                num_stages=c["num_stages"]) for c in {configs!r}],
                         key=["M", "N", "K"])(triton_gemm.matmul_kernel)
firsts = []
for a, b, c, M, N, K in inputs:
    kernel[lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)](*args(a, b, c, M, N, K))
    torch.cuda.synchronize()
    firsts.append(time.perf_counter() - t0)
print(firsts)
"""


def run(code: str, **env) -> list[float]:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    if result.returncode:
        raise RuntimeError(result.stdout + result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def tflops(M, N, K, ms):
    return 2 * M * N * K / ms / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="build folder (default: a temporary one)")
    parser.add_argument("--json", default=None, help="write the results here")
    opts = parser.parse_args()
    out = Path(opts.out or tempfile.mkdtemp())
    results = {}

    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mytriton.aot", "--allow-outside", "--tune", str(MANIFEST), "--out", str(out),
                    "-j", "8"], check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    results["build_and_tune_s"] = time.perf_counter() - start
    record = json.loads((out / "gemm_tuned" / "tuning.json").read_text())
    kernel = record["kernels"]["matmul_kernel"]
    configs = kernel["configs"]
    print(f"build + tune: {results['build_and_tune_s']:.1f} s ({len(configs)} configs x {len(kernel['problems'])} problems)")

    # -- 2. time to first result in a fresh process
    folder = Path(tempfile.mkdtemp())
    (folder / "triton_gemm.py").write_text(triton_source(KERNELS / "gemm.py"))
    triton_cache = tempfile.mkdtemp()
    first = {}
    for label, shapes in (("one shape (4096^3)", PROBLEMS[:1]), ("six shapes", PROBLEMS)):
        mt = run(_MYTRITON_FIRST.format(shapes=shapes, out=str(out)))
        cold = run(_TRITON_FIRST.format(shapes=shapes, folder=str(folder), configs=configs),
                   TRITON_CACHE_DIR=tempfile.mkdtemp())
        warm = run(_TRITON_FIRST.format(shapes=shapes, folder=str(folder), configs=configs),
                   TRITON_CACHE_DIR=triton_cache)
        warm = run(_TRITON_FIRST.format(shapes=shapes, folder=str(folder), configs=configs),
                   TRITON_CACHE_DIR=triton_cache)       # (the first run above filled this cache)
        first[label] = {"mytriton tuned package": mt[-1], "Triton @autotune, cold compile cache": cold[-1],
                        "Triton @autotune, warm compile cache": warm[-1]}
        print(f"time to first result, {label}: mytriton {mt[-1]:.3f} s; Triton @autotune {cold[-1]:.2f} s (cold "
              f"cache), {warm[-1]:.2f} s (warm cache)")
    results["first_result_s"] = first

    # -- 3. steady state
    import torch
    import triton
    sys.path.insert(0, str(out))
    sys.path.insert(0, str(folder))
    import gemm_tuned
    import triton_gemm
    from mytriton.aot.tuning import _gain_over_single
    _, single = _gain_over_single(kernel)
    single_cfg = configs[single]
    tuned_triton = triton.autotune(configs=[triton.Config(dict(c["constexprs"]), num_warps=c["num_warps"],
                                                          num_stages=c["num_stages"]) for c in configs],
                                   key=["M", "N", "K"])(triton_gemm.matmul_kernel)
    flusher = L2Flusher()
    rows = []
    print(f"\nsteady state, TFLOP/s (best single config: {single_cfg['id']})")
    print(f"{'M x N x K':>20} {'tuned':>8} {'single':>8} {'Triton':>8} {'cuBLAS':>8}  tuned config")
    for M, N, K in PROBLEMS + BETWEEN:
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16)
        c = torch.empty(M, N, device="cuda", dtype=torch.float16)
        args = (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))

        def grid(meta):
            return (-(-M // meta["BLOCK_M"]) * -(-N // meta["BLOCK_N"]),)
        want = a @ b

        def tuned():
            gemm_tuned.matmul_kernel[grid](*args)

        def one():
            gemm_tuned.matmul_kernel[grid](*args, **single_cfg["constexprs"], num_warps=single_cfg["num_warps"])

        def theirs():
            tuned_triton[grid](*args)
        for name, fn in (("tuned", tuned), ("single", one), ("Triton", theirs)):
            c.zero_()
            fn()
            check(f"{name} {M}x{N}x{K}", c.float(), want.float(), rtol=1e-2, atol=1e-1)
        times = {name: flusher.median_ms(fn) for name, fn in
                 (("tuned", tuned), ("single", one), ("Triton", theirs), ("cuBLAS", lambda: torch.matmul(a, b)))}
        row = {"shape": [M, N, K], "tflops": {k: tflops(M, N, K, v) for k, v in times.items()},
               "tuned_config": gemm_tuned.matmul_kernel.best(M=M, N=N, K=K)["id"],
               "problem": (M, N, K) in PROBLEMS}
        rows.append(row)
        t = row["tflops"]
        print(f"{f'{M}x{N}x{K}':>20} {t['tuned']:8.1f} {t['single']:8.1f} {t['Triton']:8.1f} {t['cuBLAS']:8.1f}  "
              f"{row['tuned_config']}{'' if row['problem'] else '  (between problems)'}")
    results["steady_state"] = rows
    results["best_single_config"] = single_cfg["id"]
    results["tuning"] = record
    if opts.json:
        Path(opts.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

"""The tutorial-style GEMM (manifests/kernels/wrapped_gemm.py: grouped order, ``% M`` / ``% N``
offsets) by the signature it is built with, next to Triton and cuBLAS, in one process.

    python3 benchmarks/gemm_signatures.py [--n 4096] [--base DIR] [--json FILE]

Rows, fp16 n^3 per configuration (TFLOP/s, CUDA-event medians, interleaved rounds):

  package, plain       a package built from a manifest of plain ``i32`` sizes and strides and
                       unaligned pointers (what users write): its launches run the specialized
                       variant the build makes (``aot/variants.py``)
  ... specialize: false  the same manifest without the variant: the kernel as written
  package, promised    the manifest with the promises Triton's JIT would make (``:16``, unit
                       strides ``:1``) written out
  base package, plain  ``--base DIR``: the plain manifest built by another mytriton tree (a copy
                       of an earlier version), for a before/after in the same run
  mytriton JIT         the kernel through mytriton's JIT (it specializes as Triton's does)
  triton JIT           the same source through Triton 3.6's JIT
  torch                torch.matmul (cuBLAS)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from common import KERNELS, ROOT, bench_all, cdiv, check, load_module, triton_module

CONFIGS = ((128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (128, 128, 32, 4, 4))
INTS = ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn")


def manifest(package: str, promised: bool, specialize: bool = True) -> str:
    ptr, size = ('"*fp16:16"', "i32:16") if promised else ('"*fp16"', "i32")
    types = {p: size for p in INTS}
    if promised:
        types.update(stride_ak="i32:1", stride_bn="i32:1", stride_cn="i32:1")
    sig = ", ".join([f"{p}: {ptr}" for p in ("a_ptr", "b_ptr", "c_ptr")] + [f"{p}: {t}" for p, t in types.items()])
    specs = "\n".join(f"      - {{BM: {bm}, BN: {bn}, BK: {bk}, GROUP: 8, num_warps: {w}, num_stages: {s}}}"
                      for bm, bn, bk, w, s in CONFIGS)
    return (f"package: {package}\ntargets: [sm_90a]\nkernels:\n  - kernel: {KERNELS / 'wrapped_gemm.py'}:wrapped_matmul\n"
            f"    signature: {{{sig}}}\n" + ("" if specialize else "    specialize: false\n")
            + f"    specializations:\n{specs}\n")


def build(folder: Path, package: str, promised: bool, tree: Path, specialize: bool = True) -> None:
    path = folder / f"{package}.yaml"
    path.write_text(manifest(package, promised, specialize))
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, "-m", "mytriton.aot", str(path), "--out", str(folder), "--allow-outside",
                    "--no-cache"], check=True, env=env, cwd=folder)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--base", type=Path, default=None, help="another mytriton tree to build the plain manifest with")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp())
    builds = {"package, plain": ("wg_plain", False, ROOT, True),
              "... specialize: false": ("wg_as_written", False, ROOT, False),
              "package, promised": ("wg_promised", True, ROOT, True)}
    if args.base:
        builds["base package, plain"] = ("wg_base_plain", False, args.base.resolve(), True)
    for package, promised, tree, specialize in builds.values():
        build(folder, package, promised, tree, specialize)   # (an earlier tree knows no specialize: key)
    sys.path.insert(0, str(folder))
    packages = {row: __import__(package) for row, (package, *_) in builds.items()}
    mt, tr = load_module(KERNELS / "wrapped_gemm.py", "mt_wrapped"), triton_module("wrapped_gemm.py")
    n = args.n
    a, b = (torch.randn(n, n, device="cuda", dtype=torch.float16) for _ in range(2))
    c = torch.empty(n, n, device="cuda", dtype=torch.float16)
    results = []
    for bm, bn, bk, w, s in CONFIGS:
        grid = (cdiv(n, bm) * cdiv(n, bn),)
        ce = dict(BM=bm, BN=bn, BK=bk, GROUP=8)

        def launch(impl, jit=False):
            extra = dict(num_warps=w, num_stages=s) if jit else dict(num_warps=w)
            return lambda i: impl.wrapped_matmul[grid](a, b, c, n, n, n, n, 1, n, 1, n, 1, **ce, **extra)
        fns = {row: launch(pkg) for row, pkg in packages.items()}
        fns["mytriton JIT"] = launch(mt, jit=True)
        fns["triton JIT"] = launch(tr, jit=True)
        fns["torch"] = lambda i: torch.matmul(a, b, out=c)
        want = a.float() @ b.float()
        for row, fn in fns.items():
            c.zero_()
            fn(0)
            check(row, c.float(), want, 2e-2, 1e-1)
        times = bench_all(fns, 1)
        config = f"{bm}x{bn}x{bk} w{w} s{s}"
        for row, ms in times.items():
            tflops = 2 * n**3 / (ms * 1e-3) / 1e12
            results.append({"config": config, "row": row, "ms": ms, "tflops": tflops})
            print(f"{config:<22} {row:<22} {tflops:8.1f} TFLOP/s  ({ms:.3f} ms)", flush=True)
    print(f"\n{torch.cuda.get_device_name()}, fp16 {n}^3")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

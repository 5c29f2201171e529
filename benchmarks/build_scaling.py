"""How a build scales: one manifest of a few hundred specializations (elementwise kernels over
block sizes, warps and two targets) built with -j 1, -j N, a local Dask cluster, and with a cold
and a warm shared cache; wall time, compiles per second and the time per compile.

    python3 benchmarks/build_scaling.py [--specs small|full] [--workers N]

Runs on the CPU (NVRTC only). Each build goes to a fresh output folder; every build but the
"warm cache" one has a cache of its own (cold)."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

MANIFEST = """\
package: scaling
targets: [sm_80, sm_90]
kernels:
  - kernel: {kernels}/elementwise.py:add_kernel
    signature: {{x_ptr: "*fp32:16", y_ptr: "*fp32:16", out_ptr: "*fp32:16", n: i32}}
    constexprs: {{BLOCK: {blocks}}}
    num_warps: {warps}
  - kernel: {kernels}/elementwise.py:axpby_kernel
    signature: {{x_ptr: "*fp32:16", y_ptr: "*fp32:16", out_ptr: "*fp32:16", a: fp32, b: fp32, n: i32}}
    constexprs: {{BLOCK: {blocks}}}
    num_warps: {warps}
  - kernel: {kernels}/elementwise.py:leaky_relu_kernel
    signature: {{x_ptr: "*fp32", out_ptr: "*fp32", n: i32, slope: fp32}}
    constexprs: {{BLOCK: {blocks}}}
    num_warps: {warps}
"""


def build(folder: Path, out: str, *args: str) -> tuple[float, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "mytriton.aot", "m.yaml", "--allow-outside", "--out", out, *args],
                            cwd=folder,
                            env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"build {args} failed:\n{result.stderr}")
    return seconds, result.stdout.strip().splitlines()[-1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--specs", choices=("small", "full"), default="full")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = p.parse_args()
    blocks = [64, 128, 256, 512, 1024, 2048, 4096, 8192] if args.specs == "full" else [64, 1024]
    warps = [1, 2, 4, 8, 16] if args.specs == "full" else [4]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "m.yaml").write_text(MANIFEST.format(kernels=REPO / "manifests" / "kernels", blocks=blocks,
                                                       warps=warps))
        compiles = 3 * len(blocks) * len(warps) * 2
        rows = []
        for label, out, extra in (
                ("-j 1, cold cache", "j1", ["-j", "1", "--cache", str(folder / "c1")]),
                (f"-j {args.workers}, cold cache", "jn", ["-j", str(args.workers), "--cache", str(folder / "c2")])):
            rows.append((label, *build(folder, out, *extra)))
        try:
            import distributed
            with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                          dashboard_address=None, host="127.0.0.1") as cluster:
                address = cluster.scheduler_address.removeprefix("tcp://")
                rows.append((f"Dask LocalCluster ({args.workers} workers), cold cache",
                             *build(folder, "dask", "--executor", f"dask://{address}", "--cache", str(folder / "c3"))))
        except ImportError:
            print("(Dask distributed is not installed: no Dask row)")
        rows.append(("-j 1, warm shared cache (another output folder)",
                     *build(folder, "warm", "-j", "1", "--cache", str(folder / "c1"))))
        print(f"{compiles} compiles ({compiles // 2} specializations x 2 targets), {os.cpu_count()} CPU cores")
        print("| build | wall s | compiles/s | ms per compile |")
        print("|---|---|---|---|")
        for label, seconds, _ in rows:
            print(f"| {label} | {seconds:.1f} | {compiles / seconds:.1f} | {1000 * seconds / compiles:.0f} |")
        same = all(_tree(folder / "j1" / "scaling") == _tree(folder / out / "scaling") for out in ("jn", "warm") +
                   (("dask",) if (folder / "dask").exists() else ()))
        print(f"packages byte-identical across the builds: {same}")


def _tree(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


if __name__ == "__main__":
    main()

"""CPU interpreters compared: mytriton's (numpy arrays) against Triton's (TRITON_INTERPRET=1, torch
CPU tensors), on the same kernel sources — manifests/kernels/matmul.py (the seed's runtime-K fp32
matmul, no tl.dot) and manifests/kernels/softmax.py — in one process.

    python benchmarks/interpreter_vs_triton.py            # 512×512×512 matmul, 4096×1024 softmax
    python benchmarks/interpreter_vs_triton.py --no-triton

Triton's kernels are the same files with ``import mytriton as triton`` / ``import mytriton.language
as tl`` read as ``import triton`` / ``import triton.language as tl``. Times are wall-clock seconds of
one launch on warm caches (the best of --repeat for mytriton; Triton's interpreter is run once at
full size, after a small warm-up launch, since one launch takes minutes).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")          # before triton is imported anywhere

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
KERNELS = ROOT / "manifests" / "kernels"

import mytriton  # noqa: E402


def load_module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def triton_modules(tmp: Path):
    """The kernel files re-read with Triton's imports; None when Triton or torch is unavailable."""
    try:
        import torch  # noqa: F401
        import triton  # noqa: F401
    except ImportError as e:
        return None, f"not available ({e})"
    out = {}
    for name in ("matmul", "softmax"):
        text = (KERNELS / f"{name}.py").read_text()
        text = text.replace("import mytriton.language as tl", "import triton.language as tl")
        text = text.replace("import mytriton as triton", "import triton")
        path = tmp / f"triton_{name}.py"
        path.write_text(text)
        out[name] = load_module(f"triton_{name}", path)
    return out, f"triton {triton.__version__}, torch {torch.__version__}"


def timed(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def matmul_problem(size: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = rng.standard_normal((size, size)).astype(np.float32)
    return a, b, (a.astype(np.float64) @ b)


def softmax_problem(rows: int, cols: int, seed: int = 0):
    x = np.random.default_rng(seed).standard_normal((rows, cols)).astype(np.float32)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return x, e / e.sum(axis=1, keepdims=True)


def run_matmul(kernel, a, b, c, tile, make=lambda x: x):
    M, K = a.shape
    N = b.shape[1]
    grid = (mytriton.cdiv(M, tile), mytriton.cdiv(N, tile))
    kernel[grid](make(a), make(b), c, M, N, K, BM=tile, BN=tile)


def run_softmax(kernel, x, y, make=lambda v: v):
    rows, cols = x.shape
    kernel[(rows,)](make(x), y, cols, BLOCK=mytriton.next_power_of_2(cols))


def bench(args):
    ours = {"matmul": load_module("mt_matmul", KERNELS / "matmul.py"),
            "softmax": load_module("mt_softmax", KERNELS / "softmax.py")}
    tmp = Path(tempfile.mkdtemp(prefix="mytriton-bench-"))
    theirs, triton_note = (None, "skipped (--no-triton)") if args.no_triton else triton_modules(tmp)
    rows = []

    # --- matmul ---------------------------------------------------------------------------------
    s, tile = args.matmul_size, args.tile
    a, b, ref = matmul_problem(s)
    small = matmul_problem(2 * tile)
    c = np.zeros((s, s), np.float32)
    run_matmul(ours["matmul"].matmul_kernel, small[0], small[1], np.zeros((2 * tile,) * 2, np.float32), tile)
    t_ours = timed(lambda: run_matmul(ours["matmul"].matmul_kernel, a, b, c, tile), args.repeat)
    err_ours = float(np.abs(c - ref).max())
    t_theirs = err_theirs = None
    if theirs:
        import torch
        tc = torch.zeros((2 * tile,) * 2)
        run_matmul(theirs["matmul"].matmul_kernel, small[0], small[1], tc, tile, torch.from_numpy)
        tc = torch.zeros((s, s))
        t_theirs = timed(lambda: run_matmul(theirs["matmul"].matmul_kernel, a, b, tc, tile, torch.from_numpy), 1)
        err_theirs = float(np.abs(tc.numpy() - ref).max())
    rows.append((f"matmul {s}x{s}x{s} fp32, runtime K, {tile}x{tile} tiles", t_ours, err_ours, t_theirs, err_theirs))

    # --- softmax --------------------------------------------------------------------------------
    r, n = args.softmax_rows, args.softmax_cols
    x, ref = softmax_problem(r, n)
    y = np.zeros_like(x)
    run_softmax(ours["softmax"].softmax_kernel, x[:4], y[:4])
    t_ours = timed(lambda: run_softmax(ours["softmax"].softmax_kernel, x, y), args.repeat)
    err_ours = float(np.abs(y - ref).max())
    t_theirs = err_theirs = None
    if theirs:
        import torch
        run_softmax(theirs["softmax"].softmax_kernel, x[:4], torch.zeros((4, n)), torch.from_numpy)
        ty = torch.zeros((r, n))
        t_theirs = timed(lambda: run_softmax(theirs["softmax"].softmax_kernel, x, ty, torch.from_numpy), 1)
        err_theirs = float(np.abs(ty.numpy() - ref).max())
    rows.append((f"softmax {r}x{n} fp32, one program per row", t_ours, err_ours, t_theirs, err_theirs))
    return rows, triton_note


def print_table(rows, triton_note):
    print(f"CPU interpreters, {os.cpu_count()} cores, numpy {np.__version__}; Triton: {triton_note}")
    head = ("kernel", "mytriton (s)", "max err", "Triton (s)", "max err", "speedup")
    table = [head]
    for name, t1, e1, t2, e2 in rows:
        table.append((name, f"{t1:.3f}", f"{e1:.1e}", "-" if t2 is None else f"{t2:.3f}",
                      "-" if e2 is None else f"{e2:.1e}", "-" if t2 is None else f"{t2 / t1:.1f}x"))
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for i, r in enumerate(table):
        print("  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--matmul-size", type=int, default=512)
    p.add_argument("--tile", type=int, default=64, help="BM = BN (a power of 2)")
    p.add_argument("--softmax-rows", type=int, default=4096)
    p.add_argument("--softmax-cols", type=int, default=1024)
    p.add_argument("--repeat", type=int, default=3, help="mytriton launches to take the best of")
    p.add_argument("--no-triton", action="store_true", help="time mytriton only")
    args = p.parse_args(argv)
    print_table(*bench(args))


if __name__ == "__main__":
    main()

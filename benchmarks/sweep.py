"""Configuration sweep: mytriton vs Triton on the same kernel source, over block sizes, num_warps
and the 16-byte alignment promise, in one process on one GPU.

Kernels (sources under manifests/kernels/, compiled by Triton with their imports swapped, as
benchmarks/bench.py does): vector add and axpby (BLOCK 16…4096), row softmax (one row per program,
BLOCK the next power of 2 of the row length, num_warps up to 16), the layer norm
forward (fp32, BLOCK 16…4096 columns per loop iteration), a looped row sum (BLOCK 16…4096), and the
seed's runtime-K matmul (BM, BN 16…128) — with num_warps 1, 2, 4, 8, each with and without the
alignment promise. With it (":16" in the table), both sides specialize as their JITs do: pointers
16-byte aligned, integers divisible by 16 marked so (mytriton: `*fp32:16` / `i32:16` in the
signature). Without it ("no :16"), no promise at all: mytriton gets plain `*fp32` / `i32`, Triton
`do_not_specialize` on every run-time parameter.

Every specialization is compiled up front in parallel worker processes: mytriton's through
`mytriton.compile` (NVRTC), then loaded by mytriton's runtime; Triton's through
`JITFunction.warmup` into Triton's on-disk cache, which the main process then hits. Each mytriton
result is checked against Triton's (allclose, outputs pre-filled with different garbage) before
timing; a mismatch or a failed mytriton compile is reported loudly and makes the exit status 1.
Times: median of CUDA-event times with the L2 flushed before each call (the method of
triton.testing.do_bench). ratio = Triton time / mytriton time: above 1, mytriton is faster.

    python3 benchmarks/sweep.py [--quick] [--out sweep.json] [--only add,softmax] [--match REGEX] [-j N]

Without torch, Triton or a GPU it says what is missing and exits 0 (after ``--help`` works).
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import re
import sys
import tempfile
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, L2Flusher, cdiv, load_module, write_triton_module  # noqa: E402

BLOCKS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
WARPS = (1, 2, 4, 8)
TILES = (16, 32, 64, 128)


@dataclass(frozen=True)
class Config:
    kernel: str
    constexprs: tuple          # ((name, value), ...)
    num_warps: int
    aligned: bool              # the 16-byte alignment / divisibility promise
    size: tuple                # the problem's dimensions

    def label(self) -> str:
        cx = " ".join(f"{k}={v}" for k, v in self.constexprs)
        return f"{cx} w{self.num_warps} {':16' if self.aligned else 'no :16'}"


@dataclass
class Problem:
    """One launch: fp32 buffers (name → shape; inputs standard normal), the run-time arguments in
    order (a buffer name or a number), the grid, the buffers the kernel writes, and the bytes moved
    (or flops) that GB/s (TFLOP/s) count."""
    buffers: dict
    args: tuple
    grid: tuple
    outputs: tuple
    amount: float


@dataclass(frozen=True)
class KernelDef:
    name: str
    file: str                  # relative to the repository root
    function: str
    unit: str                  # "GB/s" or "TFLOP/s"
    rtol: float
    atol: float
    configs: object            # (quick) -> list[Config]
    problem: object            # (Config) -> Problem


def _grid_1d(name, blocks, warps, size):
    return [Config(name, (("BLOCK", b),), w, a, size) for b in blocks for w in warps for a in (True, False)]


# --- the kernels ---------------------------------------------------------------------------------

def add_configs(quick):
    return _grid_1d("add", (1024,) if quick else BLOCKS, (4,) if quick else WARPS, (2**20 if quick else 2**24,))


def add_problem(c):
    (n,), block = c.size, dict(c.constexprs)["BLOCK"]
    return Problem({"x": (n,), "y": (n,), "out": (n,)}, ("x", "y", "out", n), (cdiv(n, block),), ("out",), 12 * n)


def axpby_configs(quick):
    return [replace(c, kernel="axpby") for c in add_configs(quick)]


def axpby_problem(c):
    (n,), block = c.size, dict(c.constexprs)["BLOCK"]
    return Problem({"x": (n,), "y": (n,), "out": (n,)}, ("x", "y", "out", 1.5, -0.25, n), (cdiv(n, block),),
                   ("out",), 12 * n)


def softmax_configs(quick):
    lengths = (1000,) if quick else (*BLOCKS, 1000, 3000)
    warps = (4,) if quick else (*WARPS, 16)
    elements = 2**20 if quick else 2**24
    return [Config("softmax", (("BLOCK", _next_pow2(n)),), w, a, (elements // _next_pow2(n), n))
            for n in lengths for w in warps for a in (True, False)]


def softmax_problem(c):
    rows, cols = c.size
    return Problem({"x": (rows, cols), "y": (rows, cols)}, ("x", "y", cols), (rows,), ("y",), 8 * rows * cols)


def layer_norm_configs(quick):
    size = (256, 4096) if quick else (4096, 4096)
    return [Config("layer_norm", (("BLOCK", b),), w, a, size)
            for b in ((1024,) if quick else BLOCKS) for w in ((4,) if quick else WARPS) for a in (True, False)]


def layer_norm_problem(c):
    rows, cols = c.size
    return Problem({"x": (rows, cols), "y": (rows, cols), "w": (cols,), "b": (cols,), "mean": (rows,),
                    "rstd": (rows,)},
                   ("x", "y", "w", "b", "mean", "rstd", cols, cols, 1e-5), (rows,), ("y", "mean", "rstd"),
                   8 * rows * cols)


def row_sum_configs(quick):
    size = (64, 65536) if quick else (256, 65536)
    return [Config("row_sum", (("BLOCK", b),), w, a, size)
            for b in ((1024,) if quick else BLOCKS) for w in ((4,) if quick else WARPS) for a in (True, False)]


def row_sum_problem(c):
    rows, cols = c.size
    return Problem({"x": (rows, cols), "out": (rows,)}, ("x", "out", cols), (rows,), ("out",), 4 * rows * cols)


def matmul_configs(quick):
    n = 512 if quick else 2048
    tiles = ((64, 64),) if quick else tuple((m, k) for m in TILES for k in TILES)
    return [Config("matmul", (("BM", bm), ("BN", bn)), w, a, (n, n, n))
            for bm, bn in tiles for w in ((4,) if quick else WARPS) for a in (True, False)]


def matmul_problem(c):
    m, n, k = c.size
    cx = dict(c.constexprs)
    return Problem({"a": (m, k), "b": (k, n), "c": (m, n)}, ("a", "b", "c", m, n, k),
                   (cdiv(m, cx["BM"]), cdiv(n, cx["BN"])), ("c",), 2 * m * n * k)


KERNELS = {k.name: k for k in (
    KernelDef("add", "manifests/kernels/elementwise.py", "add_kernel", "GB/s", 0, 0, add_configs, add_problem),
    KernelDef("axpby", "manifests/kernels/elementwise.py", "axpby_kernel", "GB/s", 1e-6, 1e-6, axpby_configs,
              axpby_problem),
    KernelDef("softmax", "manifests/kernels/softmax.py", "softmax_kernel", "GB/s", 1e-5, 1e-6, softmax_configs,
              softmax_problem),
    KernelDef("layer_norm", "manifests/kernels/rows.py", "layer_norm_fwd_kernel", "GB/s", 1e-4,
              1e-4, layer_norm_configs, layer_norm_problem),
    KernelDef("row_sum", "manifests/kernels/reductions.py", "row_sum_kernel", "GB/s", 1e-4, 1e-3, row_sum_configs,
              row_sum_problem),
    KernelDef("matmul", "manifests/kernels/matmul.py", "matmul_kernel", "TFLOP/s", 1e-4, 1e-3, matmul_configs,
              matmul_problem),
)}


def _next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def all_configs(quick: bool, only=(), match: str = "") -> list[Config]:
    """The configurations of the kernels ``only`` (all where empty) whose "kernel label" (as
    "matmul BM=16 BN=32 w8 :16") matches the regular expression ``match`` (re.search)."""
    return [c for k in KERNELS.values() if not only or k.name in only for c in k.configs(quick)
            if re.search(match, f"{c.kernel} {c.label()}")]


# --- specialization: what each side is promised ----------------------------------------------------

def runtime_params(kernel: KernelDef) -> list[str]:
    """The kernel's run-time parameter names (mytriton's view of the source)."""
    fn = getattr(_module(str(ROOT / kernel.file)), kernel.function)
    return [n for n in fn.arg_names if n not in fn.constexpr_names]


def mytriton_signature(names, problem: Problem, aligned: bool) -> dict:
    """What mytriton's JIT would pick for these arguments (torch allocations are 16-byte aligned),
    or no promise at all."""
    sig = {}
    for name, arg in zip(names, problem.args):
        if isinstance(arg, str):
            ty, promise = "*fp32", aligned
        elif isinstance(arg, float):
            ty, promise = "fp32", False
        else:
            ty, promise = "i32", aligned and arg % 16 == 0
        sig[name] = ty + ":16" if promise else ty
    return sig


def triton_variant(jit_fn, aligned: bool):
    """Triton's JIT function as it is (it specializes on alignment and divisibility), or a copy that
    specializes on nothing."""
    if aligned:
        return jit_fn
    import triton
    names = [p.name for p in jit_fn.params if not p.is_constexpr]
    return triton.jit(jit_fn.fn, do_not_specialize=names, do_not_specialize_on_alignment=names)


# --- compile workers (spawned processes) -----------------------------------------------------------

_MODULES: dict = {}


def _module(path: str):
    """The kernel file *path*, imported once per process (under the same name in every process)."""
    if path not in _MODULES:
        _MODULES[path] = load_module(Path(path), f"sweep_{Path(path).stem}")
    return _MODULES[path]


def mytriton_compile(path, function, signature, constexprs, num_warps, target):
    """mytriton's compile of ``function`` of the kernel file ``path`` (a CompiledKernel)."""
    import mytriton
    fn = getattr(_module(path), function)
    return mytriton.compile(fn, signature=signature, constexprs=constexprs, target=target, num_warps=num_warps)


def compile_mytriton(path, function, signature, constexprs, num_warps, target):
    """Worker: (cubin, shared bytes, symbol) or ("error", message)."""
    try:
        ck = mytriton_compile(path, function, signature, constexprs, num_warps, target)
        return ck.asm["cubin"], ck.metadata["shared"], ck.metadata["name"]
    except Exception as e:  # noqa: BLE001 — reported per configuration
        return "error", f"{type(e).__name__}: {e}"


def compile_triton(path, function, aligned, args, constexprs, num_warps):
    """Worker: compile into Triton's cache (the main process's launch then loads it); None or an
    error message."""
    try:
        import torch
        fn = triton_variant(getattr(_module(path), function), aligned)
        warm = [torch.float32 if isinstance(a, str) else a for a in args]
        fn.warmup(*warm, grid=(1,), num_warps=num_warps, **constexprs)
        return None
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"


# --- the sweep ---------------------------------------------------------------------------------------

@dataclass
class Row:
    config: Config
    unit: str
    amount: float
    status: str = "ok"
    errors: list = field(default_factory=list)
    mytriton_ms: float | None = None
    triton_ms: float | None = None

    def as_json(self):
        c = self.config
        out = {"kernel": c.kernel, "constexprs": dict(c.constexprs), "num_warps": c.num_warps,
               "aligned": c.aligned, "size": list(c.size), "unit": self.unit, "status": self.status,
               "errors": self.errors, "mytriton_ms": self.mytriton_ms, "triton_ms": self.triton_ms}
        for who in ("mytriton", "triton"):
            out[who] = self.rate(who)
        out["ratio"] = self.ratio()
        return out

    def rate(self, who):
        ms = getattr(self, who + "_ms")
        if ms is None:
            return None
        return self.amount / (ms * 1e-3) / (1e9 if self.unit == "GB/s" else 1e12)

    def ratio(self):
        if self.mytriton_ms and self.triton_ms:
            return self.triton_ms / self.mytriton_ms
        return None


def compile_all(configs, problems, jobs, target, triton_files):
    """Compile every configuration on both sides in parallel; return {config: (kernel, error)} for
    mytriton and {config: error} for Triton."""
    from mytriton.runtime import driver
    mt_jobs, tr_jobs = {}, {}
    ctx = multiprocessing.get_context("spawn")       # (workers start without this process's CUDA state)
    # the largest tiles compile longest: start them first
    order = sorted(configs, key=lambda c: -math.prod(v for _, v in c.constexprs) / c.num_warps)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        for c in order:
            k, p = KERNELS[c.kernel], problems[c]
            sig = mytriton_signature(runtime_params(k), p, c.aligned)
            mt_jobs[c] = (sig, pool.submit(compile_mytriton, str(ROOT / k.file), k.function, sig,
                                           dict(c.constexprs), c.num_warps, target))
            tr_jobs[c] = pool.submit(compile_triton, str(triton_files[k.file]), k.function, c.aligned, p.args,
                                     dict(c.constexprs), c.num_warps)
        mt, tr = {}, {}
        for c in configs:
            sig, fut = mt_jobs[c]
            result = _outcome(fut, ("error", "the compile worker died"))
            tr[c] = _outcome(tr_jobs[c], "the compile worker died")
            if result[0] == "error":
                mt[c] = (None, result[1])
            else:
                cubin, shared, symbol = result
                kernel = driver.Kernel(KERNELS[c.kernel].function, list(sig.items()), c.num_warps, shared,
                                       {target: cubin}, symbol=symbol)
                mt[c] = (kernel, None)
    return mt, tr


def _outcome(future, if_died):
    """A worker's result; *if_died* where the worker process itself died (a crash in a compiler)."""
    try:
        return future.result()
    except BrokenProcessPool:
        return if_died


class Buffers:
    """Inputs per (kernel, size), made once; outputs too (refilled before each check)."""

    def __init__(self, torch):
        self.torch = torch
        self.cache = {}

    def get(self, config: Config, problem: Problem):
        key = (config.kernel, config.size)
        if key not in self.cache:
            g = self.torch.Generator(device="cuda").manual_seed(0)
            self.cache.clear()                 # one problem's buffers at a time (configs come grouped)
            self.cache[key] = {name: self.torch.randn(shape, device="cuda", generator=g)
                               for name, shape in problem.buffers.items()}
        return self.cache[key]


def run_config(row, problem, mt_kernel, tr_fn, buffers, flusher, torch):
    c, k = row.config, KERNELS[row.config.kernel]
    bufs = buffers.get(c, problem)
    args = [bufs[a] if isinstance(a, str) else a for a in problem.args]
    cx = dict(c.constexprs)

    def run_mt():
        mt_kernel.launch(problem.grid, args)

    def run_tr():
        tr_fn[problem.grid](*args, num_warps=c.num_warps, **cx)

    # check first: outputs pre-filled with different garbage, so an element one side leaves
    # unwritten cannot pass
    want = None
    if tr_fn is not None:
        for o in problem.outputs:
            bufs[o].fill_(float("nan"))
        try:
            run_tr()
            torch.cuda.synchronize()
            want = [bufs[o].clone() for o in problem.outputs]
        except Exception as e:  # noqa: BLE001 — Triton's failure is reported, not ours
            row.status = "triton launch failed"
            row.errors.append(f"Triton: {type(e).__name__}: {e}")
            tr_fn = None
    for o in problem.outputs:
        bufs[o].fill_(-777.0)
    run_mt()
    torch.cuda.synchronize()
    if want is not None:
        for o, w in zip(problem.outputs, want):
            got = bufs[o]
            if not torch.allclose(got, w, rtol=k.rtol, atol=k.atol, equal_nan=True):
                bad = ~torch.isclose(got, w, rtol=k.rtol, atol=k.atol, equal_nan=True)
                i = int(bad.flatten().nonzero()[0])
                row.status = "MISMATCH"
                row.errors.append(f"output '{o}': {int(bad.sum())} of {got.numel()} elements differ from "
                                  f"Triton's, first at flat index {i}: mytriton {got.flatten()[i].item()!r}, "
                                  f"Triton {w.flatten()[i].item()!r}")
    row.mytriton_ms = flusher.median_ms(run_mt)
    if tr_fn is not None:
        row.triton_ms = flusher.median_ms(run_tr)


def print_table(rows):
    print(f"\n{'kernel':11s} {'config':28s} {'size':>18s} {'mytriton us':>12s} {'triton us':>10s} "
          f"{'ratio':>6s} {'mytriton':>9s} {'triton':>9s} unit")
    for r in rows:
        ms = lambda v: f"{v * 1e3:12.1f}" if v is not None else f"{'-':>12s}"  # noqa: E731
        rate = lambda v: f"{v:9.1f}" if v is not None else f"{'-':>9s}"  # noqa: E731
        ratio = r.ratio()
        print(f"{r.config.kernel:11s} {r.config.label():28s} {'x'.join(map(str, r.config.size)):>18s} "
              f"{ms(r.mytriton_ms)} {ms(r.triton_ms)[2:]} {(f'{ratio:6.3f}' if ratio else '     -')} "
              f"{rate(r.rate('mytriton'))} {rate(r.rate('triton'))} {r.unit}"
              + ("" if r.status == "ok" else f"  <-- {r.status}"))


def print_summary(rows, worst: int):
    rated = [r for r in rows if r.ratio()]
    print("\nper kernel (ratio = Triton time / mytriton time; > 1: mytriton faster):")
    for name in dict.fromkeys(r.config.kernel for r in rows):
        rs = [r.ratio() for r in rated if r.config.kernel == name]
        if rs:
            geo = math.exp(sum(map(math.log, rs)) / len(rs))
            best_mt = max(r.rate("mytriton") for r in rated if r.config.kernel == name)
            best_tr = max(r.rate("triton") for r in rated if r.config.kernel == name)
            unit = KERNELS[name].unit
            print(f"  {name:11s} {len(rs):4d} configs  geomean {geo:6.3f}  min {min(rs):6.3f}  max {max(rs):6.3f}"
                  f"  best {best_mt:9.1f} vs {best_tr:9.1f} {unit}")
    print(f"\nworst {min(worst, len(rated))} ratios:")
    for r in sorted(rated, key=Row.ratio)[:worst]:
        print(f"  {r.ratio():6.3f}  {r.config.kernel:11s} {r.config.label():28s} "
              f"mytriton {r.mytriton_ms * 1e3:9.1f} us  Triton {r.triton_ms * 1e3:9.1f} us")


def missing_requirements() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    try:
        import triton  # noqa: F401
    except ImportError:
        return "triton is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU"
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "sweep.json"),
                    help="where to write the JSON results (default: $OUT/sweep.json or ./sweep.json)")
    ap.add_argument("--quick", action="store_true", help="a few configurations and small sizes (smoke test)")
    ap.add_argument("--only", default="", help=f"comma-separated kernels of: {', '.join(KERNELS)}")
    ap.add_argument("--match", default="", metavar="REGEX",
                    help="only the configurations whose 'kernel label' matches (re.search), e.g. "
                         "'matmul BM=16 BN=(16|32) w[48] :16'")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="compile processes")
    ap.add_argument("--worst", type=int, default=15, help="how many of the worst ratios to list")
    args = ap.parse_args(argv)
    only = tuple(x for x in args.only.split(",") if x)
    unknown = [x for x in only if x not in KERNELS]
    if unknown:
        ap.error(f"unknown kernel(s) {', '.join(unknown)}; choose from {', '.join(KERNELS)}")
    configs = all_configs(args.quick, only, args.match)
    if not configs:
        ap.error(f"no configuration matches --match {args.match!r}")
    missing = missing_requirements()
    if missing:
        print(f"sweep: skipped ({missing}); it needs torch, triton and a CUDA GPU")
        return 0

    import torch
    import triton
    t0 = time.monotonic()
    torch.backends.cuda.matmul.allow_tf32 = False
    problems = {c: KERNELS[c.kernel].problem(c) for c in configs}
    target = "sm_%d%d" % torch.cuda.get_device_capability()
    folder = Path(tempfile.mkdtemp(prefix="mytriton-sweep-"))
    triton_files = {k.file: write_triton_module(ROOT / k.file, folder) for k in KERNELS.values()}
    print(f"device: {torch.cuda.get_device_name()} ({target}); Triton {triton.__version__}, torch "
          f"{torch.__version__}; {len(configs)} configurations, compiling both sides with {args.jobs} processes",
          flush=True)
    mt, tr = compile_all(configs, problems, args.jobs, target, triton_files)
    t_compiled = time.monotonic()
    print(f"compiled in {t_compiled - t0:.1f} s", flush=True)

    triton_fns = {}
    buffers, flusher = Buffers(torch), L2Flusher()
    rows = []
    for i, c in enumerate(configs):
        k = KERNELS[c.kernel]
        p = problems[c]
        row = Row(c, k.unit, p.amount)
        rows.append(row)
        mt_kernel, mt_error = mt[c]
        key = (c.kernel, c.aligned)        # one Triton JIT function per variant, as an application has
        if key not in triton_fns:
            triton_fns[key] = triton_variant(getattr(_module(str(triton_files[k.file])), k.function), c.aligned)
        tr_fn = triton_fns[key] if tr[c] is None else None
        if tr[c] is not None:
            row.status = "triton compile failed"
            row.errors.append(f"Triton: {tr[c]}")
        if mt_kernel is None:
            row.status = "MYTRITON COMPILE FAILED"
            row.errors.append(f"mytriton: {mt_error}")
            print(f"!! {c.kernel} {c.label()}: mytriton failed to compile: {mt_error}", flush=True)
            continue
        try:
            run_config(row, p, mt_kernel, tr_fn, buffers, flusher, torch)
        except Exception as e:  # noqa: BLE001 — one broken configuration must not end the sweep
            row.status = "ERROR"
            row.errors.append(f"{type(e).__name__}: {e}")
            traceback.print_exc()
        if row.status not in ("ok",):
            print(f"!! {c.kernel} {c.label()}: {row.status}: {'; '.join(row.errors)}", flush=True)
        if (i + 1) % 50 == 0:
            print(f"  {i + 1}/{len(configs)} timed ({time.monotonic() - t_compiled:.0f} s)", flush=True)

    print_table(rows)
    print_summary(rows, args.worst)
    bad = [r for r in rows if r.status in ("MISMATCH", "MYTRITON COMPILE FAILED", "ERROR")]
    wall = time.monotonic() - t0
    Path(args.out).write_text(json.dumps({
        "device": torch.cuda.get_device_name(), "target": target, "triton": triton.__version__,
        "torch": torch.__version__, "quick": args.quick, "compile_s": t_compiled - t0, "wall_s": wall,
        "rows": [r.as_json() for r in rows]}, indent=1))
    print(f"\n{len(rows)} configurations in {wall:.0f} s (compiles {t_compiled - t0:.0f} s); JSON: {args.out}")
    if bad:
        print(f"\n!!!! {len(bad)} configuration(s) FAILED (mismatch with Triton, mytriton compile error or "
              "launch error):")
        for r in bad:
            print(f"!!!!   {r.config.kernel} {r.config.label()}: {r.status}: {'; '.join(r.errors)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

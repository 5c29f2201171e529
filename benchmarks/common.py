"""What the benchmarks share: the same kernel source compiled by real Triton (imports swapped),
result checks, and GPU timing (CUDA events; medians).

torch is imported by the functions that time or check, not at import time, so a script using this
module can still print ``--help`` on a machine without it.
"""
from __future__ import annotations

import importlib.util
import re
import statistics
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "manifests" / "kernels"

_MYTRITON_IMPORTS = (("import mytriton as triton", "import triton"),
                     ("import mytriton.language as tl", "import triton.language as tl"))


# (pattern, replacement) per line of a file of Triton's: its imports of the language and of names
# from `triton` become mytriton's (what `import triton` itself becomes is the caller's choice)
TO_MYTRITON = [
    (re.compile(r"^(\s*)import triton\.language as (\w+)\s*$"), r"\1import mytriton.language as \2"),
    (re.compile(r"^(\s*)from triton\.language((?:\.\w+)*) import "), r"\1from mytriton.language\2 import "),
    (re.compile(r"^(\s*)from triton import "), r"\1from mytriton import "),
]


def triton_source(path: Path) -> str:
    """The kernel file's source with its ``import mytriton`` lines pointed at real Triton."""
    src = Path(path).read_text()
    for ours, theirs in _MYTRITON_IMPORTS:
        src = src.replace(ours, theirs)
    return src


def write_triton_module(path: Path, folder: Path) -> Path:
    """Write the Triton version of kernel file *path* into *folder* (Triton's JIT reads the source
    from a file) and return where."""
    out = Path(folder) / f"triton_{Path(path).stem}.py"
    out.write_text(triton_source(path))
    return out


def load_module(path: Path, name: str | None = None):
    """Import the Python file *path* as a module of its own."""
    path = Path(path)
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def triton_module(filename: str | Path):
    """The kernel file compiled by real Triton: same source, imports swapped.  *filename* is a
    path, or a name under manifests/kernels/."""
    path = Path(filename) if Path(filename).is_absolute() else KERNELS / filename
    return load_module(write_triton_module(path, Path(tempfile.mkdtemp())))


def check(name, got, want, rtol, atol):
    import torch
    if not torch.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        err = (got - want).abs().max().item()
        raise AssertionError(f"{name}: results differ (max abs error {err})")


def cdiv(a, b):
    return (a + b - 1) // b


def bench(fn, rotations: int, warmup_ms=50, reps=50):
    """Median ms of fn(i) over reps, i rotating over input sets; events around each call, queued
    behind a short GPU-side wait so that the host's launch cost (another benchmark:
    launch_overhead.py) overlaps it and is not counted in the kernel's time."""
    _warm(fn, rotations, warmup_ms)
    return statistics.median(_samples(fn, rotations, reps))


def bench_all(fns: dict, rotations: int, warmup_ms=50, reps=30, rounds=5) -> dict:
    """``bench`` of several implementations of one computation, interleaved: ``rounds`` rounds
    each time every implementation ``reps // rounds`` times, in an order that rotates, so that a
    drift of the GPU's clocks over the run (a fresh H200 moved the same GEMM by 10 % between two
    processes) weighs on all of them alike. Median ms per name."""
    for fn in fns.values():
        _warm(fn, rotations, warmup_ms)
    names, times = list(fns), {name: [] for name in fns}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name] += _samples(fns[name], rotations, max(1, reps // rounds), start=r)
    return {name: statistics.median(t) for name, t in times.items()}


def _warm(fn, rotations: int, warmup_ms):
    import torch
    for i in range(3):
        fn(i % rotations)
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    fn(0)
    end.record()
    torch.cuda.synchronize()
    one = max(start.elapsed_time(end), 1e-3)
    for i in range(max(1, int(warmup_ms / one))):
        fn(i % rotations)


def _samples(fn, rotations: int, reps: int, start: int = 0) -> list:
    import torch
    times = []
    for i in range(start, start + reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        # the GPU waits (~125 us) while the host launches: kernel time only (a JIT launch through an
        # autotuner of a 25-argument kernel took about 55 us of host time, more than the 50 us waited
        # before, and tutorial 06's attention timed its launch instead of its kernel)
        torch.cuda._sleep(250_000)
        s.record()
        fn(i % rotations)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return times


class L2Flusher:
    """Times like ``triton.testing.do_bench``: before each timed call a 256 MiB buffer is zeroed
    (more than an H200's 50 MiB L2), so every call starts from a cold cache; CUDA events around
    the call alone; one synchronization for all repetitions; the median."""

    def __init__(self, mib: int = 256):
        import torch
        self.torch = torch
        self.buffer = torch.empty(mib * 2**20 // 4, dtype=torch.int32, device="cuda")

    def median_ms(self, fn, budget_ms: float = 40.0, min_reps: int = 5, max_reps: int = 50) -> float:
        """Median ms of fn() over as many repetitions as fit *budget_ms* (within the bounds)."""
        torch = self.torch
        fn()                                   # warm (first launches load modules)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.buffer.zero_()
        start.record()
        for _ in range(3):
            fn()
        end.record()
        end.synchronize()
        one = max(start.elapsed_time(end) / 3, 1e-3)
        reps = int(min(max_reps, max(min_reps, budget_ms / one)))
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for s, e in zip(starts, ends):
            self.buffer.zero_()
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))

"""``triton.testing``: timing and checking helpers of Triton 3.6, with its signatures and semantics
(``do_bench``, ``do_bench_cudagraph``, ``assert_close``, ``Benchmark``, ``perf_report``).

Timing takes CUDA events from what the process has: torch (where it is installed and sees a GPU:
its current stream, as Triton's), else CuPy, else CUDA's driver through cuda-bindings (the legacy
default stream, where mytriton launches by default). Without a GPU, timing raises a
``RuntimeError`` saying so; importing this module needs none (nor torch).
"""
from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
from typing import Any, Dict, List

RETURN_MODES = ("min", "max", "mean", "median", "all")
CACHE_BYTES = 256 * 1024 * 1024          # the buffer cleared before each timed run (past any L2)


def nvsmi(attrs):
    """``nvidia-smi --query-gpu=<attrs>`` of GPU 0, as ints."""
    out = subprocess.check_output(["nvidia-smi", "-i", "0", "--query-gpu=" + ",".join(attrs),
                                   "--format=csv,noheader,nounits"])
    return [int(x) for x in out.decode(sys.stdout.encoding).split(",")]


def _quantile(a, q):
    """Linear-interpolation quantiles (numpy's default), in plain Python."""
    a = sorted(a)
    out = []
    for p in q:
        if not 0 <= p <= 1:
            raise ValueError("Quantiles must be in the range [0, 1]")
        point = p * (len(a) - 1)
        lo, hi = math.floor(point), math.ceil(point)
        out.append((1 - (point - lo)) * a[lo] + (point - lo) * a[hi])
    return out


def _summarize_statistics(times, quantiles, return_mode):
    if quantiles is not None:
        ret = _quantile(times, quantiles)
        return ret[0] if len(ret) == 1 else ret
    if return_mode == "all":
        return times
    return {"min": min, "max": max, "mean": statistics.mean, "median": statistics.median}[return_mode](times)


def _check_mode(return_mode):
    if return_mode not in RETURN_MODES:
        raise ValueError(f"return_mode must be one of {', '.join(map(repr, RETURN_MODES))}, got {return_mode!r}")


# --- CUDA events, from whichever library the process has ------------------------------------------

class _TorchTimer:
    def __init__(self, torch):
        self.torch = torch
        self.cache = None

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def record(self, e):
        e.record()

    def elapsed(self, a, b) -> float:
        return a.elapsed_time(b)

    def synchronize(self):
        self.torch.cuda.synchronize()

    def clear_cache(self):
        if self.cache is None:
            self.cache = self.torch.empty(CACHE_BYTES // 4, dtype=self.torch.int32, device="cuda")
        self.cache.zero_()


class _CupyTimer:
    def __init__(self, cupy):
        self.cupy = cupy
        self.cache = None

    def event(self):
        return self.cupy.cuda.Event()

    def record(self, e):
        e.record()

    def elapsed(self, a, b) -> float:
        return self.cupy.cuda.get_elapsed_time(a, b)

    def synchronize(self):
        self.cupy.cuda.runtime.deviceSynchronize()

    def clear_cache(self):
        if self.cache is None:
            self.cache = self.cupy.empty(CACHE_BYTES // 4, dtype=self.cupy.int32)
        self.cache.fill(0)


class _DriverTimer:
    """CUDA's driver API (cuda-bindings) on the legacy default stream."""

    def __init__(self):
        from .runtime import bench, driver
        self.driver, self.bench = driver, bench
        driver._init()
        self.events = []

    def event(self):
        e = self.driver._check(self.driver._cuda.cuEventCreate(0), "cuEventCreate")
        self.events.append(e)
        return e

    def record(self, e):
        self.driver._check(self.driver._cuda.cuEventRecord(e, 0), "cuEventRecord")

    def elapsed(self, a, b) -> float:
        return float(self.driver._check(self.driver._cuda.cuEventElapsedTime(a, b), "cuEventElapsedTime"))

    def synchronize(self):
        self.driver.synchronize()

    def clear_cache(self):
        flush = self.bench._flush_buffer(self.driver.current_device())
        self.driver._check(self.driver._cuda.cuMemsetD32Async(flush, 0, self.bench.L2_FLUSH_BYTES // 4, 0),
                           "cuMemsetD32Async")

    def close(self):
        for e in self.events:
            self.driver._cuda.cuEventDestroy(e)
        self.events = []


def _timer():
    """Events of torch (with a GPU), else CuPy (with a GPU), else the driver; else a clear error."""
    if "torch" in sys.modules or _installed("torch"):
        import torch
        if torch.cuda.is_available():
            return _TorchTimer(torch)
    if _installed("cupy"):
        try:
            import cupy
            if cupy.cuda.runtime.getDeviceCount() > 0:
                return _CupyTimer(cupy)
        except Exception:       # (CuPy without a driver raises its own errors)
            pass
    from .runtime import driver
    if driver.driver_available():
        return _DriverTimer()
    raise RuntimeError("triton.testing.do_bench needs a CUDA GPU and its driver: none is available to this "
                       "process (no GPU through torch, CuPy or CUDA's driver API)")


def _installed(name: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(name) is not None


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    """The run time of ``fn()`` in milliseconds, as Triton's: about ``warmup`` ms of runs, then about
    ``rep`` ms of runs each timed by CUDA events after clearing a 256 MiB buffer (the L2 cache
    holds nothing of ``fn``'s); ``quantiles`` (e.g. [0.5, 0.2, 0.8]) returns those quantiles of the
    times, else ``return_mode``: "mean" (default), "min", "max", "median" or "all" (the list)."""
    _check_mode(return_mode)
    timer = _timer()
    try:
        fn()
        timer.synchronize()
        start, end = timer.event(), timer.event()
        timer.record(start)
        for _ in range(5):
            timer.clear_cache()
            fn()
        timer.record(end)
        timer.synchronize()
        estimate = timer.elapsed(start, end) / 5
        n_warmup = max(1, int(warmup / estimate)) if estimate > 0 else 1000
        n_repeat = max(1, int(rep / estimate)) if estimate > 0 else 1000
        starts = [timer.event() for _ in range(n_repeat)]
        ends = [timer.event() for _ in range(n_repeat)]
        for _ in range(n_warmup):
            fn()
        for i in range(n_repeat):
            if grad_to_none is not None:
                for x in grad_to_none:
                    x.grad = None
            timer.clear_cache()
            timer.record(starts[i])
            fn()
            timer.record(ends[i])
        timer.synchronize()
        times = [timer.elapsed(s, e) for s, e in zip(starts, ends)]
    finally:
        if hasattr(timer, "close"):
            timer.close()
    return _summarize_statistics(times, quantiles, return_mode)


def do_bench_cudagraph(fn, rep=20, grad_to_none=None, quantiles=None, return_mode="mean"):
    """As Triton's: ``fn()`` captured ``rep / estimate`` times into one CUDA graph (torch's, on a
    side stream), replayed 10 times; the time per call in milliseconds. Needs torch with a GPU."""
    _check_mode(return_mode)
    try:
        import torch
    except ImportError:
        raise RuntimeError("triton.testing.do_bench_cudagraph captures a CUDA graph with torch, which is not "
                           "installed; use do_bench") from None
    if not torch.cuda.is_available():
        raise RuntimeError("triton.testing.do_bench_cudagraph needs a CUDA GPU: torch sees none")
    with torch.cuda.stream(torch.cuda.Stream()):
        fn()
        if grad_to_none is not None:
            for x in grad_to_none:
                x.detach_()
                x.requires_grad_(True)
                x.grad = None
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            fn()
        end.record()
        torch.cuda.synchronize()
        estimate = start.elapsed_time(end) / 5
        n_repeat = 1000 if estimate == 0 else max(1, int(rep / estimate))
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(n_repeat):
                if grad_to_none is not None:
                    for x in grad_to_none:
                        x.grad = None
                fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(10):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / n_repeat)
    return _summarize_statistics(times, quantiles, return_mode)


def _as_numpy(x):
    """A number, list, numpy array, torch tensor or device array as a numpy array (bf16 as fp32)."""
    import numpy as np
    if type(x).__module__.startswith("torch"):
        import torch
        x = x.detach()
        x = (x.float() if x.dtype == torch.bfloat16 else x).cpu().numpy()
    elif hasattr(x, "numpy") and not isinstance(x, np.ndarray):
        x = x.numpy()
    elif hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        x = x.get()
    x = np.asarray(x)
    return x.astype(np.float32) if x.dtype.name == "bfloat16" else x


def assert_close(x, y, atol=None, rtol=None, err_msg=""):
    """Triton's ``assert_close``: |x - y| <= atol + rtol * |y| elementwise, NaNs equal; ``atol``
    defaults to 1e-2 and ``rtol`` to 0, either may be a function of x's dtype."""
    import numpy as np
    x_dtype = getattr(x, "dtype", None)
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    atol = atol(x_dtype) if callable(atol) else atol
    rtol = rtol(x_dtype) if callable(rtol) else rtol
    x, y = _as_numpy(x), _as_numpy(y)
    if x.size > 1 or y.size > 1:
        np.testing.assert_allclose(x, y, atol=atol, rtol=rtol, equal_nan=True, err_msg=err_msg)
        return
    if not np.allclose(x, y, atol=atol, rtol=rtol):
        raise AssertionError(f"{err_msg} {x} is not close to {y} (atol={atol}, rtol={rtol})")


class Benchmark:
    """A line plot's configuration for ``perf_report``, as Triton's: ``x_names`` take the values
    ``x_vals`` (a scalar for all of them, or one tuple per point), one line per value of
    ``line_arg`` in ``line_vals`` (named ``line_names``), ``args`` fixed."""

    def __init__(self, x_names: List[str], x_vals: List[Any], line_arg: str, line_vals: List[Any],
                 line_names: List[str], plot_name: str, args: Dict[str, Any], xlabel: str = "", ylabel: str = "",
                 x_log: bool = False, y_log: bool = False, styles=None):
        self.x_names, self.x_vals, self.x_log = x_names, x_vals, x_log
        self.line_arg, self.line_vals, self.line_names = line_arg, line_vals, line_names
        self.y_log, self.styles = y_log, styles
        self.xlabel, self.ylabel, self.plot_name, self.args = xlabel, ylabel, plot_name, args


class Mark:
    """A function marked by ``perf_report``: ``.run(print_data=..., show_plots=..., save_path=...)``
    calls it for every point and line of its benchmarks. The table is a pandas DataFrame where
    pandas is installed (else a table of rows, printed and saved in the same layout); plots need
    matplotlib (without it a warning says so, and the table is made all the same)."""

    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks

    def _rows(self, bench: Benchmark, **kwargs):
        rows = []
        for x in bench.x_vals:
            if not isinstance(x, (list, tuple)):
                x = [x for _ in bench.x_names]
            if len(x) != len(bench.x_names):
                raise ValueError(f"Expected {len(bench.x_names)} values, got {x}")
            means, mins, maxs = [], [], []
            for y in bench.line_vals:
                ret = self.fn(**dict(zip(bench.x_names, x)), **{bench.line_arg: y}, **bench.args, **kwargs)
                try:
                    mean, lo, hi = ret
                except TypeError:
                    mean, lo, hi = ret, None, None
                means.append(mean)
                mins.append(lo)
                maxs.append(hi)
            rows.append((list(x), means, mins, maxs))
        return rows

    def _run(self, bench: Benchmark, save_path: str, show_plots: bool, print_data: bool, diff_col=False,
             save_precision=6, **kwargs):
        rows = self._rows(bench, **kwargs)
        x_names = list(bench.x_names)
        labels = [f"{x} ({bench.ylabel})" for x in bench.line_names]
        if bench.plot_name and (show_plots or save_path):
            self._plot(bench, rows, labels, show_plots, save_path)
        columns = x_names + labels
        table = [x + means for x, means, _, _ in rows]
        if diff_col and len(columns) == 2:
            columns.append("Diff")
            table = [r + [r[1] - r[0]] for r in table]
        df = _table(columns, table)
        if print_data:
            print(bench.plot_name + ":")
            print(df.to_string())
        if save_path:
            os.makedirs(save_path, exist_ok=True)
            df.to_csv(os.path.join(save_path, f"{bench.plot_name}.csv"), float_format=f"%.{save_precision}f",
                      index=False)
        return df

    def _plot(self, bench, rows, labels, show_plots, save_path):
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            import warnings
            warnings.warn(f"perf_report: plotting {bench.plot_name!r} needs matplotlib, which is not installed "
                          f"(pip install matplotlib); the table is made without the plot", RuntimeWarning,
                          stacklevel=4)
            return
        plt.figure()
        ax = plt.subplot()
        xs = [x[0] for x, _, _, _ in rows]
        for i, label in enumerate(labels):
            color = bench.styles[i][0] if bench.styles else None
            style = bench.styles[i][1] if bench.styles else None
            ax.plot(xs, [r[1][i] for r in rows], label=label, color=color, ls=style)
            lo, hi = [r[2][i] for r in rows], [r[3][i] for r in rows]
            if all(v is not None for v in lo + hi):
                ax.fill_between(xs, lo, hi, alpha=0.15, color=color)
        ax.legend()
        ax.set_xlabel(bench.xlabel or bench.x_names[0])
        ax.set_ylabel(bench.ylabel)
        ax.set_xscale("log" if bench.x_log else "linear")
        ax.set_yscale("log" if bench.y_log else "linear")
        if show_plots:
            plt.show()
        if save_path:
            os.makedirs(save_path, exist_ok=True)
            plt.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))

    def run(self, show_plots=False, print_data=False, save_path="", return_df=False, **kwargs):
        single = isinstance(self.benchmarks, Benchmark)
        benchmarks = [self.benchmarks] if single else self.benchmarks
        results = []
        try:
            for bench in benchmarks:
                results.append(self._run(bench, save_path, show_plots, print_data, **kwargs))
        finally:
            if save_path:
                os.makedirs(save_path, exist_ok=True)
                with open(os.path.join(save_path, "results.html"), "w") as html:
                    html.write("<html><body>\n")
                    for bench in benchmarks[:len(results)]:
                        html.write(f"<image src=\"{bench.plot_name}.png\"/>\n")
                    html.write("</body></html>\n")
        if return_df:
            return results[0] if single else results
        return None


def perf_report(benchmarks):
    """Mark a function for benchmarking: ``fn.run(...)`` runs its ``Benchmark``(s)."""
    return lambda fn: Mark(fn, benchmarks)


class _Rows:
    """The table of a benchmark where pandas is not installed: columns and rows, printed and saved
    in pandas' layout (``to_string``, ``to_csv``)."""

    def __init__(self, columns, rows):
        self.columns, self.rows = list(columns), [list(r) for r in rows]

    def to_string(self) -> str:
        cells = [[""] + self.columns] + [[str(i)] + [_cell(v) for v in r] for i, r in enumerate(self.rows)]
        widths = [max(len(row[j]) for row in cells) for j in range(len(cells[0]))]
        return "\n".join("  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells)

    def to_csv(self, path, float_format="%.6f", index=False):
        with open(path, "w") as f:
            f.write(",".join(self.columns) + "\n")
            for r in self.rows:
                f.write(",".join(float_format % v if isinstance(v, float) else str(v) for v in r) + "\n")


def _cell(v) -> str:
    return f"{v:.6f}" if isinstance(v, float) else str(v)


def _table(columns, rows):
    try:
        import pandas as pd
    except ImportError:
        return _Rows(columns, rows)
    return pd.DataFrame(rows, columns=columns)


def __getattr__(name):
    """Triton's other ``triton.testing`` names: not supported by mytriton yet, and why."""
    from .language.triton_names import missing_attribute
    raise missing_attribute(name, "triton.testing", __name__)


__all__ = ["do_bench", "do_bench_cudagraph", "assert_close", "Benchmark", "Mark", "perf_report", "nvsmi"]

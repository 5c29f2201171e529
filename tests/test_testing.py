"""mytriton.testing (``triton.testing``): Triton 3.6's signatures and semantics of do_bench's
statistics, assert_close, Benchmark / perf_report; on a machine without a GPU, do_bench raises a
clear error (importing the module needs no GPU and no torch). tests/test_testing_gpu.py times."""
import inspect
import sys

import numpy as np
import pytest

import mytriton
from mytriton import testing


def test_signatures_are_tritons():
    sig = {name: str(inspect.signature(getattr(testing, name))) for name in
           ("do_bench", "do_bench_cudagraph", "assert_close", "perf_report")}
    assert sig["do_bench"] == "(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode='mean')"
    assert sig["do_bench_cudagraph"] == "(fn, rep=20, grad_to_none=None, quantiles=None, return_mode='mean')"
    assert sig["assert_close"] == "(x, y, atol=None, rtol=None, err_msg='')"
    assert sig["perf_report"] == "(benchmarks)"
    assert mytriton.testing is testing and "torch" not in sys.modules


def test_statistics_as_tritons():
    times = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert testing._summarize_statistics(times, [0.5, 0.2, 0.8], "mean") == pytest.approx([3.0, 1.8, 4.2])
    assert testing._summarize_statistics(times, [0.5], "mean") == 3.0
    assert [testing._summarize_statistics(times, None, m) for m in ("min", "max", "mean", "median")] == [1, 5, 3, 3]
    assert testing._summarize_statistics(times, None, "all") is times
    np.testing.assert_allclose(testing._quantile(times, [0.1, 0.33, 0.9]), np.quantile(times, [0.1, 0.33, 0.9]))
    with pytest.raises(ValueError, match="Quantiles must be in the range"):
        testing._quantile(times, [1.5])


def test_do_bench_without_a_gpu_says_so(monkeypatch):
    from mytriton.runtime import driver
    monkeypatch.setattr(driver, "driver_available", lambda: False)
    monkeypatch.setattr(testing, "_installed", lambda name: False)
    with pytest.raises(RuntimeError, match="do_bench needs a CUDA GPU and its driver: none is available"):
        testing.do_bench(lambda: None)
    with pytest.raises(ValueError, match="return_mode must be one of 'min', 'max', 'mean', 'median', 'all'"):
        testing.do_bench(lambda: None, return_mode="p50")


class FakeTimer:
    """Events whose elapsed time is the number of fn() calls between them (1 ms per call)."""

    def __init__(self):
        self.calls, self.cleared = 0, 0

    def event(self):
        return [None]

    def record(self, e):
        e[0] = self.calls

    def elapsed(self, a, b):
        return float(b[0] - a[0])

    def synchronize(self):
        pass

    def clear_cache(self):
        self.cleared += 1


def test_do_bench_counts_warmup_and_repetitions_in_ms(monkeypatch):
    timer = FakeTimer()
    monkeypatch.setattr(testing, "_timer", lambda: timer)

    def fn():
        timer.calls += 1
    assert testing.do_bench(fn, warmup=10, rep=30) == 1.0
    # 1 first call, 5 to estimate, 10 of warm-up, 30 timed; the cache cleared before each timed one
    assert timer.calls == 1 + 5 + 10 + 30 and timer.cleared == 5 + 30
    assert testing.do_bench(fn, rep=4, return_mode="all") == [1.0] * 4
    assert testing.do_bench(fn, rep=4, quantiles=[0.5, 0.2]) == [1.0, 1.0]


def test_assert_close():
    testing.assert_close(np.float32(1.0), 1.005)                    # (atol 1e-2 by default)
    testing.assert_close([1.0, 2.0, np.nan], np.array([1.0, 2.001, np.nan]))
    with pytest.raises(AssertionError, match="oops 1.0 is not close to 1.5"):
        testing.assert_close(1.0, 1.5, err_msg="oops")
    with pytest.raises(AssertionError):
        testing.assert_close(np.ones(4), np.ones(4) * 1.02)
    testing.assert_close(np.ones(4), np.ones(4) * 1.02, atol=0, rtol=lambda dtype: 0.05)
    import ml_dtypes
    testing.assert_close(np.ones(3, ml_dtypes.bfloat16), np.ones(3, np.float32), atol=0)


def test_perf_report_runs_each_point_and_line(capsys, tmp_path):
    seen = []

    @testing.perf_report(testing.Benchmark(x_names=["N"], x_vals=[128, 256], line_arg="provider",
                                           line_vals=["a", "b"], line_names=["A", "B"], plot_name="bench",
                                           args={"scale": 2}, ylabel="ms"))
    def bench(N, provider, scale):
        seen.append((N, provider, scale))
        return (N * scale / 100, N / 100, N / 10) if provider == "a" else N / 50

    try:
        import matplotlib  # noqa: F401
        df = bench.run(print_data=True, return_df=True, save_path=str(tmp_path))
    except ImportError:
        with pytest.warns(RuntimeWarning, match="plotting 'bench' needs matplotlib"):
            df = bench.run(print_data=True, return_df=True, save_path=str(tmp_path))
    assert seen == [(128, "a", 2), (128, "b", 2), (256, "a", 2), (256, "b", 2)]
    out = capsys.readouterr().out
    assert out.startswith("bench:\n") and "A (ms)" in out and "B (ms)" in out
    assert list(df.columns) == ["N", "A (ms)", "B (ms)"]
    rows = (tmp_path / "bench.csv").read_text().splitlines()
    assert rows[0] == "N,A (ms),B (ms)" and rows[1] == "128,2.560000,2.560000"
    assert (tmp_path / "results.html").read_text().count("<image") == 1
    assert bench.run() is None


def test_benchmark_checks_its_points():
    mark = testing.perf_report(testing.Benchmark(["M", "N"], [(1, 2, 3)], "p", [0], ["x"], "", {}))(
        lambda **kw: 1.0)
    with pytest.raises(ValueError, match="Expected 2 values, got"):
        mark.run()

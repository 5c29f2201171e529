"""Two code versions side by side on the configuration sweep: A and B, each a set of sweep.py JSON
files (runs of one version, best interleaved A B B A on one machine). Each configuration's ratio to
Triton is the median over a version's runs; the table lists the configurations where B's differs from
A's by more than --threshold, and the per-kernel geomean, worst ratio and count below --floor of
both. The ratio (Triton time / mytriton time, Triton timed in the same run) is what is compared,
so runs on different machines' clocks stay comparable.

    python3 benchmarks/sweep_compare.py --a main1.json main2.json --b branch1.json branch2.json
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path


ONLY_LISTED = 10      # configurations named of those only one side has


def config_key(row: dict) -> tuple:
    cx = "/".join(f"{k}={v}" for k, v in sorted(row["constexprs"].items()))
    return row["kernel"], cx, row["num_warps"], row["aligned"], tuple(row["size"])


def label(key: tuple) -> str:
    kernel, cx, warps, aligned, _ = key
    return f"{kernel:10s} {cx:16s} w{warps} {':16' if aligned else 'no :16'}"


def load_runs(paths: list[str]) -> dict[tuple, list[float]]:
    """Every configuration's ratios over the runs (configurations that failed in a run are left
    out of that run; a run that is not a sweep's JSON is an error naming the file)."""
    ratios: dict[tuple, list[float]] = {}
    for path in paths:
        try:
            rows = json.loads(Path(path).read_text())["rows"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"sweep_compare: {path}: not a sweep.py JSON file ({type(e).__name__}: {e})")
        for row in rows:
            if row.get("status") == "ok" and row.get("ratio"):
                ratios.setdefault(config_key(row), []).append(float(row["ratio"]))
    return ratios


def medians(runs: dict[tuple, list[float]]) -> dict[tuple, float]:
    return {k: statistics.median(v) for k, v in runs.items()}


def summary(ratios: dict[tuple, float], floor: float) -> dict[str, tuple[float, float, int, int]]:
    """Per kernel: (geomean, worst, configurations below floor, configurations)."""
    by_kernel: dict[str, list[float]] = {}
    for key, r in ratios.items():
        by_kernel.setdefault(key[0], []).append(r)
    return {k: (math.exp(sum(map(math.log, v)) / len(v)), min(v), sum(x < floor for x in v), len(v))
            for k, v in by_kernel.items()}


def compare(a: dict[tuple, float], b: dict[tuple, float], threshold: float) -> list[tuple[tuple, float, float]]:
    """The configurations both versions ran whose ratio moved by more than ``threshold`` (relative),
    largest change first."""
    moved = [(k, a[k], b[k]) for k in a.keys() & b.keys() if abs(b[k] / a[k] - 1) > threshold]
    return sorted(moved, key=lambda t: -abs(math.log(t[2] / t[1])))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", nargs="+", required=True, help="sweep.py JSON files of version A")
    ap.add_argument("--b", nargs="+", required=True, help="sweep.py JSON files of version B")
    ap.add_argument("--threshold", type=float, default=0.03, help="relative change to list (default 0.03)")
    ap.add_argument("--floor", type=float, default=0.95, help="the ratio counted as below par (default 0.95)")
    args = ap.parse_args(argv)
    a, b = medians(load_runs(args.a)), medians(load_runs(args.b))
    moved = compare(a, b, args.threshold)
    print(f"{len(a.keys() & b.keys())} configurations in both; {len(moved)} moved by more than "
          f"{args.threshold:.0%} (ratio to Triton, median of {len(args.a)} / {len(args.b)} runs):")
    for key, ra, rb in moved:
        print(f"  {label(key)}  A {ra:.3f}  B {rb:.3f}  {rb / ra - 1:+.1%}")
    sa, sb = summary(a, args.floor), summary(b, args.floor)
    print(f"\n{'kernel':10s}  {'A geomean':>9s} {'worst':>6s} {'<' + str(args.floor):>6s}   "
          f"{'B geomean':>9s} {'worst':>6s} {'<' + str(args.floor):>6s}")
    for k in sorted(sa.keys() | sb.keys()):
        cells = []
        for s in (sa, sb):
            g, w, n, _ = s.get(k, (float("nan"), float("nan"), 0, 0))
            cells.append(f"{g:9.3f} {w:6.3f} {n:6d}")
        print(f"{k:10s}  {cells[0]}   {cells[1]}")
    only = [(name, sorted(x.keys() - y.keys())) for name, x, y in (("A", a, b), ("B", b, a))]
    for name, keys in only:
        if keys:
            more = f"; and {len(keys) - ONLY_LISTED} more" if len(keys) > ONLY_LISTED else ""
            print(f"\nonly in {name} (failed or not run in the other): "
                  + "; ".join(label(k) for k in keys[:ONLY_LISTED]) + more)
    return 0


if __name__ == "__main__":
    sys.exit(main())

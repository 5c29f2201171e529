"""benchmarks/sweep_compare.py: medians over runs, the moved configurations, per-kernel summaries,
and a clear error for a file that is not a sweep's JSON."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "sweep_compare.py"


def row(kernel, cx, warps, aligned, ratio, status="ok"):
    return {"kernel": kernel, "constexprs": cx, "num_warps": warps, "aligned": aligned, "size": [2048],
            "status": status, "ratio": ratio}


def write(path: Path, rows) -> str:
    path.write_text(json.dumps({"device": "test", "rows": rows}))
    return str(path)


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_medians_and_moved_configurations(tmp_path):
    a = [write(tmp_path / f"a{i}.json", [row("matmul", {"BM": 16, "BN": 32}, 8, False, r),
                                         row("add", {"BLOCK": 1024}, 4, True, 1.0 + i / 1000)])
         for i, r in enumerate((0.77, 0.80, 0.79))]
    b = [write(tmp_path / f"b{i}.json", [row("matmul", {"BM": 16, "BN": 32}, 8, False, r),
                                         row("add", {"BLOCK": 1024}, 4, True, 1.01)])
         for i, r in enumerate((0.99, 0.97, 2.0))]
    out = run("--a", *a, "--b", *b)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "2 configurations in both; 1 moved by more than 3% (ratio to Triton, median of 3 / 3 runs):"
    assert lines[1] == "  matmul     BM=16/BN=32      w8 no :16  A 0.790  B 0.990  +25.3%"
    table = {ln.split()[0]: ln.split()[1:] for ln in lines[3:]}
    assert table["matmul"] == ["0.790", "0.790", "1", "0.990", "0.990", "0"]
    assert table["add"] == ["1.001", "1.001", "0", "1.010", "1.010", "0"]


def test_failed_configurations_are_listed_as_missing(tmp_path):
    a = write(tmp_path / "a.json", [row("softmax", {"BLOCK": 512}, 2, False, 0.95)])
    b = write(tmp_path / "b.json", [row("softmax", {"BLOCK": 512}, 2, False, None, status="MISMATCH")])
    out = run("--a", a, "--b", b)
    assert out.returncode == 0, out.stderr
    assert "0 configurations in both" in out.stdout
    assert "only in A (failed or not run in the other): softmax    BLOCK=512        w2 no :16" in out.stdout


def test_a_long_list_of_missing_configurations_is_cut(tmp_path):
    a = write(tmp_path / "a.json", [row("add", {"BLOCK": 16 * 2 ** i}, 4, True, 1.0) for i in range(12)])
    b = write(tmp_path / "b.json", [])
    out = run("--a", a, "--b", b)
    assert out.returncode == 0, out.stderr
    only = next(line for line in out.stdout.splitlines() if line.startswith("only in A"))
    assert only.count("add ") == 10 and only.endswith("; and 2 more"), only


def test_a_file_that_is_not_a_sweep_is_named(tmp_path):
    bad = tmp_path / "notes.json"
    bad.write_text("[1, 2]")
    good = write(tmp_path / "b.json", [])
    out = run("--a", str(bad), "--b", good)
    assert out.returncode == 1 and f"sweep_compare: {bad}: not a sweep.py JSON file" in out.stderr

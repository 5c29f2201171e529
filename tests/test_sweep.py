"""benchmarks/sweep.py: its --help and its skip without a GPU, the specialization it promises each
side, the quick configurations through NVRTC (in-process and through its worker pool), and on a GPU
with Triton the quick sweep itself (every result checked against Triton's)."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "sweep.py"


def _load():
    sys.path.insert(0, str(SCRIPT.parent))      # (worker processes find it as `sweep` too)
    import sweep
    return sweep


sweep = _load()


def run_script(*args, timeout=120):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})


def test_help_works_without_torch():
    result = run_script("--help")
    assert result.returncode == 0, result.stderr
    assert "--quick" in result.stdout and "--out" in result.stdout and "matmul" in result.stdout


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed: it would run")
def test_skips_cleanly_without_torch(tmp_path):
    result = run_script("--quick", "--out", str(tmp_path / "s.json"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "sweep: skipped (torch is not installed); it needs torch, triton and a CUDA GPU"
    assert not (tmp_path / "s.json").exists()


def test_unknown_kernel_is_a_usage_error():
    result = run_script("--only", "add,nope")
    assert result.returncode == 2 and "unknown kernel(s) nope" in result.stderr


def test_match_selects_configurations_by_label():
    picked = sweep.all_configs(False, ("matmul",), r"BM=16 BN=16 w4 ")
    assert [c.label() for c in picked] == ["BM=16 BN=16 w4 :16", "BM=16 BN=16 w4 no :16"]
    assert {c.kernel for c in sweep.all_configs(False, (), r"^row_sum .* w1 no :16$")} == {"row_sum"}
    result = run_script("--only", "add", "--match", "BM=")
    assert result.returncode == 2 and "no configuration matches --match 'BM='" in result.stderr


def test_the_full_sweep_covers_the_brief():
    configs = sweep.all_configs(quick=False)
    assert len(configs) == len(set(configs)) == 526
    by_kernel = {}
    for c in configs:
        by_kernel.setdefault(c.kernel, []).append(c)
    assert set(by_kernel) == {"add", "axpby", "softmax", "layer_norm", "row_sum", "matmul"}
    for name, cs in by_kernel.items():
        assert {c.aligned for c in cs} == {True, False}
        assert {1, 2, 4, 8} <= {c.num_warps for c in cs}
        sizes = {v for c in cs for _, v in c.constexprs}
        assert min(sizes) == 16 and max(sizes) == (128 if name == "matmul" else 4096)
    assert 16 in {c.num_warps for c in by_kernel["softmax"]}
    for c in by_kernel["softmax"]:                     # BLOCK is the next power of 2 of the row
        block, cols = dict(c.constexprs)["BLOCK"], c.size[1]
        assert block // 2 < cols <= block


@pytest.mark.parametrize("quick", [True, False])
def test_problems_match_the_kernels(quick):
    for c in sweep.all_configs(quick):
        k = sweep.KERNELS[c.kernel]
        p = k.problem(c)
        assert len(p.args) == len(sweep.runtime_params(k)), c
        assert set(p.outputs) <= set(p.buffers) and {a for a in p.args if isinstance(a, str)} <= set(p.buffers)
        assert all(a != 1 for a in p.args if type(a) is int)      # Triton would make a 1 a constant


def test_signatures_mirror_the_jit_or_promise_nothing():
    k = sweep.KERNELS["layer_norm"]
    names = sweep.runtime_params(k)
    c = [c for c in sweep.all_configs(True) if c.kernel == "layer_norm"][0]
    p = k.problem(c)
    aligned = sweep.mytriton_signature(names, p, True)
    assert aligned == {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "w_ptr": "*fp32:16", "b_ptr": "*fp32:16",
                       "mean_ptr": "*fp32:16", "rstd_ptr": "*fp32:16", "row_stride": "i32:16", "n_cols": "i32:16",
                       "eps": "fp32"}
    plain = sweep.mytriton_signature(names, p, False)
    assert all(":" not in t for t in plain.values()) and plain["eps"] == "fp32" and plain["n_cols"] == "i32"
    # an integer not divisible by 16 gets no promise even in the aligned configuration
    sm = [c for c in sweep.all_configs(True) if c.kernel == "softmax"][0]
    assert sweep.mytriton_signature(sweep.runtime_params(sweep.KERNELS["softmax"]), sweep.softmax_problem(sm),
                                    True) == {"x": "*fp32:16", "y": "*fp32:16", "n_cols": "i32"}


def test_quick_configurations_compile_under_nvrtc():
    for c in sweep.all_configs(quick=True):
        k = sweep.KERNELS[c.kernel]
        sig = sweep.mytriton_signature(sweep.runtime_params(k), k.problem(c), c.aligned)
        result = sweep.compile_mytriton(str(ROOT / k.file), k.function, sig, dict(c.constexprs), c.num_warps,
                                        "sm_90")
        assert result[0] != "error", f"{c}: {result[1]}"
        cubin, shared, symbol = result
        assert cubin[:4] == b"\x7fELF" and shared >= 0 and symbol.startswith("k_")


def test_compile_errors_are_returned_not_raised():
    result = sweep.compile_mytriton(str(ROOT / "manifests/kernels/elementwise.py"), "add_kernel",
                                    {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                                    {"BLOCK": 12}, 4, "sm_90")
    assert result[0] == "error" and "power of 2" in result[1]


def test_worker_pool_compiles_and_loads(tmp_path):
    configs = [c for c in sweep.all_configs(quick=True) if c.kernel == "add"]
    problems = {c: sweep.KERNELS[c.kernel].problem(c) for c in configs}
    triton_files = {k.file: sweep.write_triton_module(ROOT / k.file, tmp_path) for k in sweep.KERNELS.values()}
    mt, tr = sweep.compile_all(configs, problems, 2, "sm_90", triton_files)
    for c in configs:
        kernel, error = mt[c]
        assert error is None and kernel.num_warps == c.num_warps
        assert [n for n, _ in kernel.params] == ["x_ptr", "y_ptr", "out_ptr", "n"]
        assert [t.align for _, t in kernel.params] == [16 if c.aligned else 1] * 4
        if importlib.util.find_spec("triton") is None:
            assert tr[c] is not None                   # (Triton's side reports why it could not compile)
        elif _has_gpu():
            assert tr[c] is None, tr[c]                # compiled into Triton's cache


def _has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _gpu_with_triton():
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")


@pytest.mark.gpu
def test_quick_sweep_on_the_gpu(tmp_path):
    _gpu_with_triton()
    out = tmp_path / "sweep.json"
    result = run_script("--quick", "--out", str(out), "-j", "4", timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    data = json.loads(out.read_text())
    assert len(data["rows"]) == 12
    for row in data["rows"]:
        assert row["status"] == "ok", row
        assert row["mytriton_ms"] > 0 and row["triton_ms"] > 0 and row["ratio"] > 0
    assert "worst" in result.stdout and "ratio" in result.stdout

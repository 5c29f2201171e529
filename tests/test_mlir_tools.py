"""The MLIR backend's modules through the real MLIR tools (skipped, with the reason, without them).

Every module emitted for the shipped manifests and for the test kernels must be accepted by
``mlir-opt`` (parse + verify), lower to the LLVM dialect with NVVM intrinsics, and serialize to PTX
that ``ptxas`` assembles (where a CUDA toolkit is installed). Modules go through mlir-opt in
batches (``--split-input-file``), so the whole file takes a few seconds.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import lru_cache

import pytest
from test_mlir_support import CASES, GOLDENS, manifest_specializations, tools_missing_reason

from mytriton.backends.mlir import emit_mlir, tools
from mytriton.compiler import build_ssa

pytestmark = pytest.mark.skipif(tools_missing_reason() is not None, reason=tools_missing_reason() or "")


@lru_cache(maxsize=None)
def modules() -> tuple[tuple[str, str], ...]:
    """(id, MLIR text) for every manifest specialization and every test case."""
    out = [(sid, emit_mlir(build_ssa(fn, sig, constexprs, num_warps)))
           for sid, fn, sig, constexprs, num_warps in manifest_specializations()]
    out += [(case.name, emit_mlir(case.ssa())) for case in CASES]
    out += [(f"golden:{p.name}", p.read_text()) for p in sorted(GOLDENS.glob("*.mlir"))]
    return tuple(out)


def test_the_manifests_are_covered():
    ids = {sid.split(":")[0] for sid, _ in modules() if sid.count(":") == 2}
    assert {"elementwise", "matmul", "reductions", "rows", "softmax"} <= ids


def test_mlir_opt_accepts_every_module():
    names, texts = zip(*modules())
    errors = {n: e for n, e in zip(names, tools.verify_many(list(texts))) if e}
    assert not errors, "\n\n".join(f"{n}:\n{e}" for n, e in errors.items())


def test_every_module_lowers_to_nvvm():
    names, texts = zip(*modules())
    lowered = tools.run_many(list(texts), f"--pass-pipeline=builtin.module({tools.NVVM_PIPELINE})",
                             what="lower to NVVM")
    for name, text in zip(names, lowered):
        assert "llvm.func @" in text and "nvvm.kernel" in text, name
        for leftover in ("scf.", "gpu.thread_id", "gpu.shuffle", "arith.", "memref."):
            assert leftover not in text, f"{name}: {leftover} survived the lowering"


def _calls_math(text: str) -> bool:
    return re.search(r"= math\.", text) is not None


@pytest.fixture(scope="module")
def ptx() -> dict[str, str]:
    """PTX of every module; without libdevice, of those that call no ``math`` function."""
    chosen = [(n, t) for n, t in modules() if tools.find_libdevice() or not _calls_math(t)]
    names, texts = zip(*chosen)
    return dict(zip(names, tools.to_ptx_many(list(texts), "sm_90")))


def test_every_module_serializes_to_ptx(ptx):
    if tools.find_libdevice() is not None:
        assert set(ptx) == {n for n, _ in modules()}
    for name, text in ptx.items():
        assert ".target sm_90" in text and ".visible .entry" in text, name
        assert ".extern .func" not in text, f"{name}: unresolved calls"


def test_ptx_entry_takes_the_cuda_backends_parameters(ptx):
    text = ptx["add_b128_w4"]
    assert ".visible .entry k_add_kernel(" in text
    params = [line.split()[1] for line in text.splitlines() if line.strip().startswith(".param")]
    assert params == [".u64", ".u64", ".u64", ".u32"]       # three pointers, then n
    assert ".maxntid 128, 1, 1" in text


def _ptxas() -> str | None:
    found = shutil.which("ptxas")
    for root in [os.environ.get("CUDA_HOME")] + sorted(__import__("glob").glob("/usr/local/cuda*"), reverse=True):
        if not found and root and os.path.isfile(os.path.join(root, "bin", "ptxas")):
            found = os.path.join(root, "bin", "ptxas")
    return found


def test_ptxas_assembles_the_ptx(ptx, tmp_path):
    ptxas = _ptxas()
    if ptxas is None:
        pytest.skip("ptxas not found (a CUDA toolkit makes cubins from the PTX)")
    for name in ("add_b128_w4", "matmul_16x16_w4", "softmax_b1024_w4", "row_stats_16x32_w4", "loops_b256_w4",
                 "outer_32_w4", "math_b512_w4", "casts_b128_w4"):
        if name not in ptx:
            continue                                     # calls libdevice, and none was found
        src = tmp_path / f"{name}.ptx"
        src.write_text(ptx[name])
        proc = subprocess.run([ptxas, "-arch=sm_90", str(src), "-o", str(tmp_path / f"{name}.cubin")],
                              capture_output=True, text=True)
        assert proc.returncode == 0, f"{name}: {proc.stderr}"


@pytest.fixture(scope="module")
def llvm_ir() -> str:
    if tools.missing_tools("mlir-translate"):
        pytest.skip(tools_missing_reason("mlir-translate"))
    return tools.to_llvm_ir(dict(modules())["add_b128_w4"])


def test_llvm_ir(llvm_ir):
    assert 'target triple = "nvptx64-nvidia-cuda"' in llvm_ir
    assert "define void @k_add_kernel(ptr %0, ptr %1, ptr %2, i32 %3)" in llvm_ir
    assert "@llvm.nvvm.read.ptx.sreg.tid.x()" in llvm_ir


def test_llc_makes_ptx_from_the_llvm_ir(llvm_ir, tmp_path):
    if tools.missing_tools("llc"):
        pytest.skip(tools_missing_reason("llc"))
    (tmp_path / "add.ll").write_text(llvm_ir)
    out = tools.run("llc", ["-march=nvptx64", "-mcpu=sm_90", "-o", "-", str(tmp_path / "add.ll")], "",
                    "compile the LLVM IR to PTX")
    assert ".visible .entry k_add_kernel(" in out and ".maxntid 128, 1, 1" in out


def test_math_without_libdevice_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(tools, "find_libdevice", lambda: None)
    with pytest.raises(tools.MLIRToolError, match=r"calls libdevice functions \(__nv_expf\).*MYTRITON_LIBDEVICE"):
        tools.to_ptx(dict(modules())["softmax_b32_w1"])


def test_tool_errors_carry_the_diagnostics():
    with pytest.raises(tools.MLIRToolError, match="failed to parse and verify the module(.|\n)*bogus.op"):
        tools.verify("module {\n  bogus.op\n}\n")
    good = dict(modules())["add_b128_w4"]
    report = tools.verify_many([good, "module {\n  %0 = arith.addi\n}\n", good])
    assert report[0] is None and report[2] is None and "error" in report[1]

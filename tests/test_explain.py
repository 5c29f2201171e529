"""The build says when a kernel's common launches fall off Hopper's fast path (one note per kernel,
with an example and its reason), and ``--explain`` prints the compiler's story of every compile;
the story survives the previous build, the pending compiles and the shared cache. (CPU only.)"""
from __future__ import annotations

import shutil

import pytest

from mytriton.aot import build_packages
from mytriton.aot.explain import hopper_target, off_path
from test_aot_support import REPO, run_cli, write_project

PLAIN = ('{a_ptr: "*fp16", b_ptr: "*fp16", c_ptr: "*fp16", M: i32, N: i32, K: i32, stride_am: i32, stride_ak: i32, '
         'stride_bk: i32, stride_bn: i32, stride_cm: i32, stride_cn: i32}')


def manifest(targets: str, specs: str, specialize: bool = True) -> str:
    return (f"package: exq\ntargets: [{targets}]\nkernels:\n  - kernel: kernels/wrapped_gemm.py:wrapped_matmul\n"
            f"    signature: {PLAIN}\n" + ("" if specialize else "    specialize: false\n")
            + f"    specializations:\n{specs}")


BIG = "      - {BM: 128, BN: 128, BK: 32, GROUP: 8, num_warps: 8}\n"
SMALL = "      - {BM: 32, BN: 32, BK: 32, GROUP: 8, num_warps: 4}\n"


def project(tmp_path, text: str):
    write_project(tmp_path, text, kernels="")
    shutil.copy(REPO / "manifests" / "kernels" / "wrapped_gemm.py", tmp_path / "kernels" / "wrapped_gemm.py")


def build(tmp_path, **options) -> tuple[list, list]:
    lines, notes = [], []
    build_packages([str(tmp_path / "m.yaml")], out_dir=str(tmp_path / "out"), jobs=1, echo=lines.append,
                   notify=notes.append, cache_dir=tmp_path / "cache", **options)
    return lines, [n for n in notes if "off Hopper's fast path" in n]


def test_a_kernel_off_the_fast_path_gets_one_note_with_its_reason(tmp_path):
    project(tmp_path, manifest("sm_80, sm_90a", BIG + SMALL))
    _, notes = build(tmp_path)
    assert notes == ["note: exq: wrapped_matmul: 1 of 2 specializations off Hopper's fast path on sm_90a, e.g. BM=32 "
                     "BN=32 BK=32 GROUP=8 w4 (its specialized variant): wrapped_gemm.py:29: tl.dot 32x32 @ 32x32 fp16: "
                     "mma.sync; not wgmma: the result's 32 rows are not a multiple of 64 (64 rows for each of the 1 "
                     "warpgroup of num_warps=4); A copied by cp.async into a 3-buffer ring; B copied by cp.async into "
                     "a 3-buffer ring (mytriton-build --explain says it for every compile)"]
    # the story comes back with the previous build's artifacts, and from the shared cache
    _, again = build(tmp_path)
    assert again == notes
    shutil.rmtree(tmp_path / "out")
    _, cached = build(tmp_path)
    assert cached == notes


def test_the_fast_path_gets_no_note(tmp_path):
    project(tmp_path, manifest("sm_80, sm_90a", BIG))
    assert build(tmp_path)[1] == []
    project(tmp_path, manifest("sm_80", SMALL))      # (no Hopper target: mma.sync is the fastest there is)
    assert build(tmp_path)[1] == []


def test_without_the_variant_the_plain_loads_are_the_reason(tmp_path):
    project(tmp_path, manifest("sm_90a", BIG, specialize=False))
    (note,) = build(tmp_path)[1]
    assert "e.g. BM=128 BN=128 BK=32 GROUP=8 w8: wrapped_gemm.py:29: tl.dot 128x32 @ 32x128 fp16: wgmma; A loaded " \
           "into registers and stored into a 4-buffer ring: its addresses are not proven contiguous along dimension " \
           "1 (that dimension's stride is not promised to be 1" in note


def test_an_sm_90_build_without_sm_90a_is_told_to_add_it(tmp_path):
    project(tmp_path, manifest("sm_90", BIG))
    (note,) = build(tmp_path)[1]
    assert "off Hopper's fast path on sm_90" in note and "not wgmma: the target is sm_90: wgmma is the sm_90a " \
                                                         "target's (add sm_90a to the targets for H100/H200)" in note


def test_explain_prints_every_compile_s_story(tmp_path):
    project(tmp_path, manifest("sm_90a", SMALL))
    result = run_cli(["m.yaml", "--no-cache", "-j", "1", "--explain"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "exq:\n  wrapped_matmul BM=32 BN=32 BK=32 GROUP=8 w4 sm_90a:\n    wrapped_gemm.py:29: tl.dot 32x32 @ " \
           "32x32 fp16: mma.sync; not wgmma:" in out
    assert "  wrapped_matmul BM=32 BN=32 BK=32 GROUP=8 w4 specialized sm_90a:\n    wrapped_gemm.py:29:" in out
    assert "off Hopper's fast path" in result.stderr


@pytest.mark.parametrize("line, off", [
    ("k.py:3: tl.dot 64x32 @ 32x64 fp16: wgmma; A copied by cp.async into a 3-buffer ring; B copied by cp.async "
     "into a 3-buffer ring", False),
    ("k.py:3: tl.dot 64x32 @ 32x64 fp32: wgmma; A copied by cp.async into a 3-buffer ring; B loaded into registers "
     "and stored into a 3-buffer ring: the ring holds the tile along dimension 0 and its memory runs along "
     "dimension 1: it is transposed through registers (wgmma reads tf32 and int8 B along K only)", False),
    ("k.py:3: tl.dot: wgmma; A loaded into registers and stored into a 4-buffer ring: its runs are not proven "
     "16-byte aligned; B loaded into registers and stored into a 3-buffer ring: it is transposed through "
     "registers", True),
    ("k.py:3: tl.dot: mma.sync; not wgmma: the target is sm_90: ...", True),
    ("k.py:3: tl.dot: the CUDA cores (no tensor-core instruction takes these types and shapes); not wgmma: wgmma "
     "does not compute fp64 x fp64 into fp64; A stored to shared memory each step (not pipelined)", True),
])
def test_off_path_reads_the_story(line, off):
    assert off_path(line) is off


def test_the_hopper_target():
    assert hopper_target(("sm_80", "sm_90", "sm_90a")) == "sm_90a" and hopper_target(("sm_90",)) == "sm_90"
    assert hopper_target(("sm_80", "sm_86")) is None

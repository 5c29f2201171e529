"""Launch bounds chosen from ptxas's register report (backends/cuda/occupancy.py) and the cubin
reader they rest on (backends/cuda/cubin.py): NVRTC on the CPU, no GPU. The H200 measurements that
motivate them are in the module's docstring and benchmarks/RESULTS.md."""
import re
import sys
from pathlib import Path

import pytest

import mytriton
from mytriton.backends.cuda import nvrtc, occupancy
from mytriton.backends.cuda.cubin import resources
from mytriton.backends.cuda.occupancy import LIMITS, blocks_per_sm, with_min_blocks
from mytriton.errors import NVRTCError
from tests.kernels import basic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "manifests" / "kernels"))
import gemm  # noqa: E402
import reductions  # noqa: E402
import softmax  # noqa: E402

H100 = LIMITS[(9, 0)]
SOFTMAX_SIG = {"x": "*fp32:16", "y": "*fp32:16", "n_cols": "i32"}


def bounds(cu: str) -> str:
    (found,) = re.findall(r'^extern "C" __global__ void (__launch_bounds__\([^)]*\))', cu, re.M)
    return found


@pytest.mark.parametrize("threads,registers,shared,blocks", [
    (512, 36, 64, 3),        # 36 registers: 1280 a warp, 20480 a block -> 3 blocks
    (512, 32, 64, 4),        # 32: 4 blocks, 2048 threads
    (32, 255, 0, 8),         # one warp, 255 registers (8192 a warp)
    (32, 168, 0, 12),
    (32, 16, 0, 32),         # at most 32 blocks an SM
    (128, 16, 0, 16),        # at most 2048 threads
    (128, 32, 100 * 1024, 2),  # shared memory: 228 KB an SM, 1 KB kept for each block
    (96, 40, 0, 17),         # 3 warps of 40 registers (1280 a warp)
])
def test_the_blocks_an_sm_runs(threads, registers, shared, blocks):
    assert blocks_per_sm(H100, threads, registers, shared) == blocks


def test_the_launch_bounds_rewritten_are_the_kernels_own():
    cu = ("  // x.py:3: y = 1  # __launch_bounds__(32)\n"
          'extern "C" __global__ void __launch_bounds__(512)\nk_f(float* p)\n{\n}\n')
    out = with_min_blocks(cu, 4)
    assert 'extern "C" __global__ void __launch_bounds__(512, 4)\n' in out and "# __launch_bounds__(32)\n" in out
    assert bounds(with_min_blocks(out, 3)) == "__launch_bounds__(512, 3)"
    with pytest.raises(ValueError, match="no kernel declaration"):
        with_min_blocks("// __launch_bounds__(32)\n", 2)


def test_the_cubin_reader_gives_ptxas_registers_and_stack():
    """Stated 16 blocks of one warp, ptxas caps the softmax of 4096 columns (128 values a thread)
    at 128 registers and spills into a stack frame; stated 4 blocks of 16 warps, it fits 32."""
    ck = mytriton.compile(softmax.softmax_kernel, SOFTMAX_SIG, {"BLOCK": 4096}, num_warps=1, target="sm_90")
    symbol = ck.metadata["name"]
    squeezed = resources(nvrtc.compile_cubin(with_min_blocks(ck.asm["cu"], 16), "k.cu", "sm_90"), symbol)
    assert squeezed.registers <= 128 and squeezed.stack > 0
    ck16 = mytriton.compile(softmax.softmax_kernel, SOFTMAX_SIG, {"BLOCK": 4096}, num_warps=16, target="sm_90")
    fit = resources(nvrtc.compile_cubin(with_min_blocks(ck16.asm["cu"], 4), "k.cu", "sm_90"), ck16.metadata["name"])
    assert fit.registers <= 32 and fit.stack == 0
    with pytest.raises(ValueError, match="no function 'nope'"):
        resources(ck.asm["cubin"], "nope")
    with pytest.raises(ValueError, match="not a 64-bit"):
        resources(b"PTX", symbol)


@pytest.mark.parametrize("threads,registers,blocks", [
    (512, 36, 4),            # 3 -> 4 blocks: 32 registers a thread
    (32, 255, 11),           # 8 -> 11: 184 registers (two thirds of 255 is 170)
    (128, 40, 16),           # 12 -> 16: 32 registers
    (128, 32, None),         # 16 blocks already: as many threads as an SM runs
    (32, 72, None),          # 28 blocks: 32 (64 registers) gains too little to compile twice
    (512, 56, 3),            # 2 -> 3 blocks (40 registers); 4 would leave 32, under two thirds of 56
])
def test_the_blocks_asked_of_ptxas(threads, registers, blocks):
    assert occupancy.target_blocks(H100, threads, registers, 0) == blocks


@pytest.mark.parametrize("warps,block,blocks", [(16, 4096, 4), (1, 2048, 23)])
def test_a_kernel_without_loops_takes_the_blocks_its_registers_allow(warps, block, blocks):
    """The row softmax with BLOCK 4096 or 2048 (n_cols not known to be a multiple of 16):
    ptxas's own choice holds it to 3 blocks of 16 warps (36 registers) and 16 of one warp (128);
    settled, 4 and 23, with no stack frame. The PTX is made from the settled source, whichever
    stage is read first."""
    ck = mytriton.compile(softmax.softmax_kernel, SOFTMAX_SIG, {"BLOCK": block}, num_warps=warps, target="sm_90")
    ptx = ck.asm["ptx"]                      # (read first: the source settles before it)
    assert bounds(ck.asm["cu"]) == f"__launch_bounds__({32 * warps}, {blocks})"
    assert f".minnctapersm {blocks}" in ptx
    got = resources(ck.asm["cubin"], ck.metadata["name"])
    assert got.stack == 0 and blocks_per_sm(H100, 32 * warps, got.registers, ck.metadata["shared"]) >= blocks


def test_kernels_already_at_their_most_blocks_are_compiled_once(monkeypatch):
    calls = []
    real = nvrtc.compile_program
    monkeypatch.setattr(nvrtc, "compile_program", lambda *a, **k: calls.append(a) or real(*a, **k))
    ck = mytriton.compile(basic.add_kernel, {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": "i32"},
                          {"BLOCK": 1024}, num_warps=4, target="sm_90")
    assert bounds(ck.asm["cu"]) == "__launch_bounds__(128)" and ck.asm["cubin"][:4] == b"\x7fELF"
    assert ".maxntid 128" in ck.asm["ptx"]
    assert len(calls) == 1                   # (8 values a thread: 16 blocks of 128 threads already; the PTX too)


def test_loops_and_tensor_core_kernels_keep_their_launch_bounds():
    """A run-time loop's registers are its loads in flight (the streaming loops' rules in
    codegen._registers_first); tensor-core kernels size theirs in dot.py: neither is settled."""
    ck = mytriton.compile(basic.matmul_kernel, {"a": "*fp32", "b": "*fp32", "c": "*fp32", "M": "i32", "N": "i32", "K": "i32"},
                          {"BM": 64, "BN": 64}, num_warps=4, target="sm_90")
    assert ck.asm._settle is None and bounds(ck.asm["cu"]) in ("__launch_bounds__(128)", "__launch_bounds__(128, 1)")
    sig = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16",
           **{p: "i32:16" for p in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")}}
    ck = mytriton.compile(gemm.matmul_kernel, sig, {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_M": 128,
                                                    "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "ACTIVATION": ""},
                          num_warps=4, target="sm_90a")
    assert ck.asm._settle is None


@pytest.mark.parametrize("block,warps,want", [
    (1024, 8, "__launch_bounds__(256, 4)"),  # 8 warps streaming a tile of 4 elements a thread: 64 registers
    (256, 8, "__launch_bounds__(256, 4)"),   # one element a thread
    (128, 8, "__launch_bounds__(256)"),      # fewer elements than threads
    (1024, 4, "__launch_bounds__(128, 1)"),  # 4 warps: the registers first
    (4096, 8, "__launch_bounds__(256)"),     # 16 a thread: left to ptxas
    (1024, 16, "__launch_bounds__(512)"),    # 16 warps: not measured, left alone
])
def test_streaming_loops_of_8_warps_state_4_blocks_an_sm(block, warps, want):
    """codegen._streaming_blocks: a run-time loop that loads a tile of one to eight elements a
    thread, in blocks of 8 warps, states 4 blocks an SM; ptxas then gives the row sum of 4 elements
    a thread more than the 32 registers a full SM leaves, and the cubin still runs 4 blocks."""
    ck = mytriton.compile(reductions.row_sum_kernel, {"x": "*fp32:16", "out": "*fp32:16", "n_cols": "i32"},
                          {"BLOCK": block}, num_warps=warps, target="sm_90")
    assert bounds(ck.asm["cu"]) == want
    if want.endswith(", 4)"):
        assert ".minnctapersm 4" in ck.asm["ptx"]
        got = resources(ck.asm["cubin"], ck.metadata["name"])
        assert got.registers <= 64 and got.stack == 0
        assert got.registers > 32 or block < 1024      # (4 loads a thread: more than a full SM leaves)
        assert blocks_per_sm(H100, 32 * warps, got.registers, ck.metadata["shared"]) >= 4


@pytest.mark.parametrize("target", ["sm_90", "sm_90a"])      # (mma.sync; wgmma)
def test_tensor_core_loops_of_8_warps_keep_their_own_launch_bounds(target):
    """A tl.dot kernel of 8 warps whose K loop loads tiles of 8 elements a thread (64x32) is not
    a streaming loop (codegen._streaming_blocks): dot.py sizes its registers (4 blocks an SM made
    ptxas fail on the 128x256x64 wgmma GEMM and on attention: "Insufficient registers (64)")."""
    sig = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16",
           **{p: "i32:16" for p in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")}}
    ck = mytriton.compile(gemm.matmul_kernel, sig, {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_M": 64,
                                                    "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "ACTIVATION": ""},
                          num_warps=8, target=target)
    assert bounds(ck.asm["cu"]) in ("__launch_bounds__(256)", "__launch_bounds__(256, 1)", "__launch_bounds__(256, 2)")
    assert ck.asm["cubin"][:4] == b"\x7fELF"


def test_a_failing_compile_still_shows_the_generated_source(monkeypatch):
    def fails(*args):
        raise NVRTCError("error: boom")
    monkeypatch.setattr(occupancy, "settle", fails)
    ck = mytriton.compile(softmax.softmax_kernel, SOFTMAX_SIG, {"BLOCK": 4096}, num_warps=16, target="sm_90")
    with pytest.raises(NVRTCError, match="boom"):
        ck.asm["cubin"]
    assert bounds(ck.asm["cu"]) == "__launch_bounds__(512)"     # as generated
    assert ck.asm["cubin"][:4] == b"\x7fELF"                     # (then compiled as it is)


def test_a_cubin_it_cannot_read_leaves_the_kernel_as_generated(monkeypatch):
    """Settling is an optimization: a cubin whose resources cannot be read (another NVRTC's
    layout) keeps the first compile, and the build goes on."""
    def unreadable(cubin, symbol):
        raise ValueError("unknown .nv.info attribute format 9")
    monkeypatch.setattr(occupancy, "resources", unreadable)
    ck = mytriton.compile(softmax.softmax_kernel, SOFTMAX_SIG, {"BLOCK": 4096}, num_warps=16, target="sm_90")
    assert bounds(ck.asm["cu"]) == "__launch_bounds__(512)" and ck.asm["cubin"][:4] == b"\x7fELF"

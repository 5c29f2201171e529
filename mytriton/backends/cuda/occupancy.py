"""Launch bounds that buy occupancy: the thread blocks an SM runs at once, from ptxas's own report.

Told only a kernel's block size (``__launch_bounds__(threads)``), ptxas gives a thread the registers
its schedule wants, and a few registers more than a step of the SM's register file can cost a whole
block an SM. For a kernel without a run-time loop — each thread loads, computes and stores once,
so the SM hides memory latency only with other blocks — that is most of its speed: the row softmax
of 3000 columns on 16 warps took 36 registers (3 blocks an SM), Triton's 32 (4); stated four blocks,
ptxas fits 32 without spilling, and the kernel went from 0.86 to 0.99 of Triton's throughput on the
H200 (one warp, BLOCK=2048: 128 registers, 16 blocks; stated 23 blocks, 80 registers).

``settle`` compiles the kernel, reads its registers from the cubin (``cubin.resources``), computes
the blocks an SM can run from them, the threads and the shared memory (``blocks_per_sm``), and
where the registers are what holds it back, compiles once more stating the most blocks that
leave a thread two thirds of its registers or more, where that gains a quarter more threads an
SM (``target_blocks``, ``__launch_bounds__(threads, blocks)``); it keeps that where ptxas reached
the blocks without a larger stack frame (without spilling). One compile more at most, as build
time is a product metric: the 244 straight-line kernels of ``benchmarks/sweep.py`` compile in
24.4 s instead of 17.1 (one process); a binary search over the block counts took 45.3 s for a
few per cent more on some of them.
Which kernels take part is the code generator's choice (``CudaEmitter.occupancy_tunable``): loops
keep the registers they were given (a streaming loop's registers are its loads in flight), and so
do tensor-core kernels, which size theirs in ``dot.py``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import NVRTCError
from . import nvrtc
from .cubin import resources

SQUEEZE = 2 / 3                # the least share of its registers a thread is asked to do with
MIN_GAIN = 1.25                # the fewest more threads an SM worth a second compile (x those it had)


@dataclass(frozen=True)
class SmLimits:
    threads: int               # resident threads an SM
    blocks: int                # resident thread blocks an SM
    registers: int             # 32-bit registers an SM
    shared: int                # bytes of shared memory an SM gives blocks
    block_reserve: int = 1024  # shared memory the driver keeps for each block


# CUDA's occupancy data per compute capability (the targets a build names: sm_80, sm_86, sm_89, sm_90)
LIMITS = {
    (8, 0): SmLimits(2048, 32, 65536, 167936),
    (8, 6): SmLimits(1536, 16, 65536, 102400),
    (8, 9): SmLimits(1536, 24, 65536, 102400),
    (9, 0): SmLimits(2048, 32, 65536, 233472),
}
REGISTER_UNIT = 256            # registers are given to a warp in steps of 256 (8 a thread)
MAX_REGISTERS = 255            # a thread's most

_BOUNDS = re.compile(r'^(extern "C" __global__ void __launch_bounds__\()(\d+)(?:, \d+)?\)', re.M)


def limits(target: str) -> SmLimits | None:
    num, _ = nvrtc.check_target(target)
    return LIMITS.get((num // 10, num % 10))


def blocks_per_sm(lim: SmLimits, threads: int, registers: int, shared: int) -> int:
    """The thread blocks of ``threads`` threads, ``registers`` registers a thread and ``shared``
    bytes of shared memory a block that one SM runs at once."""
    warps = -(-threads // 32)
    per_warp = -(-registers * 32 // REGISTER_UNIT) * REGISTER_UNIT
    by_shared = lim.shared // (shared + lim.block_reserve) if shared else lim.blocks
    return max(0, min(lim.blocks, lim.threads // (warps * 32), lim.registers // (per_warp * warps), by_shared))


def with_min_blocks(cu: str, blocks: int) -> str:
    """``cu`` with its kernel's launch bounds stating ``blocks`` blocks an SM (the kernel's own
    declaration line only: a source comment that looks like one is left as it is)."""
    out, n = _BOUNDS.subn(lambda m: f"{m.group(1)}{m.group(2)}, {blocks})", cu, count=1)
    if n != 1:
        raise ValueError("no kernel declaration with __launch_bounds__ in the generated CUDA")
    return out


def settle(cu: str, source_name: str, target: str, symbol: str, threads: int, shared: int,
           ptxas_options: tuple[str, ...] = ()) -> tuple[str, nvrtc.Program]:
    """The CUDA source and its compile (cubin and PTX), stating more blocks an SM where the
    registers ptxas chose hold the occupancy back and a second compile reaches that many without a
    larger stack frame (``cu`` itself otherwise); ``symbol`` is the kernel's name in the cubin. Only
    the first compile may fail: a cubin that cannot be read (another NVRTC's layout) or a second
    compile that fails leaves the kernel as generated — an optimization never fails a build.
    ``ptxas_options`` go to both compiles (``nvrtc.compile_program``)."""
    program = nvrtc.compile_program(cu, source_name, target, ptxas_options=ptxas_options)
    lim = limits(target)
    if lim is None:
        return cu, program
    try:
        first = resources(program.cubin, symbol)
        want = target_blocks(lim, threads, first.registers, shared)
        if want is None:
            return cu, program
        src = with_min_blocks(cu, want)
        out = nvrtc.compile_program(src, source_name, target, ptxas_options=ptxas_options)
        got = resources(out.cubin, symbol)
    except (ValueError, NVRTCError):
        return cu, program
    if got.stack <= first.stack and blocks_per_sm(lim, threads, got.registers, shared) >= want:
        return src, out
    return cu, program


def target_blocks(lim: SmLimits, threads: int, registers: int, shared: int) -> int | None:
    """The blocks an SM to ask ptxas for, or None where the registers do not hold the occupancy
    back by much: the most that leave a thread at least ``SQUEEZE`` of the registers it took (a cap
    ptxas meets by scheduling, not by spilling: 36 -> 32 for 16 warps, 255 -> 184 for one), where
    that is ``MIN_GAIN`` times the threads an SM had or more (3 -> 4 blocks of 16 warps, 8 -> 11 of
    one; not 20 -> 23)."""
    have = blocks_per_sm(lim, threads, registers, shared)
    for blocks in range(blocks_per_sm(lim, threads, 8, shared), have, -1):
        if budget(lim, threads, blocks) >= SQUEEZE * registers:
            return blocks if blocks * threads >= MIN_GAIN * have * threads else None
    return None


def budget(lim: SmLimits, threads: int, blocks: int) -> int:
    """The registers a thread may take for ``blocks`` blocks of ``threads`` threads to fit an SM."""
    warps = -(-threads // 32)
    per_warp = lim.registers // (blocks * warps) // REGISTER_UNIT * REGISTER_UNIT
    return min(MAX_REGISTERS, per_warp // 32)

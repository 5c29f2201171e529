"""SSA (with layouts) → CUDA C++.

Each block value becomes a per-thread register array (``float v7[8]``) indexed by register number;
elementwise ops become fully unrolled loops over it. Register ``r`` of a value holds the element
whose coordinates the value's linear layout gives (ir/layout.py ``to_linear``); the index arithmetic
(coordinates, shared-memory offsets, operand registers, owners) is rendered from it by
ir/indexing.py as shifts and masks of ``r`` and ``tid`` (threadIdx.x). Reductions combine in registers, then across lanes with ``__shfl_xor_sync``,
then across warps through shared memory; layout conversions go through shared memory. A store
happens once per element and program: of the threads holding copies of an element, one stores.

User text reaches the code only through ``backends/names.py``: parameters are ``p_<name>``, the kernel
``k_<name>`` (its ``extern "C"`` symbol), and source lines, file names and constexpr values in
comments are escaped; constants are spelled bit-exact by ``c_literal``.
"""
from __future__ import annotations

import functools
import math
import os
import re

import jinja2

from ... import __version__
from ..._paths import templates_dir
from ..names import PARAM, c_identifier, c_string, comment_text, kernel_symbol
from . import hints, tma
from .atomics import atomic_statement
from .dot import dot_mma, dot_portable, plan_rings, staged_load
from .nvrtc import check_target
from ...ir.exchange import plan_exchange
from ...ir.indexing import REG, coordinate_exprs, offset_expr, owner_masks, register_expr, thread_bits_expr
from ...ir.layout import MmaLayout, SliceLayout, num_regs, permuted_registers, to_linear
from ...ir.libdevice import FUNCTIONS as LIBDEVICE
from ...ir.libdevice import declaration as libdevice_declaration
from ...ir.linear import LANE, REGISTER, WARP, LinearLayout, thread_bit
from ...ir.ops import (ASM_REGISTERS, OPS, REDUCE_COMBINE, REDUCE_KINDS, asm_registers, cache_hint, constant_value,
                       exact_decimal, float_bits, libdevice_signature, print_format,
                       print_line_format)
from ...ir.printer import Printer
from ...ir.regions import control_operands, sources_of, step_sign
from ...ir.ssa import Const, Function, Op, Param, Region, Value, use_counts, walk
from ...ir.types import BF16, F16, F32, TMAP, BlockType, PointerType, ScalarType, shape_of
from ...passes.axisinfo import analyze
from ...passes.layout import UNROLLED_ELEMENTS_PER_THREAD

_env = None


def _jinja() -> jinja2.Environment:
    global _env
    if _env is None:
        _env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())),
                                  trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                                  undefined=jinja2.StrictUndefined)
        _env.filters["comment"] = comment_text        # user text in the template's comments
    return _env


# --- index expressions (ir/indexing.py) as C++ -------------------------------------------------------

class _CIndex:
    """An ``IndexBuilder`` that prints C++ over the register expression ``reg`` and ``tid``."""
    def __init__(self, reg: str):
        self.reg = reg
        self.sums: set[str] = set()         # the sums made here: a + b + c, not ((a + b) + c)

    def const(self, value: int) -> str:
        return str(value)

    def var(self, name: str) -> str:
        return self.reg if name == REG else "tid"

    def shr(self, x: str, k: int) -> str:
        return f"({x} >> {k})"

    def and_(self, x: str, mask: int) -> str:
        return f"({x} & {mask})"

    def shl(self, x: str, k: int) -> str:
        return f"({x} << {k})"

    def add(self, x: str, y: str) -> str:
        out = f"({x[1:-1] if x in self.sums else x} + {y})"
        self.sums.add(out)
        return out

    def xor(self, x: str, y: str) -> str:
        return f"({x} ^ {y})"


REGISTER_HEAVY_WORDS = 256
STREAMING_ELEMENTS_PER_THREAD = 4
STREAMING_MAX_WARPS = 4
STREAMING_WIDE_WARPS = 8            # (_streaming_blocks)
STREAMING_WIDE_THREADS = 1024
STREAMING_WIDE_SHARE = 8
# the shares (elements a thread holds) of a kernel's only loop that is unrolled 4 times (_unroll_streaming)
STREAMING_UNROLL_SHARES = (8, 64)
STREAMING_UNROLL = 4
STREAMING_UNROLL_STORING_SHARE = 8   # (the most for a loop that writes memory)
PREDICATED_HALF_SHARE = 8            # the most elements a thread of a predicated load (_predicated_half_loads)
# the share (elements a thread loads) of a loop's load that cp.async copies, and the most shared
# memory the copies' buffers take in all (_copied_loads)
COPIED_LOAD_SHARE = 128
COPIED_LOAD_BYTES = 32 * 1024


def _registers_first(fn: Function, shares: list[tuple[int, Value]]) -> bool:
    """Whether the kernel tells ptxas that one thread block an SM will do (``__launch_bounds__(
    threads, 1)``), so that it gives each thread the registers its code wants. Told only the block
    size, ptxas caps a thread's registers at what the most blocks an SM can run leave (32 a thread
    from 2 warps up, 64 on one warp) whenever it can get there by spilling or by issuing fewer
    loads at once. That is wrong for

    - a thread holding a value (not a pointer tile: ptxas makes those from a base and offsets as
      it goes) of ``REGISTER_HEAVY_WORDS`` 32-bit words or more, which spills anyway: the 128x128
      outer-product matmul on 2 warps took 32 registers and 1888 bytes of stack, 10x Triton's time
      (stated: 255 registers and 360 bytes);
    - a loop that streams memory (a run-time loop whose body loads) in a block of at most
      ``STREAMING_MAX_WARPS`` warps whose threads each hold ``STREAMING_ELEMENTS_PER_THREAD``
      elements or more of a tile: the registers are the loads it keeps in flight. On the H200
      (``benchmarks/sweep.py``, every configuration of the looped kernels both ways): the row
      sum's geomean went from 1.42 to 1.54 x Triton, layer norm's from 1.12 to 1.17 and its worst
      from 0.88 to 0.99, the outer-product matmul's worst from 0.48 to 0.53. Larger blocks (8
      warps) and threads holding less lost (layer norm BLOCK=1024 on 8 warps 1.04 -> 0.77):
      their blocks' barriers want the occupancy. Kernels on the tensor cores are left to
      ``backends/cuda/dot.py``, which sizes their registers itself."""
    if any(isinstance(v.layout, MmaLayout) for _, v in shares):
        return False
    if any(n * _smem_bytes(v.type.scalar) >= 4 * REGISTER_HEAVY_WORDS for n, v in shares
           if not isinstance(v.type.scalar, PointerType)):
        return True
    if fn.num_warps > STREAMING_MAX_WARPS or not shares or max(n for n, _ in shares) < STREAMING_ELEMENTS_PER_THREAD:
        return False
    return any(OPS[op.name].loop and any(OPS[inner.name].reads_memory for r in op.regions for inner in walk(r))
               for op in walk(fn.body))


def _streaming_blocks(fn: Function, registers_first: bool) -> int | None:
    """The thread blocks an SM that a kernel of ``STREAMING_WIDE_WARPS`` warps states
    (``__launch_bounds__``) where a run-time loop streams memory in tiles of one to
    ``STREAMING_WIDE_SHARE`` elements a thread: ``STREAMING_WIDE_THREADS`` threads an SM (4
    blocks), which lets ptxas give a thread up to 64 registers. Told only the block size, ptxas
    caps such a thread at 32 (the full SM) and issues fewer of an iteration's loads at once; one
    block an SM (``_registers_first``) costs these blocks' barriers too much occupancy. Measured on
    an H100 (``benchmarks/sweep.py``, the row sum and the layer norm, ratio to Triton, A B B A):
    row sum BLOCK=1024 no ``:16`` 0.99 -> 1.14, BLOCK=256 1.30 -> 1.45, layer norm BLOCK=2048 no
    ``:16`` 0.96 -> 1.04, BLOCK=256 1.04 -> 1.10; the most lost, layer norm BLOCK=1024 ``:16``
    1.09 -> 1.06. Left out: tiles of fewer elements than threads (layer norm BLOCK=16 1.30 ->
    1.16) and of 16 a thread (BLOCK=4096: the fp32 layer norm 1.06 -> 1.06, the row sum 1.34 ->
    1.39, but the fp16 layer norm of ``benchmarks/bench.py``, whose loop runs once, 1.04 -> 0.96:
    60 registers, 4 blocks an SM where 42 ran 6). 6 blocks (40 registers) lost at the layer
    norm's BLOCK=4096 (1.06 -> 0.90). None elsewhere, and for kernels with a ``tl.dot``
    (``backends/cuda/dot.py`` sizes their registers)."""
    threads = 32 * fn.num_warps
    if registers_first or fn.num_warps != STREAMING_WIDE_WARPS or any(op.name == "dot" for op in walk(fn.body)):
        return None                          # (tensor-core kernels size their registers in dot.py)
    for loop in walk(fn.body):
        if OPS[loop.name].loop and any(op.name == "load" and isinstance(op.result.type, BlockType)
                                       and threads <= op.result.type.numel <= STREAMING_WIDE_SHARE * threads
                                       for r in loop.regions for op in walk(r)):
            return STREAMING_WIDE_THREADS // threads
    return None


def _run_time_for(op: Op) -> bool:
    """Whether ``op`` is a ``for`` loop whose start, stop or step is a run-time value."""
    return op.name == "for" and not all(isinstance(v, Const) for v in op.operands[:3])


def _unroll_streaming(fn: Function, shares: list[tuple[int, Value]], registers_first: bool) -> Op | None:
    """The loop that the kernel asks ptxas to unroll ``STREAMING_UNROLL`` times (``#pragma unroll``),
    where the kernel has no loop hint of its own: its only loop, a run-time one that reads memory,
    in a kernel given the registers it wants (``_registers_first``), whose threads hold
    ``STREAMING_UNROLL_SHARES`` elements. Left to itself, ptxas unrolls such loops 2 to 16 times
    by their size, and the small bodies least: the row sum at BLOCK=256 on one warp (two 16-byte
    loads an iteration) ran 2 iterations at once, 4 loads in flight where Triton's had 8. Measured
    on the H200 (``benchmarks/sweep.py``, every configuration both ways, one session): row sum
    BLOCK=256 on one warp 0.65 -> 0.98 of Triton, the row sum's geomean 1.55 -> 1.65, the seed
    matmul's 1.49 -> 1.61 (shares of 32 and 64 on 2 and 4 warps gained 1.1 to 2.5x: 16x128 on 2
    warps 1.11 -> 2.72). Left out where it lost: shares of 4 (with 16-byte runs ptxas unrolls
    those further itself: row sum BLOCK=128 on one warp 2.11 -> 1.01; without, nothing moved), of
    128 and more (row sum BLOCK=4096 on one warp 1.67 -> 1.54, the staged 128x128 matmul on 4 warps
    1.00 -> 0.74), and kernels of several loops (the layer norm's three: BLOCK=4096 on 4 warps 1.09
    -> 0.87). Its one loss kept: the matmul's 32x64 tile on one warp, 0.82 -> 0.78. Loops whose
    operands come through shared-memory rings pipeline on their own (``backends/cuda/dot.py``).
    A loop that writes memory (tutorial 02's softmax by persistent programs: a row's loads, two
    reductions through shared memory and the row's stores an iteration) is unrolled only where its
    threads hold at most ``STREAMING_UNROLL_STORING_SHARE`` elements. On an H100 (``manifests/kernels/
    rows.py``, 4 warps, 3 and 4 stages, A B B A): 32 fp16 elements a thread (BLOCK=4096) went
    from 0.94 to 1.00 of Triton at 4096 columns and from 1.03 to 1.11 at 3000 without the unroll
    (2166 SASS instructions and 16 barriers in the loop, against Triton's 544), 32 fp32 ones from
    0.99 to 0.98; 8 a thread lost without it (fp16 1024 columns 1.05 -> 1.02)."""
    if not registers_first or not shares:
        return None
    loops = [op for op in walk(fn.body) if OPS[op.name].loop]
    lo, hi = STREAMING_UNROLL_SHARES
    share = max(n for n, _ in shares)
    if len(loops) != 1 or not lo <= share <= hi:
        return None
    loop = loops[0]
    if not _run_time_for(loop) or loop.attrs.get("loop_unroll_factor") is not None:
        return None
    inner = [o for r in loop.regions for o in walk(r)]
    if share > STREAMING_UNROLL_STORING_SHARE and any(OPS[o.name].writes_memory for o in inner):
        return None
    return loop if any(OPS[o.name].reads_memory for o in inner) else None


def _rolled_half_loops(fn: Function) -> set[int]:
    """The run-time ``for`` loops (ids) left rolled for ptxas to unroll (``mt_rolled_bound``, as
    the outer-product loops of ``passes/layout._rolled_pays``) in a kernel of several loops: those
    that load fp16 or bf16. NVVM unrolls such a loop by its own count and leaves a remainder loop
    of one iteration at a time, which issues one iteration's loads and waits for them; ptxas, given
    the rolled loop, unrolls it as it does Triton's (4 iterations, then 2, then 1). Measured on an
    H200 (``manifests/kernels/rows.py``'s layer norm on 4096 x 4096, ratio to Triton, same run):
    fp16 BLOCK=4096 on 8 warps (``benchmarks/bench.py``'s, its loops run once) 0.964 -> 1.019,
    BLOCK=2048 on 8 warps 0.805 -> 0.875, BLOCK=256 on 8 warps 1.01 -> 1.14, BLOCK=128 on one
    warp 0.89 -> 0.95; the most lost, BLOCK=512 on 4 warps 0.93 -> 0.92. On an H100 (A/B, two
    runs): BLOCK=4096 on 8 warps 1.03 -> 1.06, 2048 on 8 0.85 -> 0.94, 128 on one 0.91 -> 0.99; the
    most lost, 2048 on 4 warps 1.065 -> 1.02 and 512 on 4 0.95 -> 0.93. Not for fp32 loads,
    whose loops lost (BLOCK=256 on 2 warps 1.49 -> 1.04: NVVM's unrolling keeps more of their
    loads in flight), nor for a kernel's only loop (not measured)."""
    loops = [op for op in walk(fn.body) if OPS[op.name].loop]
    if len(loops) < 2:
        return set()
    return {id(loop) for loop in loops
            if _run_time_for(loop) and any(op.name == "load" and op.result.type.scalar in (F16, BF16)
                                           for r in loop.regions for op in walk(r))}


def _left_rolled(loop: Op, rolled_halves: set[int]) -> bool:
    """Whether a loop is left rolled for ptxas to unroll (its bound read through
    ``mt_rolled_bound``): an outer-product loop that ``passes/layout._rolled_pays`` names
    (``rolled``), or one of ``_rolled_half_loops``."""
    return bool(loop.attrs.get("rolled")) or id(loop) in rolled_halves


def _predicated_half_loads(fn: Function, rolled: set[int]) -> set[int]:
    """The loads (ids) of the loops of ``_rolled_half_loops`` that take the predicated form
    (``mt_load_pred``) where other loads in loops read ``mt_masked_off`` for a masked-off chunk:
    those of at most ``PREDICATED_HALF_SHARE`` elements a thread. Measured on an H200 (the layer
    norm fp16 on 4096 x 4096, rolled loops, ratio to Triton, same run): BLOCK=1024 on 8 warps 0.873
    -> 0.949, 2048 on 8 0.875 -> 0.939, 512 on 4 0.915 -> 0.980, 128 on one 0.950 -> 0.996; at
    16 a thread (BLOCK=4096 on 8 warps) it lost, 1.019 -> 0.988. On an H100 (A/B, two runs): 512 on
    8 warps 0.91 -> 1.03, 1024 on 8 0.92 -> 0.975, 512 on 4 0.93 -> 0.98, the geomean of 11
    configurations 1.002 -> 1.029; the most lost, 256 on 2 warps 1.057 -> 1.047."""
    return {id(op) for loop in walk(fn.body) if id(loop) in rolled for r in loop.regions for op in walk(r)
            if op.name == "load" and isinstance(op.result.type, BlockType) and op.result.layout is not None
            and num_regs(op.result.layout, op.result.type.shape) <= PREDICATED_HALF_SHARE}


def _copied_loads(fn: Function, target: str) -> list[Op]:
    """The loads a loop's iterations copy into shared memory by ``cp.async`` (sm_80 and later),
    each thread to slots of its own, and read back from there: in a ``for`` body, of 32-bit
    elements, ``COPIED_LOAD_SHARE`` or more a thread, without a cache hint and where a masked-off
    element is 0, in a loop that writes no memory (which a copy, not ordered after the thread's
    own stores, might read). A copy in flight holds no register: with the loop's accumulators
    beside them, loaded values of that many elements do not fit in the registers, and ptxas
    issues part of the loads only after the first additions, which wait for the first loads (the
    row sum BLOCK=4096 on one warp: 98 of 128 loads before the first addition). Measured on an
    H100 (A B B A): that row sum 0.93 -> 1.03 of Triton without ``:16``, 1.46 -> 1.66 with it.
    None where the buffers (two a load) would take more than ``COPIED_LOAD_BYTES`` in all, which
    costs blocks an SM: the layer norm's five such loads in three loops (160 KiB) ran 3 to 7
    times slower. Loops with a ``tl.dot`` keep their own pipeline (the rings of
    backends/cuda/dot.py); copies were not measured there."""
    if check_target(target)[0] < 80:
        return []
    loops = [loop for loop in walk(fn.body) if loop.name == "for"
             and not any(OPS[op.name].writes_memory or op.name == "dot" for op in walk(loop.regions[0]))]
    loads = [op for loop in loops for op in loop.regions[0].ops
             if op.name == "load" and isinstance(op.result.type, BlockType) and op.result.type.scalar.bits == 32
             and num_regs(op.result.layout, op.result.type.shape) >= COPIED_LOAD_SHARE
             and not op.attrs.get("volatile") and cache_hint(op.attrs) is None
             and (len(op.operands) == 1 or _zero_bits(op.operands[2]))]
    return loads if sum(2 * _copy_bytes(op, fn.num_warps) for op in loads) <= COPIED_LOAD_BYTES else []


def _copy_bytes(op: Op, num_warps: int) -> int:
    """The bytes of one of the two buffers of a copied load (_copied_loads): a block's slots."""
    return num_regs(op.result.layout, op.result.type.shape) * num_warps * 32 * 4


# what ptxas is told for kernels with a staged column in a loop NVVM unrolls (see ptxas_options)
STAGED_LOOP_PTXAS_OPTIONS = ("--register-usage-level=0",)


def ptxas_options(fn: Function, rolled_halves: set[int]) -> tuple[str, ...]:
    """The options the kernel's ptxas compile takes (layouts assigned): ``STAGED_LOOP_PTXAS_OPTIONS``
    where a loop that is not left rolled (``_left_rolled``) stages an outer product's column
    through shared memory (``passes/layout.staged_column``), none otherwise. What level 0 changes in ptxas's schedule
    was not examined (64x64 on one warp takes 175 registers instead of 177). Measured on an H100
    (``benchmarks/sweep.py``, the seed matmul, ratio to Triton, both ways in one run, A B B A):
    64x64 on one warp 0.93 -> 1.00, 128x128 on 4 warps 0.95 -> 0.97, 32x128 on one warp 0.950 ->
    0.955 (no :16), the other eight such configurations within 0.5 %. Not for rolled loops (ptxas
    unrolls those itself: 128x64 on one warp lost 1.07 -> 1.03, 128x128 on 2 warps 0.96 -> 0.95),
    nor for the rest (on every kernel, levels 0 and 10 each cost up to 25 % somewhere: 32x32 on 8
    warps 0.97 -> 0.76 at level 0, a row sum of 64 a block on one warp 2.3 -> 0.6 at level 10)."""
    return STAGED_LOOP_PTXAS_OPTIONS if _stages_in_unrolled_loop(fn.body, None, rolled_halves) else ()


def _stages_in_unrolled_loop(region: Region, loop: Op | None, rolled_halves: set[int]) -> bool:
    """Whether ``region`` (inside ``loop``, its innermost loop) or a region in it holds a staged
    column whose innermost loop is not left rolled."""
    for op in region.ops:
        if (op.name == "convert_layout" and op.attrs.get("staged") and loop is not None
                and not _left_rolled(loop, rolled_halves)):
            return True
        inner = op if OPS[op.name].loop else loop
        if any(_stages_in_unrolled_loop(r, inner, rolled_halves) for r in op.regions):
            return True
    return False


def _smem_bytes(t) -> int:
    """The bytes an element of scalar type ``t`` takes in shared memory (a pointer: 8)."""
    return 8 if isinstance(t, PointerType) else max(1, t.bits // 8)


def _paren(e: str) -> str:
    """``e`` as one operand: a name, a number, or parenthesized (once)."""
    return e if e.replace("_", "").isalnum() or _unparen(e) != e else f"({e})"


def _unparen(e: str) -> str:
    """``e`` without parentheses around the whole of it."""
    while e.startswith("(") and e.endswith(")"):
        depth = 0
        for i, ch in enumerate(e):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and i < len(e) - 1:
                return e
        e = e[1:-1]
    return e


_BITCAST = {"fp16": "__ushort_as_half((unsigned short){:#06x})",
            "bf16": "__ushort_as_bfloat16((unsigned short){:#06x})",
            "fp32": "__int_as_float({:#010x})", "fp64": "__longlong_as_double({:#018x}LL)",
            "fp8e4nv": "mt_fp8e4nv{{(unsigned char){:#04x}}}", "fp8e5": "mt_fp8e5{{(unsigned char){:#04x}}}"}


def c_literal(value, ty: ScalarType) -> str:
    """The C++ spelling of the constant ``value`` of type ``ty``: bit-exact. Floats are rounded to
    ``ty`` once, by the registry's rule (``ops.constant_value``, which the interpreter uses too), and
    spelled exactly: in decimal where that is exact (``2.5f``), else as a hexadecimal float
    (``0x1.99999ap-4f``); non-finite values and half precision as bit casts."""
    if ty.is_bool:
        return "true" if value else "false"
    if ty.is_float:
        v = float(constant_value(value, ty))
        if not math.isfinite(v) or ty.bits < 32:
            return _BITCAST[ty.name].format(float_bits(value, ty))
        suffix = "f" if ty.name == "fp32" else ""
        decimal = exact_decimal(v)
        if decimal is not None:
            return decimal + suffix
        mantissa, _, exponent = v.hex().partition("p")
        return f"{mantissa.rstrip('0').rstrip('.')}p{exponent}{suffix}"
    if ty.bits < 32:                      # typed, so mt_add<T>(a, b) and friends deduce one T
        return f"(({ty.c_name}){value})"
    suffix = {"i64": "LL", "u64": "ULL", "u32": "u"}.get(ty.name, "")
    if ty.name == "i64" and value == -2**63:
        return "(-9223372036854775807LL - 1)"
    if ty.name == "i32" and value == -2**31:
        return "(-2147483647 - 1)"
    return f"{value}{suffix}"


_TO_FLOAT = {"fp16": "__half2float", "bf16": "__bfloat162float"}
# a float narrowed to a half: (dst, src, rounding) -> function; fp64 -> half toward zero goes through
# fp32 toward zero (truncating twice is truncating once)
_NARROW = {("fp16", "fp32", "rtne"): "__float2half_rn", ("fp16", "fp32", "rtz"): "__float2half_rz",
           ("bf16", "fp32", "rtne"): "__float2bfloat16_rn", ("bf16", "fp32", "rtz"): "__float2bfloat16_rz",
           ("fp16", "fp64", "rtne"): "__double2half", ("bf16", "fp64", "rtne"): "__double2bfloat16",
           ("fp32", "fp64", "rtz"): "__double2float_rz"}


def c_convert(expr: str, src: ScalarType, dst: ScalarType, rounding: str | None = None) -> str:
    """C++ for the cast op (the registry's ``ops.convert``): to bool is ``!= 0``; fp16/bf16/fp8 go
    through fp32 (fp8 is made from fp32: ``mt_to_fp8e4nv``, saturating); a float narrowed rounds
    to nearest even or (``rounding="rtz"``) toward zero; an integer becomes fp16 in one rounding
    and bf16 through fp32 (as Triton's NVIDIA backend does)."""
    if src == dst:
        return expr
    if src.is_half or src.is_fp8:
        expr, src = f"{_TO_FLOAT.get(src.name, 'mt_to_float')}({expr})", F32
        if dst == F32:
            return expr
    if dst.is_bool:
        return f"({expr} != 0)"
    if dst.is_fp8:                                             # from fp32 (fp64 rounded to it first)
        return f"mt_to_{dst.name}({expr if src == F32 else f'((float){expr})'})"
    if src.is_float and dst.is_float and dst.bits < src.bits:
        mode = rounding or "rtne"
        if dst == F32 and mode == "rtne":
            return f"((float){expr})"
        if (dst.name, src.name, mode) not in _NARROW:          # fp64 -> half, toward zero
            expr, src = f"__double2float_rz({expr})", F32
        return f"{_NARROW[dst.name, src.name, mode]}({expr})"
    if dst.name == "fp16":                                     # from an integer
        if src.bits == 64:
            return f"{'__ll2half_rn' if src.is_signed else '__ull2half_rn'}({expr})"
        return f"__int2half_rn((int){expr})" if src.is_signed else f"__uint2half_rn((unsigned int){expr})"
    if dst.name == "bf16":
        return f"__float2bfloat16_rn((float){expr})"
    return f"(({dst.c_name}){expr})"


def uses_halves(fn: Function) -> bool:
    """Whether the kernel has an fp16/bf16 value (it then needs cuda_fp16.h and cuda_bf16.h)."""
    def half(t) -> bool:
        e = t.scalar
        return (e.pointee if isinstance(e, PointerType) else e).is_half
    return any(half(p.type) for p in fn.params) or any(
        half(v.type) for op in walk(fn.body) for v in (*op.operands, *op.results))


class CudaEmitter:
    def __init__(self, fn: Function, target: str = "sm_90", smem_base: int = 0):
        self.fn = fn
        self.target = target
        self.smem_base = smem_base   # where its shared memory starts (a device function's: after its caller's)
        self.device_function = False
        self.num_threads = fn.num_warps * 32
        self.min_blocks = 1          # thread blocks per SM the registers must allow (__launch_bounds__)
        self.externs: dict[str, str] = {}   # the device functions called (libdevice's, __assertfail): symbol -> declaration
        self.helpers: dict[str, list[str]] = {}   # the hinted accesses' helpers (hints.py): name -> lines
        self.lines: list[str] = []
        self.depth = 1
        self.names: dict[Value, str] = {}
        self.param_names = {p: c_identifier(p.name, PARAM) for p in fn.params}
        printer = Printer()
        printer.number(fn.body)
        for v, n in printer.names.items():
            self.names[v] = "v" + n[1:]
        self.smem_bytes = 0
        self.last_line = None
        self._root_memo: dict[Value, frozenset | None] = {}
        self.const_params = self._read_only_params()
        self.axis = analyze(fn)
        # a store made by one owning thread is followed by a block barrier where the kernel loads at
        # all, so that every thread's later load of that address sees it (see store_owner)
        self.has_loads = any(OPS[op.name].reads_memory for op in walk(fn.body))
        self.in_loops = {id(inner) for op in walk(fn.body) if OPS[op.name].loop
                         for r in op.regions for inner in walk(r)}
        self.used = use_counts(fn.body)
        # dot operands kept in rings of shared-memory buffers (backends/cuda/dot.py), at the start of
        # the shared memory; the other users of shared memory take what follows (16-byte aligned:
        # layout conversions move 16-byte vectors)
        # (and the tensor maps whose TMA copies fill rings: their box and swizzle, for the host)
        self.tensor_maps: dict[str, dict] = {}
        self.swizzled_stores: dict = {}              # (tma.swizzled_stores)
        # the kernel's story, a line per tensor-core decision (dot.explain_dot): metadata["explain"]
        self.explain: list[str] = []
        self.wgmma_refusals: dict[Op, str] = {}      # (dot._wgmma_dots: why a candidate is not wgmma)
        self.rings, ring_bytes = plan_rings(self)
        # then the two buffers of each staged column (passes/layout.staged_column) and of each load
        # copied by cp.async (_copied_loads): its loop's iterations write them in turn, so one
        # barrier an iteration (none for the copies: a thread reads only its own slots) keeps
        # readers and writers apart
        self.staged: dict[Op, tuple[int, int]] = {}  # (offset, bytes of one of its two buffers)
        self.staged_turn: dict[Op, str] = {}         # (the variable of the loop's turn)
        ring_bytes = -(-ring_bytes // 16) * 16
        for op in walk(fn.body):
            if op.name == "convert_layout" and op.attrs.get("staged"):
                size = -(-op.result.type.numel * _smem_bytes(op.result.type.scalar) // 16) * 16
                self.staged[op] = (ring_bytes, size)
                ring_bytes += 2 * size
        for op in _copied_loads(fn, target):
            size = _copy_bytes(op, fn.num_warps)
            self.staged[op] = (ring_bytes, size)
            ring_bytes += 2 * size
        self.ring_bytes = ring_bytes
        self.rings_live = False
        self.staged_live = False
        self.tma_barriers: set[int] = set()          # rings whose mbarriers are initialized (dot.py)
        # a share beyond what registers hold: the per-register loops are unrolled 4 times, not fully
        # (passes/layout.UNROLLED_ELEMENTS_PER_THREAD)
        shares = [(num_regs(v.layout, v.type.shape), v) for op in walk(fn.body) for v in op.results
                  if isinstance(v.type, BlockType) and v.layout is not None]
        self.partial_unroll = any(n > UNROLLED_ELEMENTS_PER_THREAD for n, _ in shares)
        self.registers_first = _registers_first(fn, shares)
        self.streaming_blocks = _streaming_blocks(fn, self.registers_first)
        self.unrolled = None if self.rings or self.staged else _unroll_streaming(fn, shares, self.registers_first)
        self.rolled_halves = _rolled_half_loops(fn)
        self.predicated_in_loops = _predicated_half_loads(fn, self.rolled_halves)
        # a kernel without a run-time loop, device functions or tensor-core tiles takes the launch
        # bounds that buy occupancy, from the registers ptxas gave it (occupancy.settle, which the
        # compiler runs before the PTX and cubin are made)
        # what ptxas is told besides (compiler.py passes them to every compile of the source)
        self.ptxas_options = ptxas_options(fn, self.rolled_halves)
        self.occupancy_tunable = (not fn.device_functions and not any(OPS[op.name].loop for op in walk(fn.body))
                                  and not any(isinstance(v.layout, MmaLayout) for _, v in shares))

    # --- naming and types -----------------------------------------------------------------------

    def c_type(self, elem) -> str:
        if isinstance(elem, PointerType):
            return f"{elem.pointee.c_name}*"
        return elem.c_name

    def value_c_type(self, v: Value) -> str:
        elem = v.type.scalar
        if isinstance(elem, PointerType) and self._is_const(v):
            return f"const {elem.pointee.c_name}*"
        return self.c_type(elem)

    def ref(self, v: Value) -> str:
        if isinstance(v, Const):
            return c_literal(v.value, v.type)
        if isinstance(v, Param):
            return self.param_names[v]
        return self.names[v]

    def emit(self, line: str):
        if self.partial_unroll and line.strip() == "#pragma unroll":
            line += " 4"
        self.lines.append("  " * self.depth + line)

    # --- which pointer params are never stored through (→ const) -----------------------------------

    def _roots(self, v: Value) -> frozenset | None:
        """The pointer parameters ``v`` may point into — through pointer arithmetic, layout changes,
        ``where`` (both branches) and the values flowing into region arguments and region op
        results (a loop's initial value and every iteration's yield, each branch of an if) — or
        None when it may come from elsewhere."""
        if v in self._root_memo:
            return self._root_memo[v]
        seen, roots, work = set(), set(), [v]
        result = None
        while work:
            x = work.pop()
            if x in seen:
                continue
            seen.add(x)
            if isinstance(x, Param):
                roots.add(x)
                continue
            owner = x.owner
            if isinstance(x, Const) or owner is None:
                break
            flowing = sources_of(x)                      # a region argument or a region op's result
            if flowing is not None:
                work += flowing
            elif isinstance(owner, Region):              # a leading argument (a loop index)
                break
            elif owner.name in ("addptr", "convert_layout", "expand_dims", "broadcast"):
                work.append(owner.operands[0])
            elif owner.name == "where":
                work += owner.operands[1:3]
            else:
                break
        else:
            result = frozenset(roots)
        self._root_memo[v] = result
        return result

    def _read_only_params(self) -> set:
        """Pointer parameters no write can reach (declared ``const``): an op that writes memory
        through its pointer operand (the first) marks every parameter it may point into."""
        ptrs = {p for p in self.fn.params if isinstance(p.type, PointerType)}
        stored = set()
        for op in walk(self.fn.body):
            if not OPS[op.name].writes_memory:
                continue
            # a store's or an atomic's pointer (the first operand), every pointer of an op that
            # reaches memory through any (inline asm, a device function, a TMA store's base)
            for v in (op.operands if OPS[op.name].any_pointer else op.operands[:1]):
                if not isinstance(v.type.scalar, PointerType):
                    continue
                roots = self._roots(v)
                if roots is None:
                    return set()
                stored |= roots
        return ptrs - stored

    def _is_const(self, v: Value) -> bool:
        """A pointer value is declared ``const`` when it may point into a read-only parameter. No
        store goes through it then (a store would have marked all its roots), and every value
        assigned to it — a loop's initial value and yields — is a pointer to (const or not) T."""
        roots = self._roots(v)
        return bool(roots) and any(r in self.const_params for r in roots)

    # --- layouts in C++ ---------------------------------------------------------------------------

    def layout_of(self, v: Value) -> LinearLayout:
        return to_linear(v.layout, v.type.shape, self.fn.num_warps)

    @staticmethod
    def index(expr, r: str = "r") -> str:
        """C++ for an index expression of the register ``r`` and ``tid``: one self-contained operand
        (parenthesized unless it is a name or a number), safe to embed in any larger expression —
        ``a + tid & 7`` would be ``(a + tid) & 7`` in C++."""
        return _paren(_unparen(expr.build(_CIndex(r))))

    def coords(self, v: Value, r: str) -> list[str]:
        """The coordinates register ``r`` of ``v`` holds in this thread."""
        return [self.index(e, r) for e in coordinate_exprs(self.layout_of(v))]

    def offset(self, v: Value, r: str) -> str:
        """The row-major offset in ``v``'s tile of the element register ``r`` holds."""
        return self.index(offset_expr(self.layout_of(v)), r)

    def operand_index(self, result: Value, operand: Value, r: str = "r") -> str:
        """Index into ``operand``'s registers of the element that result register ``r`` needs (the
        layouts agree up to the size-1 dimensions the operand broadcasts, held whole by every thread)."""
        if operand.type.shape == result.type.shape:
            return r
        lay = self.layout_of(result)
        ones = [n == 1 for n in operand.type.shape]
        regs = lay.register_map(self.layout_of(operand), lambda c: tuple(0 if o else x for x, o in zip(c, ones)))
        return self.index(register_expr(lay, regs), r)

    def elem(self, result: Value, operand: Value, r: str = "r") -> str:
        if isinstance(operand.type, BlockType):
            return f"{self.ref(operand)}[{self.operand_index(result, operand, r)}]"
        return self.ref(operand)

    def nregs(self, v: Value) -> int:
        return self.layout_of(v).num_regs

    def declare(self, v: Value) -> str:
        if v in self.rings:                             # a tile in shared memory: a pointer to it
            return f"{self.rings[v].c_type}* {self.ref(v)}"
        if isinstance(v.type, BlockType):
            return f"{self.value_c_type(v)} {self.ref(v)}[{self.nregs(v)}]"
        return f"{self.value_c_type(v)} {self.ref(v)}"

    def per_element(self, v: Value, body: str):
        """Emit ``body`` (which uses ``r``) for each register of ``v``; once, as it is, for a scalar."""
        if not isinstance(v.type, BlockType):
            self.emit(body)
            return
        n = self.nregs(v)
        if n == 1:
            self.emit(f"{{ const int r = 0; {body} }}")
        else:
            self.emit("#pragma unroll")
            self.emit(f"for (int r = 0; r < {n}; ++r) {body}")

    # --- ops --------------------------------------------------------------------------------------

    def source_comment(self, op: Op):
        loc = op.loc
        if loc is None or (loc.file, loc.line) == self.last_line:
            return
        self.last_line = (loc.file, loc.line)
        self.emit(f"// {comment_text(os.path.basename(loc.file))}:{loc.line}: {comment_text(loc.source_line.strip())}")

    def region(self, region: Region):
        for op in region.ops:
            self.op(op)

    def op(self, op: Op):
        if OPS[op.name].terminator:
            return                                         # emitted by the op that owns the region
        self.source_comment(op)
        special = getattr(self, "op_" + op.name, None)
        if special is not None:
            return special(op)
        if op.name in REDUCE_KINDS:
            return self.op_reduce(op)
        if op.name.startswith("libdevice."):
            return self.op_libdevice(op)
        d = OPS[op.name]
        assert d.elementwise and d.c_fn is not None, f"no CUDA emission for {op.name}"
        ct = d.compute([v.type for v in op.operands], op.attrs)
        if ct.is_half:
            return self.half_elementwise(op, d.c_fn, ct)
        self.elementwise(op, lambda vals: d.c_fn(vals, ct), ct)

    def cast_to(self, expr: str, src, dst, rounding: str | None = None) -> str:
        if src == dst or not isinstance(dst, ScalarType) or isinstance(src, PointerType):
            return expr
        return c_convert(expr, src, dst, rounding)

    def half_elementwise(self, op: Op, c_fn, ct: ScalarType):
        """An op computed in fp16/bf16: in fp32, the operands first converted to ``ct`` and the
        result rounded back once (for + - * that is the correctly rounded half result, as the GPU's
        half instructions give; the interpreter computes alike)."""
        res_t = op.result.type.scalar
        first = 1 if op.name == "where" else 0

        def operand(i: int, v: Value) -> str:
            if i < first:
                return self.elem(op.result, v)
            if isinstance(v, Const) and v.type == ct:          # its exact value, as an fp32 literal
                return c_literal(float(constant_value(v.value, ct)), F32)
            return self.cast_to(self.cast_to(self.elem(op.result, v), v.type.scalar, ct), ct, F32)

        def make_expr(_):
            expr = c_fn([operand(i, v) for i, v in enumerate(op.operands)], F32)
            return expr if res_t.is_bool else self.cast_to(expr, F32, res_t)      # comparisons give bool
        self.elementwise(op, make_expr, None, cast_operands=False)

    def representative(self, v: Value) -> str:
        """The register whose element stands for register ``r``'s: ``r`` with the register bits
        cleared that only move within a run of elements the axis analysis proves equal (``offs <
        n`` with ``n`` a multiple of 16 holds one value over 16 columns) or that repeat an element.
        An elementwise op computes each register from its representative's operands: the unrolled
        registers of one run get the same expression, which nvcc computes once. For values in the
        tensor cores' layout and its slices (attention's masks of the scores: 32 compares a thread and
        iteration become 8; its row maxima, held by four lanes each), and for masks in any layout
        (tutorial 05's layer norm, fp16 4096 columns on 8 warps: 18 compares a thread become 4;
        with a loop over 1024-column blocks ptxas then unrolls the loops twice, at 28.5 instead of
        31.5 instructions per 16-byte load in the first and 48 instead of 61 in the second)."""
        lay = getattr(v, "layout", None)
        if isinstance(lay, SliceLayout):
            lay = lay.parent             # (the row maxima and sums of the scores)
        if not (isinstance(v.type, BlockType) and (isinstance(lay, MmaLayout) or v.type.scalar.is_bool)):
            return "r"
        info = self.axis.get(v)
        runs = info.constancy if info is not None and info.constancy else (1,) * v.type.rank
        mask = 0
        for b, basis in enumerate(self.layout_of(v).bases_of(REGISTER)):
            moved = [d for d, c in enumerate(basis) if c]
            if not moved or (len(moved) == 1 and basis[moved[0]] < runs[moved[0]]):
                mask |= 1 << b
        return f"(r & {(self.nregs(v) - 1) & ~mask})" if mask else "r"

    def elementwise(self, op: Op, make_expr, compute_type=None, cast_operands=True):
        res = op.result
        rep = self.representative(res)
        vals = []
        for i, v in enumerate(op.operands):
            e = self.elem(res, v, rep)
            if cast_operands and compute_type is not None and not (op.name == "where" and i == 0):
                e = self.cast_to(e, v.type.scalar, compute_type)
            vals.append(e)
        expr = make_expr(vals)
        if isinstance(res.type, BlockType):
            self.emit(self.declare(res) + ";")
            self.per_element(res, f"{self.ref(res)}[r] = {expr};")
        else:
            self.emit(f"{self.declare(res)} = {expr};")

    def op_device_assert(self, op: Op):
        """Where an enabled element's condition is false: CUDA's ``__assertfail`` (what ``assert``
        calls), with the message, the kernel file's name, the line and the kernel's name as C strings (octal
        escapes: user text never becomes code). CUDA prints them with the block and thread and the
        launch fails with CUDA_ERROR_ASSERT."""
        cond = op.operands[0]
        block = isinstance(cond.type, BlockType)
        failed = f"!{self.elem(cond, cond)}" if block else f"!{self.ref(cond)}"
        if len(op.operands) == 2:
            mask = op.operands[1]
            failed += f" && {self.elem(cond, mask) if block else self.ref(mask)}"
        loc = op.loc
        self.externs.setdefault("__assertfail", 'extern "C" __device__ void __assertfail(const char* message, '
                                'const char* file, unsigned int line, const char* function, unsigned long char_size);')
        # (the file's name, not its path: a build gives the same bytes wherever it runs)
        call = (f"__assertfail({c_string(op.attrs['message'])}, {c_string(os.path.basename(loc.file) if loc else '')}, "
                f"{loc.line if loc else 0}u, {c_string(self.fn.name)}, 1);")
        self.per_element(cond, f"if ({failed}) {call}")

    def op_device_print(self, op: Op):
        """printf per element, from the thread that owns it (as stores), in Triton's format
        (ir/ops.print_line_format): pid, the element's coordinates, the label (passed as a %s
        argument, octal-escaped: user text never becomes code or format) and the value."""
        x = op.operands[0]
        t = x.type.scalar
        conv, c_type, bits = print_format(t, op.attrs["hex"])
        block = isinstance(x.type, BlockType)
        v = self.elem(x, x) if block else self.ref(x)
        if bits:                                          # the bits, zero-extended
            v = f"mt_bitcast<{_UNSIGNED[bits]}>({v})"
        elif not isinstance(t, PointerType) and t.is_float:
            v = self.cast_to(v, t, F32) if t.bits < 32 else v
        idx = self.coords(x, "r") if block else []
        fmt = print_line_format(t, op.attrs["hex"], shape_of(x.type) if block else ()).replace("\n", "\\n")
        args = ["(unsigned)blockIdx.x", "(unsigned)blockIdx.y", "(unsigned)blockIdx.z",
                *(f"(unsigned)({i})" for i in idx), c_string(op.attrs["prefix"]), f"({c_type})({v})"]
        stmt = f'printf("{fmt}", {", ".join(args)});'
        own = self.store_owner(x)
        self.per_element(x, f"if ({own}) {stmt}" if own else stmt)

    def per_group(self, n: int | None, pack: int, lines: list[str]):
        """``lines`` (which use ``r``) for each group of ``pack`` registers of ``n`` (unrolled), or
        once with ``r`` = 0 for scalars (``n`` None)."""
        if n is not None and n > pack:
            self.emit("#pragma unroll")
        self.emit(f"for (int r = 0; r < {n}; r += {pack}) {{" if n is not None else "{ const int r = 0; (void)r;")
        self.depth += 1
        for line in lines:
            self.emit(line)
        self.depth -= 1
        self.emit("}")

    def op_inline_asm(self, op: Op):
        """``tl.inline_asm_elementwise``: an ``asm`` statement per group of ``pack`` registers, its
        operands packed into and out of the registers the constraints name (Triton's numbering:
        ``$i`` becomes ``%i``; the template is a C string of octal escapes, so user text never
        becomes code). A group past the last register reads zeros and writes nothing."""
        pack, dtypes = op.attrs["pack"], op.attrs["dtypes"]
        constraints = op.attrs["constraints"]
        first = op.results[0]
        block = isinstance(first.type, BlockType)
        n = self.nregs(first) if block else 1
        for res in op.results:
            self.emit(self.declare(res) + ";")
        ragged = n % pack != 0

        def element(v: Value, e: int, operand: bool) -> str:
            at = f"r + {e}" if e else "r"
            if not block:
                return self.ref(v)
            return self.elem(first, v, at) if operand else f"{self.ref(v)}[{at}]"

        def guarded(e: int, expr: str, zero: str) -> str:
            return f"((r + {e} < {n}) ? {expr} : {zero})" if ragged and e else expr

        body, outs, ins, unpack = [], [], [], []
        letters = iter(constraints)
        for k, (res, t) in enumerate(zip(op.results, dtypes)):
            regs, per = asm_registers(t, pack)
            for j in range(regs):
                letter = next(letters).lstrip("=")
                var = f"o{k}_{j}"
                body.append(f"{_ASM_C_TYPE[letter]} {var};")
                outs.append(f'"={letter}"({var})')
                for i in range(per):
                    e = j * per + i
                    if e >= pack:
                        break
                    bits = f"mt_bitcast<{_ASM_C_TYPE['l' if ASM_REGISTERS[letter] == 64 else 'r']}>({var})" \
                        if letter in "fd" else var
                    value = f"({_UNSIGNED[t.bits]})({bits} >> {i * t.bits})" if per > 1 else f"({_UNSIGNED[t.bits]})({bits})"
                    store = f"{element(res, e, False)} = mt_bitcast<{t.c_name}>({value});"
                    unpack.append(f"if (r + {e} < {n}) {store}" if ragged and e else store)
        for k, v in enumerate(op.operands):
            t = v.type.scalar
            regs, per = asm_registers(t, pack)
            for j in range(regs):
                letter = next(letters)
                wide = _UNSIGNED[64] if ASM_REGISTERS[letter] == 64 else _UNSIGNED[32]
                parts = []
                for i in range(per):
                    e = j * per + i
                    if e >= pack:
                        break
                    x = element(v, e, True)
                    bits = f"({wide})({x})" if isinstance(t, PointerType) else \
                        f"({wide})mt_bitcast<{_UNSIGNED[t.bits]}>({x})"
                    bits = guarded(e, bits, f"({wide})0")
                    parts.append(f"({bits} << {i * t.bits})" if i else bits)
                packed = " | ".join(parts)
                var = f"i{k}_{j}"
                if letter in "fd":
                    packed = f"mt_bitcast<{_ASM_C_TYPE[letter]}>({packed})"
                body.append(f"{_ASM_C_TYPE[letter]} {var} = {packed};")
                ins.append(f'"{letter}"({var})')
        volatile = " volatile" if op.name == "inline_asm_effects" else ""
        clobber = ' : "memory"' if op.name == "inline_asm_effects" else ""
        template = c_string(_ptx_template(op.attrs["asm"]))
        body.append(f"asm{volatile}({template} : {', '.join(outs)} : {', '.join(ins)}{clobber});")
        self.per_group(n if block else None, pack, body + unpack)

    op_inline_asm_effects = op_inline_asm

    def op_libdevice(self, op: Op):
        """A libdevice function: its symbol called (declared once per kernel; the operands have the
        signature's types already)."""
        fn = LIBDEVICE[op.name.split(".", 1)[1]]
        sig = libdevice_signature(fn, [v.type for v in op.operands])
        symbol, result = fn.signatures[sig]
        declaration = libdevice_declaration(symbol, sig, result)
        if declaration is not None:
            self.externs.setdefault(symbol, declaration)
        self.elementwise(op, lambda v: f"{symbol}({', '.join(v)})", None)

    def op_cast(self, op: Op):
        dst, rounding = op.result.type.scalar, op.attrs.get("rounding")
        src = op.operands[0].type.scalar
        if isinstance(dst, PointerType) or isinstance(src, PointerType):     # (ir/ops.py: which ones)
            c_dst = self.value_c_type(op.result)
            self.elementwise(op, lambda v: f"(({c_dst})({v[0]}))", None)
            return
        self.elementwise(op, lambda v: self.cast_to(v[0], op.operands[0].type.scalar, dst, rounding), None)

    def op_bitcast(self, op: Op):
        dst = op.result.type.scalar
        self.elementwise(op, lambda v: f"mt_bitcast<{dst.c_name}>({v[0]})", None)

    def op_addptr(self, op: Op):
        self.elementwise(op, lambda v: f"({v[0]} + {v[1]})", None)

    def vector_width(self, ptr: Value, masks: list[Value] = (), op: Op | None = None) -> tuple[int, bool]:
        """(elements per access, alignment proven) for a load/store through ``ptr`` under ``masks``:
        contiguous runs along the last dimension (or the one ``vector_dim`` names) that one thread
        holds in consecutive registers move as one 8- or 16-byte access (up to 16 int8, 8 halves,
        4 floats, 2 doubles).

        Inside a loop, only where the axis analysis proves each mask constant over such a run (as
        Triton: ``offs < n`` with ``n`` a multiple of the width); elsewhere each element is its own
        predicated access. A run-time choice per chunk between a vector and a per-element path
        costs branches, and in a loop body they keep ptxas from overlapping the iterations'
        loads (measured on the H200: row sums over short blocks three times slower than Triton).
        Outside loops that choice pays (fewer instructions on the common all-true chunks: softmax
        with a row length that is not a multiple of 16 ran 1.5x slower per element) where a thread
        holds fewer than ``passes/layout.SCALAR_ACCESS_SHARE`` elements; larger shares are laid out
        one element a lane where unproven (a thread's registers then hold no contiguous run)."""
        if not isinstance(ptr.type, BlockType):
            return 1, True
        d = self.vector_dim(ptr)
        contiguous = self.layout_of(ptr).contiguous_registers(d)
        elem = ptr.type.scalar.pointee
        eb = elem.bits // 8
        if eb not in (1, 2, 4, 8) or elem.is_bool:      # (int8 too: 16 bytes move as one access)
            return 1, True
        info = self.axis.get(ptr)
        limit = min(contiguous, info.contiguity[d], 16 // eb)
        if op is not None and id(op) in self.in_loops:
            limit = min([limit] + [self.mask_constancy(m, ptr) for m in masks])
        vec = 1
        while vec * 2 <= limit:
            vec *= 2
        return vec, info.divisibility[d] >= vec * eb

    def vector_dim(self, ptr: Value) -> int:
        """The dimension a thread's consecutive registers of ``ptr`` run along: the last, unless
        its layout runs along another (a tile laid out along its first dimension)."""
        lay, last = self.layout_of(ptr), ptr.type.rank - 1
        if lay.contiguous_registers(last) > 1:
            return last
        return next((d for d in range(last) if lay.contiguous_registers(d) > 1), last)

    def vectorized(self, op: Op, ptr: Value, masks: list[Value], fast: list[str], slow: str,
                   guard: str | None = None, straight_code: list[str] | None = None):
        """Per chunk of ``vec`` registers: the ``fast`` lines when every mask in ``masks`` holds
        (and the address is aligned, unless proven), else the per-element ``slow`` statement; chunks
        where the C condition ``guard`` (on the chunk's first register ``r``) fails are skipped (a
        chunk's registers are contiguous along one dimension, so they share their owner).

        Where the alignment is proven and every mask is proven constant over a chunk, the chunk's
        first element decides and there is no per-element path: the ``fast`` lines under one
        condition (a store: ptxas makes it a predicated vector instruction, as Triton's ``@p
        st.global.v4``), or ``straight_code`` where given (lines, ``{mask}`` standing for the
        chunk's condition: a load's branch-free form)."""
        vec, aligned = self.vector_width(ptr, masks, op)
        eb = ptr.type.scalar.pointee.bits // 8
        uniform = all(self.mask_constancy(m, ptr) >= vec for m in masks)
        if uniform:
            tests = [self.elem(ptr, m, "r") for m in masks]
        else:
            tests = [self.elem(ptr, m, f"(r + {j})") for m in masks for j in range(vec)]
        if not aligned:
            tests.append(f"mt_aligned({self.ref(ptr)}[r], {vec * eb})")
        straight = uniform and aligned
        self.emit("#pragma unroll")
        self.emit(f"for (int r = 0; r < {self.nregs(ptr)}; r += {vec}) {{")
        self.depth += 1
        if guard is not None:
            self.emit(f"if (!({guard})) continue;")
        if straight and tests and straight_code is not None:
            for line in straight_code:
                self.emit(line.replace("{mask}", " && ".join(tests)))
            self.depth -= 1
            self.emit("}")
            return
        if tests:
            self.emit(f"if ({' && '.join(tests)}) {{")
        for line in fast:
            self.emit(("  " if tests else "") + line)
        if tests and not straight:
            self.emit("} else {")
            self.emit("  #pragma unroll")
            self.emit(f"  for (int j = 0; j < {vec}; ++j) {slow}")
        if tests:
            self.emit("}")
        self.depth -= 1
        self.emit("}")

    def mask_constancy(self, mask: Value, ptr: Value) -> int:
        """How many consecutive elements along ``ptr``'s vector dimension (``vector_dim``) the mask
        is proven equal over (in aligned runs), as the axis analysis sees it broadcast there."""
        info = self.axis.get(mask).expand(shape_of(mask.type), ptr.type.shape)
        if not info.constancy:
            return 1
        return info.constancy[self.vector_dim(ptr) if isinstance(ptr.type, BlockType) else -1]

    def op_load(self, op: Op):
        res, ptr = op.result, op.operands[0]
        if res in self.rings:
            return staged_load(self, op, self.rings[res])
        if op in self.staged:
            return self.copied_load(op)
        if op.attrs.get("volatile"):           # one element at a time, each read from memory (ld.volatile)
            self.elementwise(op, lambda v: f"mt_load_volatile({v[0]})" if len(v) == 1
                             else f"({v[1]} ? mt_load_volatile({v[0]}) : {v[2]})", None)
            return
        hinted = _cache_hint(self, op)
        elem_t = res.type.scalar.c_name

        def read(address: str, ctype: str) -> str:      # one element or chunk, unmasked
            return f"mt_load_{hinted}<{ctype}>({address})" if hinted else f"*{address}"

        def masked(address: str, mask: str, other: str) -> str:   # (hinted: branch-free, see hints.py)
            if hinted:
                return f"mt_load_{hinted}<{elem_t}>({address}, {mask}, {other})"
            return f"({mask} ? *{address} : {other})"

        vec, _ = self.vector_width(ptr, op.operands[1:2], op)
        if vec == 1:
            self.elementwise(op, lambda v: read(v[0], elem_t) if len(v) == 1 else masked(*v), None)
            return
        t = f"mt_vec<{elem_t}, {vec}>"
        self.emit(self.declare(res) + ";")
        rj = "(r + j)"
        scalar = read(self.elem(res, ptr, rj), elem_t)
        if len(op.operands) > 1:
            other = self.elem(res, op.operands[2], rj)
            scalar = masked(self.elem(res, ptr, rj), self.elem(res, op.operands[1], rj), other)
        fast = [f"const {t} t = {read(f'reinterpret_cast<const {t}*>({self.ref(ptr)}[r])', t)};",
                "#pragma unroll",
                f"for (int j = 0; j < {vec}; ++j) {self.ref(res)}[r + j] = t.v[j];"]
        straight = None
        if len(op.operands) > 1 and hinted:
            # the qualified load is predicated itself: masked off, the chunk keeps `other`
            straight = [f"{t} t = {{}};"]
            if not _zero_bits(op.operands[2]):
                straight += ["#pragma unroll", f"for (int j = 0; j < {vec}; ++j) t.v[j] = {other};"]
            straight += [f"t = mt_load_{hinted}<{t}>(reinterpret_cast<const {t}*>({self.ref(ptr)}[r]), {{mask}}, t);",
                         "#pragma unroll", f"for (int j = 0; j < {vec}; ++j) {self.ref(res)}[r + j] = t.v[j];"]
        elif len(op.operands) > 1:
            # without a branch (NVVM makes a C++ `if` around each load a branch), moved as 32-bit
            # words (halves merged one by one cost a PRMT each). In a loop, a masked-off chunk reads
            # the 16 zero bytes of mt_masked_off instead of its address: an ordinary load, which
            # ptxas overlaps with the loads of the loop's other (unrolled) iterations. Elsewhere,
            # a predicated load (inline PTX, zeros where masked off, as Triton's), which saves the
            # address select (two MOVs a chunk) but which ptxas does not move above the code before
            # it: on the H200, the looped row sum BLOCK=4096 on 2 warps took 3.3x as long that way
            # (A/B over benchmarks/sweep.py's row kernels); softmax BLOCK=2048 on 1 warp, no loop,
            # 1.4x less time. The small loads of the loops of halves left to ptxas are predicated
            # in loops too (_predicated_half_loads).
            words = vec * res.type.scalar.bits // 32
            if id(op) in self.in_loops and id(op) not in self.predicated_in_loops:
                straight = [f"mt_vec<unsigned, {words}> w = *reinterpret_cast<const mt_vec<unsigned, {words}>*>("
                            f"({{mask}}) ? (const void*){self.ref(ptr)}[r] : (const void*)&mt_masked_off);"]
            else:
                straight = [f"mt_vec<unsigned, {words}> w;",
                            f"mt_load_pred<{words}>(w, {self.ref(ptr)}[r], {{mask}});"]
            if not _zero_bits(op.operands[2]):
                straight += ["if (!({mask})) {", f"  {t} o;", "  #pragma unroll",
                             f"  for (int j = 0; j < {vec}; ++j) o.v[j] = {other};", "  memcpy(&w, &o, sizeof(w));",
                             "}"]
            straight += [f"{t} t;", "memcpy(&t, &w, sizeof(t));", "#pragma unroll",
                         f"for (int j = 0; j < {vec}; ++j) {self.ref(res)}[r + j] = t.v[j];"]
        self.vectorized(op, ptr, op.operands[1:2], fast, f"{self.ref(res)}[r + j] = {scalar};",
                        straight_code=straight)

    def copied_load(self, op: Op):
        """A load of ``_copied_loads``: copied by ``cp.async`` into this iteration's buffer (runs
        of ``vec`` elements at once where proven aligned, else one element each; masked-off ones
        zero-filled), waited for, read back. A thread reads only the slots it copied to (the run at
        register r: ``r * threads + tid * vec``, consecutive threads in consecutive runs), so no
        barrier orders the copies and the reads."""
        res, ptr = op.result, op.operands[0]
        offset, size = self.staged[op]
        n, threads, ct = self.nregs(res), self.fn.num_warps * 32, res.type.scalar.c_name
        vec, aligned = self.vector_width(ptr, op.operands[1:2], op)
        vec = vec if aligned else 1
        mask = self.elem(res, op.operands[1], "r") if len(op.operands) > 1 else "true"
        self.emit(self.declare(res) + ";")
        self.emit("{")
        self.depth += 1
        base = f"mt_smem + {f'{offset} + ' if offset else ''}{self.staged_turn[op]} * {size}"
        self.emit(f"{ct}* slots = reinterpret_cast<{ct}*>({base}) + {f'tid * {vec}' if vec > 1 else 'tid'};")
        self.emit("#pragma unroll")
        self.emit(f"for (int r = 0; r < {n}; r += {vec}) "
                  f"mt_cp_async<{4 * vec}>(slots + r * {threads}, {self.elem(res, ptr, 'r')}, {mask});")
        self.emit("mt_cp_async_commit();")
        self.emit("mt_cp_async_wait<0>();")
        slot = f"(r & ~{vec - 1}) * {threads} + (r & {vec - 1})" if vec > 1 else f"r * {threads}"
        self.emit("#pragma unroll")
        self.emit(f"for (int r = 0; r < {n}; ++r) {self.ref(res)}[r] = slots[{slot}];")
        self.depth -= 1
        self.emit("}")

    def store_owner(self, ptr: Value, r: str = "r") -> str | None:
        """C condition: this thread's register ``r`` of ``ptr`` is the one copy of its element that
        stores. Several threads (or registers) hold copies of an element of a replicated layout, of
        a dimension a slice layout dropped, and of a scalar; each copy storing would race with the
        other copies' loads (a load-double-store of one address could double twice). As in Triton
        one access per element and program: the stored value is the storing thread's own. None when
        every copy is the only one."""
        if not isinstance(ptr.type, BlockType):
            return "threadIdx.x == 0"
        reg_mask, tid_mask = owner_masks(self.layout_of(ptr))
        conds = [f"({x} & {m}) == 0" for x, m in ((_paren(r), reg_mask), ("tid", tid_mask)) if m]
        return " && ".join(conds) or None

    def op_store(self, op: Op):
        ptr = op.operands[0]
        pointee = ptr.type.scalar.pointee
        vec, _ = self.vector_width(ptr, op.operands[2:3], op)
        own = self.store_owner(ptr)
        hinted = _cache_hint(self, op)

        def write(address: str, value: str, ctype: str) -> str:
            return f"mt_store_{hinted}<{ctype}>({address}, {value}, true);" if hinted else f"*{address} = {value};"

        if vec > 1:
            rj = "(r + j)"
            value = self.cast_to(self.elem(ptr, op.operands[1], rj), op.operands[1].type.scalar, pointee)
            t = f"mt_vec<{pointee.c_name}, {vec}>"
            fast = [f"{t} t;", "#pragma unroll", f"for (int j = 0; j < {vec}; ++j) t.v[j] = {value};",
                    write(f"reinterpret_cast<{t}*>({self.ref(ptr)}[r])", "t", t)]
            slow = write(f"{self.ref(ptr)}[r + j]", value, pointee.c_name)
            if len(op.operands) == 3:
                slow = f"if ({self.elem(ptr, op.operands[2], rj)}) {slow}"
            self.vectorized(op, ptr, op.operands[2:3], fast, slow, guard=own)
            self.publish_store(own, ptr)
            return
        vals = [self.elem(ptr, v) if isinstance(ptr.type, BlockType) else self.ref(v) for v in op.operands]
        vals[1] = self.cast_to(vals[1], op.operands[1].type.scalar, pointee)
        stmt = write(vals[0], vals[1], pointee.c_name)
        conds = [c for c in (own, vals[2] if len(vals) == 3 else None) if c is not None]
        if conds:
            stmt = f"if ({' && '.join(conds)}) {stmt}"
        if isinstance(ptr.type, BlockType):
            self.per_element(ptr, stmt if conds else "{ " + stmt + " }")
        else:
            self.emit(stmt)
        self.publish_store(own, ptr)

    def publish_store(self, owner: str | None, ptr: Value):
        """After a store that one owning thread made for all copies of an element: a block barrier
        (the other threads may load that address next: in program order they must see the store),
        unless no read of memory in the kernel can reach a parameter the store writes (in a device
        function: always, its callers may read it)."""
        if owner is None or not self.has_loads:
            return
        stored, read = self._roots(ptr), None if self.device_function else self.read_roots
        if stored is None or read is None or stored & read:
            self.emit("__syncthreads();")

    @functools.cached_property
    def read_roots(self) -> frozenset | None:
        """The pointer parameters any op that reads memory may read through (None: unknown)."""
        roots = set()
        for op in walk(self.fn.body):
            if not OPS[op.name].reads_memory:
                continue
            for v in (op.operands if OPS[op.name].any_pointer else op.operands[:1]):
                if not isinstance(v.type.scalar, PointerType):
                    continue
                r = self._roots(v)
                if r is None:
                    return None
                roots |= r
        return frozenset(roots)

    def op_atomic_rmw(self, op: Op):
        self.atomic(op, op.attrs["kind"], op.operands[1:2], op.operands[2] if len(op.operands) == 3 else None)

    def op_atomic_cas(self, op: Op):
        self.atomic(op, "cas", op.operands[1:3], None)

    def atomic(self, op: Op, kind: str, values: list[Value], mask: Value | None):
        """Each element once, by its owning thread (``store_owner``; for a scalar: thread 0, once
        per program), as inline PTX (backends/cuda/atomics.py). Where the old values are used and
        other threads hold copies of the element, the owner hands its old value to them through
        shared memory (masked-off elements read 0)."""
        ptr, res = op.operands[0], op.result
        elem = res.type.scalar
        block = isinstance(res.type, BlockType)
        own = self.store_owner(ptr)

        def at(v: Value) -> str:
            return self.elem(res, v) if block else self.ref(v)
        out = f"{self.ref(res)}[r]" if block else self.ref(res)
        stmt = atomic_statement(kind, elem, op.attrs["sem"], op.attrs["scope"], at(ptr), [at(v) for v in values], out)
        conds = [c for c in (own, at(mask) if mask is not None else None) if c is not None]
        if conds:
            stmt = f"if ({' && '.join(conds)}) {stmt} else {out} = {c_literal(0, elem)};"
        self.emit(self.declare(res) + ";")
        if block:
            self.per_element(res, f"{{ {stmt} }}")
        else:
            self.emit(stmt)
        if own is None:
            return
        if res not in self.used:
            self.publish_store(own, ptr)
            return
        numel = res.type.numel if block else 1
        self.smem(numel * max(1, elem.bits // 8))
        lin = self.offset(res, "r") if block else "0"
        self.emit("{")
        self.depth += 1
        self.emit(f"{elem.c_name}* buf = reinterpret_cast<{elem.c_name}*>({self.scratch});")
        if block:
            self.per_element(res, f"if ({own}) buf[{lin}] = {out};")
            self.emit("__syncthreads();")
            self.per_element(res, f"{out} = buf[{lin}];")
        else:
            self.emit(f"if ({own}) buf[0] = {out};")
            self.emit("__syncthreads();")
            self.emit(f"{out} = buf[0];")
        self.emit("__syncthreads();")
        self.depth -= 1
        self.emit("}")

    def op_debug_barrier(self, op: Op):
        self.emit("__syncthreads();")

    def op_where(self, op: Op):
        """The registry's where, except that pointer branches have no arithmetic compute type."""
        d = OPS["where"]
        ct = None if isinstance(op.result.type.scalar, PointerType) else d.compute([v.type for v in op.operands], op.attrs)
        if ct is not None and ct.is_half:
            return self.half_elementwise(op, d.c_fn, ct)
        self.elementwise(op, lambda v: d.c_fn(v, ct), ct)

    def op_program_id(self, op: Op):
        self.emit(f"{self.declare(op.result)} = blockIdx.{'xyz'[op.attrs['axis']]};")

    def op_num_programs(self, op: Op):
        self.emit(f"{self.declare(op.result)} = gridDim.{'xyz'[op.attrs['axis']]};")

    def op_arange(self, op: Op):
        res = op.result
        (c,) = self.coords(res, "r")
        start = op.attrs["start"]
        self.emit(self.declare(res) + ";")
        self.per_element(res, f"{self.ref(res)}[r] = {f'{start} + ' if start else ''}{c};")

    def op_zeros(self, op: Op):
        res = op.result
        self.emit(self.declare(res) + ";")
        self.per_element(res, f"{self.ref(res)}[r] = {c_literal(0, res.type.scalar)};")

    def op_full(self, op: Op):
        res = op.result
        v = op.operands[0]
        self.emit(self.declare(res) + ";")
        self.per_element(res, f"{self.ref(res)}[r] = {self.cast_to(self.ref(v), v.type, res.type.scalar)};")

    def op_empty(self, op: Op):
        self.emit(self.declare(op.result) + ";  // tl.empty: uninitialized")

    def op_expand_dims(self, op: Op):
        res, src = op.result, op.operands[0]
        self.emit(self.declare(res) + ";")
        self.per_element(res, f"{self.ref(res)}[r] = {self.ref(src)}[r];")

    def op_broadcast(self, op: Op):
        self.elementwise(op, lambda v: v[0], None)

    def op_dot(self, op: Op):
        (dot_mma if isinstance(op.result.layout, MmaLayout) else dot_portable)(self, op)

    def op_trans(self, op: Op):
        """No data moves: each register is one of the operand's registers of the same thread (a
        tile in shared memory: the dot reads it transposed, dot.py)."""
        res, src = op.result, op.operands[0]
        if res in self.rings:
            self.emit(f"{self.declare(res)} = {self.ref(src)};")
            return
        regs = permuted_registers(res.layout, res.type.shape, src.layout, src.type.shape, tuple(op.attrs["dims"]),
                                  self.fn.num_warps)
        self.emit(self.declare(res) + ";")
        if regs == list(range(len(regs))):
            self.per_element(res, f"{self.ref(res)}[r] = {self.ref(src)}[r];")
            return
        for r, i in enumerate(regs):
            self.emit(f"{self.ref(res)}[{r}] = {self.ref(src)}[{i}];")

    @property
    def scratch(self) -> str:
        """Where the shared memory of an op's own use starts: after the rings and staged columns while
        they are live (from the first pipelined load in front of their loop, or the start of a loop
        with staged columns, to the loop's end), else at 0."""
        return "mt_scratch" if self.rings_live or self.staged_live else "mt_smem"

    def smem(self, nbytes: int):
        live = self.rings_live or self.staged_live
        self.smem_bytes = max(self.smem_bytes, nbytes + (self.ring_bytes if live else 0))

    def through_shared(self, ctype: str, count: int, elem_bytes: int, write, read, buffer: str | None = None):
        """Values moved through shared memory, in a block of their own: ``buf`` (``count`` elements of
        ``ctype``) filled by ``write()``, a barrier, ``read()``, and a barrier that frees it again.
        ``buffer``: a buffer of the caller's own instead of the scratch space (a staged column's),
        which the caller frees: no barrier after the reads. A block of one warp then meets before
        the writes and orders them for the reads by ``__syncwarp()``: ptxas issues the iteration's
        global loads ahead of that barrier, not after the column's stores (the seed matmul's
        64x128 tile on one warp, H100: 0.92 -> 1.00 of Triton; benchmarks/RESULTS.md)."""
        if buffer is None:
            self.smem(count * elem_bytes)
        self.emit("{")
        self.depth += 1
        self.emit(f"{ctype}* buf = reinterpret_cast<{ctype}*>({buffer or self.scratch});")
        warp = buffer is not None and self.fn.num_warps == 1
        if warp:
            self.emit("__syncthreads();")
        write()
        self.emit("__syncwarp();" if warp else "__syncthreads();")
        read()
        if buffer is None:
            self.emit("__syncthreads();")
        self.depth -= 1
        self.emit("}")

    def op_tma_load(self, op: Op):
        if op.result in self.rings:
            return staged_load(self, op, self.rings[op.result])
        tma.tma_load(self, op)

    def op_tma_store(self, op: Op):
        tma.tma_store(self, op)

    def op_convert_layout(self, op: Op):
        """Through shared memory; where both layouts place every element in the same thread (an
        MMA accumulator read as the next dot's A operand), only registers are renumbered."""
        src, res = op.operands[0], op.result
        try:
            regs = self.layout_of(res).register_map(self.layout_of(src), lambda c: c)
        except ValueError:
            regs = None
        if regs is not None:
            self.emit(self.declare(res) + ";")
            index = self.index(register_expr(self.layout_of(res), regs), "r")
            self.per_element(res, f"{self.ref(res)}[r] = {self.ref(src)}[{index}];")
            return
        self.emit(self.declare(res) + ";")
        ct, eb = self.value_c_type(res), _smem_bytes(res.type.scalar)
        ex = plan_exchange(self.layout_of(src), self.layout_of(res), eb)
        swizzle = ex.swizzle.as_layout(res.type.numel)

        def at(v: Value) -> str:             # the buffer address of register r's element
            return self.index(offset_expr(self.layout_of(v).flatten_outs().compose(swizzle)), "r")

        buffer = None
        if op in self.staged:                # (its loop's iterations take the two buffers in turn)
            offset, size = self.staged[op]
            buffer = f"mt_smem + {f'{offset} + ' if offset else ''}{self.staged_turn[op]} * {size}"
        self.through_shared(ct, res.type.numel, eb, lambda: self.move_registers(src, "buf", at(src), ct, ex.src_vec, True),
                            lambda: self.move_registers(res, "buf", at(res), ct, ex.dst_vec, False), buffer)

    def move_registers(self, v: Value, buf: str, at: str, ct: str, vec: int, write: bool):
        """``v``'s registers into (``write``) or out of the elements ``buf[at]`` of shared memory
        (``buf`` a ``ct*``, ``at`` the index of register ``r``'s element), ``vec`` consecutive
        registers at a time as one vector access."""
        if vec == 1:
            self.per_element(v, f"{buf}[{at}] = {self.ref(v)}[r];" if write else f"{self.ref(v)}[r] = {buf}[{at}];")
            return
        t = f"mt_vec<{ct}, {vec}>"
        self.emit("#pragma unroll")
        if write:
            self.emit(f"for (int r = 0; r < {self.nregs(v)}; r += {vec}) {{ {t} t; "
                      f"for (int j = 0; j < {vec}; ++j) t.v[j] = {self.ref(v)}[r + j]; "
                      f"*reinterpret_cast<{t}*>({buf} + {at}) = t; }}")
        else:
            self.emit(f"for (int r = 0; r < {self.nregs(v)}; r += {vec}) {{ "
                      f"const {t} t = *reinterpret_cast<const {t}*>({buf} + {at}); "
                      f"for (int j = 0; j < {vec}; ++j) {self.ref(v)}[r + j] = t.v[j]; }}")

    def shape_op(self, op: Op):
        """reshape, join, split, cat, flip: the operands go to shared memory, one after the other,
        each in row-major order; each result register reads the element it is (an offset that
        follows from its row-major offset, or its coordinates)."""
        srcs, results = op.operands, op.results
        numel = [s.type.numel if isinstance(s.type, BlockType) else 1 for s in srcs]
        for r in results:
            self.emit(self.declare(r) + ";")

        def write():
            base = 0
            for src, n in zip(srcs, numel):
                at = f"{base} + " if base else ""
                if isinstance(src.type, BlockType):
                    self.per_element(src, f"buf[{at}{self.offset(src, 'r')}] = {self.ref(src)}[r];")
                else:
                    self.emit(f"buf[{base}] = {self.ref(src)};")
                base += n

        def read():
            for j, res in enumerate(results):
                if not isinstance(res.type, BlockType):                # split of a (2,) block: scalars
                    self.emit(f"{self.ref(res)} = buf[{j}];")
                    continue
                flat = self.offset(res, "r")
                if op.name == "join":                                   # (..., k): element k * numel + (... flat)
                    where = f"({flat} & 1) * {numel[0]} + ({flat} >> 1)"
                elif op.name == "split":
                    where = f"{flat} * 2 + {j}"
                elif op.name == "flip":
                    dim, shape = op.attrs["dim"], res.type.shape
                    stride = math.prod(shape[dim + 1:])
                    c = self.coords(res, "r")[dim]
                    where = f"{flat} + ({shape[dim] - 1} - 2 * {c}) * {stride}"
                else:                                                   # reshape, cat: the same row-major offset
                    where = flat
                self.per_element(res, f"{self.ref(res)}[r] = buf[{where}];")
        self.through_shared(self.value_c_type(srcs[0]), sum(numel), _smem_bytes(srcs[0].type.scalar), write, read)

    op_reshape = op_join = op_split = op_cat = op_flip = shape_op

    def op_gather(self, op: Op):
        """The source to shared memory in row-major order; each result register reads the element
        its index names along ``axis`` (index mod n), its other coordinates its own."""
        src, index = op.operands
        res = op.result
        axis, shape = op.attrs["axis"], src.type.shape
        self.emit(self.declare(res) + ";")

        def read():
            coords = self.coords(res, "r")
            coords[axis] = f"((int){self.elem(res, index)} & {shape[axis] - 1})"
            flat = " + ".join(f"{c} * {math.prod(shape[d + 1:])}" for d, c in enumerate(coords))
            self.per_element(res, f"{self.ref(res)}[r] = buf[{flat}];")
        self.through_shared(self.value_c_type(src), src.type.numel, _smem_bytes(src.type.scalar),
                            lambda: self.per_element(src, f"buf[{self.offset(src, 'r')}] = {self.ref(src)}[r];"),
                            read)

    def op_histogram(self, op: Op):
        """Counters in shared memory: each element's one owner (copies of a replicated layout
        skipped) adds 1 to its value's counter, atomically; each result register reads its bin."""
        x, res = op.operands[0], op.result
        bins = op.attrs["num_bins"]
        self.smem(bins * 4)
        threads = self.fn.num_warps * 32
        self.emit(self.declare(res) + ";")
        self.emit("{")
        self.depth += 1
        self.emit(f"int* hist = reinterpret_cast<int*>({self.scratch});")
        self.emit(f"for (int b = tid; b < {bins}; b += {threads}) hist[b] = 0;")
        self.emit("__syncthreads();")
        conds = [c for c in (self.store_owner(x),) if c]
        if len(op.operands) == 2:
            conds.append(self.elem(x, op.operands[1]))
        v = f"{self.ref(x)}[r]"
        conds += [f"{v} >= 0", f"{v} < {bins}"]
        self.per_element(x, f"if ({' && '.join(conds)}) atomicAdd(&hist[(int){v}], 1);")
        self.emit("__syncthreads();")
        self.per_element(res, f"{self.ref(res)}[r] = hist[{self.offset(res, 'r')}];")
        self.emit("__syncthreads();")
        self.depth -= 1
        self.emit("}")

    def init_vars(self, targets: list[Value], inits: list[Value]):
        """Declare the variables of ``targets`` (set to ``inits`` where given)."""
        for i, res in enumerate(targets):
            init = inits[i] if i < len(inits) else None
            if isinstance(res.type, BlockType) and res not in self.rings:
                self.emit(self.declare(res) + ";")
                if init is not None:
                    self.per_element(res, f"{self.ref(res)}[r] = {self.elem(res, init)};")
            else:
                self.emit(f"{self.declare(res)}" + (f" = {self.ref(init)};" if init is not None else ";"))

    def assign(self, targets: list[Value], values: list[Value], staged: bool = False):
        """``targets = values``, all at once (through temporaries when ``staged``: a value may be
        another target)."""
        moves = [(t, v) for t, v in zip(targets, values) if t is not v and self.ref(t) != self.ref(v)]
        names = {self.ref(t) for t in targets}
        if staged and any(self.ref(v) in names for _, v in moves):
            temps = []
            for t, v in moves:
                tmp = f"{self.ref(t)}_next"
                if t in self.rings:
                    self.emit(f"{self.rings[t].c_type}* {tmp} = {self.ref(v)};")
                elif isinstance(t.type, BlockType):
                    self.emit(f"{self.value_c_type(t)} {tmp}[{self.nregs(t)}];")
                    self.per_element(t, f"{tmp}[r] = {self.elem(t, v)};")
                else:
                    self.emit(f"{self.value_c_type(t)} {tmp} = {self.ref(v)};")
                temps.append(tmp)
            for (t, _), tmp in zip(moves, temps):
                if isinstance(t.type, BlockType) and t not in self.rings:
                    self.per_element(t, f"{self.ref(t)}[r] = {tmp}[r];")
                else:
                    self.emit(f"{self.ref(t)} = {tmp};")
            return
        for t, v in moves:
            if isinstance(t.type, BlockType) and t not in self.rings:
                self.per_element(t, f"{self.ref(t)}[r] = {self.elem(t, v)};")
            else:
                self.emit(f"{self.ref(t)} = {self.ref(v)};")

    def nested(self, region: Region) -> int:
        """Emit ``region`` one level deeper; the index of its first line."""
        first = len(self.lines)
        self.depth += 1
        self.region(region)
        self.depth -= 1
        return first

    def may_differ(self, v: Value) -> bool:
        """Whether the threads of a block may hold different values of the scalar ``v``: only what
        each thread reads from memory itself may (another program can write it between two
        threads' reads); bounds, program ids, reductions (combined through shared memory) and
        arithmetic on them are alike in every thread."""
        seen, work = set(), [v]
        while work:
            x = work.pop()
            if x in seen or isinstance(x, (Const, Param)):
                continue
            seen.add(x)
            flowing = sources_of(x)
            if flowing is not None:
                work += flowing
                owner = x.owner
                if isinstance(owner, Op):
                    work += control_operands(owner)
            elif isinstance(x.owner, Op):
                if OPS[x.owner.name].reads_memory:
                    return True
                if x.owner.name not in REDUCE_KINDS or not self._exchanges(x.owner):
                    work += x.owner.operands    # (a reduction across threads gives them one result)
            elif isinstance(x.owner, Region) and x.owner.parent is not None:
                work += control_operands(x.owner.parent)
        return False

    def _exchanges(self, reduction: Op) -> bool:
        """Whether a reduction combines values of several threads (lanes or warps move along its
        axes); one within each thread (a block of one element: ``x.item()``) leaves each its own."""
        src = reduction.operands[0]
        lay = self.layout_of(src)
        axis = reduction.attrs["axis"]
        axes = list(range(lay.rank)) if axis is None else [axis]
        return bool(lay.bits_along(LANE, axes) or lay.bits_along(WARP, axes))

    def uniform_condition(self, cond: str, value: Value, header: int, body_from: int) -> None:
        """Barriers need every thread of the block: when the lines from ``body_from`` on hold one
        and the condition may differ between threads (``may_differ``), the condition on line
        ``header`` is made the block's: ``__syncthreads_or`` (true for all when true for any)."""
        if self.may_differ(value) and any("__syncthreads" in line for line in self.lines[body_from:]):
            self.lines[header] = self.lines[header].replace(cond, f"__syncthreads_or({cond})", 1)

    def op_for(self, op: Op):
        body = op.regions[0]
        start, stop, step, *inits = op.operands
        index, args = body.args[0], body.args[1:]
        for res, arg in zip(op.results, args):
            self.names[arg] = self.names[res]
        self.init_vars(op.results, inits)
        i = self.ref(index)
        unroll = op.attrs.get("loop_unroll_factor", STREAMING_UNROLL if op is self.unrolled else None)
        bound = self.ref(stop)
        if _left_rolled(op, self.rolled_halves) and unroll is None and not any(a in self.rings for a in args):
            bound = f"mt_rolled_bound({bound})"      # (ptxas unrolls it)
        sign = step_sign(step)
        if sign:       # (a zero step runs no iteration: the test below)
            test = f"{i} < {bound}" if sign > 0 else f"{i} > {bound}"
        else:          # a run-time step: counts up or down by its sign; zero runs no iteration
            s_ = self.ref(step)
            test = f"({s_} > 0) ? ({i} < {bound}) : ({s_} < 0 && {i} > {bound})"
        if unroll is not None:
            self.emit(f"#pragma unroll {max(1, int(unroll))}")
        mine = list({id(self.rings[a]): self.rings[a] for a in args if a in self.rings}.values())
        ring = mine[0] if mine else None
        wgmma = any(r.wgmma for r in mine)
        copies = any(r.tma is None for r in mine)   # (rings that cp.async fills)
        fills = list({r.tma.bars: r.tma for r in mine if r.tma is not None}.values())   # (one a set of mbarriers)
        if ring is not None:         # the buffer the loads of iteration i + S - 1 fill (dot.py)
            self.emit(f"int {ring.slot} = {ring.depth};")
        if fills:                    # the buffer iteration i reads, and the round of its mbarrier
            self.emit(f"int {ring.slot}_rd = 0;")
            self.emit(f"unsigned {ring.slot}_phase = 0;")
        staged = f"{i}_staged" if any(inner in self.staged for inner in body.ops) else None
        if staged:                   # which buffer of its staged columns the iteration writes
            self.emit(f"int {staged} = 0;")
            self.staged_live = True
            self.staged_turn.update((inner, staged) for inner in body.ops if inner in self.staged)
        self.emit(f"for ({index.type.c_name} {i} = {self.ref(start)}; {test}; {i} += {self.ref(step)}) {{")
        self.depth += 1
        if ring is not None:         # this iteration's tiles have landed and every warp is done with the last
            if copies:
                self.emit(f"mt_cp_async_wait<{ring.waits}>();")
            for f in fills:
                tma.wait_barrier(self, f.bars, f"{ring.slot}_rd", f"{ring.slot}_phase")
            if wgmma and any(r.through_registers for r in mine):
                # (wgmma reads through the async proxy what the threads stored into the rings)
                self.emit("mt_fence_proxy_async();")
            # (TMA's copies are seen by each thread that waited on their mbarrier, and copies issued
            # after the dot have the barrier there: the block need not meet here)
            if copies or not all(r.late for r in mine):
                self.emit("__syncthreads();")
        self.loop_body(body)
        # yields take effect together: staged when one lane yields another lane's argument
        self.assign(op.results, body.ops[-1].operands, staged=True)
        if ring is not None:
            self.emit(f"{ring.slot} = {ring.slot} == {ring.stages - 1} ? 0 : {ring.slot} + 1;")
        if fills:
            self.emit(f"if (++{ring.slot}_rd == {ring.stages}) {{ {ring.slot}_rd = 0; {ring.slot}_phase ^= 1u; }}")
        if staged:
            self.emit(f"{staged} ^= 1;")
        self.depth -= 1
        self.emit("}")
        if staged:                   # (the last iteration's reads, before anyone writes there again)
            self.emit("__syncthreads();")
            self.staged_live = False
        if ring is not None:         # (copies of iterations that did not run are still in flight)
            if wgmma:
                self.emit("mt_wgmma_wait<0>();")           # (the last iteration's wgmma group too)
            if copies:
                self.emit("mt_cp_async_wait<0>();")
            self.emit("__syncthreads();")
            for f in fills:          # (TMA copies only for iterations that run: none is in flight)
                tma.inval_barriers(self, f.bars, ring.stages)
                self.tma_barriers.discard(f.bars)
            self.rings_live = False

    def loop_body(self, body: Region):
        """A loop's ops in order, except the copies into rings whose copies go after the loop's
        wgmma dots (``Ring.late``): those follow the last such dot and a barrier (after its wait,
        the buffers they overwrite are no warpgroup's operands any more)."""
        # (the copies of iteration i + S - 1: a ring's copies in front of an inner loop, in this
        # body too, keep their place)
        late = [o for o in body.ops if o.name in ("load", "tma_load") and o.result in self.rings
                and self.rings[o.result].late and o.attrs.get("ahead") == self.rings[o.result].depth]
        if not late:
            return self.region(body)
        dots = [o for o in body.ops if o.name == "dot" and any(self.rings.get(x) and self.rings[x].late
                                                              for x in o.operands[:2])]
        for o in body.ops:
            if o in late:
                continue
            self.op(o)
            if o is dots[-1]:
                self.emit("__syncthreads();   // (every warpgroup's last wgmma group is done: its buffers are free)")
                for x in late:
                    self.op(x)

    def op_if(self, op: Op):
        """Result registers declared before; each branch assigns what it yields."""
        then, orelse = op.regions
        self.init_vars(op.results, [])
        cond = self.ref(op.operands[0])
        header = len(self.lines)
        self.emit(f"if ({cond}) {{")
        body_from = self.nested(then)
        self.depth += 1
        self.assign(op.results, then.ops[-1].operands)
        self.depth -= 1
        if orelse.ops[:-1] or op.results:
            self.emit("} else {")
            self.nested(orelse)
            self.depth += 1
            self.assign(op.results, orelse.ops[-1].operands)
            self.depth -= 1
        self.emit("}")
        self.uniform_condition(cond, op.operands[0], header, body_from)

    def op_while(self, op: Op):
        """``while (true) { before; results = passed; if (!cond) break; after; args = yields }``:
        the before region's arguments are variables of their own; the after region's arguments
        are the result variables (what the condition passes is both)."""
        before, after = op.regions
        for res, arg in zip(op.results, after.args):
            self.names[arg] = self.names[res]
        self.init_vars(before.args, op.operands)
        self.init_vars(op.results, [])
        self.emit("while (true) {")
        loop_from = len(self.lines)
        self.nested(before)
        self.depth += 1
        cond, *passed = before.ops[-1].operands
        self.assign(op.results, passed)
        header = len(self.lines)
        test = self.ref(cond)
        self.emit(f"if (!{test}) break;")
        self.region(after)
        self.assign(before.args, after.ops[-1].operands, staged=True)
        self.depth -= 1
        self.emit("}")
        self.uniform_condition(test, cond, header, loop_from)

    # --- reductions ---------------------------------------------------------------------------------

    def combine(self, kind: str, a: str, b: str, ty: ScalarType) -> str:
        d = OPS[REDUCE_COMBINE[kind]]
        if ty.is_half:                       # each step in fp32, rounded back (as a half add rounds)
            return self.cast_to(d.c_fn([self.cast_to(a, ty, F32), self.cast_to(b, ty, F32)], F32), F32, ty)
        return d.c_fn([a, b], ty)

    def scratch_arrays(self, names: list[str], types: list[ScalarType], count: int):
        """Declare, one after the other in the op's shared memory, an array of ``count`` elements of
        each type (at least 4 bytes an element, each array 8-byte aligned), and reserve them."""
        at = 0
        for name, ty in zip(names, types):
            self.emit(f"{ty.c_name}* {name} = reinterpret_cast<{ty.c_name}*>({self.scratch}{f' + {at}' if at else ''});")
            at += -(-count * max(4, ty.bits // 8) // 8) * 8
        self.smem(at)

    def combine_lambda(self, op: Op) -> str:
        """Emit the op's combine body (a Combine) as a C++ lambda that combines into its first N
        arguments, taken by reference: ``f(a0, a1, b0, b1)`` makes (a0, a1) = combine(a, b).
        Returns its name."""
        body = op.attrs["combine"].region
        n = len(body.args) // 2
        name = f"{self.ref(op.results[0])}_combine"
        params = ([f"{self.c_type(a.type)}& {self.ref(a)}" for a in body.args[:n]]
                  + [f"const {self.c_type(a.type)} {self.ref(a)}" for a in body.args[n:]])
        self.emit(f"auto {name} = [&]({', '.join(params)}) {{")
        self.depth += 1
        self.region(body)
        outs = body.ops[-1].operands
        for i, v in enumerate(outs):
            self.emit(f"const {self.c_type(v.type)} out{i} = {self.ref(v)};")
        self.emit(" ".join(f"{self.ref(a)} = out{i};" for i, a in enumerate(body.args[:n])))
        self.depth -= 1
        self.emit("};")
        return name

    def op_map_elementwise(self, op: Op):
        """``tl.map_elementwise``: the body as a C++ lambda (operands by value, results by
        reference), called on each group of ``pack`` registers; a group past the last register
        repeats the last element and writes nothing."""
        body, pack = op.attrs["combine"].region, op.attrs["pack"]
        first = op.results[0]
        block = isinstance(first.type, BlockType)
        n = self.nregs(first) if block else 1
        outs = body.ops[-1].operands
        name = f"{self.ref(first)}_map"
        params = ([f"const {self.c_type(a.type)} {self.ref(a)}" for a in body.args]
                  + [f"{self.c_type(v.type)}& out{i}" for i, v in enumerate(outs)])
        self.emit(f"auto {name} = [&]({', '.join(params)}) {{")
        self.depth += 1
        self.region(body)
        self.emit(" ".join(f"out{i} = {self.ref(v)};" for i, v in enumerate(outs)))
        self.depth -= 1
        self.emit("};")
        for res in op.results:
            self.emit(self.declare(res) + ";")

        def at(e: int) -> str:
            return f"(r + {e} < {n} ? r + {e} : {n - 1})" if e and n % pack else (f"r + {e}" if e else "r")
        args = [self.elem(first, v, at(e)) if block else self.ref(v) for v in op.operands for e in range(pack)]
        temps = [f"t{i}" for i in range(len(outs))]
        lines = [" ".join(f"{self.c_type(v.type)} {t};" for v, t in zip(outs, temps)),
                 f"{name}({', '.join(args + temps)});"]
        for k, res in enumerate(op.results):
            for e in range(pack):
                target = f"{self.ref(res)}[r + {e}]" if block else self.ref(res)
                store = f"{target} = {temps[k * pack + e]};"
                lines.append(f"if (r + {e} < {n}) {store}" if e and n % pack else store)
        self.per_group(n if block else None, pack, lines)

    def op_reduce(self, op: Op):
        """Combine, in this order, the registers, the lanes and the warps whose bases move along the
        reduced dimensions (positions that differ only in replicating bits hold the same elements
        and compute the same result, so they are left out and nothing is counted twice). A
        ``reduce`` of N blocks by a combine body keeps N accumulators and calls the body's lambda;
        the fixed kinds (sum, max, ...) combine with their elementwise op."""
        srcs, results = op.operands, op.results
        axis = op.attrs["axis"]
        if op.name == "reduce":
            fn = self.combine_lambda(op)
            tys = [r.type.scalar for r in results]

            def merge(accs, others):
                return f"{fn}({', '.join(accs)}, {', '.join(others)});"

            def first_or_merge(accs, values):
                return f"if (seen[q]) {merge(accs, values)} else {{ {' '.join(f'{a} = {v};' for a, v in zip(accs, values))} }}"
        else:
            tys = [results[0].type.scalar]

            def merge(accs, others):
                return f"{accs[0]} = {self.combine(op.name, accs[0], others[0], tys[0])};"

            def first_or_merge(accs, values):
                return f"{accs[0]} = seen[q] ? {self.combine(op.name, accs[0], values[0], tys[0])} : {values[0]};"
        lay = self.layout_of(srcs[0])
        axes = list(range(lay.rank)) if axis is None else [axis]
        n_src = lay.num_regs
        res = results[0]
        block = isinstance(res.type, BlockType)
        n_res = self.nregs(res) if block else 1
        outs = [self.ref(r) for r in results]
        for out, ty in zip(outs, tys):
            self.emit(f"{ty.c_name} {out}[{n_res}];" if block else f"{ty.c_name} {out};")
        accs = [f"{out}[q]" if block else out for out in outs]
        self.emit("{")
        self.depth += 1
        # 1. within the thread: registers that differ only along the reduced axes
        q_of_s = "0"
        if block:
            regs = lay.register_map(self.layout_of(res), lambda c: c[:axis] + c[axis + 1:])
            q_of_s = self.index(register_expr(lay, regs), "s")
        copies = lay.free_masks()["register"]
        values = [self.cast_to(f"{self.ref(src)}[s]", src.type.scalar, ty) for src, ty in zip(srcs, tys)]
        self.emit(f"bool seen[{n_res}] = {{}};")
        self.emit("#pragma unroll")
        self.emit(f"for (int s = 0; s < {n_src}; ++s) {{")
        if copies:
            self.emit(f"  if ((s & {copies}) != 0) continue;")
        self.emit(f"  const int q = {q_of_s};")
        self.emit(f"  {first_or_merge(accs, values)}")
        self.emit("  seen[q] = true;")
        self.emit("}")
        # result registers that only copy another (a slice of the tensor cores' layout drops the
        # column bit of c0/c1: its registers 1 and 3 repeat 0 and 2) take their value before the
        # exchanges below (which read and write every register)
        res_copies = self.layout_of(res).free_masks()["register"] if block else 0
        if res_copies:
            self.emit("#pragma unroll")
            for out in outs:
                self.emit(f"for (int q = 0; q < {n_res}; ++q) if (q & {res_copies}) {out}[q] = {out}[q & ~{res_copies}];")
        # 2. across the lanes of a warp
        masks = [1 << b for b in lay.bits_along(LANE, axes)]
        if masks:
            self.emit("#pragma unroll")
            self.emit(f"for (int q = 0; q < {n_res}; ++q) {{")
            for mask in sorted(masks, reverse=True):
                shfls = [f"__shfl_xor_sync(0xffffffffu, {acc}, {mask})" for acc in accs]
                if op.name == "reduce":
                    self.emit("  { " + " ".join(f"const {ty.c_name} o{k} = {x};" for k, (ty, x) in enumerate(zip(tys, shfls)))
                              + f" {merge(accs, [f'o{k}' for k in range(len(accs))])} }}")
                else:
                    self.emit(f"  {merge(accs, shfls)}")
            self.emit("}")
        # 3. across warps, through shared memory (one buffer per accumulator)
        warp_bits = lay.bits_along(WARP, axes)
        if warp_bits:
            warps = 1 << len(warp_bits)
            q_count = res.type.numel if block else 1
            widx = self.index(thread_bits_expr(lay, [(WARP, b) for b in warp_bits]))
            lin = self.offset(res, "q") if block else "0"
            bufs = ["buf"] if len(tys) == 1 else [f"buf{k}" for k in range(len(tys))]
            self.scratch_arrays(bufs, tys, warps * q_count)
            self.emit("#pragma unroll")
            slot = _paren(widx) if q_count == 1 else f"{_paren(widx)} * {q_count}"
            slot = slot if lin == "0" else f"{slot} + {lin}"
            stores = " ".join(f"{b}[{slot}] = {a};" for b, a in zip(bufs, accs))
            self.emit(f"for (int q = 0; q < {n_res}; ++q) " + (stores if len(bufs) == 1 else f"{{ {stores} }}"))
            self.emit("__syncthreads();")
            if not block and op.name == "reduce":
                # one result of a combine function (argmax...): lane l of every warp takes warp
                # (l mod W)'s partial, and a butterfly over the W lanes gives each the total
                # (Triton's order: xor W/2, ..., 1). (A fixed kind's one instruction per partial
                # is faster as the serial loop below: its shared-memory reads broadcast.)
                self.emit("{")
                self.emit("  const int l = tid & " + str(warps - 1) + ";")
                self.emit("  " + " ".join(f"{a} = {b}[l];" for a, b in zip(accs, bufs)))
                self.emit("}")
                for mask in (1 << b for b in reversed(range(len(warp_bits)))):
                    shfls = [f"__shfl_xor_sync(0xffffffffu, {acc}, {mask})" for acc in accs]
                    self.emit("{ " + " ".join(f"const {ty.c_name} o{k} = {x};" for k, (ty, x) in enumerate(zip(tys, shfls)))
                              + f" {merge(accs, [f'o{k}' for k in range(len(accs))])} }}")
            else:
                self.emit("#pragma unroll")
                self.emit(f"for (int q = 0; q < {n_res}; ++q) {{")
                self.emit("  " + " ".join(f"{a} = {b}[{lin}];" for a, b in zip(accs, bufs)))
                self.emit("  #pragma unroll")
                self.emit(f"  for (int w = 1; w < {warps}; ++w) {merge(accs, [f'{b}[w * {q_count} + {lin}]' for b in bufs])}")
                self.emit("}")
            self.emit("__syncthreads();")
        self.depth -= 1
        self.emit("}")

    def op_scan(self, op: Op):
        """The inclusive scan along ``axis``, walking the position bits that move along it from the
        lowest (1) to the highest: for each such bit, the two halves of every aligned block of
        twice its size meet -- the later half (the higher indices; the lower when reversed) takes
        the earlier half's total in front of its prefixes, and both take the block's total. A
        register bit pairs registers of the thread, a lane bit exchanges with a shuffle, a warp bit
        through shared memory. The layout (passes/layout.py) moves nothing else along those bits."""
        fn = self.combine_lambda(op)
        srcs, results = op.operands, op.results
        axis, reverse = op.attrs["axis"], op.attrs["reverse"]
        lay = self.layout_of(srcs[0])
        n = lay.num_regs
        tys = [r.type.scalar for r in results]
        incs = [self.ref(r) for r in results]
        tots = [f"{i}_total" for i in incs]
        for src, inc, tot, ty in zip(srcs, incs, tots, tys):
            self.emit(f"{ty.c_name} {inc}[{n}], {tot}[{n}];")
            self.emit("#pragma unroll")
            self.emit(f"for (int s = 0; s < {n}; ++s) {inc}[s] = {tot}[s] = {self.ref(src)}[s];")
        steps = sorted((v[axis], dim, b) for dim in (REGISTER, LANE, WARP)
                       for b, v in enumerate(lay.bases_of(dim)) if v[axis])
        later_bit = 0 if reverse else 1

        def take(dst: list[str], earlier: list[str]) -> str:
            """dst = combine(earlier, dst), through temporaries (the lambda combines into its left side)."""
            temps = " ".join(f"{ty.c_name} t{k} = {e};" for k, (ty, e) in enumerate(zip(tys, earlier)))
            back = " ".join(f"{d} = t{k};" for k, d in enumerate(dst))
            return f"{{ {temps} {fn}({', '.join(f't{k}' for k in range(len(tys)))}, {', '.join(dst)}); {back} }}"

        self.emit("{")
        self.depth += 1
        # the warp bits after the last register or lane bit: one exchange through shared memory for
        # all of them (each thread combines the totals of the warps before its own, in order)
        last_in_warp = max((k for k, (_, dim, _) in enumerate(steps) if dim != WARP), default=-1)
        trailing = [b for _, dim, b in steps[last_in_warp + 1:]]
        steps = steps[:last_in_warp + 1]
        bufs = []

        def buffers():
            if not bufs:
                bufs.extend(f"scan_buf{k}" for k in range(len(tys)))
                self.scratch_arrays(bufs, tys, self.fn.num_warps * 32 * n)
            return bufs
        for _, dim, b in steps:
            if dim == REGISTER:
                bit = 1 << b
                later, earlier = ("s | {bit}", "s") if not reverse else ("s", "s | {bit}")
                later, earlier = later.format(bit=bit), earlier.format(bit=bit)
                self.emit("#pragma unroll")
                self.emit(f"for (int s = 0; s < {n}; ++s) if ((s & {bit}) == 0) {{")
                self.emit("  " + take([f"{i}[{later}]" for i in incs], [f"{t}[{earlier}]" for t in tots]))
                self.emit("  " + take([f"{t}[{later}]" for t in tots], [f"{t}[{earlier}]" for t in tots]))
                self.emit("  " + " ".join(f"{t}[{earlier}] = {t}[{later}];" for t in tots))
                self.emit("}")
                continue
            if dim == LANE:
                partner = [f"__shfl_xor_sync(0xffffffffu, {t}[s], {1 << b})" for t in tots]
            else:
                buffers()
                self.emit("#pragma unroll")
                self.emit(f"for (int s = 0; s < {n}; ++s) {{ " + " ".join(f"{buf}[tid * {n} + s] = {t}[s];"
                                                                           for buf, t in zip(bufs, tots)) + " }")
                self.emit("__syncthreads();")
                partner = [f"{buf}[(tid ^ {1 << thread_bit(WARP, b)}) * {n} + s]" for buf in bufs]
            tid_bit = thread_bit(dim, b)
            self.emit("#pragma unroll")
            self.emit(f"for (int s = 0; s < {n}; ++s) {{")
            self.emit("  " + " ".join(f"const {ty.c_name} p{k} = {x};" for k, (ty, x) in enumerate(zip(tys, partner))))
            ps = [f"p{k}" for k in range(len(tys))]
            self.emit(f"  if (((tid >> {tid_bit}) & 1) == {later_bit}) {{ {take([f'{i}[s]' for i in incs], ps)} "
                      f"{take([f'{t}[s]' for t in tots], ps)} }}")
            self.emit(f"  else {fn}({', '.join(f'{t}[s]' for t in tots)}, {', '.join(ps)});")
            self.emit("}")
            if dim == WARP:
                self.emit("__syncthreads();")
        if trailing:
            along = sum(1 << b for b, v in enumerate(lay.bases_of(REGISTER)) if v[axis])
            self.scan_across_warps(trailing, along, buffers(), incs, tots, tys, n, reverse, take, fn)
        self.depth -= 1
        self.emit("}")

    def scan_across_warps(self, bits, along, bufs, incs, tots, tys, n, reverse, take, fn):
        """The scan's last step when its highest axis bits are all warp bits: every thread stores
        its totals (its warp's, per register), and after one barrier combines the totals of the
        warps before its own along the axis (after, when reversed), in axis order, in front of its
        prefixes. ``bits``: those warp bits, lowest first; ``along``: the register bits along the
        axis (registers differing only there hold one total: one prefix serves them)."""
        count = 1 << len(bits)
        mask = sum(1 << b for b in bits)
        position = " | ".join(f"(((tid >> {thread_bit(WARP, b)}) & 1) << {i})" for i, b in enumerate(bits))
        warp_bits = [sum(((u >> i) & 1) << b for i, b in enumerate(bits)) for u in range(count)]
        self.emit("#pragma unroll")
        self.emit(f"for (int s = 0; s < {n}; ++s) {{ " + " ".join(f"{buf}[tid * {n} + s] = {t}[s];"
                                                                   for buf, t in zip(bufs, tots)) + " }")
        self.emit("__syncthreads();")
        self.emit(f"const int mt_pos = {position};")
        self.emit(f"const int mt_others = (tid >> 5) & ~{mask};")
        self.emit(f"const int mt_warp_of[{count}] = {{{', '.join(map(str, warp_bits))}}};")
        before = "u > mt_pos" if reverse else "u < mt_pos"
        ps = [f"pre{k}[s]" for k in range(len(tys))]
        self.emit(" ".join(f"{ty.c_name} pre{k}[{n}];" for k, ty in enumerate(tys)) + f" bool seen[{n}] = {{}};")
        self.emit("#pragma unroll")
        self.emit(f"for (int s = 0; s < {n}; ++s) {{")
        if along:
            self.emit(f"  if ((s & {along}) != 0) continue;")
        self.emit("  #pragma unroll")
        self.emit(f"  for (int i = 0; i < {count}; ++i) {{")
        self.emit(f"    const int u = {'%d - i' % (count - 1) if reverse else 'i'};")
        self.emit(f"    if (!({before})) continue;")
        slot = f"((mt_others | mt_warp_of[u]) * 32 + (tid & 31)) * {n} + s"
        self.emit("    " + " ".join(f"const {ty.c_name} q{k} = {buf}[{slot}];" for k, (ty, buf) in enumerate(zip(tys, bufs))))
        self.emit("    if (seen[s]) " + f"{fn}({', '.join(ps)}, {', '.join(f'q{k}' for k in range(len(tys)))});"
                  + " else { " + " ".join(f"{p} = q{k};" for k, p in enumerate(ps)) + " seen[s] = true; }")
        self.emit("  }")
        self.emit("}")
        self.emit("#pragma unroll")
        self.emit(f"for (int s = 0; s < {n}; ++s) {{")
        rep = f"(s & ~{along})" if along else "s"
        self.emit(f"  if (seen[{rep}]) {take([f'{i}[s]' for i in incs], [f'pre{k}[{rep}]' for k in range(len(tys))])}")
        self.emit("}")
        self.emit("__syncthreads();")

    # --- the whole kernel ---------------------------------------------------------------------------

    def params(self) -> list[str]:
        out = []
        for p in self.fn.params:
            if isinstance(p.type, PointerType):
                # const where never stored through; no __restrict__: Triton lets callers alias
                # buffers (an in-place add(x, y, x)), which restrict would make undefined
                const = "const " if p in self.const_params else ""
                out.append(f"{const}{p.type.pointee.c_name}* {self.ref(p)}")
            elif p.type == TMAP:
                out.append(tma.param_declaration(self, self.ref(p)))
            else:
                out.append(f"{p.type.c_name} {self.ref(p)}")
        return out

    def body(self) -> list[str]:
        """The function's statements, after its prologue (``tid``, the shared memory)."""
        self.region(self.fn.body)
        # a barrier that ends the kernel orders nothing (a store's publish_store, a reduction
        # done with its shared memory): dropped
        while self.lines and self.lines[-1].strip() == "__syncthreads();":
            self.lines.pop()
        prologue = ["  const int tid = threadIdx.x;       // lane = tid & 31, warp = tid >> 5", "  (void)tid;"]
        if (self.smem_bytes or self.ring_bytes) and self.smem_base:
            prologue.append("  extern __shared__ __align__(16) unsigned char mt_smem_all[];")
            prologue.append(f"  unsigned char* const mt_smem = mt_smem_all + {self.smem_base};   // (after its callers')")
        elif self.smem_bytes or self.ring_bytes:
            prologue.append("  extern __shared__ __align__(16) unsigned char mt_smem[];")
        if self.ring_bytes:
            prologue.append(f"  unsigned char* const mt_scratch = mt_smem + {self.ring_bytes};   // (after the rings)")
            prologue.append("  (void)mt_scratch;")
            self.smem_bytes = max(self.smem_bytes, self.ring_bytes)
        return prologue + self.lines

    def device_functions(self) -> list[str]:
        """The kernel's device functions (@jit(noinline=True) helpers: ``call`` ops), declared first
        and then defined, each emitted as a function of the block's threads like the kernel (every
        thread calls it, with the same arguments); their helpers become the kernel's. Each has
        shared memory of its own, after the kernel's and the others' (1 KiB aligned, as the kernel's
        start), so a call never overwrites what its caller keeps there (a loop's pipelined tiles)."""
        declarations, definitions = [], []
        base = -(-self.smem_bytes // 1024) * 1024
        for symbol, f in self.fn.device_functions.items():
            em = CudaEmitter(f, self.target, smem_base=base)
            em.device_function = em.has_loads = True          # (its callers may read what its stores wrote)
            body = em.body()
            if em.smem_bytes:
                base += -(-em.smem_bytes // 1024) * 1024
                self.smem_bytes = base
            returns = f.body.ops[-1].operands                 # (func_return)
            outs = [f"{em.c_type(v.type)}& mt_ret{i}" for i, v in enumerate(returns)]
            where = f"{os.path.basename(f.loc.file)}:{f.loc.line}" if f.loc else "?"
            head = f"__device__ __noinline__ void {device_symbol(symbol)}({', '.join(em.params() + outs)})"
            declarations += [f"// @jit(noinline=True) {comment_text(f.name)} from {comment_text(where)}", head + ";"]
            definitions += [head, "{", *body, "}"]
            self.helpers.update(em.helpers)
            self.externs.update(em.externs)
        return declarations + definitions

    def op_call(self, op: Op):
        for r in op.results:
            self.emit(self.declare(r) + ";")
        args = [self.ref(v) for v in op.operands] + [self.ref(r) for r in op.results]
        self.emit(f"{device_symbol(op.attrs['callee'])}({', '.join(args)});")

    def op_func_return(self, op: Op):
        for i, v in enumerate(op.operands):      # (a pointer into a read-only parameter: returned as T*)
            self.emit(f"mt_ret{i} = ({self.c_type(v.type)})({self.ref(v)});")

    def launch_min_blocks(self) -> int | None:
        """The thread blocks an SM must run at once, as ``__launch_bounds__`` states it (None: not
        stated): two for the wgmma GEMMs that ask (``dot.py``), one where the registers come first
        (``_registers_first``), four for the streaming loops of 8 warps (``_streaming_blocks``)."""
        if self.min_blocks > 1:
            return self.min_blocks
        return 1 if self.registers_first else self.streaming_blocks

    def generate(self) -> tuple[str, int]:
        body = self.body()
        functions = self.device_functions()
        src = self.fn.loc.file if self.fn.loc else "?"
        desc = []
        if self.fn.constexprs:
            desc.append("constexprs: " + ", ".join(f"{k}={v}" for k, v in self.fn.constexprs.items()))
        desc.append(f"num_warps: {self.fn.num_warps}")
        text = _jinja().get_template("kernel.cu.j2").render(
            version=__version__, name=self.fn.name, symbol=kernel_symbol(self.fn.name), source=f"{os.path.basename(src)}:{self.fn.loc.line if self.fn.loc else 0}",
            description=desc, num_threads=self.num_threads, min_blocks=self.launch_min_blocks(), params=self.params(), body=body,
            externs=[self.externs[k] for k in sorted(self.externs)],
            helpers=[line for k in sorted(self.helpers) for line in self.helpers[k]],
            functions=functions,
            halves=any(uses_halves(f) for f in (self.fn, *self.fn.device_functions.values())))
        return text, self.smem_bytes


def device_symbol(symbol: str) -> str:
    """The C name of the device function ``symbol`` (``call``'s attribute: f0, f1, ...)."""
    return f"mt_fn_{symbol}"


_UNSIGNED = {1: "unsigned char", 8: "unsigned char", 16: "unsigned short", 32: "unsigned int", 64: "unsigned long long"}
# the C type of an inline-PTX operand by its constraint letter (ir/ops.py: ASM_REGISTERS)
_ASM_C_TYPE = {"r": "unsigned int", "h": "unsigned short", "l": "unsigned long long", "f": "float", "d": "double"}


def _ptx_template(asm: str) -> str:
    """Triton's inline-PTX text as a CUDA ``asm`` template: operands ``$i`` become ``%i``, a
    literal ``%`` (as in ``%tid.x``) becomes ``%%``."""
    return re.sub(r"\$(\d+)", r"%\1", asm.replace("%", "%%"))


def _cache_hint(em: CudaEmitter, op: Op) -> str | None:
    """The load's or store's cache modifier or eviction policy (the suffix of the mt_load_* /
    mt_store_* that carries its PTX qualifiers, whose helper it adds to the kernel once), or None."""
    hint = cache_hint(op.attrs)
    if hint is not None:
        kind = "load" if op.name == "load" else "store"
        if f"mt_{kind}_{hint}" not in em.helpers:
            em.helpers[f"mt_{kind}_{hint}"] = hints.helper(kind, hint)
    return hint


def _zero_bits(v: Value) -> bool:
    """A constant whose bits are all zero (0, +0.0, False)."""
    return isinstance(v, Const) and v.value == 0 and not (isinstance(v.value, float) and math.copysign(1, v.value) < 0)


def generate_cuda(fn: Function, target: str = "sm_90") -> tuple[str, int]:
    """CUDA C++ source for ``fn`` (layouts assigned) and its dynamic shared-memory bytes, for the
    CUDA ``target`` (sm_90a: Hopper's wgmma where a dot allows it)."""
    return CudaEmitter(fn, target).generate()


__all__ = ["generate_cuda", "c_literal"]

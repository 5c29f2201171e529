"""TMA copies of a tensor descriptor's blocks (``tma_load`` / ``tma_store``: frontend/descriptors.py
gives such a descriptor its tensor map on the sm_90a target).

The tensor map is a ``const __grid_constant__ mt_tmap`` kernel parameter (the runtime encodes it
on the host: ``runtime.driver.tensor_map``); TMA reads it through its generic address. A block
travels as one ``cp.async.bulk.tensor`` between global memory and a row-major tile in shared
memory (128-byte aligned, no swizzle), which the threads read into, or write from, the registers
of the value's layout, 16 bytes at a time where the layout holds runs of the last dimension.

TMA copies a block exactly only where its offset along the last dimension is a multiple of 16
bytes (else the H200 stops the kernel: an illegal instruction), and, for a store, where the last
dimension does not end inside a 16-byte chunk the block covers (TMA writes whole chunks: the
elements after the end too; measured, and Triton 3.6 writes them). Where either fails -- a run-time
test of the offsets and the shape, the same in every thread -- the threads copy the block
themselves, element by element with bounds checks, through the same tile:

- load: thread 0 initializes an mbarrier, the block synchronizes, thread 0 arms the barrier with
  the tile's bytes and starts the copy, every thread waits for the barrier's phase 0 and reads its
  elements; a barrier then ends the tile's use and thread 0 invalidates the mbarrier (each load
  starts a fresh one: no phase to track across loops and branches). Elements out of bounds arrive
  as the tensor map's padding (zeros or NaN).
- store: every thread writes its elements into the tile and fences its writes for the async proxy
  (``fence.proxy.async.shared::cta``), the block synchronizes, thread 0 starts the copy and waits
  until it completed (``cp.async.bulk.wait_group 0``: later loads of the kernel see the data, and
  the tile may be reused), and a barrier ends the tile's use. Elements out of bounds are not written.

The helpers are written into a kernel only where it uses them (``em.helpers``).
"""
from __future__ import annotations

import math

from ...ir.ssa import Op, Value, walk
from ...ir.types import TMAP
from .staging import Staging

_COMMON = """\
#ifndef __CUDA_ARCH__
#define __grid_constant__
#endif
// a TMA tensor map (CUtensorMap), passed by value; TMA copies between a tile and global memory
struct __align__(64) mt_tmap { unsigned long long words[16]; };
// (the next boundary of n bytes (a power of 2) of the shared memory at p, reached by adding to p:
// the compiler still sees shared memory there, and accesses through it are shared-memory ones)
__device__ __forceinline__ unsigned char* mt_align_up(unsigned char* p, unsigned n) {
  return p + ((0u - (unsigned)__cvta_generic_to_shared(p)) & (n - 1u));
}
__device__ __forceinline__ void mt_mbarrier_init(unsigned long long* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1; fence.mbarrier_init.release.cluster;"
               :: "r"((unsigned)__cvta_generic_to_shared(bar)) : "memory");
#endif
}
__device__ __forceinline__ void mt_mbarrier_wait(unsigned long long* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"((unsigned)__cvta_generic_to_shared(bar)) : "memory");
#endif
}
__device__ __forceinline__ void mt_mbarrier_inval(unsigned long long* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"((unsigned)__cvta_generic_to_shared(bar)) : "memory");
#endif
}"""


def _coordinates(rank: int, first: int) -> str:
    return ", ".join(f"%{first + i}" for i in range(rank))


def _load_helper(rank: int) -> str:
    params = ", ".join(f"int c{i}" for i in range(rank))
    ins = ", ".join(f'"r"(c{i})' for i in range(rank))
    return f"""\
// TMA: the {rank}-d box at (c0, ...) (innermost first) into tile, completing bar's transaction of `bytes`
__device__ __forceinline__ void mt_tma_load_{rank}d(unsigned char* tile, const mt_tmap* map, unsigned long long* bar,
                                                 unsigned bytes, {params}) {{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned b = (unsigned)__cvta_generic_to_shared(bar);
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], "
               "[%1, {{{_coordinates(rank, 3)}}}], [%2];"
               :: "r"((unsigned)__cvta_generic_to_shared(tile)), "l"(reinterpret_cast<unsigned long long>(map)), "r"(b),
                  {ins} : "memory");
#endif
}}"""


_RING_HELPERS = {
    "mt_tma_ring": """\
// TMA into a dot's ring (backends/cuda/dot.py): a buffer's mbarrier armed with the tile's bytes, the
// boxes copied into it, and every thread's wait for the buffer's phase (host compilers -- the CPU
// emulator of the tests -- get the emulator's deferred copies)
// one lane of the (converged) warp: the issuing thread, as ptxas sees it (its TMA copies then need
// no loop over the active lanes)
__device__ __forceinline__ bool mt_elect_one() {
#ifdef __CUDA_ARCH__
  unsigned elected;
  asm volatile("{ .reg .pred p; elect.sync _|p, 0xffffffff; selp.u32 %0, 1, 0, p; }" : "=r"(elected));
  return elected;
#else
  return (threadIdx.x & 31) == 0;
#endif
}
__device__ __forceinline__ void mt_mbarrier_init_n(unsigned long long* bar, unsigned arrivals) {
#ifdef __CUDA_ARCH__
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1; fence.mbarrier_init.release.cluster;"
               :: "r"((unsigned)__cvta_generic_to_shared(bar)), "r"(arrivals) : "memory");
#else
  mt_emulated_mbarrier_init(bar, arrivals);
#endif
}
__device__ __forceinline__ void mt_mbarrier_expect_tx(unsigned long long* bar, unsigned bytes) {
#ifdef __CUDA_ARCH__
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               :: "r"((unsigned)__cvta_generic_to_shared(bar)), "r"(bytes) : "memory");
#else
  mt_emulated_mbarrier_expect_tx(bar, bytes);
#endif
}
__device__ __forceinline__ void mt_tma_copy_2d(unsigned char* tile, const mt_tmap* map, unsigned long long* bar,
                                               int c0, int c1) {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
               :: "r"((unsigned)__cvta_generic_to_shared(tile)), "l"(reinterpret_cast<unsigned long long>(map)),
                  "r"((unsigned)__cvta_generic_to_shared(bar)), "r"(c0), "r"(c1) : "memory");
#else
  mt_emulated_tma_copy_2d(tile, map, bar, c0, c1);
#endif
}
__device__ __forceinline__ void mt_mbarrier_wait_parity(unsigned long long* bar, unsigned phase) {
#ifdef __CUDA_ARCH__
  unsigned done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"((unsigned)__cvta_generic_to_shared(bar)), "r"(phase) : "memory");
#else
  mt_emulated_mbarrier_wait(bar, phase);
#endif
}"""}


def barrier(bars: int, slot: str) -> str:
    """C++ for the mbarrier of buffer ``slot`` of a ring whose mbarriers start ``bars`` bytes into
    the shared memory."""
    return f"reinterpret_cast<unsigned long long*>(mt_smem + {bars}) + {slot}"


def init_barriers(em, bars: int, count: int, arrivals: int) -> None:
    """Thread 0 initializes a loop's ``count`` ring mbarriers (``arrivals`` each: one a ring's copy,
    with its bytes), and the block synchronizes before any thread waits on them or a copy arms them."""
    _use(em)
    _use(em, "mt_tma_ring", _RING_HELPERS["mt_tma_ring"])
    em.emit(f"if (tid == 0) for (int b = 0; b < {count}; ++b) mt_mbarrier_init_n({barrier(bars, 'b')}, {arrivals}u);")
    em.emit("__syncthreads();")


def wait_barrier(em, bars: int, slot: str, phase: str) -> None:
    """Every thread waits until the ring buffer ``slot``'s copies of the current round landed."""
    em.emit(f"mt_mbarrier_wait_parity({barrier(bars, slot)}, {phase});")


def inval_barriers(em, bars: int, count: int) -> None:
    """After the loop (and a barrier): thread 0 invalidates the ring's mbarriers, whose shared
    memory ops after the loop may use."""
    em.emit(f"if (tid == 0) for (int b = 0; b < {count}; ++b) mt_mbarrier_inval({barrier(bars, 'b')});")


def _store_helper(rank: int) -> str:
    params = ", ".join(f"int c{i}" for i in range(rank))
    ins = ", ".join(f'"r"(c{i})' for i in range(rank))
    return f"""\
// TMA: tile into the {rank}-d box at (c0, ...) (innermost first), waited for until complete
__device__ __forceinline__ void mt_tma_store_{rank}d(const unsigned char* tile, const mt_tmap* map, {params}) {{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group [%0, {{{_coordinates(rank, 2)}}}], [%1]; "
               "cp.async.bulk.commit_group; cp.async.bulk.wait_group 0;"
               :: "l"(reinterpret_cast<unsigned long long>(map)), "r"((unsigned)__cvta_generic_to_shared(tile)),
                  {ins} : "memory");
#endif
}}"""


def _use(em, name: str | None = None, text: str = ""):
    """Write the common helpers, and the helper ``name`` (``text``), into the kernel once."""
    em.helpers.setdefault("mt_tma", _COMMON.splitlines())     # (sorted first: the others use it)
    if name is not None and name not in em.helpers:
        em.helpers[name] = text.splitlines()


def param_declaration(em, name: str) -> str:
    """The kernel parameter of a tensor map."""
    _use(em)
    return f"const __grid_constant__ mt_tmap {name}"


def _vector(em, v: Value, size: int) -> int:
    """How many registers of ``v`` move to or from its row-major tile at once: runs along the last
    dimension, up to 16 bytes."""
    run = em.layout_of(v).contiguous_registers(v.type.rank - 1)
    return max(1, min(run, 16 // size, v.type.shape[-1]))


def _move(em, v: Value, b: "_Block", write: bool):
    """Registers of ``v`` to (``write``) or from its row-major tile."""
    em.move_registers(v, f"reinterpret_cast<{b.ct}*>(tile)", em.offset(v, "r"), b.ct, _vector(em, v, b.size), write)


class _Block:
    """A TMA copy's block: the descriptor's parts as C expressions (ir/ops.py: the operands after
    the tensor map and the value), its shape, element type and bytes."""

    def __init__(self, em, operands: list[Value], shape: tuple, elem):
        rank = len(shape)
        self.base = em.ref(operands[0])
        self.offsets = [em.ref(v) for v in operands[1:1 + rank]]
        self.dims = [em.ref(v) for v in operands[1 + rank:1 + 2 * rank]]
        self.strides = [em.ref(v) for v in operands[1 + 2 * rank:]] + ["1"]
        self.shape, self.rank, self.ct = shape, rank, elem.c_name
        self.size = max(1, elem.bits // 8)
        self.numel = math.prod(shape)
        self.nbytes = self.numel * self.size
        self.chunk = max(1, 16 // self.size)         # elements per 16 bytes

    def coordinates(self) -> str:
        """The copy's coordinates, innermost first (TMA's order)."""
        return ", ".join(reversed(self.offsets))

    def aligned(self) -> str:
        """C condition: the block's first element along the last dimension lies a multiple of 16
        bytes into its row (TMA refuses other boxes: an illegal instruction on the H200)."""
        return f"({self.offsets[-1]} & {self.chunk - 1}) == 0" if self.chunk > 1 else "true"

    def copy(self, em, to_tile: bool, padding: str = "0", element=None):
        """The threads copy the block between global memory and the tile, element by element
        (``i`` the tile's row-major index; ``element``: C++ for the tile's element ``i`` where the
        tile is not row-major): elements out of bounds read ``padding`` or are skipped."""
        em.emit(f"for (int i = tid; i < {self.numel}; i += {em.num_threads}) {{")
        inside, address = [], []
        for d in range(self.rank):
            shift = int(math.log2(math.prod(self.shape[d + 1:])))
            em.emit(f"  const int g{d} = {self.offsets[d]} + ((i >> {shift}) & {self.shape[d] - 1});")
            inside.append(f"(unsigned)g{d} < (unsigned){self.dims[d]}")
            address.append(f"(long long)g{d} * {self.strides[d]}" if self.strides[d] != "1" else f"g{d}")
        where, at = " && ".join(inside), " + ".join(address)
        tile = element("i") if element else f"reinterpret_cast<{self.ct}*>(tile)[i]"
        if to_tile:
            em.emit(f"  {tile} = {where} ? {self.base}[{at}] : {padding};")
        else:
            em.emit(f"  if ({where}) {self.base}[{at}] = {tile};")
        em.emit("}")


def _open(em, nbytes: int, align: int = 128) -> None:
    em.smem(nbytes + align + 8)              # (the tile aligned, then the mbarrier)
    em.emit("{")
    em.depth += 1
    em.emit(f"unsigned char* const tile = mt_align_up({em.scratch}, {align});")


def _close(em) -> None:
    em.depth -= 1
    em.emit("}")


def tma_load(em, op: Op):
    tmap, res = op.operands[0], op.result
    rank = res.type.rank     # (a copy issued ahead for a later iteration also has whether it runs: out of
    b = _Block(em, op.operands[1:3 * rank + 1], res.type.shape, res.type.scalar)   # bounds, TMA only fills)
    _use(em, f"mt_tma_load_{b.rank}d", _load_helper(b.rank))
    em.emit(em.declare(res) + ";")
    _open(em, b.nbytes)
    em.emit(f"const bool by_tma = {b.aligned()};")
    em.emit(f"unsigned long long* const bar = reinterpret_cast<unsigned long long*>(tile + {b.nbytes});")
    em.emit("if (by_tma) {")
    # (the threads' own accesses to this memory before -- an earlier tile, a dot's staging -- are
    # ordered before TMA's writes into it only through a proxy fence: the barrier alone orders the
    # generic proxy, and the copy could land under a late generic write)
    em.emit("  mt_fence_proxy_async();")
    em.emit("  if (tid == 0) mt_mbarrier_init(bar);")
    em.emit("  __syncthreads();")
    em.emit(f"  if (tid == 0) mt_tma_load_{b.rank}d(tile, &{em.ref(tmap)}, bar, {b.nbytes}u, {b.coordinates()});")
    em.emit("  mt_mbarrier_wait(bar);")
    em.emit("} else {")
    em.depth += 1
    from .codegen import c_literal
    padding = c_literal(float("nan"), res.type.scalar) if op.attrs["padding"] == "nan" else c_literal(0, res.type.scalar)
    b.copy(em, to_tile=True, padding=padding)
    em.emit("__syncthreads();")
    em.depth -= 1
    em.emit("}")
    _move(em, res, b, write=False)
    em.emit("__syncthreads();")
    em.emit("if (by_tma && tid == 0) mt_mbarrier_inval(bar);")
    _close(em)


def swizzled_stores(em) -> dict:
    """The tensor maps (their parameters) that only 2-d TMA stores of one block use, whose tiles may
    lie swizzled as wgmma's operands do (``staging.Staging.swizzled``: rows of 32 to 128 bytes, or
    128-byte columns of longer ones, in whole 1024-byte patterns) -> the box (rows, elements of a
    swizzled row) and the swizzle (bytes), where the values stored hold runs of less than 16 bytes
    along the rows. The threads then write such a tile free of bank conflicts (a row-major tile of
    256-byte rows put the 8 rows a warp's wgmma accumulators hold, 4 bytes each, in one bank), and
    TMA stores it a 128-byte column at a time; the host encodes the map in that box and swizzle
    (``CudaEmitter.tensor_maps``). Values of 16-byte runs write a row-major tile a warp's 512
    consecutive bytes at a time: there the swizzle only cost (a copy kernel's blocks, 0.97-0.99 of
    Triton against 1.04-1.05 row-major, same H200 run)."""
    uses: dict = {}
    for op in walk(em.fn.body):
        for v in op.operands:
            if v.type == TMAP:
                uses.setdefault(v, []).append(op)
    found = {}
    for tmap, ops in uses.items():
        if not all(op.name == "tma_store" and op.operands[0] is tmap for op in ops):
            continue
        types = {op.operands[1].type for op in ops}
        if len(types) != 1 or (t := types.pop()).rank != 2:
            continue
        size = max(1, t.scalar.bits // 8)
        st = Staging(em, ops[0].operands[1], 0, 1, False)
        if all(_vector(em, op.operands[1], size) * size < 16 for op in ops) and st.swizzled():
            found[tmap] = (st.rows, st.swizzle // size, st.swizzle)
    return found


def tma_store(em, op: Op):
    tmap, value = op.operands[:2]
    b = _Block(em, op.operands[2:], value.type.shape, value.type.scalar)
    _use(em, f"mt_tma_store_{b.rank}d", _store_helper(b.rank))
    swizzle = em.swizzled_stores.get(tmap, (0, 0, 0))[2]
    _open(em, b.nbytes, 1024 if swizzle else 128)
    # TMA writes whole 16-byte chunks of a row: where the last dimension ends inside one that the
    # block covers, it would write the elements after the end too (measured on the H200)
    exact = b.aligned()
    if b.chunk > 1:
        exact += (f" && (({b.dims[-1]} & {b.chunk - 1}) == 0 || {b.offsets[-1]} + {b.shape[-1]} <= {b.dims[-1]})")
    em.emit(f"const bool by_tma = {exact};")
    element = None
    if swizzle:
        st = Staging(em, value, 0, 1, False)
        st.swizzled()                        # (as swizzled_stores found it: the same shape and type)
        typed = f"reinterpret_cast<{b.ct}*>(tile)"
        st.store(em, value, typed, b.ct)
        shift = int(math.log2(b.shape[1]))

        def element(i):
            return f"*({st.at(typed, f'({i}) >> {shift}', f'({i}) & {b.shape[1] - 1}', b.ct)})"
    else:
        _move(em, value, b, write=True)
    em.emit("mt_fence_proxy_async();")
    em.emit("__syncthreads();")
    if swizzle:                              # (a box a 128-byte column of the tile)
        inner, atoms = swizzle // b.size, b.shape[1] * b.size // swizzle
        stores = " ".join(f"mt_tma_store_2d(tile + {a * b.shape[0] * swizzle}, &{em.ref(tmap)}, "
                          f"{b.offsets[1]}{f' + {a * inner}' if a else ''}, {b.offsets[0]});" for a in range(atoms))
        em.emit(f"if (by_tma) {{ if (tid == 0) {{ {stores} }} }}")
    else:
        em.emit(f"if (by_tma) {{ if (tid == 0) mt_tma_store_{b.rank}d(tile, &{em.ref(tmap)}, {b.coordinates()}); }}")
    em.emit("else {")
    em.depth += 1
    b.copy(em, to_tile=False, element=element)
    em.depth -= 1
    em.emit("}")
    em.emit("__syncthreads();")
    _close(em)

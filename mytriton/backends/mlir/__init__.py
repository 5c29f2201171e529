"""The MLIR backend: verified SSA → textual MLIR (``gpu``, ``arith``, ``math``, ``scf``, ``memref``,
``llvm``), checked by the real MLIR tools (``tools.py``) and lowerable to NVVM, LLVM IR and PTX.

    from mytriton.backends.mlir import emit_mlir
    text = emit_mlir(build_ssa(kernel, signature, constexprs))     # str; needs no MLIR install

Lowering design
---------------
*Module.* ``module attributes {gpu.container_module}`` holding ``gpu.module @k`` with one
``gpu.func @k(...) kernel``. Pointer parameters are opaque ``!llvm.ptr``s and scalars keep their
MLIR types, so the PTX entry takes exactly the CUDA backend's parameters (64-bit pointers, then
scalars, in signature order): the same argument packing launches either kernel.

*Execution model: the CUDA backend's.* A program instance is one workgroup of ``num_warps * 32``
threads (``known_block_size``, which lowers to ``.maxntid``); ``tl.program_id`` is ``gpu.block_id``.
Every tile value is spread over the threads by the layout that ``passes/layout.py`` assigns
(``ir/layout.py`` defines which thread holds which element); each thread holds a few elements,
which the emitter unrolls into scalar SSA values (``%v7_0``, ``%v7_1``, …). When a tile has one
element per thread (``BLOCK = 32 * num_warps``) this is exactly the seed's scalarized model — one
GPU thread per element, indexed by ``gpu.thread_id x``. The thread-dependent index arithmetic of the
layouts is emitted once at the top of the kernel. Scalars are computed by every thread alike.

*Ops.* Elementwise ops become ``arith``/``math`` ops on scalars of the op's compute type, with the
registry's semantics (``arith.py``). ``addptr`` is ``llvm.getelementptr``; loads and stores are
``llvm.load``/``llvm.store``, and a mask is an ``scf.if`` (masked-off elements never touch memory; a
masked load yields ``other``). ``tl.zeros``/``tl.full`` are constants or the converted fill value
(``arith.sitofp``/``fptosi``/…, part 11). Runtime ``for`` loops are ``scf.for`` over i32 whose
``iter_args`` carry every register of every loop-carried value, closed by ``scf.yield`` (beyond
the seed, which rejected them). Reductions (``tl.sum/max/min``, any axis, rank 1 or 2) combine in
registers, then across lanes with ``gpu.shuffle xor`` butterflies, then across warps through
workgroup memory (the ``gpu.func``'s workgroup buffer, typed with ``memref.view``, fenced with
``gpu.barrier``); layout conversions also go through that buffer.

*Rejected* with a ``CompilationError`` at the op's source line, never emitted wrong:
``tl.empty`` ("MLIR backend does not support tl.empty": an uninitialized value is not something to
invent in MLIR), casting a pointer, any op this backend has no lowering for (a future ``tl.dot``,
atomics, …), and tile exchanges needing more than 48 KiB of workgroup memory (no dynamic shared
memory here).

*Tools.* ``tools.py`` finds ``mlir-opt`` (``mlir-opt-19``, ``/usr/lib/llvm-19/bin``, ``PATH``) and
runs the checks: parse and verify; lower to the LLVM dialect with NVVM intrinsics
(``convert-scf-to-cf``, ``convert-gpu-to-nvvm``, ``reconcile-unrealized-casts``); translate that
to LLVM IR (``mlir-translate``); and serialize to PTX with MLIR's own NVPTX backend
(``nvvm-attach-target``, ``gpu-module-to-binary``), linking libdevice for the ``math`` functions.
The PTX loads with ``cuModuleLoadData`` and launches like the CUDA backend's kernel (same
parameters, ``num_warps * 32`` threads, no dynamic shared memory). Without the tools the backend still emits text, and
the tool functions raise ``MLIRToolsMissing`` saying what to install.
"""
from __future__ import annotations

import copy

from ...errors import CompilationError
from ...ir.ssa import Function, walk
from ...ir.types import BlockType
from ...ir.verifier import verify
from . import tools
from .emitter import MLIREmitter


def _needs_layouts(fn: Function) -> bool:
    return any(isinstance(v.type, BlockType) and v.layout is None
               for op in walk(fn.body) for v in op.results)


def emit_mlir(fn: Function) -> str:
    """Textual MLIR for one verified SSA function (``compiler.build_ssa``'s result, with or without
    layouts; without, a copy is laid out, so ``fn`` itself is left as it was). Raises
    ``CompilationError`` at the op's source line for anything this backend does not support."""
    if _needs_layouts(fn):
        from ...passes.layout import assign_layouts
        fn = copy.deepcopy(fn)
        assign_layouts(fn)
        verify(fn)
    try:
        return MLIREmitter(fn).generate()
    except CompilationError as e:
        raise e.with_traceback(None) from e.__cause__   # the user's line, no compiler frames


__all__ = ["emit_mlir", "tools"]

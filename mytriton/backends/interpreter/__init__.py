"""The CPU interpreter: ``kernel[grid](x_np, y_np, out_np, n, BLOCK=1024)`` on numpy arrays.

It runs the verified, optimized SSA — the same the CUDA backend consumes (``compiler.build_ssa``)
— with numpy, with the GPU's semantics (masks, fp32 arithmetic, i32 wrap-around, C-style ``//`` and
``%``, NaN-ignoring max/min), and checks every memory access against the bounds of the array it
addresses. Results land in the caller's arrays (views included). ``MYTRITON_INTERPRET=1`` sends
any launch here; torch CPU tensors are accepted as well as numpy arrays.

    signature inference → build_ssa (cached on the kernel) → Program → Executor per batch of
    programs (executor.py) → loads and stores through Memory (memory.py)
"""
from __future__ import annotations

import operator
import threading

import numpy as np

from ...errors import CompilationError
from ...frontend import descriptors, tuples
from ...ir.ssa import Loc, globals_changed, walk
from ...runtime.driver import DTYPES, dtype_named
from .executor import AssertFailed, Executor, Program
from .memory import ElementSize, Memory, OutOfBounds, ReadOnly

__all__ = ["interpret", "InterpreterError", "DeviceAssertionError", "infer_type"]


def _located(message: str, loc: Loc | None, kernel: str) -> str:
    """``file:line:col: message``, the source line with a caret, and the kernel's name."""
    lines = [f"{loc}: {message}" if loc else message]
    if loc is not None and loc.source_line:
        src = loc.source_line.rstrip("\n")
        lines += [f"    {src}", "    " + " " * max(0, loc.col - 1) + "^"]
    if kernel:
        lines.append(f"  in kernel '{kernel}'")
    return "\n".join(lines)


class InterpreterError(IndexError):
    """A kernel run in the interpreter touched memory it must not: an enabled lane of a load or
    store outside its array (or a store into a read-only array). The message names the kernel's
    ``file:line:col``, shows the line, and gives the program id, the offset and the array's size."""

    def __init__(self, message: str, loc: Loc | None = None, kernel: str = "",
                 program_id: tuple[int, int, int] | None = None, offset: int | None = None,
                 array: str | None = None, size: int | None = None):
        self.loc, self.kernel, self.program_id = loc, kernel, program_id
        self.offset, self.array, self.size = offset, array, size
        super().__init__(_located(message, loc, kernel))


class DeviceAssertionError(AssertionError):
    """A ``tl.device_assert`` of a kernel compiled with ``@jit(debug=True)`` failed in the
    interpreter: the assertion's ``file:line:col``, the program id, the element and the message."""

    def __init__(self, message: str, loc: Loc | None = None, kernel: str = "",
                 program_id: tuple[int, int, int] | None = None):
        self.loc, self.kernel, self.program_id = loc, kernel, program_id
        super().__init__(_located(message, loc, kernel))


# --- signature inference --------------------------------------------------------------------------

def _host_array(value) -> np.ndarray | None:
    """The numpy array behind a pointer argument (sharing its memory), or None for a scalar."""
    if isinstance(value, np.ndarray):
        return value
    if type(value).__module__.startswith("torch") and hasattr(value, "numpy"):
        if value.device.type != "cpu":
            raise TypeError(f"the interpreter runs on host memory; got a tensor on {value.device} "
                            f"(pass numpy arrays or CPU tensors)")
        return value.detach().numpy()
    if hasattr(value, "__cuda_array_interface__"):
        raise TypeError("the interpreter runs on host memory; got a device array (pass numpy arrays)")
    return None


def _dtype_name(dtype: np.dtype) -> str:
    """Our name of an array's dtype, from the dtype table (bfloat16 arrays are ml_dtypes')."""
    name = dtype_named(str(np.dtype(dtype)))
    if name is None:
        raise TypeError(f"arrays of {np.dtype(dtype)} cannot be passed to a kernel "
                        f"(supported: {', '.join(d.numpy for d in DTYPES.values())})")
    return name


def infer_type(value) -> str:
    """The Triton type string of a launch argument: ``*fp32`` for a float32 array (or CPU tensor);
    for scalars the GPU launcher's own rule (bool ``i1``, int ``i32``/``i64``/``u64`` by range,
    float ``fp32``, a numpy scalar its dtype), so both paths pick the same specialization."""
    array = _host_array(value)
    if array is not None:
        return "*" + _dtype_name(array.dtype)
    if not isinstance(value, (bool, int, float, np.generic)):
        raise TypeError(f"cannot pass {type(value).__name__} to a kernel (expected a numpy array, "
                        f"a bool, an int, a float or a numpy scalar)")
    from ...runtime.driver import infer_type as scalar_type  # imports no GPU library
    return scalar_type(value)


# --- launching ------------------------------------------------------------------------------------

_cache_lock = threading.Lock()


def _program(jit_fn, signature: dict, constexprs: dict, num_warps: int) -> Program:
    """The specialization's Program, built once per (signature, constexprs, num_warps)."""
    from ...compiler import build_ssa
    key = (tuple(signature.items()), tuple(sorted((k, repr(v)) for k, v in constexprs.items())), num_warps)
    with _cache_lock:
        cache = jit_fn.__dict__.setdefault("_interpreter_programs", {})
        program = cache.get(key)
        if program is None or globals_changed(program.fn.globals_read):   # a baked-in constant changed
            try:
                fn = build_ssa(jit_fn, signature, constexprs, num_warps)
                for op in walk(fn.body):
                    if op.name in ("inline_asm", "inline_asm_effects"):
                        raise CompilationError("tl.inline_asm_elementwise runs PTX, which the CPU interpreter cannot "
                                               "run: launch the kernel on a GPU", op.loc, jit_fn.__name__)
                program = Program(fn)
            except CompilationError as e:
                raise e.with_traceback(None) from e.__cause__
            cache[key] = program
    return program


def _grid(grid, kernel: str) -> tuple[int, int, int]:
    dims = grid if isinstance(grid, (tuple, list)) else (grid,)
    try:
        dims = tuple(operator.index(d) for d in dims)
    except TypeError:
        dims = ()
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise ValueError(f"{kernel}[grid]: the grid must be 1 to 3 positive ints, got {grid!r}")
    return dims + (1,) * (3 - len(dims))


def interpret(jit_fn, grid, runtime_args: list[tuple[str, object]], constexprs: dict, num_warps: int):
    """Run ``jit_fn`` over ``grid`` on the CPU; ``runtime_args`` are its run-time (name, value) pairs
    in order, ``constexprs`` the values of its constexpr parameters."""
    kernel = jit_fn.__name__
    grid = _grid(grid, kernel)
    signature, leaf_types = {}, {}
    for name, value in runtime_args:
        try:
            if descriptors.is_descriptor(value):       # (passed as its leaves: frontend/descriptors.py)
                desc = descriptors.type_of(value, infer_type(value.base))
                signature[name] = desc.text()
                leaf_types.update(desc.leaves(name))
            elif type(value) is tuple:                 # (and tuples: frontend/tuples.py)
                signature[name] = tuples.signature_of(value, _element_type)
                leaf_types.update(tuples.leaves(name, signature[name]))
            else:
                signature[name] = infer_type(value)
        except TypeError as e:
            raise TypeError(f"{kernel}: parameter '{name}': {e}") from None
    program = _program(jit_fn, signature, constexprs, num_warps)
    memory = Memory()
    params = {}
    pairs = [pair for n, v in runtime_args for pair in (tuples.leaf_values(n, v) if type(v) is tuple else [(n, v)])]
    values = dict(zip(*descriptors.flatten([n for n, _ in pairs], [v for _, v in pairs])))
    for p in program.fn.params:
        value = values[p.name]
        ty = (leaf_types.get(p.name) or signature[p.name]).split(":")[0]
        if ty.startswith("*"):
            params[p] = np.array([memory.add(p.name, _host_array(value), ty[1:])], np.int64)
        else:
            params[p] = np.array([value], _np_scalar_dtype(ty))

    total = grid[0] * grid[1] * grid[2]
    ex = Executor(program, memory, grid, params,
                  lambda op, fault, pid: _raise_fault(kernel, op, fault, pid, program.fn.loc))
    try:
        for first in range(0, total, program.batch_size):
            ex.run_batch(np.arange(first, min(total, first + program.batch_size), dtype=np.int64))
    except (InterpreterError, DeviceAssertionError) as e:
        raise e.with_traceback(None) from None          # the user's launch line, no interpreter frames


def _element_type(value):
    """The type of one element of a tuple argument: None stays the constant None."""
    if descriptors.is_descriptor(value):
        raise TypeError("a tensor descriptor inside a tuple is not supported; pass it as a parameter of its own")
    return None if value is None else infer_type(value)


def _np_scalar_dtype(type_name: str):
    from ...ir.ops import np_dtype
    from ...ir.types import SCALARS
    return np_dtype(SCALARS[type_name])


def _raise_fault(kernel: str, op, fault, pid: tuple[int, int, int], fn_loc):
    loc = op.loc or fn_loc
    if isinstance(fault, AssertFailed):
        where = f" at block index {fault.lane[1:]}" if len(fault.lane) > 1 else ""
        raise DeviceAssertionError(f"device-side assertion failed in program {pid}{where}: {fault.message}",
                                   loc, kernel, program_id=pid) from None
    if isinstance(fault, (ReadOnly, ElementSize)):
        raise InterpreterError(f"{fault} in program {pid}", loc, kernel, program_id=pid,
                               array=fault.buffer.name) from None
    assert isinstance(fault, OutOfBounds)
    where = f" at block index {fault.lane[1:]}" if len(fault.lane) > 1 else ""
    how = "the lane is enabled by the mask" if fault.masked else "the access has no mask"
    message = f"{fault.describe()} in program {pid}{where} ({how})"
    b = fault.buffer
    raise InterpreterError(message, loc, kernel, program_id=pid, offset=fault.offset,
                           array=b.name if b else None, size=b.size if b else None) from None

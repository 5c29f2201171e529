"""mytriton runtime: load prebuilt CUDA kernels (cubin / PTX) and launch them.

Self-contained on purpose: it imports only the standard library, ``cuda.bindings.driver``
(lazily, at the first launch or allocation) and, for ``DeviceArray`` only, numpy.  The AOT
build tool copies this file verbatim into every generated package as ``_runtime.py``, so
it must never import ``mytriton``.  Importing it never touches the GPU, and every argument
check runs before any launch (only the device of an ``__cuda_array_interface__`` object that
does not name it is asked of the driver).  A launch runs on the device of its pointer
arguments; ``int`` addresses mean the current context.  The public API is listed in ``__all__``.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import keyword
import math
import operator
import os
import re
import struct
import sys
import textwrap
import threading
import weakref

__all__ = [
    "ParamType", "parse_type", "pointer_info", "infer_type", "describe_argument", "launch_argument_info",
    "argument_device", "launch_device", "CudaError", "KernelLoadError", "ForkedProcessError", "SpecializationNotFoundError",
    "driver_available", "current_device", "compute_capability", "synchronize", "Stream", "DeviceArray", "Kernel",
    "KernelFamily", "use_native_launcher", "native_launcher_status",
]

# --------------------------------------------------------------------------- types

@dataclasses.dataclass(frozen=True)
class DType:
    """Everything mytriton knows about one element type, in one record: the compiler (its IR
    types, the CUDA and MLIR backends, the interpreter, the manifest grammar) and this runtime
    (argument packing, dtype checks of arrays and tensors) all read ``DTYPES``; no other table of
    dtype facts exists.  It lives here because the runtime is shipped alone (``_runtime.py``)."""

    name: str           # the manifest / Triton AOT spelling, and the key: i1 i8 ... u64 fp16 bf16 fp32 fp64
    kind: str           # "bool" | "int" | "uint" | "float"
    bits: int
    triton: str         # its name in the kernel language: tl.int1 ... tl.float16 tl.bfloat16
    ir: str             # the IR's spelling (ir/printer.py): bool i8 ... f16 bf16 f32 f64
    c: str              # the CUDA C++ type
    mlir: str           # the MLIR type (signless integers)
    numpy: str          # numpy's (and torch's, CuPy's) dtype name; bfloat16 is ml_dtypes'
    struct: str         # the struct code a scalar argument is packed with (bf16: its 16 bits)
    typestr: str        # __array_interface__ typestr kind and size ("f2"); "" when there is none
    aliases: tuple = ()  # other spellings people write for it (torch's "half", C's "double")

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)


DTYPES = {d.name: d for d in (
    DType("i1", "bool", 1, "int1", "bool", "bool", "i1", "bool", "B", "b1"),
    DType("i8", "int", 8, "int8", "i8", "signed char", "i8", "int8", "b", "i1"),
    DType("i16", "int", 16, "int16", "i16", "short", "i16", "int16", "h", "i2", ("short",)),
    DType("i32", "int", 32, "int32", "i32", "int", "i32", "int32", "i", "i4", ("int",)),
    DType("i64", "int", 64, "int64", "i64", "long long", "i64", "int64", "q", "i8", ("long",)),
    DType("u8", "uint", 8, "uint8", "u8", "unsigned char", "i8", "uint8", "B", "u1"),
    DType("u16", "uint", 16, "uint16", "u16", "unsigned short", "i16", "uint16", "H", "u2"),
    DType("u32", "uint", 32, "uint32", "u32", "unsigned int", "i32", "uint32", "I", "u4"),
    DType("u64", "uint", 64, "uint64", "u64", "unsigned long long", "i64", "uint64", "Q", "u8"),
    DType("fp16", "float", 16, "float16", "f16", "__half", "f16", "float16", "e", "f2", ("half",)),
    DType("bf16", "float", 16, "bfloat16", "bf16", "__nv_bfloat16", "bf16", "bfloat16", "H", ""),
    DType("fp32", "float", 32, "float32", "f32", "float", "f32", "float32", "f", "f4", ("float",)),
    DType("fp64", "float", 64, "float64", "f64", "double", "f64", "float64", "d", "f8", ("double",)),
    # fp8 (OCP e4m3 without infinities, e5m2): data for loads, stores, conversions and tl.dot; no
    # scalar arguments (no struct code) and no array-interface typestr; numpy's are ml_dtypes'
    DType("fp8e4nv", "float", 8, "float8e4nv", "f8E4M3FN", "mt_fp8e4nv", "f8E4M3FN", "float8_e4m3fn", "", ""),
    DType("fp8e5", "float", 8, "float8e5", "f8E5M2", "mt_fp8e5", "f8E5M2", "float8_e5m2", "", ""),
)}
# dtypes whose numpy type is ml_dtypes' (imported only where one is used)
ML_DTYPES = frozenset(d.numpy for d in DTYPES.values() if d.numpy in ("bfloat16", "float8_e4m3fn", "float8_e5m2"))


def dtype_named(text) -> "str | None":
    """The dtype key for any spelling of it (``fp32``, ``float32``, ``f32``, ``float``; the names
    numpy, torch and CuPy print), or None."""
    return _BY_NAME.get(text) if isinstance(text, str) else None


_BY_NAME = {alias: d.name for d in DTYPES.values() for alias in (d.name, d.numpy, d.triton, d.ir, *d.aliases)}
_INT_DTYPES = {d.name for d in DTYPES.values() if d.kind in ("int", "uint")}
# array-interface typestr (kind, itemsize), e.g. "<f4" -> ("f", 4) -> dtype
_TYPESTR_TO_DTYPE = {(d.typestr[0], int(d.typestr[1:])): d.name for d in DTYPES.values() if d.typestr}
_TYPE_RE = re.compile(r"^(\*?)([a-z0-9]+)(?::(\d+))?$")
# Largest ':N' promise: a page.  cudaMalloc guarantees 256-byte alignment and the compiler uses
# at most 16-byte vectors; divisibility promises on integers share the bound.
_MAX_ALIGN = 4096


@dataclasses.dataclass(frozen=True)
class ParamType:
    """A parsed parameter type.  ``align`` is the promised divisibility: address alignment
    in bytes for pointers (``*fp32:16``), divisor of the value for integer scalars
    (Triton's ``i32:16``); 1 when nothing is promised.  ``one``: an integer scalar promised to
    be 1 (Triton AOT's ``i32:1``): the kernel is compiled with the value in it (a unit stride
    makes an access contiguous), and a launch checks the argument and does not pass it."""

    is_pointer: bool
    dtype: str
    align: int = 1
    one: bool = False

    def __str__(self) -> str:
        suffix = ":1" if self.one else f":{self.align}" if self.align > 1 else ""
        return ("*" if self.is_pointer else "") + self.dtype + suffix


# A TMA tensor map (CUtensorMap: 128 bytes, 64-byte aligned) passed by value: a leaf of a tensor
# descriptor argument that the kernel reads through TMA (frontend/descriptors.py). Kernels take it;
# the type grammar of manifests and signatures (parse_type) does not.
TENSOR_MAP = ParamType(False, "tmap")
TENSOR_MAP_BYTES = 128


def _param_type(s: str) -> ParamType:
    """A kernel parameter's type: ``parse_type``'s grammar, and ``tmap`` (a descriptor's tensor map)."""
    return TENSOR_MAP if s == "tmap" else parse_type(s)


def parse_type(s: str) -> ParamType:
    """Parse a Triton AOT type string (``i32``, ``*fp16``, ``*fp32:16``, ``i32:16``, ``i32:1``);
    ValueError on junk."""
    m = _TYPE_RE.match(s.strip()) if isinstance(s, str) else None
    if not m or m.group(2) not in DTYPES:
        raise ValueError(f"unknown type {s!r}: expected one of {' '.join(DTYPES)}, optionally "
                         "prefixed with '*' (pointer) and suffixed with ':16' (alignment)")
    digits = m.group(3) or "1"
    short = len(digits.lstrip("0")) <= 6        # no int() of a thousand digits
    star, dtype, align = m.group(1) == "*", m.group(2), int(digits) if short else _MAX_ALIGN + 1
    if align > _MAX_ALIGN:
        # A promise no pointer can keep (:2**100) would build, then refuse every launch.
        raise ValueError(f"type {s!r}: alignment {digits[:12]}{'...' if len(digits) > 12 else ''} is more "
                         f"than a pointer can promise (at most {_MAX_ALIGN})")
    if align < 1 or align & (align - 1):
        raise ValueError(f"type {s!r}: alignment must be a power of two, got {align}")
    if align > 1 and not star and dtype not in _INT_DTYPES:
        raise ValueError(f"type {s!r}: ':{align}' applies only to pointers and integer scalars")
    if not star and not DTYPES[dtype].struct:
        raise ValueError(f"type {s!r}: {dtype} scalars cannot be kernel arguments (pass an fp32 scalar and "
                         f"convert it with .to() in the kernel, or a pointer '*{dtype}')")
    # (':1' on an integer: the value is 1, as Triton's AOT compiler reads it; on a pointer: no promise)
    one = align == 1 and m.group(3) is not None and not star and dtype in _INT_DTYPES
    return ParamType(star, dtype, align, one)


def constexpr_identity(value):
    """What tells one constexpr value from another: its kind and, for a number, its exact bits.
    A launch runs the specialization built for a value of the same identity and no other:
    ``0.0`` and ``-0.0`` differ (``1/x`` is +inf or -inf), so do ``1``, ``1.0`` and ``True``, and a
    NaN is the NaN of its own bits (equal to itself, unlike ``==``). numpy's integer and floating
    scalars (and ml_dtypes' ``int4``, ``bfloat16``...) are numbers of their value (``np.int64(64)``
    is ``64``; ``np.float32(0.1)`` is the double it converts to, not ``0.1``), ``np.str_`` the
    string it holds. None for a value that cannot be a constexpr's (unhashable, or of another
    kind): such a value was never built."""
    kind = type(value)
    if kind is bool:
        return ("bool", value)
    if kind is int:
        return ("int", value)
    if kind is float:
        return ("float", struct.pack("<d", value))
    if kind is str:
        return ("str", value)
    if kind is type(None):
        return ("none", None)
    module = getattr(kind, "__module__", "")
    if module == "numpy" or module.startswith("numpy.") or module == "ml_dtypes":
        np = sys.modules.get("numpy")
        if np is not None and isinstance(value, np.bool_):
            return ("bool", bool(value))
        if np is not None and isinstance(value, np.integer):
            return ("int", int(value))
        if module == "ml_dtypes" and kind.__name__.startswith(("int", "uint")):   # (int2, int4, uint4...)
            return ("int", int(value))
        if module == "ml_dtypes" or (np is not None and isinstance(value, np.floating)):
            return ("float", struct.pack("<d", float(value)))
        if np is not None and isinstance(value, np.str_):
            return ("str", str(value))
    return None


# --------------------------------------------------------------------------- errors

class CudaError(RuntimeError):
    """A CUDA driver call failed, or no driver is usable.  Attributes: ``call``, ``result``
    (the CUresult; None without a driver), ``name`` (``CUDA_ERROR_...``), ``message``."""

    def __init__(self, call: str, result=None, name: str = "", message: str = ""):
        self.call, self.result, self.name, self.message = call, result, name, message
        super().__init__(f"{call} failed: {name}: {message}" if name else f"{call} failed: {message}")


class KernelLoadError(RuntimeError):
    """A kernel image cannot be used: unreadable, sha256 mismatch, no image fits the
    device, or the device cannot provide the kernel's resources."""


class SpecializationNotFoundError(LookupError):
    """No built specialization matches the constexpr / num_warps values of a launch."""


class ForkedProcessError(RuntimeError):
    """This process was forked after CUDA was initialised in its parent: CUDA cannot be used in it
    (the driver's state does not survive a fork).  Start workers with the 'spawn' method instead."""


def _cuda_error(result, call: str) -> CudaError:
    name, message = getattr(result, "name", None) or f"CUresult {int(result)}", ""
    try:  # cuGetErrorName/String need a loaded driver; the enum name is the fallback
        err, s = _cuda.cuGetErrorName(result)
        name = s.decode() if not err and s else name
        err, s = _cuda.cuGetErrorString(result)
        message = s.decode() if not err and s else message
    except Exception:
        pass
    return CudaError(call, result, name, message)


def _check(ret, call: str):
    """Raise CudaError unless a driver call's result tuple starts with CUDA_SUCCESS;
    return its single output value (None when it has none)."""
    if ret[0]:
        raise _cuda_error(ret[0], call)
    return ret[1] if len(ret) == 2 else (ret[1:] or None)


# --------------------------------------------------------------------------- driver

_cuda = None                # cuda.bindings.driver once imported
_available = None           # cached driver_available() answer, and why not
_unavailable_reason = ""
_LOCK = threading.RLock()   # guards initialisation, primary-context retain and module loads
_primary = {}               # device ordinal -> retained primary CUcontext
_device_info = {}           # device ordinal -> (cc major, cc minor, max opt-in shared bytes)
_driver_version = None      # (major, minor) CUDA version the installed driver supports


def driver_available() -> bool:
    """True when cuda.bindings imports, ``cuInit(0)`` succeeds and a device exists.
    Cached; never called at import time."""
    global _available, _unavailable_reason, _cuda
    with _LOCK:
        if _available is None:
            try:
                try:
                    from cuda.bindings import driver
                except ImportError:  # cuda-python < 12.6 spelled it differently
                    from cuda import cuda as driver
                _cuda = driver
                _check(driver.cuInit(0), "cuInit")  # where no driver exists this *raises*
                if _check(driver.cuDeviceGetCount(), "cuDeviceGetCount") < 1:
                    raise CudaError("cuDeviceGetCount", message="no CUDA device")
                _available = True
            except ImportError as e:
                _unavailable_reason, _available = f"cuda-python is not installed (pip install cuda-bindings): {e}", False
            except Exception as e:
                _unavailable_reason, _available = f"{type(e).__name__}: {e}", False
    return _available


def _init():
    """Make sure the driver is usable, and bind the launch hot path's entry points."""
    global _get_ctx, _launch_kernel
    if _forked:
        _refuse_forked()
    if not (_available or driver_available()):
        raise CudaError("cuInit", message=f"no usable CUDA driver ({_unavailable_reason})")
    _get_ctx, _launch_kernel = _cuda.cuCtxGetCurrent, _cuda.cuLaunchKernel
    if _native_file is not None and _native is None and _native_status == "not loaded yet":
        _load_native()


def _bootstrap_get_ctx():
    _init()
    return _get_ctx()


# A forked child inherits the parent's CUDA state, which the driver does not support: a call can
# fail or hang.  Where the parent had initialised CUDA, the child's first launch (or any other
# driver call through this module) raises ForkedProcessError instead, at no cost to launches.
_forked = None              # the parent's pid, in a child forked after cuInit


def _refuse_forked(*_):
    raise ForkedProcessError(
        f"CUDA was initialised in process {_forked}, which then forked this process ({os.getpid()}); "
        "a forked child cannot use CUDA. Start worker processes with the 'spawn' method "
        "(multiprocessing.set_start_method('spawn') or get_context('spawn')), or fork before "
        "the parent's first launch")


def _after_fork_in_child(parent: int) -> None:
    global _forked, _get_ctx, _launch_kernel, _native, _native_status, _LOCK
    _LOCK = threading.RLock()    # another thread of the parent may have held it
    if _available:
        _forked, _native = parent, None
        _native_status = f"not used (this process was forked from {parent} after CUDA was initialised)"
        _get_ctx = _launch_kernel = _refuse_forked


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: _after_fork_in_child(os.getppid()))


_get_ctx = _bootstrap_get_ctx   # rebound to cuCtxGetCurrent / cuLaunchKernel by _init()
_launch_kernel = None
# A launch does not query the current context (that costs as much as the rest of the launch
# path): a function runs only in the context that loaded it, and the driver refuses it in
# another with one of these, after which the launcher looks the context up and launches again
# (Kernel._launch_slow); other errors are not retried.  The driver likewise refuses a stream of
# another context.
_CONTEXT_ERRORS = frozenset((400, 201))   # CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_INVALID_CONTEXT
_PAD = {1: (1, 1), 2: (1,), 3: ()}         # a 1-3 dimensional grid tuple padded to three


def _launch_cooperative(fn, gx, gy, gz, bx, by, bz, shared, stream, params, _extra):
    """cuLaunchCooperativeKernel with cuLaunchKernel's arguments (Triton's
    ``launch_cooperative_grid=True``: every block of the grid resident at once)."""
    if _forked:
        _refuse_forked()
    return _cuda.cuLaunchCooperativeKernel(fn, gx, gy, gz, bx, by, bz, shared, stream, params)


def _current_context():
    """``(context, device ordinal)`` of the calling thread.  Uses the current context
    if there is one (PyTorch / CuPy make the device's primary context current), else
    retains device 0's primary context and makes it current, as the CUDA runtime does."""
    _init()
    ctx = _check(_cuda.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if int(ctx) == 0:
        ctx = _primary_context(0)
        _check(_cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        return ctx, 0
    return ctx, int(_check(_cuda.cuCtxGetDevice(), "cuCtxGetDevice"))


def _primary_context(device: int):
    """Device ``device``'s primary context (the one PyTorch and CuPy use), retained once."""
    try:
        return _primary[device]
    except KeyError:
        pass
    _init()
    with _LOCK:
        if device not in _primary:
            count = _check(_cuda.cuDeviceGetCount(), "cuDeviceGetCount")
            if not 0 <= device < count:
                raise ValueError(f"no CUDA device {device} (this machine has {count})")
            dev = _check(_cuda.cuDeviceGet(device), f"cuDeviceGet({device})")
            _primary[device] = _check(_cuda.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        return _primary[device]


class _OnDevice:
    """``with _OnDevice(device):`` runs the block in the device's primary context, pushed only
    when the current context is on another device (or none is current); None: the current context."""

    def __init__(self, device):
        self.device, self.pushed = device, False

    def __enter__(self):
        """``(context, device ordinal)`` the block runs in."""
        if self.device is None:
            return _current_context()
        ctx = _check(_get_ctx(), "cuCtxGetCurrent")
        if int(ctx) == 0 or int(_check(_cuda.cuCtxGetDevice(), "cuCtxGetDevice")) != self.device:
            ctx = _primary_context(self.device)
            _check(_cuda.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
            self.pushed = True
        return ctx, self.device

    def __exit__(self, *exc):
        if self.pushed:
            _check(_cuda.cuCtxPopCurrent(), "cuCtxPopCurrent")


def _device(ordinal: int):
    """``(cc major, cc minor, max opt-in dynamic shared memory per block)``, cached."""
    if ordinal not in _device_info:
        attr = _cuda.CUdevice_attribute
        dev = _check(_cuda.cuDeviceGet(ordinal), f"cuDeviceGet({ordinal})")
        _device_info[ordinal] = tuple(
            _check(_cuda.cuDeviceGetAttribute(a, dev), f"cuDeviceGetAttribute({a.name})")
            for a in (attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                      attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                      attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN))
    return _device_info[ordinal]


def _cuda_driver_version():
    global _driver_version
    if _driver_version is None:
        v = _check(_cuda.cuDriverGetVersion(), "cuDriverGetVersion")  # 12040 means 12.4
        _driver_version = (v // 1000, v % 1000 // 10)
    return _driver_version


def current_device() -> int:
    """Ordinal of the calling thread's device (making device 0 current if none is): the device
    of launches whose pointer arguments are all ``int`` addresses."""
    return _current_context()[1]


def compute_capability(device: int | None = None) -> tuple[int, int]:
    """``(major, minor)`` compute capability of ``device`` (default: the current one)."""
    if device is None:
        device = current_device()
    _init()
    return _device(device)[:2]


class GPUTarget(tuple):
    """What Triton's ``driver.active.get_current_target()`` returns: (backend, arch, warp_size)."""

    def __new__(cls, backend: str, arch: int, warp_size: int):
        return super().__new__(cls, (backend, arch, warp_size))

    backend = property(lambda self: self[0])
    arch = property(lambda self: self[1])
    warp_size = property(lambda self: self[2])


class _ActiveDriver:
    """``triton.runtime.driver.active`` as far as kernel modules use it (Triton's tutorials ask it
    for the target, the PyTorch device and the device's properties): the CUDA driver of this
    runtime. Without a usable driver each call raises :class:`CudaError`, as Triton's would."""

    def get_current_target(self) -> GPUTarget:
        major, minor = compute_capability()
        return GPUTarget("cuda", 10 * major + minor, 32)

    def get_current_device(self) -> int:
        _init()
        return current_device()

    def get_active_torch_device(self):
        import torch
        return torch.device("cuda", self.get_current_device())

    @property
    def utils(self):
        return self

    def get_device_properties(self, device: int) -> dict:
        """The keys Triton's ``driver.active.utils.get_device_properties`` has."""
        _init()
        dev = _check(_cuda.cuDeviceGet(device), f"cuDeviceGet({device})")
        attr = _cuda.CUdevice_attribute

        def get(name):
            return int(_check(_cuda.cuDeviceGetAttribute(getattr(attr, name), dev), f"cuDeviceGetAttribute({name})"))
        return {"max_shared_mem": get("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
                "max_num_regs": get("CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK"),
                "multiprocessor_count": get("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
                "warpSize": get("CU_DEVICE_ATTRIBUTE_WARP_SIZE"),
                "sm_clock_rate": get("CU_DEVICE_ATTRIBUTE_CLOCK_RATE"),
                "mem_clock_rate": get("CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE"),
                "mem_bus_width": get("CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH")}


active = _ActiveDriver()


def device_name(device: int | None = None) -> str:
    """The name of ``device`` (default: the current one), e.g. "NVIDIA H200"."""
    if device is None:
        device = current_device()
    _init()
    dev = _check(_cuda.cuDeviceGet(device), f"cuDeviceGet({device})")
    return _check(_cuda.cuDeviceGetName(256, dev), "cuDeviceGetName").split(b"\0")[0].decode(errors="replace")


def synchronize(device: int | None = None) -> None:
    """Wait for all work in the current context, or in ``device``'s primary context
    (``cuCtxSynchronize``)."""
    with _OnDevice(device):
        _check(_cuda.cuCtxSynchronize(), "cuCtxSynchronize")


class Stream:
    """A CUDA stream owned by the runtime, for apps without PyTorch or CuPy, created in the
    current context or in ``device``'s primary context (``.device`` says which device). Pass it
    as ``stream=`` to launches on that device; launching on it after :meth:`close` raises
    ``ValueError``. (A raw handle that was destroyed elsewhere cannot be detected: the driver
    itself treats that as use-after-free.)"""

    def __init__(self, non_blocking: bool = True, device: int | None = None):
        with _OnDevice(device) as (_, self.device):
            self._handle = _check(_cuda.cuStreamCreate(1 if non_blocking else 0), "cuStreamCreate")

    @property
    def handle(self) -> int:
        if self._handle is None:
            raise ValueError("this Stream is closed")
        return int(self._handle)

    def __cuda_stream__(self):
        return (0, self.handle)

    def synchronize(self) -> None:
        handle = self.handle
        _init()
        _check(_cuda.cuStreamSynchronize(handle), "cuStreamSynchronize")

    def close(self) -> None:
        """Wait for the stream's work, then destroy it (idempotent)."""
        handle, self._handle = getattr(self, "_handle", None), None
        if handle is not None and _cuda is not None and not _forked:
            _cuda.cuStreamSynchronize(handle)
            _cuda.cuStreamDestroy(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:   # noqa: BLE001 - never raise from a finalizer (e.g. at shutdown)
            pass


# --------------------------------------------------------------------------- arguments

class IntegerOutOfRange(TypeError, OverflowError):
    """An integer argument that no parameter type holds (an OverflowError, as Triton raises)."""


class HostMemoryArgument(TypeError, ValueError):
    """A host tensor passed where the GPU needs device memory (a ValueError, as Triton raises)."""


def _typestr_dtype(typestr):
    """``"<f4"`` -> ``"fp32"``; None for typestrs we have no dtype for (e.g. big-endian)."""
    if isinstance(typestr, str) and len(typestr) >= 3 and typestr[0] in "<|=" and typestr[2:].isdigit():
        return _TYPESTR_TO_DTYPE.get((typestr[1], int(typestr[2:])))
    return None


_dtype_cache = {}   # dtype object -> (dtype or None, description); torch dtypes are singletons
# torch.Tensor and its dtype objects -> our dtypes, learnt from the first tensor _pointer_info
# sees (torch is never imported here): the launchers' inline path for tensors.
class _TensorDtypes(dict):
    def __missing__(self, key):
        return None


_tensor_type = None
_tensor_dtypes = _TensorDtypes()
_TENSOR_INFO = [None, _tensor_dtypes, None, ()]     # (see _learn_tensor_type)

# PyTorch's stable C accessors of a tensor (the AOTInductor C shim libtorch exports since 2.2):
# ``int32 f(at::Tensor *tensor, T *out)``, 0 on success.
_ACCESSORS = ("aoti_torch_get_data_ptr", "aoti_torch_get_dtype", "aoti_torch_get_device_type",
              "aoti_torch_get_device_index")
_ADDRESS_ACCESSOR = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
_CODE_ACCESSOR = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32))


def _torch_library():
    """The libtorch_cpu the process has loaded (ctypes), or None: not Linux, torch not imported,
    or not loaded from torch's own folder."""
    torch = sys.modules.get("torch")
    if torch is None or not sys.platform.startswith("linux") or not getattr(torch, "__file__", None):
        return None
    try:
        return ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"),
                           mode=os.RTLD_NOLOAD)
    except (OSError, AttributeError):
        return None


def _tensor_accessors(sample):
    """How the native launch path reads tensors of ``type(sample)`` without calling into Python:
    ``(offset, data_ptr, dtype, device_type, device_index, cuda)`` -- where the object holds its
    TensorImpl pointer (the one place in the object equal to ``sample._cdata``), the addresses of
    PyTorch's C accessors of a tensor (``_ACCESSORS``), and CUDA's device type code; or None (it
    then calls the tensor's methods): no such library or accessor, or they do not answer on
    ``sample`` what its methods answer."""
    try:
        lib = _torch_library()
        if lib is None:
            return None
        addresses = [ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in _ACCESSORS]
        cuda = ctypes.CFUNCTYPE(ctypes.c_int32)(
            ctypes.cast(lib.aoti_torch_device_type_cuda, ctypes.c_void_p).value)()
        impl, base = sample._cdata, id(sample)
        offsets = [at for at in range(0, type(sample).__basicsize__ - 7, 8)
                   if ctypes.c_uint64.from_address(base + at).value == impl]
        if type(impl) is not int or not impl or len(offsets) != 1:
            return None
        tensor = ctypes.byref(ctypes.c_uint64(impl))    # an at::Tensor: one TensorImpl pointer
        data_ptr, dtype, device_type, device_index = (
            (_ADDRESS_ACCESSOR if i == 0 else _CODE_ACCESSOR)(a) for i, a in enumerate(addresses))
        address, code = ctypes.c_void_p(), ctypes.c_int32()
        if data_ptr(tensor, address) or (address.value or 0) != sample.data_ptr():
            return None
        if device_type(tensor, code) or (code.value == cuda) != bool(sample.is_cuda):
            return None
        if sample.is_cuda and (device_index(tensor, code) or code.value != sample.get_device()):
            return None
        if dtype(tensor, code) or not 0 <= code.value < 64:
            return None
        return (offsets[0], *addresses, cuda)
    except Exception:      # noqa: BLE001 - anything unexpected: the methods, as before
        return None


# torch.Tensor's subclasses that read as it does (their own C layout and methods are torch.Tensor's):
# the native path reads them through the accessors too (``_learn_tensor_type``)
_TENSOR_ALIKE = {("torch.nn.parameter", "Parameter"), ("torch.nn.parameter", "Buffer")}


def _learn_tensor_type(obj, dt, dtype: str) -> None:
    """Remember torch.Tensor and ``dt`` -> ``dtype`` from a tensor ``obj`` (or a Parameter or
    Buffer, ``_TENSOR_ALIKE``), for the launchers' inline path and the native one (``_TENSOR_INFO``:
    the type, the dtypes, its accessors, the subclasses read the same way -- each checked on its
    first instance: the accessors must find its TensorImpl where they find a tensor's)."""
    global _tensor_type
    t = type(obj)
    base = t if (t.__module__, t.__name__) == ("torch", "Tensor") else None
    if base is None:
        if (t.__module__, t.__name__) not in _TENSOR_ALIKE:
            return
        base = next((c for c in t.__mro__ if (c.__module__, c.__name__) == ("torch", "Tensor")), None)
        if base is None:
            return
    accessors = _TENSOR_INFO[2] if _tensor_type is base else _tensor_accessors(obj)
    alike = _TENSOR_INFO[3] if _tensor_type is base else ()
    if t is not base and t not in alike and accessors is not None and _tensor_accessors(obj) == accessors:
        alike += (t,)
    _tensor_type, _tensor_dtypes[dt] = base, dtype
    _TENSOR_INFO[:] = [_tensor_type, _tensor_dtypes, accessors, alike]     # what the native launcher reads


def _dtype_info(dt):
    """``(our dtype or None, printable name)`` of a numpy/torch dtype object or string."""
    try:
        return _dtype_cache[dt]
    except (KeyError, TypeError):
        name = str(dt).replace("torch.", "")
        info = (_typestr_dtype(getattr(dt, "str", None)) or dtype_named(name), name)
        try:
            _dtype_cache[dt] = info
        except TypeError:  # unhashable dtype object
            pass
        return info


def _pointer_info(obj):
    """``(address, dtype or None, name of the carried dtype or None, device)``; TypeError for
    objects that are not device pointers.  ``device`` is the ordinal of the device the memory
    is on; -1 for "the current context's" (int addresses, and objects that do not say); None
    for an ``__cuda_array_interface__`` object that does not say, which _address_device asks
    the driver about (after the caller's dtype check)."""
    if type(obj) is int:
        return obj, None, None, -1
    if isinstance(obj, DeviceArray):
        ptr, dtype, device = obj._launch
        return ptr, dtype, obj._dtype_desc, device
    data_ptr = getattr(obj, "data_ptr", None)
    if callable(data_ptr):
        # torch: data_ptr() rather than __cuda_array_interface__, which torch refuses for
        # bf16 and for tensors that require grad; get_device() is -1 on the host
        get_device = getattr(obj, "get_device", None)
        device = get_device() if callable(get_device) else -1
        if getattr(obj, "is_cuda", True) is False or (callable(get_device) and device < 0):
            is_pinned = getattr(obj, "is_pinned", None)     # (pinned host memory the GPU reaches: launchable)
            if not (callable(is_pinned) and is_pinned()):
                raise HostMemoryArgument(f"got a tensor on {getattr(obj, 'device', 'the host')}; it must be on a CUDA device")
        dt = getattr(obj, "dtype", None)
        dtype, desc = (None, None) if dt is None else _dtype_info(dt)
        if dtype is not None:
            _learn_tensor_type(obj, dt, dtype)
        return int(data_ptr()), dtype, desc, device
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        dtype, address = _typestr_dtype(cai.get("typestr")), int(cai["data"][0])
        desc = DTYPES[dtype].numpy if dtype else str(cai.get("typestr"))
        device = getattr(getattr(obj, "device", None), "id", None)     # CuPy: .device.id
        return address, dtype, desc, device if type(device) is int else None
    if hasattr(obj, "__array_interface__") and getattr(obj, "ndim", 1) != 0:
        raise TypeError(f"got a host (CPU) array ({type(obj).__name__}); pass device memory "
                        "(DeviceArray.from_numpy, a CUDA tensor, a CuPy array) or an int address")
    if hasattr(obj, "__index__") and not isinstance(obj, bool):   # e.g. a numpy integer address
        return obj.__index__(), None, None, -1
    raise TypeError(f"expected a device pointer (int address, DeviceArray, object with "
                    f"__cuda_array_interface__ or data_ptr()), got {type(obj).__name__}")


_address_devices = {}    # id(object) -> (weak reference to it, address, device): see _address_device


def _address_device(obj, address: int, device=None) -> int:
    """The device of an ``__cuda_array_interface__`` object that does not say (Numba, ...): asked
    of the driver once per object while it lives (the device of the context the memory belongs
    to, ``cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_CONTEXT)``); -1 where the driver cannot tell
    (or there is none) -- then the launch goes to the current context.  ``device``, when not
    None, is what _pointer_info found and is returned as it is.  (Not DEVICE_ORDINAL: for memory
    on device 1 of an H200 pair, cuda-bindings' wrapper of it answered 0 where the driver answers 1.)"""
    if device is not None:
        return device
    known = _address_devices.get(id(obj))
    if known is not None and known[0]() is obj and known[1] == address:
        return known[2]
    device = -1
    if address and not _forked and (_available or driver_available()):
        err, ctx = _cuda.cuPointerGetAttribute(_cuda.CUpointer_attribute.CU_POINTER_ATTRIBUTE_CONTEXT, address)
        if not err and ctx is not None and int(ctx) and not _cuda.cuCtxPushCurrent(ctx)[0]:
            try:
                err, ordinal = _cuda.cuCtxGetDevice()
                device = -1 if err else int(ordinal)
            finally:
                _cuda.cuCtxPopCurrent()
    try:
        ref = weakref.ref(obj, lambda _, key=id(obj): _address_devices.pop(key, None))
    except TypeError:                     # not weakly referenceable: asked at every launch
        return device
    _address_devices[id(obj)] = (ref, address, device)
    return device


def pointer_info(obj) -> tuple[int, str | None]:
    """``(device address, dtype or None)`` of a pointer argument: an ``int`` address,
    a ``DeviceArray``, an object with ``data_ptr()`` (PyTorch; dtype from ``.dtype``) or
    with ``__cuda_array_interface__`` (CuPy, Numba; dtype from ``typestr``).  The dtype
    is None for int addresses and unknown dtypes."""
    addr, dtype, _, _ = _pointer_info(obj)
    return addr, dtype


def infer_type(obj) -> str:
    """The signature type of a launch argument, by Triton's rules: pointers ``*<dtype>``,
    bool ``i1``, int ``i32``/``i64``/``u64`` by range, float ``fp32``, numpy scalars
    their own dtype.  TypeError for anything else."""
    return describe_argument(obj)[0]


def describe_argument(obj) -> tuple[str, int | None]:
    """``(infer_type(obj), device address or None)`` in one look at the object."""
    return _describe(obj)[:2]


def launch_argument_info(obj) -> tuple[str, int | None, int]:
    """``(infer_type(obj), device address or None, argument_device(obj))`` in one look at the
    object: the JIT's per-launch signature inference."""
    ty, addr, device = _describe(obj)
    return ty, addr, -1 if addr is None else _address_device(obj, addr, device)


def _describe(obj):
    """``(type, address or None, device as _pointer_info says it)``."""
    if isinstance(obj, bool):
        return "i1", None, -1
    if type(obj).__module__ in ("numpy", "ml_dtypes") and getattr(obj, "ndim", None) == 0:
        dtype, desc = _dtype_info(obj.dtype)   # before float: np.float64 is a float (ml_dtypes: bfloat16)
        if dtype is None:
            raise TypeError(f"unsupported numpy scalar type {desc}")
        return dtype, None, -1
    if isinstance(obj, int):
        for dtype, lo, hi in (("i32", -2**31, 2**31), ("i64", -2**63, 2**63), ("u64", 0, 2**64)):
            if lo <= obj < hi:
                return dtype, None, -1
        raise IntegerOutOfRange(f"integer argument {obj} does not fit in 64 bits")
    if isinstance(obj, float):
        return "fp32", None, -1
    addr, dtype, desc, device = _pointer_info(obj)
    if dtype is None:
        raise TypeError(f"cannot infer the element type of {type(obj).__name__} (dtype {desc}); "
                        f"supported: {' '.join(DTYPES)}")
    return "*" + dtype, addr, device


def argument_device(obj) -> int:
    """The device ordinal a pointer argument's memory is on, or -1 for ``int`` addresses and
    objects that do not tell (they mean the current context).  PyTorch tensors say it with
    ``get_device()``, CuPy arrays with ``.device.id``, ``DeviceArray``s recorded it when they
    were allocated; other ``__cuda_array_interface__`` objects are asked of the driver
    (``cuPointerGetAttribute``, once per object).  Scalars: -1."""
    try:
        addr, _, _, device = _pointer_info(obj)
    except TypeError:
        return -1
    return _address_device(obj, addr, device)


def _bf16_bits(x: float) -> int:
    """The 16 bits of ``x`` rounded to bfloat16 (round to nearest even)."""
    if x != x:
        return 0x7FC0
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def _make_converter(name: str, t: ParamType):
    """A function turning one argument into what struct packs for it, or None where
    struct's own type/range checks suffice (int and float scalars).  For pointers it
    only sees non-int arguments and returns ``(address, device or -1)``; the launcher
    checks alignment inline."""
    if t.is_pointer:
        def convert_pointer(v):
            try:
                addr, dtype, desc, device = _pointer_info(v)
            except TypeError as e:           # (its own class: a host tensor is a ValueError too)
                raise type(e)(f"parameter '{name}' ({t}): {e}") from None
            if dtype != t.dtype and desc is not None:
                raise TypeError(f"parameter '{name}' expects *{t.dtype}, got a {desc} array")
            return addr, _address_device(v, addr, device)
        return convert_pointer
    if t == TENSOR_MAP:
        def convert_tensor_map(v):
            if type(v) is not bytes or len(v) != TENSOR_MAP_BYTES:
                raise TypeError(f"parameter '{name}' expects a tensor map ({TENSOR_MAP_BYTES} bytes, made from a "
                                f"TensorDescriptor), got {type(v).__name__}")
            return v
        return convert_tensor_map
    if t.dtype == "i1":
        def convert_bool(v):
            if v is True or v is False or (not isinstance(v, float) and v in (0, 1)):
                return 1 if v else 0
            raise TypeError(f"parameter '{name}' expects i1 (a bool), got {type(v).__name__} {v!r}")
        return convert_bool
    if t.dtype == "bf16":
        def convert_bf16(v):
            if isinstance(v, (str, bytes)) or not hasattr(v, "__float__"):
                raise TypeError(f"parameter '{name}' expects bf16, got {type(v).__name__} {v!r}")
            if math.isfinite(x := float(v)) and abs(x) >= 3.3961e38:   # would round to inf
                raise OverflowError(f"parameter '{name}' ({t}): {x!r} is out of range for bf16")
            return _bf16_bits(x)
        return convert_bf16
    if t.align > 1:
        def convert_divisible(v):
            if hasattr(v, "__index__") and not isinstance(v, bool) and v.__index__() % t.align:
                raise ValueError(f"parameter '{name}' is declared {t} but {v} is not divisible by {t.align}")
            return v
        return convert_divisible
    return None


def _passed(params) -> list:
    """The parameters a launch passes to the kernel: all but those built as ``i32:1``."""
    return [p for p in params if not p[1].one]


def _misaligned(params, values) -> ValueError:
    """The error for the first pointer among ``values`` (the packed arguments) that breaks its
    alignment promise."""
    for (name, t), addr in zip(_passed(params), values):
        if t.is_pointer and addr % t.align:
            return ValueError(f"parameter '{name}' is declared {t} but address {addr:#x} is not "
                              f"{t.align}-byte aligned")
    raise AssertionError("no misaligned pointer")  # pragma: no cover


def _not_one(params, i: int, value) -> None:
    """Check an argument of a parameter built as ``i32:1`` (its value compiled into the kernel)."""
    name, t = params[i]
    try:
        if not isinstance(value, bool) and operator.index(value) == 1:
            return
    except TypeError:
        pass
    raise ValueError(f"parameter '{name}' was built as {t} (the value 1 is compiled into the kernel); "
                     f"got {value!r}: build a specialization without ':1' for other values")


def _explain_pack_error(params, args) -> Exception:
    """Find the argument struct refused and say why, naming its parameter (``args``: the packed
    arguments)."""
    for (name, t), v in zip(_passed(params), args):
        try:
            struct.pack("<" + _struct_code(t), v)
        except (struct.error, OverflowError, TypeError):
            if t.is_pointer:
                return ValueError(f"parameter '{name}' ({t}): {v!r} is not a 64-bit address")
            if isinstance(v, (int, float)) and not isinstance(v, bool) and (
                    DTYPES[t.dtype].kind == "float" or (t.dtype in _INT_DTYPES and isinstance(v, int))):
                return OverflowError(f"parameter '{name}' ({t}): {v!r} is out of range for {t.dtype}")
            return TypeError(f"parameter '{name}' expects {t}, got {type(v).__name__} {v!r}")
    return TypeError("invalid kernel arguments")


_MAX_GRID = (2**31 - 1, 65535, 65535)


def _grid3(grid):
    """A grid (int or 1-3 positive ints) as three ints; ValueError/TypeError naming it."""
    if type(grid) is tuple and len(grid) == 1 and type(grid[0]) is int and 0 < grid[0] <= _MAX_GRID[0]:
        return grid[0], 1, 1
    if isinstance(grid, (tuple, list)):
        if not 1 <= len(grid) <= 3:
            raise ValueError(f"grid must have 1 to 3 dimensions, got {grid!r}")
        dims = grid
    elif hasattr(grid, "__index__") and not isinstance(grid, bool):
        dims = [grid]
    else:
        raise TypeError(f"grid must be an int or a tuple of 1 to 3 ints, got {type(grid).__name__} {grid!r}")
    out = []
    for i, g in enumerate(dims):
        if isinstance(g, bool) or not hasattr(g, "__index__"):   # numpy ints are fine
            raise TypeError(f"grid dimension {i} must be an int, got {type(g).__name__} {g!r} (grid {grid!r})")
        if not 0 < (g := g.__index__()) <= _MAX_GRID[i]:
            raise ValueError(f"grid dimension {i} must be in 1..{_MAX_GRID[i]}, got {g} (grid {grid!r})")
        out.append(g)
    return tuple(out + [1] * (3 - len(out)))


def _stream_handle(stream):
    """The raw CUstream handle (int) of a stream-like object."""
    if type(stream) is int:
        return stream
    if hasattr(stream, "__cuda_stream__"):    # CUDA stream protocol: (version, handle)
        return int(stream.__cuda_stream__()[1])
    for attr in ("cuda_stream", "ptr"):       # torch.cuda.Stream, cupy.cuda.Stream
        if isinstance(h := getattr(stream, attr, None), int):
            return h
    if isinstance(stream, bool) or not hasattr(stream, "__int__"):   # CUstream has __int__
        raise TypeError(f"stream must be None, an int handle, a CUstream or an object with "
                        f".cuda_stream / .ptr / __cuda_stream__(), got {type(stream).__name__}")
    return int(stream)


def _stream_device(stream):
    """The device of a raw stream handle, or None for the default streams (those of whichever
    context launches) and where the driver cannot say.  Asked only of refused launches."""
    if stream is None or int(stream) in (0, 1, 2):    # NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
        return None
    err, ctx = _cuda.cuStreamGetCtx(stream)
    if err or not int(ctx):
        return None
    if _cuda.cuCtxPushCurrent(ctx)[0]:
        return None
    try:
        err, device = _cuda.cuCtxGetDevice()
    finally:
        _cuda.cuCtxPopCurrent()
    return None if err else int(device)


def launch_device(kernel: str, devices: dict) -> int:
    """The device a launch runs on, from ``{pointer parameter: argument_device(its argument)}``:
    the one device named, or -1 (the current context) when none is; ValueError naming the
    parameters and devices when they are on two or more."""
    found = sorted({d for d in devices.values() if d >= 0})
    if len(found) > 1:
        where = "; ".join(f"{_quote([n for n, d in devices.items() if d == dev])} on cuda:{dev}" for dev in found)
        raise ValueError(f"{kernel}: the pointer arguments are on different devices ({where}); a launch "
                         "runs on one device: move them to the same one")
    return found[0] if found else -1


def _quote(names) -> str:
    """``'x'``, ``'x' and 'y'``, ``'x', 'y' and 'z'``: parameter names for a message."""
    names = [f"'{n}'" for n in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# --------------------------------------------------------------------------- images

def _arch_of(key: str):
    """``"sm_90"`` -> ``(9, 0, "")``, ``"sm_100a"`` -> ``(10, 0, "a")``; None otherwise."""
    m = re.match(r"^sm_(\d\d+)([af]?)$", key)
    return (int(m.group(1)[:-1]), int(m.group(1)[-1]), m.group(2)) if m else None


def _ptx_info(ptx: bytes):
    """``(ISA version (major, minor) or None, target arch (as _arch_of) or None)``."""
    v = re.search(rb"^\s*\.version\s+(\d+)\.(\d+)", ptx, re.M)
    t = re.search(rb"^\s*\.target\s+(sm_\d+[af]?)", ptx, re.M)
    return ((int(v.group(1)), int(v.group(2))) if v else None, _arch_of(t.group(1).decode()) if t else None)


def _ptx_needs_driver(isa):
    """Oldest CUDA (driver) version that can JIT a PTX ISA version, per the PTX ISA
    release history: 7.x came with CUDA 11.x, 8.0-8.5 with 12.0-12.5, 8.6-8.8 with
    12.7-12.9, 9.x with 13.x."""
    major, minor = isa
    if major >= 9:
        return (major + 4, minor)
    if major == 8:
        return (12, minor if minor <= 5 else minor + 1)
    return (11, minor) if major == 7 else (10, 0)


# --------------------------------------------------------------------------- native launch path

# A built package ships _mtlaunch.abi3.so, compiled from launcher.c next to this file: the common
# case of the generated launchers in one C call (see that file).  Registered at import (no GPU
# work), loaded with the driver at the first launch; where it is missing, does not load or is
# disabled (MYTRITON_NATIVE_LAUNCH=0) the launchers run in pure Python, with the same checks.
_native = None              # the loaded library's launch(), or None: pure-Python launches
_native_file = None         # (path, sha256 or None) registered by use_native_launcher()
_native_status = "none registered"


def use_native_launcher(path, sha256: str | None = None) -> None:
    """Register the native launch library at ``path`` (checked against ``sha256`` when given);
    it is loaded together with the driver, at the first launch -- where the driver is already
    initialised (the JIT registers its library at its first compile), at the next launch that
    takes the slow path (a kernel's first)."""
    global _native_file, _native_status, _get_ctx
    with _LOCK:
        if os.environ.get("MYTRITON_NATIVE_LAUNCH", "1") == "0":
            _native_status = "disabled by MYTRITON_NATIVE_LAUNCH=0"
        elif _native is None:
            _native_file, _native_status = (os.fspath(path), sha256 and sha256.lower()), "not loaded yet"
            if _launch_kernel is not None:
                _get_ctx = _bootstrap_get_ctx         # (the slow path's first call runs _init again)


def note_native_launcher(status: str) -> None:
    """Record why no native launch library is registered (``native_launcher_status``)."""
    global _native_status
    with _LOCK:
        if _native_file is None and _native is None:
            _native_status = status


def native_launcher_status() -> str:
    """``"loaded <path>"``, or why launches run in pure Python."""
    return _native_status


def _load_native() -> None:
    """Load the registered library and give it cuLaunchKernel; any failure leaves pure Python."""
    global _native, _native_status
    path, digest = _native_file
    with _LOCK:
        if _native is not None or _native_status != "not loaded yet":
            return
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            _native_status = f"cannot read {path}: {e.strerror}"
            return
        import hashlib
        if digest and hashlib.sha256(data).hexdigest() != digest:
            _native_status = f"refused {path}: sha256 mismatch"
            raise KernelLoadError(f"sha256 mismatch for {path} (the native launch library): "
                                  f"expected {digest}, got {hashlib.sha256(data).hexdigest()}")
        try:
            import importlib.machinery
            import importlib.util
            loader = importlib.machinery.ExtensionFileLoader("_mtlaunch", path)
            module = importlib.util.module_from_spec(importlib.util.spec_from_loader("_mtlaunch", loader))
            loader.exec_module(module)
            # the same cuLaunchKernel cuda.bindings calls: legacy default stream, unless cuda-python
            # was told to use per-thread default streams
            ptds = os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "0") not in ("", "0")
            ret = _cuda.cuGetProcAddress(b"cuLaunchKernel", 12000, 2 if ptds else 1)
            if int(ret[0]) or not int(ret[1]):
                raise OSError(f"cuGetProcAddress(cuLaunchKernel) failed: {ret[0]}")
            module.configure(int(ret[1]), DeviceArray, _TENSOR_INFO)
        except Exception as e:   # another platform or Python build, an old driver: pure Python
            _native_status = f"not used ({type(e).__name__}: {e})"
            return
        _native, _native_status = module.launch, f"loaded {path}"


def _native_spec(params, block: int, shared: int, twin=None) -> tuple:
    """What the native launcher needs of a kernel: (block, shared, kinds, pointer dtypes), and for
    a kernel with a specialized variant ``twin`` (a Kernel) what that one promises of each passed
    argument ('1': it is 1, not passed to the twin; 'A' and the alignment or divisor; '-' nothing)
    and its shared memory; see launcher.c.  Kinds it does not read (fp16, bf16, alignments over
    255) take the Python path."""
    if twin is not None:
        promised = dict(_twin_promises(params, twin.params))
        checks = bytearray()
        for j in range(len(_passed(params))):
            align = promised.get(j)
            checks += b"-\0" if align is None else b"1\0" if align == 0 else b"A" + bytes([align if align <= 255 else 0])
        return (*_native_spec(params, block, shared), bytes(checks), twin.shared)
    kinds, params = bytearray(), _passed(params)
    for _, t in params:
        if t.is_pointer:
            code = "P"
        elif t == TENSOR_MAP:
            code = "X"
        elif t.dtype == "i1":
            code = "?"
        elif t.dtype in ("fp16", "bf16"):
            code = "X"
        else:
            code = DTYPES[t.dtype].struct
        kinds += (code if t.align <= 255 else "X").encode() + bytes([t.align if t.align <= 255 else 0])
    return block, shared, bytes(kinds), tuple(sys.intern(t.dtype) if t.is_pointer else None for _, t in params)


# --------------------------------------------------------------------------- tensor maps

# A descriptor's element type as TMA copies it: by size where its kind does not matter (integers,
# fp8, bool), as the float it is where out-of-bounds elements may read NaN.
_TMA_TYPES = {"fp16": "FLOAT16", "bf16": "BFLOAT16", "fp32": "FLOAT32", "fp64": "FLOAT64", "i32": "INT32",
              "u32": "UINT32", "i64": "INT64", "u64": "UINT64"}
_TMA_BY_SIZE = {1: "UINT8", 2: "UINT16"}
_TENSOR_MAPS: dict = {}          # (address, dtype, shape, strides, block shape, padding) -> bytes
_TENSOR_MAPS_KEPT = 4096


def tma_data_type(dtype: str, padding: str = "zero") -> str | None:
    """The CUtensorMapDataType name TMA copies ``dtype`` with (``FLOAT16``), or None where it
    cannot (NaN padding needs a float type TMA knows)."""
    name = _TMA_TYPES.get(dtype) or _TMA_BY_SIZE.get(DTYPES[dtype].itemsize)
    if padding == "nan" and not (name or "").startswith(("FLOAT", "BFLOAT")):
        return None
    return name


_SWIZZLES = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}


def tensor_map(address: int, dtype: str, shape, strides, block_shape, padding: str = "zero",
               swizzle: int = 0) -> bytes:
    """The 128 bytes of the TMA tensor map (``cuTensorMapEncodeTiled``) of a tensor descriptor: the
    array at ``address`` of ``shape`` with ``strides`` (in elements, the last 1), copied in boxes of
    ``block_shape``, elements out of bounds read as zeros or, with ``padding`` "nan", NaN; the box
    rows written into shared memory unswizzled, or with ``swizzle`` 32, 64 or 128 in TMA's swizzle
    of that many bytes. Needs the driver but no context; remembered per argument (a launch with the
    same descriptor reads it from here instead of calling the driver again)."""
    if swizzle not in _SWIZZLES:
        raise ValueError(f"tensor map swizzle must be one of {sorted(_SWIZZLES)} bytes, got {swizzle!r}")
    key = (address, dtype, tuple(shape), tuple(strides), tuple(block_shape), padding, swizzle)
    found = _TENSOR_MAPS.get(key)
    if found is not None:
        return found
    _init()
    cu, size, rank = _cuda, DTYPES[dtype].itemsize, len(shape)
    kind = tma_data_type(dtype, padding)
    if kind is None or not 0 < rank <= 5:
        raise ValueError(f"no tensor map for {rank} dimensions of {dtype} with {padding} padding")
    u64, u32 = cu.cuuint64_t, cu.cuuint32_t
    fill = cu.CUtensorMapFloatOOBfill
    result = cu.cuTensorMapEncodeTiled(
        getattr(cu.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{kind}"), rank, address,
        [u64(d) for d in reversed(shape)],                       # (TMA lists dimensions innermost first)
        [u64(s * size) for s in reversed(strides[:-1])],         # (bytes; the innermost stride is the element)
        [u32(b) for b in reversed(block_shape)], [u32(1)] * rank,
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(cu.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{_SWIZZLES[swizzle]}"),
        cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        fill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA if padding == "nan"
        else fill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    encoded = _check(result, f"cuTensorMapEncodeTiled({dtype}, shape {list(shape)}, strides {list(strides)}, "
                             f"block {list(block_shape)}" + (f", swizzle {swizzle}B)" if swizzle else ")"))
    data = ctypes.string_at(encoded.getPtr(), TENSOR_MAP_BYTES)
    if len(_TENSOR_MAPS) >= _TENSOR_MAPS_KEPT:
        _TENSOR_MAPS.clear()
    _TENSOR_MAPS[key] = data
    return data


# ------------------------------------------------------- tensor maps of descriptors made in kernels

def _wrapped(value: int, dtype: str) -> int:
    """``value`` in the integer type ``dtype``, wrapping as C does."""
    d = DTYPES[dtype]
    value &= (1 << d.bits) - 1
    return value - (1 << d.bits) if d.kind == "int" and value >> (d.bits - 1) else value


def _evaluate(expr, env: dict) -> int:
    """The value of a recipe's expression (``frontend/launch_maps.py``) for the arguments ``env``
    (by parameter name: ints, pointers as their addresses)."""
    kind = expr[0]
    if kind == "param":
        return env[expr[1]]
    if kind == "const":
        return expr[1]
    if kind == "cast":
        return _wrapped(_evaluate(expr[2], env), expr[1])
    if kind == "addptr":
        return (_evaluate(expr[2], env) + _evaluate(expr[3], env) * expr[1]) & (2**64 - 1)
    a, b = _evaluate(expr[2], env), _evaluate(expr[3], env)
    return _wrapped(a + b if kind == "add" else a - b if kind == "sub" else a * b, expr[1])


def _expr_params(expr, out: list) -> list:
    if expr[0] == "param":
        if expr[1] not in out:
            out.append(expr[1])
    elif expr[0] != "const":
        for e in expr[2:]:
            _expr_params(e, out)
    return out


class LaunchTensorMap:
    """The tensor map of a descriptor the kernel makes (``tl.make_tensor_descriptor``) from its
    parameters, encoded at launch: ``recipe`` (``frontend/launch_maps.py``) says how to compute its
    base, shape and strides from the arguments named ``inputs``; called with their values
    (pointers as addresses), it checks TMA's rules on the descriptor (a 16-byte aligned base,
    strides of multiples of 16 bytes below 2**40, dimensions of 1 to 2**32 elements) -- a
    ValueError naming the kernel and the line that made it, where one fails -- and returns the
    map's 128 bytes, remembered per distinct argument values."""

    def __init__(self, kernel: str, recipe: dict, required=None):
        self.kernel, self.recipe = kernel, recipe
        self.inputs = []
        for e in (recipe["base"], *recipe["shape"], *recipe["strides"]):
            _expr_params(e, self.inputs)
        # (device -> whether the image launched there copies through the map: where it does not,
        # a map TMA cannot copy is passed as zeros; None: every image does)
        self.required = required
        self._seen: dict = {}

    def __call__(self, values: tuple, device: int = -1) -> bytes:
        try:
            return self._seen[values]
        except KeyError:
            pass
        env = {n: operator.index(v) for n, v in zip(self.inputs, values)}
        r = self.recipe
        base = _evaluate(r["base"], env)
        shape = [_evaluate(e, env) for e in r["shape"]]
        strides = [_evaluate(e, env) for e in r["strides"]] + [1]
        size = DTYPES[r["dtype"]].itemsize
        why = (f"its base {base:#x} is not 16-byte aligned" if base % 16 else
               next((f"its shape {shape} has a dimension outside 1..2**32" for d in shape if not 0 < d <= 2**32), None) or
               next((f"its strides {strides} are not multiples of 16 bytes below 2**40 ({size}-byte elements)"
                     for st in strides[:-1] if st <= 0 or st * size % 16 or st * size >= 2**40), None))
        if why is None:
            try:
                data = tensor_map(base, r["dtype"], shape, strides, r["box"], r["padding"], r["swizzle"])
            except CudaError as e:
                why = str(e)
        if why is not None:
            if self.required is not None and not self.required(device):
                return bytes(TENSOR_MAP_BYTES)
            raise ValueError(f"{self.kernel}: the tensor descriptor made at {r['where']} (tl.make_tensor_descriptor) "
                             f"is copied by TMA in this kernel, and TMA cannot copy it: {why}")
        if len(self._seen) >= 256:
            self._seen.clear()
        self._seen[values] = data
        return data


# --------------------------------------------------------------------------- Kernel

# The launch path is generated per signature (as Triton does), so that it is straight-line
# code: a driver launch costs ~4 us and every Python call or dict around it shows.  Arguments
# arrive as locals; int addresses skip all conversion, DeviceArrays and torch tensors take an
# inline fast path; one Struct.pack_into writes every argument into a per-thread buffer (the
# binding releases the GIL while the driver reads it), and the CUfunction is cached per thread
# with the context it belongs to and that context's device.  Each pointer argument that knows its
# device (DeviceArray.device, a tensor's get_device()) is compared with that device: where one
# differs, or the slot is not resolved yet, or the driver refuses the launch (the current context
# changed, a stream of another device), Kernel._launch_slow works out the launch from the original
# arguments.  One body serves Kernel.launch and KernelFamily[grid](...); the family's launcher
# selects the specialization itself, so a loader launch is one Python call.
# ``Kernel.launcher_source`` and ``fam[grid].launcher_source`` show the code.  Where the native
# launch path is loaded, it takes the common case first (see _native).
_POINTER_CODE = """\
        if (_t := type({a})) is int:
            _p{i} = {a}
        else:
            if _t is DeviceArray and (_g := {a}._launch)[1] == {dtype!r}: _p{i} = _g[0]; _d = _g[2]
            elif _t is _tensor_type and (_d := {a}.get_device()) >= 0 and _tensor_dtypes[{a}.dtype] == {dtype!r}: _p{i} = {a}.data_ptr()
            else: _p{i}, _d = _c{i}({a})
            if _d != _dev and _d >= 0: _dev = -3
"""
# a parameter built as i32:1 (compiled in, not passed): its argument must be 1
_ONE_CODE = "        if type({a}) is not int or {a} != 1: _not_one(_params, {i}, {a})\n"
# one test for all pointers promising the same alignment
_ALIGN_CODE = "        if ({pointers}) & {mask}: raise _misaligned(_params, [{names}])\n"
_CONVERT_CODE = "        {a} = _c{i}({a})\n"
_DIVISIBLE_CODE = "        if type({a}) is not int or {a} % {align}: {a} = _c{i}({a})\n"

_LAUNCH_BODY = """\
{checks}\
        try:
            _slot = _tls.slot
        except AttributeError:
            _slot = _tls.slot = _self._new_slot()
{native}        _dev = _slot[7]
{conversions}\
        if stream is not None:
            stream = _stream_handle(stream)
        try:
{derived}            _pack_into(_slot[3], 0, {packed})
        except (struct.error, OverflowError, TypeError):
            raise _explain_pack_error(_params, [{explained}]) from None
{launch_code}"""

_PLAIN_LAUNCH = """\
        if _dev >= 0:
            _err, = {launch}(_slot[1], _gx, _gy, _gz, {block}, 1, 1, {shared}, stream, _slot[4], 0)
            if not _err:
                return
        else:
            _err = 0
        _self._launch_slow(_err, _slot, [{names}], _gx, _gy, _gz, stream{cooperative})
"""

# A kernel with a specialized variant (its twin: Kernel's ``specialized``, built with more
# promises) launches the twin where the arguments, as packed, keep the twin's promises: its
# function, its argument pointers (the same bytes, less those of the parameters it has compiled
# in) and its shared memory are slot[8], slot[9] and slot[10].  ``{test}`` reads the packed locals
# themselves (cheap for ints, bools and numpy ints); where it cannot run on them (numpy's unsigned
# ints beside negative ints), _twin_holds reads each value as the kernel receives it.
_TWIN_LAUNCH = """\
        try:
            _v = {test}
        except Exception:
            _v = _self._twin_holds([{packed}])
        if _dev >= 0:
            if not _v:
                _err, = {launch}(_slot[1], _gx, _gy, _gz, {block}, 1, 1, {shared}, stream, _slot[4], 0)
                if not _err:
                    return
            elif (_f := _slot[8]) is not None:      # (None: not loaded in this context yet)
                _err, = {launch}(_f, _gx, _gy, _gz, {block}, 1, 1, _slot[10], stream, _slot[9], 0)
                if not _err:
                    return
            else:
                _err = 0
        else:
            _err = 0
        _self._launch_slow(_err, _slot, [{names}], _gx, _gy, _gz, stream, {cooperative_flag}, _v)
"""

# the native launch path first (a cooperative launcher has none)
_NATIVE_CODE = """\
        if _native is not None and _slot[6] and not _native(
                _spec, _slot[6], _gx, _gy, _gz, 0 if stream is None else _stream_handle(stream), {passed}):
            return
"""

_KERNEL_LAUNCHER = """\
def make(_self, _tls, _pack_into, _params, _spec, {converters}):
    def launch(grid, args, stream=None):
        if type(grid) is int and 0 < grid <= 2147483647:
            _gx = grid; _gy = _gz = 1
        elif type(grid) is tuple and 0 < len(grid) <= 3:
            _gx, _gy, _gz = grid + _PAD[len(grid)]
            if not (type(_gx) is int and type(_gy) is int and type(_gz) is int
                    and 0 < _gx <= 2147483647 and 0 < _gy <= 65535 and 0 < _gz <= 65535):
                _gx, _gy, _gz = _grid3(grid)     # numpy ints, or the error naming the bad dimension
        else:
            _gx, _gy, _gz = _grid3(grid)
        try:
            [{names}] = args
        except (TypeError, ValueError):
            raise _self._count_error(args) from None
{body}
    return launch
"""

# The runtime arguments are the kernel's parameters by name and the constexprs required
# keywords, so Python itself reports a wrong call as it does for the JIT
# ("add_kernel() missing 1 required positional argument: 'n'").  ``_last`` remembers the
# latest selection; identical constexpr objects (the usual case: the same call site) find
# it with one ``is`` each (the same object: the same kind and bits), other objects by their
# values and kinds where those tell the identities (``_plain``, see ``_kinds_tell``), anything
# else by the values' identities (``_found``); the next launch's ``is`` tests find those objects.
_FAMILY_LAUNCHER = """\
def make(_fam, _grid, _gx, _gy, _gz, _found, _plain, _tuned, _pack_into, _params, {converters}):
    _last = (_UNSET,) * {nkey}
    def run({params}*, {keywords}stream=None, num_warps=None{grid_keyword}):
        nonlocal _last
{select}\
        {payload} = _sel[{nkey}]
{grid_code}        if _spec is None:      # (a kernel that encodes tensor maps: its own launcher)
            return _self.launch((_gx, _gy, _gz), ({params}), stream)
{body}
    return run
"""
_SELECT_CODE = """\
        _sel = _last
        if not ({hit}):
            try:
                _sel = _last = ({key}_plain[{key}{kinds}])
            except (KeyError, TypeError):
                _sel = _found(({key}))
                if _sel is None:
                    return _fam.launch(_grid, ({params}), {{{given}}}, num_warps, stream)
                _last = _sel
"""
# A family tuned at build time: no constexprs (and no num_warps) means the tuned choice for the
# key arguments' values, remembered per distinct values (the first launch with new values asks
# the family for the nearest problem's config).
_TUNED_SELECT_CODE = """\
        if {unset}num_warps is None:
            try:
                _sel = _tuned[({tuned_key})]
            except (KeyError, TypeError):
                return _fam.launch(_grid, ({params}), {{}}, None, stream)
{assign}\
        else:
{select}\
"""
# How the family's launcher gets its grid: fixed when fam[grid] was made, called with meta,
# or (a grid _grid3 refused) refused again at every call, naming the bad dimension.
_GRID_CODE = {
    "fixed": "",
    "callable": "        _gx, _gy, _gz = _grid3(_grid({{{meta}'num_warps': _self.num_warps}}))\n",
    "invalid": "        _gx, _gy, _gz = _grid3(_grid)\n",
}


# A family's launcher whose kernel has parameters named like variables of the generated code:
# a function of the kernel's names (KernelFamily._named) calls the one generated with names of
# its own. Its variables are named apart from the kernel's parameters.
_NAMED_LAUNCHER = """\
def make({call}, {unset}):
    def run({signature}):
        return {call}({passed})
    return run
"""


def _own_names(params, reserved, taken: set) -> tuple[list, list]:
    """(names, signature) of a generated function taking the parameters named ``params``, in
    order: each by its own name where Python can bind it by that name (an identifier, not a
    keyword, not in ``reserved``, not spelt like one before it); else by a name of its own
    (``_arg<i>``, not in ``taken``, which gets it) and positional only, as are those before it."""
    names, seen = [], set()
    for i, n in enumerate(params):
        if not (n.isidentifier() and not keyword.iskeyword(n) and n not in reserved and n not in seen):
            n = f"_arg{i}"
            while n in taken:
                n += "_"
            taken.add(n)
        seen.add(n)
        names.append(n)
    last = max((i for i, (n, p) in enumerate(zip(names, params)) if n != p), default=-1)
    return names, names[:last + 1] + ["/"] * (last >= 0) + names[last + 1:]


def _variables(source: str) -> set:
    """The names the function ``run`` in ``source`` binds or reads (its parameters, locals,
    closure variables, globals and builtins; not attributes, strings or comments)."""
    import ast
    run = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == "run")
    names = set()
    for node in ast.walk(run):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Nonlocal):
            names.update(node.names)
    return names


def _argument_code(params, names, derived=None):
    """(conversion code, converter functions, struct format, the packed locals) for a launcher
    of ``params`` whose arguments are the locals ``names`` (pointers are converted into ``_p<i>``,
    keeping the arguments themselves for the slow path): each argument gets an 8-byte slot (no
    parameter type is wider; the driver copies each from its own address), so one Struct packs
    them all and range-checks the scalars. ``derived``: the parameters the launcher computes
    from others instead (tensor maps made in the kernel: index -> LaunchTensorMap), whose code
    ``_derived_code`` writes."""
    codes = [_struct_code(t) for _, t in _passed(params)]
    fmt = "<" + "".join(c if struct.calcsize("<" + c) % 8 == 0 else f"{c}{8 - struct.calcsize('<' + c)}x"
                        for c in codes)
    code, converters, aligned, packed = [], {}, {}, []
    for i, ((pname, t), a) in enumerate(zip(params, names)):
        if t.one:                    # (checked before any launch path: _ONE_CODE)
            continue
        if i in (derived or {}):
            packed.append(a)
            continue
        if (conv := _make_converter(pname, t)) is not None:
            converters[f"_c{i}"] = conv
        packed.append(f"_p{i}" if t.is_pointer else a)
        if t.is_pointer:
            code.append(_POINTER_CODE.format(a=a, i=i, dtype=t.dtype))
            if t.align > 1:
                aligned.setdefault(t.align, []).append(packed[-1])
        elif t.align > 1 and t.dtype in _INT_DTYPES:
            code.append(_DIVISIBLE_CODE.format(a=a, i=i, align=t.align))
        elif conv is not None:
            code.append(_CONVERT_CODE.format(a=a, i=i))
    for align, pointers in aligned.items():
        code.append(_ALIGN_CODE.format(pointers=" | ".join(pointers), mask=align - 1, names=", ".join(packed)))
    return "".join(code), converters, fmt, packed


def _derived_code(params, names, derived: dict) -> tuple[str, dict]:
    """(code, functions) computing the ``derived`` parameters' values (index -> LaunchTensorMap)
    from the converted arguments they read: addresses for pointers (``_p<i>``), else the values."""
    index = {n: i for i, (n, _) in enumerate(params)}
    code, functions = [], {}
    for i, made in derived.items():
        inputs = [f"_p{index[n]}" if params[index[n]][1].is_pointer else names[index[n]] for n in made.inputs]
        functions[f"_dm{i}"] = made
        code.append(f"            {names[i]} = _dm{i}(({''.join(x + ', ' for x in inputs)}), _dev)\n")
    return "".join(code), functions


def _struct_code(t: ParamType) -> str:
    """How one argument is packed: a pointer as its 64-bit address, a tensor map as its bytes, a
    scalar by its dtype's struct code."""
    return "Q" if t.is_pointer else f"{TENSOR_MAP_BYTES}s" if t == TENSOR_MAP else DTYPES[t.dtype].struct


def _slot_offsets(params) -> list[int]:
    """Where each passed argument starts in a launch's argument bytes: 8 bytes each, a tensor
    map's 128 (``_argument_code``'s format)."""
    offsets, at = [], 0
    for _, t in _passed(params):
        offsets.append(at)
        at += TENSOR_MAP_BYTES if t == TENSOR_MAP else 8
    return offsets + [at]


def _twin_promises(params, twin) -> list[tuple[int, int]]:
    """What the specialized variant ``twin`` (parameter types, as ``params``) promises beyond the
    kernel's own types ``params``: ``(index among the passed arguments, 0 for "is 1", else the
    alignment or divisor)`` for each argument it adds a promise to."""
    out, j = [], 0
    for (_, t), (_, u) in zip(params, twin):
        if t.one:
            continue
        if u.one:
            out.append((j, 0))
        elif u.align > t.align:
            out.append((j, u.align))
        j += 1
    return out


def _twin_test(params, twins, names) -> str:
    """The expression a launcher tests to take a specialized variant: ``twins`` lists ``(index,
    twin parameter types)``; an index of None is the kernel's own twin, else the payload's ``_tw``
    says which one the selected kernel has (0: none). It reads the packed locals (``_p<i>`` for
    pointers) one operation each, in the forms CPython runs fastest (measured on 3.11): an address
    (two 30-bit digits) by ``%``, a smaller int by ``&``, a unit stride by identity with the int 1
    (``_one``: CPython's one object for it), else by ``== 1`` (a bool, a numpy int); failing at the
    first broken promise."""
    locals_ = [(f"_p{i}", True) if t.is_pointer else (a, False)
               for i, ((_, t), a) in enumerate(zip(params, names)) if not t.one]
    tests = []
    for index, twin in twins:
        divisible, ones = [], []
        for j, align in _twin_promises(params, twin):
            name, pointer = locals_[j]
            if align == 0:
                ones.append(f"({name} is _one or {name} == 1)")
            else:
                divisible.append(f"{name} % {align}" if pointer else f"{name} & {align - 1}")
        test = " and ".join(([f"not ({' or '.join(divisible)})"] if divisible else []) + ones) or "True"
        tests.append(test if index is None else f"_tw == {index} and ({test})" if len(twins) > 1
                     else f"_tw and ({test})")
    return " or ".join(tests)


def _twin_problem(params, twin) -> str | None:
    """Why ``twin`` (parameter types) cannot be a specialized variant of a kernel of ``params``, or
    None: the same parameters of the same types, each keeping the kernel's own promises (an
    argument that keeps the twin's keeps the kernel's), one at least adding one."""
    if [n for n, _ in params] != [n for n, _ in twin]:
        return f"has the parameters ({', '.join(n for n, _ in twin)}), not ({', '.join(n for n, _ in params)})"
    for (name, t), (_, u) in zip(params, twin):
        if (t.is_pointer, t.dtype) != (u.is_pointer, u.dtype) or u == TENSOR_MAP:
            return f"declares '{name}' {u}, the kernel {t}"
        if (t.one and not u.one) or (t.align > 1 and (u.one or u.align % t.align)):
            return f"declares '{name}' {u}, which does not keep the kernel's promise {t}"
    if not _twin_promises(params, twin):
        return "promises nothing more than the kernel"
    return None


def _one_checks(params, names) -> str:
    return "".join(_ONE_CODE.format(a=a, i=i) for i, ((_, t), a) in enumerate(zip(params, names)) if t.one)


def _generate(template: str, label: str, params, names, block: str, shared: str, cooperative: bool = False,
              derived: dict | None = None, twins=(), **fields):
    """Compile one launcher template; returns (its ``make`` function, source, converters, Struct).
    ``cooperative``: its launches are ``cuLaunchCooperativeKernel``'s (not the native path's);
    ``derived``: parameters the launcher computes, the last ones (index -> LaunchTensorMap: the
    caller passes the others; such a launcher has no native path, which takes no tensor maps);
    ``twins``: the signatures of the specialized variants its kernels may have (``_twin_test``)."""
    derived = derived or {}
    conversions, converters, fmt, packed = _argument_code(params, names, derived)
    derived_code, functions = _derived_code(params, names, derived)
    converters.update(functions)
    given = names[:len(names) - len(derived)]
    passed = [a for (_, t), a in zip(params, given) if not t.one]
    explained = [a for a in packed if a not in names[len(given):]]
    native = "" if cooperative or derived else _NATIVE_CODE.format(passed=", ".join(passed))
    launch = "_launch_cooperative" if cooperative else "_launch_kernel"
    if twins:
        converters["_one"] = 1
        launch_code = _TWIN_LAUNCH.format(test=_twin_test(params, twins, given), packed=", ".join(packed),
                                          launch=launch, block=block, shared=shared, names=", ".join(given),
                                          cooperative_flag=cooperative)
    else:
        launch_code = _PLAIN_LAUNCH.format(launch=launch, block=block, shared=shared, names=", ".join(given),
                                           cooperative=", True" if cooperative else "")
    body = _LAUNCH_BODY.format(packed=", ".join(packed), explained=", ".join(explained), derived=derived_code,
                               conversions=conversions, checks=_one_checks(params, given), native=native,
                               launch_code=launch_code)
    source = template.format(converters=", ".join(["_"] + list(converters)), names=", ".join(given),
                             params="".join(f"{n}, " for n in given), body=body, **fields)
    namespace = {}
    exec(compile(source, f"<launcher of {label}>", "exec"), globals(), namespace)
    return namespace["make"], source, converters, struct.Struct(fmt)


class Kernel:
    """One compiled kernel specialization.

    ``name`` is the kernel's name in messages and ``symbol`` its ``extern "C"`` symbol in the
    images (default: ``name``); ``params`` the runtime parameters in order as
    ``(name, type string)``; a block has ``num_warps * 32`` threads and ``shared`` bytes
    of dynamic shared memory; ``images`` maps ``"sm_XY"`` to cubin and ``"ptx"`` to PTX,
    as bytes (PTX also as text) or as a file path read lazily; ``sha256`` optionally maps
    the same keys to hex digests, checked whenever an image is read.  ``made_tensor_maps``:
    the recipes of tensor maps of descriptors the kernel makes (``frontend/launch_maps.py``),
    parameters after ``params`` that each launch computes from the arguments and encodes
    (``LaunchTensorMap``); ``tma_images``: the image keys that copy through them (None: all;
    the others get zeros where TMA could not copy a descriptor).  ``specialized``: a variant of
    the kernel built with more promises (``{"signature", "images", "sha256", "symbol",
    "shared"}``, its signature the same parameters, each type keeping this one's promises): a
    launch whose arguments keep all of them runs it (``twin``), any other launch this kernel;
    where its images cannot run on a device, this kernel runs there.  The constructor does no GPU
    work.
    """

    def __init__(self, name: str, params, num_warps: int, shared: int, images: dict, sha256: dict | None = None,
                 symbol: str | None = None, made_tensor_maps: list | None = None, tma_images=None,
                 specialized: dict | None = None):
        symbol = name if symbol is None else symbol
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"kernel name must be an identifier, got {name!r}")
        if not isinstance(symbol, str) or not (symbol.isascii() and symbol.isidentifier()):
            raise ValueError(f"kernel symbol must be a C identifier, got {symbol!r}")
        self.name, self.symbol = name, symbol
        self.params = [(str(n), _param_type(t) if isinstance(t, str) else t) for n, t in params]
        # descriptors the kernel makes whose tensor maps the launch encodes (frontend/launch_maps.py):
        # parameters after the caller's; ``tma_images``: the images that copy through them (None: all)
        self.tma_images = None if tma_images is None else frozenset(tma_images)
        required = None if self.tma_images is None else self._copies_through_maps
        self.made_tensor_maps = [LaunchTensorMap(name, r, required) for r in made_tensor_maps or ()]
        self.given_params = list(self.params)
        names = {n for n, _ in self.params}
        for m in self.made_tensor_maps:
            missing = [n for n in m.inputs if n not in names]
            if missing:
                raise ValueError(f"kernel {name}: the tensor map {m.recipe['name']} reads unknown parameters {missing}")
        self.params += [(m.recipe["name"], TENSOR_MAP) for m in self.made_tensor_maps]
        for what, v, lo, hi in (("num_warps", num_warps, 1, 32), ("shared", shared, 0, 2**31)):
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise ValueError(f"kernel {name}: {what} must be an int in {lo}..{hi}, got {v!r}")
        self.num_warps, self.shared = num_warps, shared
        bad = [k for k in images if k != "ptx" and _arch_of(k) is None]
        if not images or bad:
            raise ValueError(f"kernel {name}: images must map 'sm_XY' / 'ptx' to cubin / PTX, got keys {list(images)}")
        self.images = dict(images)
        self.sha256 = {k: v.lower() for k, v in (sha256 or {}).items()}
        if set(self.sha256) - set(self.images):
            raise ValueError(f"kernel {name}: sha256 for unknown images {sorted(set(self.sha256) - set(self.images))}")
        self._tls = threading.local()   # per thread: its slot (see _new_slot)
        self._loaded = {}               # int(context) -> (CUmodule, CUfunction, image key)
        self._bytes = {}                # image key -> verified bytes
        self.twin = None if specialized is None else self._make_twin(specialized)
        self.launch = self._make_launcher()

    def _make_twin(self, variant: dict) -> "Kernel":
        """The Kernel of the specialized variant ``variant`` (see the class docstring), checked."""
        if self.made_tensor_maps:
            raise ValueError(f"kernel {self.name}: a kernel that encodes tensor maps at launch takes no "
                             "specialized variant")
        try:
            twin = Kernel(self.name, variant["signature"], self.num_warps, variant.get("shared", 0),
                          variant["images"], variant.get("sha256"), symbol=variant.get("symbol", self.symbol))
        except (KeyError, TypeError) as e:
            raise ValueError(f"kernel {self.name}: its specialized variant must be a dict of 'signature', "
                             f"'images' (and 'sha256', 'symbol', 'shared'): {type(e).__name__}: {e}") from None
        problem = _twin_problem(self.params, twin.params)
        if problem is not None:
            raise ValueError(f"kernel {self.name}: its specialized variant {problem}")
        self._twin_checks = _twin_promises(self.params, twin.params)
        self._twin_unusable = set()     # int(context) where its images cannot run (see _twin_function)
        return twin

    def _twin_holds(self, packed) -> bool:
        """Whether the arguments as packed (``packed``: pointers as addresses, in the order of the
        passed parameters) keep every promise of the specialized variant: each value read as the
        kernel receives it (``operator.index``: bools and numpy ints by their values)."""
        if self.twin is None:
            return False
        for j, align in self._twin_checks:
            value = operator.index(packed[j])
            if (value != 1) if align == 0 else value % align:
                return False
        return True

    def variant_for(self, args) -> str:
        """``"specialized"`` where a launch with ``args`` (in parameter order) runs the specialized
        variant, else ``"plain"``; the errors a launch raises for arguments it refuses. Needs no GPU."""
        if len(args) != len(self.given_params):
            raise self._count_error(args)
        packed = []
        for i, ((name, t), value) in enumerate(zip(self.given_params, args)):
            if t.one:
                _not_one(self.given_params, i, value)
                continue
            convert = _make_converter(name, t)
            if t.is_pointer:
                value = value if type(value) is int else convert(value)[0]
                if t.align > 1 and type(value) is int and value % t.align:
                    raise _misaligned([(name, t)], [value])
            elif convert is not None:
                value = convert(value)
            packed.append(value)
        try:
            self._packer.pack(*packed)
        except (struct.error, OverflowError, TypeError):
            raise _explain_pack_error(self.params, packed) from None
        return "specialized" if self._twin_holds(packed) else "plain"

    def _make_launcher(self, cooperative: bool = False):
        """The launcher generated for the signature (``launcher_source``); ``cooperative``: one that
        launches through cuLaunchCooperativeKernel."""
        given = len(self.given_params)
        make, source, converters, packer = _generate(
            _KERNEL_LAUNCHER, self.name, self.params, [f"a{i}" for i in range(len(self.params))],
            str(32 * self.num_warps), str(self.shared), cooperative=cooperative,
            derived={given + j: m for j, m in enumerate(self.made_tensor_maps)},
            twins=[(None, self.twin.params)] if self.twin is not None else ())
        if not cooperative:
            self.launcher_source, self._packer = source, packer
            # (None: no native path, and the family's launchers call this one)
            self._spec = None if self.made_tensor_maps else _native_spec(
                self.params, 32 * self.num_warps, self.shared, self.twin)
        return make(self, self._tls, packer.pack_into, self.params, self._spec, None, **converters)

    def launch_cooperative(self, grid, args, stream=None) -> None:
        """``launch`` through ``cuLaunchCooperativeKernel``: the driver refuses a grid whose blocks
        cannot all be resident at once (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE), as Triton's
        ``launch_cooperative_grid=True``. Its launcher is made at the first such launch."""
        launcher = self.__dict__.get("_cooperative")
        if launcher is None:
            launcher = self._cooperative = self._make_launcher(cooperative=True)
        launcher(grid, args, stream)

    def launch(self, grid, args, stream=None) -> None:
        """Launch on ``grid`` (an int or 1-3 positive ints) with ``args`` in parameter
        order, on ``stream``: None (the default stream), an int handle, a CUstream, or a
        torch / CuPy / ``__cuda_stream__`` stream.  Every argument check runs before the
        launch.  The launch runs on the device of the pointer arguments (see
        :func:`argument_device`; ``int`` addresses mean the current context), in the current
        context where it is on that device, else in the device's primary context, pushed and
        popped around the launch; arguments on two devices, ``int`` addresses beside memory of
        another device, and a stream of another device are ValueErrors.  (The constructor replaces this with a launcher generated for the
        signature, see ``launcher_source``; this body only documents it.)"""
        raise NotImplementedError  # pragma: no cover

    def __getitem__(self, grid):
        """Triton-style ``kernel[grid](*args, stream=None)``: the arguments by position or by name."""
        def run(*args, stream=None, **named):
            self.launch(grid, self._bound(args, named) if named else args, stream)
        return run

    def _bound(self, args, named: dict) -> list:
        """The arguments of a call by position and by name, in parameter order, as Python binds
        them (and with its errors): a function of the parameters' names does it."""
        bind = self.__dict__.get("_binder")
        if bind is None:
            params = [n for n, _ in self.given_params]
            names, signature = _own_names(params, {"stream"}, set(params))
            namespace = {}
            exec(f"def bind({', '.join(signature)}):\n    return [{', '.join(names)}]\n", {}, namespace)
            bind = self._binder = namespace["bind"]
            bind.__name__ = bind.__qualname__ = self.name
        return bind(*args, **named)

    def __repr__(self):
        sig = ", ".join(f"{n}: {t}" for n, t in self.given_params)
        return f"<Kernel {self.name}({sig}) num_warps={self.num_warps} shared={self.shared} images={sorted(self.images)}>"

    def _count_error(self, args) -> TypeError:
        names = ", ".join(n for n, _ in self.given_params)
        if not hasattr(args, "__len__"):
            return TypeError(f"{self.name}: args must be a sequence ({names}), got {type(args).__name__}")
        return TypeError(f"{self.name}() takes {len(self.given_params)} runtime arguments ({names}) but "
                         f"{len(args)} were given")

    # -- images ---------------------------------------------------------------
    def read_image(self, key: str) -> bytes:
        """The bytes of one image, read from its file if needed and checked against its
        sha256 (KernelLoadError naming the file on mismatch).  Needs no GPU."""
        if key in self._bytes:
            return self._bytes[key]
        src, where = self.images[key], f"image {key!r} of kernel {self.name}"
        if isinstance(src, (bytes, bytearray, memoryview)):
            data = bytes(src)
        elif isinstance(src, str) and key == "ptx" and ("\n" in src or ".version" in src):
            data = src.encode()   # PTX given as text, not as a path
        elif isinstance(src, (str, os.PathLike)):
            where = f"{os.fspath(src)} ({where})"
            try:
                with open(src, "rb") as f:
                    data = f.read()
            except OSError as e:
                raise KernelLoadError(f"cannot read {where}: {e.strerror or e}") from e
        else:
            raise KernelLoadError(f"{where}: expected bytes or a file path, got {type(src).__name__}")
        import hashlib   # here, not at the top: it costs ~5 ms of import time and only verifying needs it
        if key in self.sha256 and (got := hashlib.sha256(data).hexdigest()) != self.sha256[key]:
            raise KernelLoadError(f"sha256 mismatch for {where}: expected {self.sha256[key]}, got {got}; "
                                  "the file is corrupt or was changed after the build")
        self._bytes[key] = data
        return data

    def verify(self) -> None:
        """Read every image (the specialized variant's too) and check its sha256 (no GPU needed)."""
        for key in self.images:
            self.read_image(key)
        if self.twin is not None:
            self.twin.verify()

    def select_image(self, cc: tuple[int, int], driver_version: tuple[int, int]) -> str:
        """The image to load on a device of compute capability ``cc`` under a driver for
        CUDA ``driver_version``: the exact cubin (the architecture-specific one, sm_90a, where
        there are two), else PTX the driver can JIT for this
        device, else a cubin of the same major and a lower minor version (binary
        compatible), else KernelLoadError listing the images and why none fits."""
        cc, arches = tuple(cc), {k: _arch_of(k) for k in self.images if k != "ptx"}
        exact = [k for k, arch in arches.items() if arch[:2] == cc]
        if exact:                    # (an sm_90a cubin, with Hopper-only instructions, before sm_90's)
            return max(exact, key=lambda k: arches[k][2] == "a")
        why = [f"{k} (cubin)" for k in sorted(arches)]
        if "ptx" in self.images:
            isa, target = _ptx_info(self.read_image("ptx"))
            if isa is None:
                why.append("ptx (no .version line)")
            elif (need := _ptx_needs_driver(isa)) > tuple(driver_version):
                why.append(f"ptx (PTX ISA {isa[0]}.{isa[1]} needs a CUDA {need[0]}.{need[1]}+ driver)")
            elif target and (target[:2] > cc or (target[2] and target[:2] != cc)):
                why.append(f"ptx (for sm_{target[0]}{target[1]}{target[2]})")
            else:
                return "ptx"
        compatible = [k for k, (ma, mi, sfx) in arches.items() if ma == cc[0] and mi < cc[1] and not sfx]
        if compatible:
            return max(compatible, key=lambda k: arches[k][1])
        raise KernelLoadError(
            f"kernel {self.name}: no image can run on this device (compute capability {cc[0]}.{cc[1]}, "
            f"sm_{cc[0]}{cc[1]}; CUDA driver {driver_version[0]}.{driver_version[1]}); images: {', '.join(why)}")

    @property
    def loaded_images(self) -> list[str]:
        """Keys of the images loaded so far, one per context (e.g. ``["sm_90"]``)."""
        return [key for _, _, key in self._loaded.values()]

    # -- loading (slow path) --------------------------------------------------
    def _load(self, device: int):
        """Load the best image for ``device`` into the current context (holding _LOCK)."""
        major, minor, optin = _device(device)
        key = self.select_image((major, minor), _cuda_driver_version())
        data = self.read_image(key)
        if key == "ptx" and not data.endswith(b"\0"):
            data += b"\0"   # cuModuleLoadData reads PTX as a NUL-terminated string
        module = _check(_cuda.cuModuleLoadData(data), f"cuModuleLoadData({self.name}, {key})")
        fn = _check(_cuda.cuModuleGetFunction(module, self.symbol.encode()),
                    f"cuModuleGetFunction({self.symbol}, {key})")
        attr = _cuda.CUfunction_attribute
        max_threads = _check(_cuda.cuFuncGetAttribute(attr.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn),
                             "cuFuncGetAttribute(MAX_THREADS_PER_BLOCK)")
        if 32 * self.num_warps > max_threads:
            raise KernelLoadError(f"kernel {self.name} ({key}): num_warps={self.num_warps} needs "
                                  f"{32 * self.num_warps} threads per block; the compiled kernel allows "
                                  f"at most {max_threads} (too many registers per thread)")
        if self.shared:
            static = _check(_cuda.cuFuncGetAttribute(attr.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn),
                            "cuFuncGetAttribute(SHARED_SIZE_BYTES)")
            if self.shared + static > optin:
                raise KernelLoadError(f"kernel {self.name}: needs {self.shared} bytes of dynamic shared "
                                      f"memory (+{static} static) per block; device {device} "
                                      f"(sm_{major}{minor}) provides at most {optin}")
            if self.shared + static > 48 * 1024:   # beyond 48 KiB a kernel must opt in explicitly
                _check(_cuda.cuFuncSetAttribute(fn, attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                self.shared),
                       f"cuFuncSetAttribute({self.name}, MAX_DYNAMIC_SHARED_SIZE_BYTES={self.shared})")
        return module, fn, key

    # -- the slow launch path ---------------------------------------------------
    def _launch_slow(self, err, slot, args, gx, gy, gz, stream, cooperative=False, twin=False):
        """The launches the hot path does not make (its arguments are already checked and packed
        in the slot): a thread's first, one whose arguments are on another device than the
        context it last launched in, one the driver refused with ``err`` (the current context
        changed since, or a stream of another device).  The device comes from the arguments
        themselves; the launch runs in the current context where that is on the device (and
        the thread's slot remembers the function), else in the device's primary context,
        pushed around the launch and popped again. ``cooperative``: through
        cuLaunchCooperativeKernel; ``twin``: the arguments keep the specialized variant's promises."""
        device, devices = self._device_of(args)
        if err and int(err) not in _CONTEXT_ERRORS:       # not a question of contexts: no retry
            raise self._launch_error(err, stream, slot[7], devices, (gx, gy, gz), cooperative)
        block = 32 * self.num_warps
        ctx = _check(_get_ctx(), "cuCtxGetCurrent")
        launch = _launch_cooperative if cooperative else _launch_kernel       # (bound by _init, just run)
        if int(ctx) == 0 and device < 0:
            ctx, current = _current_context()     # int addresses only: device 0, as the CUDA runtime
        elif int(ctx) == 0:
            current = -1
        elif slot[0] is not None and int(ctx) == int(slot[0]):
            current = slot[7] if slot[7] >= 0 else int(_check(_cuda.cuCtxGetDevice(), "cuCtxGetDevice"))
        else:
            current = int(_check(_cuda.cuCtxGetDevice(), "cuCtxGetDevice"))
        if device < 0 or device == current:
            fn, argv, shared = self._bind(slot, ctx, current, twin), slot[4], self.shared
            if twin and slot[8] is not None:
                fn, argv, shared = slot[8], slot[9], slot[10]
            err, = launch(fn, gx, gy, gz, block, 1, 1, shared, stream, argv, 0)
            device = current
        else:
            current_ones = [name for name, d in devices.items() if d < 0]
            if current_ones and device != max(current, 0):      # (none current: device 0's, as above)
                named = next(name for name, d in devices.items() if d >= 0)
                now = f"cuda:{current}" if current >= 0 else "none is current, so cuda:0"
                raise ValueError(
                    f"{self.name}: parameter '{named}' is on cuda:{device} but {_quote(current_ones)} "
                    f"{'is an int address' if len(current_ones) == 1 else 'are int addresses'}, which "
                    f"means the current device ({now}); pass memory that knows its device (a tensor, "
                    f"a DeviceArray) or make cuda:{device} current (e.g. with torch.cuda.device({device}))")
            ctx = _primary_context(device)
            _check(_cuda.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
            try:
                fn, argv, shared = self._launch_target(slot, self._function(ctx, device), ctx, device, twin)
                err, = launch(fn, gx, gy, gz, block, 1, 1, shared, stream, argv, 0)
            finally:
                _check(_cuda.cuCtxPopCurrent(), "cuCtxPopCurrent")
        if err:
            raise self._launch_error(err, stream, device, devices, (gx, gy, gz), cooperative)

    def _device_of(self, args):
        """``(device, {pointer parameter: its device})`` of a launch's arguments (-1: the
        current context's); ValueError when they are on two devices."""
        devices = {name: argument_device(v) for (name, t), v in zip(self.params, args) if t.is_pointer}
        return launch_device(self.name, devices), devices

    def _launch_error(self, err, stream, device, devices, grid, cooperative=False) -> Exception:
        """What a refused launch on ``device`` raises: ValueError for a stream of another
        device, else CudaError."""
        theirs = _stream_device(stream)
        if theirs is not None and theirs != device:
            named = [name for name, d in devices.items() if d == device]
            where = (f"where {_quote(named)} {'is' if len(named) == 1 else 'are'}" if named
                     else "the current device: the pointer arguments do not name one")
            return ValueError(f"{self.name}: stream= is a stream of cuda:{theirs} but the launch runs on "
                              f"cuda:{device} ({where}); pass a stream of cuda:{device}")
        call = "cuLaunchCooperativeKernel" if cooperative else "cuLaunchKernel"
        return _cuda_error(err, f"{call}({self.name!r}, grid={grid}, block={32 * self.num_warps})")

    def _bind(self, slot, ctx, device: int, twin: bool = False):
        """Make the current context ``ctx`` (on ``device``) the thread's: its function, loaded
        there once, goes into the slot, for the hot path and the native one; and the specialized
        variant's where it is loaded there (``twin``: load it now, for a launch that runs it)."""
        fn = self._function(ctx, device)
        slot[0], slot[1], slot[6], slot[7] = ctx, fn, (int(fn), device), device
        if self.twin is not None:
            self._bind_twin(slot, ctx, device, fn, twin)
        return fn

    def _bind_twin(self, slot, ctx, device: int, fn, load: bool) -> None:
        """The slot's specialized variant in ``ctx``: its function (slot[8], slot[9], slot[10]; and
        a third element of slot[6] for the native path), loaded at the first launch that runs it;
        until then None (and 0), which sends such a launch to the slow path; where it cannot run
        there, this kernel's function again (and no third element: the native path runs fn)."""
        twin = None
        if int(ctx) not in self._twin_unusable and (load or int(ctx) in self.twin._loaded):
            twin = self._twin_function(ctx, device)
        if twin is not None:
            slot[8], slot[9], slot[10] = twin, ctypes.addressof(slot[11]), self.twin.shared
            slot[6] = (int(fn), device, int(twin))
        elif int(ctx) in self._twin_unusable:
            slot[8], slot[9], slot[10] = fn, slot[4], self.shared
        else:
            slot[8], slot[6] = None, (int(fn), device, 0)

    def _twin_function(self, ctx, device: int):
        """The specialized variant's CUfunction in the current context, or None where its images
        cannot run on ``device`` (no image for it, too many registers for num_warps, too much
        shared memory): this kernel serves its launches there (the variant is not tried there
        again)."""
        if int(ctx) in self._twin_unusable:
            return None
        try:
            return self.twin._function(ctx, device)
        except KernelLoadError:
            self._twin_unusable.add(int(ctx))
            return None

    def _launch_target(self, slot, fn, ctx, device: int, twin: bool) -> tuple:
        """(function, argument pointers, shared bytes) of a launch in ``ctx``: this kernel's
        (``fn``), or its specialized variant's where ``twin`` and it can run there."""
        if twin and (found := self._twin_function(ctx, device)) is not None:
            return found, ctypes.addressof(slot[11]), self.twin.shared
        return fn, slot[4], self.shared

    def _function(self, ctx, device: int):
        """The CUfunction in the current context ``ctx`` (on ``device``), loading the module
        once per context."""
        try:
            return self._loaded[int(ctx)][1]
        except KeyError:
            pass
        with _LOCK:
            if int(ctx) not in self._loaded:
                self._loaded[int(ctx)] = self._load(device)
            return self._loaded[int(ctx)][1]

    def _copies_through_maps(self, device: int) -> bool:
        """Whether the image this kernel runs on ``device`` (the current one where < 0) copies
        through its made tensor maps (``tma_images``)."""
        if device < 0:
            device = current_device()
        return self.select_image(compute_capability(device), _cuda_driver_version()) in self.tma_images

    def _new_slot(self):
        """A thread's launch state: [context, CUfunction, argv, argument bytes, &argv, view,
        (int(CUfunction), device) for the native path or 0, device of the context or -2].  The
        arguments are packed into a bytearray (cheaper for pack_into than a ctypes buffer); the
        ctypes view pins it, so its address stays valid for argv."""
        *offsets, size = _slot_offsets(self.params)
        buf = bytearray(max(8, size))
        view = (ctypes.c_char * len(buf)).from_buffer(buf)
        argv = (ctypes.c_void_p * max(1, len(offsets)))(*[ctypes.addressof(view) + at for at in offsets])
        slot = [None, None, argv, buf, ctypes.addressof(argv), view, 0, -2]
        if self.twin is not None:
            # the specialized variant's: [its CUfunction, its argument pointers' address, its shared
            # bytes, its argument pointers] (the same bytes, less the parameters it compiled in)
            ones = {j for j, align in self._twin_checks if align == 0}
            kept = [ctypes.addressof(view) + at for j, at in enumerate(offsets) if j not in ones]
            slot += [None, None, self.twin.shared, (ctypes.c_void_p * max(1, len(kept)))(*kept)]
        return slot


# --------------------------------------------------------------------------- KernelFamily

_UNSET = object()    # a constexpr keyword that was not passed
_BY_KINDS = object()    # begins the key of a grid kept with its elements' kinds (KernelFamily.__getitem__)


def _log_point(value) -> float:
    return math.log2(max(float(value), 1.0))


class TunedDispatch:
    """A build-time tuning's choices (see :class:`KernelFamily`): key values -> specialization."""

    def __init__(self, family: str, param_names: list[str], tuning: dict, specs: list[dict]):
        self.family, self.key = family, [str(n) for n in tuning["key"]]
        unknown = [n for n in self.key if n not in param_names]
        if unknown:
            raise ValueError(f"{family}: tuning key {', '.join(unknown)} is not a runtime parameter")
        self.positions = [param_names.index(n) for n in self.key]
        self.exact, self.points = {}, []
        for values, index in tuning.get("choices", ()):
            if len(values) != len(self.key) or not 0 <= index < len(specs):
                raise ValueError(f"{family}: malformed tuning choice {values!r} -> {index!r}")
            self.exact.setdefault(tuple(values), specs[index])
            self.points.append(([_log_point(v) for v in values], specs[index]))
        self.default = specs[0]

    def choose(self, values: tuple) -> dict:
        try:
            return self.exact[values]
        except (KeyError, TypeError):
            pass
        if not self.points:
            return self.default
        try:
            here = [_log_point(v) for v in values]
        except (TypeError, ValueError):
            bad = next(n for n, v in zip(self.key, values) if not isinstance(v, (int, float)))
            raise TypeError(f"{self.family}: the tuning key argument '{bad}' must be a number, got "
                            f"{type(values[self.key.index(bad)]).__name__}") from None
        return min(self.points, key=lambda point: sum((a - b) ** 2 for a, b in zip(point[0], here)))[1]


def _kinds_tell(values) -> bool:
    """Whether values equal to these (``==``) and of the same types are of the same identities
    (``constexpr_identity``): ints, bools, strs and None are, and floats other than zeros (``0.0 ==
    -0.0``) and NaNs (equal to nothing)."""
    for v in values:
        kind = type(v)
        if kind is float:
            if v == 0.0 or v != v:
                return False
        elif kind is not int and kind is not bool and kind is not str and v is not None:
            return False
    return True


def _shown(value, others=()) -> str:
    """A constexpr value as a message shows it: its repr, and what tells it from a value among
    ``others`` of another identity that compares equal (its kind: ``True (bool)`` beside ``1
    (int)``) or prints alike (a NaN's bits)."""
    text, mine = repr(value), constexpr_identity(value)
    for other in others:
        theirs = constexpr_identity(other)
        if mine is None or theirs is None or theirs == mine:
            continue
        if theirs[0] != mine[0] and _equal(value, other):
            return f"{text} ({mine[0]})"
        if theirs[0] == mine[0] == "float" and repr(other) == text:
            return f"{text} (bits 0x{struct.unpack('<Q', mine[1])[0]:016x})"
    return text


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:            # (numpy may refuse to compare)
        return False


class KernelFamily:
    """The built specializations of one kernel, launched Triton-style:
    ``fam[grid](*args, CONSTEXPR=value, ..., num_warps=None, stream=None)``, on the device of
    the pointer arguments, as :meth:`Kernel.launch`; the arguments by position or by name.

    The constexpr values (and ``num_warps`` when several were built for them) select the
    specialization by identity (:func:`constexpr_identity`: kind and exact bits, so ``-0.0`` does
    not launch the one built for ``0.0``, nor ``True`` or ``1.0`` the one built for ``1``; a NaN
    launches the one built for the NaN of its bits); each one's ``Kernel`` is created on first
    use.  ``grid`` may be a callable of ``meta``: the runtime arguments by name, the constexprs
    and num_warps.
    ``specializations`` are dicts ``{"id", "constexprs", "num_warps", "shared", "symbol",
    "images", "sha256"}`` (and ``"num_stages"``; ``"made_tensor_maps"`` and ``"tma_images"`` for
    a kernel whose descriptors made in the kernel get tensor maps at launch: see ``Kernel``).

    ``tuning`` (a kernel tuned at build time): ``{"key": [runtime parameter names], "choices":
    [[key values, index of a specialization], ...]}``. A launch without constexprs and without
    num_warps then runs the choice for its key arguments: the exact key values if recorded, else
    the nearest recorded ones in log space (the sum over the key of (log2 a - log2 b)^2, values
    below 1 counting as 1; ties go to the earlier choice), else (no choices) the first
    specialization. :meth:`best` says which.
    """

    def __init__(self, name: str, params, constexpr_names, specializations, tuning=None):
        self.name = name
        self.params = [(str(n), str(parse_type(t)) if isinstance(t, str) else str(t)) for n, t in params]
        self.constexpr_names = list(constexpr_names)
        self._check_names()
        # index: constexpr identities (constexpr_identity, in constexpr_names order) -> {num_warps: spec}
        self._specs, self._index = [], {}
        self._ambiguous = set()     # (constexpr identities, num_warps) of tuned configs differing in num_stages only
        for spec in specializations:
            cx = dict(spec.get("constexprs", {}))
            if set(cx) != set(self.constexpr_names):
                raise ValueError(f"{name}: specialization {spec.get('id')!r} has constexprs {sorted(cx)}, "
                                 f"expected {sorted(self.constexpr_names)}")
            bad = next((k for k in self.constexpr_names if constexpr_identity(cx[k]) is None), None)
            if bad is not None:
                raise ValueError(f"{name}: specialization {spec.get('id')!r}: constexpr {bad}={cx[bad]!r} is not "
                                 "a constexpr value (a bool, an int, a float, a str or None)")
            key = self._identities(cx)
            by_warps = self._index.setdefault(key, {})
            if spec["num_warps"] in by_warps:
                if tuning is None:
                    raise ValueError(f"{name}: duplicate specialization {self._describe(cx, spec['num_warps'])}")
                self._ambiguous.add((key, spec["num_warps"]))
            else:
                by_warps[spec["num_warps"]] = spec
            self._specs.append(spec)
        self._kernels = {}    # id(spec) -> Kernel
        # (*constexpr identities, identity of num_warps as asked) -> (Kernel, its thread slots, block,
        # shared, native spec): the selections launched so far, for launch() and the generated launchers
        self._fast = {}
        self._plain = {}      # (*values, *their kinds) -> the same, where those tell the identities (_kinds_tell)
        self._runs = {}       # grid (with its elements' kinds unless they are ints) -> its launcher
        self._last_run = (_UNSET, None)     # (the grid object of the last fam[grid], its launcher)
        self._callable_run = None   # the launcher for callable grids (generated once)
        self._direct = {}     # grid kind -> whether its launchers take the kernel's own names (_runner)
        self._dispatch = None if tuning is None else TunedDispatch(self.name, [n for n, _ in self.params],
                                                                   tuning, self._specs)
        self._tuned = {}      # key argument values -> a selection as _selection makes, for tuned launches
        # the signatures of the specializations' specialized variants, each generated launcher's test
        # of them numbered from 1 (the payload's last element: which one the selected kernel has, 0 none)
        self._twins: dict[tuple, int] = {}
        for spec in self._specs:
            if spec.get("specialized") is not None:
                self._twins.setdefault(self._twin_signature(spec), len(self._twins) + 1)

    def _check_names(self) -> None:
        """Constexprs are keywords of the launch (identifiers, and not ``stream``, the launch's
        stream); no name is two parameters'."""
        for n in self.constexpr_names:
            if not isinstance(n, str) or not n.isidentifier() or keyword.iskeyword(n) or n == "stream":
                raise ValueError(f"{self.name}: the constexpr name {n!r} cannot be a keyword of the launch")
        names = [n for n, _ in self.params] + self.constexpr_names
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"{self.name}: the parameter names {', '.join(twice)} are given twice")

    def _identities(self, constexprs: dict) -> tuple:
        """The constexpr values' identities in ``constexpr_names`` order: what selects a specialization."""
        return tuple(constexpr_identity(constexprs[n]) for n in self.constexpr_names)

    @property
    def specializations(self) -> list[dict]:
        """What was built: ``[{"id", "constexprs", "num_warps", "shared"}, ...]``."""
        return [self._public(s) for s in self._specs]

    def _twin_signature(self, spec: dict) -> tuple:
        """A specialized variant's signature as ``(name, type string)`` pairs (ValueError naming the
        specialization where it is none)."""
        try:
            return tuple((str(n), str(parse_type(t))) for n, t in spec["specialized"]["signature"])
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{self.name}: specialization {spec.get('id')!r}: its specialized variant's "
                             f"signature is not a list of (name, type) ({type(e).__name__}: {e})") from None

    def _public(self, spec: dict) -> dict:
        twin = spec.get("specialized")
        return {"id": spec.get("id"), "constexprs": dict(spec.get("constexprs", {})), "num_warps": spec["num_warps"],
                "num_stages": spec.get("num_stages"), "shared": spec.get("shared", 0),
                "specialized": None if twin is None else [list(p) for p in self._twin_signature(spec)]}

    def best(self, *args, **keywords) -> dict:
        """What a launch runs, as in :attr:`specializations`:

        - ``fam.best(*args, CONSTEXPR=value, ..., num_warps=None)``, a launch's arguments (the
          run-time ones by position or by name): the specialization ``fam[grid](*args, ...)`` runs,
          with ``"variant"``: ``"specialized"`` where the arguments keep every promise of its
          specialized variant, else ``"plain"``, and ``"signature"``: that variant's; the errors of
          such a launch where it would refuse the arguments. Needs no GPU.
        - ``fam.best(M=4096, N=4096, K=512)``, the tuning key alone (a kernel tuned at build time):
          the config a launch without constexprs runs for these key values."""
        names = [n for n, _ in self.params]
        if not args and self._dispatch is not None and not set(names) <= set(keywords):
            return self._best_for_key(keywords)
        runtime, constexprs, num_warps = self._bound_call(args, keywords)
        missing = [n for n in names if n not in runtime]
        if missing:
            raise TypeError(f"{self.name}.best() takes the arguments of a launch"
                            + ("" if self._dispatch else f" ({self.name} was not tuned at build time: it has no "
                                                         "tuning key to ask about)")
                            + f": missing {', '.join(missing)}")
        values = [runtime[n] for n in names]
        if self._dispatch is not None and not constexprs and num_warps is None:
            spec = self._dispatch.choose(tuple(values[i] for i in self._dispatch.positions))
        else:
            spec = self.select(constexprs, num_warps)
        variant = self.kernel(spec).variant_for(values)
        public = self._public(spec)
        signature = public["specialized"] if variant == "specialized" else [list(p) for p in self.params]
        return {**public, "variant": variant, "signature": signature}

    def _bound_call(self, args, keywords) -> tuple[dict, dict, object]:
        """(run-time arguments by name, constexprs, num_warps) of a call's arguments, bound as a
        launch binds them (a constexpr named num_warps is both); TypeError for what it refuses."""
        names = [n for n, _ in self.params]
        if len(args) > len(names):
            raise TypeError(f"{self.name}() takes {len(names)} run-time arguments ({', '.join(names)}) but "
                            f"{len(args)} were given")
        runtime, constexprs, num_warps = dict(zip(names, args)), {}, None
        for k, v in keywords.items():
            if k in names:
                if k in runtime:
                    raise TypeError(f"{self.name}() got multiple values for argument '{k}'")
                runtime[k] = v
            elif k in self.constexpr_names or k == "num_warps":
                if k in self.constexpr_names:
                    constexprs[k] = v
                if k == "num_warps":
                    num_warps = v
            else:
                raise TypeError(f"{self.name}() got an unexpected keyword argument '{k}'")
        return runtime, constexprs, num_warps

    def _best_for_key(self, key_values: dict) -> dict:
        """The tuned config for values of the tuning key (``best``'s second form)."""
        key = self._dispatch.key
        missing = [n for n in key if n not in key_values]
        unknown = [n for n in key_values if n not in key]
        if missing or unknown:
            raise TypeError(f"{self.name}.best() takes the tuning key {', '.join(key)} as keywords: " + "; ".join(
                [f"missing {', '.join(missing)}"] * bool(missing) + [f"unexpected {', '.join(unknown)}"] * bool(unknown)))
        return self._public(self._dispatch.choose(tuple(key_values[n] for n in key)))

    def _selection(self, spec: dict, num_warps) -> tuple:
        """What the tuned launchers keep of a selection: ``(*constexpr values, num_warps as asked,
        payload)`` (see ``_payload``)."""
        values = tuple(spec["constexprs"][n] for n in self.constexpr_names)
        return (*values, num_warps, self._payload(spec))

    def _payload(self, spec: dict) -> tuple:
        """What a generated launcher launches a specialization with: ``(Kernel, its thread slots,
        block, shared, native spec)``, and in a family with specialized variants which test of them
        the kernel's twin takes (0: it has none)."""
        kernel = self.kernel(spec)
        payload = kernel, kernel._tls, 32 * kernel.num_warps, kernel.shared, kernel._spec
        if not self._twins:
            return payload
        return *payload, 0 if kernel.twin is None else self._twins[self._twin_signature(spec)]

    def _found(self, values: tuple):
        """The selection of an earlier launch with constexpr values (and num_warps, last) of these
        identities, as ``(*values, payload)``: the caller's own objects, which the generated launcher's
        ``is`` tests then find at its next launch with them; None where no launch had them. Values
        whose kinds and ``==`` tell their identities (``_kinds_tell``) are found by those first."""
        plain = (*values, *map(type, values))
        try:
            return (*values, self._plain[plain])
        except (KeyError, TypeError):
            pass
        payload = self._fast.get(tuple(map(constexpr_identity, values)))
        if payload is None:
            return None
        if _kinds_tell(values):
            if len(self._plain) >= 4096:
                self._plain.clear()
            self._plain[plain] = payload
        return (*values, payload)

    def _tuned_selection(self, args) -> tuple:
        """The selection for a launch without constexprs of a tuned family, remembered per values."""
        if len(args) != len(self.params):
            raise self.kernel(self._specs[0])._count_error(args)
        values = tuple(args[i] for i in self._dispatch.positions)
        try:
            return self._tuned[values]
        except (KeyError, TypeError):
            pass
        spec = self._dispatch.choose(values)
        selection = self._selection(spec, spec["num_warps"])
        try:
            if len(self._tuned) >= 4096:
                self._tuned.clear()
            self._tuned[values] = selection
        except TypeError:   # unhashable key values: chosen again next time
            pass
        return selection

    def __repr__(self):
        return f"<KernelFamily {self.name}: {len(self._specs)} specializations>"

    @staticmethod
    def _describe(constexprs: dict, num_warps=None, beside=None) -> str:
        """``BLOCK=64, num_warps=4`` (num_warps once where a constexpr of that name says it). Where
        ``beside`` (name -> values shown next to these) holds a value that compares equal to one of
        these or prints alike, that one says what tells them apart (``_shown``)."""
        beside = beside or {}
        said = "num_warps" in constexprs and \
            constexpr_identity(constexprs["num_warps"]) == constexpr_identity(num_warps)
        return ", ".join([f"{k}={_shown(v, beside.get(k, ()))}" for k, v in constexprs.items()]
                         + ([f"num_warps={_shown(num_warps, beside.get('num_warps', ()))}"]
                            if num_warps is not None and not said else []))

    def select(self, constexprs: dict, num_warps: int | None = None) -> dict:
        """The specialization dict built for constexpr values of these identities (kind and exact
        bits: ``constexpr_identity``) and num_warps (an int): TypeError for missing/unknown keywords,
        SpecializationNotFoundError listing what was built."""
        missing = [n for n in self.constexpr_names if n not in constexprs]
        unknown = [n for n in constexprs if n not in self.constexpr_names]
        if missing or unknown:
            raise TypeError(f"{self.name}: " + "; ".join(
                [f"missing constexpr argument(s) {', '.join(missing)}"] * bool(missing)
                + [f"unexpected keyword argument(s) {', '.join(unknown)}"] * bool(unknown))
                + f" (constexprs: {', '.join(self.constexpr_names) or 'none'})")
        key = self._identities(constexprs)
        by_warps = self._index.get(key, {})
        warps = num_warps
        if num_warps is not None:    # (np.int64(4) is 4; True and 4.0 were never built)
            ident = constexpr_identity(num_warps)
            warps = ident[1] if ident is not None and ident[0] == "int" else _UNSET
        elif len(by_warps) == 1:
            warps = next(iter(by_warps))
        if warps in by_warps:
            if (key, warps) in self._ambiguous:
                stages = sorted(str(s.get("num_stages")) for s in self._specs
                                if s["num_warps"] == warps and self._identities(s["constexprs"]) == key)
                raise SpecializationNotFoundError(
                    f"{self.name}: several tuned configs were built for {self._describe(constexprs, warps)} "
                    f"(num_stages {', '.join(stages)}); launch without constexprs for the tuned choice")
            return by_warps[warps]
        raise self._not_built(constexprs, num_warps, by_warps)

    def _not_built(self, constexprs: dict, num_warps, by_warps: dict) -> SpecializationNotFoundError:
        wanted = self._describe(constexprs, num_warps, beside={
            "num_warps": [s["num_warps"] for s in self._specs],
            **{n: [s["constexprs"][n] for s in self._specs] for n in self.constexpr_names}})
        if by_warps and num_warps is None:
            return SpecializationNotFoundError(f"{self.name}: several specializations were built for {wanted} "
                                               f"(num_warps {sorted(by_warps)}); pass num_warps=")
        asked = {"num_warps": [num_warps], **{n: [v] for n, v in constexprs.items()}}
        built = "; ".join(self._describe(s.get("constexprs", {}), s["num_warps"], beside=asked) for s in self._specs)
        return SpecializationNotFoundError(f"{self.name}: no specialization was built for {wanted}; "
                                           f"built: {built or 'nothing'}")

    def kernel(self, spec: dict) -> Kernel:
        """The Kernel of one specialization dict (created once)."""
        if id(spec) not in self._kernels:
            with _LOCK:
                if id(spec) not in self._kernels:
                    self._kernels[id(spec)] = Kernel(self.name, self.params, spec["num_warps"],
                                                     spec.get("shared", 0), spec["images"], spec.get("sha256"),
                                                     symbol=spec.get("symbol", self.name),
                                                     made_tensor_maps=spec.get("made_tensor_maps"),
                                                     tma_images=spec.get("tma_images"),
                                                     specialized=spec.get("specialized"))
        return self._kernels[id(spec)]

    def verify(self) -> None:
        """Check every image of every specialization against its sha256 (no GPU)."""
        for spec in self._specs:
            self.kernel(spec).verify()

    def launch(self, grid, args, constexprs: dict, num_warps: int | None = None, stream=None) -> None:
        """Select the specialization and launch it (see the class docstring)."""
        if self._dispatch is None:
            kernel = self._select_kernel(constexprs, num_warps)
        elif num_warps is None and all(v is _UNSET for v in constexprs.values()):
            selection = self._tuned_selection(args)
            kernel, constexprs = selection[-1][0], dict(zip(self.constexpr_names, selection))
        else:       # (the tuned launcher passes the constexprs left out as _UNSET)
            constexprs = {k: v for k, v in constexprs.items() if v is not _UNSET}
            kernel = self._select_kernel(constexprs, num_warps)
        if callable(grid):
            meta = dict(zip((n for n, _ in self.params), args))
            meta.update(constexprs, num_warps=kernel.num_warps)
            grid = grid(meta)
        kernel.launch(grid, args, stream)

    def _select_kernel(self, constexprs: dict, num_warps) -> Kernel:
        if len(constexprs) == len(self.constexpr_names):     # the same selection as before
            try:
                found = self._found((*map(constexprs.__getitem__, self.constexpr_names), num_warps))
            except KeyError:                                  # (a constexpr missing: select says which)
                found = None
            if found is not None:
                return found[-1][0]
        payload = self._payload(self.select(constexprs, num_warps))
        self._fast[(*self._identities(constexprs), constexpr_identity(num_warps))] = payload
        return payload[0]

    def __getitem__(self, grid):
        # Apps launch with a few grids: their launchers are kept, each under its own grid exactly.
        # (1,), (1.0,) and (True,) compare equal, but only the first is a valid grid: one that is not
        # made of exact ints is kept with its elements' kinds. The grid object of the last call
        # (a loop's hoisted grid) finds its launcher first: a tuple is what it was, so the same
        # object is the same grid, kinds and all.
        last = self._last_run
        if last[0] is grid:
            return last[1]
        key = grid
        if type(grid) is tuple:
            for g in grid:
                if type(g) is not int:
                    key = (_BY_KINDS, grid, *map(type, grid))
                    break
        elif type(grid) is not int:
            if callable(grid):            # (one launcher for all callables, given the grid)
                run = self._callable_run
                if run is None:
                    run = self._callable_run = self._runner(None, "callable")
                return functools.partial(run, **{run.grid_keyword: grid})
            key = (_BY_KINDS, grid, type(grid))
        try:
            run = self._runs[key]
        except (KeyError, TypeError):
            run = None
        if run is None:
            try:
                _grid3(grid)
                run = self._runner(grid, "fixed")
            except (TypeError, ValueError):   # refused at the call, after the arguments were checked
                run = self._runner(grid, "invalid")
            try:
                if len(self._runs) >= 64:
                    self._runs.clear()
                self._runs[key] = run
            except TypeError:                 # an unhashable grid (a list): fine, just not cached
                return run
        if type(grid) is tuple or type(grid) is int:     # (immutable: the same object is the same grid)
            self._last_run = (grid, run)
        return run

    def _runner(self, grid, grid_kind: str):
        """The generated ``fam[grid]`` launcher (``launcher_source`` shows its code): the kernel's
        parameters are its own, by their names. Where the generated code uses one of those names
        itself (``_x``, ``type``, ``_grid``...), it is generated with names of its own instead, behind
        a function of the kernel's names that calls it (``_named``)."""
        publics = [n for n, _ in self.params] + self.constexpr_names
        direct = self._direct.get(grid_kind)
        if not direct:
            inner = self._generated(grid, grid_kind, [f"_arg{i}" for i in range(len(self.params))],
                                    [f"_cx{i}" for i in range(len(self.constexpr_names))])
            if direct is None:
                taken = _variables(inner.launcher_source) - set(inner.placeholders)
                direct = self._direct[grid_kind] = all(
                    n.isidentifier() and not keyword.iskeyword(n) and n not in taken for n in publics)
            if not direct:
                return self._named(inner, grid_kind)
        return self._generated(grid, grid_kind, [n for n, _ in self.params], self.constexpr_names)

    def _generated(self, grid, grid_kind: str, names, cx):
        """The launcher of ``_FAMILY_LAUNCHER`` whose run-time arguments are the variables ``names``
        and whose constexprs are the keywords ``cx`` (in the family's order)."""
        params = [(n, parse_type(t)) for n, t in self.params]
        meta = "".join(f"{n!r}: {a}, " for (n, _), a in zip(params, names)) + \
            "".join(f"{n!r}: {c}, " for n, c in zip(self.constexpr_names, cx))
        select = _SELECT_CODE.format(
            hit=" and ".join([f"{n} is _sel[{i}]" for i, n in enumerate(cx)] + [f"num_warps is _sel[{len(cx)}]"]),
            key="".join(f"{n}, " for n in cx) + "num_warps, ",
            kinds="".join(f"type({n}), " for n in cx) + "type(num_warps)",
            given=", ".join(f"{n!r}: {c}" for n, c in zip(self.constexpr_names, cx)),
            params="".join(f"{n}, " for n in names))
        keywords = "".join(f"{n}, " for n in cx)
        if self._dispatch is not None:
            keywords = "".join(f"{n}=_UNSET, " for n in cx)
            assign = "".join(f"            {n} = _sel[{i}]\n" for i, n in enumerate(cx)) if grid_kind == "callable" else ""
            select = _TUNED_SELECT_CODE.format(
                unset="".join(f"{n} is _UNSET and " for n in cx),
                tuned_key="".join(f"{names[i]}, " for i in self._dispatch.positions),
                params="".join(f"{n}, " for n in names), assign=assign,
                select=textwrap.indent(select, "    "))
        twins = [(index, [(n, parse_type(t)) for n, t in signature]) for signature, index in self._twins.items()]
        make, source, converters, packer = _generate(
            _FAMILY_LAUNCHER, f"{self.name}[grid]", params, names, "_block", "_shared", twins=twins,
            payload="_self, _tls, _block, _shared, _spec" + ", _tw" * bool(twins),
            nkey=len(cx) + 1, keywords=keywords, select=select,
            grid_keyword=", _grid" if grid_kind == "callable" else "",
            grid_code=_GRID_CODE[grid_kind].format(meta=meta))
        gx, gy, gz = _grid3(grid) if grid_kind == "fixed" else (None, None, None)
        run = make(self, grid, gx, gy, gz, self._found, self._plain, self._tuned, packer.pack_into, params, None,
                   **converters)
        run.__name__ = run.__qualname__ = self.name   # Python's own argument errors name the kernel
        run.launcher_source, run.placeholders, run.grid_keyword = source, [*names, *cx], "_grid"
        return run

    def _named(self, inner, grid_kind: str):
        """A function of the kernel's own parameter names that calls ``inner`` (a launcher of
        ``_generated`` with names of its own), so that Python binds every argument by the kernel's
        names; its own variables are named apart from them. A run-time parameter named like a
        launch option (``stream``, ``num_warps``: no compiled kernel has one) is positional only."""
        taken = {n for n, _ in self.params} | set(self.constexpr_names)

        def fresh(name):
            while name in taken:
                name += "_"
            taken.add(name)
            return name
        own = {"num_warps"} if "num_warps" in self.constexpr_names else {"stream", "num_warps"}
        names, signature = _own_names([n for n, _ in self.params], own, taken)
        call, unset = fresh("_launch"), fresh("_UNSET")
        default = f"={unset}" if self._dispatch is not None else ""
        signature += ["*"] + [f"{n}{default}" for n in self.constexpr_names] + ["stream=None"]
        signature += ["num_warps=None"] * ("num_warps" not in self.constexpr_names)
        warps = "num_warps" if not default or "num_warps" not in self.constexpr_names else \
            f"None if num_warps is {unset} else num_warps"
        passed = names + [f"{c}={n}" for n, c in zip(self.constexpr_names, inner.placeholders[len(names):])]
        passed += ["stream=stream", f"num_warps={warps}"]
        grid = fresh("_grid") if grid_kind == "callable" else None
        if grid is not None:
            signature.append(grid)
            passed.append(f"_grid={grid}")
        source = _NAMED_LAUNCHER.format(call=call, unset=unset, signature=", ".join(signature),
                                        passed=", ".join(passed))
        namespace = {}
        exec(compile(source, f"<launcher of {self.name}[grid]>", "exec"), {}, namespace)
        run = namespace["make"](inner, _UNSET)
        run.__name__ = run.__qualname__ = self.name
        run.launcher_source, run.grid_keyword = source + "\n" + inner.launcher_source, grid
        return run


# --------------------------------------------------------------------------- DeviceArray

def _numpy():
    try:
        import numpy
    except ImportError as e:
        raise ImportError("DeviceArray needs numpy (pip install numpy)") from e
    return numpy


def _numpy_dtype(dtype):
    """numpy's dtype for one of our dtype names (``"fp32"``) or anything numpy accepts; bfloat16
    and the fp8 types are ml_dtypes' (imported only for them)."""
    np = _numpy()
    if isinstance(dtype, str) and dtype in DTYPES:
        dtype = DTYPES[dtype].numpy
    if isinstance(dtype, str) and dtype in ML_DTYPES:
        try:
            import ml_dtypes
        except ImportError as e:
            raise ImportError(f"{dtype} arrays need ml_dtypes (pip install ml_dtypes)") from e
        return np.dtype(getattr(ml_dtypes, dtype))
    return np.dtype(dtype)


class DeviceArray:
    """A minimal C-contiguous device buffer (cuMemAlloc) for apps with only numpy and
    cuda-python.  Accepted wherever a pointer argument is, and exposes
    ``__cuda_array_interface__`` (v3) to other libraries.  ``dtype`` is anything numpy
    accepts, or one of our dtype strings (``"fp32"``).  Allocated in the current context, or
    in ``device``'s primary context; ``.device`` is the ordinal of the device it is on, and a
    launch with it runs there."""

    def __init__(self, shape, dtype="float32", *, device: int | None = None, _base=None, _ptr=None):
        self.dtype = _numpy_dtype(dtype)
        self.shape = (shape.__index__(),) if hasattr(shape, "__index__") else tuple(int(s) for s in shape)
        self.size = math.prod(self.shape)
        self.nbytes = self.size * self.dtype.itemsize
        self._dtype_str, self._dtype_desc = _dtype_info(self.dtype)[0], str(self.dtype)
        # (address, dtype, device): what a launch reads, in one attribute (0 and -1: no memory)
        self._launch, self._base, self._ctx = (0, self._dtype_str, -1), _base, None   # a view keeps its base alive
        if _ptr is not None:
            self._launch, self._ctx = (_ptr, self._dtype_str, _base.device), _base._ctx
        elif self.nbytes:   # cuMemAlloc(0) is an error; an empty array needs no memory
            with _OnDevice(device) as (self._ctx, on):
                ptr = int(_check(_cuda.cuMemAlloc(self.nbytes), f"cuMemAlloc({self.nbytes})"))
            self._launch, self._driver = (ptr, self._dtype_str, on), _cuda   # freed through this driver
        elif device is not None:
            self._launch = (0, self._dtype_str, device)

    @property
    def ptr(self) -> int:
        """The device address (0 once freed, and for an empty array)."""
        return self._launch[0]

    @property
    def device(self) -> int:
        """The ordinal of the device the memory is on (-1 for an empty array)."""
        return self._launch[2]

    @classmethod
    def from_numpy(cls, arr, *, device: int | None = None) -> "DeviceArray":
        """A new device array holding a copy of a numpy array (on ``device``, default: the
        current one)."""
        arr = _numpy().asarray(arr)
        out = cls(arr.shape, arr.dtype, device=device)
        out.copy_from_host(arr)
        return out

    def copy_from_host(self, arr) -> None:
        """Copy a host array with as many elements into this buffer (converting the dtype
        like numpy assignment).  Synchronous."""
        arr = _numpy().ascontiguousarray(arr, dtype=self.dtype)
        if arr.size != self.size:
            raise ValueError(f"copy_from_host: host array has {arr.size} elements, device array {self.size}")
        if self.nbytes:
            with _OnDevice(self.device):
                _check(_cuda.cuMemcpyHtoD(self.ptr, arr.ctypes.data, self.nbytes), "cuMemcpyHtoD")

    def copy_to_host(self, out=None):
        """Copy into ``out`` (or a new numpy array) and return it.  Synchronous with the
        default stream; synchronize non-blocking streams first."""
        if out is None:
            out = _numpy().empty(self.shape, self.dtype)
        if not out.flags.c_contiguous or out.nbytes != self.nbytes:
            raise ValueError(f"copy_to_host: out must be C-contiguous with {self.nbytes} bytes")
        if self.nbytes:
            with _OnDevice(self.device):
                _check(_cuda.cuMemcpyDtoH(out.ctypes.data, self.ptr, self.nbytes), "cuMemcpyDtoH")
        return out

    to_numpy = copy_to_host

    def data_ptr(self) -> int:
        return self.ptr

    def view_offset(self, nbytes: int) -> "DeviceArray":
        """A 1-D view starting ``nbytes`` into this buffer (any offset, so tests can make
        misaligned pointers); it keeps this array alive."""
        if not 0 <= nbytes <= self.nbytes:
            raise ValueError(f"offset {nbytes} outside a {self.nbytes}-byte array")
        return DeviceArray((self.nbytes - nbytes) // self.dtype.itemsize, self.dtype,
                           _base=self._base or self, _ptr=self.ptr + nbytes)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "strides": None, "version": 3}

    def __len__(self):
        return self.shape[0] if self.shape else 0

    def __repr__(self):
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device={self.device}, ptr={self.ptr:#x})"

    def free(self) -> None:
        """Release the memory now (idempotent; a view only drops its base)."""
        ptr, self._launch = self.ptr, (0, self._dtype_str, self.device)
        if self._base is not None or not ptr or _forked:   # (a forked child must not touch the driver)
            self._base = None
            return
        # cuMemFree needs the owning context current, and a finalizer may run on any thread
        drv = self._driver
        pushed = int(_check(drv.cuCtxGetCurrent(), "cuCtxGetCurrent")) != int(self._ctx)
        if pushed:
            _check(drv.cuCtxPushCurrent(self._ctx), "cuCtxPushCurrent")
        try:
            _check(drv.cuMemFree(ptr), "cuMemFree")
        finally:
            if pushed:
                drv.cuCtxPopCurrent()

    def __del__(self):
        try:
            self.free()
        except Exception:  # interpreter shutdown or a dead context: nothing useful to do
            pass

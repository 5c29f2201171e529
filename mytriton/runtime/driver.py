"""mytriton runtime: load prebuilt CUDA kernels (cubin / PTX) and launch them.

This module is self-contained on purpose: it imports only the standard library,
``cuda.bindings.driver`` (lazily, on the first launch or allocation) and, for
``DeviceArray`` only, numpy.  The AOT build tool copies it verbatim into every
generated package as ``_runtime.py``, so it must never import ``mytriton``.

Public API
----------
``parse_type``, ``ParamType``      Triton AOT type strings (``*fp32:16``, ``i32``)
``pointer_info``, ``infer_type``   what a launch argument is (used by the JIT)
``Kernel``                         one compiled specialization; ``launch(grid, args, stream)``
``KernelFamily``                   constexpr dispatch used by generated loader packages
``DeviceArray``                    minimal device buffer for numpy + cuda-python apps
``driver_available``, ``current_device``, ``compute_capability``, ``synchronize``
``CudaError``, ``KernelLoadError``, ``SpecializationNotFoundError``

Importing this module never touches the GPU.  Argument validation happens
before any driver call, so every argument error is reproducible without a GPU.
"""

from __future__ import annotations

import ctypes
import dataclasses
import hashlib
import math
import os
import re
import struct
import threading

__all__ = [
    "ParamType", "parse_type", "pointer_info", "infer_type",
    "CudaError", "KernelLoadError", "SpecializationNotFoundError",
    "driver_available", "current_device", "compute_capability", "synchronize",
    "DeviceArray", "Kernel", "KernelFamily",
]

# --------------------------------------------------------------------------- types

# dtype -> (struct code used to pack a scalar kernel argument, numpy-style name).
# i1 travels as one byte (C++ bool); fp16 uses struct's native half format; bf16 is
# packed as its 16-bit pattern (see _bf16_bits).
_DTYPES = {
    "i1": ("B", "bool"), "i8": ("b", "int8"), "i16": ("h", "int16"),
    "i32": ("i", "int32"), "i64": ("q", "int64"), "u8": ("B", "uint8"),
    "u16": ("H", "uint16"), "u32": ("I", "uint32"), "u64": ("Q", "uint64"),
    "fp16": ("e", "float16"), "bf16": ("H", "bfloat16"),
    "fp32": ("f", "float32"), "fp64": ("d", "float64"),
}
_INT_DTYPES = {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"}
_FLOAT_DTYPES = {"fp16", "bf16", "fp32", "fp64"}

# Names that array libraries use for their dtypes (numpy: str(dtype); torch: str(dtype)
# minus the "torch." prefix) -> our dtype strings.
_NAME_TO_DTYPE = {
    "bool": "i1", "int8": "i8", "int16": "i16", "short": "i16", "int32": "i32",
    "int": "i32", "int64": "i64", "long": "i64", "uint8": "u8", "uint16": "u16",
    "uint32": "u32", "uint64": "u64", "float16": "fp16", "half": "fp16",
    "bfloat16": "bf16", "float32": "fp32", "float": "fp32", "float64": "fp64",
    "double": "fp64",
}
# numpy array-interface typestr (kind, itemsize) -> dtype, e.g. "<f4" -> ("f", 4).
_TYPESTR_TO_DTYPE = {
    ("b", 1): "i1", ("i", 1): "i8", ("i", 2): "i16", ("i", 4): "i32", ("i", 8): "i64",
    ("u", 1): "u8", ("u", 2): "u16", ("u", 4): "u32", ("u", 8): "u64",
    ("f", 2): "fp16", ("f", 4): "fp32", ("f", 8): "fp64",
}

_TYPE_RE = re.compile(r"^(\*?)([a-z0-9]+)(?::(\d+))?$")


@dataclasses.dataclass(frozen=True)
class ParamType:
    """A parsed kernel parameter type.

    ``align`` is the promised divisibility: for pointers the address alignment in
    bytes (``*fp32:16``), for integer scalars the divisor of the value (Triton's
    ``i32:16``); 1 when nothing is promised.
    """

    is_pointer: bool
    dtype: str
    align: int = 1

    def __str__(self) -> str:
        return ("*" if self.is_pointer else "") + self.dtype + (f":{self.align}" if self.align > 1 else "")


def parse_type(s: str) -> ParamType:
    """Parse a Triton AOT type string (``i32``, ``*fp16``, ``*fp32:16``) or raise ValueError."""
    if not isinstance(s, str):
        raise ValueError(f"type must be a string like 'i32' or '*fp32:16', got {s!r}")
    m = _TYPE_RE.match(s.strip())
    if not m or m.group(2) not in _DTYPES:
        raise ValueError(f"unknown type {s!r}: expected one of {' '.join(_DTYPES)}, "
                         "optionally prefixed with '*' (pointer) and suffixed with ':16' (alignment)")
    star, dtype, align = m.group(1) == "*", m.group(2), int(m.group(3) or 1)
    if align < 1 or align & (align - 1):
        raise ValueError(f"type {s!r}: alignment must be a power of two, got {align}")
    if align > 1 and not star and dtype not in _INT_DTYPES:
        raise ValueError(f"type {s!r}: ':{align}' applies only to pointers and integer scalars")
    return ParamType(star, dtype, align)


def _describe_dtype(dtype) -> str:
    return _DTYPES[dtype][1] if dtype in _DTYPES else str(dtype)


# --------------------------------------------------------------------------- errors

class CudaError(RuntimeError):
    """A CUDA driver call failed (or no driver is usable).

    Attributes: ``call`` (what was called), ``result`` (the CUresult, None when the
    driver itself is missing), ``name`` (e.g. ``CUDA_ERROR_INVALID_HANDLE``), ``message``.
    """

    def __init__(self, call: str, result=None, name: str = "", message: str = ""):
        self.call, self.result, self.name, self.message = call, result, name, message
        super().__init__(f"{call} failed: {name}: {message}" if name else f"{call} failed: {message}")


class KernelLoadError(RuntimeError):
    """A kernel image cannot be used: missing file, sha256 mismatch, no image fits the
    device, or the device cannot provide the kernel's resources."""


class SpecializationNotFoundError(LookupError):
    """No built specialization matches the constexpr / num_warps values of a launch."""


def _cuda_error(result, call: str) -> CudaError:
    name = getattr(result, "name", None) or f"CUresult {int(result)}"
    message = ""
    try:  # cuGetErrorName/String need a loaded driver; fall back to the enum name.
        err, s = _cuda.cuGetErrorName(result)
        if not err and s:
            name = s.decode()
        err, s = _cuda.cuGetErrorString(result)
        if not err and s:
            message = s.decode()
    except Exception:
        pass
    return CudaError(call, result, name, message)


def _check(ret, call: str):
    """Raise CudaError unless the driver call's result tuple starts with CUDA_SUCCESS.
    Returns the single output value (or the tuple of outputs, or None)."""
    if ret[0]:
        raise _cuda_error(ret[0], call)
    return ret[1] if len(ret) == 2 else (ret[1:] or None)


# --------------------------------------------------------------------------- driver

_cuda = None                  # cuda.bindings.driver once imported
_available = None             # cached driver_available() answer
_unavailable_reason = ""
_LOCK = threading.RLock()     # guards driver initialisation, context retain and module loads
_primary = {}                 # device ordinal -> retained primary CUcontext
_device_info = {}             # device ordinal -> (cc major, cc minor, max opt-in shared bytes)
_driver_version = None        # (major, minor) of the installed driver's CUDA version


def _import_driver():
    global _cuda
    if _cuda is None:
        try:
            from cuda.bindings import driver
        except ImportError:
            try:  # cuda-python < 12.6 spelled it differently
                from cuda import cuda as driver
            except ImportError as e:
                raise CudaError("import cuda.bindings", message="cuda-python is not installed "
                                "(pip install cuda-bindings); it is needed to launch kernels") from e
        _cuda = driver
    return _cuda


def driver_available() -> bool:
    """True when cuda.bindings imports, ``cuInit(0)`` succeeds and a device exists.
    The answer is cached; nothing happens at import time."""
    global _available, _unavailable_reason
    if _available is None:
        with _LOCK:
            if _available is None:
                try:
                    drv = _import_driver()
                    # Where no driver library exists cuInit raises instead of returning.
                    _check(drv.cuInit(0), "cuInit")
                    if _check(drv.cuDeviceGetCount(), "cuDeviceGetCount") < 1:
                        raise CudaError("cuDeviceGetCount", message="no CUDA device found")
                    _available = True
                except Exception as e:
                    _unavailable_reason = f"{type(e).__name__}: {e}"
                    _available = False
    return _available


def _init():
    """Make sure the driver is usable, and bind the hot-path entry points."""
    global _get_ctx, _launch_kernel
    if not driver_available():
        raise CudaError("cuInit", message=f"no usable CUDA driver/device ({_unavailable_reason})")
    _get_ctx, _launch_kernel = _cuda.cuCtxGetCurrent, _cuda.cuLaunchKernel


def _bootstrap_get_ctx():
    _init()
    return _get_ctx()


# Hot-path entry points; rebound to the driver's functions by _init().
_get_ctx = _bootstrap_get_ctx
_launch_kernel = None


def _current_context():
    """Return ``(context, device ordinal)`` for the calling thread.

    Uses the current context if there is one (PyTorch / CuPy make the device's primary
    context current); otherwise retains the primary context of device 0 and makes it
    current, as the CUDA runtime would.
    """
    _init()
    ctx = _check(_cuda.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if int(ctx) == 0:
        with _LOCK:
            ctx = _primary.get(0)
            if ctx is None:
                dev = _check(_cuda.cuDeviceGet(0), "cuDeviceGet(0)")
                ctx = _primary[0] = _check(_cuda.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        _check(_cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return ctx, int(_check(_cuda.cuCtxGetDevice(), "cuCtxGetDevice"))


def _device(ordinal: int):
    """``(cc major, cc minor, max opt-in dynamic shared memory)`` of a device, cached."""
    info = _device_info.get(ordinal)
    if info is None:
        attr = _cuda.CUdevice_attribute
        dev = _check(_cuda.cuDeviceGet(ordinal), f"cuDeviceGet({ordinal})")
        info = _device_info[ordinal] = tuple(
            _check(_cuda.cuDeviceGetAttribute(a, dev), f"cuDeviceGetAttribute({a.name})")
            for a in (attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                      attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                      attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN))
    return info


def _cuda_driver_version():
    global _driver_version
    if _driver_version is None:
        v = _check(_cuda.cuDriverGetVersion(), "cuDriverGetVersion")  # e.g. 12040 for 12.4
        _driver_version = (v // 1000, v % 1000 // 10)
    return _driver_version


def current_device() -> int:
    """Ordinal of the device of the calling thread's context (creating it if needed)."""
    return _current_context()[1]


def compute_capability(device: int | None = None) -> tuple[int, int]:
    """``(major, minor)`` compute capability, of the current device by default."""
    if device is None:
        device = current_device()
    else:
        _init()
    return _device(device)[:2]


def synchronize() -> None:
    """Wait for all work in the current context (``cuCtxSynchronize``)."""
    _current_context()
    _check(_cuda.cuCtxSynchronize(), "cuCtxSynchronize")


# --------------------------------------------------------------------------- arguments

def _dtype_from_name(dt):
    """Map a dtype object (numpy dtype, torch dtype, or a string) to our dtype string."""
    typestr = getattr(dt, "str", None)  # numpy dtype: "<f4"
    if isinstance(typestr, str) and len(typestr) >= 3 and typestr[0] in "<|=" and typestr[2:].isdigit():
        found = _TYPESTR_TO_DTYPE.get((typestr[1], int(typestr[2:])))
        if found:
            return found
    name = str(dt)
    return _NAME_TO_DTYPE.get(name[6:] if name.startswith("torch.") else name)


_dtype_cache = {}   # dtype object -> (our dtype or None, description); torch dtypes are singletons


def _dtype_info(dt):
    try:
        return _dtype_cache[dt]
    except (KeyError, TypeError):
        info = (_dtype_from_name(dt), str(dt).replace("torch.", ""))
        try:
            _dtype_cache[dt] = info
        except TypeError:  # unhashable dtype object
            pass
        return info


def _pointer_info(obj):
    """``(address, dtype or None, description of the carried dtype or None)``.

    Raises TypeError for objects that are not device pointers.
    """
    if type(obj) is int:
        return obj, None, None
    if isinstance(obj, DeviceArray):
        return obj.ptr, obj._dtype_str, obj._dtype_desc
    data_ptr = getattr(obj, "data_ptr", None)
    if data_ptr is not None and callable(data_ptr):
        # torch tensors: prefer data_ptr() over __cuda_array_interface__, which torch
        # refuses for bf16 and for tensors that require grad.
        if getattr(obj, "is_cuda", True) is False:
            raise TypeError(f"got a tensor on {getattr(obj, 'device', 'the host')}; it must live on a CUDA device")
        dt = getattr(obj, "dtype", None)
        dtype, desc = (None, None) if dt is None else _dtype_info(dt)
        return int(data_ptr()), dtype, desc
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        typestr = cai.get("typestr")
        dt = None
        if isinstance(typestr, str) and len(typestr) >= 3 and typestr[0] in "<|=" and typestr[2:].isdigit():
            dt = _TYPESTR_TO_DTYPE.get((typestr[1], int(typestr[2:])))
        return int(cai["data"][0]), dt, (_describe_dtype(dt) if dt else str(typestr))
    if hasattr(obj, "__index__") and not isinstance(obj, bool):  # e.g. a numpy integer address
        return obj.__index__(), None, None
    if hasattr(obj, "__array_interface__"):
        raise TypeError(f"got a host (CPU) array of type {type(obj).__name__}; pass device memory "
                        "(DeviceArray.from_numpy, a CUDA tensor, a CuPy array) or an int address")
    raise TypeError(f"expected a device pointer (int address, DeviceArray, object with "
                    f"__cuda_array_interface__ or data_ptr()), got {type(obj).__name__}")


def pointer_info(obj) -> tuple[int, str | None]:
    """``(device address, dtype string or None)`` of a pointer-like launch argument.

    Accepts an ``int`` address, ``DeviceArray``, objects with ``data_ptr()`` (PyTorch;
    dtype from ``.dtype``) or ``__cuda_array_interface__`` (CuPy, Numba; dtype from
    ``typestr``).  The dtype is None for int addresses and for dtypes we do not know.
    """
    addr, dtype, _ = _pointer_info(obj)
    return addr, dtype


def infer_type(obj) -> str:
    """The type string a JIT signature gets for a launch argument (Triton's rules):
    pointers ``*<dtype>``, bool ``i1``, int ``i32``/``i64``/``u64`` by range, float ``fp32``,
    numpy scalars their own dtype.  TypeError for anything else."""
    if isinstance(obj, bool):
        return "i1"
    if type(obj).__module__ == "numpy" and hasattr(obj, "dtype") and getattr(obj, "ndim", None) == 0:
        dt = _dtype_from_name(obj.dtype)  # numpy scalar (np.float64 is also a float: check first)
        if dt is None:
            raise TypeError(f"unsupported numpy scalar type {obj.dtype}")
        return dt
    if isinstance(obj, int):
        if -2**31 <= obj < 2**31:
            return "i32"
        if -2**63 <= obj < 2**63:
            return "i64"
        if 0 <= obj < 2**64:
            return "u64"
        raise TypeError(f"integer argument {obj} does not fit in 64 bits")
    if isinstance(obj, float):
        return "fp32"
    addr, dtype, desc = _pointer_info(obj)
    if dtype is None:
        raise TypeError(f"cannot infer the element type of {type(obj).__name__} "
                        f"(dtype {desc}); supported: {' '.join(_DTYPES)}")
    return "*" + dtype


def _bf16_bits(x: float) -> int:
    """Round a Python float to bfloat16 (round to nearest even) and return its 16 bits."""
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    if x != x:
        return 0x7FC0
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def _make_converter(name: str, t: ParamType):
    """A function turning one launch argument into what struct packs for it, or None
    when struct's own checks suffice (int and float scalars).  For pointers it is only
    called for non-int arguments; the launcher checks alignment inline.  Errors name
    the parameter."""
    if t.is_pointer:
        want = t.dtype

        def convert_pointer(v):
            if type(v) is DeviceArray:  # the common case without a framework: skip the dispatch
                addr, dtype, desc = v.ptr, v._dtype_str, v._dtype_desc
            else:
                try:
                    addr, dtype, desc = _pointer_info(v)
                except TypeError as e:
                    raise TypeError(f"parameter '{name}' ({t}): {e}") from None
            if dtype != want and desc is not None:
                raise TypeError(f"parameter '{name}' expects *{want}, got a {desc} array")
            return addr
        return convert_pointer
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
            x = float(v)
            if math.isfinite(x) and abs(x) >= 3.3961e38:  # would round to inf
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


def _misaligned(name: str, t: ParamType, addr: int) -> ValueError:
    return ValueError(f"parameter '{name}' is declared {t} but address {addr:#x} is not "
                      f"{t.align}-byte aligned")


def _explain_pack_error(params, args) -> Exception:
    """Find which argument struct refused and say why, naming the parameter."""
    for (name, t), v in zip(params, args):
        code = "Q" if t.is_pointer else _DTYPES[t.dtype][0]
        try:
            struct.pack("<" + code, v)
        except (struct.error, OverflowError, TypeError):
            if t.is_pointer:
                return ValueError(f"parameter '{name}' ({t}): address {v!r} is not a 64-bit address")
            if t.dtype in _FLOAT_DTYPES and isinstance(v, (int, float)) and not isinstance(v, bool):
                return OverflowError(f"parameter '{name}' ({t}): {v!r} is out of range for {t.dtype}")
            if t.dtype in _INT_DTYPES and isinstance(v, int):
                return OverflowError(f"parameter '{name}' ({t}): {v} is out of range for {t.dtype}")
            return TypeError(f"parameter '{name}' expects {t}, got {type(v).__name__} {v!r}")
    return TypeError("invalid kernel arguments")


_MAX_GRID = (2**31 - 1, 65535, 65535)


def _grid3(grid):
    """Normalise a launch grid to three positive ints, or raise naming the grid."""
    t = type(grid)
    if t is int:
        if 0 < grid <= 2147483647:
            return grid, 1, 1
    elif t is tuple or t is list:
        n = len(grid)
        if n == 3:
            x, y, z = grid
        elif n == 1:
            x, y, z = grid[0], 1, 1
        elif n == 2:
            x, y, z = grid[0], grid[1], 1
        else:
            raise ValueError(f"grid must have 1 to 3 dimensions, got {grid!r}")
        if type(x) is int and type(y) is int and type(z) is int and \
                0 < x <= 2147483647 and 0 < y <= 65535 and 0 < z <= 65535:
            return x, y, z
    else:
        raise TypeError(f"grid must be an int or a tuple of 1 to 3 ints, got {type(grid).__name__} {grid!r}")
    # Slow path: numpy integers are fine, everything else gets a precise message.
    dims = [grid] if t is int else list(grid)
    out = []
    for i, g in enumerate(dims):
        if isinstance(g, bool) or not hasattr(g, "__index__"):
            raise TypeError(f"grid dimension {i} must be an int, got {type(g).__name__} {g!r} (grid {grid!r})")
        g = g.__index__()
        if not 0 < g <= _MAX_GRID[i]:
            raise ValueError(f"grid dimension {i} must be in 1..{_MAX_GRID[i]}, got {g} (grid {grid!r})")
        out.append(g)
    return tuple(out + [1] * (3 - len(out)))


def _stream_handle(stream):
    """The raw CUstream handle (int) of a stream-like object; None means the default stream."""
    if stream is None or type(stream) is int:
        return stream
    if hasattr(stream, "__cuda_stream__"):       # CUDA stream protocol: (version, handle)
        return int(stream.__cuda_stream__()[1])
    for attr in ("cuda_stream", "ptr"):          # torch.cuda.Stream, cupy.cuda.Stream
        h = getattr(stream, attr, None)
        if isinstance(h, int):
            return h
    if _cuda is not None and isinstance(stream, _cuda.CUstream):
        return int(stream)
    if isinstance(stream, bool) or not hasattr(stream, "__int__"):
        raise TypeError(f"stream must be None, an int handle, a CUstream or an object with "
                        f".cuda_stream / .ptr / __cuda_stream__(), got {type(stream).__name__}")
    return int(stream)


# --------------------------------------------------------------------------- images

_IMAGE_KEY_RE = re.compile(r"^sm_(\d+)([af]?)$")


def _arch_of(key: str):
    """``"sm_90"`` -> ``(9, 0, "")``; ``"sm_100a"`` -> ``(10, 0, "a")``; None for other keys."""
    m = _IMAGE_KEY_RE.match(key)
    return (int(m.group(1)[:-1]), int(m.group(1)[-1]), m.group(2)) if m and len(m.group(1)) >= 2 else None


def _ptx_info(ptx: bytes):
    """``((isa major, isa minor), (target major, target minor, suffix))`` from PTX text."""
    v = re.search(rb"^\s*\.version\s+(\d+)\.(\d+)", ptx, re.M)
    t = re.search(rb"^\s*\.target\s+(sm_\d+[af]?)", ptx, re.M)
    return ((int(v.group(1)), int(v.group(2))) if v else None,
            _arch_of(t.group(1).decode()) if t else None)


def _ptx_needs_driver(isa):
    """Oldest CUDA driver version that can JIT a PTX ISA version (from NVIDIA's PTX ISA
    release notes: 7.x shipped with CUDA 11.x, 8.0-8.5 with 12.0-12.5/12.6, 8.6-8.8 with
    12.7-12.9, 9.x with 13.x)."""
    major, minor = isa
    if major >= 9:
        return (major + 4, minor)
    if major == 8:
        return (12, minor if minor <= 5 else minor + 1)
    if major == 7:
        return (11, minor)
    return (10, 0)


# --------------------------------------------------------------------------- Kernel

# The launch hot path is generated per kernel (as Triton does), because at ~5 us per
# driver launch every Python-level call and loop iteration shows: arguments are unpacked
# into locals, int addresses skip all conversion, and one Struct.pack_into writes every
# argument.  Kernel.launcher_source shows the result.
_LAUNCHER = """\
def make(self, tls, pack_into, params, {conv_params}):
    def launch(grid, args, stream=None):
        try:
            [{names}] = args
        except (TypeError, ValueError):
            raise self._count_error(args) from None
{conversions}
        if type(grid) is int and 0 < grid <= 2147483647:
            gx = grid; gy = gz = 1
        else:
            gx, gy, gz = _grid3(grid)
        if stream is not None:
            stream = _stream_handle(stream)
        try:
            slot = tls.slot
        except AttributeError:
            slot = tls.slot = self._new_slot()
        try:
            pack_into(slot[3], 0, {names})
        except (struct.error, OverflowError, TypeError):
            raise _explain_pack_error(params, [{names}]) from None
        err, ctx = _get_ctx()
        if err:
            raise _cuda_error(err, "cuCtxGetCurrent")
        fn = slot[1] if ctx == slot[0] else self._function(ctx, slot)
        err, = _launch_kernel(fn, gx, gy, gz, {block}, 1, 1, {shared}, stream, slot[4], 0)
        if err:
            raise _cuda_error(err, f"cuLaunchKernel({name!r}, grid=({{gx}}, {{gy}}, {{gz}}))")
    return launch
"""


class Kernel:
    """One compiled kernel specialization, launchable on any device it has an image for.

    ``params`` lists the runtime parameters in order as ``(name, type string)``;
    ``images`` maps ``"sm_XY"`` to cubin and ``"ptx"`` to PTX, each as bytes or as a
    file path (read lazily); ``sha256`` optionally maps the same keys to the expected
    hex digest, checked whenever an image is read.  The constructor does no GPU work.
    """

    def __init__(self, name: str, params, num_warps: int, shared: int, images: dict, sha256: dict | None = None):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"kernel symbol must be a C identifier, got {name!r}")
        self.name = name
        self.params = [(str(n), parse_type(t) if isinstance(t, str) else t) for n, t in params]
        if isinstance(num_warps, bool) or not isinstance(num_warps, int) or not 1 <= num_warps <= 32:
            raise ValueError(f"kernel {name}: num_warps must be an int in 1..32, got {num_warps!r}")
        if isinstance(shared, bool) or not isinstance(shared, int) or shared < 0:
            raise ValueError(f"kernel {name}: shared must be a non-negative int, got {shared!r}")
        self.num_warps, self.shared = num_warps, shared
        if not images:
            raise ValueError(f"kernel {name}: no images given")
        for key in images:
            if key != "ptx" and _arch_of(key) is None:
                raise ValueError(f"kernel {name}: image key {key!r} is neither 'sm_XY' nor 'ptx'")
        self.images = dict(images)
        self.sha256 = {k: v.lower() for k, v in (sha256 or {}).items()}
        unknown = set(self.sha256) - set(self.images)
        if unknown:
            raise ValueError(f"kernel {name}: sha256 given for unknown images {sorted(unknown)}")

        # Precomputed launch state.  Every argument gets an 8-byte slot (no parameter type
        # is wider and the driver copies each from its own address), so one Struct packs all.
        self._nargs = len(self.params)
        codes = ["Q" if t.is_pointer else _DTYPES[t.dtype][0] for _, t in self.params]
        fmt = "<" + "".join(c + f"{8 - struct.calcsize(c)}x" if struct.calcsize(c) < 8 else c for c in codes)
        self._tls = threading.local()   # per thread: [context, function, argv, arg buffer, void** address]
        self._loaded = {}               # int(context) -> (CUmodule, CUfunction, image key)
        self._bytes = {}                # image key -> verified bytes
        self.launch = self._make_launcher(struct.Struct(fmt).pack_into)

    def _make_launcher(self, pack_into):
        names = [f"a{i}" for i in range(self._nargs)]
        lines, converters = [], {}
        for i, (pname, t) in enumerate(self.params):
            conv = _make_converter(pname, t)
            if conv is not None:
                converters[f"c{i}"] = conv
            if t.is_pointer:
                lines.append(f"        if type(a{i}) is not int: a{i} = c{i}(a{i})")
                if t.align > 1:
                    lines.append(f"        if a{i} & {t.align - 1}: raise _misaligned(*params[{i}], a{i})")
            elif conv is not None:
                lines.append(f"        a{i} = c{i}(a{i})")
        self.launcher_source = _LAUNCHER.format(
            conv_params=", ".join(["_"] + list(converters)), names=", ".join(names),
            conversions="\n".join(lines) or "        pass", block=32 * self.num_warps,
            shared=self.shared, name=self.name)
        namespace = {}
        exec(compile(self.launcher_source, f"<launcher for {self.name}>", "exec"), globals(), namespace)
        return namespace["make"](self, self._tls, pack_into, self.params, None, **converters)

    def __repr__(self):
        sig = ", ".join(f"{n}: {t}" for n, t in self.params)
        return f"<Kernel {self.name}({sig}) num_warps={self.num_warps} shared={self.shared} images={sorted(self.images)}>"

    # -- images ---------------------------------------------------------------
    def read_image(self, key: str) -> bytes:
        """The bytes of one image, read from its file if needed and checked against its
        sha256 (KernelLoadError naming the file on mismatch).  Needs no GPU."""
        data = self._bytes.get(key)
        if data is not None:
            return data
        src = self.images[key]
        where = f"image {key!r} of kernel {self.name}"
        if isinstance(src, (bytes, bytearray, memoryview)):
            data = bytes(src)
        elif isinstance(src, str) and key == "ptx" and ("\n" in src or ".version" in src):
            data = src.encode()   # PTX given as text
        elif isinstance(src, (str, os.PathLike)):
            where = f"{os.fspath(src)} ({where})"
            try:
                with open(src, "rb") as f:
                    data = f.read()
            except OSError as e:
                raise KernelLoadError(f"cannot read {where}: {e.strerror or e}") from e
        else:
            raise KernelLoadError(f"{where}: expected bytes or a file path, got {type(src).__name__}")
        want = self.sha256.get(key)
        if want is not None:
            got = hashlib.sha256(data).hexdigest()
            if got != want:
                raise KernelLoadError(f"sha256 mismatch for {where}: expected {want}, got {got}; "
                                      "the file is corrupt or was changed after the build")
        self._bytes[key] = data
        return data

    def verify(self) -> None:
        """Read every image and check its sha256 (no GPU needed)."""
        for key in self.images:
            self.read_image(key)

    def select_image(self, cc: tuple[int, int], driver_version: tuple[int, int]) -> str:
        """The image key to load on a device of compute capability ``cc`` under a driver
        supporting CUDA ``driver_version``: the exact cubin, else JIT-able PTX, else a
        cubin of the same major and a lower minor version (binary compatible), else
        KernelLoadError listing what exists."""
        arches = {k: _arch_of(k) for k in self.images if k != "ptx"}
        for key, (major, minor, _) in arches.items():
            if (major, minor) == tuple(cc):
                return key
        why = []
        if "ptx" in self.images:
            isa, target = _ptx_info(self.read_image("ptx"))
            need = _ptx_needs_driver(isa) if isa else None
            if isa is None:
                why.append("ptx (no .version line)")
            elif need > tuple(driver_version):
                why.append(f"ptx (PTX ISA {isa[0]}.{isa[1]} needs a CUDA {need[0]}.{need[1]}+ driver)")
            elif target and (target[:2] > tuple(cc) or (target[2] and target[:2] != tuple(cc))):
                why.append(f"ptx (targets sm_{target[0]}{target[1]}{target[2]})")
            else:
                return "ptx"
        compatible = [k for k, (ma, mi, sfx) in arches.items() if ma == cc[0] and mi < cc[1] and not sfx]
        if compatible:
            return max(compatible, key=lambda k: arches[k][1])
        why[:0] = [f"{k} (cubin)" for k in sorted(arches)]
        raise KernelLoadError(
            f"kernel {self.name}: no image can run on this device (compute capability "
            f"{cc[0]}.{cc[1]} = sm_{cc[0]}{cc[1]}, CUDA driver {driver_version[0]}.{driver_version[1]}); "
            f"images built: {', '.join(why)}")

    def _load(self, device: int):
        """Load the best image for ``device`` into the current context (caller holds _LOCK)."""
        major, minor, optin = _device(device)
        key = self.select_image((major, minor), _cuda_driver_version())
        data = self.read_image(key)
        if key == "ptx" and not data.endswith(b"\0"):
            data += b"\0"   # cuModuleLoadData reads PTX as a NUL-terminated string
        module = _check(_cuda.cuModuleLoadData(data), f"cuModuleLoadData({self.name}, {key})")
        fn = _check(_cuda.cuModuleGetFunction(module, self.name.encode()),
                    f"cuModuleGetFunction({self.name}, {key})")
        fattr = _cuda.CUfunction_attribute
        max_threads = _check(_cuda.cuFuncGetAttribute(fattr.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn),
                             "cuFuncGetAttribute(MAX_THREADS_PER_BLOCK)")
        if 32 * self.num_warps > max_threads:
            raise KernelLoadError(f"kernel {self.name} ({key}): num_warps={self.num_warps} needs "
                                  f"{32 * self.num_warps} threads per block but the compiled kernel allows at most "
                                  f"{max_threads} (too many registers per thread)")
        if self.shared > 48 * 1024:
            # Above 48 KiB of dynamic shared memory a kernel must opt in explicitly.
            static = _check(_cuda.cuFuncGetAttribute(fattr.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn),
                            "cuFuncGetAttribute(SHARED_SIZE_BYTES)")
            if self.shared + static > optin:
                raise KernelLoadError(
                    f"kernel {self.name}: needs {self.shared} bytes of dynamic shared memory "
                    f"(+{static} static) per block, but device {device} (sm_{major}{minor}) "
                    f"provides at most {optin}")
            _check(_cuda.cuFuncSetAttribute(fn, fattr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                            self.shared),
                   f"cuFuncSetAttribute({self.name}, MAX_DYNAMIC_SHARED_SIZE_BYTES={self.shared})")
        return module, fn, key

    def _function(self, ctx, slot):
        """Slow path: the CUfunction for the calling thread's context, loading on first use."""
        with _LOCK:
            if int(ctx) == 0:
                ctx, device = _current_context()
            else:
                device = int(_check(_cuda.cuCtxGetDevice(), "cuCtxGetDevice"))
            entry = self._loaded.get(int(ctx))
            if entry is None:
                entry = self._loaded[int(ctx)] = self._load(device)
        slot[0], slot[1] = ctx, entry[1]
        return entry[1]

    @property
    def loaded_images(self) -> list[str]:
        """Keys of the images loaded so far, one per context (e.g. ``["sm_90"]``)."""
        return [key for _, _, key in self._loaded.values()]

    def _new_slot(self):
        buf = ctypes.create_string_buffer(8 * max(1, self._nargs))
        base = ctypes.addressof(buf)
        argv = (ctypes.c_void_p * max(1, self._nargs))(*[base + 8 * i for i in range(self._nargs)])
        # [context, function, keep-alive for buf and argv, buf, void** address]
        return [None, None, argv, buf, ctypes.addressof(argv)]

    # -- launching ------------------------------------------------------------
    def _count_error(self, args) -> TypeError:
        names = ", ".join(n for n, _ in self.params)
        if not hasattr(args, "__len__"):
            return TypeError(f"{self.name}: args must be a sequence of the runtime arguments "
                             f"({names}), got {type(args).__name__}")
        return TypeError(f"{self.name}() takes {self._nargs} runtime arguments ({names}) but "
                         f"{len(args)} were given")

    def launch(self, grid, args, stream=None) -> None:
        """Launch on ``grid`` (int or 1-3 ints) with ``args`` in parameter order, on
        ``stream`` (None = default stream, an int handle, a CUstream, or a torch/CuPy/
        ``__cuda_stream__`` stream).  All argument checks run before any driver call.

        (The constructor replaces this method with a launcher generated for the
        kernel's signature; see ``launcher_source``.  This body only documents it.)
        """
        raise NotImplementedError  # pragma: no cover

    def __getitem__(self, grid):
        """Triton-style ``kernel[grid](*args, stream=None)``."""
        def run(*args, stream=None):
            self.launch(grid, args, stream)
        return run


# --------------------------------------------------------------------------- KernelFamily

class KernelFamily:
    """All built specializations of one kernel; launched as
    ``fam[grid](*args, CONSTEXPR=value, ..., num_warps=None, stream=None)``.

    The constexpr values (and ``num_warps`` when several were built for them) select
    the specialization.  ``grid`` may be a callable taking ``meta`` (a dict of the
    runtime arguments by name, the constexprs and ``num_warps``).
    """

    def __init__(self, name: str, params, constexpr_names, specializations):
        self.name = name
        self.params = [(str(n), str(t)) for n, t in params]
        for _, t in self.params:
            parse_type(t)
        self.constexpr_names = list(constexpr_names)
        self._specs = []
        self._index = {}   # tuple of constexpr values -> {num_warps: spec}
        for spec in specializations:
            cx = dict(spec.get("constexprs", {}))
            if set(cx) != set(self.constexpr_names):
                raise ValueError(f"{name}: specialization {spec.get('id')!r} has constexprs {sorted(cx)}, "
                                 f"expected {sorted(self.constexpr_names)}")
            key = tuple(cx[n] for n in self.constexpr_names)
            by_warps = self._index.setdefault(key, {})
            if spec["num_warps"] in by_warps:
                raise ValueError(f"{name}: duplicate specialization {self._describe(cx, spec['num_warps'])}")
            by_warps[spec["num_warps"]] = spec
            self._specs.append(spec)
        self._kernels = {}  # id(spec) -> Kernel, created on first use
        self._selected = {}  # (constexpr values, num_warps) -> spec, filled by launch()

    @property
    def specializations(self) -> list[dict]:
        """What was built: ``[{"id", "constexprs", "num_warps", "shared"}, ...]``."""
        return [{"id": s.get("id"), "constexprs": dict(s.get("constexprs", {})),
                 "num_warps": s["num_warps"], "shared": s.get("shared", 0)} for s in self._specs]

    def __repr__(self):
        return f"<KernelFamily {self.name}: {len(self._specs)} specializations>"

    @staticmethod
    def _describe(constexprs: dict, num_warps=None) -> str:
        parts = [f"{k}={v!r}" for k, v in constexprs.items()]
        if num_warps is not None:
            parts.append(f"num_warps={num_warps}")
        return ", ".join(parts)

    def _built(self) -> str:
        return "; ".join(self._describe(s.get("constexprs", {}), s["num_warps"]) for s in self._specs) or "nothing"

    def select(self, constexprs: dict, num_warps: int | None = None) -> dict:
        """The specialization dict for these constexpr values (and num_warps)."""
        missing = [n for n in self.constexpr_names if n not in constexprs]
        unknown = [n for n in constexprs if n not in self.constexpr_names]
        if missing or unknown:
            msg = []
            if missing:
                msg.append(f"missing constexpr argument(s) {', '.join(missing)}")
            if unknown:
                msg.append(f"unexpected keyword argument(s) {', '.join(unknown)}")
            raise TypeError(f"{self.name}: {'; '.join(msg)} (constexprs: {', '.join(self.constexpr_names) or 'none'})")
        key = tuple(constexprs[n] for n in self.constexpr_names)
        try:
            by_warps = self._index.get(key)
        except TypeError:  # unhashable value
            by_warps = None
        wanted = self._describe(constexprs, num_warps)
        if by_warps:
            if num_warps is None and len(by_warps) == 1:
                return next(iter(by_warps.values()))
            if num_warps in by_warps:
                return by_warps[num_warps]
            if num_warps is None:
                raise SpecializationNotFoundError(
                    f"{self.name}: several specializations were built for {wanted} "
                    f"(num_warps {sorted(by_warps)}); pass num_warps=")
        raise SpecializationNotFoundError(f"{self.name}: no specialization was built for {wanted}; "
                                          f"built: {self._built()}")

    def kernel(self, spec: dict) -> Kernel:
        """The (cached) Kernel object of one specialization dict."""
        k = self._kernels.get(id(spec))
        if k is None:
            with _LOCK:
                k = self._kernels.get(id(spec))
                if k is None:
                    k = self._kernels[id(spec)] = Kernel(
                        spec.get("symbol", self.name), self.params, spec["num_warps"],
                        spec.get("shared", 0), spec["images"], spec.get("sha256"))
        return k

    def verify(self) -> None:
        """Check every artifact of every specialization against its sha256 (no GPU)."""
        for spec in self._specs:
            self.kernel(spec).verify()

    def launch(self, grid, args, constexprs: dict, num_warps: int | None = None, stream=None) -> None:
        """Select the specialization and launch it (see the class docstring)."""
        try:  # fast path: this exact selection was made before
            key = (tuple(map(constexprs.__getitem__, self.constexpr_names)), num_warps)
            spec = self._selected[key] if len(constexprs) == len(self.constexpr_names) else None
        except (KeyError, TypeError):
            spec = None
        if spec is None:
            spec = self.select(constexprs, num_warps)
            try:
                self._selected[key] = spec
            except TypeError:  # unhashable constexpr value
                pass
        if callable(grid):
            meta = dict(zip((n for n, _ in self.params), args))
            meta.update(constexprs)
            meta["num_warps"] = spec["num_warps"]
            grid = grid(meta)
        self.kernel(spec).launch(grid, args, stream)

    def __getitem__(self, grid):
        def run(*args, stream=None, num_warps=None, **constexprs):
            self.launch(grid, args, constexprs, num_warps, stream)
        return run


# --------------------------------------------------------------------------- DeviceArray

def _numpy():
    try:
        import numpy
    except ImportError as e:
        raise ImportError("DeviceArray needs numpy (pip install numpy)") from e
    return numpy


class DeviceArray:
    """A minimal contiguous device buffer (cuMemAlloc), for apps with only numpy and
    cuda-python.  Usable wherever a pointer argument is expected, and exposes
    ``__cuda_array_interface__`` for other libraries."""

    def __init__(self, shape, dtype="float32", *, _base=None, _ptr=None):
        np = _numpy()
        dt = _DTYPES.get(dtype, (None, dtype))[1] if isinstance(dtype, str) else dtype
        self.dtype = np.dtype(dt)
        self.shape = (int(shape),) if isinstance(shape, int) or hasattr(shape, "__index__") else tuple(int(s) for s in shape)
        self.size = math.prod(self.shape)
        self.nbytes = self.size * self.dtype.itemsize
        self._dtype_str = _dtype_from_name(self.dtype)
        self._dtype_desc = str(self.dtype)   # cached: numpy's dtype.name is slow
        self._base, self._ctx = _base, None   # a view keeps its base (the owner) alive
        if _ptr is not None:
            self.ptr = _ptr
        elif self.nbytes == 0:
            self.ptr = 0  # cuMemAlloc(0) is an error; an empty array needs no memory
        else:
            self._ctx = _current_context()[0]
            self.ptr = int(_check(_cuda.cuMemAlloc(self.nbytes), f"cuMemAlloc({self.nbytes})"))

    @classmethod
    def from_numpy(cls, arr) -> "DeviceArray":
        """A new device array holding a copy of a numpy array."""
        arr = _numpy().asarray(arr)
        out = cls(arr.shape, arr.dtype)
        out.copy_from_host(arr)
        return out

    def copy_from_host(self, arr) -> None:
        """Copy a host array of the same number of bytes into this buffer (synchronous)."""
        arr = _numpy().ascontiguousarray(arr, dtype=self.dtype)  # converts like numpy assignment
        if arr.size != self.size:
            raise ValueError(f"copy_from_host: host array has {arr.size} elements, device array {self.size}")
        if self.nbytes:
            _current_context()
            _check(_cuda.cuMemcpyHtoD(self.ptr, arr.ctypes.data, self.nbytes), "cuMemcpyHtoD")

    def copy_to_host(self, out=None):
        """Copy into ``out`` (or a new numpy array) and return it.  Synchronous, but work on
        non-blocking streams must be synchronized by the caller first."""
        np = _numpy()
        if out is None:
            out = np.empty(self.shape, self.dtype)
        if not out.flags.c_contiguous or out.nbytes != self.nbytes:
            raise ValueError(f"copy_to_host: out must be C-contiguous with {self.nbytes} bytes")
        if self.nbytes:
            _current_context()
            _check(_cuda.cuMemcpyDtoH(out.ctypes.data, self.ptr, self.nbytes), "cuMemcpyDtoH")
        return out

    to_numpy = copy_to_host

    def data_ptr(self) -> int:
        return self.ptr

    def view_offset(self, nbytes: int) -> "DeviceArray":
        """A 1-D view starting ``nbytes`` into this buffer (any offset, e.g. to build a
        misaligned pointer in tests); it keeps this array alive."""
        if not 0 <= nbytes <= self.nbytes:
            raise ValueError(f"offset {nbytes} outside a {self.nbytes}-byte array")
        return DeviceArray(((self.nbytes - nbytes) // self.dtype.itemsize,), self.dtype,
                           _base=self._base or self, _ptr=self.ptr + nbytes)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "strides": None, "version": 3}

    def __len__(self):
        return self.shape[0] if self.shape else 0

    def __repr__(self):
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, ptr={self.ptr:#x})"

    def free(self) -> None:
        """Release the memory now (idempotent; views only drop their reference)."""
        ptr, self.ptr = getattr(self, "ptr", 0), 0
        if self._base is not None or not ptr or _cuda is None:
            self._base = None
            return
        # cuMemFree needs the owning context current; a finalizer may run on any thread.
        cur = _check(_cuda.cuCtxGetCurrent(), "cuCtxGetCurrent")
        pushed = int(cur) != int(self._ctx)
        if pushed:
            _check(_cuda.cuCtxPushCurrent(self._ctx), "cuCtxPushCurrent")
        try:
            _check(_cuda.cuMemFree(ptr), "cuMemFree")
        finally:
            if pushed:
                _cuda.cuCtxPopCurrent()

    def __del__(self):
        try:
            self.free()
        except Exception:  # interpreter shutdown or a dead context: nothing useful to do
            pass

"""NVRTC: CUDA C++ → PTX and cubin, in-process, with no GPU and no driver needed.

Every compile has a time limit (``MYTRITON_NVRTC_TIMEOUT`` seconds, default ``TIME_LIMIT_S``):
NVRTC runs in a worker thread (it releases the GIL) and the caller waits at most that long. A
compile that runs over is reported as an ``NVRTCError`` at once and cancelled through NVRTC's flow
callback; NVRTC polls that only between its phases (on a huge kernel, seconds to tens of seconds
apart), so the abandoned work may keep one core busy until then. The worker thread destroys the
program when NVRTC returns. The thread costs well under a millisecond per compile.

Exiting with a compile abandoned: the flow callback is native code (libc's ``strlen`` on a flag
byte), so NVRTC never needs the interpreter -- a Python callback polled while the interpreter shuts
down would end the thread with ``pthread_exit`` through NVRTC's C++ frames. At exit the process
waits up to ``EXIT_WAIT_S`` seconds for abandoned compiles to stop (``settle``); ``mytriton-build``
ends with ``os._exit`` if one is still running after that.
"""
from __future__ import annotations

import atexit
import ctypes
import functools
import os
import re
import sys
import threading
import time
from dataclasses import dataclass

from ...errors import NVRTCError

_TARGET = re.compile(r"^sm_(\d+)([af]?)$")


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:  # pragma: no cover - depends on the install
        raise NVRTCError(f"NVRTC is not available: {e} (pip install 'cuda-toolkit[nvrtc]==13.0.*')") from None
    return nvrtc


@functools.cache
def nvrtc_version() -> str:
    nvrtc = _nvrtc()
    err, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


def check_target(target: str) -> tuple[int, str]:
    m = _TARGET.match(target)
    if not m:
        raise ValueError(f"unknown target {target!r} (expected sm_XY such as sm_80 or sm_90)")
    return int(m.group(1)), m.group(2)


_LOG_LINE = re.compile(r"\((\d+)\): (?:error|catastrophic error)")
_ORIGIN = re.compile(r"^\s*// (\S+:\d+): (.*)$")


def _origins(log: str, source: str) -> list[str]:
    """The kernel source lines that the generated code NVRTC complains about came from (the code
    generator writes a ``// file.py:LINE: source`` comment before each line's code)."""
    lines = source.splitlines()
    out = []
    for m in _LOG_LINE.finditer(log):
        for i in range(min(int(m.group(1)), len(lines)) - 1, -1, -1):
            if (origin := _ORIGIN.match(lines[i])):
                text = f"{origin.group(1)}: {origin.group(2).strip()}"
                if text not in out:
                    out.append(text)
                break
    return out


def _check(result, what: str, log: str = "", source_name: str = "", source: str = ""):
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        nvrtc = _nvrtc()
        _, msg = nvrtc.nvrtcGetErrorString(err)
        text = f"NVRTC {what} failed for {source_name}: {msg.decode() if isinstance(msg, bytes) else msg}"
        if log.strip():
            text += "\n" + log.strip()
        origins = _origins(log, source)
        if origins:
            text += "\n(generated from " + "; ".join(origins) + ")"
        raise NVRTCError(text)
    return result[1:] if isinstance(result, tuple) and len(result) > 1 else None


TIME_LIMIT_S = 120.0
EXIT_WAIT_S = 10.0          # at exit, how long to wait for abandoned compiles to stop
_FLOW_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


@functools.cache
def _native_flow_callback() -> int | None:
    """The address of libc's ``strlen``, NVRTC's flow callback: called as ``strlen(payload)`` on a
    2-byte flag buffer, it returns 0 (go on) until the flag byte is set, then 1 (cancel), without
    entering Python. None where there is no libc ``strlen``."""
    try:
        return ctypes.cast(ctypes.CDLL(None).strlen, ctypes.c_void_p).value
    except (OSError, AttributeError, TypeError):    # pragma: no cover - not Linux/macOS
        return None


_running_lock = threading.Lock()
_running: set[threading.Event] = set()  # abandoned compiles still inside NVRTC: set when they stop


def settle(timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for abandoned compiles still inside NVRTC (told to cancel) to
    return; True when none is left."""
    deadline = time.monotonic() + timeout
    with _running_lock:
        pending = list(_running)
    for finished in pending:
        finished.wait(max(0.0, deadline - time.monotonic()))
    with _running_lock:
        return not _running


atexit.register(lambda: settle(EXIT_WAIT_S))


def time_limit() -> float:
    """Seconds one NVRTC compile may take: ``MYTRITON_NVRTC_TIMEOUT`` if set, else ``TIME_LIMIT_S``."""
    text = os.environ.get("MYTRITON_NVRTC_TIMEOUT", "").strip()
    if not text:
        return TIME_LIMIT_S
    try:
        limit = float(text)
    except ValueError:
        raise NVRTCError(f"MYTRITON_NVRTC_TIMEOUT must be a number of seconds, got {text!r}") from None
    if not limit > 0:
        raise NVRTCError(f"MYTRITON_NVRTC_TIMEOUT must be positive, got {text!r}")
    return limit


# NVRTC installs SIGINT and SIGTERM handlers of its own while it compiles; a Ctrl-C or `kill` then
# ends the process at once with status 4 -- no message, no cleanup, and the build's staging folder
# and locks left behind. While NVRTC runs in its worker thread, the caller puts the process's own
# handlers back every _SIGNAL_POLL_S seconds (NVRTC restores the ones it saved when it is done), so
# the signal reaches Python, which abandons the compile as it does at the time limit.
_SIGNAL_POLL_S = 0.002


class _Sigaction(ctypes.Structure):
    """Linux's ``struct sigaction`` (glibc, 64-bit): handler, mask, flags, restorer."""
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_ulong * 16), ("flags", ctypes.c_int),
                ("restorer", ctypes.c_void_p)]


class _SignalHandlers:
    """The SIGINT / SIGTERM dispositions to keep while NVRTC compiles (a no-op off 64-bit Linux)."""
    SIGNALS = (2, 15)

    def __init__(self, libc, saved):
        self.libc, self.saved = libc, saved

    @classmethod
    def save(cls) -> "_SignalHandlers":
        libc = _libc() if sys.platform.startswith("linux") and ctypes.sizeof(ctypes.c_void_p) == 8 else None
        saved = {}
        for signum in cls.SIGNALS if libc is not None else ():
            action = _Sigaction()
            if libc.sigaction(signum, None, ctypes.byref(action)) == 0:
                saved[signum] = action
        return cls(libc, saved)

    def keep(self) -> None:
        for signum, action in self.saved.items():
            now = _Sigaction()
            if self.libc.sigaction(signum, None, ctypes.byref(now)) == 0 and now.handler != action.handler:
                self.libc.sigaction(signum, ctypes.byref(action), None)


_compiling_lock = threading.Lock()
_compiling = 0                         # compiles inside NVRTC now
_process_handlers: _SignalHandlers | None = None   # saved when the first of them started


def _enter_nvrtc() -> _SignalHandlers:
    """The process's own handlers, saved when no NVRTC compile was running (a compile that starts
    while another one's NVRTC handlers are in place must not take those for the process's)."""
    global _compiling, _process_handlers
    with _compiling_lock:
        if _compiling == 0 or _process_handlers is None:
            _process_handlers = _SignalHandlers.save()
        _compiling += 1
        return _process_handlers


def _leave_nvrtc() -> None:
    global _compiling
    with _compiling_lock:
        _compiling -= 1


@functools.cache
def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:     # pragma: no cover
        return None


class NVRTCTimeoutError(NVRTCError):
    """A compile ran over the time limit; its program now belongs to the worker thread."""


def _compile_bounded(nvrtc, prog, opts: list[bytes], source_name: str, arch_option: str):
    """``nvrtcCompileProgram`` with the time limit. Returns its result; on a timeout raises
    ``NVRTCTimeoutError`` and leaves ``prog`` to the worker thread, which destroys it once NVRTC returns."""
    limit = time_limit()
    lock = threading.Lock()
    done = threading.Event()
    abandoned = threading.Event()
    finished = threading.Event()            # the worker is out of NVRTC for good
    out: list = []
    flag = ctypes.create_string_buffer(2)   # NVRTC's flow callback reads it: flag[0] set cancels
    native = _native_flow_callback()
    callback = None if native else _FLOW_CALLBACK(lambda _payload, _reserved: 1 if abandoned.is_set() else 0)
    try:
        nvrtc.nvrtcSetFlowCallback(prog, native or ctypes.cast(callback, ctypes.c_void_p).value,
                                   ctypes.addressof(flag) if native else 0)
    except Exception:   # noqa: BLE001 - an NVRTC without flow callbacks: the time limit still holds
        pass

    def work(callback=callback, flag=flag):     # (holds the callback and its flag until NVRTC returns)
        try:
            out.append(nvrtc.nvrtcCompileProgram(prog, len(opts), opts))
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            out.append(e)
        with lock:
            done.set()
            orphaned = abandoned.is_set()
        try:
            if orphaned:
                nvrtc.nvrtcDestroyProgram(prog)
        finally:
            _leave_nvrtc()
            finished.set()
            with _running_lock:
                _running.discard(finished)

    handlers = _enter_nvrtc()
    threading.Thread(target=work, name=f"nvrtc {source_name}", daemon=True).start()
    try:
        deadline = time.monotonic() + limit
        while not done.wait(min(_SIGNAL_POLL_S, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                break
            handlers.keep()
    finally:
        with lock:
            if not done.is_set():
                flag[0] = b"\x01"
                abandoned.set()
                with _running_lock:
                    if not finished.is_set():
                        _running.add(finished)
    if abandoned.is_set():
        raise NVRTCTimeoutError(
            f"NVRTC did not finish compiling {source_name} ({arch_option}) within {limit:g} s: the kernel "
            f"is probably too large for one thread block (big blocks become per-thread register arrays that "
            f"NVRTC unrolls); use smaller blocks or more warps. MYTRITON_NVRTC_TIMEOUT sets the limit in "
            f"seconds (default {TIME_LIMIT_S:g})")
    result = out[0]
    if isinstance(result, BaseException):
        raise result
    return result


@functools.cache
def header_directory() -> str | None:
    """The folder of the CUDA runtime headers (cuda_fp16.h, cuda_bf16.h for fp16/bf16 kernels):
    pip's cuda-toolkit[cudart] ships them, cuda-pathfinder finds them (or a CUDA_HOME)."""
    try:
        from cuda.pathfinder import find_nvidia_header_directory
        return find_nvidia_header_directory("cudart")
    except Exception:   # noqa: BLE001 - no pathfinder or no headers: kernels without halves need none
        return None


def _include_options() -> tuple[bytes, ...]:
    """``--include-path`` of the CUDA runtime headers, where there are some."""
    found = header_directory()
    return (f"--include-path={found}".encode(),) if found else ()


def _compile(source: str, source_name: str, arch_option: str, lineinfo: bool, ptxas_options: tuple[str, ...] = ()):
    nvrtc = _nvrtc()
    (prog,) = _check(nvrtc.nvrtcCreateProgram(source.encode(), source_name.encode(), 0, [], []),
                     "program creation", source_name=source_name)
    try:
        opts = [arch_option.encode(), b"-std=c++17", b"--device-as-default-execution-space"]
        if "#include <cuda_" in source:                 # the fp16/bf16 headers
            opts += _include_options()
        if lineinfo:
            opts.append(b"--generate-line-info")
        for option in ptxas_options:
            opts += [b"-Xptxas", option.encode()]
        res = _compile_bounded(nvrtc, prog, opts, source_name, arch_option)
        (size,) = _check(nvrtc.nvrtcGetProgramLogSize(prog), "log size", source_name=source_name)
        buf = bytearray(size)         # mutable: NVRTC writes into it (never into a shared bytes object)
        nvrtc.nvrtcGetProgramLog(prog, buf)
        log = bytes(buf).rstrip(b"\x00 ").decode(errors="replace")
        _check(res, "compilation", log, source_name, source)
        return nvrtc, prog, log
    except NVRTCTimeoutError:
        raise
    except Exception:
        nvrtc.nvrtcDestroyProgram(prog)
        raise


@dataclass(frozen=True)
class Program:
    """What one NVRTC compile for a real architecture gives: the cubin and the PTX it was made
    from (the PTX of a compile for the virtual architecture, byte for byte: NVRTC lowers to PTX
    the same way and ptxas then runs on it), so that a build that ships both compiles once."""
    ptx: str
    cubin: bytes


def _fetch(nvrtc, prog, kind: str, source_name: str) -> bytes:
    get_size, get = (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX) if kind == "PTX" else \
        (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN)
    (size,) = _check(get_size(prog), f"{kind} size", source_name=source_name)
    buf = bytearray(size)
    _check(get(prog, buf), kind, source_name=source_name)
    return bytes(buf)


def compile_program(source: str, source_name: str, target: str, lineinfo: bool = True,
                    ptxas_options: tuple[str, ...] = ()) -> Program:
    """Compile ``source`` for the real architecture ``target`` (sm_XX[a|f]): its cubin and PTX;
    ``ptxas_options`` go to ptxas as they are (``--register-usage-level=0``)."""
    num, suffix = check_target(target)
    nvrtc, prog, _ = _compile(source, source_name, f"--gpu-architecture=sm_{num}{suffix}", lineinfo, ptxas_options)
    try:
        return Program(_fetch(nvrtc, prog, "PTX", source_name).rstrip(b"\x00").decode(),
                       _fetch(nvrtc, prog, "cubin", source_name))
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def compile_cubin(source: str, source_name: str, target: str, lineinfo: bool = True) -> bytes:
    return compile_program(source, source_name, target, lineinfo).cubin

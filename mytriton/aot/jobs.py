"""Compiling specializations, in this process or in a pool of worker processes.

NVRTC and the compiler are CPU-bound, so ``-j N`` uses processes. A job carries only picklable
data (where the kernel lives, its signature, constexprs and options) and what the build keyed: the
bytes of the kernel file it imported, which the worker imports in turn (never the file as it is
by then), the kernel's cache key, which the worker's import must reproduce, and the build's
toolchain, which the worker must run (checked again on the result's return, so a worker of
another mytriton that does not check is refused too). Workers ignore Ctrl-C: the build process handles it and stops them. Workers die with the
build process, even when it is killed outright (SIGKILL): otherwise they would live on and keep
its stdout open, and a caller reading it (``| tee``, ``communicate()``) would wait forever.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import ipaddress
import multiprocessing
import os
import re
import signal
import socket
import sys
import threading
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from . import kernel_source
from .toolchain import Toolchain


@dataclass(frozen=True)
class CompileJob:
    source: kernel_source.KernelSource
    signature: tuple[tuple[str, str], ...]
    constexprs: tuple[tuple[str, Any], ...]
    num_warps: int
    target: str
    emit_ptx: bool          # the lowest target's compile also ships its PTX and CUDA source
    num_stages: int | None = None
    # a build with sm_90a among its targets: descriptors made in the kernel get tensor-map
    # parameters in every target's kernel (frontend/launch_maps.py), so all take the same arguments
    hoist_tensor_maps: bool = False
    # What the build keyed, for the worker to prove it compiles the same: the bytes of the kernel
    # file the build imported (the worker imports exactly these), the kernel's cache key (None: it
    # has none) and the build's toolchain (None: no check, a compile of this process).
    source_text: bytes | None = field(default=None, compare=False, repr=False)
    kernel_key: str | None = None
    toolchain: Toolchain | None = None


@dataclass(frozen=True)
class Artifacts:
    """What one compile produced (or what a previous build had produced, when ``cached``)."""

    cubin: bytes
    ptx: str | None
    cu: str | None
    shared: int
    symbol: str
    seconds: float = 0.0
    cached: bool = False
    made_tensor_maps: tuple = ()     # the recipes of the tensor maps the launch encodes (dicts)
    toolchain: Toolchain | None = None   # what compiled it, as the compiling process saw itself
    explain: tuple = ()              # the compiler's story of its tensor-core decisions (metadata["explain"])


def launch_maps(built: dict[str, Artifacts]) -> dict:
    """``{"made_tensor_maps": recipes, "tma_images": image keys}`` for the Kernel of one
    specialization's compiles (target -> Artifacts, one of them with the PTX) whose kernel makes
    descriptors the launch encodes tensor maps of (frontend/launch_maps.py), else {}: the recipes
    of a target that copies through them (its box and swizzle), the images of such targets, and
    the PTX where it is one's. Every target's kernel must take the same maps."""
    from ..frontend.descriptors import uses_tma
    if not any(a.made_tensor_maps for a in built.values()):
        return {}
    names = {tuple(m["name"] for m in a.made_tensor_maps) for a in built.values()}
    if len(names) != 1:
        raise ValueError(f"the targets' kernels take different tensor maps ({sorted(names)})")
    tma = [t for t in built if uses_tma(t)]
    return {"made_tensor_maps": list(built[tma[0]].made_tensor_maps),
            "tma_images": tma + ["ptx"] * any(built[t].ptx for t in tma)}


@dataclass(frozen=True)
class Failure:
    message: str
    seconds: float = 0.0


def compile_job(job: CompileJob) -> Artifacts | Failure:
    """Run one compile; every exception becomes a :class:`Failure` with a user-facing message.
    A job that names the build's toolchain is refused by a process running another compiler, and
    one whose kernel no longer has the key the build computed (a file edited while the build ran)
    is refused too: a worker compiles exactly what was keyed, or nothing."""
    import mytriton

    start = time.perf_counter()
    loaded = load_keyed(job, start)
    if isinstance(loaded, Failure):
        return loaded
    fn, mine = loaded
    try:
        return replace(_compile(mytriton, fn, job, start), toolchain=mine)
    except Exception as exc:  # noqa: BLE001 - reported to the user, never re-raised
        return Failure(describe_error(exc), time.perf_counter() - start)


def load_keyed(job, start: float):
    """``(the job's @jit function, this process's toolchain or None)``, or a :class:`Failure` where
    this process runs another compiler than the job names or the kernel no longer has the key the
    build computed (a file edited while the build ran): a worker runs exactly what was keyed."""
    try:
        mine = None
        if job.toolchain is not None:
            from .package import templates_dir
            from . import toolchain
            mine = toolchain.current(templates_dir())
            if mine != job.toolchain:
                return Failure(foreign_compiler(mine, job.toolchain), time.perf_counter() - start)
        fn = kernel_source.load(job.source, job.source_text)
        if _kernel_key(fn) != job.kernel_key:
            return Failure(f"'{job.source.where}' (or what it reads) changed while the build ran: the compile "
                           "would not be of the source the build keyed; build again", time.perf_counter() - start)
        return fn, mine
    except Exception as exc:  # noqa: BLE001 - reported to the user, never re-raised
        return Failure(describe_error(exc), time.perf_counter() - start)


def _kernel_key(fn) -> str | None:
    from ..frontend.fingerprint import Uncacheable
    try:
        return fn.cache_key
    except Uncacheable:
        return None


def foreign_compiler(worker: Toolchain | None, build: Toolchain) -> str:
    """Why a compile from a process running another compiler than the build's is refused."""
    theirs = worker.describe() if isinstance(worker, Toolchain) else "a mytriton that does not say which compiler it is"
    return (f"the compile worker runs another compiler than this build, so its result is refused: the worker has "
            f"{theirs}; this build has {build.describe()} (install the same mytriton, NVRTC and CUDA headers on "
            "the workers, with the same MYTRITON_* switches)")


def checked(job: CompileJob, result) -> Artifacts | Failure:
    """A worker's result, refused unless it says it was compiled by the build's own toolchain (a
    worker of another mytriton may not check the job's toolchain itself)."""
    if job.toolchain is None or isinstance(result, Failure):
        return result if isinstance(result, (Artifacts, Failure)) else Failure(
            f"the compile worker returned a {type(result).__name__}, not a compile's result")
    if not isinstance(result, Artifacts) or getattr(result, "toolchain", None) != job.toolchain:
        return Failure(foreign_compiler(getattr(result, "toolchain", None), job.toolchain))
    return result


def _compile(mytriton, fn, job: CompileJob, start: float) -> Artifacts:
    ck = mytriton.compile(fn, signature=dict(job.signature), constexprs=dict(job.constexprs),
                          target=job.target, num_warps=job.num_warps, num_stages=job.num_stages,
                          hoist_tensor_maps=job.hoist_tensor_maps)
    cubin = bytes(ck.asm["cubin"])      # asm may be computed lazily: time it too
    ptx = ck.asm["ptx"] if job.emit_ptx else None
    cu = ck.asm["cu"] if job.emit_ptx else None
    return Artifacts(cubin=cubin, ptx=ptx, cu=cu, shared=int(ck.metadata.get("shared", 0)),
                     symbol=str(ck.metadata["name"]), seconds=time.perf_counter() - start,
                     made_tensor_maps=tuple(ck.metadata["made_tensor_maps"]),
                     explain=tuple(ck.metadata.get("explain", ())))


def describe_error(exc: BaseException) -> str:
    """The compiler's own errors verbatim; anything else as an internal error with its origin."""
    if isinstance(exc, kernel_source.KernelImportError):
        return str(exc)
    name = type(exc).__name__
    if name == "CompilationError" or "NVRTC" in name.upper():
        return str(exc)
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (in {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"internal compiler error: {name}: {exc}{where}"


class Workers:
    """The worker processes of one build, started at its first job that needs them and kept for
    its next :func:`run_jobs` (the analyses, then the compiles): a start costs seconds of spawning
    and imports. ``with Workers(n) as workers:`` shuts them down at the end."""

    def __init__(self, count: int):
        self.count, self.pool = count, None

    def executor(self) -> ProcessPoolExecutor:
        if self.pool is None:
            context = multiprocessing.get_context("spawn")   # no fork: the parent may hold threads or locks
            self.pool = ProcessPoolExecutor(max_workers=self.count, mp_context=context,
                                            initializer=_init_worker, initargs=(os.getpid(),))
        return self.pool

    def stop(self) -> None:
        """Kill the workers now (Ctrl-C, a pool whose worker died); the next job starts new ones."""
        if self.pool is not None:
            _stop(self.pool)
            self.pool = None

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None


def run_jobs(jobs: list[CompileJob], workers: "int | Workers",
             on_done: Callable[[int, Artifacts | Failure], None], executor: str = "local",
             task: Callable | None = None, check: Callable | None = None) -> list[Artifacts | Failure]:
    """Compile *jobs*; results come back in job order, *on_done* is called as each one finishes.
    *executor* is ``"local"`` (this process, or *workers* processes: a count, or a build's
    :class:`Workers`, kept running) or ``"dask://HOST:PORT"`` (the workers of a Dask distributed
    cluster, which must see the kernel files at the same paths). *task* runs one job (a
    module-level function, for the workers: ``compile_job``, or ``variants.analyze_job``) and
    *check* (default :func:`checked`) vets what it returned."""
    task, check = task or compile_job, check or checked
    results: list[Artifacts | Failure | None] = [None] * len(jobs)
    if executor != "local":
        address = dask_address(executor)        # (a bad address is an error even with nothing to compile)
        return _run_on_dask(address, jobs, on_done, results, task, check) if jobs else results
    kept = isinstance(workers, Workers)
    if (workers.count if kept else workers) <= 1 or len(jobs) <= 1:
        for i, job in enumerate(jobs):
            results[i] = check(job, task(job))
            on_done(i, results[i])
        return results
    own = None if kept else Workers(min(workers, len(jobs)))
    pool = (workers if kept else own).executor()
    broken = False
    try:
        futures = {pool.submit(task, job): i for i, job in enumerate(jobs)}
        for future in as_completed(futures):
            i = futures[future]
            try:
                results[i] = check(jobs[i], future.result())
            except BrokenProcessPool:
                results[i], broken = Failure("the compiler process died (crashed or was killed) while compiling"), True
            on_done(i, results[i])
    except BaseException:
        (workers if kept else own).stop()
        raise
    if own is not None:
        own.__exit__()
    elif broken:
        workers.stop()                          # (a broken pool takes no more jobs)
    return results


DASK_SCHEME = "dask://"
DASK_CONNECT_S = 10         # seconds to reach a scheduler, and for it to greet us
_HOST = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*",
                   re.ASCII)


def dask_address(executor: str) -> tuple[str, int]:
    """(host, port) of ``dask://HOST:PORT`` (a host name, an IPv4 address or ``[IPv6]``, and a port
    of ASCII digits in 1..65535); UsageError for anything else."""
    from .errors import UsageError
    wrong = UsageError(f"--executor: expected 'local' or 'dask://HOST:PORT' (a host name, an IPv4 address or "
                       f"[an IPv6 address], and a port from 1 to 65535), got {executor!r}")
    if not executor.startswith(DASK_SCHEME):
        raise wrong
    host, sep, port = executor[len(DASK_SCHEME):].rpartition(":")
    if not sep or not re.fullmatch(r"[0-9]{1,5}", port, re.ASCII) or not 1 <= int(port) <= 65535:
        raise wrong
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise wrong from None
        host = host[1:-1]
    elif not _HOST.fullmatch(host):
        raise wrong
    return host, int(port)


def _greets_like_dask(host: str, port: int, timeout: float | None = None) -> str | None:
    """None when a Dask scheduler answers at host:port, else why not. A scheduler speaks first: its
    greeting starts with a frame count (8 bytes, little-endian); a web server (the dashboard) waits
    for a request and says nothing, on which ``distributed.Client`` would wait for ever."""
    timeout = DASK_CONNECT_S if timeout is None else timeout
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            head = b""
            while len(head) < 8:
                chunk = sock.recv(8 - len(head))
                if not chunk:
                    return "it closed the connection without a word"
                head += chunk
    except socket.timeout:
        return f"something listens there but said nothing in {timeout:g} s (a web server, such as Dask's dashboard?)"
    except OSError as exc:
        return str(exc.strerror or exc)
    frames = int.from_bytes(head, "little")
    return None if 0 < frames < 1024 else "what answers there does not speak Dask's protocol"


def _run_on_dask(address: tuple[str, int], jobs: list[CompileJob], on_done, results: list,
                 task: Callable, check: Callable) -> list:
    """The jobs on a Dask cluster (``distributed.Client`` is an executor of futures); each result
    is the same as a local compile's, so the build's output is too."""
    from .errors import UsageError
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError:
        raise UsageError("--executor dask://...: Dask distributed is not installed "
                         "(pip install 'mytriton[distributed]')") from None
    host, port = address
    where = f"tcp://{f'[{host}]' if ':' in host else host}:{port}"
    if (problem := _greets_like_dask(host, port)) is not None:
        raise UsageError(f"--executor: cannot reach the Dask scheduler at {where}: {problem}")
    try:
        client = Client(where, timeout=DASK_CONNECT_S)
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"--executor: cannot reach the Dask scheduler at {where}: {exc}") from None
    try:
        futures = {client.submit(task, job, pure=False): i for i, job in enumerate(jobs)}
        for future in dask_completed(futures):
            i = futures[future]
            try:
                results[i] = check(jobs[i], future.result())
            except Exception as exc:  # noqa: BLE001 - a worker died or could not run the job
                results[i] = Failure(f"the Dask worker failed: {type(exc).__name__}: {exc}")
            on_done(i, results[i])
    finally:
        client.close()
    return results


def _init_worker(parent: int) -> None:
    """In each worker: ignore Ctrl-C (the build process handles it) and die with *parent*."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent(parent)


_PR_SET_PDEATHSIG = 1
WATCHDOG_PERIOD = 0.5       # seconds between two looks at the parent, where prctl is not there


def _die_with_parent(parent: int, use_prctl: bool = True) -> None:
    """Linux: the kernel sends SIGKILL when the parent dies (``prctl(PR_SET_PDEATHSIG)``).
    Elsewhere (and as a backstop): a daemon thread that exits the process once its parent
    process is no longer *parent* (a dead parent's children are adopted by another process)."""
    if use_prctl and sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:      # the parent died before prctl took effect
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass
    threading.Thread(target=_watch_parent, args=(parent,), name="mytriton-parent-watchdog", daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCHDOG_PERIOD)
    os._exit(1)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and kill the workers, so Ctrl-C returns at once."""
    # The executor has no public "terminate"; its worker table is the only handle on them
    # (and shutdown() drops it, so take it first).
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)
    # With the workers gone the executor's manager thread sees a broken pool and exits; wait for
    # it, or its exit-time wakeup can hit a closed pipe and print a traceback after ours.
    pool.shutdown(wait=True, cancel_futures=True)


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1

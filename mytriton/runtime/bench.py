"""Timing launches on the GPU, as autotuning needs it: CUDA events around each run, the L2 cache
flushed before each (so every run reads from memory, as a kernel in an application does), and
the median over the runs that fit the time budget (the method of Triton's ``do_bench``)."""
from __future__ import annotations

import statistics
import threading

from . import driver

L2_FLUSH_BYTES = 256 << 20          # larger than any GPU's L2 cache (the H200 has 50 MiB)

_flush_buffers: dict[int, int] = {}  # device -> device address of its flush buffer
_LOCK = threading.Lock()


def _flush_buffer(device: int) -> int:
    with _LOCK:
        if device not in _flush_buffers:
            _flush_buffers[device] = int(driver._check(driver._cuda.cuMemAlloc(L2_FLUSH_BYTES), "cuMemAlloc"))
        return _flush_buffers[device]


def do_bench(fn, warmup: float = 25, rep: float = 100, stream=None, device: int | None = None,
             flush_l2: bool = True) -> float:
    """The median time in milliseconds of ``fn()`` (which launches work on ``stream``, default the
    legacy default stream, on ``device``, default the current one): about ``warmup`` ms of runs
    first, then about ``rep`` ms of timed runs (at least 1 of each), each after an L2 flush."""
    driver._init()
    cuda, check = driver._cuda, driver._check
    with driver._OnDevice(device) as (_, dev):
        handle = 0 if stream is None else driver._stream_handle(stream)
        flush = _flush_buffer(dev) if flush_l2 else None
        events = [check(cuda.cuEventCreate(0), "cuEventCreate") for _ in range(2)]
        try:
            def timed() -> float:
                if flush is not None:
                    check(cuda.cuMemsetD32Async(flush, 0, L2_FLUSH_BYTES // 4, handle), "cuMemsetD32Async")
                check(cuda.cuEventRecord(events[0], handle), "cuEventRecord")
                fn()
                check(cuda.cuEventRecord(events[1], handle), "cuEventRecord")
                check(cuda.cuEventSynchronize(events[1]), "cuEventSynchronize")
                return float(check(cuda.cuEventElapsedTime(events[0], events[1]), "cuEventElapsedTime"))

            estimate = statistics.median(timed() for _ in range(3))
            n_warmup = max(1, int(warmup / max(estimate, 1e-3)))
            n_rep = max(1, min(1000, int(rep / max(estimate, 1e-3))))
            for _ in range(min(n_warmup, 1000)):
                fn()
            return statistics.median(timed() for _ in range(n_rep))
        finally:
            for e in events:
                cuda.cuEventDestroy(e)

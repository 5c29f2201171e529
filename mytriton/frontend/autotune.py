"""Triton's ``@autotune`` and ``@heuristics`` for JIT launches, with Triton's signatures.

``@autotune(configs=[Config({...}, num_warps=..., num_stages=...)], key=[...])`` over a ``@jit``
kernel: the first launch with a new value of the ``key`` arguments (and new dtypes of the array
arguments) times every config on the GPU (``runtime.bench.do_bench``: L2 flushed, median of
repeated runs; a config that cannot compile or launch -- too much shared memory, say -- is skipped
with its reason kept in ``.failures``) and launches the fastest; later launches with that key take
it from memory. The choice is also written to disk (``$MYTRITON_CACHE_DIR/autotune``, default
``~/.cache/mytriton/autotune``), keyed by the kernel's source digest, the configs, the key and the
GPU, so a new process does not time again (``cache_results=False`` turns that off).

In the CPU interpreter (numpy arrays) nothing is timed: the first config (after pruning) runs.

``@heuristics(values={"NAME": lambda args: ...})``: constexprs computed from the launch's arguments
(a dict of every argument by name) before each launch.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from pathlib import Path

from .._paths import default_cache_dir

from .jit import JITFunction

__all__ = ["Config", "autotune", "heuristics", "Autotuner", "Heuristics", "unwrap"]

_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


class Config:
    """One configuration to try: constexpr values (``kwargs``) and launch options."""

    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None, pre_hook=None):
        self.kwargs = dict(kwargs)
        self.num_warps, self.num_stages, self.num_ctas, self.maxnreg = num_warps, num_stages, num_ctas, maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self) -> dict:
        """The constexprs and the launch options set, as keyword arguments of a launch."""
        options = {k: getattr(self, k) for k in _OPTIONS if getattr(self, k) is not None}
        return {**self.kwargs, **options}

    def __str__(self):
        return ", ".join(f"{k}: {v}" for k, v in self.all_kwargs().items())

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, Config) and self.all_kwargs() == other.all_kwargs()

    def __hash__(self):
        return hash(tuple(sorted((k, repr(v)) for k, v in self.all_kwargs().items())))


def unwrap(kernel) -> JITFunction:
    """The ``@jit`` function under ``@autotune`` / ``@heuristics`` decorators (itself if none)."""
    while isinstance(kernel, (Autotuner, Heuristics)):
        kernel = kernel.fn
    return kernel


def _cache_dir() -> Path:
    return default_cache_dir() / "autotune"


def _interpreted(values) -> bool:
    np = sys.modules.get("numpy")
    return os.environ.get("MYTRITON_INTERPRET") == "1" or (
        np is not None and any(isinstance(v, np.ndarray) for v in values))


_DTYPE_NAMES: dict = {}


def _dtype_name(dtype) -> str:
    """``str(dtype)``, remembered per dtype object (numpy's ``str`` of a dtype takes microseconds)."""
    try:
        return _DTYPE_NAMES[dtype]
    except KeyError:
        name = _DTYPE_NAMES[dtype] = str(dtype)
        return name
    except TypeError:                  # (an unhashable dtype attribute)
        return str(dtype)


class Autotuner:
    """``kernel[grid](...)`` picks a config per key (see the module's docstring)."""

    def __init__(self, fn, arg_names, configs, key, reset_to_zero=None, restore_value=None, pre_hook=None,
                 post_hook=None, prune_configs_by=None, warmup=None, rep=None, use_cuda_graph=False,
                 do_bench=None, cache_results=True):
        if not configs:
            raise ValueError("autotune: configs must list at least one Config")
        for c in configs:
            if not isinstance(c, Config):
                raise TypeError(f"autotune: configs must be Config objects, got {c!r}")
        unknown = [k for k in key if k not in arg_names]
        if unknown:
            raise ValueError(f"autotune: key names {unknown} that are not parameters of {unwrap(fn).__name__} "
                             f"({', '.join(arg_names)})")
        self.fn, self.arg_names, self.configs, self.keys = fn, list(arg_names), list(configs), list(key)
        self.reset_to_zero, self.restore_value = list(reset_to_zero or []), list(restore_value or [])
        self.user_pre_hook, self.user_post_hook = pre_hook, post_hook
        prune = prune_configs_by or {}
        self.perf_model, self.top_k = prune.get("perf_model"), prune.get("top_k")
        self.early_config_prune = prune.get("early_config_prune")
        self.warmup, self.rep = warmup or 25, rep or 100
        self.user_do_bench, self.cache_results = do_bench, cache_results
        self.cache: dict = {}                 # key -> the chosen Config
        self.timings: dict = {}               # key -> {Config: ms}
        self.failures: dict = {}              # key -> {Config: why it was skipped}
        self.best_config: Config | None = None
        self._lock = threading.Lock()
        self.__name__ = unwrap(fn).__name__
        # the names the configs set (a launch may not set them), once rather than at every launch
        self._tuned_names = frozenset(k for c in self.configs for k in c.all_kwargs())

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(grid, args, kwargs)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self.__name__} is an autotuned kernel: launch it as {self.__name__}[grid](...)")

    # --- choosing ------------------------------------------------------------------------------

    def _named(self, args, kwargs) -> dict:
        return {**dict(zip(self.arg_names, args)), **kwargs}

    def _key(self, named: dict) -> tuple:
        values = tuple(named[k] for k in self.keys if k in named)
        dtypes = tuple(_dtype_name(v.dtype) for v in named.values() if hasattr(v, "dtype") and not isinstance(v, type))
        return values + dtypes

    def prune(self, named: dict) -> list[Config]:
        configs = self.configs
        if self.early_config_prune is not None:
            configs = list(self.early_config_prune(configs, named))
        if self.perf_model is not None and self.top_k is not None and len(configs) > 1:
            top_k = int(self.top_k * len(configs)) if isinstance(self.top_k, float) else self.top_k
            estimated = sorted(configs, key=lambda c: self.perf_model(**named, **c.all_kwargs()))
            configs = estimated[:max(1, top_k)]
        if not configs:
            raise ValueError(f"{self.__name__}: every autotune config was pruned")
        return configs

    @staticmethod
    def _gpu() -> str | None:
        """The current GPU's name and architecture (part of the disk cache's key), None without one."""
        from ..runtime import driver
        try:
            device = driver.current_device()
            return f"{driver.device_name(device)} sm_{''.join(map(str, driver.compute_capability(device)))}"
        except Exception:   # noqa: BLE001 - no GPU to name: no disk cache
            return None

    def _disk_path(self, key: tuple, configs: list[Config]) -> Path | None:
        from .fingerprint import Uncacheable
        gpu = self._gpu() if self.cache_results else None
        if gpu is None:
            return None
        try:
            kernel_key = unwrap(self.fn).cache_key
        except Uncacheable:         # (a kernel no key describes: its choices are not kept on disk)
            return None
        text = json.dumps([kernel_key, gpu, [str(c) for c in configs], self.keys, repr(key)])
        return _cache_dir() / f"{hashlib.sha256(text.encode()).hexdigest()}.json"

    def _from_disk(self, path: Path | None, configs: list[Config]) -> Config | None:
        if path is None or not path.is_file():
            return None
        try:
            chosen = json.loads(path.read_text())["config"]
        except (OSError, ValueError, KeyError):
            return None
        return next((c for c in configs if str(c) == chosen), None)

    def _to_disk(self, path: Path | None, best: Config, timings: dict) -> None:
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps({"kernel": self.__name__, "config": str(best),
                                       "timings_ms": {str(c): t for c, t in timings.items()}}, indent=1))
            os.replace(tmp, path)
        except OSError:
            pass                     # (a read-only cache: the choice is kept in memory only)

    def _bench(self, grid, args, kwargs, named, config: Config) -> float:
        from ..runtime.bench import do_bench

        def call():
            if config.pre_hook is not None:
                config.pre_hook({**named, **config.all_kwargs()})
            for name in self.reset_to_zero:
                named[name].zero_()
            if self.user_pre_hook is not None:
                self.user_pre_hook(named)
            try:
                self.fn[grid](*args, **kwargs, **config.all_kwargs())
            finally:
                if self.user_post_hook is not None:
                    self.user_post_hook(named, None)
        if self.user_do_bench is not None:
            t = self.user_do_bench(call)
            return float(t[0] if isinstance(t, (list, tuple)) else t)
        return do_bench(call, warmup=self.warmup, rep=self.rep, stream=kwargs.get("stream"))

    def choose(self, grid, args, kwargs) -> Config:
        """The config for this launch's key: from memory, from disk, or timed now."""
        named = self._named(args, kwargs)
        key = self._key(named)
        if key in self.cache:
            return self.cache[key]
        with self._lock:
            if key in self.cache:
                return self.cache[key]
            configs = self.prune(named)
            if len(configs) == 1 or _interpreted(named.values()):
                self.cache[key] = configs[0]
                return configs[0]
            path = self._disk_path(key, configs)
            best = self._from_disk(path, configs)
            if best is None:
                best = self._tune(grid, args, kwargs, named, key, configs)
                self._to_disk(path, best, self.timings[key])
            self.cache[key] = best
            return best

    def _tune(self, grid, args, kwargs, named, key, configs) -> Config:
        from ..errors import CompilationError
        from ..runtime.driver import CudaError
        saved = {name: named[name].clone() for name in self.restore_value}
        timings, failures = {}, {}
        try:
            for config in configs:
                try:
                    timings[config] = self._bench(grid, args, kwargs, named, config)
                except (CompilationError, CudaError, ValueError) as e:
                    failures[config] = f"{type(e).__name__}: {str(e).splitlines()[0]}"
        finally:
            for name, value in saved.items():
                named[name].copy_(value)
            for name in self.reset_to_zero:           # (as Triton: zeroed again for the real launch)
                named[name].zero_()
        self.timings[key], self.failures[key] = timings, failures
        if not timings:
            why = "; ".join(f"[{c}] {w}" for c, w in failures.items())
            raise RuntimeError(f"{self.__name__}: no autotune config could run: {why}")
        return min(timings, key=timings.get)

    def run(self, grid, args, kwargs):
        clash = kwargs.keys() & self._tuned_names
        if clash:
            raise ValueError(f"{self.__name__}: Conflicting meta-parameters: {', '.join(sorted(clash))}. Make sure "
                             f"that you don't re-define auto-tuned symbols.")
        config = self.choose(grid, args, kwargs)
        self.best_config = config
        tuned = config.all_kwargs()
        if config.pre_hook is not None:
            config.pre_hook({**self._named(args, kwargs), **tuned})
        return self.fn[grid](*args, **kwargs, **tuned)

    def __repr__(self):
        return f"Autotuner({self.fn!r}, {len(self.configs)} configs, key={self.keys})"


class Heuristics:
    """``kernel[grid](...)`` with constexprs computed from the arguments first."""

    def __init__(self, fn, arg_names, values: dict):
        self.fn, self.arg_names, self.values = fn, list(arg_names), dict(values)
        self.__name__ = unwrap(fn).__name__

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            for name, rule in self.values.items():
                kwargs[name] = rule({**dict(zip(self.arg_names, args)), **kwargs})
            return self.fn[grid](*args, **kwargs)
        return launch

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self.__name__} is a kernel: launch it as {self.__name__}[grid](...)")

    def __repr__(self):
        return f"Heuristics({self.fn!r}, {list(self.values)})"


def _arg_names(fn) -> list[str]:
    inner = unwrap(fn)
    if not isinstance(inner, JITFunction):
        raise TypeError(f"autotune/heuristics decorate a @jit kernel, got {fn!r}")
    return inner.arg_names


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None, pre_hook=None,
             post_hook=None, warmup=None, rep=None, use_cuda_graph=False, do_bench=None, cache_results=True):
    """Triton's ``@triton.autotune`` (see the module's docstring)."""
    def decorator(fn):
        return Autotuner(fn, _arg_names(fn), configs, key, reset_to_zero, restore_value, pre_hook, post_hook,
                         prune_configs_by, warmup, rep, use_cuda_graph, do_bench, cache_results)
    return decorator


def heuristics(values: dict):
    """Triton's ``@triton.heuristics``: ``values`` maps constexpr names to functions of the arguments."""
    def decorator(fn):
        return Heuristics(fn, _arg_names(fn), values)
    return decorator

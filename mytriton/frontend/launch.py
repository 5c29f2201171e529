"""``kernel[grid](*args, **constexprs)``: bind the arguments, pick the specialization, compile it
once (per signature, alignment, constexprs and num_warps), and launch it through the runtime — or,
for numpy arrays (or with MYTRITON_INTERPRET=1), run it in the CPU interpreter."""
from __future__ import annotations

import os

from ..errors import CompilationError

_LAUNCH_OPTIONS = ("num_warps", "num_stages", "stream", "num_ctas", "maxnreg")


def _is_numpy(x) -> bool:
    return type(x).__module__ == "numpy" and hasattr(x, "__array_interface__")


def bind(jit_fn, args, kwargs):
    """Split a launch call into (run-time args in order, constexpr values, options)."""
    options = {k: kwargs.pop(k) for k in _LAUNCH_OPTIONS if k in kwargs}
    try:
        bound = jit_fn.signature.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{jit_fn.__name__}[grid](...): {e}") from None
    bound.apply_defaults()
    constexprs, runtime = {}, []
    for name in jit_fn.arg_names:
        value = bound.arguments[name]
        if name in jit_fn.constexpr_names:
            constexprs[name] = value
        else:
            runtime.append((name, value))
    return runtime, constexprs, options


def _grid(grid, meta):
    g = grid(meta) if callable(grid) else grid
    return g


def launch(jit_fn, grid, args, kwargs):
    runtime, constexprs, options = bind(jit_fn, args, dict(kwargs))
    num_warps = options.get("num_warps", 4)
    if os.environ.get("MYTRITON_INTERPRET") == "1" or any(_is_numpy(v) for _, v in runtime):
        from ..backends.interpreter import interpret
        return interpret(jit_fn, _grid(grid, {**constexprs, "num_warps": num_warps}), runtime, constexprs, num_warps)
    from ..runtime import driver
    signature = []
    for name, value in runtime:
        try:
            ty = driver.infer_type(value)
        except TypeError as e:
            raise TypeError(f"{jit_fn.__name__}: parameter '{name}': {e}") from None
        if ty.startswith("*"):
            address, _ = driver.pointer_info(value)
            if address % 16 == 0:
                ty += ":16"
        signature.append(ty)
    key = (tuple(signature), tuple(sorted((k, repr(v)) for k, v in constexprs.items())), num_warps)
    kernel = jit_fn._cache.get(key)
    if kernel is None:
        with jit_fn._lock:
            kernel = jit_fn._cache.get(key)
            if kernel is None:
                kernel = _compile_for_device(jit_fn, [n for n, _ in runtime], signature, constexprs, num_warps, driver)
                jit_fn._cache[key] = kernel
    kernel.launch(_grid(grid, {**constexprs, "num_warps": num_warps}), [v for _, v in runtime],
                  stream=options.get("stream"))
    return kernel


def _compile_for_device(jit_fn, names, signature, constexprs, num_warps, driver):
    from ..compiler import compile
    major, minor = driver.compute_capability()
    target = f"sm_{major}{minor}"
    try:
        ck = compile(jit_fn, signature=dict(zip(names, signature)), constexprs=constexprs, target=target,
                     num_warps=num_warps)
        cubin = ck.asm["cubin"]
    except CompilationError as e:
        raise e.with_traceback(None) from None
    return driver.Kernel(ck.metadata["name"], list(zip(names, signature)), num_warps, ck.metadata["shared"],
                         {target: cubin})

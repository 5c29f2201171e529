"""mytriton: an ahead-of-time compiler and build tool for Triton-style GPU kernels.

    import mytriton as triton
    import mytriton.language as tl

    @triton.jit
    def add_kernel(x, y, out, n, BLOCK: tl.constexpr): ...

    ck = triton.compile(add_kernel, signature={...}, constexprs={"BLOCK": 1024})   # AOT
    add_kernel[grid](x_dev, y_dev, out_dev, n, BLOCK=1024)                         # JIT on the GPU
"""
from __future__ import annotations

__version__ = "0.1.0"

# Imported on first use (PEP 562): `import mytriton` alone stays cheap, so that `mytriton-build`
# has its Ctrl-C handling in place before the compiler (numpy, the IR) loads.
_LAZY = {
    "CompilationError": "errors", "NVRTCError": "errors", "TritonError": "errors",
    "JITFunction": "frontend.jit", "jit": "frontend.jit",
    "CompiledKernel": "compiler", "compile": "compiler",
    "cdiv": "language",             # one definition, for constexprs and run-time values
    "autotune": "frontend.autotune", "heuristics": "frontend.autotune", "Config": "frontend.autotune",
    "reinterpret": "runtime.reinterpret", "TensorWrapper": "runtime.reinterpret",
    "constexpr_function": "host_api", "must_use_result": "host_api", "OutOfResources": "host_api",
    "InterpreterError": "host_api", "KernelInterface": "host_api",
}
# (backends: mytriton's own, CUDA C++ and MLIR -- not Triton's registry of backend plugins)
_MODULES = ("language", "runtime", "testing", "knobs", "compiler", "errors", "tools", "backends")


def __getattr__(name: str):
    import importlib
    if name in _MODULES:     # (triton.runtime.driver.active, as kernel modules use it)
        return importlib.import_module("." + name, __name__)
    if name in _LAZY:
        value = getattr(importlib.import_module("." + _LAZY[name], __name__), name)
        globals()[name] = value
        return value
    from .language.triton_names import missing_attribute      # (Triton's names that mytriton lacks say why)
    raise missing_attribute(name, "triton", __name__)


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_MODULES))



def next_power_of_2(n: int) -> int:
    """The smallest power of 2 that is >= n (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def set_allocator(allocator) -> None:
    """Triton's ``triton.set_allocator`` (scratch memory for its device-side tensor descriptors),
    accepted for compatibility: mytriton's tensor descriptors need no scratch memory."""
    if allocator is not None and not callable(allocator):
        raise TypeError(f"set_allocator expects a callable (size, alignment, stream) -> buffer, got {allocator!r}")


__all__ = ["jit", "JITFunction", "compile", "CompiledKernel", "CompilationError", "NVRTCError", "TritonError",
           "cdiv", "next_power_of_2", "language", "autotune", "heuristics", "Config", "set_allocator", "reinterpret",
           "TensorWrapper", "constexpr_function", "must_use_result", "OutOfResources", "InterpreterError",
           "KernelInterface", "testing", "knobs", "__version__"]

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

from .errors import CompilationError, NVRTCError  # noqa: E402
from .frontend.jit import JITFunction, jit  # noqa: E402
from .compiler import CompiledKernel, compile  # noqa: E402,A004
from . import language  # noqa: E402
from .language import cdiv  # noqa: E402  (one definition, for constexprs and run-time values)



def next_power_of_2(n: int) -> int:
    """The smallest power of 2 that is >= n (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


__all__ = ["jit", "JITFunction", "compile", "CompiledKernel", "CompilationError", "NVRTCError",
           "cdiv", "next_power_of_2", "language", "__version__"]

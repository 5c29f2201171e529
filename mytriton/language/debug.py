"""The language's compile-time and run-time checks and prints: ``tl.static_assert``,
``tl.static_print``, ``tl.device_print`` (Triton's format) and ``tl.device_assert``."""
from __future__ import annotations

import builtins

from .core import StaticAssertionError, builtin, current_builder, int1, is_block, make, tensor, to_tensor


@builtin
def static_assert(cond, msg=""):
    if isinstance(cond, tensor):
        raise TypeError("static_assert needs a compile-time condition")
    if not cond:
        raise StaticAssertionError(f"static_assert failed: {msg}" if msg else "static_assert failed")


@builtin
def device_print(prefix, *args, hex=False):
    """Print at run time, as Triton's ``tl.device_print``: for each argument, a line per element and
    program, ``pid (x, y, z) idx (i, ...) <prefix>: <value>`` in Triton's format (ir/ops.py:
    print_line_format; the prefix made to start with a space and end with ": ", `` (operand k)``
    after it when there are several arguments); ``hex=True`` prints the values' bits in
    zero-padded hexadecimal. On the GPU (printf) the lines of different programs and threads
    interleave in no fixed order."""
    if not isinstance(prefix, str):
        raise TypeError(f"device_print: the prefix must be a str, got {type(prefix).__name__}")
    if not args:
        raise TypeError("tl.device_print with no values to print is not supported by mytriton (Triton prints "
                        "the prefix once per thread); pass the values after the prefix")
    label = print_label(prefix)
    for k, x in enumerate(args):
        make("device_print", x, prefix=label + (f"(operand {k}) " if len(args) > 1 else ""), hex=bool(hex))


def print_label(prefix: str) -> str:
    """Triton's munging of a device_print prefix that has values after it: ending in ": ", and,
    past two characters, starting with a space (``"x"`` prints as ``" x: "``)."""
    if not prefix.endswith(" "):
        prefix += " "
    if not prefix.endswith(": "):
        prefix = prefix[:-1] + ": "
    return " " + prefix if len(prefix) > 2 and not prefix.startswith(" ") else prefix


@builtin
def device_assert(cond, msg="", mask=None):
    """Check ``cond`` (where ``mask`` holds) at run time, in kernels compiled with
    ``@jit(debug=True)`` (elsewhere nothing, as Triton's without its debug option): a false element
    stops the kernel with the assertion's file:line, the program id and ``msg`` -- in the
    interpreter a ``DeviceAssertionError``, on the GPU CUDA's device-side assertion (the launch's
    error, CUDA_ERROR_ASSERT)."""
    if not isinstance(msg, str):
        raise TypeError(f"device_assert: the message must be a str, got {type(msg).__name__}")
    if not current_builder().debug:
        return
    c = to_tensor(cond)
    c = c if c.dtype == int1 else c != 0
    if mask is None:
        make("device_assert", c, message=msg)
    else:
        m = to_tensor(mask)
        if is_block(c) and not is_block(m):
            from . import broadcast_to
            m = broadcast_to(m, c.shape)
        make("device_assert", c, m, message=msg)


@builtin
def static_print(*values, sep=" ", end="\n", flush=False):
    """Print at compile time (once per compile), as Triton's ``tl.static_print``; run-time values
    print as their type."""
    builtins.print(*values, sep=sep, end=end, flush=flush)

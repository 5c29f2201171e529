"""Triton's host-side names that kernels and their host code use beside ``jit``: compile-time
helper functions (``constexpr_function``), ``must_use_result``, the error classes
``OutOfResources`` and ``InterpreterError``, and ``KernelInterface`` (the ``fn[grid](...)``
protocol)."""
from __future__ import annotations

from .errors import TritonError


def constexpr_function(fn):
    """Mark ``fn`` (a plain Python function) as callable from kernels at compile time, as Triton's
    ``triton.constexpr_function``: a kernel calls it on compile-time values (constexprs, dtypes,
    shapes) while it compiles, and its result is a compile-time value; outside a kernel it is an
    ordinary call. The function itself is returned, marked."""
    if not callable(fn):
        raise TypeError(f"constexpr_function expects a function, got {fn!r}")
    fn.__triton_constexpr_function__ = True
    return fn


def is_constexpr_function(fn) -> bool:
    """Whether ``fn`` (or the function of the bound method ``fn``) is marked, read without running
    any of its code."""
    import types
    if type(fn) is types.MethodType:                     # (a method of a class)
        fn = fn.__func__
    if type(fn) is not types.FunctionType:
        return False
    return fn.__dict__.get("__triton_constexpr_function__", False) is True


def must_use_result(x, s=True):
    """Mark a function whose result a kernel must use: a call of it as a statement of its own is a
    compile error (``@must_use_result("why")`` adds the reason to the message)."""
    if isinstance(x, str):
        return lambda fn: must_use_result(fn, x)
    x._must_use_result = s
    return x


class OutOfResources(TritonError):
    """A kernel needs more of a resource (shared memory, registers) than the hardware has."""

    def __init__(self, required, limit, name):
        self.required, self.limit, self.name = required, limit, name
        super().__init__(str(self))

    def __str__(self) -> str:
        return (f"out of resource: {self.name}, Required: {self.required}, Hardware limit: {self.limit}. "
                f"Reducing block sizes or `num_stages` may help.")

    def __reduce__(self):
        return type(self), (self.required, self.limit, self.name)


class InterpreterError(TritonError):
    """An error while interpreting a kernel (Triton's name)."""

    def __init__(self, error_message: str | None = None):
        self.error_message = error_message
        super().__init__(error_message or "")

    def __str__(self) -> str:
        return self.error_message or ""


class KernelInterface:
    """Triton's base of launchable kernels: ``kernel[grid](*args, **kwargs)`` is
    ``kernel.run(*args, grid=grid, warmup=False, **kwargs)``."""

    def run(self, *args, grid, warmup, **kwargs):
        raise NotImplementedError("run not implemented")

    def warmup(self, *args, grid, **kwargs):
        return self.run(*args, grid=grid, warmup=True, **kwargs)

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

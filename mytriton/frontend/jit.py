"""``@mytriton.jit``: the kernel object — its source, parameters, cache key and launch syntax."""
from __future__ import annotations

import ast
import hashlib
import inspect
import os
import textwrap
import threading

from .codegen import SourceInfo


def _is_constexpr_annotation(ann) -> bool:
    if ann is None:
        return False
    if isinstance(ann, ast.Attribute):
        return ann.attr == "constexpr"
    if isinstance(ann, ast.Name):
        return ann.id == "constexpr"
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        return ann.value.split(".")[-1] == "constexpr"
    return False


class JITFunction:
    """A kernel written in the Triton-style language. ``kernel[grid](*args, **constexprs)`` launches it:
    on device arrays it compiles once per specialization and runs on the GPU; on numpy arrays it runs
    in the CPU interpreter."""

    def __init__(self, fn, **options):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.options = options
        self.signature = inspect.signature(fn)
        self.arg_names = list(self.signature.parameters)
        lines, first = inspect.getsourcelines(fn)
        raw = "".join(lines)
        dedented = textwrap.dedent(raw)
        indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
        self.src = dedented
        self.file = os.path.abspath(inspect.getsourcefile(fn) or "<unknown>")
        self.source_info = SourceInfo(self.file, first, indent, dedented.splitlines(), fn.__name__)
        fn_def = self.parse()
        self.constexpr_names = [a.arg for a in fn_def.args.args if _is_constexpr_annotation(a.annotation)]
        self._lock = threading.Lock()
        self._cache: dict = {}
        self._cache_key = None
        self._binder = None             # frontend/launch.py's argument binder, made on first launch

    def parse(self) -> ast.FunctionDef:
        tree = ast.parse(self.src)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == self.fn.__name__:
                return node
        raise ValueError(f"cannot find the definition of {self.fn.__name__} in its source")

    def closure_vars(self) -> dict:
        code = self.fn.__code__
        cells = self.fn.__closure__ or ()
        out = {}
        for name, cell in zip(code.co_freevars, cells):
            try:
                out[name] = cell.cell_contents
            except ValueError:
                pass
        return out

    def callees(self) -> list["JITFunction"]:
        """@jit functions this kernel refers to by a global or closure name (transitively)."""
        seen: dict[int, JITFunction] = {}

        def visit(f: JITFunction):
            names = {n.id for n in ast.walk(f.parse()) if isinstance(n, ast.Name)}
            scope = {**f.fn.__globals__, **f.closure_vars()}
            for n in sorted(names):
                g = scope.get(n)
                if isinstance(g, JITFunction) and id(g) not in seen:
                    seen[id(g)] = g
                    visit(g)
        visit(self)
        return list(seen.values())

    @property
    def cache_key(self) -> str:
        """Digest over this kernel's source, the @jit functions it calls, and the compiler version."""
        if self._cache_key is None:
            from .. import __version__
            h = hashlib.sha256(f"mytriton {__version__}\n".encode())
            for f in [self, *sorted(self.callees(), key=lambda g: (g.file, g.__qualname__))]:
                h.update(f"{f.__qualname__}\n{f.src}\n".encode())
            self._cache_key = h.hexdigest()
        return self._cache_key

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self.__name__} is a @mytriton.jit kernel: launch it as {self.__name__}[grid](...)")

    def __getitem__(self, grid):
        def launcher(*args, **kwargs):
            from .launch import launch
            return launch(self, grid, args, kwargs)
        return launcher

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"


def jit(fn=None, **options):
    """Decorator: ``@jit`` or ``@jit(**options)``."""
    if fn is None:
        return lambda f: JITFunction(f, **options)
    return JITFunction(fn, **options)

"""Kernels written to a file of their own by a test (the frontend reads a kernel's source from its
file): write, import, and return the named function."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def load_kernel_from(path, *names):
    """Import the file ``path`` and return its function ``names[0]`` (several names: a tuple)."""
    spec = importlib.util.spec_from_file_location(f"hostile_file_{abs(hash(str(path)))}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    found = tuple(getattr(module, name) for name in names)
    return found[0] if len(found) == 1 else found


def kernel_from_source(path: Path, source: str, *names: str):
    """Write ``source`` to ``path`` and return its function(s) ``names`` (default ``k``)."""
    path.write_text(source)
    return load_kernel_from(path, *(names or ("k",)))


def compile_error(path: Path, source: str, signature: dict, constexprs: dict | None = None) -> str:
    """Write ``source`` (whose kernel is ``k``) to ``path``, compile it, and return the text of the
    ``CompilationError`` that compiling must raise."""
    import pytest
    import mytriton
    k = kernel_from_source(path, source)
    with pytest.raises(mytriton.CompilationError) as e:
        mytriton.compile(k, signature, constexprs or {})
    return str(e.value)

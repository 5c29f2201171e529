"""Finding the ``@triton.jit`` function a manifest names, in the build process and in workers.

A kernel is named ``path/to/file.py:function`` (relative to the manifest) or ``module:function``.
:class:`KernelSource` is the picklable form a compile worker re-imports the function from.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import linecache
import os
import sys
import traceback
from contextlib import contextmanager
from dataclasses import dataclass


class KernelImportError(Exception):
    """The kernel's file or module cannot be found or imported; ``str()`` is the user message."""


@dataclass(frozen=True)
class KernelSource:
    ref: str                        # as written in the manifest
    function: str
    file: str | None = None         # absolute path of the kernel file, for path refs
    module: str | None = None       # module name, for module refs
    search_path: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        return self.ref.rpartition(":")[0]


def _is_path(location: str) -> bool:
    return location.endswith(".py") or "/" in location or os.sep in location


def file_location(ref: str) -> str | None:
    """The file part of a ``path/to/file.py:function`` reference, as written; None for a module."""
    location = ref.rpartition(":")[0]
    return location if location and _is_path(location) else None


def resolve(ref: str, manifest_dir: str, what: str = "kernel") -> KernelSource:
    """Parse a manifest ``kernel:`` value (or another function reference: *what* names it in
    errors); raises :class:`KernelImportError`."""
    location, sep, function = ref.rpartition(":")
    if not sep or not location or not function:
        raise KernelImportError(
            f"{what} '{ref}' must be 'path/to/file.py:function' or 'module:function'")
    if not function.isidentifier():
        raise KernelImportError(f"{what} '{ref}': '{function}' is not a Python function name")
    if _is_path(location):
        path = os.path.abspath(os.path.join(manifest_dir, location))
        if not os.path.isfile(path):
            raise KernelImportError(f"{what} file '{location}' not found (looked for {path})")
        return KernelSource(ref, function, file=path, search_path=(os.path.dirname(path),))
    if not all(part.isidentifier() for part in location.split(".")):
        raise KernelImportError(f"{what} '{ref}': '{location}' is neither a .py file nor a module name")
    return KernelSource(ref, function, module=location,
                        search_path=(os.path.abspath(manifest_dir), os.getcwd()))


def load_function(source: KernelSource):
    """Import the module and return the named function (any callable, e.g. a tuning inputs function)."""
    module = _import(source)
    fn = getattr(module, source.function, None)
    if not callable(fn):
        raise KernelImportError(f"'{source.where}' has no function '{source.function}'")
    return fn


def load(source: KernelSource, text: bytes | None = None):
    """Import the module and return the named ``@triton.jit`` function; from *text* (the bytes of
    the kernel file another process imported) where given, not from the file as it is now."""
    module = _import(source, text)
    try:
        fn = getattr(module, source.function)
    except AttributeError:
        raise KernelImportError(f"'{source.where}' has no function '{source.function}'") from None
    from ..frontend.autotune import unwrap
    fn = unwrap(fn)             # (under @autotune / @heuristics: the manifest names the specializations)
    if not (hasattr(fn, "arg_names") and hasattr(fn, "constexpr_names")):
        raise KernelImportError(
            f"'{source.function}' in '{source.where}' is not a @triton.jit function "
            f"(got {type(fn).__name__})")
    return fn


# Kernel files loaded by this process, by path, with the bytes they were loaded from: a
# long-lived process (tests, an IDE) that builds again after an edit must see the new source.
_file_modules: dict[str, tuple[bytes, object]] = {}


def imported_text(source: KernelSource) -> bytes | None:
    """The bytes this process imported the kernel file of *source* from (None for a module)."""
    found = _file_modules.get(source.file) if source.file is not None else None
    return found[0] if found is not None else None


def _import(source: KernelSource, text: bytes | None = None):
    if source.file is None:
        with _on_sys_path(source.search_path), _import_errors(source, None):
            return importlib.import_module(source.module)
    if text is None:
        try:
            with open(source.file, "rb") as f:
                text = f.read()
        except OSError as exc:
            raise KernelImportError(f"cannot read '{source.where}': {exc.strerror}") from None
    if source.file in _file_modules and _file_modules[source.file][0] == text:
        return _file_modules[source.file][1]
    # A private, unique module name: two kernels/elementwise.py of different manifests must not
    # collide, and the module must sit in sys.modules (inspect.getsource needs it).
    stem = os.path.splitext(os.path.basename(source.file))[0]
    digest = hashlib.sha256(source.file.encode()).hexdigest()[:10]
    name = f"_mytriton_kernels_{digest}_{stem}"
    # Always Python source, whatever the file is called (not the extension-module loader of a .so).
    loader = importlib.machinery.SourceFileLoader(name, source.file)
    spec = importlib.util.spec_from_file_location(name, source.file, loader=loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with _on_sys_path(source.search_path), _import_errors(source, source.file):
            # The module runs from *text*, and inspect.getsource (which the kernel's source and
            # cache key come from) reads the same lines, never the file again: what is compiled
            # is what was read once (an mtime of None pins linecache's entry).
            code = compile(text, source.file, "exec", dont_inherit=True)
            lines = importlib.util.decode_source(text).splitlines(True)
            linecache.cache[source.file] = (len(text), None, lines, source.file)
            exec(code, module.__dict__)
    except BaseException:
        del sys.modules[name]
        linecache.cache.pop(source.file, None)
        raise
    _file_modules[source.file] = (text, module)
    return module


@contextmanager
def _on_sys_path(folders):
    """Let a kernel file import its neighbours (``from common import helper``)."""
    added = [folder for folder in folders if folder not in sys.path]
    sys.path[:0] = added
    try:
        yield
    finally:
        for folder in added:
            if folder in sys.path:
                sys.path.remove(folder)


@contextmanager
def _import_errors(source: KernelSource, file: str | None):
    try:
        yield
    except KernelImportError:
        raise
    except (Exception, SystemExit) as exc:
        message = f"cannot import '{source.where}': {_describe(exc)}"
        frame = _innermost_frame_in(exc, file) if file else None
        if frame and not isinstance(exc, SyntaxError):
            message += f" (at {source.where}, line {frame.lineno})"
        raise KernelImportError(message) from None


def _describe(exc: BaseException) -> str:
    text = str(exc)
    # The compiler's own errors already carry file:line:col and a caret; keep them whole.
    if type(exc).__name__ == "CompilationError":
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _innermost_frame_in(exc: BaseException, file: str):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename) == file]
    return frames[-1] if frames else None

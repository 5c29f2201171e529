"""What a kernel's compile depends on from outside its own source, as text for its cache key.

A kernel may use values from outside itself (``frontend.codegen.admitted``): numbers, strings,
containers and namespaces of those at any depth, dtypes, modules (and whatever their namespace
holds), functions and ``@jit`` functions. :class:`Describer` writes each such value down in full:
its kind and exact contents (floats by their bits, so ``0.0`` and ``-0.0`` differ; containers item
by item, at any depth; a module by its namespace), and collects every ``@jit`` function it meets on
the way, wherever it sits, so that its source is keyed too.

A value that a kernel may not use is written as its type alone: reading it fails the compile, so it
can change no compiled code. A value a kernel may use that cannot be written down faithfully raises
:class:`Uncacheable`: the kernel is then compiled every time, never served from a cache by a guess.

Functions: a user's own function (a ``triton.constexpr_function``, which runs while the kernel
compiles, the helpers it calls, an aggregate class's ``__init__``) is written as its source,
defaults, closure and the globals its code names; mytriton's, the standard library's and installed
distributions' functions by name (their module's version). A ``@tl.core._aggregate`` class is
written as its body.

Modules: mytriton's own are part of the compiler (whose sources are hashed into every key) and are
named; modules of the standard library and of installed distributions are named with their
version; any other module (the user's own helpers) is written as its namespace. Names starting
with ``__`` are left out of a namespace, ``__doc__`` aside (``__file__`` differs from machine to
machine): the frontend refuses a kernel's read of them.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import os
import struct
import sys
import sysconfig
import types

# More values than this in one key (a global list of millions of numbers): the kernel is not cached.
MAX_VALUES = 1 << 21


class Uncacheable(Exception):
    """The kernel reads a value its cache key cannot describe faithfully; ``str()`` says which."""


@functools.cache
def _installed_roots() -> tuple[str, ...]:
    """Where the standard library and installed distributions live (their modules are named, with
    a version, not written out)."""
    paths = sysconfig.get_paths()
    roots = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= {p for p in sys.path if p and os.path.basename(p) in ("site-packages", "dist-packages")}
    return tuple(sorted(os.path.realpath(r) + os.sep for r in roots if r))


def _installed_version(module) -> str | None:
    """``name version`` for a module of the standard library or of an installed distribution,
    else None (a module of the user's own, written out as its namespace)."""
    name = vars(module).get("__name__")
    name = name if type(name) is str else "?"
    file = vars(module).get("__file__")
    if name in sys.builtin_module_names:                    # (sys, math)
        return f"{name} python {sys.version_info[0]}.{sys.version_info[1]}"
    if type(file) is not str or not os.path.realpath(file).startswith(_installed_roots()):
        return None
    top = sys.modules.get(name.partition(".")[0])
    version = vars(top).get("__version__") if type(top) is types.ModuleType else None
    return f"{name} {version if type(version) is str else 'python %d.%d' % sys.version_info[:2]}"


def _module_name(module) -> str:
    """A module's name as keys spell it: a kernel file's private import name (which holds a digest
    of its path, see aot.kernel_source) loses that part, so that keys do not depend on paths."""
    name = vars(module).get("__name__")
    name = name if type(name) is str else "?"
    if name.startswith("_mytriton_kernels_"):
        name = name.split("_", 4)[-1]
    return name


def _float(value: float) -> str:
    return struct.pack("<d", value).hex()


class Describer:
    """Writes values down for one cache key (see the module docstring); ``jits`` collects the
    ``@jit`` functions met, by id."""

    def __init__(self):
        from .codegen import _MAX_ADMIT_DEPTH, _admitted_type_ids
        self.kinds, _ = _admitted_type_ids()
        self.max_depth = _MAX_ADMIT_DEPTH
        self.jits: dict[int, object] = {}
        self._modules: dict[int, int] = {}      # id -> its number in this key (written once)
        self._functions: dict[int, int] = {}    # (the same, of the user's functions)
        self._count = 0

    def describe(self, value, depth: int = 0) -> str:
        self._count += 1
        if self._count > MAX_VALUES:
            raise Uncacheable(f"more than {MAX_VALUES} values, more than a cache key describes")
        kind = self.kinds.get(id(type(value)))
        name = _type_name(value)
        if kind is None or depth > self.max_depth or (kind == "class" and not admitted(value)):
            return f"<not admitted {name}>"
        method = getattr(self, f"_{kind}")
        return method(value, name, depth)

    def _items(self, items, depth: int) -> str:
        return ", ".join(self.describe(v, depth + 1) for v in items)

    def _scalar(self, value, name: str, depth: int) -> str:
        if type(value) is float:
            return f"float {_float(value)}"
        if type(value) is complex:
            return f"complex {_float(value.real)} {_float(value.imag)}"
        if type(value) in (bool, int, str, bytes, type(None), type(Ellipsis)):
            return f"{name} {value!r}"
        return f"{name} {value.dtype.str} {value.tobytes().hex()}"      # a numpy scalar

    def _seq(self, value, name: str, depth: int) -> str:
        if isinstance(value, (set, frozenset)):             # (iteration order: hash order, not an input)
            return f"{name} {{{', '.join(sorted(self.describe(v, depth + 1) for v in value))}}}"
        return f"{name} ({self._items(value, depth)})"

    def _dict(self, value, name: str, depth: int) -> str:
        pairs = (f"{self.describe(k, depth + 1)}: {self.describe(v, depth + 1)}" for k, v in dict.items(value))
        return f"dict {{{', '.join(pairs)}}}"

    def _ns(self, value, name: str, depth: int) -> str:
        attrs = object.__getattribute__(value, "__dict__")
        pairs = (f"{k!r}: {self.describe(v, depth + 1)}" for k, v in dict.items(attrs))
        return f"namespace {{{', '.join(pairs)}}}"

    def _module(self, value, name: str, depth: int) -> str:
        module_name = _module_name(value)
        if module_name.split(".")[0] == "mytriton":
            return f"module {module_name}"
        installed = _installed_version(value)
        if installed is not None:
            return f"module {installed}"
        if id(value) in self._modules:
            return f"module {module_name} #{self._modules[id(value)]}"
        self._modules[id(value)] = len(self._modules)
        entries = sorted((k, v) for k, v in dict.items(vars(value))
                         if type(k) is str and (k == "__doc__" or not k.startswith("__")))
        body = ", ".join(f"{k!r}: {self.describe(v, depth + 1)}" for k, v in entries)
        return f"module {module_name} #{self._modules[id(value)]} {{{body}}}"

    def _method(self, value, name: str, depth: int) -> str:
        return f"method {self.describe(value.__func__, depth + 1)} of {self.describe(value.__self__, depth + 1)}"

    def _class(self, value, name: str, depth: int) -> str:
        from ..language.aggregate import is_aggregate_class
        if is_aggregate_class(value):       # (a user's class of the language: its body is compiled)
            body = vars(value).get("__mytriton_class__", value)
            entries = sorted((k, v) for k, v in vars(body).items()
                             if type(k) is str and (k in ("__init__", "__annotations__") or not k.startswith("__")))
            return f"aggregate {_qualified(value)} {{{', '.join(f'{k!r}: {self.describe(v, depth + 1)}' for k, v in entries)}}}"
        return f"class {_qualified(value)}"

    def _code(self, value, name: str, depth: int) -> str:
        if type(value) is types.FunctionType and _user_code(value):
            return self._function(value, depth)
        owner = getattr(value, "__self__", None)
        bound = "" if owner is None or type(owner) is types.ModuleType else f" of {self.describe(owner, depth + 1)}"
        return f"function {_qualified(value)}{bound}"

    def _function(self, fn, depth: int) -> str:
        """A function of the user's own (a ``triton.constexpr_function`` runs while the kernel
        compiles, a helper it calls too, an aggregate's ``__init__``): its source, defaults,
        closure and the globals its code names, written once per key."""
        if id(fn) in self._functions:
            return f"function {_qualified(fn)} #{self._functions[id(fn)]}"
        self._functions[id(fn)] = n = len(self._functions)
        try:
            source = inspect.getsource(fn)
        except (OSError, TypeError):
            raise Uncacheable(f"the function {_qualified(fn)}, whose source cannot be read") from None
        names = sorted(_names_read(fn.__code__))
        globals_ = fn.__globals__
        read = ", ".join(f"{k!r}: {self.describe(globals_[k], depth + 1)}" for k in names if k in globals_)
        cells = [c.cell_contents for c in fn.__closure__ or () if _filled(c)]
        return (f"function {_qualified(fn)} #{n} {hashlib.sha256(source.encode()).hexdigest()} "
                f"defaults {self.describe(fn.__defaults__, depth + 1)} "
                f"keyword defaults {self.describe(fn.__kwdefaults__, depth + 1)} "
                f"closure {self.describe(tuple(cells), depth + 1)} globals {{{read}}}")

    def _leaf(self, value, name: str, depth: int) -> str:
        from .jit import JITFunction
        from ..language.core import constexpr_type
        if type(value) is JITFunction:
            self.jits.setdefault(id(value), value)
            return f"@jit {value.__qualname__} {hashlib.sha256(value.src.encode()).hexdigest()}"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):       # dtypes
            fields = ", ".join(f"{f.name}={self.describe(getattr(value, f.name), depth + 1)}"
                               for f in dataclasses.fields(value))
            return f"{name}({fields})"
        if type(value) is constexpr_type:
            return f"constexpr_type({self.describe(value.value, depth + 1)})"
        from .. import language as tl
        if type(value) in (tl.range, tl.static_range):
            return f"{name}({self._dict(vars(value), name, depth)})"
        raise Uncacheable(f"a {name}, which a cache key cannot describe")


def admitted(value) -> bool:
    from .codegen import admitted as kernel_may_use
    return kernel_may_use(value)


def _type_name(value) -> str:
    from .codegen import type_name
    return type_name(value)


def _qualified(value) -> str:
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None) or getattr(value, "__name__", "?")
    if type(module) is str and module.startswith("_mytriton_kernels_"):
        module = module.split("_", 4)[-1]
    return f"{module}.{qualname}" if type(module) is str else str(qualname)


def _user_code(fn) -> bool:
    """Whether *fn* is the user's own (not mytriton's, the standard library's or an installed
    distribution's, which the compiler's hash and their versions cover)."""
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    if type(module) is not types.ModuleType:
        return True
    name = _module_name(module)
    return name.split(".")[0] != "mytriton" and _installed_version(module) is None


def _names_read(code) -> set:
    """The global (and attribute) names a code object and the code nested in it name."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_read(const)
    return names


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True

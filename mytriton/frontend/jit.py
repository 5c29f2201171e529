"""``@mytriton.jit``: the kernel object — its source, parameters, cache key and launch syntax."""
from __future__ import annotations

import ast
import builtins
import hashlib
import inspect
import os
import textwrap
import threading
import types

from .codegen import SourceInfo, admitted, outside_attribute, type_name
from .launch import launch


def is_constexpr_annotation(ann) -> bool:
    if ann is None:
        return False
    if isinstance(ann, ast.Attribute):
        return ann.attr == "constexpr"
    if isinstance(ann, ast.Name):
        return ann.id == "constexpr"
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        return ann.value.split(".")[-1] == "constexpr"
    return False


_MISSING = object()


def _references(fn_def: ast.FunctionDef) -> tuple[tuple[str, ...], ...]:
    """The names and attribute chains (``SCALE``, ``helpers.twice``, ``tl.float32.bits``) the
    function reads, sorted; its own parameters are left out (they always shadow a global)."""
    args = fn_def.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a}
    chains, bases = set(), set()
    for node in ast.walk(fn_def):
        if isinstance(node, ast.Attribute):
            attrs = []
            base = node
            while isinstance(base, ast.Attribute):
                attrs.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id not in params:
                chains.add((base.id, *reversed(attrs)))
                bases.add(id(base))
    for node in ast.walk(fn_def):
        # a name read whole (``h = helpers``, ``f(CFG)``): its value is keyed whole; the base of
        # an attribute chain only through its chain (``helpers.SCALE`` keys SCALE, not helpers)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in params \
                and id(node) not in bases:
            chains.add((node.id,))
    return tuple(sorted(chains))


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
        self.constexpr_names = [a.arg for a in fn_def.args.args if is_constexpr_annotation(a.annotation)]
        # Triton's options: parameters (names or positions) the JIT does not specialize on their
        # values -- an integer equal to 1, divisibility by 16, a pointer's 16-byte alignment -- or
        # only not on the alignment and divisibility (frontend/launch.py)
        self.not_specialized = self._parameters_of("do_not_specialize")
        self.not_aligned = self.not_specialized | self._parameters_of("do_not_specialize_on_alignment")
        self._lock = threading.Lock()
        self._cache: dict = {}
        self._fast: dict = {}            # frontend/launch.py's fast path: argument kinds -> kernel
        self._references = None         # _references(parse()), computed on first use
        self._binder = None             # frontend/launch.py's argument binder, made on first launch

    def _parameters_of(self, option: str) -> frozenset:
        """The parameter names an option lists by name or position (ValueError for others)."""
        given = self.options.get(option, ())
        if isinstance(given, (str, int)):
            given = [given]
        names = []
        for p in given:
            if isinstance(p, bool) or not isinstance(p, (str, int)):
                raise TypeError(f"{self.__name__}: {option} lists parameter names or positions, got {p!r}")
            if isinstance(p, int) and not 0 <= p < len(self.arg_names):
                raise ValueError(f"{self.__name__}: {option}: position {p} is not a parameter "
                                 f"(the kernel has {len(self.arg_names)})")
            if isinstance(p, str) and p not in self.arg_names:
                raise ValueError(f"{self.__name__}: {option}: no parameter named {p!r} "
                                 f"(parameters: {', '.join(self.arg_names)})")
            names.append(self.arg_names[p] if isinstance(p, int) else p)
        return frozenset(names)

    def parse(self) -> ast.FunctionDef:
        tree = ast.parse(self.src)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == self.fn.__name__:
                return node
        raise ValueError(f"cannot find the definition of {self.fn.__name__} in its source")

    def check_parameter_names(self) -> None:
        """Refuse parameters named like a launch option that a launch could not pass: ``stream``,
        and a run-time parameter named ``num_warps``, ``num_stages``, ... Every path (compile,
        build, JIT, interpreter) refuses the kernel alike, with a CompilationError at the
        parameter. A *constexpr* named like an option other than ``stream`` is Triton's idiom
        (tutorial 02's ``num_stages: tl.constexpr``): the launch's keyword sets both."""
        from .launch import _LAUNCH_OPTIONS
        clash = [a for a in self.arg_names if a in _LAUNCH_OPTIONS
                 and (a == "stream" or a not in self.constexpr_names)]
        if not clash:
            return
        fn_def = self.parse()
        args = fn_def.args
        node = next((a for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.arg == clash[0]), fn_def)
        from ..errors import CompilationError
        raise CompilationError(f"parameter name(s) {', '.join(clash)} clash with launch options "
                               f"({', '.join(_LAUNCH_OPTIONS)}): a launch could never pass "
                               f"{'it' if len(clash) == 1 else 'them'} as a run-time argument; rename the "
                               f"parameter (a tl.constexpr other than 'stream' may share an option's name)",
                               self.source_info.loc(node), self.__name__)

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

    def _resolved(self) -> list[tuple[tuple[str, ...], object]]:
        """``(chain, value)`` for every name and attribute chain this function's source reads that
        resolves, as codegen's ``lookup`` and ``visit_Attribute`` would resolve it: closure, then
        globals, then builtins, then ``getattr`` along the chain."""
        if self._references is None:
            self._references = _references(self.parse())
        closure, globals_ = self.closure_vars(), self.fn.__globals__
        resolved = []
        for chain in self._references:
            name = chain[0]
            if name in closure:
                value = closure[name]
            elif name in globals_:
                value = globals_[name]
            else:
                value = getattr(builtins, name, _MISSING)
            for attr in chain[1:]:
                if value is _MISSING or not admitted(value):
                    break           # (codegen refuses a value a kernel may not use: no getattr on it)
                try:
                    value = outside_attribute(value, attr)
                except Exception:   # noqa: BLE001 - codegen reports it if the kernel really reads it
                    value = _MISSING
            if value is not _MISSING:
                resolved.append((chain, value))
        return resolved

    def callees(self) -> list["JITFunction"]:
        """@jit functions this kernel reaches through a global or closure name or an attribute chain
        (``helpers.twice``), transitively; itself only if it is reached again (recursion)."""
        seen: dict[int, JITFunction] = {}
        todo = [self]
        while todo:
            for _, value in todo.pop()._resolved():
                if type(value) is JITFunction and id(value) not in seen:
                    seen[id(value)] = value
                    todo.append(value)
        return list(seen.values())

    @property
    def cache_key(self) -> str:
        """Digest over everything the kernel's compile reads from its source and from outside it.

        Covered, for this function and every @jit function it reaches (by a name, an attribute
        chain such as ``helpers.twice``, or held anywhere inside a value it reads: a tuple, a
        dict, a module's namespace), recursively: its source, its ``@jit`` options and its
        parameters' default values, and for every name and attribute chain it reads (``SCALE``,
        ``cfg.BLOCK``, closure variables) the value that resolves to now, written down in full
        by ``fingerprint.Describer`` (kind and exact contents at any depth; ``tl.*`` is part of
        the compiler, whose sources are hashed apart). Paths are not part of it. Only the parsed
        references are cached per function: the values are looked up on every call, so a
        changed global (an edited module constant, a monkeypatch) gives a new key.

        Raises ``fingerprint.Uncacheable`` (naming the value) where something the kernel reads
        cannot be written down faithfully: such a kernel must be compiled every time.
        """
        from .. import __version__
        from .fingerprint import Describer, Uncacheable
        describer = Describer()
        blocks: dict[int, str] = {}
        todo = [self]
        while todo:
            f = todo.pop()
            if id(f) in blocks:
                continue
            try:
                blocks[id(f)] = f._key_block(describer)
            except Uncacheable as e:
                raise Uncacheable(f"{f.__qualname__}: {e}") from None
            todo.extend(j for i, j in describer.jits.items() if i not in blocks)
        own = blocks.pop(id(self))
        h = hashlib.sha256(f"mytriton {__version__}\n".encode())
        h.update(own.encode())
        for block in sorted(blocks.values()):       # a set: the order of discovery does not matter
            h.update(b"\0" + block.encode())
        return h.hexdigest()

    def _key_block(self, describer) -> str:
        """This function's part of a cache key: its source, options, defaults and what it reads."""
        from .fingerprint import Uncacheable
        read = [(".".join(chain), value) for chain, value in self._resolved()]
        read += [("@jit options", dict(sorted(self.options.items()))), ("the defaults", self.fn.__defaults__),
                 ("the keyword defaults", self.fn.__kwdefaults__)]
        lines = []
        for what, value in read:
            try:
                lines.append(f"{what} = {describer.describe(value)}")
            except Uncacheable as e:
                raise Uncacheable(f"'{what}' holds {e}") from None
        return f"{self.__qualname__}\n{self.src}\n" + "\n".join(lines) + "\n"

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self.__name__} is a @mytriton.jit kernel: launch it as {self.__name__}[grid](...)")

    def __getitem__(self, grid):
        def launcher(*args, **kwargs):
            return launch(self, grid, args, kwargs)
        return launcher

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"


def jit(fn=None, **options):
    """Decorator: ``@jit`` or ``@jit(**options)``."""
    if fn is None:
        return lambda f: JITFunction(f, **options)
    return JITFunction(fn, **options)

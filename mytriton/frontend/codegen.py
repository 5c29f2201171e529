"""AST frontend: interprets a kernel's Python source (the function is never called) and builds the
expression tree. One ``visit_<Node>`` per supported construct; everything else is rejected with a
``CompilationError`` naming the file, line and column (``generic_visit``).

Python values (constexprs, module objects, dtypes) are computed in Python; run-time values are
``tl.tensor``s whose operators build tree nodes. Constant-bound loops and constexpr ``if``s are
unrolled/resolved here; a loop with a run-time bound or step, a ``while`` loop and an ``if`` on a
run-time scalar become ``RegionStmt``s (``for``/``while``/``if``) with scopes of their own (seed
part 10), names assigned in them merged as Triton does. A ``return`` under a run-time condition
makes the rest of the function (the statements after the ``if``, up to the function's end) part of
each branch that does not return, as Triton's code generator does.
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import inspect
import math
import operator
import re
import sys
import threading
import types
from dataclasses import dataclass

from .. import language as tl
from ..errors import CompilationError
from ..ir.ops import OpTypeError
from ..ir.ssa import Loc
from ..ir.tree import CombineTree, RegionStmt, Scope
from ..ir.types import I1, I32, I64, BlockType, PointerType, ScalarType
from ..language.aggregate import is_aggregate_class
from ..language.core import (Composite, CompileTimeAssertionFailure, Shape, StaticAssertionError, _current_builder,
                             constexpr_type, is_builtin, tensor, to_tensor)
from ..language.triton_names import UnsupportedTritonName
from ..language.unsupported import _UnsupportedDtype as UnsupportedDtype
from .descriptors import rebuild as rebuild_descriptor
from .triton_forms import (BoundJIT, annotated_dtypes, is_name_path, is_torch_size, mismatch_message,
                           must_use_result_mark)
from .tuples import rebuild as rebuild_tuple

UNROLL_LIMIT = 128        # constant-bound `range` loops longer than this stay run-time loops
# The AST is walked recursively (a few Python frames per level of expression nesting); Python's own
# compiler accepts expressions a few thousand levels deep, so tracing runs with at least this limit.
RECURSION_LIMIT = 20000

_USER_ERRORS = (TypeError, ValueError, OpTypeError, NameError, AttributeError, IndexError, KeyError,
                ZeroDivisionError, AssertionError, OverflowError, RuntimeError)

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.Pow: operator.pow}
_CMPOPS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
           ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Is: operator.is_, ast.IsNot: operator.is_not,
           ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
# What a kernel may call besides tl builtins and @jit functions (issue #11 §4): Python builtins and
# math functions on constexprs. Anything else -- host functions, classes, the compiler's own
# modules -- would run arbitrary code at build time and is refused at the call.
_PY_BUILTINS = {"min", "max", "len", "int", "float", "bool", "abs", "isinstance", "tuple", "list",
                "getattr", "hasattr", "round", "zip", "enumerate", "str", "type", "all", "any",
                "sum", "divmod", "pow", "reversed", "sorted", "repr"}
_MATH = {"ceil", "floor", "trunc", "log", "log2", "log10", "log1p", "exp", "exp2", "expm1", "sqrt",
         "isqrt", "pow", "gcd", "lcm", "fabs", "fmod", "copysign", "isnan", "isinf", "isfinite",
         "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "hypot",
         "erf", "erfc", "radians", "degrees", "ldexp", "frexp", "modf", "remainder", "isclose"}

# Bounds on what constexpr (Python) evaluation may create: sequences and strings of at most
# MAX_CONSTEXPR_LEN items, integers of at most MAX_CONSTEXPR_BITS bits; and the number of AST
# nodes one compile may evaluate (unrolled loops and inlined calls included).
MAX_CONSTEXPR_LEN = 1 << 20
MAX_CONSTEXPR_BITS = 1 << 16
MAX_TRACE_STEPS = 500_000
# Run-time loops may nest this deep (inlined calls included): the passes and backends walk nested
# regions recursively.
MAX_LOOP_NESTING = 64


# What a kernel may take from outside itself (module globals, attributes of modules, closure
# variables, constexpr arguments, parameter defaults, builtins): values whose every special method
# is the interpreter's or the compiler's own -- numbers, strings, bytes, None; tuples, lists, sets,
# dicts and types.SimpleNamespaces of admitted values; dtypes and the language's own objects;
# modules, functions, @jit functions, builtin and tl classes; numpy's scalars. Anything else (an
# instance of a host class, an enum member) would run its own code when the kernel used it --
# `str(obj)`, `obj.attr`, `obj + 1`, `len(obj)` -- so it is refused where the kernel reads it. Types
# are compared exactly and by id: `isinstance`, `==` or hashing could already run the object's (or
# its class's) code.
_SCALAR_TYPES = (int, float, bool, complex, str, bytes, type(None), type(Ellipsis))
_CODE_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodWrapperType,
               types.WrapperDescriptorType, types.MethodDescriptorType, types.ClassMethodDescriptorType)
_MAX_ADMIT_DEPTH = 32
# The only ``__dunder__`` attributes of a function a kernel may read (of a module: ``__doc__``):
# the rest are the host's bookkeeping (``__file__``, ``__name__`` of a kernel file's private module,
# ``__globals__``, ``__closure__``), which differs between machines and no cache key covers.
_READABLE_DUNDERS = frozenset({"__name__", "__qualname__", "__doc__"})
_admitted_ids: tuple[dict[int, str], set[int]] | None = None


def _admitted_type_ids() -> tuple[dict[int, str], set[int]]:
    """id(type) -> what an instance of it is ("scalar", "seq", "dict", "code", "leaf": a compiler
    object, "module", "method", "class"), and the ids of the classes a kernel may name."""
    global _admitted_ids
    if _admitted_ids is None:
        from ..ir.types import BlockType, PointerType, ScalarType
        from .jit import JITFunction
        from ..ir.ops import np_dtype
        from ..ir.types import SCALARS
        # numpy's scalars (ml_dtypes' bfloat16 where it is installed): their methods are numpy's
        # own (C), like the builtins'
        numpy_scalars = []
        for t in SCALARS.values():
            try:
                numpy_scalars.append(np_dtype(t))
            except ImportError:
                pass
        kinds = {id(t): "scalar" for t in (*_SCALAR_TYPES, *numpy_scalars)}
        kinds.update({id(t): "seq" for t in (tuple, list, set, frozenset, Shape)})     # (Shape: a tuple of ints)
        kinds.update({id(dict): "dict", id(types.SimpleNamespace): "ns", id(types.ModuleType): "module",
                      id(types.MethodType): "method", id(type): "class"})
        kinds.update({id(t): "code" for t in _CODE_TYPES})
        ours = (tensor, ScalarType, PointerType, BlockType, JITFunction, tl.range, tl.static_range, tl.block_ptr,
                tl.tensor_descriptor, constexpr_type)
        kinds.update({id(t): "leaf" for t in ours})
        classes = [v for k, v in vars(builtins).items() if not k.startswith("_") and type(v) is type]
        tt = tl.triton_types
        classes += [*ours, type(None), tl.constexpr, tl.PropagateNan, tl.pointer_type, tt.tuple, tt.tuple_type,
                    tt.slice, tt.block_type, tt.condition, tt.tensor_descriptor_type, tt.const]
        kinds[id(type(tl.pointer_type))] = "class"       # (its metaclass: isinstance of any pointer type)
        kinds[id(type(tt.tuple))] = "class"              # (tl.tuple's, tl.slice's, tl.block_type's)
        kinds.update({id(t): "leaf" for t in (tt.tuple_type, tt.tensor_descriptor_type, type(tt.void))})
        _admitted_ids = kinds, {id(c) for c in classes}
    return _admitted_ids


def _items(value, kind: str):
    """The values (keys too) held by a container of an admitted type."""
    if kind == "seq":
        return value
    namespace = value if kind == "dict" else object.__getattribute__(value, "__dict__")
    return (x for kv in dict.items(namespace) for x in kv)


def admitted(value, depth: int = 0) -> bool:
    """Whether a kernel may use ``value``, read from outside it (see ``_SCALAR_TYPES`` above).
    Looks only at exact types, never at the value's own attributes or methods."""
    kinds, classes = _admitted_type_ids()
    kind = kinds.get(id(type(value)))
    if kind is None:
        return False
    if kind == "class":                         # type(value) is type: a class without a metaclass
        return id(value) in classes or is_aggregate_class(value)
    if kind in ("seq", "dict", "ns"):
        if depth >= _MAX_ADMIT_DEPTH:
            return False
        return all(admitted(v, depth + 1) for v in _items(value, kind))
    if kind == "method":                        # a bound Python method: x.to on a tensor
        return type(value.__func__) is types.FunctionType and admitted(value.__self__, depth + 1)
    return True


def _is_own_module(module) -> bool:
    name = vars(module).get("__name__")
    return type(name) is str and name.split(".")[0] == "mytriton"


def outside_attribute(base, attr: str):
    """``base.attr`` for a value a kernel may use, as the frontend reads it: a module's attribute
    from its namespace (only mytriton's own modules compute one on first use); raises AttributeError."""
    if type(base) is types.ModuleType:
        if attr in vars(base):
            return vars(base)[attr]
        if not _is_own_module(base):
            raise AttributeError(attr)
    return getattr(base, attr)


def type_name(value) -> str:
    """The name of ``value``'s class, read without running any of its (or its metaclass's) code."""
    cls = type(value)
    name = type.__dict__["__qualname__"].__get__(cls, type)
    module = type.__dict__["__module__"].__get__(cls, type)
    return f"{module}.{name}" if type(module) is str and module != "builtins" else name


def _offender(value, depth: int = 0):
    """The value inside ``value`` (a container, or a bound method's object) that is not ``admitted``."""
    kinds, _ = _admitted_type_ids()
    kind = kinds.get(id(type(value)))
    if depth < _MAX_ADMIT_DEPTH and kind in ("seq", "dict", "ns", "method"):
        items = (value.__func__, value.__self__) if kind == "method" else _items(value, kind)
        for v in items:
            if not admitted(v, depth + 1):
                return _offender(v, depth + 1)
    return value


def not_admitted(what: str, value) -> str:
    offender = _offender(value)
    holding = f" holding a {type_name(offender)}" if offender is not value else ""
    return (f"'{what}' is a {type_name(value)}{holding}: from outside itself a kernel may use only numbers, "
            f"strings, bytes, None, tuples, lists, sets, dicts and SimpleNamespaces of those, dtypes, "
            f"modules, functions and @jit functions (any other object would run its own methods on the host)")


def _size_error(what: str) -> ValueError:
    return ValueError(f"{what}: compile-time values are limited to {MAX_CONSTEXPR_LEN} items per "
                      f"sequence or string and {MAX_CONSTEXPR_BITS}-bit integers")


def check_constexpr_op(op, lhs, rhs) -> None:
    """Refuse Python arithmetic on constexprs whose result would be huge, before computing it."""
    def is_int(v):
        return isinstance(v, int)

    def is_seq(v):
        return isinstance(v, (str, bytes, tuple, list))

    if op is operator.mul:
        if is_seq(lhs) and is_int(rhs) or is_seq(rhs) and is_int(lhs):
            seq, n = (lhs, rhs) if is_seq(lhs) else (rhs, lhs)
            if len(seq) * max(0, n) > MAX_CONSTEXPR_LEN:
                raise _size_error(f"repeating a {type(seq).__name__} of length {len(seq)} {n} times is too large")
        elif is_int(lhs) and is_int(rhs) and lhs.bit_length() + rhs.bit_length() > MAX_CONSTEXPR_BITS:
            raise _size_error("the product is too large")
    elif op is operator.add:
        if is_seq(lhs) and is_seq(rhs) and len(lhs) + len(rhs) > MAX_CONSTEXPR_LEN:
            raise _size_error("the concatenation is too large")
    elif op is operator.pow:
        if is_int(lhs) and is_int(rhs) and rhs > 0 and abs(lhs) > 1 \
                and (lhs.bit_length() - 1) * rhs > MAX_CONSTEXPR_BITS:
            raise _size_error(f"{lhs} ** {rhs} is too large")
    elif op is operator.mod and isinstance(lhs, (str, bytes)):
        text = lhs.decode("latin-1") if isinstance(lhs, bytes) else lhs
        fields = re.findall(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d*)(?:\.(\*|\d*))?", text)
        if any(n == "*" for f in fields for n in f):
            raise _size_error("a '*' width or precision in a %-format is not allowed in a kernel")
        if any(n and int(n) > MAX_CONSTEXPR_LEN for f in fields for n in f):
            raise _size_error("a width in the %-format is too large")
    elif op is operator.lshift:
        if is_int(lhs) and is_int(rhs) and lhs != 0 and lhs.bit_length() + rhs > MAX_CONSTEXPR_BITS:
            raise _size_error(f"{lhs} << {rhs} is too large")


def _call_name(fn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__


class SourceInfo:
    """Where a function's parsed source sits in its file (for error locations)."""

    def __init__(self, file: str, first_line: int, indent: int, lines: list[str], function: str):
        self.file, self.first_line, self.indent, self.lines, self.function = file, first_line, indent, lines, function

    def loc(self, node: ast.AST) -> Loc:
        line = self.first_line + node.lineno - 1
        col = node.col_offset + self.indent + 1
        text = self.lines[node.lineno - 1] if 0 < node.lineno <= len(self.lines) else ""
        return Loc(self.file, line, col, (" " * self.indent) + text, self.function)


_INLINE = object()      # (CodeGenerator.device_call: the helper is inlined)


class _Return(Exception):
    """Unwinds the statement lists after a `return` (statically known, or the end of an ``if`` that
    holds the rest of the function in its branches)."""


class _OneBranch:
    """What a name holds after a run-time ``if`` that assigned it in only one branch: using it is an
    error (as in Triton, where it is not defined there)."""
    __slots__ = ("name", "line")

    def __init__(self, name: str, line: int):
        self.name, self.line = name, line


_MISSING = object()


@dataclass
class _Carried:
    """The values a run-time loop carries: each name's value at the loop's entry (its template) and
    the leaves it flattens to (a tuple's items, a block pointer's parts), one region argument each."""
    names: list[str]
    templates: list
    inputs: list                 # the leaves' initial nodes
    leaf_names: list[str]        # (a name, or name_i for the leaves of a tuple or composite)

    def args(self, builder, scope: Scope) -> tuple:
        """One region argument per leaf, in ``scope``."""
        return tuple(builder.leaf("region_arg", n.type, scope, name=name)
                     for n, name in zip(self.inputs, self.leaf_names))

    def env(self, leaves) -> dict:
        """The carried names rebuilt from one node per leaf (region arguments or results)."""
        parts = iter(tensor(x) for x in leaves)
        return {name: _unflatten(t, parts) for name, t in zip(self.names, self.templates)}


def _has_return(stmts: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Return) for s in stmts for n in ast.walk(s))


def _flatten(v) -> list:
    """The leaves of a value made of tuples and composites (block pointers...): the values merged
    after a run-time ``if`` or carried by a loop one by one."""
    if isinstance(v, tuple):
        return [x for e in v for x in _flatten(e)]
    if isinstance(v, Composite):
        return _flatten(v.parts)
    return [v]


def _shape_of_tree(v):
    """What must agree between two values merged leaf by leaf: their tuple and composite structure."""
    if isinstance(v, tuple):
        return tuple(_shape_of_tree(e) for e in v)
    if isinstance(v, Composite):
        return type(v).__name__, v.static, _shape_of_tree(v.parts)
    return None


def _unflatten(template, parts):
    """``template`` rebuilt from the iterator ``parts`` of new leaves."""
    if isinstance(template, tuple):
        return tuple(_unflatten(e, parts) for e in template)
    if isinstance(template, Composite):
        return template.with_parts(_unflatten(template.parts, parts))
    return next(parts)


def _describe(v) -> str:
    if v is None:
        return "nothing"
    if isinstance(v, tuple):
        return f"a tuple of {len(v)}"
    if isinstance(v, Composite):
        return f"a {type(v).__name__}"
    return "a value"


class AssignedNames(ast.NodeVisitor):
    """Names assigned anywhere in a loop body, in source order (seed part 10)."""

    def __init__(self):
        self.names: list[str] = []

    def _add(self, target):
        if isinstance(target, ast.Name):
            if target.id not in self.names:
                self.names.append(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._add(t)

    def visit_Assign(self, node):
        for t in node.targets:
            self._add(t)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._add(node.target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self._add(node.target)
        self.generic_visit(node)

    def visit_For(self, node):
        self._add(node.target)
        self.generic_visit(node)


class CodeGenerator(ast.NodeVisitor):
    def __init__(self, jit_fn, env: dict, builder, call_depth: int = 0):
        self.jit_fn = jit_fn
        self.src: SourceInfo = jit_fn.source_info
        self.env = env
        self.globals = jit_fn.fn.__globals__
        self.closure = jit_fn.closure_vars()
        self.builder = builder
        self.call_depth = call_depth
        self.return_value = None
        self.loop_depth = 0
        # names bound as compile-time values (constexpr parameters, ``x: tl.constexpr = ...``):
        # their ``.type`` is a constexpr_type, where a plain name holding a number reads as a tensor
        self.constexpr_vars = set(jit_fn.constexpr_names)
        # the statements still to run after the one being visited, innermost list last (None: an
        # unrolled loop, past which the rest is not a list of statements)
        self.pending: list[list[ast.stmt] | None] = []

    # --- driving -------------------------------------------------------------------------------

    def run(self, fn_def: ast.FunctionDef):
        token = _current_builder.set(self.builder)
        try:
            self.visit_block(fn_def.body)
        except _Return:
            pass
        finally:
            _current_builder.reset(token)
        return self.return_value

    def error(self, node: ast.AST, message: str) -> CompilationError:
        return CompilationError(message, self.src.loc(node), self.src.function)

    def visit(self, node):
        self.builder.steps += 1
        if self.builder.steps > MAX_TRACE_STEPS:
            raise self.error(node, f"the kernel takes more than {MAX_TRACE_STEPS} steps to trace (unrolled "
                                   f"loops and inlined @jit calls); use a run-time loop (range with a "
                                   f"run-time bound) or fewer static iterations")
        saved = self.builder.loc
        if hasattr(node, "lineno"):
            self.builder.loc = self.src.loc(node)
        try:
            return super().visit(node)
        except (CompilationError, _Return):
            raise
        except RecursionError:
            raise self.error(node, "the kernel nests expressions or @jit calls too deeply to compile") from None
        except _USER_ERRORS as e:
            # as Triton: the error of the builtin that refused (its type and text) is the cause,
            # without its frames (they are the compiler's)
            e.__suppress_context__ = True
            if isinstance(e, StaticAssertionError):
                raise CompileTimeAssertionFailure(str(e), self.src.loc(node), self.src.function) \
                    from e.with_traceback(None)
            raise self.error(node, str(e) or type(e).__name__) from e.with_traceback(None)
        finally:
            self.builder.loc = saved

    def generic_visit(self, node):
        raise self.error(node, f"unsupported Python construct in a kernel: {type(node).__name__}")

    def visit_block(self, stmts: list[ast.stmt]):
        for i, s in enumerate(stmts):
            self.pending.append(stmts[i + 1:])
            try:
                self.visit(s)
            finally:
                self.pending.pop()

    def visit_unrolled(self, stmts: list[ast.stmt]):
        """One iteration of an unrolled loop's body."""
        self.pending.append(None)
        try:
            self.visit_block(stmts)
        finally:
            self.pending.pop()

    # --- statements -------------------------------------------------------------------------------

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Call) and is_name_path(node.value.func):
            mur = must_use_result_mark(self.visit(node.value.func))
            if mur:         # (Triton's @must_use_result: a call whose result is dropped)
                text = f"The result of {ast.unparse(node.value.func)} is not being used."
                raise self.error(node.value, text + (f" {mur}" if isinstance(mur, str) else ""))
        self.visit(node.value)

    def visit_Pass(self, node):
        pass

    def assign(self, target: ast.expr, value):
        if isinstance(target, ast.Name):
            if isinstance(value, list):
                value = tuple(value)
            self.env[target.id] = value
            self.constexpr_vars.discard(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, (tuple, list)):
                raise self.error(target, f"cannot unpack {type(value).__name__} into {len(target.elts)} names")
            if len(value) != len(target.elts):
                raise self.error(target, f"cannot unpack {len(value)} values into {len(target.elts)} names")
            for t, v in zip(target.elts, value):
                self.assign(t, v)
        else:
            raise self.error(target, "only assignments to names are supported (no subscript or attribute targets)")

    def visit_Assign(self, node):
        value = self.visit(node.value)
        for t in node.targets:
            self.assign(t, value)

    def visit_AnnAssign(self, node):
        from .jit import is_constexpr_annotation
        if node.value is None:
            raise self.error(node, "annotated declaration without a value")
        value = self.visit(node.value)
        self.assign(node.target, value)
        if is_constexpr_annotation(node.annotation) and isinstance(node.target, ast.Name):
            if isinstance(value, tensor):
                raise self.error(node.value, f"'{node.target.id}' is annotated tl.constexpr but is given a run-time "
                                             f"value")
            self.constexpr_vars.add(node.target.id)

    def visit_AugAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "only assignments to names are supported")
        cur = self.lookup(node.target)
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"unsupported operator {type(node.op).__name__}")
        rhs = self.visit(node.value)
        if op is operator.pow and (isinstance(cur, tensor) or isinstance(rhs, tensor)):
            raise self.error(node, "`**` on run-time values is not supported")
        check_constexpr_op(op, cur, rhs)
        self.env[node.target.id] = op(cur, rhs)

    def visit_If(self, node):
        cond = self.visit(node.test)
        if isinstance(cond, tensor):
            return self.runtime_if(node, self.condition(node.test, cond, "if"))
        self.visit_block(node.body if cond else node.orelse)

    def condition(self, test: ast.expr, cond: tensor, what: str) -> tensor:
        """A run-time condition as a scalar int1 (non-zero is true, as Triton's ``cond.to(int1)``);
        a block of one element is that element (Triton "unsplats" it)."""
        if isinstance(cond.type, BlockType) and cond.type.numel == 1:
            cond = cond.item()
        if isinstance(cond.type, BlockType):
            raise self.error(test, f"the condition of a run-time `{what}` must be a scalar, got a block "
                                   f"({cond.type}); use tl.where to choose between blocks element by element"
                                   + (", or reduce the condition (tl.max, tl.sum) to a scalar"
                                      if what == "while" else ""))
        if cond.dtype == I1:
            return cond
        if isinstance(cond.dtype, PointerType):
            raise self.error(test, f"the condition of a run-time `{what}` must be a number, got {cond.type}")
        return cond != 0

    def trace_scope(self, scope: Scope, stmts, env: dict | None = None):
        """Visit ``stmts`` (or call it) in ``scope`` with a copy of the environment (updated by
        ``env``); the environment they leave, and what they return (``_MISSING`` when they fall
        off the end)."""
        b = self.builder
        saved_env, saved_scope = self.env, b.scope
        self.env = dict(saved_env)
        self.env.update(env or {})
        b.scope = scope
        returned = _MISSING
        try:
            if callable(stmts):
                returned = stmts()
            else:
                self.visit_block(stmts)
        except _Return:
            returned = self.return_value
        finally:
            out, self.env, b.scope = self.env, saved_env, saved_scope
        return out, returned

    def merge(self, node: ast.AST, name: str, then_v, else_v, before=_MISSING):
        """The run-time value a name (or a returned value) has after an ``if`` whose branches give it
        ``then_v`` and ``else_v``: Triton's rule -- a Python number becomes a constant tensor of its
        own type (int32/int64, fp32, int1), then both branches must agree on the type exactly."""
        values = []
        for v in (then_v, else_v):
            if isinstance(v, (int, float, bool)):
                v = to_tensor(v)
            if not isinstance(v, tensor):
                shown = "None" if v is None else type_name(v)
                raise self.error(node, f"{name} is {shown} in one branch of this run-time `if` and differs in "
                                       f"the other: only numbers and run-time values may differ between branches")
            values.append(v)
        a, b = values
        if a.type != b.type:
            if isinstance(before, (tensor, int, float, bool)):
                init = to_tensor(before).type
                bad, branch = (a, "then") if a.type != init else (b, "else")
                raise self.error(node, f"initial value for {name} is of type {init}, but the {branch} branch "
                                       f"of this run-time `if` redefines it as {bad.type}; keep one type (e.g. "
                                       f"convert with .to(...))")
            raise self.error(node, f"mismatched type for {name} between the then branch ({a.type}) and the else "
                                   f"branch ({b.type}) of this run-time `if`")
        return a, b

    def runtime_if(self, node: ast.If, cond: tensor):
        """Both branches traced in scopes of their own; the names they assign are merged into the
        results of an ``if`` op (a name assigned in one branch only and new there is not defined
        after it)."""
        if _has_return(node.body + node.orelse):
            return self.returning_if(node, cond)
        outer = self.builder.scope
        then_scope, else_scope = Scope(outer), Scope(outer)
        then_env, _ = self.trace_scope(then_scope, node.body)
        else_env, _ = self.trace_scope(else_scope, node.orelse)
        names, outs = [], ([], [])
        merged = []                        # (name, its then-value as the template of a tuple/composite)
        for name in dict.fromkeys([*then_env, *else_env]):
            t, e = then_env.get(name, _MISSING), else_env.get(name, _MISSING)
            if t is e:
                # not assigned in either branch, or both bind it to one value from before the `if`
                # (`r = x` in both, or `r = x.to(x.dtype)`): defined after it either way
                self.env[name] = t
                continue
            if t is _MISSING or e is _MISSING or isinstance(t, _OneBranch) or isinstance(e, _OneBranch):
                self.env[name] = _OneBranch(name, self.src.loc(node).line)
            elif isinstance(t, (tuple, Composite)) or isinstance(e, (tuple, Composite)):
                if _shape_of_tree(t) != _shape_of_tree(e):
                    raise self.error(node, mismatch_message(name, t, e, _describe))
                merged.append((name, t))
                for i, (tl_, el) in enumerate(zip(_flatten(t), _flatten(e))):
                    ta, ea = self.merge(node, f"`{name}`", tl_, el)
                    names.append(f"{name}_{i}")
                    outs[0].append(ta.node)
                    outs[1].append(ea.node)
            elif not (isinstance(t, tensor) or isinstance(e, tensor)) and type(t) is type(e) and t == e:
                self.env[name] = t                         # the same constant either way
            else:
                ta, ea = self.merge(node, f"`{name}`", t, e, self.env.get(name, _MISSING))
                merged.append((name, None))
                names.append(name)
                outs[0].append(ta.node)
                outs[1].append(ea.node)
        results = iter(tensor(r) for r in self.region_stmt("if", (cond.node,), (then_scope, else_scope), ((), ()),
                                                           outs, [n.type for n in outs[0]], names, node))
        for name, template in merged:
            self.env[name] = next(results) if template is None else _unflatten(template, results)

    def returning_if(self, node: ast.If, cond: tensor):
        """An ``if`` with a ``return`` inside: each branch continues with the rest of the function
        and ends by returning; the ``if`` yields what they return, which the function returns."""
        if self.loop_depth:
            raise self.error(node, "a `return` inside a run-time loop is not supported (also under an `if`): "
                                   "restructure the loop so that the function returns after it")
        rest: list[ast.stmt] = []
        for stmts in reversed(self.pending):
            if stmts is None:
                raise self.error(node, "a `return` under a run-time condition inside an unrolled loop "
                                       "(tl.static_range, a constant-bound range) is not supported")
            rest += stmts
        saved_pending, self.pending = self.pending, []
        outer = self.builder.scope
        scopes = (Scope(outer), Scope(outer))
        returned = []
        try:
            for scope, stmts in zip(scopes, (node.body, node.orelse)):
                self.return_value = None
                _, value = self.trace_scope(scope, stmts + rest)
                returned.append(None if value is _MISSING else value)
        finally:
            self.pending = saved_pending
        if _shape_of_tree(returned[0]) != _shape_of_tree(returned[1]):
            raise self.error(node, "the branches of this run-time `if` return different kinds of values "
                                   f"({_describe(returned[0])} and {_describe(returned[1])})")
        outs, merged = ([], []), []
        for t, e in zip(_flatten(returned[0]), _flatten(returned[1])):
            if t is None and e is None:
                merged.append(None)
            elif not (isinstance(t, tensor) or isinstance(e, tensor)) and type(t) is type(e) and t == e:
                merged.append(t)
            else:
                ta, ea = self.merge(node, "the returned value", t, e)
                outs[0].append(ta.node)
                outs[1].append(ea.node)
                merged.append(_MISSING)                  # the if's next result
        results = iter(self.region_stmt("if", (cond.node,), scopes, ((), ()), outs,
                                        [n.type for n in outs[0]], ["return"] * len(outs[0]), node))
        parts = [tensor(next(results)) if m is _MISSING else m for m in merged]
        self.return_value = _unflatten(returned[0], iter(parts))
        raise _Return()

    def region_stmt(self, op: str, operands, scopes, args, exits, result_types, names, node, attrs=None):
        """Record a RegionStmt in the current scope; its result leaves."""
        b = self.builder
        st = RegionStmt(op, tuple(operands), tuple(scopes), tuple(args), tuple(tuple(e) for e in exits),
                        loc=self.src.loc(node), attrs={"names": tuple(names), **(attrs or {})})
        st.results = tuple(b.leaf("region_result", t, b.scope, index=i) for i, t in enumerate(result_types))
        b.scope.statements.append(st)
        return st.results

    def visit_Return(self, node):
        if self.loop_depth:
            raise self.error(node, "`return` inside a run-time loop is not supported")
        self.return_value = self.visit(node.value) if node.value is not None else None
        raise _Return()

    def visit_Assert(self, node):
        """As Triton: ``assert`` on a run-time value is ``tl.device_assert(cond, msg)`` (checked in
        kernels compiled with ``debug=True``); on a compile-time value it is checked now."""
        cond = self.visit(node.test)
        if isinstance(cond, tensor):
            msg = self.visit(node.msg) if node.msg is not None else ""
            if not isinstance(msg, str):
                raise self.error(node.msg, f"the message of an `assert` on a run-time value must be a str, got "
                                           f"{type(msg).__name__}")
            tl.device_assert(cond, msg)
            return
        if not cond:
            msg = self.visit(node.msg) if node.msg is not None else ""
            raise self.error(node, f"assertion failed: {msg}" if msg else "assertion failed")

    def visit_While(self, node):
        """A ``while`` on a run-time condition: MLIR's scf.while, the test in the before region, the
        body in the after region, the names the body assigns (and that exist before) carried."""
        if node.orelse:
            raise self.error(node, "while/else is not supported")
        assigned = self.check_loop_body(node.body)
        b = self.builder
        if b.loop_nesting >= MAX_LOOP_NESTING:
            raise self.error(node, f"run-time loops nest more than {MAX_LOOP_NESTING} deep (counting loops in "
                                   f"inlined @jit calls)")
        carried = self.carried_values(node, assigned)
        outer = b.scope
        before, after = Scope(outer), Scope(outer)
        before_args, after_args = carried.args(b, before), carried.args(b, after)

        hints = {}

        def test():
            cond = self.visit(node.test)
            if isinstance(cond, tl.condition):          # while tl.condition(c, disable_licm=...)
                if cond.disable_licm:
                    hints["disable_licm"] = True
                cond = cond.condition
            if not isinstance(cond, tensor):
                raise self.error(node.test, "the condition of a `while` loop must be a run-time value (a "
                                            "compile-time condition would never run the loop or never end it)")
            return self.condition(node.test, cond, "while")

        _, cond = self.trace_scope(before, test, carried.env(before_args))
        outputs = self.loop_body(node, node.body, after, carried, carried.env(after_args))
        results = self.region_stmt("while", carried.inputs, (before, after), (before_args, after_args),
                                   ((cond.node, *before_args), outputs), [n.type for n in carried.inputs],
                                   carried.leaf_names, node, attrs=hints)
        self.env.update(carried.env(results))

    def visit_Break(self, node):
        raise self.error(node, "`break` is not supported in kernel loops")

    def visit_Continue(self, node):
        raise self.error(node, "`continue` is not supported in kernel loops")

    def visit_FunctionDef(self, node):
        raise self.error(node, "nested function definitions are not supported; define a @jit function at module level")

    def visit_Lambda(self, node):
        raise self.error(node, "lambdas are not supported in kernels")

    # --- loops -----------------------------------------------------------------------------------

    def visit_For(self, node):
        it = node.iter
        if node.orelse:
            raise self.error(node, "for/else is not supported")
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a simple name")
        iterable = None
        if isinstance(it, ast.Call):
            fn = self.visit(it.func)
            if fn is builtins.range or fn is tl.range or fn is tl.static_range:
                args = [self.visit(a) for a in it.args]
                kwargs = {k.arg: self.visit(k.value) for k in it.keywords}
                if fn is builtins.range and kwargs:
                    raise self.error(it, "range() takes no keyword arguments")
                try:
                    r = (tl.range if fn is builtins.range else fn)(*args, **kwargs)
                except TypeError as e:
                    raise self.error(it, str(e)) from None
                return self.range_loop(node, r, static=fn is tl.static_range)
            iterable = fn if not it.args else None
        if iterable is None:
            iterable = self.visit(it)
        if isinstance(iterable, (tuple, list)):
            for v in iterable:
                self.env[node.target.id] = v
                self.visit_unrolled(node.body)
            return
        raise self.error(it, "kernels can only loop over range(...), tl.range(...), tl.static_range(...) or a constant tuple")

    def range_loop(self, node: ast.For, r, static: bool):
        bounds = (r.start, r.stop, r.step)
        constant = all(type(b) is int for b in bounds)
        if static and not constant:
            raise self.error(node.iter, "tl.static_range bounds must be compile-time constants (constexprs); "
                                        "use range(...) for a run-time loop")
        if type(r.step) is int and r.step == 0:
            raise self.error(node.iter, "range() arg 3 must not be zero")
        if not (type(r.step) is int or isinstance(r.step, tensor)):
            raise self.error(node.iter, f"the loop step must be an integer, got {r.step!r}")
        assigned = self.check_loop_body(node.body)
        if constant and (static or len(range(*bounds)) <= UNROLL_LIMIT) and not getattr(r, "hints", None):
            for v in range(*bounds):
                # tl.static_range gives a constexpr index; a `range` index is a run-time i32 in
                # Triton (its // and % truncate, it wraps), so here it is an i32 constant
                self.env[node.target.id] = v if static else to_tensor(v)
                self.visit_unrolled(node.body)
            return
        self.runtime_loop(node, r, assigned)

    def check_loop_body(self, body: list[ast.stmt]) -> list[str]:
        """Reject break/continue; the names the body assigns. (The loop variable may be assigned, as
        in Python and Triton: ``start_n = tl.multiple_of(start_n, BLOCK_N)``; the new value holds for
        the rest of that iteration and the next iteration takes the next index.)"""
        for sub in ast.walk(ast.Module(body=body, type_ignores=[])):
            if isinstance(sub, ast.Break):
                raise self.error(sub, "`break` is not supported in kernel loops")
            if isinstance(sub, ast.Continue):
                raise self.error(sub, "`continue` is not supported in kernel loops")
        assigned = AssignedNames()
        for s in body:
            assigned.visit(s)
        return assigned.names

    def carried_values(self, node, assigned_names: list[str], exclude: str | None = None) -> "_Carried":
        """The names a loop carries (assigned in it and defined before it), flattened to leaves."""
        names = [n for n in assigned_names
                 if n in self.env and n != exclude and not isinstance(self.env[n], _OneBranch)]
        carried = _Carried(names, [self.env[n] for n in names], [], [])
        for name, v in zip(names, carried.templates):
            leaves = _flatten(v)
            for i, leaf in enumerate(leaves):
                if not isinstance(leaf, (tensor, int, float, bool)):
                    held = type(v).__name__ if len(leaves) == 1 else f"{_describe(v)} holding {type_name(leaf)}"
                    raise self.error(node, f"'{name}' is reassigned in a run-time loop but holds {held}, "
                                           "which cannot be carried across iterations")
                carried.inputs.append(to_tensor(leaf).node)
                carried.leaf_names.append(name if len(leaves) == 1 else f"{name}_{i}")
        return carried

    def loop_body(self, node, body: list[ast.stmt], scope: Scope, carried: "_Carried", env: dict):
        """Trace a loop body in ``scope``; the carried leaves' values at its end (of their initial types)."""
        b = self.builder

        def run():
            self.visit_block(body)
            outputs = []
            for name, template in zip(carried.names, carried.templates):
                value = self.env[name]
                if isinstance(value, _OneBranch):
                    raise self.error(node, f"loop-carried variable '{name}' is assigned in only one branch "
                                           f"of the run-time `if` at line {value.line} in the loop body")
                if _shape_of_tree(value) != _shape_of_tree(template):
                    raise self.error(node, f"loop-carried variable '{name}' enters the loop as "
                                           f"{_describe(template)} but is reassigned to {_describe(value)} of "
                                           f"another structure in the body (a tuple's length, a block pointer's "
                                           f"block shape and order must stay)")
                for leaf in _flatten(value):
                    init = carried.inputs[len(outputs)]
                    if not isinstance(leaf, (tensor, int, float, bool)):
                        raise self.error(node, f"loop-carried variable '{name}' is reassigned to "
                                               f"{type_name(leaf)}, which cannot be carried across iterations")
                    out = to_tensor(leaf, init.type.scalar).node
                    if out.type != init.type:
                        raise self.error(node, f"loop-carried variable '{name}' enters the loop as {init.type} "
                                               f"but is reassigned to {out.type} in the body; give it its final "
                                               f"type before the loop (e.g. tl.zeros(shape, dtype))")
                    outputs.append(out)
            return outputs

        self.loop_depth += 1
        b.loop_nesting += 1
        try:
            _, outputs = self.trace_scope(scope, run, env)
        finally:
            self.loop_depth -= 1
            b.loop_nesting -= 1
        return outputs

    def runtime_loop(self, node: ast.For, r, assigned_names: list[str]):
        b = self.builder
        if b.loop_nesting >= MAX_LOOP_NESTING:
            raise self.error(node, f"run-time loops nest more than {MAX_LOOP_NESTING} deep (counting loops in "
                                   f"inlined @jit calls)")
        start, stop = (to_tensor(x) for x in (r.start, r.stop))
        if not isinstance(r.step, tensor):
            if r.step == 0:
                raise self.error(node.iter, "range() arg 3 must not be zero")
            if not -2**63 <= r.step < 2**63:
                raise self.error(node.iter, f"the step of a run-time loop must fit in int64, got {r.step}")
        step = r.step if isinstance(r.step, tensor) else to_tensor(r.step, I32 if -2**31 <= r.step < 2**31 else I64)
        for name, v in (("start", start), ("stop", stop), ("step", step)):
            if v.type not in (I32, I64):
                raise self.error(node.iter, f"run-time loop bounds and step must be int32 or int64 scalars; the "
                                            f"{name} is {v.type}")
        # the index has the promoted type of the three, as in Triton: int64 when one of them is
        index_type = I64 if I64 in (start.type, stop.type, step.type) else I32
        start, stop, step = (v if v.type == index_type else v.to(index_type) for v in (start, stop, step))
        carried = self.carried_values(node, assigned_names, node.target.id)
        body = Scope(b.scope)
        index = b.leaf("region_arg", index_type, body, name=node.target.id)
        args = carried.args(b, body)
        outputs = self.loop_body(node, node.body, body, carried, {node.target.id: tensor(index), **carried.env(args)})
        results = self.region_stmt("for", (start.node, stop.node, step.node, *carried.inputs), (body,),
                                   ((index, *args),), (outputs,), [n.type for n in carried.inputs],
                                   carried.leaf_names, node, attrs=dict(getattr(r, "hints", {})))
        self.env.update(carried.env(results))

    # --- expressions ------------------------------------------------------------------------------

    def visit_Constant(self, node):
        return node.value

    def admit(self, node: ast.AST, value, what: str | None = None):
        """``value``, read from outside the kernel at ``node``, if a kernel may use it (``admitted``)."""
        if type(value) is UnsupportedDtype:              # tl.float8e4b8: refused where it is named
            raise self.error(node, value.message())
        if not admitted(value):
            raise self.error(node, not_admitted(what or ast.unparse(node), value))
        return value

    def lookup(self, node: ast.Name):
        name = node.id
        if name in self.env:
            value = self.env[name]
            if isinstance(value, _OneBranch):
                raise self.error(node, f"'{name}' is assigned in only one branch of the run-time `if` at line "
                                       f"{value.line}, so it has no value here; assign it before the `if` or "
                                       f"in both branches")
            return value
        if name in self.closure:
            return self.admit(node, self.closure[name])
        if name in self.globals:
            self.admit(node, self.globals[name])
            return self.builder.read_global(self.globals, name)
        if name in vars(builtins):
            return self.admit(node, vars(builtins)[name])
        raise self.error(node, f"name '{name}' is not defined")

    def visit_Name(self, node):
        return self.lookup(node)

    def visit_Attribute(self, node):
        base = self.visit(node.value)          # a value the kernel may use: its attributes run no host code
        if node.attr == "type" and isinstance(node.value, ast.Name) and node.value.id in self.constexpr_vars \
                and not isinstance(base, tensor):
            return constexpr_type(base)
        if isinstance(base, Composite) and is_aggregate_class(type(base)):
            return self.aggregate_attribute(node, base)
        if node.attr == "type" and isinstance(base, tuple):
            return tl.triton_types.type_of(base)             # a tuple's tuple_type
        if node.attr == "value" and (base is None or type(base) in (int, float, bool, str)):
            return base                 # tl.constexpr(x).value: mytriton's constexprs are the values
        if type(base) in (int, float, bool) and not hasattr(base, node.attr) and hasattr(tensor, node.attr):
            base = to_tensor(base)             # `acc = 0; acc.to(tl.int64)`: Triton's numbers are tensors there
        is_module = type(base) is types.ModuleType
        if (is_module or type(base) in _CODE_TYPES) and node.attr.startswith("__") \
                and node.attr not in (_READABLE_DUNDERS if not is_module else ("__doc__",)):
            raise self.error(node, f"a kernel cannot read '{node.attr}' of a {type_name(base)}: it is the "
                                   f"host's bookkeeping (it differs between machines and processes), not a "
                                   f"value the kernel's cache key covers")
        try:
            if is_module and node.attr in vars(base):
                self.admit(node, vars(base)[node.attr])
                return self.builder.read_global(vars(base), node.attr)      # e.g. config.SCALE
            if is_module and not _is_own_module(base):
                raise AttributeError(node.attr)     # (a module's own __getattr__ is host code)
            value = getattr(base, node.attr)    # (mytriton loads some of its names on first use)
        except AttributeError as e:
            if type(e) is UnsupportedTritonName:       # tl.cumsum: Triton has it, mytriton not yet
                raise self.error(node, str(e)) from None
            what = "module" if is_module else type(base).__name__
            name = vars(base).get("__name__") if is_module else getattr(base, "__name__", "")
            name = name if type(name) is str else ""
            raise self.error(node, f"{what} {name} has no attribute '{node.attr}'".replace("  ", " ")) from None
        return value if type(value) is tensor else self.admit(node, value)

    def aggregate_attribute(self, node, base):
        """A field of an aggregate, or one of its methods bound to it (a ``@jit`` method: inlined
        with the aggregate as ``self``)."""
        from .jit import JITFunction
        try:
            value = getattr(base, node.attr)
        except AttributeError:
            raise self.error(node, f"{type(base).__name__} has no attribute '{node.attr}'") from None
        return BoundJIT(value, base) if isinstance(value, JITFunction) else value

    def visit_Tuple(self, node):
        return tuple(self.visit(e) for e in node.elts)

    def visit_List(self, node):
        return [self.visit(e) for e in node.elts]

    def visit_Slice(self, node):
        parts = [self.visit(p) if p is not None else None for p in (node.lower, node.upper, node.step)]
        return slice(*parts)

    def visit_Subscript(self, node):
        base = self.visit(node.value)
        index = self.visit(node.slice)
        if isinstance(index, tensor):
            raise self.error(node.slice, "indexing with a run-time value is not supported; use pointer arithmetic")
        value = base[index]
        return value if type(value) is tensor else self.admit(node, value)

    def visit_JoinedStr(self, node):
        return "".join(str(self.visit(v)) for v in node.values)

    def visit_FormattedValue(self, node):
        spec = self.visit(node.format_spec) if node.format_spec else ""
        if any(int(width) > MAX_CONSTEXPR_LEN for width in re.findall(r"\d+", spec)):
            raise _size_error(f"the format width in {spec!r} is too large")
        value = self.visit(node.value)
        if node.conversion in (ord("s"), ord("r"), ord("a")):
            value = {ord("s"): str, ord("r"): repr, ord("a"): ascii}[node.conversion](value)
        return format(value, spec)

    def visit_BinOp(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"unsupported operator {type(node.op).__name__}")
        lhs, rhs = self.visit(node.left), self.visit(node.right)
        if op is operator.pow and (isinstance(lhs, tensor) or isinstance(rhs, tensor)):
            raise self.error(node, "`**` on run-time values is not supported")
        check_constexpr_op(op, lhs, rhs)
        return op(lhs, rhs)

    def visit_UnaryOp(self, node):
        v = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            if isinstance(v, tensor):
                raise self.error(node, "`not` on a run-time value is not supported; use `~` on int1 values or `== 0`")
            return not v
        return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[type(node.op)](v)

    def visit_BoolOp(self, node):
        """Python's short circuit while the operands are compile-time values; from the first
        run-time value on, Triton's logical_and / logical_or: every operand is evaluated, made an
        int1 (``!= 0``) and combined with ``&`` / ``|``."""
        is_and = isinstance(node.op, ast.And)
        result = None
        for i, e in enumerate(node.values):
            result = self.visit(e)
            if isinstance(result, tensor):
                return self.logical(node, is_and, [result] + [self.visit(v) for v in node.values[i + 1:]])
            if bool(result) != is_and:
                return result
        return result

    def logical(self, node, is_and: bool, values: list):
        out = None
        for v in values:
            v = to_tensor(v)
            if v.dtype != I1:
                if not isinstance(v.dtype, ScalarType):
                    raise self.error(node, f"`{'and' if is_and else 'or'}` needs numbers or comparisons, got {v.dtype}")
                v = v != 0
            out = v if out is None else (out & v if is_and else out | v)
        return out

    def visit_Compare(self, node):
        left = self.visit(node.left)
        result = None
        for op, comp in zip(node.ops, node.comparators):
            right = self.visit(comp)
            value = _CMPOPS[type(op)](left, right)
            if isinstance(value, tensor) and len(node.ops) > 1:
                raise self.error(node, "chained comparisons of run-time values are not supported; combine with &")
            if len(node.ops) == 1:
                return value
            if not value:
                return False
            result, left = value, right
        return result

    def visit_IfExp(self, node):
        cond = self.visit(node.test)
        if not isinstance(cond, tensor):
            return self.visit(node.body if cond else node.orelse)
        # on a run-time scalar: an `if` op that yields the value of the branch taken (as Triton)
        cond = self.condition(node.test, cond, "if")
        outer = self.builder.scope
        scopes = (Scope(outer), Scope(outer))
        values = [self.trace_scope(scope, lambda e=e: self.visit(e))[1]
                  for scope, e in zip(scopes, (node.body, node.orelse))]
        if values[0] is None and values[1] is None:          # e.g. a store in each branch
            self.region_stmt("if", (cond.node,), scopes, ((), ()), ((), ()), [], (), node)
            return None
        t, e = self.merge(node, "the value of this conditional expression", *values)
        (result,) = self.region_stmt("if", (cond.node,), scopes, ((), ()), ((t.node,), (e.node,)), [t.type],
                                     ["value"], node)
        return tensor(result)

    def visit_Call(self, node):
        fn = self.visit(node.func)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self.visit(a.value))
            else:
                args.append(self.visit(a))
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                kwargs.update(self.visit(k.value))
            else:
                kwargs[k.arg] = self.visit(k.value)
        from .jit import JITFunction
        if isinstance(fn, JITFunction):
            return self.inline_call(node, fn, args, kwargs)
        if isinstance(fn, BoundJIT):
            return self.inline_call(node, fn.fn, [fn.self_, *args], kwargs)
        if fn is builtins.range or fn is tl.range or fn is tl.static_range:
            raise self.error(node, "range() can only be used as the iterable of a for loop")
        if fn is builtins.print:
            if len(args) >= 2 and isinstance(args[0], str):
                return tl.device_print(*args, **kwargs)      # (Triton's print in a kernel)
            raise self.error(node, "print() is not supported in a kernel without a str prefix and values after "
                                   "it (in a kernel, print is Triton's tl.device_print(prefix, *values)): use "
                                   "tl.static_print(...) to print compile-time values while the kernel compiles")
        from ..host_api import is_constexpr_function
        if is_constexpr_function(fn):
            return self.constexpr_call(node, fn, args, kwargs)
        kind = _callable_kind(fn)
        if kind is None:
            raise self.error(node, f"calls to '{_call_name(fn)}' are not allowed in a kernel: a kernel may call "
                                   "mytriton.language (tl) builtins, @mytriton.jit functions, "
                                   "triton.cdiv/next_power_of_2, and Python builtins (min, max, abs, len, int, "
                                   "float, ...) and math functions on constexprs")
        if kind == "python":
            values = (*args, *kwargs.values())
            if fn in (builtins.min, builtins.max) and any(isinstance(a, tensor) for a in values):
                # Triton: min/max of run-time values are tl.minimum/tl.maximum, pairwise
                if kwargs or len(args) < 2:
                    raise self.error(node, f"{fn.__name__}() of run-time values takes two or more positional "
                                           f"arguments (no iterable, key or default)")
                combine = tl.minimum if fn is builtins.min else tl.maximum
                out = args[0]
                for a in args[1:]:
                    out = combine(out, a)
                return out
            if fn not in (builtins.isinstance, builtins.hasattr) and any(isinstance(a, tensor) for a in values):
                raise self.error(node, f"{fn.__name__}() cannot take run-time values; "
                                       f"use the tl equivalent (tl.minimum, tl.maximum, tl.abs, ...)")
            if fn is not builtins.isinstance:
                for a in values:
                    if (callable(a) and not isinstance(a, JITFunction) and _callable_kind(a) is None
                            and not (isinstance(a, type) and admitted(a))):     # getattr(tl.PropagateNan, "ALL")
                        raise self.error(node, f"{fn.__name__}() would call '{_call_name(a)}', which a "
                                               "kernel may not call")
            if fn is builtins.pow:
                try:     # pow(base, exp[, mod]) however spelled; with a modulus the result stays small
                    bound = inspect.signature(pow).bind(*args, **kwargs)
                except TypeError as e:
                    raise self.error(node, f"pow(): {e}") from None
                if bound.arguments.get("mod") is None and {"base", "exp"} <= set(bound.arguments):
                    check_constexpr_op(operator.pow, bound.arguments["base"], bound.arguments["exp"])
            if fn is builtins.sum and not isinstance(kwargs.get("start", args[1] if len(args) > 1 else 0),
                                                     (int, float)):
                raise self.error(node, "sum() of a kernel adds numbers; its start value must be a number")
            return self.admit(node, fn(*args, **kwargs))          # getattr(x, name), type(x)
        return fn(*args, **kwargs)

    def constexpr_call(self, node, fn, args, kwargs):
        """A ``@triton.constexpr_function`` called on compile-time values: run now, in Python."""
        for a in (*args, *kwargs.values()):
            if isinstance(a, (tensor, Composite)):
                raise self.error(node, f"{_call_name(fn)}() is a triton.constexpr_function: its "
                                       f"arguments must be compile-time values (constexprs, dtypes, shapes), "
                                       f"not values computed at run time")
        return self.admit(node, fn(*args, **kwargs))

    def inline_call(self, node, callee, args, kwargs):
        if self.call_depth > 32:
            raise self.error(node, "too deep (recursive?) @jit function calls")
        try:
            bound = callee.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(node, f"{callee.__name__}(): {e}") from None
        given = set(bound.arguments)
        bound.apply_defaults()
        for name, value in bound.arguments.items():
            if name not in given and not admitted(value):
                raise self.error(node, f"{callee.__name__}(): the default of parameter {not_admitted(name, value)}")
        if callee.options.get("noinline") and self.builder.device_functions is not None:
            out = self.device_call(node, callee, bound.arguments)
            if out is not _INLINE:
                return out
        gen = CodeGenerator(callee, dict(bound.arguments), self.builder, self.call_depth + 1)
        gen.loop_depth = 0
        return gen.run(callee.parse())

    def device_call(self, node, callee, arguments: dict):
        """A ``@jit(noinline=True)`` helper called as a device function of its own (a ``call`` op),
        traced once per argument types and constexpr values: where it takes and returns only
        scalars (run-time ones become its parameters, Python values are compiled into it).
        ``_INLINE`` where it takes or returns a block, a descriptor or a tuple of them: it is then
        inlined, as every helper is for the interpreter and the MLIR backend."""
        b = self.builder
        runtime, key = [], [callee]
        for name, value in arguments.items():
            if isinstance(value, tensor):
                if isinstance(value.type, BlockType):
                    return _INLINE
                runtime.append((name, value))
                key.append((name, value.type))
            elif isinstance(value, (Composite, tuple, list, dict)) or not admitted(value):
                return _INLINE
            else:
                key.append((name, type(value), repr(value)))
        key = tuple(key)
        symbol = b.device_function_keys.get(key)
        if symbol is None:
            traced = self.trace_device_function(callee, arguments, runtime)
            if traced is None:
                return _INLINE
            symbol = b.device_function_keys[key] = f"f{len(b.device_functions)}"
            b.device_functions[symbol] = traced
        traced = b.device_functions[symbol]
        results = b.multi("call", [v.node for _, v in runtime],
                          {"callee": symbol, "name": callee.__name__, "params": tuple(t for _, t in traced.params),
                           "results": tuple(n.type for n in traced.returns)})
        shape = traced.shape
        if shape is None:
            return None
        values = [tensor(r) for r in results]
        return values[0] if shape == "one" else tuple(values)

    def trace_device_function(self, callee, arguments: dict, runtime: list):
        """Trace ``callee`` into a builder of its own: its run-time arguments are its parameters.
        None where what it returns is not scalars (or None, or a tuple of scalars)."""
        from .builder import Builder, DeviceFunctionTrace
        outer = self.builder
        sub = Builder(outer.kernel_name)
        sub.debug, sub.num_warps, sub.steps = outer.debug, outer.num_warps, outer.steps
        sub.globals_read = outer.globals_read
        sub.device_functions, sub.device_function_keys = outer.device_functions, outer.device_function_keys
        params = [(name, value.type) for name, value in runtime]
        env = dict(arguments)
        for name, ty in params:
            env[name] = tensor(sub.param(name, ty, 0))
        gen = CodeGenerator(callee, env, sub, self.call_depth + 1)
        returned = gen.run(callee.parse())
        outer.steps = sub.steps
        token = _current_builder.set(sub)
        try:
            if returned is None:
                shape, leaves = None, []
            elif isinstance(returned, tuple):
                shape, leaves = "tuple", list(returned)
            else:
                shape, leaves = "one", [returned]
            if not all(isinstance(v, (tensor, int, float, bool)) and not isinstance(v, Composite) for v in leaves):
                return None
            leaves = [to_tensor(v) for v in leaves]
            if any(isinstance(v.type, BlockType) for v in leaves):
                return None
        finally:
            _current_builder.reset(token)
        return DeviceFunctionTrace(callee.__name__, sub.root, params, [v.node for v in leaves], shape,
                                   callee.source_info.loc(callee.parse()))


def _callable_kind(fn) -> str | None:
    """"tl" for what the language defines, "python" for an allowed builtin or math function on
    constexprs, None for anything else."""
    from .. import next_power_of_2
    if is_builtin(fn) and (getattr(fn, "__module__", None) or "").startswith("mytriton.language"):
        return "tl"
    if fn is tl.cdiv or fn is tl.constexpr or fn is next_power_of_2 or fn is constexpr_type:
        return "tl"
    if is_aggregate_class(fn):                                 # constructing a @tl.core._aggregate value
        return "tl"
    owner = getattr(fn, "__self__", None)
    if type(owner) is tensor and not fn.__name__.startswith("_"):
        return "tl"                                            # x.to(tl.float32)
    name = getattr(fn, "__name__", None)
    if isinstance(name, str):
        if name in _PY_BUILTINS and getattr(builtins, name, None) is fn:
            return "python"
        if name in _MATH and getattr(math, name, None) is fn:
            return "python"
    return None


def trace_combine(builder, combine_fn, arg_types: list, what: str, any_results: bool = False) -> CombineTree:
    """The combine function of ``tl.reduce`` / ``tl.associative_scan`` traced into a closed scope of its
    own: a ``@jit`` function (or one of the language's own combine functions, plain Python on
    ``tl`` builtins) called on 2N scalar arguments, returning N values of the operands' types. With
    ``any_results`` (``tl.map_elementwise``), any number of scalars of any types (a number
    returned takes its own type, as in Triton)."""
    from .jit import JITFunction
    internal = getattr(combine_fn, "__mytriton_combine__", False)
    role, order = ("combine_fn", "the operands' values, then the other side's") if not any_results else \
        ("scalar_fn", "pack elements of each operand in turn")
    if not (isinstance(combine_fn, JITFunction) or internal):
        raise TypeError(f"{what}: {role} must be a @jit function, got {type_name(combine_fn)}")
    scope = Scope(None)
    saved = builder.scope
    builder.scope = scope
    try:
        args = tuple(builder.leaf("region_arg", t, scope, index=i) for i, t in enumerate(arg_types))
        values = [tensor(a) for a in args]
        if internal:
            returned = combine_fn(*values)
        else:
            try:
                bound = combine_fn.signature.bind(*values)
            except TypeError as e:
                raise TypeError(f"{what}: {role} {combine_fn.__name__}() is called with {len(values)} "
                                f"arguments ({order}): {e}") from None
            bound.apply_defaults()
            gen = CodeGenerator(combine_fn, dict(bound.arguments), builder, 1)
            returned = gen.run(combine_fn.parse())
        results = list(returned) if isinstance(returned, tuple) else [returned]
        if any_results:
            arg_types = [r.dtype if isinstance(r, tensor) else None for r in results]
            if not results or returned is None:
                raise TypeError(f"{what}: the function must return one or more scalars")
        n = len(results) if any_results else len(arg_types) // 2
        if len(results) != n:
            raise TypeError(f"{what}: combine_fn must return {n} value(s), one per input, got {len(results)}")
        nodes = []
        for i, (r, t) in enumerate(zip(results, arg_types)):
            if t is None and isinstance(r, (bool, int, float)):
                r = to_tensor(r)
                t = r.type
            if isinstance(r, (bool, int, float)):
                r = to_tensor(r, t)
            if not isinstance(r, tensor) or r.type != t:
                got = r.type if isinstance(r, tensor) else type_name(r)
                raise TypeError(f"{what}: combine_fn must return a scalar {t} for input {i}, got {got}")
            nodes.append(r.node)
    finally:
        builder.scope = saved
    return CombineTree(scope, args, tuple(nodes))


def trace(jit_fn, params: list[tuple[str, object, int]], constexprs: dict, builder,
          descriptors: dict | None = None, tuples: dict | None = None) -> Scope:
    """Build the expression tree of ``jit_fn`` for the given parameter types and constexpr values.

    ``params`` lists the run-time parameters as (name, type, alignment); ``descriptors`` maps the
    name of a tensor-descriptor parameter to its type, whose leaves ``params`` lists instead
    (frontend/descriptors.py); ``tuples`` the name of a tuple parameter to (its type, the values
    of its constant leaves), its other leaves in ``params`` (frontend/tuples.py)."""
    env: dict = {}
    for name, ty, align in params:
        env[name] = tensor(builder.param(name, ty, align))
    token = _current_builder.set(builder)
    try:
        for name, desc in (descriptors or {}).items():
            env[name] = rebuild_descriptor(desc, [env.pop(leaf) for leaf, _ in desc.leaves(name)])
        for name, (ty, constants) in (tuples or {}).items():
            env.update(constants)
            env[name] = rebuild_tuple(name, ty, env)
    finally:
        _current_builder.reset(token)
    check_constexprs(jit_fn, constexprs)
    env.update(constexprs)
    gen = CodeGenerator(jit_fn, env, builder)
    token = _current_builder.set(builder)
    try:
        annotated_dtypes(gen, jit_fn.parse(), env)
    finally:
        _current_builder.reset(token)
    with _deep_recursion():
        gen.run(jit_fn.parse())
    return builder.root


def check_constexprs(jit_fn, constexprs: dict) -> None:
    """Refuse a constexpr value (an argument or a parameter default) that a kernel may not use
    (``admitted``), with a CompilationError at that parameter -- before anything hashes or prints it.
    A ``torch.Size`` (``SHAPE=x.shape``) becomes the tuple of ints it is, in ``constexprs`` itself."""
    for name, value in constexprs.items():
        if is_torch_size(value):
            constexprs[name] = value = tuple(value)
        if not admitted(value):
            fn_def = jit_fn.parse()
            args = fn_def.args
            node = next((a for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.arg == name), fn_def)
            raise CompilationError(f"constexpr {not_admitted(name, value)}", jit_fn.source_info.loc(node),
                                   jit_fn.__name__)


_recursion_lock = threading.Lock()
_recursion_users = 0
_recursion_saved = 0


@contextlib.contextmanager
def _deep_recursion():
    """Run with Python's recursion limit at least ``RECURSION_LIMIT``; the previous limit comes
    back when the last of the (possibly concurrent) traces ends."""
    global _recursion_users, _recursion_saved
    with _recursion_lock:
        if _recursion_users == 0:
            _recursion_saved = sys.getrecursionlimit()
            if _recursion_saved < RECURSION_LIMIT:
                sys.setrecursionlimit(RECURSION_LIMIT)
        _recursion_users += 1
    try:
        yield
    finally:
        with _recursion_lock:
            _recursion_users -= 1
            if _recursion_users == 0 and _recursion_saved < RECURSION_LIMIT:
                sys.setrecursionlimit(_recursion_saved)

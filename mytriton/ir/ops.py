"""The op registry: every SSA op's definition in one place.

For each op: its arity, its type rule (used by type inference on the expression tree *and* by the
verifier on SSA), its traits, and — for elementwise ops — its numpy semantics (the living
definition: the interpreter runs it, the folder folds with it) and its CUDA C++ and MLIR spellings,
so that a new elementwise op is this registry and its ``tl`` function, nothing else. Ops with
structure beyond "one scalar function per element" (loads, reductions, layout changes, loops) are
emitted by the backends, which look them up by name.

Traits are what the passes ask (never an op's name): ``reads_memory`` / ``writes_memory`` (memory
effects: such ops are statements, kept in program order; DCE keeps every writer, LICM and CSE move
or merge only what is ``pure``), ``regions`` (the op owns that many regions), ``terminator`` (ends
a region, its operands flow to the parent op), ``elementwise`` (one scalar function per element,
operands broadcast to the result's shape), ``keeps_layout`` (block operands share the result's
layout: broadcasting never moves data), ``rematerializable`` (cheap to recompute in another layout
instead of converting), ``any_pointer`` (a memory op whose accesses go through any of its
pointer operands, not only the first: inline PTX, a call, a TMA copy's descriptor base),
``mask_operand`` (the index of an operand that disables the op per element, so a read can be made
safe to run speculatively) and ``loop`` (its regions may run many
times: loop-invariant code moves out of them). An op with regions describes with its
``RegionFlow`` how values enter its regions, leave them through their terminators and come back
(see below); passes handle every region op through it (ir/regions.py), never by its name.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from .libdevice import FUNCTIONS as LIBDEVICE
from .ssa import Const, Loc, Op
from ..runtime.driver import ML_DTYPES
from .types import (SCALARS, TMAP, BlockType, F32, I1, I32, I64, PointerType, ScalarType, Type, U32, broadcast_shapes,
                    make_type, promote, shape_of)


class OpTypeError(TypeError):
    """A type rule rejected an op; the frontend turns it into a CompilationError at the user's line."""


# --- regions: how values flow through an op that owns regions -------------------------------------
#
# In the spirit of MLIR's RegionBranchOpInterface. A region op's operands are `control` operands
# (a loop's bounds, an if's condition: read by the op itself) followed by forwarded operands. Values
# travel between *ports*, each a tuple of values:
#   OPERANDS   the op's forwarded operands (operands[control:]);
#   ARGS(i)    region i's arguments after its leading ones (a for's index is a leading argument);
#   EXIT(i)    the forwarded operands of region i's terminator (after the terminator's own control
#              operands: a while's `condition` first takes the condition);
#   RESULTS    the op's results.
# An edge (source, target) says that on some path the source port's values become the target's,
# position by position: the two ports have equal lengths and types. Ports joined by edges form
# one *lane* per position; every value of a lane is one variable of the program (the passes give
# them one layout, keep or drop them together).

OPERANDS = ("operands",)
RESULTS = ("results",)


def ARGS(i: int) -> tuple:             # noqa: N802 — reads like the constants beside it
    return ("args", i)


def EXIT(i: int) -> tuple:             # noqa: N802
    return ("exit", i)


CONTROL_TYPE = "control"      # in leading_args: the type of the op's first control operand (a for's index)


@dataclass(frozen=True)
class RegionFlow:
    terminators: tuple[str, ...]                      # the terminator op that ends each region
    edges: tuple[tuple[tuple, tuple], ...]
    control: int = 0                                  # leading operands that are not forwarded
    control_check: Callable | None = None             # (control operands, attrs) -> raises OpTypeError
    leading_args: tuple[tuple[Type, ...], ...] = ()   # per region: types of arguments not forwarded
    terminator_control: tuple[int, ...] = ()          # per region: leading terminator operands
    terminator_check: tuple[Callable | None, ...] = ()  # per region: (those operands, attrs) -> raises
    lane_attrs: tuple[str, ...] = ()                  # attributes with one entry per result
    runs_guard: Callable | None = None                # loop: op -> (cmp op, operands) true iff it runs
    static_branch: Callable | None = None             # op -> the one region that runs once, if known

    def leading(self, region: int) -> tuple[Type, ...]:
        return self.leading_args[region] if region < len(self.leading_args) else ()

    def leading_types(self, op, region: int) -> tuple[Type, ...]:
        """The types of region ``region``'s leading arguments (CONTROL_TYPE: the op's first control
        operand's)."""
        return tuple(op.operands[0].type if t == CONTROL_TYPE else t for t in self.leading(region))

    def exit_control(self, region: int) -> int:
        return self.terminator_control[region] if region < len(self.terminator_control) else 0


@dataclass(frozen=True)
class OpDef:
    name: str
    arity: tuple[int, int]                      # (min, max) operand count
    type_rule: Callable[[list[Type], dict], Type | None]
    reads_memory: bool = False
    writes_memory: bool = False
    regions: int = 0
    terminator: bool = False
    elementwise: bool = False
    keeps_layout: bool = False
    rematerializable: bool = False
    mask_operand: int | None = None
    any_pointer: bool = False                   # its memory effects reach through any pointer operand, not the first
    loop: bool = False                          # its regions may run repeatedly (LICM hoists out of them)
    region_flow: RegionFlow | None = None       # for ops with regions: how values flow through them
    compute: Callable[[list[Type], dict], ScalarType] | None = None   # operand type before the op
    np_fn: Callable[..., Any] | None = None     # elementwise semantics on numpy arrays of `compute` type
    c_fn: Callable[..., str] | None = None      # elementwise CUDA spelling: (operand exprs, compute type) -> expr
    mlir_fn: Callable[..., str] | None = None   # elementwise MLIR spelling: (builder, operand names, compute type,
                                                # result name) -> name of the result (see _mlir_* below)
    doc: str = ""

    @property
    def pure(self) -> bool:
        """No memory effects, no regions, not a terminator: may be moved, merged or dropped when
        its results are unused."""
        return not (self.reads_memory or self.writes_memory or self.regions or self.terminator)


OPS: dict[str, OpDef] = {}


def typed_op(name: str, operands: list, loc: Loc | None = None, **attrs) -> Op:
    """A new op of the registry, its one result typed by the op's type rule (for passes that
    build ops: the frontend's builder types its own)."""
    return Op(name, operands, [OPS[name].type_rule([v.type for v in operands], attrs)], attrs=attrs, loc=loc)


def define(op: OpDef) -> OpDef:
    assert op.name not in OPS, op.name
    OPS[op.name] = op
    return op


def lookup(name: str) -> OpDef:
    return OPS[name]


# --- shared type-rule helpers -----------------------------------------------------------------

def _broadcast(types: list[Type], what: str) -> tuple[int, ...]:
    shape: tuple[int, ...] = ()
    for t in types:
        out = broadcast_shapes(shape, shape_of(t))
        if out is None:
            raise OpTypeError(f"{what}: incompatible shapes {', '.join(str(shape_of(x) or 'scalar') for x in types)}"
                              " (Triton broadcasting: a lower-rank value gains leading axes, then each dim must "
                              "be equal or 1)")
        shape = out
    return shape


def _numeric(t: Type, what: str) -> ScalarType:
    s = t.scalar
    if isinstance(s, PointerType):
        raise OpTypeError(f"{what} is not defined on pointers ({t})")
    if s.is_fp8:
        raise OpTypeError(f"{what} is not defined on {s} (fp8 values are loaded, stored, converted and given to "
                          f"tl.dot; convert with .to(tl.float32) to compute with them)")
    return s


def _value_compute(types, attrs):
    """The operand's own type (any but a pointer): casts and bitcasts move fp8 values too."""
    s = types[0].scalar
    if isinstance(s, PointerType):
        raise OpTypeError(f"this op is not defined on pointers ({types[0]})")
    return s


def _arith_compute(types, attrs):
    return promote(_numeric(types[0], "arithmetic"), _numeric(types[-1], "arithmetic"))


def _truediv_compute(types, attrs):
    a, b = _numeric(types[0], "/"), _numeric(types[1], "/")
    check_same_signedness(a, b, "/")
    c = promote(a, b)
    # Triton: int / int is true division in fp32, and halves divide in fp32 (no PTX division for them)
    return c if c.is_float and not c.is_half else F32


def _int_only(op: str):
    def compute(types, attrs):
        a, b = (_numeric(t, op) for t in types)
        if not (a.is_int and b.is_int):
            raise OpTypeError(f"invalid operands of type {types[0].scalar} and {types[1].scalar} for '{op}': "
                              f"it needs integers")
        if op == "//":
            check_same_signedness(a, b, op)
        return promote(a, b)
    return compute


def check_same_signedness(a: ScalarType, b: ScalarType, op: str):
    """Triton refuses integer / // % across signedness (rarely a useful answer), whatever the widths;
    int1 is one of Triton's unsigned types (``dtype.UINT_TYPES``), so bool with a signed type is
    refused and bool with an unsigned one is not. The one rule for tensor operands and
    (``language.core.computation_operands``) for a Python number that takes part in the promotion."""
    if a.is_int and b.is_int and a.is_signed != b.is_signed:
        raise OpTypeError(f"Cannot use '{op}' with {a} and {b} because they have different signedness; cast one "
                          f"of them")


def _mod_compute(types, attrs):
    a, b = _numeric(types[0], "%"), _numeric(types[1], "%")
    check_same_signedness(a, b, "%")
    c = promote(a, b)
    return F32 if c.is_half else c              # as for '/': no half-precision remainder in Triton


def _float_only(op: str):
    """Triton's math functions take fp32 and fp64 only (libdevice's convention: fp16/bf16 and
    integers are refused rather than silently widened; the user converts with ``.to``)."""
    def compute(types, attrs):
        a = _numeric(types[0], op)
        if not a.is_float:
            raise OpTypeError(f"{op} expects a floating-point operand, got {types[0].scalar}"
                              f" (convert with .to(tl.float32))")
        if a.is_half:
            raise OpTypeError(f"{op} expects fp32 or fp64, got {a} (as in Triton, math functions are not "
                              f"defined on fp16/bf16: convert with .to(tl.float32))")
        return a
    return compute


def _same_compute(types, attrs):
    return _numeric(types[0], "this op")


def _elementwise_rule(compute, result_elem=None):
    def rule(types, attrs):
        shape = _broadcast(types, "operands")
        c = compute(types, attrs)
        return make_type(shape, result_elem(c, attrs) if result_elem else c)
    return rule


def _binary(name, compute, np_fn, c_fn, mlir_fn, result_elem=None, doc=""):
    return define(OpDef(name, (2, 2), _elementwise_rule(compute, result_elem), elementwise=True,
                        keeps_layout=True, compute=compute, np_fn=np_fn, c_fn=c_fn, mlir_fn=mlir_fn, doc=doc))


def _unary(name, compute, np_fn, c_fn, mlir_fn, result_elem=None, doc=""):
    return define(OpDef(name, (1, 1), _elementwise_rule(compute, result_elem), elementwise=True,
                        keeps_layout=True, compute=compute, np_fn=np_fn, c_fn=c_fn, mlir_fn=mlir_fn, doc=doc))


# --- MLIR spellings of the elementwise ops (arith and math dialects) ----------------------------------
#
# Each builder receives the MLIR emitter ``e`` (``e.emit(rhs, name)`` defines a value and returns
# its name, ``e.const(value, type)`` names a constant), the operand names, the compute type and a
# name hint for the result; it returns the name holding the result (an operand's name when the op
# is the identity, e.g. ``abs`` of an unsigned value). The semantics are the registry's: integer
# + - * wrap (``arith`` integer ops carry no overflow flags), // and % truncate toward zero, a zero
# divisor yields -1 / the dividend and MIN // -1 wraps to MIN (``divsi``/``remsi`` leave both
# undefined, so the divisor is guarded), float % is C ``fmod``, ``maximum``/``minimum`` ignore NaN
# (``maxnumf``), ``!=`` on floats is true for NaN (``une``). MLIR integers are signless, so
# signedness picks the op (``divsi``/``divui``, ``slt``/``ult``).

def _mlir_arith(float_op: str, signed_op: str, unsigned_op: str | None = None):
    def build(e, args, ct, name):
        op = float_op if ct.is_float else (signed_op if ct.is_signed else (unsigned_op or signed_op))
        return e.emit(f"arith.{op} {args[0]}, {args[1]} : {ct.info.mlir}", name)
    return build


def _mlir_int(op: str, unsigned_op: str | None = None):
    """An integer-only op (its type rule refuses floats)."""
    return _mlir_arith(None, op, unsigned_op)


def _mlir_safe_divisor(e, b: str, ct) -> tuple[str, str | None, str]:
    """The divisor with the cases arith leaves undefined replaced by 1: zero, and for signed types
    -1 (MIN / -1 overflows). Returns (is_zero, is_minus_one or None, safe divisor)."""
    t = ct.info.mlir
    is_zero = e.emit(f"arith.cmpi eq, {b}, {e.const(0, ct)} : {t}")
    is_minus_one, bad = None, is_zero
    if ct.is_signed:
        is_minus_one = e.emit(f"arith.cmpi eq, {b}, {e.const(-1, ct)} : {t}")
        bad = e.emit(f"arith.ori {is_zero}, {is_minus_one} : i1")
    safe = e.emit(f"arith.select {bad}, {e.const(1, ct)}, {b} : {t}")
    return is_zero, is_minus_one, safe


def _mlir_floordiv(e, args, ct, name):
    """a // b truncating; b == 0 gives -1 and a // -1 is -a, wrapping (MIN // -1 == MIN)."""
    t = ct.info.mlir
    a, b = args
    is_zero, is_minus_one, safe = _mlir_safe_divisor(e, b, ct)
    q = e.emit(f"arith.{'divsi' if ct.is_signed else 'divui'} {a}, {safe} : {t}")
    if is_minus_one is not None:
        negated = e.emit(f"arith.subi {e.const(0, ct)}, {a} : {t}")
        q = e.emit(f"arith.select {is_minus_one}, {negated}, {q} : {t}")
    return e.emit(f"arith.select {is_zero}, {e.const(-1, ct)}, {q} : {t}", name)


def _mlir_mod(e, args, ct, name):
    """a % b with the sign of a (C fmod for floats); b == 0 gives a, and a % -1 is 0."""
    t = ct.info.mlir
    if ct.is_float:
        return e.emit(f"arith.remf {args[0]}, {args[1]} : {t}", name)
    a, b = args
    is_zero, _, safe = _mlir_safe_divisor(e, b, ct)       # a % 1 == 0 is also a % -1
    r = e.emit(f"arith.{'remsi' if ct.is_signed else 'remui'} {a}, {safe} : {t}")
    return e.emit(f"arith.select {is_zero}, {a}, {r} : {t}", name)


def _mlir_cmp(float_pred: str, signed_pred: str, unsigned_pred: str):
    def build(e, args, ct, name):
        t = ct.info.mlir
        if ct.is_float:
            return e.emit(f"arith.cmpf {float_pred}, {args[0]}, {args[1]} : {t}", name)
        pred = signed_pred if ct.is_signed else unsigned_pred
        return e.emit(f"arith.cmpi {pred}, {args[0]}, {args[1]} : {t}", name)
    return build


def _mlir_math(op: str):
    def build(e, args, ct, name):
        return e.emit(f"math.{op} {args[0]} : {ct.info.mlir}", name)
    return build


def _mlir_neg(e, args, ct, name):
    t = ct.info.mlir
    if ct.is_float:                               # 0 - x: -(+0.0) is +0.0
        return e.emit(f"arith.subf {e.const(0.0, ct)}, {args[0]} : {t}", name)
    return e.emit(f"arith.subi {e.const(0, ct)}, {args[0]} : {t}", name)


def _mlir_invert(e, args, ct, name):
    ones = e.const(True, ct) if ct.is_bool else e.const(-1, ct)
    return e.emit(f"arith.xori {args[0]}, {ones} : {ct.info.mlir}", name)


def _mlir_abs(e, args, ct, name):
    t = ct.info.mlir
    if ct.is_float:
        return e.emit(f"math.absf {args[0]} : {t}", name)
    if not ct.is_signed:
        return args[0]                          # |x| of an unsigned value (or a bool) is x
    return e.emit(f"math.absi {args[0]} : {t}", name)


def _mlir_true_div(e, args, ct, name):
    assert ct.is_float, "the registry computes true division in a float type"
    return e.emit(f"arith.divf {args[0]}, {args[1]} : {ct.info.mlir}", name)


def _mlir_where(e, args, ct, name):
    return e.emit(f"arith.select {args[0]}, {args[1]}, {args[2]} : {ct.info.mlir}", name)


def _wrapping(sym: str, helper: str):
    """Signed integer + - * wrap around in Triton; in C++ signed overflow is undefined, so signed
    ints go through a helper that computes in unsigned arithmetic."""
    def c(ops, ct):
        if ct.is_int and ct.is_signed:
            return f"{helper}({ops[0]}, {ops[1]})"
        return f"({ops[0]} {sym} {ops[1]})"
    return c


def _c_trunc_div(a, b):
    with np.errstate(all="ignore"):
        safe = np.where(b == 0, 1, b)
        q = np.floor_divide(a, safe)
        r = a - q * safe
        q = np.where((r != 0) & ((a < 0) != (safe < 0)), q + 1, q)
        return np.where(b == 0, -1, q).astype(np.result_type(a, b))


def _c_mod(a, b):
    with np.errstate(all="ignore"):
        if np.issubdtype(np.result_type(a, b), np.integer):
            safe = np.where(b == 0, 1, b)
            return np.where(b == 0, a, np.fmod(a, safe)).astype(np.result_type(a, b))
        return np.fmod(a, b)


def _bool_result(c, attrs):
    return I1


_binary("add", _arith_compute, np.add, _wrapping("+", "mt_add"), _mlir_arith("addf", "addi"))
_binary("sub", _arith_compute, np.subtract, _wrapping("-", "mt_sub"), _mlir_arith("subf", "subi"))
_binary("mul", _arith_compute, np.multiply, _wrapping("*", "mt_mul"), _mlir_arith("mulf", "muli"))
_binary("div", _truediv_compute, np.true_divide,
        lambda o, ct: f"mt_div_full({o[0]}, {o[1]})" if ct.name == "fp32" else f"({o[0]} / {o[1]})", _mlir_true_div,
        doc="true division; integers are divided in fp32 as in Triton, and fp32 as Triton does (div.full.f32)")
_binary("floordiv", _int_only("//"), _c_trunc_div, lambda o, ct: f"mt_div({o[0]}, {o[1]})", _mlir_floordiv,
        doc="integer division truncating toward zero (C and Triton semantics)")
_binary("mod", _mod_compute, _c_mod,
        lambda o, ct: f"fmod({o[0]}, {o[1]})" if ct.is_float else f"mt_mod({o[0]}, {o[1]})", _mlir_mod,
        doc="remainder with the sign of the dividend (C fmod / Triton semantics)")
_binary("and", _int_only("&"), np.bitwise_and, lambda o, ct: f"({o[0]} & {o[1]})", _mlir_int("andi"))
_binary("or", _int_only("|"), np.bitwise_or, lambda o, ct: f"({o[0]} | {o[1]})", _mlir_int("ori"))
_binary("xor", _int_only("^"), np.bitwise_xor, lambda o, ct: f"({o[0]} ^ {o[1]})", _mlir_int("xori"))
_binary("shl", _int_only("<<"), np.left_shift, lambda o, ct: f"({o[0]} << {o[1]})", _mlir_int("shli"))


def _shr_compute(types, attrs):
    """Triton's ``>>``: the operands are promoted as for the other bitwise ops (the result has the
    promoted type), but the left operand's own signedness picks the shift (``tl.tensor.__rshift__``
    chooses ashr/lshr before promoting): int32 >> uint32 shifts arithmetically and gives uint32.
    The compute type is the promoted width with the left operand's signedness."""
    a = _numeric(types[0], ">>")
    c = _int_only(">>")(types, attrs)
    if c.is_bool or a.is_bool:
        return c
    return SCALARS[("i" if a.is_signed else "u") + str(c.bits)]


def _shr_rule(types, attrs):
    shape = _broadcast(types, "operands")
    _shr_compute(types, attrs)
    return make_type(shape, _int_only(">>")(types, attrs))


define(OpDef("shr", (2, 2), _shr_rule, elementwise=True, keeps_layout=True,
             compute=_shr_compute, np_fn=np.right_shift, c_fn=lambda o, ct: f"({o[0]} >> {o[1]})",
             mlir_fn=_mlir_int("shrsi", "shrui"), doc="right shift: arithmetic when the left operand is signed, logical otherwise"))
class _ZeroOrdered:
    """``np.fmax`` / ``np.fmin`` with -0.0 < +0.0 (IEEE 754-2019 maximumNumber / minimumNumber, as
    the GPU's max.f32 / min.f32): numpy's own answer for a pair of zeros of different signs depends
    on which of its code paths runs (a scalar and an array gave different signs). Also a
    ``reduce``, for the reductions."""

    def __init__(self, fn, is_max: bool):
        self.fn, self.is_max = fn, is_max

    def _zero(self, has_plus, has_minus):
        """The zero a max (min) of zeros gives: +0 when any is +0 (-0 when any is -0)."""
        return np.where(has_plus if self.is_max else ~has_minus, 0.0, -0.0)

    def __call__(self, a, b):
        r = self.fn(a, b)
        if r.dtype.kind != "f":
            return r
        both = (a == 0) & (b == 0)
        if not np.any(both):
            return r
        plus = ~np.signbit(a) | ~np.signbit(b)
        minus = np.signbit(a) | np.signbit(b)
        return np.where(both, self._zero(plus, minus).astype(r.dtype), r)

    def reduce(self, x, axis, dtype):
        r = self.fn.reduce(x, axis=axis, dtype=dtype)
        if np.dtype(dtype).kind != "f":
            return r
        zero = r == 0
        if not np.any(zero):
            return r
        x = np.asarray(x)
        plus = np.any((x == 0) & ~np.signbit(x), axis=axis)
        minus = np.any((x == 0) & np.signbit(x), axis=axis)
        return np.where(zero, self._zero(plus, minus).astype(r.dtype), r)


_binary("maximum", _arith_compute, _ZeroOrdered(np.fmax, True),
        lambda o, ct: f"fmax({o[0]}, {o[1]})" if ct.is_float else f"max({o[0]}, {o[1]})",
        _mlir_arith("maxnumf", "maxsi", "maxui"), doc="NaN-ignoring like Triton's default (PropagateNan.NONE): a NaN operand yields the other")
_binary("minimum", _arith_compute, _ZeroOrdered(np.fmin, False),
        lambda o, ct: f"fmin({o[0]}, {o[1]})" if ct.is_float else f"min({o[0]}, {o[1]})",
        _mlir_arith("minnumf", "minsi", "minui"))


def _nan_or(fn: str):
    """A float max/min that propagates NaN (PropagateNan.ALL: PTX's max.NaN): a NaN operand gives NaN."""
    return lambda o, ct: (f"(({o[0]}) != ({o[0]}) || ({o[1]}) != ({o[1]}) ? ({o[0]}) + ({o[1]}) : {fn}({o[0]}, {o[1]}))"
                          if ct.is_float else f"{fn[1:]}({o[0]}, {o[1]})")


_binary("maximum_nan", _arith_compute, _ZeroOrdered(np.maximum, True), _nan_or("fmax"),
        _mlir_arith("maximumf", "maxsi", "maxui"), doc="tl.maximum(..., propagate_nan=ALL): a NaN operand gives NaN")
_binary("minimum_nan", _arith_compute, _ZeroOrdered(np.minimum, False), _nan_or("fmin"),
        _mlir_arith("minimumf", "minsi", "minui"), doc="tl.minimum(..., propagate_nan=ALL): a NaN operand gives NaN")

for _name, _sym, _np, _preds in (("cmp_lt", "<", np.less, ("olt", "slt", "ult")),
                                 ("cmp_le", "<=", np.less_equal, ("ole", "sle", "ule")),
                                 ("cmp_gt", ">", np.greater, ("ogt", "sgt", "ugt")),
                                 ("cmp_ge", ">=", np.greater_equal, ("oge", "sge", "uge")),
                                 ("cmp_eq", "==", np.equal, ("oeq", "eq", "eq")),
                                 ("cmp_ne", "!=", np.not_equal, ("une", "ne", "ne"))):
    _binary(_name, _arith_compute, _np, (lambda s: lambda o, ct: f"({o[0]} {s} {o[1]})")(_sym),
            _mlir_cmp(*_preds), result_elem=_bool_result)

_unary("neg", _same_compute, lambda x: np.subtract(np.zeros_like(x), x),
       lambda o, ct: f"mt_sub(({ct.c_name})0, {o[0]})" if ct.is_signed else
       f"(({ct.c_name})0 - {o[0]})" if ct.is_float else f"(-{o[0]})", _mlir_neg,
       doc="-x is 0 - x, as in Triton (semantic.minus): -(+0.0) is +0.0")
_unary("invert", lambda t, a: _int_only("~")(t + t, a), np.invert,
       lambda o, ct: f"(!{o[0]})" if ct.is_bool else f"(~{o[0]})", _mlir_invert)
_unary("exp", _float_only("exp"), np.exp,
       lambda o, ct: f"__expf({o[0]})" if ct.name == "fp32" else f"exp({o[0]})", _mlir_math("exp"),
       doc="fp32 uses the fast ex2.approx path, as Triton does")
_unary("exp2", _float_only("exp2"), np.exp2,
       lambda o, ct: f"mt_exp2_approx({o[0]})" if ct.name == "fp32" else f"exp2({o[0]})", _mlir_math("exp2"),
       doc="fp32 as Triton: ex2.approx.ftz")
_unary("log", _float_only("log"), np.log, lambda o, ct: f"log({o[0]})",
       _mlir_math("log"))
_unary("log2", _float_only("log2"), np.log2, lambda o, ct: f"log2({o[0]})",
       _mlir_math("log2"))
_unary("sqrt", _float_only("sqrt"), np.sqrt,
       lambda o, ct: f"mt_sqrt_approx({o[0]})" if ct.name == "fp32" else f"sqrt({o[0]})", _mlir_math("sqrt"),
       doc="fp32 as Triton: sqrt.approx.ftz")
_unary("rsqrt", _float_only("rsqrt"), lambda x: (1 / np.sqrt(x)).astype(x.dtype), lambda o, ct: f"mt_rsqrt_approx({o[0]})" if ct.name == "fp32" else f"rsqrt({o[0]})",
       _mlir_math("rsqrt"), doc="fp32 as Triton: rsqrt.approx.ftz")
_unary("sin", _float_only("sin"), np.sin, lambda o, ct: f"sin({o[0]})",
       _mlir_math("sin"))
_unary("cos", _float_only("cos"), np.cos, lambda o, ct: f"cos({o[0]})",
       _mlir_math("cos"))
_unary("floor", _float_only("floor"), np.floor, lambda o, ct: f"floor({o[0]})",
       _mlir_math("floor"))
_unary("ceil", _float_only("ceil"), np.ceil, lambda o, ct: f"ceil({o[0]})",
       _mlir_math("ceil"))


def _abs_compute(types, attrs):
    """Any number; on fp8 too, as Triton's: the sign bit cleared (±inf stays an infinity, a NaN a
    NaN), no arithmetic."""
    s = types[0].scalar
    return s if isinstance(s, ScalarType) and s.is_fp8 else _numeric(types[0], "this op")


def _c_abs(o, ct):
    if ct.is_fp8:
        return f"{ct.c_name}{{(unsigned char)({o[0]}.x & 0x7f)}}"
    return f"fabs({o[0]})" if ct.is_float else f"abs({o[0]})" if ct.is_signed else o[0]


_unary("abs", _abs_compute, np.abs, _c_abs, _mlir_abs)


ROUNDINGS = ("rtne", "rtz")


def _check_pointer_cast(src, dst, rounding):
    """Triton's casts of pointers: a pointer to another pointer type (the same address), to a
    64-bit integer (its address) or to bool (not null); a 64-bit integer to a pointer."""
    if rounding is not None:
        raise OpTypeError(f"fp_downcast_rounding applies only to floats, not {src} to {dst}")
    if isinstance(src, PointerType) and isinstance(dst, PointerType):
        return
    other = dst if isinstance(src, PointerType) else src
    if not (other.is_int and (other.bits == 64 or (other.is_bool and isinstance(src, PointerType)))):
        raise OpTypeError(f"cannot convert {src} to {dst}: a pointer converts to another pointer type, "
                          f"to int64/uint64 or to bool, and only a 64-bit integer converts to a pointer "
                          f"(convert through tl.int64)")


def _cast_rule(types, attrs):
    """``x.to(dtype, fp_downcast_rounding=...)``: ``rounding`` (None, "rtne", "rtz") may be given only
    for a float narrowed to a float (Triton's rule); None there means round to nearest even."""
    dst, rounding = attrs["dtype"], attrs.get("rounding")
    src = types[0].scalar
    if isinstance(src, PointerType) or isinstance(dst, PointerType):
        _check_pointer_cast(src, dst, rounding)
        return make_type(shape_of(types[0]), dst)
    if rounding is not None:
        if rounding not in ROUNDINGS:
            raise OpTypeError(f"invalid rounding mode {rounding!r}: supported rounding modes are 'rtne' and 'rtz'")
        if isinstance(src, PointerType) or not (src.is_float and dst.is_float and dst.bits < src.bits):
            raise OpTypeError(f"fp_downcast_rounding applies only to a float converted to a narrower float, "
                              f"not {src} to {dst}")
        if dst.is_fp8 and rounding != "rtne":
            raise OpTypeError(f"a conversion to {dst} rounds to nearest even (saturating), not {rounding!r}")
    if isinstance(src, ScalarType) and (src.is_fp8 or dst.is_fp8) and not (src.is_float and dst.is_float):
        raise OpTypeError(f"{src} converts only to and from floating-point types, not {dst if src.is_fp8 else src}: "
                          f"convert through tl.float32")
    return make_type(shape_of(types[0]), dst)


define(OpDef("cast", (1, 1), _cast_rule, elementwise=True, keeps_layout=True, compute=_value_compute,
             np_fn=None, c_fn=None, doc="x.to(dtype[, fp_downcast_rounding]); the backends convert per element"))


def _bitcast_rule(types, attrs):
    src, dst = types[0].scalar, attrs["dtype"]
    if isinstance(src, PointerType):
        raise OpTypeError(f"bitcast of a pointer ({src}) is not supported")
    if src.bits != dst.bits:
        raise OpTypeError(f"cannot bitcast {src} ({src.bits} bits) to {dst} ({dst.bits} bits): "
                          f"a bitcast keeps the bits, so both types need the same width")
    return make_type(shape_of(types[0]), dst)


define(OpDef("bitcast", (1, 1), _bitcast_rule, elementwise=True, keeps_layout=True,
             compute=_value_compute,
             doc="x.to(dtype, bitcast=True): the same bits read as another type of the same width"))


def _where_compute(types, attrs):
    x, y = types[1].scalar, types[2].scalar
    if isinstance(x, ScalarType) and x.is_fp8 and x == y:
        return x                     # (a choice between two fp8 values of one type moves bits only)
    return promote(_numeric(types[1], "where"), _numeric(types[2], "where"))


def _where_rule(types, attrs):
    c = types[0].scalar
    if not (isinstance(c, ScalarType) and c.is_bool):
        raise OpTypeError(f"where: the condition must be int1, got {c}")
    shape = _broadcast(types, "where")
    x, y = types[1].scalar, types[2].scalar
    if isinstance(x, PointerType) or isinstance(y, PointerType):
        if x != y:
            raise OpTypeError(f"where: both branches must be the same pointer type, got {x} and {y}")
        return make_type(shape, x)
    return make_type(shape, _where_compute(types, attrs))


define(OpDef("where", (3, 3), _where_rule, elementwise=True, keeps_layout=True, compute=_where_compute,
             np_fn=lambda c, x, y: np.where(c, x, y), c_fn=lambda o, ct: f"({o[0]} ? {o[1]} : {o[2]})",
             mlir_fn=_mlir_where))


# --- CUDA's math library (libdevice): one op per function of ir/libdevice.FUNCTIONS ---------------

def libdevice_signature(fn, types: list) -> tuple | None:
    """The signature of libdevice function ``fn`` (a ``libdevice.Function``) that takes these
    argument types exactly (the frontend promotes and converts the arguments first), or None."""
    names = tuple(getattr(t.scalar, "name", None) for t in types)
    return names if names in fn.signatures else None


def _libdevice_op(fn):
    def compute(types, attrs):
        if libdevice_signature(fn, types) is None:
            raise OpTypeError(f"libdevice.{fn.name} takes {fn.signatures_text}, got "
                              f"({', '.join(str(t.scalar) for t in types)})")
        return types[0].scalar
    define(OpDef(f"libdevice.{fn.name}", (fn.arity, fn.arity), _libdevice_rule(fn, compute), elementwise=True,
                 keeps_layout=True, compute=compute, np_fn=fn.np_fn,
                 doc=f"libdevice's {fn.name} ({fn.signatures_text}); the CUDA backend calls "
                     f"{', '.join(sorted({s for s, _ in fn.signatures.values()}))}"))


def _libdevice_rule(fn, compute):
    def rule(types, attrs):
        shape = _broadcast(types, f"libdevice.{fn.name}")
        compute(types, attrs)
        return make_type(shape, SCALARS[fn.signatures[libdevice_signature(fn, types)][1]])
    return rule


for _fn in LIBDEVICE.values():
    _libdevice_op(_fn)


# --- pointers and memory -----------------------------------------------------------------------

def _addptr_rule(types, attrs):
    p, off = types[0].scalar, types[1].scalar
    if not isinstance(p, PointerType):
        raise OpTypeError(f"addptr: expected a pointer, got {p}")
    if not (isinstance(off, ScalarType) and off.is_int and not off.is_bool):
        raise OpTypeError(f"pointer arithmetic needs an integer offset, got {off}")
    return make_type(_broadcast(types, "pointer arithmetic"), p)


define(OpDef("addptr", (2, 2), _addptr_rule, elementwise=True, keeps_layout=True, doc="pointer + integer offset (in elements)"))


def _mask_check(t: Type, what: str):
    s = t.scalar
    if not (isinstance(s, ScalarType) and s.is_bool):
        raise OpTypeError(f"{what}: the mask must be int1 (a comparison), got {s}")


# Triton's cache_modifier= values (without the dot) and eviction_policy= values; each becomes the
# PTX qualifier of that name on the load or store (PTX allows one of the two on an access).
LOAD_CACHE_MODIFIERS = ("ca", "cg", "cv")
STORE_CACHE_MODIFIERS = ("wb", "cg", "cs", "wt")
EVICTION_POLICIES = ("evict_first", "evict_last")


def cache_hint(attrs) -> str | None:
    """A load's or store's cache modifier or eviction policy (at most one of them), or None."""
    return attrs.get("cache") or attrs.get("evict")


def ptx_hint(hint: str) -> str:
    """The qualifiers ``hint`` puts on ``ld.global`` / ``st.global`` (Triton's): ``.cg``, ...; an
    eviction policy is an L1 priority plus an L2 hint, whose policy operand ``ptx_l2_policy`` makes."""
    return f".L1::{hint}.L2::cache_hint" if hint in EVICTION_POLICIES else f".{hint}"


def ptx_l2_policy(policy: str, register: str) -> str:
    """The PTX instruction that makes the L2 policy of the eviction policy ``policy`` in ``register``."""
    return f"createpolicy.fractional.L2::{policy}.b64 {register}, 1.0;"


def _cache_hint_check(attrs, what: str, modifiers: tuple):
    cache, evict = attrs.get("cache"), attrs.get("evict")
    if cache is not None and cache not in modifiers:
        raise OpTypeError(f"{what}: cache modifier {cache!r} is not one of {modifiers}")
    if evict is not None and evict not in EVICTION_POLICIES:
        raise OpTypeError(f"{what}: eviction policy {evict!r} is not one of {EVICTION_POLICIES}")
    if cache is not None and evict is not None:
        raise OpTypeError(f"{what}: a cache modifier and an eviction policy cannot be combined")


def _load_rule(types, attrs):
    _cache_hint_check(attrs, "load", LOAD_CACHE_MODIFIERS)
    p = types[0].scalar
    if not isinstance(p, PointerType):
        raise OpTypeError(f"load: expected a pointer, got {types[0]}")
    if len(types) > 1:
        _mask_check(types[1], "load")
    if len(types) > 2 and isinstance(types[2].scalar, PointerType):
        raise OpTypeError("load: 'other' must be a number")
    return make_type(_broadcast(types, "load"), p.pointee)


define(OpDef("load", (1, 3), _load_rule, reads_memory=True, elementwise=True, keeps_layout=True, mask_operand=1,
             doc="load ptr [, mask [, other]]: masked-off lanes never touch memory and read `other` (0)"))


def _store_rule(types, attrs):
    _cache_hint_check(attrs, "store", STORE_CACHE_MODIFIERS)
    p = types[0].scalar
    if not isinstance(p, PointerType):
        raise OpTypeError(f"store: expected a pointer, got {types[0]}")
    if isinstance(types[1].scalar, PointerType):
        raise OpTypeError("store: a pointer can be stored only into int64/uint64 memory (as its address)")
    if len(types) > 2:
        _mask_check(types[2], "store")
    shape = _broadcast(types, "store")
    if shape != shape_of(types[0]):
        raise OpTypeError(f"store: value/mask shape {shape} does not fit the pointer shape {shape_of(types[0])}")
    return None


define(OpDef("store", (2, 3), _store_rule, writes_memory=True, elementwise=True, keeps_layout=True,
             mask_operand=2, doc="store ptr, value [, mask]"))


# --- tensor maps (TMA): a host-made tensor descriptor's block copies (frontend/descriptors.py) ------
#
# Operands: the tensor map, (a store: the value,) then the descriptor itself -- base pointer, the
# block's offsets (i32), the shape (i32) and every stride but the last (i64) -- which the backend
# uses where TMA cannot copy the block exactly (backends/cuda/tma.py). A load the prefetch pass
# issued ahead for a later iteration has one more operand: an i1, whether that iteration runs.

def _tma_check(types, rank: int, what: str):
    if types[0] != TMAP:
        raise OpTypeError(f"{what}: expected a tensor map, got {types[0]}")
    want = [I32] * (2 * rank) + [I64] * (rank - 1)
    if not isinstance(types[1], PointerType) or list(types[2:]) != want:
        raise OpTypeError(f"{what}: expected the base pointer, {rank} i32 offsets, {rank} i32 dimensions and "
                          f"{rank - 1} i64 strides, got {', '.join(map(str, types[1:]))}")


def _tma_load_rule(types, attrs):
    rank = len(attrs["shape"])
    if len(types) == 3 * rank + 2 and types[-1] == I1:      # (whether the iteration it loads for runs)
        types = types[:-1]
    _tma_check(types, rank, "tma_load")
    if types[1].pointee != attrs["dtype"]:
        raise OpTypeError(f"tma_load: a {attrs['dtype']} block from {types[1]}")
    return make_type(tuple(attrs["shape"]), attrs["dtype"])


def _tma_store_rule(types, attrs):
    value = types[1]
    if not isinstance(value, BlockType) or not isinstance(types[2], PointerType) or value.element != types[2].pointee:
        raise OpTypeError(f"tma_store: the value must be a block of the base's element type, got {value} for {types[2]}")
    _tma_check([types[0], *types[2:]], value.rank, "tma_store")
    return None


define(OpDef("tma_load", (4, 18), _tma_load_rule, reads_memory=True, any_pointer=True,
             doc="tma_load tmap, base, offsets..., dims..., strides... [, runs] {shape, dtype, padding}: the block "
                 "at the offsets (elements out of bounds read the padding), one TMA copy where it is exact"))
define(OpDef("tma_store", (5, 18), _tma_store_rule, writes_memory=True, any_pointer=True,
             doc="tma_store tmap, value, base, offsets..., dims..., strides...: the block at the offsets (elements "
                 "out of bounds are not written), one TMA copy where it is exact"))


# --- device functions: @jit(noinline=True) helpers called, not inlined (frontend/codegen.py) -------

def _call_rule(types, attrs):
    params = list(attrs["params"])
    if list(types) != params:
        raise OpTypeError(f"call {attrs['name']}: arguments of types {', '.join(map(str, types)) or 'none'} for "
                          f"parameters of types {', '.join(map(str, params)) or 'none'}")
    return tuple(attrs["results"])


# A call may read and write any memory its pointer arguments reach (its body is another function).
define(OpDef("call", (0, 64), _call_rule, reads_memory=True, writes_memory=True, any_pointer=True,
             doc="call args... {callee, name, params, results}: the device function `callee` (a @jit(noinline=True) "
                 "helper), its results"))
# The end of a device function: its operands are what it returns. Kept like a write (it must run,
# and last), though it touches no memory.
define(OpDef("func_return", (0, 64), lambda types, attrs: None, writes_memory=True,
             doc="func_return values...: what the device function returns"))


# --- atomics -------------------------------------------------------------------------------------

ATOMIC_SEMS = ("acq_rel", "acquire", "release", "relaxed")     # the first is the default
ATOMIC_SCOPES = ("gpu", "cta", "sys")

_INTS = ("i32", "u32", "i64", "u64")
# Triton's rules (with what the hardware has): fp16 only for add, floats not for the bitwise ops;
# 8/16-bit integers and bool never; compare-and-swap on any 16-, 32- or 64-bit type.
ATOMIC_DTYPES = {
    "add": _INTS + ("fp16", "bf16", "fp32", "fp64"),
    "max": _INTS + ("fp32", "fp64"),
    "min": _INTS + ("fp32", "fp64"),
    "and": _INTS, "or": _INTS, "xor": _INTS,
    "xchg": _INTS + ("fp32", "fp64"),
    "cas": _INTS + ("i16", "u16", "fp16", "bf16", "fp32", "fp64"),
}


def float_order_key(x: np.ndarray) -> np.ndarray:
    """The integer order Triton's float atomic max/min follow (signed-integer max on values with
    the sign bit clear, unsigned min on values with it set): -NaN < -inf < … < -0.0 < +0.0 < … <
    +inf < +NaN, by bit pattern (so NaNs of either sign take part, and -0.0 < +0.0)."""
    bits = x.view({2: np.int16, 4: np.int32, 8: np.int64}[x.dtype.itemsize])
    magnitude = np.array(np.iinfo(bits.dtype).max, bits.dtype)
    return np.where(bits < 0, bits ^ magnitude, bits)


def _atomic_extreme(pick_new):
    def update(old, val):
        if old.dtype.kind == "f":
            return np.where(pick_new(float_order_key(val), float_order_key(old)), val, old)
        return np.where(pick_new(val, old), val, old)
    return update


def _bits_equal(a, b):
    if a.dtype.kind == "f":
        view = {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
        return a.view(view) == b.view(view)
    return a == b


# The memory's new value from its old value and the operands (numpy arrays of the pointee's dtype):
# the semantics of each atomic kind, which the interpreter runs element by element in some order.
ATOMIC_UPDATE: dict[str, Callable[..., Any]] = {
    "add": np.add, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "max": _atomic_extreme(np.greater), "min": _atomic_extreme(np.less),
    "xchg": lambda old, val: val,
    "cas": lambda old, cmp, val: np.where(_bits_equal(old, cmp), val, old),   # compares bit patterns
}


def check_atomic(kind: str, pointee: ScalarType, attrs: dict | None = None):
    """Refuse an atomic on a type it does not support, or with an unknown ``sem``/``scope``."""
    name = "atomic_" + kind
    if pointee.name not in ATOMIC_DTYPES[kind]:
        raise OpTypeError(f"tl.{name} does not support {pointee}; supported: "
                          f"{', '.join(str(SCALARS[n]) for n in ATOMIC_DTYPES[kind])}")
    if attrs is not None:
        if attrs.get("sem") not in ATOMIC_SEMS:
            raise OpTypeError(f"tl.{name}: memory semantic {attrs.get('sem')!r} is not supported "
                              f"(use one of {', '.join(map(repr, ATOMIC_SEMS))})")
        if attrs.get("scope") not in ATOMIC_SCOPES:
            raise OpTypeError(f"tl.{name}: memory scope {attrs.get('scope')!r} is not supported "
                              f"(use one of {', '.join(map(repr, ATOMIC_SCOPES))})")


def _atomic_rule(kind_of):
    """ptr, value operands (and a mask for atomic_rmw): the values and the mask broadcast to the
    pointer's shape and have the pointee's type; the result is the old values."""
    def rule(types, attrs):
        kind = kind_of(attrs)
        p = types[0].scalar
        if not isinstance(p, PointerType):
            raise OpTypeError(f"tl.atomic_{kind}: expected a pointer, got {types[0]}")
        n_values = 2 if kind == "cas" else 1
        for t in types[1:1 + n_values]:
            if isinstance(t.scalar, PointerType):
                raise OpTypeError(f"tl.atomic_{kind}: the value must be a number, not a pointer ({t})")
            if t.scalar != p.pointee:
                raise OpTypeError(f"tl.atomic_{kind}: the value ({t.scalar}) must have the pointee's type {p.pointee}")
        if len(types) > 1 + n_values:
            _mask_check(types[1 + n_values], f"tl.atomic_{kind}")
        check_atomic(kind, p.pointee, attrs)
        shape = _broadcast(types, f"tl.atomic_{kind}")
        if shape != shape_of(types[0]):
            raise OpTypeError(f"tl.atomic_{kind}: value/mask shape {shape} does not fit the pointer shape "
                              f"{shape_of(types[0]) or '(a scalar pointer)'}")
        return make_type(shape_of(types[0]), p.pointee)
    return rule


ATOMIC_RMW_KINDS = ("add", "max", "min", "and", "or", "xor", "xchg")


def _rmw_kind(attrs):
    kind = attrs.get("kind")
    if kind not in ATOMIC_RMW_KINDS:
        raise OpTypeError(f"atomic_rmw: unknown kind {kind!r}")
    return kind


# A scalar atomic runs once per program (by one thread) and every thread gets its result; a tile
# atomic updates each element once (by the element's owning thread) and every copy of the element
# gets the old value. Masked-off elements leave memory alone and read 0.
define(OpDef("atomic_rmw", (2, 3), _atomic_rule(_rmw_kind), reads_memory=True, writes_memory=True,
             elementwise=True, keeps_layout=True, mask_operand=2,
             doc="atomic read-modify-write ptr, value [, mask] {kind, sem, scope}: returns the old values"))
define(OpDef("atomic_cas", (3, 3), _atomic_rule(lambda attrs: "cas"), reads_memory=True, writes_memory=True,
             elementwise=True, keeps_layout=True,
             doc="atomic compare-and-swap ptr, cmp, value {sem, scope}: returns the old values"))
define(OpDef("debug_barrier", (0, 0), lambda types, attrs: None, reads_memory=True, writes_memory=True,
             doc="tl.debug_barrier(): a block-wide barrier; no memory access moves across it"))


def _print_rule(types, attrs):
    if not isinstance(attrs.get("prefix"), str) or not isinstance(attrs.get("hex"), bool):
        raise OpTypeError("device_print needs a str prefix and a bool hex")
    return None


def print_format(t, hex_: bool) -> tuple[str, str, int]:
    """How device_print shows a value of type ``t``, as Triton's printf lowering: (printf
    conversion, the C type the value is passed as, the bits it shows in hexadecimal or 0). Hex:
    zero-padded to the type's width (``0x%08x``, ``0x%016llx``); floats ``%f`` (passed as double);
    integers ``%i``/``%u`` (``%lli``/``%llu`` for 64 bits; int1 is unsigned); pointers ``%p``."""
    if isinstance(t, PointerType):
        return "%p", "const void *", 0
    if hex_:
        return f"0x%0{t.bits // 4}{'ll' if t.bits > 32 else ''}x", \
            "unsigned long long" if t.bits > 32 else "unsigned int", t.bits
    if t.is_float:
        return "%f", "double", 0
    signed = t.is_signed and not t.is_bool
    if t.bits > 32:
        return ("%lli", "long long", 0) if signed else ("%llu", "unsigned long long", 0)
    return ("%i", "int", 0) if signed else ("%u", "unsigned int", 0)


def print_line_format(t, hex_: bool, shape: tuple) -> str:
    """The printf format of one device_print line, as Triton 3.6 lowers ``tt.print``:
    ``pid (%u, %u, %u) idx (%<w>u, ...)`` (index i padded to the digits of its dimension,
    ceil(log10(dim))), then the label (a ``%s``: the prefix as the language munged it, with
    ``(operand k) `` when the print has several operands), the value's conversion and a newline."""
    widths = [0 if d <= 1 else len(str(d - 1)) for d in shape]
    idx = ", ".join(f"%{w}u" for w in widths)
    return f"pid (%u, %u, %u) idx ({idx})%s{print_format(t, hex_)[0]}\n"


# (a side effect: kept, and kept in order, as a memory write)
define(OpDef("device_print", (1, 1), _print_rule, reads_memory=True, writes_memory=True, elementwise=True,
             keeps_layout=True, doc="tl.device_print(prefix, x): a line per element of x and program: "
                                    "'pid (x, y, z) idx (i, ...)<prefix><value>' (print_line_format)"))


def _assert_rule(types, attrs):
    if not isinstance(attrs.get("message"), str):
        raise OpTypeError("device_assert needs a str message")
    if types[0].scalar != I1:
        raise OpTypeError(f"tl.device_assert takes a boolean condition, got {types[0]}")
    if len(types) == 2 and (types[1].scalar != I1 or shape_of(types[1]) != shape_of(types[0])):
        raise OpTypeError(f"tl.device_assert: the mask must be booleans of the condition's shape, got {types[1]}")
    return None


define(OpDef("device_assert", (1, 2), _assert_rule, reads_memory=True, writes_memory=True,
             doc="tl.device_assert(cond, msg, mask) of a kernel compiled with debug: where an enabled element's "
                 "cond is false, the kernel stops with its file:line, the program id and the message"))


# --- indices, shapes, factories ------------------------------------------------------------------

def _axis_rule(types, attrs):
    axis = attrs["axis"]
    if axis not in (0, 1, 2):
        raise OpTypeError(f"program axis must be 0, 1 or 2, got {axis!r}")
    return I32


define(OpDef("program_id", (0, 0), _axis_rule, doc="index of this program along axis"))
define(OpDef("num_programs", (0, 0), _axis_rule, doc="number of programs along axis"))


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _arange_rule(types, attrs):
    start, end = attrs["start"], attrs["end"]
    if end <= start:
        raise OpTypeError(f"arange: end ({end}) must be greater than start ({start})")
    if not _is_pow2(end - start):
        raise OpTypeError(f"arange: the range length ({end - start}) must be a power of 2")
    return BlockType((end - start,), I32)


define(OpDef("arange", (0, 0), _arange_rule, rematerializable=True, doc="[start, end) as an i32 vector"))


def _expand_rule(types, attrs):
    shape = shape_of(types[0])
    axis = attrs["axis"]
    if not 0 <= axis <= len(shape):
        raise OpTypeError(f"cannot insert a dimension at {axis} into shape {shape}")
    return BlockType(shape[:axis] + (1,) + shape[axis:], types[0].scalar)


define(OpDef("expand_dims", (1, 1), _expand_rule, doc="x[:, None] and friends"))


def _broadcast_rule(types, attrs):
    shape = tuple(attrs["shape"])
    if broadcast_shapes(shape_of(types[0]) or (1,) * len(shape), shape) != shape:
        raise OpTypeError(f"cannot broadcast {shape_of(types[0])} to {shape}")
    return BlockType(shape, types[0].scalar)


define(OpDef("broadcast", (1, 1), _broadcast_rule, keeps_layout=True, doc="tl.broadcast_to"))


def _trans_rule(types, attrs):
    shape, dims = shape_of(types[0]), tuple(attrs["dims"])
    if not shape:
        raise OpTypeError(f"tl.trans/tl.permute need a block, got the scalar {types[0]}")
    if len(dims) != len(shape):
        raise OpTypeError(f"permute dims must have the same length as the input shape: {dims} for {shape}")
    if sorted(dims) != list(range(len(dims))):
        raise OpTypeError(f"permute dims must be a permutation of 0, 1, ..., n-1, but were {dims}")
    return BlockType(tuple(shape[d] for d in dims), types[0].scalar)


# --- shape ops: each result element is one operand element (through shared memory in CUDA) --------

def _numel(shape) -> int:
    return math.prod(shape) if shape else 1


def _reshape_rule(types, attrs):
    shape, new = shape_of(types[0]), tuple(attrs["shape"])
    check_block_shape(new)
    if _numel(shape) != _numel(new):
        raise OpTypeError(f"reshape: cannot reshape a block of {_numel(shape)} elements {list(shape)} into "
                          f"{list(new)} ({_numel(new)} elements)")
    return BlockType(new, types[0].scalar)


def _join_rule(types, attrs):
    a, b = types
    if a != b:
        raise OpTypeError(f"join: both inputs must have the same type, got {a} and {b}")
    return BlockType(shape_of(a) + (2,), a.scalar)


def _split_rule(types, attrs):
    shape = shape_of(types[0])
    if not shape or shape[-1] != 2:
        raise OpTypeError(f"split: the last dimension must have size 2, got shape {list(shape)}")
    return (make_type(shape[:-1], types[0].scalar),) * 2


def _cat_rule(types, attrs):
    a, b = types
    sa, sb = shape_of(a), shape_of(b)
    if not sa or a.scalar != b.scalar or len(sa) != len(sb) or sa[1:] != sb[1:]:
        raise OpTypeError(f"cat: blocks of one element type and of equal dimensions after the first, got {a} and {b}")
    return BlockType(check_block_shape((sa[0] + sb[0],) + sa[1:]), a.scalar)


def _flip_rule(types, attrs):
    shape = shape_of(types[0])
    if not 0 <= attrs["dim"] < len(shape):
        raise OpTypeError(f"flip: dim {attrs['dim']} is out of range for shape {list(shape)}")
    return types[0]


define(OpDef("reshape", (1, 1), _reshape_rule, doc="tl.reshape: the elements in row-major order, in a new shape"))
define(OpDef("join", (2, 2), _join_rule, doc="tl.join: a new minor dimension of size 2 (a, then b)"))
define(OpDef("split", (1, 1), _split_rule, doc="tl.split: the two halves of a minor dimension of size 2 (two results)"))
define(OpDef("cat", (2, 2), _cat_rule, doc="tl.cat: a's elements, then b's, along the first dimension"))
define(OpDef("flip", (1, 1), _flip_rule, doc="tl.flip: the elements along `dim` in reverse order"))


def _histogram_rule(types, attrs):
    x = types[0]
    if not isinstance(x, BlockType) or x.rank != 1 or not x.scalar.is_int or x.scalar.is_bool:
        raise OpTypeError(f"tl.histogram takes a 1-d block of integers, got {x}")
    if len(types) == 2 and types[1] != BlockType(x.shape, I1):
        raise OpTypeError(f"tl.histogram: the mask must be a {BlockType(x.shape, I1)}, got {types[1]}")
    bins = attrs["num_bins"]
    if type(bins) is not int or bins <= 0 or bins & (bins - 1):
        raise OpTypeError(f"tl.histogram: num_bins must be a power of 2, got {bins!r}")
    return BlockType((bins,), I32)


define(OpDef("histogram", (1, 2), _histogram_rule,
             doc="tl.histogram: how many of x's elements (where the mask holds) equal 0, 1, ..., num_bins - 1 "
                 "(values outside that range are not counted)"))
def _gather_rule(types, attrs):
    src, index = types
    axis = attrs["axis"]
    if not (isinstance(src, BlockType) and isinstance(index, BlockType)) or src.rank != index.rank:
        raise OpTypeError(f"tl.gather: source and index must be blocks of one rank, got {src} and {index}")
    if not index.scalar.is_int or index.scalar.is_bool:
        raise OpTypeError(f"tl.gather: the index must be integers, got {index.scalar}")
    if not 0 <= axis < src.rank:
        raise OpTypeError(f"tl.gather: axis {axis} is out of range for rank {src.rank}")
    if any(a != b for d, (a, b) in enumerate(zip(src.shape, index.shape)) if d != axis):
        raise OpTypeError(f"tl.gather: source {list(src.shape)} and index {list(index.shape)} must agree on every "
                          f"dimension but {axis}")
    return BlockType(index.shape, src.scalar)


define(OpDef("gather", (2, 2), _gather_rule,
             doc="tl.gather(src, index, axis): out[..i..] = src at index[..i..] along axis, the other coordinates "
                 "i's (an index outside [0, n) reads index mod n: Triton leaves it undefined)"))

# ops whose operands the CUDA backend moves through shared memory (any layout in, any layout out;
# a gather's index comes in its result's layout; a TMA copy's tile is in shared memory)
THROUGH_SHARED = ("reshape", "join", "split", "cat", "flip", "histogram", "gather", "tma_load", "tma_store")


DOT_PRECISIONS = ("tf32", "tf32x3", "ieee")


def _dot_rule(types, attrs):
    """``dot(a, b, acc)``: a (M, K) times b (K, N) plus acc (M, N); the frontend (``tl.dot``) checks
    Triton's rules and always passes an accumulator, whose type is the result's."""
    a, b, acc = types
    if not (isinstance(a, BlockType) and isinstance(b, BlockType) and isinstance(acc, BlockType)):
        raise OpTypeError(f"tl.dot needs blocks, got {a}, {b} and {acc}")
    if not a.rank == b.rank == acc.rank or a.rank not in (2, 3) or a.shape[:-2] != b.shape[:-2]:
        raise OpTypeError(f"tl.dot of {a} and {b} into {acc}: 2-d blocks, or 3-d ones of one batch size")
    (*batch, m, k), (_, k2, n) = a.shape, b.shape[-3:] if b.rank == 3 else (None, *b.shape)
    if k != k2 or acc.shape != (*batch, m, n) or a.scalar != b.scalar:
        raise OpTypeError(f"tl.dot of {a} and {b} into {acc}: the shapes or element types do not match")
    if attrs.get("input_precision") not in DOT_PRECISIONS:
        raise OpTypeError(f"input_precision must be one of {DOT_PRECISIONS}, got {attrs.get('input_precision')!r}")
    return acc


define(OpDef("dot", (3, 3), _dot_rule,
             doc="tl.dot: a (M, K) @ b (K, N) + acc (M, N), or batched: (B, M, K) @ (B, K, N) + (B, M, N); fp32 inputs as input_precision says (tf32: "
                 "the low 13 mantissa bits dropped, as the tensor cores read them; tf32x3: three tf32 "
                 "products; ieee: exact), halves exact in fp32, int8 in int32"))
define(OpDef("trans", (1, 1), _trans_rule,
             doc="tl.trans / tl.permute / x.T: result dimension i is the input's dimension dims[i]; no data "
                 "moves (the operand's layout is the result's, permuted)"))


def check_block_shape(shape) -> tuple[int, ...]:
    if not isinstance(shape, tuple) or not shape:
        raise OpTypeError(f"block shape must be a non-empty int sequence, got {shape!r}")
    if any(type(d) is not int or d <= 0 for d in shape):
        raise OpTypeError(f"block dimensions must be positive integers, got {shape}")
    if any(not _is_pow2(d) for d in shape):
        raise OpTypeError(f"block dimensions must be powers of 2, got {shape}")
    return shape


def _factory_rule(types, attrs):
    shape = check_block_shape(attrs["shape"])
    dtype = attrs["dtype"]
    if not isinstance(dtype, ScalarType):
        raise OpTypeError(f"block dtype must be a scalar dtype, got {dtype}")
    if types:
        v = types[0]
        if isinstance(v, BlockType):
            raise OpTypeError(f"full value must be scalar, got {v}")
        if isinstance(v, PointerType) or (v.is_bool != dtype.is_bool):
            raise OpTypeError(f"full value of type {v} cannot be converted to {dtype}")
    return BlockType(shape, dtype)


define(OpDef("zeros", (0, 0), _factory_rule, rematerializable=True))
define(OpDef("empty", (0, 0), _factory_rule, rematerializable=True, doc="uninitialized contents"))
define(OpDef("full", (1, 1), _factory_rule, rematerializable=True, doc="a block filled with one scalar"))


# --- reductions ------------------------------------------------------------------------------

def sum_type(elem: ScalarType) -> ScalarType:
    """What Triton sums (and cumsums) ``elem`` in: integers narrower than 32 bits widen to 32 with
    their sign (bool counts as unsigned); other types stay."""
    if elem.is_int and elem.bits < 32:
        return I32 if elem.is_signed else U32
    return elem


def _reduce_rule(types, attrs):
    t = types[0]
    if not isinstance(t, BlockType):
        raise OpTypeError(f"reduction expects a block, got {t}")
    elem = _numeric(t, "reduction")
    if attrs.get("kind") in ("xor_sum", "reduce_or") and not elem.is_int:
        raise OpTypeError(f"tl.{attrs['kind']} takes integers, got {elem}")
    if attrs.get("kind") == "sum":
        elem = sum_type(elem)
    axis = attrs["axis"]
    if axis is None:
        return elem
    if not -t.rank <= axis < t.rank:
        raise OpTypeError(f"reduction axis {axis} is out of range for {t}")
    axis %= t.rank
    shape = t.shape[:axis] + t.shape[axis + 1:]
    return make_type(shape, elem)


# each reduction combines with an elementwise op of the registry (its numpy ufunc, C and MLIR spellings)
REDUCE_COMBINE = {"sum": "add", "max": "maximum", "min": "minimum", "xor_sum": "xor", "reduce_or": "or"}
REDUCE_KINDS = tuple(REDUCE_COMBINE)
for _k in REDUCE_KINDS:
    define(OpDef(_k, (1, 1), lambda types, attrs, k=_k: _reduce_rule(types, dict(attrs, kind=k)),
                 doc=f"tl.{_k}(x, axis): by {REDUCE_COMBINE[_k]} (max/min ignore NaN like tl.maximum; xor_sum and "
                     f"reduce_or take integers)"))


def _combine_rule(types, attrs, scan: bool):
    """``reduce`` / ``scan`` of N blocks of one shape along ``axis`` by the ``combine`` body (a
    ``Combine``, its 2N arguments the operands' element types, twice): N results, each a block of the
    operand's shape (scan) or of that shape without ``axis`` (reduce; a scalar from a 1-d block)."""
    what = "tl.associative_scan" if scan else "tl.reduce"
    if not types:
        raise OpTypeError(f"{what} takes at least one block")
    shape = shape_of(types[0])
    for t in types:
        if not isinstance(t, BlockType):
            raise OpTypeError(f"{what} expects blocks, got {t}")
        if t.shape != shape:
            raise OpTypeError(f"{what}: all inputs must have the same shape, got {', '.join(map(str, types))}")
        if isinstance(t.scalar, PointerType):
            raise OpTypeError(f"{what} is not defined on pointers ({t})")
    axis = attrs["axis"]
    if type(axis) is not int or not 0 <= axis < len(shape):
        raise OpTypeError(f"{what}: axis {axis!r} is out of range for a rank-{len(shape)} block")
    combine = attrs.get("combine")
    region = getattr(combine, "region", None)
    elems = [t.scalar for t in types]
    if region is not None:
        got = [a.type for a in region.args]
        if got != elems * 2:
            raise OpTypeError(f"{what}: the combine function takes {', '.join(map(str, got))}; expected "
                              f"{', '.join(map(str, elems * 2))}")
        out = [v.type for v in region.ops[-1].operands] if region.ops and region.ops[-1].name == "yield" else None
        if out != elems:
            raise OpTypeError(f"{what}: the combine function must return {', '.join(map(str, elems))}")
    if scan:
        return tuple(types)
    rest = shape[:axis] + shape[axis + 1:]
    return tuple(make_type(rest, e) for e in elems)


def _map_rule(types, attrs):
    """``tl.map_elementwise``: operands of one shape (broadcast by the language); the body (a
    Combine) takes ``pack`` elements of each operand in turn and returns ``pack`` values per result,
    all of one type each; one result block per returned value."""
    shape = shape_of(types[0]) if types else ()
    for t in types:
        if shape_of(t) != shape:
            raise OpTypeError(f"tl.map_elementwise: operands of one shape expected, got {', '.join(map(str, types))}")
        if isinstance(t.scalar, PointerType):
            raise OpTypeError(f"tl.map_elementwise is not defined on pointers ({t})")
    pack, body = attrs["pack"], attrs["combine"]
    region = getattr(body, "region", None)           # (a Combine; as traced, a CombineTree)
    args = [a.type for a in (region.args if region is not None else body.args)]
    want = [t.scalar for t in types for _ in range(pack)]
    if args != want:
        raise OpTypeError(f"tl.map_elementwise: the function takes {', '.join(map(str, args))}; "
                          f"expected {', '.join(map(str, want))}")
    out = [v.type for v in (region.ops[-1].operands if region is not None else body.results)]
    if not out or len(out) % pack or any(out[i] != out[i - i % pack] for i in range(len(out))):
        raise OpTypeError(f"tl.map_elementwise: the function must return {pack} value(s) of one type per result, "
                          f"got {', '.join(map(str, out))}")
    return tuple(make_type(shape, out[i]) for i in range(0, len(out), pack))


define(OpDef("map_elementwise", (1, 1 << 30), _map_rule, keeps_layout=True,
             doc="tl.map_elementwise: the `combine` body (a Combine) on each group of `pack` elements of the "
                 "operands; one result per returned value (of `pack`)"))


# constraint letters of inline PTX operands and the register width each names (bits)
ASM_REGISTERS = {"r": 32, "l": 64, "h": 16, "f": 32, "d": 64}


def asm_registers(elem, pack: int) -> tuple[int, int]:
    """(registers, elements per register) of one operand of ``tl.inline_asm_elementwise`` per
    invocation, as Triton packs them: ``pack`` elements narrower than 32 bits share 32-bit registers
    (4 int8 or 2 fp16 in one), wider ones take one register each."""
    bits = 64 if isinstance(elem, PointerType) else elem.bits
    per = max(1, min(pack, 32 // bits)) if bits < 32 else 1
    return -(-pack // per), per



def _inline_asm_rule(types, attrs):
    """``tl.inline_asm_elementwise``: operands of one shape (broadcast by the language), one result
    per dtype of that shape; the constraints list one register per output, then per input."""
    shape = shape_of(types[0]) if types else ()
    for t in types:
        if shape_of(t) != shape:
            raise OpTypeError(f"tl.inline_asm_elementwise: operands of one shape expected, got {', '.join(map(str, types))}")
    pack, dtypes = attrs["pack"], attrs["dtypes"]
    if type(pack) is not int or pack < 1 or pack & (pack - 1):
        raise OpTypeError(f"tl.inline_asm_elementwise: pack must be a power of 2, got {pack!r}")
    constraints = attrs["constraints"]
    wanted = [asm_registers(d, pack)[0] for d in dtypes] + [asm_registers(t.scalar, pack)[0] for t in types]
    outputs = [c for c in constraints if c.startswith("=")]
    if len(constraints) != sum(wanted) or len(outputs) != sum(wanted[:len(dtypes)]):
        raise OpTypeError(f"tl.inline_asm_elementwise: {len(constraints)} constraints for {sum(wanted[:len(dtypes)])} "
                          f"output and {sum(wanted[len(dtypes):])} input registers (pack={pack}: elements narrower than "
                          f"32 bits share registers, 4 int8 or 2 fp16 in one)")
    for c in constraints:
        letter = c.lstrip("=")
        if letter not in ASM_REGISTERS:
            raise OpTypeError(f"tl.inline_asm_elementwise: unsupported constraint {c!r} (use one of "
                              f"{', '.join(ASM_REGISTERS)}, '=' before an output's)")
    return tuple(make_type(shape, d) for d in dtypes)


for _name, _effects in (("inline_asm", False), ("inline_asm_effects", True)):
    define(OpDef(_name, (0, 1 << 30), _inline_asm_rule, reads_memory=_effects, writes_memory=_effects,
                 keeps_layout=True, any_pointer=_effects,
                 doc="tl.inline_asm_elementwise: PTX run per group of `pack` elements; one result per dtype"
                     + ("; may read and write memory (is_pure=False)" if _effects else "")))


define(OpDef("reduce", (1, 1 << 30), lambda types, attrs: _combine_rule(types, attrs, scan=False),
             doc="tl.reduce: N blocks of one shape reduced along `axis` by the `combine` body (a Combine: "
                 "a closed region of 2N scalar arguments yielding N scalars; associative and commutative, "
                 "as Triton assumes); N results"))
define(OpDef("scan", (1, 1 << 30), lambda types, attrs: _combine_rule(types, attrs, scan=True),
             doc="tl.associative_scan: the inclusive prefixes of N blocks along `axis` by the `combine` body "
                 "(associative; operands in index order, from the end when `reverse`); N results"))


# --- layout and control flow -----------------------------------------------------------------

define(OpDef("convert_layout", (1, 1), lambda types, attrs: types[0],
             doc="moves a block to another layout through shared memory"))
def _for_control(op_operands, attrs):
    """start, stop, step: scalars of one type, i32 or i64 (the index's, as Triton promotes the
    three); a constant step is not zero (any other step, of either sign and known only at run
    time, is allowed: a zero step at run time runs no iteration)."""
    types = [v.type for v in op_operands]
    for name, t in zip(("start", "stop", "step"), types):
        if t not in (I32, I64):
            raise OpTypeError(f"loop {name} must be a scalar i32 or i64, got {t}")
    if len(set(types)) != 1:
        raise OpTypeError(f"loop start, stop and step must have one type, got {', '.join(map(str, types))}")
    step = op_operands[2]
    if isinstance(step, Const) and step.value == 0:
        raise OpTypeError("loop step must not be zero")


def _condition_control(op_operands, attrs):
    c = op_operands[0].type
    if c != I1:
        raise OpTypeError(f"the condition must be a scalar i1, got {c}")


def _for_runs_guard(op) -> tuple[str, list] | None:
    """(comparison op name, its two operands): true exactly when the loop runs at least once; None
    when the step's sign is not known at compile time."""
    start, stop, step = op.operands[:3]
    if not isinstance(step, Const) or not step.value:
        return None
    return ("cmp_lt", [start, stop]) if step.value > 0 else ("cmp_gt", [start, stop])


def _if_static_branch(op) -> int | None:
    cond = op.operands[0]
    if isinstance(cond, Const):
        return 0 if cond.value else 1
    return None


define(OpDef("for", (3, 1 << 30), lambda types, attrs: None, regions=1, loop=True,
             region_flow=RegionFlow(
                 control=3, control_check=_for_control, leading_args=((CONTROL_TYPE,),),
                 terminators=("yield",),
                 edges=((EXIT(0), ARGS(0)), (OPERANDS, ARGS(0)), (EXIT(0), RESULTS), (OPERANDS, RESULTS)),
                 lane_attrs=("names",), runs_guard=_for_runs_guard),
             doc="structured loop: start, stop, step, initial carried values; one body region whose "
                 "arguments are the index and the carried values, ending in `yield` of the next values"))
define(OpDef("if", (1, 1), lambda types, attrs: None, regions=2,
             region_flow=RegionFlow(control=1, control_check=_condition_control, terminators=("yield", "yield"),
                                    edges=((EXIT(0), RESULTS), (EXIT(1), RESULTS)), lane_attrs=("names",),
                                    static_branch=_if_static_branch),
             doc="if cond (scalar i1): a then and an else region, each ending in `yield` of the results"))
define(OpDef("while", (0, 1 << 30), lambda types, attrs: None, regions=2, loop=True,
             region_flow=RegionFlow(
                 terminators=("condition", "yield"), terminator_control=(1, 0),
                 terminator_check=(_condition_control, None),
                 edges=((OPERANDS, ARGS(0)), (EXIT(1), ARGS(0)), (EXIT(0), ARGS(1)), (EXIT(0), RESULTS)),
                 lane_attrs=("names",)),
             doc="MLIR's scf.while: the before region (arguments: the carried values) computes the "
                 "condition and ends in `condition c, values...`; while c the values enter the after "
                 "region (the body), whose `yield` feeds the before region again; when c is false they "
                 "are the results"))
define(OpDef("yield", (0, 1 << 30), lambda types, attrs: None, terminator=True,
             doc="ends a region; its operands flow on as the parent op's interface says"))
define(OpDef("condition", (1, 1 << 30), lambda types, attrs: None, terminator=True,
             doc="ends a while's before region: the condition, then the values passed on"))


# --- evaluation helpers shared by the folder and the interpreter -------------------------------

@functools.cache
def np_dtype(t: ScalarType):
    """The numpy scalar type of ``t`` (the dtype table's ``numpy``); bf16 and fp8 are ml_dtypes',
    imported only when such a value is computed."""
    name = t.info.numpy
    if name in ML_DTYPES:
        import ml_dtypes
        return getattr(ml_dtypes, name)
    return np.dtype(name).type


def _bits_dtype(t: ScalarType):
    return np.dtype(f"uint{t.bits}")


def constant_value(value, t: ScalarType):
    """The one rounding rule for constants: the numpy scalar of type ``t`` that the Python number
    ``value`` stands for. A float is rounded once, from the Python double to ``t``, to nearest even,
    overflowing to ±inf (as numpy and Triton convert it: ``other=1e39`` is +inf in fp32); bf16 goes
    through fp32 (as Triton's fp32 constant truncated to bf16). The interpreter computes with this
    value and the backends spell exactly its bits."""
    with np.errstate(all="ignore"):
        if t.name == "bf16":
            return np.uint16(_bf16_bits(value)).view(np_dtype(t))
        if t.is_fp8:                 # an fp32 constant converted (as Triton's), saturating
            return _to_fp8(np.asarray(np.float32(value)), t)[()]
        return np_dtype(t)(value)


def _to_fp8(x: np.ndarray, t: ScalarType) -> np.ndarray:
    """fp32 values converted to the fp8 type ``t`` as ``cvt.rn.satfinite`` does: to nearest even,
    magnitudes beyond the largest finite value (infinities included) to it, NaN to the canonical
    NaN 0x7F (bit for bit what the GPU gives)."""
    import ml_dtypes
    target = np_dtype(t)
    top = float(ml_dtypes.finfo(target).max)
    out = np.asarray(np.clip(x, -top, top).astype(target))
    out.view(np.uint8)[np.isnan(x)] = 0x7F                   # (ml_dtypes' e5m2 NaN is 0x7E)
    return out


def _bf16_bits(value) -> int:
    with np.errstate(all="ignore"):
        bits = int(np.float32(value).view(np.uint32))
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF:
        return 0x7FC0 | (bits >> 16 & 0x8000)                   # NaN stays a (quiet) NaN
    return (bits + 0x7FFF + (bits >> 16 & 1)) >> 16 & 0xFFFF    # round to nearest even


def _toward_zero(rounded: np.ndarray, exact: np.ndarray, t: ScalarType) -> np.ndarray:
    """``rounded`` (``exact`` rounded to nearest in ``t``) turned into ``exact`` rounded toward zero:
    where rounding went away from zero, the magnitude steps down one unit in the last place (±inf
    from a finite value becomes the largest finite value)."""
    bits = rounded.view(_bits_dtype(t))
    wide = exact.astype(np.float64)
    away = np.abs(rounded.astype(np.float64)) > np.abs(wide)
    return np.where(away, bits - np.ones((), bits.dtype), bits).astype(bits.dtype).view(rounded.dtype)


def _narrow(x: np.ndarray, src: ScalarType, dst: ScalarType, rounding: str | None) -> np.ndarray:
    """A float narrowed to the float ``dst``: to nearest even (directly, not through fp32 where the
    source is fp64), or toward zero with ``rounding="rtz"``."""
    target = np_dtype(dst)
    if dst.name == "bf16" and src.bits == 64:
        # fp64 → bf16 in one rounding: to fp32 rounding to odd (truncate, then set the last bit when
        # inexact) keeps enough bits that rounding that to bf16 is the direct rounding
        f = x.astype(np.float32)
        bits = f.view(np.uint32)
        over = np.abs(f.astype(np.float64)) > np.abs(x)
        bits = np.where(over, bits - np.uint32(1), bits).astype(np.uint32)
        inexact = (bits.view(np.float32).astype(np.float64) != x) & ~np.isnan(x)
        f = np.where(inexact, bits | np.uint32(1), bits).astype(np.uint32).view(np.float32)
        out = f.astype(target)
    else:
        out = x.astype(target)
    if rounding == "rtz":
        out = _toward_zero(np.asarray(out), x, dst)
    return out


def convert(x, src: ScalarType, dst: ScalarType, rounding: str | None = None) -> np.ndarray:
    """The cast op on numpy values ``x`` of type ``src`` (the interpreter's and the folder's one
    rule; the backends emit the same): to bool is ``!= 0``; float to integer truncates; a float
    narrowed rounds to nearest even (or toward zero, ``rounding="rtz"``); fp16, bf16 and fp8
    convert to anything but fp32 through fp32, an integer becomes bf16 through fp32, and fp8 is
    made from fp32 saturating (``_to_fp8``), as in Triton."""
    x = np.asarray(x)
    if isinstance(src, PointerType) or isinstance(dst, PointerType):     # (addresses are int64 here)
        if isinstance(dst, ScalarType) and dst.is_bool:
            return x != 0
        return x.astype(np.int64 if isinstance(dst, PointerType) else np_dtype(dst))
    with np.errstate(all="ignore"):
        if src == dst:
            return x.astype(np_dtype(dst), copy=False)
        if dst.is_bool:
            return x != 0
        if src.is_half or src.is_fp8:
            x, src = x.astype(np.float32), F32
            if dst == F32:
                return x
        if dst.is_fp8:               # through fp32 (fp64 rounded to it first), as Triton converts
            return _to_fp8(x.astype(np.float32), dst)
        if src.is_float and dst.is_float and dst.bits < src.bits:
            return _narrow(x, src, dst, rounding)
        if dst.name == "bf16":                       # from an integer
            return x.astype(np.float32).astype(np_dtype(dst))
        return x.astype(np_dtype(dst))


def exact_decimal(x: float) -> str | None:
    """The shortest decimal spelling of the finite float ``x`` when it is exactly ``x`` (``2.5``,
    ``-0.0``, ``1.0e+20``), else None: text any correct parser reads back bit for bit (with a '.'
    in the mantissa, as C++ and MLIR float literals want)."""
    text = repr(float(x))
    if not math.isfinite(x) or Fraction(text) != Fraction(x):
        return None
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + (e + exponent if e else "")


def float_bits(value, t: ScalarType) -> int:
    """The bit pattern of ``constant_value(value, t)`` in ``t``'s format (floats only)."""
    return int(constant_value(value, t).view(_bits_dtype(t)))


def eval_elementwise(name: str, operand_types: list[Type], args: list, attrs: dict, result_type: Type):
    """Evaluate an elementwise op on numpy values (scalars or arrays) with IR semantics. Operands
    are numpy arrays of their types, or Python numbers (the folder's constants), which stand for
    ``constant_value``. fp16 and bf16 compute in fp32 and round the result back once, as the GPU
    does (for + - * / sqrt that is the correctly rounded half-precision result)."""
    d = OPS[name]
    rt = result_type.scalar
    args = [a if isinstance(a, np.ndarray) else np.asarray(constant_value(a, t.scalar))
            for a, t in zip(args, operand_types)]
    with np.errstate(all="ignore"):
        if name == "cast":
            return convert(args[0], operand_types[0].scalar, rt, attrs.get("rounding"))
        if name == "bitcast":
            x = np.ascontiguousarray(args[0], np_dtype(operand_types[0].scalar))
            return x.view(np_dtype(rt))
        if name.startswith("libdevice."):   # (operands already of the signature's types)
            return np.asarray(d.np_fn(*args)).astype(np_dtype(rt), copy=False)
        ct = d.compute(operand_types, attrs)
        first = 1 if name == "where" else 0
        conv = [np.asarray(a, dtype=np.bool_) for a in args[:first]]
        conv += [convert(a, t.scalar, ct) for a, t in zip(args[first:], operand_types[first:])]
        if ct.is_half:
            conv[first:] = [c.astype(np.float32) for c in conv[first:]]
        out = d.np_fn(*conv)
        return np.asarray(out).astype(np_dtype(rt), copy=False) if isinstance(rt, ScalarType) else out

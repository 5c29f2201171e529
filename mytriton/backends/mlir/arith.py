"""Scalar semantics in MLIR: types, constants, conversions and the elementwise ops.

One table, ``ELEMENTWISE``, gives each elementwise op of the registry (ir/ops.py) its MLIR spelling
in the ``arith`` and ``math`` dialects, on scalars of the op's compute type. The semantics are the
registry's (Triton's and the CUDA backend's): integer + - * wrap (``arith`` integer ops carry no
overflow flags), integer // and % truncate toward zero, a zero divisor yields -1 / the dividend and
MIN // -1 wraps to MIN (``divsi``/``remsi`` leave both undefined, so the divisor is guarded),
float % is C ``fmod``, ``maximum``/``minimum`` ignore NaN (``maxnumf``), ``!=`` on floats is true for
NaN (``une``). MLIR integers are signless, so signedness picks the op (``divsi``/``divui``, ``slt``/
``ult``, ``extsi``/``extui``, ``sitofp``/``uitofp``).

Each builder receives the emitter ``e`` (``e.emit(rhs, name)`` defines a value and returns its
name, ``e.const(value, type)`` names a constant), the operand names, the compute type and a name
hint for the result; it returns the name holding the result (which may be an operand's name when
the op is the identity, e.g. ``abs`` of an unsigned value).
"""
from __future__ import annotations


from ...ir.ops import REDUCE_COMBINE, constant_value, exact_decimal, float_bits
from ...ir.types import PointerType, ScalarType

_ROUNDING = {"rtne": "to_nearest_even", "rtz": "toward_zero"}


def mlir_type(t: ScalarType | PointerType) -> str:
    """The MLIR spelling of an element type (the dtype table's; signless: i32 and u32 are both
    i32); pointers are opaque LLVM pointers."""
    if isinstance(t, PointerType):
        return "!llvm.ptr"
    return t.info.mlir


def constant_literal(value, t: ScalarType) -> str:
    """The attribute text of ``arith.constant`` for ``value`` of type ``t`` (without the type)."""
    if t.is_bool:
        return "true" if value else "false"
    if t.is_float:
        # rounded to `t` once by the registry's rule (ops.constant_value, as the interpreter and the
        # CUDA backend); in decimal where that is exact, else as its bit pattern
        decimal = exact_decimal(float(constant_value(value, t)))
        return decimal if decimal is not None else f"0x{float_bits(value, t):X}"
    v = int(value)
    if v >= 1 << (t.bits - 1):         # print unsigned values as their signless two's complement
        v -= 1 << t.bits
    return str(v)


def constant_name(value, t: ScalarType) -> str:
    """A readable SSA name for a constant, in MLIR's own style (``c64_i32``, ``true``, ``cst``)."""
    if t.is_bool:
        return "true" if value else "false"
    if t.is_float:
        return "cst"
    v = int(constant_literal(value, t))
    return f"c{'m' if v < 0 else ''}{abs(v)}_{mlir_type(t)}"


# --- conversions ------------------------------------------------------------------------------------

def convert(e, x: str, src, dst, name: str | None = None, rounding: str | None = None) -> str:
    """``x`` of type ``src`` converted to ``dst`` with C semantics (the CUDA backend's casts, the
    registry's ``ops.convert``): to bool is ``!= 0``; integers extend by the source's signedness;
    float <-> int by the integer's; a float narrowed rounds to nearest even, or toward zero with
    ``rounding="rtz"``; an integer becomes bf16 through f32 (as Triton's NVIDIA backend does)."""
    if src == dst or isinstance(dst, PointerType):
        return x
    s, d = mlir_type(src), mlir_type(dst)
    if dst.is_bool:
        zero = e.const(0, src)
        if src.is_float:
            return e.emit(f"arith.cmpf une, {x}, {zero} : {s}", name)
        return e.emit(f"arith.cmpi ne, {x}, {zero} : {s}", name)
    if src.is_float and dst.is_float:
        if src.bits == dst.bits:               # fp16 <-> bf16 goes through f32, as in C
            wide = e.emit(f"arith.extf {x} : {s} to f32")
            return e.emit(f"arith.truncf {wide} : f32 to {d}", name)
        if dst.bits > src.bits:
            return e.emit(f"arith.extf {x} : {s} to {d}", name)
        mode = f" {_ROUNDING[rounding]}" if rounding == "rtz" else ""
        return e.emit(f"arith.truncf {x}{mode} : {s} to {d}", name)
    if src.is_float:
        op = "fptosi" if dst.is_signed else "fptoui"
        return e.emit(f"arith.{op} {x} : {s} to {d}", name)
    if dst.is_float:
        op = "sitofp" if src.is_signed else "uitofp"
        if dst.name == "bf16":
            wide = e.emit(f"arith.{op} {x} : {s} to f32")
            return e.emit(f"arith.truncf {wide} : f32 to {d}", name)
        return e.emit(f"arith.{op} {x} : {s} to {d}", name)
    if src.bits == dst.bits:                    # i32 <-> u32: the same signless bits
        return x
    if dst.bits < src.bits:
        return e.emit(f"arith.trunci {x} : {s} to {d}", name)
    op = "extsi" if src.is_signed else "extui"
    return e.emit(f"arith.{op} {x} : {s} to {d}", name)


def bitcast(e, x: str, src: ScalarType, dst: ScalarType, name: str | None = None) -> str:
    """``x.to(dst, bitcast=True)``: the same bits (i32 and u32 are one MLIR type)."""
    if mlir_type(src) == mlir_type(dst):
        return x
    return e.emit(f"arith.bitcast {x} : {mlir_type(src)} to {mlir_type(dst)}", name)


# --- elementwise ops ---------------------------------------------------------------------------------

def _arith(float_op: str, signed_op: str, unsigned_op: str | None = None):
    def build(e, args, ct, name):
        op = float_op if ct.is_float else (signed_op if ct.is_signed else (unsigned_op or signed_op))
        return e.emit(f"arith.{op} {args[0]}, {args[1]} : {mlir_type(ct)}", name)
    return build


def _int_only(op: str, unsigned_op: str | None = None):
    def build(e, args, ct, name):
        chosen = op if ct.is_signed or unsigned_op is None else unsigned_op
        return e.emit(f"arith.{chosen} {args[0]}, {args[1]} : {mlir_type(ct)}", name)
    return build


def _safe_divisor(e, b: str, ct) -> tuple[str, str | None, str]:
    """The divisor with the cases arith leaves undefined replaced by 1: zero, and for signed types
    -1 (MIN / -1 overflows). Returns (is_zero, is_minus_one or None, safe divisor)."""
    t = mlir_type(ct)
    is_zero = e.emit(f"arith.cmpi eq, {b}, {e.const(0, ct)} : {t}")
    is_minus_one, bad = None, is_zero
    if ct.is_signed:
        is_minus_one = e.emit(f"arith.cmpi eq, {b}, {e.const(-1, ct)} : {t}")
        bad = e.emit(f"arith.ori {is_zero}, {is_minus_one} : i1")
    safe = e.emit(f"arith.select {bad}, {e.const(1, ct)}, {b} : {t}")
    return is_zero, is_minus_one, safe


def _floordiv(e, args, ct, name):
    """a // b truncating; b == 0 gives -1 and a // -1 is -a, wrapping (MIN // -1 == MIN)."""
    t = mlir_type(ct)
    a, b = args
    is_zero, is_minus_one, safe = _safe_divisor(e, b, ct)
    q = e.emit(f"arith.{'divsi' if ct.is_signed else 'divui'} {a}, {safe} : {t}")
    if is_minus_one is not None:
        negated = e.emit(f"arith.subi {e.const(0, ct)}, {a} : {t}")
        q = e.emit(f"arith.select {is_minus_one}, {negated}, {q} : {t}")
    return e.emit(f"arith.select {is_zero}, {e.const(-1, ct)}, {q} : {t}", name)


def _mod(e, args, ct, name):
    """a % b with the sign of a (C fmod for floats); b == 0 gives a, and a % -1 is 0."""
    t = mlir_type(ct)
    if ct.is_float:
        return e.emit(f"arith.remf {args[0]}, {args[1]} : {t}", name)
    a, b = args
    is_zero, _, safe = _safe_divisor(e, b, ct)       # a % 1 == 0 is also a % -1
    r = e.emit(f"arith.{'remsi' if ct.is_signed else 'remui'} {a}, {safe} : {t}")
    return e.emit(f"arith.select {is_zero}, {a}, {r} : {t}", name)


def _cmp(float_pred: str, signed_pred: str, unsigned_pred: str):
    def build(e, args, ct, name):
        t = mlir_type(ct)
        if ct.is_float:
            return e.emit(f"arith.cmpf {float_pred}, {args[0]}, {args[1]} : {t}", name)
        pred = signed_pred if ct.is_signed else unsigned_pred
        return e.emit(f"arith.cmpi {pred}, {args[0]}, {args[1]} : {t}", name)
    return build


def _math(op: str):
    def build(e, args, ct, name):
        return e.emit(f"math.{op} {args[0]} : {mlir_type(ct)}", name)
    return build


def _neg(e, args, ct, name):
    t = mlir_type(ct)
    if ct.is_float:
        return e.emit(f"arith.negf {args[0]} : {t}", name)
    return e.emit(f"arith.subi {e.const(0, ct)}, {args[0]} : {t}", name)


def _invert(e, args, ct, name):
    ones = e.const(True, ct) if ct.is_bool else e.const(-1, ct)
    return e.emit(f"arith.xori {args[0]}, {ones} : {mlir_type(ct)}", name)


def _abs(e, args, ct, name):
    t = mlir_type(ct)
    if ct.is_float:
        return e.emit(f"math.absf {args[0]} : {t}", name)
    if not ct.is_signed:
        return args[0]                          # |x| of an unsigned value (or a bool) is x
    return e.emit(f"math.absi {args[0]} : {t}", name)


def _true_div(e, args, ct, name):
    assert ct.is_float, "the registry computes true division in a float type"
    return e.emit(f"arith.divf {args[0]}, {args[1]} : {mlir_type(ct)}", name)


def _where(e, args, ct, name):
    return e.emit(f"arith.select {args[0]}, {args[1]}, {args[2]} : {mlir_type(ct)}", name)


ELEMENTWISE = {
    "add": _arith("addf", "addi"),
    "sub": _arith("subf", "subi"),
    "mul": _arith("mulf", "muli"),
    "div": _true_div,
    "floordiv": _floordiv,
    "mod": _mod,
    "and": _int_only("andi"),
    "or": _int_only("ori"),
    "xor": _int_only("xori"),
    "shl": _int_only("shli"),
    "shr": _int_only("shrsi", "shrui"),
    "maximum": _arith("maxnumf", "maxsi", "maxui"),
    "minimum": _arith("minnumf", "minsi", "minui"),
    "cmp_lt": _cmp("olt", "slt", "ult"),
    "cmp_le": _cmp("ole", "sle", "ule"),
    "cmp_gt": _cmp("ogt", "sgt", "ugt"),
    "cmp_ge": _cmp("oge", "sge", "uge"),
    "cmp_eq": _cmp("oeq", "eq", "eq"),
    "cmp_ne": _cmp("une", "ne", "ne"),
    "neg": _neg,
    "invert": _invert,
    "exp": _math("exp"),
    "exp2": _math("exp2"),
    "log": _math("log"),
    "log2": _math("log2"),
    "sqrt": _math("sqrt"),
    "rsqrt": _math("rsqrt"),
    "sin": _math("sin"),
    "cos": _math("cos"),
    "floor": _math("floor"),
    "ceil": _math("ceil"),
    "abs": _abs,
    "where": _where,
}


def combine(e, kind: str, a: str, b: str, ty: ScalarType, name: str | None = None) -> str:
    """One step of a reduction (sum/max/min) with the semantics of add/maximum/minimum."""
    return ELEMENTWISE[REDUCE_COMBINE[kind]](e, [a, b], ty, name)

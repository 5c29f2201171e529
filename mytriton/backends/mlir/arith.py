"""Scalar semantics in MLIR: types, constants and conversions. The elementwise ops' spellings live
with the ops, in the registry (``OpDef.mlir_fn`` in ir/ops.py), as their CUDA spellings do; this
module gives them what they build on (constants, conversions between the compute types) and the
reductions' combining step."""
from __future__ import annotations


from ...ir.ops import OPS, REDUCE_COMBINE, constant_value, exact_decimal, float_bits
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


def combine(e, kind: str, a: str, b: str, ty: ScalarType, name: str | None = None) -> str:
    """One step of a reduction (sum/max/min) with the semantics of add/maximum/minimum."""
    return OPS[REDUCE_COMBINE[kind]].mlir_fn(e, [a, b], ty, name)

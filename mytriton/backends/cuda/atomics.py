"""The PTX of one atomic element: an inline-asm ``atom`` statement for the CUDA backend.

``atom{.sem}{.scope}.global.op.type`` (PTX ISA; ``.sem`` and ``.scope`` need sm_70) on the global
address of a generic pointer (``cvta.to.global``, which ptxas folds into the access). Inline PTX
rather than ``cuda::atomic_ref``: it needs no headers, so it adds nothing to NVRTC's compile time,
and it spells every ``sem``/``scope`` combination directly. Types as the hardware has them: integer
add on 64 bits is ``.u64`` (two's complement: the same bits for i64), the bitwise ops, exchange and
compare-and-swap are untyped ``.bN``, fp16 add is ``add.noftz.f16`` (sm_70), bf16 add a ``cas.b16``
loop (``add.noftz.bf16`` needs sm_90; one rounding of the sum either way). Float max/min follow
Triton: a value with the sign bit clear takes a signed-integer max (min) of the bit patterns, one
with it set an unsigned-integer min (max), which orders floats as ``ops.float_order_key`` says.
"""
from __future__ import annotations

from ...ir.types import ScalarType

_CONSTRAINT = {16: "h", 32: "r", 64: "l"}           # integer registers by width
_FLOAT_CONSTRAINT = {"fp32": "f", "fp64": "d"}
_FLOAT_BITS = {"fp32": ("int", "__float_as_int", "__int_as_float"),
               "fp64": ("long long", "__double_as_longlong", "__longlong_as_double")}


def _ptx_type(kind: str, t: ScalarType) -> str:
    if kind in ("and", "or", "xor", "xchg", "cas"):
        return f"b{t.bits}"
    if kind == "add":
        if t.name == "fp16":
            return "noftz.f16"
        if t.is_float:
            return f"f{t.bits}"
        return "u64" if t.bits == 64 else ("s32" if t.is_signed else "u32")
    return f"{'s' if t.is_signed else 'u'}{t.bits}"          # max / min on integers


def _asm(kind: str, ptx_type: str, sem: str, scope: str, out: str, constraint: str, ptr: str,
         values: list[str]) -> str:
    op = {"xchg": "exch"}.get(kind, kind)
    args = ", ".join(f"%{i + 2}" for i in range(len(values)))
    text = (f"{{ .reg .u64 g; cvta.to.global.u64 g, %1; "
            f"atom.global.{scope}.{sem}.{op}.{ptx_type} %0, [g], {args}; }}")   # LLVM's (and Triton's) order
    inputs = ", ".join([f'"l"({ptr})'] + [f'"{constraint}"({v})' for v in values])
    return f'asm volatile("{text}" : "={constraint}"({out}) : {inputs} : "memory");'


def atomic_statement(kind: str, t: ScalarType, sem: str, scope: str, ptr: str, values: list[str],
                     out: str) -> str:
    """C statements: the atomic ``kind`` (an ``atomic_rmw`` kind or ``cas``) of pointee type ``t``
    at ``ptr`` with the C expressions ``values`` (for cas: compare, new value), the old value
    assigned to the variable ``out`` (of ``t``'s C type)."""
    if t.is_float and kind in ("max", "min"):
        itype, to_bits, from_bits = _FLOAT_BITS[t.name]
        c = _CONSTRAINT[t.bits]
        pos, neg = ("max", "min") if kind == "max" else ("min", "max")
        return (f"{{ {itype} mt_b = {to_bits}({values[0]}), mt_o; "
                f"if (mt_b >= 0) {_asm(pos, f's{t.bits}', sem, scope, 'mt_o', c, ptr, ['mt_b'])} "
                f"else {_asm(neg, f'u{t.bits}', sem, scope, 'mt_o', c, ptr, ['mt_b'])} "
                f"{out} = {from_bits}(mt_o); }}")
    if t.name == "bf16" and kind == "add":
        # no bf16 atom.add before sm_90: a compare-and-swap loop on the 16 bits, the sum rounded
        # once (as atom.add.noftz.bf16 rounds)
        cas = _asm("cas", "b16", sem, scope, "mt_o", "h", ptr, ["mt_e", "mt_n"])
        return (f"{{ unsigned short mt_e, mt_n, mt_o = __bfloat16_as_ushort(*{ptr}); do {{ mt_e = mt_o; "
                f"mt_n = __bfloat16_as_ushort(__float2bfloat16_rn(__bfloat162float(__ushort_as_bfloat16(mt_e)) + "
                f"__bfloat162float({values[0]}))); {cas} }} while (mt_o != mt_e); "
                f"{out} = __ushort_as_bfloat16(mt_o); }}")
    if t.bits == 16:                       # fp16 add and 16-bit cas travel in 16-bit registers
        if t.is_half:
            to_bits, from_bits = {"fp16": ("__half_as_ushort", "__ushort_as_half"),
                                  "bf16": ("__bfloat16_as_ushort", "__ushort_as_bfloat16")}[t.name]
            vals = [f"{to_bits}({v})" for v in values]
            return (f"{{ unsigned short mt_o; {_asm(kind, _ptx_type(kind, t), sem, scope, 'mt_o', 'h', ptr, vals)} "
                    f"{out} = {from_bits}(mt_o); }}")
        vals = [f"(unsigned short)({v})" for v in values]
        return (f"{{ unsigned short mt_o; {_asm(kind, _ptx_type(kind, t), sem, scope, 'mt_o', 'h', ptr, vals)} "
                f"{out} = ({t.c_name})mt_o; }}")
    constraint = _FLOAT_CONSTRAINT.get(t.name) or _CONSTRAINT[t.bits]
    return _asm(kind, _ptx_type(kind, t), sem, scope, out, constraint, ptr, values)

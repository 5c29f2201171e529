"""IR types: scalars, pointers and blocks (tiles), plus Triton's promotion rules.

Types are small frozen dataclasses so they can be compared, hashed and used as cache keys.
Printing follows the seed posts: ``f32``, ``ptr<f32>``, ``vector<256 x f32>``, ``block<4x8 x f32>``.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScalarType:
    name: str          # the manifest/Triton spelling: i1 i8 … fp32 fp64
    kind: str          # "bool" | "int" | "uint" | "float"
    bits: int
    c_name: str        # the CUDA C++ spelling

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:        # bool counts as an integer type, as in Triton
        return self.kind in ("int", "uint", "bool")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_signed(self) -> bool:
        return self.kind == "int"

    @property
    def ir_name(self) -> str:
        if self.kind == "bool":
            return "bool"
        if self.kind == "float":
            return {"fp16": "f16", "bf16": "bf16", "fp32": "f32", "fp64": "f64"}[self.name]
        return self.name

    @property
    def scalar(self) -> "ScalarType":
        return self

    def __str__(self) -> str:
        return self.ir_name


I1 = ScalarType("i1", "bool", 1, "bool")
I8 = ScalarType("i8", "int", 8, "signed char")
I16 = ScalarType("i16", "int", 16, "short")
I32 = ScalarType("i32", "int", 32, "int")
I64 = ScalarType("i64", "int", 64, "long long")
U8 = ScalarType("u8", "uint", 8, "unsigned char")
U16 = ScalarType("u16", "uint", 16, "unsigned short")
U32 = ScalarType("u32", "uint", 32, "unsigned int")
U64 = ScalarType("u64", "uint", 64, "unsigned long long")
F16 = ScalarType("fp16", "float", 16, "__half")
BF16 = ScalarType("bf16", "float", 16, "__nv_bfloat16")
F32 = ScalarType("fp32", "float", 32, "float")
F64 = ScalarType("fp64", "float", 64, "double")
BOOL = I1

SCALARS = {t.name: t for t in (I1, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, F64)}


@dataclass(frozen=True)
class PointerType:
    pointee: ScalarType

    @property
    def scalar(self) -> "PointerType":
        return self

    @property
    def is_float(self) -> bool:
        return False

    @property
    def is_int(self) -> bool:
        return False

    @property
    def is_bool(self) -> bool:
        return False

    def __str__(self) -> str:
        return f"ptr<{self.pointee}>"


Element = ScalarType | PointerType


@dataclass(frozen=True)
class BlockType:
    shape: tuple[int, ...]
    element: Element

    @property
    def scalar(self) -> Element:
        return self.element

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __str__(self) -> str:
        if len(self.shape) == 1:
            return f"vector<{self.shape[0]} x {self.element}>"
        return f"block<{'x'.join(map(str, self.shape))} x {self.element}>"


Type = ScalarType | PointerType | BlockType


def shape_of(ty: Type) -> tuple[int, ...]:
    return ty.shape if isinstance(ty, BlockType) else ()


def with_element(ty: Type, element: Element) -> Type:
    """``ty`` with its element type replaced (a scalar stays a scalar)."""
    return BlockType(ty.shape, element) if isinstance(ty, BlockType) else element


def make_type(shape: tuple[int, ...], element: Element) -> Type:
    return BlockType(tuple(shape), element) if shape else element


def broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """NumPy broadcasting of two shapes; None when they are incompatible."""
    if not a:
        return b
    if not b:
        return a
    if len(a) != len(b):
        return None                   # Triton requires equal ranks (use x[:, None] to add a dim)
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(out)


def parse_type(text: str) -> tuple[Type, int]:
    """A Triton AOT type string (``*fp32:16``, ``i32``, ``i32:16``) → (type, ``N`` of its ``:N``
    suffix or 0): for a pointer the promised alignment in bytes, for an integer a divisor of its
    value. The grammar is the runtime's, which checks the same promises at launch."""
    from ..runtime.driver import parse_type as parse_type_string
    t = parse_type_string(text)
    scalar = SCALARS[t.dtype]
    return (PointerType(scalar) if t.is_pointer else scalar), (t.align if t.align > 1 else 0)


# --- promotion (Triton's rules, restricted to what we support) -----------------------------------

_FLOAT_RANK = {"fp16": 1, "bf16": 1, "fp32": 2, "fp64": 3}


def promote(a: ScalarType, b: ScalarType) -> ScalarType:
    """The computation type of a binary arithmetic op on element types ``a`` and ``b``."""
    if a == b:
        return a
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            if {a.name, b.name} == {"fp16", "bf16"}:
                return F32
            return a if _FLOAT_RANK[a.name] >= _FLOAT_RANK[b.name] else b
        return a if a.is_float else b
    # both integer (bool counts as the narrowest integer)
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return a if a.kind == "uint" else b   # same width, mixed signedness → unsigned

"""IR types: scalars, pointers and blocks (tiles), plus Triton's promotion rules.

Types are small frozen dataclasses so they can be compared, hashed and used as cache keys.
Printing follows the seed posts: ``f32``, ``ptr<f32>``, ``vector<256 x f32>``, ``block<4x8 x f32>``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..runtime.driver import DTYPES, DType


# float types: (explicit mantissa bits, exponent bias)
_FLOAT_FORMATS = {"fp16": (10, 15), "bf16": (7, 127), "fp32": (23, 127), "fp64": (52, 1023), "fp8e4nv": (3, 7),
                  "fp8e5": (2, 15)}


@dataclass(frozen=True)
class ScalarType:
    """An element type of the IR, which is also the language's ``tl.dtype``: the compiler's view of
    one record of the dtype table (``runtime.driver.DTYPES``), which holds all its facts."""
    name: str          # the manifest/Triton AOT spelling: i1 i8 … fp32 fp64 (the table's key)
    kind: str          # "bool" | "int" | "uint" | "float"
    bits: int
    c_name: str        # the CUDA C++ spelling

    @classmethod
    def of(cls, d: DType) -> "ScalarType":
        return cls(d.name, d.kind, d.bits, d.c)

    def __repr__(self) -> str:
        """As the language spells it (``mytriton.language.float16``), where Triton prints
        ``triton.language.float16``."""
        return f"mytriton.language.{self.info.triton}"

    @property
    def info(self) -> DType:
        """This type's record in the dtype table (numpy, MLIR, Triton spellings, …)."""
        return DTYPES[self.name]

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_half(self) -> bool:
        """fp16 or bf16: stored in 16 bits, computed in fp32 and rounded back (see ``ops``)."""
        return self.kind == "float" and self.bits == 16

    @property
    def is_fp8(self) -> bool:
        """fp8e4nv or fp8e5: data for loads, stores, conversions and ``tl.dot``, no arithmetic."""
        return self.kind == "float" and self.bits == 8

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
        return self.info.ir

    # Triton's dtype attributes of the same meaning (its is_* are methods: ours are properties)
    @property
    def primitive_bitwidth(self) -> int:
        return self.bits

    def _float_format(self, what: str) -> tuple[int, int]:
        if self.name not in _FLOAT_FORMATS:
            raise AttributeError(f"{self} is not a floating-point type: it has no {what}")
        return _FLOAT_FORMATS[self.name]

    @property
    def fp_mantissa_width(self) -> int:
        """The explicit mantissa bits of a float type (Triton's ``dtype.fp_mantissa_width``)."""
        return self._float_format("fp_mantissa_width")[0]

    @property
    def exponent_bias(self) -> int:
        """The exponent bias of a float type (Triton's ``dtype.exponent_bias``)."""
        return self._float_format("exponent_bias")[1]

    @property
    def scalar(self) -> "ScalarType":
        return self

    def __str__(self) -> str:
        return self.ir_name


SCALARS = {name: ScalarType.of(d) for name, d in DTYPES.items()}
I1, I8, I16, I32, I64 = (SCALARS[n] for n in ("i1", "i8", "i16", "i32", "i64"))
U8, U16, U32, U64 = (SCALARS[n] for n in ("u8", "u16", "u32", "u64"))
F16, BF16, F32, F64 = (SCALARS[n] for n in ("fp16", "bf16", "fp32", "fp64"))
FP8E4NV, FP8E5 = SCALARS["fp8e4nv"], SCALARS["fp8e5"]
BOOL = I1


@dataclass(frozen=True)
class PointerType:
    pointee: ScalarType

    @property
    def scalar(self) -> "PointerType":
        return self

    @property
    def element_ty(self) -> ScalarType:
        """Triton's spelling of the pointee (``ptr.dtype.element_ty``)."""
        return self.pointee

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


@dataclass(frozen=True)
class TensorMapType:
    """A TMA tensor map (CUDA's 128-byte ``CUtensorMap``), made on the host from a tensor descriptor
    argument and passed to the kernel as a parameter (frontend/descriptors.py). Only the tensor-map
    loads and stores (``tma_load``, ``tma_store``) take it; it is never computed with."""

    @property
    def scalar(self) -> "TensorMapType":
        return self

    is_float = is_int = is_bool = is_signed = is_half = is_fp8 = False

    def __str__(self) -> str:
        return "tmap"


TMAP = TensorMapType()

Type = ScalarType | PointerType | BlockType | TensorMapType


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

def promote(a: ScalarType, b: ScalarType) -> ScalarType:
    """The computation type of a binary arithmetic op on element types ``a`` and ``b`` (Triton's
    ``computation_type_impl`` for two tensors; ``/`` and ``%`` then compute halves in fp32, see
    ``ops``): fp64 over fp32 over fp16 over everything else; bf16 stays bf16 only with itself
    (bf16 with an integer is fp32, with fp16 it is fp16)."""
    if a == b:
        return a
    if a.is_fp8 and b.is_fp8:        # two different fp8 types meet in fp16 (Triton's rule)
        return F16
    if a.is_float or b.is_float:
        for t in (F64, F32, F16):
            if t in (a, b):
                return t
        return F32
    # both integer (bool counts as the narrowest integer)
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return a if a.kind == "uint" else b   # same width, mixed signedness → unsigned

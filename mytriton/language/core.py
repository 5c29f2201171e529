"""The kernel language's values: dtypes, ``constexpr``, and ``tensor`` (a traced value).

A ``tensor`` wraps an expression-tree node; its Python operators build new nodes through the
builder of the kernel being compiled. Python numbers stay Python numbers (constexpr arithmetic
happens in Python, as in Triton) until they meet a tensor, where they become *weakly typed*
constants: an int meeting an int tensor takes the tensor's type, a float meeting an fp tensor the
tensor's type, a float meeting an int tensor becomes fp32.
"""
from __future__ import annotations

import builtins
import contextvars
import functools

from ..errors import CompilationError
from ..ir.ops import OPS, check_same_signedness
from ..ir.types import (BF16, BlockType, F16, F32, F64, FP8E4NV, FP8E5, I1, I8, I16, I32, I64, PointerType,
                        ScalarType, U8, U16, U32, U64, promote, shape_of)

# dtypes: the IR's scalar types are the language's dtype objects
int1, int8, int16, int32, int64 = I1, I8, I16, I32, I64
uint8, uint16, uint32, uint64 = U8, U16, U32, U64
float16, bfloat16, float32, float64 = F16, BF16, F32, F64
float8e4nv, float8e5 = FP8E4NV, FP8E5
dtype = ScalarType


class constexpr:
    """Annotation for compile-time parameters (``BLOCK: tl.constexpr``); calling it returns the value."""

    def __new__(cls, value=None):
        return value


class constexpr_type:
    """The type of a compile-time value, as Triton's ``x.type`` gives it for a name annotated
    ``tl.constexpr`` (a constexpr parameter, or ``x: tl.constexpr = ...``): two are equal when their
    values are (``tl.static_assert(x.type == constexpr_type(10))``)."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, constexpr_type) and type(self.value) is type(other.value) and self.value == other.value

    def __hash__(self):
        return hash((type(self.value), self.value))

    def __repr__(self):
        return f"constexpr_type[{self.value!r}]"


_current_builder: contextvars.ContextVar = contextvars.ContextVar("mytriton_builder", default=None)


def current_builder():
    b = _current_builder.get()
    if b is None:
        raise RuntimeError("mytriton.language functions can only be called inside a @mytriton.jit kernel")
    return b


def builtin(fn):
    """Mark a language function: callable only while a kernel is being compiled."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        current_builder()
        return fn(*args, **kwargs)
    wrapper.__mytriton_builtin__ = True
    return wrapper


def is_builtin(fn) -> bool:
    return getattr(fn, "__mytriton_builtin__", False)


class Shape(tuple):
    """A tensor's shape: a tuple that also equals the list of its dimensions (Triton's ``x.shape``
    is a list: ``tl.static_assert(x.shape == [128])`` holds)."""
    __slots__ = ()

    def __eq__(self, other):
        return tuple(self) == (tuple(other) if isinstance(other, list) else other)

    def __ne__(self, other):
        return not self == other

    __hash__ = tuple.__hash__


class Composite:
    """A value of the language made of run-time parts and compile-time ones (a block pointer, a
    tensor descriptor): loops carry it, run-time ``if``s merge it and ``@jit`` functions pass it,
    part by part. ``parts`` are tensors (or numbers, or composites); ``static`` is what must agree
    between the values merged (block shape, order, ...); ``with_parts`` rebuilds one from new parts."""

    parts: tuple
    static: tuple

    def with_parts(self, parts: tuple) -> "Composite":
        raise NotImplementedError


class tensor:
    """A value computed by the kernel at run time (a scalar or a block)."""
    __slots__ = ("node",)
    __hash__ = object.__hash__

    def __init__(self, node):
        self.node = node

    @property
    def type(self):
        return self.node.type

    @property
    def dtype(self):
        return self.node.type.scalar

    @property
    def shape(self) -> "Shape":
        return Shape(shape_of(self.node.type))

    @property
    def numel(self) -> int:
        return self.node.type.numel if isinstance(self.node.type, BlockType) else 1

    def __repr__(self) -> str:
        return f"tensor({self.node.type})"

    def __bool__(self):
        raise TypeError("a run-time value cannot be used as a Python bool (in `if`, `and`, `or`, `not`, "
                        "`while`); use tl.where, or make the value a tl.constexpr")

    def __index__(self):
        raise TypeError("a run-time value cannot be used where Python needs an integer (a shape, a static "
                        "range bound); make it a tl.constexpr")

    # arithmetic
    def __add__(self, o): return binary("add", self, o)
    def __radd__(self, o): return binary("add", o, self)
    def __sub__(self, o): return binary("sub", self, o)
    def __rsub__(self, o): return binary("sub", o, self)
    def __mul__(self, o): return binary("mul", self, o)
    def __rmul__(self, o): return binary("mul", o, self)
    def __truediv__(self, o): return binary("div", self, o)
    def __rtruediv__(self, o): return binary("div", o, self)
    def __floordiv__(self, o): return binary("floordiv", self, o)
    def __rfloordiv__(self, o): return binary("floordiv", o, self)
    def __mod__(self, o): return binary("mod", self, o)
    def __rmod__(self, o): return binary("mod", o, self)
    def __and__(self, o): return binary("and", self, o)
    def __rand__(self, o): return binary("and", o, self)
    def __or__(self, o): return binary("or", self, o)
    def __ror__(self, o): return binary("or", o, self)
    def __xor__(self, o): return binary("xor", self, o)
    def __rxor__(self, o): return binary("xor", o, self)
    def __lshift__(self, o): return binary("shl", self, o)
    def __rlshift__(self, o): return binary("shl", o, self)
    def __rshift__(self, o): return binary("shr", self, o)
    def __rrshift__(self, o): return binary("shr", o, self)
    def __lt__(self, o): return binary("cmp_lt", self, o)
    def __le__(self, o): return binary("cmp_le", self, o)
    def __gt__(self, o): return binary("cmp_gt", self, o)
    def __ge__(self, o): return binary("cmp_ge", self, o)
    def __eq__(self, o): return binary("cmp_eq", self, o)
    def __ne__(self, o): return binary("cmp_ne", self, o)
    def __neg__(self): return make("neg", self)
    def __pos__(self): return self
    def __invert__(self): return make("invert", self)

    def to(self, dtype, fp_downcast_rounding: str | None = None, bitcast: bool = False):
        """Triton's ``x.to``: a numeric conversion (a float narrowed rounds to nearest even, or toward
        zero with ``fp_downcast_rounding="rtz"``), or with ``bitcast=True`` the same bits read as
        ``dtype`` (of the same width)."""
        if not isinstance(dtype, (ScalarType, PointerType)):
            raise TypeError(f"to() expects a dtype such as tl.float32 or tl.pointer_type(tl.float16), got {dtype!r}")
        if dtype == self.dtype:
            return self
        if bitcast and not (isinstance(dtype, PointerType) or isinstance(self.dtype, PointerType)):
            return make("bitcast", self, dtype=dtype)     # (a pointer's bits are its address: a cast)
        if fp_downcast_rounding is None:
            return make("cast", self, dtype=dtype)
        return make("cast", self, dtype=dtype, rounding=fp_downcast_rounding)

    cast = to

    @property
    def T(self):
        """The transpose of a 2-D tensor (``tl.trans``)."""
        from . import trans
        return trans(self)

    def trans(self, *dims):
        from . import trans
        return trans(self, *dims)

    def permute(self, *dims):
        from . import permute
        return permute(self, *dims)

    def item(self):
        """The one element of a one-element tensor, as a scalar (Triton's ``tensor.item()``)."""
        if not isinstance(self.node.type, BlockType):
            return self
        if self.numel != 1:
            raise TypeError(f"item() needs a tensor of one element, got shape {list(self.shape)}")
        return make("max", self, axis=None)        # the max of one element is that element, any dtype

    def __getitem__(self, index):
        """Triton's indexing: None at position i of the index inserts a dimension of size 1 there;
        ':' keeps a dimension. As in Triton, the index need not name every dimension (``x[None]``
        on a vector is (1, N)), and a ':' past the last dimension changes nothing (a scalar pointer
        ``p[None, None, :]`` is a (1, 1) tile)."""
        if not isinstance(index, tuple):
            index = (index,)
        out = self
        for axis, item in enumerate(index):
            if item is None:           # (a scalar, pointer or number: a vector of one)
                out = make("expand_dims", out, axis=axis) if isinstance(out.node.type, BlockType) else \
                    make("broadcast", out, shape=(1,))
            elif not (isinstance(item, slice) and item == slice(None)):
                raise TypeError(f"unsupported tensor index {item!r}: only ':' and None are allowed (x[:, None])")
        return out

    def __iter__(self):
        raise TypeError("a tensor cannot be iterated")


# --- building nodes ------------------------------------------------------------------------------

def scalar_type(v) -> ScalarType:
    """The type of a Python number in a kernel (Triton's ``to_tensor_type``)."""
    if isinstance(v, bool):
        return I1
    if isinstance(v, int):
        for t, lo, hi in ((I32, -2**31, 2**31), (U32, 2**31, 2**32), (I64, -2**63, 2**63), (U64, 2**63, 2**64)):
            if lo <= v < hi:
                return t
        raise ValueError(f"integer constant {v} is out of range for 64 bits")
    if isinstance(v, float):
        a = abs(v)
        return F32 if (a in (0.0, float("inf")) or v != v or 2**-126 <= a <= (2 - 2**-23) * 2**127) else F64
    raise TypeError(f"cannot use {type(v).__name__} value {v!r} in a kernel expression")


def to_tensor(v, dtype: ScalarType | None = None) -> tensor:
    """A Python number → a constant tensor (of ``dtype`` if given); tensors pass through."""
    if isinstance(v, tensor):
        return v
    return tensor(current_builder().const(v, dtype or scalar_type(v)))


def make(op: str, *operands, **attrs) -> tensor:
    xs = [to_tensor(o) for o in operands]
    d = OPS[op]
    if d.elementwise and d.pure:     # Triton broadcasts a lower-rank block by leading axes first
        rank = builtins.max((len(x.shape) for x in xs if is_block(x)), default=0)
        for i, x in enumerate(xs):
            while is_block(x) and len(x.shape) < rank:
                x = tensor(current_builder().make("expand_dims", [x.node], {"axis": 0}))
            xs[i] = x
    return tensor(current_builder().make(op, [x.node for x in xs], attrs))


_KIND = {"bool": 0, "uint": 1, "int": 1, "float": 2}      # Triton's dtype.KIND: BOOLEAN < INTEGRAL < FLOATING


def computation_operands(a, b, div_or_mod: bool = False, symbol: str | None = None) -> tuple[tensor, tensor]:
    """Triton's implicit typing of a binary op's operands (``binary_op_type_checking_impl``): a
    Python number of a lower or equal kind than the tensor it meets (bool < integer < float: an int
    meeting an unsigned tensor is of the same kind) takes the tensor's type, checked to fit;
    otherwise the usual promotion applies."""
    a_num, b_num = not isinstance(a, tensor), not isinstance(b, tensor)
    ta = scalar_type(a) if a_num else a.dtype
    tb = scalar_type(b) if b_num else b.dtype
    if isinstance(ta, PointerType) or isinstance(tb, PointerType) or a_num == b_num:
        return to_tensor(a), to_tensor(b)
    num, num_ty, ten_ty = (a, ta, tb) if a_num else (b, tb, ta)
    if _KIND[num_ty.kind] <= _KIND[ten_ty.kind]:
        ct = F32 if div_or_mod and ten_ty.is_half else ten_ty
    else:
        ct = promote(num_ty, ten_ty)
        if div_or_mod and ct.is_int:
            check_same_signedness(ta, tb, symbol or "/")
    if ct.is_int and not ct.is_bool and not isinstance(num, bool):
        lo, hi = (0, 2**ct.bits - 1) if not ct.is_signed else (-2**(ct.bits - 1), 2**(ct.bits - 1) - 1)
        if num < 0 and not ct.is_signed:
            raise ValueError(f"cannot combine the negative number {num} with an unsigned {ct} value; "
                             "cast one of them explicitly")
        if isinstance(num, int) and not lo <= num <= hi:
            raise ValueError(f"the number {num} is out of range for {ct}")
    const = to_tensor(num, ct)
    return (const, b) if a_num else (a, const)


def binary(op: str, a, b) -> tensor:
    symbol = {"div": "/", "floordiv": "//", "mod": "%"}.get(op)
    a, b = computation_operands(a, b, div_or_mod=symbol is not None, symbol=symbol)
    if op in ("add", "sub") and isinstance(a.dtype, PointerType):
        if op == "sub":
            b = make("neg", b)
        return make("addptr", a, b)
    if op == "add" and isinstance(b.dtype, PointerType):
        return make("addptr", b, a)
    return make(op, a, b)


def is_block(x) -> bool:
    return isinstance(x, tensor) and isinstance(x.type, BlockType)


class StaticAssertionError(AssertionError):
    """A ``tl.static_assert`` that failed (the frontend reports it as a CompileTimeAssertionFailure)."""


class CompileTimeAssertionFailure(CompilationError):
    """A kernel's ``tl.static_assert`` failed while it compiled (Triton's name for that error)."""


from .aggregate import _aggregate  # noqa: E402,F401 (tl.core._aggregate, Triton's spelling)

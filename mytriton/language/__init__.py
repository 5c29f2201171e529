"""``import mytriton.language as tl`` — the kernel language, spelled as Triton spells it."""
from __future__ import annotations

import builtins
import math as _math

from ..ir.ops import (ATOMIC_SCOPES, ATOMIC_SEMS, DOT_PRECISIONS, EVICTION_POLICIES, LOAD_CACHE_MODIFIERS,
                      STORE_CACHE_MODIFIERS, OpTypeError, check_atomic, check_block_shape)
from ..ir.types import BF16, F16, F32, F64, FP8E4NV, FP8E5, I8, I32, BlockType, PointerType, ScalarType
from ..frontend.builder import MAX_TENSOR_NUMEL as _MAX_TENSOR_NUMEL
from .core import (bfloat16, builtin, computation_operands, constexpr, current_builder, dtype, float8e4nv,
                   float8e5, float16, float32, float64,
                   int1, int8, int16, int32, int64, is_block, make, tensor, to_tensor, uint8, uint16,
                   uint32, uint64)
from .core import binary as _binary

__all__ = [
    "constexpr", "tensor", "dtype", "int1", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "float8e4nv", "float8e5", "float16", "bfloat16", "float32", "float64", "program_id",
    "num_programs",
    "arange", "load", "store", "zeros", "full", "empty", "zeros_like", "full_like", "where", "exp",
    "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "abs", "floor", "ceil", "sigmoid",
    "maximum", "minimum", "sum", "max", "min", "cdiv", "static_range", "range", "broadcast_to",
    "expand_dims", "multiple_of", "max_contiguous", "static_assert", "static_print", "PropagateNan",
    "atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor", "atomic_xchg",
    "atomic_cas", "debug_barrier", "cast", "trans", "permute", "dot", "xor_sum", "reduce_or", "clamp", "swizzle2d",
    "softmax", "device_print", "max_constancy", "assume", "pointer_type", "pi32_t", "TRITON_MAX_TENSOR_NUMEL",
    "add", "sub", "mul",
]


class static_range:
    """``for i in tl.static_range(a, b, step)``: unrolled at compile time; bounds must be constexprs."""

    def __init__(self, arg1, arg2=None, step=1):
        self.start, self.stop = (0, arg1) if arg2 is None else (arg1, arg2)
        self.step = step


class range:  # noqa: A001 — Triton's spelling
    """``for i in tl.range(a, b, step, num_stages=..., ...)``: a loop like Python's ``range``, run
    time when a bound or the step is, or when a compiler hint is given (Triton 3.6's hints are
    accepted and kept as attributes of the loop; ``loop_unroll_factor`` becomes ``#pragma unroll``
    in CUDA, ``disable_licm`` keeps invariant code in the loop)."""

    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,
                 disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False, disable_licm=False):
        self.start, self.stop = (0, arg1) if arg2 is None else (arg1, arg2)
        self.step = 1 if step is None else step
        # Triton's compiler hints, kept as attributes of the loop (the ones given)
        given = {"num_stages": num_stages, "loop_unroll_factor": loop_unroll_factor,
                 "disallow_acc_multi_buffer": disallow_acc_multi_buffer, "flatten": flatten,
                 "warp_specialize": warp_specialize, "disable_licm": disable_licm}
        self.hints = {}
        for name, value in given.items():
            if value is None or value is False:
                continue
            kind = int if name in ("num_stages", "loop_unroll_factor") else bool
            if type(value) is not kind or (kind is int and not 0 <= value < 2**31):
                raise TypeError(f"tl.range: {name} must be a compile-time {kind.__name__}"
                                + (" in [0, 2**31)" if kind is int else "") + f", got {value!r}")
            self.hints[name] = value


class PropagateNan:
    NONE = 0
    ALL = 0xFFFF


def _axis(axis) -> int:
    if type(axis) is not int:
        raise TypeError(f"axis must be a constant int, got {axis!r}")
    if axis not in (0, 1, 2):
        raise ValueError(f"program_id axis must be 0, 1, or 2 but got {axis}")
    return axis


@builtin
def program_id(axis):
    return make("program_id", axis=_axis(axis))


@builtin
def num_programs(axis):
    return make("num_programs", axis=_axis(axis))


@builtin
def arange(start, end):
    if type(start) is not int or type(end) is not int:
        raise TypeError("arange bounds must be constexpr integers")
    if not (-2**31 <= start < 2**31 and -2**31 <= end <= 2**31):
        raise ValueError(f"arange bounds must fit in int32, got ({start}, {end})")
    return make("arange", start=start, end=end)


def _shape(shape) -> tuple[int, ...]:
    if type(shape) is int:
        shape = (shape,)
    elif isinstance(shape, list):
        shape = builtins.tuple(shape)
    return check_block_shape(shape)


def _block_dtype(dtype) -> ScalarType:
    if not isinstance(dtype, ScalarType):
        raise TypeError(f"block dtype must be a tl dtype such as tl.float32, got {dtype!r}")
    return dtype


@builtin
def zeros(shape, dtype):
    if isinstance(shape, (builtins.tuple, list)) and len(shape) == 0:
        return full((), 0, dtype)                   # a scalar, as Triton's tl.zeros([])
    return make("zeros", shape=_shape(shape), dtype=_block_dtype(dtype))


@builtin
def empty(shape, dtype):
    return make("empty", shape=_shape(shape), dtype=_block_dtype(dtype))


@builtin
def full(shape, value, dtype):
    """A block of ``shape`` filled with ``value``; an empty shape gives a scalar, as in Triton."""
    if isinstance(shape, (builtins.tuple, list)) and len(shape) == 0:
        dtype = _block_dtype(dtype)
        if isinstance(value, tensor):
            return value.to(dtype)
        return tensor(current_builder().const(value, dtype))
    shape, dtype = _shape(shape), _block_dtype(dtype)
    if isinstance(value, tensor):
        if isinstance(value.type, BlockType):
            raise OpTypeError(f"full value must be scalar, got {value.type}")
        return make("full", value, shape=shape, dtype=dtype)
    if not isinstance(value, (bool, int, float)) or (isinstance(value, bool) and not dtype.is_bool):
        raise OpTypeError(f"full value {value!r} cannot be converted to {dtype}")
    if dtype.is_bool:
        value = bool(value)                         # (Triton: tl.full(shape, 1, tl.int1) is all true)
    return make("full", tensor(current_builder().const(value, dtype)), shape=shape, dtype=dtype)


@builtin
def zeros_like(input, dtype=None):
    return zeros(input.shape, dtype or input.dtype)


@builtin
def full_like(input, value, dtype=None):
    return full(input.shape, value, dtype or input.dtype)


def _pointer_operand(pointer, what):
    if not isinstance(pointer, tensor) or not isinstance(pointer.dtype, PointerType):
        raise TypeError(f"{what} expects a pointer (a pointer parameter plus offsets), got {pointer!r}")
    return pointer


def _mask_operand(mask):
    if isinstance(mask, bool):
        return to_tensor(mask)
    if isinstance(mask, tensor) and not mask.dtype.is_bool:
        raise TypeError(f"mask must be int1 (a comparison such as offs < n), got {mask.dtype}")
    return mask


@builtin
def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False):
    hints = _cache_hints("tl.load", cache_modifier, eviction_policy, LOAD_CACHE_MODIFIERS)
    if isinstance(pointer, block_ptr):
        if mask is not None or other is not None:
            raise ValueError("tl.load of a block pointer takes no `mask` or `other`: use boundary_check= and "
                             "padding_option=")
        return pointer.load(boundary_check, padding_option, (cache_modifier, eviction_policy))
    pointer = _pointer_operand(pointer, "tl.load")
    if boundary_check or padding_option:
        raise ValueError("tl.load: boundary_check and padding_option apply to block pointers (tl.make_block_ptr); "
                         "use mask= and other= with a block of pointers")
    elem = pointer.dtype.pointee
    # volatile: read from memory every time it runs (never hoisted, merged or prefetched: a flag
    # another program sets); it takes precedence over the cache hints (ld.volatile has none)
    attrs = {"volatile": True} if volatile else hints
    if mask is None:
        if other is not None:
            raise TypeError("tl.load: 'other' needs a 'mask'")
        return make("load", pointer, **attrs)
    other = to_tensor(0 if other is None else other, elem)
    if other.dtype != elem:
        other = other.to(elem)
    return make("load", pointer, _mask_operand(mask), other, **attrs)


@builtin
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    hints = _cache_hints("tl.store", cache_modifier, eviction_policy, STORE_CACHE_MODIFIERS)
    if isinstance(pointer, block_ptr):
        if mask is not None:
            raise ValueError("tl.store to a block pointer takes no `mask`: use boundary_check=")
        return pointer.store(value, boundary_check, (cache_modifier, eviction_policy))
    pointer = _pointer_operand(pointer, "tl.store")
    triton_types.check_writable(pointer)
    if boundary_check:
        raise ValueError("tl.store: boundary_check applies to block pointers (tl.make_block_ptr); use mask= "
                         "with a block of pointers")
    value = to_tensor(value, pointer.dtype.pointee)
    if isinstance(value.dtype, PointerType) and pointer.dtype.pointee.is_int and pointer.dtype.pointee.bits == 64:
        value = value.to(pointer.dtype.pointee)            # a pointer stored as its address, as in Triton
    if mask is None:
        make("store", pointer, value, **hints)
    else:
        make("store", pointer, value, _mask_operand(mask), **hints)


def _cache_hints(what: str, cache_modifier, eviction_policy, modifiers: tuple) -> dict:
    """Triton's ``cache_modifier=`` (".cg", ...) and ``eviction_policy=`` ("evict_first", ...) as
    the load's or store's attributes (the PTX qualifiers the CUDA backend emits), checked."""
    hints = {}
    if cache_modifier:
        if cache_modifier not in [f".{m}" for m in modifiers]:
            raise ValueError(f"{what}: cache_modifier must be one of "
                             f"{', '.join(repr('.' + m) for m in modifiers)} (or ''), got {cache_modifier!r}")
        hints["cache"] = cache_modifier[1:]
    if eviction_policy:
        if eviction_policy not in EVICTION_POLICIES:
            raise ValueError(f"{what}: eviction_policy must be one of {', '.join(map(repr, EVICTION_POLICIES))} "
                             f"(or ''), got {eviction_policy!r}")
        hints["evict"] = eviction_policy
    if len(hints) == 2:
        raise ValueError(f"{what}: cache_modifier={cache_modifier!r} and eviction_policy={eviction_policy!r} cannot "
                         f"be combined (PTX has no load or store with both; Triton's ptxas fails on it)")
    return hints


def _atomic_options(name: str, sem, scope) -> dict:
    """Triton's ``sem=`` and ``scope=`` (None: "acq_rel" and "gpu"), checked."""
    sem = ATOMIC_SEMS[0] if sem is None else sem
    scope = ATOMIC_SCOPES[0] if scope is None else scope
    if sem not in ATOMIC_SEMS:
        raise ValueError(f"tl.{name}: memory semantic {sem!r} is not supported (use one of "
                         f"{', '.join(map(repr, ATOMIC_SEMS))})")
    if scope not in ATOMIC_SCOPES:
        raise ValueError(f"tl.{name}: memory scope {scope!r} is not supported (use one of "
                         f"{', '.join(map(repr, ATOMIC_SCOPES))})")
    return {"sem": sem, "scope": scope}


def _atomic_value(name: str, value, elem):
    """An atomic's value (or compare) operand, converted to the pointee's type as Triton does."""
    if isinstance(value, tensor) and isinstance(value.dtype, PointerType):
        raise TypeError(f"tl.{name}: the value must be a number, not a pointer ({value.type})")
    value = to_tensor(value, elem)
    return value if value.dtype == elem else value.to(elem)


def _atomic_rmw(kind: str):
    name = "atomic_" + kind

    @builtin
    def fn(pointer, val, mask=None, sem=None, scope=None):
        pointer = _pointer_operand(pointer, f"tl.{name}")
        triton_types.check_writable(pointer)
        elem = pointer.dtype.pointee
        check_atomic(kind, elem)
        options = _atomic_options(name, sem, scope)
        operands = [pointer, _atomic_value(name, val, elem)]
        if mask is not None:
            operands.append(_mask_operand(mask))
        return make("atomic_rmw", *operands, kind=kind, **options)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"tl.{name}(pointer, val, mask=None, sem=None, scope=None): atomically combines val into "
                  f"memory ({kind}) and returns the old values; sem is 'acq_rel' (default), 'acquire', "
                  f"'release' or 'relaxed', scope 'gpu' (default), 'cta' or 'sys'")
    return fn


atomic_add, atomic_max, atomic_min = _atomic_rmw("add"), _atomic_rmw("max"), _atomic_rmw("min")
atomic_and, atomic_or, atomic_xor = _atomic_rmw("and"), _atomic_rmw("or"), _atomic_rmw("xor")
atomic_xchg = _atomic_rmw("xchg")


@builtin
def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    """Atomically: old = *pointer; if old == cmp (bit for bit): *pointer = val. Returns old."""
    pointer = _pointer_operand(pointer, "tl.atomic_cas")
    triton_types.check_writable(pointer)
    elem = pointer.dtype.pointee
    check_atomic("cas", elem)
    options = _atomic_options("atomic_cas", sem, scope)
    return make("atomic_cas", pointer, _atomic_value("atomic_cas", cmp, elem),
                _atomic_value("atomic_cas", val, elem), **options)


@builtin
def debug_barrier():
    """A barrier of all the threads of the program (block); memory accesses do not move across it."""
    make("debug_barrier")


@builtin
def cast(input, dtype, fp_downcast_rounding=None, bitcast=False):
    """``tl.cast(x, dtype, fp_downcast_rounding=None, bitcast=False)``: ``x.to(...)``, for numbers too."""
    return to_tensor(input).to(dtype, fp_downcast_rounding=fp_downcast_rounding, bitcast=bitcast)


class _PointerTypes(type):
    """``isinstance(x.dtype, tl.pointer_type)`` is true of every pointer type, as in Triton."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, PointerType)


class pointer_type(metaclass=_PointerTypes):  # noqa: N801 - Triton's spelling
    """Triton's ``tl.pointer_type(dtype)``: the type of a pointer to ``dtype`` elements, for
    ``x.to(tl.pointer_type(tl.float16))`` (a 64-bit integer or another pointer read as one), and
    the class of pointer types for ``isinstance``. Callable in kernels and on the host."""

    __mytriton_builtin__ = True

    def __new__(cls, element_ty, address_space: int = 1, const: bool = False) -> PointerType:
        if not isinstance(element_ty, ScalarType):
            raise TypeError(f"tl.pointer_type expects a dtype such as tl.float16, got {element_ty!r}")
        if address_space != 1:
            raise TypeError(f"tl.pointer_type: only global memory (address_space=1) is supported, got {address_space}")
        return PointerType(element_ty)


pi32_t = pointer_type(int32)
TRITON_MAX_TENSOR_NUMEL = _MAX_TENSOR_NUMEL        # (the most elements a block may hold)


@builtin
def add(x, y, sanitize_overflow: bool = True):
    """``tl.add(x, y)``: ``x + y``."""
    return to_tensor(x) + y


@builtin
def sub(x, y, sanitize_overflow: bool = True):
    """``tl.sub(x, y)``: ``x - y``."""
    return to_tensor(x) - y


@builtin
def mul(x, y, sanitize_overflow: bool = True):
    """``tl.mul(x, y)``: ``x * y``."""
    return to_tensor(x) * y


@builtin
def where(condition, x, y):
    condition = to_tensor(condition)
    if not condition.dtype.is_bool:
        condition = condition != 0
    x, y = computation_operands(x, y)
    return make("where", condition, x, y)


def _unary(name):
    @builtin
    def fn(x):
        return make(name, x)
    fn.__name__ = name
    fn.__doc__ = f"tl.{name}(x), elementwise"
    return fn


exp, exp2, log, log2 = _unary("exp"), _unary("exp2"), _unary("log"), _unary("log2")
sqrt, rsqrt, sin, cos = _unary("sqrt"), _unary("rsqrt"), _unary("sin"), _unary("cos")
floor, ceil, abs = _unary("floor"), _unary("ceil"), _unary("abs")


@builtin
def sigmoid(x):
    return 1.0 / (1.0 + exp(-x))


def _bf16_to_fp32(v):
    """Triton's tl.maximum/minimum compute bf16 operands in fp32 (and return fp32)."""
    return v.to(float32) if isinstance(v, tensor) and v.dtype == bfloat16 else v


def _nan_rule(propagate_nan) -> str:
    if propagate_nan not in (PropagateNan.NONE, PropagateNan.ALL):
        raise TypeError(f"propagate_nan must be tl.PropagateNan.NONE or ALL, got {propagate_nan!r}")
    return "_nan" if propagate_nan == PropagateNan.ALL else ""


@builtin
def maximum(x, y, propagate_nan=PropagateNan.NONE):
    """The larger of ``x`` and ``y``; a NaN operand gives the other (``PropagateNan.NONE``, the default)
    or NaN (``PropagateNan.ALL``)."""
    return _binary("maximum" + _nan_rule(propagate_nan), _bf16_to_fp32(x), _bf16_to_fp32(y))


@builtin
def minimum(x, y, propagate_nan=PropagateNan.NONE):
    return _binary("minimum" + _nan_rule(propagate_nan), _bf16_to_fp32(x), _bf16_to_fp32(y))


def _reduce(kind):
    @builtin
    def fn(input, axis=None, keep_dims=False, dtype=None, return_indices=False, return_indices_tie_break_left=True,
           **unsupported):
        if unsupported:
            raise TypeError(f"tl.{kind}: unsupported argument(s) {', '.join(unsupported)}")
        if return_indices:
            if kind not in ("max", "min"):
                raise TypeError(f"tl.{kind}: unsupported argument(s) return_indices")
            from .reduction import reduce_with_indices
            return reduce_with_indices(input, axis, kind == "max", return_indices_tie_break_left, keep_dims)
        if not is_block(input):
            raise TypeError(f"tl.{kind} expects a block, got {input!r}")
        if axis is not None and type(axis) is not int:
            raise TypeError(f"axis must be a constant int or None, got {axis!r}")
        rank = len(input.shape)
        if axis is not None and not -rank <= axis < rank:
            raise ValueError(f"axis {axis} is out of range for a rank-{rank} block")
        if dtype is not None:
            if kind != "sum":
                raise TypeError(f"tl.{kind}: unsupported argument(s) dtype")
            input = input.to(dtype)          # Triton's tl.sum(x, dtype=): converts, then sums
        elif kind in ("max", "min") and input.dtype.bits < 32:
            # Triton's tl.max/min reduce narrow types in 32 bits (fp16/bf16 in fp32, integers and
            # bools in int32) and return that type
            input = input.to(float32 if input.dtype.is_float else int32)
        out = make(kind, input, axis=None if axis is None else axis % rank)
        if dtype is not None and out.dtype != input.dtype:
            # a sum in a type narrower than 32 bits wraps in it, as Triton's does (bool: modulo 2)
            out = (out & 1 if input.dtype.bits == 1 else out).to(input.dtype)
        if keep_dims:        # (a scalar result, of a whole tile or of a vector, is a tile of 1s)
            out = make("expand_dims", out, axis=axis % rank) if is_block(out) else full((1,) * rank, out, out.dtype)
        return out
    fn.__name__ = kind
    return fn


sum, max, min = _reduce("sum"), _reduce("max"), _reduce("min")
xor_sum, _reduce_or = _reduce("xor_sum"), _reduce("reduce_or")     # (integers; the input's own type)


@builtin
def reduce_or(input, axis, keep_dims=False):
    """The bitwise or along ``axis`` (None: all), as Triton's (whose ``axis`` has no default)."""
    return _reduce_or(input, axis, keep_dims)


@builtin
def histogram(input, num_bins, mask=None):
    """How many elements of ``input`` (a 1-d block of integers; where ``mask`` holds) equal each of
    0, 1, ..., ``num_bins`` - 1, as an int32 block of ``num_bins`` (other values are not counted)."""
    if mask is None:
        return make("histogram", input, num_bins=num_bins)
    return make("histogram", input, mask, num_bins=num_bins)


@builtin
def clamp(x, min, max, propagate_nan=PropagateNan.NONE):
    """``x`` limited to [min, max] (floats; min > max undefined): ``tl.minimum(tl.maximum(x, min),
    max)``, so a NaN ``x`` gives ``min``, or NaN with ``propagate_nan=tl.PropagateNan.ALL``. (Triton
    on the H200 gives ``min`` too where the bounds are run-time values, but ``max`` where they are
    constants its compiler folds: a NaN's clamp is not something to rely on there.)"""
    x = to_tensor(x)
    if not getattr(x.dtype, "is_float", False):
        raise ValueError(f"Unexpected dtype {x.dtype}. Only floating point values are supported.")
    return minimum(maximum(x, min, propagate_nan), max, propagate_nan)


@builtin
def swizzle2d(i, j, size_i, size_j, size_g):
    """Triton's grouped ordering: the index (i, j) of a size_i x size_j grid renumbered so that
    groups of ``size_g`` rows are walked column by column."""
    ij = i * size_j + j
    size_gj = size_g * size_j
    group_id = ij // size_gj
    off_i = group_id * size_g
    size_g = minimum(size_i - off_i, size_g)
    ij = ij % size_gj
    return off_i + ij % size_g, ij // size_g


@builtin
def softmax(x, dim=None, keep_dims=False, ieee_rounding=False):
    """exp(x - max) / sum along ``dim`` (0 when None), as Triton's ``tl.softmax``."""
    from .math import fdiv
    dim = 0 if dim is None else dim
    z = x - max(x, dim, keep_dims=keep_dims)     # (keep_dims=False: broadcast by leading axes)
    num = exp(z)
    return fdiv(num, sum(num, dim, keep_dims=keep_dims), ieee_rounding)


@builtin
def expand_dims(input, axis):
    """``input`` with size-1 dimensions inserted at ``axis`` (an int or a sequence of them; negative
    ones count from the end of the result's dimensions), as Triton's."""
    x = to_tensor(input)
    axes = list(axis) if isinstance(axis, (builtins.tuple, list)) else [axis]
    ndim = len(x.shape) + len(axes)
    normalized = []
    for a in axes:
        if type(a) is not int:
            raise TypeError(f"expand_dims: axis must be a constexpr int, got {a!r}")
        if not -ndim <= a < ndim:
            raise ValueError(f"invalid axis {a}. Expected {-ndim} <= axis < {ndim}")
        normalized.append(a % ndim)
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"expand_dims received duplicate axes, normalized axes = {normalized}")
    for a in sorted(normalized):
        x = make("expand_dims", x, axis=a)
    return x


@builtin
def dot(input, other, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
        out_dtype=None):
    """``input`` (M, K) @ ``other`` (K, N) [+ ``acc``], with Triton 3.6's rules: both operands of one
    dtype (fp16, bf16, fp32, fp64, int8) or both fp8 (float8e4nv, float8e5, mixed), K >= 16 (32 for
    int8 and fp8); fp32 inputs by ``input_precision`` ("tf32", the default, "tf32x3" or "ieee");
    the result fp32 (int32 for int8, fp64 for fp64; fp16 and fp8 inputs may ask
    ``out_dtype=tl.float16``). fp8 operands are converted to fp16 (exactly) and multiplied as such,
    accumulating in full fp32 (``max_num_imprecise_acc`` is accepted and has nothing to limit)."""
    a, b = to_tensor(input), to_tensor(other)
    if not (is_block(a) and is_block(b)):
        raise TypeError("tl.dot needs two blocks")
    if len(a.shape) != len(b.shape) or len(a.shape) < 2:
        raise TypeError(f"Both inputs must have the same rank, 2 or more; (lhs: {list(a.shape)} vs rhs: {list(b.shape)})")
    if len(a.shape) > 3:          # batch dimensions beyond one: flattened into one, and back
        if a.shape[:-2] != b.shape[:-2]:
            raise TypeError(f"Batch dimensions of both inputs must be the same: lhs {list(a.shape)}, rhs {list(b.shape)}")
        batch = _math.prod(a.shape[:-2])
        from .shape import reshape
        acc3 = None if acc is None else reshape(acc, [batch, *to_tensor(acc).shape[-2:]])
        out = dot(reshape(a, [batch, *a.shape[-2:]]), reshape(b, [batch, *b.shape[-2:]]), acc3, input_precision,
                  allow_tf32, max_num_imprecise_acc, out_dtype)
        return reshape(out, [*a.shape[:-2], *out.shape[-2:]])
    if len(a.shape) == 3 and a.shape[0] != b.shape[0]:
        raise TypeError(f"Batch dimension of both inputs must be the same: lhs {list(a.shape)}, rhs {list(b.shape)}")
    allowed = (I8, F16, BF16, F32, F64, FP8E4NV, FP8E5)
    for side, x in (("lhs", a), ("rhs", b)):
        if x.dtype not in allowed:
            raise TypeError(f"Unsupported {side} dtype {x.dtype}")
    fp8 = a.dtype.is_fp8 and b.dtype.is_fp8          # (any two fp8 types, as in Triton)
    if a.dtype != b.dtype and not fp8:
        raise TypeError(f"Both operands must be same dtype. Got {a.dtype} and {b.dtype}")
    if a.shape[-1] != b.shape[-2]:
        raise TypeError(f"First input shape ({list(a.shape)}) and second input shape {list(b.shape)} are not "
                        f"compatible for matmul (second index of first shape ({a.shape[-1]}) must be equal to "
                        f"first index of second shape ({b.shape[-2]})")
    min_k = 32 if a.dtype == I8 or fp8 else 16
    if a.shape[-1] < min_k:
        raise TypeError(f"Input shapes should have M >= 1, N >= 1 and K >= {min_k}")
    if fp8:    # every fp8 value is an fp16 one: the product of the fp16 operands is the same
        a, b = (make("cast", x, dtype=F16, rounding=None) for x in (a, b))
    if allow_tf32 is not None:
        if input_precision is not None:
            raise TypeError("only one of input_precision and allow_tf32 can be given")
        input_precision = "tf32" if allow_tf32 else "ieee"
    precision = "tf32" if input_precision is None else str(input_precision).lower()
    if precision not in DOT_PRECISIONS + BF16_SPLITS:
        raise TypeError(f"input_precision must be one of {DOT_PRECISIONS + BF16_SPLITS}. Got {input_precision}")
    out_dtype = F32 if out_dtype is None else _block_dtype(out_dtype)
    if a.dtype == I8:
        result = I32
    elif out_dtype == BF16:
        raise TypeError("out_dtype=bfloat16 is unsupported. Please use out_dtype=float32/float16 and cast with "
                        "`.to(tl.bfloat16)`")
    elif a.dtype in (F32, BF16):
        result = F32
    elif a.dtype == F64:
        result = F64
    else:
        result = out_dtype if out_dtype in (F16, F32) else F32
    shape = (*a.shape[:-1], b.shape[-1])
    if acc is None:
        acc = zeros(shape, result)
    else:
        acc = to_tensor(acc)
        if builtins.tuple(acc.shape) != shape or acc.dtype != result:
            raise TypeError(f"the accumulator must be a {list(shape)} block of {result}, got {acc.type}")
        if acc.dtype != out_dtype:      # (Triton asserts it: an int8 dot into an int32 acc says so)
            raise TypeError(f"the accumulator's dtype tl.{acc.dtype.info.triton} must be the out_dtype "
                            f"(tl.{out_dtype.info.triton}): pass out_dtype=tl.{acc.dtype.info.triton}")
    if precision in BF16_SPLITS:
        if a.dtype != F32:
            precision = "ieee"                   # (other inputs have no fp32 to split)
        else:
            return _bf16_split_dot(a, b, acc, 3 if precision == "bf16x6" else 2)
    return make("dot", a, b, acc, input_precision=precision)


BF16_SPLITS = ("bf16x3", "bf16x6")


def _bf16_split_dot(a, b, acc, parts: int):
    """Triton's "bf16x3" / "bf16x6" fp32 dots: each operand split into ``parts`` bf16 terms (x = hi +
    mid [+ lo], each the bf16 rounding of what the previous ones leave), the products that matter
    summed on bf16 tensor cores into fp32, the smallest first: for bf16x3 lo*hi, hi*lo, hi*hi; for
    bf16x6 also the mid terms."""
    def split(x):
        terms, rest = [], x
        for _ in builtins.range(parts):
            t = rest.to(BF16)
            terms.append(t)
            rest = rest - t.to(F32)
        return terms
    sa, sb = split(a), split(b)
    if parts == 2:
        pairs = [(1, 0), (0, 1), (0, 0)]
    else:
        pairs = [(2, 0), (1, 1), (0, 2), (1, 0), (0, 1), (0, 0)]
    for i, j in pairs:
        acc = make("dot", sa[i], sb[j], acc, input_precision="ieee")
    return acc


def _dims(dims) -> tuple[int, ...]:
    """``f(x, 1, 0)`` and ``f(x, (1, 0))`` alike, as Triton takes them."""
    if len(dims) == 1 and isinstance(dims[0], (builtins.tuple, list)):
        dims = builtins.tuple(dims[0])
    if any(type(d) is not int for d in dims):
        raise TypeError(f"permute dims must be constant ints, got {dims}")
    return builtins.tuple(dims)


@builtin
def permute(input, *dims):
    """Result dimension i is ``input``'s dimension ``dims[i]`` (``permute(x, 1, 0)`` transposes)."""
    return make("trans", input, dims=_dims(dims))


@builtin
def trans(input, *dims):
    """``permute``; without ``dims``, swaps the last two dimensions (a batched 2-D transpose)."""
    dims = _dims(dims)
    if not dims:
        n = len(input.shape) if is_block(input) else 0
        if n < 2:
            raise ValueError("tl.trans invoked with a 0- or 1-dimensional tensor")
        dims = builtins.tuple(builtins.range(n - 2)) + (n - 1, n - 2)
    return make("trans", input, dims=dims)


@builtin
def broadcast_to(input, *shape):
    if len(shape) == 1 and isinstance(shape[0], (builtins.tuple, list)):
        shape = builtins.tuple(shape[0])
    return make("broadcast", input, shape=_shape(builtins.tuple(shape)))


def cdiv(x, div):
    """Ceiling division, for constexprs and run-time values alike."""
    return (x + div - 1) // div


def _hint(input, values, kind: str, name: str):
    """Record a promise about *input*'s values on the value itself (as Triton annotates the op
    that made it, so a call whose result is dropped still counts) and return *input*. *values*: one
    number for every dimension or one per dimension; each counts as its largest power-of-2 divisor.
    The axis analysis takes the better of the promise and what it proves. Constants are exact:
    a promise about one is ignored."""
    x = to_tensor(input)
    rank = builtins.max(1, len(x.shape) if is_block(x) else 0)
    listed = list(values) if isinstance(values, (list, builtins.tuple)) else [values] * rank
    if len(listed) != rank or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in listed):
        raise ValueError(f"tl.{name} takes a positive integer or one per dimension ({rank}), got {values!r}")
    if x.node.op != "const":
        x.node.hints = {**(x.node.hints or {}), kind: builtins.tuple(v & -v for v in listed)}
    return x


@builtin
def multiple_of(input, values):
    """A promise (Triton's): every run of the values along a dimension starts at a multiple of
    *values* (for pointers: of that many bytes), e.g. the 16-byte alignment a vector access needs."""
    return _hint(input, values, "divisibility", "multiple_of")


@builtin
def max_contiguous(input, values):
    """A promise (Triton's): the values run in steps of +1 for *values* elements along each dimension."""
    return _hint(input, values, "contiguity", "max_contiguous")


@builtin
def max_constancy(input, values):
    """A promise (Triton's): the values repeat for runs of *values* elements along each dimension."""
    return _hint(input, values, "constancy", "max_constancy")


@builtin
def assume(cond):
    """A hint (Triton's ``tl.assume``): the condition is true; checked to be a boolean, then unused."""
    c = to_tensor(cond)
    if not getattr(c.dtype, "is_bool", False):
        raise TypeError(f"tl.assume takes a boolean condition, got {c.dtype}")


def __getattr__(name):
    """A name this module lacks: Triton's language names get "not supported by mytriton yet"."""
    from .triton_names import missing_attribute
    raise missing_attribute(name)


from .debug import device_assert, device_print, print_label, static_assert, static_print  # noqa: E402
from . import extra, math  # noqa: E402 (they use the functions above)
from .math import div_rn, erf, fdiv, fma, sqrt_rn, umulhi  # noqa: E402
from .random import (pair_uniform_to_normal, philox, philox_impl, rand, rand4x, randint, randint4x,  # noqa: E402
                     randn, randn4x, uint_to_uniform_float)

from .reduction import argmax, argmin, associative_scan, cumprod, cumsum, reduce  # noqa: E402

from .shape import broadcast, cat, flip, gather, interleave, join, ravel, reshape, split, view  # noqa: E402
from .sort import sort, topk  # noqa: E402
from .inline_asm import inline_asm_elementwise  # noqa: E402
from .map_elementwise import map_elementwise  # noqa: E402
from .block_ptr import (advance, block_ptr, load_tensor_descriptor, make_block_ptr, make_tensor_descriptor,  # noqa: E402
                        store_tensor_descriptor, tensor_descriptor)
from .core import constexpr_type  # noqa: E402
from .sort import bitonic_merge  # noqa: E402
from . import triton_types  # noqa: E402
from .triton_types import (block_type, condition, const, slice, str_to_ty, tensor_descriptor_type,  # noqa: E402
                           tuple, tuple_type, void)
from .unsupported import dot_scaled, float8e4b8, float8e4b15, float8e5b16  # noqa: E402
from . import standard, target_info  # noqa: E402

__all__ += ["reduce", "associative_scan", "cumsum", "cumprod", "argmax", "argmin", "reshape", "view", "ravel", "histogram", "gather", "device_assert",
            "join", "split", "interleave", "cat", "flip", "broadcast", "sort", "topk", "make_block_ptr", "advance",
            "make_tensor_descriptor", "load_tensor_descriptor", "store_tensor_descriptor", "tensor_descriptor",
            "inline_asm_elementwise", "map_elementwise"]

# Triton's tensor member functions (``x.sum(0)``, ``x.reshape(...)``): the language's functions, the
# tensor first
for _name in ("abs", "argmax", "argmin", "associative_scan", "broadcast_to", "cumprod", "cumsum", "exp", "exp2",
              "expand_dims", "flip", "log", "log2", "max", "min", "ravel", "reduce", "reshape", "sigmoid", "softmax",
              "split", "sqrt", "sum", "view", "xor_sum", "reduce_or", "cos", "sin", "rsqrt", "floor", "ceil", "sort",
              "topk"):
    if not hasattr(tensor, _name):
        setattr(tensor, _name, globals()[_name])
__all__ += ["constexpr_type", "bitonic_merge", "block_type", "condition", "const", "slice", "str_to_ty",
            "tensor_descriptor_type", "tuple", "tuple_type", "void", "dot_scaled", "float8e4b15", "float8e4b8",
            "float8e5b16", "standard", "target_info", "core"]
__all__ += ["math", "extra", "erf", "fma", "umulhi", "sqrt_rn", "div_rn", "fdiv", "philox", "philox_impl",
            "randint", "randint4x", "rand", "rand4x", "randn", "randn4x", "uint_to_uniform_float",
            "pair_uniform_to_normal"]

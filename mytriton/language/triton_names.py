"""The public names of Triton's kernel language, as data: a kernel (or host code) reaching for one
that ``mytriton.language`` lacks is told that mytriton does not support it yet, instead of getting a
bare "no attribute" error."""
from __future__ import annotations

# Triton 3.6's python/triton/language/__init__.py: its __all__, in its order (functions, dtypes and
# the submodules math, extra and target_info).
TRITON_LANGUAGE_NAMES = (
    "PropagateNan", "TRITON_MAX_TENSOR_NUMEL", "load_tensor_descriptor", "store_tensor_descriptor",
    "make_tensor_descriptor", "tensor_descriptor", "abs", "add", "advance", "arange", "argmax",
    "argmin", "associative_scan", "assume", "atomic_add", "atomic_and", "atomic_cas", "atomic_max",
    "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor", "bfloat16", "bitonic_merge", "block_type",
    "broadcast", "broadcast_to", "cat", "cast", "cdiv", "ceil", "clamp", "condition", "const",
    "constexpr", "constexpr_type", "cos", "cumprod", "cumsum", "debug_barrier", "device_assert",
    "device_print", "div_rn", "dot", "dot_scaled", "dtype", "erf", "exp", "exp2", "expand_dims",
    "extra", "fdiv", "flip", "float16", "float32", "float64", "float8e4b15", "float8e4nv", "float8e4b8",
    "float8e5", "float8e5b16", "floor", "fma", "full", "gather", "histogram", "inline_asm_elementwise",
    "interleave", "int1", "int16", "int32", "int64", "int8", "join", "load", "log", "log2",
    "make_block_ptr", "map_elementwise", "math", "max", "max_constancy", "max_contiguous", "maximum",
    "min", "minimum", "mul", "multiple_of", "num_programs", "pair_uniform_to_normal", "permute",
    "philox", "philox_impl", "pi32_t", "pointer_type", "program_id", "rand", "rand4x", "randint",
    "randint4x", "randn", "randn4x", "range", "ravel", "reduce", "reduce_or", "reshape", "rsqrt",
    "slice", "sigmoid", "sin", "softmax", "sort", "split", "sqrt", "sqrt_rn", "static_assert",
    "static_print", "static_range", "store", "sub", "sum", "swizzle2d", "target_info", "tensor", "topk",
    "trans", "tuple", "uint16", "uint32", "uint64", "uint8", "uint_to_uniform_float", "umulhi", "view",
    "void", "where", "xor_sum", "zeros", "zeros_like",
)


class UnsupportedTritonName(AttributeError):
    """``tl.<name>`` for a name of Triton's language that mytriton does not have (yet)."""

    def __init__(self, name: str):
        super().__init__(f"`tl.{name}` is part of Triton's language and not supported by mytriton yet")
        self.name = name


def missing_attribute(name: str) -> AttributeError:
    """The error for ``mytriton.language.<name>`` when the module has no such attribute."""
    if name in TRITON_LANGUAGE_NAMES:
        return UnsupportedTritonName(name)
    return AttributeError(f"module 'mytriton.language' has no attribute {name!r}")

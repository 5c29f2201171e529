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


# Triton 3.6's triton/language/extra/cuda/libdevice.py: its functions, sorted
TRITON_LIBDEVICE_NAMES = (
    'abs', 'acos', 'acosh', 'add_rd', 'add_rn', 'add_ru', 'add_rz', 'asin', 'asinh', 'atan', 'atan2',
    'atanh', 'brev', 'byte_perm', 'cbrt', 'ceil', 'clz', 'copysign', 'cos', 'cosh', 'cospi',
    'cyl_bessel_i0', 'cyl_bessel_i1', 'div_rd', 'div_rn', 'div_ru', 'div_rz', 'double2float_rd',
    'double2float_rn', 'double2float_ru', 'double2float_rz', 'double2hiint', 'double2int_rd',
    'double2int_rn', 'double2int_ru', 'double2int_rz', 'double2ll_rd', 'double2ll_rn', 'double2ll_ru',
    'double2ll_rz', 'double2loint', 'double2uint_rd', 'double2uint_rn', 'double2uint_ru', 'double2uint_rz',
    'double2ull_rd', 'double2ull_rn', 'double2ull_ru', 'double2ull_rz', 'double_as_longlong', 'erf', 'erfc',
    'erfcinv', 'erfcx', 'erfinv', 'exp', 'exp10', 'exp2', 'expm1', 'fast_cosf', 'fast_dividef',
    'fast_exp10f', 'fast_expf', 'fast_log10f', 'fast_log2f', 'fast_logf', 'fast_powf', 'fast_sinf',
    'fast_tanf', 'fdim', 'ffs', 'finitef', 'float2int_rd', 'float2int_rn', 'float2int_ru', 'float2int_rz',
    'float2ll_rd', 'float2ll_rn', 'float2ll_ru', 'float2ll_rz', 'float2uint_rd', 'float2uint_rn',
    'float2uint_ru', 'float2uint_rz', 'float2ull_rd', 'float2ull_rn', 'float2ull_ru', 'float2ull_rz',
    'float_as_int', 'float_as_uint', 'floor', 'fma', 'fma_rd', 'fma_rn', 'fma_ru', 'fma_rz', 'fmod', 'hadd',
    'hiloint2double', 'hypot', 'ilogb', 'int2double_rn', 'int2float_rd', 'int2float_rn', 'int2float_ru',
    'int2float_rz', 'int_as_float', 'isfinited', 'isinf', 'isnan', 'j0', 'j1', 'jn', 'ldexp', 'lgamma',
    'll2double_rd', 'll2double_rn', 'll2double_ru', 'll2double_rz', 'll2float_rd', 'll2float_rn',
    'll2float_ru', 'll2float_rz', 'llrint', 'llround', 'log', 'log10', 'log1p', 'log2', 'logb',
    'longlong_as_double', 'mul24', 'mul_rd', 'mul_rn', 'mul_ru', 'mul_rz', 'mulhi', 'nearbyint',
    'nextafter', 'norm3d', 'norm4d', 'normcdf', 'normcdfinv', 'popc', 'pow', 'rcbrt', 'rcp64h', 'rcp_rd',
    'rcp_rn', 'rcp_ru', 'rcp_rz', 'remainder', 'rhadd', 'rhypot', 'rint', 'rnorm3d', 'rnorm4d', 'round',
    'rsqrt', 'rsqrt_rn', 'sad', 'saturatef', 'scalbn', 'signbit', 'sin', 'sinh', 'sinpi', 'sqrt', 'sqrt_rd',
    'sqrt_rn', 'sqrt_ru', 'sqrt_rz', 'sub_rd', 'sub_rn', 'sub_ru', 'sub_rz', 'tan', 'tanh', 'tgamma',
    'trunc', 'uint2double_rn', 'uint2float_rd', 'uint2float_rn', 'uint2float_ru', 'uint2float_rz',
    'uint_as_float', 'ull2double_rd', 'ull2double_rn', 'ull2double_ru', 'ull2double_rz', 'ull2float_rd',
    'ull2float_rn', 'ull2float_ru', 'ull2float_rz', 'y0', 'y1', 'yn',
)


# Triton 3.6's triton.language: its other public names (beside __all__: submodules, types)
TRITON_LANGUAGE_OTHER_NAMES = (
    "core", "random", "standard", "str_to_ty", "tensor_descriptor_type", "tuple_type",
)

# Triton 3.6's triton/__init__.py: its __all__ and public submodules
TRITON_NAMES = (
    "AsyncCompileMode", "CompilationError", "Config", "FutureKernel", "InterpreterError", "JITFunction",
    "KernelInterface", "MockTensor", "OutOfResources", "TensorWrapper", "TritonError", "autotune",
    "backends", "cdiv", "compile", "compiler", "constexpr_function", "errors", "heuristics", "jit", "knobs",
    "language", "must_use_result", "next_power_of_2", "reinterpret", "runtime", "set_allocator", "testing",
    "tools",
)

# Triton 3.6's triton/testing.py: its public functions and classes
TRITON_TESTING_NAMES = (
    "Benchmark", "Mark", "assert_close", "cuda_memcheck", "do_bench", "do_bench_cudagraph", "get_dram_gbps",
    "get_max_simd_tflops", "get_max_tensorcore_tflops", "nvsmi", "perf_report", "set_gpu_clock",
)

# Triton 3.6's triton/language/extra/cuda/__init__.py: its __all__ and submodules
TRITON_EXTRA_CUDA_NAMES = (
    "libdevice", "globaltimer", "num_threads", "num_warps", "smid", "convert_custom_float8_sm70",
    "convert_custom_float8_sm80", "gdc_launch_dependents", "gdc_wait", "gdc", "utils",
)

# The names above that mytriton does not provide, each with why (the error says it)
UNSUPPORTED = {
    "triton.AsyncCompileMode": "mytriton compiles on the calling thread (ahead of time: mytriton-build)",
    "triton.FutureKernel": "mytriton compiles on the calling thread (ahead of time: mytriton-build)",
    "triton.MockTensor": "Triton's warmup without tensors; mytriton compiles from a signature: mytriton.compile(...)",
    "triton.testing.cuda_memcheck": "run the program under compute-sanitizer instead",
    "triton.testing.get_dram_gbps": "mytriton keeps no table of GPUs' peak bandwidths",
    "triton.testing.get_max_simd_tflops": "mytriton keeps no table of GPUs' peak throughputs",
    "triton.testing.get_max_tensorcore_tflops": "mytriton keeps no table of GPUs' peak throughputs",
    "triton.testing.set_gpu_clock": "locking clocks needs nvidia-smi as root: run it yourself",
    "tl.extra.cuda.convert_custom_float8_sm70": "the fp8e4b15 format it converts is not supported (tl.float8e4b15)",
    "tl.extra.cuda.convert_custom_float8_sm80": "the fp8e4b15 format it converts is not supported (tl.float8e4b15)",
    "tl.extra.cuda.gdc_launch_dependents": "programmatic dependent launch (griddepcontrol) is not supported",
    "tl.extra.cuda.gdc_wait": "programmatic dependent launch (griddepcontrol) is not supported",
    "tl.extra.cuda.gdc": "programmatic dependent launch (griddepcontrol) is not supported",
    "tl.extra.cuda.utils": "its functions are tl.extra.cuda's own (num_warps, num_threads, smid, globaltimer)",
}


class UnsupportedTritonName(AttributeError):
    """``tl.<name>`` (or ``triton.<name>``, ...) for a name of Triton's that mytriton does not have
    (yet); the message says why where ``UNSUPPORTED`` does."""

    def __init__(self, name: str, where: str = "tl"):
        what = "Triton's language" if where.split(".")[0] == "tl" else "Triton"
        reason = UNSUPPORTED.get(f"{where}.{name}")
        super().__init__(f"`{where}.{name}` is part of {what} and not supported by mytriton yet"
                         + (f": {reason}" if reason else ""))
        self.name = name


def missing_attribute(name: str, where: str = "tl", module: str = "mytriton.language") -> AttributeError:
    """The error for ``<module>.<name>`` (Triton's ``<where>.<name>``) when the module has no such
    attribute: a name of Triton's says mytriton does not support it yet, and why."""
    known = {"tl": TRITON_LANGUAGE_NAMES + TRITON_LANGUAGE_OTHER_NAMES, "triton": TRITON_NAMES,
             "triton.testing": TRITON_TESTING_NAMES, "tl.extra.cuda": TRITON_EXTRA_CUDA_NAMES}.get(where, ())
    if name in known or f"{where}.{name}" in UNSUPPORTED:
        return UnsupportedTritonName(name, where)
    return AttributeError(f"module {module!r} has no attribute {name!r}")

"""``tl.standard``: Triton's module of the language's functions written in the language itself
(reductions, scans, sort, softmax, ...); in mytriton the same functions of ``tl``."""
from . import (argmax, argmin, bitonic_merge, cdiv, cumprod, cumsum, flip, interleave, max, min,  # noqa: A004
               ravel, reduce_or, sigmoid, softmax, sort, sum, swizzle2d, topk, xor_sum, zeros, zeros_like)
from .sort import sort as sort_impl  # noqa: F401 (Triton's name of the sort with a k)

__all__ = ["argmax", "argmin", "bitonic_merge", "cdiv", "cumprod", "cumsum", "flip", "interleave", "max", "min",
           "ravel", "reduce_or", "sigmoid", "softmax", "sort", "sum", "swizzle2d", "topk", "xor_sum", "zeros",
           "zeros_like"]

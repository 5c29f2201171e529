"""Names of Triton's language for hardware features mytriton does not compile: each is an object a
kernel can name but not use -- using it raises the reason at that line (as Triton refuses them on
GPUs without the feature)."""
from __future__ import annotations

from .core import builtin


class _UnsupportedDtype:
    """A dtype of Triton's for other GPUs (AMD's fp8 formats, the fp8e4b15 of pre-Hopper Triton):
    any use in a kernel -- a cast, a block of it, a pointer to it -- is refused."""

    def __init__(self, name: str, triton: str, why: str):
        self.name, self.triton, self.why = name, triton, why

    def __repr__(self):
        return f"mytriton.language.{self.triton}"

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise TypeError(self.message())

    def message(self) -> str:
        return f"tl.{self.triton} is not supported by mytriton: {self.why}"


_AMD = "an fp8 format of AMD's GPUs (MI300); NVIDIA's are tl.float8e4nv and tl.float8e5"
float8e4b8 = _UnsupportedDtype("fp8e4b8", "float8e4b8", _AMD)
float8e5b16 = _UnsupportedDtype("fp8e5b16", "float8e5b16", _AMD)
float8e4b15 = _UnsupportedDtype("fp8e4b15", "float8e4b15", "Triton emulates it in software for GPUs before "
                                "Hopper; use tl.float8e4nv")
UNSUPPORTED_DTYPES = (float8e4b8, float8e5b16, float8e4b15)


@builtin
def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False, lhs_k_pack=True,
               rhs_k_pack=True, out_dtype=None):
    """Triton's microscaled matrix product (mxfp4/mxfp8 operands with e8m0 scales): not supported."""
    raise TypeError("tl.dot_scaled is not supported by mytriton: microscaled (mxfp) matrix products need "
                    "Blackwell's tensor cores (tcgen05) or Triton's software decomposition, which mytriton does "
                    "not have; scale the operands and use tl.dot")

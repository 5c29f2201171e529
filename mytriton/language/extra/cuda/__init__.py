"""``mytriton.language.extra.cuda``: CUDA's math library as Triton exposes it (``libdevice``), and
Triton's CUDA-only helpers: the program's warp and thread counts (constexprs), the SM a program
runs on and the global nanosecond timer (special PTX registers, read by inline PTX)."""
from __future__ import annotations

from ....ir.types import I32 as int32, I64 as int64
from ...core import builtin, current_builder
from ...inline_asm import inline_asm_elementwise
from . import libdevice

__all__ = ["libdevice", "num_warps", "num_threads", "smid", "globaltimer"]


@builtin
def num_warps() -> int:
    """The number of warps of the program (a constexpr)."""
    return current_builder().num_warps


@builtin
def num_threads() -> int:
    """The number of threads of the program (a constexpr): 32 per warp."""
    return current_builder().num_warps * 32


@builtin
def smid():
    """The index of the SM the program runs on (PTX ``%smid``), an int32."""
    return inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=int32, is_pure=True, pack=1)


@builtin
def globaltimer():
    """The GPU's global nanosecond timer (PTX ``%globaltimer``), an int64; read where it stands."""
    return inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=int64, is_pure=False, pack=1)


def __getattr__(name):
    """Triton's other ``tl.extra.cuda`` names: not supported by mytriton yet, and why."""
    from ...triton_names import missing_attribute
    raise missing_attribute(name, "tl.extra.cuda", __name__)

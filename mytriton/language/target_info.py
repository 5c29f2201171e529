"""``tl.target_info``: Triton's compile-time questions about the GPU a kernel compiles for. mytriton
compiles only for NVIDIA GPUs (``is_cuda()`` is true, the ``is_hip*`` false). A kernel is traced
once for every target of a build (an sm_80 and an sm_90a build share the trace), so a question
whose answer depends on the target (``cuda_capability_geq``, ``current_target``) is refused at the
line that asks: pass the capability as a ``tl.constexpr`` instead."""
from __future__ import annotations

from ..host_api import constexpr_function


@constexpr_function
def is_cuda():
    return True


@constexpr_function
def is_hip():
    return False


@constexpr_function
def is_hip_cdna3():
    return False


@constexpr_function
def is_hip_cdna4():
    return False


@constexpr_function
def cuda_capability_geq(major, minor=0):
    raise TypeError("tl.target_info.cuda_capability_geq is not supported by mytriton: a kernel is traced once "
                    "for every target of a build, so its code cannot depend on the target's capability; pass "
                    "it as a tl.constexpr parameter")


@constexpr_function
def current_target():
    raise TypeError("tl.target_info.current_target is not supported by mytriton: a kernel is traced once for "
                    "every target of a build; pass what it needs as a tl.constexpr parameter")


__all__ = ["current_target", "cuda_capability_geq", "is_cuda", "is_hip", "is_hip_cdna3", "is_hip_cdna4"]

"""Loading and launching compiled kernels through the CUDA driver API.

Everything lives in :mod:`mytriton.runtime.driver`, a self-contained module that the
AOT build tool also copies verbatim into generated packages as ``_runtime.py``.
"""

from .driver import (  # noqa: F401
    CudaError,
    DeviceArray,
    ForkedProcessError,
    Kernel,
    KernelFamily,
    KernelLoadError,
    ParamType,
    SpecializationNotFoundError,
    Stream,
    argument_device,
    compute_capability,
    current_device,
    describe_argument,
    driver_available,
    infer_type,
    parse_type,
    pointer_info,
    synchronize,
)

__all__ = [
    "CudaError", "DeviceArray", "ForkedProcessError", "Kernel", "KernelFamily", "KernelLoadError", "ParamType",
    "SpecializationNotFoundError", "Stream", "argument_device", "compute_capability", "current_device", "describe_argument",
    "driver_available", "infer_type", "parse_type", "pointer_info", "synchronize",
]

"""GPU: MLIR-made PTX, launched through the CUDA driver, computes what the CUDA backend computes.

For each kernel of ``CASES``: the MLIR backend's module is lowered to PTX by ``mlir-opt``
(``tools.to_ptx``), loaded with ``cuModuleLoadData`` and launched with ``cuLaunchKernel`` on
``num_warps * 32`` threads; the CUDA backend's cubin (``mytriton.compile``) runs on the same inputs;
both must match each other and the numpy reference.

The GPU machine may lack the MLIR tools. Then make the PTX where they are and bring it along:

    python tests/test_mlir_gpu.py --write-ptx DIR          # where mlir-opt is installed
    MYTRITON_MLIR_PTX_DIR=DIR pytest -m gpu tests/test_mlir_gpu.py     # on the GPU machine

Each file is named after its case and the sha256 of the MLIR text it was made from, so PTX made
from an older compiler is never used.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from test_mlir_support import CASES, tools_missing_reason  # noqa: E402

import mytriton  # noqa: E402
from mytriton.backends.mlir import emit_mlir, tools  # noqa: E402
from mytriton.backends.names import kernel_symbol  # noqa: E402
from mytriton.ir.types import PointerType, parse_type  # noqa: E402

pytestmark = pytest.mark.gpu

_CTYPES = {"i1": ctypes.c_bool, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
           "i64": ctypes.c_int64, "u8": ctypes.c_uint8, "u16": ctypes.c_uint16, "u32": ctypes.c_uint32,
           "u64": ctypes.c_uint64, "fp32": ctypes.c_float, "fp64": ctypes.c_double}


def ptx_file_name(case, mlir_text: str) -> str:
    return f"{case.name}-{hashlib.sha256(mlir_text.encode()).hexdigest()[:16]}.ptx"


def mlir_ptx(case, mlir_text: str) -> str:
    if tools_missing_reason() is None:
        return tools.to_ptx(mlir_text, "sm_90")
    folder = os.environ.get("MYTRITON_MLIR_PTX_DIR")
    if folder:
        path = Path(folder) / ptx_file_name(case, mlir_text)
        if path.is_file():
            return path.read_text()
        pytest.skip(f"{path} not found: make it with `python tests/test_mlir_gpu.py --write-ptx {folder}`")
    pytest.skip(tools_missing_reason() + "; or set MYTRITON_MLIR_PTX_DIR (see this file's docstring)")


class Driver:
    """The few CUDA driver calls the test needs, through cuda.bindings."""

    def __init__(self):
        try:
            from cuda.bindings import driver
        except ImportError as e:
            pytest.skip(f"cuda.bindings is not importable: {e}")
        self.cu = driver
        try:
            initialized = self.call(driver.cuInit(0), soft=True)
        except Exception as e:                     # noqa: BLE001 - no driver library at all
            pytest.skip(f"no CUDA driver: {e}")
        if initialized is None:
            pytest.skip("no CUDA driver or GPU")
        count = self.call(driver.cuDeviceGetCount())
        if not count:
            pytest.skip("no CUDA GPU")
        device = self.call(driver.cuDeviceGet(0))
        self.context = self.call(driver.cuDevicePrimaryCtxRetain(device))
        self.call(driver.cuCtxSetCurrent(self.context))

    def call(self, result, soft: bool = False):
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            if soft:
                return None
            raise RuntimeError(f"CUDA driver error {err}")
        return rest[0] if len(rest) == 1 else (rest or True)

    def to_device(self, array: np.ndarray) -> int:
        ptr = self.call(self.cu.cuMemAlloc(max(1, array.nbytes)))
        self.call(self.cu.cuMemcpyHtoD(ptr, array.ctypes.data, array.nbytes))
        return ptr

    def from_device(self, ptr, like: np.ndarray) -> np.ndarray:
        out = np.empty_like(like)
        self.call(self.cu.cuMemcpyDtoH(out.ctypes.data, ptr, out.nbytes))
        return out

    def launch(self, image: bytes, name: str, grid, threads: int, shared: int, args: list):
        module = self.call(self.cu.cuModuleLoadData(image))
        try:
            function = self.call(self.cu.cuModuleGetFunction(module, name.encode()))
            if shared > 48 * 1024:
                attr = self.cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                self.call(self.cu.cuFuncSetAttribute(function, attr, shared))
            holders = (ctypes.c_void_p * len(args))(*[ctypes.addressof(a) for a in args])
            grid = tuple(grid) + (1,) * (3 - len(grid))
            self.call(self.cu.cuLaunchKernel(function, *grid, threads, 1, 1, shared, 0, ctypes.addressof(holders), 0))
            self.call(self.cu.cuCtxSynchronize())
        finally:
            self.call(self.cu.cuModuleUnload(module))


def run_on_gpu(drv: Driver, case, image: bytes, name: str, shared: int) -> dict:
    inputs = case.inputs(np.random.default_rng(0))
    args, buffers = [], {}
    for param, type_string in case.signature.items():
        ty, _ = parse_type(type_string)
        value = inputs[param]
        if isinstance(ty, PointerType):
            buffers[param] = drv.to_device(np.ascontiguousarray(value))
            args.append(ctypes.c_void_p(int(buffers[param])))
        else:
            args.append(_CTYPES[ty.name](value))
    drv.launch(image, name, case.grid, case.num_warps * 32, shared, args)
    out = {p: drv.from_device(buffers[p], inputs[p]) for p in case.outputs}
    for ptr in buffers.values():
        drv.call(drv.cu.cuMemFree(ptr))
    return out


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_mlir_ptx_matches_cuda_backend(case):
    drv = Driver()
    ptx = mlir_ptx(case, emit_mlir(case.ssa()))
    got = run_on_gpu(drv, case, ptx.encode() + b"\0", kernel_symbol(case.kernel.__name__), 0)
    expected = case.reference(case.inputs(np.random.default_rng(0)))
    for param in case.outputs:
        np.testing.assert_allclose(got[param], expected[param], rtol=case.rtol, atol=case.atol,
                                   err_msg=f"{case.name}: {param}: MLIR backend vs numpy")
    ck = mytriton.compile(case.kernel, signature=case.signature, constexprs=case.constexprs, target="sm_90",
                          num_warps=case.num_warps)
    cubin = ck.asm["cubin"]
    want = run_on_gpu(drv, case, cubin, ck.metadata["name"], ck.metadata["shared"])
    for param in case.outputs:
        np.testing.assert_allclose(got[param], want[param], rtol=case.rtol, atol=case.atol,
                                   err_msg=f"{case.name}: {param}: MLIR backend vs CUDA backend")


def write_ptx(folder: str) -> None:
    os.makedirs(folder, exist_ok=True)
    for case in CASES:
        text = emit_mlir(case.ssa())
        path = Path(folder) / ptx_file_name(case, text)
        path.write_text(tools.to_ptx(text, "sm_90"))
        print(path)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--write-ptx":
        sys.exit("usage: python tests/test_mlir_gpu.py --write-ptx DIR")
    write_ptx(sys.argv[2])

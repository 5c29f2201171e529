"""The runtime (mytriton/runtime/driver.py) without a GPU.

Argument checking must raise before any driver call, so those tests replace the driver's
entry points with tripwires.  Loading logic (image choice, sha256, PTX version gating,
shared memory opt-in, one load per context) runs against ``FakeDriver``, a small Python
stand-in for ``cuda.bindings.driver`` whose "device memory" is host memory.
"""
import ctypes
import enum
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from mytriton.runtime import driver as rt

DRIVER_PY = os.path.join(os.path.dirname(rt.__file__), "driver.py")


# --------------------------------------------------------------------------- fixtures

class DriverTouched(AssertionError):
    pass


@pytest.fixture
def no_driver(monkeypatch):
    """Any driver call fails the test: argument errors must come first."""
    def tripwire(*a, **k):
        raise DriverTouched("the driver was called")
    monkeypatch.setattr(rt, "_get_ctx", tripwire)
    monkeypatch.setattr(rt, "_launch_kernel", tripwire)
    monkeypatch.setattr(rt, "_current_context", tripwire)


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_INVALID_IMAGE = 200
    CUDA_ERROR_INVALID_CONTEXT = 201
    CUDA_ERROR_INVALID_HANDLE = 400
    CUDA_ERROR_NOT_FOUND = 500
    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720


class CUdevice_attribute(enum.IntEnum):
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
    CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10
    CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13
    CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36
    CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37


class CUfunction_attribute(enum.IntEnum):
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


class CUpointer_attribute(enum.IntEnum):
    CU_POINTER_ATTRIBUTE_CONTEXT = 1


class Handle:
    """Stands in for CUcontext / CUfunction / CUstream: an int-like opaque handle."""

    def __init__(self, value):
        self.value = value

    def __int__(self):
        return self.value

    def __eq__(self, other):
        return isinstance(other, Handle) and other.value == self.value

    def __hash__(self):
        return hash(self.value)


class _EnumNames:
    """Stands in for a cuda.bindings enum class: each member is its own name."""

    def __getattr__(self, name):
        return name


class _FakeTensorMap:
    def __init__(self, data: bytes):
        self.buffer = ctypes.create_string_buffer(data, len(data))

    def getPtr(self):
        return ctypes.addressof(self.buffer)


class FakeDriver:
    """Just enough of cuda.bindings.driver for the runtime's loading and launching code.
    Records every call; reads the kernel parameters of each launch out of memory.

    ``devices`` devices, each with a primary context (``primary_of(d)``); other contexts
    (``Handle(0x2000)``, ...) are on device 0 unless ``ctx_device`` says otherwise.  Streams made
    by cuStreamCreate or listed in ``stream_ctx`` belong to a context; as the real driver does, a
    launch on a stream of another context than the current one is refused."""
    CUresult, CUdevice_attribute, CUfunction_attribute = CUresult, CUdevice_attribute, CUfunction_attribute
    CUpointer_attribute = CUpointer_attribute
    CUstream = Handle
    CUtensorMapDataType = CUtensorMapInterleave = CUtensorMapSwizzle = _EnumNames()
    CUtensorMapL2promotion = CUtensorMapFloatOOBfill = _EnumNames()
    cuuint64_t = cuuint32_t = int

    def __init__(self, cc=(9, 0), version=13000, optin=232448, max_threads=1024, static_shared=0, devices=1):
        self.devices, self.ctx_device, self.stream_ctx, self.pointer_device = devices, {}, {}, {}
        self.cc_of = {}                  # device ordinal -> compute capability, where not cc
        for d in range(devices):
            self.ctx_device[int(self.primary_of(d))] = d
        self.cc, self.version, self.optin = cc, version, optin
        self.max_threads, self.static_shared = max_threads, static_shared
        self.calls, self.launches, self.modules, self.func_attrs, self.symbols = [], [], [], {}, []
        self.module_ctx = {}             # module number -> the context that loaded it
        self.param_sizes = None          # byte sizes of the parameters to read back at launch
        self.fail = {}                   # call name -> CUresult to return
        self.memory = {}                 # address -> ctypes buffer
        self.tls = threading.local()
        self.primary = Handle(0x1000)
        self.tensor_maps = []            # the arguments of each cuTensorMapEncodeTiled call

    def _r(self, name, *values):
        self.calls.append(name)
        err = self.fail.get(name, CUresult.CUDA_SUCCESS)
        return (err, *values) if not err else (err, *[None] * len(values))

    def cuInit(self, flags):
        return self._r("cuInit")

    def cuDeviceGetCount(self):
        return self._r("cuDeviceGetCount", self.devices)

    @staticmethod
    def primary_of(device):
        return Handle(0x1000 + (device << 20))

    def cuDriverGetVersion(self):
        return self._r("cuDriverGetVersion", self.version)

    def cuCtxGetCurrent(self):
        return self._r("cuCtxGetCurrent", getattr(self.tls, "ctx", Handle(0)))

    def cuCtxSetCurrent(self, ctx):
        self.tls.ctx = ctx
        return self._r("cuCtxSetCurrent")

    def cuCtxGetDevice(self):
        ctx = int(getattr(self.tls, "ctx", Handle(0)))
        if not ctx:
            return (CUresult.CUDA_ERROR_INVALID_CONTEXT, None)
        return self._r("cuCtxGetDevice", self.ctx_device.get(ctx, 0))

    def cuCtxPushCurrent(self, ctx):
        self.tls.stack = getattr(self.tls, "stack", []) + [getattr(self.tls, "ctx", Handle(0))]
        self.tls.ctx = ctx
        return self._r("cuCtxPushCurrent")

    def cuCtxPopCurrent(self):
        self.tls.ctx = self.tls.stack.pop()
        return self._r("cuCtxPopCurrent", Handle(0))

    def cuDeviceGet(self, ordinal):
        return self._r("cuDeviceGet", ordinal)

    def cuDevicePrimaryCtxRetain(self, dev):
        return self._r("cuDevicePrimaryCtxRetain", self.primary_of(int(dev)))

    def cuStreamCreate(self, flags):
        handle = 0x5000 + len(self.stream_ctx)
        self.stream_ctx[handle] = self.tls.ctx
        return self._r("cuStreamCreate", Handle(handle))

    def cuStreamGetCtx(self, stream):
        if int(stream) not in self.stream_ctx:
            return (CUresult.CUDA_ERROR_INVALID_HANDLE, None)
        return self._r("cuStreamGetCtx", self.stream_ctx[int(stream)])

    def cuPointerGetAttribute(self, attr, ptr):
        assert attr == CUpointer_attribute.CU_POINTER_ATTRIBUTE_CONTEXT
        for (lo, hi), device in self.pointer_device.items():
            if lo <= ptr < hi:
                return self._r("cuPointerGetAttribute", self.primary_of(device))
        return (CUresult.CUDA_ERROR_INVALID_VALUE, None)

    def cuDeviceGetAttribute(self, attr, dev):
        cc = self.cc_of.get(int(dev), self.cc)
        # (cc major/minor, opt-in shared memory; registers per block, SMs, warp size, clocks, bus width)
        values = {75: cc[0], 76: cc[1], 97: self.optin, 12: 65536, 16: 132, 10: 32, 13: 1980000, 36: 2619000, 37: 6144}
        return self._r("cuDeviceGetAttribute", values[int(attr)])

    def cuModuleLoadData(self, image):
        self.modules.append(bytes(image))
        self.module_ctx[len(self.modules)] = int(getattr(self.tls, "ctx", Handle(0)))
        return self._r("cuModuleLoadData", Handle(len(self.modules)))

    def cuModuleGetFunction(self, module, name):
        self.symbols.append(name)
        return self._r("cuModuleGetFunction", Handle(1000 + int(module)))

    def cuFuncGetAttribute(self, attr, fn):
        value = {0: self.max_threads, 1: self.static_shared}[int(attr)]
        return self._r("cuFuncGetAttribute", value)

    def cuFuncSetAttribute(self, fn, attr, value):
        self.func_attrs[int(attr)] = value
        return self._r("cuFuncSetAttribute")

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        if not int(getattr(self.tls, "ctx", Handle(0))):
            return (CUresult.CUDA_ERROR_INVALID_CONTEXT,)
        if f is None or self.module_ctx.get(int(f) - 1000) != int(self.tls.ctx):
            # as the real driver does (seen on the H200): a function only runs in its module's context
            return (CUresult.CUDA_ERROR_INVALID_HANDLE,)
        if stream is not None and int(stream) in self.stream_ctx and int(self.stream_ctx[int(stream)]) != int(self.tls.ctx):
            return (CUresult.CUDA_ERROR_INVALID_HANDLE,)     # a stream of another context
        args = None
        if self.param_sizes is not None:   # read the arguments back through the void** array
            argv = (ctypes.c_void_p * max(1, len(self.param_sizes))).from_address(params)
            args = [ctypes.string_at(argv[i], n) for i, n in enumerate(self.param_sizes)]
        self.launches.append(dict(f=f, grid=(gx, gy, gz), block=(bx, by, bz), shared=shared,
                                  stream=stream, args=args, ctx=self.tls.ctx,
                                  device=self.ctx_device.get(int(self.tls.ctx), 0), cooperative=extra is None))
        return self._r("cuLaunchKernel")

    cooperative_blocks = 264                 # (an H200: 132 SMs, two such blocks each)

    def cuLaunchCooperativeKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params):
        if gx * gy * gz > self.cooperative_blocks:
            return (CUresult.CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,)
        return self.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, params, None)

    def cuGetErrorName(self, err):
        return (CUresult.CUDA_SUCCESS, CUresult(err).name.encode())

    def cuGetErrorString(self, err):
        return (CUresult.CUDA_SUCCESS, f"fake message for {int(err)}".encode())

    def cuCtxSynchronize(self):
        return self._r("cuCtxSynchronize")

    def cuTensorMapEncodeTiled(self, dtype, rank, address, dims, strides, box, element_strides, interleave, swizzle,
                               l2_promotion, fill):
        call = dict(dtype=dtype, rank=rank, address=address, dims=list(dims), strides=list(strides), box=list(box),
                    element_strides=list(element_strides), interleave=interleave, swizzle=swizzle,
                    l2_promotion=l2_promotion, fill=fill)
        self.tensor_maps.append(call)
        return self._r("cuTensorMapEncodeTiled", _FakeTensorMap(fake_tensor_map(call)))

    # memory: host buffers stand in for device memory
    def cuMemAlloc(self, n):
        buf = ctypes.create_string_buffer(n + 256)
        addr = (ctypes.addressof(buf) + 255) // 256 * 256   # like cuMemAlloc: 256-byte aligned
        self.memory[addr] = buf
        self.pointer_device[(addr, addr + n)] = self.ctx_device.get(int(self.tls.ctx), 0)
        return self._r("cuMemAlloc", addr)

    def cuMemFree(self, ptr):
        del self.memory[int(ptr)]
        return self._r("cuMemFree")

    def cuMemcpyHtoD(self, dst, src, n):
        ctypes.memmove(dst, src, n)
        return self._r("cuMemcpyHtoD")

    def cuMemcpyDtoH(self, dst, src, n):
        ctypes.memmove(dst, src, n)
        return self._r("cuMemcpyDtoH")


def fake_tensor_map(call: dict) -> bytes:
    """The 128 bytes FakeDriver encodes a tensor map as: a digest of the call's arguments."""
    return hashlib.sha256(repr(sorted(call.items())).encode()).digest() * 4


def install_fake_driver(monkeypatch, drv, rt=rt):
    """Make *drv* the runtime's driver (of the module *rt*: this checkout's, or a built package's
    copy), with fresh caches and no native launcher or torch state."""
    for name, value in [("_cuda", drv), ("_available", True), ("_get_ctx", rt._bootstrap_get_ctx),
                        ("_launch_kernel", None), ("_primary", {}), ("_device_info", {}),
                        ("_driver_version", None), ("_native", None), ("_native_file", None),
                        ("_native_status", "none registered"), ("_tensor_type", None),
                        ("_tensor_dtypes", rt._TensorDtypes()), ("_TENSOR_INFO", [None, {}, None, ()]),
                        ("_TENSOR_MAPS", {})]:
        monkeypatch.setattr(rt, name, value)
    return drv


@pytest.fixture
def fake(monkeypatch):
    """Install a FakeDriver as the runtime's driver (fresh caches)."""
    return install_fake_driver(monkeypatch, FakeDriver())


CUBIN = b"\x7fELF fake cubin"
PTX90 = ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k() { ret; }\n"
ADD_PARAMS = [("x", "*fp32:16"), ("y", "*fp32:16"), ("out", "*fp32:16"), ("n", "i32")]


def add_kernel(**kw):
    kw.setdefault("images", {"sm_90": CUBIN})
    return rt.Kernel("add_kernel", ADD_PARAMS, kw.pop("num_warps", 4), kw.pop("shared", 0), **kw)


class FakeCAI:
    def __init__(self, ptr, typestr):
        self.__cuda_array_interface__ = {"shape": (4,), "typestr": typestr, "data": (ptr, False), "version": 3}


class FakeTorchDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"

    __repr__ = __str__


class FakeTensor:
    def __init__(self, ptr, dtype, is_cuda=True, device=0):
        self._ptr, self.dtype, self.is_cuda, self.device = ptr, FakeTorchDtype(dtype), is_cuda, \
            f"cuda:{device}" if is_cuda else "cpu"
        self._device = device if is_cuda else -1

    def data_ptr(self):
        return self._ptr

    def get_device(self):
        return self._device


# --------------------------------------------------------------------------- types

@pytest.mark.parametrize("text, expected", [
    ("i32", (False, "i32", 1)), ("*fp32", (True, "fp32", 1)), ("*fp32:16", (True, "fp32", 16)),
    ("*i1", (True, "i1", 1)), ("bf16", (False, "bf16", 1)), ("u64", (False, "u64", 1)),
    ("*fp16:8", (True, "fp16", 8)), ("i32:16", (False, "i32", 16)), (" *u8 ", (True, "u8", 1)),
])
def test_parse_type(text, expected):
    t = rt.parse_type(text)
    assert (t.is_pointer, t.dtype, t.align) == expected
    assert rt.parse_type(str(t)) == t
    with pytest.raises(dataclasses_frozen_error()):
        t.dtype = "i8"


def dataclasses_frozen_error():
    import dataclasses
    return dataclasses.FrozenInstanceError


@pytest.mark.parametrize("text, message", [
    ("f32", "unknown type 'f32'"), ("", "unknown type ''"), ("*", "unknown type"),
    ("**fp32", "unknown type"), ("int", "unknown type"), ("*fp32:16:2", "unknown type"),
    ("*fp32:3", "power of two"), ("*fp32:0", "power of two"), ("fp32:16", "only to pointers and integer"),
    (None, "unknown type None"), ("FP32", "unknown type"),
])
def test_parse_type_rejects_junk(text, message):
    with pytest.raises(ValueError, match=message):
        rt.parse_type(text)


def test_str_of_param_type():
    assert str(rt.parse_type("*fp32:16")) == "*fp32:16"
    assert str(rt.parse_type("*fp32:1")) == "*fp32"
    assert str(rt.parse_type("i64")) == "i64"


@pytest.mark.parametrize("text, one", [("i32:1", True), ("u64:1", True), ("i32:01", True), ("i32", False),
                                       ("i32:16", False), ("*fp32:1", False), ("fp32:1", False), ("i1:1", False)])
def test_an_integer_promised_to_be_one(text, one):
    """Triton AOT's 'i32:1': the value is 1 (on a pointer or a float ':1' promises nothing)."""
    t = rt.parse_type(text)
    assert t.one == one and t.align == (16 if text.endswith(":16") else 1)
    assert str(t).endswith(":1") == one and rt.parse_type(str(t)) == t


def test_a_launch_checks_an_argument_built_as_one_and_does_not_pass_it():
    """i32:1 parameters are compiled in: the launcher packs only the others, and refuses any other
    value (numpy's 1 included as 1) before it looks for a GPU."""
    params = [("x", "*fp32:16"), ("stride", "i32:1"), ("n", "i32")]
    k = rt.Kernel("k", params, 4, 0, {"sm_90": b"not a cubin"})
    assert "if type(a1) is not int or a1 != 1: _not_one(_params, 1, a1)" in k.launcher_source
    assert ", a0, a2):" in k.launcher_source                   # the native path gets x and n only
    for bad in (2, 0, True, 1.0, "1", None):
        with pytest.raises(ValueError, match=r"parameter 'stride' was built as i32:1 \(the value 1 is compiled "
                                             r"into the kernel\); got " + re.escape(repr(bad))):
            k.launch(1, [0x1000, bad, 8])
    assert rt._not_one(k.params, 1, np.int64(1)) is None
    assert k._spec[2] == b"P\x10i\x01"                          # (the native kinds: x and n)
    assert len(k._new_slot()[2]) == 2                           # (two argument slots)


@pytest.mark.parametrize("value, expected", [
    (True, "i1"), (False, "i1"), (0, "i32"), (2**31 - 1, "i32"), (-2**31, "i32"), (2**31, "i64"),
    (-2**31 - 1, "i64"), (2**63 - 1, "i64"), (2**63, "u64"), (2**64 - 1, "u64"), (1.5, "fp32"),
    (np.float64(1), "fp64"), (np.float32(1), "fp32"), (np.float16(1), "fp16"), (np.int8(1), "i8"),
    (np.uint16(1), "u16"), (np.int64(1), "i64"), (np.bool_(True), "i1"),
    (FakeCAI(0x1000, "<f4"), "*fp32"), (FakeTensor(0x1000, "bfloat16"), "*bf16"),
    (FakeTensor(0x1000, "int64"), "*i64"), (FakeTensor(0x1000, "bool"), "*i1"),
    (FakeTensor(0x1000, "float8_e4m3fn"), "*fp8e4nv"), (FakeTensor(0x1000, "float8_e5m2"), "*fp8e5"),
])
def test_infer_type(value, expected):
    assert rt.infer_type(value) == expected


@pytest.mark.parametrize("value, message", [
    (2**64, "does not fit in 64 bits"), (-2**63 - 1, "does not fit in 64 bits"),
    (np.zeros(3, np.float32), "host \\(CPU\\) array"), ("x", "expected a device pointer.*got str"),
    (FakeCAI(0x1000, "<c8"), "cannot infer the element type of FakeCAI \\(dtype <c8\\)"),
    (FakeTensor(0x1000, "float8_e4m3fnuz"), "dtype float8_e4m3fnuz"), (np.complex64(1), "unsupported numpy scalar"),
    (FakeTensor(0x1000, "float32", is_cuda=False), "tensor on cpu"), (None, "got NoneType"),
])
def test_infer_type_errors(value, message):
    with pytest.raises(TypeError, match=message):
        rt.infer_type(value)


def test_argument_errors_are_also_the_exceptions_triton_raises():
    with pytest.raises(OverflowError, match="integer argument 18446744073709551616 does not fit in 64 bits"):
        rt.infer_type(2**64)
    with pytest.raises(ValueError, match="tensor on cpu; it must be on a CUDA device"):
        rt.infer_type(FakeTensor(0x1000, "float32", is_cuda=False))


@pytest.mark.parametrize("typestr, dtype", [
    ("<f4", "fp32"), ("<i4", "i32"), ("|b1", "i1"), ("<f2", "fp16"), ("<f8", "fp64"), ("|u1", "u8"),
    ("|i1", "i8"), ("<i2", "i16"), ("<u2", "u16"), ("<u4", "u32"), ("<i8", "i64"), ("<u8", "u64"),
    (">f4", None), ("<V2", None), ("<c8", None),
])
def test_pointer_info_cuda_array_interface(typestr, dtype):
    assert rt.pointer_info(FakeCAI(0xABC00, typestr)) == (0xABC00, dtype)


@pytest.mark.parametrize("name, dtype", [
    ("float32", "fp32"), ("float16", "fp16"), ("bfloat16", "bf16"), ("float64", "fp64"), ("int8", "i8"),
    ("int16", "i16"), ("int32", "i32"), ("int64", "i64"), ("uint8", "u8"), ("uint16", "u16"),
    ("uint32", "u32"), ("uint64", "u64"), ("bool", "i1"), ("float8_e5m2", "fp8e5"), ("float8_e4m3fn", "fp8e4nv"),
    ("float8_e4m3fnuz", None), ("complex64", None),
])
def test_pointer_info_torch_like(name, dtype):
    assert rt.pointer_info(FakeTensor(0x7000, name)) == (0x7000, dtype)


def test_pointer_info_other_objects():
    assert rt.pointer_info(0x1234) == (0x1234, None)
    assert rt.pointer_info(np.uint64(0x1234)) == (0x1234, None)

    class NumpyDtypeOwner:   # data_ptr() with a numpy dtype (not torch)
        dtype = np.dtype(np.int16)

        def data_ptr(self):
            return 64
    assert rt.pointer_info(NumpyDtypeOwner()) == (64, "i16")
    with pytest.raises(TypeError, match="tensor on cpu; it must be on a CUDA device"):
        rt.pointer_info(FakeTensor(0x1000, "float32", is_cuda=False))
    with pytest.raises(TypeError, match="host \\(CPU\\) array \\(ndarray\\)"):
        rt.pointer_info(np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="got float"):
        rt.pointer_info(1.0)


# --------------------------------------------------------------------------- argument checks

def test_argument_count(no_driver):
    k = add_kernel()
    with pytest.raises(TypeError, match=r"add_kernel\(\) takes 4 runtime arguments \(x, y, out, n\) but 3 were given"):
        k.launch(1, [0x1000, 0x1000, 0x1000])
    with pytest.raises(TypeError, match="but 5 were given"):
        k.launch(1, (0x1000,) * 4 + (1,))
    with pytest.raises(TypeError, match="args must be a sequence"):
        k.launch(1, 5)
    with pytest.raises(TypeError, match="takes 4 runtime arguments"):
        k[1](0x1000)


def test_pointer_dtype_checked(no_driver):
    k = add_kernel()
    good = FakeCAI(0x1000, "<f4")
    with pytest.raises(TypeError, match="parameter 'x' expects \\*fp32, got a float64 array"):
        k.launch(1, [FakeCAI(0x1000, "<f8"), good, good, 4])
    with pytest.raises(TypeError, match="parameter 'out' expects \\*fp32, got a bfloat16 array"):
        k.launch(1, [good, good, FakeTensor(0x1000, "bfloat16"), 4])
    with pytest.raises(TypeError, match="parameter 'y' expects \\*fp32, got a <c8 array"):
        k.launch(1, [good, FakeCAI(0x1000, "<c8"), good, 4])
    with pytest.raises(TypeError, match="parameter 'y' \\(\\*fp32:16\\): expected a device pointer.*got str"):
        k.launch(1, [good, "y", good, 4])
    with pytest.raises(TypeError, match="parameter 'x' \\(\\*fp32:16\\): got a host \\(CPU\\) array"):
        k.launch(1, [np.zeros(4, np.float32), good, good, 4])
    with pytest.raises(TypeError, match="parameter 'x' .*got bool"):
        k.launch(1, [True, good, good, 4])
    with pytest.raises(DriverTouched):   # everything valid: the launch reaches the driver
        k.launch(1, [good, FakeTensor(0x2000, "float32"), 0x3000, 4])


def test_alignment_promise_checked(no_driver):
    k = add_kernel()
    with pytest.raises(ValueError, match="parameter 'y' is declared \\*fp32:16 but address 0x1004 is not "
                                         "16-byte aligned"):
        k.launch(1, [0x1000, 0x1004, 0x1000, 4])
    with pytest.raises(ValueError, match="parameter 'x' is declared \\*fp32:16 but address 0x2008"):
        k.launch(1, [FakeCAI(0x2008, "<f4"), 0x1000, 0x1000, 4])
    with pytest.raises(ValueError, match="parameter 'out' .* address -0x10 is not a 64-bit address|"
                                         "parameter 'out' \\(\\*fp32:16\\): -16 is not a 64-bit address"):
        k.launch(1, [0x1000, 0x1000, -16, 4])
    with pytest.raises(ValueError, match="is not a 64-bit address"):
        k.launch(1, [0x1000, 0x1000, 2**64, 4])
    unaligned = rt.Kernel("k", [("x", "*fp32")], 4, 0, {"sm_90": CUBIN})
    with pytest.raises(DriverTouched):   # no promise, nothing to check
        unaligned.launch(1, [0x1004])


@pytest.mark.parametrize("dtype, value, error, message", [
    ("i32", 2**31, OverflowError, "parameter 'v' \\(i32\\): 2147483648 is out of range for i32"),
    ("i32", -2**31 - 1, OverflowError, "out of range for i32"),
    ("i32", 1.5, TypeError, "parameter 'v' expects i32, got float 1.5"),
    ("i32", "3", TypeError, "expects i32, got str"),
    ("i64", 2**63, OverflowError, "out of range for i64"),
    ("u32", -1, OverflowError, "out of range for u32"),
    ("u8", 256, OverflowError, "out of range for u8"),
    ("i8", 128, OverflowError, "out of range for i8"),
    ("i16", -32769, OverflowError, "out of range for i16"),
    ("fp32", 1e39, OverflowError, "out of range for fp32"),
    ("fp32", "1.0", TypeError, "expects fp32, got str"),
    ("fp16", 70000.0, OverflowError, "out of range for fp16"),
    ("bf16", 1e39, OverflowError, "out of range for bf16"),
    ("bf16", "x", TypeError, "expects bf16, got str"),
    ("i1", 2, TypeError, "expects i1 \\(a bool\\), got int 2"),
    ("i1", 0.0, TypeError, "expects i1"),
    ("i32:16", 17, ValueError, "declared i32:16 but 17 is not divisible by 16"),
])
def test_scalar_checks(no_driver, dtype, value, error, message):
    k = rt.Kernel("k", [("v", dtype)], 4, 0, {"sm_90": CUBIN})
    with pytest.raises(error, match=message):
        k.launch(1, [value])


@pytest.mark.parametrize("dtype, value", [
    ("i32", 2**31 - 1), ("i32", np.int64(5)), ("u32", 2**32 - 1), ("fp32", 3), ("fp32", float("inf")),
    ("fp32", float("nan")), ("fp64", 1e300), ("fp16", 65504.0), ("bf16", -2), ("i1", True), ("i1", 0),
    ("i1", np.bool_(False)), ("i32:16", 32), ("u64", 2**64 - 1), ("i8", -128),
])
def test_scalar_accepted(no_driver, dtype, value):
    k = rt.Kernel("k", [("v", dtype)], 4, 0, {"sm_90": CUBIN})
    with pytest.raises(DriverTouched):
        k.launch(1, [value])


@pytest.mark.parametrize("grid, error, message", [
    (0, ValueError, "grid dimension 0 must be in 1..2147483647, got 0"),
    (-1, ValueError, "grid dimension 0 must be in"),
    ((0,), ValueError, "got 0 \\(grid \\(0,\\)\\)"),
    ((1, 0), ValueError, "grid dimension 1 must be in 1..65535, got 0"),
    ((1, 65536), ValueError, "grid dimension 1 must be in 1..65535"),
    ((1, 1, 65536), ValueError, "grid dimension 2"),
    (2**31, ValueError, "grid dimension 0 must be in 1..2147483647"),
    ((1, 2, 3, 4), ValueError, "grid must have 1 to 3 dimensions, got \\(1, 2, 3, 4\\)"),
    ((), ValueError, "grid must have 1 to 3 dimensions"),
    (1.5, TypeError, "grid must be an int or a tuple of 1 to 3 ints, got float 1.5"),
    ("4", TypeError, "grid must be an int or a tuple"),
    (None, TypeError, "got NoneType"),
    (True, TypeError, "grid must be an int or a tuple of 1 to 3 ints, got bool"),
    ((1, True), TypeError, "grid dimension 1 must be an int, got bool"),
    ((2.0,), TypeError, "grid dimension 0 must be an int, got float"),
])
def test_bad_grids(no_driver, grid, error, message):
    with pytest.raises(error, match=message):
        add_kernel().launch(grid, [0x1000] * 3 + [4])


def test_stream_type_checked(no_driver):
    with pytest.raises(TypeError, match="stream must be None, an int handle, a CUstream or an object"):
        add_kernel().launch(1, [0x1000] * 3 + [4], stream="default")


# --------------------------------------------------------------------------- launching (fake driver)

def test_launch_packs_arguments_by_c_type(fake):
    params = [("p", "*fp32:16"), ("a", "i1"), ("b", "i8"), ("c", "u8"), ("d", "i16"), ("e", "u16"),
              ("f", "fp16"), ("g", "bf16"), ("h", "i32"), ("i", "u32"), ("j", "fp32"), ("k", "i64"),
              ("l", "u64"), ("m", "fp64")]
    k = rt.Kernel("many", params, 8, 0, {"sm_90": CUBIN})
    fake.param_sizes = [8, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 8, 8, 8]
    values = [0xDEAD0, True, -5, 250, -300, 60000, 1.5, -2.0, -123456, 2**32 - 1, 0.25, -2**40, 2**64 - 2, 1e300]
    k.launch((2, 3, 4), values)
    (launch,) = fake.launches
    assert launch["grid"] == (2, 3, 4) and launch["block"] == (256, 1, 1) and launch["shared"] == 0
    assert launch["stream"] is None
    expected = [struct.pack("<Q", 0xDEAD0), b"\x01", struct.pack("<b", -5), bytes([250]),
                struct.pack("<h", -300), struct.pack("<H", 60000), struct.pack("<e", 1.5),
                b"\x00\xc0",  # bf16(-2.0) = 0xC000
                struct.pack("<i", -123456), struct.pack("<I", 2**32 - 1), struct.pack("<f", 0.25),
                struct.pack("<q", -2**40), struct.pack("<Q", 2**64 - 2), struct.pack("<d", 1e300)]
    assert launch["args"] == expected


def test_bf16_rounding():
    assert rt._bf16_bits(1.0) == 0x3F80
    assert rt._bf16_bits(-2.0) == 0xC000
    assert rt._bf16_bits(1.0 + 2**-8) == 0x3F80          # tie: rounds to even
    assert rt._bf16_bits(1.0 + 3 * 2**-8) == 0x3F82      # tie: rounds to even (up)
    assert rt._bf16_bits(float("inf")) == 0x7F80
    assert rt._bf16_bits(float("nan")) == 0x7FC0


def test_launch_streams_and_grids(fake):
    k = add_kernel()
    fake.param_sizes = [8, 8, 8, 4]
    args = [0x1000, 0x2000, 0x3000, 7]

    class TorchStream:
        cuda_stream = 0x51

    class CupyStream:
        ptr = 0x52

    class ProtocolStream:
        def __cuda_stream__(self):
            return (0, 0x53)
    for stream, handle in [(None, None), (0x50, 0x50), (TorchStream(), 0x51), (CupyStream(), 0x52),
                           (ProtocolStream(), 0x53), (Handle(0x54), 0x54)]:
        k.launch([5, 6], args, stream=stream)
        assert fake.launches[-1]["stream"] == handle
        assert fake.launches[-1]["grid"] == (5, 6, 1)
    k[np.int64(9)](*args)
    assert fake.launches[-1]["grid"] == (9, 1, 1)
    assert fake.launches[-1]["args"] == [struct.pack("<Q", 0x1000), struct.pack("<Q", 0x2000),
                                         struct.pack("<Q", 0x3000), struct.pack("<i", 7)]


def test_module_loaded_once_per_context(fake):
    k = add_kernel()
    for _ in range(100):
        k.launch(1, [0x1000] * 3 + [1])
    assert len(fake.modules) == 1 and len(fake.launches) == 100
    assert fake.calls.count("cuDevicePrimaryCtxRetain") == 1    # no context was current: retained device 0's
    assert k.loaded_images == ["sm_90"]
    # Another thread starts without a current context: it gets the primary one, same module.
    t = threading.Thread(target=k.launch, args=(1, [0x1000] * 3 + [1]))
    t.start()
    t.join()
    assert len(fake.modules) == 1 and len(fake.launches) == 101
    # A different current context (another device / a user context) loads the module again.
    fake.tls.ctx = Handle(0x2000)
    k.launch(1, [0x1000] * 3 + [1])
    assert len(fake.modules) == 2 and fake.launches[-1]["ctx"] == Handle(0x2000)
    assert fake.launches[-1]["f"] != fake.launches[0]["f"]


def test_launches_do_not_query_the_context_until_it_changes(fake):
    k = add_kernel()
    k.launch(1, [0x1000] * 3 + [1])
    before = fake.calls.count("cuCtxGetCurrent")
    for _ in range(50):
        k.launch(1, [0x1000] * 3 + [1])
    assert fake.calls.count("cuCtxGetCurrent") == before           # the hot path asks nothing
    fake.tls.ctx = Handle(0x3000)                                   # the app switched contexts
    k.launch(1, [0x1000] * 3 + [1])
    assert fake.launches[-1]["ctx"] == Handle(0x3000) and len(fake.modules) == 2
    assert len(fake.launches) == 52                                 # the refused try was not a launch


def test_current_context_is_used(fake):
    fake.tls.ctx = Handle(0x7777)   # e.g. made current by PyTorch
    add_kernel().launch(1, [0x1000] * 3 + [1])
    assert "cuDevicePrimaryCtxRetain" not in fake.calls
    assert fake.launches[0]["ctx"] == Handle(0x7777)


def test_driver_failure_raises_cuda_error(fake):
    k = add_kernel()
    fake.fail["cuLaunchKernel"] = CUresult.CUDA_ERROR_INVALID_HANDLE
    with pytest.raises(rt.CudaError, match="cuLaunchKernel\\('add_kernel', grid=\\(3, 1, 1\\), block=128\\) "
                                           "failed: CUDA_ERROR_INVALID_HANDLE: fake message for 400") as info:
        k.launch(3, [0x1000] * 3 + [1])
    assert info.value.name == "CUDA_ERROR_INVALID_HANDLE" and info.value.result == 400
    assert fake.calls.count("cuLaunchKernel") == 1        # the thread's first launch: in the slow path
    with pytest.raises(rt.CudaError, match="CUDA_ERROR_INVALID_HANDLE"):
        k.launch(3, [0x1000] * 3 + [1])
    assert fake.calls.count("cuLaunchKernel") == 3        # the hot path's, and one retry in the slow path
    fake.fail["cuLaunchKernel"] = CUresult.CUDA_ERROR_INVALID_VALUE
    with pytest.raises(rt.CudaError, match="CUDA_ERROR_INVALID_VALUE"):
        k.launch(3, [0x1000] * 3 + [1])
    assert fake.calls.count("cuLaunchKernel") == 4        # any other error: no retry
    fake.fail = {"cuModuleLoadData": CUresult.CUDA_ERROR_INVALID_IMAGE}
    k2 = add_kernel()
    with pytest.raises(rt.CudaError, match="cuModuleLoadData\\(add_kernel, sm_90\\) failed: CUDA_ERROR_INVALID_IMAGE"):
        k2.launch(1, [0x1000] * 3 + [1])
    fake.fail = {}
    k2.launch(1, [0x1000] * 3 + [1])   # a failed load is retried, not cached
    assert k2.loaded_images == ["sm_90"]


def test_driver_unavailable_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(rt, "_available", False)
    monkeypatch.setattr(rt, "_unavailable_reason", "RuntimeError: no libcuda")
    monkeypatch.setattr(rt, "_get_ctx", rt._bootstrap_get_ctx)
    with pytest.raises(rt.CudaError, match="no usable CUDA driver \\(RuntimeError: no libcuda\\)"):
        add_kernel().launch(1, [0x1000] * 3 + [1])
    assert rt.driver_available() is False


# --------------------------------------------------------------------------- images

def test_image_choice(fake):
    both = {"sm_80": CUBIN + b"80", "sm_90": CUBIN + b"90", "ptx": PTX90}
    k = rt.Kernel("k", [], 4, 0, both)
    assert k.select_image((9, 0), (13, 0)) == "sm_90"
    assert k.select_image((8, 0), (12, 4)) == "sm_80"
    assert k.select_image((10, 0), (13, 0)) == "ptx"                 # newer GPU: JIT the PTX
    assert k.select_image((8, 6), (13, 0)) == "sm_80"                # PTX is for sm_90: older cubin of same major
    with pytest.raises(rt.KernelLoadError, match="PTX ISA 9.0 needs a CUDA 13.0\\+ driver"):
        k.select_image((10, 0), (12, 8))
    k.launch(1, [])
    assert fake.modules == [CUBIN + b"90"]


def test_the_architecture_specific_cubin_is_preferred_on_its_device(fake):
    """Built for sm_90 and sm_90a (either order): compute capability 9.0 loads sm_90a (wgmma)."""
    for images in ({"sm_90": CUBIN + b"90", "sm_90a": CUBIN + b"90a"}, {"sm_90a": CUBIN + b"90a", "sm_90": CUBIN + b"90"}):
        k = rt.Kernel("k", [], 4, 0, {**images, "sm_80": CUBIN + b"80", "ptx": PTX90})
        assert k.select_image((9, 0), (13, 0)) == "sm_90a"
        assert k.select_image((8, 0), (13, 0)) == "sm_80"


def test_ptx_only_image_is_jitted_and_nul_terminated(fake):
    k = rt.Kernel("k", [], 4, 0, {"ptx": PTX90.encode()})
    k.launch(1, [])
    assert k.loaded_images == ["ptx"] and fake.modules == [PTX90.encode() + b"\0"]


def test_no_image_fits_lists_what_exists(fake):
    fake.cc, fake.version = (8, 0), 12040
    k = rt.Kernel("k", [], 4, 0, {"sm_90": CUBIN, "sm_90a": CUBIN, "ptx": PTX90})
    with pytest.raises(rt.KernelLoadError) as info:
        k.launch(1, [])
    assert str(info.value) == ("kernel k: no image can run on this device (compute capability 8.0, sm_80; "
                               "CUDA driver 12.4); images: sm_90 (cubin), sm_90a (cubin), "
                               "ptx (PTX ISA 9.0 needs a CUDA 13.0+ driver)")
    fake.version, rt._driver_version = 13000, None
    with pytest.raises(rt.KernelLoadError, match="ptx \\(for sm_90\\)"):
        k.launch(1, [])
    assert fake.modules == []


@pytest.mark.parametrize("isa, needs", [((9, 0), (13, 0)), ((8, 8), (12, 9)), ((8, 7), (12, 8)),
                                        ((8, 5), (12, 5)), ((8, 0), (12, 0)), ((7, 8), (11, 8)),
                                        ((9, 1), (13, 1))])
def test_ptx_isa_to_driver_version(isa, needs):
    assert rt._ptx_needs_driver(isa) == needs


def test_images_from_files_are_read_lazily_and_verified(fake, tmp_path):
    cubin = tmp_path / "k.sm_90.cubin"
    cubin.write_bytes(CUBIN)
    digest = hashlib.sha256(CUBIN).hexdigest()
    k = rt.Kernel("k", [], 4, 0, {"sm_90": str(cubin)}, sha256={"sm_90": digest.upper()})
    cubin.write_bytes(CUBIN + b"tampered")          # changed after construction: still caught
    with pytest.raises(rt.KernelLoadError, match=f"sha256 mismatch for {cubin} \\(image 'sm_90' of kernel k\\): "
                                                 f"expected {digest}, got"):
        k.launch(1, [])
    assert fake.modules == []                       # refused before cuModuleLoadData
    cubin.write_bytes(CUBIN)
    k.launch(1, [])
    assert fake.modules == [CUBIN]


def test_sha256_checked_without_gpu(tmp_path):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(PTX90)
    k = rt.Kernel("k", [], 4, 0, {"ptx": ptx}, sha256={"ptx": "0" * 64})
    with pytest.raises(rt.KernelLoadError, match=f"sha256 mismatch for {ptx}"):
        k.verify()
    with pytest.raises(rt.KernelLoadError, match="cannot read .*missing.cubin"):
        rt.Kernel("k", [], 4, 0, {"sm_90": tmp_path / "missing.cubin"}).verify()
    good = rt.Kernel("k", [], 4, 0, {"ptx": ptx}, sha256={"ptx": hashlib.sha256(PTX90.encode()).hexdigest()})
    good.verify()
    assert good.read_image("ptx") == PTX90.encode()


def test_kernel_constructor_checks():
    with pytest.raises(ValueError, match="num_warps must be an int in 1..32, got 0"):
        rt.Kernel("k", [], 0, 0, {"sm_90": CUBIN})
    with pytest.raises(ValueError, match="shared must be an int"):
        rt.Kernel("k", [], 4, -1, {"sm_90": CUBIN})
    with pytest.raises(ValueError, match="got keys \\['cubin'\\]"):
        rt.Kernel("k", [], 4, 0, {"cubin": CUBIN})
    with pytest.raises(ValueError, match="got keys \\[\\]"):
        rt.Kernel("k", [], 4, 0, {})
    with pytest.raises(ValueError, match="sha256 for unknown images \\['sm_80'\\]"):
        rt.Kernel("k", [], 4, 0, {"sm_90": CUBIN}, sha256={"sm_80": "00"})
    with pytest.raises(ValueError, match="kernel name must be an identifier, got 'a-b'"):
        rt.Kernel("a-b", [], 4, 0, {"sm_90": CUBIN})
    with pytest.raises(ValueError, match="unknown type 'float'"):
        rt.Kernel("k", [("x", "float")], 4, 0, {"sm_90": CUBIN})


def test_large_dynamic_shared_memory_opt_in(fake):
    k = rt.Kernel("k", [], 4, 100 * 1024, {"sm_90": CUBIN})
    k.launch(1, [])
    assert fake.func_attrs == {8: 100 * 1024} and fake.launches[0]["shared"] == 100 * 1024
    small = rt.Kernel("k", [], 4, 48 * 1024, {"sm_90": CUBIN})
    fake.func_attrs = {}
    small.launch(1, [])
    assert fake.func_attrs == {}                  # 48 KiB needs no opt-in
    fake.static_shared = 8 * 1024
    rt.Kernel("k", [], 4, 44 * 1024, {"sm_90": CUBIN}).launch(1, [])
    assert fake.func_attrs == {8: 44 * 1024}      # 44 KiB dynamic + 8 KiB static > 48 KiB: opt in
    too_big = rt.Kernel("k", [], 4, 224 * 1024, {"sm_90": CUBIN})
    with pytest.raises(rt.KernelLoadError, match="needs 229376 bytes of dynamic shared memory \\(\\+8192 static\\) "
                                                 "per block; device 0 \\(sm_90\\) provides at most 232448"):
        too_big.launch(1, [])


def test_too_many_threads_for_the_compiled_kernel(fake):
    fake.max_threads = 512
    with pytest.raises(rt.KernelLoadError, match="num_warps=32 needs 1024 threads per block; the compiled "
                                                 "kernel allows at most 512"):
        rt.Kernel("k", [], 32, 0, {"sm_90": CUBIN}).launch(1, [])


# --------------------------------------------------------------------------- DeviceArray (fake memory)

def test_device_array_roundtrip(fake):
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = rt.DeviceArray.from_numpy(host)
    assert a.shape == (3, 4) and a.dtype == np.float32 and a.nbytes == 48 and a.size == 12
    assert a.ptr % 256 == 0 and a.data_ptr() == a.ptr and len(a) == 3
    np.testing.assert_array_equal(a.to_numpy(), host)
    assert a.__cuda_array_interface__ == {"shape": (3, 4), "typestr": "<f4", "data": (a.ptr, False),
                                          "strides": None, "version": 3}
    assert rt.pointer_info(a) == (a.ptr, "fp32") and rt.infer_type(a) == "*fp32"
    a.copy_from_host(np.ones((3, 4)))               # float64 host data converts
    out = np.empty((3, 4), np.float32)
    assert a.copy_to_host(out) is out and (out == 1).all()
    with pytest.raises(ValueError, match="host array has 5 elements, device array 12"):
        a.copy_from_host(np.ones(5))
    view = a.view_offset(4)
    assert view.ptr == a.ptr + 4 and view.shape == (11,)
    np.testing.assert_array_equal(view.to_numpy(), np.ones(11, np.float32))
    k = add_kernel()
    with pytest.raises(ValueError, match=f"address {view.ptr:#x} is not 16-byte aligned"):
        k.launch(1, [a, view, a, 1])
    with pytest.raises(TypeError, match="parameter 'y' expects \\*fp32, got a int32 array"):
        k.launch(1, [a, rt.DeviceArray(4, "i32"), a, 1])
    assert rt.DeviceArray((2, 2), "fp16").dtype == np.float16
    view.free()                                      # a view frees nothing
    assert list(fake.memory) == [a.ptr]              # (the temporary arrays above were freed)
    ptr = a.ptr
    a.free()
    a.free()                                         # idempotent
    assert ptr not in fake.memory and a.ptr == 0
    empty = rt.DeviceArray(0, np.int32)
    assert empty.ptr == 0 and empty.to_numpy().shape == (0,)


def test_device_array_needs_a_driver(monkeypatch):
    monkeypatch.setattr(rt, "_available", False)
    monkeypatch.setattr(rt, "_unavailable_reason", "RuntimeError: no libcuda")
    with pytest.raises(rt.CudaError, match="no usable CUDA driver"):
        rt.DeviceArray(4, np.float32)


# --------------------------------------------------------------------------- KernelFamily

def spec(block, warps, **extra):
    return {"id": f"BLOCK{block}_w{warps}", "constexprs": {"BLOCK": block}, "num_warps": warps, "shared": 0,
            "symbol": "add_kernel", "images": {"sm_90": CUBIN}, **extra}


@pytest.fixture
def family():
    return rt.KernelFamily("add_kernel", ADD_PARAMS, ["BLOCK"], [spec(64, 4), spec(256, 4), spec(256, 8)])


def test_family_selection(family, fake):
    assert family.specializations == [
        {"id": "BLOCK64_w4", "constexprs": {"BLOCK": 64}, "num_warps": 4, "num_stages": None, "shared": 0,
         "specialized": None},
        {"id": "BLOCK256_w4", "constexprs": {"BLOCK": 256}, "num_warps": 4, "num_stages": None, "shared": 0,
         "specialized": None},
        {"id": "BLOCK256_w8", "constexprs": {"BLOCK": 256}, "num_warps": 8, "num_stages": None, "shared": 0,
         "specialized": None}]
    args = (0x1000, 0x2000, 0x3000, 10)
    family[(1,)](*args, BLOCK=64)                     # one build for BLOCK=64: num_warps may be omitted
    family[2](*args, BLOCK=256, num_warps=8)
    family[3](*args, BLOCK=256, num_warps=4)
    family[4](*args, BLOCK=64, num_warps=4)
    assert [(la["grid"][0], la["block"][0]) for la in fake.launches] == [(1, 128), (2, 256), (3, 128), (4, 128)]
    assert family.kernel(family._specs[0]) is family.kernel(family._specs[0])
    assert len(family._kernels) == 3 and len(fake.modules) == 3


def test_family_loads_the_symbol_and_names_the_kernel(fake):
    """The image's symbol (mangled by the compiler) is what the driver looks up; messages name the
    kernel as the user wrote it."""
    fam = rt.KernelFamily("add_kernel", ADD_PARAMS, ["BLOCK"], [spec(64, 4, symbol="k_add_kernel")])
    fam[(1,)](0, 0, 0, 4, BLOCK=64)
    assert fake.symbols == [b"k_add_kernel"]
    with pytest.raises(TypeError, match=r"^add_kernel\(\) missing 1 required positional argument: 'n'"):
        fam[(1,)](0, 0, 0, BLOCK=64)
    kernel = fam.kernel(fam.select({"BLOCK": 64}))
    assert (kernel.name, kernel.symbol) == ("add_kernel", "k_add_kernel") and "<Kernel add_kernel(" in repr(kernel)
    with pytest.raises(ValueError, match="kernel symbol must be a C identifier, got 'k_\u00e9'"):
        rt.Kernel("add_kernel", ADD_PARAMS, 4, 0, {"sm_90": CUBIN}, symbol="k_\u00e9")


def test_family_callable_grid_gets_meta(family, fake):
    seen = []

    def grid(meta):
        seen.append(dict(meta))
        return (-(-meta["n"] // meta["BLOCK"]),)
    family[grid](0x1000, 0x2000, 0x3000, 1000, BLOCK=256, num_warps=8)
    assert seen == [{"x": 0x1000, "y": 0x2000, "out": 0x3000, "n": 1000, "BLOCK": 256, "num_warps": 8}]
    assert fake.launches[0]["grid"] == (4, 1, 1)


def test_family_errors(family, no_driver):
    args = (0x1000, 0x2000, 0x3000, 10)
    with pytest.raises(rt.SpecializationNotFoundError) as info:
        family[1](*args, BLOCK=128)
    assert str(info.value) == ("add_kernel: no specialization was built for BLOCK=128; built: BLOCK=64, "
                               "num_warps=4; BLOCK=256, num_warps=4; BLOCK=256, num_warps=8")
    assert isinstance(info.value, LookupError)
    with pytest.raises(rt.SpecializationNotFoundError, match="no specialization was built for BLOCK=64, num_warps=8"):
        family[1](*args, BLOCK=64, num_warps=8)
    with pytest.raises(rt.SpecializationNotFoundError, match="several specializations were built for BLOCK=256 "
                                                             "\\(num_warps \\[4, 8\\]\\); pass num_warps="):
        family[1](*args, BLOCK=256)
    # Python itself checks the call, as for the JIT: the launcher has the kernel's signature
    with pytest.raises(TypeError, match="^add_kernel\\(\\) missing 1 required keyword-only argument: 'BLOCK'$"):
        family[1](*args)
    with pytest.raises(TypeError, match="^add_kernel\\(\\) got an unexpected keyword argument 'BLOK'$"):
        family[1](*args, BLOCK=64, BLOK=64)
    with pytest.raises(TypeError, match="^add_kernel\\(\\) got multiple values for argument 'x'$"):
        family[1](*args, x=1, BLOCK=64)
    # the general path (used directly, and for constexprs the launcher cannot take as keywords)
    with pytest.raises(TypeError, match="add_kernel: missing constexpr argument\\(s\\) BLOCK \\(constexprs: BLOCK\\)"):
        family.launch(1, args, {})
    with pytest.raises(TypeError, match="missing constexpr argument\\(s\\) BLOCK; unexpected keyword argument\\(s\\) X"):
        family.launch(1, args, {"X": 1})
    with pytest.raises(rt.SpecializationNotFoundError, match="no specialization was built for BLOCK=\\[64\\]"):
        family[1](*args, BLOCK=[64])               # unhashable: certainly not built
    with pytest.raises(TypeError, match="^add_kernel\\(\\) missing 3 required positional arguments: 'y', 'out', and 'n'$"):
        family[1](0x1000, BLOCK=64)
    with pytest.raises(TypeError, match="^add_kernel\\(\\) takes 4 positional arguments but 5 were given$"):
        family[1](*args, 64)
    with pytest.raises(ValueError, match="parameter 'y' is declared \\*fp32:16 but address 0x1004 is not 16-byte aligned"):
        family[1](0x1000, 0x1004, 0x3000, 10, BLOCK=64)
    with pytest.raises(ValueError, match="grid dimension 0"):
        family[0](*args, BLOCK=64)
    assert family._kernels                         # Kernels were created, nothing was loaded


def test_family_constructor_checks():
    with pytest.raises(ValueError, match="duplicate specialization BLOCK=64, num_warps=4"):
        rt.KernelFamily("k", ADD_PARAMS, ["BLOCK"], [spec(64, 4), spec(64, 4)])
    with pytest.raises(ValueError, match="specialization 'BLOCK64_w4' has constexprs \\['BLOCK'\\], expected \\['B'\\]"):
        rt.KernelFamily("k", ADD_PARAMS, ["B"], [spec(64, 4)])
    with pytest.raises(ValueError, match="unknown type"):
        rt.KernelFamily("k", [("x", "*f32")], ["BLOCK"], [spec(64, 4)])


def test_family_verify(tmp_path):
    path = tmp_path / "BLOCK64_w4.sm_90.cubin"
    path.write_bytes(CUBIN)
    fam = rt.KernelFamily("add_kernel", ADD_PARAMS, ["BLOCK"], [
        spec(64, 4, images={"sm_90": str(path)}, sha256={"sm_90": hashlib.sha256(b"other").hexdigest()})])
    with pytest.raises(rt.KernelLoadError, match="sha256 mismatch for .*BLOCK64_w4.sm_90.cubin"):
        fam.verify()


# --------------------------------------------------------------------------- standalone module

def run_isolated(code: str, tmp_path, block_cuda=False) -> dict:
    """Run ``code`` in a fresh interpreter that sees only a copy of driver.py as _runtime.py."""
    shutil.copy(DRIVER_PY, tmp_path / "_runtime.py")
    prelude = textwrap.dedent("""
        import json, sys
        sys.path.insert(0, {path!r})
        if {block!r}:
            class Block:
                def find_spec(self, name, path=None, target=None):
                    if name == "cuda" or name.startswith("cuda."):
                        raise ImportError("blocked: " + name)
            sys.meta_path.insert(0, Block())
    """).format(path=str(tmp_path), block=block_cuda)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_runs_standalone_without_mytriton(tmp_path):
    info = run_isolated("""
        import _runtime
        k = _runtime.Kernel("k", [("x", "*fp32:16"), ("n", "i32")], 4, 0, {"sm_90": b"x"})
        try:
            k.launch(1, [0x1004, 1])
        except ValueError as e:
            err = str(e)
        print(json.dumps({
            "mytriton": sorted(m for m in sys.modules if m == "mytriton" or m.startswith("mytriton.")),
            "cuda": sorted(m for m in sys.modules if m == "cuda" or m.startswith("cuda.")),
            "numpy": "numpy" in sys.modules, "type": str(_runtime.parse_type("*fp16:16")), "err": err,
        }))
    """, tmp_path)
    assert info == {"mytriton": [], "cuda": [], "numpy": False, "type": "*fp16:16",
                    "err": "parameter 'x' is declared *fp32:16 but address 0x1004 is not 16-byte aligned"}


def test_without_cuda_python_only_launching_fails(tmp_path):
    info = run_isolated("""
        import _runtime
        k = _runtime.Kernel("k", [("n", "i32")], 4, 0, {"sm_90": b"x"})
        try:
            k.launch(1, [1])
        except _runtime.CudaError as e:
            err = str(e)
        print(json.dumps({"available": _runtime.driver_available(), "err": err}))
    """, tmp_path, block_cuda=True)
    assert info["available"] is False
    assert info["err"].startswith("cuInit failed: no usable CUDA driver (cuda-python is not installed "
                                  "(pip install cuda-bindings)")


def test_driver_available_is_false_without_a_gpu(tmp_path):
    """Here cuda.bindings may be installed while no driver is: cuInit raises or fails."""
    info = run_isolated("""
        import _runtime
        first = _runtime.driver_available()
        print(json.dumps({"first": first, "again": _runtime.driver_available(),
                          "reason": _runtime._unavailable_reason}))
    """, tmp_path)
    assert info["first"] == info["again"]
    if not info["first"]:
        assert info["reason"]


def test_source_has_no_project_imports():
    with open(DRIVER_PY) as f:
        source = f.read()
    assert "import mytriton" not in source and "from mytriton" not in source and "from ." not in source


def test_stream_closed_before_use_is_refused_without_a_driver():
    s = rt.Stream.__new__(rt.Stream)
    s._handle = None
    with pytest.raises(ValueError, match="this Stream is closed"):
        rt._stream_handle(s)


def test_family_launchers_are_reused_per_grid_and_bounded():
    fam = rt.KernelFamily("add", ADD_PARAMS, ["BLOCK"], [
        {"id": "B", "constexprs": {"BLOCK": 128}, "num_warps": 4, "shared": 0, "symbol": "add", "images": {}}])
    assert fam[8] is fam[8] and fam[(8, 1)] is fam[(8, 1)] and fam[8] is not fam[(8, 1)]
    for g in range(200):
        fam[g + 1]
    assert len(fam._runs) <= 64
    assert fam[[8]] is not fam[[8]]                  # an unhashable grid still works, uncached


def test_family_fast_path_matches_the_general_path(family, fake):
    """The second launch of a selection takes the generated one-call path: same specialization,
    same packed arguments, same checks as the first (general) one."""
    fake.param_sizes = [8, 8, 8, 4]
    args = (0x1000, 0x2000, 0x3000, 10)
    for _ in range(2):
        family[(5, 2)](*args, BLOCK=256, num_warps=8)
        family[7](*args, BLOCK=64)
    assert [(la["grid"], la["block"][0]) for la in fake.launches] == [((5, 2, 1), 256), ((7, 1, 1), 128)] * 2
    assert fake.launches[0]["args"] == fake.launches[2]["args"]
    with pytest.raises(TypeError, match="BLOKC"):                    # a misspelt keyword, fast table warm
        family[7](*args, BLOKC=64)
    with pytest.raises(ValueError, match="not 16-byte aligned"):
        family[7](0x1004, 0x2000, 0x3000, 10, BLOCK=64)
    with pytest.raises(TypeError, match="missing 2 required positional arguments: 'out' and 'n'"):
        family[7](0x1000, 0x2000, BLOCK=64)
    with pytest.raises(ValueError, match="grid dimension 1 must be in 1..65535"):
        family[(7, 0)](*args, BLOCK=64)
    assert len(fake.launches) == 4


def test_family_launcher_takes_the_kernel_signature(family, fake):
    """Runtime arguments by position or by name, like the JIT; where the generated code uses a
    parameter's name itself, it is generated with names of its own behind a function of the
    kernel's names (tests/test_selection_identity.py has more)."""
    fake.param_sizes = [8, 8, 8, 4]
    family[3](0x1000, 0x2000, 0x3000, 10, BLOCK=64)
    family[3](0x1000, 0x2000, n=10, out=0x3000, BLOCK=64)
    assert fake.launches[0]["args"] == fake.launches[1]["args"]
    assert "def run(x, y, out, n, *, BLOCK, stream=None, num_warps=None):" in family[3].launcher_source
    odd = rt.KernelFamily("odd", [("stream", "*fp32:16"), ("_fn", "i32"), ("type", "i32"), ("x", "i32")],
                          ["_self"], [{"id": "a", "constexprs": {"_self": 1}, "num_warps": 4, "symbol": "odd",
                                       "images": {"sm_90": CUBIN}}])
    fake.param_sizes = [8, 4, 4, 4]
    odd[2](0x1000, 7, 8, 9, _self=1)             # ('_self' is a variable of the generated code)
    plain = rt.KernelFamily("plain", odd.params, ["BLOCK"], [
        {"id": "a", "constexprs": {"BLOCK": 1}, "num_warps": 4, "symbol": "odd", "images": {"sm_90": CUBIN}}])
    plain[2](0x1000, 7, 8, 9, BLOCK=1)
    plain[2](0x1000, x=9, type=8, _fn=7, BLOCK=1)
    # ('stream', a launch option, positional only: no compiled kernel has such a parameter)
    assert "def run(_arg0, /, _fn, type, x, *, BLOCK, stream=None, num_warps=None):" in plain[2].launcher_source
    assert [la["args"] for la in fake.launches[2:]] == [
        [struct.pack("<Q", 0x1000), struct.pack("<i", 7), struct.pack("<i", 8), struct.pack("<i", 9)]] * 3
    with pytest.raises(TypeError, match="^plain\\(\\) missing 1 required positional argument: 'x'$"):
        plain[2](0x1000, 7, 8, BLOCK=1)


def test_family_without_parameters_or_constexprs(fake):
    fam = rt.KernelFamily("noop", [], [], [{"id": "a", "constexprs": {}, "num_warps": 1, "symbol": "noop",
                                            "images": {"sm_90": CUBIN}}])
    for _ in range(2):
        fam[(2, 3)]()
        fam[lambda meta: (meta["num_warps"],)]()
    assert [la["grid"] for la in fake.launches] == [(2, 3, 1), (1, 1, 1)] * 2
    with pytest.raises(TypeError, match="^noop\\(\\) takes 0 positional arguments but 1 was given$"):
        fam[1](5)


def test_family_callable_grid_checks_arguments_like_a_fixed_grid(family, fake):
    grid = lambda meta: (meta["n"] // meta["BLOCK"],)   # noqa: E731
    with pytest.raises(TypeError, match="^add_kernel\\(\\) missing 1 required positional argument: 'n'$"):
        family[grid](0x1000, 0x2000, 0x3000, BLOCK=64)
    with pytest.raises(ValueError, match="grid dimension 0 must be in 1..2147483647, got 0"):
        family[grid](0x1000, 0x2000, 0x3000, 10, BLOCK=64)
    for _ in range(2):                                  # general path, then the generated one
        family[grid](0x1000, 0x2000, 0x3000, 1000, BLOCK=256, num_warps=8)
    assert [la["grid"] for la in fake.launches] == [(3, 1, 1)] * 2


def test_torch_tensors_take_the_inline_path(family, fake, monkeypatch):
    """The first torch.Tensor the runtime sees teaches the launchers its class and dtype objects;
    later launches read data_ptr() inline, with the same dtype, device and alignment checks."""
    monkeypatch.setattr(rt, "_tensor_type", None)
    monkeypatch.setattr(rt, "_tensor_dtypes", rt._TensorDtypes())
    fp32, fp16 = FakeTorchDtype("float32"), FakeTorchDtype("float16")
    Tensor = type("Tensor", (FakeTensor,), {"__module__": "torch"})

    def tensor(ptr, dtype=fp32, is_cuda=True):
        t = Tensor(ptr, "float32", is_cuda)
        t.dtype = dtype
        return t
    fake.param_sizes = [8, 8, 8, 4]
    x, y, out = tensor(0x1000), tensor(0x2000), tensor(0x3000)
    for _ in range(3):
        family[4](x, y, out, 10, BLOCK=64)
    assert rt._tensor_type is Tensor and rt._tensor_dtypes == {fp32: "fp32"}
    assert {la["args"][0] for la in fake.launches} == {struct.pack("<Q", 0x1000)}
    with pytest.raises(TypeError, match="parameter 'y' expects \\*fp32, got a float16 array"):
        family[4](x, tensor(0x2000, fp16), out, 10, BLOCK=64)
    with pytest.raises(TypeError, match="parameter 'y' .*got a tensor on cpu; it must be on a CUDA device"):
        family[4](x, tensor(0x2000, is_cuda=False), out, 10, BLOCK=64)
    with pytest.raises(ValueError, match="parameter 'out' is declared \\*fp32:16 but address 0x3004"):
        family[4](x, y, tensor(0x3004), 10, BLOCK=64)
    assert len(fake.launches) == 3


def test_integer_divisibility_promise_inline(fake):
    fam = rt.KernelFamily("k", [("x", "*fp32:16"), ("n", "i32:16")], [], [
        {"id": "a", "constexprs": {}, "num_warps": 4, "symbol": "k", "images": {"sm_90": CUBIN}}])
    fake.param_sizes = [8, 4]
    fam[1](0x1000, 32)
    fam[1](0x1000, np.int64(48))
    with pytest.raises(ValueError, match="parameter 'n' is declared i32:16 but 40 is not divisible by 16"):
        fam[1](0x1000, 40)
    with pytest.raises(TypeError, match="parameter 'n' expects i32:16, got str '32'"):
        fam[1](0x1000, "32")
    assert [la["args"][1] for la in fake.launches] == [struct.pack("<i", 32), struct.pack("<i", 48)]



# --------------------------------------------------------------------------- tuned dispatch

def tuned_family(choices):
    """Three configs (BLOCK 64 w1, 256 w2, 1024 w8) tuned on the key n."""
    return rt.KernelFamily("add_kernel", ADD_PARAMS, ["BLOCK"], [spec(64, 1), spec(256, 2), spec(1024, 8)],
                           tuning={"key": ["n"], "choices": choices})


@pytest.mark.parametrize("n, chosen", [
    (1000, 64), (10**6, 1024), (10**4, 256),            # exact key values
    (1, 64), (0, 64), (-5, 64), (31622, 256),           # below 1 counts as 1; nearest in log2
    (31623 * 10, 1024), (2 * 10**4, 256), (10**9, 1024),
])
def test_tuned_dispatch_nearest_problem_in_log_space(n, chosen):
    fam = tuned_family([[[1000], 0], [[10**4], 1], [[10**6], 2]])
    assert fam.best(n=n)["constexprs"] == {"BLOCK": chosen}


def test_tuned_dispatch_several_keys_and_ties():
    params = [("x", "*fp32"), ("M", "i32"), ("N", "i32")]
    specs = [spec(64, 4), spec(128, 4), spec(256, 4)]
    fam = rt.KernelFamily("k", params, ["BLOCK"], specs,
                          tuning={"key": ["N", "M"], "choices": [[[16, 16], 0], [[64, 64], 1], [[16, 64], 2]]})
    assert fam.best(M=16, N=16)["id"] == "BLOCK64_w4"
    assert fam.best(M=64, N=16)["id"] == "BLOCK256_w4"        # key order is the tuning's: (N, M)
    assert fam.best(M=32, N=16)["id"] == "BLOCK64_w4"         # equally far from (16,16) and (16,64): the first
    assert fam.best(M=60, N=60)["id"] == "BLOCK128_w4"
    assert fam.best(M=2**20, N=1)["id"] == "BLOCK256_w4"


def test_tuned_dispatch_without_choices_runs_the_first_config_and_best_checks_its_keywords():
    fam = tuned_family([])
    assert fam.best(n=123) == {"id": "BLOCK64_w1", "constexprs": {"BLOCK": 64}, "num_warps": 1,
                               "num_stages": None, "shared": 0, "specialized": None}
    with pytest.raises(TypeError, match=r"add_kernel.best\(\) takes the tuning key n as keywords: missing n; "
                                        r"unexpected m"):
        fam.best(m=3)
    with pytest.raises(TypeError, match="the tuning key argument 'n' must be a number, got str"):
        tuned_family([[[1000], 0]]).best(n="big")
    with pytest.raises(TypeError, match="add_kernel was not tuned at build time"):
        rt.KernelFamily("add_kernel", ADD_PARAMS, ["BLOCK"], [spec(64, 1)]).best(n=3)
    with pytest.raises(ValueError, match="tuning key m is not a runtime parameter"):
        rt.KernelFamily("add_kernel", ADD_PARAMS, ["BLOCK"], [spec(64, 1)], tuning={"key": ["m"], "choices": []})
    with pytest.raises(ValueError, match="malformed tuning choice"):
        tuned_family([[[1000], 7]])


@pytest.mark.parametrize("grid_kind", ["fixed", "callable"])
def test_tuned_launch_without_constexprs_runs_the_choice(fake, grid_kind):
    """fam[grid](*args) with no constexprs launches the config tuned for the nearest problem (its
    block size shows which); explicit constexprs still select directly; a partial set is an error."""
    fam = tuned_family([[[1000], 0], [[10**6], 2]])
    seen = []

    def grid(meta):
        seen.append((meta["BLOCK"], meta["num_warps"]))
        return (-(-meta["n"] // meta["BLOCK"]),)
    launcher = fam[grid] if grid_kind == "callable" else fam[(3,)]
    for n in (900, 10**6, 900, 5 * 10**5, 10**6):
        launcher(0x1000, 0x2000, 0x3000, n)
    launcher(0x1000, 0x2000, 0x3000, 900, BLOCK=256)
    launcher(0x1000, 0x2000, 0x3000, 900, BLOCK=1024, num_warps=8)
    assert [la["block"][0] for la in fake.launches] == [32, 256, 32, 256, 256, 64, 256]
    if grid_kind == "callable":
        assert seen == [(64, 1), (1024, 8), (64, 1), (1024, 8), (1024, 8), (256, 2), (1024, 8)]
        assert [la["grid"][0] for la in fake.launches] == [15, 977, 15, 489, 977, 4, 1]
    with pytest.raises(TypeError, match="missing constexpr argument"):
        launcher(0x1000, 0x2000, 0x3000, 900, num_warps=8)
    assert len(fam._tuned) == 3          # one selection per distinct key value
    with pytest.raises(TypeError, match=r"missing 1 required positional argument: 'n'"):
        launcher(0x1000, 0x2000, 0x3000)


def test_tuned_configs_may_differ_in_num_stages_alone(fake):
    """Two tuned configs with the same constexprs and num_warps (num_stages 3 and 4): the tuning
    tells them apart; an explicit launch with those constexprs cannot, and says so."""
    specs = [spec(64, 4, num_stages=3, id="BLOCK64_w4_s3"), spec(64, 4, num_stages=4, id="BLOCK64_w4_s4")]
    fam = rt.KernelFamily("add_kernel", ADD_PARAMS, ["BLOCK"], specs,
                          tuning={"key": ["n"], "choices": [[[100], 0], [[10**6], 1]]})
    assert fam.best(n=10**6)["id"] == "BLOCK64_w4_s4" and fam.best(n=99)["id"] == "BLOCK64_w4_s3"
    fam[(1,)](0x1000, 0x2000, 0x3000, 10**6)
    assert fam._tuned[(10**6,)][-1][0] is fam.kernel(specs[1])
    with pytest.raises(rt.SpecializationNotFoundError, match=r"several tuned configs were built for BLOCK=64, "
                                                            r"num_warps=4 \(num_stages 3, 4\); launch without"):
        fam[(1,)](0x1000, 0x2000, 0x3000, 10, BLOCK=64)
    with pytest.raises(ValueError, match="duplicate specialization BLOCK=64, num_warps=4"):
        rt.KernelFamily("add_kernel", ADD_PARAMS, ["BLOCK"], specs)


def test_triton_driver_active_answers_what_kernel_modules_ask(fake):
    """``triton.runtime.driver.active`` (Triton's tutorials read the target and the device's
    properties at import): the current device's, through this runtime's driver."""
    import mytriton
    active = mytriton.runtime.driver.active
    fake.cc = (9, 0)
    target = active.get_current_target()
    assert target == ("cuda", 90, 32) and (target.backend, target.arch, target.warp_size) == ("cuda", 90, 32)
    props = active.utils.get_device_properties(0)
    assert props["multiprocessor_count"] == 132 and props["warpSize"] == 32 and props["max_num_regs"] == 65536
    assert props["max_shared_mem"] == fake.optin


def test_triton_driver_active_without_a_driver_raises(monkeypatch):
    monkeypatch.setattr(rt, "_available", False)
    monkeypatch.setattr(rt, "_unavailable_reason", "RuntimeError: no libcuda")
    monkeypatch.setattr(rt, "_get_ctx", rt._bootstrap_get_ctx)
    with pytest.raises(rt.CudaError, match="no libcuda"):
        rt.active.get_current_target()

"""The native launch path (mytriton/runtime/launcher.c) against the pure-Python launchers, on CPU.

The library is compiled here as mytriton-build compiles it, loaded through the runtime, and handed
a C callback in place of cuLaunchKernel that records what it was given.  Every call goes through
both paths: the native one must launch exactly the bytes the Python path packs, and hand every
call it does not launch to the Python path, which then raises the same error or launches."""
from __future__ import annotations

import ctypes
import math
import struct

import numpy as np
import pytest

from mytriton.runtime import driver as rt
from mytriton.runtime import native
from test_runtime_cpu import CUBIN, FakeDriver, FakeTensor, FakeTorchDtype, Handle, install_fake_driver

PARAMS = [("p", "*fp32:16"), ("q", "*i32"), ("a", "i1"), ("b", "i8"), ("c", "u8"), ("d", "i16"), ("e", "u16"),
          ("f", "i32"), ("g", "u32"), ("h", "i64"), ("i", "u64"), ("j", "fp32"), ("k", "fp64"), ("r", "i32:16"),
          ("s", "u64:8")]
SIZES = [8, 8, 1, 1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 4, 8]
LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                          ctypes.c_void_p, ctypes.c_void_p)


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    built = native.build()
    if built.data is None and built.reason.startswith(("no C compiler", "no Python headers")):
        pytest.skip(built.reason)                    # .ci/run installs both; a failed compile fails here
    assert built.data is not None, built.reason
    assert native.build().data == built.data         # deterministic
    path = tmp_path_factory.mktemp("native") / native.FILENAME
    path.write_bytes(built.data)
    return path


class NativeFake(FakeDriver):
    """FakeDriver whose cuGetProcAddress hands out a recording C callback as cuLaunchKernel."""

    def __init__(self, sizes, devices=1):
        super().__init__(devices=devices)
        self.param_sizes, self.native_launches, self.result = sizes, [], 0

        def launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
            argv = (ctypes.c_void_p * max(1, len(self.param_sizes))).from_address(params)
            self.native_launches.append(dict(f=f, grid=(gx, gy, gz), block=(bx, by, bz), shared=shared,
                                             stream=stream or None, extra=extra,
                                             args=[ctypes.string_at(argv[i], n) for i, n in enumerate(self.param_sizes)]))
            return self.result
        self.callback = LAUNCH(launch)

    def cuGetProcAddress(self, name, version, flags):
        assert name == b"cuLaunchKernel" and flags == 1
        return self._r("cuGetProcAddress", ctypes.cast(self.callback, ctypes.c_void_p).value, 0)


@pytest.fixture
def drv(monkeypatch, library):
    fake = install_fake_driver(monkeypatch, NativeFake(SIZES, devices=2))
    monkeypatch.delenv("MYTRITON_NATIVE_LAUNCH", raising=False)
    rt.use_native_launcher(library)
    return fake


FP32 = FakeTorchDtype("float32")
# dtype a data descriptor on the class, as torch.Tensor's is (launcher.c calls its getter directly)
Tensor = type("Tensor", (FakeTensor,), {"__module__": "torch", "dtype": property(
    lambda self: self._dtype_object, lambda self, value: setattr(self, "_dtype_object", value))})


def tensor(ptr, dtype=FP32, is_cuda=True, device=0):
    t = Tensor(ptr, "float32", is_cuda, device)
    t.dtype = dtype
    return t


def variants(memory):
    """(parameter index, value) pairs: accepted values of every kind, and ones the Python path refuses."""
    fp32, i32 = memory
    return [(0, v) for v in (0x1000, 0, 0x1004, -16, 2**64, True, fp32, fp32.view_offset(4), i32,
                             tensor(0x2000), tensor(0x2004), tensor(0x2000, FakeTorchDtype("float16")),
                             tensor(0x2000, is_cuda=False), np.uint64(0x3000), 1.5)] + \
        [(1, v) for v in (0x1004, i32, fp32, i32.view_offset(4))] + \
        [(2, v) for v in (True, False, 1, 0, 2, 1.0, np.bool_(True))] + \
        [(3, v) for v in (-128, 127, 128, -129)] + [(4, v) for v in (0, 255, 256, -1)] + \
        [(5, v) for v in (-32768, 32767, 32768)] + [(6, v) for v in (65535, 65536, -1)] + \
        [(7, v) for v in (-2**31, 2**31 - 1, 2**31, True, np.int32(-5), 1.0, "7")] + \
        [(8, v) for v in (2**32 - 1, 2**32, -1)] + [(9, v) for v in (-2**63, 2**63 - 1, 2**63)] + \
        [(10, v) for v in (2**64 - 1, 2**64, -1, np.uint64(5))] + \
        [(11, v) for v in (1.5, -0.0, math.inf, math.nan, 3, 3.4028235e38, 3.4028236e38, 1e39, 2**1000, 2**128,
                           np.float32(2.5), "1")] + \
        [(12, v) for v in (1e300, -math.inf, 2**2000, 7)] + [(13, v) for v in (32, -48, 33, 2**31 - 1)] + \
        [(14, v) for v in (2**64 - 8, 12, 2**64)]


def native_reads(ptype, value) -> bool:
    """Whether launcher.c reads this argument itself (else it hands the call to the Python path)."""
    if ptype.startswith("*"):
        return type(value) is int or (type(value) in (rt.DeviceArray, Tensor) and rt.argument_device(value) == 0)
    if ptype == "i1":
        return type(value) is bool
    return type(value) in ((int, float) if ptype.startswith("fp") else (int,))


def outcome(fam, args, fake):
    """What one launch did: ("native" | "python", the argument bytes) or the error it raised."""
    n_native, n_python = len(fake.native_launches), len(fake.launches)
    try:
        fam[(3, 2)](*args, BLOCK=4)
    except Exception as exc:   # noqa: BLE001 - compared below
        assert len(fake.native_launches) == n_native and len(fake.launches) == n_python
        return "error", type(exc).__name__, str(exc)
    if len(fake.native_launches) > n_native:
        assert len(fake.launches) == n_python
        return "native", fake.native_launches[-1]["args"]
    return "python", fake.launches[-1]["args"]


def test_native_and_python_paths_agree_on_every_argument_kind(drv, monkeypatch):
    fam = rt.KernelFamily("many", PARAMS, ["BLOCK"], [
        {"id": "a", "constexprs": {"BLOCK": 4}, "num_warps": 2, "shared": 0, "symbol": "many",
         "images": {"sm_90": CUBIN}}])
    memory = (rt.DeviceArray(64, "fp32"), rt.DeviceArray(64, "i32"))
    base = [0x1000, memory[1], True, -3, 200, -300, 60000, -123456, 2**32 - 1, -2**40, 2**64 - 2, 0.25, 1e300,
            64, 16]
    rt._pointer_info(tensor(0x2000))                       # the runtime learns torch.Tensor
    assert outcome(fam, base, drv)[0] == "python"          # the first launch resolves the function
    assert rt.native_launcher_status().startswith("loaded ")
    kinds = {"native": 0, "python": 0, "error": 0}
    # memory on the other device: beside q (device 0) two devices, and alone a launch there
    others = [(0, tensor(0x2000, device=1)), (1, rt.DeviceArray(64, "i32", device=1))]
    for index, value in variants(memory) + others:
        args = list(base)
        args[index] = value
        got = outcome(fam, args, drv)
        with monkeypatch.context() as m:
            m.setattr(rt, "_native", None)
            want = outcome(fam, args, drv)
        assert want[0] != "native"
        assert got[1:] == want[1:], (PARAMS[index], value, got, want)
        kinds[got[0]] += 1
        if got[0] == "python":   # only what the C code does not read may take the Python path
            assert not native_reads(PARAMS[index][1], value), (PARAMS[index], value)
    assert kinds == {"native": 34, "python": 8, "error": 40}
    launch = drv.native_launches[0]
    assert launch["grid"] == (3, 2, 1) and launch["block"] == (64, 1, 1) and launch["shared"] == 0
    assert launch["f"] == 1001 and launch["stream"] is None and launch["extra"] is None


def test_half_precision_scalars_take_the_python_path(drv):
    drv.param_sizes = [2, 2]
    k = rt.Kernel("half", [("m", "fp16"), ("n", "bf16")], 1, 0, {"sm_90": CUBIN})
    for _ in range(2):
        k.launch(1, [0.5, -2.0])
    assert drv.native_launches == [] and [la["args"] for la in drv.launches] == [
        [struct.pack("<e", 0.5), b"\x00\xc0"]] * 2


def test_native_launch_streams_failures_and_the_kernel_api(drv):
    drv.param_sizes = [8, 4]
    k = rt.Kernel("add_kernel", [("x", "*fp32:16"), ("n", "i32")], 4, 1024, {"sm_90": CUBIN})
    k.launch(1, [0x1000, 5])
    k.launch((2, 3), [0x1000, 6], stream=Handle(77))
    assert [(la["grid"], la["block"], la["shared"], la["stream"], la["args"]) for la in drv.native_launches] == [
        ((2, 3, 1), (128, 1, 1), 1024, 77, [struct.pack("<Q", 0x1000), struct.pack("<i", 6)])]
    drv.result = 400                 # the native launch fails: the Python path launches (and reports) instead
    k.launch(4, [0x1000, 7])
    assert len(drv.native_launches) == 2 and drv.launches[-1]["grid"] == (4, 1, 1)
    with pytest.raises(TypeError, match="stream must be None"):
        k.launch(4, [0x1000, 7], stream="s")
    assert len(drv.native_launches) == 2


def test_native_library_sha256_and_opt_out(drv, library, monkeypatch):
    monkeypatch.setattr(rt, "_native_status", "none registered")
    rt.use_native_launcher(library, "0" * 64)
    k = rt.Kernel("k", [], 4, 0, {"sm_90": CUBIN})
    with pytest.raises(rt.KernelLoadError, match="sha256 mismatch for .*_mtlaunch.abi3.so"):
        k.launch(1, [])
    monkeypatch.setattr(rt, "_native_status", "none registered")
    monkeypatch.setenv("MYTRITON_NATIVE_LAUNCH", "0")
    rt.use_native_launcher(library)
    assert rt.native_launcher_status() == "disabled by MYTRITON_NATIVE_LAUNCH=0"


def test_a_library_that_does_not_load_leaves_pure_python(drv, tmp_path, monkeypatch):
    monkeypatch.setattr(rt, "_native_status", "none registered")
    junk = tmp_path / native.FILENAME
    junk.write_bytes(b"not a shared object")
    rt.use_native_launcher(junk)
    drv.param_sizes = [4]
    k = rt.Kernel("k", [("n", "i32")], 4, 0, {"sm_90": CUBIN})
    k.launch(1, [1])
    k.launch(1, [2])
    assert rt.native_launcher_status().startswith("not used (ImportError") and len(drv.launches) == 2


def test_memory_on_another_device_takes_the_python_path(monkeypatch, library):
    """launcher.c launches only what is on the device of the function it is given; the rest goes
    to the Python path, which launches it in the other device's primary context."""
    drv = install_fake_driver(monkeypatch, NativeFake([8, 8, 8, 4], devices=2))
    monkeypatch.delenv("MYTRITON_NATIVE_LAUNCH", raising=False)
    rt.use_native_launcher(library)
    drv.tls.ctx = drv.primary_of(0)
    fam = rt.KernelFamily("add", [("x", "*fp32:16"), ("y", "*fp32:16"), ("out", "*fp32:16"), ("n", "i32")], [], [
        {"id": "a", "constexprs": {}, "num_warps": 4, "shared": 0, "symbol": "add", "images": {"sm_90": CUBIN}}])
    rt._pointer_info(tensor(0x2000))                       # the runtime learns torch.Tensor
    on0 = [tensor(0x1000), rt.DeviceArray(64, "fp32"), 0x3000]
    on1 = [tensor(0x1000, device=1), rt.DeviceArray(64, "fp32", device=1), tensor(0x3000, device=1)]
    for _ in range(2):
        fam[1](*on0, 5)
        fam[1](*on1, 5)
    assert len(drv.native_launches) == 1                   # the second launch on device 0
    assert [la["device"] for la in drv.launches] == [0, 1, 1]
    assert drv.launches[1]["args"] == drv.launches[2]["args"]
    assert drv.native_launches[0]["args"][:1] == drv.launches[0]["args"][:1] == [struct.pack("<Q", 0x1000)]
    with pytest.raises(ValueError, match="parameter 'x' is on cuda:1 but 'out' is an int address"):
        fam[1](*on1[:2], 0x3000, 5)
    drv.tls.ctx = drv.primary_of(1)                        # device 1 current: its launches go native
    fam[1](*on1, 5)
    fam[1](*on1, 5)
    fam[1](on1[0], on1[1], 0x3000, 5)
    assert len(drv.native_launches) == 3 and len(drv.launches) == 4


# --------------------------------------------------------------------------- PyTorch's C accessors

FP16 = FakeTorchDtype("float16")
CODES = {6: FP32, 5: FP16}           # PyTorch's ScalarType codes of float and half
CPU, CUDA = 0, 1                     # its device type codes


class Impl:
    """A fake TensorImpl: what the fake accessors below read (and `t.data = ...` changes in place)."""

    def __init__(self, ptr, code=6, device_type=CUDA, index=0):
        self.ptr, self.code, self.device_type, self.index = ptr, code, device_type, index


class AccessorTensor:
    """Laid out as launcher.c expects a torch.Tensor to be: its TensorImpl pointer (here the
    address of an Impl) in the object, and _cdata saying what it is; its methods count their calls."""
    __slots__ = ("impl",)
    calls = []

    def __init__(self, ptr, **kw):
        self.impl = Impl(ptr, **kw)

    @property
    def _cdata(self):
        return id(self.impl)

    dtype = property(lambda self: CODES[self.impl.code], lambda self, v: None)   # a data descriptor

    @property
    def is_cuda(self):
        return self.impl.device_type == CUDA

    def data_ptr(self):
        AccessorTensor.calls.append("data_ptr")
        return self.impl.ptr

    def get_device(self):
        AccessorTensor.calls.append("get_device")
        return self.impl.index if self.is_cuda else -1


AccessorTensor.__module__, AccessorTensor.__name__ = "torch", "Tensor"


def _impl_of(tensor):
    """The Impl a fake accessor was handed (its argument points at the TensorImpl pointer)."""
    return ctypes.cast(ctypes.c_void_p.from_address(tensor).value, ctypes.py_object).value


class FakeLibtorch:
    """The accessors _tensor_accessors looks up, as C callbacks over Impl; `broken` names ones
    that fail (return an error code)."""

    def __init__(self):
        self.broken, self.lie = set(), False

        def code_accessor(field):
            def get(tensor, out):
                if field in self.broken:
                    return 1
                out[0] = getattr(_impl_of(tensor), field)
                return 0
            return rt._CODE_ACCESSOR(get)

        def get_data_ptr(tensor, out):
            if "ptr" in self.broken:
                return 1
            out[0] = _impl_of(tensor).ptr + (16 if self.lie else 0)
            return 0
        self.aoti_torch_get_data_ptr = rt._ADDRESS_ACCESSOR(get_data_ptr)
        self.aoti_torch_get_dtype = code_accessor("code")
        self.aoti_torch_get_device_type = code_accessor("device_type")
        self.aoti_torch_get_device_index = code_accessor("index")
        self.aoti_torch_device_type_cuda = ctypes.CFUNCTYPE(ctypes.c_int32)(lambda: CUDA)


class AccessorParameter(AccessorTensor):
    """As torch.nn.Parameter: a subclass laid out as the tensor it extends."""


AccessorParameter.__module__, AccessorParameter.__name__ = "torch.nn.parameter", "Parameter"


class OtherSubclass(AccessorTensor):
    """A subclass the runtime knows nothing of: its methods may differ, so they are called."""


ADD = [("x", "*fp32:16"), ("y", "*fp32:16"), ("n", "i32")]


@pytest.fixture
def libtorch(monkeypatch, library):
    lib = FakeLibtorch()
    monkeypatch.setattr(rt, "_torch_library", lambda: lib)
    AccessorTensor.calls.clear()
    return lib


def add_family(monkeypatch, library, devices=1):
    """(the fake driver, a family of an add kernel) with the native library registered and
    device 0's primary context current."""
    drv = install_fake_driver(monkeypatch, NativeFake([8, 8, 4], devices=devices))
    monkeypatch.delenv("MYTRITON_NATIVE_LAUNCH", raising=False)
    rt.use_native_launcher(library)
    drv.tls.ctx = drv.primary_of(0)
    return drv, rt.KernelFamily("add", ADD, [], [{"id": "a", "constexprs": {}, "num_warps": 4, "shared": 0,
                                                  "symbol": "add", "images": {"sm_90": CUBIN}}])


def test_tensors_are_read_through_pytorchs_c_accessors(monkeypatch, library, libtorch):
    drv, fam = add_family(monkeypatch, library, devices=2)
    x, y = AccessorTensor(0x1000), AccessorTensor(0x2000)
    fam[1](x, y, 3)                                       # the Python path: learns the type, resolves
    offset = rt._TENSOR_INFO[2][0]
    assert rt._TENSOR_INFO[2][1:] == (*[ctypes.cast(getattr(libtorch, n), ctypes.c_void_p).value
                                        for n in rt._ACCESSORS], CUDA)
    assert ctypes.c_void_p.from_address(id(x) + offset).value == id(x.impl)
    AccessorTensor.calls.clear()
    fam[1](x, y, 4)
    y.impl.ptr = 0x3000                                   # as `y.data = other` does: read again, not cached
    fam[1](x, y, 5)
    assert AccessorTensor.calls == [] and [la["args"] for la in drv.native_launches] == [
        [struct.pack("<Q", 0x1000), struct.pack("<Q", a), struct.pack("<i", n)] for a, n in ((0x2000, 4), (0x3000, 5))]
    y.impl.code = 5                                       # now half: the Python path refuses it
    with pytest.raises(TypeError, match="'y'.*float16"):
        fam[1](x, y, 6)
    y.impl.code, y.impl.device_type = 6, CPU              # on the host
    with pytest.raises(rt.HostMemoryArgument):
        fam[1](x, y, 6)
    y.impl.device_type = CUDA
    x.impl.index = y.impl.index = 1                       # on the other device: launched there by Python
    fam[1](x, y, 7)
    assert len(drv.native_launches) == 2 and drv.launches[-1]["device"] == 1
    x.impl.index = y.impl.index = 0
    libtorch.broken = {"ptr"}                             # an accessor that fails: the Python path launches
    fam[1](x, y, 8)
    assert len(drv.native_launches) == 2 and drv.launches[-1]["args"][2] == struct.pack("<i", 8)
    libtorch.broken = set()
    fam[1](x, y, 9)
    assert len(drv.native_launches) == 3


@pytest.mark.parametrize("defect", ["data_ptr lies", "accessor fails", "no library", "no _cdata"])
def test_accessors_that_do_not_answer_as_the_tensor_does_are_not_used(monkeypatch, library, libtorch, defect):
    drv, fam = add_family(monkeypatch, library)
    if defect == "data_ptr lies":
        libtorch.lie = True
    elif defect == "accessor fails":
        libtorch.broken = {"index"}
    elif defect == "no library":
        monkeypatch.setattr(rt, "_torch_library", lambda: None)
    else:
        monkeypatch.delattr(AccessorTensor, "_cdata")
    x, y = AccessorTensor(0x1000), AccessorTensor(0x2000)
    fam[1](x, y, 3)
    assert rt._TENSOR_INFO[0] is AccessorTensor and rt._TENSOR_INFO[2] is None
    AccessorTensor.calls.clear()
    fam[1](x, y, 4)                                       # launched natively through the methods
    assert len(drv.native_launches) == 1 and drv.native_launches[0]["args"][1] == struct.pack("<Q", 0x2000)
    assert AccessorTensor.calls == ["get_device", "data_ptr"] * 2


# --------------------------------------------------------------------------- the JIT's copy

def test_the_jit_builds_its_library_once_into_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("MYTRITON_NATIVE_LAUNCH", raising=False)
    builds = []
    real = native.build
    monkeypatch.setattr(native, "build", lambda: builds.append(1) or real())
    path, why = native.cached_library()
    if path is None and why.startswith(("no C compiler", "no Python headers")):
        pytest.skip(why)
    assert why == "" and path.parent == tmp_path / "native" and path.name.endswith(".abi3.so")
    assert path.read_bytes() == real().data and builds == [1]
    assert native.cached_library() == (path, "") and builds == [1]          # found, not built again
    assert [p.name for p in path.parent.iterdir()] == [path.name]          # no temporary file left
    monkeypatch.setenv("MYTRITON_NATIVE_LAUNCH", "0")
    assert native.cached_library() == (None, "disabled by MYTRITON_NATIVE_LAUNCH=0")
    monkeypatch.delenv("MYTRITON_NATIVE_LAUNCH")
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(blocked))                 # native/ cannot be made
    got, why = native.cached_library()
    assert got is None and why.startswith(f"cannot write {blocked / 'native'}")
    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(tmp_path / "other"))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    got, why = native.cached_library()
    assert got is None and why == f"the C compiler CC={str(tmp_path / 'no-such-compiler')!r} does not run"


def test_a_library_registered_after_the_first_launch_loads_at_the_next_first_launch(monkeypatch, library):
    drv = install_fake_driver(monkeypatch, NativeFake([4]))
    monkeypatch.delenv("MYTRITON_NATIVE_LAUNCH", raising=False)
    drv.tls.ctx = drv.primary_of(0)
    k = rt.Kernel("k", [("n", "i32")], 4, 0, {"sm_90": CUBIN})
    k.launch(1, [1])                                     # the driver is initialised: pure Python
    assert rt.native_launcher_status() == "none registered" and len(drv.launches) == 1
    rt.use_native_launcher(library)                      # (as the JIT does, at its first compile)
    assert rt.native_launcher_status() == "not loaded yet"
    k2 = rt.Kernel("k2", [("n", "i32")], 4, 0, {"sm_90": CUBIN})
    k2.launch(1, [2])                                    # its first launch: the slow path loads it
    assert rt.native_launcher_status() == f"loaded {library}" and len(drv.launches) == 2
    k2.launch(1, [3])
    k.launch(1, [4])
    assert [la["args"] for la in drv.native_launches] == [[struct.pack("<i", 3)], [struct.pack("<i", 4)]]
    monkeypatch.setattr(rt, "_native_status", "none registered")
    monkeypatch.setattr(rt, "_native", None)
    monkeypatch.setenv("MYTRITON_NATIVE_LAUNCH", "0")
    rt.use_native_launcher(library)                      # disabled: nothing to load, no error
    k.launch(1, [5])
    assert rt.native_launcher_status() == "disabled by MYTRITON_NATIVE_LAUNCH=0" and len(drv.launches) == 3


def test_the_jit_registers_the_library_unless_a_package_did(monkeypatch, tmp_path):
    from mytriton.frontend import launch
    install_fake_driver(monkeypatch, FakeDriver())
    monkeypatch.setattr(launch, "_native_tried", False)
    monkeypatch.setattr(native, "cached_library", lambda: (tmp_path / "lib.abi3.so", ""))
    launch._use_native_launcher(rt)
    assert rt._native_file == (str(tmp_path / "lib.abi3.so"), None) and rt.native_launcher_status() == "not loaded yet"
    monkeypatch.setattr(native, "cached_library", lambda: (_ for _ in ()).throw(AssertionError("asked twice")))
    launch._use_native_launcher(rt)                                        # once a process
    install_fake_driver(monkeypatch, FakeDriver())
    monkeypatch.setattr(launch, "_native_tried", False)
    rt.use_native_launcher(tmp_path / "package.abi3.so")                   # a package's own comes first
    launch._use_native_launcher(rt)
    assert rt._native_file == (str(tmp_path / "package.abi3.so"), None)
    install_fake_driver(monkeypatch, FakeDriver())
    monkeypatch.setattr(launch, "_native_tried", False)
    monkeypatch.setattr(native, "cached_library", lambda: (None, "no C compiler found (set CC, or install gcc)"))
    launch._use_native_launcher(rt)
    assert rt._native_file is None
    assert rt.native_launcher_status() == "not built for the JIT: no C compiler found (set CC, or install gcc)"


def test_parameters_are_read_as_tensors_and_other_subclasses_by_their_methods(monkeypatch, library, libtorch):
    drv, fam = add_family(monkeypatch, library)
    w, x = AccessorParameter(0x1000), AccessorTensor(0x2000)
    fam[1](w, x, 3)                                       # a Parameter first: the runtime learns torch.Tensor
    assert rt._TENSOR_INFO[0] is AccessorTensor and rt._TENSOR_INFO[3] == (AccessorParameter,)
    AccessorTensor.calls.clear()
    fam[1](w, x, 4)
    fam[1](x, w, 5)
    assert AccessorTensor.calls == [] and [la["args"][:2] for la in drv.native_launches] == [
        [struct.pack("<Q", 0x1000), struct.pack("<Q", 0x2000)], [struct.pack("<Q", 0x2000), struct.pack("<Q", 0x1000)]]
    other = OtherSubclass(0x3000)
    fam[1](other, x, 6)                                   # not one the runtime knows: the Python path
    assert len(drv.native_launches) == 2 and "data_ptr" in AccessorTensor.calls
    assert rt._TENSOR_INFO[3] == (AccessorParameter,)

"""Which device a launch runs on, without a GPU: the runtime against FakeDriver with two devices.

A launch runs on the device of its pointer arguments (a tensor's get_device(), a DeviceArray's
device, a CuPy array's .device.id, the driver's answer for other __cuda_array_interface__
objects); int addresses mean the current context.  Where that device is not the current
context's, the launch runs in the device's primary context, pushed and popped around it.
Arguments on two devices, int addresses beside memory of another device, and a stream of another
device are ValueErrors that name the parameters and devices, and nothing is launched.
"""
from __future__ import annotations

import struct
import threading

import numpy as np
import pytest

from mytriton.runtime import driver as rt
from test_runtime_cpu import ADD_PARAMS, CUBIN, FakeCAI, FakeDriver, FakeTensor, Handle, install_fake_driver

P0, P1 = FakeDriver.primary_of(0), FakeDriver.primary_of(1)


@pytest.fixture
def two(monkeypatch):
    """Two fake devices; device 0's primary context is current (as after torch.cuda.init())."""
    drv = install_fake_driver(monkeypatch, FakeDriver(devices=2))
    monkeypatch.setattr(rt, "_address_devices", {})
    drv.tls.ctx = P0
    drv.param_sizes = [8, 8, 8, 4]
    return drv


Tensor = type("Tensor", (FakeTensor,), {"__module__": "torch"})   # what the inline path reads


def tensors(device, *ptrs):
    return [Tensor(p, "float32", device=device) for p in ptrs]


@pytest.fixture
def fam():
    return rt.KernelFamily("add_kernel", ADD_PARAMS, ["BLOCK"], [
        {"id": "B64", "constexprs": {"BLOCK": 64}, "num_warps": 4, "shared": 0, "symbol": "add_kernel",
         "images": {"sm_90": CUBIN}}])


def current(drv):
    return getattr(drv.tls, "ctx", Handle(0))


@pytest.mark.parametrize("kind", ["tensor", "inline tensor", "DeviceArray", "cai", "cupy"])
def test_memory_on_the_other_device_launches_there(two, fam, kind):
    if kind == "tensor":
        x, y, out = (FakeTensor(p, "float32", device=1) for p in (0x1000, 0x2000, 0x3000))
    elif kind == "inline tensor":
        x, y, out = tensors(1, 0x1000, 0x2000, 0x3000)
    elif kind == "DeviceArray":
        x, y, out = (rt.DeviceArray(64, "fp32", device=1) for _ in range(3))
        assert current(two) == P0 and {a.device for a in (x, y, out)} == {1}
    elif kind == "cai":       # Numba-like: the driver says where the memory is, once per object
        two.pointer_device[(0x10000, 0x20000)] = 1
        x, y, out = (FakeCAI(p, "<f4") for p in (0x10000, 0x11000, 0x12000))
    else:
        class Device:
            id = 1
        x, y, out = (FakeCAI(p, "<f4") for p in (0x10000, 0x11000, 0x12000))
        for a in (x, y, out):
            a.device = Device()
    for _ in range(3):
        fam[2](x, y, out, 10, BLOCK=64)
    assert [la["ctx"] for la in two.launches] == [P1] * 3          # in device 1's primary context
    assert current(two) == P0                                       # and the caller's is unchanged
    assert two.calls.count("cuCtxPushCurrent") - two.calls.count("cuCtxPopCurrent") == 0
    assert two.calls.count("cuPointerGetAttribute") == (3 if kind == "cai" else 0)
    assert len(two.modules) == 1 and two.module_ctx[1] == int(P1)
    fam[2](*tensors(0, 0x1000, 0x2000, 0x3000), 10, BLOCK=64)        # the current device again
    assert two.launches[-1]["ctx"] == P0 and len(two.modules) == 2


def test_the_current_device_takes_the_hot_path(two, fam):
    x, y, out = tensors(1, 0x1000, 0x2000, 0x3000)
    two.tls.ctx = P1                                 # e.g. inside torch.cuda.device(1)
    for _ in range(3):
        fam[2](x, y, out, 10, BLOCK=64)
        fam[2](0x1000, y, 0x3000, 10, BLOCK=64)     # int addresses: the current context's
    assert [la["ctx"] for la in two.launches] == [P1] * 6
    assert "cuCtxPushCurrent" not in two.calls and two.calls.count("cuCtxGetCurrent") == 1


def test_no_current_context_stays_none(two, fam):
    two.tls.ctx = Handle(0)                          # a new thread: nothing current
    fam[2](*tensors(1, 0x1000, 0x2000, 0x3000), 10, BLOCK=64)
    assert two.launches[-1]["ctx"] == P1 and current(two) == Handle(0)
    fam[2](*tensors(0, 0x1000, 0x2000), 0x3000, 10, BLOCK=64)   # int addresses beside memory of device 0
    assert two.launches[-1]["ctx"] == P0 and current(two) == Handle(0)
    with pytest.raises(ValueError, match="'out' is an int address, which means the current device \\(none is "
                                         "current, so cuda:0\\)"):
        fam[2](*tensors(1, 0x1000, 0x2000), 0x3000, 10, BLOCK=64)
    fam[2](0x1000, 0x2000, 0x3000, 10, BLOCK=64)     # int addresses: device 0's made current
    assert two.launches[-1]["ctx"] == P0 and current(two) == P0


def test_mixed_devices_are_refused(two, fam):
    x0, out0 = tensors(0, 0x1000, 0x3000)
    (y1,) = tensors(1, 0x2000)
    with pytest.raises(ValueError) as info:
        fam[2](x0, y1, out0, 10, BLOCK=64)
    assert str(info.value) == ("add_kernel: the pointer arguments are on different devices ('x' and 'out' on "
                               "cuda:0; 'y' on cuda:1); a launch runs on one device: move them to the same one")
    a1 = rt.DeviceArray(64, "fp32", device=1)
    with pytest.raises(ValueError, match="different devices \\('x' on cuda:0; 'y' on cuda:1\\)"):
        fam[2](x0, a1, 0x3000, 10, BLOCK=64)
    with pytest.raises(ValueError, match="different devices \\('x' on cuda:0; 'out' on cuda:1\\)"):
        rt.Kernel("add_kernel", ADD_PARAMS, 4, 0, {"sm_90": CUBIN}).launch(1, [x0, 0x2000, a1, 10])
    assert two.launches == []


def test_int_addresses_beside_memory_of_another_device_are_refused(two, fam):
    x1, y1 = tensors(1, 0x1000, 0x2000)
    with pytest.raises(ValueError) as info:
        fam[2](x1, y1, 0x3000, 10, BLOCK=64)
    assert str(info.value) == (
        "add_kernel: parameter 'x' is on cuda:1 but 'out' is an int address, which means the current device "
        "(cuda:0); pass memory that knows its device (a tensor, a DeviceArray) or make cuda:1 current (e.g. "
        "with torch.cuda.device(1))")
    assert two.launches == []
    fam[2](*tensors(0, 0x1000, 0x2000), 0x3000, 10, BLOCK=64)     # on the current device: fine
    assert two.launches[-1]["ctx"] == P0


def test_a_stream_of_another_device_is_refused(two, fam):
    two.stream_ctx[0x99] = P0                       # a stream of device 0
    two.stream_ctx[0x98] = P1                       # and one of device 1
    x1, y1, out1 = tensors(1, 0x1000, 0x2000, 0x3000)
    with pytest.raises(ValueError) as info:
        fam[2](x1, y1, out1, 10, BLOCK=64, stream=0x99)
    assert str(info.value) == ("add_kernel: stream= is a stream of cuda:0 but the launch runs on cuda:1 "
                               "(where 'x', 'y' and 'out' are); pass a stream of cuda:1")
    x0, y0, out0 = tensors(0, 0x1000, 0x2000, 0x3000)
    for _ in range(2):                               # the hot path: the driver refuses, then the diagnosis
        with pytest.raises(ValueError, match="stream= is a stream of cuda:1 but the launch runs on cuda:0 "
                                             "\\(where 'x', 'y' and 'out' are\\)"):
            fam[2](x0, y0, out0, 10, BLOCK=64, stream=0x98)
    with pytest.raises(ValueError, match="stream= is a stream of cuda:1 but the launch runs on cuda:0 \\(the "
                                         "current device: the pointer arguments do not name one\\)"):
        fam[2](0x1000, 0x2000, 0x3000, 10, BLOCK=64, stream=Handle(0x98))
    assert two.launches == [] and current(two) == P0
    fam[2](x1, y1, out1, 10, BLOCK=64, stream=0x98)
    fam[2](x0, y0, out0, 10, BLOCK=64, stream=0x99)
    assert [(la["ctx"], la["stream"]) for la in two.launches] == [(P1, 0x98), (P0, 0x99)]


def test_runtime_streams_and_arrays_record_their_device(two):
    s = rt.Stream(device=1)
    assert s.device == 1 and two.stream_ctx[s.handle] == P1 and current(two) == P0
    assert rt.Stream().device == 0
    a = rt.DeviceArray.from_numpy(np.arange(4, dtype=np.float32), device=1)
    assert a.device == 1 and a.view_offset(4).device == 1 and current(two) == P0
    np.testing.assert_array_equal(a.copy_to_host(), np.arange(4, dtype=np.float32))
    assert rt.DeviceArray(0, "fp32").device == -1 and rt.DeviceArray(4, "fp32").device == 0
    assert rt.argument_device(a) == 1 and rt.argument_device(0x1000) == -1 and rt.argument_device(1.5) == -1
    assert rt.argument_device(FakeCAI(0x999000, "<f4")) == -1      # the driver does not know it: current
    with pytest.raises(ValueError, match="no CUDA device 2 \\(this machine has 2\\)"):
        rt.DeviceArray(4, "fp32", device=2)
    rt.synchronize(1)
    assert current(two) == P0


def test_threads_on_two_devices(two, fam):
    errors = []

    def work(device):
        try:
            two.tls.ctx = FakeDriver.primary_of(device) if device == 0 else Handle(0)
            args = tensors(device, 0x1000, 0x2000, 0x3000)
            for _ in range(50):
                fam[2](*args, 10, BLOCK=64)
            assert current(two) == (P0 if device == 0 else Handle(0))
        except Exception as e:    # noqa: BLE001 - asserted below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i % 2,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    by_ctx = {}
    for la in two.launches:
        by_ctx[la["ctx"]] = by_ctx.get(la["ctx"], 0) + 1
    assert by_ctx == {P0: 200, P1: 200} and len(two.modules) == 2     # one module per device


def test_jit_compiles_for_the_device_of_its_arguments(two, monkeypatch):
    """The JIT's target is the compute capability of the data's device, not the current one's (9.0:
    sm_90a, as Triton)."""
    import mytriton.language as tl
    from mytriton import jit

    @jit
    def copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
    two.cc_of[1] = (8, 0)
    two.param_sizes = [8, 8, 4]
    x1, out1 = tensors(1, 0x1000, 0x2000)
    kernel = copy[(1,)](x1, out1, 10, BLOCK=16)
    assert set(kernel.images) == {"sm_80"} and two.launches[-1]["ctx"] == P1 and current(two) == P0
    assert copy[(1,)](x1, out1, 10, BLOCK=16) is kernel
    k0 = copy[(1,)](*tensors(0, 0x1000, 0x2000), 10, BLOCK=16)
    assert set(k0.images) == {"sm_90a"} and two.launches[-1]["ctx"] == P0
    with pytest.raises(ValueError, match="copy: the pointer arguments are on different devices \\('x_ptr' on "
                                         "cuda:0; 'out_ptr' on cuda:1\\)"):
        copy[(1,)](tensors(0, 0x1000)[0], out1, 10, BLOCK=16)
    assert len(two.launches) == 3
    # a JIT launch whose argument kinds were seen before looks at each tensor twice (its key:
    # dtype, alignment, device; then the launch's checks); the first launch of new kinds once more
    looks = []
    counted = type("Tensor", (Tensor,), {"get_device": lambda self: looks.append(self) or self._device})
    x, out = counted(0x1000, "float32", device=0), counted(0x2000, "float32", device=0)
    assert copy[(1,)](x, out, 10, BLOCK=16) is k0
    assert looks.count(x) == looks.count(out) <= 3
    del looks[:]
    assert copy[(1,)](x, out, 10, BLOCK=16) is k0 and len(two.launches) == 5
    assert looks.count(x) == looks.count(out) == 2
    # the remembered kernel is per device: the same kinds on device 1 are that device's kernel
    x1b, out1b = counted(0x1000, "float32", device=1), counted(0x2000, "float32", device=1)
    assert copy[(1,)](x1b, out1b, 10, BLOCK=16) is kernel and two.launches[-1]["ctx"] == P1


def test_jit_fast_path_keys_on_everything_that_picks_the_specialization(two):
    """A launch whose argument kinds were seen before reuses that launch's kernel; whatever decides
    the specialization (dtype, 16-byte alignment, divisibility by 16, int range, device, constexprs,
    num_warps) gives another kernel, and a misaligned pointer never reaches a ':16' kernel."""
    import mytriton.language as tl
    from mytriton import jit

    @jit
    def copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
    two.param_sizes = [8, 8, 4]
    x, out = tensors(0, 0x1000, 0x2000)
    k = copy[(1,)](x, out, 32, BLOCK=16)
    assert dict(k.params)["x_ptr"].align == 16 and dict(k.params)["n"].align == 16
    assert copy[(1,)](*tensors(0, 0x3000, 0x4000), 48, BLOCK=16) is k
    others = [copy[(1,)](x, out, 10, BLOCK=16),                                  # n not divisible by 16
              copy[(1,)](Tensor(0x1004, "float32", device=0), out, 32, BLOCK=16),  # x not 16-byte aligned
              copy[(1,)](Tensor(0x1000, "float16", device=0), out, 32, BLOCK=16),  # another dtype
              copy[(1,)](x, out, 32, BLOCK=32),                                  # another constexpr
              copy[(1,)](x, out, 32, BLOCK=16, num_warps=8)]                     # another num_warps
    assert len({id(k), *map(id, others)}) == 6
    assert dict(others[1].params)["x_ptr"].align == 1 and dict(others[0].params)["n"].align == 1
    two.param_sizes = [8, 8, 8]
    assert dict(copy[(1,)](x, out, 2**40, BLOCK=16).params)["n"].dtype == "i64"  # another int range
    assert len(two.launches) == 8


def test_a_forked_child_gets_a_clear_error_without_touching_the_driver(two, fam, monkeypatch):
    for name in ("_forked", "_get_ctx", "_launch_kernel", "_native", "_LOCK"):
        monkeypatch.setattr(rt, name, getattr(rt, name))   # restored after the test
    args = tensors(0, 0x1000, 0x2000, 0x3000)
    fam[2](*args, 10, BLOCK=64)
    a = rt.DeviceArray(16, "fp32")
    calls = len(two.calls)
    rt._after_fork_in_child(4242)                    # what os.register_at_fork runs in the child
    for launch in (lambda: fam[2](*args, 10, BLOCK=64), lambda: fam[2](0x1000, 0x2000, 0x3000, 10, BLOCK=64),
                   lambda: rt.DeviceArray(4, "fp32"), rt.synchronize, a.copy_to_host):
        with pytest.raises(rt.ForkedProcessError, match="CUDA was initialised in process 4242, which then forked "
                                                         "this process \\(\\d+\\); a forked child cannot use CUDA"):
            launch()
    a.free()                                         # dropped, not freed through the driver
    assert len(two.calls) == calls and len(two.launches) == 1
    assert rt.native_launcher_status() == "not used (this process was forked from 4242 after CUDA was initialised)"
    assert issubclass(rt.ForkedProcessError, RuntimeError)


def test_a_child_forked_before_cuda_was_initialised_may_use_it(monkeypatch):
    for name in ("_forked", "_get_ctx", "_launch_kernel", "_native", "_LOCK", "_available"):
        monkeypatch.setattr(rt, name, getattr(rt, name))
    monkeypatch.setattr(rt, "_available", None)
    rt._after_fork_in_child(4242)
    assert rt._forked is None


def test_pointer_devices_in_the_packed_arguments(two, fam):
    """The bytes launched on the other device are the addresses, as on the current one."""
    fam[2](*tensors(1, 0x1000, 0x2000, 0x3000), 7, BLOCK=64)
    fam[2](*tensors(0, 0x1000, 0x2000, 0x3000), 7, BLOCK=64)
    assert two.launches[0]["args"] == two.launches[1]["args"] == [
        struct.pack("<Q", 0x1000), struct.pack("<Q", 0x2000), struct.pack("<Q", 0x3000), struct.pack("<i", 7)]


def test_the_interpreter_refuses_device_memory_clearly(monkeypatch):
    import mytriton.language as tl
    from mytriton import jit

    @jit
    def copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    class Device:
        type, index = "cuda", 1

        def __str__(self):
            return "cuda:1"
    on_cuda1 = type("Tensor", (), {"__module__": "torch", "numpy": lambda self: None, "device": Device()})()
    monkeypatch.setenv("MYTRITON_INTERPRET", "1")
    with pytest.raises(TypeError, match="the interpreter runs on host memory; got a tensor on cuda:1 \\(pass numpy "
                                        "arrays or CPU tensors\\)"):
        copy[(1,)](on_cuda1, np.zeros(4, np.float32), 4, BLOCK=16)
    monkeypatch.delenv("MYTRITON_INTERPRET")
    with pytest.raises(TypeError, match="the interpreter runs on host memory; got a device array"):
        copy[(1,)](FakeCAI(0x1000, "<f4"), np.zeros(4, np.float32), 4, BLOCK=16)   # numpy beside it

"""Launch paths on real GPUs: a built package (native and pure-Python launchers) and the JIT.

On one GPU: launches captured in a CUDA graph replay correctly, also when the kernel's first launch
happens inside the capture; a process forked after CUDA was initialised gets ForkedProcessError.
On two GPUs (marker ``multigpu``): memory on cuda:1 while cuda:0 is current launches on cuda:1 and
leaves the current device alone; arguments on two devices and streams of the other device are
ValueErrors; DeviceArrays allocated on device 1, CuPy arrays and other __cuda_array_interface__
objects find their device; threads on two GPUs with their own streams.

The package tests run in fresh processes (the native library is registered per process).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mytriton.runtime import driver as rt
from test_aot_support import REPO, run_cli

HAVE_GPU = rt.driver_available()


def device_count() -> int:
    return rt._check(rt._cuda.cuDeviceGetCount(), "cuDeviceGetCount") if HAVE_GPU else 0


try:
    import torch
    HAVE_TORCH = torch.cuda.is_available()
except ImportError:
    torch, HAVE_TORCH = None, False

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason="needs an NVIDIA GPU and driver"),
              pytest.mark.skipif(not HAVE_TORCH, reason="needs PyTorch with CUDA")]
PATHS = pytest.mark.parametrize("native", ["1", "0"], ids=["native", "pure_python"])

MANIFEST = """
package: mgpu
targets: [sm_80, sm_90]
kernels:
  - kernel: kernels/elementwise.py:add_kernel
    signature: {x_ptr: "*fp32:16", y_ptr: "*fp32:16", out_ptr: "*fp32:16", n: i32}
    constexprs: {BLOCK: [64, 1024]}
    num_warps: [4]
"""


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("launch")
    (folder / "kernels").mkdir()
    shutil.copy(REPO / "manifests" / "kernels" / "elementwise.py", folder / "kernels" / "elementwise.py")
    (folder / "mgpu.yaml").write_text(MANIFEST)
    result = run_cli([str(folder / "mgpu.yaml"), "--out", "build"], cwd=folder)
    assert result.returncode == 0, result.stdout + result.stderr
    return folder / "build"


PRELUDE = """
import json, os, sys, threading
sys.path.insert(0, {package!r})
import numpy as np
import torch
import mgpu
from cuda.bindings import driver as cu
rt = mgpu._runtime

def error(call):
    try:
        call()
    except Exception as exc:
        return [type(exc).__name__, str(exc)]
    return None

def current():
    '''(torch's current device, the device of the driver's current context)'''
    err, ctx = cu.cuCtxGetCurrent()
    return [torch.cuda.current_device(), int(cu.cuCtxGetDevice()[1]) if int(ctx) else None]

def add(x, y, out, n, **kw):
    mgpu.add_kernel[(mgpu.cdiv(n, 64),)](x, y, out, n, BLOCK=64, **kw)

def inputs(device, n=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    x, y = torch.randn(n, generator=g), torch.randn(n, generator=g)
    return x.to(device), y.to(device), torch.zeros(n, device=device), (x + y)

def ok(out, want):
    torch.cuda.synchronize(out.device)
    return bool(torch.equal(out.cpu(), want))
"""


def run(code: str, package: Path, native: str, timeout: float = 240) -> dict:
    """Run *code* (after PRELUDE) in a fresh interpreter; it prints one JSON object last."""
    source = textwrap.dedent(PRELUDE).format(package=str(package)) + textwrap.dedent(code)
    env = {**os.environ, "MYTRITON_NATIVE_LAUNCH": native}
    result = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=timeout,
                            cwd=package, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def check_path(info: dict, native: str) -> None:
    assert info["native"].startswith("loaded " if native == "1" else "disabled"), info["native"]


# --------------------------------------------------------------------------- one GPU

GRAPH = """
n = 5000
x, y, out, want = inputs("cuda", n)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):          # the kernel's first launch happens inside the capture
    mgpu.add_kernel[(mgpu.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, stream=torch.cuda.current_stream())
    mgpu.add_kernel[(mgpu.cdiv(n, 1024),)](x, out, out, n, BLOCK=1024, stream=torch.cuda.current_stream())
torch.cuda.synchronize()
captured_untouched = bool((out == 0).all())
results = []
for seed in (1, 2):
    x2, y2, _, _ = inputs("cuda", n, seed)
    x.copy_(x2); y.copy_(y2); out.zero_()
    g.replay()
    results.append(ok(out, (x2 + y2).cpu() + x2.cpu()))
# a kernel launched before the capture, then captured twice
add(x, y, out, n)
g2 = torch.cuda.CUDAGraph()
with torch.cuda.graph(g2):
    for _ in range(2):
        add(out, y, out, n, stream=torch.cuda.current_stream())
out.zero_(); add(x, y, out, n); torch.cuda.synchronize()
g2.replay()
results.append(ok(out, ((x.cpu() + y.cpu()) + y.cpu()) + y.cpu()))
print(json.dumps({"native": rt.native_launcher_status(), "untouched": captured_untouched, "results": results}))
"""


@PATHS
def test_cuda_graph_capture_and_replay(package, native):
    info = run(GRAPH, package, native)
    check_path(info, native)
    assert info["untouched"] is True and info["results"] == [True, True, True]


FORK = """
import time
x = mgpu.DeviceArray.from_numpy(np.ones(1024, np.float32))
out = mgpu.DeviceArray(1024, np.float32)
for _ in range(2):
    mgpu.add_kernel[(16,)](x, x, out, 1000, BLOCK=64)
rt.synchronize()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    t0 = time.perf_counter()
    got = [error(lambda: mgpu.add_kernel[(16,)](x, x, out, 1000, BLOCK=64)),
           error(lambda: mgpu.add_kernel[(16,)](x.ptr, x.ptr, out.ptr, 1000, BLOCK=64)),
           error(lambda: out.copy_to_host()), error(rt.synchronize)]
    del x, out                                     # frees nothing through the driver
    os.write(w, json.dumps({"child": got, "seconds": time.perf_counter() - t0}).encode())
    os._exit(0)
os.close(w)
child = json.loads(os.read(r, 1 << 16).decode())
os.waitpid(pid, 0)
mgpu.add_kernel[(16,)](x, x, out, 1000, BLOCK=64)  # the parent is unaffected
child["parent_sum"] = float(out.copy_to_host()[:1000].sum())
child["native"] = rt.native_launcher_status()
print(json.dumps(child))
"""


@PATHS
def test_a_forked_child_gets_a_clear_error(package, native):
    info = run(FORK, package, native, timeout=120)
    check_path(info, native)
    assert info["parent_sum"] == 2000.0 and info["seconds"] < 10
    for kind, message in info["child"]:
        assert kind == "ForkedProcessError", (kind, message)
        assert "which then forked this process" in message and "'spawn'" in message


TENSORS = """
calls = []
def counted(name):
    method = getattr(torch.Tensor, name)
    def wrapper(self, *a):
        calls.append(name)
        return method(self, *a)
    return wrapper
for name in ("data_ptr", "get_device"):
    setattr(torch.Tensor, name, counted(name))
n = 1000
x, y, out, want = inputs("cuda", n)
add(x, y, out, n)                                 # the Python path: learns torch.Tensor, loads
result = {"first": ok(out, want)}
calls.clear()
for _ in range(5):
    out.zero_()
    add(x, y, out, n)
result["steady"] = ok(out, want)
result["calls"] = len(calls)
result["accessors"] = rt._TENSOR_INFO[2] is not None
w = torch.nn.Parameter(torch.randn(n, device="cuda"))  # a module's weight: read as a tensor is
add(w, y, out, n)
calls.clear()
for _ in range(3):
    add(w, y, out, n)
result["parameter"] = [ok(out, (w.detach() + y).cpu()), len(calls)]
out.zero_()
add(x[16:], y[16:], out[16:], n - 16)             # views: the address includes the storage offset
result["views"] = ok(out, torch.cat([torch.zeros(16), want[16:]]))
new = torch.zeros(n, device="cuda")
out.data = new                                    # the same tensor object, other memory
add(x, y, out, n)
result["data_swapped"] = ok(new, want)
y.data = y.data.half()                            # the same object, now fp16
result["half"] = error(lambda: add(x, y, out, n))
y.data = y.data.float().cpu()                     # now on the host
result["host"] = error(lambda: add(x, y, out, n))
print(json.dumps({"native": rt.native_launcher_status(), **result}))
"""


@PATHS
def test_torch_tensors_are_read_as_they_are_at_each_launch(package, native):
    info = run(TENSORS, package, native)
    check_path(info, native)
    assert info["first"] and info["steady"] and info["views"] and info["data_swapped"], info
    assert info["parameter"][0] is True, info
    if native == "1":          # PyTorch's C accessors: no call into the tensor's methods
        assert info["accessors"] is True and info["calls"] == 0 and info["parameter"][1] == 0, info
    else:
        assert info["calls"] == 5 * 3 * 2, info
    assert info["half"][0] == "TypeError" and "'y_ptr'" in info["half"][1] and "float16" in info["half"][1], info
    assert info["host"][0] == "HostMemoryArgument" and "y_ptr" in info["host"][1], info


JIT = """
import json, sys
import torch
sys.path.insert(0, {kernels!r})
import elementwise as ew
from mytriton.runtime import driver as rt
n = 3000
x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
results = []
for _ in range(3):                 # the first compiles (and registers the library), then the fast path
    out = torch.zeros(n, device="cuda")
    ew.add_kernel[((n + 255) // 256,)](x, y, out, n, BLOCK=256)
    torch.cuda.synchronize()
    results.append(bool(torch.equal(out, x + y)))
print(json.dumps({{"native": rt.native_launcher_status(), "results": results}}))
"""


@PATHS
def test_jit_launches_through_the_native_path(native, tmp_path):
    source = textwrap.dedent(JIT).format(kernels=str(REPO / "manifests" / "kernels"))
    env = {**os.environ, "MYTRITON_NATIVE_LAUNCH": native, "MYTRITON_CACHE_DIR": str(tmp_path),
           "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=240, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    info = json.loads(result.stdout.splitlines()[-1])
    check_path(info, native)
    assert info["results"] == [True, True, True]
    assert [p.suffix for p in (tmp_path / "native").glob("*")] == ([".so"] if native == "1" else [])


# --------------------------------------------------------------------------- two GPUs

TWO_DEVICES = """
result = {}
torch.cuda.set_device(0)
torch.zeros(1, device="cuda:0")                  # device 0's primary context is current
x1, y1, out1, want = inputs("cuda:1")
for _ in range(3):                               # first launch, then the hot paths
    out1.zero_()
    add(x1, y1, out1, 1000)
    result.setdefault("cuda1", []).append(ok(out1, want))
result["current_after"] = current()
x0, y0, out0, want0 = inputs("cuda:0", seed=3)
add(x0, y0, out0, 1000)
result["cuda0"] = ok(out0, want0)
with torch.cuda.device(1):                       # device 1 current: tensors and int addresses
    out1.zero_()
    add(x1, y1, out1, 1000)
    add(x1.data_ptr(), y1.data_ptr(), out1, 1000)
    result["inside_device1"] = ok(out1, want) and current() == [1, 1]
s0, s1 = torch.cuda.Stream(device=0), torch.cuda.Stream(device=1)
out1.zero_()
add(x1, y1, out1, 1000, stream=s1)
s1.synchronize()
result["stream1"] = ok(out1, want)
out1.zero_()
result["mixed"] = error(lambda: add(x0, y1, out1, 1000))
result["int_beside_cuda1"] = error(lambda: add(x1, y1.data_ptr(), out1, 1000))
result["stream0_data1"] = error(lambda: add(x1, y1, out1, 1000, stream=s0))
result["stream1_data0"] = error(lambda: add(x0, y0, out0, 1000, stream=s1))
result["stream1_ints"] = error(lambda: add(x0.data_ptr(), y0.data_ptr(), out0.data_ptr(), 1000, stream=s1.cuda_stream))
torch.cuda.synchronize(0); torch.cuda.synchronize(1)
result["untouched_by_refused"] = bool((out1 == 0).all().item())
add(x1, y1, out1, 1000)
result["healthy_after"] = ok(out1, want) and current() == [0, 0]

# DeviceArrays allocated on device 1 (no torch involved), launched while device 0 is current
a = mgpu.DeviceArray.from_numpy(np.arange(1000, dtype=np.float32), device=1)
b = mgpu.DeviceArray(1000, np.float32, device=1)
add(a, a, b, 1000)
result["device_array"] = [a.device, bool((b.copy_to_host() == 2 * np.arange(1000, dtype=np.float32)).all()),
                          current()]

# CuPy arrays, and an object with only __cuda_array_interface__ (the driver is asked where it is)
try:
    import cupy
    with cupy.cuda.Device(1):
        c = cupy.arange(1000, dtype=cupy.float32)
        d = cupy.zeros(1000, dtype=cupy.float32)
    torch.cuda.set_device(0)
    add(c, c, d, 1000)
    with cupy.cuda.Device(1):
        result["cupy"] = bool((cupy.asnumpy(d) == 2 * np.arange(1000, dtype=np.float32)).all())
except ImportError:
    result["cupy"] = "no cupy"

class Interface:
    def __init__(self, t):
        self.t, self.__cuda_array_interface__ = t, t.__cuda_array_interface__
out1.zero_()
result["cai_device"] = rt.argument_device(Interface(x1))
add(Interface(x1), Interface(y1), Interface(out1), 1000)
result["cai"] = [ok(out1, want), current()]

# threads on two GPUs, each on its own stream, none of them switching devices
def work(i, errors, results):
    try:
        device = i % 2
        x, y, out, want = inputs(f"cuda:{device}", 4096, seed=i)
        stream = torch.cuda.Stream(device=device)
        for _ in range(50):
            add(x, y, out, 4096, stream=stream)
            add(out, y, out, 4096, stream=stream)
        stream.synchronize()
        results[i] = bool(torch.equal(out.cpu(), (x.cpu() + y.cpu()) + y.cpu()))
    except Exception as exc:
        errors.append(repr(exc))
errors, results = [], {}
threads = [threading.Thread(target=work, args=(i, errors, results)) for i in range(16)]
for t in threads: t.start()
for t in threads: t.join()
result["threads"] = [errors, sorted(results.items())]
kernel = mgpu.add_kernel.kernel(mgpu.add_kernel.select({"BLOCK": 64}))
result["loaded"] = len(kernel.loaded_images)
result["native"] = rt.native_launcher_status()
print(json.dumps(result))
"""


@pytest.mark.multigpu
@pytest.mark.skipif(device_count() < 2, reason="needs two GPUs")
@PATHS
def test_loader_on_two_devices(package, native):
    info = run(TWO_DEVICES, package, native)
    check_path(info, native)
    assert info["cuda1"] == [True, True, True] and info["current_after"] == [0, 0]
    assert info["cuda0"] is True and info["inside_device1"] is True and info["stream1"] is True
    assert info["mixed"] == ["ValueError", "add_kernel: the pointer arguments are on different devices ('x_ptr' on "
                             "cuda:0; 'y_ptr' and 'out_ptr' on cuda:1); a launch runs on one device: move them "
                             "to the same one"]
    assert info["int_beside_cuda1"][0] == "ValueError"
    assert info["int_beside_cuda1"][1].startswith("add_kernel: parameter 'x_ptr' is on cuda:1 but 'y_ptr' is an "
                                                  "int address, which means the current device (cuda:0)")
    assert info["stream0_data1"] == ["ValueError", "add_kernel: stream= is a stream of cuda:0 but the launch runs "
                                     "on cuda:1 (where 'x_ptr', 'y_ptr' and 'out_ptr' are); pass a stream of cuda:1"]
    assert info["stream1_data0"] == ["ValueError", "add_kernel: stream= is a stream of cuda:1 but the launch runs "
                                     "on cuda:0 (where 'x_ptr', 'y_ptr' and 'out_ptr' are); pass a stream of cuda:0"]
    assert info["stream1_ints"][0] == "ValueError" and "the current device" in info["stream1_ints"][1]
    assert info["untouched_by_refused"] is True and info["healthy_after"] is True
    assert info["device_array"] == [1, True, [0, 0]]
    assert info["cupy"] in (True, "no cupy")
    assert info["cai_device"] == 1 and info["cai"] == [True, [0, 0]]
    assert info["threads"] == [[], [[i, True] for i in range(16)]]
    assert info["loaded"] == 2                       # one module per device


# --------------------------------------------------------------------------- JIT on two GPUs

sys.path.insert(0, str(REPO / "manifests" / "kernels"))


@pytest.mark.multigpu
@pytest.mark.skipif(device_count() < 2, reason="needs two GPUs")
def test_jit_on_two_devices(monkeypatch):
    import elementwise as ew
    from cuda.bindings import driver as cu
    torch.cuda.set_device(0)
    torch.zeros(1, device="cuda:0")
    n = 3000
    x, y = torch.randn(n, device="cuda:1"), torch.randn(n, device="cuda:1")
    for _ in range(2):
        out = torch.zeros(n, device="cuda:1")
        kernel = ew.add_kernel[((n + 255) // 256,)](x, y, out, n, BLOCK=256)
        torch.cuda.synchronize(1)
        assert torch.equal(out, x + y)
    assert torch.cuda.current_device() == 0 and int(cu.cuCtxGetDevice()[1]) == 0
    x0 = x.to("cuda:0")
    assert ew.add_kernel[(12,)](x0, x0, x0.clone(), n, BLOCK=256) is kernel      # one compile per capability
    with pytest.raises(ValueError, match="add_kernel: the pointer arguments are on different devices \\('x_ptr' "
                                         "on cuda:0; 'y_ptr' and 'out_ptr' on cuda:1\\)"):
        ew.add_kernel[(12,)](x0, y, out, n, BLOCK=256)
    with pytest.raises(ValueError, match="stream= is a stream of cuda:0 but the launch runs on cuda:1"):
        ew.add_kernel[(12,)](x, y, out, n, BLOCK=256, stream=torch.cuda.Stream(device=0))
    with torch.cuda.device(1):
        out = torch.zeros(n, device="cuda:1")
        ew.add_kernel[(12,)](x, y, out, n, BLOCK=256)
        torch.cuda.synchronize()
        assert torch.equal(out, x + y)
    monkeypatch.setenv("MYTRITON_INTERPRET", "1")   # the interpreter refuses device memory clearly
    with pytest.raises(TypeError, match="the interpreter runs on host memory; got a tensor on cuda:1"):
        ew.add_kernel[(12,)](x, y, out, n, BLOCK=256)

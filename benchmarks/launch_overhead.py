"""Launch overhead of the mytriton runtime, next to a bare cuLaunchKernel and Triton.

    python benchmarks/launch_overhead.py [--launches 200] [--repeats 200]

Every row launches the same tiny kernel (out = x + y on 1024 floats, one block of 128
threads) ``--launches`` times back to back; the figure is the median over ``--repeats`` such
batches of the host time per launch call, in microseconds (see ``measure``).  Rows:

  bare cuLaunchKernel (address)   cuda-python with the fastest argument passing found:
                                  CUfunction, stream None, kernelParams as the address
                                  of a prebuilt void*[] (no per-launch work at all)
  bare cuLaunchKernel (tuple)     cuda-python's (values, ctypes types) form
  Kernel.launch (...)             mytriton.runtime.driver.Kernel with int addresses,
                                  DeviceArrays, torch tensors
  KernelFamily[grid](...)         the AOT loader's dispatch (constexpr selection + launch), with the
                                  native launch path a built package ships (_mtlaunch.abi3.so,
                                  compiled here from mytriton/runtime/launcher.c)
  ... tuned dispatch              a family tuned at build time launched without constexprs: the
                                  config tuned for the nearest problem, found per launch
  ... pure Python                 the same with the pure-Python launchers (a second copy of the
                                  runtime without the native library: where it cannot be built)
  ... torch on cuda:1             (two GPUs) tensors on cuda:1 while cuda:0 is current: the launch
                                  runs in cuda:1's primary context, pushed and popped around it
  mytriton JIT                    the same kernel as @mytriton.jit (bind, specialization key,
                                  launch), torch tensors
  triton JIT                      an equivalent @triton.jit kernel, if triton+torch import

Then time-to-first-launch, each in a fresh interpreter: import + load + launch + sync.
Needs an NVIDIA GPU; NVRTC (cuda-bindings + nvidia-cuda-nvrtc) compiles the kernel.
"""
import argparse
import atexit
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from mytriton.runtime import driver as rt  # noqa: E402
from mytriton.runtime import native  # noqa: E402

SOURCE = r"""
extern "C" __global__ void tiny_add(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}
"""
N = 1024
PARAMS = [("x", "*fp32:16"), ("y", "*fp32:16"), ("out", "*fp32:16"), ("n", "i32")]


def compile_cubin(arch: str) -> bytes:
    from cuda.bindings import nvrtc
    err, prog = nvrtc.nvrtcCreateProgram(SOURCE.encode(), b"tiny.cu", 0, [], [])
    opts = [f"--gpu-architecture={arch}".encode()]
    err, = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise SystemExit(f"NVRTC failed: {err}")
    err, size = nvrtc.nvrtcGetCUBINSize(prog)
    cubin = bytearray(size)
    nvrtc.nvrtcGetCUBIN(prog, cubin)
    nvrtc.nvrtcDestroyProgram(prog)
    return bytes(cubin)


def measure(candidates, launches, repeats):
    """Host time per launch for each (name, launch, sync): the median over ``repeats`` rounds of
    ``launches`` back-to-back launches timed without the closing sync, the candidates taking turns
    round by round. Batches stay well below the driver's queue depth, so the figure is the launch
    path's cost, not the rate at which the GPU drains a full queue (which made long batches read
    4.0 or 5.8 us for the same bare call within one run)."""
    samples = {name: [] for name, _, _ in candidates}
    for name, launch, sync in candidates:
        for _ in range(50):
            launch()
        sync()
    for _ in range(repeats):
        for name, launch, sync in candidates:
            sync()
            t0 = time.perf_counter()
            for _ in range(launches):
                launch()
            samples[name].append((time.perf_counter() - t0) / launches * 1e6)
    for _, _, sync in candidates:
        sync()
    return [(name, statistics.median(samples[name])) for name, _, _ in candidates]


def check(ret):
    if ret[0]:
        raise SystemExit(f"driver call failed: {ret[0]}")
    return ret[1] if len(ret) == 2 else None


def pure_python_runtime():
    """A second copy of the runtime module that never loads the native launch library."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("_pure_runtime", rt.__file__)
    module = importlib.util.module_from_spec(spec)
    sys.modules["_pure_runtime"] = module
    spec.loader.exec_module(module)
    return module


def steady_state(cubin, arch, launches, repeats):
    from cuda.bindings import driver as cuda
    import numpy as np
    rows = []
    sync = rt.synchronize
    x, y = rt.DeviceArray.from_numpy(np.ones(N, np.float32)), rt.DeviceArray.from_numpy(np.ones(N, np.float32))
    out = rt.DeviceArray(N, np.float32)

    # bare cuda-python: the module loaded by hand, everything prebuilt
    module = check(cuda.cuModuleLoadData(cubin))
    fn = check(cuda.cuModuleGetFunction(module, b"tiny_add"))
    values = [ctypes.c_uint64(x.ptr), ctypes.c_uint64(y.ptr), ctypes.c_uint64(out.ptr), ctypes.c_int32(N)]
    argv = (ctypes.c_void_p * 4)(*[ctypes.addressof(v) for v in values])
    address = ctypes.addressof(argv)
    launch_kernel = cuda.cuLaunchKernel

    def bare():
        err, = launch_kernel(fn, 1, 1, 1, 128, 1, 1, 0, None, address, 0)
        if err:
            raise RuntimeError(err)
    rows.append(("bare cuLaunchKernel (address)", bare, sync))
    tuple_args = ((x.ptr, y.ptr, out.ptr, N), (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int))

    def bare_tuple():
        err, = launch_kernel(fn, 1, 1, 1, 128, 1, 1, 0, 0, tuple_args, 0)
        if err:
            raise RuntimeError(err)
    rows.append(("bare cuLaunchKernel (tuple)", bare_tuple, sync))

    k = rt.Kernel("tiny_add", PARAMS, 4, 0, {arch: cubin})
    launch = k.launch
    ints = [x.ptr, y.ptr, out.ptr, N]
    rows.append(("Kernel.launch (int addresses)", lambda: launch(1, ints), sync))
    arrays = [x, y, out, N]
    rows.append(("Kernel.launch (DeviceArray)", lambda: launch(1, arrays), sync))
    rows.append(("Kernel.launch (grid tuple)", lambda: launch((1,), ints), sync))
    specs = [{"id": "BLOCK128_w4", "constexprs": {"BLOCK": 128}, "num_warps": 4, "shared": 0, "symbol": "tiny_add",
              "images": {arch: cubin}}]
    fam = rt.KernelFamily("tiny_add", PARAMS, ["BLOCK"], specs)
    rows.append(("KernelFamily[grid](...) (DeviceArray)", lambda: fam[(1,)](x, y, out, N, BLOCK=128), sync))
    xp, yp, op = x.ptr, y.ptr, out.ptr
    rows.append(("KernelFamily[grid](...) (int addresses)", lambda: fam[(1,)](xp, yp, op, N, BLOCK=128), sync))
    # a family tuned at build time: no constexprs, the config tuned for the key (n) chosen per launch
    tuned_specs = specs + [{**specs[0], "id": "BLOCK256_w4", "constexprs": {"BLOCK": 256}}]
    tuning = {"key": ["n"], "choices": [[[N], 0], [[64 * N], 1]]}
    tfam = rt.KernelFamily("tiny_add", PARAMS, ["BLOCK"], tuned_specs, tuning=tuning)
    rows.append(("KernelFamily[grid](...) tuned dispatch (DeviceArray)", lambda: tfam[(1,)](x, y, out, N), sync))
    rows.append(("KernelFamily[grid](...) tuned dispatch (int addresses)", lambda: tfam[(1,)](xp, yp, op, N), sync))
    pure = pure_python_runtime()
    pfam = pure.KernelFamily("tiny_add", PARAMS, ["BLOCK"], specs)
    ptfam = pure.KernelFamily("tiny_add", PARAMS, ["BLOCK"], tuned_specs, tuning=tuning)
    px, py_, pout = (pure.DeviceArray.from_numpy(np.ones(N, np.float32)) for _ in range(3))
    rows.append(("KernelFamily[grid](...) (DeviceArray) pure Python",
                 lambda: pfam[(1,)](px, py_, pout, N, BLOCK=128), sync))
    rows.append(("KernelFamily[grid](...) (int addresses) pure Python",
                 lambda: pfam[(1,)](xp, yp, op, N, BLOCK=128), sync))
    rows.append(("KernelFamily[grid](...) tuned dispatch (int addresses) pure Python",
                 lambda: ptfam[(1,)](xp, yp, op, N), sync))
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError
    except ImportError:
        torch = None
    if torch is not None:
        tx, ty, tout = (torch.ones(N, device="cuda") for _ in range(3))
        targs = [tx, ty, tout, N]
        rows.append(("Kernel.launch (torch tensors)", lambda: launch(1, targs), torch.cuda.synchronize))
        rows.append(("KernelFamily[grid](...) (torch tensors)", lambda: fam[(1,)](tx, ty, tout, N, BLOCK=128),
                     torch.cuda.synchronize))
        rows.append(("KernelFamily[grid](...) (torch tensors) pure Python",
                     lambda: pfam[(1,)](tx, ty, tout, N, BLOCK=128), torch.cuda.synchronize))
        if torch.cuda.device_count() >= 2:      # the data's device is not the current one: push / pop
            t1 = [torch.ones(N, device="cuda:1") for _ in range(3)]
            rows.append(("KernelFamily[grid](...) (torch on cuda:1, cuda:0 current)",
                         lambda: fam[(1,)](*t1, N, BLOCK=128), lambda: torch.cuda.synchronize(1)))
        import mytriton
        import mytriton.language as mtl

        @mytriton.jit
        def tiny_add_mt(x, y, out, n, BLOCK: mtl.constexpr):
            offs = mtl.program_id(0) * BLOCK + mtl.arange(0, BLOCK)
            mask = offs < n
            mtl.store(out + offs, mtl.load(x + offs, mask=mask) + mtl.load(y + offs, mask=mask), mask=mask)
        rows.append(("mytriton JIT (torch tensors)", lambda: tiny_add_mt[(1,)](tx, ty, tout, N, BLOCK=128),
                     torch.cuda.synchronize))
        try:
            import triton
            import triton.language as tl

            @triton.jit
            def tiny_add(x, y, out, n, BLOCK: tl.constexpr):
                offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                mask = offs < n
                tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)
            rows.append((f"triton {triton.__version__} JIT (torch tensors)",
                         lambda: tiny_add[(1,)](tx, ty, tout, N, BLOCK=128), torch.cuda.synchronize))
        except ImportError:
            pass
    return measure(rows, launches, repeats)


# The two runtime rows differ only in how the runtime is imported (from the package, or the
# verbatim `_runtime.py` copy a built package ships); {{import}} is filled in per row.
_RUNTIME_FIRST_LAUNCH = """
        import time; t0 = time.perf_counter()
        {{import}}
        t_import = time.perf_counter()
        k = rt.Kernel("tiny_add", {params!r}, 4, 0, {{{arch!r}: {path!r}}})
        rt.current_device()                    # the primary context, as the bare script retains it
        from cuda.bindings import driver       # an int address: DeviceArray would also import numpy
        err, ptr = driver.cuMemAlloc({n} * 4)
        k.launch(1, [int(ptr)] * 3 + [{n}])
        rt.synchronize()
        t1 = time.perf_counter()
        print(t_import - t0, t1 - t0)
    """

FIRST_LAUNCH = {
    "mytriton Kernel (cubin file)": _RUNTIME_FIRST_LAUNCH.replace(
        "{{import}}", "import sys; sys.path.insert(0, {root!r}); from mytriton.runtime import driver as rt"),
    "standalone _runtime.py copy (cubin file)": _RUNTIME_FIRST_LAUNCH.replace(
        "{{import}}", "import sys; sys.path.insert(0, {tmp!r}); import _runtime as rt"),
    "standalone _runtime.py + _mtlaunch.abi3.so": _RUNTIME_FIRST_LAUNCH.replace(
        "{{import}}", "import sys; sys.path.insert(0, {tmp!r}); import _runtime as rt; "
                      "rt.use_native_launcher({tmp!r} + '/_mtlaunch.abi3.so')"),
    "bare cuda-python (cubin file)": """
        import time; t0 = time.perf_counter()
        import ctypes
        from cuda.bindings import driver as cuda
        t_import = time.perf_counter()
        cuda.cuInit(0)
        err, dev = cuda.cuDeviceGet(0)
        err, ctx = cuda.cuDevicePrimaryCtxRetain(dev)
        cuda.cuCtxSetCurrent(ctx)
        err, mod = cuda.cuModuleLoadData(open({path!r}, "rb").read())
        err, fn = cuda.cuModuleGetFunction(mod, b"tiny_add")
        err, ptr = cuda.cuMemAlloc({n} * 4)
        vals = [ctypes.c_uint64(int(ptr))] * 3 + [ctypes.c_int32({n})]
        argv = (ctypes.c_void_p * 4)(*[ctypes.addressof(v) for v in vals])
        err, = cuda.cuLaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, None, ctypes.addressof(argv), 0)
        assert not err, err
        cuda.cuCtxSynchronize()
        t1 = time.perf_counter()
        print(t_import - t0, t1 - t0)
    """,
}


def first_launch(cubin, arch):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"tiny_add.{arch}.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        with open(rt.__file__, "rb") as src, open(os.path.join(tmp, "_runtime.py"), "wb") as dst:
            dst.write(src.read())
        with open(os.path.join(tmp, native.FILENAME), "wb") as dst:
            dst.write(LIBRARY.data)
        for name, code in FIRST_LAUNCH.items():
            code = textwrap.dedent(code).format(root=root, tmp=tmp, params=PARAMS, arch=arch, path=path, n=N)
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
                wall = time.perf_counter() - t0
                if proc.returncode:
                    raise SystemExit(f"{name} failed:\n{proc.stderr}")
                t_import, t_total = map(float, proc.stdout.split())
                times.append((t_import, t_total, wall))
            best = min(times, key=lambda t: t[1])
            rows.append((name, *best))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--launches", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    if not rt.driver_available():
        raise SystemExit(f"no usable CUDA driver/GPU: {rt._unavailable_reason}")
    global LIBRARY
    LIBRARY = native.build()
    if LIBRARY.data is None:
        raise SystemExit(f"cannot build the native launch library: {LIBRARY.reason}")
    with tempfile.NamedTemporaryFile(suffix=native.FILENAME, delete=False) as f:
        f.write(LIBRARY.data)
    atexit.register(os.unlink, f.name)   # (a loaded library may be unlinked)
    rt.use_native_launcher(f.name)     # as a built package's __init__ does; loaded at the first launch
    major, minor = rt.compute_capability()
    arch = f"sm_{major}{minor}"
    cubin = compile_cubin(arch)
    print(f"device sm_{major}{minor}, CUDA driver {'.'.join(map(str, rt._cuda_driver_version()))}, "
          f"Python {sys.version.split()[0]}; {args.launches} launches x {args.repeats} batches\n")
    rows = steady_state(cubin, arch, args.launches, args.repeats)
    print(f"native launch path: {rt.native_launcher_status()}")
    bare = rows[0][1]
    print(f"{'launch path':66s} {'us/launch':>10s} {'vs bare':>9s}")
    for name, us in rows:
        if us is None:
            print(f"{name:66s} {'n/a':>10s}")
        else:
            print(f"{name:66s} {us:10.2f} {100 * (us / bare - 1):+8.1f}%")
    print(f"\n{'time to first launch (fresh process)':44s} {'import s':>10s} {'total s':>9s} {'wall s':>8s}")
    for name, t_import, t_total, wall in first_launch(cubin, arch):
        print(f"{name:44s} {t_import:10.3f} {t_total:9.3f} {wall:8.3f}")


if __name__ == "__main__":
    main()

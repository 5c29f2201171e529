"""The runtime on a real GPU: hand-written CUDA C++ kernels compiled with NVRTC directly
(no other part of mytriton), loaded and launched through mytriton/runtime/driver.py."""
import functools
import hashlib
import struct
import threading

import numpy as np
import pytest

from mytriton.runtime import driver as rt

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not rt.driver_available(), reason="needs an NVIDIA GPU and driver")]

try:
    import torch
    HAVE_TORCH_CUDA = torch.cuda.is_available()
except ImportError:
    torch, HAVE_TORCH_CUDA = None, False
needs_torch = pytest.mark.skipif(not HAVE_TORCH_CUDA, reason="needs PyTorch with CUDA")

SOURCE = r"""
extern "C" __global__ void add_kernel(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}

template <typename T> __device__ void put(unsigned long long* out, int i, T v) {
    unsigned long long bits = 0;
    memcpy(&bits, &v, sizeof(T));
    out[i] = bits;
}

// fp16/bf16 arrive as their bit patterns: same size and alignment as __half / __nv_bfloat16
extern "C" __global__ void scalars(unsigned long long* out, bool a, signed char b, unsigned char c, short d,
                                   unsigned short e, unsigned short f16, unsigned short bf16, int h,
                                   unsigned int i, float j, long long k, unsigned long long l, double m) {
    if (threadIdx.x != 0) return;
    put(out, 0, a); put(out, 1, b); put(out, 2, c); put(out, 3, d); put(out, 4, e); put(out, 5, f16);
    put(out, 6, bf16); put(out, 7, h); put(out, 8, i); put(out, 9, j); put(out, 10, k); put(out, 11, l);
    put(out, 12, m);
}

extern "C" __global__ void grid2d(int* out, int width) {
    if (threadIdx.x == 0) out[blockIdx.y * width + blockIdx.x] = blockIdx.y * 1000 + blockIdx.x;
}

extern "C" __global__ void reverse_smem(float* out, int n) {
    extern __shared__ float buf[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = 2.0f * i;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = buf[n - 1 - i];
}

extern "C" __global__ void bump(int* counter) {
    if (threadIdx.x == 0) counter[0] += 1;
}

extern "C" __global__ void __launch_bounds__(128) bounded(int* x) {
    x[threadIdx.x] = 1;
}
"""
ADD = [("x", "*fp32:16"), ("y", "*fp32:16"), ("out", "*fp32:16"), ("n", "i32")]


def nvrtc_compile(source: str, arch: str, ptx: bool = False) -> bytes:
    """Compile ``source`` for ``sm_XY`` (cubin) or ``compute_XY`` (PTX) with NVRTC."""
    from cuda.bindings import nvrtc

    def check(ret, what):
        if ret[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"{what} failed: {ret[0]}")
        return ret[1] if len(ret) > 1 else None
    prog = check(nvrtc.nvrtcCreateProgram(source.encode(), b"runtime_test.cu", 0, [], []), "nvrtcCreateProgram")
    try:
        opts = [f"--gpu-architecture={arch.replace('sm_', 'compute_') if ptx else arch}".encode(), b"-std=c++17"]
        err, = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            size = check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
            log = b" " * size
            check(nvrtc.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog")
            raise RuntimeError(f"NVRTC failed: {log.decode(errors='replace')}")
        get_size, get = (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX) if ptx else (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN)
        size = check(get_size(prog), "size")
        data = b" " * size
        check(get(prog, data), "get")
        return data
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


@pytest.fixture(scope="module")
def arch():
    major, minor = rt.compute_capability()
    return f"sm_{major}{minor}"


@functools.lru_cache(maxsize=None)
def _images(arch):
    return {"cubin": nvrtc_compile(SOURCE, arch), "ptx": nvrtc_compile(SOURCE, arch, ptx=True)}


@pytest.fixture(scope="module")
def cubin(arch):
    return {arch: _images(arch)["cubin"]}


@pytest.fixture(scope="module")
def ptx(arch):
    image = _images(arch)["ptx"]
    isa, _ = rt._ptx_info(image)
    if rt._ptx_needs_driver(isa) > rt._cuda_driver_version():
        pytest.skip(f"the driver (CUDA {rt._cuda_driver_version()}) cannot JIT PTX ISA {isa}")
    return {"ptx": image}


def random_inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


def test_compute_capability_and_device(arch):
    assert rt.current_device() == 0
    major, minor = rt.compute_capability()
    assert arch == f"sm_{major}{minor}" and major >= 7


@pytest.mark.parametrize("which", ["cubin", "ptx"])
def test_add_on_device_arrays(which, cubin, ptx):
    images = cubin if which == "cubin" else ptx
    k = rt.Kernel("add_kernel", ADD, 4, 0, images)
    n = 10_000
    x, y = random_inputs(n)
    dx, dy, dout = rt.DeviceArray.from_numpy(x), rt.DeviceArray.from_numpy(y), rt.DeviceArray(n, np.float32)
    k.launch((n + 127) // 128, [dx, dy, dout, n])
    rt.synchronize()
    np.testing.assert_array_equal(dout.to_numpy(), x + y)
    assert k.loaded_images == [next(iter(images))]


def test_add_on_int_addresses(cubin):
    k = rt.Kernel("add_kernel", ADD, 2, 0, cubin)
    n = 1000
    x, y = random_inputs(n, seed=1)
    dx, dy, dout = rt.DeviceArray.from_numpy(x), rt.DeviceArray.from_numpy(y), rt.DeviceArray(n, "fp32")
    k[(n + 63) // 64](dx.ptr, dy.ptr, dout.ptr, n)
    rt.synchronize()
    np.testing.assert_array_equal(dout.to_numpy(), x + y)


def test_images_from_files_with_sha256(tmp_path, cubin, arch):
    path = tmp_path / f"add.{arch}.cubin"
    path.write_bytes(cubin[arch])
    k = rt.Kernel("add_kernel", ADD, 4, 0, {arch: str(path)},
                  sha256={arch: hashlib.sha256(cubin[arch]).hexdigest()})
    x, y = random_inputs(256, seed=2)
    dx, dy, dout = rt.DeviceArray.from_numpy(x), rt.DeviceArray.from_numpy(y), rt.DeviceArray(256, np.float32)
    k.launch(2, [dx, dy, dout, 256])
    rt.synchronize()
    np.testing.assert_array_equal(dout.to_numpy(), x + y)
    tampered = rt.Kernel("add_kernel", ADD, 4, 0, {arch: str(path)}, sha256={arch: "0" * 64})
    with pytest.raises(rt.KernelLoadError, match="sha256 mismatch"):
        tampered.launch(2, [dx, dy, dout, 256])


def test_scalar_parameters_arrive_bit_exact(cubin):
    params = [("out", "*u64"), ("a", "i1"), ("b", "i8"), ("c", "u8"), ("d", "i16"), ("e", "u16"),
              ("f16", "fp16"), ("bf16", "bf16"), ("h", "i32"), ("i", "u32"), ("j", "fp32"), ("k", "i64"),
              ("l", "u64"), ("m", "fp64")]
    k = rt.Kernel("scalars", params, 1, 0, cubin)
    out = rt.DeviceArray(13, np.uint64)
    values = [True, -5, 250, -300, 60000, 1.5, -2.0, -123456, 2**32 - 1, 0.25, -2**40, 2**64 - 2, 1e300]
    k.launch(1, [out] + values)
    rt.synchronize()
    formats = "<? <b <B <h <H <e <H <i <I <f <q <Q <d".split()
    expected = [struct.unpack("<Q", struct.pack(f, v).ljust(8, b"\0"))[0]
                for f, v in zip(formats, values[:6] + [0xC000] + values[7:])]
    assert out.to_numpy().tolist() == expected


def test_2d_grid(cubin):
    k = rt.Kernel("grid2d", [("out", "*i32"), ("width", "i32")], 1, 0, cubin)
    w, h = 37, 5
    out = rt.DeviceArray((h, w), np.int32)
    k.launch((w, h), [out, w])
    rt.synchronize()
    rows, cols = np.mgrid[0:h, 0:w]
    np.testing.assert_array_equal(out.to_numpy(), rows * 1000 + cols)


def test_dynamic_shared_memory_above_48k(cubin):
    n = 100 * 1024 // 4
    k = rt.Kernel("reverse_smem", [("out", "*fp32"), ("n", "i32")], 8, n * 4, cubin)
    out = rt.DeviceArray(n, np.float32)
    k.launch(1, [out, n])
    rt.synchronize()
    np.testing.assert_array_equal(out.to_numpy(), 2.0 * np.arange(n, dtype=np.float32)[::-1])
    too_much = rt.Kernel("reverse_smem", [("out", "*fp32"), ("n", "i32")], 8, 1024 * 1024, cubin)
    with pytest.raises(rt.KernelLoadError, match="needs 1048576 bytes of dynamic shared memory"):
        too_much.launch(1, [out, n])


def test_launch_bounds_exceeded_is_a_clear_error(cubin):
    x = rt.DeviceArray(256, np.int32)
    with pytest.raises(rt.KernelLoadError, match="num_warps=8 needs 256 threads per block; the compiled kernel "
                                                 "allows at most 128"):
        rt.Kernel("bounded", [("x", "*i32")], 8, 0, cubin).launch(1, [x])
    rt.Kernel("bounded", [("x", "*i32")], 4, 0, cubin).launch(1, [x])
    rt.synchronize()


def test_argument_errors_on_a_real_device(cubin):
    k = rt.Kernel("add_kernel", ADD, 4, 0, cubin)
    n = 64
    x = rt.DeviceArray.from_numpy(np.ones(n + 4, np.float32))
    out = rt.DeviceArray(n, np.float32)
    with pytest.raises(ValueError, match=f"parameter 'y' is declared \\*fp32:16 but address {x.ptr + 4:#x} "
                                         "is not 16-byte aligned"):
        k.launch(1, [x, x.view_offset(4), out, n])
    with pytest.raises(TypeError, match="parameter 'x' expects \\*fp32, got a float64 array"):
        k.launch(1, [rt.DeviceArray(n, np.float64), x, out, n])
    with pytest.raises(OverflowError, match="parameter 'n' \\(i32\\): 4294967296 is out of range for i32"):
        k.launch(1, [x, x, out, 2**32])
    k.launch(1, [x, x, out, n])    # the context is fine after refused launches
    rt.synchronize()
    np.testing.assert_array_equal(out.to_numpy(), np.full(n, 2, np.float32))


def test_stream_created_with_the_driver(cubin):
    from cuda.bindings import driver as cuda
    err, stream = cuda.cuStreamCreate(cuda.CUstream_flags.CU_STREAM_NON_BLOCKING)
    assert err == cuda.CUresult.CUDA_SUCCESS
    try:
        k = rt.Kernel("add_kernel", ADD, 4, 0, cubin)
        n = 4096
        x, y = random_inputs(n, seed=3)
        dx, dy = rt.DeviceArray.from_numpy(x), rt.DeviceArray.from_numpy(y)
        out1, out2 = rt.DeviceArray(n, np.float32), rt.DeviceArray(n, np.float32)
        k.launch(n // 128, [dx, dy, out1, n], stream=stream)          # a CUstream
        k.launch(n // 128, [dx, dy, out2, n], stream=int(stream))     # a raw handle
        assert cuda.cuStreamSynchronize(stream)[0] == cuda.CUresult.CUDA_SUCCESS
        np.testing.assert_array_equal(out1.to_numpy(), x + y)
        np.testing.assert_array_equal(out2.to_numpy(), x + y)
    finally:
        cuda.cuStreamDestroy(stream)


def test_closed_stream_raises(cubin):
    """A launch on a closed runtime Stream is a Python exception; the good launch before it ran."""
    k = rt.Kernel("bump", [("c", "*i32")], 1, 0, cubin)
    c = rt.DeviceArray.from_numpy(np.zeros(1, np.int32))
    with rt.Stream() as stream:
        k.launch(1, [c], stream=stream)
        stream.synchronize()
    with pytest.raises(ValueError, match="this Stream is closed"):
        k.launch(1, [c], stream=stream)
    stream.close()                                   # idempotent
    rt.synchronize()
    assert c.to_numpy()[0] == 1


def test_many_launches(cubin):
    k = rt.Kernel("bump", [("c", "*i32")], 1, 0, cubin)
    counter = rt.DeviceArray.from_numpy(np.zeros(1, np.int32))
    for _ in range(20_000):
        k.launch(1, [counter])
    rt.synchronize()
    assert counter.to_numpy()[0] == 20_000
    assert len(k.loaded_images) == 1


def test_launch_from_another_thread(cubin):
    """A new thread has no current context: the runtime makes the primary one current."""
    k = rt.Kernel("bump", [("c", "*i32")], 1, 0, cubin)
    counter = rt.DeviceArray.from_numpy(np.zeros(1, np.int32))
    errors = []

    def work():
        try:
            for _ in range(100):
                k.launch(1, [counter])
            rt.synchronize()
        except Exception as e:   # surfaces in the assertion below
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rt.synchronize()
    assert errors == [] and len(k.loaded_images) == 1
    assert counter.to_numpy()[0] == 400     # all on the context's (legacy) default stream: serialized


def test_device_array_free_from_another_thread():
    a = rt.DeviceArray(1 << 20, np.float32)
    t = threading.Thread(target=a.free)
    t.start()
    t.join()
    assert a.ptr == 0
    a.free()


def test_kernel_family_dispatch(cubin, arch):
    def spec(block, warps):
        return {"id": f"BLOCK{block}_w{warps}", "constexprs": {"BLOCK": block}, "num_warps": warps, "shared": 0,
                "symbol": "add_kernel", "images": cubin,
                "sha256": {arch: hashlib.sha256(cubin[arch]).hexdigest()}}
    fam = rt.KernelFamily("add_kernel", ADD, ["BLOCK"], [spec(64, 2), spec(256, 8)])
    n = 5000
    x, y = random_inputs(n, seed=4)
    dx, dy = rt.DeviceArray.from_numpy(x), rt.DeviceArray.from_numpy(y)
    for block in (64, 256):
        out = rt.DeviceArray(n, np.float32)
        fam[lambda meta: ((meta["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)](dx, dy, out, n, BLOCK=block)
        rt.synchronize()
        np.testing.assert_array_equal(out.to_numpy(), x + y)
    with pytest.raises(rt.SpecializationNotFoundError, match="built: BLOCK=64, num_warps=2; BLOCK=256, num_warps=8"):
        fam[1](dx, dy, dx, n, BLOCK=128)


@needs_torch
def test_torch_tensors_and_streams(cubin, ptx):
    for images in (cubin, ptx):
        k = rt.Kernel("add_kernel", ADD, 4, 0, images)
        n = 3000
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        out = torch.empty_like(x)
        k.launch((n + 127) // 128, [x, y, out, n])
        torch.cuda.synchronize()
        torch.testing.assert_close(out, x + y, rtol=0, atol=0)
        stream = torch.cuda.Stream()
        out2 = torch.empty_like(x)
        with torch.cuda.stream(stream):
            k[(n + 127) // 128](x, y, out2, n, stream=stream)
        stream.synchronize()
        torch.testing.assert_close(out2, x + y, rtol=0, atol=0)
    with pytest.raises(TypeError, match="parameter 'y' expects \\*fp32, got a float64 array"):
        k.launch(1, [x, y.double(), out, n])
    with pytest.raises(TypeError, match="parameter 'x' .*tensor on cpu"):
        k.launch(1, [x.cpu(), y, out, n])
    with pytest.raises(ValueError, match="16-byte aligned"):
        k.launch(1, [x[1:], y, out, n - 1])
    assert rt.infer_type(torch.zeros(2, device="cuda", dtype=torch.bfloat16)) == "*bf16"


@needs_torch
def test_torch_context_is_reused(cubin):
    """PyTorch made the primary context current: the runtime launches in it."""
    torch.zeros(1, device="cuda")
    from cuda.bindings import driver as cuda
    err, ctx = cuda.cuCtxGetCurrent()
    k = rt.Kernel("bump", [("c", "*i32")], 1, 0, cubin)
    c = torch.zeros(1, dtype=torch.int32, device="cuda")
    k.launch(1, [c])
    torch.cuda.synchronize()
    assert c.item() == 1 and int(cuda.cuCtxGetCurrent()[1]) == int(ctx)

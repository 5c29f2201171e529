"""Run mytriton's generated CUDA C++ on the CPU, for tests without a GPU: the kernel source (as
NVRTC gets it) is compiled by g++ against ``emu.h`` with a launcher that runs each program's
``num_warps * 32`` threads as std::threads of one block (programs one after another), so its
index arithmetic, store ownership, barriers, warp shuffles and shared memory really execute.
Comparing with the interpreter then checks the CUDA backend's code, not only that NVRTC accepts
it. fp16/bf16 go through ``cuda_fp16.h`` here (each conversion rounds as its CUDA namesake); the
atomics' inline PTX (backends/cuda/atomics.py) is rewritten into ``mt_atom`` calls, which run under
one lock (an atom instruction the rewrite does not know stays asm, and g++ refuses it: loudly).
There is no TMA here: a kernel's TMA copies of tensor descriptors all take their element-wise path,
and a tensor-map parameter takes any argument."""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
_C_TYPES = {"float": np.float32, "double": np.float64, "int": np.int32, "unsigned int": np.uint32,
            "long long": np.int64, "unsigned long long": np.uint64, "short": np.int16,
            "signed char": np.int8, "unsigned char": np.uint8, "unsigned short": np.uint16, "bool": np.bool_}
_BUILD = os.path.join(tempfile.gettempdir(), f"mytriton-cuda-emulator-{os.getuid()}")
TENSOR_MAP = "tmap"      # the kind of a tensor-map parameter (its argument: anything, e.g. None)


# backends/cuda/atomics.py's inline PTX: one atom instruction on a generic pointer made global
_ATOM = re.compile(r'asm volatile\("\{ \.reg \.u64 g; cvta\.to\.global\.u64 g, %1; '
                   r'atom\.global\.\w+\.\w+\.([a-z.]+)\.(\w+) %0, \[g\], [^;]*; \}" : '
                   r'"=\w"\(([^()]*(?:\([^()]*\))?[^()]*)\) : "l"\(([^()]*(?:\([^()]*\))?[^()]*)\)'
                   r'((?:, "\w"\((?:[^()]|\([^()]*(?:\([^()]*\))?[^()]*\))*\))*) : "memory"\);')
_PTX_C = {"f32": "float", "f64": "double", "s32": "int", "u32": "unsigned int", "b32": "unsigned int",
          "s64": "long long", "u64": "unsigned long long", "b64": "unsigned long long",
          "f16": "unsigned short", "b16": "unsigned short"}
_UPDATE = {"add": "o + v[0]", "max": "o > v[0] ? o : v[0]", "min": "o < v[0] ? o : v[0]",
           "and": "o & v[0]", "or": "o | v[0]", "xor": "o ^ v[0]", "exch": "v[0]",
           "cas": "o == v[0] ? v[1] : o", "add.noftz": "mt_f16_add(o, v[0])"}


def _atom_call(m) -> str:
    """An atom asm statement as an emu.h mt_atom call (same operands, same result)."""
    op, ptx_type, out, ptr, rest = m.groups()
    values = re.findall(r'"\w"\(((?:[^()]|\([^()]*(?:\([^()]*\))?[^()]*\))*)\)', rest)
    t = _PTX_C[ptx_type]
    vals = ", ".join(f"mt_as<{t}>({v})" for v in values)
    return (f"{{ const {t} v[] = {{{vals}}}; mt_atom<{t}>({out}, (void*)({ptr}), "
            f"[&]({t} o) -> {t} {{ return ({t})({_UPDATE[op]}); }}); }}")


def available() -> bool:
    return shutil.which("g++") is not None


def _build(cu: str):
    m = re.search(r'extern "C" __global__ void __launch_bounds__\((\d+)(?:, \d+)?\)\s*\n(\w+)\((.*)\)\n', cu)
    threads, symbol = int(m.group(1)), m.group(2)
    params = [p.strip() for p in m.group(3).split(",") if p.strip()]
    cu = re.sub(r"extern __shared__ .*mt_smem\[\];", "", cu)      # emu.h has the buffer
    # (a device function's shared memory starts after its callers': an offset into that buffer)
    cu = re.sub(r"extern __shared__ .*mt_smem_all\[\];", "unsigned char* const mt_smem_all = mt_smem;", cu)
    cu = cu.replace("__device__ __noinline__", "__device__")       # (the host compiler's inlining is its own)
    # no TMA here: every TMA copy (backends/cuda/tma.py) takes its element-wise path
    cu = re.sub(r"const bool by_tma = [^;]*;", "const bool by_tma = false;", cu)
    cu = _ATOM.sub(_atom_call, cu)
    calls, kinds = [], []
    for i, p in enumerate(params):
        ty = p.rsplit(" ", 1)[0]
        if "mt_tmap" in ty:                       # (a tensor map: never read here, see by_tma)
            calls.append(f"*(const mt_tmap*)args[{i}]")
            kinds.append(TENSOR_MAP)
        elif "*" in ty:
            calls.append(f"({ty})args[{i}]")
            kinds.append(None)
        else:
            calls.append(f"*({ty}*)args[{i}]")
            kinds.append(_C_TYPES[ty.strip()])
    src = ('#include "emu.h"\n' + cu + f'''
extern "C" void mt_launch(void** args, int gx, int gy, int gz) {{
  gridDim.x = gx; gridDim.y = gy; gridDim.z = gz; blockDim.x = {threads};
  for (int z = 0; z < gz; ++z) for (int y = 0; y < gy; ++y) for (int x = 0; x < gx; ++x) {{
    std::barrier<> bar({threads});
    mt_bar = &bar;
    std::vector<std::thread> ts;
    for (int t = 0; t < {threads}; ++t)
      ts.emplace_back([=] {{ threadIdx.x = t; blockIdx.x = x; blockIdx.y = y; blockIdx.z = z;
                            {symbol}({", ".join(calls)}); }});
    for (auto& t : ts) t.join();
  }}
}}''')
    include = _headers()                 # (named by the headers' hash: a changed emu.h rebuilds)
    digest = hashlib.sha256((src + include).encode()).hexdigest()[:16]
    so = os.path.join(_BUILD, f"{digest}.so")
    if not os.path.exists(so):
        cpp = os.path.join(_BUILD, f"{digest}.{os.getpid()}.cpp")
        with open(cpp, "w") as f:
            f.write(src)
        tmp = f"{so}.{os.getpid()}.tmp"
        subprocess.run(["g++", *_FLAGS, "-shared", "-I", include, "-o", tmp, cpp], check=True)
        os.replace(tmp, so)
        os.unlink(cpp)
    return ctypes.CDLL(so), kinds


_FLAGS = ["-std=c++20", "-O0", "-w", "-fPIC", "-pthread"]


def _headers() -> str:
    """A folder with the emulator's headers and emu.h precompiled (its C++20 standard headers are
    most of each kernel's compile time), keyed by the headers' contents."""
    names = ("emu.h", "cuda_fp16.h", "cuda_bf16.h")
    texts = {n: open(os.path.join(HERE, n)).read() for n in names}
    key = hashlib.sha256("".join(texts[n] for n in names).encode() + " ".join(_FLAGS).encode()).hexdigest()[:16]
    folder = os.path.join(_BUILD, f"include-{key}")
    if not os.path.exists(os.path.join(folder, "emu.h.gch")):
        tmp = f"{folder}.{os.getpid()}.tmp"
        os.makedirs(tmp, exist_ok=True)
        for n in names:
            with open(os.path.join(tmp, n), "w") as f:
                f.write(texts[n])
        subprocess.run(["g++", *_FLAGS, "-x", "c++-header", os.path.join(tmp, "emu.h"), "-o",
                        os.path.join(tmp, "emu.h.gch")], check=True)
        try:
            os.rename(tmp, folder)
        except OSError:                 # another process made it first
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


class EmulatedTensorMap:
    """A tensor-map argument the emulator's TMA copies into dot rings read (emu.h's layout): the
    2-d array ``array`` (its own shape and strides), copied in boxes of ``box`` (rows, elements)
    written with ``swizzle`` bytes of swizzle, elements out of bounds read as ``fill`` (an element
    of the array's dtype)."""

    def __init__(self, array: np.ndarray, box, swizzle: int, fill=0):
        self.array, self.box, self.swizzle = array, box, swizzle
        self.fill = np.array(fill, array.dtype).view(f"u{array.itemsize}").item()

    def words(self) -> np.ndarray:
        a = self.array
        return np.array([a.ctypes.data, a.itemsize, a.shape[1], a.shape[0], a.strides[0], self.box[1], self.box[0],
                         self.swizzle, self.fill] + [0] * 7, np.uint64)


def run(cu: str, args: list, grid: tuple) -> None:
    """Launch the kernel of ``cu`` over ``grid`` with ``args`` (numpy arrays for pointers, which
    it writes in place; Python or numpy numbers for scalars; for a tensor map an
    ``EmulatedTensorMap``, or anything where the kernel never reads it)."""
    lib, kinds = _build(cu)
    keep, pointers = [], []
    for a, kind in zip(args, kinds):
        if kind is TENSOR_MAP:                    # (anything else: 128 zero bytes)
            v = a.words() if isinstance(a, EmulatedTensorMap) else np.zeros(16, np.uint64)
            keep.append(v)
            pointers.append(ctypes.c_void_p(v.ctypes.data))
        elif kind is None:
            pointers.append(ctypes.c_void_p(a.ctypes.data))
        else:
            v = np.array(a, dtype=kind)
            keep.append(v)
            pointers.append(ctypes.c_void_p(v.ctypes.data))
    array = (ctypes.c_void_p * len(pointers))(*pointers)
    lib.mt_launch(array, *(tuple(grid) + (1,) * (3 - len(grid))))

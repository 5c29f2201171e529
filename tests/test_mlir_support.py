"""Kernels and helpers shared by the tests/test_mlir_*.py files (this module holds no tests).

``CASES`` lists kernels the MLIR backend supports, each with a specialization and (for the GPU
test) inputs, a grid and a numpy reference; ``REJECTED`` lists kernels it must reject, with the
message and the source line of the offending op.
"""
from __future__ import annotations

import importlib.util
import inspect
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

import mytriton as triton
import mytriton.language as tl
from mytriton.compiler import build_ssa

REPO = Path(__file__).resolve().parents[1]
GOLDENS = Path(__file__).resolve().parent / "goldens" / "mlir"


# --- kernels the backend supports ----------------------------------------------------------------

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def matmul_runtime_k_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr):
    """The seed's matmul (parts 10 and 11): a run-time K loop carrying a tl.zeros accumulator."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)[:, None]
    offs_n = pid_n * BN + tl.arange(0, BN)[None, :]
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(K):
        a_values = tl.load(a + offs_m * K + k, mask=offs_m < M, other=0.0)
        b_values = tl.load(b + k * N + offs_n, mask=offs_n < N, other=0.0)
        acc = acc + a_values * b_values
    tl.store(c + offs_m * N + offs_n, acc, mask=(offs_m < M) & (offs_n < N))


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + offs, num / tl.sum(num, axis=0), mask=mask)


@triton.jit
def row_stats_kernel(x_ptr, sum_ptr, max_ptr, min_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Rank-2 reductions along both axes, and of the whole tile."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
    tl.store(sum_ptr + rows, tl.sum(x, axis=1), mask=rows < M)
    col_max = tl.max(tl.where(mask, x, -float("inf")), axis=0)
    tl.store(max_ptr + tl.program_id(0) * BN + cols, col_max)
    tl.store(min_ptr + tl.program_id(0), tl.min(tl.where(mask, x, float("inf"))))


@triton.jit
def factories_kernel(out_f_ptr, out_i_ptr, value_i, value_f, BLOCK: tl.constexpr):
    """tl.full/tl.zeros with the numeric conversions of seed part 11."""
    offs = tl.arange(0, BLOCK)
    f = tl.zeros((BLOCK,), tl.float32) + tl.full((BLOCK,), value_i, tl.float32) + tl.full([BLOCK], 2.5, tl.float32)
    i = tl.zeros((BLOCK,), tl.int32) + tl.full((BLOCK,), value_f, tl.int32) + offs
    tl.store(out_f_ptr + offs, f)
    tl.store(out_i_ptr + offs, i)


@triton.jit
def loops_kernel(x_ptr, out_ptr, total_ptr, n, reps, BLOCK: tl.constexpr):
    """Run-time loops: two carried values (a tile and a scalar), a nested loop, a carried pointer."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    count = 0
    ptrs = x_ptr + offs
    for i in range(reps):
        for j in range(1, reps, 2):
            acc = acc + j
        acc = acc + tl.load(ptrs, mask=offs < n, other=0.0) * i
        count += 1
        ptrs += 0
    tl.store(out_ptr + offs, acc, mask=offs < n)
    tl.store(total_ptr + tl.program_id(0), count)


@triton.jit
def casts_kernel(x_ptr, h_ptr, u_ptr, out_f_ptr, out_i_ptr, out_h_ptr, out_b_ptr, n, BLOCK: tl.constexpr):
    """Conversions between float widths, signed and unsigned integers and bool."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    h = tl.load(h_ptr + offs, mask=mask, other=0.0)
    u = tl.load(u_ptr + offs, mask=mask, other=0)
    tl.store(out_f_ptr + offs, x.to(tl.float64).to(tl.float32) + h.to(tl.float32) + u.to(tl.float32), mask=mask)
    three = tl.full((BLOCK,), 3, tl.uint32)          # u // 3 mixes signedness, which Triton refuses
    tl.store(out_i_ptr + offs, x.to(tl.int32) + (u // three).to(tl.int32) + (u >> 1).to(tl.int32), mask=mask)
    tl.store(out_h_ptr + offs, (x * 2).to(tl.float16), mask=mask)
    tl.store(out_b_ptr + offs, (x.to(tl.int1) & (u != 0)).to(tl.int8), mask=mask)


@triton.jit
def divmod_kernel(a_ptr, b_ptr, q_ptr, r_ptr, n, BLOCK: tl.constexpr):
    """Integer // and % truncate; a zero divisor gives -1 / the dividend; MIN // -1 wraps."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0)
    b = tl.load(b_ptr + offs, mask=mask, other=1)
    tl.store(q_ptr + offs, a // b, mask=mask)
    tl.store(r_ptr + offs, a % b, mask=mask)


@triton.jit
def math_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    y = tl.sqrt(tl.abs(x)) + tl.log(tl.abs(x) + 1) + tl.sin(x) * tl.cos(x) + tl.exp2(x * 0.5)
    y = y + tl.floor(x) - tl.ceil(x) + tl.rsqrt(tl.abs(x) + 1.0) + tl.log2(tl.abs(x) + 2.0) + x % 1.5
    y = tl.maximum(y, -x) + tl.minimum(y, x) + tl.sigmoid(x) - (-x)
    tl.store(out_ptr + offs, y, mask=mask)


@triton.jit
def outer_kernel(v_ptr, out_ptr, N: tl.constexpr):
    """One loaded vector used as rows and as columns: a layout conversion between threads."""
    offs = tl.arange(0, N)
    v = tl.load(v_ptr + offs)
    tl.store(out_ptr + offs[:, None] * N + offs[None, :], v[:, None] * v[None, :])


def manifest_kernel(file: str, name: str):
    """A kernel shipped under manifests/kernels/ (imported under a private module name)."""
    path = REPO / "manifests" / "kernels" / file
    spec = importlib.util.spec_from_file_location(f"_mlir_test_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


@triton.jit
def pick_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """tl.where on pointers; a scalar stored to a whole tile."""
    offs = tl.arange(0, BLOCK)
    source = tl.where(offs < n, x_ptr + offs, y_ptr + offs)
    tl.store(out_ptr + offs, tl.load(source))
    tl.store(out_ptr + BLOCK + offs, 7)


# --- kernels it rejects ---------------------------------------------------------------------------

@triton.jit
def empty_kernel(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    values = tl.empty((BLOCK,), tl.float32)
    tl.store(out_ptr + offs, values)


# --- the case table -------------------------------------------------------------------------------

@dataclass
class Case:
    """One specialization of a supported kernel, with inputs for the GPU test."""
    name: str
    kernel: object
    signature: dict
    constexprs: dict
    num_warps: int = 4
    grid: tuple = (1,)
    inputs: Callable | None = None          # rng -> {param: numpy array or scalar}
    outputs: tuple = ()                     # the params the kernel writes
    reference: Callable | None = None       # inputs -> {output param: expected numpy array}
    rtol: float = 1e-5
    atol: float = 1e-6
    extra: dict = field(default_factory=dict)

    def ssa(self):
        return build_ssa(self.kernel, self.signature, self.constexprs, self.num_warps)


F32 = "*fp32:16"


def _softmax_ref(a):
    x = a["x_ptr"].reshape(a["rows"], -1)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y_ptr": (e / e.sum(axis=1, keepdims=True)).ravel()}


def _row_stats_inputs(rng, M=50, N=24, BM=16, BN=32):
    return {"x_ptr": rng.standard_normal(M * N).astype(np.float32), "sum_ptr": np.zeros(M, np.float32),
            "max_ptr": np.zeros(4 * BN, np.float32), "min_ptr": np.zeros(4, np.float32), "M": M, "N": N}


def _row_stats_ref(a, M=50, N=24, BM=16, BN=32):
    x = a["x_ptr"].reshape(M, N)
    col_max = np.full((4, BN), -np.inf, np.float32)
    mins = np.zeros(4, np.float32)
    for p in range(4):
        block = x[p * BM:(p + 1) * BM]
        col_max[p, :N] = block.max(axis=0)
        mins[p] = block.min()
    return {"sum_ptr": x.sum(axis=1), "max_ptr": col_max.ravel(), "min_ptr": mins}


def _matmul_inputs(rng, M=37, N=45, K=29):
    return {"a": rng.standard_normal(M * K).astype(np.float32), "b": rng.standard_normal(K * N).astype(np.float32),
            "c": np.zeros(M * N, np.float32), "M": M, "N": N, "K": K}


def _loops_ref(a):
    reps, x = a["reps"], a["x_ptr"]
    inner = sum(range(1, reps, 2)) * reps
    out = (inner + x[:a["n"]] * sum(range(reps))).astype(np.float32)
    return {"out_ptr": np.concatenate([out, np.zeros(len(x) - a["n"], np.float32)]),
            "total_ptr": np.full(3, reps, np.int32)}


def _casts_inputs(rng, n=300):
    x = (rng.standard_normal(n) * 50).astype(np.float32)
    x[::7] = 0.0
    return {"x_ptr": x, "h_ptr": rng.standard_normal(n).astype(np.float16),
            "u_ptr": rng.integers(0, 2**32, n, dtype=np.uint32), "out_f_ptr": np.zeros(n, np.float32),
            "out_i_ptr": np.zeros(n, np.int32), "out_h_ptr": np.zeros(n, np.float16),
            "out_b_ptr": np.zeros(n, np.int8), "n": n}


def _casts_ref(a):
    x, h, u = a["x_ptr"], a["h_ptr"], a["u_ptr"]
    return {"out_f_ptr": x + h.astype(np.float32) + u.astype(np.float32),
            "out_i_ptr": (x.astype(np.int32) + (u // 3).astype(np.int32) + (u >> 1).astype(np.int32)).astype(np.int32),
            "out_h_ptr": (x * 2).astype(np.float16),
            "out_b_ptr": ((x != 0) & (u != 0)).astype(np.int8)}


def _divmod_inputs(rng, n=200):
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(-9, 9, n).astype(np.int32)
    a[:4], b[:4] = [-2**31, -2**31, 7, -7], [-1, 0, 0, -1]
    return {"a_ptr": a, "b_ptr": b, "q_ptr": np.zeros(n, np.int32), "r_ptr": np.zeros(n, np.int32), "n": n}


def _divmod_ref(x):
    a, b = x["a_ptr"].astype(np.int64), x["b_ptr"].astype(np.int64)
    safe = np.where(b == 0, 1, b)
    q = np.where(b == 0, -1, np.trunc(a / safe)).astype(np.int64)
    r = np.where(b == 0, a, a - np.trunc(a / safe).astype(np.int64) * safe)
    return {"q_ptr": q.astype(np.int32), "r_ptr": r.astype(np.int32)}     # -2**31 // -1 wraps


def _math_ref(a):
    x = a["x_ptr"].astype(np.float32)
    y = np.sqrt(np.abs(x)) + np.log(np.abs(x) + 1) + np.sin(x) * np.cos(x) + np.exp2(x * 0.5)
    y = y + np.floor(x) - np.ceil(x) + 1 / np.sqrt(np.abs(x) + 1) + np.log2(np.abs(x) + 2) + np.fmod(x, np.float32(1.5))
    y = np.fmax(y, -x) + np.fmin(y, x) + 1 / (1 + np.exp(-x)) + x
    return {"out_ptr": y.astype(np.float32)}


from tests.kernels import atomics as _atomics  # noqa: E402  (below the kernels: goldens name their lines)
from tests.kernels import cache_hints as _hints  # noqa: E402


def _hinted_case(dt: str, np_dtype, load_cache="", load_evict="", store_cache="", store_evict=""):
    """tests/kernels/cache_hints.py's scaled_copy with cache modifiers / eviction policies (inline
    PTX in the MLIR backend): y = 2x in bounds, `other` (3) doubled for the 5 elements past n."""
    n = 1000

    def reference(a):
        y = np.zeros(n + 40, np_dtype)
        y[:n], y[n:n + 5] = a["x_ptr"][:n] * 2, 6
        return {"y_ptr": y}
    hints = {"LOAD_CACHE": load_cache, "LOAD_EVICT": load_evict, "STORE_CACHE": store_cache, "STORE_EVICT": store_evict}
    return Case(f"hints_{dt}_{load_cache.strip('.') or load_evict}_b256_w2", _hints.scaled_copy,
                {"x_ptr": f"*{dt}", "y_ptr": f"*{dt}", "n": "i32"}, {**hints, "BLOCK": 256}, num_warps=2,
                grid=(4,), outputs=("y_ptr",),
                inputs=lambda rng: {"x_ptr": rng.integers(-20, 20, n + 40).astype(np_dtype),
                                    "y_ptr": np.zeros(n + 40, np_dtype), "n": n},
                reference=reference, rtol=0, atol=0)

CASES = [
    Case("add_b128_w4", add_kernel, {"x_ptr": F32, "y_ptr": F32, "out_ptr": F32, "n": "i32"}, {"BLOCK": 128},
         grid=(8,), outputs=("out_ptr",),
         inputs=lambda rng: {"x_ptr": rng.standard_normal(1000).astype(np.float32),
                             "y_ptr": rng.standard_normal(1000).astype(np.float32),
                             "out_ptr": np.zeros(1000, np.float32), "n": 1000},
         reference=lambda a: {"out_ptr": a["x_ptr"] + a["y_ptr"]}),
    Case("add_b2048_w4", add_kernel, {"x_ptr": F32, "y_ptr": F32, "out_ptr": F32, "n": "i32"}, {"BLOCK": 2048},
         grid=(3,), outputs=("out_ptr",),
         inputs=lambda rng: {"x_ptr": rng.standard_normal(5000).astype(np.float32),
                             "y_ptr": rng.standard_normal(5000).astype(np.float32),
                             "out_ptr": np.zeros(5000, np.float32), "n": 5000},
         reference=lambda a: {"out_ptr": a["x_ptr"] + a["y_ptr"]}),
    Case("matmul_16x16_w4", matmul_runtime_k_kernel,
         {"a": F32, "b": F32, "c": F32, "M": "i32", "N": "i32", "K": "i32"}, {"BM": 16, "BN": 16},
         grid=(3, 3), outputs=("c",), inputs=_matmul_inputs,
         reference=lambda a: {"c": (a["a"].reshape(37, 29).astype(np.float64)
                                    @ a["b"].reshape(29, 45)).astype(np.float32).ravel()}, rtol=1e-4, atol=1e-4),
    Case("matmul_64x32_w8", matmul_runtime_k_kernel,
         {"a": F32, "b": F32, "c": F32, "M": "i32", "N": "i32", "K": "i32"}, {"BM": 64, "BN": 32}, num_warps=8,
         grid=(1, 2), outputs=("c",), inputs=_matmul_inputs,
         reference=lambda a: {"c": (a["a"].reshape(37, 29).astype(np.float64)
                                    @ a["b"].reshape(29, 45)).astype(np.float32).ravel()}, rtol=1e-4, atol=1e-4),
    Case("softmax_b1024_w4", softmax_kernel, {"x_ptr": F32, "y_ptr": F32, "n_cols": "i32"}, {"BLOCK": 1024},
         grid=(6,), outputs=("y_ptr",),
         inputs=lambda rng: {"x_ptr": rng.standard_normal(6 * 1000).astype(np.float32),
                             "y_ptr": np.zeros(6 * 1000, np.float32), "n_cols": 1000, "rows": 6},
         reference=_softmax_ref, rtol=1e-4, atol=1e-7),
    Case("softmax_b32_w1", softmax_kernel, {"x_ptr": F32, "y_ptr": F32, "n_cols": "i32"}, {"BLOCK": 32},
         num_warps=1, grid=(5,), outputs=("y_ptr",),
         inputs=lambda rng: {"x_ptr": rng.standard_normal(5 * 20).astype(np.float32),
                             "y_ptr": np.zeros(5 * 20, np.float32), "n_cols": 20, "rows": 5},
         reference=_softmax_ref, rtol=1e-4, atol=1e-7),
    Case("row_stats_16x32_w4", row_stats_kernel,
         {"x_ptr": F32, "sum_ptr": F32, "max_ptr": F32, "min_ptr": F32, "M": "i32", "N": "i32"},
         {"BM": 16, "BN": 32}, grid=(4,), outputs=("sum_ptr", "max_ptr", "min_ptr"), inputs=_row_stats_inputs,
         reference=_row_stats_ref, rtol=1e-5, atol=1e-5),
    Case("factories_b64_w2", factories_kernel,
         {"out_f_ptr": F32, "out_i_ptr": "*i32", "value_i": "i32", "value_f": "fp32"}, {"BLOCK": 64}, num_warps=2,
         outputs=("out_f_ptr", "out_i_ptr"),
         inputs=lambda rng: {"out_f_ptr": np.zeros(64, np.float32), "out_i_ptr": np.zeros(64, np.int32),
                             "value_i": 7, "value_f": np.float32(-3.75)},
         reference=lambda a: {"out_f_ptr": np.full(64, 9.5, np.float32),
                              "out_i_ptr": np.arange(64, dtype=np.int32) - 3}),
    Case("loops_b256_w4", loops_kernel,
         {"x_ptr": F32, "out_ptr": F32, "total_ptr": "*i32", "n": "i32", "reps": "i32"}, {"BLOCK": 256},
         grid=(3,), outputs=("out_ptr", "total_ptr"),
         inputs=lambda rng: {"x_ptr": rng.standard_normal(768).astype(np.float32), "out_ptr": np.zeros(768, np.float32),
                             "total_ptr": np.zeros(3, np.int32), "n": 700, "reps": 5},
         reference=_loops_ref, rtol=1e-5, atol=1e-5),
    Case("casts_b128_w4", casts_kernel,
         {"x_ptr": F32, "h_ptr": "*fp16", "u_ptr": "*u32", "out_f_ptr": F32, "out_i_ptr": "*i32",
          "out_h_ptr": "*fp16", "out_b_ptr": "*i8", "n": "i32"}, {"BLOCK": 128},
         grid=(3,), outputs=("out_f_ptr", "out_i_ptr", "out_h_ptr", "out_b_ptr"), inputs=_casts_inputs,
         reference=_casts_ref, rtol=1e-6, atol=1e-3),
    Case("divmod_b64_w2", divmod_kernel, {"a_ptr": "*i32", "b_ptr": "*i32", "q_ptr": "*i32", "r_ptr": "*i32",
                                          "n": "i32"}, {"BLOCK": 64}, num_warps=2, grid=(4,),
         outputs=("q_ptr", "r_ptr"), inputs=_divmod_inputs, reference=_divmod_ref, rtol=0, atol=0),
    Case("math_b512_w4", math_kernel, {"x_ptr": F32, "out_ptr": F32, "n": "i32"}, {"BLOCK": 512},
         grid=(2,), outputs=("out_ptr",),
         inputs=lambda rng: {"x_ptr": (rng.standard_normal(1000) * 4).astype(np.float32),
                             "out_ptr": np.zeros(1000, np.float32), "n": 1000},
         reference=_math_ref, rtol=1e-4, atol=1e-4),
    Case("pick_b64_w2", pick_kernel, {"x_ptr": F32, "y_ptr": F32, "out_ptr": F32, "n": "i32"}, {"BLOCK": 64},
         num_warps=2, outputs=("out_ptr",),
         inputs=lambda rng: {"x_ptr": np.arange(64, dtype=np.float32), "y_ptr": -np.arange(64, dtype=np.float32),
                             "out_ptr": np.zeros(128, np.float32), "n": 40},
         reference=lambda a: {"out_ptr": np.concatenate([np.where(np.arange(64) < 40, a["x_ptr"], a["y_ptr"]),
                                                         np.full(64, 7, np.float32)])}),
    Case("outer_32_w4", outer_kernel, {"v_ptr": F32, "out_ptr": F32}, {"N": 32}, outputs=("out_ptr",),
         inputs=lambda rng: {"v_ptr": rng.standard_normal(32).astype(np.float32),
                             "out_ptr": np.zeros(32 * 32, np.float32)},
         reference=lambda a: {"out_ptr": np.outer(a["v_ptr"], a["v_ptr"]).ravel()}),
    # atomics: BLOCK 64 over 128 threads (each element updated by its owner), a scalar atomic
    Case("histogram_b64_w4", _atomics.histogram, {"x_ptr": "*i32", "hist_ptr": "*i32", "n": "i32"}, {"BLOCK": 64},
         grid=(16,), outputs=("hist_ptr",),
         inputs=lambda rng: {"x_ptr": rng.integers(0, 10, 1000).astype(np.int32), "hist_ptr": np.zeros(10, np.int32),
                             "n": 1000},
         reference=lambda a: {"hist_ptr": np.bincount(a["x_ptr"], minlength=10).astype(np.int32)}, rtol=0, atol=0),
    Case("ticket_b64_w4", _atomics.ticket, {"counter_ptr": "*i32", "out_ptr": "*i32"}, {"BLOCK": 64}, grid=(9,),
         outputs=("counter_ptr",),
         inputs=lambda rng: {"counter_ptr": np.zeros(1, np.int32), "out_ptr": np.zeros(9 * 64, np.int32)},
         reference=lambda a: {"counter_ptr": np.array([9], np.int32)}, rtol=0, atol=0),
    _hinted_case("fp32", np.float32, load_evict="evict_first", store_evict="evict_last"),
    _hinted_case("i8", np.int8, load_cache=".cg", store_cache=".cs"),
    _hinted_case("fp16", np.float16, load_cache=".cv", store_cache=".wt"),
]


def _manifest_cases():
    matmul_ptr = manifest_kernel("matmul.py", "matmul_ptr_kernel")
    row_sum = manifest_kernel("reductions.py", "row_sum_kernel")
    col_max = manifest_kernel("reductions.py", "col_max_kernel")
    softmax = manifest_kernel("softmax.py", "softmax_kernel")
    matmul_sig = {"a": "*fp32", "b": "*fp32", "c": "*fp32", "M": "i32", "N": "i32", "K": "i32"}
    matmul_ref = lambda a: {"c": (a["a"].reshape(37, 29).astype(np.float64)  # noqa: E731
                                  @ a["b"].reshape(29, 45)).astype(np.float32).ravel()}
    rows = lambda rng, r, c: rng.standard_normal(r * c).astype(np.float32)  # noqa: E731
    return [
        Case("manifest_matmul_ptr_64x64_w4", matmul_ptr, matmul_sig, {"BM": 64, "BN": 64}, grid=(1, 1),
             outputs=("c",), inputs=_matmul_inputs, reference=matmul_ref, rtol=1e-4, atol=1e-4),
        Case("manifest_row_sum_b256_w4", row_sum, {"x": F32, "out": "*fp32", "n_cols": "i32"}, {"BLOCK": 256},
             grid=(7,), outputs=("out",),
             inputs=lambda rng: {"x": rows(rng, 7, 1000), "out": np.zeros(7, np.float32), "n_cols": 1000},
             reference=lambda a: {"out": a["x"].reshape(7, 1000).sum(axis=1)}, rtol=1e-4, atol=1e-4),
        Case("manifest_col_max_32x64_w4", col_max, {"x": "*fp32", "out": "*fp32", "n_rows": "i32", "n_cols": "i32"},
             {"BM": 32, "BN": 64}, grid=(2,), outputs=("out",),
             inputs=lambda rng: {"x": rows(rng, 77, 100), "out": np.zeros(128, np.float32), "n_rows": 77,
                                 "n_cols": 100},
             reference=lambda a: {"out": np.concatenate([a["x"].reshape(77, 100).max(axis=0),
                                                         np.zeros(28, np.float32)])}),
        Case("manifest_softmax_b4096_w8", softmax, {"x": F32, "y": F32, "n_cols": "i32"}, {"BLOCK": 4096},
             num_warps=8, grid=(3,), outputs=("y",),
             inputs=lambda rng: {"x": rows(rng, 3, 3000), "y": np.zeros(3 * 3000, np.float32), "n_cols": 3000,
                                 "rows": 3},
             reference=lambda a: {"y": _softmax_ref({"x_ptr": a["x"], "rows": 3})["y_ptr"]}, rtol=1e-4, atol=1e-7),
    ]


CASES += _manifest_cases()


@dataclass
class Rejection:
    name: str
    kernel: object
    signature: dict
    constexprs: dict
    message: str
    source_line: str                          # the text of the line the error must point at

    def ssa(self):
        return build_ssa(self.kernel, self.signature, self.constexprs)

    def expected_line(self) -> int:
        lines, first = inspect.getsourcelines(self.kernel.fn)
        for i, text in enumerate(lines):
            if self.source_line in text:
                return first + i
        raise AssertionError(f"{self.source_line!r} not in {self.name}")


REJECTED = [
    Rejection("empty", empty_kernel, {"out_ptr": F32}, {"BLOCK": 64},
              "MLIR backend does not support tl.empty", "values = tl.empty((BLOCK,), tl.float32)"),
]


# --- manifests ------------------------------------------------------------------------------------

def manifest_specializations():
    """(id, jit function, signature, constexprs, num_warps) for every specialization of every
    manifest shipped under manifests/."""
    from mytriton.aot.manifest import load_manifest
    out = []
    # (manifests/gemm.yaml's and gemm_plain.yaml's kernels use tl.dot, scans.yaml's tl.cumsum and tl.argmax, which the MLIR
    # backend refuses: test_dot.py and test_scan.py check that)
    skip = {"gemm.yaml", "gemm_plain.yaml", "scans.yaml"}
    for path in sorted(p for p in (REPO / "manifests").glob("*.yaml") if p.name not in skip):
        manifest = load_manifest(str(path))
        for entry in manifest.kernels:
            for spec in entry.specializations:
                out.append((f"{path.stem}:{entry.name}:{spec.id}", entry.jit_fn, dict(entry.params),
                            dict(spec.constexprs), spec.num_warps))
    return out


def tools_missing_reason(*names: str) -> str | None:
    from mytriton.backends.mlir import tools
    missing = tools.missing_tools(*(names or ("mlir-opt",)))
    if missing:
        return f"MLIR tools not installed ({', '.join(missing)}): {tools.INSTALL_HINT}"
    return None


def golden(name: str) -> str:
    return (GOLDENS / name).read_text()


def update_goldens() -> bool:
    return os.environ.get("MYTRITON_UPDATE_GOLDENS") == "1"

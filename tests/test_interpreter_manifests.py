"""Every kernel of every manifest under manifests/, each specialization, run by the CPU interpreter
on random data with awkward sizes (masked tails) and compared with a numpy reference.

``CASES`` (kernel name → inputs and reference) is shared with the GPU differential test
(test_interpreter_gpu.py); a kernel added to a manifest without a case here fails
``test_every_manifest_kernel_has_a_case``."""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from mytriton import cdiv
from mytriton.aot import load_manifest

ROOT = Path(__file__).resolve().parents[1]
MANIFESTS = sorted((ROOT / "manifests").glob("*.yaml"))


@dataclass
class Case:
    args: list                               # run-time arguments in order (numpy arrays / scalars)
    grid: tuple
    expected: dict[int, np.ndarray]          # argument index → the array it must hold afterwards
    rtol: float = 0.0
    atol: float = 0.0
    gpu_rtol: float = field(default=1e-5)    # interpreter vs GPU: FMA contraction, fast exp
    gpu_atol: float = field(default=1e-6)

    def fresh_args(self):
        return [a.copy() if isinstance(a, np.ndarray) else a for a in self.args]


def _randn(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _f32(x) -> np.float32:
    return np.float32(x)


# --- one case per kernel: (rng, constexprs) → Case ------------------------------------------------

def _elementwise_n(c):
    return 3 * c["BLOCK"] + 5


def case_add(rng, c):
    n = _elementwise_n(c)
    x, y = _randn(rng, n), _randn(rng, n)
    x[:4] = [np.nan, -0.0, np.inf, 1.0]
    return Case([x, y, np.zeros(n, np.float32), n], (cdiv(n, c["BLOCK"]),), {2: x + y})


def case_axpby(rng, c):
    n = _elementwise_n(c)
    x, y = _randn(rng, n), _randn(rng, n)
    a, b = 1.5, -0.3
    want = _f32(a) * x + _f32(b) * y
    return Case([x, y, np.zeros(n, np.float32), a, b, n], (cdiv(n, c["BLOCK"]),), {2: want})


def case_leaky_relu(rng, c):
    n = _elementwise_n(c) + 7
    x = _randn(rng, n)
    slope = 0.01
    want = np.where(x > 0, x, x * _f32(slope))
    return Case([x, np.zeros(n, np.float32), n, slope], (cdiv(n, c["BLOCK"]),), {1: want})


def case_sigmoid(rng, c):
    n = _elementwise_n(c)
    x = _randn(rng, n) * 8
    want = (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(np.float32)
    return Case([x, np.zeros(n, np.float32), n], (cdiv(n, c["BLOCK"]),), {1: want},
                rtol=1e-6, atol=1e-7, gpu_rtol=1e-5, gpu_atol=1e-6)


def case_int_ops(rng, c):
    n = _elementwise_n(c)
    a = rng.integers(-5000, 5000, n, dtype=np.int32)
    b = rng.integers(-100, 100, n, dtype=np.int32)
    b[b == 0] = 3
    q = np.array([abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1) for x, y in zip(a.tolist(), b.tolist())])
    r = a - b * q
    want = np.where((a > 0) & (b > 0) & (a > b), q, r + (a & 255)).astype(np.int32)
    return Case([a, b, np.zeros(n, np.int32), n], (cdiv(n, c["BLOCK"]),), {2: want})


def case_matmul(rng, c):
    M, N, K = 2 * c["BM"] + 3, c["BN"] + 7, 37
    a, b = _randn(rng, M, K), _randn(rng, K, N)
    want = (a.astype(np.float64) @ b).astype(np.float32)
    return Case([a, b, np.zeros((M, N), np.float32), M, N, K], (cdiv(M, c["BM"]), cdiv(N, c["BN"])), {2: want},
                rtol=1e-4, atol=1e-4, gpu_rtol=1e-4, gpu_atol=1e-4)


def case_row_sum(rng, c):
    rows, cols = 5, 2 * c["BLOCK"] + 17
    x = _randn(rng, rows, cols)
    want = x.astype(np.float64).sum(axis=1).astype(np.float32)
    return Case([x, np.zeros(rows, np.float32), cols], (rows,), {1: want},
                rtol=1e-4, atol=1e-4, gpu_rtol=1e-4, gpu_atol=1e-4)


def case_col_max(rng, c):
    rows, cols = 2 * c["BM"] + 5, 2 * c["BN"] + 3
    x = _randn(rng, rows, cols)
    x[1, 2] = np.nan                              # max ignores NaN (Triton's default)
    want = np.nanmax(x, axis=0)
    return Case([x, np.zeros(cols, np.float32), rows, cols], (cdiv(cols, c["BN"]),), {1: want})


def case_softmax(rng, c):
    rows, cols = 7, c["BLOCK"] - 3 if c["BLOCK"] > 8 else c["BLOCK"]
    x = _randn(rng, rows, cols) * 4
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    return Case([x, np.zeros((rows, cols), np.float32), cols], (rows,), {1: want},
                rtol=1e-5, atol=1e-7, gpu_rtol=1e-5, gpu_atol=1e-7)


def case_row_cumsum(rng, c):
    rows, cols = 5, c["BLOCK"] - 3
    x = _randn(rng, rows, cols)
    want = np.cumsum(x.astype(np.float64), axis=1).astype(np.float32)
    return Case([x, np.zeros((rows, cols), np.float32), cols], (rows,), {1: want},
                rtol=1e-4, atol=1e-4, gpu_rtol=1e-4, gpu_atol=1e-4)


def case_row_argmax(rng, c):
    rows, cols = 5, c["BLOCK"] - 3
    x = _randn(rng, rows, cols)
    x[2, 7] = x[2, 9] = x[2].max() + 1            # a tie: the first index wins
    return Case([x, np.zeros(rows, np.int32), cols], (rows,), {1: x.argmax(axis=1).astype(np.int32)})


def case_softmax_rows(rng, c):
    rows, cols, programs = 9, c["BLOCK"] - 3, 4          # persistent programs: 4 take the 9 rows
    x = _randn(rng, rows, cols) * 4
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    want = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    return Case([np.zeros((rows, cols), np.float32), x, cols, cols, rows, cols], (programs,), {0: want},
                rtol=1e-5, atol=1e-7, gpu_rtol=1e-5, gpu_atol=1e-7)


def case_layer_norm(rng, c):
    rows, cols = 3, 2 * c["BLOCK"] + 48                   # (a multiple of 16, as the signature promises)
    x = (-2.3 + 0.5 * _randn(rng, rows, cols)).astype(np.float16)
    w, b = rng.random(cols).astype(np.float16), rng.random(cols).astype(np.float16)
    xf = x.astype(np.float64)
    mean, var = xf.mean(axis=1), xf.var(axis=1)
    rstd = 1 / np.sqrt(var + 1e-5)
    y = ((xf - mean[:, None]) * rstd[:, None] * w + b).astype(np.float16)
    case = Case([x, np.zeros_like(x), w, b, np.zeros(rows, np.float32), np.zeros(rows, np.float32), cols, cols,
                 1e-5], (rows,), {1: y, 4: mean.astype(np.float32), 5: rstd.astype(np.float32)})
    return _half_tol(case)


def _half_tol(case: Case) -> Case:
    case.rtol = case.atol = case.gpu_rtol = case.gpu_atol = 2e-2
    return case


def case_gemm(rng, c):
    M, N, K = 2 * c["BLOCK_M"] + 16, c["BLOCK_N"] + 16, 80      # (sizes the manifest promises :16)
    a, b = (_randn(rng, *s).astype(np.float16) for s in ((M, K), (K, N)))
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    grid = (cdiv(M, c["BLOCK_M"]) * cdiv(N, c["BLOCK_N"]),)
    return _half_tol(Case([a, b, np.zeros((M, N), np.float16), M, N, K, K, 1, N, 1, N, 1], grid, {2: want}))


def case_linear(rng, c):
    import ml_dtypes
    M, N, K = c["BLOCK_M"] + 5, c["BLOCK_N"] + 16, 80
    x, w, bias = (_randn(rng, *s).astype(ml_dtypes.bfloat16) for s in ((M, K), (K, N), (N,)))
    y = x.astype(np.float32) @ w.astype(np.float32) + bias.astype(np.float32)
    want = (np.maximum(y, 0) if c["ACTIVATION"] == "relu" else y).astype(ml_dtypes.bfloat16)
    grid = (cdiv(M, c["BLOCK_M"]) * cdiv(N, c["BLOCK_N"]),)
    case = Case([x, w, bias, np.zeros((M, N), ml_dtypes.bfloat16), M, N, K, K, N, N], grid, {3: want})
    return _half_tol(case)


def case_attention(rng, c):
    heads, n_ctx, d = 2, c["BLOCK_M"] + 16, c["HEAD_DIM"]
    q, k, v = (_randn(rng, heads, n_ctx, d).astype(np.float16) for _ in range(3))
    scale = np.float32(d ** -0.5)
    s = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), 1, 2) * scale
    if c["CAUSAL"]:
        s = np.where(np.tril(np.ones((n_ctx, n_ctx), bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=2, keepdims=True))
    want = ((p / p.sum(axis=2, keepdims=True)) @ v.astype(np.float64)).astype(np.float16)
    return _half_tol(Case([q, k, v, np.zeros_like(q), scale, n_ctx], (cdiv(n_ctx, c["BLOCK_M"]), heads), {3: want}))


# (keyed by kernel name, or "file stem:name" where two manifests' kernels share a name)
CASES = {
    "add_kernel": case_add, "axpby_kernel": case_axpby, "leaky_relu_kernel": case_leaky_relu,
    "sigmoid_kernel": case_sigmoid, "int_ops_kernel": case_int_ops,
    "matmul_kernel": case_matmul, "matmul_ptr_kernel": case_matmul,
    "row_sum_kernel": case_row_sum, "col_max_kernel": case_col_max,
    "softmax_kernel": case_softmax, "row_cumsum_kernel": case_row_cumsum, "row_argmax_kernel": case_row_argmax,
    "gemm:matmul_kernel": case_gemm, "linear_kernel": case_linear, "attention_fwd_kernel": case_attention,
    "softmax_rows_kernel": case_softmax_rows, "layer_norm_fwd_kernel": case_layer_norm,
}


def case_of(kernel):
    """The case function of a manifest's kernel entry, or None."""
    stem = Path(kernel.source.file).stem if kernel.source.file else ""
    return CASES.get(f"{stem}:{kernel.name}") or CASES.get(kernel.name)


# --- the manifests' specializations ------------------------------------------------------------

def manifest_specializations():
    """pytest params (kernel entry, specialization) for every specialization of every manifest."""
    out = []
    for path in MANIFESTS:
        m = load_manifest(str(path))
        for k in m.kernels:
            for spec in k.specializations:
                out.append(pytest.param(k, spec, id=f"{m.package}.{k.name}.{spec.id}"))
    return out


SPECIALIZATIONS = manifest_specializations()


def make_case(kernel, spec, seed=0) -> Case:
    rng = np.random.default_rng(seed)
    return case_of(kernel)(rng, dict(spec.constexprs))


def run_interpreter(kernel, spec, case: Case) -> list:
    args = case.fresh_args()
    kernel.jit_fn[case.grid](*args, **dict(spec.constexprs), num_warps=spec.num_warps, num_stages=spec.num_stages)
    return args


def assert_close(got, want, rtol, atol):
    assert got.dtype == want.dtype and got.shape == want.shape
    if rtol == 0 and atol == 0:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def test_manifests_found():
    assert {p.name for p in MANIFESTS} >= {"elementwise.yaml"}
    assert SPECIALIZATIONS


def test_every_manifest_kernel_has_a_case():
    missing = sorted({p.values[0].name for p in SPECIALIZATIONS if case_of(p.values[0]) is None})
    assert not missing, f"manifest kernels without an interpreter test case in {__file__}: {missing}"


@pytest.mark.parametrize("kernel,spec", SPECIALIZATIONS)
def test_manifest_kernel_in_interpreter(kernel, spec):
    if case_of(kernel) is None:
        pytest.fail(f"no interpreter test case for {kernel.name}")
    case = make_case(kernel, spec)
    args = run_interpreter(kernel, spec, case)
    for index, want in case.expected.items():
        assert_close(args[index], want, case.rtol, case.atol)
    for i, (before, after) in enumerate(zip(case.args, args)):
        if isinstance(before, np.ndarray) and i not in case.expected:
            np.testing.assert_array_equal(before, after)           # inputs are left alone


def test_cases_are_not_mutated_by_runs():
    (param,) = [p for p in SPECIALIZATIONS if p.values[0].name == "add_kernel"][:1]
    kernel, spec = param.values
    case = make_case(kernel, spec)
    snapshot = copy.deepcopy(case.args)
    run_interpreter(kernel, spec, case)
    for a, b in zip(snapshot, case.args):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)

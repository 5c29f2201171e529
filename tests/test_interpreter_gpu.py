"""Differential test on the GPU: every manifest kernel (each specialization) and every elementwise op
of the op table, run both in the CPU interpreter (numpy) and on the GPU through the JIT
(``kernel[grid](torch CUDA tensors)``) on the same random inputs; the results must agree."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

import test_interpreter_ops as ops  # noqa: E402
from test_interpreter_manifests import SPECIALIZATIONS, assert_close, make_case, run_interpreter  # noqa: E402

import mytriton as triton  # noqa: E402


def _tensor(a: np.ndarray):
    a = np.ascontiguousarray(a)
    if a.dtype.name == "bfloat16":       # (ml_dtypes' bfloat16: torch reads its bits)
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).cuda()
    return torch.from_numpy(a).cuda()


def to_device(args):
    return [_tensor(a) if isinstance(a, np.ndarray) else a for a in args]


def to_host(t):
    torch.cuda.synchronize()
    if t.dtype == torch.bfloat16:
        import ml_dtypes
        return t.view(torch.int16).cpu().numpy().view(ml_dtypes.bfloat16)
    return t.cpu().numpy()


@pytest.mark.parametrize("kernel,spec", SPECIALIZATIONS)
def test_manifest_kernel_interpreter_equals_gpu(kernel, spec):
    case = make_case(kernel, spec, seed=11)
    cpu = run_interpreter(kernel, spec, case)
    dev = to_device(case.fresh_args())
    kernel.jit_fn[case.grid](*dev, **dict(spec.constexprs), num_warps=spec.num_warps, num_stages=spec.num_stages)
    for index in case.expected:
        gpu = to_host(dev[index])
        assert_close(gpu, cpu[index], case.gpu_rtol, case.gpu_atol)
    for index, want in case.expected.items():   # and both agree with numpy
        tol = max(case.rtol, case.gpu_rtol), max(case.atol, case.gpu_atol)
        assert_close(to_host(dev[index]), want, *tol)


# --- the op table, interpreter vs GPU ------------------------------------------------------------

# fast-math paths on the GPU; fp32 / and sqrt as Triton's div.full and sqrt.approx (within 2 ulp)
APPROX = {"exp", "exp2", "log", "log2", "rsqrt", "sin", "cos", "sigmoid", "div", "sqrt"}


def _both(kernel, args, grid, **constexprs):
    cpu = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    kernel[grid](*cpu, **constexprs)
    dev = to_device(args)
    kernel[grid](*dev, **constexprs)
    return cpu, [to_host(d) if isinstance(d, torch.Tensor) else d for d in dev]


def _compare(cpu, gpu, op):
    if cpu.dtype.kind == "f" and op in APPROX and not (op in ("div", "sqrt") and cpu.dtype == np.float64):
        np.testing.assert_array_equal(np.isnan(gpu), np.isnan(cpu))
        np.testing.assert_allclose(gpu, cpu, rtol=2e-5, atol=1e-6, equal_nan=True)
    elif cpu.dtype.kind == "f" and op not in ("maximum", "minimum"):
        ops.assert_same_floats(gpu, cpu)
    else:
        np.testing.assert_array_equal(gpu, cpu)


@pytest.mark.parametrize("op,dtype", ops.BINARY_CASES, ids=[f"{o}-{ops.NAMES[d]}" for o, d in ops.BINARY_CASES])
def test_binary_op_interpreter_equals_gpu(op, dtype):
    rng = np.random.default_rng(5)
    x, y = ops.edge_pairs(dtype, rng)
    if op in ("floordiv", "mod") and dtype not in (np.float32, np.float64):
        x, y = x[y != 0], y[y != 0]
    if op in ("shl", "shr"):
        y = (np.abs(y.astype(np.int64)) % np.iinfo(dtype).bits).astype(dtype)
    n = len(x)
    out_dtype = np.bool_ if op.startswith("cmp_") else (np.float32 if op == "div" and dtype == np.int32 else dtype)
    cpu, gpu = _both(ops.binary_kernel, [x, y, np.zeros(n, out_dtype), n], (triton.cdiv(n, ops.BLOCK),),
                     OP=op, BLOCK=ops.BLOCK)
    _compare(cpu[2], gpu[2], op)


@pytest.mark.parametrize("op,dtype", ops.UNARY_CASES + ops.UNARY_INT_CASES,
                         ids=[f"{o}-{ops.NAMES[d]}" for o, d in ops.UNARY_CASES + ops.UNARY_INT_CASES])
def test_unary_op_interpreter_equals_gpu(op, dtype):
    if dtype is np.bool_:
        x = np.array([True, False, True])
    elif dtype in (np.int32, np.int64):
        x = np.array(ops.INT_EDGES[dtype], dtype)
    else:
        x = np.concatenate([np.array(ops.FLOAT_EDGES, dtype),
                            (np.random.default_rng(2).standard_normal(60) * 20).astype(dtype)])
    if dtype == np.float32 and op in ("sqrt", "rsqrt", "exp2"):
        x = x[(x == 0) | ~(np.abs(x) < np.finfo(np.float32).tiny)]  # Triton's .approx.ftz: subnormal inputs
    n = len(x)                                                        # are zeros there (sqrt(-1e-45) = -0)
    cpu, gpu = _both(ops.unary_kernel, [x, np.zeros(n, dtype), n], (triton.cdiv(n, ops.BLOCK),),
                     OP=op, BLOCK=ops.BLOCK)
    _compare(cpu[1], gpu[1], op)


@pytest.mark.parametrize("src,dst,values,ref", ops.CAST_CASES,
                         ids=[f"{ops.NAMES[c[0]]}-to-{c[1].name}" for c in ops.CAST_CASES])
def test_cast_interpreter_equals_gpu(src, dst, values, ref):
    from mytriton.ir.ops import np_dtype
    x = np.array(values, src)
    n = len(x)
    cpu, gpu = _both(ops.cast_kernel, [x, np.zeros(n, np_dtype(dst)), n], (1,), DTYPE=dst, BLOCK=16)
    _compare(cpu[1], gpu[1], "cast")

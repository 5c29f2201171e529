"""Atomics on the GPU: histograms over random bins (tiles smaller and larger than the thread block),
a scalar counter taken once per program, every op and dtype against order-independent numpy
references, compare-and-swap, fp16 add; the same kernel sources through Triton where it is
installed. The spin lock waits for run-time `while`."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

import mytriton  # noqa: E402
from mytriton.ir.ops import ATOMIC_DTYPES, ATOMIC_SCOPES, ATOMIC_SEMS  # noqa: E402
from tests.kernels import atomics as k  # noqa: E402
from tests.triton_reference import triton_version  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_atomics import NP, RMW_KINDS, _values  # noqa: E402


TRITON = triton_version(k.__file__)
IMPLS = [("mytriton", k)] + ([("triton", TRITON)] if TRITON is not None else [])


def dev(x):
    x = np.ascontiguousarray(x)
    if x.dtype == NP["bf16"]:                 # torch takes no ml_dtypes array: move the bits
        return torch.from_numpy(x.view(np.int16)).cuda().view(torch.bfloat16)
    return torch.from_numpy(x).cuda()


def host(t):
    torch.cuda.synchronize()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).cpu().numpy().view(NP["bf16"])
    return t.cpu().numpy()


@pytest.mark.parametrize("impl", [i for _, i in IMPLS], ids=[n for n, _ in IMPLS])
@pytest.mark.parametrize("n,block,bins,warps", [(100_003, 1024, 256, 4), (5000, 32, 7, 4), (70_001, 256, 1, 8)])
def test_histogram(impl, n, block, bins, warps):
    x = np.random.default_rng(n).integers(0, bins, n).astype(np.int32)
    hist = dev(np.zeros(bins, np.int32))
    old = dev(np.full(n, -1, np.int32))
    impl.histogram_old[(mytriton.cdiv(n, block),)](dev(x), hist, old, n, BLOCK=block, num_warps=warps)
    np.testing.assert_array_equal(host(hist), np.bincount(x, minlength=bins))
    old = host(old)
    for b in range(bins):                     # each element got a distinct slot of its bin
        np.testing.assert_array_equal(np.sort(old[x == b]), np.arange((x == b).sum()))
    hist2 = dev(np.zeros(bins, np.int32))
    impl.histogram[(mytriton.cdiv(n, block),)](dev(x), hist2, n, BLOCK=block, num_warps=warps)
    np.testing.assert_array_equal(host(hist2), np.bincount(x, minlength=bins))


@pytest.mark.parametrize("impl", [i for _, i in IMPLS], ids=[n for n, _ in IMPLS])
@pytest.mark.parametrize("block", [16, 128, 1024])
def test_scalar_atomic_once_per_program_seen_by_every_thread(impl, block):
    programs = 3001
    counter = dev(np.array([10], np.int32))
    out = dev(np.full(programs * block, -1, np.int32))
    impl.ticket[(programs,)](counter, out, BLOCK=block)
    assert host(counter)[0] == 10 + programs
    rows = host(out).reshape(programs, block)
    assert (rows == rows[:, :1]).all()
    np.testing.assert_array_equal(np.sort(rows[:, 0]), np.arange(10, 10 + programs))


def _order_free_reference(kind, dst, vals, mask):
    """The final memory of the atomics in any order (each op is commutative and associative; float
    add up to rounding)."""
    out = dst.copy()
    with np.errstate(all="ignore"):
        for a in range(8):
            v = vals[(np.arange(len(vals)) % 8 == a) & mask]
            if kind == "add":
                out[a] = (dst[a].astype(np.float64) + v.astype(np.float64).sum()).astype(dst.dtype) \
                    if dst.dtype.kind == "f" else dst[a] + np.add.reduce(v, dtype=dst.dtype)
            elif kind in ("and", "or", "xor"):
                out[a] = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind].reduce(
                    np.concatenate([[dst[a]], v]))
            elif kind in ("max", "min"):
                from test_atomics import _float_extreme
                best = dst[a]
                for x in v:
                    best = _float_extreme(kind, best, x) if dst.dtype.kind == "f" else (
                        max if kind == "max" else min)(best, x)
                out[a] = best
    return out


# every op and dtype, each with one of the sem/scope pairs in turn (NVRTC compiles all the pairs
# of all of them in tests/test_atomics.py)
PAIRS = [(sem, scope) for sem in ATOMIC_SEMS for scope in ATOMIC_SCOPES]
CASES = [(kind, dtype, *PAIRS[i % len(PAIRS)])
         for i, (kind, dtype) in enumerate((kd, d) for kd in RMW_KINDS for d in ATOMIC_DTYPES[kd])]


@pytest.mark.parametrize("kind,dtype,sem,scope", CASES, ids=["-".join(c) for c in CASES])
def test_every_op_and_dtype(kind, dtype, sem, scope):
    n, block = 1000, 128
    grid = mytriton.cdiv(n, block)
    vals = _values(dtype, kind, grid * block, seed=len(kind) + 11 * len(dtype))
    dst0 = _values(dtype, kind, 8, seed=3)
    if (dtype.startswith("fp") or dtype == "bf16") and kind == "add":
        dst0[:] = 0
    dst, old = dev(dst0), dev(np.full(grid * block, 77, NP[dtype]))
    try:
        k.rmw_tile[(grid,)](dst, dev(vals), old, n, KIND=kind, SEM=sem, SCOPE=scope, BLOCK=block)
    except mytriton.CompilationError as e:
        if dtype == "fp16" and "does not support fp16" in str(e):
            pytest.skip("the CUDA backend has no fp16 values yet")
        raise
    got, old = host(dst), host(old)
    mask = np.arange(grid * block) < n
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[got.itemsize]
    assert (old[n:] == 77).all()                          # masked-off lanes wrote nothing
    if kind != "xchg":
        want = _order_free_reference(kind, dst0, vals, mask)
        if (dtype.startswith("fp") or dtype == "bf16") and kind == "add":
            # (fp16/bf16 round each add: the chain below checks them exactly)
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=5e-2 if dtype == "bf16"
                                       else 1e-5, atol={"fp16": 2.0, "bf16": 8.0}.get(dtype, 1e-2))
        else:
            np.testing.assert_array_equal(got.view(bits), want.view(bits))
    # the old values form one chain per address, in some order: the initial value and every
    # update's result are exactly the old values and the final value
    for a in range(8):
        lanes = (np.arange(grid * block) % 8 == a) & mask
        made = [_step(kind, o, v) for o, v in zip(old[lanes], vals[lanes])]
        np.testing.assert_array_equal(np.sort(np.array([dst0[a], *made], got.dtype).view(bits)),
                                      np.sort(np.array([*old[lanes], got[a]], got.dtype).view(bits)))


def _step(kind, cur, v):
    from test_atomics import _float_extreme
    with np.errstate(all="ignore"):
        if kind == "add":
            return cur + v
        if kind in ("max", "min"):
            return _float_extreme(kind, cur, v) if cur.dtype.kind == "f" else (max if kind == "max" else min)(cur, v)
        return {"and": cur & v, "or": cur | v, "xor": cur ^ v}[kind] if kind in ("and", "or", "xor") else v


@pytest.mark.parametrize("dtype", ["i32", "u64", "fp32", "fp64", "u16", "fp16", "bf16"])
def test_compare_and_swap(dtype):
    t = NP[dtype]
    block = 256
    dst = (np.arange(block) % 3).astype(t)
    cmp = np.where(np.arange(block) % 2 == 0, dst, dst + 1).astype(t)
    val = (np.arange(block) + 10).astype(t)
    d, old = dev(dst), dev(np.zeros(block, t))
    try:
        k.cas_tile[(1,)](d, dev(cmp), dev(val), old, BLOCK=block)
    except mytriton.CompilationError as e:
        if dtype == "fp16" and "does not support fp16" in str(e):
            pytest.skip("the CUDA backend has no fp16 values yet")
        raise
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[dst.itemsize]
    np.testing.assert_array_equal(host(d).view(bits), np.where(np.arange(block) % 2 == 0, val, dst).astype(t).view(bits))
    np.testing.assert_array_equal(host(old).view(bits), dst.view(bits))


def test_interpreter_agrees_with_the_gpu_on_order_free_results():
    x = np.random.default_rng(1).integers(0, 33, 9999).astype(np.int32)
    cpu = np.zeros(33, np.int32)
    k.histogram[(mytriton.cdiv(9999, 512),)](x, cpu, 9999, BLOCK=512)
    gpu = dev(np.zeros(33, np.int32))
    k.histogram[(mytriton.cdiv(9999, 512),)](dev(x), gpu, 9999, BLOCK=512)
    np.testing.assert_array_equal(host(gpu), cpu)


@pytest.mark.parametrize("sem_block", [128, 1024])
def test_spin_lock(sem_block):
    data, lock = dev(np.zeros(sem_block, np.float32)), dev(np.zeros(1, np.int32))
    k.spin_lock[(2000,)](data, lock, BLOCK=sem_block)
    np.testing.assert_array_equal(host(data), np.full(sem_block, 2000.0, np.float32))
    assert host(lock)[0] == 0


@pytest.mark.parametrize("impl", [i for _, i in IMPLS], ids=[n for n, _ in IMPLS])
@pytest.mark.parametrize("shape,axis,dtype", [((2, 2), 0, "fp32"), ((8, 2), 1, "fp32"), ((32, 32), 0, "fp64"),
                                              ((128, 128), 1, "fp32"), ((64, 64), 0, "i64")])
def test_atomic_on_a_reduction_result(impl, shape, axis, dtype):
    """Triton's test_tensor_atomic_rmw: the reduction's sliced layout holds copies of each element."""
    r = np.random.default_rng(17)
    x = (r.standard_normal(shape) * 10).astype(NP[dtype])
    z0 = (r.standard_normal(shape[1 - axis]) * 10).astype(NP[dtype])
    z, old = dev(z0), dev(np.zeros_like(z0))
    impl.sum_then_add[(1,)](z, dev(x), old, AXIS=axis, SHAPE0=shape[0], SHAPE1=shape[1])
    np.testing.assert_allclose(host(z), z0 + x.sum(axis=axis), rtol=1e-4)
    np.testing.assert_array_equal(host(old), z0)

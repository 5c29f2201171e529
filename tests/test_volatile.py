"""tl.load(..., volatile=True): read from memory every time it runs — never hoisted out of a loop
(LICM), prefetched (the software pipeline) or merged, and emitted as volatile loads by both
backends (CUDA: ld.volatile, one element at a time; MLIR: llvm.load volatile)."""
import numpy as np
import pytest

import mytriton
import mytriton.language as tl
from mytriton.compiler import build_ssa
from mytriton.ir.ssa import walk
from tests import cuda_emulator


@mytriton.jit
def _poll(flag_ptr, x_ptr, out_ptr, n, N: tl.constexpr, VOLATILE: tl.constexpr):
    total = tl.zeros((N,), tl.float32)
    for i in tl.range(0, n, num_stages=3):
        f = tl.load(flag_ptr, volatile=VOLATILE)
        offs = tl.arange(0, N)
        total += tl.load(x_ptr + i * N + offs, mask=offs < N - 3, other=0.0, volatile=VOLATILE).to(tl.float32) * f
    tl.store(out_ptr + tl.arange(0, N), total)


def _sig(dt="fp32"):
    return {"flag_ptr": "*fp32", "x_ptr": f"*{dt}:16", "out_ptr": "*fp32", "n": "i32"}


@pytest.mark.parametrize("volatile", [False, True])
def test_a_volatile_load_stays_in_its_loop(volatile):
    fn = build_ssa(_poll, _sig(), {"N": 64, "VOLATILE": volatile})
    (loop,) = [op for op in fn.body.ops if op.name == "for"]
    inside = [op for op in walk(loop.regions[0]) if op.name == "load"]
    # the flag's load is invariant and the loop writes nothing: hoisted unless volatile; the tile's
    # load is prefetched (the first iteration's issued in front of the loop) unless volatile
    outside = [op for op in fn.body.ops if op.name == "load"]
    assert (len(inside), len(outside)) == ((2, 0) if volatile else (1, 2))
    assert all(bool(op.attrs.get("volatile")) is volatile for op in inside)


@pytest.mark.parametrize("dt", ["fp32", "fp16"])
def test_volatile_loads_are_ld_volatile_one_element_at_a_time(dt):
    ck = mytriton.compile(_poll, _sig(dt), {"N": 64, "VOLATILE": True}, num_warps=1)
    ptx = ck.asm["ptx"]
    assert "ld.volatile.global" in ptx and "ld.global.v" not in ptx and "ld.global.nc" not in ptx
    plain = mytriton.compile(_poll, _sig(dt), {"N": 64, "VOLATILE": False}, num_warps=1).asm["ptx"]
    assert "ld.volatile" not in plain


def test_volatile_loads_in_the_mlir_backend():
    mlir = mytriton.compile(_poll, _sig(), {"N": 64, "VOLATILE": True}, backend="mlir").asm["mlir"]
    assert mlir.count("llvm.load volatile") == 2 and mlir.count("llvm.load ") == 2


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("dt", ["fp32", "fp16"])
def test_emulated_volatile_loads_agree_with_the_interpreter(dt):
    npd = np.float32 if dt == "fp32" else np.float16
    flag, n = np.array([1.5], np.float32), 50
    x = np.random.default_rng(4).standard_normal((n, 64)).astype(npd)
    got, want = np.zeros(64, np.float32), np.zeros(64, np.float32)
    ck = mytriton.compile(_poll, _sig(dt), {"N": 64, "VOLATILE": True}, num_warps=2)
    cuda_emulator.run(ck.asm["cu"], [flag, x, got, n], (1,))
    _poll[(1,)](flag, x, want, n, N=64, VOLATILE=True, num_warps=2)
    expect = np.where(np.arange(64) < 61, x.astype(np.float32), 0).sum(0) * 1.5
    np.testing.assert_allclose(want, expect, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got, want, rtol=1e-6)

"""Layout conversions through shared memory (ir/exchange.py): the buffer's XOR swizzle and the
vector widths, chosen by simulating one warp's bank accesses — always a permutation of the tile,
never more wavefronts than row-major order, the epilogue of a tensor-core GEMM at the least its
bytes allow; and the CUDA backend's conversions computing what the interpreter computes."""
import numpy as np
import pytest

import mytriton
import mytriton.language as tl
from mytriton.ir.exchange import Exchange, Swizzle, plan_exchange, wavefronts
from mytriton.ir.layout import MmaLayout, default_layout, to_linear
from tests import cuda_emulator

CASES = [((128, 128), 4, 2), ((128, 128), 4, 4), ((128, 64), 8, 2), ((64, 256), 4, 2), ((16, 64), 4, 4),
         ((128, 128), 8, 1), ((32, 32), 4, 8)]


def pair(shape, warps, elem_bytes):
    """An accumulator layout (all warps along M where M allows, as for wgmma) and the default
    blocked layout a store of that element size wants."""
    wm = warps if shape[0] >= 16 * warps else 1
    src = to_linear(MmaLayout((wm, warps // wm)), shape, warps)
    dst = to_linear(default_layout(shape, warps, elem_bytes), shape, warps)
    return src, dst


@pytest.mark.parametrize("shape,warps,elem_bytes", CASES)
def test_the_plan_is_a_permutation_and_never_worse_than_row_major(shape, warps, elem_bytes):
    src, dst = pair(shape, warps, elem_bytes)
    ex = plan_exchange(src, dst, elem_bytes)
    numel = shape[0] * shape[1]
    addresses = [ex.swizzle(x) for x in range(numel)]
    assert sorted(addresses) == list(range(numel))
    swz = ex.swizzle.as_layout(numel)
    assert [swz.apply(offset=x)[0] for x in range(numel)] == addresses
    plain = Exchange(Swizzle(), 1, 1)
    assert sum(wavefronts(src, dst, elem_bytes, ex)) <= sum(wavefronts(src, dst, elem_bytes, plain))
    # a vector access stays inside one swizzled chunk: consecutive registers, consecutive addresses
    for ll, vec in ((src, ex.src_vec), (dst, ex.dst_vec)):
        assert vec * elem_bytes <= 16
        flat = ll.flatten_outs()
        regs = [ex.swizzle(flat.apply(register=r)[0]) for r in range(vec)]
        assert regs == list(range(regs[0], regs[0] + vec)) and regs[0] % vec == 0


def test_a_gemm_epilogue_reaches_the_least_wavefronts_its_bytes_allow():
    """128x128 fp16 from the wgmma accumulator (4 warps) to 8-byte runs along rows: row-major
    order costs 8-way conflicts on the write (each lane's pairs of columns, 8 rows 256 bytes apart);
    the swizzle leaves each warp 64 + 64 wavefronts: its 16 KiB over 128 bytes a wavefront, per side."""
    src, dst = pair((128, 128), 4, 2)
    plain = wavefronts(src, dst, 2, Exchange(Swizzle(), 2, 8))
    assert plain == (512, 64)
    ex = plan_exchange(src, dst, 2)
    assert ex.swizzle.k > 0 and wavefronts(src, dst, 2, ex) == (64, 64)


@mytriton.jit
def epilogue_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                    OUT: tl.constexpr):
    """One tile of A @ B (fp16, K a multiple of BK), cast to OUT and stored (masked) row-major."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=rm[:, None] < M, other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=rn[None, :] < N, other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(OUT), mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")
@pytest.mark.parametrize("out,np_out,warps", [(tl.float16, np.float16, 4), (tl.float32, np.float32, 8),
                                              (tl.int16, np.int16, 4)])
def test_emulated_epilogues_through_swizzled_buffers_agree_with_the_interpreter(out, np_out, warps):
    rng = np.random.default_rng(3)
    m, n, k = 100, 64, 64
    a = rng.integers(-3, 4, (m, k)).astype(np.float16)
    b = rng.integers(-3, 4, (k, n)).astype(np.float16)
    ce = {"BM": 64, "BN": 64, "BK": 32, "OUT": out}
    sig = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": f"*{out.name}:16",
           "M": "i32", "N": "i32:16", "K": "i32:16"}
    ck = mytriton.compile(epilogue_kernel, sig, ce, num_warps=warps)
    body = ck.asm["cu"][ck.asm["cu"].index("__global__"):]
    assert "* buf = " in body and "^" in body[body.index("* buf = "):]        # a swizzled exchange
    grid = (mytriton.cdiv(m, 64),)
    c_cuda, c_interp = np.zeros((m, n), np_out), np.zeros((m, n), np_out)
    cuda_emulator.run(ck.asm["cu"], [a, b, c_cuda, m, n, k], grid)
    epilogue_kernel[grid](a, b, c_interp, m, n, k, **ce, num_warps=warps)
    np.testing.assert_array_equal(c_cuda, c_interp)
    np.testing.assert_array_equal(c_interp, (a.astype(np.float32) @ b.astype(np.float32)).astype(np_out))

"""Block pointers and tensor descriptors: the interpreter against numpy, the generated CUDA (CPU
emulator) against numpy, a block pointer carried by loops, merged by a run-time `if` and passed to
@jit functions, and the errors Triton gives for misuse."""
import numpy as np
import pytest

import mytriton
from tests import cuda_emulator
from tests.kernel_files import compile_error
from tests.kernels import block_ptrs as B

RNG = np.random.default_rng(31)
EMULATOR = pytest.mark.skipif(not cuda_emulator.available(), reason="needs g++ (C++20) to run CUDA on the CPU")


def run(kernel, signature, constexprs, args, grid, emulated, warps=4):
    """The kernel on the interpreter (numpy arrays) or on the CPU emulator (the same arguments)."""
    if not emulated:
        kernel[grid](*args, **constexprs, num_warps=warps)
        return
    if not cuda_emulator.available():
        pytest.skip("needs g++ (C++20) to run CUDA on the CPU")
    ck = mytriton.compile(kernel, signature, constexprs, num_warps=warps)
    cuda_emulator.run(ck.asm["cu"], args, grid)


def copy_reference(x, check, padding, bm, bn, grid):
    """What copy_block stores: y = x + 1, then each program's padded block (x read with padding)."""
    m, n = x.shape
    pad = np.nan if padding == "nan" else 0.0
    big = np.full((grid[0] * bm, grid[1] * bn), pad, np.float32)
    big[:m, :n] = x
    if 0 not in check:         # rows past M are not checked: they read what lies there (not compared)
        big[m:, :] = np.nan
    if 1 not in check:
        big[:, n:] = np.nan
    return x + 1, big


@pytest.mark.parametrize("emulated", [False, True])
@pytest.mark.parametrize("check,padding,transposed,n", [((0, 1), "zero", False, 50), ((0, 1), "nan", True, 50),
                                                        ((1, 0), "", False, 50), ((0, 1), "zero", True, 50),
                                                        ((0,), "nan", False, 64), ((0,), "zero", True, 64)])
def test_block_copy_with_boundary_checks(emulated, check, padding, transposed, n):
    m, bm, bn = 37, 16, 32
    x = RNG.standard_normal((m, n)).astype(np.float32)
    src = np.ascontiguousarray(x.T) if transposed else x
    strides = (1, m) if transposed else (n, 1)
    grid = (3, 2)
    y = np.zeros(m * n + grid[0] * bm * grid[1] * bn, np.float32)
    run(B.copy_block, {"x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32", "stride_xm": "i32",
                       "stride_xn": "i32"}, {"CHECK": check, "PADDING": padding, "BM": bm, "BN": bn},
        [src, y, m, n, *strides], grid, emulated)
    want, padded = copy_reference(x, check, padding, bm, bn, grid)
    np.testing.assert_array_equal(y[:m * n].reshape(m, n), want)
    got = y[m * n:].reshape(grid[0] * bm, grid[1] * bn)
    checked = ~np.isnan(padded) | (padding == "nan")
    np.testing.assert_array_equal(got[checked], padded[checked])


@pytest.mark.parametrize("emulated", [False, True])
@pytest.mark.parametrize("m,n,bm,bn,warps", [(37, 100, 16, 32, 4), (8, 7, 8, 8, 1), (64, 256, 32, 64, 8)])
def test_block_pointer_carried_by_a_loop(emulated, m, n, bm, bn, warps):
    x = RNG.standard_normal((m, n)).astype(np.float32)
    y = np.zeros(m, np.float32)
    run(B.row_sums, {"x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32"}, {"BM": bm, "BN": bn},
        [x, y, m, n], (-(-m // bm),), emulated, warps)
    np.testing.assert_allclose(y, x.sum(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("emulated", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_block_pointer_matmul(emulated, dtype):
    m, n, k = 40, 48, 70
    a = RNG.integers(-3, 4, (m, k)).astype(dtype)
    b = np.asfortranarray(RNG.integers(-3, 4, (k, n)).astype(dtype))       # (column-major B)
    c = np.zeros((m, n), dtype)
    sig = {"a_ptr": f"*{'fp32' if dtype == np.float32 else 'fp16'}", "b_ptr": "", "c_ptr": ""}
    sig = {"a_ptr": sig["a_ptr"], "b_ptr": sig["a_ptr"], "c_ptr": sig["a_ptr"],
           **{p: "i32" for p in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
                                 "stride_cn")}}
    bt = np.ascontiguousarray(b.T)
    run(B.matmul_block_ptr, sig, {"BM": 32, "BN": 32, "BK": 16},
        [a, bt, c, m, n, k, k, 1, 1, k, n, 1], (2, 2), emulated)
    np.testing.assert_array_equal(c, (a.astype(np.float32) @ b.astype(np.float32)).astype(dtype))


@pytest.mark.parametrize("emulated", [False, True])
@pytest.mark.parametrize("flag", [1, 0])
def test_block_pointer_chosen_by_a_runtime_if(emulated, flag):
    x = RNG.standard_normal((16, 8)).astype(np.float32)
    y = np.zeros((8, 8), np.float32)
    run(B.choose_block, {"x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32", "flag": "i32"},
        {"BM": 8, "BN": 8}, [x, y, 16, 8, flag], (1,), emulated)
    np.testing.assert_array_equal(y, x[:8] if flag else x[8:])


@pytest.mark.parametrize("emulated", [False, True])
def test_descriptor_copy(emulated):
    m, n = 45, 70
    x = RNG.standard_normal((m, n)).astype(np.float32)
    y = np.zeros((m, n), np.float32)
    run(B.descriptor_copy, {"x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32"}, {"BM": 16, "BN": 32},
        [x, y, m, n], (3, 3), emulated)
    np.testing.assert_array_equal(y, 2 * x)


@pytest.mark.parametrize("emulated", [False, True])
def test_descriptor_block_over_every_edge_reads_zeros(emulated):
    a, b, c, ba, bb, bc = 5, 6, 12, 4, 4, 8
    x = RNG.standard_normal((a, b, c)).astype(np.float32)
    y = np.full((ba, bb, bc), 7, np.float32)
    run(B.descriptor_3d, {"x_ptr": "*fp32", "y_ptr": "*fp32", "A": "i32", "B": "i32", "C": "i32"},
        {"BA": ba, "BB": bb, "BC": bc}, [x, y, a, b, c], (1,), emulated)
    want = np.zeros((ba, bb, bc), np.float32)
    want[:ba // 2, 1:, :bc // 2] = x[a - ba // 2:, :bb - 1, c - bc // 2:]
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("emulated", [False, True])
def test_descriptor_atomic_add(emulated):
    starts = np.array([0, 3, 3, 60, -2], np.int32)
    out = np.zeros(64, np.int32)
    run(B.descriptor_histogram, {"idx_ptr": "*i32", "out_ptr": "*i32", "N": "i32"}, {"BN": 8},
        [starts, out, 64], (5,), emulated)
    want = np.zeros(64, np.int32)
    for s in starts:
        lo, hi = max(s, 0), min(s + 8, 64)
        want[lo:hi] += 1
    np.testing.assert_array_equal(out, want)


HEAD = "import mytriton\nimport mytriton.language as tl\n\n\n@mytriton.jit\ndef k(x, y, n):\n"


@pytest.mark.parametrize("body,message", [
    ("    p = tl.make_block_ptr(x, (n,), (1,), (0,), (16,), (0,))\n    tl.store(y, tl.load(p, mask=tl.arange(0, 16) < n))",
     "tl.load of a block pointer takes no `mask` or `other`"),
    ("    p = tl.make_block_ptr(x, (n,), (1,), (0,), (16,), (0,))\n    tl.store(y, tl.load(p, boundary_check=(1,)))",
     "boundary_check must list dimensions of the block (0 <= dim < 1), got 1"),
    ("    p = tl.make_block_ptr(x, (n,), (1,), (0,), (16,), (0,))\n    tl.store(y, tl.load(p, boundary_check=(0,), padding_option='inf'))",
     "padding_option must be one of '', 'zero', 'nan', got 'inf'"),
    ("    p = tl.make_block_ptr(x, (n, n), (n, 1), (0, 0), (16, 12), (1, 0))\n",
     "block_shape must hold powers of 2 (constexprs), got [16, 12]"),
    ("    p = tl.make_block_ptr(x, (n, n), (n, 1), (0,), (16, 16), (1, 0))\n",
     "offsets must have 2 entries (one per dimension), got 1"),
    ("    p = tl.make_block_ptr(x, (n, n), (n, 1), (0, 0), (16, 16), (0, 0))\n",
     "order must be a permutation of the 2 dimensions"),
    ("    p = tl.make_block_ptr(x, (n,), (1,), (0,), (16,), (0,))\n    for i in range(n):\n"
     "        p = tl.make_block_ptr(x, (n,), (1,), (i,), (32,), (0,))\n",
     "loop-carried variable 'p' enters the loop as a block_ptr but is reassigned to a block_ptr of another structure"),
    ("    d = tl.make_tensor_descriptor(x, [n, n], [1, n], [16, 16])\n",
     "the last stride must be the constant 1"),
    ("    d = tl.make_tensor_descriptor(x, [n, n], [n, 1], [16, 2])\n",
     "Descriptor block shape must have at least 16 bytes in the last dimension, got 2 elements of f32"),
    ("    p = tl.make_block_ptr(x, (n,), (1,), (0,), (16,), (0,))\n    tl.store(p, tl.zeros((8,), tl.float32))",
     "the value's shape [8] is not the block shape [16]"),
    ("    tl.store(y, tl.load(x + tl.arange(0, 16), boundary_check=(0,)))",
     "boundary_check and padding_option apply to block pointers"),
])
def test_block_pointer_misuse_is_a_located_error(tmp_path, body, message):
    err = compile_error(tmp_path / "bp.py", HEAD + body + "\n", {"x": "*fp32", "y": "*fp32", "n": "i32"})
    assert message in err and "bp.py:" in err, err


def test_nan_padding_needs_floats(tmp_path):
    err = compile_error(tmp_path / "bp.py", HEAD + "    p = tl.make_block_ptr(x, (n,), (1,), (0,), (16,), (0,))\n"
                        "    tl.store(y + tl.arange(0, 16), tl.load(p, boundary_check=(0,), padding_option='nan'))\n",
                        {"x": "*i32", "y": "*i32", "n": "i32"})
    assert "padding_option 'nan' needs a floating-point block, got i32" in err and "bp.py:8:" in err


def test_a_block_pointer_dot_loop_is_pipelined_with_async_copies():
    """The parts of a block pointer that tl.advance leaves alone (base, shape, strides) are carried
    unchanged: the loop reads their initial values, so its loads depend only on the index and the
    advanced offsets, and the prefetch pass stages them (16-byte cp.async into rings) as it does
    `ptrs += BK * stride`. Before, they were element-by-element loads through registers."""
    sig = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16", "M": "i32:16", "N": "i32:16",
           "K": "i32:16", "stride_am": "i32:16", "stride_ak": "i32:1", "stride_bk": "i32:16", "stride_bn": "i32:1",
           "stride_cm": "i32:16", "stride_cn": "i32:1"}
    cu = mytriton.compile(B.matmul_block_ptr, signature=sig, constexprs={"BM": 64, "BN": 64, "BK": 32},
                          target="sm_90", num_warps=4, num_stages=3).asm["cu"]
    body = cu.split('extern "C"')[1]
    assert body.count("mt_cp_async<16>(") == 6 and "_regs[" not in body

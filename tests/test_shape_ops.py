"""Triton's shape ops (tl.reshape / view / ravel and x.reshape, tl.join, tl.split, tl.interleave,
tl.cat, tl.flip, tl.broadcast): the interpreter against numpy, the generated CUDA (CPU emulator)
against the same answers, and the errors users get."""
import numpy as np
import pytest

import mytriton
from tests import cuda_emulator
from tests.kernel_files import compile_error
from tests.kernels import shapes as K

EMULATOR = cuda_emulator.available()


def check(kernel, signature, constexprs, args, out_index, want, warps=4):
    """The interpreter's answer, then the emulated CUDA's (same arguments, fresh output)."""
    kernel[(1,)](*args, **constexprs)
    np.testing.assert_array_equal(args[out_index], want)
    if EMULATOR:
        ck = mytriton.compile(kernel, signature, constexprs, num_warps=warps)
        fresh = [np.zeros_like(a) if i == out_index else a for i, a in enumerate(args)]
        cuda_emulator.run(ck.asm["cu"], fresh, (1,))
        np.testing.assert_array_equal(fresh[out_index], want)


@pytest.mark.parametrize("m,n,p,q,warps", [(8, 8, 4, 16, 4), (8, 8, 64, 1, 1), (16, 32, 512, 1, 4), (4, 64, 16, 16, 2)])
def test_reshape_keeps_row_major_order(m, n, p, q, warps):
    x = np.random.default_rng(1).standard_normal((m, n)).astype(np.float32)
    z = np.zeros(3 * m * n, np.float32)
    check(K.reshape_kernel, {"X": "*fp32", "Z": "*fp32"}, {"M": m, "N": n, "P": p, "Q": q}, [x, z], 1,
          np.tile(x.ravel(), 3), warps)


@pytest.mark.parametrize("n,warps", [(16, 4), (256, 2)])
def test_join_interleave_and_split(n, warps):
    a = np.arange(n, dtype=np.int32)
    b = -a - 1
    pairs = np.stack([a, b], 1).ravel()
    z = np.zeros(6 * n, np.int32)
    check(K.join_split_kernel, {"A": "*i32", "B": "*i32", "Z": "*i32"}, {"N": n}, [a, b, z], 2,
          np.concatenate([pairs, pairs, a, b]), warps)


@pytest.mark.parametrize("m,n", [(4, 8), (32, 16)])
def test_cat_and_flip(m, n):
    a = np.arange(m * n, dtype=np.int32).reshape(m, n)
    b = a + 1000
    z = np.zeros(4 * m * n, np.int32)
    check(K.cat_flip_kernel, {"A": "*i32", "B": "*i32", "Z": "*i32"}, {"M": m, "N": n}, [a, b, z], 2,
          np.concatenate([a.ravel(), b.ravel(), a[::-1].ravel(), a[:, ::-1].ravel()]))


def test_split_of_two_elements_gives_scalars():
    check(K.split_scalars_kernel, {"Z": "*i32"}, {}, [np.zeros(1, np.int32)], 0, [56])


BAD = '''import mytriton
import mytriton.language as tl


@mytriton.jit
def k(X, CASE: tl.constexpr):
    x = tl.load(X + tl.arange(0, 16))
    if CASE == 0:
        y = tl.reshape(x, (4, 8))
    elif CASE == 1:
        y, z = tl.split(x)
    elif CASE == 2:
        y = tl.cat(x, tl.load(X + tl.arange(0, 8)))
    else:
        y = tl.flip(x, 1)
    tl.store(X, tl.sum(y, None))
'''


@pytest.mark.parametrize("case,message,line", [
    (0, "reshape: cannot reshape a block of 16 elements [16] into [4, 8] (32 elements)", 9),
    (1, "split: the last dimension must have size 2, got shape [16]", 11),
    (2, "block dimensions must be powers of 2, got (24,)", 13),
    (3, "flip: dim 1 is out of range for a rank-1 block", 15)])
def test_errors_name_the_line(tmp_path, case, message, line):
    text = compile_error(tmp_path / "bad_shape.py", BAD, {"X": "*fp32"}, {"CASE": case})
    assert message in text and f"bad_shape.py:{line}" in text


def test_broadcast_and_join_of_scalars():
    x = np.arange(32, dtype=np.int32)
    y = np.array([42, 100], np.int32)
    z = np.zeros(34, np.int32)
    want = np.concatenate([(x.reshape(4, 8) * 100 + x[:8]).ravel(), y])
    check(K.broadcast_join_kernel, {"X": "*i32", "Y": "*i32", "Z": "*i32"}, {"M": 4, "N": 8}, [x, y, z], 2, want)


@pytest.mark.parametrize("src_shape,index_shape,axis,warps", [((4, 4), (8, 4), 0, 1), ((128, 64), (256, 64), 0, 4),
                                                               ((128, 64), (128, 128), 1, 4), ((1, 32), (1, 64), 1, 2)])
def test_gather_along_an_axis(src_shape, index_shape, axis, warps):
    """As torch.gather / numpy.take_along_axis."""
    rng = np.random.default_rng(5)
    src = rng.standard_normal(src_shape).astype(np.float32)
    index = rng.integers(0, src_shape[axis], index_shape).astype(np.int32)
    out = np.zeros(index_shape, np.float32)
    check(K.gather_kernel, {"S": "*fp32", "I": "*i32", "O": "*fp32"},
          {"SM": src_shape[0], "SN": src_shape[1], "IM": index_shape[0], "IN": index_shape[1], "AXIS": axis},
          [src, index, out], 2, np.take_along_axis(src, index, axis), warps)


def test_gather_shapes_must_agree_off_the_axis():
    with pytest.raises(mytriton.CompilationError, match=r"tl.gather: source \[4, 4\] and index \[8, 8\] must agree "
                                                        r"on every dimension but 0"):
        mytriton.compile(K.gather_kernel, {"S": "*fp32", "I": "*i32", "O": "*fp32"},
                         {"SM": 4, "SN": 4, "IM": 8, "IN": 8, "AXIS": 0})


@pytest.mark.parametrize("m,n,k,descending,topk,dtype", [
    (4, 16, 16, False, False, np.float32), (2, 64, 64, True, False, np.int32), (8, 32, 8, True, True, np.float32),
    (1, 128, 4, True, True, np.int16), (2, 8, 8, False, False, np.float16)])
def test_sort_and_topk_as_numpy(m, n, k, descending, topk, dtype):
    """A bitonic network along the last dimension; small integers make many ties."""
    x = (np.random.default_rng(n + k).standard_normal((m, n)) * 10).astype(dtype)
    x[0, :4] = x[0, 4]                                         # ties
    z = np.zeros((m, k), dtype)
    names = {np.float32: "fp32", np.int32: "i32", np.int16: "i16", np.float16: "fp16"}
    want = np.sort(x, 1)[:, ::-1][:, :k] if (descending or topk) else np.sort(x, 1)
    check(K.sort_kernel, {"X": f"*{names[dtype]}", "Z": f"*{names[dtype]}"},
          {"M": m, "N": n, "K": k, "DESCENDING": descending, "TOPK": topk}, [x, z], 1, want)


def test_sort_errors():
    with pytest.raises(mytriton.CompilationError, match="tl.topk's k must be a power of 2, got 3"):
        mytriton.compile(K.sort_kernel, {"X": "*fp32", "Z": "*fp32"},
                         {"M": 2, "N": 8, "K": 3, "DESCENDING": True, "TOPK": True})


@pytest.mark.parametrize("n,warps", [(8, 1), (32, 4)])
def test_indexing_and_keep_dims_as_triton(n, warps):
    x = np.random.default_rng(5).integers(-50, 50, (n, n)).astype(np.int32)
    z = np.zeros(2 * n + 2, np.int32)
    want = np.concatenate([x[0] * 2, x[0] * 3, [x.sum(), x[0].max()]]).astype(np.int32)
    check(K.index_like_triton_kernel, {"X": "*i32", "Z": "*i32"}, {"N": n}, [x, z], 1, want, warps)

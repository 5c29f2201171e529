"""Frontend forms of Triton's kernels: a torch.Size (``SHAPE=x.shape``) as a constexpr tuple for a
descriptor's shape, and a tensor descriptor assigned in both branches of a run-time ``if`` -- with
the same block shape merged (its shape and strides are run-time values), with another refused at
the ``if`` as Triton refuses it (a descriptor's type includes its block shape)."""
import numpy as np
import pytest

import mytriton
from tests.kernel_files import compile_error, kernel_from_source

HEAD = "import mytriton\nimport mytriton.language as tl\n\n\n"

SIZE = HEAD + """@mytriton.jit
def k(x_ptr, out_ptr, SHAPE: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, shape=SHAPE, strides=[SHAPE[1], 1], block_shape=[BM, BN])
    odesc = tl.make_tensor_descriptor(out_ptr, shape=SHAPE, strides=[SHAPE[1], 1], block_shape=[BM, BN])
    odesc.store([0, 0], desc.load([0, 0]) * 2)
"""


class Size(tuple):
    """Stands for torch.Size (a tuple subclass of the module torch), without torch."""


Size.__module__ = "torch"


def test_a_torch_size_is_a_constexpr_tuple(tmp_path):
    k = kernel_from_source(tmp_path / "size.py", SIZE)
    x = np.arange(6 * 8, dtype=np.float32).reshape(6, 8)
    out = np.full((6, 8), -1, np.float32)
    k[(1,)](x, out, SHAPE=Size(x.shape), BM=8, BN=8)               # (a block past the 6 rows: masked)
    np.testing.assert_array_equal(out, 2 * x)
    ck = mytriton.compile(k, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"SHAPE": Size((6, 8)), "BM": 8, "BN": 8})
    assert ck.asm["cubin"]

    class Other(tuple):
        pass
    text = compile_error(tmp_path / "size2.py", SIZE, {"x_ptr": "*fp32", "out_ptr": "*fp32"},
                         {"SHAPE": Other((6, 8)), "BM": 8, "BN": 8})
    assert "constexpr 'SHAPE' is a " in text and "Other" in text          # (other tuple classes: refused)


BRANCHES = HEAD + """@mytriton.jit
def same(x_ptr, out_ptr, M, N, flag, BM: tl.constexpr, BN: tl.constexpr):
    if flag > 0:
        desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    else:
        desc = tl.make_tensor_descriptor(x_ptr + N, shape=[M - 1, N], strides=[N, 1], block_shape=[BM, BN])
    odesc = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    odesc.store([0, 0], desc.load([0, 0]))


@mytriton.jit
def other(x_ptr, out_ptr, M, N, flag, BM: tl.constexpr, BN: tl.constexpr):
    if flag > 0:
        desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    else:
        desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM // 2, BN])
    tl.store(out_ptr, desc.load([0, 0]).sum())
"""


def test_a_descriptor_from_both_branches_of_a_run_time_if(tmp_path):
    same, other = kernel_from_source(tmp_path / "branches.py", BRANCHES, "same", "other")
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    for flag in (1, 0):
        out = np.zeros_like(x)
        same[(1,)](x, out, 8, 8, flag, BM=8, BN=8)
        want = x if flag else np.concatenate([x[1:], np.zeros((1, 8), np.float32)])   # (the 8th row: out of bounds)
        np.testing.assert_array_equal(out, want)
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "M": "i32", "N": "i32", "flag": "i32"}
    for target in ("sm_80", "sm_90a"):
        assert mytriton.compile(same, sig, {"BM": 8, "BN": 8}, target=target).asm["cubin"]
    with pytest.raises(mytriton.CompilationError) as e:
        mytriton.compile(other, sig, {"BM": 8, "BN": 8})
    text = str(e.value)
    assert "branches.py:17:5" in text and ("`desc` is a tensor_descriptor in the then branch of this run-time `if` "
                                           "and a tensor_descriptor of another block shape in the else branch "
                                           "([8, 8] and [4, 8])") in text

"""benchmarks/peer_core.py's stand-in for Triton's ``patch_kernel``: the patched kernel is read from
a file of its own, keeps the template's closure (a name the test imported inside itself), and
ignores the closure's empty cells (a name the test assigns only after patching)."""
import sys
from pathlib import Path

import numpy as np

import mytriton
import mytriton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from peer_core import PATCH_KERNEL  # noqa: E402

namespace = {"__file__": __file__, "mytriton": mytriton, "tl": tl}     # (the test file's globals)
exec(PATCH_KERNEL, namespace)
patch_kernel = namespace["patch_kernel"]


def test_a_patched_kernel_keeps_the_closure_and_skips_its_empty_cells(monkeypatch, tmp_path):
    monkeypatch.setitem(namespace, "__file__", str(tmp_path / "test_core.py"))
    offset = 5

    @mytriton.jit
    def template(x_ptr, N: tl.constexpr):
        GENERATE
        tl.store(x_ptr + tl.arange(0, N), z + offset)

    kernel = patch_kernel(template, {"GENERATE": "z = tl.arange(0, N) * 2"})
    assert Path(kernel.fn.__code__.co_filename).parent == tmp_path / "patched_kernels"
    z = np.zeros(8, np.int32)                  # (the test's own z: an empty cell when patched)
    kernel[(1,)](z, N=8)
    np.testing.assert_array_equal(z, np.arange(8) * 2 + offset)

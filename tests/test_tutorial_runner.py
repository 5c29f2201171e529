"""benchmarks/tutorials.py, the runner of Triton's tutorials over a Triton checkout: taking a
tutorial's kernels out of its file (host code, tests and plots left behind), pointing their
imports at mytriton, and running them in the interpreter. The tutorial here is a stand-in written
for this test, laid out as Triton's are."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import tutorials  # noqa: E402

STAND_IN = '''\
"""
Vector Add
==========
A stand-in for a tutorial: prose, kernels, host code that runs at import.
"""
import tabulate
import torch

import triton
import triton.language as tl
from triton.language.extra import libdevice

DEVICE = triton.runtime.driver.active.get_active_torch_device()
SCALE = 2.0
x = torch.rand(100, device=DEVICE)


def configs():
    return [triton.Config({"BLOCK_SIZE": 64}, num_warps=1), triton.Config({"BLOCK_SIZE": 128}, num_warps=2)]


@triton.jit
def twice(v):
    return v * SCALE


@triton.autotune(configs=configs(), key=["n_elements"])
@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    output = x + twice(tl.load(y_ptr + offsets, mask=mask))
    tl.store(output_ptr + offsets, output, mask=mask)


@triton.jit
def asin_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(y_ptr + offsets, libdevice.asin(tl.load(x_ptr + offsets, mask=offsets < n_elements)),
             mask=offsets < n_elements)


def add(x, y):
    output = torch.empty_like(x)
    add_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK_SIZE"]),)](x, y, output, x.numel())
    return output


print(tabulate.tabulate([[add(x, x)]]))
raise SystemExit("host code must not run")
'''

KERNELS = '''\
import triton
import triton.language as tl
from triton.language.extra import libdevice


SCALE = 2.0


def configs():
    return [triton.Config({"BLOCK_SIZE": 64}, num_warps=1), triton.Config({"BLOCK_SIZE": 128}, num_warps=2)]


@triton.jit
def twice(v):
    return v * SCALE


@triton.autotune(configs=configs(), key=["n_elements"])
@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    output = x + twice(tl.load(y_ptr + offsets, mask=mask))
    tl.store(output_ptr + offsets, output, mask=mask)


@triton.jit
def asin_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(y_ptr + offsets, libdevice.asin(tl.load(x_ptr + offsets, mask=offsets < n_elements)),
             mask=offsets < n_elements)
'''


def test_the_kernels_and_what_they_use_are_taken_out_of_the_file():
    source, names = tutorials.kernel_source(STAND_IN)
    assert names == ["twice", "add_kernel", "asin_kernel"]
    assert source == KERNELS        # no torch, tabulate, DEVICE, x, host function or top-level code


def test_imports_point_at_mytriton():
    assert tutorials.for_mytriton(KERNELS).splitlines()[:5] == [
        "import mytriton as triton", "import mytriton.language as tl", "from mytriton.language.extra import libdevice",
        "", ""]


def test_the_kernels_run_in_the_interpreter(tmp_path):
    (tmp_path / "t.py").write_text(STAND_IN)
    module = tutorials.load_kernels(tmp_path / "t.py", "mytriton", tmp_path)
    x, y = np.arange(300, dtype=np.float32), np.ones(300, np.float32)
    out = np.zeros(300, np.float32)
    module.add_kernel[lambda meta: (-(-300 // meta["BLOCK_SIZE"]),)](**tutorials.by_name(
        module.add_kernel, {"x_ptr": x, "y_ptr": y, "output_ptr|out_ptr": out, "n_elements": 300, "unused": 1}))
    assert (out == x + 2).all()
    assert tutorials.arg_names(module.add_kernel) == ["x_ptr", "y_ptr", "output_ptr", "n_elements", "BLOCK_SIZE"]
    with pytest.raises(tutorials.TutorialError, match="t.py has no kernel sub_kernel"):
        tutorials.kernel(module, "sub_kernel", tmp_path / "t.py")


def test_files_that_cannot_be_used_are_clear_errors(tmp_path):
    with pytest.raises(tutorials.TutorialError, match=r"^x.py: no @triton.jit function$"):
        tutorials.kernel_source("import triton\nprint(1)\n", "x.py")
    with pytest.raises(tutorials.TutorialError, match=r"^x.py:1: not Python"):
        tutorials.kernel_source("def (:\n", "x.py")


def test_the_runner_drives_a_tutorial_in_the_interpreter(tmp_path, capsys):
    """01 and 07 from the stand-in (it holds both kernels); the missing files are failed rows."""
    plain = STAND_IN.replace('@triton.autotune(configs=configs(), key=["n_elements"])\n', "")
    (tmp_path / "01-vector-add.py").write_text(plain.replace("x + twice(tl.load(y_ptr + offsets, mask=mask))",
                                                             "x + tl.load(y_ptr + offsets, mask=mask)"))
    (tmp_path / "07-extern-functions.py").write_text(STAND_IN)
    assert tutorials.main([str(tmp_path), "--only", "01,07", "--interpret"]) == 0
    out = capsys.readouterr().out
    assert "01 vector add n=4097 (interpreter)    ok" in out and "07 libdevice asin (interpreter)       ok" in out
    assert tutorials.main([str(tmp_path), "--only", "02,03", "--interpret"]) == 1
    out = capsys.readouterr().out
    assert "02 02-fused-softmax.py                FAILED: not found in" in out
    assert "03 not interpreted: the file asks the GPU driver for its target (its autotune configs) at import" in out

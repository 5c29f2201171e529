"""tl.device_print in Triton 3.6's format (its tt.print lowering): the printf format string the
CUDA backend emits and the interpreter formats with, as goldens, and the lines printed."""
import numpy as np
import pytest

import mytriton
from mytriton.ir.ops import print_line_format
from mytriton.ir.types import SCALARS, PointerType
from mytriton.language import print_label
from tests.kernel_files import kernel_from_source

GOLDEN_FORMATS = [   # (dtype, hex, shape) -> Triton's format string (the label is the %s)
    (("i32", False, (128,)), "pid (%u, %u, %u) idx (%3u)%s%i\n"),
    (("i32", True, (128,)), "pid (%u, %u, %u) idx (%3u)%s0x%08x\n"),
    (("fp32", False, (16, 100)), "pid (%u, %u, %u) idx (%2u, %2u)%s%f\n"),
    (("fp16", True, (1, 8)), "pid (%u, %u, %u) idx (%0u, %1u)%s0x%04x\n"),
    (("bf16", False, (2, 3, 1000)), "pid (%u, %u, %u) idx (%1u, %1u, %3u)%s%f\n"),
    (("fp64", True, ()), "pid (%u, %u, %u) idx ()%s0x%016llx\n"),
    (("i64", False, (10,)), "pid (%u, %u, %u) idx (%1u)%s%lli\n"),
    (("u64", False, (11,)), "pid (%u, %u, %u) idx (%2u)%s%llu\n"),
    (("u8", False, (4,)), "pid (%u, %u, %u) idx (%1u)%s%u\n"),
    (("i8", True, (4,)), "pid (%u, %u, %u) idx (%1u)%s0x%02x\n"),
    (("i1", False, (4,)), "pid (%u, %u, %u) idx (%1u)%s%u\n"),
    (("ptr", False, (4,)), "pid (%u, %u, %u) idx (%1u)%s%p\n"),
]


@pytest.mark.parametrize("key,golden", GOLDEN_FORMATS)
def test_the_printf_format_is_tritons(key, golden):
    dtype, hex_, shape = key
    t = PointerType(SCALARS["fp32"]) if dtype == "ptr" else SCALARS[dtype]
    assert print_line_format(t, hex_, shape) == golden


@pytest.mark.parametrize("prefix,label", [   # (Triton 3.6's semantic.device_print, run on these prefixes)
    ("x", " x: "), ("", ": "), ("x: ", " x: "), (" y ", " y: "), ("ab:", " ab: "), ("x: %s", " x: %s: "),
    ("a", " a: "), ("value=", " value=: "), ("  two spaces", "  two spaces: ")])
def test_the_prefix_is_munged_as_tritons(prefix, label):
    assert print_label(prefix) == label


SOURCE = """import mytriton
import mytriton.language as tl


@mytriton.jit
def k(x_ptr, n, HEX: tl.constexpr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.device_print("x", x, hex=HEX)
    tl.device_print("", tl.program_id(0), x.to(tl.float32) * 0.5)
"""


def test_the_lines_printed_and_the_cuda_source(tmp_path, capfd):
    k = kernel_from_source(tmp_path / "print_kernel.py", SOURCE)
    x = np.arange(-3, 13, dtype=np.int32)
    k[(2,)](x, 12, HEX=False)
    lines = capfd.readouterr().out.splitlines()
    assert lines[:3] == ["pid (0, 0, 0) idx ( 0) x: -3", "pid (0, 0, 0) idx ( 1) x: -2",
                         "pid (0, 0, 0) idx ( 2) x: -1"]
    assert "pid (1, 0, 0) idx (15) x: 0" in lines
    assert "pid (1, 0, 0) idx (): (operand 0) 1" in lines
    assert "pid (0, 0, 0) idx ( 4): (operand 1) 0.500000" in lines
    assert len(lines) == 2 * (16 + 1 + 16)
    k[(1,)](x, 12, HEX=True)
    assert "pid (0, 0, 0) idx ( 0) x: 0xfffffffd" in capfd.readouterr().out.splitlines()
    cu = mytriton.compile(k, {"x_ptr": "*i32", "n": "i32"}, {"HEX": True}).asm["cu"]
    assert 'printf("pid (%u, %u, %u) idx (%2u)%s0x%08x\\n", ' in cu
    assert 'printf("pid (%u, %u, %u) idx ()%s%i\\n", ' in cu
    assert 'printf("pid (%u, %u, %u) idx (%2u)%s%f\\n", ' in cu
    assert '" x\\072 "' in cu and '"\\072 \\050operand 1\\051 "' in cu


def test_a_print_without_values_is_refused_at_its_line(tmp_path):
    from tests.kernel_files import compile_error
    text = compile_error(tmp_path / "bare_print.py", "import mytriton\nimport mytriton.language as tl\n\n\n"
                         "@mytriton.jit\ndef k(x_ptr):\n    tl.device_print(\"hello\")\n", {"x_ptr": "*i32"})
    assert "bare_print.py:7" in text and "tl.device_print with no values to print is not supported" in text


def test_print_in_a_kernel_is_device_print(tmp_path, capfd):
    """As Triton: ``print(prefix, *values)`` in a kernel is ``tl.device_print``."""
    src = "import mytriton\nimport mytriton.language as tl\n\n\n@mytriton.jit\ndef k(x_ptr):\n" \
          "    print('v', tl.load(x_ptr + tl.arange(0, 2)))\n"
    k = kernel_from_source(tmp_path / "py_print.py", src)
    k[(1,)](np.array([7, 8], np.int32))
    assert capfd.readouterr().out.splitlines() == ["pid (0, 0, 0) idx (0) v: 7", "pid (0, 0, 0) idx (1) v: 8"]

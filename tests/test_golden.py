"""Exact-text goldens of the SSA printer and the CUDA backend for canonical kernels.
Regenerate (then review the diff!) with MYTRITON_UPDATE_GOLDENS=1."""
import os
from pathlib import Path

import pytest

import mytriton
from tests.kernels import basic, control

GOLDENS = Path(__file__).parent / "goldens"
F32_1D = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
MATMUL = {"a": "*fp32", "b": "*fp32", "c": "*fp32", "M": "i32", "N": "i32", "K": "i32"}

CASES = {
    "add_kernel": (basic.add_kernel, F32_1D, {"BLOCK": 256}),
    # aligned, n a multiple of 16: one predicated 16-byte access per 4 elements
    "leaky_relu_kernel": (basic.leaky_relu_kernel, {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": "i32:16",
                                                    "slope": "fp32"}, {"BLOCK": 1024}),
    "factories_kernel": (basic.factories_kernel, {"out": "*fp32", "value": "fp32"}, {"BLOCK": 8}),
    "matmul_kernel": (basic.matmul_kernel, MATMUL, {"BM": 4, "BN": 8}),
    "control_branches": (control.branches, {"x_ptr": "*fp32", "out_ptr": "*fp32", "flags_ptr": "*i32", "n": "i32",
                                            "thr": "fp32"}, {"BLOCK": 64}),
    "control_countdown": (control.countdown, {"x_ptr": "*fp32", "out_ptr": "*fp32", "steps_ptr": "*i32",
                                              "n": "i32"}, {"BLOCK": 64}),
    "control_early_exit": (control.early_exit, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_valid": "i32",
                                                "lo": "fp32", "hi": "fp32"}, {"BLOCK": 16}),
    "control_strides": (control.strides, {"out_ptr": "*i32", "start": "i32", "stop": "i32", "step": "i32",
                                          "n": "i32"}, {}),
}


def check_golden(name: str, text: str):
    path = GOLDENS / name
    if os.environ.get("MYTRITON_UPDATE_GOLDENS") == "1":
        path.write_text(text)
    assert path.exists(), f"missing golden {path}; run with MYTRITON_UPDATE_GOLDENS=1 and review it"
    assert text == path.read_text()


@pytest.mark.parametrize("name", sorted(CASES))
def test_ssa_golden(name):
    fn, sig, ce = CASES[name]
    check_golden(f"{name}.ssa", mytriton.compile(fn, signature=sig, constexprs=ce).asm["ssa"])


@pytest.mark.parametrize("name", ["add_kernel", "leaky_relu_kernel"])
def test_cuda_golden(name):
    fn, sig, ce = CASES[name]
    check_golden(f"{name}.cu", mytriton.compile(fn, signature=sig, constexprs=ce).asm["cu"])


def test_seed_matmul_format():
    """The runtime-K matmul prints in the format of seed parts 10/11."""
    ssa = mytriton.compile(basic.matmul_kernel, signature=MATMUL, constexprs={"BM": 4, "BN": 8}).asm["ssa"]
    assert "zeros {shape=(4, 8), dtype=f32} : block<4x8 x f32>" in ssa
    loop = [line for line in ssa.splitlines() if " = for " in line]
    assert len(loop) == 1
    import re
    assert re.fullmatch(r"%\d+ = for %\d+ in range\(0, K, 1\) iter_args\(%\d+ = %0\) : block<4x8 x f32> \{", loop[0])
    assert re.search(r"\n  yield %\d+\n\}\n", ssa)
    assert re.search(r"= load %\d+, %\d+, 0\.0 : block<4x1 x f32>", ssa)
    assert re.search(r"= load %\d+, %\d+, 0\.0 : block<1x8 x f32>", ssa)


def assert_in_order(cu: str, expected: list[str]):
    """Each of ``expected`` is part of a line of ``cu``, in this order (FileCheck's CHECK lines)."""
    pos = 0
    lines = [line.strip() for line in cu.splitlines()]
    for want in expected:
        while pos < len(lines) and want not in lines[pos]:
            pos += 1
        assert pos < len(lines), f"missing (in order): {want}\n{cu}"
        pos += 1


def test_cuda_loop_shape():
    """FileCheck-style: the carried accumulator is declared before the loop and assigned at its end."""
    cu = mytriton.compile(basic.matmul_kernel, signature=MATMUL, constexprs={"BM": 64, "BN": 64}).asm["cu"]
    expected = [
        "float v25[32];",
        "for (int r = 0; r < 32; ++r) v25[r] = v0[r];",
        "for (int v14 = 0; v14 < p_K; v14 += 1) {",
        "float v24[32];",
        "for (int r = 0; r < 32; ++r) v24[r] = (v25[r] + v23[r]);",
        "for (int r = 0; r < 32; ++r) v25[r] = v24[r];",
        "}",
        "*reinterpret_cast<mt_vec<float, 4>*>(v28[r]) = t;",
    ]
    assert_in_order(cu, expected)


def test_cuda_staged_column():
    """FileCheck-style: an outer-product tile of 128 elements a thread or more (passes/layout.py,
    _outer_product_pays) takes each iteration's column through one of two buffers in turn, one
    barrier an iteration, read back 16 bytes at a time. On one warp the barrier comes before the
    column's stores, which ``__syncwarp()`` orders for the reads."""
    cu = mytriton.compile(basic.matmul_kernel, signature=MATMUL, constexprs={"BM": 64, "BN": 64},
                          num_warps=1).asm["cu"]
    expected = [
        "float v30[128];",
        "for (int r = 0; r < 128; ++r) v30[r] = v0[r];",
        "int v18_staged = 0;",
        "for (int v18 = 0; v18 < p_K; v18 += 1) {",
        # the row's load in front of the column's barrier; the column: loaded once an element,
        # through the iteration's buffer, 16-byte reads
        "for (int r = 0; r < 2; ++r) v26[r] = (v17[r] ? *v25[r] : 0.0f);",
        "float* buf = reinterpret_cast<float*>(mt_smem + v18_staged * 256);",
        "__syncthreads();",
        "for (int r = 0; r < 2; ++r) buf[((r << 5) + tid)] = v22[r];",
        "__syncwarp();",
        "for (int r = 0; r < 64; r += 4) { const mt_vec<float, 4> t = *reinterpret_cast<const mt_vec<float, 4>*>"
        "(buf + r);",
        "float v29[128];",
        "for (int r = 0; r < 128; ++r) v29[r] = (v30[r] + v28[r]);",
        "for (int r = 0; r < 128; ++r) v30[r] = v29[r];",
        "v18_staged ^= 1;",
        "}",
        "__syncthreads();",
        "for (int r = 0; r < 128; ++r) if (v34[r]) *v33[r] = v30[r];",
    ]
    assert_in_order(cu, expected)


def test_cuda_staged_column_on_several_warps():
    """FileCheck-style: on several warps the block meets between the column's stores and its reads
    (another warp reads what a thread stored); no ``__syncwarp()``."""
    cu = mytriton.compile(basic.matmul_kernel, signature=MATMUL, constexprs={"BM": 128, "BN": 128},
                          num_warps=4).asm["cu"]
    expected = [
        "for (int v18 = 0; v18 < p_K; v18 += 1) {",
        "float* buf = reinterpret_cast<float*>(mt_smem + v18_staged * 512);",
        "{ const int r = 0; buf[tid] = v22[r]; }",
        "__syncthreads();",
        "for (int r = 0; r < 128; r += 4) { const mt_vec<float, 4> t = *reinterpret_cast<const mt_vec<float, 4>*>"
        "(buf + r);",
        "v18_staged ^= 1;",
    ]
    assert_in_order(cu, expected)
    loop = cu[cu.index("for (int v18 = 0;"):cu.index("v18_staged ^= 1;")]
    assert loop.count("__syncthreads();") == 1 and "__syncwarp" not in cu

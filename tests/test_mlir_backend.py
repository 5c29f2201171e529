"""The MLIR backend's text, without the MLIR tools: goldens, the shapes of the lowerings, rejections.

Goldens are regenerated with ``MYTRITON_UPDATE_GOLDENS=1 pytest tests/test_mlir_backend.py``.
"""
from __future__ import annotations

import copy
import math
import traceback

import pytest
from test_mlir_support import (CASES, GOLDENS, REJECTED, add_kernel, casts_kernel, divmod_kernel,
                               factories_kernel, golden, loops_kernel, matmul_runtime_k_kernel,
                               outer_kernel, row_stats_kernel, update_goldens)

import mytriton
from mytriton.backends.mlir import emit_mlir, tools
from mytriton.backends.mlir.arith import constant_literal
from mytriton.compiler import build_ssa
from mytriton.ir.printer import print_function
from mytriton.ir.types import BF16, F16, F32, F64, I1, I32, U32
from mytriton.passes.layout import assign_layouts

F = "*fp32:16"


def emit(kernel, signature, constexprs, num_warps=4) -> str:
    return emit_mlir(build_ssa(kernel, signature, constexprs, num_warps))


def assert_lines_in_order(text: str, expected: list[str]):
    """FileCheck-style: each expected fragment on a later line than the previous one."""
    lines = text.splitlines()
    at = 0
    for fragment in expected:
        for i in range(at, len(lines)):
            if fragment in lines[i]:
                at = i + 1
                break
        else:
            raise AssertionError(f"{fragment!r} not found after line {at}:\n{text}")


# --- goldens --------------------------------------------------------------------------------------

GOLDEN_KERNELS = {
    # the seed's scalarized model: BLOCK = 32 * num_warps, one GPU thread per element
    "add_kernel.mlir": (add_kernel, {"x_ptr": F, "y_ptr": F, "out_ptr": F, "n": "i32"}, {"BLOCK": 128}, 4),
    # a run-time K loop: scf.for carrying the tl.zeros accumulator through iter_args
    "matmul_runtime_k.mlir": (matmul_runtime_k_kernel, {"a": F, "b": F, "c": F, "M": "i32", "N": "i32", "K": "i32"},
                              {"BM": 8, "BN": 8}, 2),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_KERNELS))
def test_golden(name):
    kernel, signature, constexprs, num_warps = GOLDEN_KERNELS[name]
    text = emit(kernel, signature, constexprs, num_warps)
    if update_goldens():
        GOLDENS.mkdir(parents=True, exist_ok=True)
        (GOLDENS / name).write_text(text)
    assert text == golden(name)


# --- the shapes of the lowerings --------------------------------------------------------------------

def test_module_structure_and_abi():
    text = emit(add_kernel, {"x_ptr": F, "y_ptr": F, "out_ptr": F, "n": "i32"}, {"BLOCK": 256}, 2)
    assert_lines_in_order(text, [
        "// launch: grid = the programs, block = (64, 1, 1) threads (num_warps=2)",
        "module attributes {gpu.container_module} {",
        "gpu.module @k_add_kernel {",
        "gpu.func @k_add_kernel(%p_x_ptr: !llvm.ptr, %p_y_ptr: !llvm.ptr, %p_out_ptr: !llvm.ptr, %p_n: i32) kernel "
        "attributes {known_block_size = array<i32: 64, 1, 1>}",
        "%tid = gpu.thread_id x",
        "gpu.block_id x",
        # 256 elements over 64 threads: 4 registers per thread
        "%v3_3 = arith.addi %v1, ",
        "llvm.getelementptr %p_x_ptr[%v3_0] : (!llvm.ptr, i32) -> !llvm.ptr, f32",
        "scf.if %v5_0 -> (f32) {",
        "llvm.load %v4_0 : !llvm.ptr -> f32",
        "gpu.return",
    ])


def test_runtime_loops_carry_tiles_scalars_and_pointers():
    text = emit(loops_kernel, {"x_ptr": F, "out_ptr": F, "total_ptr": "*i32", "n": "i32", "reps": "i32"},
                {"BLOCK": 256})
    # (the pointer tile advanced by a scalar each iteration is carried as its offset, an i64:
    # passes/induction.py)
    assert_lines_in_order(text, [
        "= scf.for %v7 = %c0_i32 to %p_reps step %c1_i32 iter_args(%v8_0 = %cst, %v8_1 = %cst, %v9 = %c0_i32, "
        "%v10 = %c0_i64) -> (f32, f32, i32, i64) : i32 {",
        "scf.for %v12 = %c1_i32 to %p_reps step %c2_i32 iter_args(%v13_0 = %v8_0, %v13_1 = %v8_1) -> (f32, f32) : i32 {",
        "arith.sitofp %v12 : i32 to f32",
        "scf.yield %v14_0, %v14_1 : f32, f32",
        "scf.yield %v18_0, %v18_1, %v19, %v21 : f32, f32, i32, i64",
        "llvm.store %v22_0, %v25_0 : f32, !llvm.ptr",
    ])
    assert text.count("arith.sitofp %v12") == 1            # a scalar operand is converted once per op


def test_reductions_use_shuffles_then_workgroup_memory():
    text = emit(row_stats_kernel, {"x_ptr": F, "sum_ptr": F, "max_ptr": F, "min_ptr": F, "M": "i32", "N": "i32"},
                {"BM": 16, "BN": 32})
    assert "workgroup(%smem : memref<" in text
    assert_lines_in_order(text, [
        "gpu.shuffle xor", "arith.addf",                      # tl.sum(x, axis=1)
        "gpu.shuffle xor", "arith.maxnumf",                   # tl.max(..., axis=0)
        "memref.store", "gpu.barrier", "memref.load", "arith.maxnumf", "gpu.barrier",
        "gpu.shuffle xor", "arith.minnumf",                   # tl.min(...) of the whole tile
    ])
    assert "memref.view %smem[%c0][]" in text


def test_layout_conversion_goes_through_workgroup_memory():
    text = emit(outer_kernel, {"v_ptr": F, "out_ptr": F}, {"N": 32})
    assert_lines_in_order(text, ["llvm.load", "memref.store", "gpu.barrier", "memref.load", "gpu.barrier",
                                 "arith.mulf", "llvm.store"])


def test_factories_convert_their_fill_values():
    text = emit(factories_kernel, {"out_f_ptr": F, "out_i_ptr": "*i32", "value_i": "i32", "value_f": "fp32"},
                {"BLOCK": 64}, 2)
    assert "arith.sitofp %p_value_i : i32 to f32" in text           # tl.full(..., int value, tl.float32)
    assert "arith.fptosi %p_value_f : f32 to i32" in text           # tl.full(..., float value, tl.int32)
    assert "arith.constant 2.5 : f32" in text                     # tl.full(..., 2.5, tl.float32)
    assert "arith.constant 0.0 : f32" in text                     # tl.zeros


def test_conversions_and_unsigned_ops():
    text = emit(casts_kernel, {"x_ptr": F, "h_ptr": "*fp16", "u_ptr": "*u32", "out_f_ptr": F, "out_i_ptr": "*i32",
                               "out_h_ptr": "*fp16", "out_b_ptr": "*i8", "n": "i32"}, {"BLOCK": 128})
    for fragment in ("arith.extf", "arith.truncf", "arith.uitofp", "arith.fptosi", "arith.divui", "arith.shrui",
                     "arith.cmpf une", "arith.extui", "!llvm.ptr -> f16", ": f16, !llvm.ptr"):
        assert fragment in text, fragment
    assert "divsi" not in text and "shrsi" not in text


def test_integer_division_is_guarded():
    text = emit(divmod_kernel, {"a_ptr": "*i32", "b_ptr": "*i32", "q_ptr": "*i32", "r_ptr": "*i32", "n": "i32"},
                {"BLOCK": 64}, 2)
    assert_lines_in_order(text, ["arith.cmpi eq, %v8, %c0_i32", "arith.cmpi eq, %v8, %cm1_i32", "arith.ori",
                                 "arith.select", "arith.divsi", "arith.subi %c0_i32, %v6", "arith.select",
                                 "= arith.select", "arith.remsi"])


def test_every_case_emits():
    for case in CASES:
        assert "gpu.func @" in emit_mlir(case.ssa()), case.name


def test_where_on_pointers_selects_pointers():
    text = emit_mlir(next(c for c in CASES if c.name == "pick_b64_w2").ssa())
    assert_lines_in_order(text, ["arith.select %v1, %v2, %v3 : !llvm.ptr", "llvm.load %v4 : !llvm.ptr -> f32"])


def test_emit_leaves_the_function_as_it_was():
    fn = build_ssa(add_kernel, {"x_ptr": F, "y_ptr": F, "out_ptr": F, "n": "i32"}, {"BLOCK": 64})
    before = print_function(fn)
    text = emit_mlir(fn)
    assert print_function(fn) == before
    laid_out = assign_layouts(copy.deepcopy(fn))           # what compile() hands the CUDA backend
    assert emit_mlir(laid_out) == text


@pytest.mark.parametrize("value, ty, literal", [
    (0.0, F32, "0.0"), (2.5, F32, "2.5"), (1e-05, F32, "0x3727C5AC"), (1e-05, F64, "0x3EE4F8B588E368F1"), (0.1, F16, "0.0999755859375"), (1.5e20, F64, "1.5e+20"),
    (math.inf, F32, "0x7F800000"), (-math.inf, F32, "0xFF800000"), (math.nan, F32, "0x7FC00000"),
    (math.inf, F64, "0x7FF0000000000000"), (-math.inf, F16, "0xFC00"), (math.nan, BF16, "0x7FC0"),
    (True, I1, "true"), (-5, I32, "-5"), (2**32 - 1, U32, "-1"), (3, F32, "3.0"),
])
def test_constant_literals(value, ty, literal):
    assert constant_literal(value, ty) == literal


# --- rejections -------------------------------------------------------------------------------------

@pytest.mark.parametrize("rejection", REJECTED, ids=[r.name for r in REJECTED])
def test_rejections_name_the_construct_and_the_line(rejection):
    fn = rejection.ssa()                                   # the CUDA backend compiles it; MLIR says no
    with pytest.raises(mytriton.CompilationError) as info:
        emit_mlir(fn)
    err = info.value
    assert err.message == rejection.message
    line = rejection.expected_line()
    assert err.loc.line == line and err.loc.file.endswith("test_mlir_support.py")
    assert str(err).startswith(f"{err.loc.file}:{line}:")
    assert rejection.source_line in str(err)
    internal = [f for f in traceback.extract_tb(err.__traceback__) if "mytriton" in f.filename]
    assert [f.name for f in internal] == ["emit_mlir"], "compiler frames leaked into the traceback"


def test_tl_empty_message_is_the_seeds():
    assert REJECTED[0].message == "MLIR backend does not support tl.empty"


# --- without the tools ------------------------------------------------------------------------------

def test_missing_tools_are_reported_and_text_is_still_emitted(monkeypatch):
    monkeypatch.setattr(tools, "find_tool", lambda name: None)
    text = emit(add_kernel, {"x_ptr": F, "y_ptr": F, "out_ptr": F, "n": "i32"}, {"BLOCK": 64})
    assert "gpu.func @k_add_kernel" in text
    assert tools.missing_tools("mlir-opt", "llvm-dis") == ["mlir-opt", "llvm-dis"]
    for check in (tools.verify, tools.lower_to_nvvm, tools.to_ptx):
        with pytest.raises(tools.MLIRToolsMissing, match="mlir-opt not found .*apt-get install mlir-19-tools"):
            check(text)


def test_tool_search_order(monkeypatch, tmp_path):
    fake = tmp_path / "mlir-opt"
    fake.write_text("#!/bin/sh\necho 'LLVM (http://llvm.org/):'\necho '  LLVM version 19.1.7'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("MYTRITON_LLVM_BIN", str(tmp_path))
    assert tools.find_tool("mlir-opt") == str(fake)


def _fake_tool(folder, name: str, major: int):
    folder.mkdir(exist_ok=True)
    fake = folder / name
    fake.write_text(f"#!/bin/sh\necho 'Debian LLVM version {major}.0.6'\necho '  Optimized build.'\n")
    fake.chmod(0o755)
    return fake


def test_tools_of_another_llvm_are_not_used(monkeypatch, tmp_path):
    """An `llc` of LLVM 14 first on PATH (Debian's default) is skipped: the LLVM IR of LLVM 19
    does not parse there; `llc-19` is taken when present, else the tool counts as missing."""
    monkeypatch.delenv("MYTRITON_LLVM_BIN", raising=False)
    monkeypatch.setattr(tools, "LLVM_DIR", str(tmp_path / "no-llvm-dir"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    old = _fake_tool(tmp_path / "bin", "llc", 14)
    assert tools.find_tool("llc") is None
    assert tools.missing_tools("llc") == ["llc"]
    with pytest.raises(tools.MLIRToolsMissing, match=f"llc not found .*found only {old} is LLVM 14"):
        tools.require_tool("llc")
    new = _fake_tool(tmp_path / "bin", "llc-19", 19)
    assert tools.find_tool("llc") == str(new) and tools.missing_tools("llc") == []
    monkeypatch.setenv("MYTRITON_LLVM_BIN", str(tmp_path / "bin"))      # an explicit folder: still checked
    assert tools.find_tool("llc") == str(new)


def test_kernels_reading_module_constants_emit():
    """emit_mlir copies the function; the module namespaces it read are shared, not copied."""
    from mytriton.compiler import build_ssa
    from tests.kernels import globals_kernel as gk
    fn = build_ssa(gk.scale_kernel, {"x": "*fp32", "out": "*fp32"})
    assert "arith.constant 2.0 : f32" in emit_mlir(fn)

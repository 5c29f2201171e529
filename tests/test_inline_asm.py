"""tl.inline_asm_elementwise on the CPU: every kernel of tests/kernels/inline_asm.py compiles to a
cubin under NVRTC, the asm template reaches the CUDA as a string of escapes (Triton's $i operands as
%i, a literal % doubled), and the interpreter, the MLIR backend and wrong constraints are refused
with located errors."""
import numpy as np
import pytest

import mytriton
from mytriton.backends.cuda.codegen import _ptx_template
from tests.kernel_files import compile_error
from tests.kernels import inline_asm as K

KERNELS = [
    (K.funnel_shift, {"x_ptr": "*u32", "y_ptr": "*u32", "z_ptr": "*u32"}, {"n": 17, "BLOCK": 128}),
    (K.packed_shift, {"x_ptr": "*u8", "y_ptr": "*u8"}, {"BLOCK": 512}),
    (K.differences, {"a_ptr": "*u32", "b_ptr": "*u32", "c_ptr": "*u32", "d_ptr": "*u32"}, {"BLOCK": 512}),
    (K.unpack_and_max, {"a_ptr": "*u8", "b_ptr": "*fp32", "c_ptr": "*i32", "d_ptr": "*fp32"}, {"BLOCK": 512}),
    (K.copy_through_pointers, {"x_ptr": "*u8", "y_ptr": "*u8"}, {"BLOCK": 512}),
    (K.halves_and_scalars, {"x_ptr": "*i16", "out_ptr": "*i32", "n": "i32"}, {"BLOCK": 64}),
    (K.special_registers, {"out_ptr": "*i32", "times_ptr": "*i64"}, {}),
]


@pytest.mark.parametrize("kernel,signature,constexprs", KERNELS, ids=[k[0].__name__ for k in KERNELS])
@pytest.mark.parametrize("warps", [1, 4])
def test_compiles_to_a_cubin(kernel, signature, constexprs, warps):
    ck = mytriton.compile(kernel, signature, constexprs, num_warps=warps)
    assert ck.asm["cubin"][:4] == b"\x7fELF"


def test_operands_and_registers_in_the_generated_cuda():
    ck = mytriton.compile(K.unpack_and_max, KERNELS[3][1], KERNELS[3][2], num_warps=4)
    cu = ck.asm["cu"].split("__global__")[1]           # (the kernel, not the prelude)
    # 4 registers per thread in groups of 4: one asm statement, eight outputs, five inputs
    # (the four bytes of `a` in one register, the four floats of `b` in one each)
    assert cu.count("asm(") == 1 and "for (int r = 0; r < 4; r += 4) {" in cu
    stmt = cu[cu.index("asm("):].split(";\n")[0]
    assert stmt.count('"=r"(o') == 8 and stmt.count('"r"(i') == 5
    assert "(unsigned int)mt_bitcast<unsigned char>(v" in cu and "<< 24)" in cu
    # the template: one C string, punctuation and newlines as octal escapes, $0 as %0 (\045 is %)
    assert stmt.startswith('asm("') and "cvt\\056u32\\056u8 \\0450\\054 tmp0\\073\\012" in stmt
    effects = mytriton.compile(K.copy_through_pointers, KERNELS[4][1], KERNELS[4][2]).asm["cu"].split("__global__")[1]
    assert 'asm volatile(' in effects and ': "memory");' in effects and '"l"(i0_0)' in effects
    assert "const unsigned char* p_y_ptr" not in effects        # (written by the asm: not const)


def test_template_spelling():
    assert _ptx_template("mov.u32 $0, %laneid; add.s32 $10, $1, 5;") == "mov.u32 %0, %%laneid; add.s32 %10, %1, 5;"


def test_the_interpreter_refuses_it_at_the_call():
    x = np.zeros(128, np.uint32)
    with pytest.raises(mytriton.CompilationError) as info:
        K.funnel_shift[(1,)](x, x, x, n=3, BLOCK=128)
    text = str(info.value)
    assert "tl.inline_asm_elementwise runs PTX, which the CPU interpreter cannot run" in text
    assert "inline_asm.py:13:" in text


def test_the_mlir_backend_refuses_it():
    with pytest.raises(mytriton.CompilationError, match="MLIR backend does not support the 'inline_asm' op"):
        mytriton.compile(K.funnel_shift, KERNELS[0][1], KERNELS[0][2], backend="mlir")


HEAD = "import mytriton\nimport mytriton.language as tl\n\n\n@mytriton.jit\ndef k(x, y):\n    v = tl.load(x + tl.arange(0, 16))\n"


@pytest.mark.parametrize("call,message", [
    ('tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r", [v], dtype=tl.int32, is_pure=True, pack=1)',
     "3 constraints for 1 output and 1 input registers"),
    ('tl.inline_asm_elementwise("mov.b32 $0, $1;", "=q,r", [v], dtype=tl.int32, is_pure=True, pack=1)',
     "unsupported constraint '=q'"),
    ('tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [v], dtype=tl.int32, is_pure=True, pack=3)',
     "pack must be a power of 2, got 3"),
    ('tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [v > 0], dtype=tl.int32, is_pure=True, pack=1)',
     "int1 operands and results are not supported"),
    ('tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [v], dtype="int32", is_pure=True, pack=1)',
     "dtype must be a dtype or a sequence of dtypes"),
])
def test_misuse_is_a_located_error(tmp_path, call, message):
    err = compile_error(tmp_path / "asm.py", HEAD + f"    tl.store(y + tl.arange(0, 16), {call})\n",
                        {"x": "*i32", "y": "*i32"})
    assert message in err and "asm.py:8:" in err, err


def test_cuda_helpers_read_special_registers():
    cu = mytriton.compile(K.special_registers, KERNELS[6][1], {}, num_warps=2).asm["cu"].split("__global__")[1]
    assert cu.count("asm volatile(") == 2 and cu.count("asm(") == 1     # the timer stays where it is read
    assert "\\045\\045globaltimer" in cu and "\\045\\045smid" in cu
    # num_threads() = 64 elements over 64 threads (one each), each holding num_warps() = 2
    assert "v1[r] = tid;" in cu and "v3[r] = 2;" in cu

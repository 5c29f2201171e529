"""Every user-facing compile error names the kernel's file:line:col, shows the source line with a
caret, says what is wrong, and carries no compiler-internal traceback frames."""
import re
import traceback
from pathlib import Path

import pytest

import mytriton
from tests.kernels import bad

BAD_FILE = Path(bad.__file__).resolve()
BAD_LINES = BAD_FILE.read_text().splitlines()
INTERNAL = re.compile(r"mytriton[/\\](frontend|ir|passes|language|backends)[/\\]")


def marker_line(case: str) -> int:
    for i, line in enumerate(BAD_LINES, 1):
        if line.rstrip().endswith(f"# ERR {case}"):
            return i
    raise AssertionError(f"no marker for {case}")


SIG = {"x": "*fp32", "n": "i32"}
CASES = [
    ("while_break", bad.while_loop, "`break` is not supported in kernel loops"),
    ("while_continue", bad.while_continue, "`continue` is not supported in kernel loops"),
    ("while_tile", bad.while_tile, "the condition of a run-time `while` must be a scalar, got a block "
                                   "(vector<8 x bool>)"),
    ("while_constant", bad.while_constant, "the condition of a `while` loop must be a run-time value"),
    ("break", bad.break_in_loop, "`break` is not supported"),
    ("undefined", bad.undefined_name, "name 'undefined_thing' is not defined"),
    ("load_non_pointer", bad.load_non_pointer, "tl.load expects a pointer"),
    ("mask_not_bool", bad.mask_not_bool, "mask must be int1"),
    ("shape_mismatch", bad.shape_mismatch, "incompatible shapes (8,), (16,)"),
    ("exp_int", bad.exp_of_int, "exp expects a floating-point operand, got i32"),
    ("float_floordiv", bad.float_floordiv, "invalid operands of type f32 and f32 for '//': it needs integers"),
    ("static_range", bad.static_range_runtime, "tl.static_range bounds must be compile-time constants"),
    ("carried", bad.carried_type_change, "loop-carried variable 'acc' enters the loop as i32 but is reassigned to vector<16 x f32>"),
    ("for_else", bad.for_else, "for/else is not supported"),
    ("tile_if", bad.tile_condition, "the condition of a run-time `if` must be a scalar, got a block "
                                    "(vector<16 x bool>); use tl.where"),
    ("branch_types", bad.branch_types, "mismatched type for `v` between the then branch (f32) and the else "
                                       "branch (i32) of this run-time `if`"),
    ("branch_redefines", bad.branch_redefines, "initial value for `v` is of type i32, but the then branch of "
                                               "this run-time `if` redefines it as f32"),
    ("one_branch", bad.one_branch_name, "'v' is assigned in only one branch of the run-time `if` at line"),
    ("return_in_loop", bad.return_in_loop, "a `return` inside a run-time loop is not supported"),
    ("ifexp_types", bad.ifexp_types, "mismatched type for the value of this conditional expression between "
                                     "the then branch (f32) and the else branch (i32)"),
    ("host_call", bad.call_host_function, "calls to 'host_helper' are not allowed in a kernel"),
    ("arange_pow2", bad.arange_not_pow2, "arange: the range length (12) must be a power of 2"),
    ("zeros_shape", bad.zeros_bad_shape, "block dimensions must be positive integers, got (4, 0)"),
    ("full_block", bad.full_block_value, "full value must be scalar, got vector<4 x i32>"),
    ("store_shape", bad.store_shape_mismatch, "incompatible shapes"),
    ("zero_step", bad.zero_step, "range() arg 3 must not be zero"),
    ("float_step", bad.float_step, "the loop step must be an integer, got 1.5"),
    ("and_tensors", bad.bool_and_tensors, "`and` needs numbers or comparisons, got ptr<f32>"),
    ("in_callee", bad.calls_bad_callee, "mask must be int1"),
]


@pytest.mark.parametrize("case,kernel,message", CASES, ids=[c[0] for c in CASES])
def test_compile_error(case, kernel, message):
    with pytest.raises(mytriton.CompilationError) as info:
        mytriton.compile(kernel, signature=SIG)
    err = info.value
    text = str(err)
    line = marker_line(case)
    assert message in text
    assert f"{BAD_FILE}:{line}:" in text.splitlines()[0]
    src = BAD_LINES[line - 1]
    lines = text.splitlines()
    assert lines[1] == "    " + src.rstrip()
    caret = lines[2]
    assert caret.strip() == "^"
    col = int(text.splitlines()[0].split(":")[2])
    assert caret.index("^") - 4 == col - 1
    frames = traceback.extract_tb(err.__traceback__)
    assert not [f.filename for f in frames if INTERNAL.search(f.filename)]
    # no host traceback inside: a cause (the refusing builtin's own error, as Triton) has no frames
    assert err.__suppress_context__ and (err.__cause__ is None or err.__cause__.__traceback__ is None)


def test_column_points_at_the_construct():
    with pytest.raises(mytriton.CompilationError) as info:
        mytriton.compile(bad.undefined_name, signature=SIG)
    line = BAD_LINES[marker_line("undefined") - 1]
    assert str(info.value).splitlines()[0].split(":")[2] == str(line.index("undefined_thing") + 1)


def test_missing_constexpr_names_the_parameter():
    with pytest.raises(mytriton.CompilationError, match="missing value for constexpr parameter 'BLOCK'"):
        mytriton.compile(bad.needs_block, signature={"x": "*fp32"})


def test_bad_signature_type():
    with pytest.raises(mytriton.CompilationError, match="parameter 'x': unknown type '\\*fp33': expected one of i1 i8"):
        mytriton.compile(bad.needs_block, signature={"x": "*fp33"}, constexprs={"BLOCK": 16})


def test_unknown_parameter_and_missing_type():
    with pytest.raises(mytriton.CompilationError, match="unknown parameter\\(s\\) y"):
        mytriton.compile(bad.needs_block, signature={"x": "*fp32", "y": "i32"}, constexprs={"BLOCK": 16})
    with pytest.raises(mytriton.CompilationError, match="no type given for parameter 'n'"):
        mytriton.compile(bad.while_loop, signature={"x": "*fp32"})


def test_bad_options():
    with pytest.raises(mytriton.CompilationError, match="num_warps must be a power of 2"):
        mytriton.compile(bad.needs_block, signature={"x": "*fp32"}, constexprs={"BLOCK": 16}, num_warps=3)
    with pytest.raises(mytriton.CompilationError, match="unknown target 'sm90'"):
        mytriton.compile(bad.needs_block, signature={"x": "*fp32"}, constexprs={"BLOCK": 16}, target="sm90")


def test_calling_a_kernel_directly_is_an_error():
    with pytest.raises(RuntimeError, match=r"launch it as needs_block\[grid\]"):
        bad.needs_block(1, 2)


def test_language_outside_a_kernel():
    import mytriton.language as tl
    with pytest.raises(RuntimeError, match="only be called inside a @mytriton.jit kernel"):
        tl.arange(0, 4)


def test_unknown_backend():
    with pytest.raises(mytriton.CompilationError, match="unknown backend 'llvm' \\(available: cuda, mlir\\)"):
        mytriton.compile(bad.needs_block, signature={"x": "*fp32"}, constexprs={"BLOCK": 16}, backend="llvm")


def test_alignment_must_be_a_power_of_two():
    with pytest.raises(mytriton.CompilationError, match="type '\\*fp32:24': alignment must be a power of two, got 24"):
        mytriton.compile(bad.needs_block, signature={"x": "*fp32:24"}, constexprs={"BLOCK": 16})


@pytest.mark.parametrize("kernel, cause", [
    (bad.arange_not_pow2, "arange: the range length (12) must be a power of 2"),
    (bad.calls_bad_callee, "load: the mask must be int1 (a comparison), got i32"),      # (inside a @jit callee)
])
def test_the_refusing_builtins_error_is_the_cause_as_in_triton(kernel, cause):
    """Triton's tests read a builtin's own error as the CompilationError's __cause__: ours is there,
    with its type and text, and without frames."""
    with pytest.raises(mytriton.CompilationError) as info:
        mytriton.compile(kernel, signature=SIG)
    assert isinstance(info.value.__cause__, (TypeError, ValueError)) and str(info.value.__cause__) == cause
    assert info.value.__cause__.__traceback__ is None
    with pytest.raises(mytriton.CompilationError) as info:
        mytriton.compile(bad.undefined_name, signature=SIG)
    assert info.value.__cause__ is None               # (a name error of the kernel's own: no builtin refused)

"""Launch-call binding (no GPU needed): Python's own messages name the kernel and the parameter."""
import sys
from pathlib import Path

import numpy as np
import pytest

import mytriton

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "manifests" / "kernels"))
import elementwise as ew  # noqa: E402

X = np.ones(10, np.float32)


@pytest.mark.parametrize("call,message", [
    (lambda: ew.add_kernel[(1,)](X, X, X, BLOCK=16), "add_kernel() missing 1 required positional argument: 'n'"),
    (lambda: ew.add_kernel[(1,)](X, X, X, 10), "add_kernel() missing 1 required positional argument: 'BLOCK'"),
    (lambda: ew.add_kernel[(1,)](X, X, X, 10, BLOCK=16, bogus=1), "add_kernel() got an unexpected keyword argument 'bogus'"),
    (lambda: ew.add_kernel[(1,)](X, X, X, 10, 16, 3), "add_kernel() takes 5 positional arguments but 6 were given"),
])
def test_bad_launch_calls(call, message):
    with pytest.raises(TypeError) as info:
        call()
    assert str(info.value) == message


def test_keyword_and_positional_forms_agree():
    x = np.arange(10, dtype=np.float32)
    out1, out2 = np.zeros(10, np.float32), np.zeros(10, np.float32)
    ew.add_kernel[(1,)](x, x, out1, 10, BLOCK=16)
    ew.add_kernel[(1,)](x_ptr=x, y_ptr=x, out_ptr=out2, n=10, BLOCK=16, num_warps=2)
    assert np.array_equal(out1, 2 * x) and np.array_equal(out2, 2 * x)


def test_parameter_named_like_a_launch_option_is_refused():
    @mytriton.jit
    def k(stream, n):
        pass
    with pytest.raises(mytriton.CompilationError, match="stream clash with launch options"):
        k[(1,)](np.zeros(1, np.float32), 1)


def test_numpy_scalars_are_scalar_arguments_not_arrays():
    from mytriton.frontend.launch import _is_numpy
    assert not _is_numpy(np.int32(5)) and not _is_numpy(np.float32(1.0)) and _is_numpy(np.zeros(3))


def test_constexpr_values_of_different_types_are_different_specializations():
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    from tests.kernels import lang
    lang.scaled[(1,)](x, out, S=2)
    lang.scaled[(1,)](x, out, S=2.5)
    assert np.array_equal(out, x * np.float32(2.5))


def test_cached_compiles_notice_a_changed_module_constant():
    from tests.kernels import globals_kernel as gk
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    try:
        gk.scale_kernel[(1,)](x, out)
        assert np.array_equal(out, 2 * x)
        gk.SCALE = 3.0
        gk.scale_kernel[(1,)](x, out)
        assert np.array_equal(out, 3 * x)
        gk.SCALE = 3                                 # same value, other type: compiles differently
        gk.scale_kernel[(1,)](x, out)
        assert np.array_equal(out, 3 * x)
    finally:
        gk.SCALE = 2.0


def test_globals_read_are_recorded():
    from mytriton.compiler import build_ssa
    from tests.kernels import globals_kernel as gk
    fn = build_ssa(gk.scale_kernel, {"x": "*fp32", "out": "*fp32"})
    assert [(name, value) for _, name, value in fn.globals_read] == [("SCALE", 2.0)]


@mytriton.jit
def _stages_kernel(out, num_stages: mytriton.language.constexpr, num_warps: mytriton.language.constexpr):
    mytriton.language.store(out + mytriton.language.arange(0, 2),
                            mytriton.language.arange(0, 2) * 0 + num_stages * 10 + num_warps)


def test_constexpr_named_like_a_launch_option_takes_the_launch_value():
    """Triton's tutorial-02 idiom: ``num_stages: tl.constexpr`` gets the value the launch passes
    for the option (one keyword sets both); ``num_warps`` likewise, and it is the launch's warps."""
    out = np.zeros(2, np.int32)
    _stages_kernel[(1,)](out, num_stages=3, num_warps=2)
    assert out.tolist() == [32, 32]
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'num_warps'"):
        _stages_kernel[(1,)](out, num_stages=3)

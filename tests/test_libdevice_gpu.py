"""libdevice on the H200: every function of tests/kernels/libdevice_kernels.py through mytriton's JIT
and through Triton on the same source and inputs: the same bits (both call libdevice's functions),
or within 2 ulp where Triton's flush-to-zero libdevice takes other paths (FTZ_PATHS)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from tests.kernels import libdevice_kernels as K  # noqa: E402
from tests.test_libdevice import BINARY, UNARY, binary_input, unary_input  # noqa: E402
from tests.triton_reference import triton_version  # noqa: E402

TR = triton_version(K.__file__)


# Triton links libdevice with flush-to-zero on (its enable_reflect_ftz) and so takes other code
# paths inside these functions (ftz approximations, sqrt.approx); NVRTC may only set that for a
# whole kernel, which would flush every fp32 operation's subnormals. Both results are then within
# the CUDA math library's error bound of the true value, so at most twice that bound apart: the
# bound in ulp, from the CUDA C Programming Guide's table of single-precision functions (sqrt: the
# approximate square root's 1 ulp). Measured on the H200: at most 3 ulp apart (asin), on 7-34 % of
# the inputs; every other function gives Triton's bits.
FTZ_PATHS = {"acos": 2, "acosh": 4, "asin": 2, "asinh": 3, "atan": 2, "cbrt": 1, "erf": 2, "sqrt": 1, "atan2": 3,
             "pow": 4, "hypot": 3}


def same_bits(a, b, fn):
    a, b = a.view(torch.int32).cpu().numpy().astype(np.int64), b.view(torch.int32).cpu().numpy().astype(np.int64)
    if fn in FTZ_PATHS:
        assert np.abs(a - b).max() <= 2 * FTZ_PATHS[fn], fn
    else:
        np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(TR is None, reason="needs Triton")
@pytest.mark.parametrize("fn", UNARY)
def test_unary_function_gives_tritons_bits(fn):
    x = torch.from_numpy(unary_input(fn)).cuda()
    y, ty = torch.empty_like(x), torch.empty_like(x)
    grid = (-(-x.numel() // 128),)
    K.unary[grid](x, y, x.numel(), FN=fn, BLOCK=128)
    TR.unary[grid](x, ty, x.numel(), FN=fn, BLOCK=128)
    torch.cuda.synchronize()
    same_bits(y, ty, fn)


@pytest.mark.skipif(TR is None, reason="needs Triton")
@pytest.mark.parametrize("fn", sorted(BINARY))
def test_binary_function_gives_tritons_bits(fn):
    x, z = (torch.from_numpy(a).cuda() for a in binary_input(fn))
    y, ty = torch.empty_like(x), torch.empty_like(x)
    grid = (-(-x.numel() // 128),)
    K.binary[grid](x, z, y, x.numel(), FN=fn, BLOCK=128)
    TR.binary[grid](x, z, ty, x.numel(), FN=fn, BLOCK=128)
    torch.cuda.synchronize()
    same_bits(y, ty, fn)


@pytest.mark.skipif(TR is None, reason="needs Triton")
@pytest.mark.parametrize("signed", [False, True])
def test_umulhi_and_mulhi_give_tritons_bits(signed):
    x, z = (torch.randint(-2**31, 2**31 - 1, (1000,), device="cuda", dtype=torch.int32) for _ in range(2))
    y, ty = torch.empty_like(x), torch.empty_like(x)
    K.umulhi[(8,)](x, z, y, 1000, SIGNED=signed, BLOCK=128)
    TR.umulhi[(8,)](x, z, ty, 1000, SIGNED=signed, BLOCK=128)
    torch.cuda.synchronize()
    same_bits(y, ty, "mulhi")


@pytest.mark.skipif(TR is None, reason="needs Triton")
@pytest.mark.parametrize("t", ["fp16", "bf16"])
def test_fma_on_halves_gives_tritons_bits(t):
    """tl.fma of three fp16 or bf16 blocks: one rounding in the halves' type on both sides."""
    from tests.test_libdevice import half_fma_inputs
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[t]
    x, y, z = (torch.from_numpy(a.view(np.int16)).cuda().view(dtype) for a in half_fma_inputs(t))
    out, tout = torch.empty_like(x), torch.empty_like(x)
    K.fma3[(8,)](x, y, z, out, x.numel(), BLOCK=128)
    TR.fma3[(8,)](x, y, z, tout, x.numel(), BLOCK=128)
    torch.cuda.synchronize()
    assert out.view(torch.int16).tolist() == tout.view(torch.int16).tolist()
    assert out[0].item() == 2.0 ** -(20 if t == "fp16" else 14)

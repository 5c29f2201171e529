"""Every libdevice signature on the GPU against the interpreter (tests/libdevice_every.py's kernel,
the inputs of tests/test_libdevice_all.py): the IEEE operations in each rounding mode, the
conversions, reinterpretations and bit functions bit for bit; the other functions within the CUDA
math library's error bounds of the interpreter's (correctly rounded or nearly) values; the fast
approximations (MUFU) loosely."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from tests import libdevice_every as E  # noqa: E402
from tests.test_libdevice_all import N  # noqa: E402

EXACT_PREFIXES = ("add_", "sub_", "mul_", "div_", "rcp_", "sqrt_r", "fma_", "float2", "double2", "int2", "uint2",
                  "ll2", "ull2", "float_as", "int_as", "uint_as", "double_as", "longlong_as", "hiloint")
EXACT = {"popc", "clz", "ffs", "brev", "byte_perm", "mul24", "hadd", "rhadd", "sad", "mulhi", "abs", "ilogb",
         "llrint", "llround", "ldexp", "scalbn", "remainder", "fmod", "fdim", "nextafter", "copysign", "saturatef",
         "rsqrt_rn", "isnan", "isinf", "finitef", "isfinited", "signbit", "trunc", "floor", "ceil", "rint",
         "nearbyint", "round", "logb"}
LOOSE = {"fast_sinf": 1e-5, "fast_cosf": 1e-5, "fast_tanf": 1e-4, "fast_expf": 1e-5, "fast_exp10f": 1e-5,
         "fast_logf": 1e-5, "fast_log2f": 1e-5, "fast_log10f": 1e-5, "fast_powf": 1e-4, "fast_dividef": 1e-6,
         "rcp64h": 1e-9}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    from tests.test_libdevice_all import inputs as make_inputs
    inputs = make_inputs.__wrapped__() if hasattr(make_inputs, "__wrapped__") else make_inputs._fixture_function()
    k = E.kernel(tmp_path_factory.mktemp("libdevice_every_gpu"))
    interp = E.run(k, inputs, N)
    _, slots = E.calls()
    # (torch's uint32 and uint64 tensors: torch 2.3 and later)
    ins = [torch.from_numpy(np.ascontiguousarray(inputs[t], E.NP[t]).ravel()).cuda() for t in E.DTYPES]
    outs = {t: torch.zeros(max(slots[t], 1) * N, dtype=ins[i].dtype, device="cuda") for i, t in enumerate(E.DTYPES)}
    k[((N + 63) // 64,)](*ins, *[outs[t] for t in E.DTYPES], N, BLOCK=64)
    gpu = {t: outs[t].cpu().numpy().view(E.NP[t]).reshape(-1, N) for t in E.DTYPES}
    return interp, gpu


@pytest.mark.parametrize("call", E.calls()[0], ids=lambda c: f"{c[0]}{list(c[1])}")
def test_the_gpu_computes_what_the_interpreter_does(call, both):
    name, sig, res, slot = call
    got, want = both[1][res][slot], both[0][res][slot]
    if name.startswith(EXACT_PREFIXES) or name in EXACT:
        bits = f"uint{got.dtype.itemsize * 8}"
        same = (got.view(bits) == want.view(bits)) | (np.isnan(got) & np.isnan(want) if got.dtype.kind == "f" else False)
        assert same.all(), (name, np.flatnonzero(~same)[:5], got[~same][:5], want[~same][:5])
        return
    if name in ("jn", "yn", "j0", "j1", "y0", "y1") or name.startswith("cyl_bessel"):
        np.testing.assert_allclose(got, want, rtol=1e-5 if res == "fp32" else 1e-12, atol=1e-6 if res == "fp32" else 1e-13)
        return
    rtol = LOOSE.get(name, 2.5e-7 * 4 if res == "fp32" else 1e-15 * 4)
    ok = np.isclose(got, want, rtol=rtol, atol=0, equal_nan=True) | (np.abs(want) < 1e-30)
    assert ok.mean() > 0.999, (name, got[~ok][:5], want[~ok][:5])

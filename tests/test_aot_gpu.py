"""Built packages on a real GPU: every specialization of manifests/elementwise.yaml against numpy,
launched from a fresh process that imports only the generated package.

Every test is marked ``gpu`` and skipped where the CUDA driver or a device is missing.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mytriton.runtime import driver as runtime
from test_aot_support import REPO, run_cli

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not runtime.driver_available(), reason="needs an NVIDIA GPU and driver")]

HAVE_TORCH = importlib.util.find_spec("torch") is not None
TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    """build/elementwise for the manifest's targets, and build_sm80/elementwise (sm_80 only: PTX on newer GPUs)."""
    folder = tmp_path_factory.mktemp("gpu")
    manifest = str(REPO / "manifests" / "elementwise.yaml")
    for args in (["--out", "build"], ["--out", "build_sm80", "--target", "sm_80"]):
        result = run_cli([manifest, *args, "-j", "4"], cwd=folder)
        assert result.returncode == 0, result.stdout + result.stderr
    return folder


def run_on_device(code: str, package_dir: Path, **env) -> dict:
    """Run *code* in a fresh interpreter that imports the package from *package_dir* (and the
    numpy references from tests/); the code prints one JSON object."""
    prelude = (f"import sys, json\nsys.path[:0] = [{str(package_dir)!r}, {str(TESTS)!r}]\n"
               "import numpy as np\nimport elementwise as pkg\n"
               "from test_aot_support import elementwise_args, elementwise_case, elementwise_mismatch\n")
    result = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True,
                            text=True, timeout=300, cwd=package_dir, env={**os.environ, **env})
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.splitlines()[-1])


EVERY_SPECIALIZATION = """
    rng = np.random.default_rng(0)
    KERNELS = ["add_kernel", "axpby_kernel", "leaky_relu_kernel", "sigmoid_kernel", "int_ops_kernel"]
    failures, launches, images = [], 0, {}
    for name in KERNELS:
        family = getattr(pkg, name)
        for spec in family.specializations:
            block = spec["constexprs"]["BLOCK"]
            for n in (3 * block + 17, 2 * block + 1, 5):   # not multiples of BLOCK: the masks matter
                arrays, expected = elementwise_case(name, n, rng, pad=64)
                device = {key: to_device(value) for key, value in arrays.items()}
                args = elementwise_args(family.params, device, n)
                grid = (pkg.cdiv(n, block),) if n > 5 else (lambda meta: (pkg.cdiv(meta["n"], meta["BLOCK"]),))
                family[grid](*args, num_warps=spec["num_warps"], **spec["constexprs"])
                problem = elementwise_mismatch(to_host(device["out_ptr"]), expected, n)
                launches += 1
                if problem:
                    failures.append(f"{name} {spec['id']}: {problem}")
            kernel = family.kernel(family.select(spec["constexprs"], spec["num_warps"]))
            loaded = kernel.loaded_images       # a property in the runtime (a method in early versions)
            images[f"{name}/{spec['id']}"] = loaded() if callable(loaded) else loaded
    cc = pkg._runtime.compute_capability()
    print(json.dumps({"failures": failures, "launches": launches, "images": images, "cc": list(cc),
                      "native": pkg._runtime.native_launcher_status(),
                      "heavy": sorted(m for m in sys.modules if m.split(".")[0] in ("mytriton", "jinja2", "yaml"))}))
"""

DEVICE_ARRAYS = """
    def to_device(array):
        return pkg.DeviceArray.from_numpy(array)

    def to_host(array):
        return array.copy_to_host()
"""

TORCH_TENSORS = """
    import torch

    def to_device(array):
        return torch.from_numpy(array).cuda()

    def to_host(tensor):
        torch.cuda.synchronize()
        return tensor.cpu().numpy()
"""


def _check_every_specialization(info: dict, expected_image: str, native: str = "loaded ") -> None:
    assert info["failures"] == []
    assert info["launches"] == 3 * 12
    assert info["native"].startswith(native), info["native"]   # later launches of a kernel go through it
    assert info["heavy"] == []
    assert {tuple(keys) for keys in info["images"].values()} == {(expected_image,)}


def test_every_specialization_on_device_arrays(out):
    info = run_on_device(DEVICE_ARRAYS + EVERY_SPECIALIZATION, out / "build")
    cc = f"sm_{info['cc'][0]}{info['cc'][1]}"
    _check_every_specialization(info, cc if cc in ("sm_80", "sm_90") else "ptx")


def test_every_specialization_in_pure_python(out):
    info = run_on_device(DEVICE_ARRAYS + EVERY_SPECIALIZATION, out / "build", MYTRITON_NATIVE_LAUNCH="0")
    cc = f"sm_{info['cc'][0]}{info['cc'][1]}"
    _check_every_specialization(info, cc if cc in ("sm_80", "sm_90") else "ptx", native="disabled")


@pytest.mark.skipif(not HAVE_TORCH, reason="needs PyTorch")
def test_every_specialization_on_torch_tensors(out):
    info = run_on_device(TORCH_TENSORS + EVERY_SPECIALIZATION, out / "build")
    cc = f"sm_{info['cc'][0]}{info['cc'][1]}"
    _check_every_specialization(info, cc if cc in ("sm_80", "sm_90") else "ptx")


def test_ptx_runs_where_no_cubin_fits(out):
    info = run_on_device(DEVICE_ARRAYS + EVERY_SPECIALIZATION, out / "build_sm80")
    _check_every_specialization(info, "sm_80" if info["cc"] == [8, 0] else "ptx")


ERRORS = """
    DeviceArray = pkg.DeviceArray
    x = DeviceArray.from_numpy(np.ones(1024, np.float32))
    i = DeviceArray.from_numpy(np.ones(1024, np.int32))
    out = DeviceArray.from_numpy(np.zeros(1024, np.float32))

    def error(call):
        try:
            call()
        except Exception as exc:
            return [type(exc).__name__, str(exc)]
        return None

    add = pkg.add_kernel
    result = {
        "wrong_dtype": error(lambda: add[(16,)](i, x, out, 1000, BLOCK=64)),
        "misaligned": error(lambda: add[(16,)](x.view_offset(4), x, out, 1000, BLOCK=64)),
        "arg_count": error(lambda: add[(16,)](x, x, out, BLOCK=64)),
        "not_built": error(lambda: add[(16,)](x, x, out, 1000, BLOCK=128)),
        "host_array": error(lambda: add[(16,)](np.ones(1024, np.float32), x, out, 1000, BLOCK=64)),
        "bad_grid": error(lambda: add[(0,)](x, x, out, 1000, BLOCK=64)),
    }
    if TORCH:
        import torch
        t = torch.ones(1024, device="cuda", dtype=torch.float64)
        result["torch_dtype"] = error(lambda: add[(16,)](t, x, out, 1000, BLOCK=64))
    # The process is still healthy: a correct launch works, and a pointer without ":16" may be unaligned.
    add[(16,)](x, x, out, 1000, BLOCK=64)
    result["sum"] = float(out.copy_to_host()[:1000].sum())
    pkg.leaky_relu_kernel[(4,)](x.view_offset(4), out, 100, 0.1, BLOCK=32, num_warps=1)
    result["unaligned_ok"] = bool((out.copy_to_host()[:100] == 1).all())
    print(json.dumps(result))
"""


def test_loader_errors_on_the_device(out):
    info = run_on_device(f"TORCH = {HAVE_TORCH}\n" + textwrap.dedent(ERRORS), out / "build")
    assert info["wrong_dtype"][0] == "TypeError" and "expects *fp32" in info["wrong_dtype"][1]
    assert info["misaligned"][0] == "ValueError" and "16-byte aligned" in info["misaligned"][1]
    assert info["arg_count"] == ["TypeError", "add_kernel() missing 1 required positional argument: 'n'"]
    assert info["not_built"][0] == "SpecializationNotFoundError"
    assert "built: BLOCK=64, num_warps=4; BLOCK=1024, num_warps=4" in info["not_built"][1]
    assert info["host_array"][0] == "TypeError" and "host (CPU) array" in info["host_array"][1]
    assert info["bad_grid"][0] == "ValueError"
    if HAVE_TORCH:
        assert info["torch_dtype"][0] == "TypeError" and "expects *fp32" in info["torch_dtype"][1]
    assert info["sum"] == 2000.0 and info["unaligned_ok"] is True


@pytest.mark.skipif(not HAVE_TORCH, reason="needs PyTorch")
def test_gemm_package_loads_the_sm90a_image_and_matches_torch(tmp_path):
    """manifests/gemm.yaml built for sm_80, sm_90 and sm_90a: on a compute capability 9.0 device the
    package launches the sm_90a cubins (wgmma), and its GEMM (unit strides built in), linear layer
    and attention match PyTorch."""
    result = run_cli([str(REPO / "manifests" / "gemm.yaml"), "--out", "build", "-j", "8"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    code = textwrap.dedent("""
        import sys, json, torch
        sys.path.insert(0, "build")
        import gemm
        out = {}
        m, n, k = 1008, 768, 528           # (the manifest promises sizes divisible by 16)
        a, b = torch.randn(m, k, device="cuda", dtype=torch.float16), torch.randn(k, n, device="cuda", dtype=torch.float16)
        want = a.float() @ b.float()
        for spec in gemm.matmul_kernel.specializations:
            cx = spec["constexprs"]
            c = torch.empty(m, n, device="cuda", dtype=torch.float16)
            grid = (gemm.cdiv(m, cx["BLOCK_M"]) * gemm.cdiv(n, cx["BLOCK_N"]),)
            gemm.matmul_kernel[grid](a, b, c, m, n, k, k, 1, n, 1, n, 1, **cx, num_warps=spec["num_warps"])
            torch.cuda.synchronize()
            chosen = gemm.matmul_kernel.select(cx, spec["num_warps"])
            out[spec["id"]] = [float((c.float() - want).abs().max()),
                               gemm.matmul_kernel.kernel(chosen).loaded_images]
        try:                               # (its unit strides are built in: "i32:1")
            gemm.matmul_kernel[grid](a, b, c, m, n, k, k, 2, n, 1, n, 1, **cx, num_warps=spec["num_warps"])
            out["stride 2"] = "launched"
        except ValueError as e:
            out["stride 2"] = str(e)
        x, w = torch.randn(300, 256, device="cuda", dtype=torch.bfloat16), torch.randn(256, 384, device="cuda", dtype=torch.bfloat16)
        bias, y = torch.randn(384, device="cuda", dtype=torch.bfloat16), torch.empty(300, 384, device="cuda", dtype=torch.bfloat16)
        gemm.linear_kernel[(gemm.cdiv(300, 128) * gemm.cdiv(384, 128),)](x, w, bias, y, 300, 384, 256, 256, 384, 384,
            BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, ACTIVATION="relu")
        torch.cuda.synchronize()
        out["linear"] = float((y.float() - torch.relu(x.float() @ w.float() + bias.float())).abs().max())
        q, kk, v = (torch.randn(2, 208, 64, device="cuda", dtype=torch.float16) for _ in range(3))
        o = torch.empty_like(q)
        gemm.attention_fwd_kernel[(gemm.cdiv(208, 128), 2)](q, kk, v, o, 0.125, 208,
            HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64, CAUSAL=True)
        torch.cuda.synchronize()
        ref = torch.nn.functional.scaled_dot_product_attention(q.float(), kk.float(), v.float(), is_causal=True)
        out["attention"] = float((o.float() - ref).abs().max())
        out["cc"] = list(torch.cuda.get_device_capability())
        print(json.dumps(out))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    got = json.loads(result.stdout.splitlines()[-1])
    for spec_id, (err, images) in ((k, v) for k, v in got.items() if k.startswith("BLOCK")):
        assert err < 0.5, spec_id
        if got["cc"] == [9, 0]:
            assert images == ["sm_90a"], (spec_id, images)
    assert got["linear"] < 1.0 and got["attention"] < 2e-2
    assert got["stride 2"].startswith("parameter 'stride_ak' was built as i32:1 (the value 1 is compiled into the "
                                      "kernel); got 2")

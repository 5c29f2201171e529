"""The generated package without a GPU: thin import, argument checks, sha256, pip wheel."""
from __future__ import annotations

import importlib.util
import json
import math
import shutil
import struct
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from mytriton.aot import build_packages
from test_aot_support import write_project

MANIFEST = """\
package: kern
targets: [sm_80, sm_90]
kernels:
  - kernel: kernels/k.py:add_kernel
    signature: {x_ptr: "*fp32:16", y_ptr: "*fp32:16", out_ptr: "*fp32:16", n: i32}
    specializations:
      - {BLOCK: 64}
      - {BLOCK: 256, num_warps: 4}
      - {BLOCK: 256, num_warps: 8}
  - kernel: kernels/k.py:scale_kernel
    signature: {x_ptr: "*fp32", out_ptr: "*fp32", n: i32, alpha: fp32}
    constexprs: {BLOCK: [128], EVEN: [true]}
"""


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    """A folder holding the built package ``kern``."""
    folder = tmp_path_factory.mktemp("loader")
    manifest = write_project(folder, MANIFEST)
    build_packages([str(manifest)], out_dir=str(folder / "out"), jobs=1, echo=lambda line: None)
    return folder / "out"


def run_python(code: str, path: Path) -> dict:
    """Run *code* in a fresh interpreter that has only *path* (not this checkout) to import from;
    the code prints one JSON object."""
    script = f"import sys, json\nsys.path.insert(0, {str(path)!r})\n" + textwrap.dedent(code)
    result = subprocess.run([sys.executable, "-c", script], cwd=path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_import_is_thin_and_needs_no_gpu(out):
    info = run_python("""
        import kern
        print(json.dumps({
            "heavy": sorted(m for m in sys.modules if m.split(".")[0] in ("mytriton", "jinja2", "yaml")),
            "driver_loaded": "cuda.bindings.driver" in sys.modules,
            "all": kern.__all__,
            "cdiv": kern.cdiv(1000, 256),
            "device_array": kern.DeviceArray is kern._runtime.DeviceArray,
            "add": kern.add_kernel.specializations,
            "scale": kern.scale_kernel.specializations,
        }))
    """, out)
    assert info["heavy"] == [] and info["driver_loaded"] is False
    assert info["all"] == ["add_kernel", "scale_kernel", "DeviceArray", "cdiv"]
    assert info["cdiv"] == 4 and info["device_array"] is True
    assert [(s["id"], s["constexprs"], s["num_warps"]) for s in info["add"]] == [
        ("BLOCK64_w4", {"BLOCK": 64}, 4), ("BLOCK256_w4", {"BLOCK": 256}, 4), ("BLOCK256_w8", {"BLOCK": 256}, 8)]
    assert [s["id"] for s in info["scale"]] == ["BLOCK128_EVENTrue_w4"]


def test_loader_resolves_images_in_its_own_folder_and_matches_manifest_json(out):
    info = run_python("""
        import kern
        spec = kern.add_kernel.select({"BLOCK": 64})
        kern.add_kernel.verify()
        kern.scale_kernel.verify()
        print(json.dumps({"images": spec["images"], "sha256": spec["sha256"], "symbol": spec["symbol"]}))
    """, out)
    recorded = json.loads((out / "kern" / "manifest.json").read_text())
    spec = recorded["kernels"]["add_kernel"]["specializations"][0]
    assert info["images"] == {key: str(out / "kern" / rel) for key, rel in spec["images"].items()}
    assert info["sha256"] == {key: spec["sha256"][key] for key in ("sm_80", "sm_90", "ptx")}
    assert info["symbol"] == spec["symbol"]


def test_launch_arguments_are_checked_before_any_gpu_work(out):
    info = run_python("""
        import kern
        def error(call):
            try:
                call()
            except Exception as exc:
                return [type(exc).__name__, str(exc)]
            return None
        add = kern.add_kernel
        print(json.dumps({
            "count": error(lambda: add[(1,)](256, 512, BLOCK=64)),
            "not_built": error(lambda: add[(1,)](256, 512, 768, 10, BLOCK=128)),
            "ambiguous": error(lambda: add[(1,)](256, 512, 768, 10, BLOCK=256)),
            "no_constexpr": error(lambda: add[(1,)](256, 512, 768, 10)),
            "misaligned": error(lambda: add[(1,)](256, 520, 768, 10, BLOCK=64)),
            "wrong_type": error(lambda: add[(1,)](256, 512, 768, "ten", BLOCK=64)),
            "bad_grid": error(lambda: add[(0,)](256, 512, 768, 10, BLOCK=64)),
            "driver_loaded": "cuda.bindings.driver" in sys.modules,
        }))
    """, out)
    assert info["count"] == ["TypeError", "add_kernel() missing 2 required positional arguments: 'out_ptr' and 'n'"]
    assert info["not_built"][0] == "SpecializationNotFoundError"
    assert "no specialization was built for BLOCK=128" in info["not_built"][1]
    assert "built: BLOCK=64, num_warps=4; BLOCK=256, num_warps=4; BLOCK=256, num_warps=8" in info["not_built"][1]
    assert info["ambiguous"][0] == "SpecializationNotFoundError" and "pass num_warps=" in info["ambiguous"][1]
    assert info["no_constexpr"] == ["TypeError", "add_kernel() missing 1 required keyword-only argument: 'BLOCK'"]
    assert info["misaligned"][0] == "ValueError" and "16-byte aligned" in info["misaligned"][1]
    assert info["wrong_type"][0] == "TypeError" and "'n'" in info["wrong_type"][1]
    assert info["bad_grid"][0] == "ValueError" and "grid" in info["bad_grid"][1]
    assert info["driver_loaded"] is False


def test_a_tampered_artifact_is_refused(out, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    cubin = copy / "kern" / "kernels" / "add_kernel" / "BLOCK64_w4.sm_90.cubin"
    cubin.write_bytes(cubin.read_bytes() + b"\0")
    info = run_python("""
        import kern
        try:
            kern.add_kernel.verify()
            print(json.dumps(None))
        except Exception as exc:
            print(json.dumps([type(exc).__name__, str(exc)]))
    """, copy)
    assert info[0] == "KernelLoadError" and "sha256 mismatch" in info[1] and "BLOCK64_w4.sm_90.cubin" in info[1]


def _wheel_build_options() -> list[str]:
    """Build offline with the installed setuptools when it can; else let pip fetch it."""
    try:
        import setuptools
    except ImportError:
        return []
    # setuptools < 70.1 needs the wheel package for bdist_wheel.
    if int(setuptools.__version__.split(".")[0]) >= 61 and importlib.util.find_spec("wheel"):
        return ["--no-build-isolation"]
    return []


def test_pip_wheel_ships_the_kernels(out, tmp_path):
    source = tmp_path / "src"
    shutil.copytree(out / "kern", source / "kern")     # an in-tree build writes into the folder
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source / "kern"), "--no-deps",
                             "-w", str(tmp_path / "dist"), *_wheel_build_options()],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    wheel_path, = (tmp_path / "dist").glob("kern-*.whl")
    names = set(zipfile.ZipFile(wheel_path).namelist())
    expected = {f"kern/{p.relative_to(out / 'kern').as_posix()}" for p in (out / "kern").rglob("*")
                if p.is_file() and p.name not in ("pyproject.toml", "setup.py")}
    assert expected <= names, sorted(expected - names)
    assert sum(name.endswith(".cubin") for name in names) == 16        # (and the specialized variants)
    # Installed from the wheel, the package finds and verifies its kernels.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel_path).extractall(site)
    info = run_python("""
        import kern
        kern.add_kernel.verify()
        print(json.dumps(kern.__file__))
    """, site)
    assert info == str(site / "kern" / "__init__.py")


CLAMP_KERNEL = """\
import mytriton as triton
import mytriton.language as tl


@triton.jit
def clamp_kernel(x_ptr, out_ptr, n, BOUND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.minimum(tl.load(x_ptr + offs, mask=mask), BOUND), mask=mask)
"""

CLAMP_MANIFEST = """\
package: clamp
targets: [sm_90]
kernels:
  - kernel: kernels/k.py:clamp_kernel
    signature: {x_ptr: "*fp32:16", out_ptr: "*fp32:16", n: i32}
    constexprs:
      BOUND: [.inf, -.inf, .nan, 1.5]
      BLOCK: [64]
"""


def test_non_finite_float_constexprs_render_as_python(tmp_path):
    manifest = write_project(tmp_path, CLAMP_MANIFEST, kernels=CLAMP_KERNEL)
    build_packages([str(manifest)], out_dir=str(tmp_path / "out"), jobs=1, echo=lambda line: None)
    info = run_python("""
        import math
        import clamp
        specs = clamp.clamp_kernel.specializations
        print(json.dumps({
            "specs": [[s["id"], repr(s["constexprs"]["BOUND"])] for s in specs],
            "inf": clamp.clamp_kernel.select({"BOUND": math.inf, "BLOCK": 64})["id"],
            "minus_inf": clamp.clamp_kernel.select({"BOUND": -math.inf, "BLOCK": 64})["id"],
            "nan": [clamp.clamp_kernel.select({"BOUND": nan, "BLOCK": 64})["id"] for nan in (math.nan, float("nan"))],
        }))
    """, tmp_path / "out")
    assert info["specs"] == [["BOUNDinf_BLOCK64_w4", "inf"], ["BOUNDminf_BLOCK64_w4", "-inf"],
                             ["BOUNDnan_BLOCK64_w4", "nan"], ["BOUND1p5_BLOCK64_w4", "1.5"]]
    assert info["inf"] == "BOUNDinf_BLOCK64_w4" and info["minus_inf"] == "BOUNDminf_BLOCK64_w4"
    assert info["nan"] == ["BOUNDnan_BLOCK64_w4"] * 2      # (a NaN is equal to nothing, but its bits are its own)
    source = (tmp_path / "out" / "clamp" / "__init__.py").read_text()
    assert "float('inf')" in source and "float('-inf')" in source and "float('nan')" in source
    for spec_id, _ in info["specs"]:
        assert (tmp_path / "out" / "clamp" / "kernels" / "clamp_kernel" / f"{spec_id}.sm_90.cubin").is_file()


ODD_KERNEL = """\
import mytriton as triton
import mytriton.language as tl


@triton.jit
def odd(_x, type, _grid, out, num_warps: tl.constexpr, _B: tl.constexpr, SCALE: tl.constexpr):
    offs = tl.program_id(0) * _B + tl.arange(0, _B)
    mask = offs < _grid
    tl.store(out + offs, tl.load(_x + offs, mask=mask) * type / SCALE, mask=mask)
"""

ODD_MANIFEST = """\
package: oddnames
targets: [sm_90]
kernels:
  - kernel: kernels/k.py:odd
    signature: {_x: "*fp32:16", type: "fp32", _grid: "i32", out: "*fp32:16"}
    constexprs: {num_warps: [4], _B: [64], SCALE: [-0.0, .nan, 1]}
"""


def test_a_package_launches_by_constexpr_identity_and_takes_arguments_by_name(tmp_path, monkeypatch):
    """The built loader's launches (against the fake driver): SCALE=-0.0, NaN and 1 each run their
    own specialization and nothing else does (0.0, True, 1.0); every parameter is passed by its own
    name, even those named like the launcher's variables; a constexpr named num_warps is the
    launch's num_warps too."""
    from test_runtime_cpu import FakeDriver, install_fake_driver
    manifest = write_project(tmp_path, ODD_MANIFEST, kernels=ODD_KERNEL)
    build_packages([str(manifest)], out_dir=str(tmp_path / "out"), jobs=1, echo=lambda line: None)
    monkeypatch.syspath_prepend(str(tmp_path / "out"))
    try:
        pkg = importlib.import_module("oddnames")
        fake = install_fake_driver(monkeypatch, FakeDriver(), rt=pkg._runtime)
        fake.param_sizes = [8, 4, 4, 8]
        images = {(tmp_path / "out" / "oddnames" / "kernels" / "odd" / f"{s['id']}.sm_90.cubin").read_bytes(): s["id"]
                  for s in pkg.odd.specializations}

        def ran() -> str:
            return images[fake.modules[int(fake.launches[-1]["f"]) - 1001]].split("_SCALE")[1]
        x, out = pkg.DeviceArray(64, "fp32"), pkg.DeviceArray(64, "fp32")
        for scale, spec in [(-0.0, "m0p0_w4"), (math.nan, "nan_w4"), (float("nan"), "nan_w4"), (1, "1_w4")] * 2:
            pkg.odd[(1,)](x, 2.0, 64, out, num_warps=4, _B=64, SCALE=scale)
            assert ran() == spec, scale
            pkg.odd[(1,)](_x=x, type=2.0, _grid=64, out=out, num_warps=4, _B=64, SCALE=scale)
            assert ran() == spec, scale
        assert {tuple(la["args"][1:3]) for la in fake.launches} == {(struct.pack("<f", 2.0), struct.pack("<i", 64))}
        error = pkg._runtime.SpecializationNotFoundError
        built = "built: num_warps=4, _B=64, SCALE=-0.0; num_warps=4, _B=64, SCALE=nan; num_warps=4, _B=64, SCALE=1"
        with pytest.raises(error) as info:
            pkg.odd[(1,)](x, 2.0, 64, out, num_warps=4, _B=64, SCALE=0.0)
        assert str(info.value) == f"odd: no specialization was built for num_warps=4, _B=64, SCALE=0.0; {built}"
        with pytest.raises(error, match=r"for num_warps=4, _B=64, SCALE=True \(bool\); built: .*SCALE=1 \(int\)$"):
            pkg.odd[(1,)](x, 2.0, 64, out, num_warps=4, _B=64, SCALE=True)
        with pytest.raises(error, match=r"SCALE=1.0 \(float\); built"):
            pkg.odd[(1,)](x, 2.0, 64, out, num_warps=4, _B=64, SCALE=1.0)
        with pytest.raises(TypeError, match=r"^odd\(\) missing 1 required positional argument: '_x'$"):
            pkg.odd[(1,)](type=2.0, _grid=64, out=out, num_warps=4, _B=64, SCALE=1)
        assert len(fake.launches) == 16
    finally:
        for name in [m for m in sys.modules if m == "oddnames" or m.startswith("oddnames.")]:
            del sys.modules[name]


def _build_wheel(package: Path, tmp_path: Path) -> Path:
    """``python -m build --wheel`` of a copy of *package*, offline (the installed setuptools)."""
    source = tmp_path / "src" / package.name
    shutil.copytree(package, source)            # an in-tree build writes into the folder
    result = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "-o",
                             str(tmp_path / "dist"), str(source)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    wheel, = (tmp_path / "dist").glob("*.whl")
    return wheel


def _wheel_metadata(wheel: Path) -> tuple[set[str], str, str]:
    """(file names, the WHEEL file's Tag, Root-Is-Purelib)."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = archive.read(next(n for n in names if n.endswith(".dist-info/WHEEL"))).decode()
    fields = dict(line.split(": ", 1) for line in info.splitlines() if ": " in line)
    return names, fields["Tag"], fields["Root-Is-Purelib"]


def test_wheel_with_the_native_library_is_tagged_for_its_platform(out, tmp_path):
    pytest.importorskip("build")
    if not (out / "kern" / "_mtlaunch.abi3.so").is_file():
        pytest.skip("no native library was built here (no C compiler or Python headers)")
    import sysconfig
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    wheel = _build_wheel(out / "kern", tmp_path)
    names, tag, purelib = _wheel_metadata(wheel)
    assert wheel.name == f"kern-0.1.0-cp310-abi3-{platform}.whl"
    assert tag == f"cp310-abi3-{platform}" and purelib == "false"
    assert "kern/_mtlaunch.abi3.so" in names and "kern/__init__.py" in names
    assert sum(name.endswith(".cubin") for name in names) == 16        # (and the specialized variants)
    assert not {"kern/setup.py", "kern/pyproject.toml"} & names


def test_wheel_without_the_native_library_is_pure(tmp_path, monkeypatch):
    pytest.importorskip("build")
    monkeypatch.setenv("MYTRITON_NATIVE_LAUNCH", "0")       # the build makes no native library
    manifest = write_project(tmp_path, MANIFEST.replace("package: kern", "package: purekern\nversion: 2.1rc1"))
    build_packages([str(manifest)], out_dir=str(tmp_path / "out"), jobs=1, echo=lambda line: None,
                   notify=lambda line: None)
    assert not (tmp_path / "out" / "purekern" / "setup.py").exists()
    wheel = _build_wheel(tmp_path / "out" / "purekern", tmp_path)
    names, tag, purelib = _wheel_metadata(wheel)
    assert wheel.name == "purekern-2.1rc1-py3-none-any.whl"
    assert tag == "py3-none-any" and purelib == "true"
    assert not any(name.endswith(".so") for name in names) and "purekern/manifest.json" in names


def test_manifest_file_name_cannot_inject_code(tmp_path):
    """The manifest's file name reaches the generated files' first comment line: a newline in it
    must not end the comment (it did, and `import <package>` ran what followed)."""
    name = "m.yaml\nimport os; os.environ['PWNED'] = '1'; open('pwned', 'w').write('x')\n#"
    manifest = write_project(tmp_path, MANIFEST.replace("package: kern", "package: named"), name=name)
    build_packages([str(manifest)], out_dir=str(tmp_path / "out"), jobs=1, echo=lambda line: None,
                   notify=lambda line: None)
    package = tmp_path / "out" / "named"
    for generated in ("__init__.py", "pyproject.toml", "setup.py"):
        if (package / generated).exists():
            first = (package / generated).read_text().splitlines()[0]
            assert first.startswith("# Generated by mytriton-build") and "\\nimport os" in first, first
    import tomllib
    project = tomllib.loads((package / "pyproject.toml").read_text())["project"]
    assert project["name"] == "named" and project["version"] == "0.1.0"
    info = run_python("""
        import os, named
        print(json.dumps([os.environ.get("PWNED"), os.path.exists("pwned"), named.__version__]))
    """, tmp_path / "out")
    assert info == [None, False, "0.1.0"]


def test_version_and_relative_kernel_paths(tmp_path):
    """`version:` becomes the package's version; manifest.json records the kernel path relative
    to the manifest, even for a kernel outside its folder (allowed by --allow-outside)."""
    project = tmp_path / "project"
    write_project(tmp_path / "shared", "package: unused\n")
    manifest = write_project(project, MANIFEST.replace("package: kern", "package: versioned\nversion: 1.10")
                             .replace("kernels/k.py:scale_kernel", f"{tmp_path}/shared/kernels/k.py:scale_kernel"))
    build_packages([str(manifest)], out_dir=str(project / "out"), jobs=1, echo=lambda line: None,
                   notify=lambda line: None, allow_outside=True)
    package = project / "out" / "versioned"
    info = json.loads((package / "manifest.json").read_text())
    assert info["version"] == "1.10"
    assert info["kernels"]["add_kernel"]["kernel"] == "kernels/k.py:add_kernel"
    assert info["kernels"]["scale_kernel"]["kernel"] == "../shared/kernels/k.py:scale_kernel"
    assert str(tmp_path) not in (package / "manifest.json").read_text()
    assert 'version = "1.10"' in (package / "pyproject.toml").read_text()
    assert "__version__ = '1.10'" in (package / "__init__.py").read_text()

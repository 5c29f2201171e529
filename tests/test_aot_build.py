"""mytriton-build: output layout, caching, atomicity, determinism, locking, exit codes (CPU only)."""
from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest
import yaml

import mytriton
from mytriton.aot import CompileFailed, build_packages, output
from mytriton.runtime import native
from test_aot_support import (KERNELS, REPO, SMALL_MANIFEST, assert_no_traceback, env_with_repo, leftovers,
                              run_cli, tree_bytes, write_project)

TWO_TARGETS = SMALL_MANIFEST.replace("targets: [sm_90]", "targets: [sm_90, sm_80]")
BROKEN = "tl.store(out_ptr + offs, no_such_function(x + y), mask=mask)"


@pytest.fixture
def compile_calls(monkeypatch):
    """Every (kernel, constexprs, num_warps, target) the build compiles (in this process: jobs=1)."""
    calls = []
    real = mytriton.compile

    def counting(fn, **options):
        calls.append((fn.__name__, tuple(options["constexprs"].items()), options["num_warps"], options["target"]))
        return real(fn, **options)

    monkeypatch.setattr(mytriton, "compile", counting)
    return calls


def build(manifest: Path, out: Path, jobs: int = 1, **options) -> list[str]:
    """The progress and summary lines of one build (remarks go to ``notify``, by default nowhere)."""
    lines: list[str] = []
    options.setdefault("notify", lambda remark: None)
    build_packages([str(manifest)], out_dir=str(out), jobs=jobs, echo=lines.append, **options)
    return lines


def break_kernel(folder: Path) -> None:
    source = (folder / "kernels" / "k.py").read_text()
    (folder / "kernels" / "k.py").write_text(source.replace("tl.store(out_ptr + offs, x + y, mask=mask)", BROKEN))


def native_buildable() -> bool:
    """Whether this machine can build the native launch library (.ci/run installs cc and the headers)."""
    reason = native.build().reason
    assert reason == "" or reason.startswith(("no C compiler", "no Python headers")), reason
    return not reason


def test_build_writes_the_documented_package(tmp_path):
    build(write_project(tmp_path, TWO_TARGETS), tmp_path / "out")
    pkg = tmp_path / "out" / "small"
    files = sorted(tree_bytes(pkg))
    library = ["_mtlaunch.abi3.so"] if native_buildable() else []
    # (each specialization and its specialized variant, which promises n divisible by 16)
    images = [f"kernels/add_kernel/{spec}{variant}.{kind}" for spec in ("BLOCK256_w4", "BLOCK64_w4")
              for variant in ("", ".specialized") for kind in ("cu", "ptx", "sm_80.cubin", "sm_90.cubin")]
    assert files == ["__init__.py", *library, "_runtime.py", *images,
                     "manifest.json", "pyproject.toml", *(["setup.py"] if library else [])]
    assert (pkg / "_runtime.py").read_bytes() == (REPO / "mytriton" / "runtime" / "driver.py").read_bytes()
    assert (pkg / "kernels/add_kernel/BLOCK64_w4.sm_90.cubin").read_bytes()[:4] == b"\x7fELF"
    ptx = (pkg / "kernels/add_kernel/BLOCK64_w4.ptx").read_text()
    assert re.search(r"^\.target sm_80\b", ptx, re.M), "the PTX is compiled for the lowest target"
    assert "add_kernel" in (pkg / "kernels/add_kernel/BLOCK64_w4.cu").read_text()

    info = json.loads((pkg / "manifest.json").read_text())
    assert info["mytriton_version"] == mytriton.__version__
    library = (pkg / "_mtlaunch.abi3.so").read_bytes() if native_buildable() else None
    assert library is None or library[:4] == b"\x7fELF" and info["native_launcher"] == {
        "file": "_mtlaunch.abi3.so", "sha256": hashlib.sha256(library).hexdigest(), "key": native.build_key()[0],
        "compiler": native.build_key()[2], "platform": sysconfig.get_platform(), "abi": "abi3 (CPython >= 3.10)"}
    assert library is None or "_runtime.use_native_launcher(_path('_mtlaunch.abi3.so'), " in (
        pkg / "__init__.py").read_text()
    from mytriton.backends.cuda.nvrtc import nvrtc_version
    assert info["nvrtc_version"] == nvrtc_version()
    assert info["targets"] == ["sm_80", "sm_90"] and info["ptx_target"] == "sm_80"
    kernel = info["kernels"]["add_kernel"]
    assert kernel["signature"] == [["x_ptr", "*fp32:16"], ["y_ptr", "*fp32:16"], ["out_ptr", "*fp32:16"],
                                   ["n", "i32"]]
    assert kernel["constexpr_names"] == ["BLOCK"] and kernel["num_warps"] == [4]
    assert kernel["targets"] == ["sm_80", "sm_90"]
    specs = kernel["specializations"]
    assert [(s["id"], s["constexprs"], s["num_warps"]) for s in specs] == [
        ("BLOCK64_w4", {"BLOCK": 64}, 4), ("BLOCK256_w4", {"BLOCK": 256}, 4)]
    for spec in specs:
        twin, plain = spec["variants"]
        assert plain == {"name": "plain", "signature": kernel["signature"]}
        assert twin["name"] == "specialized" and twin["id"] == spec["id"] + ".specialized"
        assert twin["signature"] == kernel["signature"][:3] + [["n", "i32:16"]]
        assert spec["specialize"]["signature"] == twin["signature"] and len(spec["specialize"]["analysis"]) == 64
        assert spec["specialize"]["why"] == "promises n divisible by 16"
        for record in (spec, twin):
            assert isinstance(record["shared"], int) and record["symbol"]
            assert set(record["sha256"]) == {"sm_80", "sm_90", "ptx", "cu"}
            paths = {**record["images"], "cu": record["source"]}
            for key, relative in paths.items():
                from hashlib import sha256
                assert sha256((pkg / relative).read_bytes()).hexdigest() == record["sha256"][key], relative
        assert twin["build"]["sm_90"]["key"] != spec["build"]["sm_90"]["key"]
    assert 'name = "small"' in (pkg / "pyproject.toml").read_text()


def test_second_build_compiles_nothing_and_touches_nothing(tmp_path, compile_calls):
    manifest = write_project(tmp_path, TWO_TARGETS)
    lines = build(manifest, tmp_path / "out")
    assert len(compile_calls) == 8 and lines[0].startswith("analyzed 2 specializations for specialized variants")
    pkg = tmp_path / "out" / "small"
    before = {p: p.stat().st_mtime_ns for p in pkg.rglob("*")}
    lines = build(manifest, tmp_path / "out")
    assert len(compile_calls) == 8, "the no-op rebuild compiled something"
    assert lines[-1] == f"small: 2 specializations (+2 specialized variants) up to date ({pkg})"
    # (nothing analyzed again: the package's manifest.json has the answers)
    assert all(line.endswith("cached") for line in lines[:-1]) and len(lines) == 9, lines
    assert {p: p.stat().st_mtime_ns for p in pkg.rglob("*")} == before


def test_native_launcher_is_reused_and_optional(tmp_path, monkeypatch):
    """A no-op build reuses the previous build's native library (no C compile); without a C
    compiler the package is built without it, says so, and its loader does not ask for it."""
    if not native_buildable():
        pytest.skip(f"cannot build the native library here: {native.build().reason}")
    manifest = write_project(tmp_path, SMALL_MANIFEST)
    build(manifest, tmp_path / "out")
    pkg = tmp_path / "out" / "small"
    library = (pkg / native.FILENAME).read_bytes()
    commands = []
    real_run = subprocess.run
    monkeypatch.setattr(native.subprocess, "run", lambda cmd, **kw: commands.append(cmd) or real_run(cmd, **kw))
    build(manifest, tmp_path / "out")
    assert commands and not any("-shared" in command for command in commands)
    assert (pkg / native.FILENAME).read_bytes() == library
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    remarks = []
    build(manifest, tmp_path / "out", notify=remarks.append)
    assert remarks == [f"native launcher not built: the C compiler CC={str(tmp_path / 'no-such-cc')!r} does not "
                       "run; the packages launch through pure Python"]
    assert not (pkg / native.FILENAME).exists() and "use_native_launcher" not in (pkg / "__init__.py").read_text()
    assert json.loads((pkg / "manifest.json").read_text())["native_launcher"] is None
    assert native.FILENAME not in (pkg / "pyproject.toml").read_text()


def test_only_what_changed_is_recompiled(tmp_path, compile_calls):
    manifest = write_project(tmp_path, SMALL_MANIFEST.replace("targets: [sm_90]", "targets: [sm_80]"))
    build(manifest, tmp_path / "out")
    assert len(compile_calls) == 4                    # (each specialization and its specialized variant)

    # A new constexpr value: only the new specialization is compiled (and its variant).
    manifest.write_text(manifest.read_text().replace("BLOCK: [64, 256]", "BLOCK: [64, 256, 1024]"))
    build(manifest, tmp_path / "out")
    assert compile_calls[4:] == [("add_kernel", (("BLOCK", 1024),), 4, "sm_80")] * 2

    # A new, newer target: sm_80 stays the PTX target, so only the sm_90 cubins are new.
    manifest.write_text(manifest.read_text().replace("targets: [sm_80]", "targets: [sm_80, sm_90]"))
    build(manifest, tmp_path / "out")
    assert sorted(c[3] for c in compile_calls[6:]) == ["sm_90"] * 6

    # Another num_warps: a new specialization per BLOCK and target.
    manifest.write_text(manifest.read_text() + "    num_warps: [4, 8]\n")
    del compile_calls[:]
    lines = build(manifest, tmp_path / "out")
    assert sorted(set(c[2] for c in compile_calls)) == [8] and len(compile_calls) == 12
    assert "12 compiled, 12 cached" in lines[-1]

    # An edited kernel source: everything of that kernel is rebuilt.
    kernel = tmp_path / "kernels" / "k.py"
    kernel.write_text(kernel.read_text().replace("x + y, mask=mask", "y + x, mask=mask"))
    del compile_calls[:]
    build(manifest, tmp_path / "out")
    assert len(compile_calls) == 24


CONSTANT_KERNELS = KERNELS + """

SCALE = 2.0


@triton.jit
def scale_by_constant(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * SCALE, mask=mask)
"""
CONSTANT_MANIFEST = SMALL_MANIFEST + """\
  - kernel: kernels/k.py:scale_by_constant
    signature: {x_ptr: "*fp32:16", out_ptr: "*fp32:16", n: i32}
    constexprs:
      BLOCK: [64, 128]
"""


def test_editing_a_module_constant_recompiles_the_kernels_that_read_it(tmp_path, compile_calls):
    manifest = write_project(tmp_path, CONSTANT_MANIFEST, kernels=CONSTANT_KERNELS)
    build(manifest, tmp_path / "out")
    assert len(compile_calls) == 8
    sources = tmp_path / "out" / "small" / "kernels" / "scale_by_constant"
    assert "2.0f" in (sources / "BLOCK64_w4.cu").read_text()

    kernel = tmp_path / "kernels" / "k.py"
    kernel.write_text(kernel.read_text().replace("SCALE = 2.0", "SCALE = 3.0"))
    del compile_calls[:]
    lines = build(manifest, tmp_path / "out")
    assert sorted(compile_calls) == [("scale_by_constant", (("BLOCK", 64),), 4, "sm_90")] * 2 + \
        [("scale_by_constant", (("BLOCK", 128),), 4, "sm_90")] * 2
    assert "4 compiled, 4 cached" in lines[-1], lines
    for spec in ("BLOCK64_w4", "BLOCK128_w4", "BLOCK64_w4.specialized"):
        cu = (sources / f"{spec}.cu").read_text()
        assert "3.0f" in cu and "2.0f" not in cu, cu


def test_a_damaged_artifact_is_rebuilt(tmp_path, compile_calls):
    manifest = write_project(tmp_path, SMALL_MANIFEST)
    build(manifest, tmp_path / "out")
    cubin = tmp_path / "out" / "small" / "kernels" / "add_kernel" / "BLOCK64_w4.sm_90.cubin"
    good = cubin.read_bytes()
    cubin.write_bytes(b"garbage")
    build(manifest, tmp_path / "out")
    assert compile_calls[4:] == [("add_kernel", (("BLOCK", 64),), 4, "sm_90")]
    assert cubin.read_bytes() == good


def test_compile_error_exits_1_and_leaves_the_previous_output(tmp_path):
    build(write_project(tmp_path, TWO_TARGETS), tmp_path / "out")
    before = tree_bytes(tmp_path / "out")
    break_kernel(tmp_path)
    result = run_cli(["m.yaml", "--out", "out", "-j", "2"], cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert_no_traceback(result.stderr)
    # The compiler's message (file:line:col, source line, caret), once for all four compiles.
    assert result.stderr.count("error: name 'no_such_function' is not defined") == 1, result.stderr
    assert re.search(r"kernels/k\.py:\d+:\d+: error: name 'no_such_function' is not defined\n.*no_such_function"
                     r"\(x \+ y\).*\n\s*\^", result.stderr), result.stderr
    assert "compiling add_kernel BLOCK=64 w4 sm_80, add_kernel BLOCK=64 w4 sm_90, add_kernel BLOCK=256 w4 " \
           "sm_80 and 1 more failed" in result.stderr
    assert "small: 4 of 4 compiles failed; out/small left unchanged" in result.stdout
    assert tree_bytes(tmp_path / "out") == before
    assert leftovers(tmp_path / "out") == []


def test_in_process_compile_error_raises_compile_failed(tmp_path):
    manifest = write_project(tmp_path, SMALL_MANIFEST)
    break_kernel(tmp_path)
    with pytest.raises(CompileFailed) as info:
        build(manifest, tmp_path / "out")
    (labels, message), = info.value.failures
    assert labels == ["add_kernel BLOCK=64 w4 sm_90", "add_kernel BLOCK=256 w4 sm_90"]
    assert "no_such_function" in message
    assert not (tmp_path / "out" / "small").exists() and leftovers(tmp_path / "out") == []


def test_manifest_error_leaves_the_previous_output(tmp_path):
    manifest = write_project(tmp_path, SMALL_MANIFEST)
    build(manifest, tmp_path / "out")
    before = tree_bytes(tmp_path / "out")
    manifest.write_text(manifest.read_text().replace("BLOCK: [64, 256]", "BLOCK: [64, 64]"))
    result = run_cli(["m.yaml", "--out", "out"], cwd=tmp_path)
    assert result.returncode == 2 and "m.yaml:7: duplicate value 64 in constexprs.BLOCK" in result.stderr
    assert tree_bytes(tmp_path / "out") == before


def test_builds_are_deterministic(tmp_path):
    manifest = write_project(tmp_path, TWO_TARGETS)
    build(manifest, tmp_path / "one", jobs=1)
    result = run_cli(["m.yaml", "--out", "two", "-j", "2"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    one, two = tree_bytes(tmp_path / "one" / "small"), tree_bytes(tmp_path / "two" / "small")
    assert one.keys() == two.keys()
    assert [name for name in one if one[name] != two[name]] == []


def test_cli_prints_one_line_per_compile_and_a_summary(tmp_path):
    write_project(tmp_path, SMALL_MANIFEST)
    result = run_cli(["m.yaml", "--out", "out", "-j", "1"], cwd=tmp_path)
    assert result.returncode == 0
    assert result.stderr == "" if native_buildable() else result.stderr.startswith("native launcher not built: ")
    lines = [re.sub(r"\d+\.\d\d s$", "T", line) for line in result.stdout.splitlines()]
    assert re.fullmatch(r"analyzed 2 specializations for specialized variants in \d+\.\d s: 2 to build",
                        lines[0]), lines[0]
    assert lines[1:5] == ["[1/4] add_kernel BLOCK=64 w4 sm_90               T",
                          "[2/4] add_kernel BLOCK=256 w4 sm_90              T",
                          "[3/4] add_kernel BLOCK=64 w4 specialized sm_90   T",
                          "[4/4] add_kernel BLOCK=256 w4 specialized sm_90  T"]
    assert re.fullmatch(r"small: 2 specializations \(\+2 specialized variants\) for sm_90: 4 compiled, 0 cached in "
                        r"\d+\.\d s -> out/small", lines[5]), lines[5]
    again = run_cli(["m.yaml", "--out", "out"], cwd=tmp_path)
    assert again.stdout.splitlines() == ["[1/4] add_kernel BLOCK=64 w4 sm_90               cached",
                                         "[2/4] add_kernel BLOCK=256 w4 sm_90              cached",
                                         "[3/4] add_kernel BLOCK=64 w4 specialized sm_90   cached",
                                         "[4/4] add_kernel BLOCK=256 w4 specialized sm_90  cached",
                                         "small: 2 specializations (+2 specialized variants) up to date (out/small)"]


def test_target_option_overrides_the_manifest_and_output_defaults_to_build(tmp_path):
    write_project(tmp_path, SMALL_MANIFEST)
    result = run_cli(["m.yaml", "--target", "sm_80,sm_86", "--target", "sm_80", "-j", "1"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "build/small/manifest.json").read_text())["targets"] == ["sm_80", "sm_86"]


def test_refuses_to_replace_a_folder_it_did_not_make(tmp_path):
    write_project(tmp_path, SMALL_MANIFEST)
    (tmp_path / "out" / "small").mkdir(parents=True)
    (tmp_path / "out" / "small" / "notes.txt").write_text("mine")
    result = run_cli(["m.yaml", "--out", "out"], cwd=tmp_path)
    assert result.returncode == 2
    assert "out/small exists and was not made by mytriton-build" in result.stderr
    assert tree_bytes(tmp_path / "out" / "small") == {"notes.txt": b"mine"}


def test_leftovers_of_a_killed_build_are_cleaned_up(tmp_path):
    manifest = write_project(tmp_path, SMALL_MANIFEST)
    (tmp_path / "out" / ".small.tmp-dead").mkdir(parents=True)
    (tmp_path / "out" / ".small.tmp-dead" / "x").write_text("partial")
    build(manifest, tmp_path / "out")
    assert leftovers(tmp_path / "out") == []


def test_unwritable_output_folder_is_reported_without_traceback(tmp_path):
    write_project(tmp_path, SMALL_MANIFEST)
    (tmp_path / "file").write_text("")
    result = run_cli(["m.yaml", "--out", "file/out"], cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == "mytriton-build: cannot write the output: Not a directory: file/out\n", result.stderr
    assert_no_traceback(result.stderr)


def test_swap_without_rename_exchange(tmp_path, monkeypatch):
    monkeypatch.setattr(output, "_rename_exchange", lambda a, b: False)
    dest, new = tmp_path / "pkg", tmp_path / ".pkg.tmp-1"
    dest.mkdir()
    (dest / "old").write_text("old")
    new.mkdir()
    (new / "new").write_text("new")
    output.swap_in(new, dest)
    assert tree_bytes(dest) == {"new": b"new"} and tree_bytes(new) == {"old": b"old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == [".pkg.tmp-1", "pkg"]


def test_concurrent_builds_into_one_folder_are_serialized(tmp_path):
    write_project(tmp_path, TWO_TARGETS)
    command = [sys.executable, "-m", "mytriton.aot", "m.yaml", "--out", "out", "-j", "1"]
    procs = [subprocess.Popen(command, cwd=tmp_path, env=env_with_repo(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [proc.communicate(timeout=300) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    summaries = sorted(out.splitlines()[-1] for out, _ in outputs)
    assert "up to date" in summaries[1] and "8 compiled" in summaries[0], summaries
    info = json.loads((tmp_path / "out" / "small" / "manifest.json").read_text())
    assert len(info["kernels"]["add_kernel"]["specializations"]) == 2
    assert leftovers(tmp_path / "out") == []


def _interrupt(tmp_path: Path, command: list[str], marker: str, env: dict,
               signum: int = signal.SIGINT) -> tuple[subprocess.Popen, str, str]:
    proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if marker in line:
            break
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    return proc, "".join(seen) + out, err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "kill"])
def test_ctrl_c_leaves_the_previous_output(tmp_path, signum):
    manifest = write_project(tmp_path, SMALL_MANIFEST)
    build(manifest, tmp_path / "out")
    before = tree_bytes(tmp_path / "out")
    manifest.write_text(manifest.read_text().replace("BLOCK: [64, 256]", "BLOCK: [64, 128]"))
    slow_build = (
        "import sys, time, mytriton\n"
        "from mytriton.aot.cli import main\n"
        "def slow(fn, **options):\n"
        "    print('compiling', flush=True)\n"
        "    time.sleep(60)\n"
        "mytriton.compile = slow\n"
        "sys.exit(main(['m.yaml', '--out', 'out', '-j', '1']))\n")
    proc, out, err = _interrupt(tmp_path, [sys.executable, "-c", slow_build], "compiling", env_with_repo(), signum)
    assert proc.returncode == 130, err
    assert err == "mytriton-build: interrupted; the previous output was left as it was\n"
    assert tree_bytes(tmp_path / "out") == before and leftovers(tmp_path / "out") == []


def write_hanging_project(tmp_path):
    """The small project, whose kernel file, in a worker process, announces itself and hangs (a long
    compile)."""
    write_project(tmp_path, SMALL_MANIFEST)
    kernel = tmp_path / "kernels" / "k.py"
    kernel.write_text("import multiprocessing, os, time\n"
                      "if multiprocessing.parent_process() is not None:\n"
                      "    print('worker', os.getpid(), flush=True)\n"
                      "    time.sleep(120)\n" + kernel.read_text())


def test_ctrl_c_stops_parallel_workers(tmp_path):
    write_hanging_project(tmp_path)
    start = time.monotonic()
    proc, out, err = _interrupt(tmp_path, [sys.executable, "-m", "mytriton.aot", "m.yaml", "--out", "out",
                                           "-j", "2"], "worker", env_with_repo())
    assert proc.returncode == 130, err
    assert_no_traceback(err)
    assert time.monotonic() - start < 60
    for pid in re.findall(r"worker (\d+)", out):
        for _ in range(50):
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"worker {pid} still runs after Ctrl-C")
    assert not (tmp_path / "out" / "small").exists() and leftovers(tmp_path / "out") == []


def test_several_manifests_in_one_run(tmp_path):
    write_project(tmp_path, SMALL_MANIFEST, name="a.yaml")
    write_project(tmp_path, SMALL_MANIFEST.replace("package: small", "package: other")
                  .replace("BLOCK: [64, 256]", "BLOCK: [128]"), name="b.yaml")
    result = run_cli(["a.yaml", "b.yaml", "--out", "out", "-j", "1"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "[6/6]" in result.stdout
    assert (tmp_path / "out/small/kernels/add_kernel/BLOCK256_w4.sm_90.cubin").is_file()
    assert (tmp_path / "out/other/kernels/add_kernel/BLOCK128_w4.sm_90.cubin").is_file()


def test_module_references_build_in_worker_processes(tmp_path):
    write_project(tmp_path, SMALL_MANIFEST.replace("kernels/k.py:add_kernel", "aot_test_module_ref:add_kernel"))
    (tmp_path / "aot_test_module_ref.py").write_text((tmp_path / "kernels" / "k.py").read_text())
    result = run_cli(["m.yaml", "--out", "out", "-j", "2"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    info = json.loads((tmp_path / "out/small/manifest.json").read_text())
    assert info["kernels"]["add_kernel"]["kernel"] == "aot_test_module_ref:add_kernel"


def test_every_shipped_manifest_builds_to_cubin_and_ptx(tmp_path):
    manifests = sorted(str(path) for path in (REPO / "manifests").glob("*.yaml"))
    result = run_cli([*manifests, "--out", str(tmp_path), "-j", "2"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    for path in manifests:
        package = tmp_path / yaml.safe_load(Path(path).read_text())["package"]
        info = json.loads((package / "manifest.json").read_text())
        for kernel in info["kernels"].values():
            for spec in kernel["specializations"]:
                assert sorted(spec["images"]) == sorted([*info["targets"], "ptx"])
                assert (package / spec["images"]["ptx"]).read_text().lstrip().startswith("//")
                for target in info["targets"]:
                    assert (package / spec["images"][target]).read_bytes()[:4] == b"\x7fELF"

    info = json.loads((tmp_path / "elementwise" / "manifest.json").read_text())
    assert sorted(info["kernels"]) == ["add_kernel", "axpby_kernel", "int_ops_kernel", "leaky_relu_kernel",
                                       "sigmoid_kernel"]
    blocks = {spec["constexprs"]["BLOCK"] for k in info["kernels"].values() for spec in k["specializations"]}
    warps = {spec["num_warps"] for k in info["kernels"].values() for spec in k["specializations"]}
    assert min(blocks) < 128 < max(blocks) and len(warps) > 2

    # the tensor-core kernels: an sm_90a image beside sm_80's and sm_90's, the PTX of the oldest,
    # num_stages recorded where the manifest sets it
    info = json.loads((tmp_path / "gemm" / "manifest.json").read_text())
    assert info["targets"] == ["sm_80", "sm_90", "sm_90a"] and info["ptx_target"] == "sm_80"
    assert [s["num_stages"] for s in info["kernels"]["matmul_kernel"]["specializations"]] == [None, 4]
    spec = info["kernels"]["matmul_kernel"]["specializations"][0]
    cubins = {t: (tmp_path / "gemm" / spec["images"][t]).read_bytes() for t in ("sm_90", "sm_90a")}
    assert cubins["sm_90"] != cubins["sm_90a"]


def _wait_gone(pids: list[int], seconds: float) -> list[int]:
    """The pids among *pids* still alive after *seconds*."""
    deadline = time.monotonic() + seconds
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [pid for pid in alive if _alive(pid)]
    return alive


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:        # a zombie (not yet reaped by its new parent) counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def test_sigkill_of_the_build_ends_its_workers(tmp_path):
    """After SIGKILL of mytriton-build its -j workers die too: they no longer hold the caller's
    stdout open, so communicate() returns (before, it waited for the workers' 120 s compiles)."""
    write_hanging_project(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "mytriton.aot", "m.yaml", "--out", "out", "-j", "2"],
                            cwd=tmp_path, env=env_with_repo(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    workers = []
    try:
        for line in proc.stdout:
            if line.startswith("worker"):
                workers.append(int(line.split()[1]))
                break
        assert workers, "no worker started"
        proc.kill()
        start = time.monotonic()
        proc.communicate(timeout=10)
        assert time.monotonic() - start < 10
        assert _wait_gone(workers, 5) == []
    finally:
        proc.kill()
        for pid in workers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_watchdog_ends_a_worker_whose_parent_died_without_prctl(tmp_path):
    """The portable fallback (no prctl): a worker's watchdog thread sees its parent gone."""
    child = ("import os, sys, time\n"
             "from mytriton.aot import jobs\n"
             "jobs.WATCHDOG_PERIOD = 0.05\n"
             "jobs._die_with_parent(os.getppid(), use_prctl=False)\n"
             "print(os.getpid(), flush=True)\n"
             "time.sleep(60)\n")
    parent = ("import subprocess, sys\n"
              f"p = subprocess.Popen([sys.executable, '-c', {child!r}])\n"
              "p.wait()\n")
    proc = subprocess.Popen([sys.executable, "-c", parent], env=env_with_repo(), stdout=subprocess.PIPE, text=True)
    pid = int(proc.stdout.readline())
    try:
        proc.kill()
        proc.wait()
        assert _wait_gone([pid], 5) == []
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_ctrl_c_keeps_the_compiles_that_finished(tmp_path, compile_calls):
    """Interrupted after one of two compiles, the next build compiles only the other one."""
    manifest = write_project(tmp_path, SMALL_MANIFEST)
    second_hangs = (
        "import sys, time, mytriton\n"
        "from mytriton.aot.cli import main\n"
        "real, calls = mytriton.compile, []\n"
        "def compile_then_hang(fn, **options):\n"
        "    calls.append(options)\n"
        "    if len(calls) == 2:\n"
        "        print('hanging', flush=True)\n"
        "        time.sleep(60)\n"
        "    return real(fn, **options)\n"
        "mytriton.compile = compile_then_hang\n"
        "sys.exit(main(['m.yaml', '--out', 'out', '-j', '1']))\n")
    proc, out, err = _interrupt(tmp_path, [sys.executable, "-c", second_hangs], "hanging", env_with_repo())
    assert proc.returncode == 130, err
    assert_no_traceback(err)
    assert "[1/4] add_kernel BLOCK=64 w4 sm_90" in out
    assert not (tmp_path / "out" / "small").exists()
    lines = build(manifest, tmp_path / "out")
    assert [c[1] for c in compile_calls] == [(("BLOCK", 256),)] + [(("BLOCK", 64),), (("BLOCK", 256),)], \
        "the finished compile was compiled again"
    assert any(re.search(r"BLOCK=64 w4 sm_90 +cached$", line) for line in lines), lines
    # The package holds them now: nothing else is left beside it (no cache, no lock file).
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["small"]


def test_lock_files_do_not_accumulate_and_a_symlink_is_not_followed(tmp_path):
    manifest = write_project(tmp_path, SMALL_MANIFEST)
    out = tmp_path / "out"
    build(manifest, out)
    build(manifest, out)
    assert sorted(p.name for p in out.iterdir()) == ["small"]
    target = tmp_path / "elsewhere"
    (out / ".small.lock").symlink_to(target)
    result = run_cli(["m.yaml", "--out", "out"], cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"the lock file {Path('out') / '.small.lock'} is a symbolic link; it is not followed" in result.stderr
    assert_no_traceback(result.stderr)
    assert not target.exists() and (out / ".small.lock").is_symlink()


def test_ctrl_c_at_any_moment_prints_no_traceback(tmp_path):
    """Ctrl-C from the first moments on (while Python imports the compiler) ends with the one-line
    message or silently, never with a traceback."""
    write_project(tmp_path, SMALL_MANIFEST)
    # Python's own start (site, .pth files) is not ours: interrupting it is Python's business.
    # The slowest of three starts, doubled: a loaded machine's start varies (a SIGINT inside
    # Python's own start prints Python's traceback, not ours).
    startup = 0.0
    for _ in range(3):
        start = time.monotonic()
        subprocess.run([sys.executable, "-c", "pass"], env=env_with_repo(), check=True)
        startup = max(startup, time.monotonic() - start)
    for delay in (0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.45):
        delay += 2 * startup
        proc = subprocess.Popen([sys.executable, "-m", "mytriton.aot", "m.yaml", "--out", "out", "-j", "1"],
                                cwd=tmp_path, env=env_with_repo(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        if "Traceback" in err and "mytriton/aot/cli.py" not in err and err.rstrip().endswith("KeyboardInterrupt"):
            continue      # a loaded machine was still starting Python (or importing the package): not ours
        if err.startswith("Exception ignored in: <function _get_module_lock.<locals>.cb"):
            continue      # the signal landed in CPython's import-lock callback, which reports it itself
        assert_no_traceback(err)
        assert proc.returncode in (0, 130, -signal.SIGINT), (delay, proc.returncode, err)
        assert err in ("", "mytriton-build: interrupted; the previous output was left as it was\n"), (delay, err)


def test_cli_version_and_limits(tmp_path):
    result = run_cli(["--version"], cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == f"mytriton-build {mytriton.__version__}\n"
    write_project(tmp_path, SMALL_MANIFEST)
    result = run_cli(["m.yaml", "--out", "out", "--max-specializations", "1"], cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == ("mytriton-build: m.yaml:6: the manifest expands to more than 1 specializations (2 so "
                             "far, counting this entry): list fewer values, or raise the limit with "
                             "--max-specializations N\n")
    result = run_cli(["m.yaml", "--out", "out", "--max-specializations", "0"], cwd=tmp_path)
    assert result.returncode == 2 and "expected a positive number of specializations" in result.stderr


def test_cli_kernel_outside_the_manifest_folder_needs_allow_outside(tmp_path):
    write_project(tmp_path / "shared", SMALL_MANIFEST)
    project = tmp_path / "project"
    project.mkdir()
    (project / "m.yaml").write_text(SMALL_MANIFEST.replace("kernels/k.py", "../shared/kernels/k.py"))
    result = run_cli(["m.yaml", "--out", "out", "-j", "1"], cwd=project)
    assert result.returncode == 2
    assert result.stderr.startswith("mytriton-build: m.yaml:4: kernel file '../shared/kernels/k.py' is outside "
                                    "the manifest's folder"), result.stderr
    assert result.stderr.rstrip().endswith("move it there, or pass --allow-outside")
    result = run_cli(["m.yaml", "--out", "out", "-j", "1", "--allow-outside"], cwd=project)
    assert result.returncode == 0, result.stderr
    info = json.loads((project / "out" / "small" / "manifest.json").read_text())
    assert info["kernels"]["add_kernel"]["kernel"] == "../shared/kernels/k.py:add_kernel"

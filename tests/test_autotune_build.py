"""Build-time tuning on the CPU: the manifest's ``autotune:``, ``--tune-from`` reproducing a recorded
tuning byte for byte, the dispatch table in the loader, the output check, the report."""
from __future__ import annotations

import copy
import json
import subprocess
import sys

import numpy as np
import pytest

from mytriton.aot import ManifestError, UsageError, build_packages, load_manifest, tuning
from test_aot_support import assert_no_traceback, env_with_repo, run_cli, tree_bytes, write_project

TUNED = """\
package: tuned
targets: [sm_90]
kernels:
  - kernel: kernels/k.py:add_kernel
    signature: {x_ptr: "*fp32:16", y_ptr: "*fp32:16", out_ptr: "*fp32:16", n: i32}
    autotune:
      key: [n]
      configs:
        - {BLOCK: 64, num_warps: 1}
        - {BLOCK: 256, num_warps: 2, num_stages: 2}
        - {BLOCK: 1024}
      problems:
        - {n: 1000}
        - {n: 1000000, kind: big}
      inputs: kernels/k.py:not_a_kernel
"""


def record_for(times, notes=None, best=None) -> dict:
    """A tuning record of TUNED: *times* per problem, a list per config."""
    configs = [{"id": "BLOCK64_w1", "constexprs": {"BLOCK": 64}, "num_warps": 1, "num_stages": None},
               {"id": "BLOCK256_w2", "constexprs": {"BLOCK": 256}, "num_warps": 2, "num_stages": 2},
               {"id": "BLOCK1024_w4", "constexprs": {"BLOCK": 1024}, "num_warps": 4, "num_stages": None}]
    problems = [{"n": 1000}, {"n": 1000000, "kind": "big"}]
    items = []
    for i, (problem, row) in enumerate(zip(problems, times)):
        row_notes = (notes or {}).get(i, [None] * 3)
        valid = [(t, j) for j, (t, note) in enumerate(zip(row, row_notes)) if t is not None and note is None]
        items.append({"problem": problem, "times_ms": row, "notes": row_notes,
                      "best": min(valid)[1] if valid else None})
    return {"format": 1, "package": "tuned",
            "device": {"name": "NVIDIA H200", "compute_capability": "9.0", "driver": "13.0"},
            "method": {"warmup_ms": 25, "rep_ms": 100},
            "kernels": {"add_kernel": {"key": ["n"], "inputs": "kernels/k.py:not_a_kernel", "configs": configs,
                                       "problems": items}}}


RECORD = record_for([[0.004, 0.005, 0.009], [0.30, 0.21, 0.20]], notes={1: [None, None, "output differs"]})


def build(path, out, **options):
    lines, remarks = [], []
    build_packages([str(path)], out_dir=str(out), jobs=1, echo=lines.append, notify=remarks.append, **options)
    return lines, remarks


def loader(folder):
    """The generated package at *folder*, imported in a fresh process: ``python -c CODE`` there."""
    def run(code: str) -> str:
        result = subprocess.run([sys.executable, "-c", code], cwd=folder.parent, env=env_with_repo(),
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        return result.stdout
    return run


# -- the manifest ---------------------------------------------------------------------------------

def test_autotune_entry_becomes_specializations_with_its_key_and_problems(tmp_path):
    manifest = load_manifest(str(write_project(tmp_path, TUNED)))
    entry = manifest.kernels[0]
    assert [s.label for s in entry.specializations] == ["BLOCK=64 w1", "BLOCK=256 w2 s2", "BLOCK=1024 w4"]
    assert entry.autotune.key == ("n",)
    assert entry.autotune.problems == ({"n": 1000}, {"n": 1000000, "kind": "big"})
    assert entry.autotune.inputs_ref == "kernels/k.py:not_a_kernel"
    assert (entry.autotune.rtol, entry.autotune.atol) == (None, None)


def _variant(old: str, new: str) -> str:
    assert old in TUNED
    return TUNED.replace(old, new)


ERRORS = {
    "constexprs beside autotune": (
        _variant("    autotune:\n", "    constexprs: {BLOCK: [64]}  #<\n    autotune:\n"),
        "a kernel entry with 'autotune' lists its variants under autotune.configs (each may set num_warps and "
        "num_stages), not under 'constexprs'"),
    "num_warps beside autotune": (
        _variant("    autotune:\n", "    num_warps: [4]  #<\n    autotune:\n"), "not under 'num_warps'"),
    "unknown autotune key": (
        _variant("      key: [n]\n", "      key: [n]\n      repeats: 3  #<\n"),
        "unknown key 'repeats' in autotune (expected one of: key, configs, problems, inputs, tolerance)"),
    "missing problems": (
        _variant("      key: [n]\n", "      key: [n]  #<\n").replace(
            "      problems:\n        - {n: 1000}\n        - {n: 1000000, kind: big}\n", ""),
        "autotune is missing the required key 'problems'"),
    "key is a pointer": (_variant("      key: [n]\n", "      key: [n, x_ptr]  #<\n"),
                         "autotune key 'x_ptr' is a pointer (*fp32:16)"),
    "key is a constexpr": (_variant("      key: [n]\n", "      key: [BLOCK]  #<\n"),
                           "autotune key 'BLOCK' is a tl.constexpr parameter (the configs choose it)"),
    "key is unknown": (_variant("      key: [n]\n", "      key: [N]  #<\n"),
                       "autotune key 'N' is not a parameter of add_kernel; the key names run-time scalar "
                       "parameters (x_ptr, y_ptr, out_ptr, n)"),
    "key twice": (_variant("      key: [n]\n", "      key: [n, n]  #<\n"), "autotune key 'n' is listed twice"),
    "problem without the key": (_variant("        - {n: 1000}\n", "        - {m: 1000}  #<\n"),
                                "problem does not give the key parameter(s) 'n'"),
    "problem key not a number": (_variant("        - {n: 1000}\n", "        - {n: big}  #<\n"),
                                 "problem value of key 'n' must be a number, got str 'big'"),
    "problem key infinite": (_variant("        - {n: 1000}\n", "        - {n: .inf}  #<\n"),
                             "problem value of key 'n' must be finite (a launch takes the config of the nearest "
                             "problem), got float inf"),
    "problem key NaN": (_variant("        - {n: 1000}\n", "        - {n: .nan}  #<\n"),
                        "problem value of key 'n' must be finite"),
    "duplicate problem": (_variant("        - {n: 1000000, kind: big}\n", "        - {n: 1000, kind: big}  #<\n"),
                          "duplicate problem: the same key values as the problem at line 13"),
    "config without a constexpr": (_variant("        - {BLOCK: 1024}\n", "        - {num_warps: 8}  #<\n"),
                                   "config does not set tl.constexpr parameter(s) 'BLOCK' of add_kernel"),
    "duplicate config": (_variant("        - {BLOCK: 1024}\n", "        - {BLOCK: 64, num_warps: 1}  #<\n"),
                         "duplicate config BLOCK=64 w1 (first at line 9)"),
    "inputs file missing": (_variant("      inputs: kernels/k.py:not_a_kernel\n",
                                     "      inputs: kernels/nowhere.py:make  #<\n"),
                            "inputs file 'kernels/nowhere.py' not found"),
    "inputs not a reference": (_variant("      inputs: kernels/k.py:not_a_kernel\n", "      inputs: make  #<\n"),
                               "inputs 'make' must be 'path/to/file.py:function' or 'module:function'"),
    "bad tolerance": (_variant("      key: [n]\n", "      key: [n]\n      tolerance: {rtol: -1}  #<\n"),
                      "tolerance rtol must be a number >= 0, got int -1"),
    "unknown tolerance": (_variant("      key: [n]\n", "      key: [n]\n      tolerance: {rtl: 1}  #<\n"),
                          "unknown key 'rtl' in autotune.tolerance (expected rtol, atol)"),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_autotune_errors_name_file_and_line(tmp_path, name):
    text, fragment = ERRORS[name]
    path = write_project(tmp_path, text)
    with pytest.raises(ManifestError) as info:
        load_manifest(str(path))
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.rstrip().endswith("#<"))
    assert str(info.value).startswith(f"{path}:{line}: "), str(info.value)
    assert fragment in str(info.value)


# -- building without, with and from a tuning -----------------------------------------------------

def test_untuned_build_launches_the_first_config_and_says_so(tmp_path):
    path = write_project(tmp_path, TUNED)
    _, remarks = build(path, tmp_path / "out")
    assert remarks == ["note: tuned: add_kernel not tuned: the first config is launched (mytriton-build --tune "
                       "on a machine with a GPU, or --tune-from a recorded tuning.json)"]
    pkg = tmp_path / "out" / "tuned"
    assert not (pkg / "tuning.json").exists()
    info = json.loads((pkg / "manifest.json").read_text())["kernels"]["add_kernel"]["autotune"]
    assert info == {"key": ["n"], "problems": [{"n": 1000}, {"n": 1000000, "kind": "big"}],
                    "inputs": "kernels/k.py:not_a_kernel", "tuned": False, "choices": []}
    out = loader(pkg)("import tuned; f = tuned.add_kernel; print(f.best(n=5)['id'], f.best(n=10**7)['id'], "
                      "[s['num_stages'] for s in f.specializations])")
    assert out.split("\n")[0] == "BLOCK64_w1 BLOCK64_w1 [None, 2, None]"


def test_tune_from_dispatches_to_the_recorded_winners(tmp_path):
    path = write_project(tmp_path, TUNED)
    recorded = tmp_path / "recorded.json"
    recorded.write_text(json.dumps(RECORD))
    build(path, tmp_path / "out", tune_from=[str(recorded)])
    pkg = tmp_path / "out" / "tuned"
    assert json.loads((pkg / "tuning.json").read_text()) == RECORD
    # problem 0: BLOCK64 fastest; problem 1: BLOCK1024 fastest but its output differed: BLOCK256
    out = loader(pkg)("import tuned; f = tuned.add_kernel\n"
                      "print(*(f.best(n=n)['id'] for n in (1000, 10**6, 1, 31622, 31623, 10**9)))")
    assert out.split() == ["BLOCK64_w1", "BLOCK256_w2", "BLOCK64_w1", "BLOCK64_w1", "BLOCK256_w2", "BLOCK256_w2"]
    info = json.loads((pkg / "manifest.json").read_text())["kernels"]["add_kernel"]["autotune"]
    assert info["tuned"] is True and info["choices"] == [[[1000], 0], [[1000000], 1]]
    report = (pkg / "tuning.txt").read_text()
    assert report.splitlines()[2:8] == [
        "add_kernel (key: n)",
        "config            n=1000  n=1000000 kind=big",
        "BLOCK=64 w1      0.0040*             0.3000",
        "BLOCK=256 w2 s2  0.0050              0.2100*",
        "BLOCK=1024 w4    0.0090              0.2000!",
        "tuned dispatch vs the best single config (BLOCK=256 w2 s2): 1.118x the geometric-mean speed over "
        "these problems",
    ]
    assert "note: BLOCK=1024 w4 @ n=1000000 kind=big: output differs" in report


def test_tune_from_reproduces_a_tuned_build_byte_for_byte(tmp_path, monkeypatch):
    """A --tune build (its measurement replaced by a recording: there is no GPU here) and a build
    --tune-from the tuning.json it wrote are the same files; --tune prints the report table."""
    path = write_project(tmp_path, TUNED)
    monkeypatch.setattr(tuning, "measure", lambda manifest, artifacts, echo, *variants: copy.deepcopy(RECORD))
    lines, _ = build(path, tmp_path / "a", tune=True)
    assert any("add_kernel (key: n)" in line and "tuned dispatch vs the best single config" in line for line in lines)
    first = tree_bytes(tmp_path / "a" / "tuned")
    result = run_cli([str(path), "--out", str(tmp_path / "b"), "--no-cache", "-j", "1",
                      "--tune-from", str(tmp_path / "a" / "tuned" / "tuning.json")], tmp_path)
    assert result.returncode == 0, result.stderr
    assert tree_bytes(tmp_path / "b" / "tuned") == first
    assert "tuning.json" in first and "tuning.txt" in first


@pytest.mark.parametrize("change, message", [
    (lambda r: r["kernels"]["add_kernel"]["configs"].pop(), "the recorded configs are not the manifest's "
                                                            "(not recorded: BLOCK=1024 w4)"),
    (lambda r: r["kernels"]["add_kernel"]["problems"][0]["problem"].update(n=999),
     "the recorded problems are not the manifest's"),
    (lambda r: r["kernels"]["add_kernel"].update(key=["x"]), "it was tuned on the key ['x']"),
    (lambda r: r["kernels"].update(other=r["kernels"]["add_kernel"]),
     "it records kernel 'other', which the manifest does not tune"),
    (lambda r: r["kernels"].clear(), "it does not record kernel 'add_kernel'"),
])
def test_tune_from_a_stale_recording_is_refused(tmp_path, change, message):
    path = write_project(tmp_path, TUNED)
    stale = copy.deepcopy(RECORD)
    change(stale)
    recorded = tmp_path / "old.json"
    recorded.write_text(json.dumps(stale))
    with pytest.raises(UsageError) as info:
        build(path, tmp_path / "out", tune_from=[str(recorded)])
    assert str(info.value).startswith(f"--tune-from {recorded}: ")
    assert message in str(info.value) and "run mytriton-build --tune again" in str(info.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("content, message", [
    ("{", "not a tuning.json (Expecting property name"),
    ('{"format": 2, "kernels": {}}', "not a tuning.json of format 1"),
    ('{"format": 1, "package": "other", "kernels": {}}', "records package 'other', which none of the manifests builds"),
])
def test_tune_from_bad_files(tmp_path, content, message):
    path = write_project(tmp_path, TUNED)
    recorded = tmp_path / "bad.json"
    recorded.write_text(content)
    with pytest.raises(UsageError, match="^--tune-from .*bad.json: " + message.replace("(", r"\(")):
        build(path, tmp_path / "out", tune_from=[str(recorded)])
    with pytest.raises(UsageError, match="cannot read it"):
        build(path, tmp_path / "out", tune_from=[str(tmp_path / "none.json")])


def _problem(index: int, **fields):
    def change(r):
        r["kernels"]["add_kernel"]["problems"][index].update(fields)
    return change


def _set(*path_and_value):
    *path, value = path_and_value

    def change(r):
        target = r
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


P2 = "kernel 'add_kernel', problem 2 (n=1000000 kind=big): "
BAD_RECORDS = {
    "a time as a string": (_problem(1, times_ms=[0.30, "0.5", 0.20]),
                           P2 + "times_ms[1] must be a positive finite number of milliseconds or null, got '0.5'"),
    "too few times": (_problem(1, times_ms=[0.30, 0.21]),
                      P2 + "times_ms must list one time per config (3), got [0.3, 0.21]"),
    "a zero time": (_problem(1, times_ms=[0.30, 0.21, 0]),
                    P2 + "times_ms[2] must be a positive finite number of milliseconds or null, got 0"),
    "a negative time": (_problem(1, times_ms=[-1.0, 0.21, 0.2]),
                        P2 + "times_ms[0] must be a positive finite number of milliseconds or null, got -1.0"),
    "an infinite time": (_problem(1, times_ms=[float("inf"), 0.21, 0.2]),
                         P2 + "times_ms[0] must be a positive finite number of milliseconds or null, got inf"),
    "a boolean time": (_problem(1, times_ms=[True, 0.21, 0.2]),
                       P2 + "times_ms[0] must be a positive finite number of milliseconds or null, got True"),
    "times not a list": (_problem(1, times_ms={"a": 1}),
                         P2 + "times_ms must list one time per config (3), got {'a': 1}"),
    "a note not a string": (_problem(1, notes=[None, 3, None]), P2 + "notes[1] must be a string or null, got 3"),
    "too many notes": (_problem(1, notes=[None] * 4),
                       P2 + "notes must list one note per config (3), got [None, None, None, None]"),
    "best out of range": (_problem(1, best=3), P2 + "best must be the index of a config (0 to 2) or null, got 3"),
    "best a boolean": (_problem(1, best=True), P2 + "best must be the index of a config (0 to 2) or null, got True"),
    "best of a failed config": (_problem(1, times_ms=[0.3, None, 0.2], notes=[None, "failed to launch", None], best=1),
                                P2 + "best is config 1, which did not run (times_ms[1] is null)"),
    "best of an excluded config": (_problem(1, best=2),
                                   P2 + "best is config 2, which was excluded: output differs"),
    "no best": (lambda r: r["kernels"]["add_kernel"]["problems"][1].pop("best"),
                P2 + "best is missing (the index of a config, or null)"),
    "a problem not a mapping": (_set("kernels", "add_kernel", "problems", 1, [1, 2]),
                                "kernel 'add_kernel', problem 2: must be a mapping with 'problem', 'times_ms', "
                                "'notes' and 'best', got [1, 2]"),
    "device of the wrong type": (_set("device", ["H200"]),
                                 "device must be a mapping of the GPU's name, compute_capability and driver, "
                                 "got ['H200']"),
    "device name not a string": (_set("device", "name", 5), "device.name must be a string, got 5"),
    "no device driver": (lambda r: r["device"].pop("driver"), "device.driver must be a string, got None"),
    "method not a mapping": (_set("method", "fast"), "method must be a mapping, got 'fast'"),
    "a kernel not a mapping": (_set("kernels", "add_kernel", 7),
                               "kernel 'add_kernel': must be a mapping with 'key', 'inputs', 'configs' and "
                               "'problems', got 7"),
    "configs not a list": (_set("kernels", "add_kernel", "configs", "all"),
                           "kernel 'add_kernel': configs must be a list, got 'all'"),
    "a config without constexprs": (_set("kernels", "add_kernel", "configs", 0, {"id": "x", "num_warps": 1}),
                                    "kernel 'add_kernel', configs[0]: must be a mapping with 'id' (a string), "
                                    "'constexprs' (a mapping), 'num_warps' and 'num_stages', got {'id': 'x', "),
    "inputs not a string": (_set("kernels", "add_kernel", "inputs", None),
                            "kernel 'add_kernel': inputs must be a string, got None"),
    "the package not a string": (_set("package", ["tuned"]),
                                 "records package ['tuned'], which none of the manifests builds (tuned)"),
    "the format a boolean": (_set("format", True), "not a tuning.json of format 1"),
}


@pytest.mark.parametrize("name", list(BAD_RECORDS))
def test_tune_from_a_record_of_wrong_fields_is_refused_before_compiling(tmp_path, name):
    change, message = BAD_RECORDS[name]
    path = write_project(tmp_path, TUNED)
    bad = copy.deepcopy(RECORD)
    change(bad)
    recorded = tmp_path / "rec.json"
    recorded.write_text(json.dumps(bad))
    lines = []
    with pytest.raises(UsageError) as info:
        build_packages([str(path)], out_dir=str(tmp_path / "out"), jobs=1, echo=lines.append, tune_from=[str(recorded)])
    assert str(info.value).startswith(f"--tune-from {recorded}: {message}"), str(info.value)
    assert lines == [] and not (tmp_path / "out").exists()


@pytest.mark.parametrize("content, message", [
    ("[" * 100000 + "]" * 100000, "not a tuning.json (nested too deeply)"),
    ('{"format": 1, "package": {"a": 1}, "kernels": {}}', "records package {'a': 1}, which none of the manifests"),
], ids=["nested", "package a mapping"])
def test_tune_from_hostile_json(tmp_path, content, message):
    path = write_project(tmp_path, TUNED)
    recorded = tmp_path / "rec.json"
    recorded.write_text(content)
    result = run_cli([str(path), "--out", str(tmp_path / "out"), "--tune-from", str(recorded)], tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"mytriton-build: --tune-from {recorded}: {message}"), result.stderr
    assert_no_traceback(result.stderr)
    assert result.stdout == ""


def test_tune_from_compares_configs_and_problems_by_identity(tmp_path):
    """A recorded 1.0 is not the manifest's 1, a recorded true not its 1; a NaN is a NaN (JSON keeps no
    NaN's bits) and -0.0 is kept."""
    text = TUNED.replace("{BLOCK: 1024}", "{BLOCK: 1024, num_warps: 4}")
    path = write_project(tmp_path, text)
    for change, message in [
        (_set("kernels", "add_kernel", "configs", 0, "constexprs", "BLOCK", 64.0),
         "the recorded configs are not the manifest's (not recorded: BLOCK=64 w1)"),
        (_set("kernels", "add_kernel", "problems", 0, "problem", "n", 1000.0),
         "the recorded problems are not the manifest's"),
        (_set("kernels", "add_kernel", "configs", 0, "num_warps", True),
         "the recorded configs are not the manifest's (not recorded: BLOCK=64 w1)"),
    ]:
        bad = copy.deepcopy(RECORD)
        change(bad)
        recorded = tmp_path / "rec.json"
        recorded.write_text(json.dumps(bad))
        with pytest.raises(UsageError) as info:
            build(path, tmp_path / "out", tune_from=[str(recorded)])
        assert message in str(info.value) and "run mytriton-build --tune again" in str(info.value)
    nan = text.replace("{n: 1000}", "{n: 1000, scale: .nan}")
    recorded_nan = copy.deepcopy(RECORD)
    recorded_nan["kernels"]["add_kernel"]["problems"][0]["problem"]["scale"] = float("nan")
    (tmp_path / "nan.json").write_text(json.dumps(recorded_nan))
    manifest = load_manifest(str(write_project(tmp_path, nan)))
    assert tuning.load_recorded([str(tmp_path / "nan.json")], [manifest])["tuned"] is not None


def test_tune_needs_a_gpu_and_excludes_tune_from_and_shard(tmp_path, monkeypatch):
    from mytriton.runtime import driver

    def no_gpu():
        raise driver.CudaError("cuInit", None, "", "no CUDA driver")
    monkeypatch.setattr(driver, "_init", no_gpu)
    path = write_project(tmp_path, TUNED)
    with pytest.raises(UsageError, match=r"^--tune needs a GPU to time the configs on \(cuInit failed: no CUDA "
                                         r"driver\); on a machine without one, reuse a recorded tuning with "
                                         r"--tune-from FILE$"):
        build(path, tmp_path / "out", tune=True)
    assert not (tmp_path / "out" / "tuned").exists()
    with pytest.raises(UsageError, match="pass one of them"):
        build(path, tmp_path / "out", tune=True, tune_from=["x.json"])
    with pytest.raises(UsageError, match="--shard compiles into the shared cache"):
        build(path, tmp_path / "out", tune=True, shard=(1, 2), cache_dir=tmp_path / "cache")
    result = run_cli([str(path), "--out", str(tmp_path / "out"), "--tune", "--tune-from", "x.json"], tmp_path)
    assert result.returncode == 2 and "pass one of them" in result.stderr
    assert_no_traceback(result.stderr)


def test_tune_of_a_package_without_autotune_is_a_note(tmp_path):
    path = write_project(tmp_path, TUNED.replace("    autotune:\n", "    constexprs: {BLOCK: [64]}\n    x:\n"
                                                 ).split("    x:\n")[0])
    _, remarks = build(path, tmp_path / "out", tune=True)
    assert remarks == ["note: tuned: --tune: no kernel has 'autotune:', nothing to time"]


# -- the output check and the report --------------------------------------------------------------

def as_bytes(values, dtype):
    return np.asarray(values, dtype).view(np.uint8)


@pytest.mark.parametrize("dtype, ref, out, differs", [
    ("fp32", [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], None),
    ("fp32", [1000.0, 2.0, np.nan], [1000.0, 2.00001, np.nan], None),       # within atol * max|ref|
    ("fp32", [1.0, 2.0, 3.0], [1.0, 2.1, 3.0], "1 of 3 elements, e.g. element 1: 2.0999999046325684 where the "
                                               "reference has 2.0"),
    ("fp32", [1.0, np.nan], [1.0, 1.0], "1 of 2 elements"),
    ("fp32", [np.inf, 1.0], [np.inf, 1.0], None),
    ("fp16", [1.0, 100.0], [1.0, 100.5], None),
    ("fp16", [1.0, 100.0], [1.0, 103.0], "1 of 2 elements"),
    ("i32", [1, 2, 3], [1, 2, 4], "bytes differ (the values must be equal)"),
])
def test_output_check_tolerances(dtype, ref, out, differs):
    np_dtype = {"fp32": np.float32, "fp16": np.float16, "i32": np.int32}[dtype]
    got = tuning.compare_elements(dtype, as_bytes(ref, np_dtype), as_bytes(out, np_dtype))
    if differs is None:
        assert got is None
    else:
        assert got is not None and differs in got, got


def test_output_check_tolerance_from_the_manifest():
    ref, out = as_bytes([1.0, 2.0], np.float32), as_bytes([1.0, 2.1], np.float32)
    assert tuning.compare_elements("fp32", ref, out) is not None
    assert tuning.compare_elements("fp32", ref, out, rtol=0.1, atol=0.0) is None


def test_report_marks_failures_and_exclusions_and_the_gain():
    record = record_for([[0.004, None, 0.009], [0.30, 0.21, 0.20]],
                        notes={0: [None, "failed to launch: out of resources", None]})
    text = tuning.report_text(record)
    assert "BLOCK=256 w2 s2  failed              0.2100\n" in text
    assert "BLOCK=1024 w4    0.0090              0.2000*" in text
    assert "note: BLOCK=256 w2 s2 @ n=1000: failed to launch: out of resources" in text
    # (BLOCK=256 failed on a problem: not a single config to compare with)
    assert "tuned dispatch vs the best single config (BLOCK=64 w1): 1.225x" in text
    record = record_for([[0.004, 0.005, 0.009], [0.30, 0.21, 0.20]])
    gain = tuning._gain_over_single(record["kernels"]["add_kernel"])
    # singles: geometric means of (0.004,0.30), (0.005,0.21), (0.009,0.20); tuned: (0.004, 0.20)
    assert gain[1] == 1 and gain[0] == pytest.approx(((0.005 * 0.21) / (0.004 * 0.20)) ** 0.5)


def test_dispatch_table_leaves_out_problems_where_nothing_ran(tmp_path):
    entry = load_manifest(str(write_project(tmp_path, TUNED))).kernels[0]
    record = record_for([[None, None, None], [0.30, 0.21, 0.20]])
    assert tuning.dispatch_table(entry, record) == {"key": ["n"], "choices": [[[1000000], 2]]}
    assert tuning.dispatch_table(entry, None) == {"key": ["n"], "choices": []}


def test_configs_may_differ_in_num_stages_alone(tmp_path):
    text = TUNED.replace('''        - {BLOCK: 64, num_warps: 1}
        - {BLOCK: 256, num_warps: 2, num_stages: 2}
        - {BLOCK: 1024}''', '''        - {BLOCK: 64, num_stages: 2}
        - {BLOCK: 64, num_stages: 3}
        - {BLOCK: 64}''')
    path = write_project(tmp_path, text)
    entry = load_manifest(str(path)).kernels[0]
    assert [s.id for s in entry.specializations] == ["BLOCK64_w4_s2", "BLOCK64_w4_s3", "BLOCK64_w4"]
    build(path, tmp_path / "out")
    out = loader(tmp_path / "out" / "tuned")("import tuned; print([s['id'] for s in tuned.add_kernel.specializations])")
    assert out.strip() == "['BLOCK64_w4_s2', 'BLOCK64_w4_s3', 'BLOCK64_w4']"
    twice = text.replace("        - {BLOCK: 64}\n", "        - {BLOCK: 64, num_stages: 3}  #<\n")
    with pytest.raises(ManifestError, match=r"m.yaml:11: duplicate config BLOCK=64 w4 s3 \(first at line 10\)$"):
        load_manifest(str(write_project(tmp_path, twice)))


def test_tune_where_no_config_runs_is_an_error(tmp_path, monkeypatch):
    """(e.g. a package built only for a GPU other than this one): no package is written."""
    from mytriton.runtime import driver
    for name, value in (("_init", lambda: None), ("current_device", lambda: 0), ("device_name", lambda d: "GPU X"),
                        ("compute_capability", lambda d: (8, 0)), ("_cuda_driver_version", lambda: (13, 0))):
        monkeypatch.setattr(driver, name, value)

    class NothingRuns:
        def __init__(self, manifest, entry, artifacts, progress, *variants):
            pass

        def run(self):
            record = copy.deepcopy(RECORD["kernels"]["add_kernel"])
            for item in record["problems"]:
                item.update(best=None, times_ms=[None] * 3, notes=["failed to launch: no image for sm_80"] * 3)
            return record
    monkeypatch.setattr(tuning, "_Tuner", NothingRuns)
    path = write_project(tmp_path, TUNED)
    with pytest.raises(UsageError, match=r"add_kernel: no config ran correctly on GPU X \(the first reason: failed "
                                         r"to launch: no image for sm_80\); nothing could be chosen"):
        build(path, tmp_path / "out", tune=True)
    assert not (tmp_path / "out" / "tuned").exists()

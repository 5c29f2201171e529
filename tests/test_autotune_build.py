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
    monkeypatch.setattr(tuning, "measure", lambda manifest, artifacts, echo: copy.deepcopy(RECORD))
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
        def __init__(self, manifest, entry, artifacts, progress):
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

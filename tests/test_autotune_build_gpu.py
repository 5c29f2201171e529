"""Build-time tuning on the GPU: ``mytriton-build --tune`` times the configs, excludes one whose
output differs, records the winners, and the generated package launches the measured winner.

The kernel is made so that the winner is certain: a config spins for a while unless its
FAST_SMALL matches the size class of the problem, a WRONG config skips the spin (the fastest)
but adds 1 to the output (so the check must exclude it), and one config gets a grid it cannot
launch (so it must be skipped with its reason).
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from mytriton.aot import build_packages
from mytriton.runtime import driver as runtime
from test_aot_support import env_with_repo, tree_bytes, write_project

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not runtime.driver_available(), reason="needs an NVIDIA GPU and driver")]

KERNELS = '''\
import numpy as np

import mytriton as triton
import mytriton.language as tl
from mytriton.runtime.driver import DeviceArray


@triton.jit
def spin_kernel(x_ptr, y_ptr, n, spins, BLOCK: tl.constexpr, FAST_SMALL: tl.constexpr, WRONG: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    t = n * 1.0
    if WRONG:
        x = x + 0.5
    elif (n < 100000) != FAST_SMALL:
        for i in range(spins):
            t = t * 0.9999 + 1.0
    tl.store(y_ptr + offs, x * 2.0 + tl.where(t < 0.0, 1.0, 0.0), mask=mask)


def inputs(problem):
    n = problem["n"]
    x = DeviceArray.from_numpy(np.arange(n, dtype=np.float32) % 97)
    y = DeviceArray.from_numpy(np.full(n, -1.0, np.float32))
    # (a grid of zero programs for BLOCK=512: a config that cannot launch, to be skipped with its reason)
    return (lambda meta: (triton.cdiv(n, meta["BLOCK"]) if meta["BLOCK"] != 512 else 0,)), (x, y, n, 20000)
'''

MANIFEST = """\
package: spinpkg
targets: [sm_90]
kernels:
  - kernel: kernels/k.py:spin_kernel
    signature: {x_ptr: "*fp32:16", y_ptr: "*fp32:16", n: i32, spins: i32}
    autotune:
      key: [n]
      configs:
        - {BLOCK: 1024, FAST_SMALL: true, WRONG: false}
        - {BLOCK: 1024, FAST_SMALL: false, WRONG: false, num_warps: 8}
        - {BLOCK: 1024, FAST_SMALL: false, WRONG: true}
        - {BLOCK: 512, FAST_SMALL: true, WRONG: false}
      problems:
        - {n: 4096}
        - {n: 1048576}
      inputs: kernels/k.py:inputs
"""

LAUNCH = """
import json, sys
import numpy as np
sys.path.insert(0, {folder!r})
import spinpkg
from spinpkg import DeviceArray
fam, out = spinpkg.spin_kernel, {{}}
for n in (4096, 5000, 1048576, 700000, 333):
    x = DeviceArray.from_numpy(np.arange(n, dtype=np.float32) % 97)
    y = DeviceArray((n,), "float32")
    fam[lambda meta: (spinpkg.cdiv(n, meta["BLOCK"]),)](x, y, n, 10)
    ok = bool(np.array_equal(y.copy_to_host(), 2 * (np.arange(n, dtype=np.float32) % 97)))
    launched = [i for i, s in enumerate(fam._specs) if fam._tuned[(n,)][-1][0] is fam.kernel(s)]
    out[n] = [ok, launched, fam.best(n=n)["id"]]
print(json.dumps(out))
"""


def test_tuned_package_dispatches_to_the_measured_winner(tmp_path):
    path = write_project(tmp_path, MANIFEST, KERNELS)
    lines = []
    build_packages([str(path)], out_dir=str(tmp_path / "out"), jobs=2, echo=lines.append, notify=lines.append,
                   tune=True)
    progress = [line for line in lines if line.startswith("tune [")]
    assert len(progress) == 8 and progress[-1].startswith("tune [####################] 8/8 "), progress
    pkg = tmp_path / "out" / "spinpkg"
    record = json.loads((pkg / "tuning.json").read_text())
    assert record["device"]["compute_capability"] == "9.0" and record["device"]["name"]
    problems = record["kernels"]["spin_kernel"]["problems"]
    assert [item["best"] for item in problems] == [0, 1], problems
    for item in problems:
        assert all(t is not None and t > 0 for t in item["times_ms"][:3]) and item["times_ms"][3] is None
        assert item["notes"][3].startswith("failed to launch: "), item["notes"][3]
        assert item["notes"][:2] == [None, None]
        assert item["notes"][2].startswith("output differs from BLOCK=1024 FAST_SMALL=True WRONG=False w4's: "
                                           "'y_ptr': "), item["notes"][2]
    # the spinning config is measurably slower than the winner on each problem
    assert problems[0]["times_ms"][1] > 3 * problems[0]["times_ms"][0]
    assert problems[1]["times_ms"][0] > 3 * problems[1]["times_ms"][1]
    report = (pkg / "tuning.txt").read_text()
    assert "spin_kernel (key: n)" in report and "output differs" in report
    assert "BLOCK=512 FAST_SMALL=True WRONG=False w4 @ n=4096: failed to launch: " in report

    result = subprocess.run([sys.executable, "-c", textwrap.dedent(LAUNCH.format(folder=str(tmp_path / "out")))],
                            capture_output=True, text=True, timeout=300, env=env_with_repo())
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout.splitlines()[-1])
    assert got == {"4096": [True, [0], "BLOCK1024_FAST_SMALLTrue_WRONGFalse_w4"],
                   "5000": [True, [0], "BLOCK1024_FAST_SMALLTrue_WRONGFalse_w4"],
                   "1048576": [True, [1], "BLOCK1024_FAST_SMALLFalse_WRONGFalse_w8"],
                   "700000": [True, [1], "BLOCK1024_FAST_SMALLFalse_WRONGFalse_w8"],
                   "333": [True, [0], "BLOCK1024_FAST_SMALLTrue_WRONGFalse_w4"]}

    # the recording rebuilds the same package on another machine (here: another folder)
    build_packages([str(path)], out_dir=str(tmp_path / "again"), jobs=2, echo=lambda line: None,
                   notify=lambda line: None, tune_from=[str(pkg / "tuning.json")])
    assert tree_bytes(tmp_path / "again" / "spinpkg") == tree_bytes(pkg)

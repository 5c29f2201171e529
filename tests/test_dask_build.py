"""mytriton-build --executor dask://HOST:PORT: the compiles run on a Dask distributed LocalCluster of
worker processes and the package is byte-identical to a local -j 1 build; an unreachable scheduler
and a bad executor are usage errors."""
from __future__ import annotations

import os

import pytest

from test_aot_support import REPO, assert_no_traceback, run_cli, tree_bytes, write_project

distributed = pytest.importorskip("distributed")

MANIFEST = """\
package: pkg
targets: [sm_80, sm_90]
kernels:
  - kernel: kernels/k.py:add_kernel
    signature: {x_ptr: "*fp32:16", y_ptr: "*fp32:16", out_ptr: "*fp32:16", n: i32}
    constexprs: {BLOCK: [64, 128, 256, 512]}
"""


@pytest.fixture
def cluster(monkeypatch):
    # the workers import mytriton from this checkout
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1") as c:
        yield c.scheduler_address


def test_a_dask_build_equals_the_local_build(tmp_path, cluster):
    write_project(tmp_path, MANIFEST)
    address = cluster.removeprefix("tcp://")
    remote = run_cli(["m.yaml", "--out", "remote", "--no-cache", "--executor", f"dask://{address}"], cwd=tmp_path)
    assert remote.returncode == 0, remote.stderr
    assert "8 compiled, 0 cached" in remote.stdout
    local = run_cli(["m.yaml", "--out", "local", "--no-cache", "-j", "1"], cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    assert tree_bytes(tmp_path / "remote" / "pkg") == tree_bytes(tmp_path / "local" / "pkg")


def test_executor_errors_are_usage_errors(tmp_path):
    write_project(tmp_path, MANIFEST)
    for executor, message in (("dask://127.0.0.1:9", "cannot reach the Dask scheduler at tcp://127.0.0.1:9"),
                              ("spark://x", "expected 'local' or 'dask://HOST:PORT', got 'spark://x'")):
        result = run_cli(["m.yaml", "--no-cache", "--executor", executor], cwd=tmp_path, timeout=120)
        assert result.returncode == 2 and message in result.stderr, result.stderr
        assert_no_traceback(result.stderr)

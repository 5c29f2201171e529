"""mytriton-build --executor dask://HOST:PORT: the compiles run on a Dask distributed LocalCluster of
worker processes and the package is byte-identical to a local -j 1 build; an unreachable scheduler
and a bad executor are usage errors."""
from __future__ import annotations

import os
import subprocess
import sys

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
    assert "16 compiled, 0 cached" in remote.stdout       # (8 and their specialized variants)
    local = run_cli(["m.yaml", "--out", "local", "--no-cache", "-j", "1"], cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    assert tree_bytes(tmp_path / "remote" / "pkg") == tree_bytes(tmp_path / "local" / "pkg")


def test_executor_errors_are_usage_errors(tmp_path):
    write_project(tmp_path, MANIFEST)
    for executor, message in (("dask://127.0.0.1:9", "cannot reach the Dask scheduler at tcp://127.0.0.1:9"),
                              ("spark://x", "expected 'local' or 'dask://HOST:PORT' (a host name, an IPv4 address or "
                                            "[an IPv6 address], and a port from 1 to 65535), got 'spark://x'")):
        result = run_cli(["m.yaml", "--no-cache", "--executor", executor], cwd=tmp_path, timeout=120)
        assert result.returncode == 2 and message in result.stderr, result.stderr
        assert_no_traceback(result.stderr)


def test_workers_of_another_compiler_are_refused(tmp_path, monkeypatch):
    """Workers running a mytriton whose kernel template differs by one line: every compile is
    refused, naming both compilers, and nothing of theirs reaches the package or the cache."""
    import shutil
    foreign = tmp_path / "foreign"
    shutil.copytree(REPO / "mytriton", foreign / "mytriton", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "templates", foreign / "templates")
    template = foreign / "templates" / "kernel.cu.j2"
    template.write_text(template.read_text() + "// one more line\n")
    # (a worker process of its own: LocalCluster's workers get this process's sys.path)
    with distributed.LocalCluster(n_workers=0, processes=True, dashboard_address=None, host="127.0.0.1") as c, \
            distributed.Client(c.scheduler_address) as client:
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", c.scheduler_address,
                                   "--nthreads", "1", "--no-nanny", "--no-dashboard"], cwd=tmp_path,
                                  env={**os.environ, "PYTHONPATH": str(foreign)},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client.wait_for_workers(1, timeout=120)
            assert client.run(lambda: __import__("mytriton").__file__) == \
                {a: str(foreign / "mytriton" / "__init__.py") for a in client.scheduler_info()["workers"]}
            write_project(tmp_path, MANIFEST)
            result = run_cli(["m.yaml", "--out", "out", "--cache", str(tmp_path / "cache"),
                              "--executor", f"dask://{c.scheduler_address.removeprefix('tcp://')}"], cwd=tmp_path)
        finally:
            worker.terminate()
            worker.wait(timeout=60)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "the compile worker runs another compiler than this build, so its result is refused" in result.stderr
    from mytriton.aot import toolchain
    ours = toolchain.compiler_hash(REPO / "templates", REPO / "mytriton")[:12]
    theirs = toolchain.compiler_hash(foreign / "templates", foreign / "mytriton")[:12]
    assert f"the worker has mytriton 0.1.0 (compiler {theirs})" in result.stderr
    assert f"this build has mytriton 0.1.0 (compiler {ours})" in result.stderr
    assert not (tmp_path / "out" / "pkg").exists()
    assert not list((tmp_path / "cache").rglob("??/*.json"))
    assert_no_traceback(result.stderr)

"""A build never ships stale or foreign code: what a kernel reads is keyed whole, workers compile
exactly what was keyed, cache entries answer only their own key and only as regular files, a
worker of another compiler is refused, and the shared cache is written as the umask says. (CPU
only: NVRTC compiles without a GPU.)"""
from __future__ import annotations

import dataclasses
import http.server
import os
import stat
import threading
import time

import pytest

from mytriton.aot import build_packages, toolchain
from mytriton.aot.cache import PendingCompiles, SharedCache, read_entry
from mytriton.aot.errors import UsageError
from mytriton.aot.jobs import Artifacts, CompileJob, Failure, checked, compile_job, dask_address, run_jobs
from test_aot_support import run_cli, write_project

KERNEL = """\
import mytriton
import mytriton.language as tl

CFG = (tl.float16, 2.0)


@mytriton.jit
def scale(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, (tl.load(x_ptr + offs).to(CFG[0]) * CFG[1]).to(tl.float32))
"""
MANIFEST = """\
package: trust
targets: [sm_90]
kernels:
  - kernel: kernels/k.py:scale
    signature: {x_ptr: "*fp32:16", out_ptr: "*fp32:16"}
    constexprs: {BLOCK: [64, 256]}
"""


def _build(tmp_path, **options):
    lines = []
    build_packages([str(tmp_path / "m.yaml")], out_dir=str(tmp_path / "out"), jobs=1, echo=lines.append,
                   notify=lines.append, cache_dir=tmp_path / "cache", **options)
    return lines


def _cu(tmp_path, spec="BLOCK64_w4") -> str:
    return (tmp_path / "out" / "trust" / "kernels" / "scale" / f"{spec}.cu").read_text()


def test_an_edited_global_container_rebuilds(tmp_path):
    write_project(tmp_path, MANIFEST, KERNEL)
    _build(tmp_path)
    assert "__half" in _cu(tmp_path) and "2.0f" in _cu(tmp_path)
    (tmp_path / "kernels" / "k.py").write_text(KERNEL.replace("(tl.float16, 2.0)", "(tl.bfloat16, 3.0)"))
    lines = _build(tmp_path)
    assert any("2 compiled, 0 cached" in line for line in lines), lines
    assert "__nv_bfloat16" in _cu(tmp_path) and "3.0f" in _cu(tmp_path)


def test_jit_options_are_keyed(tmp_path):
    # (the options given apart from the function's source: its text alone does not change)
    kernel = KERNEL.replace("@mytriton.jit\ndef scale(", "def _scale(") + "\n\nscale = mytriton.jit(_scale)\n"
    write_project(tmp_path, MANIFEST.replace("k.py:scale", "k.py:scale"), kernel)
    _build(tmp_path)
    (tmp_path / "kernels" / "k.py").write_text(kernel.replace("mytriton.jit(_scale)", "mytriton.jit(_scale, debug=True)"))
    lines = _build(tmp_path)
    assert any("2 compiled, 0 cached" in line for line in lines), lines


# -- workers compile what was keyed ----------------------------------------------------------------

def _jobs(tmp_path, manifest=MANIFEST):
    from mytriton.aot.build import _plans, _toolchain, _units
    from mytriton.aot.manifest import load_manifest
    plan = _plans([load_manifest(str(tmp_path / "m.yaml"))], tmp_path / "out", None)[0]
    return [u.job for u in _units(plan, _toolchain(), print)]


def test_workers_compile_the_text_the_build_imported(tmp_path):
    write_project(tmp_path, MANIFEST, KERNEL)
    jobs = _jobs(tmp_path)
    # the file changes after the build imported (and keyed) it, before the workers start
    (tmp_path / "kernels" / "k.py").write_text(KERNEL.replace("2.0)", "7.0)"))
    results = run_jobs(jobs, 2, lambda i, r: None)
    assert all(isinstance(r, Artifacts) for r in results), results
    assert all("2.0f" in r.cu and "7.0f" not in r.cu for r in results)


def test_a_helper_changed_under_the_workers_is_refused(tmp_path):
    write_project(tmp_path, MANIFEST, KERNEL.replace("CFG = (tl.float16, 2.0)", "from kconf import CFG"))
    (tmp_path / "kernels" / "kconf.py").write_text("import mytriton.language as tl\nCFG = (tl.float16, 2.0)\n")
    jobs = _jobs(tmp_path)
    (tmp_path / "kernels" / "kconf.py").write_text("import mytriton.language as tl\nCFG = (tl.float16, 5.0)\n")
    results = run_jobs(jobs, 2, lambda i, r: None)
    assert all(isinstance(r, Failure) for r in results), results
    assert "'kernels/k.py' (or what it reads) changed while the build ran" in results[0].message


def test_a_worker_of_another_compiler_is_refused(tmp_path):
    write_project(tmp_path, MANIFEST, KERNEL)
    job = _jobs(tmp_path)[0]
    other = dataclasses.replace(job.toolchain, compiler_hash="0" * 64)
    refused = compile_job(dataclasses.replace(job, toolchain=other))
    assert isinstance(refused, Failure)
    assert "the compile worker runs another compiler than this build" in refused.message
    assert f"compiler {job.toolchain.compiler_hash[:12]}" in refused.message and "compiler 000000000000" in refused.message
    # a worker that does not check (an older mytriton) is refused on return
    done = compile_job(job)
    assert isinstance(done, Artifacts) and done.toolchain == job.toolchain
    for result in (dataclasses.replace(done, toolchain=None), dataclasses.replace(done, toolchain=other), "x"):
        assert isinstance(checked(job, result), Failure)


# -- cache entries ---------------------------------------------------------------------------------

ARTIFACTS = Artifacts(cubin=b"\x7fELF", ptx="// ptx", cu="// cu", shared=0, symbol="k_scale")


def test_an_entry_answers_only_its_own_key(tmp_path):
    cache = SharedCache(tmp_path)
    a, b = "a" * 64, "b" * 64
    cache.put(a, ARTIFACTS)
    path_a, path_b = cache._path(a), cache._path(b)
    path_b.parent.mkdir(parents=True, exist_ok=True)
    path_b.write_bytes(path_a.read_bytes())                     # a valid entry, under another key
    assert cache.lookup(a, True) is not None and cache.lookup(b, True) is None
    path_b.unlink()
    path_b.symlink_to(path_a)
    assert cache.lookup(b, True) is None
    pending = PendingCompiles(tmp_path / "pkg")
    pending.put(a, ARTIFACTS)
    os.replace(pending.folder / f"{a}.json", pending.folder / f"{b}.json")
    assert pending.lookup(b, True) is None


def test_entries_are_regular_files_of_bounded_size(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    zero = tmp_path / "zero"
    zero.symlink_to("/dev/zero")
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    start = time.perf_counter()
    assert read_entry(fifo) is None and read_entry(zero) is None and read_entry(tmp_path) is None
    assert read_entry(big, limit=100) is None and read_entry(big, limit=101) == b"x" * 101
    assert time.perf_counter() - start < 5
    cache = SharedCache(tmp_path / "c")
    key = "c" * 64
    cache._path(key).parent.mkdir(parents=True)
    os.mkfifo(cache._path(key))
    assert cache.lookup(key, True) is None


def test_an_entry_with_a_field_of_the_wrong_type_is_a_miss(tmp_path):
    cache = SharedCache(tmp_path)
    key = "d" * 64
    for bad in (dataclasses.replace(ARTIFACTS, shared=-1), dataclasses.replace(ARTIFACTS, symbol="k(); system"),
                dataclasses.replace(ARTIFACTS, made_tensor_maps=({"name": "d0", "dtype": "fp16", "base": ["const", "1); x("],
                                                                  "shape": [["const", 1]], "strides": []},))):
        cache.put(key, bad)
        assert cache.lookup(key, True) is None, bad


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_the_shared_cache_is_written_as_the_umask_says(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        SharedCache(tmp_path).put("e" * 64, ARTIFACTS)
    finally:
        os.umask(old)
    entry = SharedCache(tmp_path)._path("e" * 64)
    assert stat.S_IMODE(entry.stat().st_mode) == mode


def test_a_kernel_whose_key_cannot_be_computed_is_compiled_every_time(tmp_path):
    kernel = KERNEL.replace("CFG = (tl.float16, 2.0)", "CFG = (tl.float16, 2.0)\nODD = tl.tensor(None)")
    kernel = kernel.replace("    offs = tl.arange(0, BLOCK)\n", "    offs = tl.arange(0, BLOCK)\n    if False:\n        x = ODD\n")
    write_project(tmp_path, MANIFEST, kernel)
    for _ in range(2):
        lines = _build(tmp_path)
        assert any("2 compiled, 0 cached" in line for line in lines), lines
    assert any("trust: scale is compiled by every build and cached nowhere: its cache key cannot cover what it "
               "reads (scale: 'ODD' holds a mytriton.language.core.tensor, which a cache key cannot describe)"
               in line for line in lines), lines
    assert not list((tmp_path / "cache").rglob("*.json")) or \
        not list((tmp_path / "cache" / "compile").glob("??/*.json"))


# -- executors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("executor", ["dask://:::", "dask://localhost:abc", "dask://host:0", "dask://host:65536",
                                      "dask://a_b:1", "dask://x:\u0661\u0662", "dask://[zz]:1", "dask://"])
def test_bad_executor_addresses_are_usage_errors(executor):
    with pytest.raises(UsageError, match=r"--executor: expected 'local' or 'dask://HOST:PORT' \(a host name"):
        dask_address(executor)
    assert dask_address("dask://[::1]:8786") == ("::1", 8786)
    assert dask_address("dask://sched.example.org:8786") == ("sched.example.org", 8786)


def test_an_address_that_is_no_dask_scheduler_is_refused_at_once(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    import mytriton.aot.jobs as jobs
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(jobs, "DASK_CONNECT_S", 1)
    write_project(tmp_path, MANIFEST, KERNEL)
    start = time.perf_counter()
    try:
        with pytest.raises(UsageError, match=r"cannot reach the Dask scheduler at tcp://127.0.0.1:\d+: something "
                                             r"listens there but said nothing in 1 s \(a web server"):
            run_jobs(_jobs(tmp_path), 1, lambda i, r: None, f"dask://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
    assert time.perf_counter() - start < 30


def test_a_fully_cached_build_does_not_connect(tmp_path):
    write_project(tmp_path, MANIFEST, KERNEL)
    _build(tmp_path)
    result = run_cli(["m.yaml", "--out", "out", "--cache", str(tmp_path / "cache"), "--executor", "dask://127.0.0.1:9"],
                     cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "2 specializations up to date" in result.stdout


def test_toolchain_names_what_decides_the_bytes():
    from mytriton.aot.package import templates_dir
    here = toolchain.current(templates_dir())
    assert here.nvrtc_version.count(".") == 1 and len(here.compiler_hash) == 64
    assert here.describe().startswith(f"mytriton {here.mytriton_version} (compiler {here.compiler_hash[:12]}), NVRTC")

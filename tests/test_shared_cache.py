"""The shared compile cache (``mytriton-build --cache DIR``): a second build elsewhere reuses the
first's compiles and writes byte-identical packages, damaged entries are misses and get replaced,
concurrent writers and readers never see a partial entry, ``--cache-info`` reports size and hit
rate, ``--no-cache`` writes nothing."""
from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

from mytriton.aot.cache import SharedCache
from mytriton.aot.jobs import Artifacts
from test_aot_support import assert_no_traceback, run_cli, tree_bytes, write_project

MANIFEST = """\
package: pkg
targets: [sm_90]
kernels:
  - kernel: kernels/k.py:add_kernel
    signature: {x_ptr: "*fp32:16", y_ptr: "*fp32:16", out_ptr: "*fp32:16", n: i32}
    constexprs: {BLOCK: [64, 128, 256]}
"""


def test_a_second_build_elsewhere_reuses_the_compiles(tmp_path):
    write_project(tmp_path, MANIFEST)
    cache = tmp_path / "shared"
    first = run_cli(["m.yaml", "--out", "a", "--cache", str(cache), "-j", "1"], cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "6 compiled, 0 cached" in first.stdout            # (and the specialized variants)
    second = run_cli(["m.yaml", "--out", "b", "--cache", str(cache), "-j", "1"], cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert "0 compiled, 6 cached" in second.stdout and "analyzed" not in second.stdout
    assert tree_bytes(tmp_path / "a" / "pkg") == tree_bytes(tmp_path / "b" / "pkg")
    info = run_cli(["--cache-info", "--cache", str(cache)], cwd=tmp_path)
    assert info.returncode == 0 and f"{cache / 'compile'}: 6 compiles" in info.stdout
    assert "6 hits, 6 misses (50.0 %)" in info.stdout, info.stdout


def test_a_damaged_entry_is_a_miss_and_is_replaced(tmp_path):
    write_project(tmp_path, MANIFEST)
    cache = tmp_path / "shared"
    assert run_cli(["m.yaml", "--out", "a", "--cache", str(cache), "-j", "1"], cwd=tmp_path).returncode == 0
    entries = sorted((cache / "compile").glob("??/*.json"))
    assert len(entries) == 6
    damaged = entries[0]
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0x01
    damaged.write_bytes(bytes(data))
    again = run_cli(["m.yaml", "--out", "b", "--cache", str(cache), "-j", "1"], cwd=tmp_path)
    assert again.returncode == 0 and "1 compiled, 5 cached" in again.stdout, again.stdout
    assert SharedCache(cache).lookup(damaged.stem, emit_ptx=True) is not None      # (written again, whole)
    assert tree_bytes(tmp_path / "a" / "pkg") == tree_bytes(tmp_path / "b" / "pkg")


def test_no_cache_writes_nothing_and_the_default_is_the_environment_s(tmp_path):
    write_project(tmp_path, MANIFEST)
    home = tmp_path / "env-cache"
    result = run_cli(["m.yaml", "--no-cache", "-j", "1"], cwd=tmp_path, MYTRITON_CACHE_DIR=str(home))
    assert result.returncode == 0 and not home.exists()
    result = run_cli(["m.yaml", "--out", "c", "-j", "1"], cwd=tmp_path, MYTRITON_CACHE_DIR=str(home))
    assert result.returncode == 0 and len(list((home / "compile").glob("??/*.json"))) == 6
    info = run_cli(["--cache-info"], cwd=tmp_path, MYTRITON_CACHE_DIR=str(home))
    assert "6 compiles" in info.stdout and "0 hits, 6 misses (0.0 %)" in info.stdout
    refused = run_cli(["--cache-info", "--no-cache"], cwd=tmp_path)
    assert refused.returncode == 2 and "no cache to describe" in refused.stderr
    assert_no_traceback(refused.stderr)


def _hammer(args):
    """One process: write each key with its own artifacts, read every key, many times."""
    root, me, keys, rounds = args
    cache = SharedCache(Path(root))
    bad = 0
    for r in range(rounds):
        for key in keys:
            cache.put(key, Artifacts(cubin=(key * 50).encode(), ptx=f"ptx {key}", cu=f"cu {key} {me}", shared=r,
                                     symbol=f"k_{key}"))
            found = cache.lookup(key, emit_ptx=True)
            if found is None or found.cubin != (key * 50).encode() or found.ptx != f"ptx {key}":
                bad += 1
    return bad


def test_concurrent_writers_and_readers(tmp_path):
    keys = [f"{i:02x}" * 32 for i in range(6)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        bad = pool.map(_hammer, [(str(tmp_path), me, keys, 25) for me in range(4)])
    assert bad == [0, 0, 0, 0]
    leftovers = [p for p in (tmp_path / "compile").rglob("*") if p.is_file() and not p.name.endswith(".json")]
    assert leftovers == []                       # (no temporary files left behind)
    assert {p.stem for p in (tmp_path / "compile").glob("??/*.json")} == set(keys)
    assert os.path.isdir(tmp_path / "compile")


def test_shards_fill_the_cache_and_an_unsharded_build_assembles(tmp_path):
    write_project(tmp_path, MANIFEST.replace("[64, 128, 256]", "[16, 32, 64, 128, 256, 512]"))
    cache = tmp_path / "shared"
    counts = []
    for i in (1, 2, 3):
        shard = run_cli(["m.yaml", "--out", "s", "--cache", str(cache), "--shard", f"{i}/3", "-j", "1"], cwd=tmp_path)
        assert shard.returncode == 0, shard.stderr
        assert f"pkg: shard {i}/3: " in shard.stdout and "the package is written by a build without --shard" in shard.stdout
        counts.append(int(shard.stdout.split(f"shard {i}/3: ")[1].split(" of 6")[0]))
        assert not (tmp_path / "s" / "pkg").exists()
    assert sum(counts) == 6                     # (each compile in exactly one share, with its specialized variant)
    final = run_cli(["m.yaml", "--out", "s", "--cache", str(cache), "-j", "1"], cwd=tmp_path)
    assert final.returncode == 0 and "0 compiled, 12 cached" in final.stdout, final.stdout
    local = run_cli(["m.yaml", "--out", "local", "--no-cache", "-j", "1"], cwd=tmp_path)
    assert local.returncode == 0
    assert tree_bytes(tmp_path / "s" / "pkg") == tree_bytes(tmp_path / "local" / "pkg")
    for bad, message in (("0/3", "1 <= I <= N"), ("4/3", "1 <= I <= N"), ("x", "expected I/N")):
        refused = run_cli(["m.yaml", "--shard", bad], cwd=tmp_path)
        assert refused.returncode == 2 and message in refused.stderr
    refused = run_cli(["m.yaml", "--shard", "1/2", "--no-cache"], cwd=tmp_path)
    assert refused.returncode == 2 and "--shard needs the shared compile cache" in refused.stderr


def test_a_cache_that_cannot_be_written_is_a_note_not_a_failure(tmp_path):
    write_project(tmp_path, MANIFEST)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache's folder would be")
    result = run_cli(["m.yaml", "--cache", str(blocked), "-j", "1"], cwd=tmp_path)
    assert result.returncode == 0 and "6 compiled, 0 cached" in result.stdout
    assert "note: the shared compile cache could not be written (" in result.stderr
    assert "this build's compiles are not in it" in result.stderr
    assert_no_traceback(result.stderr)

"""Every test gets a shared compile cache of its own (mytriton-build's default, ``--cache``, and the
JIT autotuner's): builds in one test never reuse another's compiles, and nothing reaches ~/.cache."""
import pytest


@pytest.fixture(autouse=True)
def _own_cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("MYTRITON_CACHE_DIR", str(tmp_path_factory.mktemp("mytriton-cache")))

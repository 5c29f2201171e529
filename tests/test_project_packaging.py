"""mytriton's own packaging: pyproject.toml lists the packages by name, so a new subpackage missing
there would be absent from a wheel (an editable install would not notice)."""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_of_the_source_tree_is_in_pyproject():
    tomllib = pytest.importorskip("tomllib")
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.relative_to(ROOT).parts[:-1]) for p in (ROOT / "mytriton").rglob("__init__.py")}
    assert found <= listed, sorted(found - listed)

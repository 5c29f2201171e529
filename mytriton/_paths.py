"""Where the Jinja templates live: ``templates/`` in a source checkout, ``mytriton/templates`` in a wheel."""
from __future__ import annotations

from pathlib import Path


def templates_dir() -> Path:
    here = Path(__file__).resolve().parent
    for cand in (here.parent / "templates", here / "templates"):
        if (cand / "kernel.cu.j2").is_file():
            return cand
    import importlib.resources
    return Path(str(importlib.resources.files("mytriton.templates")))

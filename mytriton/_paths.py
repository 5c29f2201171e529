"""Where mytriton's files live: the Jinja templates (``templates/`` in a source checkout,
``mytriton/templates`` in a wheel) and the user's cache folder."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def templates_dir() -> Path:
    here = Path(__file__).resolve().parent
    for cand in (here.parent / "templates", here / "templates"):
        if (cand / "kernel.cu.j2").is_file():
            return cand
    import importlib.resources
    return Path(str(importlib.resources.files("mytriton.templates")))


def default_cache_dir() -> Path:
    """``$MYTRITON_CACHE_DIR``, else ``~/.cache/mytriton`` (where there is no home folder, the
    temporary folder's ``mytriton-cache``): the build's compile cache, the JIT's autotuning
    choices and its native launch library live under it."""
    if os.environ.get("MYTRITON_CACHE_DIR"):
        return Path(os.environ["MYTRITON_CACHE_DIR"])
    try:
        return Path.home() / ".cache" / "mytriton"
    except RuntimeError:
        return Path(tempfile.gettempdir()) / "mytriton-cache"

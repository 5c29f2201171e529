"""Ahead-of-time build tool: a YAML manifest → an installable loader package.

``manifest`` parses and validates, ``build`` orchestrates, ``jobs`` compiles (in worker
processes), ``cache`` decides what must be rebuilt, ``package`` writes the generated package and
``output`` swaps it into place under a lock; ``cli`` is ``mytriton-build``.
"""
from .errors import AotError, CompileFailed, ManifestError, UsageError

# The rest is imported on first use (PEP 562), so that `mytriton-build` can take Ctrl-C cleanly
# from its first instructions on (see cli.main).
_LAZY = {"build_packages": "build", "PackageReport": "build", "load_manifest": "manifest", "Manifest": "manifest",
         "KernelEntry": "manifest", "Specialization": "manifest"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["build_packages", "load_manifest", "Manifest", "KernelEntry", "Specialization", "PackageReport",
           "AotError", "CompileFailed", "ManifestError", "UsageError"]

"""Ahead-of-time build tool: a YAML manifest → an installable loader package (DESIGN.md §3–4).

``manifest`` parses and validates, ``build`` orchestrates, ``jobs`` compiles (in worker
processes), ``cache`` decides what must be rebuilt, ``package`` writes the generated package and
``output`` swaps it into place under a lock; ``cli`` is ``mytriton-build``.
"""
from .build import PackageReport, build_packages
from .errors import AotError, CompileFailed, ManifestError, UsageError
from .manifest import KernelEntry, Manifest, Specialization, load_manifest

__all__ = ["build_packages", "load_manifest", "Manifest", "KernelEntry", "Specialization", "PackageReport",
           "AotError", "CompileFailed", "ManifestError", "UsageError"]

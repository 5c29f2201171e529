"""Compiling the native launch path (``launcher.c``) for the machine that builds.

``mytriton-build`` ships the result in every package as ``_mtlaunch.abi3.so``; the runtime loads
it at the first launch and falls back to its pure-Python launchers where it is missing or does
not load (another platform, a free-threaded Python, ``MYTRITON_NATIVE_LAUNCH=0``).  It is built
against CPython's stable ABI (3.10+), so one file serves every CPython version of the build
machine's platform.  Needs a C compiler (``$CC``, else ``cc``/``gcc``/``clang``) and the Python
headers; without them the package is built without it, and says so.  The JIT uses the same
library, compiled once per machine into the user's cache (``cached_library``).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .._paths import default_cache_dir

SOURCE = Path(__file__).resolve().parent / "launcher.c"
FILENAME = "_mtlaunch.abi3.so"
# -ffile-prefix-map keeps the build folder out of the binary: the output depends on the inputs only.
_FLAGS = ["-O2", "-std=c11", "-Wall", "-shared", "-fPIC"]


@dataclass(frozen=True)
class NativeBuild:
    """The compiled library (None when it could not be built), why not, and what made it."""

    data: bytes | None
    key: str            # hash of everything the library depends on
    compiler: str       # the compiler's first --version line
    platform: str       # sysconfig.get_platform() of the build machine
    reason: str = ""    # why data is None


def _compiler() -> list[str] | None:
    if os.environ.get("CC"):
        return os.environ["CC"].split()
    for name in ("cc", "gcc", "clang"):
        if (found := shutil.which(name)):
            return [found]
    return None


def _version(cc: list[str]) -> str:
    try:
        out = subprocess.run([*cc, "--version"], capture_output=True, text=True, timeout=60)
        return (out.stdout or out.stderr).splitlines()[0].strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError, IndexError):
        return ""


def build_key() -> tuple[str, list[str] | None, str, str]:
    """(key, compiler command, compiler version, Python include folder): the key changes with the
    source, the compiler, the flags, the platform and the Python headers."""
    cc = _compiler()
    version = _version(cc) if cc else ""
    include = sysconfig.get_paths().get("include", "")
    header = Path(include) / "Python.h"
    digest = hashlib.sha256()
    for part in (SOURCE.read_bytes(), " ".join(cc or []).encode(), version.encode(), " ".join(_FLAGS).encode(),
                 sysconfig.get_platform().encode(), header.read_bytes() if header.is_file() else b"no headers"):
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest(), cc, version, include


def build(reuse=None) -> NativeBuild:
    """Compile ``launcher.c``; ``reuse(key)`` may return the bytes of an earlier build with that key.
    Never raises: a missing compiler or header, or a failed compile, is reported in ``reason``."""
    key, cc, version, include = build_key()
    platform = sysconfig.get_platform()
    if os.environ.get("MYTRITON_NATIVE_LAUNCH", "1") == "0":
        return NativeBuild(None, key, version, platform, "disabled by MYTRITON_NATIVE_LAUNCH=0")
    if cc is None or not version:
        why = (f"the C compiler CC={os.environ['CC']!r} does not run" if os.environ.get("CC")
               else "no C compiler found (set CC, or install gcc)")
        return NativeBuild(None, key, version, platform, why)
    if not (Path(include) / "Python.h").is_file():
        return NativeBuild(None, key, version, platform, f"no Python headers in {include} (install python3-dev)")
    if reuse is not None and (data := reuse(key)) is not None:
        return NativeBuild(data, key, version, platform)
    with tempfile.TemporaryDirectory(prefix="mytriton-native-") as tmp:
        out = Path(tmp) / FILENAME
        command = [*cc, *_FLAGS, f"-ffile-prefix-map={SOURCE.parent}=mytriton", f"-I{include}",
                   str(SOURCE), "-o", str(out)]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as exc:
            return NativeBuild(None, key, version, platform, f"{cc[0]} failed to run: {exc}")
        if proc.returncode != 0 or not out.is_file():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
            return NativeBuild(None, key, version, platform, f"{cc[0]} failed: " + " | ".join(tail))
        return NativeBuild(out.read_bytes(), key, version, platform)


def cached_library() -> tuple[Path | None, str]:
    """``(path, "")`` of the library built for this machine in the user's cache
    (``$MYTRITON_CACHE_DIR``, default ``~/.cache/mytriton``, under ``native/``), compiled there the
    first time (about half a second); ``(None, why)`` where it cannot be built or written. The
    file's name holds a digest of the source, the flags, the compiler command, the platform and
    the Python headers, so a change of any makes a new one; it is written under a temporary name
    and renamed, so processes building it at once never load half a file."""
    if os.environ.get("MYTRITON_NATIVE_LAUNCH", "1") == "0":
        return None, "disabled by MYTRITON_NATIVE_LAUNCH=0"
    header = Path(sysconfig.get_paths().get("include", "")) / "Python.h"
    digest = hashlib.sha256()
    for part in (SOURCE.read_bytes(), " ".join(_FLAGS).encode(), " ".join(_compiler() or []).encode(),
                 sysconfig.get_platform().encode(), header.read_bytes() if header.is_file() else b""):
        digest.update(hashlib.sha256(part).digest())
    path = default_cache_dir() / "native" / f"{digest.hexdigest()[:32]}{FILENAME[len('_mtlaunch'):]}"
    if path.is_file():
        return path, ""
    built = build()                                # (no compiler or headers: its reason)
    if built.data is None:
        return None, built.reason
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".building-")
        with os.fdopen(fd, "wb") as f:
            f.write(built.data)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        return None, f"cannot write {path}: {exc.strerror or exc}"
    return path, ""

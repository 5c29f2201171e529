"""Which compiler a build runs: everything besides the kernel and its options that decides the
bytes of a compile, so that it is part of every cache key and a worker running another compiler
is refused.

::

    Toolchain(mytriton 0.1.0, the compiler's sources and templates (sha256), NVRTC 13.0 (its
              library file), the CUDA headers NVRTC is given (sha256), compile switches)

Compile switches are the environment variables named ``MYTRITON_*`` other than those known not to
change what the compiler emits (:data:`NOT_COMPILE_SWITCHES`): a new switch is keyed by default.
"""
from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

_PACKAGE_ROOT = Path(__file__).resolve().parent.parent            # mytriton/
# The build tool and the runtime do not change what the compiler emits -- except the dtype table,
# which lives in the runtime's driver.py (the runtime ships alone) and which the compiler reads.
_NOT_COMPILER = ("aot", "runtime")
_DTYPE_TABLE = ("runtime", "driver.py")
# MYTRITON_* variables that change where or how a build runs, never what it compiles.
NOT_COMPILE_SWITCHES = frozenset({
    "MYTRITON_CACHE_DIR", "MYTRITON_TRACEBACK", "MYTRITON_NATIVE_LAUNCH", "MYTRITON_INTERPRET",
    "MYTRITON_NVRTC_TIMEOUT", "MYTRITON_LLVM_BIN", "MYTRITON_LIBDEVICE", "MYTRITON_EMIT_C_CHECK",
})


@dataclass(frozen=True)
class Toolchain:
    mytriton_version: str
    nvrtc_version: str              # major.minor, as manifest.json records it
    compiler_hash: str
    nvrtc_library: str = ""         # the NVRTC library's file name and size
    headers_hash: str = ""          # the CUDA headers NVRTC compiles against
    switches: tuple[tuple[str, str], ...] = ()

    def key(self) -> list:
        return [self.mytriton_version, self.nvrtc_version, self.compiler_hash, self.nvrtc_library,
                self.headers_hash, [list(s) for s in self.switches]]

    def describe(self) -> str:
        switches = " ".join(f"{k}={v}" for k, v in self.switches) or "no compile switches"
        return (f"mytriton {self.mytriton_version} (compiler {self.compiler_hash[:12]}), NVRTC {self.nvrtc_version} "
                f"({self.nvrtc_library or 'library unknown'}), CUDA headers {self.headers_hash[:12] or 'none'}, "
                f"{switches}")


def compiler_hash(templates_dir: str | Path | None, package_root: Path = _PACKAGE_ROOT) -> str:
    """sha256 over the compiler's Python sources and the kernel templates (read afresh for every
    build: a long-lived process must notice a compiler edit)."""
    digest = hashlib.sha256()
    files = [p for p in package_root.rglob("*.py")
             if p.relative_to(package_root).parts[0] not in _NOT_COMPILER
             or p.relative_to(package_root).parts == _DTYPE_TABLE]
    roots = [(package_root, files)]
    if templates_dir:
        root = Path(templates_dir)
        roots.append((root, [p for p in root.rglob("*") if p.is_file() and "loader" not in
                             p.relative_to(root).parts and "__pycache__" not in p.parts]))
    for root, paths in roots:
        for path in sorted(paths):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def compile_switches(environ=os.environ) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in environ.items()
                        if k.startswith("MYTRITON_") and k not in NOT_COMPILE_SWITCHES))


@functools.cache
def _nvrtc_library() -> str:
    """The NVRTC library's file name and size: NVRTC reports only major.minor, and two releases of
    one minor version may compile differently."""
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib
        path = load_nvidia_dynamic_lib("nvrtc").abs_path
        return f"{os.path.basename(path)} {os.path.getsize(path)} bytes"
    except Exception:   # noqa: BLE001 - no pathfinder, or NVRTC found another way: the version alone
        return ""


@functools.cache
def _headers_hash() -> str:
    """sha256 over the CUDA headers NVRTC is given (cuda_fp16.h, cuda_bf16.h, ...), by name and bytes."""
    from ..backends.cuda.nvrtc import header_directory
    folder = header_directory()
    if folder is None:
        return ""
    digest = hashlib.sha256()
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def current(templates_dir: str | Path) -> Toolchain:
    """The toolchain this process compiles with."""
    import mytriton
    from ..backends.cuda import nvrtc
    return Toolchain(mytriton.__version__, nvrtc.nvrtc_version(), compiler_hash(templates_dir),
                     _nvrtc_library(), _headers_hash(), compile_switches())
